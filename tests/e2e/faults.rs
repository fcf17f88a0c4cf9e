//! Faults: the process killed at random points, sessions racing for names
//! and logs, a full disk, an unwritable state directory, no HOME, and a
//! model server that misbehaves. Each test says what the user is promised
//! and checks it on what the real binary leaves behind.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use revolve_core::memory::{SnapshotKind, SnapshotMeta, BUILTIN, PROJECT_MEMORY_TEMPLATE};
use revolve_testkit::{FakeReply, FakeServer};
use serde_json::{json, Value};

use crate::common::TestEnv;

// ---------------------------------------------------------------------------
// Helpers

/// A small deterministic generator (xorshift64*), so every kill point is
/// reproducible from the seed printed with a failure.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..n` (n > 0).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Every JSON record of every session file of `env`. A torn line (a write
/// a kill cut short: valid JSON up to where it stops) is left out, at most
/// one per file; any other line that is not JSON fails the test.
fn all_records(env: &TestEnv) -> Vec<Value> {
    let mut out = Vec::new();
    for file in env.session_files() {
        let bytes = std::fs::read(&file).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        let mut torn = 0;
        for (i, line) in text.lines().enumerate() {
            match serde_json::from_str::<Value>(line) {
                Ok(v) => out.push(v),
                Err(e) => {
                    torn += 1;
                    assert!(
                        e.is_eof() && torn == 1,
                        "{}: line {} is neither JSON nor the one torn line: {e}: {line}",
                        file.display(),
                        i + 1
                    );
                }
            }
        }
    }
    out
}

/// The `(role, content)` of every message record.
fn logged_messages(records: &[Value]) -> BTreeSet<(String, String)> {
    records
        .iter()
        .filter(|r| r["type"] == "message")
        .map(|r| {
            (
                r["role"].as_str().unwrap_or("").to_owned(),
                r["content"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

/// `revolve replay --check FILE` for every session file: each must pass,
/// with at most one skipped line, the one a kill tore.
fn check_replays(env: &TestEnv, context: &str) {
    for file in env.session_files() {
        let run = env.run(&["replay", "--check", file.to_str().unwrap()], "");
        assert_eq!(
            run.code,
            Some(0),
            "{context}: replay --check failed: {run:?}"
        );
        assert!(
            run.stdout.contains(" 0 inconsistencies"),
            "{context}: {run:?}"
        );
        // The one line a kill tore, if any (exit 0 says it is torn).
        let skipped_ok =
            run.stdout.contains(" 0 skipped line(s)") || run.stdout.contains(" 1 skipped line(s)");
        assert!(skipped_ok, "{context}: {run:?}");
        assert!(!run.stderr.contains("panicked"), "{context}: {run:?}");
    }
}

/// The bytes of every session file together.
fn logs_size(env: &TestEnv) -> u64 {
    env.session_files()
        .iter()
        .filter_map(|f| std::fs::metadata(f).ok())
        .map(|m| m.len())
        .sum()
}

/// `/a/b` as `-a-b`.
fn slug(path: &Path) -> String {
    path.to_str().unwrap().replace('/', "-")
}

/// The regular, non-hidden files of a folder, by name; and the hidden ones
/// (temp files a kill left), by name.
fn dir_files(dir: &Path) -> (BTreeMap<String, Vec<u8>>, Vec<String>) {
    let mut files = BTreeMap::new();
    let mut hidden = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            hidden.push(name);
        } else if entry.file_type().unwrap().is_file() {
            files.insert(name, std::fs::read(entry.path()).unwrap());
        }
    }
    (files, hidden)
}

// ---------------------------------------------------------------------------
// 1. kill -9 at random points

/// The scripted session the kill test runs: request N gets line N.
///
/// Turn one reads a file longer than the spill limit (a spill) and calls
/// `remember` (a memory write with its snapshot); turns two to four are
/// plain; `/compact` summarizes (line 7) into a new file; `/refine`
/// rewrites the memory file `remember` made (line 8), `/refine undo` puts
/// it back (no request); turn five ends it.
/// The rest answers the `--continue` after each kill, wherever the script
/// stands by then.
fn kill_script() -> String {
    let mut lines = vec![
        json!({"text": "R1 reading.", "tool_calls": [{"name": "read_file", "arguments": {"path": "big.txt"}}]}),
        json!({"text": "R2 remembering.", "tool_calls": [{"name": "remember", "arguments": {"label": "db", "content": REMEMBERED}}]}),
        json!({"text": "R3 done with one."}),
        json!({"text": "R4 two."}),
        json!({"text": "R5 three."}),
        json!({"text": "R6 four."}),
        json!({"text": "R7 notes: the user counted to four; the port is 5432."}),
        json!({"text": json!({"files": [{"file": "project/db.md", "content": REFINED, "change": "moved the port"}]}).to_string()}),
        json!({"text": "R9 five."}),
    ];
    for n in 10..60 {
        lines.push(json!({ "text": format!("R{n} padding.") }));
    }
    lines.iter().map(|l| format!("{l}\n")).collect()
}

const KILL_STDIN: &str = "one\ntwo\nthree\nfour\n/compact\n/refine\n/refine undo\nfive\n";
const REMEMBERED: &str = "The database port is 5432.";
const REFINED: &str = "port 6543\n";

/// The user line each streamed answer of the first run answers.
fn turn_of(answer: u32) -> Option<&'static str> {
    match answer {
        1..=3 => Some("one"),
        4 => Some("two"),
        5 => Some("three"),
        6 => Some("four"),
        9 => Some("five"),
        _ => None,
    }
}

/// One world of the kill test: a working tree with a file to spill.
fn kill_world(base: &Path, script: &Path) -> (TestEnv, Vec<String>) {
    let env = TestEnv::new_in(base, "kill");
    let big: String = (0..200)
        .map(|i| format!("line {i} of the big file\n"))
        .collect();
    std::fs::write(env.cwd.join("big.txt"), big).unwrap();
    let args = [
        "--provider",
        "scripted",
        "--script",
        script.to_str().unwrap(),
        "--spill-result-chars",
        "500",
    ]
    .map(str::to_owned)
    .to_vec();
    (env, args)
}

/// Starts the scripted session with its stdin, stdout and stderr in files.
fn start_session(env: &TestEnv, args: &[String]) -> std::process::Child {
    let stdin = env.root.join("stdin");
    std::fs::write(&stdin, KILL_STDIN).unwrap();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    env.command(&args)
        .stdin(File::open(&stdin).unwrap())
        .stdout(File::create(env.root.join("stdout")).unwrap())
        .stderr(File::create(env.root.join("stderr")).unwrap())
        .spawn()
        .expect("start revolve")
}

/// What one kill point left, for the distribution printed at the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Phase {
    /// Before the first log line.
    NoLog,
    /// In the first file.
    FirstFile,
    /// After the compaction started the second file.
    Compacted,
    /// After the refinement was logged.
    Refined,
}

/// Checks everything a kill must leave intact; returns where it landed.
fn check_after_kill(env: &TestEnv, args: &[String], context: &str) -> Phase {
    let stdout = std::fs::read_to_string(env.root.join("stdout")).unwrap();
    let stderr = std::fs::read_to_string(env.root.join("stderr")).unwrap();
    assert!(!stderr.contains("panicked"), "{context}: {stderr}");
    let records = all_records(env);
    let messages = logged_messages(&records);
    let files = env.session_files();
    let phase = if files.is_empty() {
        Phase::NoLog
    } else if records.iter().any(|r| r["type"] == "refined") {
        Phase::Refined
    } else if files.len() > 1 {
        Phase::Compacted
    } else {
        Phase::FirstFile
    };

    // Acknowledged to the user: an answer line followed by more output was
    // logged before that output was produced (the next request is only
    // sent once the answer is in the log), and a streamed answer's user
    // line was logged before its request was sent.
    let shown: Vec<&str> = stdout.split_inclusive('\n').collect();
    for (i, line) in shown.iter().enumerate() {
        let number: Option<u32> = line
            .strip_prefix('R')
            .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|n| n.parse().ok());
        let Some(number) = number else {
            panic!("{context}: unexpected output line {line:?} in {stdout:?}");
        };
        // The answer after a tool call is asked for once its result is in
        // the log.
        let result_before = match number {
            2 => Some("call_1_1"),
            3 => Some("call_2_1"),
            _ => None,
        };
        if let Some(id) = result_before {
            assert!(
                records
                    .iter()
                    .any(|r| r["role"] == "tool" && r["tool_call_id"] == id),
                "{context}: R{number} was shown but the result of {id} is not logged"
            );
        }
        if let Some(user) = turn_of(number) {
            assert!(
                messages.contains(&("user".to_owned(), user.to_owned())),
                "{context}: answer R{number} was shown but its question {user:?} is not logged"
            );
        }
        if i + 1 < shown.len() {
            let text = line.trim_end_matches('\n');
            assert!(
                messages.contains(&("assistant".to_owned(), text.to_owned())),
                "{context}: {text:?} was acknowledged (more output followed) but is not logged"
            );
        }
    }
    // A logged result that points at a spill file: the file is there, whole
    // (it is written before the result is logged).
    for r in records.iter().filter(|r| r["role"] == "tool") {
        let content = r["content"].as_str().unwrap_or("");
        let Some((head, rest)) = content.split_once(" in total; the whole output is in ") else {
            continue;
        };
        let total: usize = head.rsplit(' ').next().unwrap().parse().unwrap();
        let path = rest.split(", read it with").next().unwrap();
        let spilled = std::fs::read_to_string(path)
            .unwrap_or_else(|e| panic!("{context}: the spill {path} is logged but missing: {e}"));
        assert_eq!(
            spilled.chars().count(),
            total,
            "{context}: the spill {path} is not whole"
        );
    }
    if stderr.contains("the session goes on in a new file") {
        assert!(
            files.len() >= 2,
            "{context}: compaction acknowledged, {files:?}"
        );
    }

    check_replays(env, context);

    // The next start recovers the memory store; `memory history` is one.
    let history = env.run(&["memory", "history"], "");
    assert_eq!(history.code, Some(0), "{context}: {history:?}");
    assert!(
        !history.stderr.contains("panicked"),
        "{context}: {history:?}"
    );
    check_memory(
        env,
        context,
        stderr.contains("refinement: memory changed"),
        stderr.contains("put back project/db.md"),
    );

    // A session that has a log goes on with `--continue`; a kill before
    // its header was whole leaves none to continue (nothing was said to
    // the user yet), and a new session starts as usual.
    if !records.iter().any(|r| r["type"] == "header") {
        assert!(messages.is_empty(), "{context}: messages without a header");
        let mut cont: Vec<&str> = args.iter().map(String::as_str).collect();
        cont.push("--continue");
        let run = env.run(&cont, "again\n");
        assert_eq!(run.code, Some(2), "{context}: {run:?}");
        assert!(
            run.stderr.starts_with("revolve: no session in "),
            "{context}: {run:?}"
        );
        let cont: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = env.run(&cont, "again\n");
        assert_eq!(
            run.code,
            Some(0),
            "{context}: a new session failed: {run:?}"
        );
        check_replays(env, &format!("{context}, after a new session"));
    } else {
        let mut cont: Vec<&str> = args.iter().map(String::as_str).collect();
        cont.push("--continue");
        let run = env.run(&cont, "again\n");
        assert_eq!(run.code, Some(0), "{context}: --continue failed: {run:?}");
        assert!(
            run.stdout.len() > 1 && run.stdout.ends_with('\n'),
            "{context}: {run:?}"
        );
        let after = all_records(env);
        assert!(
            logged_messages(&after).contains(&("user".to_owned(), "again".to_owned())),
            "{context}: the continued line is not logged"
        );
        check_replays(env, &format!("{context}, after --continue"));
        check_memory(env, &format!("{context}, after --continue"), false, false);
    }
    phase
}

