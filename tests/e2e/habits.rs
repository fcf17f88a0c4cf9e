//! What Claude Code and Codex users type without thinking (issue 47,
//! items 17–21 and 23): stdin as one prompt with `-p`, one JSON result
//! object, newlines in the REPL, single-key approvals, Markdown that fits
//! the terminal.

use std::time::Duration;

use revolve_testkit::{FakeReply, FakeServer};
use serde_json::Value;

use crate::common::{request_messages, TestEnv};

#[test]
fn piped_stdin_with_p_is_one_prompt_and_without_p_one_turn_a_line() {
    let server = FakeServer::start(vec![FakeReply::text("Read it.")]).unwrap();
    let env = TestEnv::new("habits-p-stdin");
    let url = server.url();
    let run = env.run(
        &["--base-url", &url, "-p"],
        "line one\nline two\n/not a command\n",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Read it.\n");
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "one turn, not one a line: {requests:?}");
    let users: Vec<String> = request_messages(&requests[0].body)
        .into_iter()
        .filter(|(role, _)| role == "user")
        .map(|(_, text)| text)
        .collect();
    assert_eq!(users, ["line one\nline two\n/not a command"]);

    // Without -p, piped lines stay one turn each.
    let server = FakeServer::start(vec![FakeReply::text("A."), FakeReply::text("B.")]).unwrap();
    let url = server.url();
    let run = env.run(&["--base-url", &url], "first\nsecond\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(server.requests().len(), 2, "{run:?}");
}

#[test]
fn output_format_json_prints_one_result_object() {
    let server = FakeServer::start(vec![
        FakeReply::tool_calls("Looking.", &[("c1", "list_dir", r#"{"path":"."}"#)]),
        FakeReply::text("It holds one file."),
    ])
    .unwrap();
    let env = TestEnv::new("habits-json");
    std::fs::write(env.cwd.join("a.txt"), "a\n").unwrap();
    let url = server.url();
    let run = env.run(
        &[
            "--base-url",
            &url,
            "--model",
            "gpt-4o-mini",
            "--output-format",
            "json",
            "-p",
            "what is here?",
        ],
        "",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 1, "one object: {}", run.stdout);
    let result: Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(result["type"], "result");
    assert_eq!(result["subtype"], "success");
    assert_eq!(result["is_error"], false);
    assert_eq!(result["result"], "It holds one file.");
    assert_eq!(result["num_turns"], 1);
    assert_eq!(result["usage"]["input_tokens"], 20);
    assert_eq!(result["usage"]["output_tokens"], 5);
    assert_eq!(result["usage"]["requests"], 2);
    assert!(result["total_cost_usd"].as_f64().unwrap() > 0.0, "{result}");
    let session = result["session_id"].as_str().unwrap();
    let file = env.only_session();
    assert!(
        file.to_string_lossy().contains(session),
        "{session} names {}",
        file.display()
    );

    // A failed run is an object too, with is_error and the message.
    let server = FakeServer::start(vec![FakeReply::Status {
        code: 500,
        body: "boom".into(),
        retry_after: None,
    }])
    .unwrap();
    let url = server.url();
    let run = env.run(
        &["--base-url", &url, "--output-format", "json", "-p", "hi"],
        "",
    );
    assert_eq!(run.code, Some(1), "{run:?}");
    let result: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(result["is_error"], true);
    assert_eq!(result["exit_code"], 1);
    assert!(
        result["result"].as_str().unwrap().contains("HTTP 500"),
        "{result}"
    );
}

/// The user messages of the request `n` the server got.
fn users(server: &FakeServer, n: usize) -> Vec<String> {
    request_messages(&server.requests()[n].body)
        .into_iter()
        .filter(|(role, _)| role == "user")
        .map(|(_, text)| text)
        .collect()
}

/// Waits for the prompt after `text` (the line editor redraws its prompt
/// while a line is typed, so a prompt before it does not count).
fn after(term: &mut crate::common::Terminal, text: &str) {
    term.wait_until(Duration::from_secs(20), text, |s| {
        s.find(text).is_some_and(|i| s[i..].contains("› "))
    });
}

#[test]
fn backslash_enter_ctrl_j_and_alt_enter_put_a_newline_in_the_line() {
    let server = FakeServer::start(vec![
        FakeReply::text("One."),
        FakeReply::text("Two."),
        FakeReply::text("Three."),
    ])
    .unwrap();
    let env = TestEnv::new("habits-newline");
    let url = server.url();
    let mut term = env.terminal(&["--base-url", &url], 100, &[]);
    let within = Duration::from_secs(20);
    term.wait_for("› ", within);
    term.type_keys("first\\\rsecond\r");
    after(&mut term, "One.");
    term.type_keys("third\x0afourth\r");
    after(&mut term, "Two.");
    term.type_keys("fifth\x1b\rsixth\r");
    after(&mut term, "Three.");
    let (ok, screen) = term.finish(within);
    assert!(ok, "{screen}");
    assert_eq!(users(&server, 0), ["first\nsecond"]);
    assert_eq!(users(&server, 1)[1], "third\nfourth");
    assert_eq!(users(&server, 2)[2], "fifth\nsixth");
}

#[test]
fn an_approval_takes_one_key_and_ctrl_c_there_is_no_at_once() {
    let server = FakeServer::start(vec![
        FakeReply::tool_calls("", &[("c1", "shell", r#"{"command":"echo ran-$((1+1))"}"#)]),
        FakeReply::tool_calls("", &[("c2", "shell", r#"{"command":"echo no-$((2+3))"}"#)]),
        FakeReply::text("Done."),
    ])
    .unwrap();
    let env = TestEnv::new("habits-one-key");
    let url = server.url();
    let mut term = env.terminal(&["--base-url", &url, "--sandbox", "off"], 120, &[]);
    let within = Duration::from_secs(20);
    term.wait_for("› ", within);
    term.type_keys("run two\r");
    // Shell and edit questions list their options in one order.
    term.wait_for("? [y]es, [a]lways this session, [n]o: ", within);
    term.type_keys("y");
    term.wait_for_next("yes", within);
    term.wait_for_n("? [y]es, [a]lways this session, [n]o: ", 2, within);
    term.type_keys("\x03");
    after(&mut term, "Done.");
    let (ok, screen) = term.finish(within);
    assert!(ok, "{screen}");
    let results: Vec<String> =
        crate::common::tool_results(&crate::common::records(&env.only_session()))
            .into_iter()
            .map(|(_, output)| output)
            .collect();
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(results[0].contains("ran-2"), "{results:?}");
    assert!(!results[1].contains("no-5"), "{results:?}");
}

#[test]
fn esc_interrupts_a_turn_as_ctrl_c_does() {
    let server = FakeServer::start(vec![FakeReply::Stall {
        chunks: vec!["Thinking".into()],
    }])
    .unwrap();
    let env = TestEnv::new("habits-esc");
    let url = server.url();
    let mut term = env.terminal(&["--base-url", &url], 100, &[]);
    let within = Duration::from_secs(20);
    term.wait_for("› ", within);
    term.type_keys("go on\r");
    // The answer shows line by line: its request is what is waited for.
    revolve_testkit::wait_for_requests(&server, 1, within);
    std::thread::sleep(Duration::from_millis(300));
    term.type_keys("\x1b");
    after(&mut term, "interrupted; the turn is logged as such");
    let (ok, screen) = term.finish(within);
    assert!(ok, "{screen}");
    // The part that came is kept and the turn marked, as after Ctrl-C.
    let records = crate::common::records(&env.only_session());
    assert!(
        records
            .iter()
            .any(|r| r["role"] == "assistant" && r["content"] == "Thinking"),
        "{records:?}"
    );
    assert!(
        records.iter().any(|r| r["type"] == "interrupted"),
        "{records:?}"
    );
}

/// The lines the terminal showed, escape sequences and carriage returns
/// taken out.
fn plain_lines(screen: &str) -> Vec<String> {
    let mut out = String::new();
    let mut chars = screen.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else if c != '\r' {
            out.push(c);
        }
    }
    out.lines().map(str::to_owned).collect()
}

#[test]
fn markdown_and_the_status_row_fit_a_narrow_terminal_with_or_without_colour() {
    let paragraph = "Every answer is wrapped at the terminal's width on word boundaries, \
                     so that internationalisation stays whole and nothing breaks mid-word \
                     however long the paragraph goes on.";
    let table = "| file | lines |\n|:-----|------:|\n| store.rs | 512 |\n| log.rs | 30 |";
    let answer = format!("{paragraph}\n\n{table}\n");
    for no_color in [false, true] {
        let server = FakeServer::start(vec![FakeReply::text(&answer)]).unwrap();
        let env = TestEnv::new("habits-wrap");
        let url = server.url();
        let vars: &[(&str, &str)] = if no_color { &[("NO_COLOR", "1")] } else { &[] };
        let mut term = env.terminal(
            &["--base-url", &url, "--name", "a-rather-long-session-name"],
            60,
            vars,
        );
        let within = Duration::from_secs(20);
        term.wait_for("› ", within);
        term.type_keys("explain\r");
        after(&mut term, "however long");
        let (ok, screen) = term.finish(within);
        assert!(ok, "{screen}");
        assert_eq!(screen.contains("\u{1b}[2m"), !no_color, "{screen:?}");
        let lines = plain_lines(&screen);
        let start = lines
            .iter()
            .position(|l| l.starts_with("Every answer"))
            .unwrap();
        let shown: Vec<&String> = lines[start..]
            .iter()
            .take_while(|l| !l.is_empty())
            .collect();
        assert!(shown.len() >= 3, "wrapped: {shown:#?}");
        for line in &shown {
            assert!(line.chars().count() <= 60, "{line:?} in {shown:#?}");
        }
        let words: Vec<&str> = shown.iter().flat_map(|l| l.split_whitespace()).collect();
        assert_eq!(words.join(" "), paragraph, "no word broken");
        // The table's numbers are right-aligned.
        let rows: Vec<&String> = lines
            .iter()
            .filter(|l| l.ends_with(" 512") || l.ends_with("  30"))
            .collect();
        assert_eq!(rows.len(), 2, "{lines:#?}");
        assert_eq!(rows[0].chars().count(), rows[1].chars().count(), "{rows:?}");
        // The status row is cut to the width, never wrapped.
        let status: Vec<&String> = lines
            .iter()
            .filter(|l| l.starts_with("a-rather-long-session-name ·"))
            .collect();
        assert!(!status.is_empty(), "{lines:#?}");
        for row in status {
            assert!(row.chars().count() <= 60, "{row:?}");
        }
    }
}

#[test]
fn the_first_screen_says_how_the_session_runs_and_help_names_the_habits() {
    let server = FakeServer::start(vec![]).unwrap();
    let env = TestEnv::new("habits-first-screen");
    std::fs::write(env.cwd.join("AGENTS.md"), "Be brief.\n").unwrap();
    let url = server.url();
    let mut term = env.terminal(&["--base-url", &url, "--model", "gpt-4o-mini"], 100, &[]);
    let within = Duration::from_secs(20);
    term.wait_until(within, "the prompt", crate::common::at_prompt);
    term.type_keys("/model\r");
    term.wait_for_next("/model NAME asks another", within);
    // At the prompt again before typing: an Enter typed ahead, while the
    // line editor is not reading, arrives as a newline (in the note).
    term.wait_until(within, "the prompt", crate::common::at_prompt);
    term.type_keys("/help\r");
    term.wait_for_next("Esc or Ctrl-C cancels", within);
    // Ctrl-D at the prompt, not while the help is still being written.
    term.wait_until(within, "the prompt", crate::common::at_prompt);
    let (ok, screen) = term.finish(within);
    assert!(ok, "{screen}");
    let lines = plain_lines(&screen);
    let session = lines
        .iter()
        .find(|l| l.starts_with("session "))
        .unwrap_or_else(|| panic!("{lines:#?}"));
    for part in [
        "gpt-4o-mini",
        "sandbox",
        "asks before commands and edits",
        "AGENTS.md found",
    ] {
        assert!(session.contains(part), "{part}: {session}");
    }
    assert!(!session.contains(".jsonl"), "no log path: {session}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("--bare starts without memory or skills")),
        "{lines:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("model gpt-4o-mini · window")),
        "{lines:#?}"
    );
    for said in ["@path", "/exit", "Ctrl-J", "Alt+Enter"] {
        assert!(screen.contains(said), "/help names {said}: {screen}");
    }
}
