//! The plan (issue 43): `update_plan` sets a checklist the terminal shows
//! under the call, `/status` and stream-json carry, and the system prompt
//! holds while a step is open; it survives a compaction and a resume.

use revolve_testkit::FakeReply;
use serde_json::{json, Value};

use crate::common::fake::{revolve, serve, system};
use crate::common::{records, tool_results, TestEnv};

const PLAN: &str = r#"{"steps":[{"step":"read the parser","status":"done"},{"step":"fix the off-by-one","status":"in_progress"},{"step":"run the tests","status":"pending"}]}"#;

const CHECKLIST: &str = "[x] read the parser\n[~] fix the off-by-one\n[ ] run the tests";

#[test]
fn the_plan_shows_as_a_checklist_and_is_the_calls_result() {
    let env = TestEnv::new("plan-shown");
    let server = serve(vec![
        FakeReply::tool_calls("", &[("c1", "update_plan", PLAN)]),
        FakeReply::text("Planned."),
    ]);
    let run = revolve(&env, &server, &["-p", "plan it"], "");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Planned.\n");
    let shown: Vec<&str> = run
        .stderr_lines_past_seeding(&env)
        .into_iter()
        .filter(|l| l.contains("update_plan") || l.trim_start().starts_with('['))
        .collect();
    insta::assert_snapshot!("plan_in_the_terminal", shown.join("\n"));
    let results = tool_results(&records(&env.only_session()));
    assert_eq!(
        results[0].1,
        format!("Plan updated (1/3 done):\n{CHECKLIST}")
    );
    let recs = records(&env.only_session());
    let plan = recs.iter().find(|r| r["type"] == "plan").unwrap();
    assert_eq!(plan["call"], "c1");
    assert_eq!(
        plan["steps"][1],
        json!({"step": "fix the off-by-one", "status": "in_progress"})
    );
    // The next request's system prompt holds the open plan.
    assert!(system(&server.requests()[1].body).ends_with(CHECKLIST));
    // `/status` shows it in a later run of the session.
    let server = serve(vec![]);
    let status = revolve(&env, &server, &["--continue"], "/status\n");
    assert!(
        status.stderr.contains(&format!(
            "plan (1/3 done):\n  {}",
            CHECKLIST.replace('\n', "\n  ")
        )) || status.stdout.contains("plan (1/3 done):"),
        "{status:?}"
    );
}

#[test]
fn the_plan_is_an_event_in_stream_json() {
    let env = TestEnv::new("plan-stream");
    let server = serve(vec![
        FakeReply::tool_calls("", &[("c1", "update_plan", PLAN)]),
        FakeReply::text("Planned."),
    ]);
    let run = revolve(
        &env,
        &server,
        &["-p", "plan it", "--output-format", "stream-json"],
        "",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let events: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    let at = types
        .iter()
        .position(|t| *t == "plan")
        .expect("a plan event");
    assert_eq!(types[at - 1], "tool_result", "{types:?}");
    assert_eq!(
        events[at]["steps"],
        json!([
            {"step": "read the parser", "status": "done"},
            {"step": "fix the off-by-one", "status": "in_progress"},
            {"step": "run the tests", "status": "pending"}
        ])
    );
}

#[test]
fn the_plan_survives_a_compaction_and_a_resume() {
    let env = TestEnv::new("plan-kept");
    let notes = "Facts: the parser is in src/parse.rs.";
    let server = serve(vec![
        FakeReply::tool_calls("", &[("c1", "update_plan", PLAN)]),
        FakeReply::text("one"),
        FakeReply::text("two"),
        FakeReply::text("three"),
        FakeReply::text("four"),
        FakeReply::text(notes),
        FakeReply::text("five"),
    ]);
    let run = revolve(
        &env,
        &server,
        &[],
        "one\ntwo\nthree\nfour\n/compact\nfive\n",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let requests = server.requests();
    assert_eq!(requests.len(), 7, "{run:?}");
    let after = system(&requests[6].body);
    assert!(after.ends_with(CHECKLIST), "{after}");
    assert_eq!(
        env.session_files().len(),
        2,
        "a compaction continues in a new file"
    );
    // A resume of the compacted session holds it too.
    let server = serve(vec![FakeReply::text("six")]);
    let run = revolve(&env, &server, &["--continue"], "six\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(system(&server.requests()[0].body).ends_with(CHECKLIST));
    let state: Value = serde_json::from_str(&env.ok(&["replay", "--json"]).stdout).unwrap();
    assert_eq!(state["plan"][2]["step"], "run the tests", "{state}");
}
