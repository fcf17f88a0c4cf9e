//! Project instructions end to end: every `AGENTS.md` from the repository
//! root down to the working directory, root first, a folder without one
//! contributing its `CLAUDE.md`, in the system prompt of every request;
//! read again each turn; none with `--bare`; listed by `agent_info` and
//! `/status`; rebuilt by replay exactly as sent.

use std::io::Write;
use std::path::Path;
use std::process::Stdio;

use revolve_testkit::{FakeReply, FakeServer};
use serde_json::Value;

use crate::common::{Run, TestEnv};

/// Runs the binary in `dir` (not the env's working directory).
fn run_in(env: &TestEnv, dir: &Path, args: &[&str], stdin: &str) -> Run {
    let mut child = env
        .command(args)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start revolve");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .ok();
    let out = child.wait_with_output().expect("wait for revolve");
    Run {
        code: out.status.code(),
        signal: None,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The system prompt of a request body.
fn system(body: &str) -> String {
    let body: Value = serde_json::from_str(body).expect("a JSON request");
    body["messages"][0]["content"]
        .as_str()
        .expect("a system message")
        .to_owned()
}

/// A repository at the env's root (its `.git` there), the working
/// directory two folders down: `AGENTS.md` at the root (its `CLAUDE.md`
/// beside it only an `@AGENTS.md` import, so not read again), only a
/// `CLAUDE.md` in `work/`, an `AGENTS.md` in `work/deep/`.
fn repository(env: &TestEnv) -> std::path::PathBuf {
    std::fs::create_dir_all(env.root.join(".git")).unwrap();
    std::fs::write(env.root.join("AGENTS.md"), "Root rule: use tabs.\n").unwrap();
    std::fs::write(env.root.join("CLAUDE.md"), "@AGENTS.md\n").unwrap();
    std::fs::write(env.cwd.join("CLAUDE.md"), "Work rule: run make check.\n").unwrap();
    let deep = env.cwd.join("deep");
    std::fs::create_dir_all(&deep).unwrap();
    std::fs::write(deep.join("AGENTS.md"), "Deep rule: never push.\n").unwrap();
    deep
}

#[test]
fn agents_md_files_reach_the_prompt_root_first_and_each_turn_reads_them_again() {
    let env = TestEnv::new("instructions");
    let deep = repository(&env);
    let server = FakeServer::start(vec![
        FakeReply::tool_calls("", &[("i1", "agent_info", "{}")]),
        FakeReply::text("Noted."),
        FakeReply::text("Again."),
    ])
    .unwrap();
    let url = server.url();
    let run = run_in(&env, &deep, &["--base-url", &url], "hello\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    let sent = server.requests();
    let prompt = system(&sent[0].body);
    let root = env.root.join("AGENTS.md");
    let work = env.cwd.join("CLAUDE.md");
    let deep_file = deep.join("AGENTS.md");
    let at = |path: &Path, text: &str| {
        let needle = format!("## {}\n\n{text}", path.display());
        prompt
            .find(&needle)
            .unwrap_or_else(|| panic!("{needle:?} not in the prompt:\n{prompt}"))
    };
    let (a, b, c) = (
        at(&root, "Root rule: use tabs."),
        at(&work, "Work rule: run make check."),
        at(&deep_file, "Deep rule: never push."),
    );
    assert!(a < b && b < c, "root first:\n{prompt}");
    assert!(!prompt.contains("Not read"), "{prompt}");
    // Before the memory files (the builtin ones are seeded).
    let memory = prompt
        .find("\n## memory/")
        .expect("memory files in the prompt");
    assert!(c < memory, "{prompt}");
    // agent_info lists them.
    let info: Value = serde_json::from_str(
        &crate::common::request_messages(&sent[1].body)
            .into_iter()
            .find(|(role, _)| role == "tool")
            .expect("the agent_info result")
            .1,
    )
    .expect("agent_info is JSON");
    let listed: Vec<&str> = info["project_instructions"]
        .as_array()
        .expect("project_instructions")
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    let paths: Vec<String> = [&root, &work, &deep_file]
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    assert_eq!(listed, paths);

    // An edit between turns reaches the next request.
    std::fs::write(&deep_file, "Deep rule: push only on Fridays.\n").unwrap();
    let run = run_in(&env, &deep, &["--base-url", &url, "--continue"], "again\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    let last = system(&server.requests()[2].body);
    assert!(last.contains("Deep rule: push only on Fridays."), "{last}");
    assert!(!last.contains("never push"), "{last}");

    // Replay rebuilds every request as sent.
    let check = run_in(&env, &deep, &["replay", "--check"], "");
    assert!(check.stdout.contains(" 0 inconsistencies"), "{check:?}");
    let rebuilt = run_in(&env, &deep, &["replay", "--requests"], "");
    let sent: String = server
        .requests()
        .iter()
        .map(|r| format!("{}\n", r.body))
        .collect();
    assert!(rebuilt.stdout == sent, "replay --requests differs");
}

#[test]
fn bare_loads_no_instructions_and_status_names_them() {
    let env = TestEnv::new("instructions-bare");
    let deep = repository(&env);
    let server = FakeServer::start(vec![FakeReply::text("Hi.")]).unwrap();
    let url = server.url();
    let run = run_in(
        &env,
        &deep,
        &["--base-url", &url, "--bare"],
        "hello\n/status\n",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let prompt = system(&server.requests()[0].body);
    assert!(!prompt.contains("rule"), "{prompt}");
    assert!(run.stderr.contains("project instructions: none"), "{run:?}");
    let server = FakeServer::start(vec![FakeReply::text("Hi.")]).unwrap();
    let url = server.url();
    let run = run_in(&env, &env.cwd, &["--base-url", &url], "hello\n/status\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    let expected = format!(
        "project instructions: {}, {}",
        env.root.join("AGENTS.md").display(),
        env.cwd.join("CLAUDE.md").display()
    );
    assert!(run.stderr.contains(&expected), "{expected}\n{run:?}");
}

#[test]
fn a_fifo_named_agents_md_is_said_once_and_left_out() {
    let env = TestEnv::new("instructions-fifo");
    std::fs::create_dir_all(env.root.join(".git")).unwrap();
    let fifo = env.cwd.join("AGENTS.md");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    assert!(made.is_ok_and(|s| s.success()), "mkfifo (a host tool)");
    let server = FakeServer::start(vec![FakeReply::text("One."), FakeReply::text("Two.")]).unwrap();
    let url = server.url();
    let run = run_in(&env, &env.cwd, &["--base-url", &url], "one\ntwo\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    let said = run
        .stderr
        .matches("cannot read the project instructions")
        .count();
    assert_eq!(said, 1, "{run:?}");
    assert!(
        run.stderr.contains("not a regular file (a FIFO)"),
        "{run:?}"
    );
}

/// Issue 47, item 22: a `CLAUDE.md` with notes of its own beside an
/// `AGENTS.md` (Claude Code users keep their Claude-only notes there)
/// reaches the prompt after it; a copy of the `AGENTS.md` does not.
#[test]
fn a_claude_md_beside_agents_md_is_read_too_unless_it_repeats_it() {
    let env = TestEnv::new("instructions-both");
    std::fs::create_dir_all(env.cwd.join(".git")).unwrap();
    std::fs::write(env.cwd.join("AGENTS.md"), "Shared rule: use tabs.\n").unwrap();
    std::fs::write(env.cwd.join("CLAUDE.md"), "Claude rule: never push.\n").unwrap();
    let server = FakeServer::start(vec![FakeReply::text("Hi."), FakeReply::text("Hi.")]).unwrap();
    let url = server.url();
    let run = run_in(&env, &env.cwd, &["--base-url", &url], "hello\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    let prompt = system(&server.requests()[0].body);
    let shared = prompt
        .find("Shared rule: use tabs.")
        .expect("AGENTS.md read");
    let claude = prompt
        .find("Claude rule: never push.")
        .expect("CLAUDE.md read");
    assert!(shared < claude, "{prompt}");
    std::fs::write(env.cwd.join("CLAUDE.md"), "Shared rule: use tabs.\n").unwrap();
    let run = run_in(&env, &env.cwd, &["--base-url", &url], "hello\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    let prompt = system(&server.requests()[1].body);
    assert_eq!(
        prompt.matches("Shared rule: use tabs.").count(),
        1,
        "{prompt}"
    );
    let heading = format!("## {}", env.cwd.join("CLAUDE.md").display());
    assert!(!prompt.contains(&heading), "{prompt}");
}
