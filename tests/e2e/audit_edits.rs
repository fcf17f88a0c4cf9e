//! Issue 27, what an edit puts in its diff and in the file: no API key in
//! what an edit shows (item 1), a key survives the redacted view written
//! back (item 3), bytes that are not UTF-8 are kept (item 11), and the
//! `(+A -R lines)` of an edit counts the whole change (item 14). Each
//! failed before its fix.

use std::time::{Duration, Instant};

use revolve_testkit::{FakeReply, FakeServer};
use serde_json::{json, Value};

use crate::common::{records, tool_results, Run, TestEnv};

/// The key of these runs: long enough to be redacted.
const KEY: &str = "sk-e2e-SECRET-4242";

fn serve(replies: Vec<FakeReply>) -> FakeServer {
    FakeServer::start(replies).expect("start the fake model server")
}

fn call(id: &str, name: &str, args: Value) -> FakeReply {
    FakeReply::ToolCalls {
        text: String::new(),
        calls: vec![(id.to_owned(), name.to_owned(), args.to_string())],
        usage: Some((10, 1)),
    }
}

/// `revolve --base-url URL --allow-edits ARGS`, with [`KEY`] as the API
/// key; it must succeed.
fn revolve_ok(env: &TestEnv, server: &FakeServer, args: &[&str]) -> Run {
    let url = server.url();
    let mut all = vec!["--base-url", url.as_str(), "--allow-edits"];
    all.extend_from_slice(args);
    let run = env.run_env(&all, "", &[("OPENAI_API_KEY", KEY)]);
    assert_eq!(run.code, Some(0), "revolve {args:?}: {run:?}");
    run
}

/// The result the model got for tool call `id` (from the last request).
fn result_of(server: &FakeServer, id: &str) -> String {
    let last = server.requests().last().expect("a request").body.clone();
    let body: Value = serde_json::from_str(&last).unwrap();
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["tool_call_id"] == id)
        .and_then(|m| m["content"].as_str())
        .unwrap_or_else(|| panic!("no result for {id} in {last}"))
        .to_owned()
}

/// Item 1: an API key in the context lines of a file the model edits is
/// `[key]` in what the model gets back from `edit_file` and `write_file`,
/// in the log's `edit` records and on stream-json stdout; the file keeps
/// it.
#[test]
fn an_edit_shows_no_key_to_the_model_the_log_or_stdout() {
    let env = TestEnv::new("edit-no-key");
    let file = env.cwd.join("settings.env");
    std::fs::write(&file, format!("a=1\nkey={KEY}\nb=2\n")).unwrap();
    let server = serve(vec![
        call("c1", "read_file", json!({"path": "settings.env"})),
        call(
            "c2",
            "edit_file",
            json!({"path": "settings.env", "old_string": "b=2", "new_string": "b=3"}),
        ),
        call(
            "c3",
            "write_file",
            json!({"path": "settings.env", "content": "a=0\nkey=[key]\nb=3\n"}),
        ),
        FakeReply::text("Done."),
    ]);
    let run = revolve_ok(
        &env,
        &server,
        &["--output-format", "stream-json", "-p", "change b"],
    );
    let edited = result_of(&server, "c2");
    assert!(
        edited.contains(" key=[key]\n-b=2\n+b=3\n"),
        "the context line is shown redacted: {edited}"
    );
    let written = result_of(&server, "c3");
    assert!(
        written.contains("-a=1\n+a=0\n key=[key]\n"),
        "the context line is shown redacted: {written}"
    );
    for request in server.requests() {
        assert!(!request.body.contains(KEY), "the model got the key");
    }
    let log = std::fs::read_to_string(env.only_session()).unwrap();
    assert!(!log.contains(KEY), "the key is in the log");
    let edits: Vec<Value> = records(&env.only_session())
        .into_iter()
        .filter(|r| r["type"] == "edit")
        .collect();
    assert_eq!(edits.len(), 2, "{edits:?}");
    assert!(
        edits[0]["diff"].as_str().unwrap().contains("key=[key]"),
        "{edits:?}"
    );
    assert!(!run.stdout.contains(KEY), "the key is on stdout");
    assert!(!run.stderr.contains(KEY), "the key is on stderr");
    assert!(run.stdout.contains("key=[key]"), "{}", run.stdout);
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        format!("a=0\nkey={KEY}\nb=3\n"),
        "the file keeps its key"
    );
}

