//! Errors that say what to do (issue 29, item 6): a 401 or 403 names the
//! variable the key came from and the base URL; a refused connection to a
//! server on this machine fails at once with a hint to start it, instead
//! of retries over seconds; `--base-url` with an empty port is a usage
//! error.

use std::time::{Duration, Instant};

use revolve_testkit::{FakeReply, FakeServer};

use crate::common::TestEnv;

#[test]
fn a_refused_key_names_its_variable_and_the_base_url() {
    let env = TestEnv::new("hint-401");
    let server = FakeServer::start(vec![FakeReply::Status {
        code: 401,
        body:
            r#"{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}"#
                .into(),
        retry_after: None,
    }])
    .unwrap();
    let url = server.url();
    let run = env.run_env(
        &["--provider", "openai", "--base-url", &url, "-p", "hi"],
        "",
        &[("OPENAI_API_KEY", "sk-test-not-a-real-key-0000")],
    );
    assert_eq!(run.code, Some(1), "{run:?}");
    let line = run
        .stderr
        .lines()
        .find(|l| l.contains("HTTP 401"))
        .unwrap_or_else(|| panic!("{run:?}"));
    assert!(
        line.contains("the server refused the API key from OPENAI_API_KEY")
            && line.contains(&format!("--base-url {url}"))
            && line.contains("Incorrect API key provided"),
        "{line}"
    );
    assert!(!run.stderr.contains("sk-test-not-a-real-key"), "{run:?}");
}

#[test]
fn a_local_server_not_started_fails_at_once_saying_so() {
    let env = TestEnv::new("hint-refused");
    // A port nothing listens on: bound, then let go.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let started = Instant::now();
    let run = env
        .spawn_env(
            &[
                "--provider",
                "ollama",
                "--base-url",
                &url,
                "--window",
                "8192",
                "-p",
                "hi",
            ],
            "",
            &[("REVOLVE_RETRIES", "4")],
        )
        .finish(Duration::from_secs(30));
    let took = started.elapsed();
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(took < Duration::from_secs(5), "took {took:?}: {run:?}");
    assert!(!run.stderr.contains("retrying"), "{run:?}");
    assert!(
        run.stderr
            .contains("nothing listens there; start the model server"),
        "{run:?}"
    );
}

#[test]
fn a_base_url_with_an_empty_port_is_a_usage_error() {
    let env = TestEnv::new("hint-port");
    let run = env.run(&["--base-url", "http://localhost:/v1", "-p", "hi"], "");
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(
        run.stderr
            .contains("--base-url http://localhost:/v1: the port after ':' is empty"),
        "{run:?}"
    );
}
