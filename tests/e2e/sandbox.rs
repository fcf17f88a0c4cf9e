//! The sandbox of `shell` commands (issue 28), on Linux with Landlock:
//! under `workspace-write` (the default) a command writes the tree and its
//! own `$TMPDIR`, not beside it, and reaches no TCP listener without
//! `--network`; `git` and `cargo` run; under `read-only` not even the tree
//! is written. A refusal is told as the sandbox's. Where this kernel has no
//! Landlock, each test says so and checks nothing else.

use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::common::{records, tool_results, Run, TestEnv};

/// Runs revolve (scripted) calling `shell` once per command, with `extra`
/// arguments and `vars`; the tool results, in order.
fn shells(
    env: &TestEnv,
    commands: &[&str],
    extra: &[&str],
    vars: &[(&str, &str)],
) -> (Run, Vec<String>) {
    let mut replies: Vec<Value> = commands
        .iter()
        .map(
            |c| json!({"text": "", "tool_calls": [{"name": "shell", "arguments": {"command": c}}]}),
        )
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
        "--allow-shell",
    ];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["-p", "go"]);
    let run = env
        .spawn_env(&args, "", vars)
        .finish(Duration::from_secs(60));
    assert_eq!(run.code, Some(0), "{run:?}");
    let results = tool_results(&records(&env.only_session()))
        .into_iter()
        .map(|(_, content)| content)
        .collect();
    (run, results)
}

/// Whether this kernel enforces Landlock file rules (said when not), as a
/// command of a session of its own finds.
fn landlock(_: &TestEnv) -> bool {
    crate::common::require_landlock();
    true
}

#[test]
#[ignore = "needs a kernel that enforces Landlock"]
fn workspace_write_writes_the_tree_and_its_tmpdir_not_beside_them() {
    let env = TestEnv::new("sandbox-write");
    if !landlock(&env) {
        return;
    }
    let outside = env.root.join("outside.txt");
    let home_file = env.home.join("planted");
    let command = format!(
        "touch inside.txt && echo tree-ok; touch \"$TMPDIR/t\" && echo tmp-ok; touch {}; touch {}",
        outside.display(),
        home_file.display()
    );
    let (_, results) = shells(&env, &[&command], &[], &[]);
    let result = &results[0];
    assert!(env.cwd.join("inside.txt").exists(), "{result}");
    assert!(!outside.exists(), "written beside the tree: {result}");
    assert!(!home_file.exists(), "written in the home: {result}");
    assert!(
        result.contains("tree-ok") && result.contains("tmp-ok"),
        "{result}"
    );
    assert!(
        result.contains("Permission denied")
            && result.contains("[the sandbox (workspace-write) may have refused this"),
        "told as the sandbox's: {result}"
    );
}

#[test]
#[ignore = "needs a kernel that enforces Landlock"]
fn read_only_writes_nothing_but_its_tmpdir() {
    let env = TestEnv::new("sandbox-read-only");
    if !landlock(&env) {
        return;
    }
    std::fs::write(env.cwd.join("kept.txt"), "as it was\n").unwrap();
    let (_, results) = shells(
        &env,
        &["echo changed > kept.txt; touch new.txt; cat kept.txt; touch \"$TMPDIR/t\" && echo tmp-ok"],
        &["--sandbox", "read-only"],
        &[],
    );
    let result = &results[0];
    assert_eq!(
        std::fs::read_to_string(env.cwd.join("kept.txt")).unwrap(),
        "as it was\n"
    );
    assert!(!env.cwd.join("new.txt").exists(), "{result}");
    assert!(
        result.contains("as it was") && result.contains("tmp-ok"),
        "{result}"
    );
    assert!(result.contains("sandbox (read-only)"), "{result}");
}

/// A TCP listener on 127.0.0.1: how many connections it took.
fn listener() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            if stream.is_ok() {
                count.fetch_add(1, Ordering::SeqCst);
            }
        }
    });
    (port, accepted)
}

/// Needs `bash` (its `/dev/tcp`) as the client: said and skipped without.
#[test]
#[ignore = "needs a kernel that enforces Landlock"]
fn the_network_is_closed_unless_asked_for() {
    let env = TestEnv::new("sandbox-network");
    if !landlock(&env) {
        return;
    }
    crate::common::require("bash");
    let (port, accepted) = listener();
    let connect = format!("bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}' && echo connected");
    let (_, closed) = shells(&env, &[&connect], &[], &[]);
    assert!(!closed[0].contains("connected"), "{closed:?}");
    assert_eq!(accepted.load(Ordering::SeqCst), 0, "{closed:?}");

    let env = TestEnv::new("sandbox-network-open");
    let (_, open) = shells(&env, &[&connect], &["--network"], &[]);
    assert!(open[0].contains("connected"), "{open:?}");
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(accepted.load(Ordering::SeqCst), 1, "{open:?}");
}

