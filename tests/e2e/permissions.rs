//! Permission rules end to end (issue 28): `--allow RULE`, `--deny RULE`
//! and config `permissions` decide before anyone is asked; an allowed call
//! runs in pipe mode without `--allow-shell`, a command that carries
//! another past a separator is not allowed by a rule for the first, deny
//! wins over everything, and every decision is logged with its rule, so
//! `revolve replay` shows why a call ran.

use serde_json::{json, Value};

use crate::common::{records, tool_results, Run, TestEnv};

/// Runs revolve (scripted) making `calls` one a round, then "Done.", with
/// `extra` arguments; the run and the tool results in order.
fn run(env: &TestEnv, calls: &[(&str, Value)], extra: &[&str]) -> (Run, Vec<String>) {
    let mut replies: Vec<Value> = calls
        .iter()
        .map(|(name, args)| json!({"text": "", "tool_calls": [{"name": name, "arguments": args}]}))
        .collect();
    replies.push(json!({"text": "Done."}));
    let script = env.root.join("script.jsonl");
    let text: String = replies.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(&script, text).unwrap();
    let mut args = vec![
        "--provider",
        "scripted",
        "--script",
        script.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["-p", "go"]);
    let run = env.run(&args, "");
    let results = tool_results(&records(&env.only_session()))
        .into_iter()
        .map(|(_, content)| content)
        .collect();
    (run, results)
}

fn approved(env: &TestEnv) -> Vec<Value> {
    records(&env.only_session())
        .into_iter()
        .filter(|r| r["type"] == "approved")
        .collect()
}

