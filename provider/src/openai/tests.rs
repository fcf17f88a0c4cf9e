//! Unit tests of the parent module.

use std::net::TcpListener;

use super::*;
use crate::testing::{request, run};
use crate::FailureKind;
use revolve_testkit::{FakeReply, FakeServer};

fn fake(replies: Vec<FakeReply>) -> (FakeServer, OpenAi) {
    let server = FakeServer::start(replies).unwrap();
    let provider = OpenAi::new(format!("{}/", server.url()), Some("sk-secret-123".into()));
    (server, provider)
}

#[test]
fn openai_streams_text_and_usage_and_sends_the_body_verbatim() {
    let (server, provider) = fake(vec![FakeReply::text("Hello big world")]);
    let req = request(&["hi"]);
    let mut pieces = Vec::new();
    let reply = provider
        .complete(&req, &mut |p| pieces.push(p.to_owned()))
        .unwrap();
    assert_eq!(reply.text, "Hello big world");
    assert_eq!(
        reply.usage,
        Some(Usage {
            prompt_tokens: 10,
            completion_tokens: 3,
            ..Default::default()
        })
    );
    assert_eq!(pieces, ["Hello", " big", " world"]);

    let recorded = server.requests();
    assert_eq!(recorded.len(), 1);
    let r = &recorded[0];
    assert_eq!(
        (r.method.as_str(), r.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(r.body, req.body);
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.header("accept"), Some("text/event-stream"));
    assert_eq!(r.header("authorization"), Some("Bearer sk-secret-123"));
    assert_eq!(provider.name(), "openai");
}

#[test]
fn openai_without_a_key_sends_no_authorization() {
    let server = FakeServer::start(vec![FakeReply::text("x")]).unwrap();
    let provider = OpenAi::new(server.url(), None);
    run(&provider).0.unwrap();
    assert_eq!(server.requests()[0].header("authorization"), None);
    assert!(!format!("{provider:?}").contains("sk-"));
}

#[test]
fn debug_hides_the_key() {
    let provider = OpenAi::new("http://h/v1///", Some("sk-secret-123".into()));
    assert_eq!(provider.base_url(), "http://h/v1");
    assert_eq!(provider.endpoint(), "http://h/v1/chat/completions");
    let shown = format!("{provider:?}");
    assert!(
        !shown.contains("sk-secret-123") && shown.contains("[hidden]"),
        "{shown}"
    );
}

#[test]
fn openai_reads_a_json_answer() {
    let (_server, provider) = fake(vec![
        FakeReply::Json {
            text: "Whole answer".into(),
            usage: Some((5, 2)),
        },
        FakeReply::Json {
            text: "No usage".into(),
            usage: None,
        },
    ]);
    let (reply, pieces) = run(&provider);
    let reply = reply.unwrap();
    assert_eq!(reply.text, "Whole answer");
    assert_eq!(
        reply.usage,
        Some(Usage {
            prompt_tokens: 5,
            completion_tokens: 2,
            ..Default::default()
        })
    );
    assert_eq!(pieces, ["Whole answer"]);
    assert_eq!(
        run(&provider).0.unwrap(),
        Reply {
            text: "No usage".into(),
            ..Reply::default()
        }
    );
}

#[test]
fn openai_http_error_names_status_and_url_not_the_key() {
    let body =
        "{\"error\":{\"message\":\"overloaded\nplease wait\"}}".to_owned() + &"x".repeat(500);
    let (server, provider) = fake(vec![
        FakeReply::Status {
            code: 503,
            body,
            retry_after: Some(30),
        },
        FakeReply::Status {
            code: 401,
            body: "bad key sk-secret-123".into(),
            retry_after: None,
        },
    ]);
    let err = run(&provider).0.unwrap_err();
    let url = format!("{}/chat/completions", server.url());
    assert!(
            err.message.starts_with(&format!(
                "HTTP 503 Service Unavailable from {url} (retry after 30): {{\"error\":{{\"message\":\"overloaded please wait\"}}}}xxx"
            )),
            "{err}"
        );
    assert!(err.message.ends_with("x…"), "{err}");
    assert!(!err.message.contains('\n'));
    assert!(err.message.chars().count() < 300);
    assert_eq!(err.partial, "");

    let err = run(&provider).0.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "HTTP 401 Unauthorized from {url}: the server refused the API key; check it, and \
             that --base-url {} is the server it is for: bad key [key]",
            server.url()
        )
    );
}

#[test]
fn openai_cut_stream_keeps_the_partial_text() {
    let (server, provider) = fake(vec![FakeReply::CutAfter {
        chunks: vec!["Hel".into(), "lo".into()],
    }]);
    let (result, pieces) = run(&provider);
    let err = result.unwrap_err();
    assert_eq!(
        err.message,
        format!(
            "stream from {}/chat/completions ended before [DONE]",
            server.url()
        )
    );
    assert_eq!(err.partial, "Hello");
    assert_eq!(pieces, ["Hel", "lo"]);
}

