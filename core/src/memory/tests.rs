//! The unit tests of memory's pure half: labels, the prompt block, seeding, snapshot metadata and /remember.

use super::*;
use quickcheck::{quickcheck, Arbitrary, Gen};

fn strings(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

#[test]
fn labels_that_parse() {
    for ok in ["notes", "build-commands", "a", "v1.2", "_x", "x_y.z", "A9"] {
        assert_eq!(Label::parse(ok).unwrap().as_str(), ok);
    }
    let l = Label::parse("notes.md").unwrap();
    assert_eq!(l.as_str(), "notes");
    assert_eq!(l.file_name(), "notes.md");
    assert_eq!(Label::parse("x.md.md").unwrap().file_name(), "x.md.md");
    let longest = "x".repeat(64);
    assert!(Label::parse(&longest).is_ok());
    assert!(Label::parse(&format!("{longest}.md")).is_ok());
}

#[test]
fn labels_that_are_refused() {
    assert_eq!(Label::parse(""), Err(BadLabel::Empty));
    assert_eq!(Label::parse(".md"), Err(BadLabel::Empty));
    assert_eq!(Label::parse(&"x".repeat(65)), Err(BadLabel::TooLong(65)));
    assert_eq!(
        Label::parse(&"x".repeat(10 * 1024)),
        Err(BadLabel::TooLong(10 * 1024))
    );
    for chars in [
        "a/b",
        "../x",
        "a\\b",
        "a b",
        "é",
        "a\0b",
        "x\n",
        "/etc/passwd",
    ] {
        assert_eq!(Label::parse(chars), Err(BadLabel::Characters), "{chars:?}");
    }
    for shape in [".hidden", ".", "..", "-rf", "a..b", "a.", ".seeded", "..md"] {
        assert_eq!(Label::parse(shape), Err(BadLabel::Shape), "{shape:?}");
    }
    assert_eq!(Label::parse("goal"), Err(BadLabel::Reserved("goal")));
    assert_eq!(Label::parse("Goal.md"), Err(BadLabel::Reserved("goal")));
}

#[test]
fn refusals_read_as_sentences() {
    let e = Label::parse("../x").unwrap_err().to_string();
    assert!(e.contains("no '/'"), "{e}");
    let e = Label::parse(&"x".repeat(100)).unwrap_err().to_string();
    assert!(e.contains("at most 64") && e.contains("100"), "{e}");
    let e = Label::parse("goal").unwrap_err().to_string();
    assert!(e.contains("'goal' is reserved"), "{e}");
}

quickcheck! {
    fn a_label_is_a_plain_file_name(raw: String) -> bool {
        match Label::parse(&raw) {
            Ok(l) => {
                let f = l.file_name();
                !f.contains('/') && !f.starts_with('.') && !f.contains("..")
                    && f.ends_with(".md") && l.as_str().len() <= MAX_LABEL
                    && Label::parse(&f) == Ok(l.clone())
                    && Label::parse(l.as_str()) == Ok(l)
            }
            Err(_) => true,
        }
    }
}

fn file(scope: Scope, name: &str, content: &str) -> MemoryFile {
    MemoryFile {
        scope,
        name: name.into(),
        content: content.into(),
    }
}

#[test]
fn no_files_no_block() {
    assert_eq!(prompt_block(&[]), None);
}

#[test]
fn block_order_is_global_then_project_by_name() {
    let files = [
        file(Scope::Project, "b.md", "pb"),
        file(Scope::Global, "z.md", "gz\n\n\n"),
        file(Scope::Project, "a.md", "pa"),
        file(Scope::Global, "a.md", "ga"),
    ];
    let block = prompt_block(&files).unwrap();
    let headers: Vec<&str> = block.lines().filter(|l| l.starts_with("## ")).collect();
    assert_eq!(
        headers,
        [
            "## memory/global/a.md",
            "## memory/global/z.md",
            "## memory/project/a.md",
            "## memory/project/b.md",
        ]
    );
    assert!(block.contains("## memory/global/z.md\n\ngz\n\n## memory/project/a.md"));
    assert!(block.contains("`remember` tool"));
    let mut reversed = files.clone();
    reversed.reverse();
    assert_eq!(prompt_block(&reversed).unwrap(), block);
}

#[test]
fn block_snapshot() {
    let mut files: Vec<MemoryFile> = BUILTIN
        .iter()
        .map(|(name, content)| file(Scope::Global, name, content))
        .collect();
    files.push(file(Scope::Project, "project.md", PROJECT_MEMORY_TEMPLATE));
    files.push(file(
        Scope::Project,
        "build-commands.md",
        "Run `cargo test --workspace`; CI also runs clippy with -D warnings.\n",
    ));
    insta::assert_snapshot!("prompt_block", prompt_block(&files).unwrap());
}

#[test]
fn builtins_are_short_marked_and_valid_labels() {
    for (name, content) in BUILTIN {
        assert_eq!(Label::parse(name).unwrap().file_name(), name);
        assert!(
            content.starts_with("---\nbuiltin: true\ndescription: "),
            "{name}"
        );
        let lines: Vec<&str> = content.lines().collect();
        assert_eq!(lines[3], "---", "{name}: front matter is three lines");
        // A plain YAML scalar cannot hold ": ".
        let description = lines[2].strip_prefix("description: ").unwrap();
        assert!(!description.contains(": "), "{name}");
        assert!((10..=25).contains(&lines.len()), "{name}: {}", lines.len());
        assert!(content.ends_with(".\n"), "{name}");
    }
}

#[test]
fn seeding_writes_only_what_is_absent_and_new() {
    let all: Vec<&str> = BUILTIN.iter().map(|(n, _)| *n).collect();
    assert_eq!(to_seed(&[], &[]), all);
    // The first start seeded everything: nothing again, whatever is present.
    assert!(to_seed(&strings(&all), &[]).is_empty());
    // Edited: present, so not rewritten, even if never seeded.
    assert!(!to_seed(&[], &strings(&["task-discipline.md"])).contains(&"task-discipline.md"));
    // Deleted after seeding: not written back.
    let seeded = strings(&["read-before-edit.md"]);
    assert!(!to_seed(&seeded, &[]).contains(&"read-before-edit.md"));
    // A document added by a later version is seeded once.
    let earlier = strings(&all[..4]);
    assert_eq!(to_seed(&earlier, &earlier), [all[4]]);
}

quickcheck! {
    fn seeding_never_touches_present_or_seeded(seeded: Vec<u8>, present: Vec<u8>) -> bool {
        let pick = |v: &[u8]| -> Vec<String> {
            v.iter().map(|i| BUILTIN[*i as usize % BUILTIN.len()].0.to_owned()).collect()
        };
        let (seeded, present) = (pick(&seeded), pick(&present));
        let out = to_seed(&seeded, &present);
        out.iter().all(|n| !seeded.iter().any(|s| s == n) && !present.iter().any(|p| p == n))
            && BUILTIN.iter().all(|(n, _)| {
                out.contains(n) || seeded.iter().any(|s| s == n) || present.iter().any(|p| p == n)
            })
    }
}

#[test]
fn templates_say_what_they_are_for() {
    assert!(PROJECT_MEMORY_TEMPLATE.contains("loaded into every turn"));
    assert!(SUBAGENTS_README.contains("---\n"));
    assert!(SUBAGENTS_README.contains("files:") && SUBAGENTS_README.contains("lane:"));
}

#[test]
fn meta_cfg_reads_as_documented() {
    let meta = SnapshotMeta {
        session: "refine-check".into(),
        messages: 4,
        kind: SnapshotKind::Manual,
        files: vec![(
            "worktree-preferences.md".into(),
            "added the lint table constraint".into(),
        )],
        undone: false,
        pending: false,
    };
    let cfg = meta.to_cfg();
    assert_eq!(
        cfg,
        "# revolve memory snapshot\nsession = refine-check\nmessages = 4\nkind = manual\n\
         file = worktree-preferences.md\nchange = added the lint table constraint\n\
         undone = false\n"
    );
    assert_eq!(SnapshotMeta::parse_cfg(&cfg), Ok(meta));
}

#[test]
fn meta_cfg_is_lenient_where_it_can_be() {
    let meta = SnapshotMeta::parse_cfg(
        "\n# hand edited\nkind=remember\n  session =  amber \nmessages= 12\n\
         future = whatever\nfile = a.md\nfile = \"b c.md\"\nchange = \" two\\nlines \"\n",
    )
    .unwrap();
    assert_eq!(meta.session, "amber");
    assert_eq!(meta.messages, 12);
    assert_eq!(meta.kind, SnapshotKind::Remember);
    assert_eq!(
        meta.files,
        [
            ("a.md".to_owned(), String::new()),
            ("b c.md".to_owned(), " two\nlines ".to_owned()),
        ]
    );
    assert!(!meta.undone);
}

#[test]
fn meta_cfg_errors_name_the_line() {
    let err = |t: &str| SnapshotMeta::parse_cfg(t).unwrap_err();
    assert_eq!(err("session = a\nmessages = 1\n"), "no kind line");
    assert!(err("session = a\nmessages = x\nkind = manual").starts_with("line 2:"));
    assert!(err("kind = sometimes").contains("manual, automatic or remember"));
    assert!(err("change = orphan").contains("needs a file line"));
    assert!(err("file = a\nchange = x\nchange = y").starts_with("line 3:"));
    assert!(err("just words").starts_with("line 1:"));
    assert!(err("session = \"unterminated").contains("bad quoted value"));
    assert!(err("undone = yes").contains("true or false"));
}

impl Arbitrary for SnapshotKind {
    fn arbitrary(g: &mut Gen) -> SnapshotKind {
        *g.choose(&[
            SnapshotKind::Manual,
            SnapshotKind::Automatic,
            SnapshotKind::Remember,
        ])
        .unwrap()
    }
}

impl Arbitrary for SnapshotMeta {
    fn arbitrary(g: &mut Gen) -> SnapshotMeta {
        SnapshotMeta {
            session: String::arbitrary(g),
            messages: u64::arbitrary(g),
            kind: SnapshotKind::arbitrary(g),
            files: Vec::arbitrary(g),
            undone: bool::arbitrary(g),
            pending: bool::arbitrary(g),
        }
    }
}

#[test]
fn remember_decides_from_the_file_as_it_is() {
    let l = Label::parse("db").unwrap();
    assert_eq!(
        remember(&l, None, "x", false),
        Ok(Remembered::Written("created"))
    );
    assert!(remember(&l, Some(b"y"), "x", false)
        .unwrap_err()
        .contains("pass replace: true"));
    assert_eq!(
        remember(&l, Some(b"y"), "x", true),
        Ok(Remembered::Written("replaced"))
    );
    assert_eq!(
        remember(&l, Some(b"x"), "x", true),
        Ok(Remembered::Unchanged)
    );
    assert!(remember(&l, Some(b"x"), "", false)
        .unwrap_err()
        .contains("pass replace: true with empty content to delete it"));
    assert_eq!(
        remember(&l, Some(b"x"), "", true),
        Ok(Remembered::Written("deleted"))
    );
    assert!(remember(&l, None, "", false)
        .unwrap_err()
        .contains("no memory 'db' to delete"));
    assert_eq!(
        remember_meta("s", 2, &l, "replaced").files[0].1,
        "updated: remember db"
    );
}

quickcheck! {
    fn meta_cfg_round_trips(meta: SnapshotMeta) -> bool {
        SnapshotMeta::parse_cfg(&meta.to_cfg()) == Ok(meta)
    }

    fn a_value_round_trips(value: String) -> bool {
        let line = format!("k = {}", encode_value(&value));
        let (_, raw) = line.split_once('=').unwrap();
        !encode_value(&value).contains('\n') && decode_value(raw) == Ok(value)
    }
}

#[test]
fn a_brief_block_gives_builtin_documents_by_their_description_only() {
    let mut files: Vec<MemoryFile> = BUILTIN
        .iter()
        .map(|(name, content)| file(Scope::Global, name, content))
        .collect();
    // Adopted: the builtin line removed, so it stays whole.
    files[0].content = files[0].content.replace("builtin: true\n", "");
    files.push(file(
        Scope::Project,
        "build-commands.md",
        "Run `cargo test --workspace`; CI also runs clippy with -D warnings.\n",
    ));
    let whole = prompt_block(&files).unwrap();
    let brief = prompt_block_within(&files, true).unwrap();
    assert_eq!(prompt_block_within(&files, false).unwrap(), whole);
    assert!(
        brief.len() * 2 < whole.len(),
        "{} of {}",
        brief.len(),
        whole.len()
    );
    assert!(brief.contains(
        "## memory/global/asking-the-user.md\n\n(builtin habit, in brief for a small window) \
         Decide the judgment calls yourself; ask the user only for what only the user knows.\n"
    ));
    assert!(
        brief.contains(files[0].content.trim_end()),
        "adopted: whole"
    );
    assert!(
        brief.contains("Run `cargo test --workspace`"),
        "the user's own: whole"
    );
    assert!(!brief.contains("# Asking the user"));
}
