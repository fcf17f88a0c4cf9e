//! `revolve replay`: golden output for a hand-written log, `--check` on
//! damaged logs, and resuming a log a crash left torn.

use std::io::Write;
use std::path::Path;

use revolve_testkit::{FakeReply, FakeServer};

use crate::common::{
    fixture, kinds, lines, messages, pairs, regex_escape, repo, request_messages, TestEnv,
};

/// The hand-written log: three answered turns, a failed one, a resume with a
/// new model, a rename, an interrupted turn with a partial answer, a record
/// of a kind this build does not know, and a torn final line.
const BASIC: &str = "sessions/basic.jsonl";

fn basic() -> String {
    fixture(BASIC).to_string_lossy().into_owned()
}

#[test]
fn fixture_ends_with_a_torn_line() {
    let bytes = std::fs::read(fixture(BASIC)).unwrap();
    assert_ne!(
        bytes.last(),
        Some(&b'\n'),
        "{BASIC} must end without a newline (a torn final line); did an editor add one?"
    );
}

#[test]
fn fixture_transcript() {
    let env = TestEnv::new("fixture-transcript");
    let run = env.ok(&["replay", &basic()]);
    insta::assert_snapshot!("fixture_transcript", run.stdout);
}

/// ARCHITECTURE.md section 3: "A reader skips any line it does not
/// understand and a torn final line, and says how many it skipped". A resume
/// says so on stderr; `replay` (transcript, `--json`, `--requests`) skips
/// the unknown record and the torn line of the fixture in silence.
#[test]
fn replay_says_how_many_lines_it_skipped() {
    let env = TestEnv::new("fixture-skipped");
    for mode in [None, Some("--json"), Some("--requests")] {
        let mut args = vec!["replay".to_owned(), basic()];
        args.extend(mode.map(str::to_owned));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = env.ok(&args);
        assert!(
            run.stderr.contains("skipped 2"),
            "{mode:?} does not say it skipped 2 lines: {run:?}"
        );
    }
}

#[test]
fn fixture_json() {
    let env = TestEnv::new("fixture-json");
    let run = env.ok(&["replay", &basic(), "--json"]);
    let state: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(state["name"], "login-bug");
    assert_eq!(
        (&state["model"], &state["window"]),
        (&"gpt-4o".into(), &64000.into())
    );
    assert_eq!(state["totals"]["turns"], 4);
    insta::assert_snapshot!("fixture_json", run.stdout);
}

#[test]
fn fixture_check() {
    let env = TestEnv::new("fixture-check");
    let run = env.run(&["replay", &basic(), "--check"], "");
    // The unknown record kind is a skipped line besides the torn tail, so
    // the check fails.
    assert_eq!(run.code, Some(1), "{run:?}");
    let shown = format!(
        "exit: {:?}\n--- stdout\n{}--- stderr\n{}",
        run.code, run.stdout, run.stderr
    );
    // It names the fixture: the checkout's path as `[REPO]`.
    let repo = regex_escape(&repo().to_string_lossy());
    insta::with_settings!({filters => [(repo.as_str(), "[REPO]")]}, {
        insta::assert_snapshot!("fixture_check", shown);
    });
}

#[test]
fn fixture_requests() {
    let env = TestEnv::new("fixture-requests");
    let run = env.ok(&["replay", &basic(), "--requests"]);
    // One request before each answer: three answers, one failure, one
    // interruption.
    assert_eq!(run.stdout.lines().count(), 4, "{}", run.stdout);
    let last = run.stdout.lines().last().unwrap();
    assert_eq!(
        request_messages(last).last().unwrap(),
        &("user".to_owned(), "Write the fix.".to_owned())
    );
    insta::assert_snapshot!("fixture_requests", run.stdout);
}

