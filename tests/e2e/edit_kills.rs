//! kill -9 while revolve edits files: whatever moment the kill lands on,
//! the file holds its old content or its new one whole, every change on
//! disk is in the log before it happened, the next start says what it
//! found of an edit it had logged but not seen written, the log replays,
//! and a rewind brings the tree back to where it started.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::{records, TestEnv};
use serde_json::{json, Value};

/// A small deterministic generator (xorshift64*), so every kill point is
/// reproducible from the seed printed with a failure.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n.max(1)
    }
}

const FIRST: &str = "the first line of a big file\n";

/// The big file before: large enough that writing it takes a moment.
fn big() -> String {
    let mut text = FIRST.to_owned();
    text.push_str(&"a line that only fills the file up\n".repeat(120_000));
    text
}

/// Reads the big file, edits its first line, creates another file, ends.
fn script(dir: &Path) -> std::path::PathBuf {
    let lines = [
        json!({"tool_calls": [{"name": "read_file", "arguments": {"path": "big.txt", "limit": 1}}]}),
        json!({"tool_calls": [{"name": "edit_file", "arguments": {"path": "big.txt", "old_string": FIRST, "new_string": "THE FIRST LINE, EDITED\n"}}]}),
        json!({"tool_calls": [{"name": "write_file", "arguments": {"path": "new.txt", "content": "made by revolve\n"}}]}),
        json!({"text": "Done."}),
        json!({"text": "Resumed."}),
        json!({"text": "Resumed."}),
        json!({"text": "Resumed."}),
        json!({"text": "Resumed."}),
    ];
    let path = dir.join("script.jsonl");
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, text).unwrap();
    path
}

fn world(script: &Path) -> (TestEnv, Vec<String>) {
    let env = TestEnv::new("edit-kill");
    std::fs::write(env.cwd.join("big.txt"), big()).unwrap();
    let args = [
        "--provider",
        "scripted",
        "--script",
        script.to_str().unwrap(),
        "--allow-edits",
    ]
    .map(str::to_owned)
    .to_vec();
    (env, args)
}

fn edited() -> String {
    big().replacen(FIRST, "THE FIRST LINE, EDITED\n", 1)
}

/// Every check a kill must pass.
fn check(env: &TestEnv, args: &[String], context: &str) -> &'static str {
    let big_now = std::fs::read_to_string(env.cwd.join("big.txt")).unwrap();
    assert!(
        big_now == big() || big_now == edited(),
        "{context}: big.txt holds neither its old content nor its new one whole"
    );
    let new_now = std::fs::read_to_string(env.cwd.join("new.txt")).ok();
    assert!(
        new_now.is_none() || new_now.as_deref() == Some("made by revolve\n"),
        "{context}: new.txt is {new_now:?}"
    );
    let files = env.session_files();
    if files.is_empty() {
        // Killed before the log began: nothing may have changed.
        assert_eq!(big_now, big(), "{context}: changed with no log");
        assert!(new_now.is_none(), "{context}: created with no log");
        return "before the log";
    }
    // Every change on disk was logged before it was made.
    let logged: Vec<Value> = records(&files[0]);
    let edits: Vec<&Value> = logged.iter().filter(|r| r["type"] == "edit").collect();
    if big_now != big() {
        assert!(
            edits
                .iter()
                .any(|e| e["path"].as_str().unwrap().ends_with("/big.txt")),
            "{context}: big.txt changed without an edit record"
        );
    }
    if new_now.is_some() {
        assert!(
            edits
                .iter()
                .any(|e| e["path"].as_str().unwrap().ends_with("/new.txt")),
            "{context}: new.txt made without an edit record"
        );
    }
    let pending = logged.last().is_some_and(|r| r["type"] == "edit")
        || edits.len() > logged.iter().filter(|r| r["type"] == "written").count();

    // The next start goes on, and says what it found of a pending edit.
    let mut resume: Vec<&str> = args.iter().map(String::as_str).collect();
    resume.extend(["-c", "-p", "go on"]);
    let run = env.run(&resume, "");
    assert_eq!(run.code, Some(0), "{context}: the resume failed: {run:?}");
    if pending {
        assert!(
            run.stderr
                .contains("the last run stopped between logging an edit of"),
            "{context}: the resume did not say what it found: {}",
            run.stderr
        );
    }
    let check = env.run(&["replay", "--check"], "");
    assert_eq!(check.code, Some(0), "{context}: {check:?}");

    // And a rewind of everything brings the tree back.
    let rewind = env.run(&["rewind", "--turns", "5"], "");
    let nothing = rewind.stderr.contains("changed no file") || rewind.stderr.contains("no turn");
    assert!(
        rewind.code == Some(0) || nothing,
        "{context}: the rewind failed: {rewind:?}"
    );
    assert_eq!(
        std::fs::read_to_string(env.cwd.join("big.txt")).unwrap(),
        big(),
        "{context}: the rewind did not restore big.txt"
    );
    assert!(
        !env.cwd.join("new.txt").exists(),
        "{context}: the rewind left new.txt"
    );
    match (pending, big_now == big(), new_now.is_some()) {
        (true, _, _) => "between an edit's record and its write",
        (false, true, false) => "before the first edit",
        (false, false, false) => "between the two edits",
        (false, _, true) => "after both edits",
    }
}