/// Memory is either before or after each change, and the snapshot store
/// agrees with it: no entry pending, every entry readable, the refinement's
/// entry standing exactly when its rewrite is in place (undone exactly when
/// `remember`'s content is back), its snapshot holding what `remember`
/// wrote.
fn check_memory(env: &TestEnv, context: &str, refine_acknowledged: bool, undo_acknowledged: bool) {
    let config = env.home.join(".config/task-agent");
    let global = config.join("memory");
    let project = config.join("projects").join(slug(&env.cwd)).join("memory");
    let (global_files, _) = dir_files(&global);
    for (name, bytes) in &global_files {
        let builtin = BUILTIN.iter().find(|(n, _)| n == name);
        let builtin = builtin.unwrap_or_else(|| panic!("{context}: stray global file {name}"));
        assert_eq!(
            bytes,
            builtin.1.as_bytes(),
            "{context}: {name} is half written"
        );
    }
    let (project_files, _) = dir_files(&project);
    if let Some(template) = project_files.get("project.md") {
        assert_eq!(template, PROJECT_MEMORY_TEMPLATE.as_bytes(), "{context}");
    }
    let db = project_files
        .get("db.md")
        .map(|b| String::from_utf8_lossy(b).into_owned());
    assert!(
        matches!(db.as_deref(), None | Some(REMEMBERED) | Some(REFINED)),
        "{context}: db.md is neither before nor after a change: {db:?}"
    );

    let store = env
        .state
        .join("task-agent/refinements")
        .join(slug(&project));
    let mut kinds = Vec::new();
    for entry in std::fs::read_dir(&store).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue; // a snapshot a kill cut short, never renamed into place
        }
        let cfg = std::fs::read_to_string(entry.path().join("meta.cfg"))
            .unwrap_or_else(|e| panic!("{context}: entry {name} has no meta.cfg: {e}"));
        let meta = SnapshotMeta::parse_cfg(&cfg)
            .unwrap_or_else(|e| panic!("{context}: entry {name}: {e}: {cfg}"));
        assert!(
            !meta.pending,
            "{context}: entry {name} still pending after a start"
        );
        let (snapshot, _) = dir_files(&entry.path().join("files"));
        if meta.kind == SnapshotKind::Manual {
            assert_eq!(
                snapshot.get("db.md").map(Vec::as_slice),
                Some(REMEMBERED.as_bytes()),
                "{context}: the refinement's snapshot is not the memory before it"
            );
        }
        kinds.push((meta.kind, meta.undone));
    }
    let refined = kinds.contains(&(SnapshotKind::Manual, false));
    let undone = kinds.contains(&(SnapshotKind::Manual, true));
    let remembered = kinds.iter().any(|k| k.0 == SnapshotKind::Remember);
    assert_eq!(
        db.as_deref() == Some(REFINED),
        refined,
        "{context}: the store ({kinds:?}) disagrees with db.md {db:?}"
    );
    if undone {
        assert_eq!(
            db.as_deref(),
            Some(REMEMBERED),
            "{context}: undone, {kinds:?}"
        );
    }
    assert_eq!(
        db.is_some(),
        remembered,
        "{context}: store {kinds:?}, db.md {db:?}"
    );
    if refine_acknowledged {
        assert!(
            refined || undone,
            "{context}: the refinement was acknowledged but is gone"
        );
    }
    if undo_acknowledged {
        assert!(
            undone,
            "{context}: the undo was acknowledged but the entry stands"
        );
    }
}

