//! The standing goal end to end, against the fake model server (OpenAI
//! wire) and the scripted provider: `revolve goal` and `/goal` steering the
//! goal block of the system prompt, `GoalProgress` called by the model, a
//! later run and a compaction picking the goal up, the goal kept out of the
//! history, `--goal-run`, snapshots of the block as the server received it,
//! of `revolve goal`, and of the REPL's status rows (on a pseudo-terminal).

use crate::common;

use std::path::PathBuf;
use std::time::Duration;

use revolve_core::goal::RUN_PROMPT;
use revolve_testkit::{FakeReply, FakeServer};
use serde_json::{json, Value};

use crate::common::{messages, records, request_messages, Run, TestEnv};

// ---------------------------------------------------------------------------
// Helpers

/// Where the goal block of a system prompt starts.
const BLOCK: &str = "## Standing goal";

/// The goal most tests set.
const GOAL: &str = "make the parser accept trailing commas in every list";

fn serve(replies: Vec<FakeReply>) -> FakeServer {
    FakeServer::start(replies).expect("start the fake model server")
}

/// Runs revolve against `server` with `extra` flags, feeding `stdin`.
fn revolve(env: &TestEnv, server: &FakeServer, extra: &[&str], stdin: &str) -> Run {
    let url = server.url();
    let mut args = vec!["--base-url", url.as_str()];
    args.extend_from_slice(extra);
    env.run(&args, stdin)
}

/// `revolve goal ARGS…`, whatever its exit.
fn goal(env: &TestEnv, args: &[&str]) -> Run {
    let mut all = vec!["goal"];
    all.extend_from_slice(args);
    env.run(&all, "")
}

/// A streamed answer calling `GoalProgress` once per `(id, arguments)`.
fn progress(calls: &[(&str, Value)]) -> FakeReply {
    let args: Vec<(String, String)> = calls
        .iter()
        .map(|(id, a)| ((*id).to_owned(), a.to_string()))
        .collect();
    let list: Vec<(&str, &str, &str)> = args
        .iter()
        .map(|(id, a)| (id.as_str(), "GoalProgress", a.as_str()))
        .collect();
    FakeReply::tool_calls("", &list)
}

fn bodies(server: &FakeServer) -> Vec<Value> {
    server
        .requests()
        .iter()
        .map(|r| serde_json::from_str(&r.body).expect("request bodies are JSON"))
        .collect()
}

/// The system prompt of an OpenAI request body.
fn system(body: &Value) -> String {
    let first = &body["messages"][0];
    assert_eq!(first["role"], "system", "{body}");
    first["content"]
        .as_str()
        .expect("a text system prompt")
        .to_owned()
}

/// The goal block of a request: the system prompt from [`BLOCK`] on (it is
/// the last part of the prompt), `None` when there is none.
fn block(body: &Value) -> Option<String> {
    let system = system(body);
    let at = system.find(BLOCK)?;
    assert_eq!(
        system.matches(BLOCK).count(),
        1,
        "one goal block at most: {system}"
    );
    Some(system[at..].to_owned())
}

/// Every request's goal block, in order.
fn blocks(server: &FakeServer) -> Vec<Option<String>> {
    bodies(server).iter().map(block).collect()
}

/// The tool results an OpenAI request carries, `(call id, content)`.
fn tool_results(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .expect("a messages list")
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap_or("?").to_owned(),
                m["content"].as_str().unwrap_or("?").to_owned(),
            )
        })
        .collect()
}

/// The project directory: beside the memory files, under the config root
/// (no `.task-agent/` workspace above the test's directory).
fn project_dir(env: &TestEnv) -> PathBuf {
    env.home
        .join(".config/task-agent/projects")
        .join(env.cwd.to_string_lossy().replace('/', "-"))
}

/// `goal.json` as JSON.
fn goal_file(env: &TestEnv) -> Value {
    let path = project_dir(env).join("goal.json");
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).expect("goal.json is JSON")
}

/// The texts of the current goal's notes in `goal.json`.
fn notes(file: &Value) -> Vec<String> {
    file["current"]["notes"]
        .as_array()
        .expect("a current goal with notes")
        .iter()
        .map(|n| n["text"].as_str().unwrap().to_owned())
        .collect()
}

/// No line of any session log holds `text`, except `context` records, in
/// their system prompt. Returns how many context records held it.
fn only_in_context(env: &TestEnv, text: &str) -> usize {
    let mut in_context = 0;
    for file in env.session_files() {
        for (i, line) in common::lines(&file).iter().enumerate() {
            if !line.contains(text) {
                continue;
            }
            let record: Value = serde_json::from_str(line).expect("a JSON line");
            assert_eq!(
                record["type"],
                "context",
                "{}:{}: the goal text is in the history: {line}",
                file.display(),
                i + 1
            );
            assert!(record["system"].as_str().unwrap().contains(text), "{line}");
            in_context += 1;
        }
    }
    in_context
}

/// `replay --requests` rebuilds every body the server received, in order.
fn assert_replays(env: &TestEnv, server: &FakeServer) {
    let expected: String = server
        .requests()
        .iter()
        .map(|r| format!("{}\n", r.body))
        .collect();
    assert_eq!(env.ok(&["replay", "--requests"]).stdout, expected);
}

// ---------------------------------------------------------------------------
// 1. Commands steer the goal block

