//! Running revolve against the test fake ([`revolve_testkit::FakeServer`])
//! on the Chat Completions wire, as most groups do.

use revolve_testkit::{FakeReply, FakeServer};
use serde_json::Value;

use super::{Run, TestEnv};

/// The fake, answering with `replies` in order.
pub fn serve(replies: Vec<FakeReply>) -> FakeServer {
    FakeServer::start(replies).expect("start the fake model server")
}

/// Runs revolve against `server` with `extra` flags, feeding `stdin`.
pub fn revolve(env: &TestEnv, server: &FakeServer, extra: &[&str], stdin: &str) -> Run {
    let url = server.url();
    let mut args = vec!["--base-url", url.as_str()];
    args.extend_from_slice(extra);
    env.run(&args, stdin)
}

/// The system prompt of a Chat Completions request body.
pub fn system(body: &str) -> String {
    let body: Value = serde_json::from_str(body).unwrap();
    body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Runs revolve with `wire` (the flags that point it at a server: its
/// provider and URL), then `extra`, feeding `stdin`, with `vars` in its
/// environment.
pub fn revolve_on(
    env: &TestEnv,
    wire: &[String],
    extra: &[&str],
    stdin: &str,
    vars: &[(&str, &str)],
) -> Run {
    let mut args: Vec<&str> = wire.iter().map(String::as_str).collect();
    args.extend_from_slice(extra);
    env.run_env(&args, stdin, vars)
}

/// `replay --requests` rebuilds `sent` (each body as the server got it)
/// byte for byte, in order, and `replay --check` finds the log whole.
pub fn assert_replays_as_sent(env: &TestEnv, sent: &[String]) {
    let expected: String = sent.iter().map(|b| format!("{b}\n")).collect();
    let replayed = env.ok(&["replay", "--requests"]);
    assert_eq!(
        replayed.stdout, expected,
        "replay --requests rebuilds every body byte for byte, in order"
    );
    assert_log_whole(env);
}

/// `replay --check` finds the session's log whole: no line skipped, no
/// inconsistency.
pub fn assert_log_whole(env: &TestEnv) {
    let check = env.ok(&["replay", "--check"]);
    assert!(
        check
            .stdout
            .contains("0 skipped line(s), 0 inconsistencies"),
        "{check:?}"
    );
}
