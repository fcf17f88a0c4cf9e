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

#[test]
fn version_names_the_commit_and_man_prints_the_manual() {
    let env = TestEnv::new("version-man");
    let version = env.ok(&["--version"]).stdout;
    let inside_git = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(crate::common::repo())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    match inside_git {
        Some(commit) => assert!(version.contains(&format!("({commit}")), "{version}"),
        None => assert!(version.starts_with("revolve "), "{version}"),
    }
    let man = env.ok(&["man"]).stdout;
    assert!(man.contains(".TH revolve 1"), "{man}");
    assert!(man.contains("\\-\\-goal\\-run"), "{man}");
}