#[test]
fn openai_stalled_stream_fails_after_the_stall_timeout() {
    let (server, provider) = fake(vec![FakeReply::Stall {
        chunks: vec!["Wait".into()],
    }]);
    let provider = provider.with_stall_timeout(Duration::from_millis(300));
    let start = std::time::Instant::now();
    let (result, pieces) = run(&provider);
    let err = result.unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(5));
    assert_eq!(
        err.message,
        format!(
            "stream from {}/chat/completions stalled: nothing received for 300 ms",
            server.url()
        )
    );
    // The text arrived before the stall, so it was delivered as it came.
    assert_eq!(
        (err.partial.as_str(), pieces),
        ("Wait", vec!["Wait".to_owned()])
    );
}

#[test]
fn openai_keepalives_and_empty_deltas_alone_trip_the_stall_timeout() {
    let (server, provider) = fake(vec![FakeReply::Keepalive {
        chunks: vec!["Wait".into()],
        every: Duration::from_millis(50),
    }]);
    let provider = provider.with_stall_timeout(Duration::from_millis(300));
    let start = std::time::Instant::now();
    let (result, pieces) = run(&provider);
    let err = result.unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(5));
    assert_eq!(
        err.message,
        format!(
            "stream from {}/chat/completions stalled: no content received for 300 ms \
                 (only keepalives or empty chunks)",
            server.url()
        )
    );
    assert_eq!(err.kind, FailureKind::Broken);
    assert_eq!(
        (err.partial.as_str(), pieces),
        ("Wait", vec!["Wait".to_owned()])
    );
}

/// A local server silent for longer than the stall timeout while it reads
/// the prompt, within the prefill wait, then answering: the answer comes.
#[test]
fn openai_a_local_server_reading_the_prompt_gets_the_prefill_wait() {
    let (_server, provider) = fake(vec![FakeReply::Delayed(
        Duration::from_millis(900),
        Box::new(FakeReply::text("Hello big world")),
    )]);
    let provider = provider
        .with_stall_timeout(Duration::from_millis(300))
        .with_prefill_wait(Duration::from_secs(5));
    let (result, pieces) = run(&provider);
    assert_eq!(result.unwrap().text, "Hello big world");
    assert_eq!(pieces.concat(), "Hello big world");
}

/// Silent past the prefill wait before the head: the new message names
/// the wait and what raises it.
#[test]
fn openai_a_local_server_silent_past_the_prefill_wait_fails_saying_so() {
    let (server, provider) = fake(vec![FakeReply::Hang]);
    let provider = provider
        .with_stall_timeout(Duration::from_millis(300))
        .with_prefill_wait(Duration::from_millis(800));
    let start = std::time::Instant::now();
    let (result, pieces) = run(&provider);
    let err = result.unwrap_err();
    let took = start.elapsed();
    assert!(took >= Duration::from_millis(800), "{took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert!(
        err.message.starts_with(&format!(
            "no answer from {}/chat/completions: ",
            server.url()
        )),
        "{}",
        err.message
    );
    assert!(
        err.message
            .ends_with("800 ms while the local server read the prompt (--stall-timeout raises it)"),
        "{}",
        err.message
    );
    assert_eq!(err.kind, FailureKind::Broken);
    assert!(pieces.is_empty());
}

/// A head at once, then only keepalives past the prefill wait: the stream
/// fails with the prefill wait's message, not the stall timeout's.
#[test]
fn openai_keepalives_before_the_first_content_fail_after_the_prefill_wait() {
    let (server, provider) = fake(vec![FakeReply::Keepalive {
        chunks: vec![],
        every: Duration::from_millis(50),
    }]);
    let provider = provider
        .with_stall_timeout(Duration::from_millis(300))
        .with_prefill_wait(Duration::from_millis(900));
    let start = std::time::Instant::now();
    let (result, pieces) = run(&provider);
    let err = result.unwrap_err();
    let took = start.elapsed();
    assert!(took >= Duration::from_millis(900), "{took:?}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_eq!(
        err.message,
        format!(
            "stream from {}/chat/completions stalled: no content received for 900 ms \
                 while the local server read the prompt (--stall-timeout raises it)",
            server.url()
        )
    );
    assert_eq!(err.kind, FailureKind::Broken);
    assert!(pieces.is_empty());
}

