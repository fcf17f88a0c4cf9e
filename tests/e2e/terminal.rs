//! What reaches a terminal: model text and server errors rendered inert
//! (an escape sequence shows as `^[[31m` instead of acting on the screen),
//! colour only on a terminal and never with NO_COLOR. The terminal is a
//! pseudo-terminal (`common::pty`).

use std::time::Duration;

use revolve_testkit::{FakeReply, FakeServer};

use crate::common::TestEnv;

/// A reply full of escape sequences: colour (CSI), a window title (OSC
/// ended by BEL), and a C1 CSI.
const EVIL: &str = "hello \u{1b}[31mred\u{1b}[0m \u{1b}]0;pwned\u{7} \u{9b}2J done";

/// Writes a one-reply script for the scripted provider.
fn script_file(env: &TestEnv, replies: &[&str]) -> String {
    let path = env.root.join("replies.jsonl");
    let lines: String = replies
        .iter()
        .map(|r| format!("{}\n", serde_json::json!({ "text": r })))
        .collect();
    std::fs::write(&path, lines).unwrap();
    path.to_string_lossy().into_owned()
}

/// Runs revolve with `args` on a pseudo-terminal (stdin, stdout and
/// stderr all on it), typing `input`; returns everything the terminal
/// showed. `vars` are added to the harness's clean environment.
fn on_a_terminal(env: &TestEnv, args: &[&str], input: &str, vars: &[(&str, &str)]) -> String {
    let steps: Vec<(&str, &str)> = input
        .split_inclusive('\n')
        .map(|line| (line, "\u{203a} "))
        .collect();
    typing(env, args, &steps, vars)
}

/// [`on_a_terminal`], typing each `(line, then)` step's line only once the
/// terminal shows `then` after what the previous line made it show (the
/// REPL's prompt `› `, say), as a user would.
fn typing(env: &TestEnv, args: &[&str], steps: &[(&str, &str)], vars: &[(&str, &str)]) -> String {
    let mut term = env.terminal(args, 80, vars);
    for (text, then) in steps {
        term.wait_for_next(then, Duration::from_secs(20));
        // Enter is `\r` on a terminal (`\n` is Ctrl-J, a newline in the line).
        term.type_keys(&text.replace('\n', "\r"));
    }
    let (ok, shown) = term.finish(Duration::from_secs(30));
    assert!(ok, "{shown:?}");
    shown
}

#[test]
fn model_escape_sequences_reach_a_terminal_inert() {
    let env = TestEnv::new("term-print");
    let script = script_file(&env, &[EVIL]);
    let shown = on_a_terminal(
        &env,
        &["--provider", "scripted", "--script", &script, "-p", "hi"],
        "",
        &[],
    );
    assert!(
        shown.contains("hello ^[[31mred^[[0m ^[]0;pwned^G \\u{9b}2J done"),
        "{shown:?}"
    );
    // Nothing else writes escapes in a -p run: none at all reached the
    // terminal.
    for raw in ['\u{1b}', '\u{7}', '\u{9b}'] {
        assert!(!shown.contains(raw), "raw {raw:?} in {shown:?}");
    }
}

#[test]
fn the_repl_renders_model_text_inert_and_dims_only_without_no_color() {
    let env = TestEnv::new("term-repl");
    let script = script_file(&env, &[EVIL, EVIL]);
    let args = ["--provider", "scripted", "--script", &script];
    let shown = on_a_terminal(&env, &args, "hi\n/quit\n", &[]);
    assert!(shown.contains("hello ^[[31mred^[[0m"), "{shown:?}");
    assert!(!shown.contains("\u{1b}[31mred"), "{shown:?}");
    assert!(!shown.contains("\u{1b}]0;pwned"), "{shown:?}");
    // The status line is dimmed on a terminal…
    assert!(shown.contains("\u{1b}[2m"), "{shown:?}");
    // …and never with NO_COLOR.
    let shown = on_a_terminal(
        &env,
        &["--continue", "--provider", "scripted", "--script", &script],
        "again\n/quit\n",
        &[("NO_COLOR", "1")],
    );
    assert!(shown.contains("hello ^[[31mred"), "{shown:?}");
    assert!(!shown.contains("\u{1b}[2m"), "{shown:?}");
}

