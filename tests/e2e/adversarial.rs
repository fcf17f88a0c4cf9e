//! Adversarial model output, end to end against the fake model server:
//! tool calls that try to leave the working tree (through `..`, absolute
//! paths, symlinked folders, symlink loops), enormous arguments, bytes
//! that are not UTF-8 coming back from a shell command, and escape
//! sequences in text that a terminal shows. (tests/e2e/tools.rs covers the
//! basic refusals: `../outside`, a symlinked file, `/`, bad JSON.)

use crate::common;

use std::time::{Duration, Instant};

use revolve_testkit::{FakeReply, FakeServer};
use serde_json::{json, Value};

use crate::common::{records, tool_results, Run, TestEnv};

fn serve(replies: Vec<FakeReply>) -> FakeServer {
    FakeServer::start(replies).expect("start the fake model server")
}

/// A streamed answer with these `(id, name, arguments)` calls.
fn calls(list: &[(&str, &str, &str)]) -> FakeReply {
    FakeReply::tool_calls("", list)
}

fn result_of<'a>(results: &'a [(String, String)], id: &str) -> &'a str {
    &results
        .iter()
        .find(|(i, _)| i == id)
        .unwrap_or_else(|| panic!("no result for {id}: {results:?}"))
        .1
}

/// The turn ended normally and the log replays cleanly, request for
/// request as the server received them.
fn assert_whole(env: &TestEnv, server: &FakeServer, run: &Run) {
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(!run.stderr.contains("panicked"), "{run:?}");
    assert_replays(env, server);
}

/// The log replays cleanly, request for request as the server received
/// them.
fn assert_replays(env: &TestEnv, server: &FakeServer) {
    let check = env.ok(&["replay", "--check"]);
    assert!(
        check
            .stdout
            .contains(" 0 skipped line(s), 0 inconsistencies"),
        "{check:?}"
    );
    let sent: String = server
        .requests()
        .iter()
        .map(|r| format!("{}\n", r.body))
        .collect();
    assert_eq!(env.ok(&["replay", "--requests"]).stdout, sent);
}

/// Escapes that try to leave the tree: none reaches a byte outside it.
#[test]
fn tool_paths_cannot_leave_the_tree() {
    let env = TestEnv::new("traversal");
    std::fs::write(env.cwd.join("notes.txt"), "inside\n").unwrap();
    let outside = env.root.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.txt"), "the secret\n").unwrap();
    // A folder of the tree that is a symlink out of it, and a loop.
    std::os::unix::fs::symlink(&outside, env.cwd.join("linkdir")).unwrap();
    std::fs::create_dir_all(env.cwd.join("sub")).unwrap();
    std::os::unix::fs::symlink("..", env.cwd.join("sub/loop")).unwrap();
    std::os::unix::fs::symlink(env.cwd.join("sub/self"), env.cwd.join("sub/self")).ok();
    let depth = "../".repeat(env.cwd.components().count() + 2);
    let passwd = format!("{depth}etc/passwd");
    let args = |v: Value| v.to_string();
    let tries = [
        ("t1", "read_file", args(json!({"path": "../../etc/passwd"}))),
        ("t2", "read_file", args(json!({"path": passwd}))),
        ("t3", "read_file", args(json!({"path": "/etc/passwd"}))),
        (
            "t4",
            "read_file",
            args(json!({"path": "notes.txt/../../outside/secret.txt"})),
        ),
        (
            "t5",
            "read_file",
            args(json!({"path": "linkdir/secret.txt"})),
        ),
        ("t6", "list_dir", args(json!({"path": "linkdir"}))),
        ("t7", "list_dir", args(json!({"path": "../.."}))),
        (
            "t8",
            "grep",
            args(json!({"pattern": "secret|root:", "path": "."})),
        ),
        (
            "t9",
            "grep",
            args(json!({"pattern": "root:", "path": "../../etc"})),
        ),
        (
            "t10",
            "read_file",
            args(json!({"path": "sub/loop/../outside/secret.txt"})),
        ),
        (
            "t11",
            "list_dir",
            args(json!({"path": "sub/loop/sub/loop/sub"})),
        ),
        (
            "t12",
            "read_file",
            args(json!({"path": "notes.txt\u{0}/../../outside/secret.txt"})),
        ),
        ("t13", "read_file", args(json!({"path": "sub/self"}))),
        (
            "t14",
            "grep",
            args(json!({"pattern": "secret", "path": "linkdir"})),
        ),
    ];
    let list: Vec<(&str, &str, &str)> = tries
        .iter()
        .map(|(id, name, a)| (*id, *name, a.as_str()))
        .collect();
    let server = serve(vec![calls(&list), FakeReply::text("Nothing found.")]);
    let started = Instant::now();
    let run = env.run(&["--base-url", &server.url()], "look around\n");
    assert!(started.elapsed() < Duration::from_secs(30));
    assert_whole(&env, &server, &run);

    let recs = records(&env.only_session());
    let found = tool_results(&recs);
    assert_eq!(found.len(), tries.len(), "{found:#?}");
    for (id, content) in &found {
        assert!(
            !content.contains("the secret"),
            "{id} read outside: {content}"
        );
        assert!(
            !content.contains("root:x:0:0"),
            "{id} read /etc/passwd: {content}"
        );
    }
    for id in ["t1", "t2", "t3", "t4", "t5", "t6", "t7", "t9", "t10", "t14"] {
        assert!(
            result_of(&found, id).contains("is outside the working tree"),
            "{id}: {}",
            result_of(&found, id)
        );
    }
    for id in ["t12", "t13"] {
        assert!(
            result_of(&found, id).starts_with("error: "),
            "{id}: {}",
            result_of(&found, id)
        );
    }
    // Searching the tree finds what is in it and does not follow the
    // symlinked folder out (nor loop through sub/loop).
    assert!(
        !result_of(&found, "t8").contains("linkdir/secret.txt"),
        "{found:?}"
    );
    let log = std::fs::read_to_string(env.only_session()).unwrap();
    assert!(!log.contains("the secret") && !log.contains("root:x:0:0"));
}