/// After the first content the stall timeout holds again, for silence and
/// for keepalives alike, however long the prefill wait.
#[test]
fn openai_after_the_first_content_the_stall_timeout_holds_again() {
    // One server each: a stalled connection stays open (its read goes on
    // until the agent's timeout), and the fake serves one at a time.
    let replies = [
        FakeReply::Stall {
            chunks: vec!["Wait".into()],
        },
        FakeReply::Keepalive {
            chunks: vec!["Wait".into()],
            every: Duration::from_millis(50),
        },
    ];
    let expected = [
        "nothing received for 300 ms",
        "no content received for 300 ms (only keepalives or empty chunks)",
    ];
    for (reply, expected) in replies.into_iter().zip(expected) {
        let (server, provider) = fake(vec![reply]);
        let provider = provider
            .with_stall_timeout(Duration::from_millis(300))
            .with_prefill_wait(Duration::from_secs(30));
        let start = std::time::Instant::now();
        let (result, pieces) = run(&provider);
        let err = result.unwrap_err();
        assert!(start.elapsed() < Duration::from_secs(5));
        assert_eq!(
            err.message,
            format!(
                "stream from {}/chat/completions stalled: {expected}",
                server.url()
            )
        );
        assert_eq!(err.kind, FailureKind::Broken);
        assert_eq!(
            (err.partial.as_str(), pieces),
            ("Wait", vec!["Wait".to_owned()])
        );
    }
}

/// An explicit stall timeout holds before the first content too, for a
/// local server as for any: no prefill wait.
#[test]
fn openai_an_explicit_stall_timeout_holds_before_the_first_content() {
    let (server, provider) = fake(vec![FakeReply::Delayed(
        Duration::from_secs(2),
        Box::new(FakeReply::text("late")),
    )]);
    assert!(http::loopback(&server.url()));
    let provider = provider.with_stall_timeout(Duration::from_millis(300));
    let start = std::time::Instant::now();
    let (result, pieces) = run(&provider);
    let err = result.unwrap_err();
    assert!(start.elapsed() < Duration::from_millis(1500));
    assert_eq!(
        err.message,
        format!(
            "no answer from {}/chat/completions: no response headers within 300 ms",
            server.url()
        )
    );
    assert!(pieces.is_empty());
}

/// A remote server never gets the prefill wait.
#[test]
fn openai_a_remote_server_gets_no_prefill_wait() {
    let remote = OpenAi::new("https://api.example.com/v1", None)
        .with_stall_timeout(Duration::from_millis(300))
        .with_prefill_wait(Duration::from_secs(30));
    assert_eq!(remote.http.prefill(), None);
    let local = OpenAi::new("http://localhost:8080/v1", None);
    assert_eq!(
        local.http.prefill(),
        Some(revolve_core::policy::LOCAL_PREFILL_WAIT)
    );
    let explicit = local.with_stall_timeout(crate::STALL_TIMEOUT);
    assert_eq!(explicit.http.prefill(), None);
}

#[test]
fn openai_reasoning_deltas_are_progress() {
    let data = r#"{"choices":[{"index":0,"delta":{"content":"","reasoning":"hmm"}}]}"#;
    let event = SseEvent {
        event: None,
        data: data.into(),
    };
    assert!(Chat::carries_unkept(&event));
    let empty = r#"{"choices":[{"index":0,"delta":{"reasoning":null,"content":""}}]}"#;
    let event = SseEvent {
        event: None,
        data: empty.into(),
    };
    assert!(!Chat::carries_unkept(&event));
}

#[test]
fn openai_garbage_is_an_error_not_a_panic() {
    let (server, provider) = fake(vec![
        FakeReply::Garbage(
            "data: {\"choices\":[{\"delta\":{\"content\":\"ok\"}}]}\n\ndata: {not json\n\n".into(),
        ),
        FakeReply::Garbage("data: {\"error\":{\"message\":\"quota\"}}\n\n".into()),
        FakeReply::Garbage("\u{0}\u{1}binary\r\r\n\n:::\n\n".into()),
        // The request sent again unstreamed after a stream of nothing.
        FakeReply::Garbage(":::\n\n".into()),
        FakeReply::Raw("this is not HTTP\r\n\r\n".into()),
        FakeReply::Status {
            code: 200,
            body: "{\"choices\":[]}".into(),
            retry_after: None,
        },
        FakeReply::Status {
            code: 200,
            body: "{\"choices\":[{\"message\":{".into(),
            retry_after: None,
        },
    ]);
    let url = format!("{}/chat/completions", server.url());

    let err = run(&provider).0.unwrap_err();
    assert!(
        err.message
            .starts_with(&format!("bad JSON in stream from {url}: ")),
        "{err}"
    );
    assert!(err.message.ends_with(": {not json"), "{err}");
    assert_eq!(err.partial, "ok");

    let err = run(&provider).0.unwrap_err();
    assert_eq!(err.message, format!("error in stream from {url}: quota"));

    let err = run(&provider).0.unwrap_err();
    assert_eq!(
        err.message,
        format!(
            "stream from {url} ended before [DONE] (sent again unstreamed: \
             the stream had ended before [DONE] with nothing in it)"
        )
    );

    let err = run(&provider).0.unwrap_err();
    assert!(
        err.message
            .starts_with(&format!("bad HTTP answer from {url}: ")),
        "{err}"
    );

    let err = run(&provider).0.unwrap_err();
    assert!(
        err.message
            .starts_with(&format!("answer from {url} has no choices")),
        "{err}"
    );

    let err = run(&provider).0.unwrap_err();
    assert!(
        err.message.starts_with(&format!("bad JSON from {url}: ")),
        "{err}"
    );
}

