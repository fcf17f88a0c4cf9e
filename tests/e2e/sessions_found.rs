//! Sessions that stay findable (issue 32): the REPL ends saying how to come
//! back; a session that never got a message leaves no file and frees its
//! name; `--continue` skips sessions without a turn; `revolve sessions`
//! says how many unnamed ones it left out; `-p` with nothing to answer is a
//! usage error; an unnamed session resumed in the REPL gets an address; a
//! resume without the REPL shows one line of the past.

use std::time::Duration;

use crate::common::{self, TestEnv};

/// A script of replies for the scripted provider.
fn script_file(env: &TestEnv, replies: &[&str]) -> String {
    let path = env.root.join("replies.jsonl");
    let lines: String = replies
        .iter()
        .map(|r| format!("{}\n", serde_json::json!({ "text": r })))
        .collect();
    std::fs::write(&path, lines).unwrap();
    path.to_string_lossy().into_owned()
}

/// Runs revolve on a pseudo-terminal, typing each line once the REPL's
/// prompt shows again; returns what the terminal showed.
fn repl(env: &TestEnv, args: &[&str], lines: &[&str]) -> String {
    let mut term = env.terminal(args, 100, &[]);
    for line in lines {
        term.wait_for_next("\u{203a} ", Duration::from_secs(20));
        term.type_keys(line);
    }
    let (ok, shown) = term.finish(Duration::from_secs(30));
    assert!(ok, "{shown:?}");
    shown
}

#[test]
fn quitting_the_repl_says_how_to_come_back() {
    let env = TestEnv::new("found-hint");
    let script = script_file(&env, &["Hello."]);
    let args = ["--provider", "scripted", "--script", &script];
    let shown = repl(&env, &args, &["hi\r", "/quit\r"]);
    let last = shown
        .lines()
        .rev()
        .map(|l| l.trim_end_matches('\r'))
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    insta::assert_snapshot!(last, @"to come back to this session: revolve -r amber");
    // And it does come back.
    let run = env.run(
        &[
            "--provider",
            "scripted",
            "--script",
            &script,
            "-r",
            "amber",
            "-p",
            "x",
        ],
        "",
    );
    assert_eq!(run.code, Some(1), "the script has no second reply: {run:?}");
    assert!(run.stderr.contains("resumed amber: 1 turn"), "{run:?}");
}

