//! File edits end to end, against the fake model server: `edit_file` and
//! `write_file` refusals (not read, changed on disk, no match, several
//! matches, escapes, no approval), approval by flag, by config and at a
//! terminal (y / a / n), `revolve rewind` in all its forms, what `shell`
//! commands change in a git repository, a crash between the `edit` record
//! and the write, and replay (the diffs, `--check`, and a re-run through
//! `--provider replay:NAME`).

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use revolve_testkit::{FakeReply, FakeServer};
use serde_json::{json, Value};

use crate::common::{kinds, records, request_messages, tool_results, Run, TestEnv};

// ---------------------------------------------------------------------------
// Helpers

/// A fake model server answering `replies` in order.
fn serve(replies: Vec<FakeReply>) -> FakeServer {
    FakeServer::start(replies).expect("start the fake model server")
}

/// A reply calling these tools, each `(id, name, arguments)`.
fn calls(list: &[(&str, &str, Value)]) -> FakeReply {
    FakeReply::ToolCalls {
        text: String::new(),
        calls: list
            .iter()
            .map(|(id, name, args)| ((*id).to_owned(), (*name).to_owned(), args.to_string()))
            .collect(),
        usage: Some((10, list.len() as u64)),
    }
}

fn read(id: &str, path: &str) -> FakeReply {
    calls(&[(id, "read_file", json!({ "path": path }))])
}

fn edit(id: &str, path: &str, old: &str, new: &str) -> FakeReply {
    calls(&[(
        id,
        "edit_file",
        json!({ "path": path, "old_string": old, "new_string": new }),
    )])
}

fn write(id: &str, path: &str, content: &str) -> FakeReply {
    calls(&[(
        id,
        "write_file",
        json!({ "path": path, "content": content }),
    )])
}

fn shell(id: &str, command: &str) -> FakeReply {
    calls(&[(id, "shell", json!({ "command": command }))])
}

fn done() -> FakeReply {
    FakeReply::text("Done.")
}

/// `revolve --base-url URL ARGS`, no input.
fn revolve(env: &TestEnv, server: &FakeServer, args: &[&str]) -> Run {
    let url = server.url();
    let mut all = vec!["--base-url", url.as_str()];
    all.extend_from_slice(args);
    env.run(&all, "")
}

/// [`revolve`], which must succeed.
fn revolve_ok(env: &TestEnv, server: &FakeServer, args: &[&str]) -> Run {
    let run = revolve(env, server, args);
    assert_eq!(run.code, Some(0), "revolve {args:?}: {run:?}");
    run
}

fn put(env: &TestEnv, rel: &str, bytes: &[u8]) {
    std::fs::write(env.cwd.join(rel), bytes).expect("write a test file");
}

