//! The tools' unit tests.

use super::*;

#[cfg(unix)]
use std::os::unix::fs::symlink;

/// A fresh directory, removed on drop: its canonical path, and the
/// `TempDir` that removes it.
struct Temp(
    PathBuf,
    #[allow(dead_code)] // never read: held for its drop
    tempfile::TempDir,
);

impl Temp {
    fn new() -> Temp {
        let dir = tempfile::Builder::new()
            .prefix("revolve-tools-")
            .tempdir()
            .unwrap();
        Temp(fs::canonicalize(dir.path()).unwrap(), dir)
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }

    fn write(&self, rel: &str, content: impl AsRef<[u8]>) -> PathBuf {
        let path = self.path(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, content).unwrap();
        path
    }
}

fn ctx(root: &Path) -> Context {
    let mem = root.join(".mem");
    Context {
        root: root.to_path_buf(),
        root_id: FileId::of(root),
        info: AgentInfo {
            state_root: mem.join("state"),
            ..AgentInfo::default()
        },
        memory: MemoryDirs {
            global: mem.join("global"),
            project: mem.join("project/memory"),
            project_dir: mem.join("project"),
            workspace: None,
        },
        messages: 4,
        now: time::macros::datetime!(2026-12-02 10:00 UTC),
        watch: Default::default(),
        wire: revolve_core::request::Wire::OpenAi,
        sandbox: revolve_core::sandbox::Policy::off(),
    }
}

#[test]
fn remember_writes_project_memory_after_a_snapshot() {
    let tmp = Temp::new();
    let c = ctx(&tmp.0);
    let label = Label::parse("db").unwrap();
    let remember = |content: &str, replace| Tool::Remember {
        label: label.clone(),
        content: content.into(),
        replace,
    };
    let out = run(&remember("port 5432", false), &[], &c, &|| false).output;
    assert!(out.starts_with("created project memory db.md"), "{out}");
    assert_eq!(
        fs::read_to_string(c.memory.project.join("db.md")).unwrap(),
        "port 5432"
    );
    let out = run(&remember("port 6543", false), &[], &c, &|| false).output;
    assert_eq!(
        out,
        "error: memory 'db' exists; pass replace: true to overwrite it"
    );
    let out = run(&remember("port 6543", true), &[], &c, &|| false).output;
    assert!(out.starts_with("replaced"), "{out}");
    let out = run(&remember("", false), &[], &c, &|| false).output;
    assert!(
        out.contains("pass replace: true with empty content"),
        "{out}"
    );
    let out = run(&remember("", true), &[], &c, &|| false).output;
    assert!(out.starts_with("deleted"), "{out}");
    assert!(!c.memory.project.join("db.md").exists());
    // Every change left a snapshot holding the files as they were.
    let store = memory::refinements(&c.info.state_root, &c.memory.project).unwrap();
    assert_eq!(fs::read_dir(store).unwrap().count(), 3);
}

#[test]
fn goal_progress_needs_an_active_goal_and_is_saved() {
    let tmp = Temp::new();
    let c = ctx(&tmp.0);
    let progress = Tool::GoalProgress {
        note: "parser done".into(),
        met: false,
    };
    let out = run(&progress, &[], &c, &|| false).output;
    assert!(out.starts_with("error:"), "{out}");
    let mut goals = goal::load(&c.memory.project_dir).unwrap();
    goals
        .apply(
            &revolve_core::goal::GoalCommand::Set("ship it".into()),
            c.now,
        )
        .unwrap();
    goal::save(&c.memory.project_dir, &goals).unwrap();
    let out = run(&progress, &[], &c, &|| false).output;
    assert!(!out.starts_with("error:"), "{out}");
    assert_eq!(
        goal::load(&c.memory.project_dir)
            .unwrap()
            .current
            .unwrap()
            .notes
            .len(),
        1
    );
}

fn run_with(root: &Path, tool: Tool, grants: &[String]) -> Outcome {
    run(&tool, grants, &ctx(root), &|| false)
}