/// Item 3: the model writes back what `read_file` showed it (`[key]` where
/// the file holds the key), with `write_file` and with `edit_file` whose
/// old and new text hold `[key]`: the key stays in the file. A `[key]` the
/// model puts anywhere else (another line, another file) is that text,
/// never the key.
#[test]
fn writing_back_the_redacted_view_keeps_the_key() {
    let env = TestEnv::new("edit-keep-key");
    let file = env.cwd.join(".env");
    std::fs::write(&file, format!("url=http://x\nkey={KEY}\n")).unwrap();
    let server = serve(vec![
        call("c1", "read_file", json!({"path": ".env"})),
        // The view written back whole, another line changed.
        call(
            "c2",
            "write_file",
            json!({"path": ".env", "content": "url=http://y\nkey=[key]\n"}),
        ),
        // The key's own line changed through its [key].
        call(
            "c3",
            "edit_file",
            json!({"path": ".env", "old_string": "key=[key]", "new_string": "api_key=[key]\ncopy=[key]"}),
        ),
        // Another file: [key] is text there.
        call(
            "c4",
            "write_file",
            json!({"path": "leak.txt", "content": "stolen=[key]\n"}),
        ),
        FakeReply::text("Done."),
    ]);
    revolve_ok(&env, &server, &["-p", "tidy the env file"]);
    assert!(result_of(&server, "c2").starts_with("changed .env (+1 -1 lines)"));
    assert!(result_of(&server, "c3").starts_with("changed .env (+2 -1 lines)"));
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        format!("url=http://y\napi_key={KEY}\ncopy=[key]\n"),
        "the key is kept where it was, and copied nowhere"
    );
    assert_eq!(
        std::fs::read_to_string(env.cwd.join("leak.txt")).unwrap(),
        "stolen=[key]\n"
    );
    let log = std::fs::read_to_string(env.only_session()).unwrap();
    assert!(!log.contains(KEY), "the key is in the log");
}

/// Item 11: a Latin-1 file is edited byte-wise: `edit_file` changes the
/// text it names and keeps every other byte; `write_file` of what
/// `read_file` showed (U+FFFD for each byte that is not UTF-8) with one
/// line changed keeps the bytes of the other lines; the diff shows the
/// changed line changed.
#[test]
fn a_latin1_file_keeps_every_byte_the_model_did_not_change() {
    let env = TestEnv::new("edit-latin1");
    let file = env.cwd.join("menu.txt");
    std::fs::write(&file, b"caf\xe9 au lait\nna\xefve\nend\n").unwrap();
    let server = serve(vec![
        call("c1", "read_file", json!({"path": "menu.txt"})),
        call(
            "c2",
            "edit_file",
            json!({"path": "menu.txt", "old_string": "au lait", "new_string": "noir"}),
        ),
        call(
            "c3",
            "write_file",
            json!({"path": "menu.txt", "content": "caf\u{fffd} noir\nna\u{fffd}ve\nfin\n"}),
        ),
        FakeReply::text("Done."),
    ]);
    revolve_ok(&env, &server, &["-p", "edit the menu"]);
    let edited = result_of(&server, "c2");
    assert!(
        edited.starts_with("changed menu.txt (+1 -1 lines)"),
        "{edited}"
    );
    assert!(
        edited.contains("-caf\u{fffd} au lait\n+caf\u{fffd} noir\n"),
        "{edited}"
    );
    let written = result_of(&server, "c3");
    assert!(
        written.starts_with("changed menu.txt (+1 -1 lines)"),
        "only the line the model changed: {written}"
    );
    assert_eq!(
        std::fs::read(&file).unwrap(),
        b"caf\xe9 noir\nna\xefve\nfin\n",
        "every byte the model did not change is kept"
    );
    let results = tool_results(&records(&env.only_session()));
    assert_eq!(results.len(), 3, "{results:?}");
}

/// Item 14: a `replace_all` of 1,000,000 lines says `+1000000 -1000000`,
/// counted from the whole change though the diff is cut; and it takes
/// reasonable time.
#[test]
fn the_line_counts_of_a_huge_edit_are_of_the_whole_change() {
    let env = TestEnv::new("edit-huge-count");
    let file = env.cwd.join("big.txt");
    let text: String = (0..1_000_000).map(|i| format!("line {i}\n")).collect();
    std::fs::write(&file, &text).unwrap();
    let server = serve(vec![
        call("c1", "read_file", json!({"path": "big.txt", "limit": 1})),
        call(
            "c2",
            "edit_file",
            json!({"path": "big.txt", "old_string": "line", "new_string": "row", "replace_all": true}),
        ),
        FakeReply::text("Done."),
    ]);
    let started = Instant::now();
    revolve_ok(&env, &server, &["-p", "rename"]);
    let took = started.elapsed();
    let edited = result_of(&server, "c2");
    assert!(
        edited.starts_with("changed big.txt (+1000000 -1000000 lines)"),
        "{}",
        &edited[..200.min(edited.len())]
    );
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        text.replace("line", "row")
    );
    let edits: Vec<Value> = records(&env.only_session())
        .into_iter()
        .filter(|r| r["type"] == "edit")
        .collect();
    assert!(edits[0]["diff"]
        .as_str()
        .unwrap()
        .ends_with("in the content store]\n"));
    assert_eq!(
        (&edits[0]["added"], &edits[0]["removed"]),
        (&json!(1_000_000), &json!(1_000_000))
    );
    // The transcript of the session counts the same.
    let log = env.only_session();
    let replay = env.ok(&["replay", log.to_str().unwrap()]);
    assert!(
        replay.stdout.contains("by edit_file (+1000000 -1000000)"),
        "{}",
        replay.stdout
    );
    assert!(
        took < Duration::from_secs(60),
        "a replace_all of 1,000,000 lines took {took:?}"
    );
}

