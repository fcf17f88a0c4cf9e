//! Names as addresses, end to end: `revolve send` to a busy session, to an
//! idle REPL (in a pseudo-terminal), across a crash of the receiver;
//! `revolve attach` following a session live and sending what is typed; the
//! errors for names that are unknown, not running or of another directory.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use revolve_testkit::{wait_for_requests, FakeReply, FakeServer};
use serde_json::Value;

use crate::common::{records, request_messages, TestEnv};

const WITHIN: Duration = Duration::from_secs(10);

/// The user messages of a request body, as `(role, content)`.
fn users(body: &str) -> Vec<String> {
    request_messages(body)
        .into_iter()
        .filter(|(role, _)| role == "user")
        .map(|(_, content)| content)
        .collect()
}

/// The inbox folder of the session `name` of the env's directory.
fn inbox(env: &TestEnv, name: &str) -> PathBuf {
    let projects = env.state.join("task-agent/projects");
    let project = std::fs::read_dir(&projects)
        .expect("a project folder")
        .next()
        .expect("one project")
        .unwrap()
        .path();
    let cwd_slug = env.cwd.to_string_lossy().replace('/', "-");
    project.join("inbox").join(cwd_slug).join(name)
}

/// The message files waiting in an inbox folder.
fn letters(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.ends_with(".json") && !n.starts_with('.'))
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// The delivered user messages of a log: `(from, seq, content)`.
fn delivered(recs: &[Value]) -> Vec<(String, u64, String)> {
    recs.iter()
        .filter(|r| r["type"] == "message" && r.get("origin").is_some())
        .map(|r| {
            (
                r["origin"]["from"].as_str().unwrap().to_owned(),
                r["origin"]["seq"].as_u64().unwrap(),
                r["content"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Waits until the session `name` is listed as running.
fn wait_running(env: &TestEnv, name: &str) {
    let running = || {
        let dir = env.state.join("task-agent/projects");
        std::fs::read_dir(&dir).is_ok_and(|mut projects| {
            projects.any(|p| {
                let Ok(p) = p else { return false };
                std::fs::read_dir(p.path().join("running")).is_ok_and(|mut locks| {
                    locks.any(|l| {
                        l.ok().is_some_and(|l| {
                            std::fs::read_to_string(l.path())
                                .is_ok_and(|t| t.contains(&format!("\"name\":\"{name}\"")))
                        })
                    })
                })
            })
        })
    };
    assert!(common::wait_until(WITHIN, running), "{name} never ran");
}

#[test]
fn a_message_sent_while_the_session_is_busy_goes_out_with_its_next_turn() {
    let server = FakeServer::start(vec![
        FakeReply::tool_calls("", &[("call_1", "shell", r#"{"command":"sleep 1"}"#)]),
        FakeReply::text("Slept."),
        FakeReply::text("Noted both."),
    ])
    .unwrap();
    let env = TestEnv::new("send-busy");
    let mut bob = env.spawn_open(
        &[
            "--name",
            "bob",
            "--allow-shell",
            "--base-url",
            &server.url(),
        ],
        "nap\n",
    );
    wait_for_requests(&server, 1, WITHIN);
    // The shell tool sleeps: bob is busy.
    let sent = env.run(&["send", "bob", "the", "build", "is", "green"], "");
    assert_eq!(sent.code, Some(0), "{sent:?}");
    assert_eq!(
        sent.stderr,
        "queued for bob (message 1); it takes it before its next turn\n"
    );
    assert!(bob.wait_stdout("Slept.", WITHIN));
    assert_eq!(
        letters(&inbox(&env, "bob")).len(),
        1,
        "waits until the next turn"
    );
    bob.write("anything else?\n");
    assert!(bob.wait_stdout("Noted both.", WITHIN));
    bob.close_stdin();
    let run = bob.finish(WITHIN);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        run.stderr
            .contains("── message from send: the build is green"),
        "{}",
        run.stderr
    );

    // The third request holds the message, marked, before the user's line.
    let bodies: Vec<String> = server.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(
        users(&bodies[2]),
        [
            "nap",
            "[message from send]\nthe build is green",
            "anything else?"
        ]
    );
    let recs = records(&env.only_session());
    assert_eq!(
        delivered(&recs),
        [("send".into(), 1, "the build is green".into())]
    );
    assert!(
        letters(&inbox(&env, "bob")).is_empty(),
        "taken, then removed"
    );
    // The log rebuilds the requests byte for byte, delivered message included.
    let rebuilt = env.ok(&["replay", "--requests"]).stdout;
    assert_eq!(rebuilt.lines().collect::<Vec<_>>(), bodies);
    let check = env.ok(&["replay", "--check"]).stdout;
    assert!(check.contains("0 inconsistencies"), "{check}");
}

#[test]
fn a_crash_between_queueing_and_delivery_loses_nothing_and_repeats_nothing() {
    let script = |env: &TestEnv| {
        let path = env.root.join("replies.jsonl");
        std::fs::write(
            &path,
            "{\"text\":\"one\"}\n{\"text\":\"two\"}\n{\"text\":\"three\"}\n",
        )
        .unwrap();
        path
    };
    let env = TestEnv::new("send-crash");
    let script = script(&env);
    let script = script.to_str().unwrap();
    let args = ["--provider", "scripted", "--script", script];
    let mut bob = env.spawn_open(&[&["--name", "bob"], &args[..]].concat(), "hi\n");
    assert!(bob.wait_stdout("one", WITHIN));
    env.ok(&["send", "bob", "--from", "alice", "remember the port: 5432"]);
    // The receiver dies before its next turn takes the message.
    bob.signal("KILL");
    bob.finish(WITHIN);
    assert_eq!(letters(&inbox(&env, "bob")).len(), 1, "still queued");

    // The restarted session takes it with its next turn, once.
    let run = env.run(&[&["--resume", "bob"], &args[..]].concat(), "go on\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "two\n");
    let recs = records(&env.only_session());
    assert_eq!(
        delivered(&recs),
        [("alice".into(), 1, "remember the port: 5432".into())]
    );
    assert!(letters(&inbox(&env, "bob")).is_empty());

    // A crash after logging but before the file was removed leaves it
    // behind: the next start sees the log holds it and removes it unsent.
    let dir = inbox(&env, "bob");
    std::fs::write(
        dir.join("0000000000000001.json"),
        r#"{"seq":1,"from":"alice","text":"remember the port: 5432","at":"2026-12-02T10:00:00Z"}"#,
    )
    .unwrap();
    let run = env.run(&[&["--resume", "bob"], &args[..]].concat(), "and now?\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "three\n");
    let recs = records(&env.only_session());
    assert_eq!(delivered(&recs).len(), 1, "not delivered twice");
    assert!(letters(&dir).is_empty());
    // Numbers go on from there.
    let mut bob = env.spawn_open(&[&["--resume", "bob"], &args[..]].concat(), "");
    wait_running(&env, "bob");
    let sent = env.ok(&["send", "bob", "next"]);
    assert!(sent.stderr.contains("(message 2)"), "{}", sent.stderr);
    bob.close_stdin();
    bob.finish(WITHIN);
}

#[test]
fn names_that_cannot_be_reached_are_one_clear_line() {
    let env = TestEnv::new("send-errors");
    let git = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&env.cwd)
        .env("GIT_CEILING_DIRECTORIES", &env.root)
        .output()
        .expect("run git init");
    assert!(git.status.success(), "{git:?}");
    let script = env.root.join("replies.jsonl");
    std::fs::write(&script, "{\"text\":\"hello\"}\n").unwrap();
    let script = script.to_str().unwrap();

    let unknown = env.run(&["send", "nobody", "hi"], "");
    assert_eq!(unknown.code, Some(2));
    assert_eq!(
        env.redact(&unknown.stderr),
        "revolve: no session 'nobody' in [TMP]/work (revolve sessions lists them)\n"
    );

    // A session that ran and stopped.
    env.ok(&[
        "--name",
        "done",
        "--provider",
        "scripted",
        "--script",
        script,
        "-p",
        "hi",
    ]);
    for args in [&["send", "done", "hi"][..], &["attach", "done"][..]] {
        let stopped = env.run(args, "");
        assert_eq!(stopped.code, Some(1), "{stopped:?}");
        assert_eq!(
            stopped.stderr,
            "revolve: session 'done' is not running (revolve --resume done continues it)\n"
        );
    }

    // A session running in another directory of the same repository.
    let sub = env.cwd.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    let mut other = env
        .command(&[
            "--name",
            "carol",
            "--provider",
            "scripted",
            "--script",
            script,
        ])
        .current_dir(&sub)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_running(&env, "carol");
    let elsewhere = env.run(&["send", "carol", "hi"], "");
    assert_eq!(elsewhere.code, Some(2), "{elsewhere:?}");
    assert_eq!(
        env.redact(&elsewhere.stderr),
        "revolve: session 'carol' runs in another directory ([TMP]/work/sub); its name is an address there\n"
    );
    drop(other.stdin.take());
    other.wait().unwrap();

    let empty = env.run(&["send", "done"], "  \n");
    assert_eq!(empty.code, Some(1), "not running is checked first");
}

#[test]
fn attach_follows_the_session_live_and_sends_what_is_typed() {
    let server = FakeServer::start(vec![
        FakeReply::text("First answer."),
        FakeReply::text("Second answer."),
    ])
    .unwrap();
    let env = TestEnv::new("attach");
    let mut bob = env.spawn_open(&["--name", "bob", "--base-url", &server.url()], "");
    wait_running(&env, "bob");

    let mut watcher = env.spawn_open(&["attach", "bob"], "");
    assert!(
        watcher.wait_stdout("── session bob", WITHIN),
        "attach shows the conversation so far"
    );
    bob.write("hello there\n");
    // The turn appears at the attached end within a second of being
    // logged: the second starts when the answer is in the log (the state
    // attach follows), not when bob's terminal happened to show it.
    assert!(
        common::wait_until(WITHIN, || env.session_files().iter().any(|log| {
            std::fs::read_to_string(log).is_ok_and(|t| t.contains("First answer."))
        })),
        "bob logged the answer"
    );
    assert!(
        watcher.wait_stdout("> hello there\nFirst answer.\n", Duration::from_secs(1)),
        "the turn did not appear within a second of being logged"
    );

    // A typed line is delivered before bob's next turn.
    watcher.write("from the attached terminal\n");
    let dir = inbox(&env, "bob");
    assert!(common::wait_until(WITHIN, || letters(&dir).len() == 1));
    bob.write("and?\n");
    assert!(bob.wait_stdout("Second answer.", WITHIN));
    assert!(watcher.wait_stdout(
        "» message from attach:\n> from the attached terminal\n> and?\nSecond answer.\n",
        Duration::from_secs(2)
    ));

    // Bob stops: attach says so and ends.
    bob.close_stdin();
    assert_eq!(bob.finish(WITHIN).code, Some(0));
    let run = watcher.finish(WITHIN);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        run.stdout.ends_with("── bob stopped running; detached\n"),
        "{}",
        run.stdout
    );
    let bodies: Vec<String> = server.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(
        users(&bodies[1]),
        [
            "hello there",
            "[message from attach]\nfrom the attached terminal",
            "and?"
        ]
    );
}

#[test]
fn attach_detaches_on_end_of_input_and_the_session_goes_on() {
    let env = TestEnv::new("detach");
    let script = env.root.join("replies.jsonl");
    std::fs::write(&script, "{\"text\":\"hello\"}\n").unwrap();
    let mut bob = env.spawn_open(
        &[
            "--name",
            "bob",
            "--provider",
            "scripted",
            "--script",
            script.to_str().unwrap(),
        ],
        "",
    );
    wait_running(&env, "bob");
    let run = env.run(&["attach", "bob"], "");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run
        .stderr
        .ends_with("detached from bob; it goes on running\n"));
    bob.write("hi\n");
    assert!(bob.wait_stdout("hello", WITHIN));
    bob.close_stdin();
    assert_eq!(bob.finish(WITHIN).code, Some(0));
}

/// The REPL in a pseudo-terminal: idle at its prompt, it
/// shows a message sent to it and answers it at once.
#[test]
fn an_idle_repl_shows_a_message_and_answers_it() {
    let env = TestEnv::new("send-idle");
    let script_file = env.root.join("replies.jsonl");
    std::fs::write(&script_file, "{\"text\":\"Pong from bob.\"}\n").unwrap();
    let args = [
        "--name",
        "bob",
        "--provider",
        "scripted",
        "--script",
        script_file.to_str().unwrap(),
    ];
    let mut term = env.terminal(&args, 100, &[("TERM", "xterm")]);
    term.wait_for("› ", WITHIN);
    let sent = env.run(&["send", "bob", "--from", "alice", "ping?"], "");
    assert_eq!(sent.code, Some(0), "{sent:?}");
    // Answered without anyone typing, then the prompt again.
    term.wait_for("Pong from bob.", WITHIN);
    assert!(
        term.screen().contains("── message from alice: ping?"),
        "{}",
        term.screen()
    );
    term.wait_for_n("› ", 2, WITHIN);
    term.type_keys("\x04");
    let (ok, screen) = term.finish(WITHIN);
    assert!(ok, "{screen}");
    let recs = records(&env.only_session());
    assert_eq!(delivered(&recs), [("alice".into(), 1, "ping?".into())]);
    let answer = recs
        .iter()
        .rfind(|r| r["type"] == "message" && r["role"] == "assistant")
        .unwrap();
    assert_eq!(answer["content"], "Pong from bob.");
    assert!(letters(&inbox(&env, "bob")).is_empty());
}

/// Issue 17, item 7: a REPL answers a message at any idle moment, not only
/// before its first turn. After a typed turn, and again after the turn
/// that answered the first message, a message sent while it waits at its
/// prompt is shown and answered without anyone typing.
#[test]
fn an_idle_repl_answers_messages_after_a_typed_turn() {
    let env = TestEnv::new("send-idle-later");
    let script_file = env.root.join("replies.jsonl");
    std::fs::write(
        &script_file,
        "{\"text\":\"Typed answer.\"}\n{\"text\":\"First pong.\"}\n{\"text\":\"Second pong.\"}\n",
    )
    .unwrap();
    let args = [
        "--name",
        "bob",
        "--provider",
        "scripted",
        "--script",
        script_file.to_str().unwrap(),
    ];
    let mut term = env.terminal(&args, 100, &[("TERM", "xterm")]);
    term.wait_for("› ", WITHIN);
    term.type_keys("hello\r");
    term.wait_for_next("Typed answer.", WITHIN);
    term.wait_for_n("› ", 2, WITHIN);
    for (n, (text, answer)) in [("ping?", "First pong."), ("again?", "Second pong.")]
        .into_iter()
        .enumerate()
    {
        let sent = env.run(&["send", "bob", "--from", "alice", text], "");
        assert_eq!(sent.code, Some(0), "{sent:?}");
        // Answered without anyone typing, then the prompt again.
        term.wait_for(answer, WITHIN);
        term.wait_for_n("› ", 3 + n, WITHIN);
    }
    term.type_keys("\x04");
    let (ok, screen) = term.finish(WITHIN);
    assert!(ok, "{screen}");
    assert!(
        screen.contains("── message from alice: ping?")
            && screen.contains("── message from alice: again?"),
        "{screen}"
    );
    let recs = records(&env.only_session());
    assert_eq!(
        delivered(&recs),
        [
            ("alice".into(), 1, "ping?".into()),
            ("alice".into(), 2, "again?".into())
        ]
    );
    assert!(letters(&inbox(&env, "bob")).is_empty());
}

/// Issue 17, item 8: `--from` parses wherever it is put, before the text or
/// after it, and never becomes part of the message; after `--` everything
/// is text, options included. A word starting with '-' elsewhere is not
/// taken for text: a usage error says to put it after `--`, and nothing is
/// queued.
#[test]
fn send_options_parse_before_and_after_the_text() {
    let env = TestEnv::new("send-from-anywhere");
    let script = env.root.join("replies.jsonl");
    std::fs::write(&script, "{\"text\":\"Read them.\"}\n").unwrap();
    let mut bob = env.spawn_open(
        &[
            "--name",
            "bob",
            "--provider",
            "scripted",
            "--script",
            script.to_str().unwrap(),
        ],
        "",
    );
    wait_running(&env, "bob");
    for args in [
        &["send", "bob", "--from", "alice", "before", "the", "text"][..],
        &["send", "bob", "after", "the", "text", "--from", "carol"][..],
        &["send", "bob", "--from=dave", "with", "--", "-v", "in", "it"][..],
        &["send", "bob", "--", "--from", "erin", "is", "text"][..],
    ] {
        let sent = env.run(args, "");
        assert_eq!(sent.code, Some(0), "{args:?}: {sent:?}");
    }
    let refused = env.run(&["send", "bob", "drop", "the", "-v", "flag"], "");
    assert_eq!(refused.code, Some(2), "{refused:?}");
    assert!(
        refused.stderr.contains("unexpected argument '-v' found")
            && refused.stderr.contains("'-- -v'"),
        "{refused:?}"
    );
    assert_eq!(letters(&inbox(&env, "bob")).len(), 4, "nothing more queued");
    bob.write("what came?\n");
    assert!(bob.wait_stdout("Read them.", WITHIN));
    bob.close_stdin();
    assert_eq!(bob.finish(WITHIN).code, Some(0));
    let recs = records(&env.only_session());
    assert_eq!(
        delivered(&recs),
        [
            ("alice".into(), 1, "before the text".into()),
            ("carol".into(), 2, "after the text".into()),
            ("dave".into(), 3, "with -v in it".into()),
            ("send".into(), 4, "--from erin is text".into()),
        ]
    );
}