fn get(env: &TestEnv, rel: &str) -> Vec<u8> {
    std::fs::read(env.cwd.join(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
}

fn text(env: &TestEnv, rel: &str) -> String {
    String::from_utf8(get(env, rel)).expect("UTF-8")
}

fn exists(env: &TestEnv, rel: &str) -> bool {
    env.cwd.join(rel).symlink_metadata().is_ok()
}

/// The absolute path the log names for `rel`.
fn abs(env: &TestEnv, rel: &str) -> String {
    env.cwd.join(rel).to_string_lossy().into_owned()
}

/// The result of tool call `id` in the only session's log.
fn result(env: &TestEnv, id: &str) -> String {
    let log = records(&env.only_session());
    tool_results(&log)
        .into_iter()
        .find(|(call, _)| call == id)
        .unwrap_or_else(|| panic!("no result for {id}: {:?}", tool_results(&log)))
        .1
}

/// The log's records of this `"type"`.
fn of_kind(env: &TestEnv, kind: &str) -> Vec<Value> {
    records(&env.only_session())
        .into_iter()
        .filter(|r| r["type"] == kind)
        .collect()
}

/// The file of the content store holding `bytes`.
fn blob(env: &TestEnv, bytes: &[u8]) -> PathBuf {
    let hash = revolve_tools::edit::hash(bytes);
    let hex = hash.strip_prefix("sha256:").expect("a sha256 hash");
    env.state.join("task-agent/blobs").join(&hex[..2]).join(hex)
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).expect("stat").permissions().mode() & 0o7777
}

/// `replay --check` on the only session must pass.
fn check_passes(env: &TestEnv) {
    let check = env.run(&["replay", "--check"], "");
    assert_eq!(check.code, Some(0), "{check:?}");
    assert!(check.stdout.contains(", 0 inconsistencies"), "{check:?}");
}

// ---------------------------------------------------------------------------
// 1. Refusals

#[test]
fn a_file_not_read_in_this_session_is_refused_for_both_tools() {
    let env = TestEnv::new("edit-unread");
    put(&env, "a.txt", b"one\n");
    let server = serve(vec![
        edit("call_1", "a.txt", "one", "ONE"),
        write("call_2", "a.txt", "whole\n"),
        done(),
    ]);
    revolve_ok(&env, &server, &["--allow-edits", "-p", "change a.txt"]);
    assert_eq!(
        result(&env, "call_1"),
        "error: edit_file: a.txt has not been read in this session; read it with read_file \
         first, then change it"
    );
    assert_eq!(
        result(&env, "call_2"),
        "error: write_file: a.txt has not been read in this session; read it with read_file \
         first, then change it"
    );
    assert_eq!(text(&env, "a.txt"), "one\n");
    let k = kinds(&records(&env.only_session()));
    assert!(!k.iter().any(|k| k == "edit" || k == "written"), "{k:?}");
}

#[test]
fn a_file_changed_on_disk_since_it_was_read_is_refused_until_read_again() {
    let env = TestEnv::new("edit-stale");
    put(&env, "a.txt", b"one\n");
    let server = serve(vec![
        read("call_1", "a.txt"),
        done(),
        edit("call_2", "a.txt", "one", "ONE"),
        done(),
        read("call_3", "a.txt"),
        edit("call_4", "a.txt", "one", "ONE"),
        done(),
    ]);
    revolve_ok(&env, &server, &["--allow-edits", "-p", "read a.txt"]);
    assert_eq!(of_kind(&env, "seen").len(), 1);

    // Somebody else changes it between the read and the edit.
    put(&env, "a.txt", b"one, and mine\n");
    revolve_ok(&env, &server, &["-c", "--allow-edits", "-p", "change it"]);
    assert_eq!(
        result(&env, "call_2"),
        "error: edit_file: a.txt changed on disk since this session last read or wrote it; \
         read it again before changing it"
    );
    assert_eq!(text(&env, "a.txt"), "one, and mine\n");
    assert!(of_kind(&env, "edit").is_empty());

    // Read again, the edit goes through, over the new content.
    revolve_ok(&env, &server, &["-c", "--allow-edits", "-p", "again"]);
    assert!(
        result(&env, "call_4").starts_with("changed a.txt (+1 -1 lines)"),
        "{}",
        result(&env, "call_4")
    );
    assert_eq!(text(&env, "a.txt"), "ONE, and mine\n");
}

#[test]
fn an_old_string_that_is_not_in_the_file_is_refused() {
    let env = TestEnv::new("edit-absent");
    put(&env, "a.txt", b"one\ntwo\n");
    let server = serve(vec![
        read("call_1", "a.txt"),
        edit("call_2", "a.txt", "three", "THREE"),
        done(),
    ]);
    revolve_ok(&env, &server, &["--allow-edits", "-p", "change it"]);
    assert_eq!(
        result(&env, "call_2"),
        "error: edit_file: old_string is not in a.txt; read the file again and copy the text \
         exactly, whitespace included"
    );
    assert_eq!(text(&env, "a.txt"), "one\ntwo\n");
    assert!(of_kind(&env, "edit").is_empty());
}

#[test]
fn an_old_string_matching_twice_is_refused_naming_the_count_and_lines() {
    let env = TestEnv::new("edit-twice");
    put(&env, "a.txt", b"x = 1\ny = 2\nx = 1\n");
    let server = serve(vec![
        read("call_1", "a.txt"),
        edit("call_2", "a.txt", "x = 1", "x = 3"),
        calls(&[(
            "call_3",
            "edit_file",
            json!({"path": "a.txt", "old_string": "x = 1", "new_string": "x = 3", "replace_all": true}),
        )]),
        done(),
    ]);
    revolve_ok(&env, &server, &["--allow-edits", "-p", "change x"]);
    assert_eq!(
        result(&env, "call_2"),
        "error: edit_file: old_string matches 2 times in a.txt (lines 1, 3); include more of \
         the surrounding text so it matches once, or pass replace_all: true"
    );
    // With replace_all, both change.
    assert!(result(&env, "call_3").starts_with("changed a.txt (+2 -2 lines)"));
    assert_eq!(text(&env, "a.txt"), "x = 3\ny = 2\nx = 3\n");
    assert_eq!(of_kind(&env, "edit").len(), 1);
}

#[test]
fn paths_escaping_the_tree_are_refused_for_both_tools() {
    let env = TestEnv::new("edit-escape");
    let outside = env.root.join("outside.txt");
    std::fs::write(&outside, "secret\n").unwrap();
    std::fs::create_dir(env.root.join("outdir")).unwrap();
    std::os::unix::fs::symlink(&outside, env.cwd.join("link.txt")).unwrap();
    std::os::unix::fs::symlink(env.root.join("outdir"), env.cwd.join("linkdir")).unwrap();
    std::os::unix::fs::symlink(env.root.join("nothere.txt"), env.cwd.join("dangling.txt")).unwrap();
    std::os::unix::fs::symlink("missing.txt", env.cwd.join("inner-dangling.txt")).unwrap();
    let server = serve(vec![
        read("call_1", "link.txt"),
        edit("call_2", "../outside.txt", "secret", "mine"),
        write("call_3", "../outside.txt", "mine\n"),
        write("call_4", "../new-outside.txt", "mine\n"),
        edit("call_5", "link.txt", "secret", "mine"),
        write("call_6", "link.txt", "mine\n"),
        write("call_7", "linkdir/new.txt", "mine\n"),
        write("call_8", "dangling.txt", "mine\n"),
        write("call_9", "inner-dangling.txt", "mine\n"),
        done(),
    ]);
    revolve_ok(&env, &server, &["--allow-edits", "-p", "escape"]);
    for (id, path) in [
        ("call_1", "link.txt"),
        ("call_2", "../outside.txt"),
        ("call_3", "../outside.txt"),
        ("call_4", "../new-outside.txt"),
        ("call_5", "link.txt"),
        ("call_6", "link.txt"),
        ("call_7", "linkdir/new.txt"),
        ("call_8", "dangling.txt"),
    ] {
        assert_eq!(
            result(&env, id),
            format!(
                "error: {path} is outside the working tree and not granted to this session; \
                 ask with request_file_grant"
            ),
            "{id}"
        );
    }
    // A dangling link inside the tree is refused too: writing it would
    // replace the link.
    assert_eq!(
        result(&env, "call_9"),
        "error: inner-dangling.txt is a symlink to missing.txt, which does not exist; write \
         that path instead"
    );
    assert!(!exists(&env, "missing.txt"));
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "secret\n");
    assert!(!env.root.join("new-outside.txt").exists());
    assert!(!env.root.join("outdir/new.txt").exists());
    assert!(!env.root.join("nothere.txt").exists());
    // The links are still links.
    for link in ["link.txt", "linkdir", "dangling.txt", "inner-dangling.txt"] {
        let meta = env.cwd.join(link).symlink_metadata().unwrap();
        assert!(meta.file_type().is_symlink(), "{link}");
    }
    let k = kinds(&records(&env.only_session()));
    assert!(
        !k.iter()
            .any(|k| k == "edit" || k == "written" || k == "seen"),
        "{k:?}"
    );
}

