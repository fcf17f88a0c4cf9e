//! Hooks end to end (issue 43), the real binary against the fake model
//! server: a `PreToolUse` hook that blocks `rm` and one that rewrites a
//! command, a `PostToolUse` formatter after `edit_file`, a
//! `SessionStart` hook's context in the first request, a `UserPromptSubmit`
//! hook's context, a `Stop` hook that sends the turn on until the bound, a
//! project hook file that runs nothing until approved and asks again
//! after a change, a hanging hook killed at its timeout, a missing
//! command, and replay: the same requests with the hooks' scripts gone.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use revolve_testkit::{FakeReply, FakeServer};
use serde_json::{json, Value};

use crate::common::fake::{revolve, serve, system};
use crate::common::{kinds, records, request_messages, tool_results, TestEnv};

/// Writes `hooks` as the `hooks` of the user's config.json.
fn configure(env: &TestEnv, hooks: Value) {
    let dir = env.home.join(".config/task-agent");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.json"),
        json!({ "hooks": hooks }).to_string(),
    )
    .unwrap();
}

/// An executable script `name` in the working directory.
fn script(env: &TestEnv, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = env.cwd.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn hook_records(env: &TestEnv) -> Vec<Value> {
    records(&env.only_session())
        .into_iter()
        .filter(|r| r["type"] == "hook")
        .collect()
}

/// The log replays request for request as the server received them.
fn assert_replays(env: &TestEnv, server: &FakeServer) {
    let sent: String = server
        .requests()
        .iter()
        .map(|r| format!("{}\n", r.body))
        .collect();
    assert_eq!(env.ok(&["replay", "--requests"]).stdout, sent);
}

const BLOCK_RM: &str = r#"input=$(cat)
case "$input" in
  *'"command":"rm '*) echo "rm is not allowed here: move it to .trash" >&2; exit 2;;
esac
exit 0"#;

