//! Memory end to end: seeding the builtin documents (once, never over an
//! edit, never back after a deletion, not with `--bare`, and the startup
//! note on stderr in every mode), memory files in the system prompt and a
//! change made between turns reaching the next request with its `context`
//! record, the `.task-agent/` workspace, the `remember` tool (its refusals,
//! its snapshots, its write reaching the very next request), the project
//! directory with `revolve init` and `agent_info`, and snapshots of a system
//! prompt and of `revolve init`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use revolve_core::memory::{
    SnapshotKind, SnapshotMeta, BUILTIN, PROJECT_MEMORY_TEMPLATE, SUBAGENTS_README,
};
use revolve_testkit::{FakeReply, FakeServer};
use serde_json::{json, Value};

use crate::common::{records, tool_results, Run, TestEnv};

// ---------------------------------------------------------------------------
// Helpers

/// `$XDG_CONFIG_HOME/task-agent`.
fn config(env: &TestEnv) -> PathBuf {
    env.home.join(".config/task-agent")
}

/// The global memory directory without a workspace.
fn global(env: &TestEnv) -> PathBuf {
    config(env).join("memory")
}

/// `/a/b` as `-a-b`.
fn slug(path: &Path) -> String {
    path.to_str()
        .expect("test paths are UTF-8")
        .replace('/', "-")
}

/// The project directory without a workspace: `projects/<slug of cwd>`
/// (the working directory is not a git repository, so it is the key).
fn project_dir(env: &TestEnv) -> PathBuf {
    config(env).join("projects").join(slug(&env.cwd))
}

fn server(replies: Vec<FakeReply>) -> FakeServer {
    FakeServer::start(replies).expect("start the fake model server")
}

/// Runs revolve against `server` with `extra` flags, feeding `stdin`; the
/// run must succeed.
fn talk(env: &TestEnv, server: &FakeServer, extra: &[&str], stdin: &str) -> Run {
    let url = server.url();
    let mut args = vec!["--base-url", url.as_str()];
    args.extend_from_slice(extra);
    let run = env.run(&args, stdin);
    assert_eq!(run.code, Some(0), "revolve {args:?} failed: {run:?}");
    run
}

/// One reply calling one tool.
fn call(id: &str, name: &str, args: Value) -> FakeReply {
    FakeReply::tool_calls("", &[(id, name, &args.to_string())])
}

/// The arguments of a `remember` call.
fn remember(label: &str, content: &str, replace: Option<bool>) -> Value {
    let mut args = json!({"label": label, "content": content});
    if let Some(r) = replace {
        args["replace"] = json!(r);
    }
    args
}

/// The system prompt of every request the server received, in order.
fn systems(server: &FakeServer) -> Vec<String> {
    server
        .requests()
        .iter()
        .map(|r| {
            let body: Value = serde_json::from_str(&r.body).expect("request bodies are JSON");
            let first = &body["messages"][0];
            assert_eq!(first["role"], "system", "{body}");
            first["content"]
                .as_str()
                .expect("a text system prompt")
                .to_owned()
        })
        .collect()
}

/// The `system` of every `context` record of a log, in order.
fn contexts(recs: &[Value]) -> Vec<String> {
    recs.iter()
        .filter(|r| r["type"] == "context")
        .map(|r| r["system"].as_str().expect("a system text").to_owned())
        .collect()
}

/// The log has a `context` record exactly when the system prompt changed
/// from one request to the next (and one for the first), holding the new
/// prompt; and replay rebuilds every request byte for byte.
fn assert_contexts_follow_changes(env: &TestEnv, server: &FakeServer, recs: &[Value]) {
    let mut changes: Vec<String> = Vec::new();
    for system in systems(server) {
        if changes.last() != Some(&system) {
            changes.push(system);
        }
    }
    assert_eq!(
        contexts(recs),
        changes,
        "one context record per change of the system prompt"
    );
    let expected: String = server
        .requests()
        .iter()
        .map(|r| format!("{}\n", r.body))
        .collect();
    assert_eq!(
        env.ok(&["replay", "--requests"]).stdout,
        expected,
        "replay --requests rebuilds every request from the log"
    );
}

/// The content of the result answering call `id`.
fn result_of(recs: &[Value], id: &str) -> String {
    tool_results(recs)
        .into_iter()
        .find(|(i, _)| i == id)
        .unwrap_or_else(|| panic!("no result for {id}"))
        .1
}

