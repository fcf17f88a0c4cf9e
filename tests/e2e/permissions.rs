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

#[test]
fn an_allow_rule_runs_one_simple_command_in_pipe_mode_and_no_more() {
    let env = TestEnv::new("rules-allow");
    let (run, results) = run(
        &env,
        &[
            ("shell", json!({"command": "echo status-ran"})),
            ("shell", json!({"command": "echo status-ran; touch x"})),
            ("shell", json!({"command": "echo status-ran && touch x"})),
            ("shell", json!({"command": "touch y"})),
        ],
        &["--allow", "shell(echo status-ran)"],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(results[0].contains("status-ran"), "{results:?}");
    for refused in &results[1..] {
        assert_eq!(
            refused, "error: the user did not allow this command",
            "{results:?}"
        );
    }
    assert!(!env.cwd.join("x").exists() && !env.cwd.join("y").exists());
    let approved = approved(&env);
    assert_eq!(approved.len(), 1, "{approved:?}");
    assert_eq!(approved[0]["rule"], "shell(echo status-ran)");
    assert_eq!(approved[0]["answer"], "yes");
    let replay = env.ok(&["replay"]);
    assert!(
        replay
            .stdout
            .contains("── the rule shell(echo status-ran) allowed the command `echo status-ran`"),
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