fn read(root: &Path, path: &str, grants: &[String]) -> String {
    let tool = Tool::ReadFile {
        path: path.into(),
        offset: None,
        limit: None,
    };
    run_with(root, tool, grants).output
}

fn read_range(root: &Path, path: &str, offset: Option<u64>, limit: Option<u64>) -> String {
    let tool = Tool::ReadFile {
        path: path.into(),
        offset,
        limit,
    };
    run_with(root, tool, &[]).output
}

fn grep_in(root: &Path, pattern: &str, path: Option<&str>) -> String {
    let tool = Tool::Grep {
        pattern: pattern.into(),
        path: path.map(Into::into),
    };
    run_with(root, tool, &[]).output
}

fn sh(root: &Path, command: &str, timeout_s: Option<u64>) -> Outcome {
    let tool = Tool::Shell {
        command: command.into(),
        timeout_s: revolve_core::tools::shell_timeout(timeout_s),
        background: false,
    };
    run_with(root, tool, &[])
}

fn is_refusal(out: &str) -> bool {
    out.starts_with("error: ") && out.contains("outside the working tree and not granted")
}

#[test]
fn confinement_allows_the_tree_and_grants_only() {
    let t = Temp::new();
    let root = t.path("tree");
    t.write("tree/a.txt", "inside\n");
    t.write("tree/sub/b.txt", "deeper\n");
    let secret = t.write("outside/secret.txt", "secret\n");
    t.write("outside/dir/c.txt", "granted dir\n");
    symlink(&secret, root.join("link")).unwrap();
    symlink(root.join("a.txt"), root.join("inner-link")).unwrap();

    assert_eq!(read(&root, "a.txt", &[]), "inside\n");
    assert_eq!(read(&root, "./sub/../sub/b.txt", &[]), "deeper\n");
    assert_eq!(
        read(&root, root.join("a.txt").to_str().unwrap(), &[]),
        "inside\n"
    );
    assert_eq!(read(&root, "inner-link", &[]), "inside\n");

    let out = read(&root, "../outside/secret.txt", &[]);
    assert_eq!(
        out,
        "error: ../outside/secret.txt is outside the working tree and not granted to this \
             session; ask with request_file_grant"
    );
    assert!(is_refusal(&read(&root, secret.to_str().unwrap(), &[])));
    assert!(is_refusal(&read(&root, "link", &[])), "symlink out");
    assert!(is_refusal(&read(
        &root,
        "sub/../../outside/secret.txt",
        &[]
    )));
    assert!(is_refusal(&read(&root, "/etc/passwd", &[])));

    // Missing: inside says so; outside is refused like any outside path.
    assert_eq!(
        read(&root, "nope.txt", &[]),
        "error: no such file: nope.txt"
    );
    assert_eq!(read(&root, "a.txt/x", &[]), "error: no such file: a.txt/x");
    assert!(is_refusal(&read(&root, "../outside/nope.txt", &[])));

    // A granted file, and the symlink to it.
    let grant = vec![secret.display().to_string()];
    assert_eq!(read(&root, secret.to_str().unwrap(), &grant), "secret\n");
    assert_eq!(read(&root, "link", &grant), "secret\n");
    assert_eq!(read(&root, "../outside/secret.txt", &grant), "secret\n");
    assert!(is_refusal(&read(&root, "../outside/dir/c.txt", &grant)));

    // A granted directory: everything under it, not its siblings.
    let grant = vec![t.path("outside/dir").display().to_string()];
    assert_eq!(read(&root, "../outside/dir/c.txt", &grant), "granted dir\n");
    assert!(is_refusal(&read(&root, "../outside/secret.txt", &grant)));
    let listing = run_with(
        &root,
        Tool::ListDir {
            path: t.path("outside/dir").display().to_string(),
        },
        &grant,
    );
    assert_eq!(listing.output, "c.txt");
    // A grant is the canonical path it was made for: one that no longer
    // resolves to itself (here never did) grants nothing.
    let grant = vec![format!("{}/../outside/./dir", root.display())];
    assert!(is_refusal(&read(&root, "../outside/dir/c.txt", &grant)));
    // Relative grants mean nothing.
    let grant = vec!["../outside".to_string()];
    assert!(is_refusal(&read(&root, "../outside/secret.txt", &grant)));
}

