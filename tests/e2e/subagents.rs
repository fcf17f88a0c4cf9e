//! Subagents end to end (issue 43, item 2): `task` calls run as child
//! revolves side by side, each with its own log that replays and is
//! listed under its parent; a read-only child cannot write; Ctrl-C stops
//! every child.

use std::time::{Duration, Instant};

use revolve_testkit::{FakeOptions, FakeProtocol, FakeReply, FakeServer};
use serde_json::{json, Value};

use crate::common::{records, require, tool_results, TestEnv};

fn task(id: &str, description: &str) -> (String, String, String) {
    (
        id.to_owned(),
        "task".to_owned(),
        json!({"description": description, "prompt": format!("do {description}")}).to_string(),
    )
}

fn calls(list: &[(String, String, String)]) -> FakeReply {
    let refs: Vec<(&str, &str, &str)> = list
        .iter()
        .map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str()))
        .collect();
    FakeReply::tool_calls("", &refs)
}

/// A child's answer, slow on purpose: two pieces, `every` apart.
fn slow(every: Duration) -> FakeReply {
    FakeReply::Slow {
        chunks: vec!["child ".into(), "done".into()],
        every,
    }
}

/// Runs a parent whose one answer makes `n` task calls, each child
/// answering slowly; the wall time, and the env it ran in.
fn parent_of(n: usize, name: &str) -> (Duration, TestEnv, FakeServer, crate::common::Run) {
    let env = TestEnv::new(name);
    let list: Vec<_> = (1..=n)
        .map(|i| task(&format!("c{i}"), &format!("part {i}")))
        .collect();
    let mut replies = vec![calls(&list)];
    replies.extend((0..n).map(|_| slow(Duration::from_millis(700))));
    replies.push(FakeReply::text("All done."));
    let server = serve(replies);
    let url = server.url();
    let started = Instant::now();
    let run = env.run(&["-p", "split it", "--base-url", &url], "");
    (started.elapsed(), env, server, run)
}

/// A fake model server that answers connections side by side, as a real
/// one does: the children ask at once.
fn serve(replies: Vec<FakeReply>) -> FakeServer {
    let options = FakeOptions {
        keep_alive: true,
        ..FakeOptions::default()
    };
    FakeServer::start_with_options(FakeProtocol::OpenAi, replies, options).unwrap()
}

fn of_type<'a>(log: &'a [Value], kind: &str) -> Vec<&'a Value> {
    log.iter().filter(|r| r["type"] == kind).collect()
}

#[test]
fn three_task_calls_run_side_by_side_and_each_child_log_replays() {
    let (one, _env1, _s1, run1) = parent_of(1, "task-one");
    assert_eq!(run1.code, Some(0), "{run1:?}");
    let (three, env, server, run) = parent_of(3, "task-three");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "All done.\n");
    eprintln!("one child: {one:?}; three side by side: {three:?}");
    assert!(
        three.as_secs_f64() < 1.5 * one.as_secs_f64(),
        "three children took {three:?}, one took {one:?}: not side by side"
    );

    // The parent's log: a delegated record and the child's answer per call.
    let files = env.session_files();
    let parent = files
        .iter()
        .find(|f| {
            !of_type(&records(f), "header").is_empty() && of_type(&records(f), "spawned").is_empty()
        })
        .unwrap()
        .clone();
    let log = records(&parent);
    let results = tool_results(&log);
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(
        results.iter().all(|(_, out)| out == "child done"),
        "{results:?}"
    );
    let delegated = of_type(&log, "delegated");
    assert_eq!(delegated.len(), 3);
    let parent_id = log[0]["id"].as_str().unwrap().to_owned();
    for d in &delegated {
        assert_eq!(d["requests"], 1, "{d}");
        let child = records(std::path::Path::new(d["log"].as_str().unwrap()));
        let spawned = of_type(&child, "spawned");
        assert_eq!(spawned[0]["parent"], parent_id.as_str());
        assert_eq!(spawned[0]["call"], d["call"]);
        assert_eq!(
            spawned[0]["tools"],
            json!(["read_file", "list_dir", "grep", "skill", "agent_info"])
        );
        // Its own log replays: one request, offering its tools alone.
        let replayed = env.ok(&["replay", "--requests", d["log"].as_str().unwrap()]);
        let body: Value = serde_json::from_str(replayed.stdout.lines().next().unwrap()).unwrap();
        let names: Vec<&str> = body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            ["read_file", "list_dir", "grep", "skill", "agent_info"]
        );
        assert!(replayed.stdout.contains("do part "), "{}", replayed.stdout);
    }
    // The parent's replay shows its children's requests too: 2 + 3.
    let replayed = env.ok(&["replay", "--requests", parent.to_str().unwrap()]);
    assert_eq!(replayed.stdout.lines().count(), 5);
    assert_eq!(server.requests().len(), 5);
    // Children are listed under their parent.
    let listed = env.ok(&["sessions", "--all"]).stdout;
    let lines: Vec<&str> = listed.lines().collect();
    let at = lines.iter().position(|l| l.contains(&parent_id)).unwrap();
    for line in &lines[at + 1..at + 4] {
        assert!(line.starts_with("└ task"), "{listed}");
    }
    // Their requests and tokens roll into the parent's totals.
    let totals = of_type(&log, "totals");
    let last = totals.last().unwrap();
    assert_eq!(last["requests"], 5, "{last}");
}