#[test]
fn a_session_without_a_message_leaves_no_file_and_frees_its_name() {
    let env = TestEnv::new("found-empty");
    let script = script_file(&env, &["Hello."]);
    let args = ["--provider", "scripted", "--script", &script];
    let shown = repl(&env, &args, &["/quit\r"]);
    assert!(shown.contains("session amber"), "{shown:?}");
    assert!(
        !shown.contains("revolve -r"),
        "nothing to come back to: {shown:?}"
    );
    assert!(env.session_files().is_empty(), "{:?}", env.session_files());
    // The name is free again.
    let shown = repl(&env, &args, &["hi\r", "/quit\r"]);
    assert!(shown.contains("session amber"), "{shown:?}");
    assert_eq!(env.session_files().len(), 1);
    // A piped run with nothing but a command leaves none either.
    let run = env.run(&args, "/status\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(env.session_files().len(), 1);
}

#[test]
fn continue_skips_a_session_without_a_turn() {
    let env = TestEnv::new("found-continue");
    let script = script_file(&env, &["First.", "Second."]);
    let args = ["--provider", "scripted", "--script", &script];
    let run = env.run(&args, "remember the work\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    let work = env.only_session();
    // An empty session left by an older revolve (or a crash), newer than
    // the work: its header alone.
    let header = common::lines(&work)
        .remove(0)
        .replace("\"id\":\"", "\"id\":\"9");
    let empty = work.with_file_name("99999999-000000-empty.jsonl");
    std::fs::write(&empty, format!("{header}\n")).unwrap();
    let later = std::time::SystemTime::now() + Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(&empty)
        .unwrap()
        .set_modified(later)
        .unwrap();
    let run = env.run(
        &[
            "--continue",
            "--provider",
            "scripted",
            "--script",
            &script,
            "-p",
            "and now?",
        ],
        "",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let kinds = common::kinds(&common::records(&work));
    assert!(
        kinds.contains(&"resumed".to_owned()),
        "the work was resumed: {kinds:?}"
    );
    assert_eq!(
        common::lines(&empty).len(),
        1,
        "the empty one was left alone"
    );
}

#[test]
fn sessions_says_how_many_unnamed_ones_it_left_out() {
    let env = TestEnv::new("found-list");
    let script = script_file(&env, &["One.", "Two.", "Three."]);
    let args = ["--provider", "scripted", "--script", &script];
    for _ in 0..2 {
        assert_eq!(env.run(&args, "hi\n").code, Some(0));
    }
    let mut named = args.to_vec();
    named.extend(["--name", "db"]);
    assert_eq!(env.run(&named, "hi\n").code, Some(0));
    let listed = env.ok(&["sessions"]).stdout;
    assert_eq!(
        listed.lines().last(),
        Some("2 unnamed sessions not shown: revolve sessions --all lists them"),
        "{listed}"
    );
    let all = env.ok(&["sessions", "--all"]).stdout;
    assert_eq!(all.lines().count(), 4, "a heading and three rows: {all}");
    assert!(!all.contains("not shown"), "{all}");
}

#[test]
fn print_with_nothing_to_answer_is_a_usage_error() {
    let env = TestEnv::new("found-print");
    let script = script_file(&env, &["Hello."]);
    let args = ["--provider", "scripted", "--script", &script, "-p"];
    let run = env.run(&args, "");
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(
        run.stderr.contains("-p needs a PROMPT or input on stdin"),
        "{run:?}"
    );
    assert!(run.stdout.is_empty(), "{run:?}");
    assert!(env.session_files().is_empty());
    // With input it answers as before.
    let run = env.run(&args, "hi\n");
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (Some(0), "Hello.\n"),
        "{run:?}"
    );
}

#[test]
fn an_unnamed_session_resumed_in_the_repl_gets_an_address() {
    let env = TestEnv::new("found-address");
    let script = script_file(&env, &["Piped.", "Interactive."]);
    let args = ["--provider", "scripted", "--script", &script];
    assert_eq!(env.run(&args, "hi\n").code, Some(0));
    let file = env.only_session();
    let mut resume = args.to_vec();
    resume.push("--continue");
    let shown = repl(&env, &resume, &["again\r", "/quit\r"]);
    assert!(shown.contains("it is 'amber' now"), "{shown:?}");
    assert!(shown.contains("revolve -r amber"), "{shown:?}");
    let renamed: Vec<_> = common::records(&file)
        .into_iter()
        .filter(|r| r["type"] == "renamed")
        .collect();
    assert_eq!(renamed.len(), 1, "{renamed:?}");
    assert_eq!(
        (&renamed[0]["name"], &renamed[0]["generated"]),
        (&"amber".into(), &true.into())
    );
    // Addressable, and listed though its name is generated: the REPL
    // just told the user to resume it (issue 47 item 24), in `--json` too.
    let listed = env.ok(&["sessions"]).stdout;
    assert!(listed.contains("amber"), "{listed}");
    assert!(!listed.contains("unnamed session not shown"), "{listed}");
    let json: serde_json::Value =
        serde_json::from_str(&env.ok(&["sessions", "--json"]).stdout).unwrap();
    assert_eq!(json[0]["name"], "amber", "{json}");
    let run = env.run(&["replay", "amber", "--check"], "");
    assert_eq!(run.code, Some(0), "{run:?}");
}

#[test]
fn a_resume_without_the_repl_shows_one_line_of_the_past() {
    let env = TestEnv::new("found-summary");
    let script = script_file(&env, &["A long first answer.", "Second."]);
    let args = [
        "--provider",
        "scripted",
        "--script",
        &script,
        "--name",
        "db",
    ];
    assert_eq!(env.run(&args, "first question\n").code, Some(0));
    let run = env.run(
        &[
            "--provider",
            "scripted",
            "--script",
            &script,
            "-r",
            "db",
            "-p",
            "more",
        ],
        "",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(
        run.stderr, "resumed db: 1 turn (revolve replay db shows them)\n",
        "one line, no transcript"
    );
}

#[test]
fn the_repl_attaches_an_at_path_whole_and_says_what_it_could_not() {
    let env = TestEnv::new("found-attach");
    std::fs::write(env.cwd.join("notes.txt"), "the port is 5433\n").unwrap();
    let script = script_file(&env, &["Seen."]);
    let args = ["--provider", "scripted", "--script", &script];
    let shown = repl(
        &env,
        &args,
        &["explain @notes.txt and @missing.rs\r", "/quit\r"],
    );
    assert!(shown.contains("attached notes.txt"), "{shown:?}");
    assert!(shown.contains("not attached: @missing.rs"), "{shown:?}");
    let file = env.only_session();
    let user = common::messages(&common::records(&file))
        .into_iter()
        .find(|(role, _)| role == "user")
        .expect("the user's message")
        .1;
    assert!(
        user.starts_with("explain @notes.txt and @missing.rs\n\n<file path=\"notes.txt\">\n"),
        "{user}"
    );
    assert!(user.contains("the port is 5433"), "{user}");
    assert!(user.ends_with("</file>"), "{user}");
}

#[test]
fn the_status_row_names_the_model() {
    let env = TestEnv::new("found-status");
    let script = script_file(&env, &["Hello."]);
    let args = [
        "--provider",
        "scripted",
        "--script",
        &script,
        "--model",
        "tiny-model",
    ];
    let shown = repl(&env, &args, &["/status\r", "/quit\r"]);
    assert!(shown.contains("amber · tiny-model · 0 turns"), "{shown:?}");
    assert!(
        shown
            .contains("model tiny-model · provider scripted · window 128000 tokens (from default)"),
        "{shown:?}"
    );
    assert!(shown.contains("session file "), "{shown:?}");
}
