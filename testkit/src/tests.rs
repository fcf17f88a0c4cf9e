//! Unit tests of the parent module.

use super::*;

/// Sends a raw request and reads the whole close-delimited answer.
fn exchange(server: &FakeServer, request: &str) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", server.port())).unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

fn post(body: &str) -> String {
    format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Test: yes\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
}

#[test]
fn streams_chunks_usage_and_done_then_runs_dry() {
    let server = FakeServer::start(vec![FakeReply::text("hello big world")]).unwrap();
    let answer = exchange(&server, &post(r#"{"a":"é"}"#));
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
    assert!(answer.contains("Content-Type: text/event-stream\r\n"));
    assert!(answer.contains("Connection: close\r\n"));
    assert!(answer.contains(r#""delta":{"content":" big"}"#));
    assert!(answer.contains(
        r#""choices":[],"usage":{"prompt_tokens":10,"completion_tokens":3,"total_tokens":13}"#
    ));
    assert!(answer.ends_with("data: [DONE]\n\n"));

    let answer = exchange(&server, &post(""));
    assert!(answer.starts_with("HTTP/1.1 500 "), "{answer}");
    assert!(answer.contains("no reply left for request 2 (the script holds 1)"));

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].method, "POST");
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(requests[0].body, r#"{"a":"é"}"#);
    assert_eq!(requests[0].header("x-test"), Some("yes"));
    assert_eq!(requests[1].body, "");
}

#[test]
fn text_splits_at_words_and_keeps_every_byte() {
    let FakeReply::Stream { chunks, usage } = FakeReply::text("a  b\nc ") else {
        panic!("text streams");
    };
    assert_eq!(chunks, ["a", "  b", "\nc", " "]);
    assert_eq!(chunks.concat(), "a  b\nc ");
    assert_eq!(usage, Some((10, 4)));
}

#[test]
fn status_json_cut_and_raw() {
    let server = FakeServer::start(vec![
        FakeReply::Status {
            code: 429,
            body: "slow down".into(),
            retry_after: Some(7),
        },
        FakeReply::Json {
            text: "hi \"you\"".into(),
            usage: Some((1, 2)),
        },
        FakeReply::CutAfter {
            chunks: vec!["par".into()],
        },
        FakeReply::Raw("nonsense".into()),
    ])
    .unwrap();
    let answer = exchange(&server, &post("{}"));
    assert!(answer.starts_with("HTTP/1.1 429 Too Many Requests\r\n"));
    assert!(answer.contains("Retry-After: 7\r\n"));
    assert!(answer.ends_with("\r\n\r\nslow down"));

    let answer = exchange(&server, &post("{}"));
    let body = answer.split("\r\n\r\n").nth(1).unwrap();
    let json: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(json["choices"][0]["message"]["content"], "hi \"you\"");
    assert_eq!(json["usage"]["total_tokens"], 3);

    let answer = exchange(&server, &post("{}"));
    assert!(answer.contains(r#"{"content":"par"}"#));
    assert!(!answer.contains("[DONE]"));

    assert_eq!(exchange(&server, &post("{}")), "nonsense");
}

#[test]
fn a_client_that_sends_nothing_uses_no_reply() {
    let server = FakeServer::start(vec![FakeReply::Garbage("data: x\n\n".into())]).unwrap();
    drop(TcpStream::connect(("127.0.0.1", server.port())).unwrap());
    let answer = exchange(&server, &post("{}"));
    assert!(answer.ends_with("\r\n\r\ndata: x\n\n"), "{answer}");
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn drop_stops_a_stalled_server_promptly() {
    let server = FakeServer::start(vec![FakeReply::Stall {
        chunks: vec!["a".into()],
    }])
    .unwrap();
    let mut stream = TcpStream::connect(("127.0.0.1", server.port())).unwrap();
    stream.write_all(post("{}").as_bytes()).unwrap();
    assert_eq!(
        wait_for_requests(&server, 1, Duration::from_secs(5)).len(),
        1
    );
    let start = Instant::now();
    drop(server);
    assert!(start.elapsed() < Duration::from_secs(1));
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.contains(r#"{"content":"a"}"#));
}

/// The `data:` of each event of an answer, parsed, with its `event:`.
fn events(answer: &str) -> Vec<(Option<String>, serde_json::Value)> {
    let body = answer.split_once("\r\n\r\n").unwrap().1;
    body.split("\n\n")
        .filter(|e| !e.is_empty())
        .map(|e| {
            let mut name = None;
            let mut data = serde_json::Value::Null;
            for line in e.lines() {
                if let Some(n) = line.strip_prefix("event: ") {
                    name = Some(n.to_owned());
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data = serde_json::from_str(d).unwrap_or_else(|_| json!(d));
                }
            }
            (name, data)
        })
        .collect()
}

#[test]
fn openai_tool_calls_stream_arguments_in_fragments() {
    let server = FakeServer::start(vec![FakeReply::tool_calls(
        "ok",
        &[
            ("c1", "read_file", r#"{"path":"x"}"#),
            ("c2", "agent_info", "{}"),
        ],
    )])
    .unwrap();
    let answer = exchange(&server, &post("{}"));
    let events = events(&answer);
    let deltas: Vec<&serde_json::Value> = events
        .iter()
        .filter_map(|(_, d)| d["choices"][0].get("delta"))
        .collect();
    let calls: Vec<&serde_json::Value> = deltas
        .iter()
        .filter_map(|d| d["tool_calls"].get(0))
        .collect();
    assert_eq!(calls[0]["index"], 0);
    assert_eq!(calls[0]["id"], "c1");
    assert_eq!(calls[0]["function"]["name"], "read_file");
    let arguments = |index: u64| -> Vec<&str> {
        calls
            .iter()
            .filter(|c| c["index"] == index && c.get("id").is_none())
            .map(|c| c["function"]["arguments"].as_str().unwrap())
            .collect()
    };
    assert_eq!(arguments(0), [r#"{"pa"#, r#"th":"#, r#""x"}"#]);
    assert_eq!(arguments(1), ["{", "}"]);
    assert_eq!(calls[4]["id"], "c2");
    let finish = &events[events.len() - 3].1["choices"][0]["finish_reason"];
    assert_eq!(finish, "tool_calls");
    assert_eq!(events[events.len() - 2].1["usage"]["completion_tokens"], 2);
    assert!(answer.ends_with("data: [DONE]\n\n"));
}

#[test]
fn anthropic_streams_named_events() {
    let server = FakeServer::start_anthropic(vec![
        FakeReply::tool_calls("Hi you", &[("t1", "grep", r#"{"pattern":"a"}"#)]),
        FakeReply::CutAfter {
            chunks: vec!["par".into()],
        },
        FakeReply::Json {
            text: "whole".into(),
            usage: Some((3, 4)),
        },
    ])
    .unwrap();
    let answer = exchange(&server, &post("{}"));
    assert!(answer.contains("Content-Type: text/event-stream\r\n"));
    let all = events(&answer);
    let names: Vec<&str> = all.iter().map(|(n, _)| n.as_deref().unwrap()).collect();
    assert_eq!(
        names,
        [
            "message_start",
            "content_block_start",
            "ping",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
    );
    for (name, data) in &all {
        assert_eq!(data["type"], name.as_deref().unwrap());
    }
    assert_eq!(all[0].1["message"]["usage"]["input_tokens"], 10);
    assert_eq!(all[3].1["delta"]["text"], "Hi");
    assert_eq!(all[6].1["index"], 1);
    assert_eq!(all[6].1["content_block"]["id"], "t1");
    let json: String = all[7..11]
        .iter()
        .map(|(_, d)| d["delta"]["partial_json"].as_str().unwrap())
        .collect();
    assert_eq!(json, r#"{"pattern":"a"}"#);
    assert_eq!(all[7].1["delta"]["partial_json"], "");
    assert_eq!(all[12].1["delta"]["stop_reason"], "tool_use");
    assert_eq!(all[12].1["usage"]["output_tokens"], 1);

    let answer = exchange(&server, &post("{}"));
    let names: Vec<String> = events(&answer)
        .into_iter()
        .map(|(n, _)| n.unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "message_start",
            "content_block_start",
            "ping",
            "content_block_delta"
        ]
    );

    let answer = exchange(&server, &post("{}"));
    let body = answer.split("\r\n\r\n").nth(1).unwrap();
    let json: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(json["content"][0]["text"], "whole");
    assert_eq!(json["usage"]["output_tokens"], 4);
}

#[test]
fn fragments_cut_at_characters() {
    assert_eq!(fragments(""), Vec::<&str>::new());
    assert_eq!(fragments("a"), ["a"]);
    assert_eq!(fragments("ab"), ["a", "b"]);
    assert_eq!(fragments("éüñ"), ["é", "ü", "ñ"]);
    assert_eq!(fragments("{\"k\":1}").concat(), "{\"k\":1}");
}