#[test]
fn without_allow_edits_pipe_mode_refuses_naming_the_flag() {
    let env = TestEnv::new("edit-no-flag");
    put(&env, "a.txt", b"one\n");
    let server = serve(vec![
        read("call_1", "a.txt"),
        edit("call_2", "a.txt", "one", "ONE"),
        write("call_3", "b.txt", "new\n"),
        done(),
    ]);
    revolve_ok(&env, &server, &["-p", "change it"]);
    for (id, tool) in [("call_2", "edit_file"), ("call_3", "write_file")] {
        assert_eq!(
            result(&env, id),
            format!(
                "error: {tool}: edits need the user's approval and there is no terminal to ask; \
                 they are allowed with --allow-edits (or allow_edits in config.json)"
            )
        );
    }
    assert_eq!(text(&env, "a.txt"), "one\n");
    assert!(!exists(&env, "b.txt"));
    let k = kinds(&records(&env.only_session()));
    assert!(
        !k.iter()
            .any(|k| k == "edit" || k == "written" || k == "approved"),
        "{k:?}"
    );
}

// ---------------------------------------------------------------------------
// 2. Approval

/// A CRLF file with the executable bit, edited and rewritten with LF text
/// by a model: both edits happen, CRLF and the mode stay.
fn crlf_and_mode_kept(env: &TestEnv, args: &[&str]) {
    put(env, "run.sh", b"#!/bin/sh\r\necho one\r\necho two\r\n");
    put(env, "b.cmd", b"a\r\nb\r\n");
    std::fs::set_permissions(
        env.cwd.join("run.sh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let server = serve(vec![
        calls(&[
            ("call_1", "read_file", json!({"path": "run.sh"})),
            ("call_2", "read_file", json!({"path": "b.cmd"})),
        ]),
        edit("call_3", "run.sh", "echo one\necho two", "echo 1\necho 2"),
        write("call_4", "b.cmd", "c\nd\n"),
        done(),
    ]);
    let mut all = args.to_vec();
    all.extend(["-p", "change them"]);
    revolve_ok(env, &server, &all);
    assert_eq!(get(env, "run.sh"), b"#!/bin/sh\r\necho 1\r\necho 2\r\n");
    assert_eq!(mode(&env.cwd.join("run.sh")), 0o755);
    assert_eq!(get(env, "b.cmd"), b"c\r\nd\r\n");
    let edits = of_kind(env, "edit");
    assert_eq!(edits.len(), 2, "{edits:?}");
    assert_eq!(edits[0]["by"], "edit_file");
    assert_eq!(edits[0]["path"], abs(env, "run.sh"));
    assert_eq!(edits[1]["by"], "write_file");
    assert_eq!(of_kind(env, "written").len(), 2);
    // Allowed up front: nobody was asked, so no answer is logged.
    assert!(of_kind(env, "approved").is_empty());
    // Both contents of each edit are in the content store.
    for bytes in [
        &b"#!/bin/sh\r\necho one\r\necho two\r\n"[..],
        b"#!/bin/sh\r\necho 1\r\necho 2\r\n",
        b"a\r\nb\r\n",
        b"c\r\nd\r\n",
    ] {
        assert_eq!(std::fs::read(blob(env, bytes)).unwrap(), bytes);
    }
}

#[test]
fn allow_edits_edits_keeping_crlf_and_the_executable_bit() {
    let env = TestEnv::new("edit-flag");
    crlf_and_mode_kept(&env, &["--allow-edits"]);
}

#[test]
fn allow_edits_in_config_json_works_the_same() {
    let env = TestEnv::new("edit-config");
    let config = env.home.join(".config/task-agent");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("config.json"), r#"{"allow_edits": true}"#).unwrap();
    crlf_and_mode_kept(&env, &[]);
}

const ASKED: &str = "[y]es, [a]lways this session, [n]o: ";

/// The REPL on a terminal (the tests' pty) against `server`.
fn repl_on_terminal(env: &TestEnv, server: &FakeServer) -> common::Terminal {
    let url = server.url();
    env.terminal(&["--base-url", &url], 100, &[])
}

#[test]
fn at_a_terminal_y_allows_one_edit_and_n_refuses_the_next() {
    let env = TestEnv::new("edit-ask-yn");
    put(&env, "a.txt", b"one\n");
    put(&env, "b.txt", b"two\n");
    let server = serve(vec![
        calls(&[
            ("call_1", "read_file", json!({"path": "a.txt"})),
            ("call_2", "read_file", json!({"path": "b.txt"})),
        ]),
        edit("call_3", "a.txt", "one", "ONE"),
        edit("call_4", "b.txt", "two", "TWO"),
        FakeReply::text("Over to you."),
    ]);
    let mut term = repl_on_terminal(&env, &server);
    let within = Duration::from_secs(10);
    term.wait_for("› ", within);
    term.type_keys("change both\r");
    term.wait_for(&format!("apply this change to a.txt? {ASKED}"), within);
    term.type_keys("y\r");
    term.wait_for(&format!("apply this change to b.txt? {ASKED}"), within);
    term.type_keys("n\r");
    term.wait_for("Over to you.", within);
    term.wait_for_next("› ", within);
    term.type_keys("\x04");
    let (ok, screen) = term.finish(within);
    assert!(ok, "{screen}");
    // The diff was shown before the question.
    let asked = screen.find("apply this change to a.txt?").unwrap();
    assert!(screen[..asked].contains("+ONE"), "{screen}");

    assert_eq!(text(&env, "a.txt"), "ONE\n");
    assert_eq!(text(&env, "b.txt"), "two\n");
    assert!(result(&env, "call_3").starts_with("changed a.txt"));
    assert_eq!(
        result(&env, "call_4"),
        "error: the user refused this change of b.txt; nothing was written. Do not try it \
         again as it is: ask what they want instead."
    );
    let approved = of_kind(&env, "approved");
    let answers: Vec<(&str, &str)> = approved
        .iter()
        .map(|a| (a["call"].as_str().unwrap(), a["answer"].as_str().unwrap()))
        .collect();
    assert_eq!(answers, [("call_3", "yes"), ("call_4", "no")]);
    assert_eq!(approved[1]["path"], abs(&env, "b.txt"));
    // Only the approved one is an edit.
    let edits = of_kind(&env, "edit");
    assert_eq!(edits.len(), 1);
    assert_eq!(edits[0]["call"], "call_3");
    check_passes(&env);
}