/// Everything under `dir`, by path relative to it: a file's content, `<dir>`
/// for a directory, `-> target` for a symlink (never followed). A missing
/// `dir` is empty.
fn tree(dir: &Path) -> BTreeMap<String, String> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let rel = path
                .strip_prefix(base)
                .expect("under the base")
                .to_string_lossy()
                .into_owned();
            let kind = entry.file_type().expect("a file type");
            if kind.is_symlink() {
                let target = std::fs::read_link(&path).expect("a link target");
                out.insert(rel, format!("-> {}", target.display()));
            } else if kind.is_dir() {
                out.insert(rel, "<dir>".into());
                walk(base, &path, out);
            } else {
                let bytes = std::fs::read(&path).expect("read a file");
                out.insert(rel, String::from_utf8_lossy(&bytes).into_owned());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// The names in `dir`, sorted (hidden ones included).
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn builtin_names() -> Vec<String> {
    BUILTIN.iter().map(|(n, _)| (*n).to_owned()).collect()
}

/// The `## memory/...` headers of a system prompt, in order.
fn headers(system: &str) -> Vec<&str> {
    system
        .lines()
        .filter(|l| l.starts_with("## memory/"))
        .collect()
}

fn write(path: &Path, content: &str) {
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("create a test dir");
    std::fs::write(path, content).expect("write a test file");
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// The system prompt with no memory at all.
fn bare_system(env: &TestEnv) -> String {
    format!(
        "{}\n\nWorking directory: {}",
        revolve_core::prompt::BASE,
        env.cwd.display()
    )
}

/// Single-quotes `s` for `sh`.
fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Runs the binary with `args` on a pseudo-terminal, typing `input`, in
/// the test's clean environment; returns what the terminal showed (stdout
/// and stderr together, `\r\n` as `\n`).
fn tty(env: &TestEnv, args: &[&str], input: &str) -> String {
    let mut term = env.terminal(args, 80, &[]);
    // Typed once the prompt shows (typed before, Enter reaches the line
    // editor as `\n`, which is Ctrl-J: a newline in the line); Enter is
    // `\r` on a terminal.
    term.wait_until(
        Duration::from_secs(20),
        "the prompt",
        crate::common::at_prompt,
    );
    term.type_keys(&input.replace('\n', "\r"));
    let (ok, screen) = term.finish(Duration::from_secs(10));
    assert!(ok, "{screen}");
    screen.replace("\r\n", "\n")
}

/// The startup note about seeding, if the terminal showed one.
fn seeding_note(shown: &str) -> Option<&str> {
    shown.lines().find(|l| l.starts_with("seeded "))
}

// ---------------------------------------------------------------------------
// 1. Seeding

#[test]
fn the_first_start_seeds_the_builtins_once() {
    let env = TestEnv::new("seed");
    let server = server(vec![
        FakeReply::text("One."),
        FakeReply::text("Two."),
        FakeReply::text("Three."),
    ]);
    let global = global(&env);

    let run = talk(&env, &server, &[], "hello\n");
    assert_eq!(run.stdout, "One.\n", "stdout is the answer alone");
    assert_eq!(
        run.stderr,
        env.seeded_note(),
        "a piped run names what it seeded, on stderr"
    );

    let mut expected = builtin_names();
    expected.push(".seeded".into());
    expected.sort();
    assert_eq!(names(&global), expected, "the five documents and the list");
    for (name, content) in BUILTIN {
        let written = read(&global.join(name));
        assert_eq!(written, content, "{name}");
        assert!(written.starts_with("---\nbuiltin: true\n"), "{name}");
    }
    let listed = format!("{}\n", builtin_names().join("\n"));
    assert_eq!(read(&global.join(".seeded")), listed);
    // They reached the model, each under its header.
    let first = &systems(&server)[0];
    for name in builtin_names() {
        assert!(
            first.contains(&format!(
                "\n## memory/global/{name}\n\n---\nbuiltin: true\n"
            )),
            "{name} is not in the prompt"
        );
    }

    // A second start writes nothing: same bytes, same modification times.
    let before = tree(&global);
    let mtimes = |dir: &Path| -> Vec<(String, std::time::SystemTime)> {
        names(dir)
            .into_iter()
            .map(|n| {
                let m = std::fs::metadata(dir.join(&n)).unwrap().modified().unwrap();
                (n, m)
            })
            .collect()
    };
    let times = mtimes(&global);
    let run = talk(&env, &server, &[], "again\n");
    assert_eq!(run.stderr, "");
    assert_eq!(tree(&global), before);
    assert_eq!(mtimes(&global), times, "nothing was rewritten");

    // An edit survives and a deletion stays: the user's state is kept.
    let edited = "---\ndescription: mine now\n---\nOne task at a time, my way.\n";
    write(&global.join("task-discipline.md"), edited);
    std::fs::remove_file(global.join("read-before-edit.md")).unwrap();
    let run = talk(&env, &server, &[], "third\n");
    assert_eq!(run.stderr, "");
    assert_eq!(read(&global.join("task-discipline.md")), edited);
    assert!(!global.join("read-before-edit.md").exists(), "written back");
    assert_eq!(
        read(&global.join(".seeded")),
        listed,
        "the list is unchanged"
    );
    let third = &systems(&server)[2];
    assert!(third.contains("\n## memory/global/task-discipline.md\n\n---\ndescription: mine now\n"));
    assert!(!third.contains("read-before-edit.md"));
}

#[test]
fn bare_seeds_nothing_and_sends_no_memory() {
    let env = TestEnv::new("bare");
    let server = server(vec![
        FakeReply::text("Bare."),
        FakeReply::text("Full."),
        FakeReply::text("Bare again."),
    ]);

    let run = talk(&env, &server, &["--bare"], "hello\n");
    assert_eq!(run.stderr, "");
    assert!(!global(&env).exists(), "{:?}", tree(&config(&env)));
    assert!(
        !config(&env).join("projects").exists(),
        "no project directory"
    );
    assert_eq!(systems(&server)[0], bare_system(&env));

    // With memory on disk, --bare still loads none of it.
    talk(&env, &server, &[], "hello\n");
    assert!(systems(&server)[1].contains("## memory/global/verify-before-commit.md"));
    let before = tree(&config(&env));
    talk(&env, &server, &["--bare"], "hello\n");
    assert_eq!(systems(&server)[2], bare_system(&env));
    assert_eq!(tree(&config(&env)), before, "--bare writes nothing there");
}

/// Issue 17, item 4: the note names what was seeded in every mode, on
/// stderr (a piped line, `-p`, `-p` with stream-json), and stdout stays the
/// answer alone; only the project directory's creation is told on a
/// terminal alone.
#[test]
fn the_seeding_note_names_exactly_what_was_seeded_in_every_mode() {
    let replies = || server(vec![FakeReply::text("Quiet.")]);
    for (mode, args) in [
        ("piped", &[][..]),
        ("print", &["-p", "hello"][..]),
        (
            "stream",
            &["-p", "hello", "--output-format", "stream-json"][..],
        ),
    ] {
        let piped = TestEnv::new(&format!("seed-note-{mode}"));
        let server = replies();
        let run = talk(&piped, &server, args, "hello\n");
        assert_eq!(run.stderr, piped.seeded_note(), "{mode}");
        if mode == "stream" {
            assert!(run.stdout.starts_with("{\"type\":\"init\""), "{run:?}");
        } else {
            assert_eq!(run.stdout, "Quiet.\n", "{mode}");
        }
        assert_eq!(names(&global(&piped)).len(), 6);
        // A second start seeds nothing and says nothing.
        let again = talk(&piped, &replies(), args, "hello\n");
        assert_eq!(again.stderr, "", "{mode}");
    }

    // On a terminal. The user already has a file under one builtin name.
    let env = TestEnv::new("seed-note-tty");
    let script = env.root.join("replies.jsonl");
    write(&script, "{\"text\": \"unused\"}\n");
    let args = [
        "--provider",
        "scripted",
        "--script",
        script.to_str().unwrap(),
    ];
    let global = global(&env);
    write(&global.join("task-discipline.md"), "my own\n");

    let shown = tty(&env, &args, "/quit\n");
    assert_eq!(
        seeding_note(&shown),
        Some(
            format!(
                "seeded verify-before-commit.md, worktree-isolation.md, read-before-edit.md, \
                 asking-the-user.md into {}",
                global.display()
            )
            .as_str()
        ),
        "{shown}"
    );
    assert!(
        shown.contains(&format!(
            "created the project directory {}\n",
            project_dir(&env).display()
        )),
        "{shown}"
    );
    assert_eq!(read(&global.join("task-discipline.md")), "my own\n");
    assert_eq!(
        read(&global.join(".seeded")),
        "verify-before-commit.md\nworktree-isolation.md\nread-before-edit.md\nasking-the-user.md\n"
    );

    // Nothing seeded, nothing created: no note.
    let shown = tty(&env, &args, "/quit\n");
    assert_eq!(seeding_note(&shown), None, "{shown}");
    assert!(!shown.contains("created the project directory"), "{shown}");

    // A document a later version added (absent from the list) is seeded,
    // and the note names it alone.
    write(
        &global.join(".seeded"),
        "verify-before-commit.md\nworktree-isolation.md\nread-before-edit.md\n",
    );
    std::fs::remove_file(global.join("asking-the-user.md")).unwrap();
    let shown = tty(&env, &args, "/quit\n");
    assert_eq!(
        seeding_note(&shown),
        Some(format!("seeded asking-the-user.md into {}", global.display()).as_str()),
        "{shown}"
    );
}

/// Issue 17, item 3: first starts at the same moment seed each builtin
/// once. Four runs start together (in several fresh worlds, so a race has
/// its chances): `.seeded` lists each document exactly once, each file
/// holds its builtin text, and exactly one of the four names them, all of
/// them, in one note.
#[test]
fn first_starts_at_the_same_moment_seed_once_and_one_of_them_says_so() {
    const ROUNDS: usize = 5;
    const RUNS: usize = 4;
    for round in 0..ROUNDS {
        let env = TestEnv::new(&format!("seed-race-{round}"));
        let script = env.root.join("replies.jsonl");
        write(&script, "{\"text\": \"Here.\"}\n");
        let args = [
            "--provider",
            "scripted",
            "--script",
            script.to_str().unwrap(),
        ];
        let started: Vec<_> = (0..RUNS).map(|_| env.spawn(&args, "hi\n")).collect();
        let runs: Vec<Run> = started
            .into_iter()
            .map(|r| r.finish(Duration::from_secs(30)))
            .collect();
        for run in &runs {
            assert_eq!(
                (run.code, run.stdout.as_str()),
                (Some(0), "Here.\n"),
                "{run:?}"
            );
        }
        let global = global(&env);
        let listed = read(&global.join(".seeded"));
        assert_eq!(
            listed,
            format!("{}\n", builtin_names().join("\n")),
            "round {round}: each builtin listed once"
        );
        for (name, content) in BUILTIN {
            assert_eq!(read(&global.join(name)), content, "round {round}: {name}");
        }
        // The memory documents and the skills each named by one process
        // (not always the same one).
        let mut notes: Vec<&str> = runs
            .iter()
            .flat_map(|r| r.stderr.lines())
            .filter(|l| l.starts_with("seeded "))
            .collect();
        notes.sort_unstable();
        let note = env.seeded_note();
        let mut expected: Vec<&str> = note.lines().collect();
        expected.sort_unstable();
        assert_eq!(
            notes, expected,
            "round {round}: one process names them: {runs:?}"
        );
    }
}

// ---------------------------------------------------------------------------
// 2. Memory in the prompt

/// A global memory with a `.seeded` list naming every builtin (so nothing is
/// seeded) and these files.
fn fixed_global(env: &TestEnv, files: &[(&str, &str)]) {
    let global = global(env);
    write(
        &global.join(".seeded"),
        &format!("{}\n", builtin_names().join("\n")),
    );
    for (name, content) in files {
        write(&global.join(name), content);
    }
}

#[test]
fn memory_files_are_in_the_prompt_in_a_stable_order() {
    let env = TestEnv::new("prompt-order");
    fixed_global(
        &env,
        &[
            ("zeta.md", "Global zeta.\n"),
            ("notes.md", "Global notes.\n"),
            ("alpha.md", "Global alpha.\n"),
        ],
    );
    let memory = project_dir(&env).join("memory");
    write(&memory.join("notes.md"), "Project notes.\n");
    write(&memory.join("build.md"), "Project build.\n");
    let server = server(vec![FakeReply::text("One."), FakeReply::text("Two.")]);
    talk(&env, &server, &[], "one\ntwo\n");

    let sent = systems(&server);
    assert_eq!(sent[0], sent[1], "the same files give the same bytes");
    assert_eq!(
        headers(&sent[0]),
        [
            "## memory/global/alpha.md",
            "## memory/global/notes.md",
            "## memory/global/zeta.md",
            "## memory/project/build.md",
            "## memory/project/notes.md",
        ]
    );
    assert!(sent[0].contains("## memory/global/notes.md\n\nGlobal notes.\n"));
    assert!(sent[0].contains("## memory/project/notes.md\n\nProject notes.\n"));
    let recs = records(&env.only_session());
    assert_eq!(
        contexts(&recs).len(),
        1,
        "an unchanged prompt is logged once"
    );
    assert_contexts_follow_changes(&env, &server, &recs);
}

#[test]
fn a_hand_edit_between_turns_reaches_the_next_request() {
    let env = TestEnv::new("prompt-edit");
    fixed_global(&env, &[("style.md", "Use tabs.\n")]);
    let memory = project_dir(&env).join("memory");
    write(&memory.join("build.md"), "Run make.\n");
    let server = server(vec![
        FakeReply::text("One."),
        FakeReply::text("Two."),
        FakeReply::text("Three."),
        FakeReply::text("Four."),
        FakeReply::text("Five."),
    ]);

    // Two turns, nothing changed between them.
    talk(&env, &server, &[], "one\ntwo\n");
    assert_eq!(contexts(&records(&env.only_session())).len(), 1);

    // Edited by hand, then the session goes on.
    write(
        &global(&env).join("style.md"),
        "Use spaces, four of them.\n",
    );
    talk(&env, &server, &["--continue"], "three\n");
    let sent = systems(&server);
    assert!(sent[1].contains("## memory/global/style.md\n\nUse tabs.\n"));
    assert!(sent[2].contains("## memory/global/style.md\n\nUse spaces, four of them.\n"));
    assert_eq!(contexts(&records(&env.only_session())).len(), 2);

    // Resumed without a change: no new record.
    talk(&env, &server, &["--continue"], "four\n");
    assert_eq!(systems(&server)[3], systems(&server)[2]);
    assert_eq!(contexts(&records(&env.only_session())).len(), 2);

    // A file deleted and one added by hand.
    std::fs::remove_file(memory.join("build.md")).unwrap();
    write(&memory.join("deploy.md"), "Deploy with care.\n");
    talk(&env, &server, &["--continue"], "five\n");
    assert_eq!(
        headers(&systems(&server)[4]),
        ["## memory/global/style.md", "## memory/project/deploy.md"]
    );

    let recs = records(&env.only_session());
    assert_eq!(contexts(&recs).len(), 3);
    assert_contexts_follow_changes(&env, &server, &recs);
}

#[test]
fn a_change_made_by_another_tool_reaches_the_next_request() {
    let env = TestEnv::new("prompt-tool-edit");
    fixed_global(&env, &[("style.md", "Use tabs.\n")]);
    let style = global(&env).join("style.md");
    let command = format!(
        "printf 'Use spaces.\\n' > {}",
        sh_quote(style.to_str().unwrap())
    );
    let server = server(vec![
        call("call_1", "shell", json!({ "command": command })),
        FakeReply::text("Done."),
    ]);
    // The sandbox lets the command write the memory folder only when
    // told: --writable.
    let global_dir = global(&env);
    let writable = global_dir.to_str().unwrap();
    talk(
        &env,
        &server,
        &["--allow-shell", "--writable", writable],
        "switch to spaces\n",
    );
    assert_eq!(read(&style), "Use spaces.\n");
    let sent = systems(&server);
    assert!(sent[0].contains("## memory/global/style.md\n\nUse tabs.\n"));
    assert!(
        sent[1].contains("## memory/global/style.md\n\nUse spaces.\n"),
        "memory is read again after every tool"
    );
    let recs = records(&env.only_session());
    assert_eq!(contexts(&recs).len(), 2);
    assert_contexts_follow_changes(&env, &server, &recs);
}

// ---------------------------------------------------------------------------
// 3. The workspace

#[test]
fn a_workspace_in_a_parent_directory_beats_the_config_dir() {
    let mut env = TestEnv::new("workspace");
    let ws = env.root.join("ws/.task-agent");
    std::fs::create_dir_all(&ws).unwrap();
    // A repository whose main tree is `repo`, worked on from a subdirectory.
    let repo = env.root.join("ws/repo");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    let git = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&repo)
        .env("GIT_CEILING_DIRECTORIES", &env.root)
        .output()
        .expect("run git init");
    assert!(git.status.success(), "{git:?}");
    env.cwd = repo.join("src");
    write(&ws.join("memory/team.md"), "Workspace-wide rule.\n");

    let server = server(vec![
        call("call_1", "agent_info", json!({})),
        call(
            "call_2",
            "remember",
            remember("build", "Build with make.\n", None),
        ),
        FakeReply::text("Done."),
    ]);
    talk(&env, &server, &[], "where is my memory?\n");

    // Global memory is the workspace's, seeded there.
    let mut expected = builtin_names();
    expected.extend([".seeded".to_owned(), "team.md".to_owned()]);
    expected.sort();
    assert_eq!(names(&ws.join("memory")), expected);
    // The project directory is named after the repository's folder.
    let project = ws.join("projects/repo");
    assert_eq!(names(&ws.join("projects")), ["repo"]);
    assert_eq!(
        read(&project.join("memory/project.md")),
        PROJECT_MEMORY_TEMPLATE
    );
    assert_eq!(read(&project.join("memory/build.md")), "Build with make.\n");
    // The config location is not used for memory at all.
    assert!(!global(&env).exists(), "{:?}", tree(&config(&env)));
    assert!(!config(&env).join("projects").exists());

    let sent = systems(&server);
    assert!(sent[0].contains("## memory/global/team.md\n\nWorkspace-wide rule.\n"));
    assert!(sent[0].contains("## memory/project/project.md\n"));
    assert!(sent[2].contains("## memory/project/build.md\n\nBuild with make.\n"));

    let recs = records(&env.only_session());
    let info: Value =
        serde_json::from_str(&result_of(&recs, "call_1")).expect("agent_info is JSON");
    assert_eq!(info["project_dir"], json!(project));
    assert_eq!(info["project_key"], json!(repo));
    assert_eq!(info["created_project_dir"], true);
}

// ---------------------------------------------------------------------------
// 4. The remember tool

const DB1: &str = "# Database\n\nThe test database listens on port 5432.\n";
const DB2: &str = "# Database\n\nIt moved to port 6543.";

#[test]
fn remember_creates_refuses_replaces_and_deletes_with_snapshots() {
    let env = TestEnv::new("remember");
    let server = server(vec![
        call("call_1", "remember", remember("db", DB1, None)),
        call("call_2", "remember", remember("db", "clobbered\n", None)),
        call("call_3", "remember", remember("db.md", DB2, Some(true))),
        call("call_4", "remember", remember("db", "", Some(true))),
        FakeReply::text("Noted."),
    ]);
    let run = talk(&env, &server, &["--name", "mem"], "remember the database\n");
    assert_eq!(run.stdout, "Noted.\n");
    let memory = project_dir(&env).join("memory");
    let recs = records(&env.only_session());
    let sent = systems(&server);
    assert_eq!(sent.len(), 5);
    let db_block = |content: &str| format!("\n## memory/project/db.md\n\n{}\n", content.trim_end());

    // Created, exactly, and in the very next request of the same turn.
    assert_eq!(
        result_of(&recs, "call_1"),
        format!("created project memory db.md ({})", memory.display())
    );
    assert!(!sent[0].contains("memory/project/db.md"));
    assert!(sent[1].contains(&db_block(DB1)), "{}", sent[1]);

    // The same label without replace: refused, the file as it was.
    assert_eq!(
        result_of(&recs, "call_2"),
        "error: memory 'db' exists; pass replace: true to overwrite it"
    );
    assert_eq!(sent[2], sent[1]);

    // With replace (and the label spelled with its .md): changed.
    assert_eq!(
        result_of(&recs, "call_3"),
        format!("replaced project memory db.md ({})", memory.display())
    );
    assert!(sent[3].contains(&db_block(DB2)), "{}", sent[3]);

    // Empty content with replace: deleted.
    assert_eq!(
        result_of(&recs, "call_4"),
        format!("deleted project memory db.md ({})", memory.display())
    );
    assert!(!memory.join("db.md").exists());
    assert!(!sent[4].contains("memory/project/db.md"));
    assert_eq!(names(&memory), ["project.md"], "no temp file is left");

    assert_contexts_follow_changes(&env, &server, &recs);

    // Each successful write first copied the memory as it was, with a meta.cfg.
    let store = env.state.join("task-agent/refinements").join(slug(&memory));
    let entries = names(&store);
    assert_eq!(entries.len(), 3, "{entries:?}");
    let expected = [
        (2, "created", vec![("project.md", PROJECT_MEMORY_TEMPLATE)]),
        (
            6,
            "replaced",
            vec![("db.md", DB1), ("project.md", PROJECT_MEMORY_TEMPLATE)],
        ),
        (
            8,
            "deleted",
            vec![("db.md", DB2), ("project.md", PROJECT_MEMORY_TEMPLATE)],
        ),
    ];
    for (entry, (messages, change, files)) in entries.iter().zip(expected) {
        let dir = store.join(entry);
        assert_eq!(names(&dir), ["files", "meta.cfg"], "{entry}");
        let copied = tree(&dir.join("files"));
        let want: BTreeMap<String, String> = files
            .iter()
            .map(|(n, c)| ((*n).to_owned(), (*c).to_owned()))
            .collect();
        assert_eq!(copied, want, "{entry}");
        let cfg = read(&dir.join("meta.cfg"));
        assert!(cfg.contains("\nkind = remember\n"), "{cfg}");
        let meta = SnapshotMeta::parse_cfg(&cfg).expect("a readable meta.cfg");
        assert_eq!(
            meta,
            SnapshotMeta {
                session: "mem".into(),
                messages,
                kind: SnapshotKind::Remember,
                files: vec![(
                    "project/db.md".into(),
                    format!(
                        "{}: remember db",
                        if change == "replaced" {
                            "updated"
                        } else {
                            change
                        }
                    ),
                )],
                undone: false,
                pending: false,
            },
            "{entry}"
        );
    }
}

#[test]
fn bad_labels_are_refused_and_nothing_is_written_anywhere() {
    let env = TestEnv::new("remember-bad");
    let long = "x".repeat(65);
    let huge = "y".repeat(10 * 1024);
    let bad = ["../x", "a/b", ".hidden", long.as_str(), "", huge.as_str()];
    let ids: Vec<String> = (1..=bad.len()).map(|n| format!("call_{n}")).collect();
    let args: Vec<String> = bad
        .iter()
        .map(|l| remember(l, "escaped\n", Some(true)).to_string())
        .collect();
    let list: Vec<(&str, &str, &str)> = ids
        .iter()
        .zip(&args)
        .map(|(id, a)| (id.as_str(), "remember", a.as_str()))
        .collect();
    let server = server(vec![
        FakeReply::text("Warm."),
        FakeReply::tool_calls("", &list),
        FakeReply::text("None of that worked."),
    ]);
    // A first session seeds and creates the project directory.
    talk(&env, &server, &[], "hello\n");
    let outside_sessions = |t: BTreeMap<String, String>| -> BTreeMap<String, String> {
        t.into_iter()
            .filter(|(p, _)| !p.starts_with("home/.local/state/task-agent/projects"))
            .collect()
    };
    let before = outside_sessions(tree(&env.root));

    let run = talk(&env, &server, &["--continue"], "remember these\n");
    assert_eq!(run.stdout, "None of that worked.\n");
    let recs = records(&env.only_session());
    for (id, label) in ids.iter().zip(bad) {
        let result = result_of(&recs, id);
        assert!(
            result.starts_with("error: remember: a memory label "),
            "{}: {result}",
            &label[..label.len().min(20)]
        );
        assert!(result.len() < 300, "the refusal does not echo the label");
    }
    // Nothing anywhere in the test's world changed but the session log.
    assert_eq!(outside_sessions(tree(&env.root)), before);
    let project = project_dir(&env);
    for escaped in ["x.md", "memory/a/b.md", "memory/.hidden.md"] {
        assert!(!project.join(escaped).exists(), "{escaped}");
    }
    assert!(!env.state.join("task-agent/refinements").exists());
    let sent = systems(&server);
    assert_eq!(sent[2], sent[1], "memory is unchanged");
}

// ---------------------------------------------------------------------------
// 5. The project directory

#[test]
fn the_first_session_creates_the_project_directory_and_touches_nothing_after() {
    let env = TestEnv::new("project-dir");
    let server = server(vec![
        call("call_1", "agent_info", json!({})),
        FakeReply::text("First."),
        call("call_2", "agent_info", json!({})),
        FakeReply::text("Second."),
    ]);
    let dir = project_dir(&env);

    talk(&env, &server, &[], "who am I?\n");
    let created: BTreeMap<String, String> = [
        ("memory", "<dir>"),
        ("memory/project.md", PROJECT_MEMORY_TEMPLATE),
        ("subagents", "<dir>"),
        ("subagents/README", SUBAGENTS_README),
        ("tasks", "<dir>"),
    ]
    .iter()
    .map(|(p, c)| ((*p).to_owned(), (*c).to_owned()))
    .collect();
    assert_eq!(tree(&dir), created);
    let info = |id: &str| -> Value {
        let recs = records(&env.only_session());
        serde_json::from_str(&result_of(&recs, id)).expect("agent_info is JSON")
    };
    let first = info("call_1");
    assert_eq!(first["project_dir"], json!(dir));
    assert_eq!(first["created_project_dir"], true);

    // The user edits one template, deletes the other and adds a task.
    write(&dir.join("memory/project.md"), "Mine.\n");
    std::fs::remove_file(dir.join("subagents/README")).unwrap();
    write(&dir.join("tasks/fix-login.md"), "Fix the login.\n");
    let edited = tree(&dir);

    talk(&env, &server, &["--continue"], "and now?\n");
    assert_eq!(tree(&dir), edited, "nothing that exists is touched");
    let second = info("call_2");
    assert_eq!(second["project_dir"], json!(dir));
    assert_eq!(second["created_project_dir"], false);

    let init = env.ok(&["init"]);
    assert_eq!(
        init.stdout,
        format!(
            "the project directory {} exists; nothing created\n",
            dir.display()
        )
    );
    assert_eq!(tree(&dir), edited);
}

/// Issue 17, item 2: a session creates the project directory only when the
/// folder itself is absent. Folders the user deleted from it stay deleted,
/// and `agent_info` says this session created nothing; `revolve init` adds
/// them back and names what it created.
#[test]
fn a_session_leaves_an_existing_project_folder_as_it_is() {
    let env = TestEnv::new("project-dir-emptied");
    let server = server(vec![
        FakeReply::text("First."),
        call("call_1", "agent_info", json!({})),
        FakeReply::text("Second."),
    ]);
    let dir = project_dir(&env);
    talk(&env, &server, &[], "hello\n");
    assert!(dir.join("subagents/README").is_file());

    for folder in ["memory", "tasks", "subagents"] {
        std::fs::remove_dir_all(dir.join(folder)).unwrap();
    }
    write(&dir.join("notes.txt"), "mine\n");
    let before = tree(&dir);
    talk(&env, &server, &[], "who am I?\n");
    assert_eq!(tree(&dir), before, "a later session recreated a folder");
    let recs = records(
        env.session_files()
            .iter()
            .find(|f| records(f).iter().any(|r| r["tool_call_id"] == "call_1"))
            .expect("the session that called agent_info"),
    );
    let info: Value = serde_json::from_str(&result_of(&recs, "call_1")).unwrap();
    assert_eq!(info["project_dir"], json!(dir));
    assert_eq!(info["created_project_dir"], false);

    let init = env.ok(&["init"]);
    let created: Vec<String> = [
        "memory",
        "memory/project.md",
        "tasks",
        "subagents",
        "subagents/README",
    ]
    .iter()
    .map(|p| format!("  {}\n", dir.join(p).display()))
    .collect();
    assert_eq!(init.stdout, format!("created:\n{}", created.concat()));
    assert_eq!(
        read(&dir.join("memory/project.md")),
        PROJECT_MEMORY_TEMPLATE
    );
    assert_eq!(read(&dir.join("subagents/README")), SUBAGENTS_README);
    assert_eq!(read(&dir.join("notes.txt")), "mine\n");
}

#[test]
fn init_prints_what_it_created_and_then_nothing() {
    let env = TestEnv::new("init");
    let first = env.ok(&["init"]);
    assert_eq!(first.stderr, "");
    let dir = project_dir(&env);
    assert_eq!(
        tree(&dir).keys().collect::<Vec<_>>(),
        [
            "memory",
            "memory/project.md",
            "subagents",
            "subagents/README",
            "tasks"
        ]
    );
    assert!(env.session_files().is_empty(), "init starts no session");
    let second = env.ok(&["init"]);
    assert_eq!(second.stderr, "");
    let shown = format!(
        "$ revolve init\n{}$ revolve init\n{}",
        first.stdout, second.stdout
    );
    insta::with_settings!({filters => env.filters()}, {
        insta::assert_snapshot!("init", shown);
    });
}

/// A project folder something else made with only `goal.json` in it (a
/// `/goal` in a `--bare` session, say) is not filled in by a session;
/// `revolve init` completes it, creating `memory/project.md`, `tasks/` and
/// `subagents/README`, says so, and keeps the goal.
#[test]
fn a_project_folder_holding_only_the_goal_is_completed() {
    let env = TestEnv::new("goal-first");
    let dir = project_dir(&env);
    write(&dir.join("goal.json"), "{}\n");
    let server = server(vec![FakeReply::text("Hello.")]);
    talk(&env, &server, &[], "hi\n");
    assert_eq!(names(&dir), ["goal.json"], "a session filled it in");
    let init = env.ok(&["init"]);
    assert!(init.stdout.starts_with("created:\n"), "{}", init.stdout);
    for part in ["memory/project.md", "tasks", "subagents/README"] {
        assert!(dir.join(part).exists(), "{part} is missing");
    }
    assert_eq!(read(&dir.join("goal.json")), "{}\n");
}

/// A `remember` in a `--bare` session, which made no project directory,
/// makes it whole (memory with `project.md`, `tasks/`, `subagents/`), as
/// the first session in the project would have, and `agent_info` says this
/// session created it (issue 31).
#[test]
fn a_bare_remember_makes_the_project_directory_whole() {
    let env = TestEnv::new("bare-remember");
    let dir = project_dir(&env);
    let server = server(vec![
        call("c1", "agent_info", json!({})),
        call("c2", "remember", remember("db", "port 5432", None)),
        call("c3", "agent_info", json!({})),
        FakeReply::text("Saved."),
    ]);
    talk(&env, &server, &["--bare"], "remember the port\n");
    for part in [
        "memory/db.md",
        "memory/project.md",
        "tasks",
        "subagents/README",
    ] {
        assert!(dir.join(part).exists(), "{part} is missing");
    }
    let recs = records(&env.only_session());
    let info = |id: &str| -> Value { serde_json::from_str(&result_of(&recs, id)).unwrap() };
    assert_eq!(info("c1")["created_project_dir"], false);
    assert_eq!(info("c3")["created_project_dir"], true);
    // An empty remember of it deletes only with replace.
    let server = FakeServer::start(vec![
        call("d1", "remember", remember("db", "", None)),
        FakeReply::text("Refused."),
    ])
    .unwrap();
    talk(&env, &server, &["--bare"], "forget the port\n");
    assert!(dir.join("memory/db.md").exists(), "deleted without replace");
}

/// `revolve memory show` (issue 5) prints the loaded memory: each file's
/// path and its content.
#[test]
fn memory_show_prints_the_loaded_memory_with_its_paths() {
    let env = TestEnv::new("memory-show");
    fixed_global(&env, &[("style.md", "Use tabs.\n")]);
    let memory = project_dir(&env).join("memory");
    write(&memory.join("build.md"), "Run make.\n");
    let run = env.ok(&["memory", "show"]);
    for (path, content) in [
        (global(&env).join("style.md"), "Use tabs."),
        (memory.join("build.md"), "Run make."),
    ] {
        assert!(
            run.stdout.contains(path.to_str().unwrap()),
            "{}",
            run.stdout
        );
        assert!(run.stdout.contains(content), "{}", run.stdout);
    }
}

// ---------------------------------------------------------------------------
// 6. A full system prompt

#[test]
fn system_prompt_snapshot() {
    let env = TestEnv::new("prompt-snapshot");
    fixed_global(
        &env,
        &[
            (
                "verify-before-commit.md",
                "---\ndescription: adopted, the builtin line removed\n---\nRun `make check` \
                 before every commit.\n",
            ),
            ("style.md", "Prefer small functions.\n\n\n"),
            // Not memory: hidden, not markdown.
            (".draft.md", "not loaded\n"),
            ("notes.txt", "not loaded\n"),
        ],
    );
    std::fs::create_dir_all(global(&env).join("folder.md")).unwrap();
    let memory = project_dir(&env).join("memory");
    write(
        &memory.join("project.md"),
        "# This project\n\nA parser for a small language.\n",
    );
    write(
        &memory.join("build-commands.md"),
        "Run `cargo test --workspace`; CI also runs clippy with -D warnings.\n",
    );
    let server = server(vec![FakeReply::text("Hi.")]);
    talk(&env, &server, &[], "hello\n");
    let system = systems(&server).remove(0);
    let logged = contexts(&records(&env.only_session()));
    assert_eq!(logged, [system.as_str()], "the prompt as logged");
    assert_eq!(
        headers(&system),
        [
            "## memory/global/style.md",
            "## memory/global/verify-before-commit.md",
            "## memory/project/build-commands.md",
            "## memory/project/project.md",
        ]
    );
    insta::with_settings!({filters => env.filters()}, {
        insta::assert_snapshot!("system_prompt", system);
    });
}

/// Under a 16k window the builtin habits go in brief (their descriptions),
/// so a first turn fits a 4k window beside the tools; at 16k and above,
/// and for a file the user adopted, they go whole. Replay rebuilds both.
#[test]
fn a_small_window_gets_the_builtin_habits_in_brief() {
    for (window, brief) in [("4096", true), ("16384", false)] {
        let env = TestEnv::new("brief-habits");
        let server = server(vec![FakeReply::text("Hi."), FakeReply::text("Hi.")]);
        talk(&env, &server, &["--window", window], "hello\n");
        // Adopted: the builtin line removed, so whole at any window.
        let adopted = global(&env).join("read-before-edit.md");
        let text = read(&adopted).replace("builtin: true\n", "");
        write(&adopted, &text);
        talk(
            &env,
            &server,
            &["--window", window, "--continue"],
            "again\n",
        );
        let prompts = systems(&server);
        let first = &prompts[0];
        assert_eq!(
            first.contains(
                "## memory/global/asking-the-user.md\n\n(builtin habit, in brief for a small \
                 window) Decide the judgment calls yourself; ask the user only for what only \
                 the user knows.\n"
            ),
            brief,
            "window {window}: {first}"
        );
        assert_eq!(
            !first.contains("# Asking the user"),
            brief,
            "window {window}"
        );
        assert!(
            prompts[1].contains("# Read before you edit"),
            "window {window}: adopted, whole: {}",
            prompts[1]
        );
        assert_eq!(env.ok(&["replay", "--check"]).code, Some(0));
    }
}