#[test]
fn a_resumed_conversation_and_server_errors_are_shown_inert() {
    let server = FakeServer::start(vec![
        FakeReply::text(EVIL),
        FakeReply::Status {
            code: 500,
            body: "\u{1b}[2J\u{1b}]0;pwned\u{7}overloaded".into(),
            retry_after: None,
        },
    ])
    .unwrap();
    let env = TestEnv::new("term-resume");
    let url = server.url();
    let run = env.run(&["--base-url", &url], "hi\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    // Piped, the answer goes out as it came (for tools that want it).
    assert!(run.stdout.contains("\u{1b}[31mred"), "{run:?}");

    let run = env.run(&["--base-url", &url, "--continue"], "and?\n");
    assert_eq!(run.code, Some(1), "{run:?}");
    // Piped, a resume shows one line of the past, none of its text
    // (issue 32); the REPL shows it again, inert (see above).
    assert!(run.stderr.starts_with("resumed "), "{run:?}");
    assert!(!run.stderr.contains("hello"), "{run:?}");
    assert!(
        run.stderr.contains("^[[2J^[]0;pwned^Goverloaded"),
        "{run:?}"
    );
    for raw in ['\u{1b}', '\u{7}', '\u{9b}'] {
        assert!(!run.stderr.contains(raw), "raw {raw:?} in {:?}", run.stderr);
    }
}

#[test]
fn a_spinner_shows_while_the_repl_waits_and_never_in_pipe_mode() {
    let slow = || {
        FakeReply::Delayed(
            std::time::Duration::from_millis(900),
            Box::new(FakeReply::text("Slow answer.")),
        )
    };
    let server = FakeServer::start(vec![slow(), slow()]).unwrap();
    let env = TestEnv::new("term-spinner");
    let url = server.url();
    let shown = on_a_terminal(&env, &["--base-url", &url], "hi\n/quit\n", &[]);
    assert!(shown.contains("waiting for the model 0."), "{shown:?}");
    // Cleared (carriage return, erase line) before the answer.
    let at = shown.find("Slow answer.").expect("the answer");
    assert!(
        shown[..at].ends_with("\r\u{1b}[K"),
        "not cleared before the text: {shown:?}"
    );
    assert!(!shown[at..].contains("waiting for the model"), "{shown:?}");

    // -p on a terminal is still pipe mode: no spinner.
    let shown = on_a_terminal(&env, &["--base-url", &url, "-p", "hi"], "", &[]);
    assert!(shown.contains("Slow answer."), "{shown:?}");
    assert!(!shown.contains("waiting"), "{shown:?}");
}

/// An answer with a heading, emphasis, a list, a table and a fenced block.
const MARKDOWN: &str = "# Plan\n\nSome **bold** and `code`.\n\n- first\n- second\n\n| name | size |\n|------|-----:|\n| a.rs | 12 |\n| longer.rs | 3 |\n\n```rust\nfn main() {}\n```\nDone.";

/// The screen with each escape shown as `␛`, so a snapshot reads.
fn visible(screen: &str) -> String {
    screen.replace('\u{1b}', "␛").replace('\r', "")
}

#[test]
fn an_answer_renders_as_markdown_on_a_terminal() {
    let env = TestEnv::new("term-markdown");
    let script = script_file(&env, &[MARKDOWN]);
    let args = ["--provider", "scripted", "--script", &script, "-p", "hi"];
    let shown = on_a_terminal(&env, &args, "", &[]);
    let at = shown.find("Plan").expect("the heading");
    let answer = &shown[shown[..at].rfind('\n').map_or(0, |n| n + 1)..];
    insta::assert_snapshot!(visible(answer));
    // Rendered: no raw markers left.
    for raw in ["# Plan", "**bold**", "|------|", "- first"] {
        assert!(!shown.contains(raw), "{raw:?} in {shown:?}");
    }
}

#[test]
fn piped_never_and_no_color_answers_stay_as_they_came() {
    let env = TestEnv::new("term-plain");
    let script = script_file(&env, &[MARKDOWN]);
    let args = ["--provider", "scripted", "--script", &script, "-p", "hi"];
    // Piped: byte for byte the answer (and its final newline), as before.
    let run = env.run(&args, "");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, format!("{MARKDOWN}\n"));
    // --color always colours even a pipe.
    let mut always = args.to_vec();
    always.extend(["--color", "always"]);
    let run = env.run(&always, "");
    assert!(run.stdout.contains("\u{1b}[1m"), "{run:?}");
    assert!(!run.stdout.contains("# Plan"), "{run:?}");
    // On a terminal, --color never and NO_COLOR drop the colour only: the
    // layout stays (issue 47: NO_COLOR is about colour, not layout).
    let mut never = args.to_vec();
    never.extend(["--color", "never"]);
    for (args, vars) in [(&never[..], &[][..]), (&args[..], &[("NO_COLOR", "1")][..])] {
        let shown = on_a_terminal(&env, args, "", vars);
        assert!(!shown.contains('\u{1b}'), "{shown:?}");
        let text = shown.replace("\r\n", "\n");
        assert!(text.contains("Plan\n\nSome bold and code."), "{text:?}");
        assert!(text.contains("• first\n• second"), "{text:?}");
        assert!(text.contains("a.rs      │   12\n"), "{text:?}");
        assert!(!text.contains("# Plan"), "{text:?}");
    }
}