#[test]
fn spilled_results_are_readable_through_their_grant() {
    let t = Temp::new();
    let root = t.path("tree");
    fs::create_dir_all(&root).unwrap();
    let spill = t.write(
        "state/spills/s1/0001-call_1.txt",
        "line 1\nline 2\nline 3\n",
    );
    t.write("state/spills/s1/0002-other.txt", "not granted\n");
    let grants = vec![spill.display().to_string()];
    let out = run_with(
        &root,
        Tool::ReadFile {
            path: spill.display().to_string(),
            offset: Some(2),
            limit: Some(1),
        },
        &grants,
    );
    assert_eq!(out.output, "line 2\n");
    let other = t.path("state/spills/s1/0002-other.txt");
    assert!(is_refusal(&read(&root, other.to_str().unwrap(), &grants)));
}

#[test]
fn read_file_ranges_and_errors() {
    let t = Temp::new();
    let text: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    t.write("ten.txt", &text);
    assert_eq!(read_range(&t.0, "ten.txt", None, None), text);
    assert_eq!(
        read_range(&t.0, "ten.txt", Some(3), Some(2)),
        "line 3\nline 4\n"
    );
    assert_eq!(read_range(&t.0, "ten.txt", Some(0), Some(1)), "line 1\n");
    assert_eq!(
        read_range(&t.0, "ten.txt", Some(9), None),
        "line 9\nline 10\n"
    );
    assert_eq!(read_range(&t.0, "ten.txt", Some(10), Some(5)), "line 10\n");
    assert_eq!(
        read_range(&t.0, "ten.txt", Some(12), None),
        "error: offset 12 is past the end of ten.txt, which has 10 lines"
    );
    t.write("tail.txt", "a\nno newline at end");
    assert_eq!(
        read_range(&t.0, "tail.txt", Some(2), None),
        "no newline at end"
    );
    t.write("empty.txt", "");
    assert_eq!(read(&t.0, "empty.txt", &[]), "[empty.txt is empty]");
    t.write("latin1.txt", b"caf\xe9\n");
    assert_eq!(read(&t.0, "latin1.txt", &[]), "caf\u{fffd}\n");
    t.write("ctl.txt", "bell\x07 esc\x1b[31m\n");
    assert_eq!(read(&t.0, "ctl.txt", &[]), "bell\x07 esc\x1b[31m\n");

    let mut binary = b"text at first\n".to_vec();
    binary.extend([0u8, 1, 2]);
    t.write("bin.dat", binary);
    let out = read(&t.0, "bin.dat", &[]);
    assert!(out.starts_with("error: bin.dat is a binary file"), "{out}");

    fs::create_dir_all(t.path("dir")).unwrap();
    assert_eq!(
        read(&t.0, "dir", &[]),
        "error: dir is a directory; list it with list_dir"
    );
}

#[test]
fn read_file_caps_output_and_says_how_to_read_on() {
    let t = Temp::new();
    // 10_000 lines of 100 bytes: about 1 MB.
    let line = format!("{}\n", "x".repeat(99));
    t.write("big.txt", line.repeat(10_000));
    let out = read(&t.0, "big.txt", &[]);
    let shown = READ_CAP / 100; // whole lines that fit
    let (body, note) = out.rsplit_once('\n').unwrap();
    assert_eq!(body.len(), shown * 100 - 1);
    assert_eq!(
        note,
        format!(
            "[… file continues: {} more lines; read on with offset={}]",
            10_000 - shown,
            shown + 1
        )
    );
    // Reading on from there continues exactly.
    let next = read_range(&t.0, "big.txt", Some(shown as u64 + 1), Some(1));
    assert_eq!(next, line);
    // A limit that fits is not cut and has no note.
    let out = read_range(&t.0, "big.txt", Some(5), Some(3));
    assert_eq!(out, line.repeat(3));

    // One line longer than the cap.
    t.write(
        "long.txt",
        format!("{}\nsecond\nthird\n", "y".repeat(READ_CAP + 10)),
    );
    let out = read(&t.0, "long.txt", &[]);
    let mut lines = out.lines();
    assert_eq!(lines.next().unwrap().len(), READ_CAP);
    assert!(lines
        .next()
        .unwrap()
        .starts_with("[… line 1 is longer than 256 KiB"));
    assert_eq!(
        lines.next().unwrap(),
        "[… file continues: 2 more lines; read on with offset=2]"
    );
}