/// Arguments of several megabytes: every call gets an answer (an error or
/// a bounded result), the turn ends, and the log replays. The answer that
/// made those calls is part of the history, so the request after them
/// cannot fit a 128k window: it is not sent, and the turn stops saying so.
#[test]
fn enormous_arguments_are_answered() {
    let env = TestEnv::new("enormous");
    std::fs::write(env.cwd.join("notes.txt"), "inside\n").unwrap();
    // 2 MiB, 1 MiB, 1 MiB and 256 KiB twice: 4.5 MiB of arguments in one
    // answer (under the 8 MiB an answer may hold).
    let huge = "a".repeat(2 << 20);
    let large = "c".repeat(1 << 20);
    let big = "b".repeat(256 << 10);
    let args = |v: Value| v.to_string();
    let tries = [
        ("e1", "read_file", args(json!({"path": huge}))),
        ("e2", "grep", args(json!({"pattern": large}))),
        (
            "e3",
            "grep",
            args(json!({"pattern": format!("({})*$", "a*".repeat(1000))})),
        ),
        (
            "e4",
            "shell",
            args(json!({"command": format!("echo {large}")})),
        ),
        ("e5", "list_dir", args(json!({"path": big}))),
        (
            "e6",
            "request_file_grant",
            args(json!({"path": format!("/{big}"), "reason": big})),
        ),
        (
            "e7",
            "read_file",
            args(json!({"path": "notes.txt", "offset": u64::MAX, "limit": u64::MAX})),
        ),
    ];
    let list: Vec<(&str, &str, &str)> = tries
        .iter()
        .map(|(id, name, a)| (*id, *name, a.as_str()))
        .collect();
    let server = serve(vec![calls(&list), FakeReply::text("Done.")]);
    let started = Instant::now();
    let run = env.run(
        &[
            "--base-url",
            &server.url(),
            "--allow-shell",
            "--window",
            "128000",
        ],
        "try big things\n",
    );
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
    // The calls' megabytes of arguments are cut to head and tail in the
    // next request (the whole answer in a spill file), so the turn goes on
    // and is answered instead of stopping.
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Done.\n");
    assert!(run.stderr.contains("window: cut "), "{run:?}");
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "the answer's request went out");
    assert!(
        requests[1].body.len() < 128_000 * 4,
        "it fits the window: {} bytes",
        requests[1].body.len()
    );
    assert_replays(&env, &server);
    let found = tool_results(&records(&env.only_session()));
    assert_eq!(found.len(), tries.len());
    for (id, content) in &found {
        // Under the spill limit (32,000 characters), or spilled to a file
        // with only its head and tail in the history.
        assert!(
            content.len() < 40_000,
            "{id}: a {}-byte result",
            content.len()
        );
    }
    // A path too long for any file is refused without being echoed.
    for id in ["e1", "e5", "e6"] {
        assert!(
            result_of(&found, id).starts_with("error: a path of ")
                && result_of(&found, id).len() < 100,
            "{id}: {:.200}",
            result_of(&found, id)
        );
    }
    for id in ["e1", "e2", "e5", "e6"] {
        assert!(
            result_of(&found, id).starts_with("error: "),
            "{id}: {:.200}",
            result_of(&found, id)
        );
    }
}