/// `git status` and `cargo --version` run under `workspace-write` (cargo
/// through rustup reads its home, given the test's own: a rustup that
/// must write there would be refused, and that is right).
#[test]
#[ignore = "needs a kernel that enforces Landlock"]
fn git_and_cargo_run_in_the_sandbox() {
    let env = TestEnv::new("sandbox-tools");
    if !landlock(&env) {
        return;
    }
    crate::common::require("git");
    let real_home = std::env::var("HOME").unwrap_or_default();
    let rustup = std::env::var("RUSTUP_HOME").unwrap_or_else(|_| format!("{real_home}/.rustup"));
    let cargo = std::env::var("CARGO_HOME").unwrap_or_else(|_| format!("{real_home}/.cargo"));
    let path = std::env::var("PATH").unwrap_or_default();
    let (_, results) = shells(
        &env,
        &[
            "git init -q && git status --short && echo git-ok",
            "cargo --version",
        ],
        &[],
        &[
            ("RUSTUP_HOME", &rustup),
            ("CARGO_HOME", &cargo),
            ("PATH", &path),
        ],
    );
    assert!(
        results[0].starts_with("exit status: 0") && results[0].contains("git-ok"),
        "{results:?}"
    );
    assert!(
        results[1].starts_with("exit status: 0") && results[1].contains("cargo "),
        "{results:?}"
    );
}

/// `config show` names the mode and where it came from; a bad mode in the
/// config file is a usage error naming the file.
#[test]
fn the_sandbox_settings_show_and_a_bad_mode_is_refused() {
    let env = TestEnv::new("sandbox-config");
    let run = env.run_env(
        &["config", "show", "--json"],
        "",
        &[("REVOLVE_SANDBOX", "read-only")],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(
        doc["settings"]["sandbox"],
        json!({"value": "read-only", "source": "env"})
    );
    assert_eq!(
        doc["settings"]["sandbox_network"],
        json!({"value": false, "source": "default"})
    );
    let config = env.home.join(".config/task-agent");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("config.json"), r#"{"sandbox": "strict"}"#).unwrap();
    let run = env.run(&["config", "show"], "");
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(
        run.stderr.contains("config.json")
            && run.stderr.contains("unknown sandbox mode \"strict\""),
        "{run:?}"
    );
}

/// At a terminal, a command the sandbox refused may run once outside it:
/// `y` runs it again unsandboxed, `n` keeps the sandbox's result; both
/// answers are logged and shown by replay.
#[cfg(unix)]
#[test]
#[ignore = "needs a kernel that enforces Landlock"]
fn at_a_terminal_a_refused_command_may_run_once_outside() {
    let probe = TestEnv::new("sandbox-outside-probe");
    if !landlock(&probe) {
        return;
    }
    let env = TestEnv::new("sandbox-outside");
    let outside = env.root.join("outside-yes");
    let kept = env.root.join("outside-no");
    let call = |id: &str, path: &std::path::Path| revolve_testkit::FakeReply::ToolCalls {
        text: String::new(),
        calls: vec![(
            id.to_owned(),
            "shell".to_owned(),
            json!({"command": format!("touch {}", path.display())}).to_string(),
        )],
        usage: Some((10, 1)),
    };
    let server = revolve_testkit::FakeServer::start(vec![
        call("c1", &outside),
        call("c2", &kept),
        revolve_testkit::FakeReply::text("Done."),
    ])
    .unwrap();
    let url = server.url();
    let mut term = env.terminal(&["--base-url", &url, "--allow-shell"], 120, &[]);
    let within = Duration::from_secs(10);
    term.wait_for("› ", within);
    term.type_keys("touch both\r");
    term.wait_for("run it once outside the sandbox? [y]es, [n]o: ", within);
    term.type_keys("y\r");
    term.wait_for_n("run it once outside the sandbox? [y]es, [n]o: ", 2, within);
    term.type_keys("n\r");
    term.wait_until(within, "the prompt after the answer", |s| {
        s.find("Done.").is_some_and(|i| s[i..].contains("› "))
    });
    term.type_keys("\x04");
    let (ok, screen) = term.finish(within);
    assert!(ok, "{screen}");
    assert!(outside.exists(), "yes ran it outside: {screen}");
    assert!(!kept.exists(), "no kept it in: {screen}");
    let approved: Vec<Value> = records(&env.only_session())
        .into_iter()
        .filter(|r| r["type"] == "approved" && r["tool"] == "unsandboxed")
        .collect();
    let answers: Vec<&str> = approved
        .iter()
        .map(|a| a["answer"].as_str().unwrap())
        .collect();
    assert_eq!(answers, ["yes", "no"]);
    let results = tool_results(&records(&env.only_session()));
    assert!(results[0].1.starts_with("exit status: 0"), "{results:?}");
    assert!(results[1].1.contains("Permission denied"), "{results:?}");
    let replay = env.ok(&["replay"]);
    assert!(
        replay.stdout.contains("run once outside the sandbox"),
        "{}",
        replay.stdout
    );
    assert_eq!(env.ok(&["replay", "--check"]).code, Some(0));
}
