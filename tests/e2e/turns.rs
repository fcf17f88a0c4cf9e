//! Turns against a fake model server: piped turns, resuming, the requests
//! rebuilt from the log, failures and Ctrl-C.

use crate::common;
use crate::common::fake::assert_log_whole;

use std::net::TcpListener;
use std::time::Duration;

use revolve_testkit::{wait_for_requests, FakeReply, FakeServer};
use serde_json::Value;

use crate::common::{kinds, messages, pairs, records, request_messages, TestEnv};

/// A streamed answer of `text` (one chunk per word) with this usage.
fn reply(text: &str, prompt: u64, completion: u64) -> FakeReply {
    match FakeReply::text(text) {
        FakeReply::Stream { chunks, .. } => FakeReply::Stream {
            chunks,
            usage: Some((prompt, completion)),
        },
        other => other,
    }
}

fn bodies(server: &FakeServer) -> Vec<String> {
    server.requests().into_iter().map(|r| r.body).collect()
}

fn last_of<'a>(recs: &'a [Value], kind: &str) -> &'a Value {
    recs.iter()
        .rev()
        .find(|r| r["type"] == kind)
        .unwrap_or_else(|| panic!("no {kind} record"))
}

#[test]
fn two_piped_turns_then_a_continued_third() {
    let server = FakeServer::start(vec![
        reply("Answer one.", 100, 7),
        reply("Answer two, longer.", 200, 8),
        reply("Answer three.", 300, 9),
    ])
    .unwrap();
    let url = server.url();
    let env = TestEnv::new("turns");

    let run = env.run(&["--base-url", &url], "one\ntwo\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Answer one.\nAnswer two, longer.\n");
    assert_eq!(
        run.stderr_past_seeding(&env),
        "",
        "a piped run says nothing but the answers (and a first start, what it seeded)"
    );

    let run = env.run(&["--base-url", &url, "--continue"], "three\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Answer three.\n");
    // Without the REPL, one line of the past on stderr (issue 32); the
    // transcript is replay's.
    assert!(run.stderr.starts_with("resumed "), "{run:?}");
    assert_eq!(run.stderr.lines().count(), 1, "{run:?}");
    let shown = env.ok(&["replay"]).stdout;
    for line in ["> one", "Answer one.", "> two", "Answer two, longer."] {
        assert!(shown.contains(line), "{line:?} not in {shown:?}");
    }

    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    for r in &requests {
        assert_eq!(
            (r.method.as_str(), r.path.as_str()),
            ("POST", "/v1/chat/completions")
        );
        assert_eq!(r.header("authorization"), None, "no key, no Authorization");
    }
    assert_eq!(
        request_messages(&requests[0].body),
        pairs(&[("user", "one")])
    );
    let conversation = pairs(&[
        ("user", "one"),
        ("assistant", "Answer one."),
        ("user", "two"),
        ("assistant", "Answer two, longer."),
        ("user", "three"),
    ]);
    assert_eq!(request_messages(&requests[2].body), conversation);
    let body: Value = serde_json::from_str(&requests[2].body).unwrap();
    assert_eq!(body["model"], "gpt-5.6-terra");
    assert_eq!(body["stream"], true);
    assert_eq!(body["messages"][0]["role"], "system");

    let file = env.only_session();
    let recs = records(&file);
    assert_eq!(
        kinds(&recs),
        [
            "header", "message", "context", "message", "totals", "message", "message", "totals",
            "resumed", "message", "message", "totals"
        ]
    );
    let header = &recs[0];
    assert_eq!(header["name"], Value::Null);
    assert_eq!(header["named"], false);
    assert_eq!(header["cwd"], env.cwd.to_str().unwrap());
    assert_eq!(header["provider"], "openai");
    assert_eq!(header["started"], common::NOW);
    assert_eq!(
        file.file_stem().unwrap().to_str().unwrap(),
        header["id"].as_str().unwrap(),
        "the file is named after the session id"
    );
    let mut all = conversation.clone();
    all.push(("assistant".into(), "Answer three.".into()));
    assert_eq!(messages(&recs), all);
    let turns: Vec<&Value> = recs
        .iter()
        .filter(|r| r["type"] == "totals")
        .map(|r| &r["turns"])
        .collect();
    assert_eq!(turns, [1, 2, 3]);
    let totals = recs.last().unwrap();
    assert_eq!(totals["tokens_in"], 600);
    assert_eq!(totals["tokens_out"], 24);
    assert_eq!(totals["last_context"], 309);
    assert_eq!(totals["estimated"], false);
    assert_eq!(last_of(&recs, "resumed")["model"], "gpt-5.6-terra");
}

