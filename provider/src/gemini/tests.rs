use revolve_core::record::Message;
use revolve_core::request::{AnswerLimit, Request, Wire};
use revolve_testkit::{gemini, FakeReply, FakeServer};

use super::*;
use crate::FailureKind;

const KEY: &str = "AIza-test-key-0123";

fn request(seq: u64) -> Request {
    let at = time::macros::datetime!(2026-12-06 17:00 UTC);
    let history = [Message::user(at, "hi")];
    let limit = Some(AnswerLimit::of("gemini-2.5-flash", 100));
    Request {
        seq,
        ..Request::limited(
            Wire::Gemini,
            "gemini-2.5-flash",
            Some("sys"),
            &history,
            limit,
        )
    }
}

fn run(server: &FakeServer, seq: u64) -> (Result<Reply, ProviderError>, String) {
    let provider = Gemini::new(server.url(), Some(KEY.into()));
    let mut shown = String::new();
    let reply = provider.complete(&request(seq), &mut |p| shown.push_str(p));
    (reply, shown)
}

#[test]
fn a_text_answer_streams_with_its_usage_and_signature() {
    let server = FakeServer::start_gemini(vec![FakeReply::text("Hello there")]).unwrap();
    let (reply, shown) = run(&server, 1);
    let reply = reply.unwrap();
    assert_eq!(
        (reply.text.as_str(), shown.as_str()),
        ("Hello there", "Hello there")
    );
    assert_eq!(
        reply.usage.map(|u| (u.prompt_tokens, u.completion_tokens)),
        Some((10, 2))
    );
    assert_eq!(
        reply.thinking,
        [Thinking::ThoughtSignature {
            signature: gemini::signature_of(0),
            call: None
        }]
    );
    let sent = &server.requests()[0];
    assert_eq!(
        sent.path,
        "/v1/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert_eq!(sent.header("x-goog-api-key"), Some(KEY));
    assert!(!sent.path.contains(KEY));
    assert_eq!(sent.body, request(1).body.text());
}

#[test]
fn calls_are_named_by_request_and_place_and_keep_their_signature() {
    let reply = FakeReply::tool_calls(
        "Looking.",
        &[
            ("", "list_dir", r#"{"path":"."}"#),
            ("", "read_file", r#"{"path":"a"}"#),
        ],
    );
    let server = FakeServer::start_gemini(vec![reply]).unwrap();
    let reply = run(&server, 7).0.unwrap();
    let ids: Vec<&str> = reply.tool_calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["gemini_7_0", "gemini_7_1"]);
    assert_eq!(reply.tool_calls[1].arguments, r#"{"path":"a"}"#);
    assert_eq!(
        reply.thinking,
        [Thinking::ThoughtSignature {
            signature: gemini::signature_of(0),
            call: Some("gemini_7_0".into())
        }]
    );
}

#[test]
fn failures_say_what_the_retry_policy_needs() {
    let in_stream = format!(
        "data: {}\n\ndata: {}\n\n",
        r#"{"candidates":[{"content":{"parts":[{"text":""}],"role":"model"},"index":0}]}"#,
        gemini::error(
            503,
            "The model is overloaded. Please try again later.",
            "UNAVAILABLE"
        )
    );
    let server = FakeServer::start_gemini(vec![
        FakeReply::Status {
            code: 429,
            body: gemini::rate_limited(7),
            retry_after: None,
        },
        FakeReply::Garbage(in_stream),
        FakeReply::Status {
            code: 400,
            body: gemini::error(
                400,
                "The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).",
                "INVALID_ARGUMENT",
            ),
            retry_after: None,
        },
        FakeReply::CutAfter {
            chunks: vec!["Hal".into()],
        },
    ])
    .unwrap();
    let limited = run(&server, 1).0.unwrap_err();
    assert_eq!((limited.status, limited.retry_after), (Some(429), Some(7)));
    let busy = run(&server, 1).0.unwrap_err();
    assert_eq!(busy.kind, FailureKind::Broken, "{busy}");
    assert!(busy.message.contains("overloaded"), "{busy}");
    let over = run(&server, 1).0.unwrap_err();
    let o = over.overflow().unwrap();
    assert_eq!((o.limit, o.asked), (Some(1_048_576), Some(1_200_293)));
    let cut = run(&server, 1).0.unwrap_err();
    assert_eq!(
        (cut.kind, cut.partial.as_str()),
        (FailureKind::Broken, "Hal")
    );
    assert!(cut.message.contains("ended before a finishReason"), "{cut}");
    for e in [limited, busy, over, cut] {
        assert!(!e.message.contains(KEY), "{e}");
    }
}

#[test]
fn stops_cut_blocked_and_whole_answers() {
    let blocked = format!(
        "data: {}\n\n",
        r#"{"candidates":[{"content":{"parts":[],"role":"model"},"finishReason":"SAFETY","index":0}]}"#
    );
    let whole = r#"[{"candidates":[{"content":{"parts":[{"text":"One "}],"role":"model"},"index":0}]},{"candidates":[{"content":{"parts":[{"text":"piece"}],"role":"model"},"finishReason":"MAX_TOKENS","index":0}],"usageMetadata":{"promptTokenCount":20,"cachedContentTokenCount":12,"candidatesTokenCount":3,"thoughtsTokenCount":40}}]"#;
    let server = FakeServer::start_gemini(vec![
        FakeReply::Garbage(blocked),
        FakeReply::Length {
            chunks: vec!["so".into(), " on".into()],
            usage: Some((5, 2)),
        },
        FakeReply::Status {
            code: 200,
            body: whole.into(),
            retry_after: None,
        },
    ])
    .unwrap();
    let safety = run(&server, 1).0.unwrap_err();
    assert!(
        safety
            .message
            .ends_with("stopped without an answer: SAFETY"),
        "{safety}"
    );
    let cut = run(&server, 1).0.unwrap();
    assert!(cut.truncated);
    let reply = run(&server, 1).0.unwrap();
    assert_eq!(reply.text, "One piece");
    assert!(reply.truncated);
    assert_eq!(
        reply.usage,
        Some(Usage {
            prompt_tokens: 20,
            completion_tokens: 43,
            cache_read_tokens: 12,
            cache_write_tokens: 0,
        })
    );
}

#[test]
fn count_tokens_counts_the_whole_request() {
    let server = FakeServer::start_gemini(Vec::new()).unwrap();
    let provider = Gemini::new(server.url(), Some(KEY.into()));
    assert!(provider.counts());
    let r = request(1);
    let counted = provider.count(&r).unwrap();
    let sent = &server.requests()[0];
    assert_eq!(sent.path, "/v1/models/gemini-2.5-flash:countTokens");
    assert_eq!(sent.header("x-goog-api-key"), Some(KEY));
    assert_eq!(counted, (sent.body.len() as u64).div_ceil(4));
    let body: Value = serde_json::from_str(&sent.body).unwrap();
    assert_eq!(
        body["generateContentRequest"]["model"],
        "models/gemini-2.5-flash"
    );
    assert_eq!(
        body["generateContentRequest"]["contents"][0]["parts"][0]["text"],
        "hi"
    );
}

#[test]
fn models_are_listed_without_their_prefix() {
    let server =
        FakeServer::start_gemini(vec![FakeReply::Models(vec!["gemini-2.5-pro".into()])]).unwrap();
    let provider = Gemini::new(server.url(), Some(KEY.into()));
    assert_eq!(provider.models().unwrap(), ["gemini-2.5-pro"]);
    assert_eq!(server.requests()[0].path, "/v1/models?pageSize=1000");
}