/// SIGKILL at 200+ seeded points of a scripted session with tool calls, a
/// spill, `remember`, a compaction and a refinement; after each: what was
/// acknowledged is logged, every file replays, memory and its store are
/// consistent after the next start, and `--continue` goes on.
#[test]
fn kill_9_at_random_points_loses_nothing_acknowledged() {
    const KILLS: usize = 200;
    const WORKERS: u64 = 2;
    let base = crate::common::fast_dir();
    let script_dir = TestEnv::new_in(base, "kill-script");
    let script = script_dir.root.join("script.jsonl");
    std::fs::write(&script, kill_script()).unwrap();

    // A whole run first: it must pass, and its length bounds the delays.
    let (env, args) = kill_world(base, &script);
    let started = Instant::now();
    let mut child = start_session(&env, &args);
    let status = child.wait().unwrap();
    let whole = started.elapsed();
    assert!(status.success(), "the unkilled run failed: {status:?}");
    let stdout = std::fs::read_to_string(env.root.join("stdout")).unwrap();
    assert_eq!(
        stdout,
        "R1 reading.\nR2 remembering.\nR3 done with one.\nR4 two.\nR5 three.\nR6 four.\nR9 five.\n"
    );
    assert_eq!(env.session_files().len(), 2, "compacted once");
    assert!(
        all_records(&env).iter().any(|r| r["role"] == "tool"
            && r["content"]
                .as_str()
                .unwrap()
                .contains("the whole output is in")),
        "the read_file result was spilled"
    );
    let log_bytes = logs_size(&env);
    check_after_kill(&env, &args, "the unkilled run");
    drop(env);

    let deadline = Instant::now() + Duration::from_secs(90);
    let span = (whole.as_micros() as u64).max(1000);
    let results: Vec<(usize, BTreeMap<Phase, usize>)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..WORKERS)
            .map(|w| {
                let script = &script;
                s.spawn(move || {
                    let seed = 0x9e37_79b9_7f4a_7c15 ^ (w + 1);
                    let mut rng = Rng(seed);
                    let mut kills = 0;
                    let mut phases = BTreeMap::new();
                    let mut tries = 0;
                    while kills < KILLS / WORKERS as usize {
                        tries += 1;
                        assert!(tries < 4 * KILLS, "too few runs were still alive to kill");
                        assert!(Instant::now() < deadline, "the kill loop ran out of time");
                        let (env, args) = kill_world(base, script);
                        // Half the kills after a time, half once the logs
                        // have grown to a size: both spread over the run.
                        let by_time = rng.below(2) == 0;
                        let delay = Duration::from_micros(rng.below(span));
                        let size = rng.below(log_bytes);
                        let mut child = start_session(&env, &args);
                        let started = Instant::now();
                        if by_time {
                            // The sleep is the point: a kill at a random
                            // moment of the run.
                            std::thread::sleep(delay);
                        } else {
                            // A poll finer than `common::wait_until`'s, so
                            // the kill lands near the size drawn.
                            while logs_size(&env) < size
                                && started.elapsed() < Duration::from_secs(5)
                                && child.try_wait().unwrap().is_none()
                            {
                                std::thread::sleep(Duration::from_micros(100));
                            }
                        }
                        child.kill().ok();
                        let status = child.wait().unwrap();
                        if status.success() {
                            continue; // it finished first: not a kill point
                        }
                        assert_eq!(
                            std::os::unix::process::ExitStatusExt::signal(&status),
                            Some(9),
                            "{status:?}"
                        );
                        kills += 1;
                        let point = if by_time {
                            format!("after {delay:?}")
                        } else {
                            format!("at {size} log bytes")
                        };
                        let context = format!("worker {w} seed {seed:#x} kill {kills} {point}");
                        let phase = check_after_kill(&env, &args, &context);
                        *phases.entry(phase).or_insert(0) += 1;
                    }
                    (kills, phases)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let total: usize = results.iter().map(|r| r.0).sum();
    let mut phases: BTreeMap<Phase, usize> = BTreeMap::new();
    for (_, p) in &results {
        for (k, v) in p {
            *phases.entry(*k).or_insert(0) += v;
        }
    }
    eprintln!("{total} kill points in a run of {whole:?}: {phases:?}");
    assert!(total >= KILLS);
    // The kills spread over the session, not only its start.
    assert!(
        phases.get(&Phase::FirstFile).copied().unwrap_or(0) > 0
            && phases.get(&Phase::Compacted).copied().unwrap_or(0)
                + phases.get(&Phase::Refined).copied().unwrap_or(0)
                > 0,
        "{phases:?}"
    );
}

// ---------------------------------------------------------------------------
// 2. Sessions started at the same moment

/// `args` run through `sh`, which waits until the file `go` exists and then
/// becomes revolve, in the harness's clean environment: every process of a
/// test started this way leaves the gate within a moment of the others.
fn gated(env: &TestEnv, go: &Path, args: &[&str]) -> Command {
    let mut line = sh_quote(common::BIN);
    for a in args {
        line.push(' ');
        line.push_str(&sh_quote(a));
    }
    let gate = format!(
        "until [ -e {} ]; do :; done; exec {line}",
        sh_quote(go.to_str().unwrap())
    );
    let plain = env.command(&[]);
    let mut cmd = Command::new("sh");
    cmd.args(["-c", &gate]).current_dir(&env.cwd).env_clear();
    for (key, value) in plain.get_envs() {
        if let Some(value) = value {
            cmd.env(key, value);
        }
    }
    cmd
}

fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// `n` gated runs started together, their stdin kept open, their stdout
/// and stderr read as they come: on a pseudo-terminal each ([`common::pty`],
/// stderr then shown with stdout) when `tty`.
struct Racers {
    children: Vec<std::process::Child>,
    stdins: Vec<Option<Box<dyn Write + Send>>>,
    outputs: Vec<std::sync::mpsc::Receiver<Vec<u8>>>,
    seen: Vec<Vec<u8>>,
    errs: Vec<std::thread::JoinHandle<Vec<u8>>>,
    tty: bool,
}

impl Racers {
    /// Starts `n` gated runs and opens the gate once all are waiting at it.
    fn start(env: &TestEnv, n: usize, args: &[&str], tty: bool) -> Racers {
        let go = env.root.join(format!("go-{n}"));
        let mut racers = Racers {
            children: Vec::new(),
            stdins: Vec::new(),
            outputs: Vec::new(),
            seen: vec![Vec::new(); n],
            errs: Vec::new(),
            tty,
        };
        for _ in 0..n {
            let mut cmd = gated(env, &go, args);
            let stdin: Box<dyn Write + Send>;
            let mut out: Box<dyn Read + Send>;
            let mut err = None;
            let child = if tty {
                let (child, master) =
                    common::pty::spawn(&mut cmd, 80, 24).expect("start sh on a pty");
                stdin = Box::new(master.try_clone().expect("a second handle on the pty"));
                out = Box::new(master);
                child
            } else {
                let mut child = cmd
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("start sh");
                stdin = Box::new(child.stdin.take().unwrap());
                out = Box::new(child.stdout.take().unwrap());
                err = child.stderr.take();
                child
            };
            racers.stdins.push(Some(stdin));
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(k) = out.read(&mut buf) {
                    if k == 0 || tx.send(buf[..k].to_vec()).is_err() {
                        break;
                    }
                }
            });
            racers.outputs.push(rx);
            racers.errs.push(std::thread::spawn(move || {
                let mut bytes = Vec::new();
                if let Some(mut err) = err {
                    err.read_to_end(&mut bytes).ok();
                }
                bytes
            }));
            racers.children.push(child);
        }
        std::fs::write(&go, "").unwrap();
        racers
    }

    /// Waits until `ready(stdout so far, exited)` holds for every run,
    /// at most `within`.
    fn wait_all(&mut self, within: Duration, ready: impl Fn(&[u8], bool) -> bool) {
        let deadline = Instant::now() + within;
        loop {
            let mut all = true;
            for i in 0..self.children.len() {
                while let Ok(bytes) = self.outputs[i].try_recv() {
                    self.seen[i].extend(bytes);
                }
                let exited = self.children[i].try_wait().unwrap().is_some();
                all &= ready(&self.seen[i], exited);
            }
            if all {
                return;
            }
            if Instant::now() >= deadline {
                for c in &mut self.children {
                    c.kill().ok();
                }
                let shown: Vec<_> = self
                    .seen
                    .iter()
                    .map(|s| String::from_utf8_lossy(s))
                    .collect();
                panic!("the racing runs were not ready within {within:?}: {shown:#?}");
            }
            std::thread::sleep(common::POLL);
        }
    }

    /// Writes `text` to the stdin of run `i`.
    fn type_in(&mut self, i: usize, text: &str) {
        if let Some(pipe) = &mut self.stdins[i] {
            pipe.write_all(text.as_bytes()).ok();
        }
    }

    /// Ends every input (Ctrl-D on a terminal, as script(1) did when its
    /// input closed; closed otherwise) and waits for every run to end (at
    /// most `within`); returns `(exit code, stdout, stderr)` of each.
    fn finish(mut self, within: Duration) -> Vec<(Option<i32>, String, String)> {
        if self.tty {
            for i in 0..self.stdins.len() {
                self.type_in(i, "\x04");
            }
        }
        self.stdins.clear();
        self.wait_all(within, |_, exited| exited);
        let mut out = Vec::new();
        for (i, mut child) in self.children.into_iter().enumerate() {
            let status = child.wait().unwrap();
            while let Ok(bytes) = self.outputs[i].recv_timeout(Duration::from_secs(5)) {
                self.seen[i].extend(bytes);
            }
            let err = self.errs.remove(0).join().unwrap();
            out.push((
                status.code(),
                String::from_utf8_lossy(&self.seen[i]).into_owned(),
                String::from_utf8_lossy(&err).into_owned(),
            ));
        }
        out
    }
}

fn header_names(env: &TestEnv) -> Vec<Option<String>> {
    env.session_files()
        .iter()
        .map(|f| {
            let recs = common::records(f);
            assert_eq!(recs[0]["type"], "header", "{}", f.display());
            recs[0]["name"].as_str().map(str::to_owned)
        })
        .collect()
}

/// Two and then ten interactive sessions started at the same moment in one
/// directory each get a name of their own, and a log of their own.
#[test]
fn sessions_started_together_get_distinct_names() {
    for n in [2, 10] {
        let env = TestEnv::new(&format!("names-{n}"));
        let script = env.root.join("script.jsonl");
        std::fs::write(&script, "{\"text\":\"Hello.\"}\n").unwrap();
        let args = [
            "--provider",
            "scripted",
            "--script",
            script.to_str().unwrap(),
        ];
        // All of them wait at their prompt at once (so each saw the
        // others running), then leave with Ctrl-D.
        let mut racers = Racers::start(&env, n, &args, true);
        racers.wait_all(Duration::from_secs(60), |out, _| {
            String::from_utf8_lossy(out).contains('\u{203a}')
        });
        // Read while they all run: a session left without a message
        // leaves no file (issue 32).
        let names = header_names(&env);
        for (code, shown, _) in racers.finish(Duration::from_secs(30)) {
            assert_eq!(code, Some(0), "{shown}");
            assert!(!shown.contains("panicked"), "{shown}");
        }
        assert_eq!(names.len(), n, "one log each: {names:?}");
        let distinct: BTreeSet<String> = names.iter().flatten().cloned().collect();
        assert_eq!(distinct.len(), n, "distinct names: {names:?}");
        assert_eq!(
            header_names(&env),
            Vec::<Option<String>>::new(),
            "empty sessions leave no file"
        );
    }
}

/// Ten runs asking for the same name at the same moment: exactly one gets
/// it, the others fail with one clear line and write nothing.
#[test]
fn ten_runs_racing_for_one_name_one_wins() {
    let env = TestEnv::new("same-name");
    let script = env.root.join("script.jsonl");
    std::fs::write(&script, "{\"text\":\"Mine.\"}\n").unwrap();
    let args = [
        "--provider",
        "scripted",
        "--script",
        script.to_str().unwrap(),
        "--name",
        "x",
    ];
    let mut racers = Racers::start(&env, 10, &args, false);
    for i in 0..10 {
        racers.type_in(i, "hi\n");
    }
    let outputs = racers.finish(Duration::from_secs(60));
    let won: Vec<_> = outputs.iter().filter(|o| o.0 == Some(0)).collect();
    assert_eq!(won.len(), 1, "{outputs:#?}");
    assert_eq!(won[0].1, "Mine.\n");
    for lost in outputs.iter().filter(|o| o.0 != Some(0)) {
        assert_eq!(lost.0, Some(2), "{lost:?}");
        assert!(lost.1.is_empty(), "{lost:?}");
        assert_eq!(
            lost.2,
            "revolve: cannot name the session 'x': another session of this directory has that \
             name (resume it with --resume x)\n"
        );
    }
    assert_eq!(header_names(&env), [Some("x".to_owned())]);
}

/// A session named `shared` that took one turn ("one" → "A1.") with a
/// script of `replies` answers `A1.`, `A2.`, …; the arguments that resume
/// it with the same script.
fn shared_session(env: &TestEnv, replies: usize) -> Vec<String> {
    let script = env.root.join("script.jsonl");
    let answers: String = (1..=replies)
        .map(|n| format!("{{\"text\":\"A{n}.\"}}\n"))
        .collect();
    std::fs::write(&script, answers).unwrap();
    let base = [
        "--provider",
        "scripted",
        "--script",
        script.to_str().unwrap(),
    ];
    let mut first = base.to_vec();
    first.extend(["--name", "shared"]);
    let run = env.run(&first, "one\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    base.iter()
        .chain(&["--resume", "shared"])
        .map(|a| (*a).to_owned())
        .collect()
}

/// Ten `--resume` of one session at the same moment: one goes on, the
/// other nine are refused with one line, and the log gets one writer.
#[test]
fn ten_resumes_at_once_leave_one_writer() {
    let env = TestEnv::new("resume-race");
    let owned = shared_session(&env, 3);
    let args: Vec<&str> = owned.iter().map(String::as_str).collect();
    // Each waits for its first line with the session claimed: one holds
    // it, the other nine must be refused.
    let mut racers = Racers::start(&env, 10, &args, false);
    let mut running = Vec::new();
    let one_left = common::wait_until(Duration::from_secs(60), || {
        running = (0..10)
            .filter(|&i| racers.children[i].try_wait().unwrap().is_none())
            .collect();
        running.len() == 1
    });
    assert!(one_left, "still running: {running:?}");
    let survivor = running[0];
    racers.type_in(survivor, "two\n");
    let outputs = racers.finish(Duration::from_secs(60));
    for (i, (code, stdout, stderr)) in outputs.iter().enumerate() {
        if i == survivor {
            assert_eq!((*code, stdout.as_str()), (Some(0), "A2.\n"), "{stderr}");
            continue;
        }
        assert_eq!(*code, Some(1), "{stderr}");
        assert!(stdout.is_empty(), "{stdout}");
        assert!(
            stderr.starts_with("revolve: session ")
                && stderr.ends_with(" is already running in another process\n")
                && stderr.lines().count() == 1,
            "{stderr}"
        );
    }
    let recs = common::records(&env.only_session());
    assert_eq!(recs.iter().filter(|r| r["type"] == "resumed").count(), 1);
    assert_eq!(
        common::messages(&recs),
        common::pairs(&[
            ("user", "one"),
            ("assistant", "A1."),
            ("user", "two"),
            ("assistant", "A2.")
        ])
    );
    check_replays(&env, "after the resume race");
}

/// Ten `--resume` of one session started together, each with one line:
/// those that get the session take turns (one ends, the next claims it and
/// reads what the last wrote), the others are refused; the log is one
/// clean sequence of whole turns, never two writers interleaved.
#[test]
fn ten_resumes_with_one_line_each_take_turns() {
    let env = TestEnv::new("resume-turns");
    let owned = shared_session(&env, 11);
    let args: Vec<&str> = owned.iter().map(String::as_str).collect();
    let mut racers = Racers::start(&env, 10, &args, false);
    for i in 0..10 {
        racers.type_in(i, "more\n");
    }
    let outputs = racers.finish(Duration::from_secs(60));
    let won = outputs.iter().filter(|o| o.0 == Some(0)).count();
    assert!(won >= 1, "{outputs:#?}");
    for (code, stdout, stderr) in &outputs {
        if *code != Some(0) {
            assert_eq!(*code, Some(1), "{stderr}");
            assert!(stdout.is_empty() && stderr.lines().count() == 1, "{stderr}");
            assert!(
                stderr.ends_with(" is already running in another process\n"),
                "{stderr}"
            );
        }
    }
    let recs = common::records(&env.only_session());
    let kinds = common::kinds(&recs);
    // Header, the first turn, then per resume: resumed, user, answer, totals.
    let mut expected = vec!["header", "message", "context", "message", "totals"];
    for _ in 0..won {
        expected.extend(["resumed", "message", "message", "totals"]);
    }
    assert_eq!(kinds, expected, "one writer at a time");
    let turns: Vec<u64> = recs
        .iter()
        .filter(|r| r["type"] == "totals")
        .map(|r| r["turns"].as_u64().unwrap())
        .collect();
    assert_eq!(
        turns,
        (1..=won as u64 + 1).collect::<Vec<_>>(),
        "each resume read the last one's turn"
    );
    let answers: Vec<String> = common::messages(&recs)
        .into_iter()
        .filter(|m| m.0 == "assistant")
        .map(|m| m.1)
        .collect();
    let expected: Vec<String> = (1..=won + 1).map(|n| format!("A{n}.")).collect();
    assert_eq!(answers, expected);
    check_replays(&env, "after the resumes");
}

// ---------------------------------------------------------------------------
// 3. Disk full, read-only state, no HOME

/// Runs `cmd` feeding `stdin`, at most 60 s.
fn run_cmd(mut cmd: Command, stdin: &str) -> common::Run {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the command");
    let mut pipe = child.stdin.take().unwrap();
    let input = stdin.to_owned();
    let writer = std::thread::spawn(move || {
        let _ = pipe.write_all(input.as_bytes());
    });
    let output = child.wait_with_output().unwrap();
    writer.join().unwrap();
    common::Run {
        code: output.status.code(),
        signal: std::os::unix::process::ExitStatusExt::signal(&output.status),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// The binary under `sh -c 'PRELUDE; exec revolve ARGS'`, in the harness's
/// clean environment.
fn under_sh(env: &TestEnv, prelude: &str, args: &[&str]) -> Command {
    let plain = env.command(&[]);
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!("{prelude}; exec \"$0\" \"$@\""))
        .arg(common::BIN)
        .args(args)
        .current_dir(&env.cwd)
        .env_clear();
    for (key, value) in plain.get_envs() {
        if let Some(value) = value {
            cmd.env(key, value);
        }
    }
    cmd
}

fn write_script(env: &TestEnv, replies: &[&str]) -> PathBuf {
    let script = env.root.join("script.jsonl");
    let text: String = replies
        .iter()
        .map(|r| format!("{}\n", json!({ "text": r })))
        .collect();
    std::fs::write(&script, text).unwrap();
    script
}

/// A full disk, as a file size limit: the write that does not fit fails
/// with one line naming the log, the run exits 1, and what was written
/// before replays and goes on.
#[test]
fn a_full_disk_is_one_clear_line_and_the_log_still_replays() {
    let env = TestEnv::new("disk-full");
    let big = "y".repeat(200_000);
    let script = write_script(&env, &["A1.", &big, "A3.", "A4."]);
    let args = [
        "--provider",
        "scripted",
        "--script",
        script.to_str().unwrap(),
    ];
    // 64 blocks (32 or 64 KiB, as the shell counts them): the first turn
    // fits, the second's answer does not. SIGXFSZ is ignored so the write
    // fails with EFBIG instead of killing the process.
    let run = run_cmd(
        under_sh(&env, "trap '' XFSZ; ulimit -f 64", &args),
        "one\ntwo\nthree\n",
    );
    let log = env.only_session();
    assert_eq!(run.code, Some(1), "{run:?}");
    assert_eq!(
        run.stderr_past_seeding(&env),
        format!(
            "revolve: cannot write the session log {}: File too large (os error 27)\n",
            log.display()
        )
    );
    check_replays(&env, "after the full disk");
    let before = common::messages(&all_records(&env));
    assert_eq!(
        before[..3],
        common::pairs(&[("user", "one"), ("assistant", "A1."), ("user", "two")])[..]
    );

    // With room again, the session goes on from the log.
    let run = env.run(&[&args[..], &["--continue"]].concat(), "four\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    check_replays(&env, "after the full disk and a --continue");
    let after = common::messages(&all_records(&env));
    assert_eq!(after[..3], before[..3]);
    assert_eq!(after.last().unwrap().0, "assistant");
}

/// A state directory nobody can write into: one clear line, exit 1, and
/// the session already there is untouched.
#[test]
fn an_unwritable_state_dir_is_one_clear_line() {
    let env = TestEnv::new("read-only");
    let script = write_script(&env, &["A1.", "A2."]);
    let args = [
        "--provider",
        "scripted",
        "--script",
        script.to_str().unwrap(),
    ];
    assert_eq!(env.run(&args, "one\n").code, Some(0));
    let log = env.only_session();
    let kept = std::fs::read(&log).unwrap();

    // The state root is a regular file (works as root too, where
    // permissions do not stop a write).
    let blocker = env.root.join("state-is-a-file");
    std::fs::write(&blocker, "x").unwrap();
    let blocker_str = blocker.to_str().unwrap();
    let run = env.run_env(&args, "two\n", &[("XDG_STATE_HOME", blocker_str)]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(!run.stderr.contains("panicked"), "{run:?}");
    let last = run
        .stderr_lines()
        .last()
        .copied()
        .unwrap_or_default()
        .to_owned();
    assert!(
        last.starts_with(&format!(
            "revolve: cannot create a session under {blocker_str}/"
        )) && last.ends_with(": Not a directory (os error 20)"),
        "{run:?}"
    );
    assert!(run.stdout.is_empty(), "{run:?}");

    // The sessions folder made read-only, where that stops a write.
    let sessions = log.parent().unwrap().to_path_buf();
    let mode = |m| {
        std::fs::set_permissions(&sessions, std::os::unix::fs::PermissionsExt::from_mode(m))
            .unwrap()
    };
    mode(0o555);
    let probe = sessions.join("probe");
    if std::fs::write(&probe, "").is_ok() {
        std::fs::remove_file(&probe).ok();
        mode(0o755);
        eprintln!("skipped the chmod 0555 case: permissions do not stop this user (root)");
    } else {
        let run = env.run(&args, "two\n");
        mode(0o755);
        assert_eq!(run.code, Some(1), "{run:?}");
        assert!(
            run.stderr.ends_with(": Permission denied (os error 13)\n")
                && run.stderr.contains(sessions.to_str().unwrap()),
            "{run:?}"
        );
    }
    assert_eq!(
        std::fs::read(&log).unwrap(),
        kept,
        "the old log is untouched"
    );
    assert_eq!(env.session_files(), [log]);
    check_replays(&env, "after the refused runs");
}

/// Without HOME: the XDG roots alone are enough; a HOME that cannot hold
/// the state (a file) is one clear line. (A session with HOME and every
/// XDG root unset is not run here: the home then comes from the passwd
/// entry, the real home of whoever runs the tests, which a test must not
/// touch; only `replay --check FILE`, which reads no root, is.)
#[test]
fn no_home_uses_the_xdg_roots_and_a_bad_home_is_one_line() {
    let env = TestEnv::new("no-home");
    let script = write_script(&env, &["A1."]);
    let args = [
        "--provider",
        "scripted",
        "--script",
        script.to_str().unwrap(),
    ];
    let mut cmd = env.command(&args);
    cmd.env_remove("HOME");
    let run = run_cmd(cmd, "one\n");
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (Some(0), "A1.\n"),
        "{run:?}"
    );
    let log = env.only_session();

    // With no HOME and no XDG root at all, a command that is given its
    // file works (and reaches no home: the roots are only computed).
    let mut cmd = env.command(&["replay", "--check", log.to_str().unwrap()]);
    for var in [
        "HOME",
        "XDG_STATE_HOME",
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "XDG_CACHE_HOME",
    ] {
        cmd.env_remove(var);
    }
    let run = run_cmd(cmd, "");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stdout.contains(" 0 inconsistencies"), "{run:?}");

    let other = TestEnv::new("bad-home");
    let home_file = other.root.join("home-is-a-file");
    std::fs::write(&home_file, "x").unwrap();
    let mut cmd = other.command(&args);
    for var in [
        "XDG_STATE_HOME",
        "XDG_CONFIG_HOME",
        "XDG_DATA_HOME",
        "XDG_CACHE_HOME",
    ] {
        cmd.env_remove(var);
    }
    cmd.env("HOME", &home_file);
    let run = run_cmd(cmd, "one\n");
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(!run.stderr.contains("panicked"), "{run:?}");
    let last = run
        .stderr_lines()
        .last()
        .copied()
        .unwrap_or_default()
        .to_owned();
    // The first path under it that revolve needs (the config file, then
    // the state folder) is the one named.
    assert!(
        last.starts_with(&format!(
            "revolve: cannot read the config file {}/.config/task-agent/config.json",
            home_file.display()
        )) && last.ends_with(": Not a directory (os error 20)"),
        "{run:?}"
    );
}

// ---------------------------------------------------------------------------
// 4. A misbehaving model server

/// Runs `cmd` feeding `stdin` and returns the run (stdout kept whole) and
/// its peak resident memory in KiB, as the kernel counted it: the child is
/// reaped with `wait4`, whose `ru_maxrss` is this process's own high-water
/// mark (no sampling, no `/proc`; Linux and macOS alike).
// Reaped by `wait4`, which std's `Child` does not offer.
#[allow(clippy::zombie_processes)]
fn run_measured(mut cmd: Command, stdin: &str, within: Duration) -> (common::Run, Peak) {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start revolve");
    let harness_kib = common::own_peak_kib();
    let mut pipe = child.stdin.take().unwrap();
    let input = stdin.to_owned();
    let writer = std::thread::spawn(move || {
        let _ = pipe.write_all(input.as_bytes());
    });
    let mut out = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut out, &mut bytes).ok();
        bytes
    });
    let mut err = child.stderr.take().unwrap();
    let err_reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut err, &mut bytes).ok();
        bytes
    });
    let deadline = Instant::now() + within;
    let (status, child_kib) = loop {
        if let Some(done) = common::reap_measured(child.id()) {
            break done;
        }
        if Instant::now() >= deadline {
            child.kill().ok();
            common::reap_measured(child.id());
            panic!("revolve did not exit within {within:?}");
        }
        std::thread::sleep(common::POLL);
    };
    writer.join().unwrap();
    let run = common::Run {
        code: status.code(),
        signal: std::os::unix::process::ExitStatusExt::signal(&status),
        stdout: String::from_utf8_lossy(&reader.join().unwrap()).into_owned(),
        stderr: String::from_utf8_lossy(&err_reader.join().unwrap()).into_owned(),
    };
    (
        run,
        Peak {
            child_kib,
            harness_kib,
        },
    )
}