#[test]
fn goal_commands_steer_the_goal_block_of_every_request() {
    let env = TestEnv::new("goal-commands");
    let set = goal(&env, &[GOAL]);
    assert_eq!(set.code, Some(0), "{set:?}");
    assert_eq!(
        set.stdout,
        format!("goal set: \"{GOAL}\". It stays in the prompt of every turn until /goal done.\n")
    );
    assert!(
        project_dir(&env).join("goal.json").is_file(),
        "goal.json is in the project directory"
    );

    let server = serve(
        (1..=7)
            .map(|i| FakeReply::text(&format!("answer {i}")))
            .collect(),
    );
    let input = "\
one
/goal pause
two
/goal resume
three
/goal
/goal done extra words
/goal done
four
/goal \"done: ship the second goal\"
five
/goal clear
six
/goal pause
seven
";
    let run = revolve(&env, &server, &[], input);
    assert_eq!(run.code, Some(0), "{run:?}");
    let answers: String = (1..=7).map(|i| format!("answer {i}\n")).collect();
    assert_eq!(run.stdout, answers, "goal commands print on stderr only");

    let blocks = blocks(&server);
    assert_eq!(blocks.len(), 7);
    let first = blocks[0]
        .as_deref()
        .expect("a goal block in the first request");
    assert!(
        first.starts_with(&format!(
            "{BLOCK}\n\nThe user set this objective earlier; it still stands. \
             Work toward it; it needs no acknowledgement.\n\n\
             Objective (set 2026-12-02 10:00 UTC):\n{GOAL}\n\nNo progress recorded yet.\n\n"
        )),
        "{first}"
    );
    assert_eq!(blocks[1], None, "paused: out of the prompt");
    assert_eq!(blocks[2], blocks[0], "resumed: back, unchanged");
    assert_eq!(blocks[3], None, "done: gone");
    let second = blocks[4].as_deref().expect("the second goal's block");
    assert!(
        second.contains("\ndone: ship the second goal\n") && !second.contains(GOAL),
        "{second}"
    );
    assert_eq!(blocks[5], None, "cleared: gone");
    assert_eq!(blocks[6], None, "pausing with no goal changes nothing");

    // What each command said, in order, on stderr.
    let stderr = &run.stderr;
    let said = [
        "goal paused: out of the prompt until /goal resume\n",
        "goal resumed: back in the prompt from the next request\n",
        &format!(
            "goal: {GOAL}\nstate: active (in the prompt of every turn)\n\
             set: 2026-12-02 10:00 UTC\nno progress notes yet\n"
        ),
        "/goal done takes nothing after it; to set a goal that starts with \"done\", \
         put the text in double quotes\n",
        &format!("goal done: \"{GOAL}\". It is out of the prompt and kept in the goal history.\n"),
        "goal set: \"done: ship the second goal\". It stays in the prompt of every turn \
         until /goal done.\n",
        "goal cleared: \"done: ship the second goal\". It is out of the prompt and kept in \
         the goal history.\n",
        "no goal to pause\n",
    ];
    let mut from = 0;
    for line in said {
        let at = stderr[from..]
            .find(line)
            .unwrap_or_else(|| panic!("stderr lacks (in order) {line:?}: {stderr}"));
        from += at + line.len();
    }

    // Both goals are kept in the history, not current.
    let file = goal_file(&env);
    assert_eq!(file["current"], Value::Null, "{file}");
    let history: Vec<(&str, &str)> = file["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["text"].as_str().unwrap(),
                g["ended"]["how"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        history,
        [(GOAL, "done"), ("done: ship the second goal", "cleared")]
    );

    let shown = goal(&env, &[]);
    assert_eq!(shown.code, Some(0), "{shown:?}");
    assert_eq!(
        shown.stdout,
        "no goal set; /goal TEXT sets one\n\
         the last one, \"done: ship the second goal\", was cleared 2026-12-02 10:00 UTC\n"
    );
    assert_eq!(shown.stderr, "");
    assert_eq!(only_in_context(&env, GOAL), 2, "requests 1 and 3");
    assert_replays(&env, &server);
}

#[test]
fn goal_subcommand_refuses_bad_input_with_exit_2() {
    let env = TestEnv::new("goal-bad-input");
    let shown = goal(&env, &[]);
    assert_eq!(
        (shown.code, shown.stdout.as_str(), shown.stderr.as_str()),
        (Some(0), "no goal set; /goal TEXT sets one\n", ""),
        "showing no goal is not an error"
    );
    for (args, why) in [
        (&["done"][..], "no goal to mark done"),
        (&["pause"], "no goal to pause"),
        (&["resume"], "no goal to resume"),
        (&["clear"], "no goal to clear"),
        (
            &["\"  \""],
            "the goal text is empty; /goal TEXT sets a goal",
        ),
    ] {
        let run = goal(&env, args);
        assert_eq!(run.code, Some(2), "revolve goal {args:?}: {run:?}");
        assert_eq!(run.stdout, "", "{args:?}");
        assert_eq!(run.stderr, format!("revolve: {why}\n"), "{args:?}");
    }
    assert!(
        !project_dir(&env).join("goal.json").exists(),
        "a refused command writes nothing"
    );

    assert_eq!(goal(&env, &["ship", "it"]).code, Some(0));
    let before = goal_file(&env);
    let run = goal(&env, &["done", "extra", "words"]);
    assert_eq!(run.code, Some(2), "{run:?}");
    assert_eq!(run.stdout, "");
    assert_eq!(
        run.stderr,
        "revolve: /goal done takes nothing after it; to set a goal that starts with \"done\", \
         put the text in double quotes\n"
    );
    assert_eq!(goal_file(&env), before, "the goal is untouched");
    // Setting the same text again keeps the goal (and would keep its notes).
    let again = goal(&env, &["ship it"]);
    assert_eq!(
        (again.code, again.stdout.as_str()),
        (Some(0), "that goal is already set; nothing changed\n")
    );
    // Quotes make a command word a goal's text.
    let quoted = goal(&env, &["\"clear the backlog\""]);
    assert_eq!(quoted.code, Some(0), "{quoted:?}");
    assert_eq!(goal_file(&env)["current"]["text"], "clear the backlog");
}

// ---------------------------------------------------------------------------
// 2. GoalProgress through the model

#[test]
fn goal_progress_notes_reach_the_next_request_and_met_is_only_a_proposal() {
    let env = TestEnv::new("goal-progress");
    env.ok(&["init"]);
    assert_eq!(goal(&env, &[GOAL]).code, Some(0));
    let server = serve(vec![
        progress(&[(
            "call_1",
            json!({"note": "the tokenizer accepts trailing commas"}),
        )]),
        FakeReply::text("Noted the tokenizer."),
        progress(&[(
            "call_2",
            json!({"note": "every list accepts them; tests pass", "met": true}),
        )]),
        FakeReply::text("I think the goal is met."),
        FakeReply::text("Still here."),
    ]);
    let run = revolve(&env, &server, &[], "start\nfinish\n/goal\ncheck\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(
        run.stdout,
        "Noted the tokenizer.\nI think the goal is met.\nStill here.\n"
    );

    let sent = bodies(&server);
    assert_eq!(sent.len(), 5);
    // The results are notes, not errors.
    assert_eq!(
        tool_results(&sent[1]),
        [(
            "call_1".to_owned(),
            "noted (1 note on this goal).".to_owned()
        )]
    );
    let (id, met) = tool_results(&sent[3]).pop().unwrap();
    assert_eq!(id, "call_2");
    assert!(
        met.starts_with("noted (2 notes on this goal). Proposed the objective met"),
        "{met}"
    );
    // The next request of the same turn already carries the note.
    let blocks: Vec<String> = sent
        .iter()
        .map(|b| block(b).expect("a goal block"))
        .collect();
    assert!(
        blocks[0].contains("No progress recorded yet."),
        "{}",
        blocks[0]
    );
    assert!(
        blocks[1].contains(
            "Progress so far, oldest first:\n\
             - 2026-12-02 10:00 UTC: the tokenizer accepts trailing commas\n"
        ),
        "{}",
        blocks[1]
    );
    assert_eq!(
        blocks[2], blocks[1],
        "the next turn starts from the same block"
    );
    assert!(
        blocks[3].contains("- 2026-12-02 10:00 UTC: every list accepts them; tests pass\n"),
        "{}",
        blocks[3]
    );
    // The proposal keeps the goal in the prompt, saying it was proposed.
    assert!(blocks[3].contains("you proposed that the objective is reached"));
    assert_eq!(blocks[4], blocks[3]);
    insta::assert_snapshot!("goal_block_met_proposed", blocks[4]);

    // `/goal` alone showed it with its notes, on stderr.
    assert!(
        run.stderr.contains(&format!(
            "goal: {GOAL}\nstate: active (in the prompt of every turn)\n\
             set: 2026-12-02 10:00 UTC\n\
             the model proposed it met at 2026-12-02 10:00 UTC: /goal done ends it, \
             /goal resume keeps it going\n\
             notes (2, oldest first):\n  \
             2026-12-02 10:00 UTC  the tokenizer accepts trailing commas\n  \
             2026-12-02 10:00 UTC  every list accepts them; tests pass\n"
        )),
        "{}",
        run.stderr
    );

    // Saved in goal.json, beside the memory files; the goal stays current.
    let dir = project_dir(&env);
    assert!(dir.join("memory").is_dir(), "the memory files are here too");
    let file = goal_file(&env);
    assert_eq!(file["current"]["text"], GOAL);
    assert_eq!(file["current"]["status"], "active");
    assert!(file["current"]["met_proposed"].is_string(), "{file}");
    assert_eq!(file["history"], json!([]));
    assert_eq!(
        notes(&file),
        [
            "the tokenizer accepts trailing commas",
            "every list accepts them; tests pass"
        ]
    );

    let shown = goal(&env, &[]);
    assert_eq!(shown.code, Some(0));
    insta::assert_snapshot!("goal_show_met_proposed", shown.stdout);

    // Only the user ends it.
    let done = goal(&env, &["done"]);
    assert_eq!(done.code, Some(0), "{done:?}");
    let file = goal_file(&env);
    assert_eq!(file["current"], Value::Null);
    assert_eq!(file["history"][0]["ended"]["how"], "done");
    assert_eq!(file["history"][0]["notes"].as_array().unwrap().len(), 2);

    // A context record each time the prompt changed: no notes, one note,
    // the proposal (requests 3 and 5 repeat the prompt before them).
    assert_eq!(only_in_context(&env, GOAL), 3);
    assert_replays(&env, &server);
}

#[test]
fn goal_progress_without_an_active_goal_is_an_error_result() {
    let env = TestEnv::new("goal-progress-none");
    let server = serve(vec![
        progress(&[("call_1", json!({"note": "something advanced"}))]),
        FakeReply::text("No goal, then."),
        FakeReply::text("Going on."),
        progress(&[("call_2", json!({"note": "paused work", "met": true}))]),
        FakeReply::text("Paused, then."),
    ]);
    let run = revolve(
        &env,
        &server,
        &[],
        "first\nsecond\n/goal ship it\n/goal pause\nthird\n",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "No goal, then.\nGoing on.\nPaused, then.\n");
    let sent = bodies(&server);
    assert_eq!(sent.len(), 5, "the session went on after the error");
    assert!(sent.iter().all(|b| block(b).is_none()));
    let (_, none) = tool_results(&sent[1]).pop().unwrap();
    assert!(
        none.starts_with("error: GoalProgress: there is no goal to record progress on"),
        "{none}"
    );
    let (_, paused) = tool_results(&sent[4]).pop().unwrap();
    assert!(
        paused.starts_with("error: GoalProgress: the goal is paused"),
        "{paused}"
    );
    let file = goal_file(&env);
    assert_eq!(file["current"]["notes"], json!([]), "nothing noted");
    assert_eq!(
        file["current"]["met_proposed"],
        Value::Null,
        "nothing proposed"
    );
    assert_eq!(file["current"]["status"], "paused");
}

// ---------------------------------------------------------------------------
// 3. A later run, and a compaction, pick the goal up

#[test]
fn a_later_run_sees_the_goal_and_its_last_eight_notes() {
    let env = TestEnv::new("goal-later-run");
    assert_eq!(goal(&env, &[GOAL]).code, Some(0));
    let ten: Vec<(String, Value)> = (1..=10)
        .map(|i| (format!("call_{i}"), json!({"note": format!("note {i:02}")})))
        .collect();
    let calls: Vec<(&str, Value)> = ten.iter().map(|(id, a)| (id.as_str(), a.clone())).collect();
    let first = serve(vec![progress(&calls), FakeReply::text("Ten steps.")]);
    let run = revolve(&env, &first, &[], "take ten steps\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    let results = tool_results(&bodies(&first)[1]);
    assert_eq!(results.len(), 10);
    assert_eq!(results[9].1, "noted (10 notes on this goal).");
    assert_eq!(notes(&goal_file(&env)).len(), 10);

    // A new session (not --continue) in the same directory.
    let second = serve(vec![FakeReply::text("Picking it up.")]);
    let run = revolve(&env, &second, &[], "what now?\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(env.session_files().len(), 2, "two sessions");
    let sent = bodies(&second);
    assert_eq!(
        request_messages(&sent[0].to_string()),
        common::pairs(&[("user", "what now?")]),
        "a fresh history"
    );
    let later = block(&sent[0]).expect("the goal in the later run's first request");
    assert!(
        later.contains("Progress so far, oldest first (the last 8 of 10 notes):\n"),
        "{later}"
    );
    for i in 1..=10 {
        let line = format!(": note {i:02}\n");
        assert_eq!(later.contains(&line), i > 2, "note {i}: {later}");
    }
    insta::assert_snapshot!("goal_block_later_run", later);
    assert_eq!(only_in_context(&env, GOAL), 3);
}

#[test]
fn a_compaction_keeps_the_goal() {
    let env = TestEnv::new("goal-compaction");
    assert_eq!(goal(&env, &[GOAL]).code, Some(0));
    let server = serve(vec![
        FakeReply::text("a1"),
        FakeReply::text("a2"),
        FakeReply::text("a3"),
        FakeReply::text("a4"),
        FakeReply::text("Notes: turn one was asked."),
        FakeReply::text("a5"),
        FakeReply::text("a6"),
    ]);
    let run = revolve(&env, &server, &[], "t1\nt2\nt3\nt4\n/compact\nt5\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(
        env.session_files().len(),
        2,
        "the compaction started a new file"
    );
    let run = revolve(&env, &server, &["--continue"], "t6\n");
    assert_eq!(run.code, Some(0), "{run:?}");

    let sent = bodies(&server);
    assert_eq!(sent.len(), 7);
    let before = block(&sent[0]).expect("a goal block");
    let history = |b: &Value| request_messages(&b.to_string());
    assert!(
        !history(&sent[5]).contains(&("user".to_owned(), "t1".to_owned())),
        "t1 was summarized away: {:?}",
        history(&sent[5])
    );
    for after in [&sent[5], &sent[6]] {
        assert_eq!(block(after).as_deref(), Some(before.as_str()));
    }
    only_in_context(&env, GOAL);
}

#[test]
fn bare_runs_carry_no_goal() {
    let env = TestEnv::new("goal-bare");
    assert_eq!(goal(&env, &[GOAL]).code, Some(0));
    let server = serve(vec![FakeReply::text("Bare."), FakeReply::text("Dressed.")]);
    assert_eq!(revolve(&env, &server, &["--bare"], "hi\n").code, Some(0));
    assert_eq!(revolve(&env, &server, &[], "hi\n").code, Some(0));
    let blocks = blocks(&server);
    assert_eq!(blocks[0], None, "--bare: no goal in the prompt");
    assert!(blocks[1].is_some());
}

#[test]
fn an_unreadable_goal_file_is_told_never_fatal() {
    let env = TestEnv::new("goal-unreadable");
    let dir = project_dir(&env);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("goal.json"), "{\"current\": 7}\n").unwrap();
    let server = serve(vec![FakeReply::text("Still answering.")]);
    let run = revolve(&env, &server, &[], "hi\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Still answering.\n");
    let told = format!(
        "revolve: {}: line 1, column 13: invalid type: integer `7`, expected struct Goal\n",
        dir.join("goal.json").display()
    );
    assert_eq!(run.stderr_past_seeding(&env), told);
    assert_eq!(blocks(&server), [None]);
    // `revolve goal` says the same and fails.
    let shown = goal(&env, &[]);
    assert_eq!((shown.code, shown.stderr), (Some(1), told));
}

// ---------------------------------------------------------------------------
// 4. Never in the history

#[test]
fn the_goal_lives_beside_the_memory_files_never_in_the_history() {
    let env = TestEnv::new("goal-not-in-history");
    let text = "keep the goal out of the log 7f3a";
    // `init` first: a goal set before the project directory exists keeps
    // it from ever getting its folders (see the ignored test below).
    env.ok(&["init"]);
    assert_eq!(goal(&env, &[text]).code, Some(0));
    let server = serve(vec![
        progress(&[("call_1", json!({"note": "first step", "met": true}))]),
        FakeReply::text("Done, I think."),
        FakeReply::text("Yes."),
    ]);
    let run = revolve(&env, &server, &["--name", "kept"], "go\n/goal\nsure?\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stderr.contains(text), "/goal showed it: {}", run.stderr);

    // goal.json is in the project directory, with memory/ and tasks/, and
    // nowhere under the state root where the sessions are.
    let dir = project_dir(&env);
    assert!(dir.join("goal.json").is_file());
    assert!(dir.join("memory").is_dir() && dir.join("tasks").is_dir());
    let mut found = Vec::new();
    let mut stack = vec![env.root.clone()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.file_name().is_some_and(|n| n == "goal.json") {
                found.push(path);
            }
        }
    }
    assert_eq!(found, [dir.join("goal.json")], "one goal file");

    // In the log only as the system prompt of context records.
    // Requests 1 and 2 (the note and the proposal); 3 repeats 2.
    assert_eq!(only_in_context(&env, text), 2);
    let recs = records(&env.only_session());
    assert!(
        messages(&recs).iter().all(|(_, c)| !c.contains(text)),
        "no message carries it"
    );
    // The transcript and the folded state do not show it either.
    let transcript = env.ok(&["replay"]).stdout;
    assert!(!transcript.contains(text), "{transcript}");
    let state = env.ok(&["replay", "--json"]).stdout;
    let state_without_context: Value = serde_json::from_str(&state).unwrap();
    let messages_json = state_without_context["messages"].to_string();
    assert!(!messages_json.contains(text), "{messages_json}");
}

// ---------------------------------------------------------------------------
// 5. --goal-run

/// The `--goal-run` lines on stderr.
fn run_lines(run: &Run) -> Vec<&str> {
    run.stderr_lines()
        .into_iter()
        .filter(|l| l.starts_with("── goal run"))
        .collect()
}

/// The last `totals` record of the only session.
fn last_totals(env: &TestEnv) -> Value {
    records(&env.only_session())
        .into_iter()
        .rfind(|r| r["type"] == "totals")
        .expect("a totals record")
}

#[test]
fn goal_run_stops_right_after_the_turn_that_proposes_the_goal_met() {
    let env = TestEnv::new("goal-run-met");
    assert_eq!(goal(&env, &[GOAL]).code, Some(0));
    let server = serve(vec![
        progress(&[("call_1", json!({"note": "lists parse"}))]),
        FakeReply::text("One step."),
        progress(&[("call_2", json!({"note": "all tests pass", "met": true}))]),
        FakeReply::text("It is met."),
        FakeReply::text("never sent: the run stopped"),
    ]);
    let run = revolve(&env, &server, &["--goal-run", "--max-turns", "3"], "");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "One step.\nIt is met.\n");
    assert_eq!(
        run_lines(&run),
        [
            "── goal run: turn 1 of at most 3",
            "── goal run: turn 2 of at most 3 (1 tool round so far)",
            "── goal run ends: the model proposes the goal met; end it with /goal done (2 tool rounds in all)",
        ]
    );
    let sent = bodies(&server);
    assert_eq!(sent.len(), 4, "no request after the proposal");
    assert_eq!(
        request_messages(&sent[0].to_string()),
        common::pairs(&[("user", RUN_PROMPT)])
    );
    assert!(sent.iter().all(|b| block(b).is_some()));

    // Ordinary logged turns.
    let recs = records(&env.only_session());
    let users: Vec<String> = messages(&recs)
        .into_iter()
        .filter(|(role, _)| role == "user")
        .map(|(_, c)| c)
        .collect();
    assert_eq!(users, [RUN_PROMPT, RUN_PROMPT]);
    assert_eq!(last_totals(&env)["turns"], 2);
    let file = goal_file(&env);
    assert!(
        file["current"]["met_proposed"].is_string(),
        "still standing: {file}"
    );
    assert_eq!(notes(&file), ["lists parse", "all tests pass"]);
    assert_replays(&env, &server);
    only_in_context(&env, GOAL);

    // The proposal stands: a second run stops before any turn.
    let again = serve(vec![FakeReply::text("never sent")]);
    let run = revolve(&env, &again, &["--goal-run"], "");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(
        run_lines(&run),
        ["── goal run ends: the model proposes the goal met; end it with /goal done"]
    );
    assert!(again.requests().is_empty());
}

#[test]
fn goal_run_goes_on_once_the_user_withdraws_the_proposal() {
    let env = TestEnv::new("goal-run-resume");
    assert_eq!(goal(&env, &[GOAL]).code, Some(0));
    let first = serve(vec![
        progress(&[("call_1", json!({"note": "looks done", "met": true}))]),
        FakeReply::text("Met, I think."),
    ]);
    let run = revolve(&env, &first, &["--goal-run"], "");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(first.requests().len(), 2);
    // "Not yet": /goal resume withdraws the proposal.
    let resumed = goal(&env, &["resume"]);
    assert_eq!(
        resumed.stdout,
        "the goal is already active; the model's proposal that it is met is withdrawn, \
         so work goes on\n"
    );
    assert_eq!(goal_file(&env)["current"]["met_proposed"], Value::Null);
    let second = serve(vec![
        FakeReply::text("More work."),
        FakeReply::text("never"),
    ]);
    let run = revolve(&env, &second, &["--goal-run", "--max-turns", "1"], "");
    // Stopped at its turns without the goal proposed met: exit 3 (issue 32).
    assert_eq!(run.code, Some(3), "{run:?}");
    assert_eq!(run.stdout, "More work.\n");
    let block = block(&bodies(&second)[0]).unwrap();
    assert!(
        block.contains("- 2026-12-02 10:00 UTC: looks done\n") && !block.contains("you proposed"),
        "the note stays, the proposal is gone: {block}"
    );
}

#[test]
fn ctrl_c_ends_a_goal_run() {
    let env = TestEnv::new("goal-run-ctrl-c");
    assert_eq!(goal(&env, &[GOAL]).code, Some(0));
    let server = serve(vec![
        FakeReply::Stall {
            chunks: vec!["Working".into(), " on it".into()],
        },
        FakeReply::text("never sent"),
    ]);
    let url = server.url();
    let within = Duration::from_secs(5);
    let mut child = env.spawn(&["--base-url", &url, "--goal-run", "--max-turns", "5"], "");
    assert!(
        child.wait_stdout("Working on it", within),
        "the turn streamed"
    );
    child.signal("INT");
    let run = child.finish(within);
    assert_eq!(run.code, Some(130), "{run:?}");
    assert_eq!(
        run.stderr_past_seeding(&env),
        "── goal run: turn 1 of at most 5\nrevolve: interrupted\n"
    );
    assert_eq!(server.requests().len(), 1, "no turn after the interrupt");
    let recs = records(&env.only_session());
    let msgs = messages(&recs);
    assert_eq!(msgs[0], ("user".to_owned(), RUN_PROMPT.to_owned()));
    assert_eq!(msgs.len(), 2, "{msgs:?}");
    assert_eq!(goal_file(&env)["current"]["text"], GOAL, "the goal stands");
}

#[test]
fn goal_run_takes_exactly_max_turns_ordinary_turns() {
    let env = TestEnv::new("goal-run-max");
    assert_eq!(goal(&env, &[GOAL]).code, Some(0));
    let server = serve(
        (1..=4)
            .map(|i| FakeReply::text(&format!("step {i}")))
            .collect(),
    );
    let run = revolve(&env, &server, &["--goal-run", "--max-turns", "3"], "");
    // The goal not met: exit 3, said on stderr's last line (issue 32).
    assert_eq!(run.code, Some(3), "{run:?}");
    assert!(
        run.stderr.ends_with(
            "revolve: the goal run ended without the goal met: 3 turns taken, the most asked for\n"
        ),
        "{run:?}"
    );
    assert_eq!(run.stdout, "step 1\nstep 2\nstep 3\n");
    assert_eq!(
        run_lines(&run),
        [
            "── goal run: turn 1 of at most 3",
            "── goal run: turn 2 of at most 3",
            "── goal run: turn 3 of at most 3",
            "── goal run ends: 3 turns taken, the most asked for",
        ]
    );
    let sent = bodies(&server);
    assert_eq!(sent.len(), 3);
    // Each request carries the turns before it: one user message per turn.
    assert_eq!(
        request_messages(&sent[2].to_string()),
        common::pairs(&[
            ("user", RUN_PROMPT),
            ("assistant", "step 1"),
            ("user", RUN_PROMPT),
            ("assistant", "step 2"),
            ("user", RUN_PROMPT),
        ])
    );
    let recs = records(&env.only_session());
    assert_eq!(
        messages(&recs),
        common::pairs(&[
            ("user", RUN_PROMPT),
            ("assistant", "step 1"),
            ("user", RUN_PROMPT),
            ("assistant", "step 2"),
            ("user", RUN_PROMPT),
            ("assistant", "step 3"),
        ])
    );
    let totals: Vec<i64> = recs
        .iter()
        .filter(|r| r["type"] == "totals")
        .map(|r| r["turns"].as_i64().unwrap())
        .collect();
    assert_eq!(totals, [1, 2, 3], "totals after every turn");
    assert_eq!(goal_file(&env)["current"]["text"], GOAL, "the goal stands");
    assert_replays(&env, &server);
}

#[test]
fn goal_run_without_an_active_goal_stops_at_once() {
    let env = TestEnv::new("goal-run-none");
    let server = serve(vec![FakeReply::text("never sent")]);
    let run = revolve(&env, &server, &["--goal-run"], "");
    assert_eq!(run.code, Some(3), "{run:?}");
    assert_eq!(run.stdout, "");
    assert_eq!(
        run.stderr_past_seeding(&env),
        "── goal run ends: no goal is set; set one with /goal or revolve goal\n\
         revolve: the goal run ended without the goal met: no goal is set; set one with /goal or revolve goal\n"
    );
    assert_eq!(goal(&env, &["ship it"]).code, Some(0));
    assert_eq!(goal(&env, &["pause"]).code, Some(0));
    let run = revolve(&env, &server, &["--goal-run", "--max-turns", "2"], "");
    assert_eq!(run.code, Some(3), "{run:?}");
    assert_eq!(
        run.stderr,
        "── goal run ends: the goal is paused\n\
         revolve: the goal run ended without the goal met: the goal is paused\n"
    );
    assert!(server.requests().is_empty(), "no turn taken");
    for file in env.session_files() {
        let recs = records(&file);
        assert!(messages(&recs).is_empty(), "no message logged: {recs:?}");
    }
}

#[test]
fn goal_run_with_the_scripted_provider() {
    let env = TestEnv::new("goal-run-scripted");
    let script = env.root.join("replies.jsonl");
    std::fs::write(
        &script,
        concat!(
            r#"{"text":"Working.","tool_calls":[{"name":"GoalProgress","arguments":{"note":"first half"}}]}"#,
            "\n",
            r#"{"text":" Half done."}"#,
            "\n",
            r#"{"tool_calls":[{"name":"GoalProgress","arguments":{"note":"second half","met":true}}]}"#,
            "\n",
            r#"{"text":"All done."}"#,
            "\n",
            r#"{"text":"never sent"}"#,
            "\n",
        ),
    )
    .unwrap();
    assert_eq!(goal(&env, &[GOAL]).code, Some(0));
    let script = script.to_string_lossy().into_owned();
    let run = env.run(
        &["--provider", "scripted", "--script", &script, "--goal-run"],
        "",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Working.\n Half done.\nAll done.\n");
    assert_eq!(
        run_lines(&run).last().copied(),
        Some("── goal run ends: the model proposes the goal met; end it with /goal done (2 tool rounds in all)")
    );
    assert_eq!(last_totals(&env)["turns"], 2);
    assert_eq!(notes(&goal_file(&env)), ["first half", "second half"]);
}

#[test]
fn goal_run_flags_are_checked() {
    let env = TestEnv::new("goal-run-flags");
    let run = env.run(&["--max-turns", "3"], "");
    assert_eq!(run.code, Some(2), "--max-turns needs --goal-run: {run:?}");
    let run = env.run(&["--goal-run", "hello"], "");
    assert_eq!(run.code, Some(2), "--goal-run takes no prompt: {run:?}");
}

// ---------------------------------------------------------------------------
// 6. The status rows in a terminal

/// `revolve ARGS` in a pseudo-terminal `columns` wide: each of `lines` is
/// typed at the next prompt, then Ctrl-D. Returns everything the terminal
/// showed.
fn terminal(
    env: &TestEnv,
    args: &[&str],
    columns: u16,
    export_columns: bool,
    lines: &[&str],
) -> String {
    // The terminal is `columns` wide; COLUMNS says so too when exported.
    let columns_var = columns.to_string();
    let vars: &[(&str, &str)] = if export_columns {
        &[("COLUMNS", &columns_var)]
    } else {
        &[]
    };
    let mut term = env.terminal(args, columns, vars);
    let within = Duration::from_secs(8);
    for (i, typed) in lines.iter().enumerate() {
        term.wait_for_n("› ", i + 1, within);
        term.type_keys(&format!("{typed}\r"));
    }
    term.wait_for_n("› ", lines.len() + 1, within);
    term.type_keys("\x04");
    let (ok, screen) = term.finish(Duration::from_secs(10));
    assert!(ok, "{screen}");
    screen
}

/// The goal row shown before each prompt (`-` when none), from a terminal's
/// output: the status rows are the dim lines, the session's status first,
/// then the goal's when there is one.
fn goal_rows(screen: &str) -> Vec<String> {
    const DIM: &str = "\x1b[2m";
    let mut rows = Vec::new();
    for line in screen.split('\n') {
        let Some(rest) = line.trim_end_matches('\r').strip_prefix(DIM) else {
            continue;
        };
        let text = rest.split("\x1b[0m").next().unwrap_or_default();
        // A tool line is dim too (issue 32): not a row.
        if text.starts_with('\u{2192}') {
            continue;
        }
        if text.starts_with("goal") {
            *rows.last_mut().expect("a status line before the goal row") = text.to_owned();
        } else {
            rows.push("-".to_owned());
        }
    }
    rows
}

#[test]
fn status_rows_in_a_terminal() {
    let env = TestEnv::new("goal-status-rows");
    let script = env.root.join("replies.jsonl");
    std::fs::write(
        &script,
        concat!(
            r#"{"tool_calls":[{"name":"GoalProgress","arguments":{"note":"all lists parse","met":true}}]}"#,
            "\n",
            r#"{"text":"It looks met."}"#,
            "\n",
        ),
    )
    .unwrap();
    assert_eq!(goal(&env, &[GOAL]).code, Some(0));
    let script = script.to_string_lossy().into_owned();
    let screen = terminal(
        &env,
        &["--provider", "scripted", "--script", &script],
        40,
        true,
        &["/goal pause", "/goal resume", "work on it", "/goal done"],
    );
    let rows = goal_rows(&screen);
    for row in &rows {
        assert!(row.chars().count() <= 40, "{row:?} is wider than 40");
    }
    assert_eq!(rows.len(), 5, "one per prompt: {screen}");
    insta::assert_snapshot!("status_rows", rows.join("\n"));
    let file = goal_file(&env);
    assert_eq!(file["history"][0]["ended"]["how"], "done");
}

// ---------------------------------------------------------------------------
// Regressions: bugs found while writing these tests, since fixed

/// A goal set before any session creates the project directory whole
/// (`memory/`, `tasks/`, `subagents/` and their templates), as the first
/// session would have: a session never fills in a folder that exists
/// (issue 17), so a folder holding the goal alone would stay without them.
/// The goal is kept, and the first session creates nothing more.
#[test]
fn a_goal_set_first_does_not_keep_the_project_folders_from_being_created() {
    let env = TestEnv::new("goal-first-folders");
    assert_eq!(goal(&env, &[GOAL]).code, Some(0));
    let dir = project_dir(&env);
    for folder in ["memory", "tasks", "subagents"] {
        assert!(
            dir.join(folder).is_dir(),
            "{folder}/ is missing in {}",
            dir.display()
        );
    }
    let server = serve(vec![FakeReply::text("Hello.")]);
    assert_eq!(revolve(&env, &server, &[], "hi\n").code, Some(0));
    assert_eq!(goal_file(&env)["current"]["text"], GOAL, "the goal is kept");
    let init = env.ok(&["init"]);
    assert!(
        init.stdout.ends_with("exists; nothing created\n"),
        "{init:?}"
    );
}

/// `--bare` keeps the goal out of every prompt, so `--bare --goal-run`
/// never sends a request without the goal block: the model is never asked
/// to work toward a goal it cannot see.
#[test]
fn a_bare_goal_run_never_asks_the_model_without_the_goal() {
    let env = TestEnv::new("goal-run-bare");
    assert_eq!(goal(&env, &[GOAL]).code, Some(0));
    let server = serve(vec![FakeReply::text("What goal?"), FakeReply::text("?")]);
    let run = revolve(
        &env,
        &server,
        &["--bare", "--goal-run", "--max-turns", "2"],
        "",
    );
    // Refusing the flags (exit 2) or stopping at once both do; asking the
    // model to work toward a goal missing from its prompt does not.
    let sent = blocks(&server);
    assert!(
        sent.iter().all(Option::is_some),
        "{} request(s) without the goal block: {run:?}",
        sent.iter().filter(|b| b.is_none()).count()
    );
}

/// In a 40-column terminal that does not export `COLUMNS`, the goal row is
/// cut to the terminal's own width, so it never wraps.
#[test]
fn the_goal_row_is_cut_to_the_terminal_width() {
    let env = TestEnv::new("goal-row-width");
    let script = env.root.join("replies.jsonl");
    std::fs::write(&script, "{\"text\":\"unused\"}\n").unwrap();
    assert_eq!(
        goal(
            &env,
            &[GOAL, "and in every tuple, every call and every pattern"]
        )
        .code,
        Some(0)
    );
    let script = script.to_string_lossy().into_owned();
    let screen = terminal(
        &env,
        &["--provider", "scripted", "--script", &script],
        40,
        false,
        &[],
    );
    let rows = goal_rows(&screen);
    assert_eq!(rows.len(), 1, "{screen}");
    assert!(
        rows[0].chars().count() <= 40,
        "{:?} in a 40-column terminal",
        rows[0]
    );
}

/// `--goal-run` with a broken `goal.json` sends nothing and names the
/// file on stderr, rather than saying no goal is set.
#[test]
fn a_goal_run_names_an_unreadable_goal_file() {
    let env = TestEnv::new("goal-run-unreadable");
    let dir = project_dir(&env);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("goal.json"), "{\"current\": 7}\n").unwrap();
    let server = serve(vec![FakeReply::text("never sent")]);
    let run = revolve(&env, &server, &["--goal-run"], "");
    assert!(server.requests().is_empty());
    assert!(
        run.stderr.contains("goal.json") && !run.stderr.contains("no goal is set"),
        "{run:?}"
    );
}

/// `goal --json`: the goals as `goal.json` holds them, after the change
/// asked for, if any: `current` (null or an object with `text`, `set_at`,
/// `status`, `met_proposed`, `notes`) and `history` (goals that ended, each
/// with `ended.at` and `ended.how`).
#[test]
fn goal_as_json() {
    let env = TestEnv::new("goal-json");
    let run = env.ok(&["goal", "--json"]);
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(doc, json!({"current": null, "history": []}));

    env.ok(&["goal", "first", "objective"]);
    let run = env.ok(&["goal", "--json", "ship", "the", "parser"]);
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    let current = &doc["current"];
    assert_eq!(current["text"], "ship the parser");
    assert!(current["set_at"].is_string(), "{doc}");
    assert_eq!(current["status"], "active");
    assert!(current["met_proposed"].is_null(), "{doc}");
    assert!(current["notes"].is_array(), "{doc}");
    assert!(current.get("ended").is_none(), "{doc}");
    let ended = &doc["history"][0];
    assert_eq!(ended["text"], "first objective");
    assert_eq!(ended["ended"]["how"], "cleared");
    assert!(ended["ended"]["at"].is_string(), "{doc}");

    let run = env.ok(&["goal", "--json", "pause"]);
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(doc["current"]["status"], "paused");
    insta::assert_snapshot!("goal_json", run.stdout);
}
