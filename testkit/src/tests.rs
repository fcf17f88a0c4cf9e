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

/// Reads one answer from a kept-alive connection: its head, and its body
/// by `Content-Length`, chunk by chunk, or to the close.
fn read_answer(stream: &mut TcpStream) -> (String, String) {
    let mut data = Vec::new();
    let mut byte = [0u8; 1];
    while find(&data, b"\r\n\r\n").is_none() {
        assert_eq!(stream.read(&mut byte).unwrap(), 1, "the head ended early");
        data.push(byte[0]);
    }
    let head = String::from_utf8(data).unwrap();
    let lower = head.to_ascii_lowercase();
    let mut body = Vec::new();
    if let Some(at) = lower.find("content-length: ") {
        let length: usize = lower[at + 16..].lines().next().unwrap().parse().unwrap();
        body.resize(length, 0);
        stream.read_exact(&mut body).unwrap();
    } else if lower.contains("transfer-encoding: chunked\r\n") {
        loop {
            let mut line = Vec::new();
            while !line.ends_with(b"\r\n") {
                stream.read_exact(&mut byte).unwrap();
                line.push(byte[0]);
            }
            let size =
                usize::from_str_radix(std::str::from_utf8(&line).unwrap().trim(), 16).unwrap();
            let mut piece = vec![0u8; size + 2];
            stream.read_exact(&mut piece).unwrap();
            assert!(piece.ends_with(b"\r\n"));
            if size == 0 {
                break;
            }
            body.extend_from_slice(&piece[..size]);
        }
    } else {
        stream.read_to_end(&mut body).unwrap();
    }
    (head, String::from_utf8(body).unwrap())
}

fn keeping(replies: Vec<FakeReply>, limit: Option<Limit>) -> FakeServer {
    let options = FakeOptions {
        limit,
        keep_alive: true,
        ..FakeOptions::default()
    };
    FakeServer::start_with_options(FakeProtocol::OpenAi, replies, options).unwrap()
}

