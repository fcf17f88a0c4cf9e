//! What the adversarial audit of issue 21 broke, end to end against the
//! real binary: one test per item, its number first in the test's doc.
//! Each failed (or hung) before its fix.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use revolve_testkit::{FakeReply, FakeServer};
use serde_json::{json, Value};

use crate::common::{messages, records, tool_results, Run, TestEnv};

/// Item 19: `revolve compact NAME` of a session that does not exist says
/// so, even without the API key the compaction would need.
#[test]
fn compact_of_an_unknown_session_says_no_session_before_asking_for_a_key() {
    let env = TestEnv::new("compact-unknown");
    let run = env.run(&["compact", "nonexist"], "");
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(
        run.stderr.starts_with("revolve: no session 'nonexist' in "),
        "{run:?}"
    );
    assert!(!run.stderr.contains("API key"), "{run:?}");
}

/// A script of replies for `--provider scripted`, one JSON value a line.
fn script(env: &TestEnv, replies: &[Value]) -> PathBuf {
    let path = env.root.join("script.jsonl");
    let text: String = replies.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(&path, text).unwrap();
    path
}

/// The flags of a scripted run answered by `replies`.
fn scripted(env: &TestEnv, replies: &[Value]) -> Vec<String> {
    let path = script(env, replies);
    ["--provider", "scripted", "--script", path.to_str().unwrap()]
        .map(String::from)
        .to_vec()
}