/// A child's peak resident memory, and this test process's own at the
/// child's start: on Linux a child's `ru_maxrss` starts from the resident
/// size of the parent it was spawned from, so the figure is the child's
/// own only when it passes the harness's.
struct Peak {
    child_kib: u64,
    harness_kib: u64,
}

impl Peak {
    /// Asserts the child stayed under [`MAX_RSS_KIB`]; says the check was
    /// skipped when the harness itself had already passed it (the child's
    /// figure would then be the harness's, not its own).
    fn assert_small(&self, what: &str) {
        let Peak {
            child_kib,
            harness_kib,
        } = *self;
        if harness_kib >= MAX_RSS_KIB {
            eprintln!(
                "{what}: peak RSS not checked: this test process had reached \
                 {harness_kib} KiB, and a child's peak starts from its parent's"
            );
            return;
        }
        eprintln!("{what}: peak RSS {child_kib} KiB");
        assert!(child_kib < MAX_RSS_KIB, "{what}: peak RSS {child_kib} KiB");
    }
}

/// The lines revolve wrote on stderr as messages of its own (`revolve: …`),
/// not the transcript a resume shows again.
fn own_lines(run: &common::Run) -> Vec<&str> {
    run.stderr
        .lines()
        .filter(|l| l.starts_with("revolve: "))
        .collect()
}