#[test]
fn openai_reads_sse_sent_as_another_content_type() {
    let body = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: [DONE]\n\n";
    let (_server, provider) = fake(vec![FakeReply::Status {
        code: 200,
        body: body.into(),
        retry_after: None,
    }]);
    assert_eq!(
        run(&provider).0.unwrap(),
        Reply {
            text: "a".into(),
            ..Reply::default()
        }
    );
}

#[test]
fn openai_bad_key_or_url_says_so_without_the_key() {
    let provider = OpenAi::new("http://127.0.0.1:9/v1", Some("sk-bad\nkey".into()));
    let err = run(&provider).0.unwrap_err();
    let prefix = "cannot send to http://127.0.0.1:9/v1/chat/completions: http: ";
    assert!(err.message.starts_with(prefix), "{err}");
    assert!(!err.message.contains("sk-bad"), "{err}");
    let err = run(&OpenAi::new("localhost:4000", None)).0.unwrap_err();
    let prefix = "cannot send to localhost:4000/chat/completions: ";
    assert!(err.message.starts_with(prefix), "{err}");
}

#[test]
fn openai_connection_refused() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let provider = OpenAi::new(
        format!("http://127.0.0.1:{port}/v1"),
        Some("sk-secret-123".into()),
    );
    let (result, pieces) = run(&provider);
    let err = result.unwrap_err();
    assert_eq!(
        err.message,
        format!(
            "cannot reach http://127.0.0.1:{port}/v1/chat/completions: connection refused: \
             nothing listens there; start the model server (`ollama serve`, or llama.cpp's \
             server) or give another --base-url"
        )
    );
    assert!(err.kind == FailureKind::NobodyListens && err.status.is_none());
    assert!(pieces.is_empty());
}

#[test]
fn openai_ignores_events_without_content() {
    let body = concat!(
            ": keep-alive\r\n\r\n",
            "event: message\r\ndata:{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\r\n\r\n",
            "data: {\"choices\":[{\"index\":1,\"delta\":{\"content\":\"other\"}},{\"index\":0,\"delta\":{\"content\":\"mine\"}}]}\n\n",
            "data: {\"choices\":[],\"usage\":null}\n\n",
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1,\"total_tokens\":4}}\n\n",
            "data: [DONE]\n",
        );
    let (_server, provider) = fake(vec![FakeReply::Garbage(body.into())]);
    let reply = run(&provider).0.unwrap();
    assert_eq!(reply.text, "mine");
    assert_eq!(
        reply.usage,
        Some(Usage {
            prompt_tokens: 3,
            completion_tokens: 1,
            ..Default::default()
        })
    );
}

fn calls(reply: &Reply) -> Vec<(&str, &str, &str)> {
    reply
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
        .collect()
}

