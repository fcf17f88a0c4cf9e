//! What bounds a misbehaving model, end to end against the fake server: a
//! model that asks for the same call again and again is refused at the third
//! and stopped at the fourth; one that calls distinct tools without end is
//! stopped at `--max-tool-rounds`; each stop is logged, shown by `replay`,
//! passes `replay --check`, and a resumed session goes on normally.

use std::time::Duration;

use revolve_testkit::{FakeReply, FakeServer};
use serde_json::{json, Value};

use crate::common::{kinds, records, request_messages, Run, TestEnv};

/// A streamed answer with one tool call.
fn call(id: &str, name: &str, args: &Value) -> FakeReply {
    FakeReply::tool_calls("", &[(id, name, &args.to_string())])
}

/// `n` answers, each calling `tool` on a path of its own (`{prefix}{i}`).
fn distinct(n: usize, tool: &str, prefix: &str) -> Vec<FakeReply> {
    (0..n)
        .map(|i| {
            call(
                &format!("c{i}"),
                tool,
                &json!({"path": format!("{prefix}{i}")}),
            )
        })
        .collect()
}

/// `-p PROMPT` against `server`, with `extra` flags.
fn ask(env: &TestEnv, server: &FakeServer, extra: &[&str], prompt: &str) -> Run {
    let url = server.url();
    let mut args = vec!["--base-url", url.as_str(), "-p", prompt];
    args.extend_from_slice(extra);
    env.run(&args, "")
}

/// The lines revolve said on stderr about the run of a first start (the
/// seeding note and the tool calls it shows there left out), the last of
/// which is the one it ended with.
fn said<'r>(env: &TestEnv, run: &'r Run) -> Vec<&'r str> {
    let lines = run.stderr_lines_past_seeding(env);
    assert!(
        lines.last().is_some_and(|l| l.starts_with("revolve: ")),
        "the run ends with its reason: {run:?}"
    );
    lines.into_iter().filter(|l| !l.starts_with("→ ")).collect()
}

/// The `stopped` records of a session file.
fn stops(records: &[Value]) -> Vec<Value> {
    records
        .iter()
        .filter(|r| r["type"] == "stopped")
        .cloned()
        .collect()
}

#[test]
fn a_model_repeating_one_call_is_refused_then_stopped() {
    let env = TestEnv::new("repeat");
    std::fs::write(env.cwd.join("a.txt"), "alpha\n").unwrap();
    // The model asks for the same read every time, however often.
    let replies = (0..50)
        .map(|i| call(&format!("c{i}"), "read_file", &json!({"path": "a.txt"})))
        .collect();
    let server = FakeServer::start(replies).unwrap();
    let run = ask(&env, &server, &[], "read a.txt");
    assert_eq!(run.code, Some(1), "{run:?}");
    assert_eq!(
        said(&env, &run),
        ["revolve: stopped the turn: the model called read_file with the same arguments 4 times in a row (--max-repeated-calls 3)"],
        "{run:?}"
    );
    // The calls shown are the two that ran.
    assert_eq!(
        run.stderr_lines()
            .iter()
            .filter(|l| l.starts_with("→ read_file"))
            .count(),
        2
    );
    assert_eq!(run.stdout, "", "no answer was given");
    // Two reads ran; the third was refused and the model told so; the
    // fourth ended the turn without another request.
    let sent = server.requests();
    assert_eq!(sent.len(), 4, "requests");
    let last = request_messages(&sent[3].body);
    let results: Vec<&String> = last
        .iter()
        .filter(|(role, _)| role == "tool")
        .map(|(_, text)| text)
        .collect();
    assert_eq!(results.len(), 3, "{last:?}");
    assert!(results[0].contains("alpha") && results[1].contains("alpha"));
    assert!(
        results[2].starts_with("error: not run") && results[2].contains("3 times in a row"),
        "{results:?}"
    );
    let log = records(&env.only_session());
    assert_eq!(
        stops(&log),
        [
            json!({"type": "stopped", "at": log_at(&log, "stopped"), "reason": "repeated", "tool": "read_file", "times": 4})
        ]
    );
    // The stopped call has its result, so the history stays well formed.
    let k = kinds(&log);
    let at = k.iter().position(|k| k == "stopped").unwrap();
    assert_eq!(k[at - 1], "message", "{k:?}");
    assert_eq!(k[at + 1], "totals", "{k:?}");

    // Replay shows the stop, and the log checks.
    let replay = env.run(&["replay"], "");
    assert!(
        replay
            .stdout
            .contains("! stopped the turn: the model called read_file"),
        "{replay:?}"
    );
    let check = env.run(&["replay", "--check"], "");
    assert_eq!(check.code, Some(0), "{check:?}");

    // A resumed session goes on normally.
    let server = FakeServer::start(vec![FakeReply::text("Done differently.")]).unwrap();
    let url = server.url();
    let next = env.run(&["--base-url", &url, "--continue", "-p", "try again"], "");
    assert_eq!(next.code, Some(0), "{next:?}");
    assert_eq!(next.stdout.trim(), "Done differently.");
}

/// The time of the first record of `kind`, as written.
fn log_at(log: &[Value], kind: &str) -> Value {
    log.iter().find(|r| r["type"] == kind).unwrap()["at"].clone()
}