/// The peak resident memory a run against a misbehaving server may reach:
/// far below what the server sends (20 MB lines, 50 MB bodies, endless
/// streams), above what a debug build needs for an 8 MiB answer.
const MAX_RSS_KIB: u64 = 160 * 1024;

/// A failed turn, as the user sees it: exit 1 and exactly `line` on
/// stderr, last; the question is logged, then a `failed` record, and the
/// log replays.
fn assert_one_line_failure(env: &TestEnv, run: &common::Run, line: &str) {
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(!run.stderr.contains("panicked"), "{run:?}");
    assert_eq!(own_lines(run), [format!("revolve: {line}")], "{run:?}");
    assert!(
        run.stderr.ends_with(&format!("revolve: {line}\n")),
        "{run:?}"
    );
    let recs = all_records(env);
    let last_failed = recs.iter().rev().find(|r| r["type"] == "failed").unwrap();
    assert_eq!(last_failed["error"], line);
    check_replays(env, line);
}

/// A server that sends nothing, and one that stops mid-answer, fail the
/// turn after `--stall-timeout` with one line; a slow server that keeps
/// sending is waited for, however long the whole answer takes.
#[test]
fn a_silent_server_times_out_and_a_slow_one_is_waited_for() {
    let server = FakeServer::start(vec![
        FakeReply::Hang,
        FakeReply::Stall {
            chunks: vec!["Wait".into(), " for it".into()],
        },
        FakeReply::Slow {
            chunks: ["Slow", " but", " steady", " wins."]
                .map(String::from)
                .to_vec(),
            every: Duration::from_millis(250),
        },
    ])
    .unwrap();
    let url = server.url();
    let endpoint = format!("{url}/chat/completions");
    let env = TestEnv::new("stall");
    let args = ["--base-url", url.as_str(), "--stall-timeout", "0.4"];

    let started = Instant::now();
    let run = env.run(&args, "hello?\n");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(run.stdout, "");
    assert_one_line_failure(
        &env,
        &run,
        &format!("no answer from {endpoint}: no response headers within 400 ms"),
    );

    let run = env.run(&[&args[..], &["--continue"]].concat(), "again?\n");
    assert_eq!(run.stdout, "Wait for it\n");
    assert_one_line_failure(
        &env,
        &run,
        &format!("stream from {endpoint} stalled: nothing received for 400 ms"),
    );

    // Four pieces 250 ms apart: a second in all, never 400 ms silent.
    let run = env.run(&[&args[..], &["--continue"]].concat(), "slowly\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Slow but steady wins.\n");

    let bad = env.run(&["--stall-timeout", "0"], "");
    assert_eq!(bad.code, Some(2), "{bad:?}");
    assert!(bad.stderr.contains("must be above 0"), "{bad:?}");
}