/// Item 11, on the path: a file reached through a path that is not UTF-8
/// (here a symlink to `caf\xe9.txt`) is refused, not written as another
/// file whose name has U+FFFD for the byte (the path decoded lossily).
#[test]
fn a_path_that_is_not_utf8_is_refused_not_written_as_another() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let env = TestEnv::new("edit-latin1-path");
    let real = env.cwd.join(OsStr::from_bytes(b"caf\xe9.txt"));
    std::fs::write(&real, "old\n").unwrap();
    std::os::unix::fs::symlink(&real, env.cwd.join("menu.txt")).unwrap();
    let server = serve(vec![
        call("c1", "read_file", json!({"path": "menu.txt"})),
        call(
            "c2",
            "edit_file",
            json!({"path": "menu.txt", "old_string": "old", "new_string": "new"}),
        ),
        FakeReply::text("Done."),
    ]);
    revolve_ok(&env, &server, &["-p", "edit the menu"]);
    let edited = result_of(&server, "c2");
    assert!(
        edited.starts_with("error: menu.txt leads to ") && edited.contains("not UTF-8"),
        "{edited}"
    );
    assert_eq!(std::fs::read_to_string(&real).unwrap(), "old\n");
    let names: Vec<Vec<u8>> = std::fs::read_dir(&env.cwd)
        .unwrap()
        .map(|e| e.unwrap().file_name().as_bytes().to_vec())
        .collect();
    assert_eq!(names.len(), 2, "only the file and the link: {names:?}");
    assert!(
        !names.contains(&"caf\u{fffd}.txt".as_bytes().to_vec()),
        "a file named with U+FFFD was written"
    );
}

/// The same shapes in what shell tracking logs: a byte a command changed
/// where the line looks the same decoded is a changed line, and the
/// `(+A -R)` of a change whose diff is cut counts the whole change.
#[test]
fn a_shell_change_is_diffed_by_bytes_and_counted_whole() {
    let env = TestEnv::new("shell-bytes");
    crate::common::require("git");
    std::fs::write(env.cwd.join("menu.txt"), b"caf\xe9\n").unwrap();
    for args in [
        &["init", "-q"][..],
        &["config", "user.name", "Test"],
        &["config", "user.email", "test@example.com"],
        &["add", "menu.txt"],
        &["commit", "-q", "-m", "start"],
    ] {
        assert!(env.git(args), "git {args:?}");
    }
    let server = serve(vec![
        call(
            "c1",
            "shell",
            json!({"command": "printf 'caf\\350\\n' > menu.txt && seq 1 100000 > big.txt"}),
        ),
        FakeReply::text("Done."),
    ]);
    revolve_ok(&env, &server, &["--allow-shell", "-p", "go"]);
    let edits: Vec<Value> = records(&env.only_session())
        .into_iter()
        .filter(|r| r["type"] == "edit")
        .collect();
    let of = |name: &str| {
        edits
            .iter()
            .find(|e| e["path"].as_str().unwrap().ends_with(name))
            .unwrap_or_else(|| panic!("no edit of {name}: {edits:?}"))
    };
    let menu = of("menu.txt");
    assert!(
        menu["diff"]
            .as_str()
            .unwrap()
            .contains("-caf\u{fffd}\n+caf\u{fffd}\n"),
        "{menu}"
    );
    assert_eq!((&menu["added"], &menu["removed"]), (&json!(1), &json!(1)));
    let big = of("big.txt");
    assert!(big["diff"]
        .as_str()
        .unwrap()
        .ends_with("in the content store]\n"));
    assert_eq!(
        (&big["added"], &big["removed"]),
        (&json!(100_000), &json!(0))
    );
    let log = env.only_session();
    let replay = env.ok(&["replay", log.to_str().unwrap()]);
    assert!(
        replay.stdout.contains("by shell (+100000 -0)"),
        "{}",
        replay.stdout
    );
}