#[test]
fn at_a_terminal_a_allows_every_later_edit_of_the_session() {
    let env = TestEnv::new("edit-ask-always");
    put(&env, "a.txt", b"one\n");
    put(&env, "b.txt", b"two\n");
    let server = serve(vec![
        calls(&[
            ("call_1", "read_file", json!({"path": "a.txt"})),
            ("call_2", "read_file", json!({"path": "b.txt"})),
        ]),
        edit("call_3", "a.txt", "one", "ONE"),
        edit("call_4", "b.txt", "two", "TWO"),
        FakeReply::text("Both changed."),
        write("call_5", "c.txt", "three\n"),
        FakeReply::text("Created."),
    ]);
    let mut term = repl_on_terminal(&env, &server);
    let within = Duration::from_secs(10);
    term.wait_for("› ", within);
    term.type_keys("change both\r");
    term.wait_for(&format!("apply this change to a.txt? {ASKED}"), within);
    term.type_keys("a\r");
    term.wait_for("Both changed.", within);
    term.wait_for_next("› ", within);
    term.type_keys("and create c\r");
    term.wait_for("Created.", within);
    term.wait_for_next("› ", within);
    term.type_keys("\x04");
    let (ok, screen) = term.finish(within);
    assert!(ok, "{screen}");
    assert_eq!(
        screen.matches("apply this change to").count(),
        1,
        "{screen}"
    );

    assert_eq!(text(&env, "a.txt"), "ONE\n");
    assert_eq!(text(&env, "b.txt"), "TWO\n");
    assert_eq!(text(&env, "c.txt"), "three\n");
    let approved = of_kind(&env, "approved");
    assert_eq!(approved.len(), 1, "{approved:?}");
    assert_eq!(approved[0]["answer"], "always");
    assert_eq!(approved[0]["call"], "call_3");
    assert_eq!(approved[0]["path"], abs(&env, "a.txt"));
    assert_eq!(of_kind(&env, "edit").len(), 3);
    assert_eq!(of_kind(&env, "written").len(), 3);
    check_passes(&env);
}

// ---------------------------------------------------------------------------
// 3. Rewind

/// One turn (`-p`, `--allow-edits`) that reads and edits `a.txt` (`one` to
/// `ONE`) and creates `new.txt`.
fn edit_and_create(env: &TestEnv) -> FakeServer {
    put(env, "a.txt", b"one\ntwo\n");
    let server = serve(vec![
        read("call_1", "a.txt"),
        edit("call_2", "a.txt", "one", "ONE"),
        write("call_3", "new.txt", "fresh\n"),
        done(),
    ]);
    revolve_ok(env, &server, &["--allow-edits", "-p", "first"]);
    assert_eq!(text(env, "a.txt"), "ONE\ntwo\n");
    assert_eq!(text(env, "new.txt"), "fresh\n");
    server
}

#[test]
fn rewind_restores_what_the_last_turn_edited_and_removes_what_it_created() {
    let env = TestEnv::new("rewind-last");
    edit_and_create(&env);
    let run = env.ok(&["rewind"]);
    assert_eq!(run.stdout, "");
    assert_eq!(
        run.stderr_lines(),
        [
            "rewound 1 turn(s)".to_owned(),
            format!("  restored {}", abs(&env, "a.txt")),
            format!("  removed {} (revolve created it)", abs(&env, "new.txt")),
        ]
    );
    assert_eq!(text(&env, "a.txt"), "one\ntwo\n");
    assert!(!exists(&env, "new.txt"));

    // A record, never a deletion: the turn's records are all still there.
    let log = records(&env.only_session());
    let k = kinds(&log);
    assert_eq!(k.iter().filter(|k| *k == "edit").count(), 2);
    assert_eq!(k.last().unwrap(), "rewound");
    let rewound = log.last().unwrap();
    assert_eq!(rewound["turns"], 1);
    assert_eq!(rewound["conversation"], true);
    assert_eq!(rewound["files"][1]["path"], abs(&env, "new.txt"));
    assert!(rewound["files"][1].get("to").is_none(), "{rewound}");

    // Nothing left to take back in files: a second rewind finds no turn.
    let again = env.run(&["rewind"], "");
    assert_eq!(again.code, Some(1), "{again:?}");
    check_passes(&env);
}

#[test]
fn rewind_turns_2_takes_back_both_turns() {
    let env = TestEnv::new("rewind-two");
    put(&env, "a.txt", b"v1\n");
    let server = serve(vec![
        read("call_1", "a.txt"),
        edit("call_2", "a.txt", "v1", "v2"),
        done(),
        edit("call_3", "a.txt", "v2", "v3"),
        write("call_4", "b.txt", "made in turn 2\n"),
        done(),
        FakeReply::text("Back at the start."),
    ]);
    revolve_ok(&env, &server, &["--allow-edits", "-p", "turn one"]);
    revolve_ok(&env, &server, &["-c", "--allow-edits", "-p", "turn two"]);
    assert_eq!(text(&env, "a.txt"), "v3\n");

    let list = env.ok(&["rewind", "--list"]).stdout;
    assert_eq!(
        list,
        format!(
            "  1  turn two\n       {a} (edit_file)\n       {b} (write_file)\n  2  turn one\n       \
             {a} (edit_file)\n--turns N takes back the N newest (1 is the last)\n",
            a = abs(&env, "a.txt"),
            b = abs(&env, "b.txt"),
        )
    );
    env.ok(&["rewind", "--turns", "2"]);
    assert_eq!(text(&env, "a.txt"), "v1\n");
    assert!(!exists(&env, "b.txt"));
    let rewound = of_kind(&env, "rewound");
    assert_eq!(rewound.len(), 1);
    assert_eq!(rewound[0]["turns"], 2);

    // The conversation goes on from before both turns.
    revolve_ok(&env, &server, &["-c", "-p", "where are we?"]);
    let last = server.requests().last().unwrap().body.clone();
    let said: Vec<String> = request_messages(&last)
        .into_iter()
        .filter(|(role, _)| role == "user")
        .map(|(_, c)| c)
        .collect();
    assert_eq!(said, ["where are we?"]);
    check_passes(&env);
}

