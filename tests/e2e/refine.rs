//! `/refine` end to end, against the fake model server (OpenAI wire) and
//! the scripted provider: a refinement rewriting the memory files from the
//! whole session (every file of its chain) after a snapshot of both memory
//! directories, malformed and no-op answers changing nothing, the history
//! as a log (`/refine history [--diff]`, `revolve memory history`), undo
//! walking back over refinements and `remember` calls byte for byte,
//! automatic refinement after 25 turns or a compaction with its cooldown,
//! and what the next start does with an entry a crash left pending.
//!
//! Every test writes its own global memory with a `.seeded` list naming the
//! builtin documents, so nothing is seeded and the memory stays small.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use revolve_core::memory::{SnapshotKind, SnapshotMeta, BUILTIN};
use revolve_core::refine::PROMPT;
use revolve_testkit::{FakeProtocol, FakeReply, FakeServer, Limit, Overflows, Recorded};
use serde_json::{json, Value};

use crate::common::{records, request_messages, Run, TestEnv};

// ---------------------------------------------------------------------------
// Helpers

/// `$XDG_CONFIG_HOME/task-agent`.
fn config(env: &TestEnv) -> PathBuf {
    env.home.join(".config/task-agent")
}

/// The global memory directory (no `.task-agent/` workspace above).
fn global(env: &TestEnv) -> PathBuf {
    config(env).join("memory")
}

/// `/a/b` as `-a-b`.
fn slug(path: &Path) -> String {
    path.to_str()
        .expect("test paths are UTF-8")
        .replace('/', "-")
}

/// The project memory directory: `projects/<slug of cwd>/memory` (the
/// working directory is not a git repository, so it is the key).
fn project(env: &TestEnv) -> PathBuf {
    config(env)
        .join("projects")
        .join(slug(&env.cwd))
        .join("memory")
}

/// Where the snapshot entries of one memory directory live.
fn store(env: &TestEnv, memory_dir: &Path) -> PathBuf {
    env.state
        .join("task-agent/refinements")
        .join(slug(memory_dir))
}

/// The entries (stamps) of one memory directory, oldest first by name.
fn entries(env: &TestEnv, memory_dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(store(env, memory_dir))
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// An entry's `meta.cfg`, read.
fn meta(env: &TestEnv, memory_dir: &Path, stamp: &str) -> SnapshotMeta {
    let cfg = read(&store(env, memory_dir).join(stamp).join("meta.cfg"));
    SnapshotMeta::parse_cfg(&cfg).unwrap_or_else(|e| panic!("{stamp}: {e}: {cfg}"))
}

/// The regular, non-hidden files of a folder, by name, as bytes.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let Ok(read) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in read.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with('.') && entry.file_type().unwrap().is_file() {
            out.insert(name, std::fs::read(entry.path()).unwrap());
        }
    }
    out
}

/// The whole memory, `global/NAME` and `project/NAME`, as bytes.
type Memory = BTreeMap<String, Vec<u8>>;

fn memory(env: &TestEnv) -> Memory {
    let mut all = Memory::new();
    for (scope, dir) in [("global", global(env)), ("project", project(env))] {
        for (name, bytes) in files(&dir) {
            all.insert(format!("{scope}/{name}"), bytes);
        }
    }
    all
}

/// `base` with these files written (`Some`) or removed (`None`).
fn with(base: &Memory, changes: &[(&str, Option<&[u8]>)]) -> Memory {
    let mut m = base.clone();
    for (file, bytes) in changes {
        match bytes {
            Some(b) => m.insert((*file).to_owned(), b.to_vec()),
            None => m.remove(*file),
        };
    }
    m
}

/// Writes a memory: a global `.seeded` list naming every builtin (so
/// nothing is seeded), then these `scope/NAME` files.
fn set_memory(env: &TestEnv, m: &Memory) {
    let names: Vec<&str> = BUILTIN.iter().map(|(n, _)| *n).collect();
    write(
        &global(env).join(".seeded"),
        format!("{}\n", names.join("\n")).as_bytes(),
    );
    std::fs::create_dir_all(project(env)).unwrap();
    for (file, bytes) in m {
        let (scope, name) = file.split_once('/').unwrap();
        let dir = if scope == "global" {
            global(env)
        } else {
            project(env)
        };
        write(&dir.join(name), bytes);
    }
}

/// A memory from `(scope/NAME, content)` pairs.
fn mem(list: &[(&str, &[u8])]) -> Memory {
    list.iter()
        .map(|(f, b)| ((*f).to_owned(), b.to_vec()))
        .collect()
}

fn write(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().expect("a parent")).expect("create a test dir");
    std::fs::write(path, bytes).expect("write a test file");
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

