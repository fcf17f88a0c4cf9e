//! `--output-format stream-json`: one JSON event per line on stdout, for
//! scripts that drive revolve.

use revolve_testkit::{FakeReply, FakeServer};
use serde_json::Value;

use crate::common::TestEnv;

/// Every stdout line as JSON; each must be an object with a string
/// `"type"` as its first key.
fn events(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|line| {
            assert!(line.starts_with("{\"type\":\""), "type first: {line}");
            let v: Value = serde_json::from_str(line).expect("each line is JSON");
            assert!(v["type"].is_string(), "{line}");
            v
        })
        .collect()
}

fn types(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

#[test]
fn a_turn_with_a_tool_streams_events() {
    let server = FakeServer::start(vec![
        FakeReply::tool_calls("Looking.", &[("c1", "list_dir", r#"{"path":"."}"#)]),
        FakeReply::text("It holds one file."),
    ])
    .unwrap();
    let env = TestEnv::new("stream-json");
    std::fs::write(env.cwd.join("a.txt"), "x").unwrap();
    let url = server.url();
    let run = env.run(
        &[
            "--base-url",
            &url,
            "--output-format",
            "stream-json",
            "-p",
            "what is here?",
        ],
        "",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(
        run.stderr_past_seeding(&env),
        "",
        "tool lines are events, not stderr; the seeding note stays"
    );
    let events = events(&run.stdout);
    // First the session, before any turn (issue 32).
    let init = &events[0];
    assert_eq!(
        (&init["type"], &init["session"], &init["model"]),
        (
            &"init".into(),
            &events.last().unwrap()["session"],
            &"gpt-5.6-terra".into()
        )
    );
    assert_eq!(init["cwd"], env.cwd.to_string_lossy().as_ref());
    assert_eq!(init["name"], serde_json::Value::Null);
    assert_eq!(
        types(&events),
        [
            "init",
            "text",
            "tool_call",
            "tool_result",
            "text",
            "text",
            "text",
            "text",
            "totals",
            "done"
        ]
    );
    let call = &events[2];
    assert_eq!(
        (&call["id"], &call["name"], &call["arguments"]),
        (
            &"c1".into(),
            &"list_dir".into(),
            &serde_json::json!({"path": "."})
        )
    );
    let result = &events[3];
    assert_eq!(
        (&result["id"], &result["name"]),
        (&"c1".into(), &"list_dir".into())
    );
    assert!(
        result["output"].as_str().unwrap().contains("a.txt"),
        "{result}"
    );
    assert_eq!(result["interrupted"], false);
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "text")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Looking.It holds one file.");
    let totals = &events[8];
    for key in ["turns", "tokens_in", "tokens_out", "context", "requests"] {
        assert!(totals[key].is_u64(), "{key}: {totals}");
    }
    assert_eq!(totals["turns"], 1);
    assert_eq!(totals["requests"], 2);
    let done = &events[9];
    assert!(
        done["session"].is_string() && done["log"].is_string(),
        "{done}"
    );
    assert!(done["name"].is_null(), "{done}");
    assert_eq!(
        done["log"].as_str().unwrap(),
        env.only_session().to_string_lossy()
    );
}

#[test]
fn a_call_that_did_not_run_has_its_events_too() {
    let server = FakeServer::start(vec![
        FakeReply::tool_calls(
            "",
            &[
                ("c1", "shell", r#"{"command":"touch made"}"#),
                ("c2", "no_such_tool", "not json"),
            ],
        ),
        FakeReply::text("Neither ran."),
    ])
    .unwrap();
    let env = TestEnv::new("stream-json-not-run");
    let url = server.url();
    let run = env.run(
        &[
            "--base-url",
            &url,
            "--output-format",
            "stream-json",
            "-p",
            "make a file",
        ],
        "",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(!env.cwd.join("made").exists());
    let events = events(&run.stdout);
    let calls: Vec<_> = events
        .iter()
        .filter(|e| e["type"] == "tool_call" || e["type"] == "tool_result")
        .collect();
    assert_eq!(calls.len(), 4, "{events:?}");
    assert_eq!(
        (&calls[0]["type"], &calls[0]["id"], &calls[0]["name"]),
        (&"tool_call".into(), &"c1".into(), &"shell".into())
    );
    assert_eq!(
        calls[0]["arguments"],
        serde_json::json!({"command": "touch made"})
    );
    assert_eq!(
        (&calls[1]["type"], &calls[1]["id"]),
        (&"tool_result".into(), &"c1".into())
    );
    assert_eq!(
        calls[1]["output"],
        "error: the user did not allow this command"
    );
    // Arguments that are not JSON are given as the string they were.
    assert_eq!(calls[2]["arguments"], "not json");
    assert!(
        calls[3]["output"].as_str().unwrap().starts_with("error:"),
        "{}",
        calls[3]
    );
    // The refusal is told on stderr, for a human watching.
    assert!(run.stderr.contains("--allow-shell"), "{run:?}");
}

#[test]
fn each_line_is_a_turn_with_its_totals_and_one_done() {
    let server = FakeServer::start(vec![FakeReply::text("One."), FakeReply::text("Two.")]).unwrap();
    let env = TestEnv::new("stream-json-lines");
    let url = server.url();
    let run = env.run(
        &[
            "--base-url",
            &url,
            "--output-format",
            "stream-json",
            "--name",
            "s",
        ],
        "first\nsecond\n",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let events = events(&run.stdout);
    assert_eq!(
        types(&events),
        ["init", "text", "totals", "text", "totals", "done"]
    );
    assert_eq!(events[4]["turns"], 2);
    assert_eq!(events[5]["name"], "s");
    assert_eq!(events[0]["name"], "s", "init names the session");
}

#[test]
fn a_failed_turn_ends_with_an_error_event() {
    let server = FakeServer::start(vec![FakeReply::Status {
        code: 500,
        body: "boom".into(),
        retry_after: None,
    }])
    .unwrap();
    let env = TestEnv::new("stream-json-error");
    let url = server.url();
    let run = env.run(
        &[
            "--base-url",
            &url,
            "--output-format",
            "stream-json",
            "-p",
            "hi",
        ],
        "",
    );
    assert_eq!(run.code, Some(1), "{run:?}");
    let events = events(&run.stdout);
    assert_eq!(types(&events), ["init", "totals", "error"]);
    let error = &events[2];
    assert_eq!(error["code"], 1);
    assert!(
        error["message"].as_str().unwrap().contains("HTTP 500"),
        "{error}"
    );
    // The one stderr line stays, for a human watching (after the seeding
    // note of a first start).
    assert_eq!(run.stderr_lines_past_seeding(&env).len(), 1, "{run:?}");
}

#[test]
fn text_stays_the_default() {
    let server = FakeServer::start(vec![FakeReply::text("Plain.")]).unwrap();
    let env = TestEnv::new("stream-json-default");
    let url = server.url();
    let run = env.run(&["--base-url", &url, "-p", "hi"], "");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Plain.\n");
    let run = env.run(&["--output-format", "yaml", "-p", "hi"], "");
    assert_eq!(run.code, Some(2), "{run:?}");
}