/// A connection closed before any answer, and one closed mid-stream: one
/// line each; with a retry allowed, the dropped request is sent again.
#[test]
fn dropped_connections_are_one_line_or_retried() {
    let server = FakeServer::start(vec![
        FakeReply::Raw(String::new()),
        FakeReply::CutAfter {
            chunks: vec!["Half".into()],
        },
        FakeReply::Raw(String::new()),
        FakeReply::text("Second try."),
    ])
    .unwrap();
    let url = server.url();
    let endpoint = format!("{url}/chat/completions");
    let env = TestEnv::new("dropped");
    let run = env.run(&["--base-url", &url], "one\n");
    assert_eq!(run.stdout, "");
    assert_eq!(run.code, Some(1), "{run:?}");
    assert_eq!(run.stderr_lines_past_seeding(&env).len(), 1, "{run:?}");
    assert_eq!(
        run.stderr_past_seeding(&env),
        format!("revolve: cannot reach {endpoint}: connection closed early\n")
    );
    check_replays(&env, "dropped");

    let run = env.run(&["--base-url", &url, "--continue"], "two\n");
    assert_eq!(run.stdout, "Half\n");
    assert_one_line_failure(
        &env,
        &run,
        &format!("stream from {endpoint} ended before [DONE]"),
    );

    let run = env.run_env(
        &["--base-url", &url, "--continue"],
        "three\n",
        &[("REVOLVE_RETRIES", "1")],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Second try.\n");
    assert_eq!(server.requests().len(), 4);
}

/// Garbage where an event stream should be: binary bytes, JSON that is
/// not, a 20 MB line that never ends, a head that is not HTTP. Each is one
/// line, exit 1, no panic, in bounded memory; the log replays. A stream
/// that brought no content is asked again unstreamed, once: those get
/// their garbage twice.
#[test]
fn garbage_from_the_server_is_one_line_and_no_panic() {
    let long_line = FakeReply::Garbage(format!("data: {}", "x".repeat(20 << 20)));
    let binary = FakeReply::Garbage("\u{0}\u{1}\u{7f}binary\r\r\n\n:::\n\n\u{1b}[2J".into());
    let replies = vec![
        binary.clone(),
        binary,
        FakeReply::Garbage(
            "data: {\"choices\":[{\"delta\":{\"content\":\"ok\"}}]}\n\ndata: {not json\n\n".into(),
        ),
        FakeReply::Garbage("data: {\"choices\":\"nope\"}\n\n".into()),
        long_line.clone(),
        long_line,
        FakeReply::Raw("HTTP/1.1 banana\r\n\r\n".into()),
    ];
    let n = 5;
    let server = FakeServer::start(replies).unwrap();
    let url = server.url();
    let env = TestEnv::new("garbage");
    for i in 0..n {
        let mut args = vec!["--base-url", url.as_str()];
        if i > 0 {
            args.push("--continue");
        }
        let (run, peak) = run_measured(env.command(&args), "go\n", Duration::from_secs(60));
        assert_eq!(run.code, Some(1), "reply {i}: {run:?}");
        let own = own_lines(&run);
        assert_eq!(own.len(), 1, "reply {i}: {run:?}");
        assert!(
            run.stderr.ends_with(&format!("{}\n", own[0])),
            "reply {i}: {run:?}"
        );
        assert!(!run.stderr.contains("panicked"), "reply {i}: {run:?}");
        assert!(own[0].contains(&url), "reply {i}: {run:?}");
        eprintln!("garbage reply {i}: {}", own[0]);
        peak.assert_small(&format!("garbage reply {i}"));
        check_replays(&env, &format!("garbage reply {i}"));
    }
    assert_eq!(server.requests().len(), 7, "each reply, and no more");
}

/// A server that never stops streaming: the answer is cut at 8 MiB with
/// one line, what streamed is kept as a partial answer, and memory stays
/// bounded; a 50 MB non-streamed answer is refused unread.
#[test]
fn a_huge_answer_is_cut_with_bounded_memory() {
    let piece = "z".repeat(1024);
    let huge_json = format!(
        r#"{{"choices":[{{"message":{{"role":"assistant","content":"{}"}}}}]}}"#,
        "w".repeat(50 << 20)
    );
    let server = FakeServer::start(vec![
        FakeReply::Endless { piece },
        FakeReply::Status {
            code: 200,
            body: huge_json,
            retry_after: None,
        },
    ])
    .unwrap();
    let url = server.url();
    let endpoint = format!("{url}/chat/completions");
    let env = TestEnv::new("huge");

    let (run, peak) = run_measured(
        env.command(&["--base-url", &url]),
        "talk forever\n",
        Duration::from_secs(60),
    );
    assert_one_line_failure(
        &env,
        &run,
        &format!("answer from {endpoint} is longer than 8 MiB; stopped reading"),
    );
    let limit = revolve_provider::MAX_ANSWER_BYTES;
    let shown = run.stdout.trim_end_matches('\n').len();
    assert!(shown > limit && shown < limit + 64 * 1024, "{shown}");
    let recs = all_records(&env);
    let partial = recs
        .iter()
        .find(|r| r["type"] == "message" && r["role"] == "assistant")
        .unwrap();
    assert_eq!(partial["partial"], true);
    assert_eq!(partial["content"].as_str().unwrap().len(), shown);
    peak.assert_small("endless stream");

    // A new session (in a world of its own): the first one holds an 8 MiB
    // answer now, which no 128k-token request can carry (its next turn
    // stops before sending).
    let env = TestEnv::new("huge-json");
    let (run, peak) = run_measured(
        env.command(&["--base-url", &url]),
        "all at once\n",
        Duration::from_secs(60),
    );
    assert_eq!(run.stdout, "");
    assert_one_line_failure(
        &env,
        &run,
        &format!("answer from {endpoint} is larger than 16 MiB; not read"),
    );
    peak.assert_small("50 MB JSON answer");
}

/// A `--resume` started as the session's own process compacts it: the
/// session lives on in the new file, so the resume is refused and never
/// writes the old one (whose last record points forward). Tried with the
/// resume started at several moments after `/compact` is typed.
#[test]
fn a_resume_racing_a_compaction_never_writes_the_old_file() {
    for delay_ms in [0u64, 2, 5, 10] {
        let env = TestEnv::new(&format!("resume-compact-{delay_ms}"));
        let script = env.root.join("script.jsonl");
        let mut replies: Vec<String> = (1..=4).map(|n| format!("A{n}.")).collect();
        replies.push("Notes: counted to four.".into());
        replies.extend((6..=12).map(|n| format!("A{n}.")));
        let text: String = replies
            .iter()
            .map(|r| format!("{}\n", json!({ "text": r })))
            .collect();
        std::fs::write(&script, text).unwrap();
        let base = [
            "--provider",
            "scripted",
            "--script",
            script.to_str().unwrap(),
        ];
        let mut first = base.to_vec();
        first.extend(["--name", "shared"]);
        let mut owner = env.spawn_open(&first, "one\ntwo\nthree\nfour\n");
        assert!(owner.wait_stdout("A4.\n", Duration::from_secs(30)));

        let mut second = base.to_vec();
        second.extend(["--resume", "shared"]);
        owner.type_line("/compact");
        // The sleep is the point: the resume starts at several moments of
        // the compaction, which shows no state to wait for.
        std::thread::sleep(Duration::from_millis(delay_ms));
        let intruder = env.spawn(&second, "intrude\n");
        let intruded = intruder.finish(Duration::from_secs(30));
        owner.close_stdin();
        let owned = owner.finish(Duration::from_secs(30));
        if intruded.code != Some(0) {
            assert!(
                intruded
                    .stderr
                    .ends_with(" is already running in another process\n"),
                "{intruded:?}"
            );
        }
        assert_eq!(owned.code, Some(0), "{owned:?}");
        let files = env.session_files();
        for file in &files {
            let recs = common::records(file);
            if let Some(at) = recs.iter().position(|r| r["type"] == "continued") {
                assert_eq!(
                    at + 1,
                    recs.len(),
                    "delay {delay_ms} ms: records after the old file's end ({intruded:?}): {:?}",
                    common::kinds(&recs[at..])
                );
            }
        }
        check_replays(&env, &format!("delay {delay_ms} ms"));
    }
}

/// A refinement whose file does not fit: one line naming the memory file,
/// exit 1, the memory as it was; the next start rolls the pending entry
/// back and the store holds nothing pending.
#[test]
fn a_full_disk_during_a_refinement_changes_no_memory() {
    let env = TestEnv::new("disk-full-refine");
    let refined = json!({"files": [{"file": "project/big.md", "content": "x".repeat(200_000), "change": "grew"}]});
    let script = write_script(&env, &["A1.", &refined.to_string(), "A3.", "A4."]);
    let args = [
        "--provider",
        "scripted",
        "--script",
        script.to_str().unwrap(),
    ];
    let run = run_cmd(
        under_sh(&env, "trap '' XFSZ; ulimit -f 64", &args),
        "one\n/refine\ntwo\n",
    );
    let project = env
        .home
        .join(".config/task-agent/projects")
        .join(slug(&env.cwd))
        .join("memory");
    assert_eq!(run.code, Some(1), "{run:?}");
    assert_eq!(
        run.stderr_lines().last().copied(),
        Some(
            format!(
                "revolve: cannot write the refined memory: {}: File too large (os error 27)",
                project.join("big.md").display()
            )
            .as_str()
        ),
        "{run:?}"
    );
    let (files, _) = dir_files(&project);
    assert_eq!(
        files.keys().collect::<Vec<_>>(),
        ["project.md"],
        "memory unchanged"
    );

    let run = env.run(&[&args[..], &["--continue"]].concat(), "three\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        run.stderr.contains("rolled back an interrupted refinement"),
        "{run:?}"
    );
    let store = env.state.join("task-agent/refinements");
    for meta in std::fs::read_dir(&store).unwrap().flatten().flat_map(|d| {
        std::fs::read_dir(d.path())
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path().join("meta.cfg"))
    }) {
        if let Ok(cfg) = std::fs::read_to_string(&meta) {
            let parsed = SnapshotMeta::parse_cfg(&cfg).unwrap();
            assert!(!parsed.pending, "{}: still pending", meta.display());
        }
    }
    let (files, _) = dir_files(&project);
    assert_eq!(files.keys().collect::<Vec<_>>(), ["project.md"]);
    check_replays(&env, "after the failed refinement");
}
