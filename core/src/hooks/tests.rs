use serde_json::json;

use super::*;

fn config() -> Hooks {
    let value = json!({
        "PreToolUse": [
            {"matcher": "shell|edit_file", "hooks": [
                {"type": "command", "command": "./check.sh", "timeout": 5},
                {"type": "command", "command": "./log.sh"}
            ]},
            {"matcher": "mcp__.*", "hooks": [{"type": "command", "command": "./mcp.sh"}]},
            {"hooks": [{"type": "command", "command": "./log.sh"}]}
        ],
        "SessionStart": [{"matcher": "startup", "hooks": [{"command": "cat ctx.md"}]}],
        "Stop": [{"matcher": "*", "hooks": [{"type": "command", "command": "./more.sh", "timeout": 99999}]}]
    });
    let (hooks, notes) = Hooks::parse(&value, &Origin::Config).unwrap();
    assert!(notes.is_empty(), "{notes:?}");
    hooks
}

fn commands(hooks: &[Hook]) -> Vec<&str> {
    hooks.iter().map(|h| h.command.as_str()).collect()
}

#[test]
fn matchers_are_whole_name_regexes_and_a_command_runs_once() {
    let hooks = config();
    assert_eq!(
        commands(&hooks.matching(Event::PreToolUse, Some("shell"))),
        ["./check.sh", "./log.sh"]
    );
    // `shell` does not match `shell_output`: the match is anchored.
    assert_eq!(
        commands(&hooks.matching(Event::PreToolUse, Some("shell_output"))),
        ["./log.sh"]
    );
    assert_eq!(
        commands(&hooks.matching(Event::PreToolUse, Some("mcp__git__log"))),
        ["./mcp.sh", "./log.sh"]
    );
    assert!(hooks.matching(Event::PostToolUse, Some("shell")).is_empty());
    assert_eq!(
        commands(&hooks.matching(Event::SessionStart, Some("startup"))),
        ["cat ctx.md"]
    );
    assert!(hooks
        .matching(Event::SessionStart, Some("resume"))
        .is_empty());
    let stop = hooks.matching(Event::Stop, None);
    assert_eq!(stop[0].timeout_s, HOOK_MAX_TIMEOUT_S);
    assert_eq!(
        hooks.matching(Event::PreToolUse, Some("shell"))[1].timeout_s,
        HOOK_TIMEOUT_S
    );
    assert!(hooks.any(Event::Stop) && !hooks.any(Event::PreCompact));
    assert!(!hooks.is_empty() && Hooks::default().is_empty());
}

#[test]
fn the_listing_names_event_matcher_command_timeout_and_origin() {
    let project = Origin::Project("/r/.revolve/hooks.json".into());
    let (more, _) = Hooks::parse(
        &json!({"PostToolUse": [{"matcher": "edit_file", "hooks": [{"command": "cargo fmt"}]}]}),
        &project,
    )
    .unwrap();
    let all = config().merge(more);
    let listing = all.listing();
    assert!(listing.contains(&"PreToolUse shell|edit_file: ./check.sh (5 s, config.json)".into()));
    assert!(
        listing.contains(&"PostToolUse edit_file: cargo fmt (60 s, /r/.revolve/hooks.json)".into())
    );
    assert_eq!(
        all.matching(Event::PostToolUse, Some("edit_file"))[0].origin,
        project
    );
}

#[test]
fn a_wrong_shape_says_where_and_unknown_events_or_types_are_noted() {
    for (value, says) in [
        (json!([]), "must be an object"),
        (json!({"PreToolUse": {}}), "hooks.PreToolUse must be a list"),
        (
            json!({"PreToolUse": [{"matcher": "(", "hooks": []}]}),
            "not a regular expression",
        ),
        (
            json!({"PreToolUse": [{"matcher": 3, "hooks": []}]}),
            "matcher must be a string",
        ),
        (
            json!({"Stop": [{"hooks": [{"command": ""}]}]}),
            "hooks.Stop[0].hooks[0].command",
        ),
        (
            json!({"Stop": [{"hooks": [{"command": "x", "timeout": 0}]}]}),
            "timeout must be",
        ),
        (json!({"Stop": [{}]}), "hooks.Stop[0].hooks must be a list"),
    ] {
        let e = Hooks::parse(&value, &Origin::Config).unwrap_err();
        assert!(
            e.starts_with("config.json: ") && e.contains(says),
            "{value}: {e}"
        );
    }
    let (hooks, notes) = Hooks::parse(
        &json!({"SubagentStop": [], "Stop": [{"hooks": [{"type": "prompt", "prompt": "x"}]}]}),
        &Origin::Config,
    )
    .unwrap();
    assert!(hooks.is_empty());
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert!(notes[0].contains("\"Stop\"") || notes[1].contains("\"SubagentStop\""));
}

