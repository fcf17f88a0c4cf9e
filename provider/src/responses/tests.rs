//! Unit tests of the parent module, against the fake's Responses stream.

use super::*;
use crate::testing::run;
use crate::FailureKind;
use revolve_testkit::{FakeReply, FakeServer};

fn fake(replies: Vec<FakeReply>) -> (FakeServer, Responses) {
    let server = FakeServer::start_responses(replies).unwrap();
    let provider = Responses::new(format!("{}/", server.url()), Some("sk-secret-123".into()));
    (server, provider)
}

#[test]
fn text_usage_and_the_endpoint() {
    let (server, provider) = fake(vec![FakeReply::text("Hello big world")]);
    let (reply, pieces) = run(&provider);
    let reply = reply.unwrap();
    assert_eq!(reply.text, "Hello big world");
    assert_eq!(pieces, ["Hello", " big", " world"]);
    assert_eq!(
        reply.usage,
        Some(Usage {
            prompt_tokens: 10,
            completion_tokens: 3,
            ..Usage::default()
        })
    );
    let r = &server.requests()[0];
    assert_eq!(
        (r.method.as_str(), r.path.as_str()),
        ("POST", "/v1/responses")
    );
    assert_eq!(r.header("authorization"), Some("Bearer sk-secret-123"));
    assert_eq!(provider.name(), "openai-responses");
}

