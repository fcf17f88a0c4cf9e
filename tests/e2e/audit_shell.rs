//! What the second adversarial audit (issue 27) broke in `shell`: what a
//! command changed is tracked without reading what is not a regular file,
//! nor past the cap, nor keys into the log; a command cannot join
//! revolve's process group; submodules are tracked. One test per item, its
//! number first in the test's doc. Each failed (or hung) before its fix.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use crate::common::{records, tool_results, Run, TestEnv};

/// Runs git in `dir` with the test's home, quietly; whether it succeeded.
fn git_in(env: &TestEnv, dir: &Path, args: &[&str]) -> bool {
    Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("HOME", &env.home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CEILING_DIRECTORIES", &env.root)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Makes `dir` a repository with `files` committed; false without git.
fn repo_at(env: &TestEnv, dir: &Path, files: &[(&str, &str)]) -> bool {
    std::fs::create_dir_all(dir).unwrap();
    crate::common::require("git");
    assert!(git_in(env, dir, &["init", "-q"]));
    assert!(git_in(env, dir, &["config", "user.name", "Test"]));
    assert!(git_in(
        env,
        dir,
        &["config", "user.email", "test@example.com"]
    ));
    for (rel, content) in files {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        assert!(git_in(env, dir, &["add", rel]));
    }
    assert!(git_in(env, dir, &["commit", "-q", "-m", "start"]));
    true
}

/// The working directory made a repository with `files` committed.
fn repo(env: &TestEnv, files: &[(&str, &str)]) -> bool {
    repo_at(env, &env.cwd, files)
}

/// Runs revolve (scripted) calling `shell` once per command, one command
/// a round, with `vars`; a run that takes longer than `within` fails.
fn run_shells(env: &TestEnv, commands: &[&str], within: Duration, vars: &[(&str, &str)]) -> Run {
    let mut replies: Vec<Value> = commands
        .iter()
        .map(
            |c| json!({"text": "", "tool_calls": [{"name": "shell", "arguments": {"command": c}}]}),
        )
        .collect();
    replies.push(json!({"text": "Done."}));
    let script = env.root.join("script.jsonl");
    let text: String = replies.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(&script, text).unwrap();
    let args = [
        "--provider",
        "scripted",
        "--script",
        script.to_str().unwrap(),
        "--allow-shell",
        "-p",
        "go",
    ];
    env.spawn_env(&args, "", vars).finish(within)
}

/// The tool results of the session, in order.
fn results(env: &TestEnv) -> Vec<String> {
    tool_results(&records(&env.only_session()))
        .into_iter()
        .map(|(_, content)| content)
        .collect()
}

/// The log's `edit` records.
fn edits(env: &TestEnv) -> Vec<Value> {
    records(&env.only_session())
        .into_iter()
        .filter(|r| r["type"] == "edit")
        .collect()
}

fn abs(env: &TestEnv, rel: &str) -> String {
    env.cwd.join(rel).to_string_lossy().into_owned()
}

fn hash(bytes: &[u8]) -> String {
    revolve_tools::edit::hash(bytes)
}

/// The content store's file for `hash`.
fn blob(env: &TestEnv, hash: &str) -> PathBuf {
    let hex = hash.strip_prefix("sha256:").expect("a sha256 hash");
    env.state.join("task-agent/blobs").join(&hex[..2]).join(hex)
}

/// Item 16: a tracked file that a command turned into a FIFO is neither
/// opened for reading nor waited on; the result says it is not tracked,
/// once, and the next command says nothing more of it.
#[test]
fn a_tracked_file_turned_into_a_fifo_is_not_waited_on() {
    let env = TestEnv::new("track-fifo");
    if !repo(&env, &[("a.txt", "one\n")]) {
        return;
    }
    let run = run_shells(
        &env,
        &["rm a.txt && mkfifo a.txt", "true"],
        Duration::from_secs(60),
        &[],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let results = results(&env);
    assert!(
        results[0].contains("[not tracked for rewind: a.txt: it is now a FIFO]"),
        "{results:?}"
    );
    assert!(!results[1].contains("not tracked"), "{results:?}");
    assert!(edits(&env).is_empty(), "{:?}", edits(&env));
}

/// Item 17: a tracked file swapped for a link to `/dev/zero`, and a
/// tracked folder swapped for a link to `/dev`, are never followed (no
/// unbounded read), and said not to be tracked.
#[test]
fn links_to_dev_zero_are_not_followed() {
    let env = TestEnv::new("track-zero");
    if !repo(&env, &[("a.txt", "one\n"), ("d/zero", "zero\n")]) {
        return;
    }
    let run = run_shells(
        &env,
        &["ln -sf /dev/zero a.txt", "rm -r d && ln -s /dev d", "true"],
        Duration::from_secs(60),
        &[],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let results = results(&env);
    assert!(
        results[0].contains("a.txt: it is now a symlink"),
        "{results:?}"
    );
    assert!(
        results[1].contains("d/zero: it is now behind a symlink"),
        "{results:?}"
    );
    assert!(!results[2].contains("not tracked"), "{results:?}");
    assert!(edits(&env).is_empty(), "{:?}", edits(&env));
}

/// Item 18: a 2 GB untracked file is neither read whole nor stored: its
/// creation is said not to be tracked, later commands do not read it, and
/// no blob past the keep cap is written.
#[test]
fn a_huge_untracked_file_is_not_read_on_every_command() {
    let env = TestEnv::new("track-huge");
    if !repo(&env, &[("a.txt", "one\n")]) {
        return;
    }
    // Sparse: it costs no disk, only the time and memory of reading it.
    let run = run_shells(
        &env,
        &["truncate -s 2G big.bin", "true", "true", "true"],
        Duration::from_secs(20),
        &[],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let results = results(&env);
    assert!(
        results[0].contains("big.bin: it is now over 64 MiB"),
        "{results:?}"
    );
    for later in &results[1..] {
        assert!(!later.contains("not tracked"), "{results:?}");
    }
    assert!(edits(&env).is_empty(), "{:?}", edits(&env));
    let blobs = env.state.join("task-agent/blobs");
    let largest = walk(&blobs)
        .iter()
        .map(|f| f.metadata().unwrap().len())
        .max()
        .unwrap_or(0);
    assert!(largest <= 64 << 20, "a blob of {largest} bytes");
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// Item 2: a command that writes a key into a tracked file (read from a
/// file beside the tree) puts no key in the log (the `edit` record's diff says `[key]`);
/// the blob keeps the file's real bytes, so a rewind restores it exactly.
#[cfg(target_os = "linux")]
#[test]
fn a_key_a_command_writes_into_a_tracked_file_is_not_logged() {
    let env = TestEnv::new("track-key");
    if !repo(&env, &[("notes.txt", "notes\n")]) {
        return;
    }
    let key = "sk-audit-shell-0123456789abcdefghijklmnopqrstuvwxyz";
    // Not from /proc/$PPID/environ, which holds no key any more (issue
    // 42, item 19; tests/e2e/boundaries.rs): from a file the user left
    // readable beside the tree.
    let leaked = env.root.join("leaked.env");
    std::fs::write(&leaked, format!("REVOLVE_API_KEY={key}\n")).unwrap();
    let command = format!("cat {} >> notes.txt", leaked.display());
    let run = run_shells(
        &env,
        &[&command],
        Duration::from_secs(60),
        &[("REVOLVE_API_KEY", key)],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let written = std::fs::read_to_string(env.cwd.join("notes.txt")).unwrap();
    assert_eq!(written, format!("notes\nREVOLVE_API_KEY={key}\n"));
    let log = std::fs::read_to_string(env.only_session()).unwrap();
    assert!(!log.contains(key), "the key is in the log");
    assert!(
        !run.stdout.contains(key) && !run.stderr.contains(key),
        "{run:?}"
    );
    let edits = edits(&env);
    assert_eq!(edits.len(), 1, "{edits:?}");
    let diff = edits[0]["diff"].as_str().unwrap();
    assert!(diff.contains("+REVOLVE_API_KEY=[key]"), "{diff}");
    let after = edits[0]["after"].as_str().unwrap();
    assert_eq!(after, hash(written.as_bytes()));
    // The content store keeps it sealed: the key is not in it (issue 47
    // item 2), and the plain name is not used.
    let plain = blob(&env, after);
    assert!(!plain.exists(), "{}", plain.display());
    let sealed = std::fs::read(plain.with_extension("sealed")).unwrap();
    assert!(!String::from_utf8_lossy(&sealed).contains(key));
}

/// Whether the process whose pid `file` holds still runs (a zombie does
/// not count); waits up to `within` for it to end.
fn still_runs(file: &Path, within: Duration) -> bool {
    let pid = std::fs::read_to_string(file).unwrap().trim().to_owned();
    assert!(!pid.is_empty(), "no pid in {}", file.display());
    let ended = common::wait_until(within, || {
        let out = Command::new("ps")
            .args(["-o", "stat=", "-p", &pid])
            .output()
            .unwrap();
        let stat = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        stat.is_empty() || stat.starts_with('Z')
    });
    !ended
}

/// Item 8: a command's child that tries to join revolve's own process
/// group cannot (the command runs in a session of its own), so it does
/// not run on after revolve exits.
#[test]
fn a_command_cannot_join_revolves_process_group() {
    let env = TestEnv::new("shell-join");
    crate::common::require("perl");
    let join = "P=$(ps -o pgid= -p $PPID | tr -d ' '); \
                perl -e 'setpgrp(0, $ARGV[0]) or exit 7; sleep 1000' \"$P\" >/dev/null 2>&1 & \
                echo $! > joined.pid; sleep 1";
    let run = run_shells(&env, &[join], Duration::from_secs(60), &[]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let pid = env.cwd.join("joined.pid");
    let runs_on = still_runs(&pid, Duration::from_secs(5));
    if runs_on {
        let pid = std::fs::read_to_string(&pid).unwrap();
        let _ = Command::new("kill").args(["-9", pid.trim()]).status();
    }
    assert!(
        !runs_on,
        "a command's child joined revolve's group and outlived it"
    );
}

/// Item 15: a change inside a submodule is tracked like any other (an
/// `edit` record of the file in it), and a nested repository that is not a
/// submodule is said not to be tracked.
#[test]
fn changes_inside_a_submodule_are_tracked_and_a_nested_repository_is_named() {
    let env = TestEnv::new("track-submodule");
    let source = env.root.join("subsrc");
    if !repo_at(&env, &source, &[("s.txt", "s1\n")]) || !repo(&env, &[("a.txt", "one\n")]) {
        return;
    }
    let added = git_in(
        &env,
        &env.cwd,
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            source.to_str().unwrap(),
            "sub",
        ],
    );
    assert!(added, "git submodule add");
    assert!(git_in(&env, &env.cwd, &["commit", "-q", "-m", "sub"]));
    let run = run_shells(
        &env,
        &[
            "printf 's2\\n' > sub/s.txt",
            "git init -q nested && printf 'x\\n' > nested/x.txt",
        ],
        Duration::from_secs(60),
        &[],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let edits = edits(&env);
    assert_eq!(edits.len(), 1, "{edits:?}");
    assert_eq!(edits[0]["path"], abs(&env, "sub/s.txt"));
    assert_eq!(edits[0]["before"], hash(b"s1\n"));
    assert_eq!(edits[0]["after"], hash(b"s2\n"));
    let results = results(&env);
    assert!(!results[0].contains("not tracked"), "{results:?}");
    assert!(
        results[1].contains("nested: a nested repository, whose changes are not tracked"),
        "{results:?}"
    );
}

/// Clean tracked files a command changes (in a folder, with a space or a
/// letter outside ASCII in the name) or deletes, with one it leaves as it
/// was: each change is logged with `HEAD`'s content as before (read in
/// one batch, not one `git` a file), and a rewind gives every file back.
#[test]
fn clean_files_a_command_changes_or_deletes_are_tracked_and_rewound() {
    let env = TestEnv::new("track-batch");
    let files = [
        ("a/b/deep.txt", "deep one\n"),
        ("with space.txt", "spaced one\n"),
        ("été.txt", "summer one\n"),
        ("gone.txt", "bye\n"),
        ("kept.txt", "the same\n"),
    ];
    if !repo(&env, &files) {
        return;
    }
    let command = "sed -i 's/one/two/' a/b/deep.txt 'with space.txt' été.txt && rm gone.txt";
    let run = run_shells(&env, &[command], Duration::from_secs(60), &[]);
    assert_eq!(run.code, Some(0), "{run:?}");
    let mut changed: Vec<(String, Value, Value)> = edits(&env)
        .into_iter()
        .map(|e| {
            let path = e["path"].as_str().unwrap().to_owned();
            (path, e["before"].clone(), e["after"].clone())
        })
        .collect();
    changed.sort_by(|a, b| a.0.cmp(&b.0));
    let mut expected: Vec<(String, Value, Value)> = files[..4]
        .iter()
        .map(|(rel, was)| {
            let now = std::fs::read(env.cwd.join(rel)).ok();
            let after = now.map_or(Value::Null, |b| json!(hash(&b)));
            (abs(&env, rel), json!(hash(was.as_bytes())), after)
        })
        .collect();
    expected.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(changed, expected);
    assert_eq!(
        std::fs::read_to_string(env.cwd.join("a/b/deep.txt")).unwrap(),
        "deep two\n"
    );

    let rewind = env.run(&["rewind"], "");
    assert_eq!(rewind.code, Some(0), "{rewind:?}");
    for (rel, was) in files {
        let now = std::fs::read_to_string(env.cwd.join(rel)).unwrap();
        assert_eq!(now, was, "{rel}");
    }
}
