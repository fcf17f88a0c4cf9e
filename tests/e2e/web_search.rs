//! The providers' own web search passed through (issue 44 item 3), against
//! the fake on the Anthropic and Responses wires: offered only with
//! `--allow web_search`, the search blocks logged, shown one line a
//! search, sent back as they came, and every body rebuilt byte for byte.

use revolve_testkit::{FakeReply, FakeServer};
use serde_json::{json, Value};

use crate::common::fake::{assert_replays_as_sent, revolve_on};
use crate::common::{records, Run, TestEnv};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wire {
    Anthropic,
    Responses,
}

impl Wire {
    fn serve(self, replies: Vec<FakeReply>) -> FakeServer {
        match self {
            Wire::Anthropic => FakeServer::start_anthropic(replies),
            Wire::Responses => FakeServer::start_responses(replies),
        }
        .expect("start the fake model server")
    }

    fn flags(self, server: &FakeServer) -> Vec<String> {
        let provider = match self {
            Wire::Anthropic => ["--provider", "anthropic"],
            Wire::Responses => ["--provider", "openai-responses"],
        };
        provider
            .into_iter()
            .chain(["--base-url"])
            .map(String::from)
            .chain([server.url()])
            .collect()
    }

    /// The history items of a body.
    fn history(self, body: &Value) -> Vec<Value> {
        let key = match self {
            Wire::Anthropic => "messages",
            Wire::Responses => "input",
        };
        body[key].as_array().cloned().unwrap_or_default()
    }
}

fn searched() -> FakeReply {
    FakeReply::Searches {
        query: "ureq 3 timeouts".into(),
        results: vec![
            ("ureq - Rust".into(), "https://docs.rs/ureq".into()),
            (
                "algesten/ureq".into(),
                "https://github.com/algesten/ureq".into(),
            ),
        ],
        reply: Box::new(FakeReply::text("ureq 3 sets timeouts per call.")),
    }
}

fn run(env: &TestEnv, wire: Wire, server: &FakeServer, extra: &[&str], stdin: &str) -> Run {
    revolve_on(env, &wire.flags(server), extra, stdin, &[])
}

fn search_goes_round(wire: Wire) {
    let env = TestEnv::new("web-search");
    let server = wire.serve(vec![searched(), FakeReply::text("Glad to help.")]);
    let run = run(
        &env,
        wire,
        &server,
        &["--allow", "web_search"],
        "how do ureq timeouts work?\nthanks\n",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(
        run.stdout,
        "ureq 3 sets timeouts per call.\nGlad to help.\n"
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let bodies: Vec<Value> = requests
        .iter()
        .map(|r| serde_json::from_str(&r.body).unwrap())
        .collect();
    let tools = bodies[0]["tools"].as_array().unwrap();
    match wire {
        Wire::Anthropic => assert_eq!(
            tools[0],
            json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 5})
        ),
        Wire::Responses => assert_eq!(tools.last().unwrap(), &json!({"type": "web_search"})),
    }
    // The second request sends the search back as it came.
    let history = wire.history(&bodies[1]);
    match wire {
        Wire::Anthropic => {
            let answer = &history[1]["content"];
            assert_eq!(answer[0]["type"], "server_tool_use");
            assert_eq!(answer[0]["input"], json!({"query": "ureq 3 timeouts"}));
            assert_eq!(answer[1]["type"], "web_search_tool_result");
            assert_eq!(answer[1]["tool_use_id"], answer[0]["id"]);
            assert_eq!(answer[1]["content"][0]["url"], "https://docs.rs/ureq");
            assert_eq!(answer[2]["type"], "text");
        }
        Wire::Responses => {
            assert_eq!(history[1]["type"], "web_search_call");
            assert_eq!(history[1]["action"]["query"], "ureq 3 timeouts");
            assert_eq!(history[1].get("id"), None, "sent back without its id");
            assert_eq!(history[2]["type"], "message");
        }
    }
    let name = format!("web_search_{wire:?}").to_lowercase();
    insta::assert_snapshot!(name, serde_json::to_string_pretty(&history).unwrap());

    let recs = records(&env.only_session());
    assert!(
        recs.iter()
            .any(|r| r["type"] == "web_search" && r["max_uses"] == 5),
        "the offer is logged"
    );
    let transcript = env.ok(&["replay"]).stdout;
    assert!(
        transcript.contains(
            "── searched the web for \"ureq 3 timeouts\": ureq - Rust <https://docs.rs/ureq> · algesten/ureq <https://github.com/algesten/ureq>"
        ) || transcript.contains(
            "── searched the web for \"ureq 3 timeouts\": <https://docs.rs/ureq> · <https://github.com/algesten/ureq>"
        ),
        "{transcript}"
    );

    let sent: Vec<String> = requests.iter().map(|r| r.body.clone()).collect();
    assert_replays_as_sent(&env, &sent);
}

#[test]
fn a_search_goes_round_on_the_anthropic_wire() {
    search_goes_round(Wire::Anthropic);
}

#[test]
fn a_search_goes_round_on_the_responses_wire() {
    search_goes_round(Wire::Responses);
}

#[test]
fn without_the_rule_no_search_tool_is_offered() {
    for wire in [Wire::Anthropic, Wire::Responses] {
        let env = TestEnv::new("web-search-off");
        let server = wire.serve(vec![FakeReply::text("No search.")]);
        let run = run(&env, wire, &server, &["-p", "hi"], "");
        assert_eq!(run.code, Some(0), "{run:?}");
        let body = &server.requests()[0].body;
        assert!(!body.contains("web_search"), "{wire:?}: {body}");
        let recs = records(&env.only_session());
        assert!(!recs.iter().any(|r| r["type"] == "web_search"), "{wire:?}");
    }
    // A deny rule wins over the allow rule.
    let env = TestEnv::new("web-search-denied");
    let server = Wire::Anthropic.serve(vec![FakeReply::text("No search.")]);
    let run = run(
        &env,
        Wire::Anthropic,
        &server,
        &["--allow", "web_search", "--deny", "web_search", "-p", "hi"],
        "",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(!server.requests()[0].body.contains("web_search"));
    // A pattern is refused in one line.
    let bad = env.run(&["--allow", "web_search(x)", "-p", "hi"], "");
    assert_eq!(bad.code, Some(2), "{bad:?}");
    assert!(
        bad.stderr.contains("web_search takes no pattern"),
        "{bad:?}"
    );
}
