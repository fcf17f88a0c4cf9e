//! What the adversarial audit of issue 21 broke, end to end against the
//! real binary: one test per item, its number first in the test's doc.
//! Each failed (or hung) before its fix.

mod common;

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