/// `args` as the `&str`s a run takes.
fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// A session named `name` with one turn; its log.
fn one_turn(env: &TestEnv, name: &str) -> PathBuf {
    let args = scripted(env, &[json!({"text": "Hi."}), json!({"text": "Again."})]);
    let run = env.run(&[&strs(&args)[..], &["-n", name]].concat(), "hello\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    env.session_files()
        .into_iter()
        .find(|f| std::fs::read_to_string(f).unwrap().contains(name))
        .expect("the session's log")
}

/// Runs revolve, waiting at most `within` (a hang fails the test).
fn run_within(env: &TestEnv, args: &[&str], stdin: &str, within: Duration) -> Run {
    env.spawn(args, stdin).finish(within)
}

/// Makes a FIFO at `path` (with mkfifo(1)).
fn mkfifo(path: &Path) {
    let made = Command::new("mkfifo").arg(path).status().expect("mkfifo");
    assert!(made.success(), "mkfifo {}", path.display());
}

/// Item 3: a password in `--base-url` reaches neither stderr, nor the
/// log's `failed` record, nor `config show`.
#[test]
fn a_password_in_the_base_url_is_never_shown_or_logged() {
    let env = TestEnv::new("url-password");
    let server = FakeServer::start(vec![FakeReply::Status {
        code: 500,
        body: "boom".into(),
        retry_after: None,
    }])
    .unwrap();
    let url = server.url().replace("http://", "http://alice:hunter2@");
    let run = env.run(&["--base-url", &url, "-p", "hi"], "");
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(!run.stderr.contains("hunter2"), "{run:?}");
    assert!(
        run.stderr.contains("http://alice:***@127.0.0.1:"),
        "{run:?}"
    );
    let log = std::fs::read_to_string(env.only_session()).unwrap();
    assert!(log.contains("\"type\":\"failed\""), "{log}");
    assert!(!log.contains("hunter2"), "{log}");
    for args in [
        &["config", "show", "--base-url", &url][..],
        &["config", "show", "--json", "--base-url", &url][..],
    ] {
        let shown = env.ok(args);
        assert!(!shown.stdout.contains("hunter2"), "{shown:?}");
        assert!(shown.stdout.contains("alice:***@"), "{shown:?}");
    }
}

/// Item 7: stray bytes before the header hide nothing: the session is
/// listed, found by name, replayed and resumed, and the bytes are reported.
#[test]
fn stray_bytes_before_the_header_are_skipped_and_reported() {
    let env = TestEnv::new("stray-bytes");
    let log = one_turn(&env, "db");
    // A listing first, so the cache knows the file as it was.
    assert!(env.ok(&["sessions"]).stdout.contains("db"));
    let whole = std::fs::read(&log).unwrap();
    std::fs::write(&log, [b"\xff\x00".as_slice(), &whole].concat()).unwrap();

    let listed = env.ok(&["sessions"]);
    assert!(listed.stdout.contains("db"), "{listed:?}");
    let replayed = env.ok(&["replay", "db"]);
    assert!(replayed.stdout.contains("Hi."), "{replayed:?}");
    let check = env.run(&["replay", "--check", "db"], "");
    assert!(
        check
            .stdout
            .contains("line 1: 2 stray byte(s) before the header"),
        "{check:?}"
    );
    let args = scripted(&env, &[json!({"text": "Hi."}), json!({"text": "Again."})]);
    let resumed = env.run(&[&strs(&args)[..], &["-r", "db"]].concat(), "more\n");
    assert_eq!(resumed.code, Some(0), "{resumed:?}");
    assert!(
        resumed.stderr.contains("(skipped 1 unreadable line(s)"),
        "{resumed:?}"
    );
    assert_eq!(resumed.stdout, "Again.\n");
}

/// Item 8: a log from a newer version is refused for writing, with one
/// line and not a byte appended; replaying it still works.
#[test]
fn a_log_of_a_newer_version_is_read_but_never_written() {
    let env = TestEnv::new("newer-version");
    let log = one_turn(&env, "db");
    let text = std::fs::read_to_string(&log).unwrap();
    let current = format!("\"version\":{},", revolve_core::record::FORMAT_VERSION);
    let newer = text.replacen(&current, "\"version\":17,", 1);
    assert_ne!(newer, text);
    std::fs::write(&log, &newer).unwrap();

    let args = scripted(&env, &[json!({"text": "Hi."}), json!({"text": "Again."})]);
    for how in [&["-r", "db"][..], &["--continue"][..]] {
        let run = env.run(&[&strs(&args)[..], how].concat(), "more\n");
        assert_eq!(run.code, Some(1), "{how:?}: {run:?}");
        assert_eq!(
            run.stderr,
            format!(
                "revolve: {}: written by a newer revolve (log format version 17; this build \
                 writes version {}): not appending to it (replay still reads it)\n",
                log.display(),
                revolve_core::record::FORMAT_VERSION
            ),
            "{how:?}"
        );
        assert_eq!(std::fs::read_to_string(&log).unwrap(), newer, "{how:?}");
    }
    let replayed = env.ok(&["replay", "db"]);
    assert!(replayed.stdout.contains("Hi."), "{replayed:?}");
}

/// Item 9: a spill that does not fit on the disk leaves no partial file
/// under the name the model would be given; the session goes on.
#[test]
fn a_spill_on_a_full_disk_leaves_no_partial_file() {
    let env = TestEnv::new("spill-full");
    std::fs::write(env.cwd.join("big.txt"), "spill me\n".repeat(40_000)).unwrap();
    let args = scripted(
        &env,
        &[
            json!({"text": "Reading.", "tool_calls": [{"name": "read_file", "arguments": {"path": "big.txt"}}]}),
            json!({"text": "Read."}),
        ],
    );
    let args = [
        &strs(&args)[..],
        &["--spill-result-chars", "1000", "-p", "read"],
    ]
    .concat();
    // A 64-block file size limit (32 KiB at least): the log fits, the
    // 360 KB spill does not. SIGXFSZ ignored, so the write fails instead.
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg("trap '' XFSZ; ulimit -f 64; exec \"$0\" \"$@\"")
        .arg(common::BIN)
        .args(&args)
        .current_dir(&env.cwd)
        .env_clear();
    for (key, value) in env.command(&[]).get_envs() {
        if let Some(value) = value {
            cmd.env(key, value);
        }
    }
    let out = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
        .wait_with_output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot write the spilled tool output to"),
        "{stderr}"
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Reading.\nRead.\n");
    let spills = env.state.join("task-agent/projects");
    let mut left = Vec::new();
    let mut dirs = vec![spills];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.components().any(|c| c.as_os_str() == "spills") {
                left.push(path);
            }
        }
    }
    assert_eq!(left, Vec::<PathBuf>::new(), "files left in spills/");
}

