//! Issue 27, rewind honesty and reads that must not cost or hang: a rewind
//! whose restore fails says which files and exits 1, and the conversation
//! keeps the turns whose files were not restored (item 10).

use std::path::PathBuf;

use revolve_testkit::{FakeReply, FakeServer};
use serde_json::{json, Value};

use crate::common::{records, request_messages, Run, TestEnv};

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

fn revolve_ok(env: &TestEnv, server: &FakeServer, args: &[&str]) -> Run {
    let url = server.url();
    let mut all = vec!["--base-url", url.as_str()];
    all.extend_from_slice(args);
    let run = env.run(&all, "");
    assert_eq!(run.code, Some(0), "revolve {args:?}: {run:?}");
    run
}

fn abs(env: &TestEnv, rel: &str) -> String {
    env.cwd.join(rel).to_string_lossy().into_owned()
}

fn of_kind(env: &TestEnv, kind: &str) -> Vec<Value> {
    records(&env.only_session())
        .into_iter()
        .filter(|r| r["type"] == kind)
        .collect()
}

/// The file of the content store holding `bytes`.
fn blob(env: &TestEnv, bytes: &[u8]) -> PathBuf {
    let hash = revolve_io::edit::hash(bytes);
    let hex = hash.strip_prefix("sha256:").expect("a sha256 hash");
    env.state.join("task-agent/blobs").join(&hex[..2]).join(hex)
}

/// Item 10: turn one edits `a.txt`, turn two creates `b.txt`; the content
/// `a.txt` held before is then lost from the content store. A rewind of
/// both turns removes `b.txt`, says `a.txt` was not restored, exits 1,
/// logs only what it did, and keeps turn one in the conversation.
#[test]
fn a_rewind_whose_restore_fails_names_the_file_exits_1_and_keeps_its_turn() {
    let env = TestEnv::new("rewind-fails");
    std::fs::write(env.cwd.join("a.txt"), "v1\n").unwrap();
    let server = serve(vec![
        call("call_1", "read_file", json!({"path": "a.txt"})),
        call(
            "call_2",
            "edit_file",
            json!({"path": "a.txt", "old_string": "v1", "new_string": "v2"}),
        ),
        FakeReply::text("Done."),
        call(
            "call_3",
            "write_file",
            json!({"path": "b.txt", "content": "made in turn 2\n"}),
        ),
        FakeReply::text("Done."),
        FakeReply::text("Still here."),
    ]);
    revolve_ok(&env, &server, &["--allow-edits", "-p", "turn one"]);
    revolve_ok(&env, &server, &["-c", "--allow-edits", "-p", "turn two"]);
    std::fs::remove_file(blob(&env, b"v1\n")).expect("the blob of v1 is stored");

    let run = env.run(&["rewind", "--turns", "2"], "");
    assert_eq!(run.code, Some(1), "a failed restore must fail: {run:?}");
    let a = abs(&env, "a.txt");
    assert!(
        run.stderr.contains(&format!("{a}: cannot restore it")),
        "the failed file is named: {}",
        run.stderr
    );
    assert!(
        !run.stderr.contains(&format!("restored {a}")),
        "a file not restored is not claimed: {}",
        run.stderr
    );
    assert_eq!(
        std::fs::read_to_string(env.cwd.join("a.txt")).unwrap(),
        "v2\n"
    );
    assert!(
        !env.cwd.join("b.txt").exists(),
        "b.txt was restored (removed)"
    );

    // The log claims only b.txt, and only turn two left.
    let rewound = of_kind(&env, "rewound");
    assert_eq!(rewound.len(), 1, "{rewound:?}");
    let files: Vec<&str> = rewound[0]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(files, [abs(&env, "b.txt")]);
    assert_eq!(rewound[0]["turns"], 1);
    assert_eq!(rewound[0]["conversation"], true);

    // The conversation goes on with turn one in it.
    revolve_ok(&env, &server, &["-c", "-p", "where are we?"]);
    let last = server.requests().last().unwrap().body.clone();
    let said: Vec<String> = request_messages(&last)
        .into_iter()
        .filter(|(role, _)| role == "user")
        .map(|(_, c)| c)
        .collect();
    assert_eq!(said, ["turn one", "where are we?"]);
}

/// Item 10, the other failure: the folder of a file the rewind removes is
/// made unwritable; the rewind says so, exits 1, and the turn stays.
#[cfg(unix)]
#[test]
fn a_rewind_that_cannot_remove_a_file_says_so_and_keeps_the_turn() {
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new("rewind-locked");
    std::fs::create_dir(env.cwd.join("sub")).unwrap();
    let server = serve(vec![
        call(
            "call_1",
            "write_file",
            json!({"path": "sub/new.txt", "content": "new\n"}),
        ),
        FakeReply::text("Done."),
    ]);
    revolve_ok(&env, &server, &["--allow-edits", "-p", "make it"]);
    let sub = env.cwd.join("sub");
    std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o555)).unwrap();
    if std::fs::write(sub.join("probe"), "").is_ok() {
        // Root ignores the mode: nothing to test here.
        std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o755)).unwrap();
        eprintln!("skipped: running as root");
        return;
    }
    let run = env.run(&["rewind"], "");
    std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(
        run.stderr.contains(&abs(&env, "sub/new.txt")),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("removed "), "{}", run.stderr);
    let rewound = of_kind(&env, "rewound");
    assert_eq!(rewound.len(), 1);
    assert!(rewound[0].get("files").is_none(), "{:?}", rewound[0]);
    assert_eq!(rewound[0]["conversation"], false, "the turn stays");
    // Once the folder can be written again, the rewind goes through.
    env.ok(&["rewind"]);
    assert!(!env.cwd.join("sub/new.txt").exists());
}