#[test]
fn tab_completes_command_arguments_and_at_paths() {
    let env = TestEnv::new("term-tab");
    std::fs::write(env.cwd.join("notes.txt"), "five\n").unwrap();
    let script = script_file(&env, &["Seen."]);
    let args = ["--provider", "scripted", "--script", &script];
    let mut term = env.terminal(&args, 80, &[]);
    term.wait_for_next("\u{203a} ", Duration::from_secs(20));
    term.type_keys("/goal pa\t");
    term.wait_for_next("use", Duration::from_secs(10));
    // Cleared (Ctrl-U), then a path of the tree.
    term.type_keys("\u{15}read @no\t");
    term.wait_for_next("tes.txt", Duration::from_secs(10));
    term.type_keys("\r");
    term.wait_for_next("Seen.", Duration::from_secs(20));
    term.wait_for_next("\u{203a} ", Duration::from_secs(20));
    term.type_keys("/quit\r");
    let (ok, shown) = term.finish(Duration::from_secs(30));
    assert!(ok, "{shown:?}");
    assert!(shown.contains("attached notes.txt"), "{shown:?}");
}

#[test]
fn a_running_command_shows_its_time_and_last_lines_then_folds_away() {
    let env = TestEnv::new("term-live");
    let command = "for i in 1 2 3 4; do echo step $i; sleep 0.3; done";
    let script = env.root.join("replies.jsonl");
    std::fs::write(
        &script,
        format!(
            "{}\n{}\n",
            serde_json::json!({"text": "", "tool_calls": [{"name": "shell", "arguments": {"command": command}}]}),
            serde_json::json!({"text": "Ran."}),
        ),
    )
    .unwrap();
    let script = script.to_string_lossy().into_owned();
    let args = [
        "--provider",
        "scripted",
        "--script",
        &script,
        "--allow-shell",
        "--sandbox",
        "off",
    ];
    let shown = typing(
        &env,
        &args,
        &[("go\n", "\u{203a} "), ("/quit\n", "\u{203a} ")],
        &[],
    );
    // While it ran: its time and its latest lines, dim.
    assert!(shown.contains("\u{1b}[2m  … running "), "{shown:?}");
    assert!(shown.contains("\u{1b}[2m  │ step 2\u{1b}[0m"), "{shown:?}");
    // Folded away (up over the view, cleared) before the answer.
    let at = shown.find("Ran.").expect("the answer");
    let before = &shown[..at];
    let last_view = before.rfind("running").expect("a view");
    assert!(
        before[last_view..].contains("F\u{1b}[J"),
        "not folded: {shown:?}"
    );

    // Piped: nothing of it.
    let run = env.run(&args, "go\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(!run.stderr.contains("running"), "{run:?}");
    assert_eq!(run.stdout, "Ran.\n");
}

#[test]
fn a_retry_counts_down_on_a_terminal() {
    let server = FakeServer::start(vec![
        FakeReply::Status {
            code: 503,
            body: "busy".into(),
            retry_after: Some(1),
        },
        FakeReply::text("Back."),
    ])
    .unwrap();
    let env = TestEnv::new("term-retry");
    let url = server.url();
    let shown = on_a_terminal(
        &env,
        &["--base-url", &url],
        "hi\n/quit\n",
        &[("REVOLVE_RETRIES", "1")],
    );
    assert!(shown.contains("retrying in 0."), "{shown:?}");
    let at = shown.find("Back.").expect("the answer");
    assert!(!shown[at..].contains("retrying in"), "{shown:?}");
}

#[test]
fn tab_completes_sessions_for_send_and_commands_for_help() {
    let env = TestEnv::new("term-tab-names");
    let skill = env.home.join(".config/task-agent/skills/review");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: review\ndescription: review the diff\n---\nReview it.\n",
    )
    .unwrap();
    let script = script_file(&env, &["Seen.", "Seen."]);
    let args = ["--provider", "scripted", "--script", &script];
    // birch runs, idle in its REPL.
    let mut named = args.to_vec();
    named.extend(["-n", "birch"]);
    let mut birch = env.terminal(&named, 80, &[]);
    birch.wait_for_next("\u{203a} ", Duration::from_secs(20));

    let mut term = env.terminal(&args, 80, &[]);
    term.wait_for_next("\u{203a} ", Duration::from_secs(20));
    // A running session's name, after /send (not this session's own).
    term.type_keys("/send bi\t");
    term.wait_for_next("rch", Duration::from_secs(10));
    term.type_keys("the tests pass\r");
    term.wait_for_next("queued for birch (message 1)", Duration::from_secs(10));
    term.wait_for_next("\u{203a} ", Duration::from_secs(20));
    // A skill's name, after /help.
    term.type_keys("/help rev\t");
    term.wait_for_next("iew", Duration::from_secs(10));
    term.type_keys("\r");
    term.wait_for_next("review the diff (a skill:", Duration::from_secs(10));
    term.wait_for_next("\u{203a} ", Duration::from_secs(20));
    term.type_keys("/quit\r");
    let (ok, shown) = term.finish(Duration::from_secs(30));
    assert!(ok, "{shown:?}");

    // birch took the message and answered it.
    birch.wait_for_next("Seen.", Duration::from_secs(20));
    birch.wait_for_n("\u{203a} ", 2, Duration::from_secs(20));
    birch.type_keys("/quit\r");
    let (ok, shown) = birch.finish(Duration::from_secs(30));
    assert!(ok, "{shown:?}");
    assert!(shown.contains("the tests pass"), "{shown:?}");
}