/// Item 10: `grep` given a FIFO or a device answers at once with an error
/// result, instead of hanging (or, on `/dev/zero`, growing without end).
#[test]
fn grep_refuses_a_fifo_and_a_device() {
    let env = TestEnv::new("grep-fifo");
    mkfifo(&env.cwd.join("pipe"));
    let args = scripted(
        &env,
        &[
            json!({"text": "Looking.", "tool_calls": [
                {"name": "request_file_grant", "arguments": {"path": "/dev/zero"}},
                {"name": "grep", "arguments": {"pattern": "x", "path": "pipe"}},
                {"name": "grep", "arguments": {"pattern": "x", "path": "/dev/zero"}},
                {"name": "grep", "arguments": {"pattern": "x", "path": "."}},
            ]}),
            json!({"text": "Done."}),
        ],
    );
    let args = [&strs(&args)[..], &["--grant", "/dev/zero", "-p", "look"]].concat();
    let run = run_within(&env, &args, "", Duration::from_secs(30));
    assert_eq!(run.code, Some(0), "{run:?}");
    let results: Vec<String> = tool_results(&records(&env.only_session()))
        .into_iter()
        .skip(1)
        .map(|(_, output)| output)
        .collect();
    assert_eq!(
        results,
        [
            "error: grep: pipe is not a regular file or a directory",
            "error: grep: /dev/zero is not a regular file or a directory",
            "no matches for x",
        ]
    );
}

/// Item 11: a FIFO named `*.jsonl` in the sessions folder is passed over:
/// listing, naming, resuming and replaying all finish.
#[test]
fn a_fifo_in_the_sessions_folder_blocks_nothing() {
    let env = TestEnv::new("sessions-fifo");
    let log = one_turn(&env, "db");
    mkfifo(&log.with_file_name("20261202-000000-fifo00.jsonl"));
    let args = scripted(&env, &[json!({"text": "Hi."}), json!({"text": "Again."})]);
    let args = strs(&args);
    let within = Duration::from_secs(20);
    let runs: [(&[&str], &str); 6] = [
        (&["sessions", "--all"], ""),
        (&[&args[..], &["-n", "api"]].concat(), "hi\n"),
        (&[&args[..], &["--continue"]].concat(), "hi\n"),
        (&[&args[..], &["-r", "db"]].concat(), "hi\n"),
        (&["replay"], ""),
        (&["replay", "db"], ""),
    ];
    for (args, stdin) in runs {
        let run = run_within(&env, args, stdin, within);
        assert_eq!(run.code, Some(0), "{args:?}: {run:?}");
    }
}

/// Item 17: files the listing cannot show are counted on stderr, and
/// `replay --check` fails an empty file or one without a header.
#[test]
fn unreadable_and_empty_session_files_are_reported() {
    let env = TestEnv::new("unreadable");
    let log = one_turn(&env, "db");
    let dir = log.parent().unwrap();
    std::fs::create_dir(dir.join("folder.jsonl")).unwrap();
    mkfifo(&dir.join("pipe.jsonl"));
    std::fs::write(dir.join("empty.jsonl"), "").unwrap();
    let listed = run_within(&env, &["sessions"], "", Duration::from_secs(20));
    assert_eq!(listed.code, Some(0), "{listed:?}");
    assert!(listed.stdout.contains("db"), "{listed:?}");
    let lines = listed.stderr_lines();
    assert_eq!(lines.len(), 2, "{listed:?}");
    let prefix = format!(
        "revolve: 2 session files in {} cannot be read",
        dir.display()
    );
    assert!(lines[0].starts_with(&prefix), "{listed:?}");
    assert!(lines[0].contains("not a regular file"), "{listed:?}");
    assert_eq!(
        lines[1],
        format!(
            "revolve: 1 file in {} holds no session header and is not listed (the first: empty.jsonl)",
            dir.display()
        )
    );

    let empty = dir.join("empty.jsonl");
    let check = env.run(&["replay", "--check", empty.to_str().unwrap()], "");
    assert_eq!(check.code, Some(1), "{check:?}");
    assert_eq!(
        check.stderr,
        format!("revolve: {} is empty: not a session log\n", empty.display())
    );
    let headless = dir.join("headless.jsonl");
    let body: String = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&headless, body).unwrap();
    let check = env.run(&["replay", "--check", headless.to_str().unwrap()], "");
    assert_eq!(check.code, Some(1), "{check:?}");
    assert!(
        check.stderr.contains("holds no session header"),
        "{check:?}"
    );
}