#[test]
fn a_read_only_child_cannot_write_and_says_so() {
    let env = TestEnv::new("task-readonly");
    let write = json!({"path": "made.txt", "content": "x"}).to_string();
    let server = serve(vec![
        calls(&[task("c1", "write a file")]),
        FakeReply::tool_calls("", &[("w1", "write_file", write.as_str())]),
        FakeReply::text("I could not write it."),
        FakeReply::text("The child could not write."),
    ]);
    let url = server.url();
    let run = env.run(&["-p", "go", "--base-url", &url, "--allow-edits"], "");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(!env.cwd.join("made.txt").exists(), "the child wrote");
    let bodies: Vec<String> = server.requests().into_iter().map(|r| r.body).collect();
    assert!(
        bodies[2].contains("error: write_file is not among this subagent's tools"),
        "{}",
        bodies[2]
    );
    let parent_log = env
        .session_files()
        .into_iter()
        .map(|f| records(&f))
        .find(|r| of_type(r, "spawned").is_empty())
        .unwrap();
    assert_eq!(tool_results(&parent_log)[0].1, "I could not write it.");
}

#[test]
fn ctrl_c_stops_every_child() {
    require("pgrep");
    let env = TestEnv::new("task-ctrl-c");
    let list: Vec<_> = (1..=3)
        .map(|i| task(&format!("c{i}"), &format!("wait {i}")))
        .collect();
    let server = serve(vec![
        calls(&list),
        FakeReply::Hang,
        FakeReply::Hang,
        FakeReply::Hang,
    ]);
    let url = server.url();
    let running = env.spawn(&["-p", "go", "--base-url", &url], "");
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.requests().len() < 4 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(server.requests().len(), 4, "the three children asked");
    let started = Instant::now();
    running.signal("INT");
    let run = running.finish(Duration::from_secs(10));
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert_ne!(run.code, Some(0), "{run:?}");
    let parent_log = env
        .session_files()
        .into_iter()
        .map(|f| records(&f))
        .find(|r| of_type(r, "spawned").is_empty())
        .unwrap();
    assert_eq!(
        of_type(&parent_log, "interrupted").len(),
        1,
        "{parent_log:?}"
    );
    // No child of this parent is left.
    let link = format!("--subagent-of={}", parent_log[0]["id"].as_str().unwrap());
    let left = || {
        std::process::Command::new("pgrep")
            .args(["-f", "--", &link])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default()
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while !left().is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(left(), "", "children of the interrupted parent still run");
}

#[test]
fn the_parents_max_cost_stops_a_child() {
    let env = TestEnv::new("task-max-cost");
    // The parent's first request is expected to cost about $0.0011 with
    // gpt-4o-mini's prices, a child's about $0.0010: under $0.0015 the
    // parent asks, and each of two children, given half of what is left,
    // is stopped before its request.
    let server = serve(vec![
        calls(&[task("c1", "one"), task("c2", "two")]),
        FakeReply::text("Over budget."),
    ]);
    let url = server.url();
    let run = env.run(
        &[
            "-p",
            "go",
            "--base-url",
            &url,
            "--model",
            "gpt-4o-mini",
            "--max-cost",
            "0.0015",
        ],
        "",
    );
    let parent_log = env
        .session_files()
        .into_iter()
        .map(|f| records(&f))
        .find(|r| of_type(r, "spawned").is_empty())
        .unwrap();
    let results = tool_results(&parent_log);
    assert_eq!(results.len(), 2, "{run:?}");
    for (_, result) in &results {
        assert!(result.starts_with("error:"), "{result}");
        assert!(result.contains("past --max-cost"), "{result}");
    }
    // Neither child reached the model: the two requests are the parent's.
    assert_eq!(server.requests().len(), 2);
    assert_eq!(run.stdout, "Over budget.\n", "{run:?}");
}

#[test]
fn task_is_offered_only_with_definitions_and_the_log_names_them() {
    let env = TestEnv::new("task-offered");
    let server = serve(vec![FakeReply::text("No."), FakeReply::text("Yes.")]);
    let url = server.url();
    env.ok(&["-p", "hi", "--base-url", &url]);
    let dir = env.cwd.join(".claude/agents");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("finder.md"),
        "---\ndescription: Finds things.\n---\nYou find things.\n",
    )
    .unwrap();
    env.ok(&["-p", "hi", "--base-url", &url]);
    let offered: Vec<bool> = server
        .requests()
        .iter()
        .map(|r| r.body.contains(r#""name":"task""#))
        .collect();
    assert_eq!(offered, [false, true]);
    let logs: Vec<Vec<Value>> = env.session_files().iter().map(|f| records(f)).collect();
    let named: Vec<&Value> = logs
        .iter()
        .flat_map(|log| of_type(log, "context"))
        .filter_map(|c| c.get("subagents"))
        .collect();
    assert_eq!(named, [&json!(["finder"])]);
}

#[test]
fn a_terminal_shows_each_running_child_on_one_live_line() {
    let env = TestEnv::new("task-live");
    let list = [task("c1", "part 1"), task("c2", "part 2")];
    let server = serve(vec![
        calls(&list),
        slow(Duration::from_millis(700)),
        slow(Duration::from_millis(700)),
        FakeReply::text("All done."),
    ]);
    let url = server.url();
    let mut term = env.terminal(&["--base-url", &url], 100, &[]);
    term.wait_for_next("\u{203a} ", Duration::from_secs(20));
    term.type_keys("split it\r");
    term.wait_for_next("All done.", Duration::from_secs(30));
    term.wait_for_next("\u{203a} ", Duration::from_secs(20));
    term.type_keys("\u{4}");
    let (ok, shown) = term.finish(Duration::from_secs(30));
    assert!(ok, "{shown:?}");
    // One line a child, its description, state and tokens, both on
    // screen together…
    let both = "\u{1b}[2m  task 1: part 1 · started · 0 in, 0 out\u{1b}[0m\r\n\u{1b}[2m  task 2: part 2 · started · 0 in, 0 out\u{1b}[0m";
    assert!(shown.contains(both), "{shown:?}");
    // …redrawn in place (the two lines erased first) as each goes on,
    // an ended one saying so while the other runs, then folded away
    // before the answer.
    assert!(shown.matches("\u{1b}[2F\u{1b}[J").count() >= 2, "{shown:?}");
    assert!(shown.contains(" · ended · "), "{shown:?}");
    assert!(shown.contains("\u{1b}[2F\u{1b}[JAll done."), "{shown:?}");
    assert_eq!(server.requests().len(), 4);
}