#[test]
fn calls_come_with_their_call_ids_and_whole_arguments() {
    let (_server, provider) = fake(vec![FakeReply::tool_calls(
        "Looking.",
        &[
            ("call_a", "read_file", r#"{"path":"src/main.rs"}"#),
            ("call_b", "list_dir", r#"{"path":"."}"#),
        ],
    )]);
    let reply = run(&provider).0.unwrap();
    assert_eq!(reply.text, "Looking.");
    let calls: Vec<(&str, &str, &str)> = reply
        .tool_calls
        .iter()
        .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
        .collect();
    assert_eq!(
        calls,
        [
            ("call_a", "read_file", r#"{"path":"src/main.rs"}"#),
            ("call_b", "list_dir", r#"{"path":"."}"#)
        ]
    );
}

#[test]
fn a_reasoning_item_is_kept_whole() {
    let (_server, provider) = fake(vec![FakeReply::thinks(
        "Read it first.",
        FakeReply::tool_calls("", &[("call_1", "read_file", r#"{"path":"a"}"#)]),
    )]);
    let reply = run(&provider).0.unwrap();
    assert_eq!(reply.thinking.len(), 1);
    let Thinking::Reasoning { item } = &reply.thinking[0] else {
        panic!("{:?}", reply.thinking);
    };
    assert_eq!(item["id"], "rs_fake_0");
    assert_eq!(
        item["encrypted_content"],
        revolve_testkit::thinking::signature("Read it first.")
    );
    assert_eq!(reply.thinking[0].text(), "Read it first.");
    assert_eq!(item.get("type"), None);
}

#[test]
fn a_web_search_call_is_kept_whole() {
    let (_server, provider) = fake(vec![FakeReply::Searches {
        query: "rust ureq".into(),
        results: vec![("ureq".into(), "https://docs.rs/ureq".into())],
        reply: Box::new(FakeReply::text("Found it.")),
    }]);
    let reply = run(&provider).0.unwrap();
    assert_eq!(reply.text, "Found it.");
    let [Thinking::WebSearchCall { item }] = &reply.thinking[..] else {
        panic!("{:?}", reply.thinking);
    };
    assert_eq!(item["action"]["query"], "rust ureq");
    assert_eq!(item["status"], "completed");
}

#[test]
fn an_answer_without_usage_has_none() {
    let (_server, provider) = fake(vec![FakeReply::Stream {
        chunks: vec!["hi".into()],
        usage: None,
    }]);
    assert_eq!(run(&provider).0.unwrap().usage, None);
}

#[test]
fn cached_tokens_are_read() {
    let body = "event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":1,\"response\":{\"id\":\"r\",\"status\":\"completed\",\"output\":[],\"usage\":{\"input_tokens\":1200,\"input_tokens_details\":{\"cached_tokens\":1024},\"output_tokens\":7,\"total_tokens\":1207}}}\n\n";
    let (_server, provider) = fake(vec![FakeReply::Garbage(body.into())]);
    let usage = run(&provider).0.unwrap().usage.unwrap();
    assert_eq!(
        (
            usage.prompt_tokens,
            usage.cache_read_tokens,
            usage.completion_tokens
        ),
        (1200, 1024, 7)
    );
}

#[test]
fn an_error_event_inside_the_stream_fails_it_keeping_the_text() {
    // As the API sends it (OpenAI's reference, "error" streaming event).
    let body = concat!(
        "event: response.output_text.delta\n",
        "data: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"item_id\":\"m\",\"output_index\":0,\"content_index\":0,\"delta\":\"Part\"}\n\n",
        "event: error\n",
        "data: {\"type\":\"error\",\"sequence_number\":2,\"code\":\"server_error\",\"message\":\"The server had an error while processing your request.\",\"param\":null}\n\n",
    );
    let (_server, provider) = fake(vec![FakeReply::Garbage(body.into())]);
    let error = run(&provider).0.unwrap_err();
    assert!(
        error.message.contains("The server had an error"),
        "{}",
        error.message
    );
    assert_eq!(error.partial, "Part");
    assert_eq!(error.kind, FailureKind::Broken);
}

#[test]
fn a_failed_response_over_the_context_is_an_overflow() {
    let body = concat!(
        "event: response.failed\n",
        "data: {\"type\":\"response.failed\",\"sequence_number\":3,\"response\":{\"id\":\"r\",\"status\":\"failed\",\"output\":[],\"error\":{\"code\":\"context_length_exceeded\",\"message\":\"Your input exceeds the context window of this model. Please adjust your input and try again.\"}}}\n\n",
    );
    let (_server, provider) = fake(vec![FakeReply::Garbage(body.into())]);
    let error = run(&provider).0.unwrap_err();
    assert!(error.overflow().is_some(), "{error:?}");
}

#[test]
fn a_400_over_the_context_is_an_overflow() {
    let (code, body) = revolve_testkit::Overflows::Responses.answer(300_000, 272_000);
    let (_server, provider) = fake(vec![FakeReply::Status {
        code,
        body,
        retry_after: None,
    }]);
    let error = run(&provider).0.unwrap_err();
    assert!(error.overflow().is_some(), "{error:?}");
    assert_eq!(error.status, Some(400));
}

#[test]
fn a_429_says_its_retry_after() {
    let body = r#"{"error":{"message":"Rate limit reached for gpt-5 on tokens per min (TPM). Please try again in 2s.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}"#;
    let (_server, provider) = fake(vec![FakeReply::Status {
        code: 429,
        body: body.into(),
        retry_after: Some(2),
    }]);
    let error = run(&provider).0.unwrap_err();
    assert_eq!((error.status, error.retry_after), (Some(429), Some(2)));
}

#[test]
fn an_answer_cut_at_its_limit_is_truncated() {
    let (_server, provider) = fake(vec![FakeReply::Length {
        chunks: vec!["so".into(), " far".into()],
        usage: Some((10, 2)),
    }]);
    let reply = run(&provider).0.unwrap();
    assert!(reply.truncated);
    assert_eq!(reply.text, "so far");
}

#[test]
fn a_whole_answer_is_read() {
    let (_server, provider) = fake(vec![FakeReply::Json {
        text: "All of it".into(),
        usage: Some((5, 3)),
    }]);
    let reply = run(&provider).0.unwrap();
    assert_eq!(reply.text, "All of it");
    assert_eq!(reply.usage.map(|u| u.prompt_tokens), Some(5));
}

#[test]
fn a_stream_cut_short_keeps_its_text() {
    let (_server, provider) = fake(vec![FakeReply::CutAfter {
        chunks: vec!["a".into(), "b".into()],
    }]);
    let error = run(&provider).0.unwrap_err();
    assert_eq!(error.partial, "ab");
    assert!(
        error.message.contains("response.completed"),
        "{}",
        error.message
    );
}