#[test]
fn replay_requests_prints_the_bodies_the_server_received() {
    let server = FakeServer::start(vec![
        reply("First.", 10, 1),
        reply("Second.", 20, 1),
        FakeReply::Status {
            code: 503,
            body: "busy".into(),
            retry_after: None,
        },
        reply("Fourth, after the failure.", 40, 4),
    ])
    .unwrap();
    let url = server.url();
    let env = TestEnv::new("requests");
    assert_eq!(env.run(&["--base-url", &url], "one\ntwo\n").code, Some(0));
    assert_eq!(
        env.run(&["--base-url", &url, "-c"], "three\n").code,
        Some(1)
    );
    assert_eq!(env.run(&["--base-url", &url, "-c"], "four\n").code, Some(0));

    let sent = bodies(&server);
    assert_eq!(sent.len(), 4);
    let expected: String = sent.iter().map(|b| format!("{b}\n")).collect();

    let latest = env.ok(&["replay", "--requests"]);
    assert_eq!(latest.stdout, expected, "replay --requests of the latest");

    let file = env.only_session();
    let by_path = env.ok(&["replay", file.to_str().unwrap(), "--requests"]);
    assert_eq!(by_path.stdout, expected, "replay PATH --requests");

    let id = file.file_stem().unwrap().to_str().unwrap();
    let by_id = env.ok(&["replay", id, "--requests"]);
    assert_eq!(by_id.stdout, expected, "replay ID --requests");
}

#[test]
fn an_http_error_fails_the_turn_and_the_next_run_goes_on() {
    let server = FakeServer::start(vec![
        FakeReply::Status {
            code: 503,
            body: "overloaded".into(),
            retry_after: None,
        },
        reply("Back again.", 50, 3),
    ])
    .unwrap();
    let url = server.url();
    let endpoint = format!("{url}/chat/completions");
    let env = TestEnv::new("http-error");

    let run = env.run(&["--base-url", &url], "hello\nnever sent\n");
    assert_eq!(run.code, Some(1), "{run:?}");
    assert_eq!(run.stdout, "");
    let err = run.stderr_lines_past_seeding(&env);
    assert_eq!(err.len(), 1, "one line on stderr: {run:?}");
    assert!(err[0].starts_with("revolve: "), "{run:?}");
    assert!(err[0].contains("503"), "{run:?}");
    assert!(err[0].contains(&endpoint), "{run:?}");
    assert_eq!(server.requests().len(), 1, "a failure ends a piped run");

    let file = env.only_session();
    let recs = records(&file);
    assert_eq!(
        kinds(&recs),
        ["header", "message", "context", "failed", "totals"]
    );
    assert_eq!(messages(&recs), pairs(&[("user", "hello")]));
    let failed = last_of(&recs, "failed")["error"].as_str().unwrap();
    assert!(
        failed.contains("503") && failed.contains(&endpoint),
        "{failed}"
    );

    let run = env.run(&["--base-url", &url, "--continue"], "again\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Back again.\n");
    let shown = env.ok(&["replay"]).stdout;
    assert!(shown.contains("! failed: "), "{shown:?}");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        request_messages(&requests[1].body),
        pairs(&[("user", "hello"), ("user", "again")])
    );
    let recs = records(&file);
    assert_eq!(
        kinds(&recs)[5..],
        ["resumed", "message", "message", "totals"]
    );
    assert_eq!(recs.last().unwrap()["turns"], 2);
    assert_eq!(env.ok(&["replay", "--check"]).code, Some(0));
}