/// The user messages of the last request `server` got.
fn last_request_said(server: &FakeServer) -> Vec<String> {
    let last = server.requests().last().expect("a request").body.clone();
    request_messages(&last)
        .into_iter()
        .filter(|(role, _)| role == "user")
        .map(|(_, c)| c)
        .collect()
}

#[test]
fn rewind_files_only_keeps_the_turn_in_the_conversation() {
    let env = TestEnv::new("rewind-files-only");
    let server = edit_and_create(&env);
    let run = env.ok(&["rewind", "--files-only"]);
    assert!(
        run.stderr.starts_with("rewound the files of 1 turn(s)\n"),
        "{run:?}"
    );
    assert_eq!(text(&env, "a.txt"), "one\ntwo\n");
    assert!(!exists(&env, "new.txt"));
    assert_eq!(of_kind(&env, "rewound")[0]["conversation"], false);

    let next = serve(vec![FakeReply::text("Still here.")]);
    revolve_ok(&env, &next, &["-c", "-p", "second"]);
    assert_eq!(last_request_said(&next), ["first", "second"]);
    // The edit's tool result went out again too.
    let body = next.requests()[0].body.clone();
    assert!(body.contains("changed a.txt (+1 -1 lines)"), "{body}");
    drop(server);
    check_passes(&env);
}

#[test]
fn rewind_conversation_only_keeps_the_files() {
    let env = TestEnv::new("rewind-conv-only");
    edit_and_create(&env);
    env.ok(&["rewind", "--conversation-only"]);
    assert_eq!(text(&env, "a.txt"), "ONE\ntwo\n");
    assert_eq!(text(&env, "new.txt"), "fresh\n");
    let rewound = of_kind(&env, "rewound");
    assert_eq!(rewound[0]["conversation"], true);
    assert!(rewound[0].get("files").is_none(), "{:?}", rewound[0]);

    let next = serve(vec![FakeReply::text("Fresh start.")]);
    revolve_ok(&env, &next, &["-c", "-p", "second"]);
    assert_eq!(last_request_said(&next), ["second"]);
    let body = next.requests()[0].body.clone();
    assert!(!body.contains("changed a.txt"), "{body}");
    check_passes(&env);
}

