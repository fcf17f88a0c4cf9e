//! The commands Claude Code and Codex users reach for (issue 47 items 9,
//! 14, 20 and 22's `.claude/commands/`), end to end: totals that count
//! what summaries cost on a server that reports no usage, a big edit's
//! counts, and the REPL's `!cmd`, `/clear`, `/resume`, `/init`, `/diff`,
//! `/mcp` and commands of the user's own.

use std::time::Duration;

use revolve_testkit::{FakeReply, FakeServer};
use serde_json::{json, Value};

use crate::common::{records, request_messages, TestEnv};

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

/// Waits until the terminal showed `text` since keys were last typed and
/// then the prompt again.
fn after(term: &mut crate::common::Terminal, text: &str) {
    term.wait_until(WITHIN, text, |s| {
        s.find(text).is_some_and(|i| s[i..].contains("› "))
    });
}

const WITHIN: Duration = Duration::from_secs(20);

/// The user messages of the `n`th request the server got.
fn users(server: &FakeServer, n: usize) -> Vec<String> {
    request_messages(&server.requests()[n].body)
        .into_iter()
        .filter(|(role, _)| role == "user")
        .map(|(_, text)| text)
        .collect()
}

/// The session file whose header has this name.
fn session_named(env: &TestEnv, name: &str) -> std::path::PathBuf {
    env.session_files()
        .into_iter()
        .find(|f| records(f).first().is_some_and(|h| h["name"] == name))
        .unwrap_or_else(|| panic!("no session {name}"))
}

/// `/clear` ends the session (kept, its name said) and the REPL goes on
/// in a new one whose requests carry nothing of the old.
#[test]
fn clear_starts_a_new_session_and_keeps_the_old_one() {
    let server = FakeServer::start(vec![FakeReply::text("One."), FakeReply::text("Two.")]).unwrap();
    let env = TestEnv::new("cmd-clear");
    let url = server.url();
    let mut term = env.terminal(&["--base-url", &url, "-n", "before"], 120, &[]);
    term.wait_for("› ", WITHIN);
    term.type_keys("remember the port 5432\r");
    after(&mut term, "One.");
    term.type_keys("/clear\r");
    after(&mut term, "ended before; revolve -r before");
    term.type_keys("what port?\r");
    after(&mut term, "Two.");
    let (ok, screen) = term.finish(WITHIN);
    assert!(ok, "{screen}");
    assert_eq!(
        users(&server, 1),
        ["what port?"],
        "nothing of the old session"
    );
    assert_eq!(env.session_files().len(), 2, "{screen}");
    let old = records(&session_named(&env, "before"));
    assert!(
        old.iter().any(|r| r["content"] == "remember the port 5432"),
        "the old session is kept whole"
    );
}

