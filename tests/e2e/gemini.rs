//! `--provider gemini` end to end (issue 45 item 3), against the fake
//! server playing Google's Gemini API (`revolve_testkit::gemini`): tool
//! rounds with their thought signatures sent back as the API requires, a
//! picture as `inlineData`, the bodies as a snapshot, `replay --requests`
//! and `--check`, the key in a header and in no file, a `429` retried after
//! the wait its body asks, and `countTokens` for the window check.

use std::path::PathBuf;

use revolve_testkit::{
    gemini, FakeOptions, FakeProtocol, FakeReply, FakeServer, Limit, Overflows, Recorded,
};
use serde_json::{json, Value};

use crate::common::fake::assert_replays_as_sent;
use crate::common::{records, Run, TestEnv};

const KEY: &str = "AIza-gemini-test-key-0123";

fn serve(replies: Vec<FakeReply>) -> FakeServer {
    FakeServer::start_gemini(replies).expect("start the fake Gemini server")
}

/// Runs revolve on `server` with the key set, these flags and `stdin`.
fn revolve(env: &TestEnv, server: &FakeServer, extra: &[&str], stdin: &str) -> Run {
    revolve_env(env, server, extra, stdin, &[])
}

fn revolve_env(
    env: &TestEnv,
    server: &FakeServer,
    extra: &[&str],
    stdin: &str,
    vars: &[(&str, &str)],
) -> Run {
    let url = server.url();
    let mut args = vec!["--provider", "gemini", "--base-url", url.as_str()];
    args.extend_from_slice(extra);
    let mut vars = vars.to_vec();
    vars.push(("GEMINI_API_KEY", KEY));
    env.run_env(&args, stdin, &vars)
}

fn body(r: &Recorded) -> Value {
    serde_json::from_str(&r.body).expect("request bodies are JSON")
}

/// Every file revolve wrote under its state and config roots.
fn written(env: &TestEnv) -> Vec<PathBuf> {
    let mut todo = vec![
        env.state.join("task-agent"),
        env.home.join(".config/task-agent"),
    ];
    let mut files = Vec::new();
    while let Some(path) = todo.pop() {
        if path.is_dir() {
            todo.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        } else if path.is_file() {
            files.push(path);
        }
    }
    files
}

/// `replay --requests` gives back every body the server received, and
/// `replay --check` finds nothing wrong.
fn assert_replays(env: &TestEnv, server: &FakeServer) {
    let sent: Vec<String> = server
        .requests()
        .into_iter()
        .filter(|r| r.path.contains(":streamGenerateContent") || r.path.contains(":countTokens"))
        .map(|r| r.body)
        .collect();
    assert_replays_as_sent(env, &sent);
}