/// Issue 42, item 17: bidi controls and invisible characters in an answer
/// and in the shell approval question show as `<U+202E>` on a terminal,
/// so a command cannot read as another.
#[test]
fn bidi_and_invisible_characters_show_on_a_terminal() {
    let env = TestEnv::new("term-bidi");
    let path = env.root.join("replies.jsonl");
    let command = "echo safe \u{202e}fr- mr\u{202c}\u{200b}";
    let replies = [
        serde_json::json!({"text": "", "tool_calls": [{"name": "shell", "arguments": {"command": command}}]}),
        serde_json::json!({"text": "look \u{2067}here\u{2069} \u{feff}done"}),
    ];
    let lines: String = replies.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(&path, lines).unwrap();
    let script = path.to_string_lossy().into_owned();
    let shown = typing(
        &env,
        &["--provider", "scripted", "--script", &script],
        &[
            ("go\r", "\u{203a} "),
            ("n", "[n]o: "),
            ("\u{4}", "\u{203a} "),
        ],
        &[],
    );
    assert!(
        shown.contains("run `echo safe <U+202E>fr- mr<U+202C><U+200B>`?"),
        "{shown:?}"
    );
    assert!(
        shown.contains("look <U+2067>here<U+2069> <U+FEFF>done"),
        "{shown:?}"
    );
    for raw in ['\u{202e}', '\u{202c}', '\u{200b}', '\u{2067}', '\u{feff}'] {
        assert!(!shown.contains(raw), "raw {raw:?} in {shown:?}");
    }
}