#[test]
fn list_dir_format() {
    let t = Temp::new();
    t.write("b.txt", "");
    t.write("a.txt", "");
    t.write(".hidden", "");
    fs::create_dir_all(t.path("sub/inner")).unwrap();
    symlink("a.txt", t.path("c-link")).unwrap();
    let list = |p: &str| run_with(&t.0, Tool::ListDir { path: p.into() }, &[]).output;
    assert_eq!(
        list("."),
        "a.txt\nb.txt\nc-link -> a.txt\nsub/\n[1 entry not shown: hidden, or ignored by \
             .gitignore or .ignore, as grep skips them; `ls -a` in shell shows everything]"
    );
    assert_eq!(list("sub"), "inner/");
    assert_eq!(list("sub/inner"), "[sub/inner is empty]");
    assert_eq!(
        list("a.txt"),
        "error: a.txt is not a directory; read it with read_file"
    );
    assert_eq!(list("missing"), "error: no such file: missing");
    assert!(is_refusal(&list("..")));

    for i in 0..2005 {
        t.write(&format!("many/f{i:04}"), "");
    }
    let out = list("many");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), LIST_CAP + 1);
    assert_eq!(lines[0], "f0000");
    assert_eq!(lines[LIST_CAP - 1], "f1999");
    assert!(lines[LIST_CAP].starts_with("[… 5 more entries not shown, 2005 in all"));
}

#[test]
fn list_dir_leaves_out_what_grep_skips() {
    let t = Temp::new();
    t.write(".gitignore", "dist/\n*.log\n");
    t.write(".ignore", "scratch.txt\n");
    t.write(".env", "needle\n");
    t.write("dist/bundle.js", "needle\n");
    t.write("build.log", "needle\n");
    t.write("scratch.txt", "needle\n");
    t.write("src/main.rs", "needle\n");
    t.write("src/.cache", "needle\n");
    t.write("notes.md", "needle\n");
    let list = |p: &str| run_with(&t.0, Tool::ListDir { path: p.into() }, &[]).output;
    let note = |n: usize| {
        format!(
            "[{n} entries not shown: hidden, or ignored by .gitignore or .ignore, as grep \
                 skips them; `ls -a` in shell shows everything]"
        )
    };
    // The gitignored folder and file, the `.ignore`d file and the
    // hidden ones are left out, and counted.
    assert_eq!(list("."), format!("notes.md\nsrc/\n{}", note(6)));
    assert_eq!(
        list("src"),
        "main.rs\n[1 entry not shown: hidden, or ignored by .gitignore or .ignore, as \
             grep skips them; `ls -a` in shell shows everything]"
    );
    // What grep searches is what list_dir shows.
    assert_eq!(
        grep_in(&t.0, "needle", None),
        "notes.md:1:needle\nsrc/main.rs:1:needle"
    );
    // A folder named explicitly is listed, ignored or not (as ripgrep
    // searches a path it is given).
    assert_eq!(list("dist"), "bundle.js");
    // Only hidden or ignored entries: not "empty".
    fs::remove_file(t.path("src/main.rs")).unwrap();
    assert!(list("src").starts_with("[1 entry not shown: hidden"));
}

