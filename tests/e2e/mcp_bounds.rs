//! MCP servers against a hostile repository and a hostile server (issue
//! 42, items 4, 8, 9, 12, 13 and 18), end to end, with a server of our own
//! (`mcp/hostile_server.py`): what an approval covers and asks again
//! about, secrets kept out of a server's arguments, a server's `env`
//! shown, results and stderr logs bounded, every server ended with
//! revolve, and tool names that collide once sanitised said and kept.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{records, repo, tool_results, wait_until, Run, TestEnv};

/// The hostile server's path.
fn hostile() -> PathBuf {
    repo().join("tests/e2e/mcp/hostile_server.py")
}

/// Panics unless python3 runs here (the hostile MCP server needs it).
fn python() -> bool {
    crate::common::require("python3");
    true
}

/// The server's configuration, with `args` after the script.
fn server(args: &[&str]) -> Value {
    let mut all = vec![hostile().to_string_lossy().into_owned()];
    all.extend(args.iter().map(|a| a.to_string()));
    json!({"command": "python3", "args": all})
}

/// Writes the config file with `servers` and `extra` settings.
fn configure(env: &TestEnv, servers: Value, extra: Value) {
    let dir = env.home.join(".config/task-agent");
    std::fs::create_dir_all(&dir).unwrap();
    let mut config = json!({"mcp_servers": servers});
    if let (Some(c), Some(e)) = (config.as_object_mut(), extra.as_object()) {
        c.extend(e.clone());
    }
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
}