/// SIGKILL at seeded points of a session that edits a 4 MB file and
/// creates another.
#[test]
fn kill_9_while_editing_loses_nothing_and_rewinds() {
    const KILLS: usize = 8;
    let script_env = TestEnv::new("edit-kill-script");
    let script = script(&script_env.root);

    let (env, args) = world(&script);
    let started = Instant::now();
    let run = env.run(
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
        "edit it\n",
    );
    let whole = started.elapsed();
    assert_eq!(run.code, Some(0), "the unkilled run: {run:?}");
    assert_eq!(
        std::fs::read_to_string(env.cwd.join("big.txt")).unwrap(),
        edited()
    );
    check(&env, &args, "the unkilled run");
    drop(env);
    let mut landed = std::collections::BTreeMap::new();

    let span = (whole.as_micros() as u64).max(1000);
    let mut rng = Rng(0x005e_ed0f_ed17);
    let (mut kills, mut tries) = (0, 0);
    while kills < KILLS {
        tries += 1;
        assert!(tries < 10 * KILLS, "too few runs were still alive to kill");
        let (env, args) = world(&script);
        let stdin = env.root.join("stdin");
        std::fs::write(&stdin, "edit it\n").unwrap();
        let delay = Duration::from_micros(rng.below(span));
        let mut child = env
            .command(&args.iter().map(String::as_str).collect::<Vec<_>>())
            .stdin(std::fs::File::open(&stdin).unwrap())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Half the kills after a time over the whole run, half just after
        // an edit was logged: the moment between its record and its write.
        let on_edit = kills % 2 == 1;
        if on_edit {
            let until = Instant::now() + Duration::from_secs(10);
            while Instant::now() < until && child.try_wait().unwrap().is_none() {
                let logged = env.session_files().first().is_some_and(|f| {
                    std::fs::read_to_string(f).is_ok_and(|t| t.contains(r#""type":"edit""#))
                });
                if logged {
                    std::thread::sleep(Duration::from_micros(rng.below(3000)));
                    break;
                }
                std::thread::sleep(Duration::from_micros(200));
            }
        } else {
            std::thread::sleep(delay);
        }
        child.kill().ok();
        if child.wait().unwrap().success() {
            continue; // it finished first: no kill point
        }
        kills += 1;
        let phase = check(&env, &args, &format!("killed after {delay:?}"));
        *landed.entry(phase).or_insert(0) += 1;
    }
    eprintln!("where the kills landed: {landed:?}");
}
