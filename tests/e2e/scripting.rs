//! Scripting edges (issue 32): each subcommand's help lists its own flags,
//! not the flags that tune a running session.

use crate::common::TestEnv;

#[test]
fn a_subcommands_help_lists_only_its_own_flags() {
    let env = TestEnv::new("help-own");
    let session_only = [
        "--max-tool-rounds",
        "--max-calls-per-answer",
        "--max-repeated-calls",
        "--spill-result-chars",
        "--window",
    ];
    for sub in ["models", "compact", "replay"] {
        let help = env.ok(&[sub, "--help"]).stdout;
        for flag in session_only {
            assert!(!help.contains(flag), "{sub} --help lists {flag}: {help}");
        }
        assert!(help.contains("--base-url"), "{sub}: {help}");
    }
    // The session's own help keeps them all.
    let help = env.ok(&["--help"]).stdout;
    for flag in session_only {
        assert!(help.contains(flag), "{flag}: {help}");
    }
    // Hidden, not refused: an alias that passes one keeps working.
    let run = env.run(
        &[
            "models",
            "--window",
            "1000",
            "--provider",
            "scripted",
            "--help",
        ],
        "",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
}
