//! The commands Claude Code and Codex users reach for (issue 47 items 9,
//! 14, 20 and 22's `.claude/commands/`), end to end: totals that count
//! what summaries cost on a server that reports no usage, a big edit's
//! counts, and the REPL's `!cmd`, `/clear`, `/resume`, `/init`, `/diff`,
//! `/mcp` and commands of the user's own.

use revolve_testkit::{FakeReply, FakeServer};
use serde_json::{json, Value};

use crate::common::{records, TestEnv};

/// A streamed answer of `text` without a usage chunk, as llama.cpp's
/// server streams by default.
fn uncounted(text: &str) -> FakeReply {
    FakeReply::Stream {
        chunks: vec![text.to_owned()],
        usage: None,
    }
}

/// The totals records of a log, in order.
fn totals(log: &[Value]) -> Vec<Value> {
    log.iter()
        .filter(|r| r["type"] == "totals")
        .cloned()
        .collect()
}

/// Item 14: on a server that reports no usage, a compaction's summary
/// request counts in the estimated totals (tokens in and out), so `/cost`
/// and `revolve sessions` show it.
#[test]
fn a_summary_on_a_server_without_usage_counts_in_the_estimated_totals() {
    let env = TestEnv::new("cmd-no-usage-summary");
    let mut replies: Vec<FakeReply> = (0..4)
        .map(|i| uncounted(&format!("answer {i} {}", "words ".repeat(200))))
        .collect();
    replies.push(uncounted(&format!(
        "Notes: {}",
        "the port is 5432. ".repeat(100)
    )));
    let server = FakeServer::start(replies).unwrap();
    let url = server.url();
    let lines = "one\ntwo\nthree\nfour\n/compact\n";
    let run = env.run(&["--base-url", &url, "-n", "nousage"], lines);
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(server.requests().len(), 5, "four turns and a summary");
    let mut files = env.session_files();
    files.sort_by_key(|f| records(f).len());
    assert_eq!(files.len(), 2, "the old file and the one the notes start");
    let all: Vec<Vec<Value>> = files.iter().map(|f| records(f)).collect();
    let (old, new) = if all[0]
        .iter()
        .any(|r| r["type"] == "header" && r["continues"].is_string())
    {
        (&all[1], &all[0])
    } else {
        (&all[0], &all[1])
    };
    let before = totals(old).last().cloned().unwrap();
    let after = totals(new).first().cloned().unwrap();
    let summary = &server.requests()[4].body;
    let tokens_in = |t: &Value| t["tokens_in"].as_u64().unwrap();
    let tokens_out = |t: &Value| t["tokens_out"].as_u64().unwrap();
    // At least a quarter of the summary request's bytes (4 bytes a token,
    // or fewer: the estimate is calibrated) were added as tokens in.
    assert!(
        tokens_in(&after) >= tokens_in(&before) + summary.len() as u64 / 8,
        "the summary request ({} bytes) is not in the totals: {before} then {after}",
        summary.len()
    );
    assert!(
        tokens_out(&after) > tokens_out(&before) + 100,
        "{before} then {after}"
    );
    assert_eq!(after["in_out_estimated"], true, "{after}");
    // `revolve sessions --json` shows the same totals.
    let listed = env.ok(&["sessions", "--json"]);
    let listed: Value = serde_json::from_str(&listed.stdout).unwrap();
    let row = &listed.as_array().unwrap()[0];
    assert_eq!(row["tokens_in"], after["tokens_in"], "{row}");
}

/// Item 9: an edit of 34,286 lines of a 240,000-line file says so, counted
/// from the change, though the diff the model and the log get is cut; the
/// transcript counts the same.
#[test]
fn a_big_edit_counts_the_lines_of_the_change() {
    let env = TestEnv::new("cmd-big-edit");
    let text: String = (0..240_000).map(|i| format!("line {i}\n")).collect();
    std::fs::write(env.cwd.join("big.txt"), &text).unwrap();
    let old: String = (100_000..134_286).map(|i| format!("line {i}\n")).collect();
    let new: String = (100_000..134_286).map(|i| format!("LINE {i}\n")).collect();
    let call = |id: &str, name: &str, args: Value| {
        FakeReply::tool_calls("", &[(id, name, &args.to_string())])
    };
    let server = FakeServer::start(vec![
        call("c1", "read_file", json!({"path": "big.txt", "limit": 3})),
        call(
            "c2",
            "edit_file",
            json!({"path": "big.txt", "old_string": old, "new_string": new}),
        ),
        FakeReply::text("Done."),
    ])
    .unwrap();
    let url = server.url();
    let run = env.run(&["--base-url", &url, "--allow-edits", "-p", "shout"], "");
    assert_eq!(run.code, Some(0), "{run:?}");
    let log = records(&env.only_session());
    let result = log
        .iter()
        .find(|r| r["type"] == "message" && r["tool_call_id"] == "c2")
        .unwrap();
    let result = result["content"].as_str().unwrap();
    assert!(
        result.starts_with("changed big.txt (+34286 -34286 lines)"),
        "{}",
        &result[..200.min(result.len())]
    );
    let edit = log.iter().find(|r| r["type"] == "edit").unwrap();
    assert_eq!(
        (&edit["added"], &edit["removed"]),
        (&json!(34_286), &json!(34_286))
    );
    assert!(
        edit["diff"].as_str().unwrap().len() < old.len(),
        "the diff is cut"
    );
    let session = env.only_session();
    let replay = env.ok(&["replay", session.to_str().unwrap()]);
    assert!(
        replay.stdout.contains("by edit_file (+34286 -34286)"),
        "{}",
        replay.stdout
    );
}