#[test]
fn openai_streams_tool_calls_in_fragments() {
    let (_server, provider) = fake(vec![FakeReply::tool_calls(
        "Let me look.",
        &[
            (
                "call_a",
                "read_file",
                r#"{"path":"src/main.rs","limit":20}"#,
            ),
            ("call_b", "agent_info", ""),
            ("call_c", "list_dir", r#"{"path":"é/ü"}"#),
        ],
    )]);
    let (reply, pieces) = run(&provider);
    let reply = reply.unwrap();
    assert_eq!(reply.text, "Let me look.");
    assert_eq!(pieces, ["Let", " me", " look."]);
    assert_eq!(
        calls(&reply),
        [
            (
                "call_a",
                "read_file",
                r#"{"path":"src/main.rs","limit":20}"#
            ),
            ("call_b", "agent_info", "{}"),
            ("call_c", "list_dir", r#"{"path":"é/ü"}"#),
        ]
    );
    assert_eq!(
        reply.usage,
        Some(Usage {
            prompt_tokens: 10,
            completion_tokens: 3,
            ..Default::default()
        })
    );
}

#[test]
fn openai_orders_interleaved_tool_calls_by_index() {
    let body = concat!(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"second\",\"type\":\"function\",\"function\":{\"name\":\"grep\",\"arguments\":\"{\\\"pat\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"first\",\"type\":\"function\",\"function\":{\"name\":\"shell\",\"arguments\":\"\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"command\\\":\"}},{\"index\":1,\"function\":{\"arguments\":\"tern\\\":\\\"x\\\"}\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"index\":1,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"IGNORED\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"shell\",\"arguments\":\"\\\"ls\\\"}\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "data: [DONE]\n\n",
        );
    let (_server, provider) = fake(vec![FakeReply::Garbage(body.into())]);
    let (reply, pieces) = run(&provider);
    let reply = reply.unwrap();
    assert!(pieces.is_empty());
    assert_eq!(reply.text, "");
    assert_eq!(
        calls(&reply),
        [
            ("first", "shell", r#"{"command":"ls"}"#),
            ("second", "grep", r#"{"pattern":"x"}"#),
        ]
    );
}

#[test]
fn openai_tool_calls_without_index_or_id() {
    // As some local servers send them: whole calls without an index,
    // or fragments continuing the last call.
    let body = concat!(
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"a\",\"function\":{\"name\":\"list_dir\",\"arguments\":{\"path\":\".\"}}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"id\":\"b\",\"function\":{\"name\":\"read_file\",\"arguments\":\"{\\\"path\\\":\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":{\"arguments\":\"\\\"x\\\"}\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":5,\"function\":{\"name\":\"agent_info\"}}]}}]}\n\n",
            "data: [DONE]\n\n",
        );
    let (_server, provider) = fake(vec![FakeReply::Garbage(body.into())]);
    let reply = run(&provider).0.unwrap();
    assert_eq!(
        calls(&reply),
        [
            ("a", "list_dir", r#"{"path":"."}"#),
            ("b", "read_file", r#"{"path":"x"}"#),
            ("call_5", "agent_info", "{}"),
        ]
    );
}

#[test]
fn openai_reads_tool_calls_of_a_json_answer() {
    let body = r#"{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[
            {"id":"c1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a\"}"}},
            {"id":"c2","type":"function","function":{"name":"grep","arguments":{"pattern":"b"}}},
            {"id":"c3","type":"function","function":{"name":"agent_info","arguments":""}}]},
            "finish_reason":"tool_calls"}],"usage":{"prompt_tokens":7,"completion_tokens":4,"total_tokens":11}}"#;
    let (_server, provider) = fake(vec![FakeReply::Status {
        code: 200,
        body: body.into(),
        retry_after: None,
    }]);
    let (reply, pieces) = run(&provider);
    let reply = reply.unwrap();
    assert!(pieces.is_empty());
    assert_eq!(reply.text, "");
    assert_eq!(
        calls(&reply),
        [
            ("c1", "read_file", r#"{"path":"a"}"#),
            ("c2", "grep", r#"{"pattern":"b"}"#),
            ("c3", "agent_info", "{}"),
        ]
    );
    assert_eq!(
        reply.usage,
        Some(Usage {
            prompt_tokens: 7,
            completion_tokens: 4,
            ..Default::default()
        })
    );
}

#[test]
fn openai_errors_carry_what_the_retry_policy_needs() {
    let (_server, provider) = fake(vec![
        FakeReply::Status {
            code: 429,
            body: "slow".into(),
            retry_after: Some(12),
        },
        FakeReply::CutAfter { chunks: vec![] },
        // Sent again unstreamed, once only.
        FakeReply::CutAfter { chunks: vec![] },
        FakeReply::Garbage(
            "data: {\"error\":{\"message\":\"boom\",\"type\":\"server_error\"}}\n\n".into(),
        ),
        FakeReply::Garbage(
            "data: {\"error\":{\"message\":\"no\",\"type\":\"invalid_request_error\"}}\n\n".into(),
        ),
    ]);
    let err = run(&provider).0.unwrap_err();
    assert_eq!(
        (err.status, err.retry_after, err.kind == FailureKind::Broken),
        (Some(429), Some(12), false)
    );
    let err = run(&provider).0.unwrap_err();
    assert_eq!(
        (err.status, err.retry_after, err.kind == FailureKind::Broken),
        (None, None, true)
    );
    assert_eq!(run(&provider).0.unwrap_err().kind, FailureKind::Broken);
    assert_ne!(run(&provider).0.unwrap_err().kind, FailureKind::Broken);
}

#[test]
fn openai_finish_reason_length_marks_the_reply_truncated() {
    let cut = r#"{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Cut sh"},"finish_reason":"length"}]}"#;
    let other = concat!(
        "data: {\"choices\":[{\"index\":1,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\n",
        "data: [DONE]\n\n",
    );
    let (_server, provider) = fake(vec![
        FakeReply::Length {
            chunks: vec!["Cut".into(), " sho".into()],
            usage: Some((10, 2)),
        },
        FakeReply::Status {
            code: 200,
            body: cut.into(),
            retry_after: None,
        },
        FakeReply::text("Whole."),
        FakeReply::Garbage(other.into()),
    ]);
    let (reply, pieces) = run(&provider);
    let reply = reply.unwrap();
    assert_eq!((reply.text.as_str(), reply.truncated), ("Cut sho", true));
    assert_eq!(pieces, ["Cut", " sho"]);
    assert_eq!(reply.usage.map(|u| u.completion_tokens), Some(2));
    let reply = run(&provider).0.unwrap();
    assert_eq!((reply.text.as_str(), reply.truncated), ("Cut sh", true));
    assert!(!run(&provider).0.unwrap().truncated);
    // Only choice 0 counts.
    assert!(!run(&provider).0.unwrap().truncated);
}

/// A request of `chars` characters of user text, as core builds it.
fn sized(chars: usize) -> Request {
    let mut req = request(&["x"]);
    let mut body: Value = serde_json::from_str(&req.body.text()).unwrap();
    body["messages"][1]["content"] = Value::from("word ".repeat(chars / 5));
    body["stream_options"] = serde_json::json!({"include_usage": true});
    req.body = body.to_string().into();
    req
}

#[test]
fn openai_a_stream_that_ends_empty_is_asked_again_unstreamed() {
    use revolve_testkit::{FakeProtocol, Limit, Overflows};
    // llama-cpp-python: 200 and an empty stream, 400 unstreamed.
    let limit = Limit {
        tokens: 4096,
        bytes_per_token: 4,
        says: Overflows::LlamaCppPython,
        usage: false,
    };
    let server = FakeServer::start_limited(
        FakeProtocol::OpenAi,
        vec![FakeReply::text("unused")],
        Some(limit),
    )
    .unwrap();
    let provider = crate::Retrying::new(OpenAi::new(server.url(), None), |n| {
        panic!("no blind retry: {n}")
    })
    .with_sleep(|_| panic!("no wait"));
    let req = sized(20_000);
    let mut pieces = Vec::new();
    let err = provider
        .complete(&req, &mut |p| pieces.push(p.to_owned()))
        .unwrap_err();
    let overflow = err.overflow().expect("an overflow");
    assert_eq!(overflow.limit, Some(4096));
    assert!(overflow.asked.is_some_and(|n| n > 4096), "{overflow:?}");
    assert_eq!(err.status, Some(400));
    assert!(matches!(err.failure().kind, FailureKind::Overflow(_)));
    assert!(pieces.is_empty() && err.partial.is_empty());
    let url = format!("{}/chat/completions", server.url());
    assert!(
        err.message
            .starts_with(&format!("HTTP 400 Bad Request from {url}: ")),
        "{err}"
    );
    assert!(
        err.message.ends_with(
            "(sent again unstreamed: the stream had ended before [DONE] with nothing in it)"
        ),
        "{err}"
    );

    let sent = server.requests();
    assert_eq!(sent.len(), 2, "one stream, one unstreamed request");
    assert_eq!(sent[0].body, req.body);
    assert_eq!(sent[0].header("accept"), Some("text/event-stream"));
    let first: Value = serde_json::from_str(&sent[0].body).unwrap();
    let again: Value = serde_json::from_str(&sent[1].body).unwrap();
    assert_eq!(again["stream"], false);
    assert!(again.get("stream_options").is_none());
    assert_eq!(again["messages"], first["messages"]);
    assert_eq!(again["model"], first["model"]);
    assert_eq!(sent[1].header("accept"), Some("application/json"));

    // A request that fits streams as usual.
    let reply = provider.complete(&sized(100), &mut |_| {}).unwrap();
    assert_eq!(reply.text, "unused");
    assert_eq!(server.requests().len(), 3);
}

#[test]
fn openai_an_empty_stream_gets_the_unstreamed_answer() {
    let (server, provider) = fake(vec![
        FakeReply::Garbage(String::new()),
        FakeReply::Json {
            text: "Whole answer".into(),
            usage: Some((5, 2)),
        },
        // Role and empty chunks are not content either.
        FakeReply::CutAfter { chunks: vec![] },
        FakeReply::Status {
            code: 503,
            body: String::new(),
            retry_after: None,
        },
    ]);
    let (reply, pieces) = run(&provider);
    let reply = reply.unwrap();
    assert_eq!(reply.text, "Whole answer");
    assert_eq!(pieces, ["Whole answer"]);
    assert_eq!(reply.usage.map(|u| u.prompt_tokens), Some(5));
    assert_eq!(server.requests().len(), 2);

    let err = run(&provider).0.unwrap_err();
    assert_eq!(err.status, Some(503));
    assert!(err.overflow().is_none());
    assert_eq!(server.requests().len(), 4);
}

#[test]
fn openai_a_stream_cut_after_content_is_not_sent_again() {
    let call = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",",
        "\"function\":{\"name\":\"read_file\",\"arguments\":\"{\\\"pa\"}}]}}]}\n\n",
    );
    let reasoning =
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"hmm\"}}]}\n\n";
    let (server, provider) = fake(vec![
        FakeReply::CutAfter {
            chunks: vec!["Half".into()],
        },
        FakeReply::Garbage(call.into()),
        FakeReply::Garbage(reasoning.into()),
    ]);
    let url = format!("{}/chat/completions", server.url());
    for n in 1..=3 {
        let err = run(&provider).0.unwrap_err();
        assert_eq!(
            err.message,
            format!("stream from {url} ended before [DONE]")
        );
        assert_eq!(err.kind, FailureKind::Broken);
        assert_eq!(server.requests().len(), n, "not sent again");
    }
}

#[test]
fn openai_overflows_inside_a_stream_are_overflows() {
    let llamacpp = r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5012,"n_ctx":4096}}"#;
    let (_server, provider) = fake(vec![
        FakeReply::Garbage(format!("event: error\ndata: {llamacpp}\n\n")),
        FakeReply::Garbage(
            "data: {\"error\":{\"message\":\"This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.\",\"type\":\"server_error\"}}\n\n"
                .into(),
        ),
        FakeReply::Garbage("event: error\ndata: context length exceeded\n\n".into()),
        FakeReply::Garbage(
            "event: error\ndata: {\"message\":\"Overloaded\",\"type\":\"server_error\"}\n\n".into(),
        ),
    ]);
    let err = run(&provider).0.unwrap_err();
    assert!(
        err.message
            .ends_with(": the request exceeds the available context size, try increasing it"),
        "{err}"
    );
    assert_eq!(
        err.overflow(),
        Some(revolve_core::overflow::Overflow {
            limit: Some(4096),
            asked: Some(5012)
        })
    );
    assert!(matches!(err.failure().kind, FailureKind::Overflow(_)));

    // A server error's type does not make an overflow worth sending again.
    let err = run(&provider).0.unwrap_err();
    assert_eq!(err.overflow().map(|o| o.limit), Some(Some(8192)));
    assert_ne!(err.kind, FailureKind::Broken);

    let err = run(&provider).0.unwrap_err();
    assert!(err.overflow().is_some(), "{err}");
    assert!(err.message.ends_with(": context length exceeded"), "{err}");

    let err = run(&provider).0.unwrap_err();
    assert!(
        err.overflow().is_none() && err.kind == FailureKind::Broken,
        "{err:?}"
    );
    assert!(err.message.ends_with(": Overloaded"), "{err}");
}

