//! Unit tests of the parent module.

use super::*;
use revolve_core::memory::SnapshotKind;

/// A fresh, empty temp folder for one test: its guard, which removes it
/// when dropped, and its canonical path.
fn scratch(name: &str) -> (tempfile::TempDir, PathBuf) {
    let guard = tempfile::Builder::new()
        .prefix(&format!("revolve-memory-{name}-"))
        .tempdir()
        .unwrap();
    let dir = guard.path().canonicalize().unwrap();
    (guard, dir)
}

fn roots(tmp: &Path) -> Roots {
    Roots {
        state: tmp.join("state"),
        config: tmp.join("config"),
    }
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn label(s: &str) -> Label {
    Label::parse(s).unwrap()
}

fn meta() -> SnapshotMeta {
    SnapshotMeta {
        session: "amber".into(),
        messages: 3,
        kind: SnapshotKind::Remember,
        files: vec![("notes.md".into(), "remember notes".into())],
        undone: false,
        pending: false,
    }
}

#[test]
fn without_a_workspace_memory_is_under_config() {
    let (_guard, tmp) = scratch("config");
    if tmp.ancestors().any(|d| d.join(WORKSPACE).is_dir()) {
        return; // The temp dir itself sits in a workspace.
    }
    let cwd = tmp.join("repo/sub");
    fs::create_dir_all(&cwd).unwrap();
    let project = Project::from_key(tmp.join("repo"));
    let dirs = MemoryDirs::locate(&cwd, &project, &roots(&tmp));
    let expected_dir = tmp.join("config/projects").join(&project.slug);
    assert_eq!(
        dirs,
        MemoryDirs {
            global: tmp.join("config/memory"),
            project: expected_dir.join("memory"),
            project_dir: expected_dir,
            workspace: None,
        }
    );
}

#[test]
fn the_nearest_workspace_wins() {
    let (_guard, tmp) = scratch("workspace");
    let outer = tmp.join("outer");
    let inner = outer.join("inner");
    let cwd = inner.join("repo/src");
    fs::create_dir_all(&cwd).unwrap();
    fs::create_dir_all(outer.join(WORKSPACE)).unwrap();
    // A file of that name is not a workspace.
    fs::write(inner.join("repo").join(WORKSPACE), "").unwrap();
    let project = Project::from_key(inner.join("repo"));
    let dirs = MemoryDirs::locate(&cwd, &project, &roots(&tmp));
    let ws = outer.join(WORKSPACE);
    assert_eq!(dirs.workspace.as_deref(), Some(ws.as_path()));
    assert_eq!(dirs.global, ws.join("memory"));
    assert_eq!(dirs.project_dir, ws.join("projects/repo"));
    assert_eq!(dirs.project, ws.join("projects/repo/memory"));

    fs::create_dir_all(inner.join(WORKSPACE)).unwrap();
    let dirs = MemoryDirs::locate(&cwd, &project, &roots(&tmp));
    assert_eq!(dirs.global, inner.join(WORKSPACE).join("memory"));
}

#[cfg(unix)]
#[test]
fn load_reads_markdown_global_first() {
    let (_guard, tmp) = scratch("load");
    let dirs = MemoryDirs {
        global: tmp.join("g"),
        project: tmp.join("p/memory"),
        project_dir: tmp.join("p"),
        workspace: None,
    };
    assert!(load(&dirs).unwrap().is_empty());
    fs::create_dir_all(&dirs.global).unwrap();
    fs::create_dir_all(&dirs.project).unwrap();
    fs::write(dirs.global.join("b.md"), "gb").unwrap();
    fs::write(dirs.global.join("a.md"), "ga").unwrap();
    fs::write(dirs.global.join(".hidden.md"), "no").unwrap();
    fs::write(dirs.global.join("notes.txt"), "no").unwrap();
    fs::write(dirs.global.join(SEEDED), "no").unwrap();
    fs::create_dir_all(dirs.global.join("dir.md")).unwrap();
    fs::write(tmp.join("outside.md"), "secret").unwrap();
    std::os::unix::fs::symlink(tmp.join("outside.md"), dirs.project.join("link.md")).unwrap();
    fs::write(dirs.project.join("a.md"), [b'p', 0xff]).unwrap();
    let got: Vec<(Scope, String, String)> = load(&dirs)
        .unwrap()
        .into_iter()
        .map(|f| (f.scope, f.name, f.content))
        .collect();
    assert_eq!(
        got,
        [
            (Scope::Global, "a.md".into(), "ga".into()),
            (Scope::Global, "b.md".into(), "gb".into()),
            (Scope::Project, "a.md".into(), "p\u{fffd}".into()),
        ]
    );
}

#[test]
fn seeding_once_keeps_edits_and_deletions() {
    let (_guard, tmp) = scratch("seed");
    let global = tmp.join("memory");
    let all: Vec<String> = BUILTIN.iter().map(|(n, _)| n.to_string()).collect();
    assert_eq!(seed(&global).unwrap(), all);
    for (name, content) in BUILTIN {
        assert_eq!(fs::read_to_string(global.join(name)).unwrap(), content);
    }
    assert_eq!(
        fs::read_to_string(global.join(SEEDED)).unwrap(),
        format!("{}\n", all.join("\n"))
    );
    // A second start seeds nothing.
    assert!(seed(&global).unwrap().is_empty());
    // An edit survives, a deletion stays deleted.
    fs::write(global.join("task-discipline.md"), "mine").unwrap();
    fs::remove_file(global.join("read-before-edit.md")).unwrap();
    assert!(seed(&global).unwrap().is_empty());
    assert_eq!(
        fs::read_to_string(global.join("task-discipline.md")).unwrap(),
        "mine"
    );
    assert!(!global.join("read-before-edit.md").exists());
    assert!(!names(&global).iter().any(|n| n.ends_with(".tmp")));
}

#[test]
fn seeding_at_once_writes_and_names_each_builtin_once() {
    let (_guard, tmp) = scratch("seed-race");
    let global = tmp.join("memory");
    // Each thread opens `.seeded` on its own, so the OS lock tells them
    // apart as it does processes.
    let got: Vec<Vec<String>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8).map(|_| s.spawn(|| seed(&global).unwrap())).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let all: Vec<String> = BUILTIN.iter().map(|(n, _)| n.to_string()).collect();
    let named: Vec<&Vec<String>> = got.iter().filter(|g| !g.is_empty()).collect();
    assert_eq!(named, [&all]);
    assert_eq!(
        fs::read_to_string(global.join(SEEDED)).unwrap(),
        format!("{}\n", all.join("\n"))
    );
}

