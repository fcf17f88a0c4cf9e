//! `revolve models` against the fake server, in both protocols, and the
//! provider presets.

use revolve_testkit::{FakeReply, FakeServer};
use serde_json::Value;

use crate::common::{regex_escape, TestEnv};

fn ids() -> Vec<String> {
    vec!["model-b".to_owned(), "model-a".to_owned()]
}

#[test]
fn models_lists_an_openai_endpoint() {
    let server =
        FakeServer::start(vec![FakeReply::Models(ids()), FakeReply::Models(ids())]).unwrap();
    let env = TestEnv::new("models-openai");
    let url = server.url();
    let run = env.run_env(
        &["models", "--base-url", &url],
        "",
        &[("OPENAI_API_KEY", "sk-test")],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "model-b\nmodel-a\n");
    assert_eq!(run.stderr, "");

    let run = env.run(
        &[
            "models",
            "--json",
            "--provider",
            "ollama",
            "--base-url",
            &url,
        ],
        "",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    check_schema(&doc);
    assert_eq!(doc["provider"], "ollama");
    assert_eq!(doc["base_url"], url.as_str());
    let port = regex_escape(&url);
    insta::with_settings!({filters => [(port.as_str(), "http://127.0.0.1:[PORT]/v1")]}, {
        insta::assert_snapshot!("models_json", run.stdout);
    });

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert_eq!((r.method.as_str(), r.path.as_str()), ("GET", "/v1/models"));
    }
    assert_eq!(requests[0].header("authorization"), Some("Bearer sk-test"));
    assert_eq!(
        requests[1].header("authorization"),
        None,
        "ollama needs no key"
    );
}

/// `{"provider": string, "base_url": string, "models": [{"id": string}]}`.
fn check_schema(doc: &Value) {
    assert!(doc["provider"].is_string(), "{doc}");
    assert!(doc["base_url"].is_string(), "{doc}");
    let models = doc["models"].as_array().expect("models is an array");
    assert!(!models.is_empty());
    for m in models {
        assert!(m["id"].is_string(), "{m}");
    }
}

#[test]
fn models_lists_an_anthropic_endpoint() {
    let server = FakeServer::start_anthropic(vec![FakeReply::Models(ids())]).unwrap();
    let env = TestEnv::new("models-anthropic");
    let url = server.url();
    let run = env.run_env(
        &["models", "--provider", "anthropic", "--base-url", &url],
        "",
        &[("ANTHROPIC_API_KEY", "sk-ant-test")],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "model-b\nmodel-a\n");
    let r = &server.requests()[0];
    assert_eq!(
        (r.method.as_str(), r.path.as_str()),
        ("GET", "/v1/models?limit=1000")
    );
    assert_eq!(r.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
}

#[test]
fn models_failures_are_one_line() {
    let server = FakeServer::start(vec![FakeReply::Status {
        code: 401,
        body: r#"{"error":{"message":"bad key sk-test"}}"#.into(),
        retry_after: None,
    }])
    .unwrap();
    let env = TestEnv::new("models-fail");
    let url = server.url();
    let run = env.run_env(
        &["models", "--base-url", &url],
        "",
        &[("REVOLVE_API_KEY", "sk-test")],
    );
    assert_eq!(run.code, Some(1), "{run:?}");
    assert_eq!(run.stderr.lines().count(), 1, "{run:?}");
    assert!(run.stderr.contains("HTTP 401"), "{run:?}");
    assert!(
        !run.stderr.contains("sk-test"),
        "the key is never shown: {run:?}"
    );

    // No key for the hosted API, and a provider without a list: usage errors.
    let run = env.run(&["models"], "");
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(
        run.stderr
            .starts_with("revolve: no API key: set OPENAI_API_KEY"),
        "{run:?}"
    );
    let run = env.run(&["models", "--provider", "openrouter"], "");
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(run.stderr.contains("OPENROUTER_API_KEY"), "{run:?}");
    let run = env.run(&["models", "--provider", "scripted"], "");
    assert_eq!(run.code, Some(2), "{run:?}");
}

#[test]
fn a_local_preset_talks_chat_completions_without_a_key() {
    // It asks the server's context size first (`/props`), then talks.
    let props = FakeReply::Status {
        code: 200,
        body: r#"{"default_generation_settings":{"n_ctx":8192}}"#.into(),
        retry_after: None,
    };
    let server = FakeServer::start(vec![props, FakeReply::text("Hello from llama.")]).unwrap();
    let env = TestEnv::new("preset-llamacpp");
    let url = server.url();
    let run = env.run_env(
        &["--provider", "llamacpp", "--base-url", &url],
        "hi\n",
        // Not a key for this preset: it reads REVOLVE_API_KEY only.
        &[("OPENAI_API_KEY", "sk-openai")],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Hello from llama.\n");
    assert_eq!(server.requests()[0].path, "/props");
    let r = &server.requests()[1];
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(r.header("authorization"), None);
    let body: Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(body["model"], "default");
}