#[test]
fn rewind_undo_brings_files_and_conversation_back_byte_for_byte() {
    let env = TestEnv::new("rewind-undo");
    edit_and_create(&env);
    let after = (get(&env, "a.txt"), get(&env, "new.txt"));
    std::fs::set_permissions(
        env.cwd.join("new.txt"),
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    env.ok(&["rewind"]);
    assert!(!exists(&env, "new.txt"));
    let run = env.ok(&["rewind", "--undo"]);
    assert_eq!(
        run.stderr_lines(),
        [
            "took back the rewind of 1 turn(s)".to_owned(),
            format!("  restored {}", abs(&env, "a.txt")),
            format!("  recreated {}", abs(&env, "new.txt")),
        ]
    );
    assert_eq!((get(&env, "a.txt"), get(&env, "new.txt")), after);
    let rewound = of_kind(&env, "rewound");
    assert_eq!(rewound.len(), 2);
    assert_eq!(rewound[1]["undoes"], 0);

    let next = serve(vec![FakeReply::text("Back.")]);
    revolve_ok(&env, &next, &["-c", "-p", "second"]);
    assert_eq!(last_request_said(&next), ["first", "second"]);

    // And the taking back can itself be rewound: the files go again.
    let list = env.ok(&["rewind", "--list"]).stdout;
    assert!(list.contains("  2  first\n"), "{list}");
    check_passes(&env);
}

#[test]
fn rewind_refuses_a_file_changed_behind_its_back_and_force_keeps_what_it_held() {
    let env = TestEnv::new("rewind-behind");
    edit_and_create(&env);
    put(&env, "a.txt", b"somebody else's work\n");

    let refused = env.run(&["rewind"], "");
    assert_eq!(refused.code, Some(1), "{refused:?}");
    assert!(
        refused.stderr.contains(&abs(&env, "a.txt")),
        "stderr does not name the file: {refused:?}"
    );
    assert!(refused.stderr.contains("--force"), "{refused:?}");
    assert_eq!(text(&env, "a.txt"), "somebody else's work\n");
    assert_eq!(text(&env, "new.txt"), "fresh\n");
    let k = kinds(&records(&env.only_session()));
    assert!(!k.iter().any(|k| k == "rewound"), "{k:?}");

    env.ok(&["rewind", "--force"]);
    assert_eq!(text(&env, "a.txt"), "one\ntwo\n");
    assert!(!exists(&env, "new.txt"));
    let rewound = of_kind(&env, "rewound");
    assert_eq!(rewound.len(), 1);
    assert_eq!(rewound[0]["forced"], true);
    let theirs = b"somebody else's work\n";
    assert_eq!(
        rewound[0]["files"][0]["from"],
        revolve_tools::edit::hash(theirs)
    );
    // What it overwrote is recoverable from the content store.
    assert_eq!(std::fs::read(blob(&env, theirs)).unwrap(), theirs);
    check_passes(&env);
}

#[test]
fn rewind_list_and_json_shapes() {
    let env = TestEnv::new("rewind-list");
    edit_and_create(&env);
    let a = abs(&env, "a.txt");
    let n = abs(&env, "new.txt");
    let list = env.ok(&["rewind", "--list"]);
    assert_eq!(
        list.stdout,
        format!(
            "  1  first\n       {a} (edit_file)\n       {n} (write_file)\n--turns N takes back \
             the N newest (1 is the last)\n"
        )
    );
    let listed: Value = serde_json::from_str(&env.ok(&["rewind", "--list", "--json"]).stdout)
        .expect("--list --json is JSON");
    assert_eq!(
        listed,
        json!([{
            "back": 1,
            "said": "first",
            "files": [format!("{a} (edit_file)"), format!("{n} (write_file)")]
        }])
    );
    // --list changes nothing.
    assert_eq!(text(&env, "a.txt"), "ONE\ntwo\n");
    assert!(of_kind(&env, "rewound").is_empty());

    let done: Value =
        serde_json::from_str(&env.ok(&["rewind", "--json"]).stdout).expect("rewind --json is JSON");
    assert_eq!(done["type"], Value::Null, "the record's body, untagged");
    assert_eq!(done["turns"], 1);
    assert_eq!(done["conversation"], true);
    assert_eq!(
        done["files"],
        json!([
            {"path": a, "from": revolve_tools::edit::hash(b"ONE\ntwo\n"), "to": revolve_tools::edit::hash(b"one\ntwo\n")},
            {"path": n, "from": revolve_tools::edit::hash(b"fresh\n")},
        ])
    );
    // It is what the log holds.
    let mut logged = of_kind(&env, "rewound").remove(0);
    logged.as_object_mut().unwrap().remove("type");
    assert_eq!(done, logged);

    let none = env.ok(&["rewind", "--list"]).stdout;
    // The turn left the conversation: none is left to rewind.
    assert_eq!(none, "no turn to rewind (since the last compaction)\n");
}

#[test]
fn a_rewind_never_deletes_a_file_that_existed_before_the_turn() {
    let env = TestEnv::new("rewind-keeps");
    put(&env, "whole.txt", b"old whole\n");
    put(&env, "empty.txt", b"");
    let server = serve(vec![
        calls(&[
            ("call_1", "read_file", json!({"path": "whole.txt"})),
            ("call_2", "read_file", json!({"path": "empty.txt"})),
        ]),
        write("call_3", "whole.txt", "new whole\n"),
        write("call_4", "empty.txt", "now something\n"),
        write("call_5", "made.txt", "v1\n"),
        done(),
        edit("call_6", "made.txt", "v1", "v2"),
        write("call_7", "empty.txt", ""),
        done(),
    ]);
    revolve_ok(&env, &server, &["--allow-edits", "-p", "turn one"]);
    revolve_ok(&env, &server, &["-c", "--allow-edits", "-p", "turn two"]);
    assert_eq!(text(&env, "made.txt"), "v2\n");
    assert_eq!(text(&env, "empty.txt"), "");

    // Turn two only edited made.txt (made by turn one): it goes back to v1,
    // it is not removed; empty.txt goes back to turn one's content.
    env.ok(&["rewind"]);
    assert_eq!(text(&env, "made.txt"), "v1\n");
    assert_eq!(text(&env, "empty.txt"), "now something\n");

    // Turn one replaced two files that were there before it: they are put
    // back (the empty one as an empty file), and only made.txt goes.
    env.ok(&["rewind"]);
    assert_eq!(text(&env, "whole.txt"), "old whole\n");
    assert!(
        exists(&env, "empty.txt"),
        "a pre-existing empty file was deleted"
    );
    assert_eq!(text(&env, "empty.txt"), "");
    assert!(!exists(&env, "made.txt"));
    check_passes(&env);
}

// ---------------------------------------------------------------------------
// 4. Shell changes

#[test]
fn shell_changes_in_a_git_repository_are_logged_and_rewound() {
    let env = TestEnv::new("shell-git");
    crate::common::require("git");
    assert!(env.git(&["init", "-q"]));
    assert!(env.git(&["config", "user.name", "Test"]));
    assert!(env.git(&["config", "user.email", "test@example.com"]));
    put(&env, "tracked.txt", b"tracked 1\n");
    assert!(env.git(&["add", "tracked.txt"]));
    assert!(env.git(&["commit", "-q", "-m", "start"]));
    put(&env, "untracked.txt", b"untracked 1\n");

    let server = serve(vec![
        shell(
            "call_1",
            "printf 'tracked 2\\n' > tracked.txt; printf 'created\\n' > created.txt; \
             printf 'untracked 2\\n' > untracked.txt",
        ),
        done(),
    ]);
    let run = revolve_ok(&env, &server, &["--allow-shell", "-p", "change things"]);
    assert!(!run.stderr.contains("not tracked"), "{run:?}");
    assert_eq!(text(&env, "tracked.txt"), "tracked 2\n");

    let edits = of_kind(&env, "edit");
    let mut seen: Vec<(String, Option<String>, Option<String>)> = edits
        .iter()
        .map(|e| {
            assert_eq!(e["by"], "shell", "{e}");
            assert_eq!(e["written"], true, "{e}");
            assert_eq!(e["call"], "call_1", "{e}");
            (
                e["path"].as_str().unwrap().to_owned(),
                e["before"].as_str().map(str::to_owned),
                e["after"].as_str().map(str::to_owned),
            )
        })
        .collect();
    seen.sort();
    let h = |b: &[u8]| Some(revolve_tools::edit::hash(b));
    assert_eq!(
        seen,
        [
            (abs(&env, "created.txt"), None, h(b"created\n")),
            (
                abs(&env, "tracked.txt"),
                h(b"tracked 1\n"),
                h(b"tracked 2\n")
            ),
            (
                abs(&env, "untracked.txt"),
                h(b"untracked 1\n"),
                h(b"untracked 2\n")
            ),
        ]
    );
    assert!(of_kind(&env, "written").is_empty(), "written already");
    let list = env.ok(&["rewind", "--list"]).stdout;
    assert!(
        list.contains(&format!("{} (shell)", abs(&env, "tracked.txt"))),
        "{list}"
    );

    env.ok(&["rewind"]);
    assert_eq!(text(&env, "tracked.txt"), "tracked 1\n");
    assert_eq!(text(&env, "untracked.txt"), "untracked 1\n");
    assert!(!exists(&env, "created.txt"));
    check_passes(&env);
}

#[test]
fn outside_git_stderr_says_once_that_shell_changes_are_not_tracked() {
    let env = TestEnv::new("shell-no-git");
    let server = serve(vec![
        shell("call_1", "printf 'x\\n' > made.txt"),
        shell("call_2", "printf 'y\\n' > made.txt"),
        done(),
    ]);
    let run = revolve_ok(&env, &server, &["--allow-shell", "-p", "change things"]);
    let told = format!(
        "revolve: {} is not in a git repository: what shell commands change in it is not \
         tracked, and a rewind cannot take it back (edit_file and write_file are tracked)",
        env.cwd.display()
    );
    let lines = run.stderr_lines();
    assert_eq!(lines.iter().filter(|l| **l == told).count(), 1, "{run:?}");
    assert_eq!(text(&env, "made.txt"), "y\n");
    assert!(of_kind(&env, "edit").is_empty());
}

// ---------------------------------------------------------------------------
// 5. A crash between the record and the write

/// A session whose one edit (`one` to `ONE` in `a.txt`) a crash left
/// logged but without its `written` record (and all after it), the file
/// holding `on_disk`.
fn crashed_edit(env: &TestEnv, on_disk: &[u8]) {
    put(env, "a.txt", b"one\n");
    let server = serve(vec![
        read("call_1", "a.txt"),
        edit("call_2", "a.txt", "one", "ONE"),
        done(),
    ]);
    revolve_ok(env, &server, &["--allow-edits", "-p", "change it"]);
    let log = env.only_session();
    let lines = common::lines(&log);
    let written = records(&log)
        .iter()
        .position(|r| r["type"] == "written")
        .expect("a written record");
    let kept: String = lines[..written].iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&log, kept).unwrap();
    put(env, "a.txt", on_disk);
}