/// Item 14: stdin that is not UTF-8 is decoded lossily, said once on
/// stderr, and every line is still a turn (and `-p` still attaches it).
#[test]
fn stdin_that_is_not_utf8_is_read_lossily_and_said_once() {
    let env = TestEnv::new("latin1-stdin");
    let args = scripted(&env, &[json!({"text": "One."}), json!({"text": "Two."})]);
    let run = env.run_bytes(&strs(&args), b"caf\xe9\nna\xefve\n", &[]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "One.\nTwo.\n");
    let told = "revolve: stdin is not valid UTF-8: the bytes that are not are read as U+FFFD";
    assert_eq!(run.stderr.matches(told).count(), 1, "{run:?}");
    let users: Vec<String> = messages(&records(&env.only_session()))
        .into_iter()
        .filter(|(role, _)| role == "user")
        .map(|(_, text)| text)
        .collect();
    assert_eq!(users, ["caf\u{FFFD}", "na\u{FFFD}ve"]);

    let env = TestEnv::new("latin1-attached");
    let args = scripted(&env, &[json!({"text": "Explained."})]);
    let args = [&strs(&args)[..], &["-p", "explain"]].concat();
    let run = env.run_bytes(&args, b"error: \xff\n", &[]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Explained.\n");
    assert_eq!(run.stderr.matches(told).count(), 1, "{run:?}");
}

/// Item 15: a subcommand's name after global flags is the subcommand, and
/// the flags are its own; a prompt is still a prompt, and after `--` even
/// a subcommand's name is one.
#[test]
fn a_subcommand_after_global_flags_is_the_subcommand() {
    let env = TestEnv::new("flags-before-sub");
    let server = FakeServer::start(vec![FakeReply::Models(vec!["m-1".into()])]).unwrap();
    let url = server.url();
    let run = env.run(&["--provider", "ollama", "--base-url", &url, "models"], "");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "m-1\n");
    assert_eq!(server.requests()[0].path, "/v1/models");
    assert!(env.session_files().is_empty(), "no session was started");

    let shown = env.ok(&["--model", "m-2", "config", "show", "--json"]);
    let doc: Value = serde_json::from_str(&shown.stdout).unwrap();
    assert_eq!(doc["settings"]["model"]["value"], "m-2", "{doc}");
    assert_eq!(doc["settings"]["model"]["source"], "flag", "{doc}");

    let wrong = env.run(&["--bare", "sessions"], "");
    assert_eq!(wrong.code, Some(2), "{wrong:?}");
    assert!(wrong.stderr.contains("'--bare'"), "{wrong:?}");

    let args = scripted(&env, &[json!({"text": "One."}), json!({"text": "Two."})]);
    let prompt = env.run(&[&strs(&args)[..], &["-p", "models please"]].concat(), "");
    assert_eq!(prompt.stdout, "One.\n", "{prompt:?}");
    let args = scripted(&env, &[json!({"text": "Three."})]);
    let dashed = env.run(&[&strs(&args)[..], &["-p", "--", "models"]].concat(), "");
    assert_eq!(dashed.stdout, "Three.\n", "{dashed:?}");
    let users: Vec<String> = env
        .session_files()
        .iter()
        .flat_map(|f| messages(&records(f)))
        .filter(|(role, _)| role == "user")
        .map(|(_, text)| text)
        .collect();
    assert!(users.contains(&"models".to_owned()), "{users:?}");
}

/// Item 18: `--grant` resolves a relative path against the working
/// directory, and a path that does not exist is a usage error naming it,
/// before any session starts.
#[test]
fn a_grant_is_resolved_against_the_working_directory_and_must_exist() {
    let env = TestEnv::new("grant-relative");
    let outside = env.root.join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("notes.txt"), "granted text\n").unwrap();
    let notes = outside.join("notes.txt");
    let args = scripted(
        &env,
        &[
            json!({"text": "Reading.", "tool_calls": [
                {"name": "request_file_grant", "arguments": {"path": notes}},
                {"name": "read_file", "arguments": {"path": notes}},
            ]}),
            json!({"text": "Read."}),
        ],
    );
    let run = env.run(
        &[&strs(&args)[..], &["--grant", "../outside", "-p", "read"]].concat(),
        "",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let results = tool_results(&records(&env.only_session()));
    assert!(results[1].1.contains("granted text"), "{results:?}");

    let env = TestEnv::new("grant-missing");
    let args = scripted(&env, &[json!({"text": "Hi."})]);
    let run = env.run(
        &[&strs(&args)[..], &["--grant", "nowhere", "-p", "hi"]].concat(),
        "",
    );
    assert_eq!(run.code, Some(2), "{run:?}");
    assert_eq!(
        run.stderr,
        format!(
            "revolve: --grant nowhere: cannot grant {}: No such file or directory (os error 2)\n",
            env.cwd.join("nowhere").display()
        )
    );
    assert!(env.session_files().is_empty(), "no session was started");
}