#[test]
fn openai_requests_share_one_kept_alive_connection() {
    use revolve_testkit::{FakeOptions, FakeProtocol};
    let options = FakeOptions {
        keep_alive: true,
        ..FakeOptions::default()
    };
    let replies = vec![
        FakeReply::text("One."),
        FakeReply::tool_calls("", &[("c1", "agent_info", "{}")]),
        FakeReply::Json {
            text: "Three.".into(),
            usage: None,
        },
        FakeReply::Status {
            code: 400,
            body: r#"{"error":{"message":"bad"}}"#.into(),
            retry_after: None,
        },
        FakeReply::Length {
            chunks: vec!["Fi".into()],
            usage: None,
        },
    ];
    let server = FakeServer::start_with_options(FakeProtocol::OpenAi, replies, options).unwrap();
    let provider = OpenAi::new(server.url(), None);
    assert_eq!(run(&provider).0.unwrap().text, "One.");
    assert_eq!(run(&provider).0.unwrap().tool_calls.len(), 1);
    assert_eq!(run(&provider).0.unwrap().text, "Three.");
    assert_eq!(run(&provider).0.unwrap_err().status, Some(400));
    // A clone shares the agent, and its pool.
    let clone = provider.clone();
    assert!(run(&clone).0.unwrap().truncated);
    assert_eq!(server.requests().len(), 5);
    assert_eq!(server.connections(), 1, "every request on one connection");
}