#[test]
fn a_cut_stream_keeps_the_partial_answer() {
    let server = FakeServer::start(vec![
        FakeReply::CutAfter {
            chunks: vec!["Partial".into(), " answer".into()],
        },
        reply("Whole answer.", 30, 3),
    ])
    .unwrap();
    let url = server.url();
    let env = TestEnv::new("cut");

    let run = env.run(&["--base-url", &url], "tell me\n");
    assert_eq!(run.code, Some(1), "{run:?}");
    assert_eq!(run.stdout, "Partial answer\n", "what streamed was shown");
    let err = run.stderr_lines_past_seeding(&env);
    assert_eq!(err.len(), 1, "{run:?}");
    assert!(err[0].contains(&url), "{run:?}");

    let file = env.only_session();
    let recs = records(&file);
    assert_eq!(
        kinds(&recs),
        ["header", "message", "context", "message", "failed", "totals"]
    );
    let partial = &recs[3];
    assert_eq!(partial["role"], "assistant");
    assert_eq!(partial["content"], "Partial answer");
    assert_eq!(partial["partial"], true);

    // The kept partial answer is part of the history the model gets next.
    let run = env.run(&["--base-url", &url, "--continue"], "go on\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    let shown = env.ok(&["replay"]).stdout;
    assert!(shown.contains("Partial answer [cut short]"), "{shown:?}");
    assert_eq!(
        request_messages(&server.requests()[1].body),
        pairs(&[
            ("user", "tell me"),
            ("assistant", "Partial answer"),
            ("user", "go on")
        ])
    );
}

#[test]
fn a_closed_port_is_a_one_line_error() {
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}/v1");
    let env = TestEnv::new("refused");

    let run = env.run(&["--base-url", &url], "anyone there?\n");
    assert_eq!(run.code, Some(1), "{run:?}");
    assert_eq!(run.stdout, "");
    assert_eq!(
        run.stderr_past_seeding(&env),
        format!(
            "revolve: cannot reach {url}/chat/completions: connection refused: nothing listens \
             there; start the model server (`ollama serve`, or llama.cpp's server) or give \
             another --base-url\n"
        )
    );
    let recs = records(&env.only_session());
    assert_eq!(messages(&recs), pairs(&[("user", "anyone there?")]));
    assert_eq!(
        last_of(&recs, "failed")["error"],
        run.stderr_past_seeding(&env)["revolve: ".len()..].trim_end()
    );
}

#[test]
fn ctrl_c_keeps_what_streamed_and_exits_130() {
    let server = FakeServer::start(vec![FakeReply::Stall {
        chunks: vec!["Thinking".into(), " about".into(), " it".into()],
    }])
    .unwrap();
    let url = server.url();
    let env = TestEnv::new("ctrl-c");

    let mut child = env.spawn(&["--base-url", &url], "question\nnever sent\n");
    let within = Duration::from_secs(10);
    assert_eq!(wait_for_requests(&server, 1, within).len(), 1);
    assert!(
        child.wait_stdout("Thinking about it", within),
        "the partial answer streamed"
    );
    child.signal("INT");
    let run = child.finish(within);
    assert_eq!(run.code, Some(130), "{run:?}");
    assert_eq!(run.stdout, "Thinking about it\n");
    assert_eq!(run.stderr_past_seeding(&env), "revolve: interrupted\n");
    assert_eq!(server.requests().len(), 1, "an interrupt ends a piped run");

    let recs = records(&env.only_session());
    let n = recs.len();
    assert_eq!(
        kinds(&recs),
        [
            "header",
            "message",
            "context",
            "message",
            "interrupted",
            "totals"
        ]
    );
    assert_eq!(recs[n - 3]["content"], "Thinking about it");
    assert_eq!(recs[n - 3]["partial"], true);
    assert_eq!(recs[n - 1]["turns"], 1);

    assert_log_whole(&env);
    // The interrupted request is rebuilt from the log byte for byte.
    let replayed = env.ok(&["replay", "--requests"]);
    assert_eq!(replayed.stdout, format!("{}\n", bodies(&server)[0]));
}

#[test]
fn print_mode_attaches_piped_stdin_to_the_prompt() {
    let server = FakeServer::start(vec![reply("It is a stack overflow.", 10, 5)]).unwrap();
    let env = TestEnv::new("print");
    let run = env.run(
        &["--base-url", &server.url(), "-p", "explain this"],
        "thread 'main' has overflowed its stack\n",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "It is a stack overflow.\n");
    let requests = server.requests();
    assert_eq!(
        requests.len(),
        1,
        "stdin is context for one turn, not turns"
    );
    assert_eq!(
        request_messages(&requests[0].body),
        pairs(&[(
            "user",
            "explain this\n\nthread 'main' has overflowed its stack\n"
        )])
    );
}