/// `/resume NAME` switches to that session: the next request carries its
/// conversation; `/resume` of this session or of no session says so.
#[test]
fn resume_by_name_switches_to_that_session() {
    let server = FakeServer::start(vec![
        FakeReply::text("Noted."),
        FakeReply::text("Other."),
        FakeReply::text("It is 5432."),
    ])
    .unwrap();
    let env = TestEnv::new("cmd-resume-name");
    let url = server.url();
    let run = env.run(&["--base-url", &url, "-n", "keepme"], "the port is 5432\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    let mut term = env.terminal(&["--base-url", &url, "-n", "now"], 120, &[]);
    term.wait_for("› ", WITHIN);
    term.type_keys("something else\r");
    after(&mut term, "Other.");
    term.type_keys("/resume nosuch\r");
    after(&mut term, "revolve: /resume:");
    term.type_keys("/resume now\r");
    after(&mut term, "/resume: that is this session");
    term.type_keys("/resume keepme\r");
    after(&mut term, "ended now");
    term.type_keys("which port?\r");
    after(&mut term, "It is 5432.");
    let (ok, screen) = term.finish(WITHIN);
    assert!(ok, "{screen}");
    assert_eq!(users(&server, 2), ["the port is 5432", "which port?"]);
}

/// A bare `revolve -r` on a terminal picks from the recent sessions
/// (newest first, with name, age, turns and first prompt) by number or
/// arrows; Esc cancels a bare `/resume` with one line. Without a
/// terminal it lists them and says to name one (exit 2).
#[test]
fn a_bare_resume_picks_from_a_list() {
    let server = FakeServer::start(vec![
        FakeReply::text("A."),
        FakeReply::text("B."),
        FakeReply::text("Again A."),
    ])
    .unwrap();
    let env = TestEnv::new("cmd-picker");
    let url = server.url();
    for (name, line) in [("alpha", "first about alpha"), ("beta", "first about beta")] {
        let run = env.run(&["--base-url", &url, "-n", name], &format!("{line}\n"));
        assert_eq!(run.code, Some(0), "{run:?}");
    }
    let run = env.run(&["-r"], "");
    assert_eq!(run.code, Some(2), "{run:?}");
    let beta = run.stderr.find("beta").expect("beta listed");
    let alpha = run.stderr.find("alpha").expect("alpha listed");
    assert!(beta < alpha, "newest first: {}", run.stderr);
    assert!(
        run.stderr.contains("1 turn   first about beta"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("name one of the above: revolve -r NAME"),
        "{}",
        run.stderr
    );

    let mut term = env.terminal(&["--base-url", &url, "-r"], 120, &[]);
    term.wait_for("resume which session?", WITHIN);
    term.wait_for("first about alpha", WITHIN);
    // Down to the second row (alpha), then Enter.
    term.type_keys("\x1b[B");
    std::thread::sleep(Duration::from_millis(200));
    term.type_keys("\r");
    after(&mut term, "/help for commands");
    term.type_keys("/resume\r");
    term.wait_for_next("resume which session?", WITHIN);
    term.type_keys("\x1b");
    after(&mut term, "resume cancelled; still in this session");
    term.type_keys("and now?\r");
    after(&mut term, "Again A.");
    let (ok, screen) = term.finish(WITHIN);
    assert!(ok, "{screen}");
    assert_eq!(users(&server, 2), ["first about alpha", "and now?"]);
}

/// `/diff` shows the changes this session's edits made, from its log.
#[test]
fn diff_shows_the_sessions_edits() {
    let env = TestEnv::new("cmd-diff");
    std::fs::write(env.cwd.join("a.txt"), "one\ntwo\n").unwrap();
    let call = |id: &str, name: &str, args: Value| {
        FakeReply::tool_calls("", &[(id, name, &args.to_string())])
    };
    let server = FakeServer::start(vec![
        call("c1", "read_file", json!({"path": "a.txt"})),
        call(
            "c2",
            "edit_file",
            json!({"path": "a.txt", "old_string": "two", "new_string": "TWO"}),
        ),
        FakeReply::text("Done."),
    ])
    .unwrap();
    let url = server.url();
    let run = env.run(
        &["--base-url", &url, "--allow-edits"],
        "/diff\nshout\n/diff\n",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        run.stderr
            .contains("no changes: this session made no edit that stands"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("a.txt by edit_file (+1 -1)"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("-two\n+TWO\n"), "{}", run.stderr);
    assert!(
        run.stderr.contains("1 file changed by this session"),
        "{}",
        run.stderr
    );
}

/// `/mcp` lists the servers: a configured one that failed with its last
/// error, a project's not approved.
#[test]
fn mcp_lists_the_servers_and_their_state() {
    let env = TestEnv::new("cmd-mcp");
    let dir = env.home.join(".config/task-agent");
    std::fs::create_dir_all(&dir).unwrap();
    let config = json!({"mcp_servers": {"broken": {"command": "/nonexistent/mcp-server"}}});
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
    std::fs::write(
        env.cwd.join(".mcp.json"),
        json!({"mcpServers": {"proj": {"command": "true"}}}).to_string(),
    )
    .unwrap();
    let server = FakeServer::start(vec![FakeReply::text("Hi.")]).unwrap();
    let url = server.url();
    let run = env.run(&["--base-url", &url], "hello\n/mcp\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    let line = |name: &str| {
        run.stderr
            .lines()
            .find(|l| l.starts_with(&format!("{name}  ")))
            .unwrap_or_else(|| panic!("no {name} row: {}", run.stderr))
            .to_owned()
    };
    let broken = line("broken");
    assert!(
        broken.contains("[config.json]  not running, last error:"),
        "{broken}"
    );
    assert!(line("proj").contains("not asked yet"), "{}", run.stderr);
}

/// `/init` writes an AGENTS.md from the repository (languages, the build
/// files' commands, layout); an existing one is kept without a terminal
/// to ask, and replaced on `y` at one.
#[test]
fn init_writes_agents_md_from_the_repository() {
    let env = TestEnv::new("cmd-init");
    std::fs::write(env.cwd.join("Cargo.toml"), "[package]\nname = \"demo\"\n").unwrap();
    std::fs::create_dir_all(env.cwd.join("src")).unwrap();
    std::fs::write(env.cwd.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(env.cwd.join("Makefile"), "check:\n\tcargo test\n").unwrap();
    let run = env.run(
        &["--provider", "scripted", "--script", "/dev/null"],
        "/init\n/init\n",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let agents = std::fs::read_to_string(env.cwd.join("AGENTS.md")).unwrap();
    assert!(agents.contains("Rust (1 file)"), "{agents}");
    assert!(agents.contains("- `cargo test`: run the tests"), "{agents}");
    assert!(
        agents.contains("- `make check`: a Makefile target"),
        "{agents}"
    );
    assert!(agents.contains("- `src/` (1 file)"), "{agents}");
    assert!(run.stderr.contains("/init: wrote "), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("exists and there is no terminal to ask; kept"),
        "{}",
        run.stderr
    );

    std::fs::write(env.cwd.join("AGENTS.md"), "mine\n").unwrap();
    let mut term = env.terminal(
        &["--provider", "scripted", "--script", "/dev/null"],
        120,
        &[],
    );
    term.wait_for("› ", WITHIN);
    term.type_keys("/init\r");
    term.wait_for_next("exists; replace it?", WITHIN);
    term.type_keys("n");
    after(&mut term, "kept");
    assert_eq!(
        std::fs::read_to_string(env.cwd.join("AGENTS.md")).unwrap(),
        "mine\n"
    );
    term.type_keys("/init\r");
    term.wait_for_next("exists; replace it?", WITHIN);
    term.type_keys("y");
    after(&mut term, "/init: wrote");
    let (ok, screen) = term.finish(WITHIN);
    assert!(ok, "{screen}");
    assert!(std::fs::read_to_string(env.cwd.join("AGENTS.md"))
        .unwrap()
        .contains("cargo test"));
}

/// Claude Code's `.claude/commands/NAME.md` is `/NAME ARGS`: its body with
/// `$1` and `$ARGUMENTS` filled in is the message; `~/.claude/commands/`
/// too; one named like a builtin loses, said once.
#[test]
fn claude_commands_are_slash_commands() {
    let env = TestEnv::new("cmd-claude-commands");
    let project = env.cwd.join(".claude/commands/issues");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(
        project.join("fix-issue.md"),
        "---\ndescription: Fix an issue\nargument-hint: [number] [priority]\n---\nFix issue #$1 ($2). All: $ARGUMENTS\n",
    )
    .unwrap();
    std::fs::write(
        env.cwd.join(".claude/commands/status.md"),
        "Say the status.\n",
    )
    .unwrap();
    let home = env.home.join(".claude/commands");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("optimize.md"),
        "Analyze this code for performance issues.\n",
    )
    .unwrap();
    let server = FakeServer::start(vec![
        FakeReply::text("Fixed."),
        FakeReply::text("Faster."),
        FakeReply::text("Again."),
    ])
    .unwrap();
    let url = server.url();
    let run = env.run(
        &["--base-url", &url],
        "/fix-issue 123 high\n/optimize src/lib.rs\n/help\n",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(users(&server, 0), ["Fix issue #123 (high). All: 123 high"]);
    assert_eq!(
        users(&server, 1)[1],
        "Analyze this code for performance issues.\n\nsrc/lib.rs"
    );
    assert!(
        run.stderr
            .contains("/fix-issue [number] [priority]  Fix an issue"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("(not a command: /status is builtin"),
        "{}",
        run.stderr
    );

    let mut term = env.terminal(&["--base-url", &url], 120, &[]);
    term.wait_for("› ", WITHIN);
    term.type_keys("/status\r");
    term.wait_for_next("› ", WITHIN);
    term.type_keys("/fix-issue 9\r");
    after(&mut term, "Again.");
    let (ok, screen) = term.finish(WITHIN);
    assert!(ok, "{screen}");
    assert_eq!(
        screen.matches("/status of ").count(),
        1,
        "said once: {screen}"
    );
    assert!(
        screen.contains("is not offered: /status is a builtin command"),
        "{screen}"
    );
}

/// `!COMMAND` runs the user's own shell command (sandboxed as the shell
/// tool runs one) and shows its output; the command and its output join
/// the conversation, and `replay --requests` rebuilds the next request
/// byte for byte. One typed while a turn ran is not run.
#[test]
fn bang_runs_a_command_whose_output_joins_the_conversation() {
    let server = FakeServer::start(vec![
        FakeReply::text("It printed 3."),
        FakeReply::Stall {
            chunks: vec!["Slow".to_owned()],
        },
    ])
    .unwrap();
    let env = TestEnv::new("cmd-bang");
    let url = server.url();
    let mut term = env.terminal(&["--base-url", &url], 120, &[]);
    term.wait_for("› ", WITHIN);
    term.type_keys("!echo hi-$((1+2))\r");
    after(&mut term, "hi-3");
    term.type_keys("what did it print?\r");
    after(&mut term, "It printed 3.");
    // Typed while the next turn runs: not run.
    term.type_keys("slow one\r");
    // The turn is in flight once the server has its request.
    assert!(crate::common::wait_until(WITHIN, || server
        .requests()
        .len()
        == 2));
    std::thread::sleep(Duration::from_millis(300));
    term.type_keys("!touch typed-ahead\r");
    std::thread::sleep(Duration::from_millis(300));
    // Esc ends the stalled turn; the line typed meanwhile comes next.
    term.type_keys("\x1b");
    after(&mut term, "not run: it was typed while a turn ran");
    let (ok, screen) = term.finish(WITHIN);
    assert!(ok, "{screen}");
    assert!(!env.cwd.join("typed-ahead").exists(), "{screen}");
    let said = users(&server, 0);
    assert_eq!(said.len(), 2, "{said:?}");
    assert!(
        said[0].starts_with("I ran this shell command myself:\n$ echo hi-$((1+2))\n")
            && said[0].contains("hi-3"),
        "{said:?}"
    );
    assert_eq!(said[1], "what did it print?");
    let sent: String = server
        .requests()
        .iter()
        .map(|r| format!("{}\n", r.body))
        .collect();
    let rebuilt = env.run(&["replay", "--requests"], "");
    assert!(
        rebuilt.stdout == sent,
        "replay --requests differs from what was sent"
    );
}

/// Item 14, for a refinement: on a server that reports no usage, its
/// request counts in the estimated totals too.
#[test]
fn a_refinement_on_a_server_without_usage_counts_in_the_estimated_totals() {
    let env = TestEnv::new("cmd-no-usage-refine");
    let answer = json!({"files": [{"file": "project/db.md", "content": "port 5432\n", "change": "the port"}]});
    let server = FakeServer::start(vec![
        uncounted("The port is 5432."),
        uncounted(&answer.to_string()),
    ])
    .unwrap();
    let url = server.url();
    let run = env.run(
        &["--base-url", &url, "-n", "refined"],
        "which port?\n/refine\n",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(
        server.requests().len(),
        2,
        "a turn and a refinement: {run:?}"
    );
    let log = records(&env.only_session());
    let all = totals(&log);
    let refining = log
        .iter()
        .position(|r| r["type"] == "refining")
        .expect("a refining record");
    let before = log[..refining]
        .iter()
        .rev()
        .find(|r| r["type"] == "totals")
        .cloned()
        .unwrap();
    let after = all.last().unwrap();
    let refinement = &server.requests()[1].body;
    let tokens_in = |t: &Value| t["tokens_in"].as_u64().unwrap();
    assert!(
        tokens_in(after) >= tokens_in(&before) + refinement.len() as u64 / 8,
        "the refinement request ({} bytes) is not in the totals: {before} then {after}",
        refinement.len()
    );
    assert!(
        after["tokens_out"].as_u64() > before["tokens_out"].as_u64(),
        "{after}"
    );
    assert_eq!(after["in_out_estimated"], true, "{after}");
}
