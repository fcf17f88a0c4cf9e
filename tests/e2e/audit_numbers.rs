//! Numbers and words from a hostile or confused server (issue 42, items
//! 10, 11, 15): an absurd count in an overflow error is not kept as
//! calibration, live or on resume; an overflow that arrives after some
//! text streamed is still an overflow; `/model` to a model without
//! prices does not end a `--max-cost` budget.

use revolve_testkit::{FakeReply, FakeServer};
use serde_json::{json, Value};

use crate::common::{records, TestEnv};

const KEY: (&str, &str) = ("OPENAI_API_KEY", "sk-test");

/// OpenAI's overflow body, naming a context of `limit` and a request of
/// `asked` tokens.
fn overflow_body(limit: u64, asked: u64) -> String {
    json!({"error": {
        "message": format!("This model's maximum context length is {limit} tokens. However, your messages resulted in {asked} tokens. Please reduce the length of the messages."),
        "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}})
    .to_string()
}

/// The bodies of the chat requests the server got, as JSON.
fn bodies(server: &FakeServer) -> Vec<Value> {
    server
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .map(|r| serde_json::from_str(&r.body).unwrap())
        .collect()
}

/// Item 11: a server says a request of a few kilobytes was a trillion
/// tokens. The window goes to the limit it named, the count is kept in the
/// log as said, and the next turns and a resumed session go on.
#[test]
fn an_absurd_count_in_an_overflow_is_not_calibration() {
    let env = TestEnv::new("absurd-count");
    let server = FakeServer::start(vec![
        FakeReply::Status {
            code: 400,
            body: overflow_body(16_384, 999_999_999_999),
            retry_after: None,
        },
        FakeReply::text("One."),
        FakeReply::text("Two."),
        FakeReply::text("Three."),
    ])
    .unwrap();
    let url = server.url();
    let run = env.run_env(&["--base-url", &url], "first\nsecond\n", &[KEY]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout.trim(), "One.\nTwo.", "{run:?}");
    let log = records(&env.only_session());
    let overflowed: Vec<&Value> = log.iter().filter(|r| r["type"] == "overflowed").collect();
    assert_eq!(overflowed.len(), 1, "{log:?}");
    assert_eq!(overflowed[0]["asked"], 999_999_999_999u64);
    assert_eq!(overflowed[0]["window"], 16_384);
    for t in log.iter().filter(|r| r["type"] == "totals") {
        assert_ne!(t["cal_tokens"], 999_999_999_999u64, "{t}");
    }
    let resumed = env.run_env(&["--base-url", &url, "-c", "-p", "third"], "", &[KEY]);
    assert_eq!(resumed.code, Some(0), "{resumed:?}");
    assert_eq!(resumed.stdout.trim(), "Three.", "{resumed:?}");
    assert_eq!(bodies(&server).len(), 4);
    assert_eq!(env.ok(&["replay", "--check"]).code, Some(0));
}

/// Item 15: text streams, then the server's overflow error arrives in the
/// stream. It is an overflow: the window goes down to the limit named,
/// and the request is sent once more.
#[test]
fn an_overflow_after_some_text_is_an_overflow() {
    let env = TestEnv::new("late-overflow");
    let chunk = json!({"id": "c", "object": "chat.completion.chunk", "choices": [
        {"index": 0, "delta": {"content": "Partial "}, "finish_reason": null}]});
    let error = overflow_body(16_384, 17_000);
    let server = FakeServer::start(vec![
        FakeReply::Garbage(format!("data: {chunk}\n\ndata: {error}\n\n")),
        FakeReply::text("Whole."),
        FakeReply::text("Next."),
    ])
    .unwrap();
    let url = server.url();
    let run = env.run_env(&["--base-url", &url], "first\nsecond\n", &[KEY]);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        run.stdout.contains("Whole.") && run.stdout.contains("Next."),
        "{run:?}"
    );
    let log = records(&env.only_session());
    let overflowed: Vec<&Value> = log.iter().filter(|r| r["type"] == "overflowed").collect();
    assert_eq!(overflowed.len(), 1, "{log:?}");
    assert_eq!(overflowed[0]["window"], 16_384);
    assert!(
        !log.iter().any(|r| r["type"] == "failed"),
        "not a failed turn: {log:?}"
    );
    assert!(
        run.stderr
            .lines()
            .any(|l| l.starts_with("window: the request is larger than the server's context")),
        "{run:?}"
    );
    assert_eq!(bodies(&server).len(), 3);
    assert_eq!(env.ok(&["replay", "--check"]).code, Some(0));
}

/// Item 10: under `--max-cost`, `/model` to a model whose prices are not
/// known is refused with a line; the session keeps its priced model and
/// its budget.
#[test]
fn a_switch_to_an_unpriced_model_keeps_the_budget() {
    let env = TestEnv::new("budget-switch");
    let server = FakeServer::start(vec![FakeReply::text("One."), FakeReply::text("Two.")]).unwrap();
    let url = server.url();
    let run = env.run_env(
        &[
            "--base-url",
            &url,
            "--model",
            "gpt-5.4-mini",
            "--max-cost",
            "5",
        ],
        "one\n/model my-own-unpriced-model\ntwo\n",
        &[KEY],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        run.stderr.lines().any(|l| l
            == "/model: the prices of my-own-unpriced-model are not known, so --max-cost could not be kept; the session stays with gpt-5.4-mini (add its prices under \"models\" in config.json)"),
        "{run:?}"
    );
    let models: Vec<Value> = bodies(&server).iter().map(|b| b["model"].clone()).collect();
    assert_eq!(models, [json!("gpt-5.4-mini"), json!("gpt-5.4-mini")]);
    let log = records(&env.only_session());
    assert!(!log.iter().any(|r| r["type"] == "model_changed"), "{log:?}");
    // Without a budget the switch is made, as before.
    let free = TestEnv::new("free-switch");
    let server = FakeServer::start(vec![FakeReply::text("One.")]).unwrap();
    let url = server.url();
    let run = free.run_env(
        &["--base-url", &url, "--model", "gpt-5.4-mini"],
        "/model my-own-unpriced-model\none\n",
        &[KEY],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let models: Vec<Value> = bodies(&server).iter().map(|b| b["model"].clone()).collect();
    assert_eq!(models, [json!("my-own-unpriced-model")]);
}