/// The scripted replies: `calls` one a round, then "Done.".
fn script(env: &TestEnv, calls: &[(&str, Value)]) -> PathBuf {
    let mut replies: Vec<Value> = calls
        .iter()
        .map(|(name, args)| json!({"text": "", "tool_calls": [{"name": name, "arguments": args}]}))
        .collect();
    replies.push(json!({"text": "Done."}));
    let path = env.root.join("script.jsonl");
    let text: String = replies.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs revolve (scripted) making `calls`, as the only session.
fn run(env: &TestEnv, calls: &[(&str, Value)], extra: &[&str], vars: &[(&str, &str)]) -> Run {
    for old in env.session_files() {
        std::fs::remove_file(old).unwrap();
    }
    let script = script(env, calls);
    let mut args = vec![
        "--provider",
        "scripted",
        "--script",
        script.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["-p", "go"]);
    env.run_env(&args, "", vars)
}

/// The tool results of the latest session, in order.
fn results(env: &TestEnv) -> Vec<String> {
    tool_results(&records(&env.only_session()))
        .into_iter()
        .map(|(_, content)| content)
        .collect()
}

/// The pids the server and its child wrote.
fn pids(file: &Path) -> Vec<u32> {
    std::fs::read_to_string(file)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// Whether `pid` runs (a zombie does not).
fn alive(pid: u32) -> bool {
    let stat = Path::new("/proc").join(pid.to_string()).join("stat");
    if Path::new("/proc/self/stat").exists() {
        return std::fs::read_to_string(stat).is_ok_and(|s| {
            let state = s.rsplit(')').next().unwrap_or("").trim_start();
            !state.starts_with('Z') && !state.starts_with('X')
        });
    }
    Command::new("kill")
        .args(["-0", &pid.to_string()])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Kills what a failed test left running.
fn sweep(pids: &[u32]) {
    for pid in pids {
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
    }
}

/// Waits until every pid in `file` (at least `n` of them) is gone.
fn all_end(file: &Path, n: usize) -> Result<(), String> {
    let found = pids(file);
    if found.len() < n {
        return Err(format!("only {} pids written: {found:?}", found.len()));
    }
    if wait_until(Duration::from_secs(10), || found.iter().all(|&p| !alive(p))) {
        Ok(())
    } else {
        let left: Vec<u32> = found.iter().copied().filter(|&p| alive(p)).collect();
        sweep(&left);
        Err(format!("still running: {left:?} of {found:?}"))
    }
}

/// The project's state folder (the only one).
fn project_state(env: &TestEnv) -> PathBuf {
    env.state
        .join("task-agent/projects")
        .read_dir()
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
}

// Item 13: every server ends with revolve; `mcp list` keeps mcp_timeout_s.

#[test]
fn a_server_stuck_at_initialize_ends_with_mcp_list_which_keeps_mcp_timeout_s() {
    if !python() {
        return;
    }
    let env = TestEnv::new("mcpb-stuck-list");
    let file = env.root.join("pids");
    configure(
        &env,
        json!({"stuck": server(&["--stuck"])}),
        json!({"mcp_timeout_s": 2}),
    );
    let started = Instant::now();
    let list = env.run_env(
        &["mcp", "list"],
        "",
        &[("HOSTILE_PIDS", file.to_str().unwrap())],
    );
    let took = started.elapsed();
    assert_eq!(list.code, Some(0), "{list:?}");
    assert!(
        list.stdout.contains("failed: no answer within 2 s"),
        "{list:?}"
    );
    assert!(took < Duration::from_secs(15), "mcp list took {took:?}");
    all_end(&file, 2).unwrap();
}

#[test]
fn a_server_stuck_at_initialize_ends_with_the_session() {
    if !python() {
        return;
    }
    let env = TestEnv::new("mcpb-stuck-session");
    let file = env.root.join("pids");
    configure(
        &env,
        json!({"stuck": server(&["--stuck"])}),
        json!({"mcp_timeout_s": 1}),
    );
    let run = run(&env, &[], &[], &[("HOSTILE_PIDS", file.to_str().unwrap())]);
    assert_eq!(run.code, Some(0), "{run:?}");
    all_end(&file, 2).unwrap();
}

#[test]
fn a_server_and_its_child_end_when_revolve_is_killed_or_terminated() {
    if !python() {
        return;
    }
    for signal in ["KILL", "TERM", "HUP"] {
        let env = TestEnv::new(&format!("mcpb-killed-{signal}"));
        let file = env.root.join("pids");
        configure(&env, json!({"h": server(&[])}), json!({}));
        let script = script(&env, &[("mcp__h__echo", json!({"text": "up"}))]);
        let mut running = env.spawn_open_env(
            &[
                "--provider",
                "scripted",
                "--script",
                script.to_str().unwrap(),
                "--allow-mcp",
            ],
            "hello\n",
            &[("HOSTILE_PIDS", file.to_str().unwrap())],
        );
        assert!(
            running.wait_stdout("Done.", Duration::from_secs(30)),
            "{signal}: no answer"
        );
        assert_eq!(pids(&file).len(), 2, "{signal}");
        running.signal(signal);
        let _ = running.finish(Duration::from_secs(20));
        all_end(&file, 2)
            .map_err(|e| format!("{signal}: {e}"))
            .unwrap();
    }
}

// Item 9: a result's size is bounded.

#[test]
fn a_huge_result_is_read_no_further_than_the_bound_and_the_server_goes_on() {
    if !python() {
        return;
    }
    let env = TestEnv::new("mcpb-huge");
    configure(&env, json!({"h": server(&[])}), json!({}));
    let bound = revolve_core::policy::MCP_MESSAGE_BYTES;
    let run = run(
        &env,
        &[
            ("mcp__h__huge", json!({"n": bound * 3})),
            ("mcp__h__echo", json!({"text": "after"})),
        ],
        &["--allow-mcp"],
        &[],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let results = results(&env);
    assert!(
        results[0].starts_with("error: ") && results[0].contains("over revolve's bound"),
        "{}",
        &results[0][..results[0].len().min(300)]
    );
    assert!(results[0].len() < 1000, "{} bytes", results[0].len());
    assert_eq!(results[1], "echo: after");
    assert!(
        run.stderr
            .contains("revolve: MCP server h: its answer is over"),
        "{run:?}"
    );
    // Nothing larger than the bound was spilled.
    let spills = project_state(&env).join("spills");
    for dir in spills.read_dir().into_iter().flatten().flatten() {
        for f in dir.path().read_dir().into_iter().flatten().flatten() {
            let size = f.metadata().unwrap().len();
            assert!(size <= bound as u64, "{}: {size}", f.path().display());
        }
    }
}

// Item 12: the stderr log is bounded and private.

#[cfg(unix)]
#[test]
fn a_servers_stderr_log_keeps_a_bounded_tail_private_to_the_user() {
    use std::os::unix::fs::PermissionsExt;
    if !python() {
        return;
    }
    let env = TestEnv::new("mcpb-stderr");
    configure(&env, json!({"h": server(&[])}), json!({}));
    let bound = revolve_core::policy::MCP_STDERR_LOG_BYTES;
    let run = run(
        &env,
        &[("mcp__h__noisy", json!({"n": bound * 3}))],
        &["--allow-mcp"],
        &[],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(results(&env), ["noisy done"]);
    let dir = project_state(&env).join("mcp");
    let log = dir.join("h.stderr.log");
    let old = dir.join("h.stderr.log.1");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&dir), 0o700);
    // The copy may lag the session's end by a moment.
    assert!(wait_until(Duration::from_secs(5), || {
        std::fs::read_to_string(&log).is_ok_and(|t| t.ends_with("the last noise\n"))
    }));
    for f in [&log, &old] {
        assert_eq!(mode(f), 0o600, "{}", f.display());
        let size = std::fs::metadata(f).unwrap().len();
        assert!(size <= bound, "{}: {size}", f.display());
    }
}

// Item 4: what the user approved is what runs.

/// A repository whose `.mcp.json` runs an in-tree copy of the hostile
/// server, `server.py`, with `env`.
fn project_with_script(env: &TestEnv, vars: Value) -> PathBuf {
    let script = env.cwd.join("server.py");
    std::fs::copy(hostile(), &script).unwrap();
    std::fs::write(
        env.cwd.join(".mcp.json"),
        json!({"mcpServers": {"h": {"command": "python3", "args": ["server.py"], "env": vars}}})
            .to_string(),
    )
    .unwrap();
    script
}

#[test]
fn a_rewritten_in_tree_script_or_a_changed_env_is_asked_about_again() {
    if !python() {
        return;
    }
    let env = TestEnv::new("mcpb-approved-script");
    let script = project_with_script(&env, json!({"A": "1"}));
    let call = [("mcp__h__echo", json!({"text": "p"}))];
    let approved = env.ok(&["mcp", "approve"]);
    assert!(
        approved.stdout.contains("runs server.py (sha256 "),
        "{approved:?}"
    );
    let ran = run(&env, &call, &["--allow-mcp"], &[]);
    assert!(!ran.stderr.contains("not approved"), "{ran:?}");
    assert_eq!(results(&env), ["echo: p"]);

    // The script the approved server runs is rewritten (as a sandboxed
    // command can): the file .mcp.json is the same, the server is not.
    let mut text = std::fs::read_to_string(&script).unwrap();
    text.push_str("\nprint('planted', file=__import__('sys').stderr)\n");
    std::fs::write(&script, &text).unwrap();
    let again = run(&env, &call, &["--allow-mcp"], &[]);
    assert!(
        again
            .stderr
            .contains("not approved (changed since approved: h: the file server.py)"),
        "{again:?}"
    );
    assert!(results(&env)[0].contains("no MCP server is connected"));

    // Approved again, then its env changes.
    env.ok(&["mcp", "approve"]);
    assert_eq!(run(&env, &call, &["--allow-mcp"], &[]).code, Some(0));
    assert_eq!(results(&env), ["echo: p"]);
    project_with_script(&env, json!({"A": "1", "NODE_OPTIONS": "--require ./x.js"}));
    std::fs::write(&script, &text).unwrap();
    let changed = run(&env, &call, &["--allow-mcp"], &[]);
    assert!(
        changed
            .stderr
            .contains("changed since approved: h: its env"),
        "{changed:?}"
    );
    // The approvals are the user's alone.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let file = env.state.join("task-agent/mcp-approved.json");
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }
}

// Item 8: env shown, secrets kept out of the command line.

#[test]
fn env_is_shown_with_literal_secrets_masked_and_a_secret_in_the_arguments_is_refused() {
    if !python() {
        return;
    }
    let env = TestEnv::new("mcpb-env-shown");
    let key = "sk-test-not-a-real-key-0123456789";
    std::fs::write(
        env.cwd.join(".mcp.json"),
        json!({"mcpServers": {
            "shown": {"command": "python3", "args": [hostile().to_string_lossy()],
                      "env": {"NODE_OPTIONS": "--require ./evil.js", "GH_TOKEN": "ghp_literal_value",
                              "OPENAI_API_KEY": "${OPENAI_API_KEY}"}},
            "leaky": {"command": "python3", "args": [hostile().to_string_lossy(), "--key=${OPENAI_API_KEY}"]},
        }})
        .to_string(),
    )
    .unwrap();
    let approved = env.ok(&["mcp", "approve"]);
    assert!(
        approved.stdout.contains(
            "env: GH_TOKEN=**** NODE_OPTIONS=--require ./evil.js OPENAI_API_KEY=${OPENAI_API_KEY}"
        ),
        "{approved:?}"
    );
    assert!(!approved.stdout.contains("ghp_literal_value"));
    let list = env.run_env(&["mcp", "list"], "", &[("OPENAI_API_KEY", key)]);
    assert!(
        list.stdout.contains("NODE_OPTIONS=--require ./evil.js"),
        "{list:?}"
    );
    assert!(
        !list.stdout.contains(key) && !list.stderr.contains(key),
        "{list:?}"
    );
    let ran = run(
        &env,
        &[("mcp__leaky__echo", json!({"text": "x"}))],
        &["--allow-mcp"],
        &[("OPENAI_API_KEY", key)],
    );
    assert!(
        ran.stderr.contains(
            "revolve: MCP server leaky: ${OPENAI_API_KEY} in its command line would show the secret"
        ),
        "{ran:?}"
    );
    assert!(ran.stderr.contains("the server is not started"), "{ran:?}");
    assert!(results(&env)[0].contains("no tool named \"mcp__leaky__echo\""));
}

// Item 18: names that collide once sanitised.

#[test]
fn tools_whose_names_collide_once_sanitised_are_both_offered_and_said_once() {
    if !python() {
        return;
    }
    let env = TestEnv::new("mcpb-collide");
    configure(&env, json!({"h": server(&[])}), json!({}));
    let script = env.root.join("script.jsonl");
    let replies = [
        json!({"text": "", "tool_calls": [{"name": "mcp__h__a_b", "arguments": {}}]}),
        json!({"text": "First."}),
        json!({"text": "", "tool_calls": [{"name": "mcp__h__a_b_2", "arguments": {}}]}),
        json!({"text": "Second."}),
    ];
    let text: String = replies.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(&script, text).unwrap();
    let run = env.run(
        &[
            "--provider",
            "scripted",
            "--script",
            script.to_str().unwrap(),
            "--allow-mcp",
        ],
        "one\ntwo\n",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(results(&env), ["called a.b", "called a_b"]);
    let said: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("once sanitised"))
        .collect();
    assert_eq!(
        said,
        ["revolve: the MCP tools h/a.b and h/a_b are both named mcp__h__a_b once sanitised; the second is offered as mcp__h__a_b_2"],
        "{run:?}"
    );
    let list = env.ok(&["mcp", "list"]);
    assert!(
        list.stdout.contains("mcp__h__a_b_2  Underscored."),
        "{list:?}"
    );
}