/// Bytes that are not UTF-8 from a shell command reach the model and the
/// log as valid UTF-8 (U+FFFD for each bad byte), and the log replays.
#[test]
fn invalid_utf8_from_a_shell_command_is_replaced() {
    let env = TestEnv::new("not-utf8");
    let command = r"printf 'a\377\376b\300\n'; printf '\355\240\200 done\n' >&2";
    let server = serve(vec![
        calls(&[("s1", "shell", &json!({ "command": command }).to_string())]),
        FakeReply::text("Odd bytes."),
    ]);
    let run = env.run(&["--base-url", &server.url(), "--allow-shell"], "run it\n");
    assert_whole(&env, &server, &run);
    let found = tool_results(&records(&env.only_session()));
    let out = result_of(&found, "s1");
    assert!(out.contains("a\u{fffd}\u{fffd}b\u{fffd}"), "{out:?}");
    assert!(out.contains(" done"), "{out:?}");
    // The next request carried it as valid JSON.
    let sent: Value = serde_json::from_str(&server.requests()[1].body).unwrap();
    assert!(sent.to_string().contains("a\u{fffd}\u{fffd}b"), "{sent}");
}

// ---------------------------------------------------------------------------
// Escape sequences on a terminal

/// Runs the binary on a terminal ([`common::Terminal`]) in the harness's
/// environment, typing each of `lines` once the prompt is back after the
/// line before (typed ahead, a line can reach the terminal before the line
/// editor does, and be lost); returns what the terminal showed.
fn on_a_terminal(env: &TestEnv, args: &[&str], lines: &[&str]) -> String {
    let mut term = env.terminal(args, 80, &[]);
    let within = Duration::from_secs(30);
    for text in lines {
        term.wait_until(within, "the prompt", common::at_prompt);
        term.type_keys(&format!("{text}\r"));
    }
    term.wait_until(within, "the prompt", common::at_prompt);
    // Ctrl-D: the exit code is not what is checked.
    term.finish(Duration::from_secs(10)).1
}

/// What the model may send to take over a terminal: clear the screen, set
/// the clipboard (OSC 52), retitle the window, ring the bell, move the
/// cursor, an 8-bit CSI. On a terminal none of it arrives raw: not in the
/// answer, the tool line naming a call's arguments, a refinement's account
/// of its change, nor an error message from the server; the answer shows
/// it as `^[`… instead.
#[test]
fn escape_sequences_from_the_model_are_inert_on_a_terminal() {
    let evil =
        "Hi\u{1b}[2J\u{1b}]52;c;ZXZpbA==\u{7}\u{1b}]0;pwned\u{7}\u{1b}[31mred\u{9b}1;1H\rX\u{8}end";
    let env = TestEnv::new("escapes");
    std::fs::write(env.cwd.join("notes.txt"), "inside\n").unwrap();
    let server = serve(vec![
        FakeReply::ToolCalls {
            text: evil.to_owned(),
            calls: vec![(
                "c1".into(),
                "read_file".into(),
                json!({"path": format!("notes.txt{evil}")}).to_string(),
            )],
            usage: Some((10, 1)),
        },
        FakeReply::Stream {
            chunks: vec![evil.to_owned()],
            usage: Some((10, 1)),
        },
        // A refinement whose sentence about its change is hostile.
        FakeReply::text(
            &json!({"files": [{"file": "project/notes.md", "content": "kept\n", "change": evil}]})
                .to_string(),
        ),
        // An error message from the server that is.
        FakeReply::Garbage(format!("data: {}\n\n", json!({"error": {"message": evil}}))),
    ]);
    let shown = on_a_terminal(
        &env,
        &["--base-url", &server.url()],
        &["go", "/refine", "again"],
    );
    assert_eq!(server.requests().len(), 4, "{shown}");
    let text = shown;
    for raw in [
        "\u{1b}[2J",
        "\u{1b}]52",
        "\u{1b}]0;",
        "\u{7}",
        "\u{1b}[31m",
        "\u{9b}",
        "\u{8}",
    ] {
        assert!(
            !text.contains(raw),
            "{raw:?} reached the terminal: {text:?}"
        );
    }
    assert!(
        text.contains("Hi^[[2J^[]52;c;ZXZpbA==^G^[]0;pwned^G^[[31mred"),
        "{text:?}"
    );
    // The answers themselves are logged as the model sent them.
    let recs = records(&env.only_session());
    let answers: Vec<&str> = recs
        .iter()
        .filter(|r| r["type"] == "message" && r["role"] == "assistant")
        .map(|r| r["content"].as_str().unwrap())
        .collect();
    assert_eq!(answers[..2], [evil, evil]);
}