/// Runs revolve under `sh -c PREFIX; exec revolve ARGS` (a `ulimit`, say),
/// in `env`'s environment, feeding `stdin`.
fn run_under(env: &TestEnv, prefix: &str, args: &[&str], stdin: &str) -> Run {
    use std::io::Write;
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!("{prefix}; exec \"$0\" \"$@\""))
        .arg(common::BIN)
        .args(args)
        .current_dir(&env.cwd)
        .env_clear();
    for (key, value) in env.command(&[]).get_envs() {
        if let Some(value) = value {
            cmd.env(key, value);
        }
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).ok();
    let out = child.wait_with_output().unwrap();
    Run {
        code: out.status.code(),
        signal: std::os::unix::process::ExitStatusExt::signal(&out.status),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Item 16: `-r` and `--continue` on a full state directory (and on one
/// whose folder of running sessions cannot be made) name the operation and
/// the path in their one error line.
#[test]
fn resuming_on_a_full_state_dir_names_the_operation_and_the_path() {
    let env = TestEnv::new("resume-full");
    let log = one_turn(&env, "db");
    let id = log.file_stem().unwrap().to_str().unwrap().to_owned();
    let project = log.parent().unwrap().parent().unwrap().to_path_buf();
    let args = scripted(&env, &[json!({"text": "Again."})]);
    for how in [&["-r", "db"][..], &["--continue"][..]] {
        let args = [&strs(&args)[..], how].concat();
        let run = run_under(&env, "trap '' XFSZ; ulimit -f 0", &args, "more\n");
        assert_eq!(run.code, Some(1), "{how:?}: {run:?}");
        assert_eq!(
            run.stderr,
            format!(
                "revolve: cannot write {}: File too large (os error 27)\n",
                project.join("running").join(format!("{id}.lock")).display()
            ),
            "{how:?}"
        );
    }
    let running = project.join("running");
    std::fs::remove_dir_all(&running).unwrap();
    std::fs::write(&running, "").unwrap();
    for how in [&["-r", "db"][..], &["--continue"][..]] {
        let run = env.run(&[&strs(&args)[..], how].concat(), "more\n");
        assert_eq!(run.code, Some(1), "{how:?}: {run:?}");
        assert_eq!(
            run.stderr,
            format!(
                "revolve: cannot create {}: File exists (os error 17)\n",
                running.display()
            ),
            "{how:?}"
        );
    }
}

/// Item 5: a stream-json `tool_result` event is shown only once its record
/// is in the log: a result the log cannot take (here a file size limit
/// stops it) is never shown, while the answer before it was.
#[test]
fn a_tool_result_event_is_shown_only_after_it_is_logged() {
    let env = TestEnv::new("result-log-first");
    std::fs::write(
        env.cwd.join("big.txt"),
        "a line of the file\n".repeat(20_000),
    )
    .unwrap();
    let args = scripted(
        &env,
        &[
            json!({"text": "Reading.", "tool_calls": [{"name": "read_file", "arguments": {"path": "big.txt"}}]}),
            json!({"text": "Read."}),
        ],
    );
    let args = [
        &strs(&args)[..],
        &[
            "--spill-result-chars",
            "10000000",
            "--output-format",
            "stream-json",
            "-p",
            "read",
        ],
    ]
    .concat();
    let run = run_under(&env, "trap '' XFSZ; ulimit -f 64", &args, "");
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(
        run.stderr.contains("cannot write the session log"),
        "{run:?}"
    );
    let types: Vec<String> = run
        .stdout
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    // `init` first (issue 32).
    assert_eq!(
        types,
        ["init", "text", "tool_call", "error"],
        "{}",
        run.stderr
    );

    // Logged, it is shown, in its place.
    let env = TestEnv::new("result-logged");
    std::fs::write(env.cwd.join("small.txt"), "small\n").unwrap();
    let args = scripted(
        &env,
        &[
            json!({"text": "Reading.", "tool_calls": [{"name": "read_file", "arguments": {"path": "small.txt"}}]}),
            json!({"text": "Read."}),
        ],
    );
    let args = [
        &strs(&args)[..],
        &["--output-format", "stream-json", "-p", "read"],
    ]
    .concat();
    let run = env.run(&args, "");
    assert_eq!(run.code, Some(0), "{run:?}");
    let types: Vec<String> = run
        .stdout
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        types,
        [
            "init",
            "text",
            "tool_call",
            "tool_result",
            "text",
            "totals",
            "done"
        ],
        "{run:?}"
    );
}

/// Item 12: a server that sends only keepalive comments and empty deltas
/// after some text trips `--stall-timeout`: progress is content, not bytes.
#[test]
fn keepalives_alone_trip_the_stall_timeout() {
    let env = TestEnv::new("keepalive-stall");
    let server = FakeServer::start(vec![FakeReply::Keepalive {
        chunks: vec!["Thinking".into()],
        every: Duration::from_millis(50),
    }])
    .unwrap();
    let url = server.url();
    let args = ["--base-url", &url, "--stall-timeout", "0.5", "-p", "hi"];
    let run = run_within(&env, &args, "", Duration::from_secs(20));
    assert_eq!(run.code, Some(1), "{run:?}");
    assert_eq!(run.stdout, "Thinking\n", "{run:?}");
    assert!(
        run.stderr.contains(&format!(
            "stream from {url}/chat/completions stalled: no content received for 500 ms"
        )),
        "{run:?}"
    );
}

/// Item 1: a granted folder, and then the working tree itself, swapped for
/// a symlink to `/` (here by the session's own shell command) open nothing
/// outside: the grant no longer counts, and the tree is refused.
#[test]
fn a_grant_or_the_tree_swapped_for_a_symlink_opens_nothing() {
    let env = TestEnv::new("symlink-swap");
    let outside = env.root.join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("notes.txt"), "granted\n").unwrap();
    let granted = outside.to_str().unwrap();
    let passwd = format!("{granted}/etc/passwd");
    let swap_grant = format!("rm -r {granted} && ln -s / {granted}");
    let work = env.cwd.to_str().unwrap();
    let swap_tree = format!("mv {work} {work}.old && ln -s / {work}");
    // Even when the test fails, no symlink to `/` is left behind.
    let _unlink = Unlink(vec![env.cwd.clone(), outside.clone()]);
    let args = scripted(
        &env,
        &[
            json!({"text": "Looking.", "tool_calls": [
                {"name": "request_file_grant", "arguments": {"path": granted}},
                {"name": "read_file", "arguments": {"path": format!("{granted}/notes.txt")}},
                {"name": "shell", "arguments": {"command": swap_grant}},
                {"name": "read_file", "arguments": {"path": passwd}},
                {"name": "shell", "arguments": {"command": swap_tree}},
                {"name": "read_file", "arguments": {"path": "etc/passwd"}},
                {"name": "list_dir", "arguments": {"path": "."}},
                {"name": "shell", "arguments": {"command": "cat etc/passwd"}},
            ]}),
            json!({"text": "Done."}),
        ],
    );
    let args = [
        &strs(&args)[..],
        // The swaps stand for somebody else, outside the sandbox.
        &[
            "--grant",
            granted,
            "--allow-shell",
            "--sandbox",
            "off",
            "-p",
            "look",
        ],
    ]
    .concat();
    let run = env.run(&args, "");
    // The tree is gone from under the session: its log is not (it lives in
    // the state directory).
    assert_eq!(run.code, Some(0), "{run:?}");
    let log = std::fs::read_dir(env.state.join("task-agent/projects"))
        .unwrap()
        .flatten()
        .map(|p| p.path().join("sessions"))
        .flat_map(|d| std::fs::read_dir(d).unwrap().flatten())
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .unwrap();
    let results: Vec<String> = tool_results(&records(&log))
        .into_iter()
        .map(|(_, output)| output)
        .collect();
    assert_eq!(results[1], "granted\n", "{results:?}");
    assert_eq!(results[2], "exit status: 0", "{results:?}");
    assert!(
        results[3].starts_with(&format!("error: {passwd} is outside the working tree")),
        "{results:?}"
    );
    assert_eq!(results[4], "exit status: 0", "{results:?}");
    let refused = format!(
        "error: the working tree {work} is no longer the directory this session started in"
    );
    for result in &results[5..] {
        assert!(result.starts_with(&refused), "{results:?}");
    }
    assert!(!results.concat().contains("root:"), "{results:?}");
}