#[test]
fn seeding_adds_only_what_a_list_lacks() {
    let (_guard, tmp) = scratch("seed-later");
    let global = tmp.join("memory");
    fs::create_dir_all(&global).unwrap();
    // An older version handed over four (the list has no final newline),
    // and the user wrote their own file under the fifth name.
    let four: Vec<&str> = BUILTIN[..4].iter().map(|(n, _)| *n).collect();
    fs::write(global.join(SEEDED), four.join("\n")).unwrap();
    fs::write(global.join(BUILTIN[4].0), "mine").unwrap();
    assert!(seed(&global).unwrap().is_empty());
    assert_eq!(
        fs::read_to_string(global.join(BUILTIN[4].0)).unwrap(),
        "mine"
    );
    // Without the user's file, the fifth is seeded and listed on its own line.
    fs::remove_file(global.join(BUILTIN[4].0)).unwrap();
    assert_eq!(seed(&global).unwrap(), [BUILTIN[4].0]);
    let listed = fs::read_to_string(global.join(SEEDED)).unwrap();
    assert_eq!(listed.lines().collect::<Vec<_>>().len(), 5);
    assert_eq!(listed.lines().last(), Some(BUILTIN[4].0));
}

#[test]
fn the_project_dir_is_created_once_and_never_touched() {
    let (_guard, tmp) = scratch("project-dir");
    let project_dir = tmp.join("ws/.task-agent/projects/repo");
    let dirs = MemoryDirs {
        global: tmp.join("ws/.task-agent/memory"),
        project: project_dir.join("memory"),
        project_dir: project_dir.clone(),
        workspace: Some(tmp.join("ws/.task-agent")),
    };
    let created = ensure_project_dir(&dirs).unwrap().unwrap();
    assert_eq!(created[0], project_dir);
    assert_eq!(created.len(), 6);
    assert!(created.iter().all(|p| p.exists()), "{created:?}");
    assert_eq!(
        fs::read_to_string(project_dir.join("memory/project.md")).unwrap(),
        PROJECT_MEMORY_TEMPLATE
    );
    assert_eq!(
        fs::read_to_string(project_dir.join("subagents/README")).unwrap(),
        SUBAGENTS_README
    );
    assert_eq!(names(&project_dir), ["memory", "subagents", "tasks"]);
    assert_eq!(names(project_dir.parent().unwrap()), ["repo"]);

    fs::remove_file(project_dir.join("subagents/README")).unwrap();
    fs::write(project_dir.join("memory/project.md"), "mine").unwrap();
    assert_eq!(ensure_project_dir(&dirs).unwrap(), None);
    assert!(!project_dir.join("subagents/README").exists());
    assert_eq!(
        fs::read_to_string(project_dir.join("memory/project.md")).unwrap(),
        "mine"
    );

    // A folder the user emptied stays empty.
    fs::remove_dir_all(project_dir.join("subagents")).unwrap();
    fs::remove_dir_all(project_dir.join("tasks")).unwrap();
    assert_eq!(ensure_project_dir(&dirs).unwrap(), None);
    assert_eq!(names(&project_dir), ["memory"]);

    // An existing folder something else made (saving the goal, say) is
    // not a session's to fill in; completing it (`revolve init`) adds
    // what it misses, with the templates, and touches nothing in it.
    let other = MemoryDirs {
        project_dir: tmp.join("empty"),
        project: tmp.join("empty/memory"),
        ..dirs
    };
    fs::create_dir_all(&other.project_dir).unwrap();
    fs::write(other.project_dir.join("goal.json"), "{}").unwrap();
    assert_eq!(ensure_project_dir(&other).unwrap(), None);
    assert_eq!(names(&other.project_dir), ["goal.json"]);
    assert_eq!(
        complete_project_dir(&other).unwrap().map(|c| c.len()),
        Some(5)
    );
    assert_eq!(
        names(&other.project_dir),
        ["goal.json", "memory", "subagents", "tasks"]
    );
    assert_eq!(
        fs::read_to_string(other.project_dir.join("goal.json")).unwrap(),
        "{}"
    );
    assert_eq!(complete_project_dir(&other).unwrap(), None);
}

