//! What the second adversarial audit (issue 27) broke in talking to a
//! server or a model, end to end against the real binary: one test per
//! item, its number first in the test's doc. Each failed (or hung) before
//! its fix.

use std::time::{Duration, Instant};

use revolve_testkit::{FakeReply, FakeServer};
use serde_json::{json, Value};

use crate::common::{records, tool_results, TestEnv};

/// An OpenAI stream of `text` whose usage chunk is `usage` (any JSON).
fn openai_stream(text: &str, usage: &Value) -> FakeReply {
    let chunk = |delta: Value| {
        json!({"id": "c", "object": "chat.completion.chunk", "choices": [
            {"index": 0, "delta": delta, "finish_reason": null}]})
    };
    let usage = json!({"id": "c", "object": "chat.completion.chunk", "choices": [],
                       "usage": usage});
    FakeReply::Garbage(format!(
        "data: {}\n\ndata: {usage}\n\ndata: [DONE]\n\n",
        chunk(json!({"content": text}))
    ))
}

/// An Anthropic stream of `text` whose `message_start` and
/// `message_delta` carry `usage` (any JSON).
fn anthropic_stream(text: &str, usage: &Value) -> FakeReply {
    let events = [
        json!({"type": "message_start", "message": {"id": "m", "type": "message",
               "role": "assistant", "content": [], "usage": usage}}),
        json!({"type": "content_block_start", "index": 0,
               "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0,
               "delta": {"type": "text_delta", "text": text}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": usage}),
        json!({"type": "message_stop"}),
    ];
    FakeReply::Garbage(
        events
            .iter()
            .map(|e| format!("event: {}\ndata: {e}\n\n", e["type"].as_str().unwrap()))
            .collect(),
    )
}

/// The `totals` records of the only session's log.
fn totals(env: &TestEnv) -> Vec<Value> {
    records(&env.only_session())
        .into_iter()
        .filter(|r| r["type"] == "totals")
        .collect()
}

/// Item 23: a usage with `null`, float, negative, string or absurd counts
/// never fails an answer that was shown: the answer stands (exit 0), and
/// the counts that do not read are estimated. Streamed and not, OpenAI and
/// Anthropic.
#[test]
fn a_usage_of_any_shape_never_fails_a_shown_answer() {
    let odd = [
        json!({"prompt_tokens": null, "completion_tokens": 3}),
        json!({"prompt_tokens": 12.5, "completion_tokens": 3.0}),
        json!({"prompt_tokens": -5, "completion_tokens": -1}),
        json!({"prompt_tokens": "12", "completion_tokens": [1]}),
        json!({"prompt_tokens": 1e300, "completion_tokens": 2}),
        json!("not an object"),
    ];
    for (i, usage) in odd.iter().enumerate() {
        let env = TestEnv::new(&format!("usage-odd-{i}"));
        let whole = json!({"id": "c", "object": "chat.completion", "choices": [{"index": 0,
            "message": {"role": "assistant", "content": "Whole."}, "finish_reason": "stop"}],
            "usage": usage})
        .to_string();
        let server = FakeServer::start(vec![
            openai_stream("Streamed.", usage),
            FakeReply::Raw(format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{whole}",
                whole.len()
            )),
        ])
        .unwrap();
        let run = env.run(&["--base-url", &server.url()], "one\ntwo\n");
        assert_eq!(run.code, Some(0), "{usage}: {run:?}");
        assert_eq!(run.stdout, "Streamed.\nWhole.\n", "{usage}: {run:?}");
        let totals = totals(&env);
        assert_eq!(totals.len(), 2, "{usage}: {totals:?}");
        for t in &totals {
            // Estimated, and sensible: no negative, no 1e300.
            let tokens_in = t["tokens_in"].as_u64().expect("a count");
            assert!(tokens_in < 1 << 40, "{usage}: {t}");
        }

        let anthropic_usage = match usage {
            Value::Object(u) => json!({"input_tokens": u["prompt_tokens"],
                                       "output_tokens": u["completion_tokens"]}),
            other => other.clone(),
        };
        let env = TestEnv::new(&format!("usage-odd-anthropic-{i}"));
        let whole = json!({"id": "m", "type": "message", "role": "assistant",
            "content": [{"type": "text", "text": "Whole."}], "stop_reason": "end_turn",
            "usage": anthropic_usage})
        .to_string();
        let server = FakeServer::start_anthropic(vec![
            anthropic_stream("Streamed.", &anthropic_usage),
            FakeReply::Raw(format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{whole}",
                whole.len()
            )),
        ])
        .unwrap();
        let args = ["--provider", "anthropic", "--base-url", &server.url()];
        let run = env.run(&args, "one\ntwo\n");
        assert_eq!(run.code, Some(0), "{anthropic_usage}: {run:?}");
        assert_eq!(
            run.stdout, "Streamed.\nWhole.\n",
            "{anthropic_usage}: {run:?}"
        );
    }
}