/// The next run picks the session up; its stderr and the `written` record
/// it logged.
fn resume_after_crash(env: &TestEnv) -> (Run, Value) {
    let server = serve(vec![FakeReply::text("Carrying on.")]);
    let run = revolve_ok(env, &server, &["-c", "--allow-edits", "-p", "go on"]);
    let written = of_kind(env, "written");
    assert_eq!(written.len(), 1, "{written:?}");
    (run, written[0].clone())
}

#[test]
fn a_crash_before_the_write_is_reported_at_resume_and_logged_not_written() {
    let env = TestEnv::new("crash-before");
    crashed_edit(&env, b"one\n");
    let (run, written) = resume_after_crash(&env);
    let told = format!(
        "revolve: the last run stopped between logging an edit of {} and writing it; it holds \
         what it held before: the edit is logged as not written",
        abs(&env, "a.txt")
    );
    assert!(run.stderr_lines().contains(&told.as_str()), "{run:?}");
    assert_eq!(text(&env, "a.txt"), "one\n");
    assert_eq!(written["call"], "call_2");
    assert_eq!(written["path"], abs(&env, "a.txt"));
    assert_eq!(written["error"], "revolve stopped before writing it");
    check_passes(&env);
    // Nothing to rewind in files: the edit did not happen.
    let list = env.ok(&["rewind", "--list"]).stdout;
    assert!(!list.contains("(edit_file)"), "{list}");
}

#[test]
fn a_crash_after_the_write_is_logged_as_written_and_can_be_rewound() {
    let env = TestEnv::new("crash-after");
    crashed_edit(&env, b"ONE\n");
    let (run, written) = resume_after_crash(&env);
    let told = format!(
        "revolve: the last run stopped between logging an edit of {} and writing it; it holds \
         the new content: the edit is logged as written",
        abs(&env, "a.txt")
    );
    assert!(run.stderr_lines().contains(&told.as_str()), "{run:?}");
    assert_eq!(written["call"], "call_2");
    assert!(written.get("error").is_none(), "{written}");
    check_passes(&env);
    env.ok(&["rewind", "--turns", "2"]);
    assert_eq!(text(&env, "a.txt"), "one\n");
}

// ---------------------------------------------------------------------------
// 6. Replay

#[test]
fn replay_shows_the_diff_of_each_edit() {
    let env = TestEnv::new("replay-diff");
    edit_and_create(&env);
    let shown = env.ok(&["replay"]).stdout;
    let lines: Vec<&str> = shown.lines().collect();
    let edited = format!("── edited {} by edit_file (+1 -1)", abs(&env, "a.txt"));
    let at = lines
        .iter()
        .position(|l| *l == edited)
        .unwrap_or_else(|| panic!("no {edited:?} in {shown}"));
    assert_eq!(
        lines[at + 1..at + 7],
        [
            "│ --- a/a.txt",
            "│ +++ b/a.txt",
            "│ @@ -1,2 +1,2 @@",
            "│ -one",
            "│ +ONE",
            "│  two"
        ]
    );
    let created = format!("── created {} by write_file (+1 -0)", abs(&env, "new.txt"));
    assert!(lines.contains(&created.as_str()), "{shown}");
    assert!(lines.contains(&"│ +fresh"), "{shown}");
}

#[test]
fn replay_check_passes_on_a_session_with_edits_and_rewinds() {
    let env = TestEnv::new("replay-check");
    edit_and_create(&env);
    env.ok(&["rewind"]);
    env.ok(&["rewind", "--undo"]);
    env.ok(&["rewind", "--files-only"]);
    let check = env.ok(&["replay", "--check"]);
    assert!(
        check
            .stdout
            .ends_with(" records, 0 skipped line(s), 0 inconsistencies\n"),
        "{check:?}"
    );
}

