//! OpenAI's Responses wire end to end (issue 45), against the fake playing
//! the Responses stream: a tool round with a reasoning item carried to the
//! next request, the bodies as a snapshot, `replay --requests` byte for
//! byte and `replay --check` clean; the `openai` preset's choice of wire
//! by the model table; a 429 retried and an overflow told.

use revolve_testkit::{FakeReply, FakeServer, Overflows};
use serde_json::{json, Value};

use crate::common::fake::assert_replays_as_sent;
use crate::common::{kinds, records, TestEnv};

/// The flags that send revolve's requests to `server` on the Responses wire.
fn flags(server: &FakeServer) -> Vec<String> {
    [
        "--provider",
        "openai-responses",
        "--model",
        "gpt-5",
        "--base-url",
    ]
    .map(String::from)
    .into_iter()
    .chain([server.url()])
    .collect()
}

fn run(
    env: &TestEnv,
    server: &FakeServer,
    extra: &[&str],
    vars: &[(&str, &str)],
) -> crate::common::Run {
    let flags = flags(server);
    let mut args: Vec<&str> = flags.iter().map(String::as_str).collect();
    args.extend_from_slice(extra);
    env.run_env(&args, "", vars)
}

/// A body for a snapshot: the system prompt, the tool definitions and the
/// session's cache key named rather than shown.
fn shown(body: &str) -> String {
    let mut body: Value = serde_json::from_str(body).expect("request bodies are JSON");
    if body.get("instructions").is_some() {
        body["instructions"] = json!("[system prompt]");
    }
    if let Some(tools) = body["tools"].as_array() {
        let names: Vec<Value> = tools
            .iter()
            .map(|t| {
                json!(format!(
                    "{} {}",
                    t["type"].as_str().unwrap_or("?"),
                    t["name"].as_str().unwrap_or("?")
                ))
            })
            .collect();
        body["tools"] = Value::from(names);
    }
    if body.get("prompt_cache_key").is_some() {
        body["prompt_cache_key"] = json!("[session id]");
    }
    serde_json::to_string_pretty(&body).unwrap()
}

#[test]
fn a_tool_round_carries_its_reasoning_to_the_next_request() {
    let env = TestEnv::new("responses-round");
    std::fs::write(env.cwd.join("notes.txt"), "hello from the notes\n").unwrap();
    // The fake refuses a request that sends call_1 back without the
    // reasoning item it came with (as the API does).
    let server = FakeServer::start_responses(vec![
        FakeReply::thinks(
            "Read the notes first.",
            FakeReply::tool_calls(
                "Looking.",
                &[("call_1", "read_file", r#"{"path":"notes.txt"}"#)],
            ),
        ),
        FakeReply::text("They say hello."),
    ])
    .unwrap();
    let run = run(
        &env,
        &server,
        &["--effort", "low", "-p", "read my notes"],
        &[("OPENAI_API_KEY", "sk-test-responses-0123")],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Looking.\nThey say hello.\n");

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert_eq!(r.path, "/v1/responses");
        assert_eq!(
            r.header("authorization"),
            Some("Bearer sk-test-responses-0123")
        );
        assert!(
            !r.body.contains("sk-test-responses"),
            "the key stays out of the body"
        );
    }
    let second: Value = serde_json::from_str(&requests[1].body).unwrap();
    let input = second["input"].as_array().unwrap();
    let types: Vec<&str> = input.iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "message",
            "reasoning",
            "message",
            "function_call",
            "function_call_output"
        ]
    );
    assert_eq!(
        input[1]["encrypted_content"],
        revolve_testkit::thinking::signature("Read the notes first.")
    );
    assert_eq!(input[4]["call_id"], "call_1");
    assert_eq!(input[4]["output"], "hello from the notes\n");
    insta::assert_snapshot!("responses_first_body", shown(&requests[0].body));
    insta::assert_snapshot!("responses_second_body", shown(&requests[1].body));

    // The reasoning item is in the log, and the transcript shows it as
    // thinking.
    let recs = records(&env.only_session());
    let answer = recs
        .iter()
        .find(|r| r["type"] == "message" && r["role"] == "assistant")
        .unwrap();
    assert_eq!(answer["thinking"][0]["type"], "reasoning");
    assert_eq!(answer["thinking"][0]["id"], "rs_fake_0");
    let header = &recs[0];
    assert_eq!(header["provider"], "openai-responses");
    let transcript = env.ok(&["replay"]).stdout;
    assert!(
        transcript.contains("thought (21 chars, kept in the log)"),
        "{transcript}"
    );

    let sent: Vec<String> = requests.iter().map(|r| r.body.clone()).collect();
    assert_replays_as_sent(&env, &sent);
}