/// Item 23: sensible counts are still read as they came, a whole float
/// among them.
#[test]
fn sensible_usage_counts_are_read_as_they_came() {
    let env = TestEnv::new("usage-sensible");
    let server = FakeServer::start(vec![openai_stream(
        "Hi.",
        &json!({"prompt_tokens": 1234.0, "completion_tokens": 7}),
    )])
    .unwrap();
    let run = env.run(&["--base-url", &server.url()], "one\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    let totals = totals(&env);
    assert_eq!(totals[0]["tokens_in"], 1234, "{totals:?}");
    assert_eq!(totals[0]["tokens_out"], 7, "{totals:?}");
}

/// A scripted answer making `n` distinct tool calls, then one of text.
fn many_calls(env: &TestEnv, n: usize) -> Vec<String> {
    let calls: Vec<Value> = (0..n)
        .map(|i| {
            json!({"id": format!("c{i}"), "name": "read_file",
                        "arguments": {"path": format!("f{i}.txt")}})
        })
        .collect();
    let script = env.root.join("script.jsonl");
    let lines = [
        json!({"text": "", "tool_calls": calls}),
        json!({"text": "Done."}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&script, text).unwrap();
    [
        "--provider",
        "scripted",
        "--script",
        script.to_str().unwrap(),
    ]
    .map(String::from)
    .to_vec()
}

/// Item 22: one answer of 1000 distinct tool calls runs only the first
/// `max_calls_per_answer` (64 by default); the rest get an error result the
/// model sees, in order, and the turn goes on.
#[test]
fn one_answer_runs_a_bounded_number_of_tool_calls() {
    for (flag, ran) in [(None, 64), (Some("5"), 5)] {
        let env = TestEnv::new(&format!("many-calls-{ran}"));
        for i in 0..1000 {
            std::fs::write(env.cwd.join(format!("f{i}.txt")), format!("file {i}\n")).unwrap();
        }
        let mut args = many_calls(&env, 1000);
        if let Some(n) = flag {
            args.extend(["--max-calls-per-answer".to_owned(), n.to_owned()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = env.run(&args, "read them all\n");
        assert_eq!(run.code, Some(0), "{run:?}");
        assert_eq!(run.stdout, "Done.\n", "{run:?}");
        let results = tool_results(&records(&env.only_session()));
        assert_eq!(results.len(), 1000);
        for (i, (id, content)) in results.iter().enumerate() {
            assert_eq!(id, &format!("c{i}"));
            if i < ran {
                assert!(content.contains(&format!("file {i}")), "{i}: {content}");
            } else {
                assert!(
                    content.starts_with("error: not run: this answer made 1000 tool calls")
                        && content.contains(&format!("only the first {ran} of one answer run")),
                    "{i}: {content}"
                );
            }
        }
    }
}

/// Item 22: the bound is a setting like `max_tool_rounds`: a config key, a
/// flag, shown by `config show`, and at least 1.
#[test]
fn the_calls_per_answer_bound_is_a_setting() {
    let env = TestEnv::new("calls-setting");
    let shown = env.ok(&["config", "show", "--json"]);
    let doc: Value = serde_json::from_str(&shown.stdout).unwrap();
    assert_eq!(
        doc["settings"]["max_calls_per_answer"],
        json!({"value": 64, "source": "default"})
    );
    let config = env.home.join(".config/task-agent");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("config.json"), r#"{"max_calls_per_answer": 9}"#).unwrap();
    let shown = env.ok(&["config", "show", "--json"]);
    let doc: Value = serde_json::from_str(&shown.stdout).unwrap();
    assert_eq!(
        doc["settings"]["max_calls_per_answer"],
        json!({"value": 9, "source": "config"})
    );
    let shown = env.ok(&["config", "show", "--json", "--max-calls-per-answer", "3"]);
    let doc: Value = serde_json::from_str(&shown.stdout).unwrap();
    assert_eq!(doc["settings"]["max_calls_per_answer"]["value"], 3);
    let bad = env.run(&["config", "show", "--max-calls-per-answer", "0"], "");
    assert_eq!(bad.code, Some(2), "{bad:?}");
    std::fs::write(config.join("config.json"), r#"{"max_calls_per_answer": 0}"#).unwrap();
    let bad = env.run(&["config", "show"], "");
    assert!(
        bad.stderr
            .contains("max_calls_per_answer must be at least 1"),
        "{bad:?}"
    );
}

/// Item 21: a response head trickled one byte at a time, never silent for
/// as long as the stall timeout, fails the request once the stall timeout
/// has passed in all, instead of holding it for as long as it trickles.
#[test]
fn a_trickled_response_head_is_bounded_by_the_stall_timeout() {
    let env = TestEnv::new("trickle-head");
    let server = FakeServer::start(vec![FakeReply::TrickleHead {
        every: Duration::from_millis(300),
    }])
    .unwrap();
    let url = server.url();
    let started = Instant::now();
    let args = ["--base-url", &url, "--stall-timeout", "1", "-p", "hi"];
    let run = env.spawn(&args, "").finish(Duration::from_secs(20));
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(started.elapsed() < Duration::from_secs(10), "{run:?}");
    assert!(
        run.stderr.contains(&format!(
            "no answer from {url}/chat/completions: no response headers within 1 s"
        )),
        "{run:?}"
    );
}

/// Item 4: a base-URL password goes as `Authorization: Basic …`; a server
/// that echoes the header (and the `user:password` it decodes) in its 401
/// gets neither printed nor logged, in any form.
#[test]
fn an_echoed_basic_credential_is_never_shown_or_logged() {
    let env = TestEnv::new("basic-echo");
    // base64("alice:hunter2")
    let basic = "YWxpY2U6aHVudGVyMg==";
    let server = FakeServer::start(vec![FakeReply::Status {
        code: 401,
        body: format!(
            r#"{{"error":{{"message":"bad credentials alice:hunter2 in Authorization: Basic {basic}; raw {basic}"}}}}"#
        ),
        retry_after: None,
    }])
    .unwrap();
    let url = server.url().replace("http://", "http://alice:hunter2@");
    let run = env.run(&["--base-url", &url, "-p", "hi"], "");
    assert_eq!(run.code, Some(1), "{run:?}");
    let sent = server.requests();
    assert_eq!(
        sent[0].header("authorization"),
        Some(format!("Basic {basic}").as_str()),
        "the credential goes as Basic"
    );
    let log = std::fs::read_to_string(env.only_session()).unwrap();
    for shown in [&run.stderr, &log] {
        assert!(!shown.contains(basic), "{shown}");
        assert!(!shown.contains("hunter2"), "{shown}");
    }
    assert!(run.stderr.contains("HTTP 401"), "{run:?}");
    assert!(run.stderr.contains("Basic ***"), "{run:?}");
}

/// Beyond the list: two tool calls of one answer with the same id (a
/// server's number trusted) go back to the server with ids of their own,
/// each with its result, instead of a request a real server refuses.
#[test]
fn tool_calls_with_the_same_id_get_ids_of_their_own() {
    let env = TestEnv::new("same-ids");
    std::fs::write(env.cwd.join("x.txt"), "ex\n").unwrap();
    std::fs::write(env.cwd.join("y.txt"), "why\n").unwrap();
    let server = FakeServer::start(vec![
        FakeReply::tool_calls(
            "",
            &[
                ("dup", "read_file", r#"{"path":"x.txt"}"#),
                ("dup", "read_file", r#"{"path":"y.txt"}"#),
            ],
        ),
        FakeReply::text("Both read."),
    ])
    .unwrap();
    let run = env.run(&["--base-url", &server.url(), "-p", "read both"], "");
    assert_eq!(run.code, Some(0), "{run:?}");
    let sent: Value = serde_json::from_str(&server.requests()[1].body).unwrap();
    let messages = sent["messages"].as_array().unwrap();
    let asked: Vec<&str> = messages
        .iter()
        .flat_map(|m| m["tool_calls"].as_array().into_iter().flatten())
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    let answered: Vec<&str> = messages
        .iter()
        .filter_map(|m| m["tool_call_id"].as_str())
        .collect();
    assert_eq!(asked, ["dup", "call_1"], "{sent}");
    assert_eq!(answered, asked, "{sent}");
    let results: Vec<&str> = messages
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert!(
        results[0].contains("ex") && results[1].contains("why"),
        "{results:?}"
    );
}

/// Beyond the list: the calls of a non-streamed answer are its array, in
/// order; an `index` the server adds to each (here the same one twice) no
/// longer merges two calls into one.
#[test]
fn a_json_answer_runs_every_call_whatever_its_index() {
    let env = TestEnv::new("json-index");
    std::fs::write(env.cwd.join("x.txt"), "ex\n").unwrap();
    std::fs::write(env.cwd.join("y.txt"), "why\n").unwrap();
    let call = |id: &str, path: &str| {
        json!({"index": 0, "id": id, "type": "function", "function": {"name": "read_file",
               "arguments": json!({"path": path}).to_string()}})
    };
    let whole = json!({"id": "c", "object": "chat.completion", "choices": [{"index": 0,
        "message": {"role": "assistant", "content": null,
                    "tool_calls": [call("a", "x.txt"), call("b", "y.txt")]},
        "finish_reason": "tool_calls"}]})
    .to_string();
    let server = FakeServer::start(vec![
        FakeReply::Raw(format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{whole}",
            whole.len()
        )),
        FakeReply::text("Both read."),
    ])
    .unwrap();
    let run = env.run(&["--base-url", &server.url(), "-p", "read both"], "");
    assert_eq!(run.code, Some(0), "{run:?}");
    let results = tool_results(&records(&env.only_session()));
    let ids: Vec<&str> = results.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["a", "b"], "{results:?}");
    assert!(
        results[0].1.contains("ex") && results[1].1.contains("why"),
        "{results:?}"
    );
}

/// Beyond the list: a `Retry-After` header of 60,000 characters is not
/// copied whole into the failure line and the log.
#[test]
fn a_huge_retry_after_is_shown_in_part() {
    let env = TestEnv::new("retry-after");
    let huge = "9".repeat(60_000);
    let server = FakeServer::start(vec![FakeReply::Raw(format!(
        "HTTP/1.1 429 Too Many Requests\r\nretry-after: {huge}\r\ncontent-length: 4\r\nconnection: close\r\n\r\nslow"
    ))])
    .unwrap();
    let run = env.run(&["--base-url", &server.url(), "-p", "hi"], "");
    assert_eq!(run.code, Some(1), "{run:?}");
    let line = run
        .stderr
        .lines()
        .find(|l| l.contains("HTTP 429"))
        .expect("the failure line");
    assert!(line.contains("(retry after 9999"), "{line}");
    assert!(line.len() < 300, "{} chars", line.len());
    let log = std::fs::read_to_string(env.only_session()).unwrap();
    assert!(
        !log.contains(&huge[..1000]),
        "the log holds the whole header"
    );
}