/// The issue's own case: `shell(git status)` lets `git status` run in pipe
/// mode without `--allow-shell`; `git status; touch x` and the like are not
/// allowed by it. Needs git (said and skipped without).
#[test]
fn an_allow_rule_runs_one_simple_command_in_pipe_mode_and_no_more() {
    let env = TestEnv::new("rules-allow");
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&env.cwd)
        .env("HOME", &env.home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .status();
    assert!(
        git.is_ok_and(|s| s.success()),
        "this test needs `git` on PATH: install it (Debian: apt-get install git)"
    );
    let (run, results) = run(
        &env,
        &[
            ("shell", json!({"command": "git status"})),
            ("shell", json!({"command": "git status; touch x"})),
            ("shell", json!({"command": "git status && touch x"})),
            ("shell", json!({"command": "git status | sh"})),
            ("shell", json!({"command": "touch y"})),
        ],
        &["--allow", "shell(git status)"],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(results[0].starts_with("exit status: 0"), "{results:?}");
    for refused in &results[1..] {
        assert_eq!(
            refused, "error: the user did not allow this command",
            "{results:?}"
        );
    }
    assert!(!env.cwd.join("x").exists() && !env.cwd.join("y").exists());
    let approved = approved(&env);
    assert_eq!(approved.len(), 1, "{approved:?}");
    assert_eq!(approved[0]["rule"], "shell(git status)");
    assert_eq!(approved[0]["answer"], "yes");
    let replay = env.ok(&["replay"]);
    assert!(
        replay
            .stdout
            .contains("── the rule shell(git status) allowed the command `git status`"),
        "{}",
        replay.stdout
    );
    assert_eq!(env.ok(&["replay", "--check"]).code, Some(0));
}

#[test]
fn deny_wins_over_allow_shell_and_over_allow_rules() {
    let env = TestEnv::new("rules-deny");
    std::fs::write(env.cwd.join("a.txt"), "keep\n").unwrap();
    let (run, results) = run(
        &env,
        &[
            ("shell", json!({"command": "echo hi; rm -f a.txt"})),
            ("shell", json!({"command": "echo $(rm -f a.txt)"})),
            ("shell", json!({"command": "echo fine"})),
        ],
        &[
            "--allow-shell",
            "--allow",
            "shell(*)",
            "--deny",
            "shell(rm *)",
        ],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(env.cwd.join("a.txt").exists(), "{results:?}");
    for denied in &results[..2] {
        assert_eq!(
            denied, "error: not run: the user's permission rule shell(rm *) denies this call",
            "{results:?}"
        );
    }
    assert!(results[2].contains("fine"), "{results:?}");
    let approved = approved(&env);
    let rules: Vec<(&str, &str)> = approved
        .iter()
        .map(|a| (a["rule"].as_str().unwrap(), a["answer"].as_str().unwrap()))
        .collect();
    assert_eq!(
        rules,
        [
            ("shell(rm *)", "no"),
            ("shell(rm *)", "no"),
            ("shell(*)", "yes")
        ]
    );
}

#[test]
fn rules_come_from_the_config_file_and_a_bad_one_names_it() {
    let env = TestEnv::new("rules-config");
    let config = env.home.join(".config/task-agent");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.json"),
        r#"{"permissions": {"allow": ["shell(echo from-config)"]}}"#,
    )
    .unwrap();
    let (run, results) = run(
        &env,
        &[("shell", json!({"command": "echo from-config"}))],
        &[],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(results[0].contains("from-config"), "{results:?}");
    let shown = env.ok(&["config", "show", "--json"]);
    let doc: Value = serde_json::from_str(&shown.stdout).unwrap();
    assert_eq!(
        doc["settings"]["permissions"],
        json!({"value": {"allow": ["shell(echo from-config)"], "deny": []}, "source": "config"})
    );

    std::fs::write(
        config.join("config.json"),
        r#"{"permissions": {"deny": ["bash(rm)"]}}"#,
    )
    .unwrap();
    let bad = env.run(&["config", "show"], "");
    assert_eq!(bad.code, Some(2), "{bad:?}");
    assert!(
        bad.stderr.contains("config.json")
            && bad.stderr.contains("bad permission rule \"bash(rm)\""),
        "{bad:?}"
    );
    let flag = env.run(&["--deny", "shell", "-p", "hi"], "");
    assert_eq!(flag.code, Some(2), "{flag:?}");
}

#[test]
fn a_grant_rule_grants_in_pipe_mode() {
    let env = TestEnv::new("rules-grant");
    let outside = env.root.join("docs");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("a.md"), "outside text\n").unwrap();
    let path = outside.canonicalize().unwrap();
    let path = path.to_str().unwrap();
    let rule = format!("grant({path}/**)");
    let (run, results) = run(
        &env,
        &[
            (
                "request_file_grant",
                json!({"path": format!("{path}/a.md")}),
            ),
            ("read_file", json!({"path": format!("{path}/a.md")})),
        ],
        &["--allow", &rule],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(results[0].starts_with("granted: "), "{results:?}");
    assert_eq!(results[1], "outside text\n", "{results:?}");
    assert_eq!(approved(&env)[0]["rule"], rule.as_str());
}

/// `--plan` (and `/plan`, `/plan off`): edits and writes are refused with
/// a result saying the session is planning, commands run read-only (where
/// the sandbox is enforced), the status row and the prompt say so, and the
/// log holds when planning began and ended.
#[test]
fn planning_refuses_edits_and_runs_commands_read_only() {
    let env = TestEnv::new("plan");
    std::fs::write(env.cwd.join("a.txt"), "one\n").unwrap();
    let (run, results) = run(
        &env,
        &[
            ("read_file", json!({"path": "a.txt"})),
            (
                "edit_file",
                json!({"path": "a.txt", "old_string": "one", "new_string": "two"}),
            ),
            ("write_file", json!({"path": "b.txt", "content": "new\n"})),
            ("shell", json!({"command": "cat a.txt; touch c.txt"})),
        ],
        &["--plan", "--allow-edits", "--allow-shell"],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        run.stderr.contains("planning: the model may read"),
        "{run:?}"
    );
    assert_eq!(results[0], "one\n");
    for refused in &results[1..3] {
        assert!(
            refused.starts_with("error: not run: this session is planning"),
            "{results:?}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(env.cwd.join("a.txt")).unwrap(),
        "one\n"
    );
    assert!(!env.cwd.join("b.txt").exists());
    assert!(results[3].contains("one"), "{results:?}");
    if TestEnv::landlock() {
        assert!(!env.cwd.join("c.txt").exists(), "{results:?}");
        assert!(results[3].contains("sandbox (read-only)"), "{results:?}");
    } else {
        assert!(
            results[3].starts_with("error: not run: this session is planning"),
            "{results:?}"
        );
    }
    let planning: Vec<Value> = records(&env.only_session())
        .into_iter()
        .filter(|r| r["type"] == "planning")
        .collect();
    assert_eq!(planning.len(), 1);
    assert_eq!(planning[0]["on"], true);
    let replay = env.ok(&["replay"]);
    assert!(
        replay
            .stdout
            .contains("── planning: edits and writes refused"),
        "{}",
        replay.stdout
    );
    assert_eq!(env.ok(&["replay", "--check"]).code, Some(0));

    // In the REPL's input: /plan off ends it, and the next edit runs.
    let env = TestEnv::new("plan-off");
    std::fs::write(env.cwd.join("a.txt"), "one\n").unwrap();
    let script = env.root.join("script.jsonl");
    let replies = [
        json!({"text": "", "tool_calls": [{"name": "read_file", "arguments": {"path": "a.txt"}}]}),
        json!({"text": "", "tool_calls": [{"name": "edit_file", "arguments": {"path": "a.txt", "old_string": "one", "new_string": "two"}}]}),
        json!({"text": "Planned."}),
        json!({"text": "", "tool_calls": [{"name": "edit_file", "arguments": {"path": "a.txt", "old_string": "one", "new_string": "two"}}]}),
        json!({"text": "Done."}),
    ];
    let text: String = replies.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(&script, text).unwrap();
    let run = env.run(
        &[
            "--provider",
            "scripted",
            "--script",
            script.to_str().unwrap(),
            "--allow-edits",
        ],
        "/plan\nplan it\n/status\n/plan off\ndo it\n",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        run.stderr.contains("· planning (/plan off ends it)"),
        "{run:?}"
    );
    assert!(run.stderr.contains("planning ended"), "{run:?}");
    assert_eq!(
        std::fs::read_to_string(env.cwd.join("a.txt")).unwrap(),
        "two\n"
    );
}

/// `edit(…)` and `write(…)` rules: an allowed edit runs in pipe mode
/// without `--allow-edits`, the path taken relative to the tree (`*` within
/// a folder); a deny rule refuses even with `--allow-edits`; each logged.
#[test]
fn edit_and_write_rules_decide_file_changes() {
    let env = TestEnv::new("rules-edit");
    std::fs::create_dir_all(env.cwd.join("src/deep")).unwrap();
    std::fs::create_dir_all(env.cwd.join("secret")).unwrap();
    std::fs::write(env.cwd.join("src/deep/a.rs"), "one\n").unwrap();
    std::fs::write(env.cwd.join("b.txt"), "one\n").unwrap();
    let edit = |path: &str| {
        (
            "edit_file",
            json!({"path": path, "old_string": "one", "new_string": "two"}),
        )
    };
    let (ran, results) = run(
        &env,
        &[
            ("read_file", json!({"path": "src/deep/a.rs"})),
            ("read_file", json!({"path": "b.txt"})),
            edit("src/deep/a.rs"),
            edit("b.txt"),
            ("write_file", json!({"path": "docs.md", "content": "new\n"})),
        ],
        &["--allow", "edit(src/**)", "--allow", "write(*.md)"],
    );
    assert_eq!(ran.code, Some(0), "{ran:?}");
    assert!(
        results[2].starts_with("changed src/deep/a.rs"),
        "{results:?}"
    );
    assert!(
        results[3].contains("there is no terminal to ask"),
        "{results:?}"
    );
    assert!(results[4].starts_with("created docs.md"), "{results:?}");
    assert_eq!(
        std::fs::read_to_string(env.cwd.join("src/deep/a.rs")).unwrap(),
        "two\n"
    );
    assert_eq!(
        std::fs::read_to_string(env.cwd.join("b.txt")).unwrap(),
        "one\n"
    );
    let rules: Vec<String> = approved(&env)
        .iter()
        .map(|a| format!("{} {}", a["rule"].as_str().unwrap_or("-"), a["answer"]))
        .collect();
    assert_eq!(rules, ["edit(src/**) \"yes\"", "write(*.md) \"yes\""]);

    let env = TestEnv::new("rules-edit-deny");
    std::fs::create_dir_all(env.cwd.join("secret")).unwrap();
    let (ran, results) = run(
        &env,
        &[(
            "write_file",
            json!({"path": "secret/k.txt", "content": "x\n"}),
        )],
        &["--allow-edits", "--deny", "write(secret/*)"],
    );
    assert_eq!(ran.code, Some(0), "{ran:?}");
    assert_eq!(
        results[0],
        "error: not run: the user's permission rule write(secret/*) denies this call"
    );
    assert!(!env.cwd.join("secret/k.txt").exists());
    assert_eq!(approved(&env)[0]["rule"], "write(secret/*)");
    assert_eq!(env.ok(&["replay", "--check"]).code, Some(0));
}

/// Issue 42, item 5: the forty spellings of `rm` in
/// fixtures/rules/rm-spellings.json (quotes, escapes, paths, `env`,
/// `sh -c`, assignments, groups, substitutions, wrappers…) are all denied
/// by `shell(rm *)` under `--allow-shell` and `shell(*)`, and the file
/// stays; a command whose word is built by an expansion is refused in
/// pipe mode, `--allow-shell` or not, while a deny rule stands.
#[test]
fn every_spelling_of_a_denied_command_is_denied() {
    let env = TestEnv::new("rules-spellings");
    std::fs::write(env.cwd.join("x"), "keep\n").unwrap();
    let spellings: Vec<String> = serde_json::from_str(
        &std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("fixtures/rules/rm-spellings.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(spellings.len(), 40);
    let mut calls: Vec<(&str, Value)> = spellings
        .iter()
        .map(|s| ("shell", json!({ "command": s })))
        .collect();
    calls.push(("shell", json!({"command": "R=rm; $R x"})));
    calls.push(("shell", json!({"command": "echo fine"})));
    let (run, results) = run(
        &env,
        &calls,
        &[
            "--allow-shell",
            "--allow",
            "shell(*)",
            "--deny",
            "shell(rm *)",
        ],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(env.cwd.join("x").exists(), "{results:?}");
    for (spelling, result) in spellings.iter().zip(&results) {
        assert_eq!(
            result, "error: not run: the user's permission rule shell(rm *) denies this call",
            "{spelling:?}"
        );
    }
    assert!(
        results[40].starts_with("error: not run: this command cannot be checked"),
        "{results:?}"
    );
    assert!(
        run.stderr
            .contains("refused a shell command that cannot be checked"),
        "{}",
        run.stderr
    );
    assert!(results[41].contains("fine"), "{results:?}");
}

/// `shell(X *)` takes the bare `X` too, as the docs' `cargo test *` says,
/// and a double space does not get a command past a rule.
#[test]
fn a_star_rule_takes_the_bare_command_and_spaces_do_not_matter() {
    let env = TestEnv::new("rules-bare");
    let (run, results) = run(
        &env,
        &[
            ("shell", json!({"command": "echo"})),
            ("shell", json!({"command": "echo  ok"})),
            ("shell", json!({"command": "printf  'x\\n'"})),
        ],
        &["--allow", "shell(echo *)", "--deny", "shell(printf *)"],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(results[0].starts_with("exit status: 0"), "{results:?}");
    assert!(results[1].contains("ok"), "{results:?}");
    assert_eq!(
        results[2],
        "error: not run: the user's permission rule shell(printf *) denies this call"
    );
}

/// Issue 42, item 6: planning runs only tools that change nothing:
/// `remember` and `GoalProgress` are refused (nothing is written to the
/// memory or the goal), the readers run.
#[test]
fn planning_refuses_memory_and_goal_notes() {
    let env = TestEnv::new("plan-memory");
    std::fs::write(env.cwd.join("a.txt"), "one\n").unwrap();
    env.ok(&["goal", "ship it"]);
    let (run, results) = run(
        &env,
        &[
            (
                "remember",
                json!({"label": "planted", "content": "a note from a plan"}),
            ),
            ("GoalProgress", json!({"note": "done, surely", "met": true})),
            ("list_dir", json!({"path": "."})),
            ("agent_info", json!({})),
        ],
        &["--plan"],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    for refused in &results[..2] {
        assert!(
            refused.starts_with("error: not run: this session is planning"),
            "{results:?}"
        );
    }
    assert!(results[2].contains("a.txt"), "{results:?}");
    assert!(!results[3].starts_with("error"), "{results:?}");
    let memory = env.ok(&["memory", "show"]);
    assert!(!memory.stdout.contains("a note from a plan"), "{memory:?}");
    let goal = env.ok(&["goal"]);
    assert!(!goal.stdout.contains("met?"), "{goal:?}");
    assert!(!goal.stdout.contains("done, surely"), "{goal:?}");
}