#[test]
fn keep_alive_serves_requests_one_after_another_on_one_connection() {
    let server = keeping(
        vec![
            FakeReply::text("hello world"),
            FakeReply::Json {
                text: "whole".into(),
                usage: None,
            },
            FakeReply::CutAfter {
                chunks: vec!["par".into()],
            },
            FakeReply::text("again"),
        ],
        None,
    );
    let mut stream = TcpStream::connect(("127.0.0.1", server.port())).unwrap();
    stream.write_all(post("{}").as_bytes()).unwrap();
    let (head, body) = read_answer(&mut stream);
    assert!(head.contains("Transfer-Encoding: chunked\r\n"), "{head}");
    assert!(!head.contains("Connection: close"), "{head}");
    assert!(body.contains(r#"{"content":" world"}"#), "{body}");
    assert!(body.ends_with("data: [DONE]\n\n"), "{body}");

    stream.write_all(post("{}").as_bytes()).unwrap();
    let (head, body) = read_answer(&mut stream);
    assert!(head.contains("Content-Length: "), "{head}");
    assert!(!head.contains("Connection: close"), "{head}");
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(json["choices"][0]["message"]["content"], "whole");

    // A cut stream still ends by closing.
    stream.write_all(post("{}").as_bytes()).unwrap();
    let (head, body) = read_answer(&mut stream);
    assert!(head.contains("Connection: close\r\n"), "{head}");
    assert!(!head.contains("chunked"), "{head}");
    assert!(body.contains(r#"{"content":"par"}"#) && !body.contains("[DONE]"));
    assert_eq!(server.connections(), 1);

    let mut stream = TcpStream::connect(("127.0.0.1", server.port())).unwrap();
    stream.write_all(post("{}").as_bytes()).unwrap();
    let (_, body) = read_answer(&mut stream);
    assert!(body.contains("again"));
    assert_eq!(server.connections(), 2);
    assert_eq!(server.requests().len(), 4);

    // An idle kept-alive connection does not hold up the end.
    let start = Instant::now();
    drop(server);
    assert!(start.elapsed() < Duration::from_secs(1));
}

#[test]
fn without_keep_alive_each_request_has_its_connection() {
    let server = FakeServer::start(vec![FakeReply::text("a"), FakeReply::text("b")]).unwrap();
    exchange(&server, &post("{}"));
    exchange(&server, &post("{}"));
    assert_eq!(server.connections(), 2);
}

fn chat(stream: bool, chars: usize, max_tokens: Option<u64>) -> String {
    let mut body = json!({"model": "m", "stream": stream,
        "messages": [{"role": "user", "content": "x".repeat(chars)}]});
    if stream {
        body["stream_options"] = json!({"include_usage": true});
    }
    if let Some(max) = max_tokens {
        body["max_tokens"] = json!(max);
    }
    post(&body.to_string())
}

#[test]
fn llama_cpp_python_refuses_a_stream_with_an_empty_body() {
    let limit = Limit {
        tokens: 100,
        bytes_per_token: 4,
        says: Overflows::LlamaCppPython,
        usage: false,
    };
    let big = 500;
    let plain = FakeServer::start_limited(FakeProtocol::OpenAi, vec![], Some(limit)).unwrap();
    let answer = exchange(&plain, &chat(true, big, None));
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(
        head.contains("Content-Type: text/event-stream\r\n"),
        "{head}"
    );
    assert!(head.ends_with("Connection: close"), "{head}");
    assert_eq!(body, "");

    // Kept alive, as uvicorn: the last chunk alone, then closed unsaid.
    let server = keeping(vec![FakeReply::text("fits")], Some(limit));
    let answer = exchange(&server, &chat(true, big, None));
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(
        head.ends_with("Transfer-Encoding: chunked\r\nCache-Control: no-cache"),
        "{head}"
    );
    assert_eq!(body, "0\r\n\r\n");

    let mut stream = TcpStream::connect(("127.0.0.1", server.port())).unwrap();
    stream
        .write_all(chat(false, big, Some(10)).as_bytes())
        .unwrap();
    let (head, body) = read_answer(&mut stream);
    assert!(head.starts_with("HTTP/1.1 400 "), "{head}");
    let prompt = (server.requests()[1].body.len() as u64).div_ceil(4);
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(json["error"]["code"], "context_length_exceeded");
    assert_eq!(
        json["error"]["message"],
        format!(
            "This model's maximum context length is 100 tokens. However, you requested {} tokens ({prompt} in the messages, 10 in the completion). Please reduce the length of the messages or completion.",
            prompt + 10
        )
    );
    // Refusals use no reply; the kept-alive connection goes on.
    stream.write_all(chat(true, 10, None).as_bytes()).unwrap();
    let (head, body) = read_answer(&mut stream);
    assert!(head.contains("chunked"), "{head}");
    assert!(body.contains("fits") && !body.contains("usage"), "{body}");
    let (_, unnamed) = Overflows::LlamaCppPython.answer(7, 5);
    assert!(unnamed.contains("(7 in the messages, None in the completion)"));
}

#[test]
fn ollama_truncates_silently() {
    let limit = Limit {
        tokens: 50,
        bytes_per_token: 4,
        says: Overflows::Truncates,
        usage: true,
    };
    let server = FakeServer::start_limited(
        FakeProtocol::OpenAi,
        vec![FakeReply::text("sure"), FakeReply::text("small")],
        Some(limit),
    )
    .unwrap();
    let answer = exchange(&server, &chat(true, 1000, None));
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
    assert!(answer.contains(r#""usage":{"prompt_tokens":50,"completion_tokens":1"#));
    let answer = exchange(&server, &chat(true, 4, None));
    let prompt = (server.requests()[1].body.len() as u64).div_ceil(4);
    assert!(
        answer.contains(&format!(r#""prompt_tokens":{prompt},"#)),
        "{answer}"
    );
}

/// The `content` pieces and the finish reason of an OpenAI stream.
fn pieces_and_finish(answer: &str) -> (Vec<String>, String, serde_json::Value) {
    let all = events(answer);
    let pieces = all
        .iter()
        .filter_map(|(_, d)| d["choices"][0]["delta"]["content"].as_str())
        .filter(|p| !p.is_empty())
        .map(str::to_owned)
        .collect();
    let finish = all
        .iter()
        .find_map(|(_, d)| d["choices"][0]["finish_reason"].as_str())
        .unwrap_or_default()
        .to_owned();
    let usage = all
        .iter()
        .find(|(_, d)| d.get("usage").is_some())
        .map(|(_, d)| d["usage"].clone())
        .unwrap_or_default();
    (pieces, finish, usage)
}

#[test]
fn a_rambling_model_stops_at_the_length_limit() {
    // max_tokens, counted in words without a limit.
    let server = FakeServer::start(vec![
        FakeReply::Rambles {
            piece: " blah".into(),
        },
        FakeReply::Rambles {
            piece: " blah".into(),
        },
    ])
    .unwrap();
    let (pieces, finish, usage) = pieces_and_finish(&exchange(&server, &chat(true, 4, Some(7))));
    assert_eq!((pieces.len(), finish.as_str()), (7, "length"));
    assert_eq!(usage["completion_tokens"], 7);
    let (pieces, _, _) = pieces_and_finish(&exchange(&server, &chat(true, 4, None)));
    assert_eq!(pieces.len() as u64, RAMBLE_WORDS);

    // Under a limit: the context the prompt leaves, in bytes a token.
    let limit = Limit {
        tokens: 200,
        bytes_per_token: 4,
        says: Overflows::OpenAi,
        usage: true,
    };
    let ramble = || FakeReply::Rambles {
        piece: "blah".into(),
    };
    let server =
        FakeServer::start_limited(FakeProtocol::OpenAi, vec![ramble(), ramble()], Some(limit))
            .unwrap();
    let (pieces, finish, usage) = pieces_and_finish(&exchange(&server, &chat(true, 40, None)));
    let prompt = (server.requests()[0].body.len() as u64).div_ceil(4);
    assert_eq!(pieces.len() as u64, 200 - prompt);
    assert_eq!(finish, "length");
    assert_eq!(usage["prompt_tokens"], prompt);
    assert_eq!(usage["completion_tokens"], 200 - prompt);
    // max_tokens past what the context leaves is cut to it.
    let (pieces, _, _) = pieces_and_finish(&exchange(&server, &chat(true, 40, Some(100_000))));
    let prompt = (server.requests()[1].body.len() as u64).div_ceil(4);
    assert_eq!(pieces.len() as u64, 200 - prompt);

    // Anthropic says max_tokens.
    let server = FakeServer::start_anthropic(vec![FakeReply::Rambles {
        piece: " blah".into(),
    }])
    .unwrap();
    let all = events(&exchange(&server, &chat(true, 4, Some(3))));
    let delta = all
        .iter()
        .find(|(n, _)| n.as_deref() == Some("message_delta"))
        .unwrap();
    assert_eq!(delta.1["delta"]["stop_reason"], "max_tokens");
    assert_eq!(delta.1["usage"]["output_tokens"], 3);
    assert_eq!(all.last().unwrap().0.as_deref(), Some("message_stop"));
}

/// A thinking answer streams its block (text pieces, then the signature)
/// before the call; a follow-up whose calling message lacks the block is
/// refused with the API's 400, and one that sends it back unchanged gets
/// the next reply.
#[test]
fn anthropic_thinking_streams_and_must_come_back() {
    let call = [("toolu_1", "read_file", r#"{"path":"notes.txt"}"#)];
    let server = FakeServer::start_anthropic(vec![
        FakeReply::thinks("The notes first.", FakeReply::tool_calls("", &call)),
        FakeReply::text("Port 5432."),
    ])
    .unwrap();
    let first = json!({"model": "m", "max_tokens": 4096, "stream": true,
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        "messages": [{"role": "user", "content": "look"}]});
    let answer = exchange(&server, &post(&first.to_string()));
    let events = events(&answer);
    let signature = thinking::signature("The notes first.");
    assert_eq!(
        events[1].1["content_block"],
        json!({"type": "thinking", "thinking": ""})
    );
    let deltas: Vec<&serde_json::Value> = events
        .iter()
        .filter(|(_, d)| d["index"] == 0 && d["type"] == "content_block_delta")
        .map(|(_, d)| &d["delta"])
        .collect();
    let text: String = deltas
        .iter()
        .filter_map(|d| d["thinking"].as_str())
        .collect();
    assert_eq!(text, "The notes first.");
    assert_eq!(
        deltas.last().unwrap(),
        &&json!({"type": "signature_delta", "signature": signature})
    );
    let block = json!({"type": "thinking", "thinking": "The notes first.", "signature": signature});
    let use_ = json!({"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "notes.txt"}});
    let result = json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "port"}]});
    let mut follow = first.clone();
    follow["messages"] = json!([
        {"role": "user", "content": "look"},
        {"role": "assistant", "content": [use_]},
        result,
    ]);
    let refused = exchange(&server, &post(&follow.to_string()));
    assert!(refused.starts_with("HTTP/1.1 400"), "{refused}");
    let error: serde_json::Value =
        serde_json::from_str(refused.split_once("\r\n\r\n").unwrap().1).unwrap();
    assert_eq!(error["type"], "error");
    assert_eq!(error["error"]["type"], "invalid_request_error");
    assert!(
        error["error"]["message"].as_str().unwrap().starts_with(
            "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`."
        ),
        "{error}"
    );
    follow["messages"][1]["content"] = json!([block, use_]);
    let answered = exchange(&server, &post(&follow.to_string()));
    assert!(answered.starts_with("HTTP/1.1 200"), "{answered}");
    assert!(answered.contains("Port"), "{answered}");
    assert_eq!(server.requests().len(), 3);
}

/// Playing llama-server, a history holding a call whose arguments do not
/// parse is refused whole with its `500`; parsing ones are answered.
#[test]
fn llama_server_refuses_arguments_that_do_not_parse() {
    let options = FakeOptions {
        parses_arguments: true,
        ..FakeOptions::default()
    };
    let server = FakeServer::start_with_options(
        FakeProtocol::OpenAi,
        vec![FakeReply::text("fine")],
        options,
    )
    .unwrap();
    let history = |arguments: &str| {
        serde_json::json!({"messages": [{"role": "assistant", "content": "",
            "tool_calls": [{"id": "c", "type": "function",
                "function": {"name": "list_dir", "arguments": arguments}}]}]})
        .to_string()
    };
    let mut stream = TcpStream::connect(("127.0.0.1", server.port())).unwrap();
    stream
        .write_all(post(&history(r#"{"path": "a/b/c"#)).as_bytes())
        .unwrap();
    let (head, body) = read_answer(&mut stream);
    assert!(head.starts_with("HTTP/1.1 500"), "{head}");
    assert!(
        body.contains("Failed to parse tool call arguments as JSON"),
        "{body}"
    );
    let mut stream = TcpStream::connect(("127.0.0.1", server.port())).unwrap();
    stream
        .write_all(post(&history(r#"{"path": "."}"#)).as_bytes())
        .unwrap();
    let (head, body) = read_answer(&mut stream);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(body.contains("fine"), "{body}");
}