#[test]
fn the_openai_preset_speaks_responses_to_openai_for_the_models_the_table_marks() {
    let env = TestEnv::new("responses-preset");
    let provider = |args: &[&str]| {
        let mut all = vec!["config", "show", "--json"];
        all.extend_from_slice(args);
        let run = env.run_env(&all, "", &[("OPENAI_API_KEY", "sk-test")]);
        assert_eq!(run.code, Some(0), "{run:?}");
        let shown: Value = serde_json::from_str(&run.stdout).unwrap();
        shown["settings"]["provider"]["value"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(provider(&["--model", "gpt-5"]), "openai-responses");
    assert_eq!(provider(&["--model", "o3"]), "openai-responses");
    assert_eq!(provider(&["--model", "gpt-4o"]), "openai");
    // Another address is any Chat Completions server: it stays on that wire.
    assert_eq!(
        provider(&["--model", "gpt-5", "--base-url", "http://127.0.0.1:9/v1"]),
        "openai"
    );
    assert_eq!(
        provider(&["--model", "gpt-5", "--provider", "anthropic"]),
        "anthropic"
    );
}

#[test]
fn a_429_is_retried_after_its_retry_after() {
    let env = TestEnv::new("responses-429");
    let server = FakeServer::start_responses(vec![
        FakeReply::Status {
            code: 429,
            body: r#"{"error":{"message":"Rate limit reached for gpt-5 on tokens per min (TPM). Please try again in 0s.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}"#.into(),
            retry_after: Some(0),
        },
        FakeReply::text("Made it."),
    ])
    .unwrap();
    let run = run(&env, &server, &["-p", "hello"], &[("REVOLVE_RETRIES", "2")]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Made it.\n");
    assert!(
        run.stderr.contains("retrying in 0 s (attempt 2 of 3)"),
        "{run:?}"
    );
    let sent = server.requests();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0].body, sent[1].body, "the same request, sent again");
}

#[test]
fn an_error_event_in_the_stream_fails_the_turn_in_one_line() {
    let env = TestEnv::new("responses-error");
    let body = concat!(
        "event: response.created\n",
        "data: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\",\"output\":[]}}\n\n",
        "event: response.failed\n",
        "data: {\"type\":\"response.failed\",\"sequence_number\":1,\"response\":{\"id\":\"resp_1\",\"status\":\"failed\",\"output\":[],\"error\":{\"code\":\"invalid_prompt\",\"message\":\"Invalid prompt: your prompt was flagged.\"}}}\n\n",
    );
    let server = FakeServer::start_responses(vec![FakeReply::Garbage(body.into())]).unwrap();
    let run = run(&env, &server, &["-p", "hello"], &[]);
    assert_ne!(run.code, Some(0), "{run:?}");
    let said: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("Invalid prompt"))
        .collect();
    assert_eq!(said.len(), 1, "{run:?}");
    assert!(said[0].contains("/v1/responses"), "{run:?}");
    let recs = records(&env.only_session());
    assert!(kinds(&recs).contains(&"failed".to_owned()), "{recs:?}");
}

#[test]
fn a_request_over_the_context_is_told_as_an_overflow() {
    let env = TestEnv::new("responses-overflow");
    let (code, body) = Overflows::Responses.answer(300_000, 272_000);
    let server = FakeServer::start_responses(vec![FakeReply::Status {
        code,
        body,
        retry_after: None,
    }])
    .unwrap();
    let run = run(&env, &server, &["-p", "hello"], &[]);
    assert_ne!(run.code, Some(0), "{run:?}");
    let recs = records(&env.only_session());
    assert!(
        kinds(&recs).contains(&"overflowed".to_owned()),
        "an overflow is logged as one: {:?}",
        kinds(&recs)
    );
}