#[test]
fn grep_finds_lines_in_the_tree() {
    let t = Temp::new();
    t.write("src/main.rs", "fn main() {\n    println!(\"hello\");\n}\n");
    t.write("src/lib.rs", "pub fn hello_world() {}\n// TODO: more\n");
    t.write("notes.md", "Hello there\n");
    t.write("target/debug/out.rs", "fn hidden_in_target() {}\n");
    t.write(".git/config", "fn in_git\n");
    t.write(".cache/x.rs", "fn in_hidden_dir\n");
    t.write("node_modules/m.js", "fn in_node_modules\n");
    t.write("bin.dat", b"fn \0 binary");
    t.write(
        "big.txt",
        format!("fn big\n{}", "z".repeat(GREP_FILE_MAX as usize)),
    );
    symlink(t.path("src"), t.path("src-link")).unwrap();

    assert_eq!(
        grep_in(&t.0, "fn", None),
        "src/lib.rs:1:pub fn hello_world() {}\nsrc/main.rs:1:fn main() {\n\
             [skipped 1 file over 4 MiB]"
    );
    assert_eq!(
        grep_in(&t.0, "^fn main\\(\\) \\{$", Some("src")),
        "src/main.rs:1:fn main() {"
    );
    // A `{` that starts no count is refused, as ripgrep refuses it,
    // saying how to match it.
    assert_eq!(
            grep_in(&t.0, "main() {", Some("src")),
            "error: grep: bad pattern: unclosed counted repetition (escape ( ) [ ] { } . * + ? | with a backslash to match them as text)"
        );
    assert_eq!(
        grep_in(&t.0, "(?i)hello", Some(".")),
        "notes.md:1:Hello there\nsrc/lib.rs:1:pub fn hello_world() {}\n\
             src/main.rs:2:    println!(\"hello\");\n[skipped 1 file over 4 MiB]"
    );
    assert_eq!(
        grep_in(&t.0, r"\bhello\b", Some("src")),
        "src/main.rs:2:    println!(\"hello\");"
    );
    assert_eq!(
        grep_in(&t.0, "TODO|FIXME", Some("src/lib.rs")),
        "src/lib.rs:2:// TODO: more"
    );
    // An explicitly named skipped directory is searched.
    assert_eq!(
        grep_in(&t.0, "hidden", Some("target")),
        "target/debug/out.rs:1:fn hidden_in_target() {}"
    );
    assert_eq!(
        grep_in(&t.0, "nothing[0-9]+", None),
        "no matches for nothing[0-9]+\n[skipped 1 file over 4 MiB]"
    );
    assert_eq!(
        grep_in(&t.0, "x", Some("bin.dat")),
        "error: bin.dat is a binary file; grep searches text files only"
    );
    assert!(is_refusal(&grep_in(&t.0, "x", Some(".."))));
    let bad = grep_in(&t.0, "a(b", None);
    assert!(
        bad.starts_with("error: grep: bad pattern: unclosed group"),
        "{bad}"
    );
}

#[test]
fn grep_stops_on_cancel() {
    let t = Temp::new();
    t.write("a.txt", "a\n");
    let tool = Tool::Grep {
        pattern: "a".into(),
        path: None,
    };
    let out = run(&tool, &[], &ctx(&t.0), &|| true);
    assert_eq!(out.output, "error: interrupted");
    assert!(out.interrupted);
}

#[test]
fn grep_output_is_bounded() {
    let t = Temp::new();
    t.write("many.txt", "match\n".repeat(800));
    let out = grep_in(&t.0, "match", None);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), GREP_LINES + 1);
    assert_eq!(lines[0], "many.txt:1:match");
    assert_eq!(
        lines[GREP_LINES],
        "[… 300 more matching lines left out; narrow the pattern or the path]"
    );

    t.write("many.txt", format!("{}\n", "m".repeat(400)).repeat(400));
    let out = grep_in(&t.0, "m+", None);
    assert!(out.len() <= GREP_BYTES + 200, "{}", out.len());
    assert!(out.ends_with("more matching lines left out; narrow the pattern or the path]"));
    let first = out.lines().next().unwrap();
    assert_eq!(first, format!("many.txt:1:{}", "m".repeat(400)));

    t.write("many.txt", format!("{}\n", "w".repeat(2000)));
    let out = grep_in(&t.0, "w", None);
    assert_eq!(
        out,
        format!(
            "many.txt:1:{}[… 1488 more characters]",
            "w".repeat(GREP_LINE_CHARS)
        )
    );
}