#[test]
fn a_turn_calls_tools_and_sends_their_signatures_back() {
    let env = TestEnv::new("gemini-tools");
    std::fs::write(env.cwd.join("notes.txt"), "hello from the notes\n").unwrap();
    let server = serve(vec![
        FakeReply::tool_calls("Looking.", &[("", "list_dir", r#"{"path":"."}"#)]),
        FakeReply::tool_calls(
            "",
            &[
                ("", "read_file", r#"{"path":"notes.txt"}"#),
                ("", "grep", r#"{"pattern":"hel+o"}"#),
            ],
        ),
        FakeReply::text("The notes say hello."),
    ]);
    let run = revolve(&env, &server, &[], "what do my notes say?\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Looking.\nThe notes say hello.\n");

    let requests = server.requests();
    assert_eq!(
        requests.len(),
        3,
        "the fake refuses a call sent back unsigned"
    );
    for r in &requests {
        assert_eq!(
            r.path,
            "/v1/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );
        assert_eq!(r.header("x-goog-api-key"), Some(KEY));
        assert_eq!(r.header("authorization"), None);
    }
    let last = body(&requests[2]);
    let contents = &last["contents"];
    assert_eq!(
        contents[1],
        json!({"role": "model", "parts": [
            {"text": "Looking."},
            {"functionCall": {"name": "list_dir", "args": {"path": "."}},
             "thoughtSignature": gemini::signature_of(0)},
        ]})
    );
    assert_eq!(
        contents[3]["parts"][0]["thoughtSignature"],
        gemini::signature_of(1)
    );
    assert!(contents[3]["parts"][1].get("thoughtSignature").is_none());
    assert_eq!(
        contents[4]["parts"][0],
        json!({"functionResponse": {"name": "read_file",
               "response": {"output": "hello from the notes\n"}}})
    );
    assert_eq!(contents[4]["parts"][1]["functionResponse"]["name"], "grep");

    // The log names the calls by request and place, and keeps the
    // signatures with the calls they came on.
    let recs = records(&env.only_session());
    let calling: Vec<&Value> = recs.iter().filter(|r| r["tool_calls"].is_array()).collect();
    assert_eq!(calling[0]["tool_calls"][0]["id"], "gemini_1_0");
    assert_eq!(calling[1]["tool_calls"][1]["id"], "gemini_2_1");
    assert_eq!(
        calling[1]["thinking"],
        json!([{"type": "thought_signature", "signature": gemini::signature_of(1),
                "call": "gemini_2_0"}])
    );
    assert_eq!(recs[0]["provider"], "gemini");

    // The bodies as sent, the system prompt and the tools' texts aside
    // (their own tests hold them).
    let shown: Vec<Value> = requests
        .iter()
        .map(|r| {
            let mut b = body(r);
            b["systemInstruction"] = json!("[system prompt]");
            let names: Vec<Value> = b["tools"][0]["functionDeclarations"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d["name"].clone())
                .collect();
            b["tools"] = json!(names);
            b
        })
        .collect();
    insta::assert_json_snapshot!("gemini_tool_rounds", shown);

    assert_replays(&env, &server);
    for file in written(&env) {
        let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
        assert!(!text.contains(KEY), "the key is in {}", file.display());
    }
    assert!(!run.stderr.contains(KEY) && !run.stdout.contains(KEY));
}

#[test]
fn a_picture_goes_as_inline_data() {
    let env = TestEnv::new("gemini-image");
    let png = base64::Engine::decode(
        &base64::engine::general_purpose::STANDARD,
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==",
    )
    .unwrap();
    std::fs::write(env.cwd.join("dot.png"), &png).unwrap();
    let server = serve(vec![FakeReply::text("A dot.")]);
    let run = revolve(
        &env,
        &server,
        &["-p", "--image", "dot.png", "what is it?"],
        "",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let sent = body(&server.requests()[0]);
    let parts = &sent["contents"][0]["parts"];
    assert_eq!(parts[0], json!({"text": "what is it?"}));
    let inline = &parts[1]["inlineData"];
    assert_eq!(inline["mimeType"], "image/png");
    let data = base64::Engine::decode(
        &base64::engine::general_purpose::STANDARD,
        inline["data"].as_str().unwrap(),
    )
    .unwrap();
    assert_eq!(data, png);
    assert_replays(&env, &server);
}

#[test]
fn a_429_is_sent_again_after_the_wait_its_body_asks() {
    let env = TestEnv::new("gemini-429");
    let server = serve(vec![
        FakeReply::Status {
            code: 429,
            body: gemini::rate_limited(1),
            retry_after: None,
        },
        FakeReply::text("Fine now."),
    ]);
    let run = revolve_env(
        &env,
        &server,
        &["-p", "hi"],
        "",
        &[("REVOLVE_RETRIES", "2")],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Fine now.\n");
    assert!(
        run.stderr
            .contains("retrying in 1 s (attempt 2 of 3): HTTP 429 Too Many Requests"),
        "{run:?}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body, requests[1].body);
}

#[test]
fn an_error_in_the_stream_fails_the_turn_in_one_line() {
    let env = TestEnv::new("gemini-stream-error");
    let error = gemini::error(
        400,
        "Request contains an invalid argument.",
        "INVALID_ARGUMENT",
    );
    let server = serve(vec![FakeReply::Garbage(format!("data: {error}\n\n"))]);
    let run = revolve(&env, &server, &["-p", "hi"], "");
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(
        run.stderr.contains(&format!(
            "error in stream from {}/models/gemini-2.5-flash:streamGenerateContent?alt=sse: \
             Request contains an invalid argument.",
            server.url()
        )),
        "{run:?}"
    );
}

/// Near its window, a session asks `countTokens` before it compacts on an
/// estimate (the count is free): here the server counts eight bytes a
/// token where the estimate assumes four, so the turn goes out whole.
#[test]
fn the_window_check_asks_count_tokens() {
    let env = TestEnv::new("gemini-count");
    let limit = Limit {
        tokens: 100_000,
        bytes_per_token: 8,
        says: Overflows::Gemini,
        usage: true,
    };
    let options = FakeOptions {
        limit: Some(limit),
        ..FakeOptions::default()
    };
    let replies = vec![FakeReply::text("Short.")];
    let server = FakeServer::start_with_options(FakeProtocol::Gemini, replies, options).unwrap();
    let long = "word ".repeat(4000);
    let run = revolve(&env, &server, &["--window", "8000"], &format!("{long}\n"));
    assert_eq!(run.code, Some(0), "{run:?}");
    let requests = server.requests();
    let paths: Vec<&str> = requests.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/v1/models/gemini-2.5-flash:countTokens",
            "/v1/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        ],
        "{run:?}"
    );
    let asked = body(&requests[0]);
    assert_eq!(
        asked["generateContentRequest"]["model"],
        "models/gemini-2.5-flash"
    );
    let sent = body(&requests[1]);
    let counted_request = &asked["generateContentRequest"];
    for key in ["contents", "systemInstruction", "tools"] {
        assert!(counted_request[key] == sent[key], "{key} counted as sent");
    }
    assert_eq!(requests[0].header("x-goog-api-key"), Some(KEY));
    let logged = records(&env.only_session());
    let counted = logged.iter().find(|r| r["type"] == "counted").unwrap();
    assert_eq!(
        counted["tokens"].as_u64(),
        Some((requests[0].body.len() as u64).div_ceil(8))
    );
    assert!(!logged.iter().any(|r| r["type"] == "compacted"));
    assert_replays(&env, &server);
}

#[test]
fn without_its_key_gemini_says_which_variable() {
    let env = TestEnv::new("gemini-no-key");
    let run = env.run(&["--provider", "gemini", "-p", "hi"], "");
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(run.stderr.contains("GEMINI_API_KEY"), "{run:?}");
    assert_eq!(run.stderr.lines().count(), 1, "{run:?}");
}

/// A model whose real context (8,000 tokens here) is below the window
/// declared: Gemini's 400 "The input token count (N) exceeds the maximum
/// number of tokens allowed (M)" is read as an overflow, the window is
/// lowered to M and logged, the history compacted, and the turn completes.
#[test]
fn gemini_s_token_limit_lowers_the_window() {
    let env = TestEnv::new("gemini-overflow");
    let files = ["a.txt", "b.txt", "c.txt"];
    for name in files {
        let text: String = (0..300)
            .map(|i| format!("{name} line {i} of some text to read\n"))
            .collect();
        std::fs::write(env.cwd.join(name), text).unwrap();
    }
    let mut replies: Vec<FakeReply> = files
        .iter()
        .map(|f| FakeReply::tool_calls("", &[("", "read_file", &json!({ "path": f }).to_string())]))
        .collect();
    replies.push(FakeReply::text("Done."));
    let limit = Limit {
        tokens: 8_000,
        bytes_per_token: 4,
        says: Overflows::Gemini,
        usage: true,
    };
    let server = FakeServer::start_limited(FakeProtocol::Gemini, replies, Some(limit)).unwrap();
    let run = revolve_env(
        &env,
        &server,
        &["-p", "read all three"],
        "",
        &[("REVOLVE_RETRIES", "3")],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout.trim(), "Done.");
    let log: Vec<Value> = env
        .session_files()
        .iter()
        .flat_map(|f| records(f))
        .collect();
    let lowered: Vec<&Value> = log.iter().filter(|r| r["type"] == "overflowed").collect();
    assert_eq!(lowered.len(), 1, "{run:?}");
    assert_eq!(lowered[0]["window"], 8_000);
    assert!(
        run.stderr
            .lines()
            .any(|l| l.starts_with("window: the request is larger than the server's context")),
        "{run:?}"
    );
}
