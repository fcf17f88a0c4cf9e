//! The keys and types of the `--json` outputs of `sessions` and `replay`,
//! as README's table documents them (the other commands check theirs in
//! their own tests: config, models, goals, refine).

use revolve_testkit::{FakeReply, FakeServer};
use serde_json::Value;

use crate::common::TestEnv;

fn is_time(v: &Value) -> bool {
    v.as_str()
        .is_some_and(|s| s.len() >= 20 && s.ends_with('Z') && s.contains('T'))
}

#[test]
fn sessions_and_replay_json_keep_their_keys() {
    let server = FakeServer::start(vec![FakeReply::text("One."), FakeReply::text("Two.")]).unwrap();
    let env = TestEnv::new("json-schemas");
    let url = server.url();
    assert_eq!(
        env.run(&["--base-url", &url, "--name", "db"], "hi\n").code,
        Some(0)
    );
    assert_eq!(env.run(&["--base-url", &url], "hi\n").code, Some(0));

    let run = env.ok(&["sessions", "--all", "--json"]);
    let list: Value = serde_json::from_str(&run.stdout).unwrap();
    let list = list.as_array().expect("an array");
    assert_eq!(list.len(), 2);
    for s in list {
        assert!(s["id"].is_string(), "{s}");
        assert!(s["name"].is_string() || s["name"].is_null(), "{s}");
        assert!(s["named"].is_boolean(), "{s}");
        assert!(is_time(&s["started"]), "{s}");
        assert!(s["turns"].is_u64(), "{s}");
        assert!(is_time(&s["last_activity"]), "{s}");
        assert!(s["path"].is_string(), "{s}");
    }

    let run = env.ok(&["replay", "db", "--json"]);
    let state: Value = serde_json::from_str(&run.stdout).unwrap();
    assert!(state["header"].is_object(), "{state}");
    assert_eq!(state["name"], "db");
    assert!(state["named"].is_boolean());
    assert!(state["model"].is_string() && state["provider"].is_string());
    assert!(state["window"].is_u64());
    assert!(state["system"].is_string());
    let messages = state["messages"].as_array().expect("messages");
    assert_eq!(messages.len(), 2);
    for m in messages {
        assert!(is_time(&m["at"]), "{m}");
        assert!(m["role"].is_string() && m["content"].is_string(), "{m}");
    }
    let totals = &state["totals"];
    for key in [
        "tokens_in",
        "tokens_out",
        "turns",
        "last_context",
        "requests",
    ] {
        assert!(totals[key].is_u64(), "{key}: {totals}");
    }
}
