//! The command line: the offline scripted provider and usage errors.

use crate::common;

use revolve_testkit::FakeServer;
use serde_json::Value;

use crate::common::{fixture, kinds, records, TestEnv};

/// The demo script's reply texts, in order (tool-calling replies have none).
fn demo_replies() -> Vec<String> {
    std::fs::read_to_string(fixture("demo/replies.jsonl"))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .filter_map(|l| {
            let reply: Value = serde_json::from_str(l).unwrap();
            reply["text"].as_str().map(str::to_owned)
        })
        .collect()
}

#[test]
fn the_scripted_provider_runs_offline() {
    // A server that must see no request: the scripted provider never calls
    // out, even with a base URL set.
    let server = FakeServer::start(vec![]).unwrap();
    let env = TestEnv::new("scripted");
    let script = fixture("demo/replies.jsonl");
    let script = script.to_str().unwrap();
    let replies = demo_replies();
    assert_eq!(replies.len(), 3);

    let url = server.url();
    let args = [
        "--provider",
        "scripted",
        "--script",
        script,
        "--base-url",
        &url,
    ];
    let run = env.run(&args, "hello\nwhat did I say?\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, format!("{}\n{}\n", replies[0], replies[1]));
    // Only the seeding note of a first start and the tool line go to stderr.
    assert_eq!(run.stderr_past_seeding(&env), "→ list_dir .\n");

    // The same through the environment, resumed.
    let run = env.run_env(
        &["--continue"],
        "and now?\n",
        &[("REVOLVE_PROVIDER", "scripted"), ("REVOLVE_SCRIPT", script)],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, format!("{}\n", replies[2]));
    assert!(server.requests().is_empty(), "the scripted run went online");

    let recs = records(&env.only_session());
    assert_eq!(recs[0]["provider"], "scripted");
    let totals = recs.last().unwrap();
    assert_eq!(
        (
            &totals["turns"],
            &totals["tokens_in"],
            &totals["tokens_out"]
        ),
        (
            &3.into(),
            &(58 + 61 + 102 + 150).into(),
            &(12 + 24 + 27 + 25).into()
        )
    );
    assert_eq!(kinds(&recs).iter().filter(|k| *k == "resumed").count(), 1);
    let check = env.ok(&["replay", "--check"]);
    assert!(check
        .stdout
        .contains("0 skipped line(s), 0 inconsistencies"));
}

#[test]
fn a_script_that_runs_out_fails_the_turn() {
    let env = TestEnv::new("script-out");
    let script = fixture("demo/replies.jsonl");
    let args = [
        "--provider",
        "scripted",
        "--script",
        script.to_str().unwrap(),
    ];
    let run = env.run(&args, "1\n2\n3\n4\n");
    assert_eq!(run.code, Some(1), "{run:?}");
    assert_eq!(run.stdout.lines().count(), 3);
    assert_eq!(
        env.redact(run.stderr_past_seeding(&env))
            .replace(&*common::repo().to_string_lossy(), "[REPO]"),
        "→ list_dir .\nrevolve: the script [REPO]/fixtures/demo/replies.jsonl has no reply 5 (it holds 4)\n"
    );
}

/// One usage error: what was run, its exit code and stderr.
fn usage(env: &TestEnv, args: &[&str]) -> String {
    let run = env.run(args, "hello\n");
    assert_eq!(run.code, Some(2), "revolve {args:?}: {run:?}");
    assert_eq!(run.stdout, "", "revolve {args:?}");
    format!(
        "$ revolve{}\nexit {}\n{}",
        args.iter().map(|a| format!(" {a}")).collect::<String>(),
        run.code.unwrap(),
        run.stderr
    )
}

#[test]
fn usage_errors_exit_2_with_one_line() {
    let env = TestEnv::new("usage");
    let closed = "http://127.0.0.1:9/v1";
    let cases: Vec<Vec<&str>> = vec![
        vec!["--provider", "scripted"],
        vec!["--provider", "scripted", "--script", "nosuch.jsonl"],
        vec![],
        vec!["--base-url", closed, "--resume", "nosuch"],
        vec!["--base-url", closed, "--continue"],
        vec!["--base-url", closed, "--continue", "--name", "x"],
        vec!["replay"],
        vec!["replay", "nosuch"],
    ];
    let mut shown = Vec::new();
    for args in &cases {
        let text = usage(&env, args);
        assert_eq!(text.lines().count(), 3, "one stderr line: {text}");
        assert!(
            text.lines().nth(2).unwrap().starts_with("revolve: "),
            "{text}"
        );
        shown.push(text);
    }
    assert!(
        env.session_files().is_empty(),
        "a usage error starts no session"
    );
    insta::with_settings!({filters => env.filters()}, {
        insta::assert_snapshot!("usage_errors", shown.join("\n"));
    });
}

#[test]
fn an_unknown_flag_is_a_usage_error() {
    let env = TestEnv::new("flag");
    let run = env.run(&["--frobnicate"], "");
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(run.stderr.contains("--frobnicate"), "{run:?}");
    assert_eq!(run.stdout, "");
    let run = env.run(&["replay", "--json", "--check"], "");
    assert_eq!(run.code, Some(2), "conflicting flags: {run:?}");
}

/// A name refused for its characters is no session to resume, yet the
/// message says "resume it with --resume bad/name" (the hint fits only a
/// name in use).
#[test]
fn an_invalid_name_does_not_suggest_resuming_it() {
    let env = TestEnv::new("bad-name");
    let run = env.run(
        &["--base-url", "http://127.0.0.1:9/v1", "--name", "bad/name"],
        "hi\n",
    );
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(run.stderr.contains("letters, digits"), "{run:?}");
    assert!(!run.stderr.contains("--resume"), "{run:?}");
}