#[test]
fn openai_the_unstreamed_request_goes_on_a_new_connection() {
    use revolve_testkit::{FakeOptions, FakeProtocol, Limit, Overflows};
    // As uvicorn: the empty stream's connection looks kept alive, and is
    // closed right after its last chunk.
    let options = FakeOptions {
        limit: Some(Limit {
            tokens: 4096,
            bytes_per_token: 4,
            says: Overflows::LlamaCppPython,
            usage: false,
        }),
        keep_alive: true,
        ..FakeOptions::default()
    };
    let server = FakeServer::start_with_options(
        FakeProtocol::OpenAi,
        vec![FakeReply::text("fits")],
        options,
    )
    .unwrap();
    let provider = OpenAi::new(server.url(), None);
    for _ in 0..5 {
        let err = provider.complete(&sized(20_000), &mut |_| {}).unwrap_err();
        assert_eq!(err.overflow().and_then(|o| o.limit), Some(4096), "{err}");
    }
    assert_eq!(server.requests().len(), 10);
    // A new connection for each unstreamed request, kept for the next.
    assert_eq!(
        provider.complete(&sized(100), &mut |_| {}).unwrap().text,
        "fits"
    );
    assert_eq!(server.connections(), 6);
}

#[test]
fn openai_tool_call_indexes_are_keys_not_sizes() {
    // An index of 10^9 allocates nothing, and one at u64::MAX followed by a
    // call without an index does not overflow.
    let max = u64::MAX;
    let body = format!(
        concat!(
            "data: {{\"choices\":[{{\"delta\":{{\"tool_calls\":[{{\"index\":1000000000,\"id\":\"a\",\"function\":{{\"name\":\"agent_info\"}}}}]}}}}]}}\n\n",
            "data: {{\"choices\":[{{\"delta\":{{\"tool_calls\":[{{\"index\":{max},\"id\":\"b\",\"function\":{{\"name\":\"agent_info\"}}}}]}}}}]}}\n\n",
            "data: {{\"choices\":[{{\"delta\":{{\"tool_calls\":[{{\"id\":\"c\",\"function\":{{\"name\":\"list_dir\"}}}}]}}}}]}}\n\n",
            "data: [DONE]\n\n",
        ),
        max = max
    );
    let (_server, provider) = fake(vec![FakeReply::Garbage(body)]);
    let reply = run(&provider).0.unwrap();
    assert_eq!(
        calls(&reply),
        [("a", "agent_info", "{}"), ("b", "agent_info", "{}")]
    );
}