#[test]
fn blank_lines_are_not_turns_and_slash_lines_are_commands() {
    let server = FakeServer::start(vec![reply("A.", 10, 1), reply("B.", 20, 1)]).unwrap();
    let env = TestEnv::new("blank");
    let run = env.run(
        &["--base-url", &server.url()],
        "one\n\n   \n/frob\n/status\ntwo\n/quit\nthree\n",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "A.\nB.\n");
    let lines = run.stderr_lines_past_seeding(&env);
    let session = env.only_session();
    // /status: the row (naming the model), the model and where its window
    // came from, the session file, the files the prompt carries (issue 32).
    assert_eq!(
        lines,
        [
            "unknown command /frob; /help lists them",
            "(unnamed) · gpt-5.6-terra · 1 turn · 10 in / 1 out · context 11 of 922k (0%) · <$0.0001",
            "model gpt-5.6-terra · provider openai · window 922000 tokens (from the model table)",
            &format!("session file {}", session.display()),
            "memory: global/asking-the-user.md, global/read-before-edit.md, global/task-discipline.md, \
             global/verify-before-commit.md, global/worktree-isolation.md, project/project.md",
            "project instructions: none",
        ]
    );
    assert_eq!(
        server.requests().len(),
        2,
        "/quit ends the run before three"
    );
    let recs = records(&env.only_session());
    assert_eq!(
        messages(&recs),
        pairs(&[
            ("user", "one"),
            ("assistant", "A."),
            ("user", "two"),
            ("assistant", "B.")
        ])
    );
}