/// Removes these paths when dropped if they are symlinks.
struct Unlink(Vec<PathBuf>);

impl Drop for Unlink {
    fn drop(&mut self) {
        for path in &self.0 {
            if path
                .symlink_metadata()
                .is_ok_and(|m| m.file_type().is_symlink())
            {
                std::fs::remove_file(path).ok();
            }
        }
    }
}

/// Item 4: the sessions folder deleted while a session runs: the next turn
/// writes the log again, whole, from the open file, says so once, and the
/// session goes on in it; nothing is answered into nothing.
#[test]
fn a_log_deleted_while_the_session_runs_is_written_again() {
    let env = TestEnv::new("log-deleted");
    let args = scripted(
        &env,
        &[
            json!({"text": "One."}),
            json!({"text": "Two."}),
            json!({"text": "Three."}),
        ],
    );
    let mut running = env.spawn_open(&strs(&args), "hello\n");
    let within = Duration::from_secs(20);
    assert!(running.wait_stdout("One.", within));
    let log = env.only_session();
    let before = std::fs::read_to_string(&log).unwrap();
    std::fs::remove_dir_all(log.parent().unwrap()).unwrap();
    running.type_line("again");
    assert!(running.wait_stdout("Two.", within));
    running.type_line("more");
    assert!(running.wait_stdout("Three.", within));
    running.close_stdin();
    let run = running.finish(within);
    assert_eq!(run.code, Some(0), "{run:?}");
    let told = format!(
        "revolve: the session log {} was deleted while the session ran; written again",
        log.display()
    );
    assert_eq!(run.stderr.matches(&told).count(), 1, "{run:?}");
    let after = std::fs::read_to_string(&log).expect("the log is back");
    assert!(after.starts_with(&before), "{after}");
    let said: Vec<String> = messages(&records(&log))
        .into_iter()
        .map(|(_, text)| text)
        .collect();
    assert_eq!(said, ["hello", "One.", "again", "Two.", "more", "Three."]);
    let replayed = env.ok(&["replay", log.to_str().unwrap()]);
    assert!(replayed.stdout.contains("Three."), "{replayed:?}");
}