#[test]
fn a_pre_tool_use_hook_blocks_rm_and_the_model_reads_why() {
    let env = TestEnv::new("hook-block");
    script(&env, "block-rm.sh", BLOCK_RM);
    std::fs::write(env.cwd.join("keep.txt"), "precious").unwrap();
    configure(
        &env,
        json!({"PreToolUse": [{"matcher": "shell", "hooks": [{"type": "command", "command": "./block-rm.sh"}]}]}),
    );
    let server = serve(vec![
        FakeReply::tool_calls("", &[("c1", "shell", r#"{"command":"rm -f keep.txt"}"#)]),
        FakeReply::tool_calls("", &[("c2", "shell", r#"{"command":"ls"}"#)]),
        FakeReply::text("Kept."),
    ]);
    let run = revolve(&env, &server, &["--allow-shell"], "clean up\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(env.cwd.join("keep.txt").exists(), "the blocked rm ran");
    let results = tool_results(&records(&env.only_session()));
    assert_eq!(
        results[0].1,
        "error: not run: a PreToolUse hook blocked this call: rm is not allowed here: move it to .trash"
    );
    assert!(results[1].1.contains("keep.txt"), "{results:?}");
    let hooks = hook_records(&env);
    assert_eq!(hooks.len(), 2, "{hooks:?}");
    assert_eq!(
        (
            &hooks[0]["event"],
            &hooks[0]["tool"],
            &hooks[0]["exit"],
            &hooks[0]["decision"]
        ),
        (
            &json!("PreToolUse"),
            &json!("shell"),
            &json!(2),
            &json!("block")
        )
    );
    assert_eq!(hooks[1]["decision"], "go");
    assert_replays(&env, &server);
}

#[test]
fn a_pre_tool_use_hook_rewrites_a_command() {
    let env = TestEnv::new("hook-rewrite");
    script(
        &env,
        "rewrite.sh",
        r#"cat >/dev/null; echo '{"hookSpecificOutput":{"updatedInput":{"command":"echo rewritten by the hook"}}}'"#,
    );
    configure(
        &env,
        json!({"PreToolUse": [{"matcher": "shell", "hooks": [{"command": "./rewrite.sh"}]}]}),
    );
    let server = serve(vec![
        FakeReply::tool_calls("", &[("c1", "shell", r#"{"command":"echo original"}"#)]),
        FakeReply::text("Done."),
    ]);
    let run = revolve(&env, &server, &["--allow-shell"], "say something\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    let results = tool_results(&records(&env.only_session()));
    assert!(
        results[0].1.contains("rewritten by the hook"),
        "{results:?}"
    );
    assert!(!results[0].1.contains("original"), "{results:?}");
    // The model's call stays as it made it; the hook's record holds the
    // input it ran with.
    let hooks = hook_records(&env);
    assert_eq!(
        hooks[0]["input"],
        json!({"command": "echo rewritten by the hook"})
    );
    assert_replays(&env, &server);
}

#[test]
fn a_post_tool_use_hook_formats_after_edit_file() {
    let env = TestEnv::new("hook-format");
    std::fs::write(env.cwd.join("a.txt"), "hello   \nworld\n").unwrap();
    script(
        &env,
        "fmt.sh",
        r#"cat >/dev/null; sed -i 's/[[:space:]]*$//' "$CLAUDE_PROJECT_DIR/a.txt" && echo '{"additionalContext":"fmt.sh formatted a.txt"}'"#,
    );
    configure(
        &env,
        json!({"PostToolUse": [{"matcher": "edit_file|write_file", "hooks": [{"command": "./fmt.sh"}]}]}),
    );
    let server = serve(vec![
        FakeReply::tool_calls("", &[("c1", "read_file", r#"{"path":"a.txt"}"#)]),
        FakeReply::tool_calls(
            "",
            &[(
                "c2",
                "edit_file",
                r#"{"path":"a.txt","old_string":"world","new_string":"there   "}"#,
            )],
        ),
        FakeReply::text("Edited."),
    ]);
    let run = revolve(&env, &server, &["--allow-edits"], "edit it\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(
        std::fs::read_to_string(env.cwd.join("a.txt")).unwrap(),
        "hello\nthere\n"
    );
    let results = tool_results(&records(&env.only_session()));
    assert!(
        results[1]
            .1
            .ends_with("[PostToolUse hook]\nfmt.sh formatted a.txt"),
        "{results:?}"
    );
    // The read is not an edit: only the edit ran the hook.
    let hooks = hook_records(&env);
    assert_eq!(hooks.len(), 1, "{hooks:?}");
    assert_eq!(hooks[0]["tool"], "edit_file");
    assert_replays(&env, &server);
}

#[test]
fn a_session_start_hooks_context_is_in_the_first_request_and_a_prompts_in_its_message() {
    let env = TestEnv::new("hook-start");
    configure(
        &env,
        json!({
            "SessionStart": [{"hooks": [{"command": "cat >/dev/null; echo 'branch: feature-x, 2 files changed'"}]}],
            "UserPromptSubmit": [{"hooks": [{"command": "cat >/dev/null; echo 'ticket: ABC-12'"}]}]
        }),
    );
    let server = serve(vec![FakeReply::text("Noted.")]);
    let run = revolve(&env, &server, &[], "what branch?\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    let requests = server.requests();
    assert!(
        system(&requests[0].body).ends_with(
            "## Session start context (from hooks)\n\nbranch: feature-x, 2 files changed"
        ),
        "{}",
        system(&requests[0].body)
    );
    assert_eq!(
        request_messages(&requests[0].body).last().unwrap().1,
        "what branch?\n\n[UserPromptSubmit hook]\nticket: ABC-12"
    );
    let hooks = hook_records(&env);
    assert_eq!(hooks[0]["event"], "SessionStart");
    assert_eq!(hooks[0]["added"], "branch: feature-x, 2 files changed");
    assert_replays(&env, &server);
}

#[test]
fn a_stop_hook_sends_the_turn_on_until_the_bound() {
    let env = TestEnv::new("hook-stop");
    configure(
        &env,
        json!({"Stop": [{"hooks": [{"command": "cat >/dev/null; echo '{\"decision\":\"block\",\"reason\":\"the tests still fail\"}'"}]}]}),
    );
    let rounds = revolve_core::policy::STOP_HOOK_ROUNDS as usize;
    let replies = (0..=rounds)
        .map(|n| FakeReply::text(&format!("Answer {n}.")))
        .collect();
    let server = serve(replies);
    let run = revolve(&env, &server, &[], "fix the tests\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    let requests = server.requests();
    assert_eq!(
        requests.len(),
        rounds + 1,
        "the turn went on {rounds} times, no more"
    );
    let last = request_messages(&requests[rounds].body);
    let sent_on: Vec<_> = last
        .iter()
        .filter(|(role, text)| role == "user" && text.starts_with("[Stop hook]"))
        .collect();
    assert_eq!(sent_on.len(), rounds, "{last:?}");
    assert!(sent_on[0].1.contains("the tests still fail"));
    assert_eq!(
        run.stderr.matches("Stop hooks sent this turn on").count(),
        1,
        "{run:?}"
    );
    // One run of the hook per time the turn would have ended, until the
    // bound; past it the hook is not asked again.
    assert_eq!(hook_records(&env).len(), rounds);
    assert_replays(&env, &server);
}

/// `.revolve/hooks.json` with a `SessionStart` hook that runs `ctx.sh`.
fn project_hooks(env: &TestEnv) {
    std::fs::create_dir_all(env.cwd.join(".revolve")).unwrap();
    std::fs::write(
        env.cwd.join(".revolve/hooks.json"),
        json!({"hooks": {"SessionStart": [{"hooks": [{"command": "./ctx.sh"}]}]}}).to_string(),
    )
    .unwrap();
    script(
        env,
        "ctx.sh",
        "cat >/dev/null; echo 'from the project hook'",
    );
}

#[test]
fn a_project_hook_file_runs_only_once_approved_and_asks_again_after_a_change() {
    let env = TestEnv::new("hook-project");
    project_hooks(&env);
    let ran = |env: &TestEnv| {
        let server = serve(vec![FakeReply::text("Hi.")]);
        let run = revolve(env, &server, &[], "hello\n");
        assert_eq!(run.code, Some(0), "{run:?}");
        let system = system(&server.requests()[0].body);
        (system.contains("from the project hook"), run.stderr)
    };
    let (context, stderr) = ran(&env);
    assert!(!context, "a hook ran before approval");
    assert!(
        stderr.contains("configures hooks that were not approved")
            && stderr.contains("revolve hooks approve"),
        "{stderr}"
    );
    let listed = env.ok(&["hooks", "list"]).stdout;
    assert!(
        listed.contains("SessionStart: ./ctx.sh") && listed.contains("not approved"),
        "{listed}"
    );
    let approved = env.ok(&["hooks", "approve"]);
    assert!(
        approved.stdout.contains("runs ctx.sh (sha256 "),
        "{approved:?}"
    );
    let (context, stderr) = ran(&env);
    assert!(context, "{stderr}");
    assert!(!stderr.contains("not approved"), "{stderr}");
    // The script it runs changes: asked again, and it does not run.
    script(&env, "ctx.sh", "cat >/dev/null; echo 'something else'");
    let (context, stderr) = ran(&env);
    assert!(!context);
    assert!(
        stderr.contains("changed since approved: SessionStart *: ./ctx.sh: the file ctx.sh"),
        "{stderr}"
    );
    assert!(!stderr.contains("something else"), "{stderr}");
}

#[test]
fn a_hanging_hook_is_killed_at_its_timeout_said_once_and_the_tool_runs() {
    let env = TestEnv::new("hook-hang");
    let marker = env.cwd.join("child-lived");
    configure(
        &env,
        json!({"PreToolUse": [{"matcher": "shell", "hooks": [{
            "command": format!("(sleep 2; touch {}) & sleep 60", marker.display()),
            "timeout": 1
        }]}]}),
    );
    let server = serve(vec![
        FakeReply::tool_calls("", &[("c1", "shell", r#"{"command":"echo ran anyway"}"#)]),
        FakeReply::text("Done."),
    ]);
    let started = Instant::now();
    let run = revolve(&env, &server, &["--allow-shell"], "go\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        run.stderr
            .matches("timed out after 1 s and was killed")
            .count(),
        1,
        "{run:?}"
    );
    let results = tool_results(&records(&env.only_session()));
    assert!(results[0].1.contains("ran anyway"), "{results:?}");
    assert_eq!(hook_records(&env)[0]["ended"], "timed_out");
    // Alive, the child would touch the marker 2 s after the hook began;
    // the run ended at least 1 s (the hook's timeout) after that, so 1.5 s
    // more is half a second past it, however slow the machine.
    std::thread::sleep(Duration::from_millis(1_500));
    assert!(!marker.exists(), "a child of the hook outlived its group");
}

#[test]
fn a_missing_hook_command_is_one_line_and_the_turn_goes_on() {
    let env = TestEnv::new("hook-missing");
    configure(
        &env,
        json!({"UserPromptSubmit": [{"hooks": [{"command": "./no-such-hook.sh"}]}]}),
    );
    let server = serve(vec![FakeReply::text("Hi.")]);
    let run = revolve(&env, &server, &[], "hello\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Hi.\n");
    let lines: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("no-such-hook"))
        .collect();
    assert_eq!(lines.len(), 1, "{run:?}");
    assert!(lines[0].contains("command not found"), "{lines:?}");
    assert_eq!(
        request_messages(&server.requests()[0].body)
            .last()
            .unwrap()
            .1,
        "hello"
    );
}

#[test]
fn replay_gives_the_same_requests_with_the_hook_scripts_gone() {
    let env = TestEnv::new("hook-replay");
    script(&env, "block-rm.sh", BLOCK_RM);
    script(&env, "ctx.sh", "cat >/dev/null; echo 'start context'");
    script(
        &env,
        "after.sh",
        r#"cat >/dev/null; echo '{"additionalContext":"checked"}'"#,
    );
    configure(
        &env,
        json!({
            "SessionStart": [{"hooks": [{"command": "./ctx.sh"}]}],
            "PreToolUse": [{"matcher": "shell", "hooks": [{"command": "./block-rm.sh"}]}],
            "PostToolUse": [{"hooks": [{"command": "./after.sh"}]}]
        }),
    );
    let server = serve(vec![
        FakeReply::tool_calls("", &[("c1", "shell", r#"{"command":"rm -rf /"}"#)]),
        FakeReply::tool_calls("", &[("c2", "shell", r#"{"command":"echo hi"}"#)]),
        FakeReply::text("Done."),
    ]);
    let run = revolve(&env, &server, &["--allow-shell"], "go\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    for name in ["block-rm.sh", "ctx.sh", "after.sh"] {
        std::fs::remove_file(env.cwd.join(name)).unwrap();
    }
    std::fs::remove_file(env.home.join(".config/task-agent/config.json")).unwrap();
    assert_replays(&env, &server);
    let check = env.ok(&["replay", "--check"]);
    assert!(
        check
            .stdout
            .contains(" 0 skipped line(s), 0 inconsistencies"),
        "{check:?}"
    );
    let kinds = kinds(&records(&env.only_session()));
    assert_eq!(
        kinds.iter().filter(|k| *k == "hook").count(),
        4,
        "{kinds:?}"
    );
    let transcript = env.ok(&["replay"]).stdout;
    assert!(
        transcript.contains("── hook PreToolUse shell: ./block-rm.sh (exit 2, block)"),
        "{transcript}"
    );
}

// ---------------------------------------------------------------------------
// Hooks around `task` calls, compactions and questions

/// A fake model server that answers connections side by side, as the
/// children of `task` calls ask at once.
fn serve_side_by_side(replies: Vec<FakeReply>) -> FakeServer {
    let options = revolve_testkit::FakeOptions {
        keep_alive: true,
        ..revolve_testkit::FakeOptions::default()
    };
    FakeServer::start_with_options(revolve_testkit::FakeProtocol::OpenAi, replies, options).unwrap()
}

#[test]
fn task_calls_run_pre_and_post_tool_use_hooks_a_block_and_a_rewrite() {
    let env = TestEnv::new("hook-task");
    script(
        &env,
        "pre.sh",
        r#"input=$(cat)
case "$input" in
  *secret*) echo "no secrets for a child" >&2; exit 2;;
esac
echo '{"hookSpecificOutput":{"updatedInput":{"description":"part 1","prompt":"do part 1 carefully"}}}'"#,
    );
    script(
        &env,
        "post.sh",
        r#"cat >/dev/null; echo '{"additionalContext":"reviewed by post.sh"}'"#,
    );
    configure(
        &env,
        json!({
            "PreToolUse": [{"matcher": "task", "hooks": [{"command": "./pre.sh"}]}],
            "PostToolUse": [{"matcher": "task", "hooks": [{"command": "./post.sh"}]}]
        }),
    );
    let part = |d: &str| json!({"description": d, "prompt": format!("do {d}")}).to_string();
    let (one, secret) = (part("part 1"), part("the secret"));
    let server = serve_side_by_side(vec![
        FakeReply::tool_calls("", &[("c1", "task", &one), ("c2", "task", &secret)]),
        FakeReply::text("child done"),
        FakeReply::text("All done."),
    ]);
    let url = server.url();
    let run = env.run(&["-p", "split it", "--base-url", &url], "");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "All done.\n");
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "one child ran: {requests:#?}");
    assert_eq!(
        request_messages(&requests[1].body).last().unwrap().1,
        "do part 1 carefully",
        "the child runs the prompt as the hook rewrote it"
    );
    let parent = env
        .session_files()
        .into_iter()
        .find(|f| records(f).iter().all(|r| r["type"] != "spawned"))
        .unwrap();
    let log = records(&parent);
    let results = tool_results(&log);
    assert_eq!(
        results,
        [
            (
                "c1".to_owned(),
                "child done\n\n[PostToolUse hook]\nreviewed by post.sh".to_owned()
            ),
            (
                "c2".to_owned(),
                "error: not run: a PreToolUse hook blocked this call: no secrets for a child"
                    .to_owned()
            ),
        ]
    );
    let hooks: Vec<(String, String, String)> = log
        .iter()
        .filter(|r| r["type"] == "hook")
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap_or_default().to_owned();
            (s("event"), s("call"), s("decision"))
        })
        .collect();
    let want = |e: &str, c: &str, d: &str| (e.to_owned(), c.to_owned(), d.to_owned());
    assert_eq!(
        hooks,
        [
            want("PreToolUse", "c1", "go"),
            want("PreToolUse", "c2", "block"),
            want("PostToolUse", "c1", "go"),
        ]
    );
    assert!(log
        .iter()
        .filter(|r| r["type"] == "hook")
        .all(|r| r["tool"] == "task"));
    // The parent's replay gives every request, its child's too.
    let sent: String = requests.iter().map(|r| format!("{}\n", r.body)).collect();
    let replayed = env.ok(&["replay", "--requests", parent.to_str().unwrap()]);
    assert_eq!(replayed.stdout, sent);
}

/// The automatic compaction of tests/e2e/compaction.rs: four turns whose
/// readings grow past the point of a 20,000-token window, the notes, turn
/// five.
fn usage(reply: FakeReply, prompt: u64) -> FakeReply {
    match reply {
        FakeReply::Stream { chunks, .. } => FakeReply::Stream {
            chunks,
            usage: Some((prompt, 10)),
        },
        other => other,
    }
}

#[test]
fn an_automatic_compaction_runs_pre_compact_and_session_start_compact_keeping_the_context() {
    let env = TestEnv::new("hook-auto-compact");
    script(
        &env,
        "precompact.sh",
        "cat > \"$REVOLVE_PROJECT_DIR/precompact.json\"",
    );
    script(
        &env,
        "again.sh",
        "cat > \"$REVOLVE_PROJECT_DIR/again.json\"",
    );
    configure(
        &env,
        json!({
            "SessionStart": [
                {"matcher": "startup", "hooks": [{"command": "cat >/dev/null; echo 'branch: feature-x'"}]},
                {"matcher": "compact", "hooks": [{"command": "./again.sh"}]}
            ],
            "PreCompact": [{"matcher": "auto", "hooks": [{"command": "./precompact.sh"}]}]
        }),
    );
    let server = serve(vec![
        usage(FakeReply::text("Answer one."), 5_000),
        usage(FakeReply::text("Answer two."), 9_000),
        usage(FakeReply::text("Answer three."), 13_000),
        usage(FakeReply::text("Answer four."), 17_950),
        usage(FakeReply::text("Facts: port 5432."), 6_000),
        usage(FakeReply::text("Answer five."), 7_000),
    ]);
    let run = revolve(
        &env,
        &server,
        &["--name", "db", "--window", "20000"],
        "one\ntwo\nthree\nfour\nfive\n",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let requests = server.requests();
    assert_eq!(requests.len(), 6, "{run:?}");
    let told: Value =
        serde_json::from_str(&std::fs::read_to_string(env.cwd.join("precompact.json")).unwrap())
            .unwrap();
    assert_eq!(told["hook_event_name"], "PreCompact");
    assert_eq!(told["trigger"], "auto");
    let again: Value =
        serde_json::from_str(&std::fs::read_to_string(env.cwd.join("again.json")).unwrap())
            .unwrap();
    assert_eq!(again["hook_event_name"], "SessionStart");
    assert_eq!(again["source"], "compact");
    // The start context outlives the compaction: turn five's request, the
    // first of the new file, still carries it.
    let block = "## Session start context (from hooks)\n\nbranch: feature-x";
    assert!(system(&requests[3].body).ends_with(block));
    assert!(
        system(&requests[5].body).ends_with(block),
        "{}",
        system(&requests[5].body)
    );
    let files = env.session_files();
    assert_eq!(files.len(), 2);
    let events: Vec<Vec<String>> = files
        .iter()
        .map(|f| {
            records(f)
                .into_iter()
                .filter(|r| r["type"] == "hook")
                .map(|r| r["event"].as_str().unwrap().to_owned())
                .collect()
        })
        .collect();
    assert!(
        events.contains(&vec!["SessionStart".to_owned(), "PreCompact".to_owned()])
            && events.contains(&vec!["SessionStart".to_owned()]),
        "the old file: start and PreCompact; the new one: SessionStart compact: {events:?}"
    );
    // Replay rebuilds every request, the hooks gone.
    std::fs::remove_file(env.home.join(".config/task-agent/config.json")).unwrap();
    let sent: String = requests.iter().map(|r| format!("{}\n", r.body)).collect();
    assert_eq!(env.ok(&["replay", "db", "--requests"]).stdout, sent);
}

#[test]
fn a_manual_compact_says_its_trigger_to_pre_compact() {
    let env = TestEnv::new("hook-manual-compact");
    script(
        &env,
        "precompact.sh",
        "cat > \"$REVOLVE_PROJECT_DIR/precompact.json\"",
    );
    configure(
        &env,
        json!({"PreCompact": [{"hooks": [{"command": "./precompact.sh"}]}]}),
    );
    let mut replies: Vec<FakeReply> = ["one", "two", "three", "four"]
        .iter()
        .map(|w| FakeReply::text(&format!("Answer {w}.")))
        .collect();
    replies.push(FakeReply::text("Facts: port 5432."));
    let server = serve(replies);
    let run = revolve(&env, &server, &[], "one\ntwo\nthree\nfour\n/compact\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    let told: Value =
        serde_json::from_str(&std::fs::read_to_string(env.cwd.join("precompact.json")).unwrap())
            .unwrap();
    assert_eq!(told["trigger"], "manual");
}

#[test]
fn a_notification_hook_runs_before_an_approval_question_on_a_terminal() {
    let env = TestEnv::new("hook-notify");
    script(
        &env,
        "notify.sh",
        "cat > \"$REVOLVE_PROJECT_DIR/notified.json\"",
    );
    configure(
        &env,
        json!({"Notification": [{"hooks": [{"command": "./notify.sh"}]}]}),
    );
    let path = env.root.join("replies.jsonl");
    let replies = [
        json!({"text": "", "tool_calls": [{"name": "shell", "arguments": {"command": "echo hi"}}]}),
        json!({"text": "Said hi."}),
    ];
    let lines: String = replies.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(&path, lines).unwrap();
    let script_path = path.to_string_lossy().into_owned();
    let mut term = env.terminal(
        &["--provider", "scripted", "--script", &script_path],
        100,
        &[],
    );
    term.wait_for_next("\u{203a} ", Duration::from_secs(20));
    term.type_keys("go\r");
    term.wait_for_next("[n]o: ", Duration::from_secs(20));
    // The hook ran before the question was shown.
    let notified = std::fs::read_to_string(env.cwd.join("notified.json")).unwrap();
    let notified: Value = serde_json::from_str(&notified).unwrap();
    assert_eq!(notified["hook_event_name"], "Notification");
    assert!(
        notified["message"].as_str().unwrap().contains("echo hi"),
        "{notified}"
    );
    term.type_keys("y");
    term.wait_for_next("\u{203a} ", Duration::from_secs(20));
    term.type_keys("\u{4}");
    let (ok, shown) = term.finish(Duration::from_secs(30));
    assert!(ok, "{shown:?}");
    assert!(shown.contains("Said hi."), "{shown:?}");
    let hooks = hook_records(&env);
    assert_eq!(hooks.len(), 1, "{hooks:?}");
    assert_eq!(hooks[0]["event"], "Notification");
    assert_eq!(hooks[0]["exit"], 0);
    let results = tool_results(&records(&env.only_session()));
    assert_eq!(
        results[0].1, "exit status: 0\nstdout:\nhi",
        "the command ran"
    );
}
