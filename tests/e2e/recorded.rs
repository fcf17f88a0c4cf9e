//! Sessions as test fixtures: a session recorded against a fake model
//! server (tool calls and a compaction included) re-runs offline through
//! `--provider replay:NAME` to the same transcript and the same requests,
//! and `revolve replay --against` shows, per request, how a provider's new
//! answers differ from the recorded ones.

use revolve_testkit::{FakeReply, FakeServer};

use crate::common::TestEnv;

/// What the user typed in the recorded session.
const LINES: &str = "look around\nthanks\nwhich port?\nok\n/compact\none more\n";

/// Records the session `rec`: a tool round, two answers, a compaction, and
/// a turn after it.
fn record(env: &TestEnv) -> FakeServer {
    std::fs::write(env.cwd.join("notes.txt"), "port 5432\n").unwrap();
    let server = FakeServer::start(vec![
        FakeReply::tool_calls("Let me look.", &[("call_1", "list_dir", r#"{"path":"."}"#)]),
        FakeReply::text("There is notes.txt."),
        FakeReply::text("You are welcome."),
        FakeReply::text("Port 5432."),
        FakeReply::text("Fine."),
        FakeReply::text("Facts: notes.txt says port 5432."),
        FakeReply::text("Still port 5432."),
    ])
    .unwrap();
    let run = env.run(&["--name", "rec", "--base-url", &server.url()], LINES);
    assert_eq!(run.code, Some(0), "{run:?}");
    server
}

/// A transcript without its header lines (ids, names and times differ).
fn body(transcript: &str) -> String {
    transcript
        .lines()
        .filter(|l| !l.starts_with("── session ") && !l.starts_with("── compacted"))
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn a_recorded_session_reruns_offline_to_the_same_transcript_and_requests() {
    let env = TestEnv::new("replay-provider");
    let server = record(&env);
    drop(server); // offline from here on

    let rerun = env.run(&["--name", "again", "--provider", "replay:rec"], LINES);
    assert_eq!(rerun.code, Some(0), "{rerun:?}");
    assert_eq!(
        rerun.stdout,
        "Let me look.\nThere is notes.txt.\nYou are welcome.\nPort 5432.\nFine.\nStill port 5432.\n"
    );

    let recorded = env.ok(&["replay", "rec"]).stdout;
    let replayed = env.ok(&["replay", "again"]).stdout;
    assert_eq!(body(&replayed), body(&recorded));
    insta::with_settings!({filters => env.filters()}, {
        insta::assert_snapshot!("replayed_transcript", replayed);
    });

    // The same requests, byte for byte, summary request included.
    let recorded = env.ok(&["replay", "rec", "--requests"]).stdout;
    let replayed = env.ok(&["replay", "again", "--requests"]).stdout;
    assert_eq!(recorded.lines().count(), 7);
    // The recording's requests (the `openai` preset) carry their file's
    // id as the prompt cache key; the rerun's (a replay, no server) carry
    // none, and are otherwise the same bytes.
    let keyless: String = recorded
        .lines()
        .map(|line| {
            let mut body: serde_json::Value = serde_json::from_str(line).unwrap();
            let key = body
                .as_object_mut()
                .and_then(|b| b.remove("prompt_cache_key"))
                .unwrap_or_else(|| panic!("no cache key in {line}"));
            assert!(key.as_str().is_some_and(|k| k.starts_with("20")), "{key}");
            format!("{body}\n")
        })
        .collect();
    assert_eq!(replayed, keyless);

    // A recording that is not there is a usage error.
    let missing = env.run(&["--provider", "replay:nosuch", "-p", "x"], "");
    assert_eq!(missing.code, Some(2), "{missing:?}");
    assert_eq!(
        env.redact(&missing.stderr),
        "revolve: no session 'nosuch' in [TMP]/work (revolve sessions --all lists them)\n"
    );
}

#[test]
fn replay_against_a_provider_diffs_each_answer() {
    let env = TestEnv::new("replay-against");
    record(&env);

    // Against the recording itself: nothing differs.
    let same = env.run(&["replay", "rec", "--against", "replay:rec"], "");
    assert_eq!(same.code, Some(0), "{same:?}");
    assert!(same
        .stdout
        .ends_with("all 7 answers are the same as recorded\n"));

    // Against a model that now answers two requests differently.
    let server = FakeServer::start(vec![
        FakeReply::tool_calls("Let me look.", &[("call_9", "list_dir", r#"{"path":"."}"#)]),
        FakeReply::text("There is notes.txt, nothing else."),
        FakeReply::text("You are welcome."),
        FakeReply::text("Port 5432."),
        FakeReply::text("Fine."),
        FakeReply::text("Facts: notes.txt says port 5432."),
        FakeReply::Status {
            code: 400,
            body: r#"{"error":{"message":"bad model"}}"#.into(),
            retry_after: None,
        },
    ])
    .unwrap();
    let url = server.url();
    let differ = env.run(
        &[
            "replay",
            "rec",
            "--against",
            "openai",
            "--base-url",
            &url,
            "--model",
            "new-model",
        ],
        "",
    );
    assert_eq!(differ.code, Some(1), "{differ:?}");
    assert_eq!(
        differ.stderr,
        "revolve: 2 of 7 answers differ from the recording\n"
    );
    let url_filter = [(url.replace('.', r"\."), "[URL]")];
    let filters = env
        .filters()
        .into_iter()
        .chain(url_filter.iter().map(|(url, with)| (url.as_str(), *with)));
    insta::with_settings!({filters => filters}, {
        insta::assert_snapshot!("against_diff", differ.stdout);
    });
    // Each recorded request went out again, with the model asked for.
    let sent = server.requests();
    assert_eq!(sent.len(), 7);
    assert!(sent
        .iter()
        .all(|r| r.body.contains("\"model\":\"new-model\"")));

    let bad = env.run(&["replay", "rec", "--against", "nonsense"], "");
    assert_eq!(bad.code, Some(2));
    assert!(
        bad.stderr.contains("unknown provider 'nonsense'"),
        "{}",
        bad.stderr
    );
}