#[test]
fn a_hooks_stdin_is_one_line_in_claude_codes_field_names() {
    let place = Place {
        session_id: "s1",
        transcript_path: "/st/s1.jsonl",
        cwd: "/w",
    };
    let pre = About::PreToolUse {
        tool: "shell".into(),
        input: tool_input(r#"{"command":"rm -rf x"}"#),
    };
    let text = stdin(&place, &pre);
    assert!(!text.contains('\n'));
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        v,
        json!({"session_id": "s1", "transcript_path": "/st/s1.jsonl", "cwd": "/w",
               "hook_event_name": "PreToolUse", "tool_name": "shell",
               "tool_input": {"command": "rm -rf x"}})
    );
    let post = About::PostToolUse {
        tool: "edit_file".into(),
        input: tool_input("not json"),
        output: "ok".into(),
    };
    let v: Value = serde_json::from_str(&stdin(&place, &post)).unwrap();
    assert_eq!(v["tool_input"], "not json");
    assert_eq!(v["tool_response"], "ok");
    let v: Value = serde_json::from_str(&stdin(&place, &About::Stop { active: true })).unwrap();
    assert_eq!(v["stop_hook_active"], true);
    assert_eq!(About::Stop { active: false }.subject(), None);
    assert_eq!(post.subject(), Some("edit_file"));
    assert_eq!(tool_input(" "), json!({}));
}

fn hook(event: Event) -> Hook {
    Hook {
        event,
        command: "./h.sh".into(),
        timeout_s: 60,
        origin: Origin::Config,
    }
}

fn ran(ended: Ended, stdout: &str, stderr: &str) -> Ran {
    Ran {
        ended,
        stdout: stdout.into(),
        stderr: stderr.into(),
    }
}

#[test]
fn exit_two_blocks_with_stderr_where_the_event_can_block() {
    let v = decide(
        &hook(Event::PreToolUse),
        &ran(Ended::Exited(2), "", "no rm here\n"),
    );
    assert_eq!(v.decision, Decision::Block);
    assert_eq!(v.reason.as_deref(), Some("no rm here"));
    let v = decide(&hook(Event::Stop), &ran(Ended::Exited(2), "", ""));
    assert_eq!(v.decision, Decision::Block);
    assert_eq!(v.reason.as_deref(), Some("blocked by the hook `./h.sh`"));
    // A session's start cannot be blocked: the user is told.
    let v = decide(
        &hook(Event::SessionStart),
        &ran(Ended::Exited(2), "", "nope"),
    );
    assert_eq!(v.decision, Decision::Go);
    assert_eq!(v.note.as_deref(), Some("SessionStart hook `./h.sh`: nope"));
}