#[test]
fn a_resume_can_change_the_model_and_window() {
    let server = FakeServer::start(vec![reply("Small.", 10, 1), reply("Big.", 20, 1)]).unwrap();
    let url = server.url();
    let env = TestEnv::new("model");
    let run = env.run(
        &["--base-url", &url, "--model", "small", "--window", "8000"],
        "a\n",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let run = env.run(&["--base-url", &url, "-c", "--model", "big"], "b\n");
    assert_eq!(run.code, Some(0), "{run:?}");

    let models: Vec<Value> = server
        .requests()
        .iter()
        .map(|r| serde_json::from_str::<Value>(&r.body).unwrap()["model"].clone())
        .collect();
    assert_eq!(models, ["small", "big"]);
    let recs = records(&env.only_session());
    assert_eq!(
        (&recs[0]["model"], &recs[0]["window"]),
        (&"small".into(), &8000.into())
    );
    let resumed = last_of(&recs, "resumed");
    assert_eq!(
        (&resumed["model"], &resumed["window"]),
        (&"big".into(), &8000.into()),
        "the window carries over when not given"
    );
    // Replay rebuilds each request with the model it went to.
    let replayed = env.ok(&["replay", "--requests"]).stdout;
    assert_eq!(
        replayed,
        bodies(&server)
            .iter()
            .map(|b| format!("{b}\n"))
            .collect::<String>()
    );
}

#[test]
fn the_api_key_is_sent_but_never_written_or_printed() {
    const KEY: &str = "sk-test-0123456789secret";
    let server = FakeServer::start(vec![
        reply("Keyed.", 10, 1),
        FakeReply::Status {
            code: 401,
            body: format!("invalid key {KEY}"),
            retry_after: None,
        },
    ])
    .unwrap();
    let url = server.url();
    let env = TestEnv::new("key");
    let run = env.run_env(&["--base-url", &url], "a\nb\n", &[("OPENAI_API_KEY", KEY)]);
    assert_eq!(run.code, Some(1), "{run:?}");
    assert_eq!(run.stdout, "Keyed.\n");
    assert!(
        run.stderr.contains("401") && run.stderr.contains("[key]"),
        "{run:?}"
    );
    assert!(!run.stderr.contains(KEY), "the key is printed: {run:?}");

    let requests = server.requests();
    let expected = format!("Bearer {KEY}");
    assert_eq!(requests[0].header("authorization"), Some(expected.as_str()));
    for r in &requests {
        assert!(!r.body.contains(KEY));
    }
    let log = std::fs::read_to_string(env.only_session()).unwrap();
    assert!(!log.contains(KEY), "the key is in the session file");
    assert!(log.contains("[key]"), "the scrubbed error is logged");

    // REVOLVE_API_KEY is read too.
    let run = env.run_env(
        &["--base-url", &url, "-c"],
        "c\n",
        &[("REVOLVE_API_KEY", KEY)],
    );
    assert_eq!(run.code, Some(1), "the script is used up: {run:?}");
    let expected = format!("Bearer {KEY}");
    assert_eq!(
        server.requests()[2].header("authorization"),
        Some(expected.as_str())
    );
}

#[test]
fn a_running_session_cannot_be_resumed_twice() {
    let server = FakeServer::start(vec![FakeReply::Stall { chunks: vec![] }]).unwrap();
    let url = server.url();
    let env = TestEnv::new("running");
    let first = env.spawn(&["--base-url", &url], "hold\n");
    let within = Duration::from_secs(10);
    assert_eq!(wait_for_requests(&server, 1, within).len(), 1);

    let run = env.run(&["--base-url", &url, "--continue"], "intrude\n");
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(
        run.stderr
            .ends_with("is already running in another process\n"),
        "{run:?}"
    );
    assert_eq!(server.requests().len(), 1);

    first.signal("INT");
    assert_eq!(first.finish(within).code, Some(130));
    let recs = records(&env.only_session());
    assert!(
        !recs.iter().any(|r| r["type"] == "resumed"),
        "the refused resume wrote nothing"
    );
    assert_eq!(messages(&recs), pairs(&[("user", "hold")]));
    assert_eq!(kinds(&recs).last().unwrap(), "totals");
}

/// In line mode, Ctrl-C while revolve waits for the next line ends the run
/// like any command-line tool: killed by SIGINT (the shell reports 130), so
/// a shell loop around it stops too. The log was synced at the turn's end.
#[test]
fn ctrl_c_between_piped_turns_ends_the_run() {
    let server = FakeServer::start(vec![reply("First.", 10, 1), reply("Second.", 10, 1)]).unwrap();
    let env = TestEnv::new("ctrl-c-idle");
    let mut child = env.spawn_open(&["--base-url", &server.url()], "one\n");
    let within = Duration::from_secs(10);
    assert!(child.wait_stdout("First.\n", within));
    // The turn has ended once its answer is printed and logged; give the
    // process a moment to go back to reading stdin.
    let file = env.only_session();
    assert!(
        common::wait_until(within, || {
            kinds(&records(&file)).last().map(String::as_str) == Some("totals")
        }),
        "the turn never ended"
    );
    child.signal("INT");
    let run = child.finish(Duration::from_secs(2));
    // Killed by the signal, or exit 130 when it arrived as the turn ended.
    assert!(run.signal == Some(2) || run.code == Some(130), "{run:?}");
    assert_eq!(
        kinds(&records(&file)).last().map(String::as_str),
        Some("totals")
    );
    assert_eq!(server.requests().len(), 1);
}

/// Text streamed to stdout is logged when the answer ends (or is cut short
/// by Ctrl-C, SIGTERM or SIGHUP), so a SIGKILL in the middle of an answer
/// loses the part the user already read; the messages before it are kept.
/// Logging every streamed chunk would double the log's assistant text; we
/// chose not to (see README, "What a crash can cost").
#[test]
#[ignore = "design: a SIGKILL mid-answer loses the half-streamed answer (README)"]
fn a_crash_mid_answer_keeps_what_was_shown() {
    let server = FakeServer::start(vec![
        FakeReply::Stall {
            chunks: vec!["Already".into(), " shown".into()],
        },
        reply("Next.", 10, 1),
    ])
    .unwrap();
    let url = server.url();
    let env = TestEnv::new("crash");
    let mut child = env.spawn(&["--base-url", &url], "question\n");
    let within = Duration::from_secs(10);
    assert!(child.wait_stdout("Already shown", within));
    child.signal("KILL");
    assert_eq!(child.finish(within).code, None, "killed by the signal");

    let run = env.run(&["--base-url", &url, "--continue"], "next\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    let recs = records(&env.only_session());
    assert!(
        messages(&recs).contains(&("assistant".to_owned(), "Already shown".to_owned())),
        "the shown text is not in the log: {:?}",
        messages(&recs)
    );
}

#[test]
fn a_non_streamed_answer_is_shown_and_logged() {
    let server = FakeServer::start(vec![FakeReply::Json {
        text: "Whole, at once.".into(),
        usage: Some((12, 4)),
    }])
    .unwrap();
    let env = TestEnv::new("json");
    let run = env.run(&["--base-url", &server.url()], "hi\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Whole, at once.\n");
    let recs = records(&env.only_session());
    assert_eq!(
        messages(&recs)[1],
        ("assistant".into(), "Whole, at once.".into())
    );
    let totals = recs.last().unwrap();
    assert_eq!(
        (&totals["tokens_in"], &totals["tokens_out"]),
        (&12.into(), &4.into())
    );
}

#[test]
fn a_closed_stdout_ends_the_run_normally_and_keeps_the_answer() {
    let server = FakeServer::start(vec![
        reply("Nobody reads this.", 10, 3),
        reply("Never.", 1, 1),
    ])
    .unwrap();
    let env = TestEnv::new("closed-stdout");
    let mut child = env
        .command(&["--base-url", &server.url()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The reader goes away before the answer is written.
    drop(child.stdout.take());
    let mut stdin = child.stdin.take().unwrap();
    std::io::Write::write_all(&mut stdin, b"one\ntwo\n").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stderr), env.seeded_note());
    assert_eq!(server.requests().len(), 1, "the run stops with its reader");
    let recs = records(&env.only_session());
    assert_eq!(
        messages(&recs),
        pairs(&[("user", "one"), ("assistant", "Nobody reads this.")])
    );
    assert_eq!(kinds(&recs).last().unwrap(), "totals");
}

/// SIGTERM (and SIGHUP) in the middle of an answer end the turn the way
/// Ctrl-C does: what streamed is logged as a partial answer, then revolve
/// stops with 143, and the session goes on later.
#[test]
fn sigterm_mid_answer_keeps_what_was_shown() {
    let server = FakeServer::start(vec![
        FakeReply::Stall {
            chunks: vec!["Already".into(), " shown".into()],
        },
        reply("Next.", 10, 1),
    ])
    .unwrap();
    let url = server.url();
    let env = TestEnv::new("sigterm");
    let mut child = env.spawn(&["--base-url", &url], "question\n");
    let within = Duration::from_secs(10);
    assert!(child.wait_stdout("Already shown", within));
    child.signal("TERM");
    let run = child.finish(within);
    assert_eq!(run.code, Some(143), "{run:?}");
    let recs = records(&env.only_session());
    assert_eq!(kinds(&recs).last().unwrap(), "totals");
    assert!(recs.iter().any(|r| r["type"] == "interrupted"));

    let run = env.run(&["--base-url", &url, "--continue"], "next\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    let recs = records(&env.only_session());
    assert!(
        messages(&recs).contains(&("assistant".to_owned(), "Already shown".to_owned())),
        "{:?}",
        messages(&recs)
    );
}

/// `REVOLVE_ID_SEED` seeds session ids as `REVOLVE_NOW` pins the clock: two
/// runs with the same seed, in fresh worlds, name their sessions alike.
#[test]
fn a_seeded_run_makes_the_same_session_id() {
    let ids: Vec<String> = (0..2)
        .map(|_| {
            let env = TestEnv::new("seeded-id");
            let script = env.root.join("replies.jsonl");
            std::fs::write(&script, "{\"text\":\"Hi.\"}\n").unwrap();
            let run = env.run_env(
                &[
                    "--provider",
                    "scripted",
                    "--script",
                    script.to_str().unwrap(),
                ],
                "hello\n",
                &[("REVOLVE_ID_SEED", "42")],
            );
            assert_eq!(run.code, Some(0), "{run:?}");
            let file = env.only_session();
            file.file_stem().unwrap().to_string_lossy().into_owned()
        })
        .collect();
    assert_eq!(ids[0], ids[1]);
    assert!(ids[0].starts_with("20261202-"), "{}", ids[0]);
}