#[test]
fn grep_survives_pathological_patterns() {
    let t = Temp::new();
    let line = format!("{}!\n", "a".repeat(5000));
    t.write("a.txt", line.repeat(20));
    let started = Instant::now();
    for pattern in [
        "(a*)*[bc]",
        "(a|a)*[bc]",
        "((a+)+)+[bc]$",
        "(a|aa)+[bc]",
        "(.*)*[xz](.*)*[yz]",
        "^(a?){25}a{25}$",
        "(?:a?){1000}[xy]",
    ] {
        let out = grep_in(&t.0, pattern, None);
        assert_eq!(out, format!("no matches for {pattern}"));
    }
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    let out = grep_in(&t.0, "(a{1000}){1000}", None);
    assert!(
        out.starts_with("error: grep: bad pattern: too large"),
        "{out}"
    );
}

#[test]
fn patterns_are_the_regex_crates() {
    let is = |pattern: &str, line: &str| {
        Matcher::new(pattern)
            .unwrap_or_else(|e| panic!("{pattern}: {e}"))
            .is_match(line)
    };
    assert!(is("^ab*c$", "abbbc") && !is("^ab*c$", "xac"));
    assert!(is(r"\bfoo\b", "a foo b") && !is(r"\bfoo\b", "afoob"));
    assert!(is(r"\<foo", "a foo") && !is(r"foo\>", "food"));
    assert!(is("(?i)HeLLo", "say hello") && is("[[:digit:]][[:alpha:]]", "9z"));
    assert!(is(r"\p{Greek}+", "λόγος") && is(r"\x41", "A"));
    // Case folding of the whole pattern, not its first character only.
    assert!(is("(?i)straße", "STRASSE") || is("(?i)ÉCOLE", "école"));
    for bad in ["*a", "a(b", "[abc", r"a\q", "x{3,1}", "\\"] {
        assert!(Matcher::new(bad).is_err(), "{bad} should be refused");
    }
}

#[test]
fn grep_walks_as_ripgrep_does() {
    let t = Temp::new();
    t.write(".gitignore", "dist/\n*.log\n");
    t.write(".ignore", "vendor/\n");
    t.write("src/a.rs", "needle in src\n");
    t.write("dist/bundle.js", "needle in dist\n");
    t.write("vendor/x.rs", "needle in vendor\n");
    t.write("build.log", "needle in a log\n");
    t.write(".hidden/h.rs", "needle hidden\n");
    t.write(".env", "needle in a dotfile\n");
    t.write("target/t.rs", "needle in target\n");
    t.write("bin.dat", "needle\0binary\n");
    let out = grep_in(&t.0, "needle", None);
    assert_eq!(out, "src/a.rs:1:needle in src", "{out}");
    // A path given is searched, whatever the ignore files say of it.
    let out = grep_in(&t.0, "needle", Some("dist/bundle.js"));
    assert_eq!(out, "dist/bundle.js:1:needle in dist", "{out}");
}

#[test]
fn shell_reports_status_and_both_streams() {
    let t = Temp::new();
    let out = sh(&t.0, "echo out; echo err >&2; exit 3", None);
    assert_eq!(out.output, "exit status: 3\nstdout:\nout\nstderr:\nerr");
    assert_eq!(sh(&t.0, "true", None).output, "exit status: 0");
    assert_eq!(
        sh(&t.0, "printf 'no newline'", None).output,
        "exit status: 0\nstdout:\nno newline"
    );
    assert_eq!(
        sh(&t.0, "pwd", None).output,
        format!("exit status: 0\nstdout:\n{}", t.0.display())
    );
    assert_eq!(
        sh(&t.0, "cat", None).output,
        "exit status: 0",
        "stdin is null"
    );
    assert_eq!(
        sh(&t.0, "printf '\\377x'", None).output,
        "exit status: 0\nstdout:\n\u{fffd}x"
    );
    assert_eq!(
        sh(&t.0, "kill -9 $$", None).output,
        "exit status: killed by signal 9"
    );
}