/// Item 2: whatever the umask, every folder revolve makes under the state
/// and config roots is 0700 and every file 0600: logs, spills, the listing
/// cache, locks, memory (seeded and remembered), snapshots, the goal.
#[test]
fn the_state_and_the_config_memory_are_private() {
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new("private-modes");
    std::fs::write(env.cwd.join("big.txt"), "spill me\n".repeat(1000)).unwrap();
    let args = scripted(
        &env,
        &[
            json!({"text": "Working.", "tool_calls": [
                {"name": "read_file", "arguments": {"path": "big.txt"}},
                {"name": "remember", "arguments": {"label": "facts", "content": "a fact"}},
            ]}),
            json!({"text": "Done."}),
        ],
    );
    let args = [
        &strs(&args)[..],
        &["--spill-result-chars", "1000", "-n", "db", "-p", "work"],
    ]
    .concat();
    for args in [&args[..], &["sessions"], &["goal", "ship", "it"]] {
        let run = run_under(&env, "umask 022", args, "");
        assert_eq!(run.code, Some(0), "{args:?}: {run:?}");
    }
    let roots = [
        env.state.join("task-agent"),
        env.home.join(".config/task-agent"),
    ];
    let (mut dirs, mut files, mut loose) = (0, Vec::new(), Vec::new());
    let mut todo = roots.to_vec();
    while let Some(path) = todo.pop() {
        let meta = std::fs::symlink_metadata(&path).unwrap();
        let mode = meta.permissions().mode() & 0o777;
        if meta.is_dir() {
            dirs += 1;
            if mode != 0o700 {
                loose.push(format!("{mode:o} {}", path.display()));
            }
            todo.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        } else {
            files.push(path.file_name().unwrap().to_string_lossy().into_owned());
            if mode != 0o600 {
                loose.push(format!("{mode:o} {}", path.display()));
            }
        }
    }
    assert_eq!(loose, Vec::<String>::new());
    assert!(dirs > 5, "{dirs} folders");
    for made in ["facts.md", "goal.json", ".index", "meta.cfg", ".naming"] {
        assert!(files.iter().any(|f| f == made), "{made} in {files:?}");
    }
    assert!(files.iter().any(|f| f.ends_with(".jsonl")), "{files:?}");
    assert!(
        files.iter().any(|f| f.ends_with("-call_1_1.txt")),
        "a spill: {files:?}"
    );
}

