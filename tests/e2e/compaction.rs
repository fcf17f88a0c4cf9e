//! Compaction end to end, against a fake model server: automatic compaction
//! before the declared window is crossed (the summary request, the fresh
//! file, the chain that `--continue`, `sessions` and `replay` follow),
//! pruning alone, `/compact` and `revolve compact`, a failing summary, the
//! standing goal across a compaction, and snapshots of the summary prompt
//! and of a compacted transcript.
//!
//! The fake server reports whatever `prompt_tokens` a test scripts, so a
//! short conversation can read as a nearly full window. With `--window
//! 20000` the room one turn may still need is 2,048 tokens and the
//! compaction point 17,952.

use std::path::{Path, PathBuf};
use std::time::Duration;

use revolve_core::compact::{self, notes_message, SUMMARY_PROMPT};
use revolve_testkit::{wait_for_requests, FakeReply, FakeServer, Recorded};
use serde_json::Value;

use crate::common::{kinds, messages, pairs, records, request_messages, Run, TestEnv};

// ---------------------------------------------------------------------------
// Helpers

/// The declared window of the automatic tests, and its compaction point.
const WINDOW: &str = "20000";
const POINT: u64 = 17_952;

/// The working notes the fake model writes when asked to summarize.
const NOTES: &str = "Facts: the database listens on port 5432; its config is /etc/db.toml.\n\
                     Decisions: keep the schema.\n\
                     Open: answer turn five.";

/// A streamed answer of `text` (one chunk per word) with this usage.
fn reply(text: &str, prompt: u64, completion: u64) -> FakeReply {
    match FakeReply::text(text) {
        FakeReply::Stream { chunks, .. } => FakeReply::Stream {
            chunks,
            usage: Some((prompt, completion)),
        },
        other => other,
    }
}

/// A streamed answer calling tools `(id, name, arguments)`, with this usage.
fn calls(list: &[(&str, &str, &str)], prompt: u64, completion: u64) -> FakeReply {
    match FakeReply::tool_calls("", list) {
        FakeReply::ToolCalls { text, calls, .. } => FakeReply::ToolCalls {
            text,
            calls,
            usage: Some((prompt, completion)),
        },
        other => other,
    }
}

/// A `500` from the model server.
fn server_error() -> FakeReply {
    FakeReply::Status {
        code: 500,
        body: "the summarizer is down".into(),
        retry_after: None,
    }
}

fn serve(replies: Vec<FakeReply>) -> FakeServer {
    FakeServer::start(replies).expect("start the fake model server")
}

fn bodies(server: &FakeServer) -> Vec<String> {
    server.requests().into_iter().map(|r| r.body).collect()
}

fn json(r: &Recorded) -> Value {
    serde_json::from_str(&r.body).expect("request bodies are JSON")
}

/// The system prompt a request carried.
fn system(r: &Recorded) -> String {
    let body = json(r);
    assert_eq!(body["messages"][0]["role"], "system", "{body}");
    body["messages"][0]["content"]
        .as_str()
        .expect("a system prompt")
        .to_owned()
}

/// Whether a request asks for working notes.
fn is_summary(r: &Recorded) -> bool {
    request_messages(&r.body)
        .last()
        .is_some_and(|(role, content)| role == "user" && content == SUMMARY_PROMPT)
}

/// The bodies, one a line, the way `replay --requests` prints them.
fn as_lines(bodies: &[String]) -> String {
    bodies.iter().map(|b| format!("{b}\n")).collect()
}

/// The conversation of turns `from..=to` of the scripted five-turn session:
/// user "one", assistant "Answer one.", …
fn turns(from: usize, to: usize) -> Vec<(String, String)> {
    const WORDS: [&str; 6] = ["one", "two", "three", "four", "five", "six"];
    let mut out = Vec::new();
    for word in &WORDS[from - 1..to] {
        out.push(("user".to_owned(), (*word).to_owned()));
        out.push(("assistant".to_owned(), answer(word)));
    }
    out
}

fn answer(word: &str) -> String {
    format!("Answer {word}.")
}

/// Runs revolve against `server` with `extra` flags, feeding `stdin`.
fn revolve(env: &TestEnv, server: &FakeServer, extra: &[&str], stdin: &str) -> Run {
    let url = server.url();
    let mut args = vec!["--base-url", url.as_str()];
    args.extend_from_slice(extra);
    env.run(&args, stdin)
}

/// The two files of a compacted session.
struct Chain {
    old: PathBuf,
    new: PathBuf,
    old_id: String,
    new_id: String,
}

