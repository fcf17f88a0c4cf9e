//! What the adversarial audit of issue 21 broke, end to end against the
//! real binary: one test per item, its number first in the test's doc.
//! Each failed (or hung) before its fix.

mod common;

use revolve_io::fake::{FakeReply, FakeServer};

use common::TestEnv;

/// Item 19: `revolve compact NAME` of a session that does not exist says
/// so, even without the API key the compaction would need.
#[test]
fn compact_of_an_unknown_session_says_no_session_before_asking_for_a_key() {
    let env = TestEnv::new("compact-unknown");
    let run = env.run(&["compact", "nonexist"], "");
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(
        run.stderr.starts_with("revolve: no session 'nonexist' in "),
        "{run:?}"
    );
    assert!(!run.stderr.contains("API key"), "{run:?}");
}

/// Item 3: a password in `--base-url` reaches neither stderr, nor the
/// log's `failed` record, nor `config show`.
#[test]
fn a_password_in_the_base_url_is_never_shown_or_logged() {
    let env = TestEnv::new("url-password");
    let server = FakeServer::start(vec![FakeReply::Status {
        code: 500,
        body: "boom".into(),
        retry_after: None,
    }])
    .unwrap();
    let url = server.url().replace("http://", "http://alice:hunter2@");
    let run = env.run(&["--base-url", &url, "-p", "hi"], "");
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(!run.stderr.contains("hunter2"), "{run:?}");
    assert!(
        run.stderr.contains("http://alice:***@127.0.0.1:"),
        "{run:?}"
    );
    let log = std::fs::read_to_string(env.only_session()).unwrap();
    assert!(log.contains("\"type\":\"failed\""), "{log}");
    assert!(!log.contains("hunter2"), "{log}");
    for args in [
        &["config", "show", "--base-url", &url][..],
        &["config", "show", "--json", "--base-url", &url][..],
    ] {
        let shown = env.ok(args);
        assert!(!shown.stdout.contains("hunter2"), "{shown:?}");
        assert!(shown.stdout.contains("alice:***@"), "{shown:?}");
    }
}