fn serve(replies: Vec<FakeReply>) -> FakeServer {
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

/// The harness turns automatic refinement off; the tests about it turn it
/// back on.
const AUTO: (&str, &str) = ("REVOLVE_NO_AUTO_REFINE", "false");

/// [`talk`] with automatic refinement on.
fn talk_auto(env: &TestEnv, server: &FakeServer, extra: &[&str], stdin: &str) -> Run {
    let url = server.url();
    let mut args = vec!["--base-url", url.as_str()];
    args.extend_from_slice(extra);
    let run = env.run_env(&args, stdin, &[AUTO]);
    assert_eq!(run.code, Some(0), "revolve {args:?} failed: {run:?}");
    run
}

/// A file a refinement writes: `{"file", "content", "change"}`.
fn put(file: &str, content: &str, change: &str) -> Value {
    json!({"file": file, "content": content, "change": change})
}

/// A file a refinement deletes.
fn delete(file: &str, change: &str) -> Value {
    json!({"file": file, "delete": true, "change": change})
}

/// The refinement answer `{"files": […]}` as the model's text.
fn refinement(files: &[Value]) -> String {
    json!({ "files": files }).to_string()
}

/// One reply calling `remember` (a new label).
fn remember(id: &str, label: &str, content: &str) -> FakeReply {
    let args = json!({"label": label, "content": content}).to_string();
    FakeReply::tool_calls("", &[(id, "remember", &args)])
}

fn body(r: &Recorded) -> Value {
    serde_json::from_str(&r.body).expect("request bodies are JSON")
}

/// The system prompt a request carried.
fn system(r: &Recorded) -> String {
    let body = body(r);
    assert_eq!(body["messages"][0]["role"], "system", "{body}");
    body["messages"][0]["content"]
        .as_str()
        .expect("a text system prompt")
        .to_owned()
}

/// Whether a request is a refinement: one user message ending with the
/// refinement instructions.
fn is_refinement(r: &Recorded) -> bool {
    let m = request_messages(&r.body);
    m.len() == 1 && m[0].0 == "user" && m[0].1.ends_with(PROMPT)
}

/// How one memory file reads in a system prompt.
fn block(file: &str, content: &str) -> String {
    format!("\n## memory/{file}\n\n{}\n", content.trim_end())
}

/// The `refined` records of a log.
fn refined(path: &Path) -> Vec<Value> {
    records(path)
        .into_iter()
        .filter(|r| r["type"] == "refined")
        .collect()
}

/// Checks every line of a history: an entry's first line is exactly
/// `YYYY-MM-DD HH:MM UTC · session 'NAME' · after N messages · KIND`
/// (then ` · (undone)` for one rolled back), each file under it
/// `    VERB scope/NAME.md — sentence`, and with `--diff` the diff lines
/// under a file are indented further.
fn assert_history_format(text: &str) {
    assert!(!text.is_empty());
    let mut first = true;
    for line in text.lines() {
        if let Some(file) = line.strip_prefix("    ") {
            assert!(!first, "a file line before any entry: {line:?}");
            if file.starts_with("  ") {
                continue;
            }
            let (verb, rest) = file.split_once(' ').expect("VERB FILE — sentence");
            assert!(
                ["created", "updated", "deleted"].contains(&verb),
                "{line:?}"
            );
            let (path, sentence) = rest.split_once(" — ").expect("FILE — sentence");
            assert!(
                (path.starts_with("project/") || path.starts_with("global/"))
                    && path.ends_with(".md"),
                "{line:?}"
            );
            assert!(!sentence.trim().is_empty(), "{line:?}");
            continue;
        }
        first = false;
        let parts: Vec<&str> = line.split(" · ").collect();
        assert!(parts.len() == 4 || parts.len() == 5, "{line:?}");
        let when = parts[0].as_bytes();
        let shape = "2026-12-02 10:00 UTC".as_bytes();
        assert_eq!(when.len(), shape.len(), "{line:?}");
        for (c, s) in when.iter().zip(shape) {
            assert_eq!(c.is_ascii_digit(), s.is_ascii_digit(), "{line:?}");
            if !s.is_ascii_digit() {
                assert_eq!(c, s, "{line:?}");
            }
        }
        assert!(
            parts[1].starts_with("session '") && parts[1].ends_with('\''),
            "{line:?}"
        );
        let n = parts[2]
            .strip_prefix("after ")
            .and_then(|r| r.strip_suffix(" messages"))
            .expect("after N messages");
        assert!(n.parse::<u64>().is_ok(), "{line:?}");
        assert!(
            ["manual", "automatic", "remember"].contains(&parts[3]),
            "{line:?}"
        );
        if let Some(undone) = parts.get(4) {
            assert_eq!(*undone, "(undone)", "{line:?}");
        }
    }
}

/// The first lines of a history's entries, in order.
fn heads(text: &str) -> Vec<&str> {
    text.lines().filter(|l| !l.starts_with(' ')).collect()
}

/// The file lines under the `n`th entry of a history (diffs left out),
/// sorted: the order of the files within one change is not the point.
fn files_of(text: &str, n: usize) -> Vec<&str> {
    let mut entry = None;
    let mut v = Vec::new();
    for line in text.lines() {
        if !line.starts_with(' ') {
            entry = Some(entry.map_or(0, |e| e + 1));
        } else if entry == Some(n) && !line.starts_with("      ") {
            v.push(line);
        }
    }
    v.sort_unstable();
    v
}

/// What an undo says, its lines sorted (the order of the files is not the
/// point).
fn undone(text: &str) -> (String, Vec<&str>) {
    let mut lines = text.lines();
    let first = lines.next().unwrap_or("").to_owned();
    let mut rest: Vec<&str> = lines.collect();
    rest.sort_unstable();
    (first, rest)
}

// ---------------------------------------------------------------------------
// 1. /refine

/// The notes the fake model writes when `/compact` asks for them.
const NOTES: &str = "Facts: the database listens on port 5432.";

#[test]
fn refine_rewrites_memory_from_the_whole_chain_after_a_snapshot() {
    let env = TestEnv::new("refine");
    let before = mem(&[
        ("global/style.md", b"Use tabs.\n"),
        ("project/db.md", b"port 5432\n"),
        ("project/old.md", b"obsolete\n"),
    ]);
    set_memory(&env, &before);
    let answer = format!(
        "Here are the files:\n```json\n{}\n```",
        refinement(&[
            put("project/db.md", "port 6543 — moved ✓", "the port moved"),
            delete("project/old.md", "nothing there was true any more"),
            put("global/style.md", "Use spaces.\r\n", "spaces now"),
            put("global/habits.md", "Run the tests first.\n", "a new habit"),
        ])
    );
    let server = serve(vec![
        FakeReply::text("Answer one."),
        FakeReply::text("Answer two."),
        FakeReply::text("Answer three."),
        FakeReply::text("Answer four."),
        FakeReply::text(NOTES),
        FakeReply::text(&answer),
        FakeReply::text("Answer five."),
    ]);

    // A first run that ends compacted, a second that refines first thing
    // (so no refinement is due on its own after its turn): the refinement
    // reads both files of the chain.
    talk(
        &env,
        &server,
        &["--name", "db"],
        "one\ntwo\nthree\nfour\n/compact\n",
    );
    assert_eq!(env.session_files().len(), 2, "the compaction made a file");
    let run = talk(&env, &server, &["--continue"], "/refine\nfive\n");
    assert_eq!(run.stdout, "Answer five.\n", "{run:?}");
    assert!(
        run.stderr
            .contains("refinement: memory changed (/refine undo takes it back)"),
        "{run:?}"
    );

    // The files, exactly as the model wrote them.
    let after = with(
        &before,
        &[
            ("project/db.md", Some("port 6543 — moved ✓".as_bytes())),
            ("project/old.md", None),
            ("global/style.md", Some(b"Use spaces.\r\n")),
            ("global/habits.md", Some(b"Run the tests first.\n")),
        ],
    );
    assert_eq!(memory(&env), after);

    // One entry per memory directory, under one name, holding the files as
    // they were and what the model said about each.
    let stamps = entries(&env, &global(&env));
    assert_eq!(stamps.len(), 1, "{stamps:?}");
    assert_eq!(entries(&env, &project(&env)), stamps);
    let stamp = &stamps[0];
    let entry = |dir: &Path| store(&env, dir).join(stamp);
    assert_eq!(
        files(&entry(&global(&env)).join("files")),
        mem(&[("style.md", b"Use tabs.\n")])
    );
    assert_eq!(
        files(&entry(&project(&env)).join("files")),
        mem(&[("db.md", b"port 5432\n"), ("old.md", b"obsolete\n")])
    );
    // The notes, then turns two to four kept verbatim: seven messages.
    let expected = |files: &[(&str, &str)]| SnapshotMeta {
        session: "db".into(),
        messages: 7,
        kind: SnapshotKind::Manual,
        files: files
            .iter()
            .map(|(f, c)| ((*f).to_owned(), (*c).to_owned()))
            .collect(),
        undone: false,
        pending: false,
    };
    assert_eq!(
        meta(&env, &global(&env), stamp),
        expected(&[
            ("global/style.md", "updated: spaces now"),
            ("global/habits.md", "created: a new habit"),
        ])
    );
    assert_eq!(
        meta(&env, &project(&env), stamp),
        expected(&[
            ("project/db.md", "updated: the port moved"),
            ("project/old.md", "deleted: nothing there was true any more"),
        ])
    );
    let cfg = read(&entry(&project(&env)).join("meta.cfg"));
    assert!(
        cfg.contains("\nsession = db\n") && cfg.contains("\nkind = manual\n"),
        "{cfg}"
    );

    // What the model read: the whole session, from the first file of the
    // chain on, and the memory as it was.
    let requests = server.requests();
    assert_eq!(requests.len(), 7);
    let asked = &requests[5];
    assert!(is_refinement(asked), "{}", asked.body);
    assert!(
        requests.iter().filter(|r| is_refinement(r)).count() == 1,
        "one refinement request"
    );
    let text = &request_messages(&asked.body)[0].1;
    // The real content of every message, the first file's on, each read
    // once: the turns a compaction carried over are not read again, nor are
    // its notes (everything they summarize is there verbatim).
    assert!(text.starts_with("<session>\n[user]\none\n"), "{text}");
    let at = |part: &str| {
        text.find(part)
            .unwrap_or_else(|| panic!("{part:?} is not in the refinement request: {text}"))
    };
    let order = [
        at("[user]\none\n[assistant]\nAnswer one.\n"),
        at("[user]\ntwo\n[assistant]\nAnswer two.\n"),
        at("[user]\nfour\n[assistant]\nAnswer four.\n"),
        at("</session>"),
    ];
    assert_eq!(text.matches("[user]\nthree\n").count(), 1, "{text}");
    assert!(!text.contains(NOTES), "{text}");
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{text}");
    assert!(
        text.ends_with(&format!(
            "</session>\n\n<memory>\n## global/style.md\nUse tabs.\n\n## project/db.md\nport \
             5432\n\n## project/old.md\nobsolete\n\n</memory>\n\n{PROMPT}"
        )),
        "{text}"
    );

    // The next turn carries the new memory; the one before carried the old.
    let old = system(&requests[3]);
    assert!(old.contains(&block("project/db.md", "port 5432")), "{old}");
    let new = system(&requests[6]);
    for (file, content) in [
        ("project/db.md", "port 6543 — moved ✓"),
        ("global/style.md", "Use spaces."),
        ("global/habits.md", "Run the tests first."),
    ] {
        assert!(new.contains(&block(file, content)), "{file}: {new}");
    }
    assert!(!new.contains("project/old.md"), "{new}");

    // The log says so, naming the entry.
    let head = env
        .session_files()
        .into_iter()
        .find(|f| !records(f)[0]["continues"].is_null())
        .expect("the head of the chain");
    let logged = refined(&head);
    assert_eq!(logged.len(), 1, "{logged:?}");
    assert_eq!(logged[0]["auto"], false);
    assert_eq!(logged[0]["entry"], stamp.as_str());
    assert!(
        env.ok(&["replay"]).stdout.contains("── memory refined\n"),
        "replay shows it"
    );
}

// ---------------------------------------------------------------------------
// 2. Answers that change nothing

#[test]
fn malformed_and_no_op_answers_change_nothing_and_say_why() {
    let env = TestEnv::new("refine-bad");
    let before = mem(&[
        ("global/style.md", b"Use tabs.\n"),
        ("project/db.md", b"port 5432\n"),
    ]);
    set_memory(&env, &before);
    let bad: Vec<(String, &str)> = vec![
        (
            "I would rather not change anything.".into(),
            "the answer holds no JSON object",
        ),
        (
            r#"{"files": {"file": "project/db.md"}}"#.into(),
            "the answer is not the asked JSON: ",
        ),
        (
            refinement(&[put("project/../x.md", "escaped\n", "escape")]),
            r#""project/../x.md": a memory label "#,
        ),
        (
            refinement(&[put("notes/db.md", "x\n", "elsewhere")]),
            r#""notes/db.md" is not project/NAME.md or global/NAME.md"#,
        ),
        (
            refinement(&[put("project/db.md", "port 6543\n", "  ")]),
            r#""project/db.md" has no sentence saying what changed"#,
        ),
        // One good file does not carry a bad one.
        (
            refinement(&[
                put("project/db.md", "port 6543\n", "the port moved"),
                json!({"file": "project/new.md", "change": "no content"}),
            ]),
            r#""project/new.md" has no content"#,
        ),
        (
            refinement(&[
                put("project/db.md", "port 6543\n", "moved"),
                put("project/db", "port 7000\n", "moved again"),
            ]),
            r#""project/db" is given twice"#,
        ),
    ];
    let mut replies = vec![FakeReply::text("Hi.")];
    replies.extend(bad.iter().map(|(text, _)| FakeReply::text(text)));
    replies.push(FakeReply::Status {
        code: 500,
        body: "the refiner is down".into(),
        retry_after: None,
    });
    // No-ops: nothing listed, the same bytes, deleting what is not there.
    for noop in [
        refinement(&[]),
        refinement(&[put("project/db.md", "port 5432\n", "kept the port")]),
        refinement(&[delete("project/gone.md", "removed nothing")]),
    ] {
        replies.push(FakeReply::text(&noop));
    }
    replies.push(FakeReply::text("Bye."));
    let server = serve(replies);
    let refines = 1 + bad.len() + 3;
    let stdin = format!("hello\n/refine bogus\n{}bye\n", "/refine\n".repeat(refines));
    let run = talk(&env, &server, &[], &stdin);
    assert_eq!(run.stdout, "Hi.\nBye.\n");
    assert!(
        run.stderr
            .contains("/refine takes nothing, history [--diff] or undo\n"),
        "{run:?}"
    );

    // Each one is told why, in order.
    let told: Vec<&str> = run
        .stderr_lines()
        .into_iter()
        .filter(|l| l.starts_with("refinement") && !l.ends_with('…'))
        .collect();
    assert_eq!(told.len(), refines, "{told:#?}");
    for ((_, why), line) in bad.iter().zip(&told) {
        let reason = line
            .strip_prefix("refinement: the answer was not usable (")
            .and_then(|l| l.strip_suffix("); memory unchanged"))
            .unwrap_or_else(|| panic!("{line:?}"));
        assert!(reason.starts_with(why), "{line:?} does not say {why:?}");
    }
    let failed = told[bad.len()];
    assert!(
        failed.starts_with("refinement failed (") && failed.ends_with("); memory unchanged"),
        "{failed:?}"
    );
    assert!(failed.contains("500"), "{failed:?}");
    assert_eq!(
        told[bad.len() + 1..],
        ["refinement: nothing to change"; 3],
        "{told:#?}"
    );

    // Nothing changed anywhere: the files, no entry, the next prompt.
    assert_eq!(memory(&env), before);
    assert!(
        !env.state.join("task-agent/refinements").exists(),
        "no entry: {:?}",
        entries(&env, &project(&env))
    );
    let requests = server.requests();
    assert_eq!(requests.len(), refines + 2);
    assert_eq!(
        system(&requests[refines + 1]),
        system(&requests[0]),
        "the same memory in the next turn"
    );
    // Every refinement is logged, none with an entry.
    let logged = refined(&env.only_session());
    assert_eq!(logged.len(), refines);
    assert!(
        logged
            .iter()
            .all(|r| r["entry"].is_null() && r["auto"] == false),
        "{logged:#?}"
    );
    assert!(env
        .ok(&["memory", "history"])
        .stdout
        .contains("no memory changes yet"));
}

// ---------------------------------------------------------------------------
// 3. The history

/// A session named `refine-check` that makes three changes: a `remember`
/// call, a refinement, and another refinement that is then undone. The
/// piped lines end with `tail`.
fn three_changes(env: &TestEnv, tail: &str) -> (FakeServer, Run) {
    set_memory(env, &mem(&[("project/project.md", b"A parser.\n")]));
    let server = serve(vec![
        remember("call_1", "db", "port 5432\n"),
        FakeReply::text("Noted."),
        FakeReply::text(&refinement(&[
            put("project/db.md", "port 6543\n", "the port moved to 6543"),
            put("global/style.md", "Use tabs.\n", "noted the style"),
        ])),
        FakeReply::text(&refinement(&[put(
            "project/db.md",
            "port 7000\n",
            "the port moved again",
        )])),
    ]);
    let stdin = format!("remember the database\n/refine\n/refine\n/refine undo\n{tail}");
    let run = talk(env, &server, &["--name", "refine-check"], &stdin);
    (server, run)
}

#[test]
fn history_reads_as_a_log_newest_first() {
    let env = TestEnv::new("history");
    let (_server, run) = three_changes(&env, "/refine history\n/refine history --diff\n");

    let history = env.ok(&["memory", "history"]);
    assert_eq!(history.stderr, "");
    let text = history.stdout;
    assert_history_format(&text);
    assert_eq!(
        heads(&text),
        [
            "2026-12-02 10:00 UTC · session 'refine-check' · after 4 messages · manual · (undone)",
            "2026-12-02 10:00 UTC · session 'refine-check' · after 4 messages · manual",
            "2026-12-02 10:00 UTC · session 'refine-check' · after 2 messages · remember",
        ],
        "{text}"
    );
    assert_eq!(
        files_of(&text, 0),
        ["    updated project/db.md — the port moved again"]
    );
    assert_eq!(
        files_of(&text, 1),
        [
            "    created global/style.md — noted the style",
            "    updated project/db.md — the port moved to 6543",
        ],
        "{text}"
    );
    assert_eq!(
        files_of(&text, 2),
        ["    created project/db.md — remember db"]
    );

    let diff = env.ok(&["memory", "history", "--diff"]).stdout;
    assert_history_format(&diff);
    assert_eq!(heads(&diff), heads(&text));
    for change in [
        "      --- a/project/db.md\n      +++ b/project/db.md\n      @@ -1 +1 @@\n      \
         -port 5432\n      +port 6543\n",
        "      --- a/global/style.md\n      +++ b/global/style.md\n      @@ -0,0 +1 @@\n      \
         +Use tabs.\n",
        "remember db\n      --- a/project/db.md\n      +++ b/project/db.md\n      \
         @@ -0,0 +1 @@\n      +port 5432\n",
    ] {
        assert!(diff.contains(change), "{change:?} is not in {diff}");
    }

    // /refine history says the same inside the session (on stderr).
    assert!(run.stderr.contains(&text), "{run:?}");
    assert!(run.stderr.contains(&diff), "{run:?}");

    insta::with_settings!({filters => env.filters_and_times()}, {
        insta::assert_snapshot!("history", text);
        insta::assert_snapshot!("history_diff", diff);
    });
}

/// The diff under an entry is computed from its snapshot to the next
/// entry's snapshot, or to the files as they are now for the newest. Once
/// the newest is undone and the one before it too, the memory is back
/// before the older one, so the newest's diff shows the older change taken
/// back — a change the newest entry never made.
#[test]
fn the_diff_of_an_undone_entry_shows_no_change_it_did_not_make() {
    let env = TestEnv::new("history-diff-undone");
    three_changes(&env, "/refine undo\n");
    assert_eq!(read(&project(&env).join("db.md")), "port 5432\n");
    let diff = env.ok(&["memory", "history", "--diff"]).stdout;
    let newest: String = diff
        .lines()
        .skip(1)
        .take_while(|l| l.starts_with(' '))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(
        newest.contains("the port moved again"),
        "the newest entry: {diff}"
    );
    assert!(
        !newest.contains("+port 5432"),
        "the newest entry never wrote port 5432:\n{newest}"
    );
}

// ---------------------------------------------------------------------------
// 4. Undo

#[test]
fn undo_walks_back_byte_for_byte_over_refinements_and_remember() {
    let env = TestEnv::new("undo");
    let s0 = mem(&[
        ("global/style.md", "Use tabs.\n".as_bytes()),
        // Not markdown: copied with the rest, never touched.
        ("global/notes.txt", b"not memory\n"),
        ("project/crlf.md", b"line one\r\nline two\r\n"),
        ("project/plain.md", b"no newline at the end"),
        ("project/unicode.md", "Grüße — 東京 ✓ 🦀\n".as_bytes()),
        ("project/latin1.md", b"caf\xe9\n"),
    ]);
    set_memory(&env, &s0);
    let m1 = refinement(&[
        put("project/crlf.md", "line one\nline two\n", "line ends"),
        delete("project/plain.md", "merged away"),
        put("global/new.md", "brand new\n", "a new file"),
        put("project/latin1.md", "café\n", "utf-8 now"),
    ]);
    let m2 = refinement(&[put("project/unicode.md", "changed\n", "plain text")]);
    let server = serve(vec![
        remember("call_1", "notes", "Remember this.\n"),
        FakeReply::text("Noted."),
        FakeReply::text(&m1),
        FakeReply::text(&m2),
        FakeReply::text("Next."),
        FakeReply::text(&refinement(&[put("global/late.md", "late\n", "late")])),
    ]);
    let s1 = with(&s0, &[("project/notes.md", Some(b"Remember this.\n"))]);
    let s2 = with(
        &s1,
        &[
            ("project/crlf.md", Some(b"line one\nline two\n")),
            ("project/plain.md", None),
            ("global/new.md", Some(b"brand new\n")),
            ("project/latin1.md", Some("café\n".as_bytes())),
        ],
    );
    let s3 = with(&s2, &[("project/unicode.md", Some(b"changed\n"))]);

    talk(&env, &server, &[], "remember the notes\n/refine\n/refine\n");
    assert_eq!(memory(&env), s3);
    let kinds: Vec<SnapshotKind> = entries(&env, &project(&env))
        .iter()
        .map(|s| meta(&env, &project(&env), s).kind)
        .collect();
    assert_eq!(
        kinds,
        [
            SnapshotKind::Remember,
            SnapshotKind::Manual,
            SnapshotKind::Manual
        ]
    );

    // /refine undo in a later run: the newest change is taken back, and the
    // next turn of that same run carries the memory as it was.
    let run = talk(&env, &server, &["--continue"], "/refine undo\nnext\n");
    assert!(
        run.stderr
            .contains("undone:\n    put back project/unicode.md\n"),
        "{run:?}"
    );
    assert_eq!(memory(&env), s2);
    let sent = system(&server.requests()[4]);
    assert!(
        sent.contains(&block("project/unicode.md", "Grüße — 東京 ✓ 🦀")),
        "{sent}"
    );
    let history = env.ok(&["memory", "history"]).stdout;
    let h = heads(&history);
    assert!(h[0].ends_with("manual · (undone)"), "{history}");
    assert!(
        h[1].ends_with("manual") && h[2].ends_with("remember"),
        "{history}"
    );

    // A second undo walks further back, never undoing the undo.
    let undo = env.ok(&["memory", "undo"]);
    assert_eq!(
        undone(&undo.stdout),
        (
            "undone:".to_owned(),
            vec![
                "    put back project/crlf.md",
                "    put back project/latin1.md",
                "    put back project/plain.md",
                "    removed global/new.md",
            ]
        )
    );
    assert_eq!(memory(&env), s1);
    // And a third over the remember call.
    assert_eq!(
        env.ok(&["memory", "undo"]).stdout,
        "undone:\n    removed project/notes.md\n"
    );
    assert_eq!(memory(&env), s0, "byte for byte as it all began");
    assert_eq!(env.ok(&["memory", "undo"]).stdout, "nothing to undo\n");
    assert_eq!(memory(&env), s0);
    let history = env.ok(&["memory", "history"]).stdout;
    assert_eq!(heads(&history).len(), 3, "{history}");
    assert!(
        heads(&history).iter().all(|h| h.ends_with(" · (undone)")),
        "{history}"
    );

    // A later change is undone alone: the undone ones stay skipped.
    let later = "2026-12-02T11:00:00Z";
    let run = env.run_env(
        &["--base-url", &server.url(), "--continue"],
        "/refine\n/refine undo\n/refine undo\n",
        &[("REVOLVE_NOW", later)],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        run.stderr
            .contains("undone:\n    removed global/late.md\nnothing to undo\n"),
        "{run:?}"
    );
    assert_eq!(memory(&env), s0);
    let history = env.ok(&["memory", "history"]).stdout;
    assert!(
        heads(&history)[0].starts_with("2026-12-02 11:00 UTC"),
        "{history}"
    );
}

// ---------------------------------------------------------------------------
// 5. Automatic refinement

/// A script line answering with `text`.
fn line(text: &str) -> String {
    format!("{}\n", json!({ "text": text }))
}

/// Runs 50 scripted turns, then one more in a run 30 minutes later. Reply
/// N of the script answers request N of the session: turns 1-25 take lines
/// 1-25, the refinement due after turn 25 line 26, turns 26-50 lines
/// 27-51. At turn 50, 25 turns have passed since that refinement but not 20
/// minutes (the pinned clock moves a second per reading), so none runs.
/// The later run's turn and its refinement take lines 52 and 53, in
/// whichever order the trigger puts them: both lines are refinements.
#[test]
fn a_refinement_runs_on_its_own_after_25_turns_then_cools_down() {
    let env = TestEnv::new("auto-turns");
    set_memory(&env, &mem(&[("project/db.md", b"port 5432\n")]));
    let script = env.root.join("replies.jsonl");
    let mut text = String::new();
    for n in 1..=25 {
        text.push_str(&line(&format!("Answer {n}.")));
    }
    text.push_str(&line(&refinement(&[put(
        "project/db.md",
        "port 6543\n",
        "learned on its own",
    )])));
    for n in 26..=50 {
        text.push_str(&line(&format!("Answer {n}.")));
    }
    for port in ["7000", "7001"] {
        text.push_str(&line(&refinement(&[put(
            "project/db.md",
            &format!("port {port}\n"),
            "again, later",
        )])));
    }
    std::fs::write(&script, text).unwrap();
    let args = [
        "--provider",
        "scripted",
        "--script",
        script.to_str().unwrap(),
    ];
    let mut named = args.to_vec();
    named.extend(["--name", "long"]);
    let stdin: String = (1..=50).map(|n| format!("turn {n}\n")).collect();
    let run = env.run_env(&named, &stdin, &[AUTO]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let answers: String = (1..=50).map(|n| format!("Answer {n}.\n")).collect();
    assert_eq!(run.stdout, answers, "every turn got its own line");

    let logged = refined(&env.only_session());
    assert_eq!(
        logged.len(),
        1,
        "one refinement, then the cooldown: {logged:#?}"
    );
    assert_eq!(logged[0]["auto"], true);
    let stamp = logged[0]["entry"].as_str().expect("it changed memory");
    let m = meta(&env, &project(&env), stamp);
    assert_eq!(m.kind, SnapshotKind::Automatic);
    assert_eq!(m.session, "long");
    assert_eq!(m.messages, 50, "after 25 turns");
    assert_eq!(read(&project(&env).join("db.md")), "port 6543\n");
    let history = env.ok(&["memory", "history"]).stdout;
    assert!(
        heads(&history)[0].ends_with("after 50 messages · automatic"),
        "{history}"
    );

    // Half an hour later the cooldown is over and 25 turns have passed.
    let mut resumed = args.to_vec();
    resumed.push("--continue");
    let run = env.run_env(
        &resumed,
        "turn 51\n",
        &[("REVOLVE_NOW", "2026-12-02T10:30:00Z"), AUTO],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let logged = refined(&env.only_session());
    assert_eq!(logged.len(), 2, "{logged:#?}");
    assert_eq!(logged[1]["auto"], true);
    assert!(logged[1]["entry"].is_string(), "{logged:#?}");
}

/// `--bare` loads no memory, so nothing refines it on its own either.
#[test]
fn bare_runs_never_refine_on_their_own() {
    let env = TestEnv::new("auto-bare");
    set_memory(&env, &mem(&[("project/db.md", b"port 5432\n")]));
    let replies: Vec<FakeReply> = (1..=26)
        .map(|n| FakeReply::text(&format!("Answer {n}.")))
        .collect();
    let server = serve(replies);
    let stdin: String = (1..=26).map(|n| format!("turn {n}\n")).collect();
    let run = talk_auto(&env, &server, &["--bare"], &stdin);
    assert_eq!(run.stdout.lines().count(), 26, "{run:?}");
    assert!(!server.requests().iter().any(is_refinement));
    assert!(refined(&env.only_session()).is_empty());
}

/// The automatic compaction of tests/e2e/compaction.rs: with `--window 20000`
/// turn four reads past the compaction point, so turn five compacts first.
fn compacting_script(extra: Vec<FakeReply>, refine_first: bool) -> Vec<FakeReply> {
    let reply = |text: &str, prompt: u64| match FakeReply::text(text) {
        FakeReply::Stream { chunks, .. } => FakeReply::Stream {
            chunks,
            usage: Some((prompt, 10)),
        },
        other => other,
    };
    let mut v = vec![reply("Answer one.", 5_000)];
    if refine_first {
        v.push(FakeReply::text(&refinement(&[put(
            "project/db.md",
            "port 6000\n",
            "by hand",
        )])));
    }
    v.extend([
        reply("Answer two.", 9_000),
        reply("Answer three.", 13_000),
        reply("Answer four.", 17_950),
        reply(NOTES, 6_000),
        reply("Answer five.", 7_000),
    ]);
    v.extend(extra);
    v
}

#[test]
fn after_a_compaction_a_refinement_runs_on_its_own() {
    let env = TestEnv::new("auto-compaction");
    set_memory(&env, &mem(&[("project/db.md", b"port 5432\n")]));
    let server = serve(compacting_script(
        vec![
            FakeReply::text(&refinement(&[put(
                "project/db.md",
                "port 6543\n",
                "after the compaction",
            )])),
            FakeReply::text("Answer six."),
        ],
        false,
    ));
    // Request 7 is the refinement whether it runs right after turn five or
    // right before turn six.
    let run = talk_auto(
        &env,
        &server,
        &["--window", "20000"],
        "one\ntwo\nthree\nfour\nfive\nsix\n",
    );
    assert!(
        run.stdout.ends_with("Answer five.\nAnswer six.\n"),
        "{run:?}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 8, "{requests:#?}");
    assert!(is_refinement(&requests[6]), "{}", requests[6].body);
    assert_eq!(read(&project(&env).join("db.md")), "port 6543\n");
    let history = env.ok(&["memory", "history"]).stdout;
    assert!(
        heads(&history)[0].ends_with("after 9 messages · automatic"),
        "{history}"
    );
}

/// Forty turns of 3.5 KB answers (about 35k tokens) under a window they
/// fit, automatic refinement off: a session that a 24k window must compact.
fn grow_long_session(env: &TestEnv) {
    let long = |i: usize| {
        format!(
            "answer {i}: {}",
            "the port is 5432 and the host is db1. ".repeat(90)
        )
    };
    let server = limited(
        1_000_000,
        (0..40).map(|i| FakeReply::text(&long(i))).collect(),
    );
    let lines: String = (0..40).map(|i| format!("question {i}\n")).collect();
    talk(env, &server, &[], &lines);
}

/// A server with a context of `tokens` (four bytes a token) that counts
/// them truthfully, answering `replies` in order.
fn limited(tokens: u64, replies: Vec<FakeReply>) -> FakeServer {
    let limit = Limit {
        tokens,
        bytes_per_token: 4,
        says: Overflows::OpenAi,
        usage: true,
    };
    FakeServer::start_limited(FakeProtocol::OpenAi, replies, Some(limit))
        .expect("start the fake server")
}

/// The session text a refinement request carried.
fn session_text(r: &Recorded) -> String {
    request_messages(&r.body)[0].1.clone()
}

/// How a compaction's working notes begin in the history.
fn notes_prefix() -> String {
    revolve_core::compact::notes_message("")
        .trim_end()
        .to_owned()
}

/// The notes the fake model writes for each piece of a compaction.
const LONG_NOTES: &str = "Facts: the port is 5432, the host is db1.";

/// A long session resumed under a window it does not fit compacts (the
/// summary in pieces reads the whole old file), and the refinement that
/// runs on its own afterwards is one request that reads the new file
/// only: the working notes, the turns kept and the turn after them, not
/// the history the notes summarized. A `/refine` asked for afterwards
/// still reads every file of the chain, in parts.
#[test]
fn after_a_compaction_the_automatic_refinement_reads_only_what_is_new() {
    let env = TestEnv::new("auto-after-compaction");
    set_memory(&env, &mem(&[("project/db.md", b"port 5432\n")]));
    grow_long_session(&env);

    // Every reply is the notes: the summary pieces, the turn's answer, and
    // the refinement's (an unusable answer: the refinement changes
    // nothing, and is logged all the same).
    let server = limited(
        24_000,
        (0..30).map(|_| FakeReply::text(LONG_NOTES)).collect(),
    );
    let url = server.url();
    let run = env.run_env(
        &[
            "--base-url",
            &url,
            "--window",
            "24000",
            "--continue",
            "-p",
            "and now?",
        ],
        "",
        &[AUTO],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(env.session_files().len(), 2, "the session compacted");
    let requests = server.requests();
    let summaries = requests
        .iter()
        .filter(|r| r.body.contains("Write those working notes now"))
        .count();
    assert!(summaries >= 2, "the compaction read the old file in pieces");
    let refinements: Vec<&Recorded> = requests.iter().filter(|r| is_refinement(r)).collect();
    let said: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("refinement"))
        .collect();
    assert_eq!(refinements.len(), 1, "{said:?}");
    assert_eq!(
        requests.len(),
        summaries + 2,
        "the pieces, the turn, the refinement"
    );
    assert!(
        requests
            .iter()
            .all(|r| (r.body.len() as u64).div_ceil(4) <= 24_000),
        "a request went over the limit: {:?}",
        requests
            .iter()
            .map(|r| (r.body.len(), is_refinement(r)))
            .collect::<Vec<_>>()
    );
    let text = session_text(refinements[0]);
    // The notes, then the turns kept, then the turn after the compaction.
    let at = |part: &str| {
        text.find(part)
            .unwrap_or_else(|| panic!("{part:?} is not in the refinement: {text}"))
    };
    let order = [
        at(&format!("[user]\n{}", notes_prefix())),
        at(LONG_NOTES),
        at("[user]\nquestion 39\n"),
        at("[user]\nand now?\n"),
        at("</session>"),
    ];
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{text}");
    // Not the history the notes summarized.
    for i in [0, 1, 20, 36] {
        assert!(
            !text.contains(&format!("[user]\nquestion {i}\n")),
            "{i}: {text}"
        );
        assert!(!text.contains(&format!("answer {i}: ")), "{i}: {text}");
    }
    assert!(
        !text.contains("left out"),
        "it all fits one request: {text}"
    );
    assert!(
        run.stderr.contains(
            "automatic refinement: the model reads what the session added since the last \
             refinement"
        ),
        "{run:?}"
    );
    let head = env
        .session_files()
        .into_iter()
        .find(|f| !records(f)[0]["continues"].is_null())
        .expect("the head of the chain");
    let logged = refined(&head);
    assert_eq!(logged.len(), 1, "{logged:?}");
    assert_eq!(
        (&logged[0]["auto"], &logged[0]["pieces"]),
        (&json!(true), &json!(1))
    );

    // `/refine` by hand reads the whole chain: every turn once, in parts
    // under the window, the notes not at all.
    let server = limited(
        24_000,
        (0..30)
            .map(|_| FakeReply::text(r#"{"files": []}"#))
            .collect(),
    );
    let run = talk(
        &env,
        &server,
        &["--window", "24000", "--continue"],
        "/refine\n",
    );
    let parts: Vec<String> = server.requests().iter().map(session_text).collect();
    assert!(parts.len() >= 2, "{run:?}");
    assert!(
        run.stderr
            .contains(&format!("the model reads it in {} parts", parts.len())),
        "{run:?}"
    );
    let all = parts.concat();
    for i in 0..40 {
        assert_eq!(
            all.matches(&format!("[user]\nquestion {i}\n")).count(),
            1,
            "question {i}"
        );
        assert_eq!(
            all.matches(&format!("answer {i}: ")).count(),
            1,
            "answer {i}"
        );
    }
    assert_eq!(all.matches("[user]\nand now?\n").count(), 1);
    assert!(!all.contains(&notes_prefix()), "{all}");
}

/// A manual refinement a minute before an automatic compaction: none runs
/// on its own after the compaction, and one does in a run half an hour
/// later (a compaction since the last refinement, the cooldown over).
///
/// `Session::summarized` starts the new file's state from
/// `State::default()`, so `refined_at` is gone after every compaction and
/// the refinement runs at once, reading the turn's answer ("Answer six.")
/// as its reply.
#[test]
fn a_compaction_does_not_cut_the_cooldown_short() {
    let env = TestEnv::new("auto-compaction-cooldown");
    set_memory(&env, &mem(&[("project/db.md", b"port 5432\n")]));
    let later: Vec<FakeReply> = ["7000", "7001"]
        .iter()
        .map(|port| {
            FakeReply::text(&refinement(&[put(
                "project/db.md",
                &format!("port {port}\n"),
                "later, on its own",
            )]))
        })
        .collect();
    let mut extra = vec![FakeReply::text("Answer six.")];
    extra.extend(later);
    let server = serve(compacting_script(extra, true));
    let run = talk_auto(
        &env,
        &server,
        &["--window", "20000"],
        "one\n/refine\ntwo\nthree\nfour\nfive\nsix\n",
    );
    assert!(
        run.stdout.ends_with("Answer five.\nAnswer six.\n"),
        "{run:?}"
    );
    let count = |server: &FakeServer| {
        server
            .requests()
            .iter()
            .filter(|r| is_refinement(r))
            .count()
    };
    assert_eq!(count(&server), 1, "only the manual one");
    assert_eq!(server.requests().len(), 8);

    // Half an hour later. Both replies left are refinements, so the order
    // of the turn and the refinement does not matter.
    let run = env.run_env(
        &["--base-url", &server.url(), "--continue"],
        "seven\n",
        &[("REVOLVE_NOW", "2026-12-02T10:30:00Z"), AUTO],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(count(&server), 2, "{:#?}", server.requests());
    let history = env.ok(&["memory", "history"]).stdout;
    assert!(heads(&history)[0].ends_with("automatic"), "{history}");
}

// ---------------------------------------------------------------------------
// 6. Crash safety

/// The stamp of the entries made by hand.
const STAMP: &str = "20261202T093000Z";

/// Writes an entry of `memory_dir` by hand: `files` as the snapshot and
/// this meta.
fn entry_by_hand(env: &TestEnv, memory_dir: &Path, files: &[(&str, &[u8])], m: &SnapshotMeta) {
    let dir = store(env, memory_dir).join(STAMP);
    std::fs::create_dir_all(dir.join("files")).unwrap();
    for (name, bytes) in files {
        write(&dir.join("files").join(name), bytes);
    }
    write(&dir.join("meta.cfg"), m.to_cfg().as_bytes());
}

/// The meta of a manual refinement touching `files`.
fn manual(files: &[(&str, &str)], undone: bool, pending: bool) -> SnapshotMeta {
    SnapshotMeta {
        session: "crashed".into(),
        messages: 4,
        kind: SnapshotKind::Manual,
        files: files
            .iter()
            .map(|(f, c)| ((*f).to_owned(), (*c).to_owned()))
            .collect(),
        undone,
        pending,
    }
}

/// The memory before the refinement the crash tests interrupt, and after.
fn crash_states() -> (Memory, Memory) {
    let before = mem(&[
        ("global/style.md", b"Use tabs.\n"),
        ("project/db.md", b"port 5432\n"),
    ]);
    let after = with(
        &before,
        &[
            ("global/style.md", Some(b"Use spaces.\n")),
            ("project/db.md", Some(b"port 6543\n")),
            ("project/new.md", Some(b"new\n")),
        ],
    );
    (before, after)
}

/// Both entries of the refinement from `before` to `after`, with these
/// flags per directory.
fn crash_entries(env: &TestEnv, global_flags: (bool, bool), project_flags: (bool, bool)) {
    entry_by_hand(
        env,
        &global(env),
        &[("style.md", b"Use tabs.\n")],
        &manual(
            &[("global/style.md", "updated: spaces")],
            global_flags.0,
            global_flags.1,
        ),
    );
    entry_by_hand(
        env,
        &project(env),
        &[("db.md", b"port 5432\n")],
        &manual(
            &[
                ("project/db.md", "updated: port"),
                ("project/new.md", "created: new"),
            ],
            project_flags.0,
            project_flags.1,
        ),
    );
}

#[test]
fn the_next_start_rolls_back_a_refinement_a_crash_left_pending() {
    let env = TestEnv::new("crash-refine");
    let (before, after) = crash_states();
    set_memory(&env, &before);
    crash_entries(&env, (false, true), (false, true));
    // Killed half way through writing: db.md written, new.md not yet.
    let half = with(&before, &[("project/db.md", Some(b"port 6543\n"))]);
    set_memory(&env, &half);
    assert_ne!(memory(&env), after);

    let run = env.ok(&["memory", "history"]);
    assert_eq!(
        run.stderr,
        format!("revolve: rolled back an interrupted refinement ({STAMP})\n"),
        "one line per change, both directories together"
    );
    assert_eq!(run.stdout, "no memory changes yet\n");
    assert_eq!(memory(&env), before, "memory as in the snapshot");
    assert!(entries(&env, &global(&env)).is_empty());
    assert!(entries(&env, &project(&env)).is_empty());
    // Done once: the next start has nothing to say.
    assert_eq!(env.ok(&["memory", "history"]).stderr, "");
}

#[test]
fn the_next_start_finishes_an_undo_a_crash_left_pending() {
    let env = TestEnv::new("crash-undo");
    let (before, after) = crash_states();
    set_memory(&env, &before);
    crash_entries(&env, (true, true), (true, true));
    // Killed half way through putting the files back.
    let half = with(&after, &[("global/style.md", Some(b"Use tabs.\n"))]);
    set_memory(&env, &half);

    let run = env.ok(&["memory", "undo"]);
    assert_eq!(
        run.stderr,
        format!("revolve: finished an interrupted undo of {STAMP}\n")
    );
    assert_eq!(run.stdout, "nothing to undo\n", "it was already undone");
    assert_eq!(memory(&env), before);
    let history = env.ok(&["memory", "history"]);
    assert_eq!(history.stderr, "");
    assert_eq!(
        heads(&history.stdout),
        ["2026-12-02 09:30 UTC · session 'crashed' · after 4 messages · manual · (undone)"]
    );
}

/// Every start recovers, a chat session's too: the half-written memory
/// never reaches a system prompt.
#[test]
fn a_session_start_rolls_back_a_pending_refinement_too() {
    let env = TestEnv::new("crash-chat");
    let (before, _) = crash_states();
    set_memory(&env, &before);
    crash_entries(&env, (false, true), (false, true));
    set_memory(
        &env,
        &with(&before, &[("project/db.md", Some(b"port 6543\n"))]),
    );
    let server = serve(vec![FakeReply::text("Hi.")]);
    let run = talk(&env, &server, &[], "hello\n");
    assert!(
        run.stderr
            .contains("revolve: rolled back an interrupted refinement"),
        "{run:?}"
    );
    assert_eq!(memory(&env), before);
    let sent = system(&server.requests()[0]);
    assert!(
        sent.contains(&block("project/db.md", "port 5432")),
        "{sent}"
    );
}

/// `apply` marks the entries done one memory directory after the other
/// (`io::refine::settle`). Killed between the two, one entry is done and
/// the other pending, with every file written; the next start rolls back
/// the pending directory alone, so half of the refinement stays. Both
/// orders are tried, so the test does not depend on which goes first.
#[test]
fn a_crash_while_marking_a_refinement_done_leaves_all_of_it_or_none() {
    for (name, global_pending) in [
        ("crash-settle-project", true),
        ("crash-settle-global", false),
    ] {
        let env = TestEnv::new(name);
        let (before, after) = crash_states();
        set_memory(&env, &before);
        crash_entries(&env, (false, global_pending), (false, !global_pending));
        set_memory(&env, &after);
        let history = env.ok(&["memory", "history"]).stdout;
        let now = memory(&env);
        let (g, p) = (entries(&env, &global(&env)), entries(&env, &project(&env)));
        if now == after {
            assert_eq!((g.len(), p.len()), (1, 1), "{name}: the entry stands whole");
            assert_eq!(heads(&history).len(), 1, "{name}: {history}");
        } else {
            assert_eq!(
                now, before,
                "{name}: memory is all of the refinement or none of it; history:\n{history}"
            );
            assert!(g.is_empty() && p.is_empty(), "{name}: {g:?} {p:?}");
        }
    }
}

/// `undo` restores one memory directory after the other, marking each
/// entry undone as it goes (`io::refine::undo`). Killed between the two,
/// one directory is restored and its entry undone, the other untouched and
/// standing: nothing is pending, so the next start does nothing, and the
/// history says `(undone)` while half of the change is still in place.
/// Both orders are tried.
#[test]
fn a_crash_between_the_directories_of_an_undo_leaves_all_of_it_or_none() {
    // An undo marks every entry of the change (undone, pending) before it
    // touches a file; a crash while marking leaves one directory's entry
    // marked and the other not. The next start finishes the whole undo.
    let (before, after) = crash_states();
    let global_restored = with(&after, &[("global/style.md", Some(b"Use tabs.\n"))]);
    let project_restored = with(&before, &[("global/style.md", Some(b"Use spaces.\n"))]);
    for (name, global_first, half) in [
        ("crash-undo-global-first", true, global_restored),
        ("crash-undo-project-first", false, project_restored),
    ] {
        let env = TestEnv::new(name);
        set_memory(&env, &before);
        crash_entries(
            &env,
            (global_first, global_first),
            (!global_first, !global_first),
        );
        set_memory(&env, &half);
        let history = env.ok(&["memory", "history"]).stdout;
        assert!(
            heads(&history)[0].ends_with("(undone)"),
            "{name}: {history}"
        );
        assert_eq!(memory(&env), before, "{name}: undone whole");
    }
}

// ---------------------------------------------------------------------------
// 7. Found while writing these tests, since fixed

/// Every change snapshots both memory directories, and the global one is
/// shared by every project: a refinement in another project that changed
/// only its own files is not in this project's history, and this project's
/// undo takes back this project's own newest change.
#[test]
fn another_projects_refinement_is_not_this_projects_history() {
    let env = TestEnv::new("two-projects");
    set_memory(
        &env,
        &mem(&[
            ("global/style.md", b"Use tabs.\n"),
            ("project/db.md", b"port 5432\n"),
        ]),
    );
    // Each session says something first: a refinement of a session with
    // no turns sends nothing (issue 47 item 12).
    let server = serve(vec![
        FakeReply::text("Noted."),
        FakeReply::text(&refinement(&[put(
            "project/db.md",
            "port 6543\n",
            "the port moved",
        )])),
        FakeReply::text("Noted."),
        FakeReply::text(&refinement(&[put(
            "project/other.md",
            "elsewhere\n",
            "the other project's note",
        )])),
    ]);
    talk(
        &env,
        &server,
        &["--name", "here"],
        "the port moved\n/refine\n",
    );

    // An hour later, a session in another directory refines its own files.
    let other = env.root.join("other");
    std::fs::create_dir_all(&other).unwrap();
    let mut child = env
        .command(&["--base-url", &server.url(), "--name", "there"])
        .current_dir(&other)
        .env("REVOLVE_NOW", "2026-12-02T11:00:00Z")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run revolve in the other directory");
    let mut stdin = child.stdin.take().expect("stdin is piped");
    std::io::Write::write_all(&mut stdin, b"a note\n/refine\n").expect("write stdin");
    drop(stdin);
    let out = child.wait_with_output().expect("wait for revolve");
    assert!(out.status.success(), "{out:?}");
    let other_memory = config(&env)
        .join("projects")
        .join(slug(&other))
        .join("memory");
    assert_eq!(read(&other_memory.join("other.md")), "elsewhere\n");

    let history = env.ok(&["memory", "history"]).stdout;
    assert_eq!(
        heads(&history),
        // Its one turn (a message and the answer) came first.
        ["2026-12-02 10:00 UTC · session 'here' · after 2 messages · manual"],
        "{history}"
    );
    let undo = env.ok(&["memory", "undo"]).stdout;
    assert_eq!(undo, "undone:\n    put back project/db.md\n");
    assert_eq!(read(&project(&env).join("db.md")), "port 5432\n");
}

/// `remember` takes its snapshot before it writes; when the write then
/// fails (here `db.md` is a directory), the entry goes too, so history
/// lists no change that never happened.
#[test]
fn a_remember_call_that_fails_leaves_no_entry() {
    let env = TestEnv::new("remember-fails");
    set_memory(&env, &mem(&[("project/project.md", b"A parser.\n")]));
    std::fs::create_dir_all(project(&env).join("db.md")).unwrap();
    let args = json!({"label": "db", "content": "port 5432\n", "replace": true}).to_string();
    let server = serve(vec![
        FakeReply::tool_calls("", &[("call_1", "remember", &args)]),
        FakeReply::text("It did not work."),
    ]);
    talk(&env, &server, &[], "remember the database\n");
    let recs = records(&env.only_session());
    let result = recs
        .iter()
        .find(|r| r["role"] == "tool")
        .expect("a tool result");
    assert!(
        result["content"].as_str().unwrap().starts_with("error:"),
        "{result}"
    );
    assert_eq!(
        env.ok(&["memory", "history"]).stdout,
        "no memory changes yet\n"
    );
}

/// `memory history --json`: an array of changes, newest first, each with
/// `stamp` (string), `at` (string), `session` (string), `messages`
/// (number), `kind` (string), `undone` (bool) and `files` (objects with
/// `file` and `change`, and `diff` only with `--diff`).
#[test]
fn history_as_json() {
    let env = TestEnv::new("history-json");
    let _ = three_changes(&env, "");
    let run = env.ok(&["memory", "history", "--json"]);
    let list: Value = serde_json::from_str(&run.stdout).expect("JSON");
    let list = list.as_array().expect("an array");
    assert_eq!(list.len(), 3);
    for change in list {
        assert!(change["stamp"].is_string(), "{change}");
        assert!(change["at"].is_string(), "{change}");
        assert!(change["session"].is_string(), "{change}");
        assert!(change["messages"].is_u64(), "{change}");
        assert!(change["kind"].is_string(), "{change}");
        assert!(change["undone"].is_boolean(), "{change}");
        for f in change["files"].as_array().expect("files") {
            assert!(f["file"].is_string() && f["change"].is_string(), "{f}");
            assert!(f.get("diff").is_none(), "no diff unless asked: {f}");
        }
    }
    let summary: Vec<(&str, bool, usize)> = list
        .iter()
        .map(|c| {
            (
                c["kind"].as_str().unwrap(),
                c["undone"].as_bool().unwrap(),
                c["files"].as_array().unwrap().len(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("manual", true, 1),
            ("manual", false, 2),
            ("remember", false, 1)
        ]
    );
    // The same changes as the text history, in the same order.
    let text = env.ok(&["memory", "history"]).stdout;
    assert_eq!(text.lines().filter(|l| !l.starts_with(' ')).count(), 3);

    let run = env.ok(&["memory", "history", "--json", "--diff"]);
    let list: Value = serde_json::from_str(&run.stdout).expect("JSON");
    let remembered = &list[2]["files"][0];
    assert_eq!(remembered["file"], "project/db.md");
    assert!(
        remembered["diff"].as_str().unwrap().contains("+port 5432"),
        "{remembered}"
    );
    let mut shown = list.clone();
    for c in shown.as_array_mut().unwrap() {
        c["stamp"] = "[stamp]".into();
        c["at"] = "[at]".into();
    }
    insta::assert_snapshot!(
        "history_json_diff",
        serde_json::to_string_pretty(&shown).unwrap()
    );
}

/// Every memory change and every undo is a record in the session that
/// made it (which snapshot, which files, what happened): `replay` shows
/// them and `replay --check` verifies them against the snapshot store.
#[test]
fn memory_changes_and_undos_are_in_the_session_log() {
    let env = TestEnv::new("memory-records");
    let refined = r#"{"files": [{"file": "project/db.md", "content": "port 6543\n", "change": "the port moved"}]}"#;
    let server = FakeServer::start(vec![
        FakeReply::text("Noted."),
        FakeReply::text(refined),
        FakeReply::tool_calls(
            "",
            &[(
                "m1",
                "remember",
                r#"{"label": "hosts", "content": "db1 is the database host\n"}"#,
            )],
        ),
        FakeReply::text("Remembered."),
    ])
    .unwrap();
    let url = server.url();
    let run = env.run(
        &["--base-url", &url],
        "the port is 6543 now\n/refine\nremember the host\n/refine undo\n",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let log = records(&env.only_session());
    let changed: Vec<&Value> = log
        .iter()
        .filter(|r| r["type"] == "memory_changed")
        .collect();
    assert_eq!(changed.len(), 2, "{changed:?}");
    assert_eq!(changed[0]["by"], "refine");
    assert_eq!(
        changed[0]["files"],
        json!(["project/db.md: created: the port moved"])
    );
    assert_eq!(changed[1]["by"], "remember");
    let refined_entry = log.iter().find(|r| r["type"] == "refined").unwrap()["entry"].clone();
    assert_eq!(
        changed[0]["entry"], refined_entry,
        "the refined record names the same entry"
    );
    let undone: Vec<&Value> = log
        .iter()
        .filter(|r| r["type"] == "memory_undone")
        .collect();
    assert_eq!(undone.len(), 1, "{log:?}");
    // The undo walks back the newest change: remember's.
    assert_eq!(undone[0]["entry"], changed[1]["entry"]);
    let shown = env.ok(&["replay"]).stdout;
    assert!(
        shown.contains("── memory changed by refine (snapshot "),
        "{shown}"
    );
    assert!(shown.contains("── memory undone: snapshot "), "{shown}");
    let check = env.ok(&["replay", "--check"]);
    assert!(check.stdout.contains(" 0 inconsistencies"), "{check:?}");

    // A snapshot store that lost the entries: --check says so.
    std::fs::remove_dir_all(env.state.join("task-agent/refinements")).unwrap();
    let check = env.run(&["replay", "--check"], "");
    assert!(
        check.stdout.contains("is not in the snapshot store"),
        "{check:?}"
    );
}

/// Every request a refinement sends is in the log: `replay --requests`
/// gives back, byte for byte, every body the server received, the parts
/// of a `/refine` included, each logged as a `refining` record before it
/// went out; and what the refinement spent counts in the session's totals.
#[test]
fn replay_rebuilds_every_refinement_request_byte_for_byte() {
    let env = TestEnv::new("refine-replay");
    set_memory(&env, &mem(&[("project/db.md", b"port 5432\n")]));
    // Forty long turns under a large window: one file, no compaction.
    let long = |i: usize| {
        format!(
            "answer {i}: {}",
            "the port is 5432 and the host is db1. ".repeat(90)
        )
    };
    let turns = limited(
        1_000_000,
        (0..40).map(|i| FakeReply::text(&long(i))).collect(),
    );
    let lines: String = (0..40).map(|i| format!("question {i}\n")).collect();
    talk(&env, &turns, &[], &lines);
    let before = records(&env.session_files()[0])
        .into_iter()
        .rfind(|r| r["type"] == "totals")
        .expect("totals after the turns");

    // `/refine` under a small window reads the session in parts: the
    // first part's answer changes a file, the others change nothing.
    let mut replies = vec![FakeReply::text(&refinement(&[put(
        "project/db.md",
        "port 6543\n",
        "the port moved",
    )]))];
    replies.extend((0..30).map(|_| FakeReply::text(r#"{"files": []}"#)));
    let refining = limited(24_000, replies);
    let run = talk(
        &env,
        &refining,
        &["--window", "24000", "--continue"],
        "/refine\n",
    );
    let parts = refining.requests();
    assert!(parts.len() >= 2, "{run:?}");
    assert!(parts.iter().all(is_refinement), "{run:?}");
    assert!(
        run.stderr
            .contains("refinement: memory changed (/refine undo takes it back)"),
        "{run:?}"
    );
    assert_eq!(read(&project(&env).join("db.md")), "port 6543\n", "{run:?}");

    // The log: one `refining` per request, numbered after the turns, then
    // one `refined` counting them.
    let files = env.session_files();
    assert_eq!(files.len(), 1, "no compaction");
    let log = records(&files[0]);
    let logged: Vec<&Value> = log.iter().filter(|r| r["type"] == "refining").collect();
    assert_eq!(logged.len(), parts.len());
    for (k, (r, sent)) in logged.iter().zip(&parts).enumerate() {
        assert_eq!(r["body"].as_str(), Some(sent.body.as_str()), "part {k}");
        assert_eq!(
            (&r["part"], &r["of"], &r["auto"]),
            (&json!(k + 1), &json!(parts.len()), &json!(false))
        );
    }
    let ended = refined(&files[0]);
    assert_eq!(ended.len(), 1, "{ended:?}");
    assert_eq!(ended[0]["pieces"], json!(parts.len()));

    // Replay gives back what both servers received, in order.
    let received: String = turns
        .requests()
        .iter()
        .chain(&parts)
        .map(|r| format!("{}\n", r.body))
        .collect();
    let replayed = env.ok(&["replay", "--requests"]).stdout;
    assert_eq!(replayed.lines().count(), 40 + parts.len());
    assert!(
        replayed == received,
        "replay --requests differs from what the server received"
    );

    // The refinement's requests and tokens count in the totals.
    let after = log
        .iter()
        .rfind(|r| r["type"] == "totals")
        .expect("totals after the refinement");
    assert_eq!(after["requests"], json!(40 + parts.len()), "{after}");
    let tokens_in = |t: &Value| t["tokens_in"].as_u64().expect("tokens_in");
    assert!(
        tokens_in(after) > tokens_in(&before),
        "the refinement's tokens are counted: {before} then {after}"
    );
}