#[test]
fn json_on_stdout_decides_adds_context_and_rewrites_input() {
    let out = r#"{"decision":"block","reason":"use trash","hookSpecificOutput":{"additionalContext":"ctx","updatedInput":{"command":"ls"}},"systemMessage":"checked"}"#;
    let v = decide(&hook(Event::PreToolUse), &ran(Ended::Exited(0), out, ""));
    assert_eq!(v.decision, Decision::Block);
    assert_eq!(v.reason.as_deref(), Some("use trash"));
    assert_eq!(v.added.as_deref(), Some("ctx"));
    assert_eq!(v.input, Some(json!({"command": "ls"})));
    assert_eq!(v.note.as_deref(), Some("checked"));
    let deny =
        r#"{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"no"}}"#;
    let v = decide(&hook(Event::PreToolUse), &ran(Ended::Exited(0), deny, ""));
    assert_eq!(
        (v.decision, v.reason.as_deref()),
        (Decision::Block, Some("no"))
    );
    // Only PreToolUse rewrites input; only blocking events block.
    let v = decide(
        &hook(Event::PostToolUse),
        &ran(
            Ended::Exited(0),
            r#"{"updatedInput":{"a":1},"additionalContext":"formatted"}"#,
            "",
        ),
    );
    assert_eq!((v.input, v.added.as_deref()), (None, Some("formatted")));
    let v = decide(
        &hook(Event::PreCompact),
        &ran(Ended::Exited(0), r#"{"decision":"block"}"#, ""),
    );
    assert_eq!(v.decision, Decision::Go);
    let v = decide(
        &hook(Event::PreToolUse),
        &ran(Ended::Exited(0), r#"{"decision":"approve"}"#, ""),
    );
    assert_eq!(v, Verdict::go());
}

#[test]
fn plain_stdout_is_context_only_at_start_and_prompt() {
    let v = decide(
        &hook(Event::SessionStart),
        &ran(Ended::Exited(0), "branch: main\n", ""),
    );
    assert_eq!(v.added.as_deref(), Some("branch: main"));
    let v = decide(
        &hook(Event::UserPromptSubmit),
        &ran(Ended::Exited(0), "[1, 2]", ""),
    );
    assert_eq!(
        v.added.as_deref(),
        Some("[1, 2]"),
        "JSON but not an object is text"
    );
    let v = decide(
        &hook(Event::PostToolUse),
        &ran(Ended::Exited(0), "formatted 1 file", ""),
    );
    assert_eq!(v, Verdict::go());
    let long = "x".repeat(HOOK_CONTEXT_CHARS + 5);
    let v = decide(
        &hook(Event::SessionStart),
        &ran(Ended::Exited(0), &long, ""),
    );
    let added = v.added.unwrap();
    assert!(added.starts_with(&"x".repeat(HOOK_CONTEXT_CHARS)));
    assert!(added.ends_with("characters]") && added.contains("x\n[… cut"));
}

#[test]
fn a_bad_hook_is_one_line_and_the_session_goes_on() {
    for (ended, stderr, says) in [
        (
            Ended::Exited(127),
            "sh: 1: ./gone.sh: not found\n",
            "command not found",
        ),
        (Ended::Exited(1), "oops\nmore", "failed (exit 1): oops more"),
        (Ended::Exited(3), "", "failed (exit 3); going on"),
        (Ended::TimedOut(2), "", "timed out after 2 s and was killed"),
        (Ended::Cut(65536), "", "wrote more than 65536 bytes"),
        (Ended::Killed(9), "", "killed by signal 9"),
        (Ended::Failed("no sh".into()), "", "could not start: no sh"),
    ] {
        let v = decide(
            &hook(Event::PreToolUse),
            &ran(ended, "{\"decision\":\"block\"}", stderr),
        );
        assert_eq!(v.decision, Decision::Go, "{says}");
        let note = v.note.unwrap();
        assert!(note.contains(says) && !note.contains('\n'), "{note}");
        assert!(note.starts_with("PreToolUse hook `./h.sh`"), "{note}");
    }
}

#[test]
fn what_hooks_add_reads_after_what_it_belongs_to() {
    assert_eq!(
        after_result("done", &["formatted".into()]),
        "done\n\n[PostToolUse hook]\nformatted"
    );
    assert_eq!(after_result("done", &[]), "done");
    assert_eq!(
        with_context("fix it", &["on branch main".into()]),
        "fix it\n\n[UserPromptSubmit hook]\non branch main"
    );
    assert!(blocked_result("no rm").starts_with("error: not run:"));
    assert!(start_block(&[]).is_none());
    assert!(start_block(&["a".into(), "b".into()])
        .unwrap()
        .ends_with("a\n\nb"));
    assert!(stop_may_go_on(0) && !stop_may_go_on(STOP_HOOK_ROUNDS));
    assert!(stop_message("tests fail").contains("tests fail"));
}