/// Whether the process whose pid `file` holds still runs (a zombie does
/// not count), asked of ps(1); waits up to `within` for it to end.
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

/// Whether `file` holds a whole line (the shell's `echo` into it is done,
/// not just begun by the redirection that creates it).
fn written(file: &Path) -> bool {
    std::fs::read_to_string(file).is_ok_and(|t| t.ends_with('\n'))
}

/// Item 13: a shell command's background child dies with the command, and
/// a SIGKILL of revolve in the middle of a command leaves neither the
/// command nor its background child running.
#[test]
fn nothing_a_shell_command_starts_outlives_it_or_revolve() {
    let env = TestEnv::new("shell-group");
    let args = scripted(
        &env,
        &[
            json!({"text": "Starting.", "tool_calls": [
                {"name": "shell", "arguments": {"command": "sleep 1000 & echo $! > first.pid"}},
                {"name": "shell", "arguments": {"command": "sleep 1000 & echo $! > bg.pid; echo $$ > sh.pid; wait"}},
            ]}),
            json!({"text": "Never."}),
        ],
    );
    let args = [&strs(&args)[..], &["--allow-shell", "-p", "go"]].concat();
    let running = env.spawn(&args, "");
    let (bg, sh) = (env.cwd.join("bg.pid"), env.cwd.join("sh.pid"));
    assert!(
        common::wait_until(Duration::from_secs(20), || written(&bg) && written(&sh)),
        "the second command started"
    );
    let first = env.cwd.join("first.pid");
    assert!(
        !still_runs(&first, Duration::from_secs(2)),
        "outlived its command"
    );
    running.signal("KILL");
    let run = running.finish(Duration::from_secs(20));
    assert_eq!(run.signal, Some(9), "{run:?}");
    let within = Duration::from_secs(5);
    assert!(!still_runs(&sh, within), "the command outlived revolve");
    assert!(
        !still_runs(&bg, within),
        "its background child outlived revolve"
    );
}

/// Item 6: one damaged tool-result line in mid-file. The resume says so,
/// and the call whose result was lost is answered "lost" in every later
/// request, so a real API never sees a call without its result; `replay
/// --check` names the repair.
#[test]
fn a_lost_tool_result_is_answered_as_lost_on_resume() {
    let env = TestEnv::new("lost-result");
    std::fs::write(env.cwd.join("a.txt"), "alpha\n").unwrap();
    std::fs::write(env.cwd.join("b.txt"), "beta\n").unwrap();
    let server = revolve_testkit::FakeServer::start(vec![
        revolve_testkit::FakeReply::tool_calls(
            "",
            &[
                ("c1", "read_file", r#"{"path":"a.txt"}"#),
                ("c2", "read_file", r#"{"path":"b.txt"}"#),
            ],
        ),
        revolve_testkit::FakeReply::text("Both read."),
    ])
    .unwrap();
    let url = server.url();
    let run = env.run(&["--base-url", &url, "-p", "read both"], "");
    assert_eq!(run.code, Some(0), "{run:?}");
    // Damage c1's result line in the middle of the file.
    let path = env.only_session();
    let text = std::fs::read_to_string(&path).unwrap();
    let damaged: String = text
        .lines()
        .map(|l| {
            if l.contains(r#""tool_call_id":"c1""#) {
                format!("{}\n", &l[..l.len() / 2].replace('"', "#"))
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    std::fs::write(&path, damaged).unwrap();

    let server =
        revolve_testkit::FakeServer::start(vec![revolve_testkit::FakeReply::text("Going on.")])
            .unwrap();
    let url = server.url();
    let run = env.run(&["--base-url", &url, "--continue", "-p", "and now"], "");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        run.stderr.contains("1 tool call(s) of") && run.stderr.contains("answered as lost"),
        "{run:?}"
    );
    let body: serde_json::Value = serde_json::from_str(&server.requests()[0].body).unwrap();
    let results: Vec<(&str, &str)> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap(),
                m["content"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(
        results
            .iter()
            .any(|(id, c)| *id == "c1" && c.contains("was lost")),
        "{results:?}"
    );
    assert!(
        results
            .iter()
            .any(|(id, c)| *id == "c2" && c.contains("beta")),
        "{results:?}"
    );
    let check = env.run(&["replay", "--check"], "");
    assert!(check.stdout.contains("answered as lost"), "{check:?}");
}
