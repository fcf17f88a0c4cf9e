//! What Claude Code and Codex users type without thinking (issue 47,
//! items 17–21 and 23): stdin as one prompt with `-p`, one JSON result
//! object, newlines in the REPL, single-key approvals, Markdown that fits
//! the terminal.

use revolve_testkit::{FakeReply, FakeServer};
use serde_json::Value;

use crate::common::{request_messages, TestEnv};

#[test]
fn piped_stdin_with_p_is_one_prompt_and_without_p_one_turn_a_line() {
    let server = FakeServer::start(vec![FakeReply::text("Read it.")]).unwrap();
    let env = TestEnv::new("habits-p-stdin");
    let url = server.url();
    let run = env.run(
        &["--base-url", &url, "-p"],
        "line one\nline two\n/not a command\n",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Read it.\n");
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "one turn, not one a line: {requests:?}");
    let users: Vec<String> = request_messages(&requests[0].body)
        .into_iter()
        .filter(|(role, _)| role == "user")
        .map(|(_, text)| text)
        .collect();
    assert_eq!(users, ["line one\nline two\n/not a command"]);

    // Without -p, piped lines stay one turn each.
    let server = FakeServer::start(vec![FakeReply::text("A."), FakeReply::text("B.")]).unwrap();
    let url = server.url();
    let run = env.run(&["--base-url", &url], "first\nsecond\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(server.requests().len(), 2, "{run:?}");
}

#[test]
fn output_format_json_prints_one_result_object() {
    let server = FakeServer::start(vec![
        FakeReply::tool_calls("Looking.", &[("c1", "list_dir", r#"{"path":"."}"#)]),
        FakeReply::text("It holds one file."),
    ])
    .unwrap();
    let env = TestEnv::new("habits-json");
    std::fs::write(env.cwd.join("a.txt"), "a\n").unwrap();
    let url = server.url();
    let run = env.run(
        &[
            "--base-url",
            &url,
            "--model",
            "gpt-4o-mini",
            "--output-format",
            "json",
            "-p",
            "what is here?",
        ],
        "",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 1, "one object: {}", run.stdout);
    let result: Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(result["type"], "result");
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["is_error"], false);
    assert_eq!(result["result"], "It holds one file.");
    assert_eq!(result["num_turns"], 1);
    assert_eq!(result["usage"]["input_tokens"], 20);
    assert_eq!(result["usage"]["output_tokens"], 5);
    assert_eq!(result["usage"]["requests"], 2);
    assert!(result["total_cost_usd"].as_f64().unwrap() > 0.0, "{result}");
    let session = result["session_id"].as_str().unwrap();
    let file = env.only_session();
    assert!(
        file.to_string_lossy().contains(session),
        "{session} names {}",
        file.display()
    );

    // A failed run is an object too, with is_error and the message.
    let server = FakeServer::start(vec![FakeReply::Status {
        code: 500,
        body: "boom".into(),
        retry_after: None,
    }])
    .unwrap();
    let url = server.url();
    let run = env.run(
        &["--base-url", &url, "--output-format", "json", "-p", "hi"],
        "",
    );
    assert_eq!(run.code, Some(1), "{run:?}");
    let result: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(result["is_error"], true);
    assert_eq!(result["exit_code"], 1);
    assert!(
        result["result"].as_str().unwrap().contains("HTTP 500"),
        "{result}"
    );
}
