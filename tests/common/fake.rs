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