/// A session of two answered turns, made by the binary.
fn two_turns(env: &TestEnv) -> std::path::PathBuf {
    let server = FakeServer::start(vec![
        FakeReply::text("First answer."),
        FakeReply::text("Second answer."),
    ])
    .unwrap();
    let run = env.run(&["--base-url", &server.url()], "one\ntwo\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    env.only_session()
}

fn write_lines(path: &Path, lines: &[String]) {
    std::fs::write(
        path,
        lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
    )
    .unwrap();
}

fn append(path: &Path, text: &str) {
    let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    file.write_all(text.as_bytes()).unwrap();
}

#[test]
fn check_fails_on_garbage_in_the_middle_and_names_the_line() {
    let env = TestEnv::new("garbage");
    let file = two_turns(&env);
    let mut content = lines(&file);
    assert_eq!(content.len(), 8);
    content.insert(4, "this is not JSON".to_owned());
    write_lines(&file, &content);

    let run = env.run(&["replay", "--check"], "");
    assert_eq!(run.code, Some(1), "{run:?}");
    let report: Vec<&str> = run.stdout.lines().collect();
    assert!(
        report[0].ends_with(": 8 records, 1 skipped line(s), 0 inconsistencies"),
        "{run:?}"
    );
    assert!(report[1].starts_with("  line 5: malformed line"), "{run:?}");
    assert_eq!(report.len(), 2, "{run:?}");
    assert_eq!(
        run.stderr,
        format!("revolve: {} does not replay cleanly\n", file.display())
    );

    // The other modes read past the bad line.
    let transcript = env.ok(&["replay"]).stdout;
    assert!(
        transcript.contains("> two\nSecond answer.\n"),
        "{transcript}"
    );
}

#[test]
fn check_fails_on_records_that_do_not_fit() {
    let env = TestEnv::new("inconsistent");
    let file = two_turns(&env);
    let mut content = lines(&file);
    // The first turn's answer and totals again, after the second turn.
    content.push(content[3].clone());
    content.push(content[4].clone());
    write_lines(&file, &content);

    let run = env.run(&["replay", "--check"], "");
    assert_eq!(run.code, Some(1), "{run:?}");
    let report: Vec<&str> = run.stdout.lines().skip(1).collect();
    assert_eq!(
        report,
        [
            "  record 9: an assistant message that answers no request",
            "  record 10: turns went back from 2 to 1",
        ],
        "{run:?}"
    );
    assert!(
        run.stdout
            .lines()
            .next()
            .unwrap()
            .ends_with(": 10 records, 0 skipped line(s), 2 inconsistencies"),
        "{run:?}"
    );
}

/// The log as a crash in the middle of an answer leaves it: the user's
/// message is written, the assistant's line is cut.
fn crash_mid_answer(file: &Path) {
    append(
        file,
        "{\"type\":\"message\",\"at\":\"2026-12-02T10:00:09Z\",\"role\":\"user\",\"content\":\"three\"}\n\
         {\"type\":\"message\",\"at\":\"2026-12-02T10:00:10Z\",\"role\":\"assistant\",\"content\":\"Thr",
    );
}

#[test]
fn check_passes_a_torn_final_line_alone() {
    let env = TestEnv::new("torn");
    let file = two_turns(&env);
    crash_mid_answer(&file);

    let run = env.run(&["replay", "--check"], "");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(
        run.stdout,
        format!(
            "{}: 9 records, 1 skipped line(s), 0 inconsistencies\n  line 10: torn final line\n",
            file.display()
        )
    );
}

#[test]
fn continue_after_a_torn_final_line() {
    let env = TestEnv::new("torn-continue");
    let file = two_turns(&env);
    crash_mid_answer(&file);
    let server = FakeServer::start(vec![FakeReply::text("Third, after the crash.")]).unwrap();

    let run = env.run(&["--base-url", &server.url(), "--continue"], "four\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Third, after the crash.\n");
    assert!(run.stderr.contains("skipped 1 unreadable line"), "{run:?}");
    // The request the crash left open is closed as interrupted; the history
    // goes on from the user's unanswered message.
    assert_eq!(
        request_messages(&server.requests()[0].body),
        pairs(&[
            ("user", "one"),
            ("assistant", "First answer."),
            ("user", "two"),
            ("assistant", "Second answer."),
            ("user", "three"),
            ("user", "four"),
        ])
    );

    // The torn line got its newline; what follows is on lines of its own.
    let content = lines(&file);
    assert!(content[9].ends_with("\"content\":\"Thr"), "{content:?}");
    let after: Vec<serde_json::Value> = content[10..]
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        kinds(&after),
        [
            "interrupted",
            "totals",
            "resumed",
            "message",
            "message",
            "totals"
        ]
    );
    assert_eq!(
        messages(&after),
        pairs(&[("user", "four"), ("assistant", "Third, after the crash.")])
    );

    // Clean except the torn line: nothing else skipped, nothing inconsistent.
    let run = env.run(&["replay", "--check"], "");
    let report: Vec<&str> = run.stdout.lines().collect();
    assert!(
        report[0].ends_with(": 15 records, 1 skipped line(s), 0 inconsistencies"),
        "{run:?}"
    );
    assert!(report[1].starts_with("  line 10: torn line"), "{run:?}");
    assert_eq!(report.len(), 2, "{run:?}");

    // The request sent after the crash is rebuilt byte for byte: the third
    // of those replayed (the second is the one the crash cut).
    let replayed = env.ok(&["replay", "--requests"]).stdout;
    let replayed: Vec<&str> = replayed.lines().collect();
    assert_eq!(replayed.len(), 4);
    assert_eq!(replayed[3], server.requests()[0].body);
}

/// A log whose only damage is a torn line that revolve itself healed on
/// resume passes `replay --check`, as the torn final line did before the
/// resume: torn lines are what crashes leave.
#[test]
fn check_passes_a_healed_torn_line_after_continue() {
    let env = TestEnv::new("torn-healed");
    let file = two_turns(&env);
    crash_mid_answer(&file);
    let server = FakeServer::start(vec![FakeReply::text("Third.")]).unwrap();
    let run = env.run(&["--base-url", &server.url(), "--continue"], "four\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    let run = env.run(&["replay", "--check"], "");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stdout.contains("1 skipped line(s)"), "{run:?}");
}