#[test]
fn shell_output_arrives_whole() {
    let t = Temp::new();
    // 2 MB on stdout and 1 MB on stderr at once: neither pipe may block.
    let out = sh(
        &t.0,
        "head -c 1000000 /dev/zero | tr '\\0' e >&2 & head -c 2000000 /dev/zero | tr '\\0' o; wait",
        None,
    )
    .output;
    let (stdout, stderr) = out.split_once("\nstderr:\n").unwrap();
    let stdout = stdout.strip_prefix("exit status: 0\nstdout:\n").unwrap();
    assert_eq!(stdout.len(), 2_000_000);
    assert!(stdout.bytes().all(|b| b == b'o'));
    assert_eq!(stderr.len(), 1_000_000);
}

#[test]
fn shell_kills_a_command_past_the_safety_cap() {
    let t = Temp::new();
    let out = sh(&t.0, "yes", None).output;
    assert!(
        out.starts_with("error: the command wrote more than 64 MiB, so it was stopped"),
        "{}",
        &out[..200]
    );
    let stdout = out.split_once("\nstdout:\n").unwrap().1;
    assert_eq!(stdout.len(), SHELL_STREAM_CAP - 1); // the last newline trimmed
}

#[test]
fn shell_times_out_and_kills_the_group() {
    let t = Temp::new();
    let started = Instant::now();
    let out = sh(
        &t.0,
        "echo started; sleep 30 & sleep 30; echo never",
        Some(1),
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(
        out.output
            .starts_with("error: the command timed out after 1 s and was killed"),
        "{}",
        out.output
    );
    assert!(out.output.ends_with("\nstdout:\nstarted"), "{}", out.output);
    assert!(!out.interrupted);
}

#[test]
fn shell_stops_on_cancel_and_on_refusal() {
    let t = Temp::new();
    let started = Instant::now();
    let cancel = || started.elapsed() > Duration::from_millis(200);
    let tool = Tool::Shell {
        command: "sleep 30".into(),
        timeout_s: revolve_core::tools::shell_timeout(None),
        background: false,
    };
    let out = run(&tool, &[], &ctx(&t.0), &cancel);
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(
        out.output.starts_with("error: interrupted"),
        "{}",
        out.output
    );
    assert!(out.interrupted);
}

#[test]
fn shell_does_not_wait_for_background_processes_and_kills_them() {
    let t = Temp::new();
    let started = Instant::now();
    let out = sh(
        &t.0,
        "echo now; (sleep 5; echo later) & echo $! > bg.pid",
        None,
    );
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(out.output, "exit status: 0\nstdout:\nnow");
    assert!(!alive(&t.path("bg.pid")), "the background child was killed");
}

#[test]
fn shell_kills_background_children_when_the_command_ends() {
    let t = Temp::new();
    let out = sh(&t.0, "sleep 1000 & echo $! > bg.pid", None);
    assert_eq!(out.output, "exit status: 0");
    assert!(!alive(&t.path("bg.pid")));
}

/// Linux only: reaping what left the group reads
/// `/proc/self/task/*/children`, which a kernel built without
/// CONFIG_PROC_CHILDREN lacks: `.ci/run` runs it by name.
#[cfg(target_os = "linux")]
#[test]
#[ignore = "needs /proc/PID/task/TID/children (a kernel with CONFIG_PROC_CHILDREN)"]
fn shell_kills_a_setsid_child_at_the_timeout_and_at_the_end() {
    let me = std::process::id();
    assert!(
        Path::new(&format!("/proc/{me}/task/{me}/children")).exists(),
        "this test needs /proc/PID/task/TID/children (a kernel with CONFIG_PROC_CHILDREN)"
    );
    let t = Temp::new();
    let out = sh(
        &t.0,
        "setsid sleep 1000 & echo $! > s.pid; sleep 30",
        Some(1),
    );
    assert!(
        out.output.starts_with("error: the command timed out"),
        "{}",
        out.output
    );
    assert!(!alive(&t.path("s.pid")), "setsid escaped the timeout kill");
    let out = sh(&t.0, "setsid sleep 1000 & echo $! > e.pid", None);
    assert_eq!(out.output, "exit status: 0");
    assert!(!alive(&t.path("e.pid")), "setsid outlived the command");
}

/// Whether the process whose pid `file` holds still runs (a zombie
/// does not count), asked of ps(1); waits up to 2 s for it to end.
fn alive(file: &Path) -> bool {
    let pid = fs::read_to_string(file).unwrap().trim().to_owned();
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let out = std::process::Command::new("ps")
            .args(["-o", "stat=", "-p", &pid])
            .output()
            .unwrap();
        let stat = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        if stat.is_empty() || stat.starts_with('Z') {
            return false;
        }
        if Instant::now() >= deadline {
            return true;
        }
        thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn request_file_grant_gives_the_canonical_path_for_the_core_to_decide() {
    let t = Temp::new();
    let root = t.path("tree");
    t.write("tree/a.txt", "");
    let file = t.write("outside/f.txt", "granted\n");
    let raw = format!("{}/../outside/f.txt", root.display());
    let ask = |path: &str| {
        let tool = Tool::RequestFileGrant {
            path: path.into(),
            reason: Some("to compare".into()),
        };
        run(&tool, &[], &ctx(&root), &|| false)
    };

    let out = ask(&raw);
    let canonical = file.display().to_string();
    assert_eq!(out.output, "");
    assert_eq!(out.grant.as_deref(), Some(canonical.as_str()));
    assert_eq!(
        read(&root, &raw, std::slice::from_ref(&canonical)),
        "granted\n"
    );

    let out = ask("../outside/f.txt");
    assert_eq!(
        out.output,
        "error: request_file_grant needs an absolute path, not ../outside/f.txt"
    );
    assert_eq!(out.grant, None);

    let out = ask("/no/such/path");
    assert_eq!(out.output, "error: no such file: /no/such/path");
    assert_eq!(out.grant, None);

    let out = ask(root.join("a.txt").to_str().unwrap());
    assert!(out
        .output
        .ends_with("is already readable by this session; no grant is needed"));
    assert_eq!(out.grant, None);
}

#[test]
fn agent_info_is_json() {
    let t = Temp::new();
    let mut context = ctx(&t.0);
    context.info = AgentInfo {
        session_id: "s-1".into(),
        name: Some("amber".into()),
        log_path: "/state/projects/p/sessions/s-1.jsonl".into(),
        project_key: "/repo".into(),
        project_dir: "/repo/.task-agent/projects/repo".into(),
        created_project_dir: true,
        state_root: "/state".into(),
        config_root: "/config".into(),
        project_instructions: vec!["/repo/AGENTS.md".into()],
    };
    let out = run(&Tool::AgentInfo, &[], &context, &|| false);
    let value: serde_json::Value = serde_json::from_str(&out.output).unwrap();
    assert_eq!(value["session_id"], "s-1");
    assert_eq!(value["name"], "amber");
    assert_eq!(value["log_path"], "/state/projects/p/sessions/s-1.jsonl");
    assert_eq!(value["created_project_dir"], true);
    assert_eq!(value["project_instructions"][0], "/repo/AGENTS.md");
    assert_eq!(value["working_dir"], t.0.display().to_string());
    assert!(
        out.output.contains("\n  \"project_key\": \"/repo\""),
        "pretty"
    );
}

#[test]
fn a_file_read_is_seen_whatever_its_text_begins_with() {
    let t = Temp::new();
    t.write("log.txt", "error: this line is the file's own\n");
    let tool = Tool::ReadFile {
        path: "log.txt".into(),
        offset: None,
        limit: None,
    };
    let out = run(&tool, &[], &ctx(&t.0), &|| false);
    assert_eq!(out.output, "error: this line is the file's own\n");
    let (path, hash) = *out.effects.seen.expect("the read is seen");
    assert_eq!(path, t.path("log.txt").to_string_lossy());
    assert_eq!(
        hash,
        crate::edit::hash(b"error: this line is the file's own\n")
    );
    let missing = Tool::ReadFile {
        path: "nope.txt".into(),
        offset: None,
        limit: None,
    };
    assert!(run(&missing, &[], &ctx(&t.0), &|| false)
        .effects
        .seen
        .is_none());
}