#[test]
fn replay_check_finds_a_broken_chain_of_hashes() {
    let env = TestEnv::new("replay-chain");
    put(&env, "a.txt", b"one\n");
    let server = serve(vec![
        read("call_1", "a.txt"),
        edit("call_2", "a.txt", "one", "two"),
        edit("call_3", "a.txt", "two", "three"),
        done(),
    ]);
    revolve_ok(&env, &server, &["--allow-edits", "-p", "change it twice"]);
    check_passes(&env);
    // The second edit's prior content made to be something the first did
    // not leave.
    let log = env.only_session();
    let two = revolve_tools::edit::hash(b"two\n");
    let other = revolve_tools::edit::hash(b"something else\n");
    let body = std::fs::read_to_string(&log).unwrap();
    let n = body.matches(&format!(r#""before":"{two}""#)).count();
    assert_eq!(n, 1);
    std::fs::write(
        &log,
        body.replace(
            &format!(r#""before":"{two}""#),
            &format!(r#""before":"{other}""#),
        ),
    )
    .unwrap();
    let check = env.run(&["replay", "--check"], "");
    assert_eq!(check.code, Some(1), "{check:?}");
    assert!(check.stdout.contains(", 1 inconsistency\n"), "{check:?}");
}

#[test]
fn a_recorded_session_with_edits_reruns_offline_to_the_same_files() {
    let env = TestEnv::new("replay-rerun");
    let start: &[(&str, &[u8])] = &[("a.txt", b"one\ntwo\n"), ("gone.txt", b"x\n")];
    for (rel, bytes) in start {
        put(&env, rel, bytes);
    }
    let server = serve(vec![
        calls(&[
            ("call_1", "read_file", json!({"path": "a.txt"})),
            ("call_2", "read_file", json!({"path": "gone.txt"})),
        ]),
        edit("call_3", "a.txt", "one", "ONE"),
        write("call_4", "new.txt", "fresh\n"),
        write("call_5", "gone.txt", "y\n"),
        done(),
    ]);
    revolve_ok(
        &env,
        &server,
        &["--name", "rec", "--allow-edits", "-p", "make changes"],
    );
    drop(server);
    let names = ["a.txt", "gone.txt", "new.txt"];
    let recorded: Vec<Vec<u8>> = names.iter().map(|n| get(&env, n)).collect();

    // A fresh copy of the starting tree, then the re-run, offline.
    std::fs::remove_file(env.cwd.join("new.txt")).unwrap();
    for (rel, bytes) in start {
        put(&env, rel, bytes);
    }
    let rerun = env.run(
        &[
            "--name",
            "again",
            "--provider",
            "replay:rec",
            "--allow-edits",
            "-p",
            "make changes",
        ],
        "",
    );
    assert_eq!(rerun.code, Some(0), "{rerun:?}");
    let replayed: Vec<Vec<u8>> = names.iter().map(|n| get(&env, n)).collect();
    assert_eq!(replayed, recorded);
    assert_eq!(recorded[0], b"ONE\ntwo\n");
    // Both sessions logged the same edits.
    let edits = |file: &Path| -> Vec<(String, String)> {
        records(file)
            .into_iter()
            .filter(|r| r["type"] == "edit")
            .map(|r| (r["path"].to_string(), r["after"].to_string()))
            .collect()
    };
    let files = env.session_files();
    assert_eq!(files.len(), 2);
    assert_eq!(edits(&files[0]), edits(&files[1]));
    assert_eq!(edits(&files[0]).len(), 3);
}

#[test]
fn a_rewind_after_a_conversation_only_rewind_knows_revolve_wrote_the_file() {
    let env = TestEnv::new("rewind-after-conv");
    put(&env, "a.txt", b"v1\n");
    let server = serve(vec![
        read("call_1", "a.txt"),
        edit("call_2", "a.txt", "v1", "v2"),
        done(),
        edit("call_3", "a.txt", "v2", "v3"),
        done(),
    ]);
    revolve_ok(&env, &server, &["--allow-edits", "-p", "turn one"]);
    revolve_ok(&env, &server, &["-c", "--allow-edits", "-p", "turn two"]);
    env.ok(&["rewind", "--conversation-only"]);
    assert_eq!(text(&env, "a.txt"), "v3\n");
    // v3 is what revolve last wrote (turn two's edit stayed on disk): not
    // somebody else's work, so rewinding turn one needs no --force.
    let run = env.run(&["rewind"], "");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(text(&env, "a.txt"), "v1\n");
    check_passes(&env);
}

/// A tracked file already modified before the command goes back to what it
/// held then, not to HEAD's, and no git identity is needed for it (the
/// repository gets none; the commit that starts it passes one on the
/// command line).
#[test]
fn a_dirty_tracked_file_is_rewound_to_its_dirty_content() {
    let env = TestEnv::new("shell-git-dirty");
    crate::common::require("git");
    assert!(env.git(&["init", "-q"]));
    put(&env, "tracked.txt", b"committed\n");
    assert!(env.git(&["add", "tracked.txt"]));
    assert!(env.git(&[
        "-c",
        "user.name=T",
        "-c",
        "user.email=t@example.com",
        "commit",
        "-q",
        "-m",
        "start"
    ]));
    put(&env, "tracked.txt", b"dirty before the command\n");

    let server = serve(vec![
        shell("call_1", "printf 'changed\\n' > tracked.txt"),
        done(),
    ]);
    revolve_ok(&env, &server, &["--allow-shell", "-p", "change it"]);
    assert_eq!(text(&env, "tracked.txt"), "changed\n");
    let edits = of_kind(&env, "edit");
    assert_eq!(edits.len(), 1, "{edits:?}");
    assert_eq!(
        edits[0]["before"].as_str(),
        Some(revolve_tools::edit::hash(b"dirty before the command\n").as_str())
    );

    let run = env.run(&["rewind"], "");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(text(&env, "tracked.txt"), "dirty before the command\n");
    let check = env.run(&["replay", "--check"], "");
    assert_eq!(check.code, Some(0), "{check:?}");
}