/// The files of the one compaction there must have been: the old one ends
/// pointing forward, the new one's header points back.
fn chain(env: &TestEnv) -> Chain {
    let files = env.session_files();
    assert_eq!(files.len(), 2, "a compaction makes one new file: {files:?}");
    let continues = |f: &PathBuf| !records(f)[0]["continues"].is_null();
    let (new, old): (Vec<PathBuf>, Vec<PathBuf>) = files.into_iter().partition(continues);
    assert_eq!(
        (new.len(), old.len()),
        (1, 1),
        "one file continues the other"
    );
    let (old, new) = (old[0].clone(), new[0].clone());
    Chain {
        old_id: stem(&old),
        new_id: stem(&new),
        old,
        new,
    }
}

fn stem(path: &Path) -> String {
    path.file_stem().unwrap().to_str().unwrap().to_owned()
}

fn last_of<'a>(recs: &'a [Value], kind: &str) -> &'a Value {
    recs.iter()
        .rev()
        .find(|r| r["type"] == kind)
        .unwrap_or_else(|| panic!("no {kind} record"))
}

/// The `(role, content)` pairs of messages stored in a record (`kept`).
fn stored(list: &Value) -> Vec<(String, String)> {
    list.as_array()
        .expect("a list of messages")
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_owned(),
                m["content"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// The script of the automatic compaction: four turns whose readings grow
/// until the fourth is past the point, the notes, then turn five's answer.
fn automatic_script() -> Vec<FakeReply> {
    vec![
        reply(&answer("one"), 5_000, 10),
        reply(&answer("two"), 9_000, 10),
        reply(&answer("three"), 13_000, 10),
        reply(&answer("four"), 17_950, 10),
        reply(NOTES, 6_000, 50),
        reply(&answer("five"), 7_000, 12),
    ]
}

/// Five piped turns of a session named `db` with `--window 20000`; turn
/// five compacts first.
fn compact_automatically(env: &TestEnv, server: &FakeServer) -> Run {
    let run = revolve(
        env,
        server,
        &["--name", "db", "--window", WINDOW],
        "one\ntwo\nthree\nfour\nfive\n",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    run
}

// ---------------------------------------------------------------------------
// 1. Automatic compaction

#[test]
fn the_thresholds_of_these_tests() {
    assert_eq!(compact::room(20_000), 2_048);
    assert_eq!(compact::point(20_000), POINT);
    // Turn four reads 17,950 + 10, past the point; turn three does not.
    assert!(compact::due(17_960, 20_000) && !compact::due(13_010, 20_000));
    // The pruning test: 95,005 is past 90,000, what pruning saves is not.
    assert_eq!(compact::point(100_000), 90_000);
}

#[test]
fn automatic_compaction_happens_before_the_window_is_crossed() {
    let env = TestEnv::new("auto");
    let mut script = automatic_script();
    script.push(reply(&answer("six"), 8_000, 5));
    let server = serve(script);
    let run = compact_automatically(&env, &server);
    let answers: String = ["one", "two", "three", "four", "five"]
        .iter()
        .map(|w| format!("{}\n", answer(w)))
        .collect();
    assert_eq!(run.stdout, answers, "the notes are not shown as an answer");
    assert!(
        run.stderr.contains("compaction: summarizing 2 messages"),
        "the user is told: {run:?}"
    );

    // The server: four turns, the summary request, turn five.
    let requests = server.requests();
    assert_eq!(requests.len(), 6, "{requests:#?}");
    assert!(
        requests[..4].iter().all(|r| !is_summary(r)),
        "turns 1-4 went out as they were"
    );
    assert_eq!(
        request_messages(&requests[3].body),
        [turns(1, 3), pairs(&[("user", "four")])].concat(),
        "turn four read 17,960 tokens and still went out whole"
    );
    let summary = &requests[4];
    assert!(is_summary(summary));
    let mut expected = turns(1, 1);
    expected.push(("user".into(), SUMMARY_PROMPT.into()));
    assert_eq!(
        request_messages(&summary.body),
        expected,
        "the summary request holds turn 1 and not turns 2-5: three finished turns stay, as /compact keeps them"
    );
    assert_eq!(system(summary), system(&requests[3]), "same system prompt");
    assert_eq!(json(summary)["tools"], json(&requests[3])["tools"]);
    assert_eq!(json(summary)["stream"], true);

    let next = &requests[5];
    let mut expected = vec![("user".to_owned(), notes_message(NOTES))];
    expected.extend(turns(2, 4));
    expected.push(("user".into(), "five".into()));
    assert_eq!(
        request_messages(&next.body),
        expected,
        "after the system prompt: the notes, then turns 2, 3, 4 and 5 verbatim"
    );
    assert_eq!(system(next), system(&requests[3]));

    // The old file ends pointing forward; the new one points back.
    let c = chain(&env);
    let old = records(&c.old);
    let k = kinds(&old);
    assert_eq!(
        k[k.len() - 3..],
        ["message", "compacting", "continued"],
        "{k:?}"
    );
    assert_eq!(old[old.len() - 2]["cut"], 2);
    assert_eq!(old.last().unwrap()["next"], c.new_id.as_str());
    assert_eq!(
        messages(&old),
        [turns(1, 4), pairs(&[("user", "five")])].concat(),
        "the old file keeps every message"
    );
    let new = records(&c.new);
    let header = &new[0];
    assert_eq!(header["continues"], c.old_id.as_str());
    assert_eq!(header["name"], "db");
    assert_eq!(header["name"], old[0]["name"], "the same name");
    assert_eq!(header["named"], true);
    assert_eq!(header["window"], 20_000);
    assert_eq!(header["cwd"], old[0]["cwd"]);
    assert_eq!(
        kinds(&new),
        ["header", "compacted", "context", "message", "totals"]
    );
    let compacted = &new[1];
    assert_eq!(compacted["from"], c.old_id.as_str());
    assert_eq!(compacted["summarized"], 2);
    assert_eq!(compacted["notes"], NOTES);
    assert_eq!(
        stored(&compacted["kept"]),
        [turns(2, 4), pairs(&[("user", "five")])].concat()
    );
    assert_eq!(compacted["pending"], true, "turn five was still due");
    assert_eq!(compacted["totals"]["turns"], 4);
    assert_eq!(messages(&new), pairs(&[("assistant", "Answer five.")]));

    // Totals go on: turns count on, tokens include the summary's.
    let totals = new.last().unwrap();
    assert_eq!(totals["turns"], 5);
    assert_eq!(
        totals["tokens_in"],
        5_000 + 9_000 + 13_000 + 17_950 + 6_000 + 7_000
    );
    assert_eq!(totals["tokens_out"], 4 * 10 + 50 + 12);
    assert_eq!(totals["last_context"], 7_012);
    assert_eq!(totals["name"], "db");

    // Listed once, as the head of the chain.
    for args in [
        &["sessions", "--all", "--json"][..],
        &["sessions", "--json"],
    ] {
        let listed: Value = serde_json::from_str(&env.ok(args).stdout).unwrap();
        let listed = listed.as_array().unwrap();
        assert_eq!(listed.len(), 1, "{args:?}: {listed:#?}");
        assert_eq!(listed[0]["id"], c.new_id.as_str());
        assert_eq!(listed[0]["name"], "db");
        assert_eq!(listed[0]["turns"], 5);
    }
    let table = env.ok(&["sessions", "--all"]).stdout;
    assert!(
        table.contains(&c.new_id) && !table.contains(&c.old_id),
        "{table}"
    );

    // --continue resumes the new file; the old one is not touched.
    let old_bytes = std::fs::read(&c.old).unwrap();
    let run = revolve(&env, &server, &["--continue"], "six\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Answer six.\n");
    assert_eq!(std::fs::read(&c.old).unwrap(), old_bytes);
    assert_eq!(env.session_files().len(), 2, "no third file");
    let new = records(&c.new);
    assert_eq!(
        kinds(&new)[5..],
        ["resumed", "message", "message", "totals"]
    );
    assert_eq!(new.last().unwrap()["turns"], 6);
    let requests = server.requests();
    assert_eq!(requests.len(), 7);
    let mut expected = vec![("user".to_owned(), notes_message(NOTES))];
    expected.extend(turns(2, 5));
    expected.push(("user".into(), "six".into()));
    assert_eq!(request_messages(&requests[6].body), expected);

    // replay --requests rebuilds every body the server received, byte for
    // byte, the summary request included, across both files, from either.
    let sent = as_lines(&bodies(&server));
    assert_eq!(env.ok(&["replay", "--requests"]).stdout, sent);
    assert_eq!(env.ok(&["replay", &c.old_id, "--requests"]).stdout, sent);
    assert_eq!(
        env.ok(&["replay", c.new.to_str().unwrap(), "--requests"])
            .stdout,
        sent
    );
    assert_eq!(env.ok(&["replay", "db", "--requests"]).stdout, sent);

    // replay shows the whole chain, oldest first.
    let transcript = env.ok(&["replay"]).stdout;
    let at = |text: &str| {
        transcript
            .find(text)
            .unwrap_or_else(|| panic!("{text:?} not in {transcript}"))
    };
    let order = [
        at(&format!("── session db ({})", c.old_id)),
        at("> one\nAnswer one.\n"),
        at("> four\nAnswer four.\n"),
        at("── compacting: summarizing the first 2 messages"),
        at(&format!("── compacted; continues in {}", c.new_id)),
        at(&format!("── session db ({})", c.new_id)),
        at(&format!("── compacted from {}", c.old_id)),
        at("│ Facts: the database listens on port 5432"),
        at("Answer five.\n── resumed"),
        at("> six\nAnswer six.\n"),
    ];
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{transcript}");
    for file in [&c.old, &c.new] {
        assert_eq!(
            env.ok(&["replay", file.to_str().unwrap(), "--check"]).code,
            Some(0)
        );
    }
}

#[test]
fn resuming_the_old_file_resumes_the_head_of_the_chain() {
    let env = TestEnv::new("resume-old");
    let mut script = automatic_script();
    script.push(reply(&answer("six"), 8_000, 5));
    let server = serve(script);
    compact_automatically(&env, &server);
    let c = chain(&env);
    let old_bytes = std::fs::read(&c.old).unwrap();
    let run = revolve(&env, &server, &["--resume", &c.old_id], "six\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(
        std::fs::read(&c.old).unwrap(),
        old_bytes,
        "old file as it was"
    );
    assert_eq!(messages(&records(&c.new)).last().unwrap().1, "Answer six.");
    let requests = server.requests();
    assert_eq!(
        request_messages(&requests[6].body)[0],
        ("user".to_owned(), notes_message(NOTES)),
        "the resumed history starts with the notes"
    );
}

// ---------------------------------------------------------------------------
// 2. Pruning alone

/// `seq 1 12000` as the shell tool reports it: about 67 KB.
fn seq_result() -> String {
    let numbers: Vec<String> = (1..=12_000).map(|i| i.to_string()).collect();
    format!("exit status: 0\nstdout:\n{}", numbers.join("\n"))
}

#[test]
fn pruning_alone_can_make_room() {
    let env = TestEnv::new("prune");
    let server = serve(vec![
        calls(
            &[("call_1", "shell", r#"{"command":"seq 1 12000"}"#)],
            100,
            1,
        ),
        reply(&answer("one"), 17_000, 5),
        reply(&answer("two"), 17_100, 5),
        reply(&answer("three"), 17_200, 5),
        // Past the point of a 100,000 window (90,000)...
        reply(&answer("four"), 95_000, 5),
        reply(&answer("five"), 80_000, 5),
    ]);
    let run = revolve(
        &env,
        &server,
        &[
            "--window",
            "100000",
            "--allow-shell",
            "--spill-result-chars",
            "1000000",
            "--prune-result-chars",
            "10000",
        ],
        "one\ntwo\nthree\nfour\nfive\n",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        run.stderr
            .contains("compaction: pruned 1 oversized tool result"),
        "{run:?}"
    );
    assert!(!run.stderr.contains("summarizing"), "{run:?}");

    // The result as the tool gave it, whole in the log and in turn one.
    let file = env.only_session();
    let recs = records(&file);
    let original = seq_result();
    assert!(original.len() > 60_000);
    let logged: Vec<&Value> = recs.iter().filter(|r| r["role"] == "tool").collect();
    assert_eq!(logged.len(), 1);
    assert_eq!(
        logged[0]["content"], original,
        "the log keeps the result as it was"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 6, "no summary request: {requests:#?}");
    assert!(requests.iter().all(|r| !is_summary(r)));
    let tool_result = |r: &Recorded| -> String {
        let results: Vec<(String, String)> = request_messages(&r.body)
            .into_iter()
            .filter(|(role, _)| role == "tool")
            .collect();
        assert_eq!(results.len(), 1);
        results[0].1.clone()
    };
    assert_eq!(tool_result(&requests[1]), original);
    assert_eq!(tool_result(&requests[4]), original, "turn four: not yet");

    // ...but pruning the result brings the estimate under it.
    let pruned = tool_result(&requests[5]);
    let gone = original.chars().count() - 4096 - 1024;
    let head: String = original.chars().take(4096).collect();
    let tail: String = original.chars().skip(4096 + gone).collect();
    assert!(pruned.starts_with(&format!("{head}\n[… {gone} characters cut by compaction")));
    assert!(pruned.ends_with(&format!(" …]\n{tail}")), "{pruned}");
    assert_eq!(
        pruned
            .lines()
            .filter(|l| l.contains("characters cut"))
            .count(),
        1
    );
    assert!(pruned.len() < 4096 + 1024 + 100);
    assert_eq!(
        request_messages(&requests[5].body).len(),
        request_messages(&requests[4].body).len() + 2,
        "nothing else left the history"
    );

    // A pruned record, in the same file, and no compaction beyond it.
    let k = kinds(&recs);
    assert!(k.contains(&"pruned".to_owned()), "{k:?}");
    assert!(
        !k.iter()
            .any(|k| ["compacting", "continued", "compacted"].contains(&k.as_str())),
        "{k:?}"
    );
    let p = last_of(&recs, "pruned");
    // The result is the third message (user, assistant's call, result).
    assert_eq!(p["messages"], serde_json::json!([2]));
    let saved = (original.len() - pruned.len()) as u64 / 4;
    assert_eq!(p["estimate"], 95_005 - saved);
    assert!(95_005 - saved < 90_000, "the estimate fits");
    let five = k.iter().rposition(|k| k == "pruned").unwrap();
    assert_eq!(recs[five - 1]["content"], "five", "pruned before turn five");
    assert_eq!(recs.last().unwrap()["turns"], 5);

    let sent = as_lines(&bodies(&server));
    assert_eq!(
        env.ok(&["replay", "--requests"]).stdout,
        sent,
        "folding repeats the cut"
    );
    assert_eq!(env.ok(&["replay", "--check"]).code, Some(0));
}

// ---------------------------------------------------------------------------
// 3. /compact and `revolve compact`

#[test]
fn slash_compact_in_pipe_mode_continues_in_a_new_file() {
    let env = TestEnv::new("slash");
    let server = serve(vec![
        reply(&answer("one"), 100, 3),
        reply(&answer("two"), 200, 3),
        reply(&answer("three"), 300, 3),
        reply(&answer("four"), 400, 3),
        reply(NOTES, 500, 40),
        reply(&answer("five"), 600, 3),
    ]);
    let run = revolve(
        &env,
        &server,
        &[],
        "one\ntwo\nthree\nfour\n/compact\nfive\n",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stderr.contains("compaction"), "{run:?}");
    assert!(!run.stdout.contains("Facts"), "{run:?}");

    let requests = server.requests();
    assert_eq!(requests.len(), 6);
    let mut expected = turns(1, 1);
    expected.push(("user".into(), SUMMARY_PROMPT.into()));
    assert_eq!(
        request_messages(&requests[4].body),
        expected,
        "all but the last three turns"
    );
    let mut expected = vec![("user".to_owned(), notes_message(NOTES))];
    expected.extend(turns(2, 4));
    expected.push(("user".into(), "five".into()));
    assert_eq!(request_messages(&requests[5].body), expected);

    let c = chain(&env);
    let old = records(&c.old);
    assert_eq!(
        kinds(&old)[kinds(&old).len() - 2..],
        ["compacting", "continued"]
    );
    assert_eq!(old.last().unwrap()["next"], c.new_id.as_str());
    let new = records(&c.new);
    assert_eq!(new[0]["continues"], c.old_id.as_str());
    assert_eq!(kinds(&new)[1], "compacted");
    assert_eq!(new[1]["pending"], Value::Null, "nothing was due");
    assert_eq!(new[1]["notes"], NOTES);
    assert_eq!(new.last().unwrap()["turns"], 5);
    assert_eq!(
        env.ok(&["replay", "--requests"]).stdout,
        as_lines(&bodies(&server))
    );
}

#[test]
fn slash_compact_with_three_turns_has_nothing_to_do() {
    let env = TestEnv::new("slash-short");
    let server = serve(vec![
        reply(&answer("one"), 100, 3),
        reply(&answer("two"), 200, 3),
        reply(&answer("three"), 300, 3),
    ]);
    let run = revolve(&env, &server, &[], "one\ntwo\nthree\n/compact\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stderr.contains("nothing to compact"), "{run:?}");
    assert_eq!(server.requests().len(), 3, "no summary request");
    let recs = records(&env.only_session());
    assert!(
        !kinds(&recs)
            .iter()
            .any(|k| k == "compacting" || k == "pruned"),
        "{recs:?}"
    );
}

/// A session named `db` with `n` turns, written by a first run.
fn named_session(env: &TestEnv, n: usize) -> PathBuf {
    let words = ["one", "two", "three", "four", "five"];
    let script = words[..n]
        .iter()
        .enumerate()
        .map(|(i, w)| reply(&answer(w), 100 * (i as u64 + 1), 3))
        .collect();
    let server = serve(script);
    let stdin: String = words[..n].iter().map(|w| format!("{w}\n")).collect();
    let run = revolve(env, &server, &["--name", "db"], &stdin);
    assert_eq!(run.code, Some(0), "{run:?}");
    env.only_session()
}

#[test]
fn revolve_compact_compacts_a_session_that_is_not_running() {
    let env = TestEnv::new("compact-cmd");
    let first = named_session(&env, 4);
    let server = serve(vec![reply(NOTES, 500, 40), reply(&answer("five"), 600, 3)]);
    let url = server.url();
    let run = env.run(&["compact", "db", "--base-url", &url], "");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "", "the notes are not printed");
    assert!(run.stderr.contains("compaction"), "{run:?}");

    let requests = server.requests();
    assert_eq!(requests.len(), 1, "only the summary request");
    let mut expected = turns(1, 1);
    expected.push(("user".into(), SUMMARY_PROMPT.into()));
    assert_eq!(request_messages(&requests[0].body), expected);

    let c = chain(&env);
    assert_eq!(c.old, first);
    assert_eq!(records(&c.old).last().unwrap()["next"], c.new_id.as_str());
    let new = records(&c.new);
    assert_eq!(new[0]["continues"], c.old_id.as_str());
    assert_eq!(new[0]["name"], "db");
    assert_eq!(new[1]["notes"], NOTES);
    assert_eq!(
        stored(&new[1]["kept"]),
        turns(2, 4),
        "the last three turns, verbatim"
    );
    assert_eq!(new[1]["totals"]["turns"], 4);

    // Listed once; `--resume db` goes on in the new file.
    let listed: Value =
        serde_json::from_str(&env.ok(&["sessions", "--all", "--json"]).stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed:#}");
    assert_eq!(listed[0]["id"], c.new_id.as_str());
    let run = env.run(&["--base-url", &url, "--resume", "db"], "five\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Answer five.\n");
    let mut expected = vec![("user".to_owned(), notes_message(NOTES))];
    expected.extend(turns(2, 4));
    expected.push(("user".into(), "five".into()));
    assert_eq!(request_messages(&server.requests()[1].body), expected);
    let new = records(&c.new);
    assert_eq!(new.last().unwrap()["turns"], 5);
    assert_eq!(env.session_files().len(), 2);
}

/// A file started by `revolve compact` ends with its totals line, so the
/// listing shows the compacted session with the turns it had (4), not 0.
#[test]
fn the_listing_keeps_the_turns_of_a_compacted_session() {
    let env = TestEnv::new("compact-turns");
    named_session(&env, 4);
    let server = serve(vec![reply(NOTES, 500, 40)]);
    let run = env.run(&["compact", "db", "--base-url", &server.url()], "");
    assert_eq!(run.code, Some(0), "{run:?}");
    let listed: Value = serde_json::from_str(&env.ok(&["sessions", "--json"]).stdout).unwrap();
    assert_eq!(listed[0]["turns"], 4, "{listed:#}");
}

#[test]
fn revolve_compact_with_three_turns_has_nothing_to_do() {
    let env = TestEnv::new("compact-short");
    let file = named_session(&env, 3);
    let server = serve(vec![reply(NOTES, 500, 40)]);
    let run = env.run(&["compact", "db", "--base-url", &server.url()], "");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stderr.contains("nothing to compact"), "{run:?}");
    assert!(server.requests().is_empty(), "no request");
    assert_eq!(
        env.session_files(),
        std::slice::from_ref(&file),
        "no new file"
    );
    let k = kinds(&records(&file));
    assert!(!k.iter().any(|k| k == "compacting" || k == "continued"));
}

#[test]
fn revolve_compact_refuses_a_running_session() {
    let env = TestEnv::new("compact-running");
    let stalled = serve(vec![FakeReply::Stall {
        chunks: vec!["Thinking".into()],
    }]);
    let mut child = env.spawn(
        &["--base-url", &stalled.url(), "--name", "busy"],
        "hold on\n",
    );
    let within = Duration::from_secs(10);
    assert_eq!(wait_for_requests(&stalled, 1, within).len(), 1);
    assert!(child.wait_stdout("Thinking", within));
    let file = env.only_session();
    let before = std::fs::read(&file).unwrap();

    let summarizer = serve(vec![reply(NOTES, 500, 40)]);
    let run = env.run(&["compact", "busy", "--base-url", &summarizer.url()], "");
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(run.stdout.is_empty());
    let err = run.stderr_lines();
    assert_eq!(err.len(), 1, "one line: {run:?}");
    assert!(
        err[0].starts_with("revolve: ") && err[0].contains("already running"),
        "{run:?}"
    );
    assert!(summarizer.requests().is_empty(), "nothing was asked");
    assert_eq!(std::fs::read(&file).unwrap(), before, "nothing written");
    assert_eq!(env.session_files(), [file]);

    child.signal("INT");
    let done = child.finish(within);
    assert_eq!(done.code, Some(130), "{done:?}");
}

// ---------------------------------------------------------------------------
// 4. A failing summary

#[test]
fn a_failing_summary_loses_nothing_and_the_turn_goes_on() {
    let env = TestEnv::new("summary-fails");
    let mut script = automatic_script();
    script[4] = server_error();
    // Turn five still reads past the point: the next turn tries again.
    script[5] = reply(&answer("five"), 18_500, 12);
    script.push(reply(NOTES, 6_000, 50));
    script.push(reply(&answer("six"), 7_000, 5));
    let server = serve(script);
    let run = compact_automatically(&env, &server);
    let err = &run.stderr;
    assert!(
        err.contains("compaction failed") && err.contains("500"),
        "the user is told: {run:?}"
    );
    assert!(err.contains("uncompacted"), "{run:?}");
    assert!(
        run.stdout.ends_with("Answer four.\nAnswer five.\n"),
        "{run:?}"
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 6);
    assert!(is_summary(&requests[4]));
    assert_eq!(
        request_messages(&requests[5].body),
        [turns(1, 4), pairs(&[("user", "five")])].concat(),
        "turn five went out with the whole history"
    );
    let file = env.only_session();
    let recs = records(&file);
    let k = kinds(&recs);
    assert_eq!(
        k[k.len() - 5..],
        [
            "message",
            "compacting",
            "compaction_failed",
            "message",
            "totals"
        ],
        "{k:?}"
    );
    let failed = last_of(&recs, "compaction_failed")["error"]
        .as_str()
        .unwrap();
    assert!(failed.contains("500"), "{failed}");
    assert_eq!(messages(&recs), turns(1, 5), "nothing lost");
    assert_eq!(recs.last().unwrap()["turns"], 5);
    assert_eq!(
        env.ok(&["replay", "--requests"]).stdout,
        as_lines(&bodies(&server)),
        "the failed summary request is rebuilt too"
    );
    assert_eq!(env.ok(&["replay", "--check"]).code, Some(0));

    // The next turn compacts: the failure left nothing in the way.
    let run = revolve(&env, &server, &["--continue"], "six\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Answer six.\n");
    let requests = server.requests();
    assert_eq!(requests.len(), 8);
    let mut expected = turns(1, 2);
    expected.push(("user".into(), SUMMARY_PROMPT.into()));
    assert_eq!(request_messages(&requests[6].body), expected);
    let mut expected = vec![("user".to_owned(), notes_message(NOTES))];
    expected.extend(turns(3, 5));
    expected.push(("user".into(), "six".into()));
    assert_eq!(request_messages(&requests[7].body), expected);
    let c = chain(&env);
    assert_eq!(c.old, file);
    assert_eq!(
        env.ok(&["replay", "--requests"]).stdout,
        as_lines(&bodies(&server))
    );
}

#[test]
fn a_failing_revolve_compact_changes_nothing() {
    let env = TestEnv::new("compact-fails");
    let file = named_session(&env, 4);
    let server = serve(vec![server_error()]);
    let run = env.run(&["compact", "db", "--base-url", &server.url()], "");
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(
        run.stderr.contains("compaction failed") && run.stderr.contains("500"),
        "{run:?}"
    );
    assert_eq!(server.requests().len(), 1);
    assert!(is_summary(&server.requests()[0]));
    assert_eq!(env.session_files(), std::slice::from_ref(&file));
    let recs = records(&file);
    assert_eq!(
        kinds(&recs)[kinds(&recs).len() - 2..],
        ["compacting", "compaction_failed"]
    );
    assert_eq!(messages(&recs), turns(1, 4), "nothing lost");
    assert_eq!(env.ok(&["replay", "--check"]).code, Some(0));
}

#[test]
fn ctrl_c_while_the_notes_are_written_ends_the_turn_and_loses_nothing() {
    let env = TestEnv::new("summary-ctrl-c");
    let mut script = automatic_script();
    script.truncate(4);
    script.push(FakeReply::Stall { chunks: vec![] });
    let server = serve(script);
    let mut child = env.spawn(
        &["--base-url", &server.url(), "--window", WINDOW],
        "one\ntwo\nthree\nfour\nfive\n",
    );
    let within = Duration::from_secs(10);
    let requests = wait_for_requests(&server, 5, within);
    assert_eq!(requests.len(), 5);
    assert!(is_summary(&requests[4]));
    assert!(child.wait_stdout("Answer four.\n", within));
    child.signal("INT");
    let run = child.finish(within);
    assert_eq!(run.code, Some(130), "{run:?}");
    assert_eq!(server.requests().len(), 5, "turn five never went out");

    let file = env.only_session();
    let recs = records(&file);
    let k = kinds(&recs);
    assert_eq!(
        k[k.len() - 4..],
        ["message", "compacting", "interrupted", "totals"],
        "{k:?}"
    );
    assert_eq!(recs[recs.len() - 2]["unsent"], true);
    assert_eq!(
        messages(&recs),
        [turns(1, 4), pairs(&[("user", "five")])].concat()
    );
    assert_eq!(recs.last().unwrap()["turns"], 5, "the turn ended");
    assert_eq!(
        env.ok(&["replay", "--requests"]).stdout,
        as_lines(&bodies(&server))
    );
    assert_eq!(env.ok(&["replay", "--check"]).code, Some(0));
}

// ---------------------------------------------------------------------------
// 5. The standing goal

#[test]
fn a_standing_goal_survives_compaction() {
    let env = TestEnv::new("goal");
    env.ok(&["goal", "ship", "it"]);
    let shown = env.ok(&["goal"]).stdout;
    assert!(shown.contains("ship it"), "{shown}");
    let server = serve(automatic_script());
    compact_automatically(&env, &server);
    let requests = server.requests();
    assert_eq!(requests.len(), 6);
    assert!(is_summary(&requests[4]));
    for r in &requests {
        let system = system(r);
        assert!(
            system.contains("## Standing goal") && system.contains("\nship it\n"),
            "{system}"
        );
    }
    assert_eq!(system(&requests[5]), system(&requests[3]), "untouched");
    let history = request_messages(&requests[5].body);
    assert!(
        history.iter().all(|(_, c)| !c.contains("Standing goal")),
        "the goal is not part of the history"
    );
    chain(&env);
    assert_eq!(env.ok(&["goal"]).stdout, shown, "the goal is untouched");
}

// ---------------------------------------------------------------------------
// 6. Snapshots

#[test]
fn snapshots_of_the_summary_prompt_and_a_compacted_transcript() {
    let env = TestEnv::new("snapshots");
    let server = serve(automatic_script());
    compact_automatically(&env, &server);
    let requests = server.requests();
    let (role, prompt) = request_messages(&requests[4].body).pop().unwrap();
    assert_eq!(role, "user");
    insta::assert_snapshot!("summary_prompt", prompt);

    let transcript = env.ok(&["replay"]).stdout;
    insta::with_settings!({filters => env.filters_and_times()}, {
        insta::assert_snapshot!("compacted_transcript", transcript);
    });
}

// ---------------------------------------------------------------------------
// Regressions: bugs found while writing these tests, since fixed

/// Every totals line counts the model requests sent so far: the four
/// turns in the old file, then the summary and turn five on top of them in
/// the new one.
#[test]
fn totals_count_the_requests_sent() {
    let env = TestEnv::new("requests-count");
    let server = serve(automatic_script());
    compact_automatically(&env, &server);
    let c = chain(&env);
    let old = records(&c.old);
    assert_eq!(
        last_of(&old, "totals")["requests"],
        4,
        "four turns answered"
    );
    let new = records(&c.new);
    assert_eq!(
        new.last().unwrap()["requests"],
        6,
        "and the summary, turn five"
    );
}

/// With the scripted provider a summary request is numbered like every
/// other request of the session, and the turn after the compaction goes on
/// from there: script line 5 writes the notes, line 6 answers turn five.
#[test]
fn the_scripted_provider_answers_a_compaction_in_order() {
    let env = TestEnv::new("scripted");
    let script = env.root.join("replies.jsonl");
    let line = |text: &str, prompt: u64| {
        format!(
            "{}\n",
            serde_json::json!({"text": text, "usage": {"prompt_tokens": prompt, "completion_tokens": 10}})
        )
    };
    let text = [
        line(&answer("one"), 5_000),
        line(&answer("two"), 9_000),
        line(&answer("three"), 13_000),
        line(&answer("four"), 17_950),
        line(NOTES, 6_000),
        line(&answer("five"), 7_000),
    ]
    .concat();
    std::fs::write(&script, text).unwrap();
    let run = env.run(
        &[
            "--provider",
            "scripted",
            "--script",
            script.to_str().unwrap(),
            "--window",
            WINDOW,
        ],
        "one\ntwo\nthree\nfour\nfive\n",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let c = chain(&env);
    let new = records(&c.new);
    assert_eq!(new[1]["notes"], NOTES, "script line 5 answers the summary");
    assert_eq!(run.stdout.lines().last(), Some("Answer five."), "{run:?}");
}

/// The notes message is not a turn: `/compact` right after a compaction
/// says there is nothing to compact and sends no second summary request,
/// so the chain stays at two files.
#[test]
fn compacting_twice_in_a_row_has_nothing_to_do() {
    let env = TestEnv::new("twice");
    let server = serve(vec![
        reply(&answer("one"), 100, 3),
        reply(&answer("two"), 200, 3),
        reply(&answer("three"), 300, 3),
        reply(&answer("four"), 400, 3),
        reply(NOTES, 500, 40),
        reply("Notes of the notes.", 500, 40),
    ]);
    let run = revolve(
        &env,
        &server,
        &[],
        "one\ntwo\nthree\nfour\n/compact\n/compact\n",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stderr.contains("nothing to compact"), "{run:?}");
    assert_eq!(server.requests().len(), 5, "one summary request");
    chain(&env);
}

/// A piped `/compact` whose summary request fails changes nothing and the
/// run goes on with the next line, as after any command.
#[test]
fn a_failed_piped_compact_goes_on_with_the_next_line() {
    let env = TestEnv::new("compact-fails-piped");
    let script = env.root.join("replies.jsonl");
    let replies = [
        r#"{"text":"a1"}"#,
        r#"{"text":"a2"}"#,
        r#"{"text":"a3"}"#,
        r#"{"text":"a4"}"#,
        r#"{"error":"HTTP 500 Internal Server Error"}"#,
        r#"{"text":"a5"}"#,
    ];
    std::fs::write(&script, replies.join("\n") + "\n").unwrap();
    let run = env.run(
        &[
            "--provider",
            "scripted",
            "--script",
            script.to_str().unwrap(),
        ],
        "one\ntwo\nthree\nfour\n/compact\nfive\n",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "a1\na2\na3\na4\na5\n");
    assert!(
        run.stderr.contains("compaction failed (HTTP 500"),
        "{run:?}"
    );
    assert_eq!(env.ok(&["replay", "--check"]).code, Some(0));
}