#[test]
fn write_creates_refuses_replaces_and_deletes() {
    let (_guard, tmp) = scratch("write");
    let dir = tmp.join("project/memory");
    let notes = label("notes");
    assert_eq!(
        write(&dir, &notes, "one\n", false).unwrap(),
        WriteOutcome::Created
    );
    assert_eq!(fs::read_to_string(dir.join("notes.md")).unwrap(), "one\n");

    let refused = write(&dir, &notes, "two\n", false).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "error: memory 'notes' exists; pass replace: true to overwrite it"
    );
    assert_eq!(fs::read_to_string(dir.join("notes.md")).unwrap(), "one\n");

    assert_eq!(
        write(&dir, &label("notes.md"), "two", true).unwrap(),
        WriteOutcome::Replaced
    );
    assert_eq!(fs::read_to_string(dir.join("notes.md")).unwrap(), "two");

    assert_eq!(
        write(&dir, &notes, "", false).unwrap(),
        WriteOutcome::Deleted
    );
    assert!(!dir.join("notes.md").exists());
    let missing = write(&dir, &notes, "", true).unwrap_err();
    assert!(matches!(missing, MemoryError::Missing(_)));
    assert!(missing
        .to_string()
        .starts_with("error: memory 'notes' does not exist"));
    assert!(names(&dir).is_empty(), "no temp file is left behind");
}

#[test]
fn bad_labels_never_reach_the_disk() {
    let (_guard, tmp) = scratch("bad-labels");
    let dir = tmp.join("memory");
    let long = "x".repeat(10 * 1024);
    for raw in ["../x", "a/b", ".hidden", "", "goal", long.as_str()] {
        let result = Label::parse(raw)
            .map_err(MemoryError::from)
            .and_then(|l| write(&dir, &l, "content", true));
        let err = result.unwrap_err();
        assert!(matches!(err, MemoryError::BadLabel(_)), "{raw:?}");
        assert!(
            err.to_string().starts_with("error: a memory label")
                || err.to_string().starts_with("error: the memory label")
        );
    }
    assert!(!dir.exists());
    assert!(names(&tmp).is_empty());
}

#[test]
fn a_snapshot_copies_the_files_and_the_meta() {
    let (_guard, tmp) = scratch("snapshot");
    let state = tmp.join("state");
    let memory = tmp.join("ws/.task-agent/projects/repo/memory");
    fs::create_dir_all(&memory).unwrap();
    fs::write(memory.join("notes.md"), "n").unwrap();
    fs::write(memory.join("other.txt"), "o").unwrap();
    fs::write(memory.join(".notes.md.1-1.tmp"), "t").unwrap();
    fs::create_dir_all(memory.join("sub")).unwrap();

    let entry = snapshot(&state, &memory, "20261202T102606Z", &meta()).unwrap();
    let store = state.join("refinements").join(slug(&memory));
    assert_eq!(entry, store.join("20261202T102606Z"));
    assert!(slug(&memory).starts_with('-') && !slug(&memory).contains('/'));
    assert_eq!(names(&entry), ["files", "meta.cfg"]);
    assert_eq!(names(&entry.join("files")), ["notes.md", "other.txt"]);
    assert_eq!(
        fs::read_to_string(entry.join("files/notes.md")).unwrap(),
        "n"
    );
    let cfg = fs::read_to_string(entry.join("meta.cfg")).unwrap();
    assert_eq!(SnapshotMeta::parse_cfg(&cfg), Ok(meta()));

    // The same second again gets its own entry.
    let second = snapshot(&state, &memory, "20261202T102606Z", &meta()).unwrap();
    assert_eq!(second, store.join("20261202T102606Z-2"));
    assert_eq!(names(&store), ["20261202T102606Z", "20261202T102606Z-2"]);
}

#[test]
fn a_snapshot_of_a_missing_dir_has_no_files() {
    let (_guard, tmp) = scratch("snapshot-empty");
    let state = tmp.join("state");
    let memory = tmp.join("nowhere/memory");
    let entry = snapshot(&state, &memory, "20260101T000000Z", &meta()).unwrap();
    assert!(names(&entry.join("files")).is_empty());
    assert!(!memory.exists());
}