/// The model calls a different tool every time, 150 times: the cap ends the
/// turn after 100 rounds, exit 1, one line naming the flag.
#[test]
fn distinct_calls_stop_at_the_tool_round_cap() {
    let env = TestEnv::new("rounds");
    let replies = distinct(150, "read_file", "f");
    let server = FakeServer::start(replies).unwrap();
    let run = ask(&env, &server, &[], "read them all");
    assert_eq!(run.code, Some(1), "{run:?}");
    assert_eq!(
        said(&env, &run),
        ["revolve: stopped the turn after 100 tool rounds (--max-tool-rounds 100)"],
        "{run:?}"
    );
    assert_eq!(server.requests().len(), 100, "one request a round");
    let log = records(&env.only_session());
    let stop = stops(&log);
    assert_eq!(stop.len(), 1);
    assert_eq!(stop[0]["reason"], "tool_rounds");
    assert_eq!(stop[0]["limit"], 100);
    // Every one of the 100 calls has its result.
    let results = log
        .iter()
        .filter(|r| r["type"] == "message" && r["role"] == "tool")
        .count();
    assert_eq!(results, 100);
    let check = env.run(&["replay", "--check"], "");
    assert_eq!(check.code, Some(0), "{check:?}");
}

/// The cap from the flag, the environment and config.json, as `config
/// show` lists it.
#[test]
fn the_limits_are_settings() {
    let env = TestEnv::new("limits");
    let config = env.home.join(".config/task-agent");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.json"),
        r#"{"max_tool_rounds": 7, "max_repeated_calls": 5}"#,
    )
    .unwrap();
    let shown = env.ok(&["config", "show"]).stdout;
    let row = |name: &str| {
        shown
            .lines()
            .find(|l| l.starts_with(name))
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .unwrap_or_default()
    };
    assert_eq!(row("max_tool_rounds"), ["max_tool_rounds", "7", "config"]);
    assert_eq!(
        row("max_repeated_calls"),
        ["max_repeated_calls", "5", "config"]
    );
    let json = env.ok(&["config", "show", "--json"]).stdout;
    let json: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        json["settings"]["max_tool_rounds"],
        json!({"value": 7, "source": "config"})
    );

    // The config file's cap applies, and a flag overrides it.
    let replies = distinct(20, "list_dir", "d");
    let server = FakeServer::start(replies).unwrap();
    let run = ask(&env, &server, &["--max-tool-rounds", "3"], "list");
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(run.stderr.contains("(--max-tool-rounds 3)"), "{run:?}");
    assert_eq!(server.requests().len(), 3);
    let replies = distinct(20, "list_dir", "d");
    let server = FakeServer::start(replies).unwrap();
    let run = ask(&env, &server, &[], "list");
    assert!(run.stderr.contains("(--max-tool-rounds 7)"), "{run:?}");
    assert_eq!(server.requests().len(), 7);

    // Nonsense values are refused, naming what is wrong.
    let zero = env.run(&["--max-tool-rounds", "0", "-p", "x"], "");
    assert_eq!(zero.code, Some(2), "{zero:?}");
    assert!(zero.stderr.contains("--max-tool-rounds"), "{zero:?}");
    std::fs::write(config.join("config.json"), r#"{"max_repeated_calls": 1}"#).unwrap();
    let bad = env.run(&["config", "show"], "");
    assert_eq!(bad.code, Some(2), "{bad:?}");
    assert!(
        bad.stderr.contains("max_repeated_calls must be at least 2"),
        "{bad:?}"
    );
}

/// `--goal-run` counts the tool rounds of its turns, and a turn stopped at
/// the cap ends the run with exit 1.
#[test]
fn a_goal_run_counts_rounds_and_stops_at_the_cap() {
    let env = TestEnv::new("goal-rounds");
    let set = env.run(&["goal", "read", "every", "file"], "");
    if set.code != Some(0) {
        // The goal command's spelling is the goals suite's business.
        panic!("cannot set a goal: {set:?}");
    }
    let replies = distinct(20, "read_file", "f");
    let server = FakeServer::start(replies).unwrap();
    let url = server.url();
    let run = env.run(
        &["--base-url", &url, "--goal-run", "--max-tool-rounds", "4"],
        "",
    );
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(
        run.stderr.contains("── goal run: turn 1 of at most 20\n"),
        "{run:?}"
    );
    assert!(
        run.stderr
            .contains("── goal run ends at turn 1 (4 tool rounds in all)\n"),
        "{run:?}"
    );
    assert!(run.stderr.contains("(--max-tool-rounds 4)"), "{run:?}");
    assert_eq!(server.requests().len(), 4);
}

/// In the REPL, reaching the cap asks whether to go on; `y` sends the
/// request the cap held back (on a pseudo-terminal).
#[test]
fn the_repl_asks_whether_to_go_on() {
    let env = TestEnv::new("go-on");
    let mut replies = distinct(2, "list_dir", "d");
    replies.push(FakeReply::text("All listed."));
    let server = FakeServer::start(replies).unwrap();
    let url = server.url();
    let mut term = env.terminal(&["--base-url", &url, "--max-tool-rounds", "2"], 100, &[]);
    term.wait_for("› ", Duration::from_secs(10));
    term.type_keys("list both\r");
    term.wait_for(
        "go on for up to 2 more tool rounds? [y/N]",
        Duration::from_secs(10),
    );
    term.type_keys("y\r");
    term.wait_for("All listed.", Duration::from_secs(10));
    term.wait_for_next("› ", Duration::from_secs(10));
    term.type_keys("\x04");
    let (exited, screen) = term.finish(Duration::from_secs(10));
    assert!(exited, "{screen}");
    assert!(
        screen.contains("stopped the turn after 2 tool rounds (--max-tool-rounds 2)"),
        "{screen}"
    );
    assert_eq!(server.requests().len(), 3);
    let log = records(&env.only_session());
    let k = kinds(&log);
    assert!(k.iter().any(|k| k == "went_on"), "{k:?}");
    let check = env.run(&["replay", "--check"], "");
    assert_eq!(check.code, Some(0), "{check:?}");
}