#[test]
fn openai_odd_usage_never_fails_the_answer() {
    for usage in [
        r#"{"prompt_tokens":null,"completion_tokens":1}"#,
        r#"{"prompt_tokens":-3,"completion_tokens":1.5}"#,
        r#""lots""#,
    ] {
        let body = format!(
            "data: {{\"choices\":[{{\"delta\":{{\"content\":\"Hi\"}}}}]}}\n\ndata: {{\"choices\":[],\"usage\":{usage}}}\n\ndata: [DONE]\n\n"
        );
        let (_server, provider) = fake(vec![FakeReply::Garbage(body)]);
        let reply = run(&provider).0.unwrap();
        assert_eq!((reply.text.as_str(), reply.usage), ("Hi", None), "{usage}");
    }
    let body = "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":7.0,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n";
    let (_server, provider) = fake(vec![FakeReply::Garbage(body.into())]);
    let reply = run(&provider).0.unwrap();
    assert_eq!(
        reply.usage,
        Some(Usage {
            prompt_tokens: 7,
            completion_tokens: 2,
            ..Default::default()
        })
    );
}

#[test]
fn openai_usage_reads_the_cached_prompt_tokens() {
    // Streamed: the usage chunk's `prompt_tokens_details.cached_tokens`.
    let body = "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":2006,\"completion_tokens\":300,\"prompt_tokens_details\":{\"cached_tokens\":1920,\"audio_tokens\":0}}}\n\ndata: [DONE]\n\n";
    let (_server, provider) = fake(vec![FakeReply::Garbage(body.into())]);
    let want = Usage {
        prompt_tokens: 2006,
        completion_tokens: 300,
        cache_read_tokens: 1920,
        cache_write_tokens: 0,
    };
    assert_eq!(run(&provider).0.unwrap().usage, Some(want));
    // A whole answer, and details that make no sense: the counts stay,
    // the cached part is never more than the prompt, and odd details are none.
    for (details, cached) in [
        (r#"{"cached_tokens":1920}"#, 1920),
        (r#"{"cached_tokens":99999}"#, 2006),
        (r#"{"cached_tokens":"many"}"#, 0),
        (r#""odd""#, 0),
        ("null", 0),
    ] {
        let body = format!(
            r#"{{"choices":[{{"index":0,"message":{{"role":"assistant","content":"Hi"}},"finish_reason":"stop"}}],"usage":{{"prompt_tokens":2006,"completion_tokens":300,"prompt_tokens_details":{details}}}}}"#
        );
        let (_server, provider) = fake(vec![FakeReply::Status {
            code: 200,
            body,
            retry_after: None,
        }]);
        let usage = run(&provider).0.unwrap().usage;
        assert_eq!(
            usage,
            Some(Usage {
                cache_read_tokens: cached,
                ..want
            }),
            "{details}"
        );
    }
}

#[test]
fn openai_json_answer_calls_keep_their_order_whatever_their_index() {
    let body = r#"{"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[
            {"index":7,"id":"c1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a\"}"}},
            {"index":7,"id":"c2","type":"function","function":{"name":"list_dir","arguments":"{}"}}]},
            "finish_reason":"tool_calls"}]}"#;
    let (_server, provider) = fake(vec![FakeReply::Status {
        code: 200,
        body: body.into(),
        retry_after: None,
    }]);
    let reply = run(&provider).0.unwrap();
    assert_eq!(
        calls(&reply),
        [
            ("c1", "read_file", r#"{"path":"a"}"#),
            ("c2", "list_dir", "{}"),
        ]
    );
}
