//! `revolve completions bash|zsh|fish`: each generates a script that names
//! every subcommand and flag.

use clap::CommandFactory;
use revolve::cli::Cli;

use crate::common::TestEnv;

/// The script for `shell`, which must generate.
fn script(env: &TestEnv, shell: &str) -> String {
    let run = env.run(&["completions", shell], "");
    assert_eq!(run.code, Some(0), "{shell}: {run:?}");
    assert_eq!(run.stderr, "", "{shell}");
    run.stdout
}

/// What a completion snapshot keeps of a script: its size, a checksum of
/// the whole, and its first lines. The scripts are clap_complete's output
/// (thousands of lines, 57% of all snapshot lines when kept whole); the
/// assertions above check what revolve decides (every subcommand, flag and
/// preset named), the checksum that nothing else moved unseen.
fn digest(script: &str) -> String {
    // FNV-1a, 64 bits: stable across Rust releases, unlike std's hasher.
    let hash = script.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let head: Vec<&str> = script.lines().take(6).collect();
    format!(
        "{} lines, {} bytes, fnv1a64 {hash:016x}\n{}\n",
        script.lines().count(),
        script.len(),
        head.join("\n")
    )
}

#[test]
fn each_shell_gets_a_script_naming_every_subcommand() {
    let env = TestEnv::new("completions");
    let cli = Cli::command();
    let subcommands: Vec<String> = cli
        .get_subcommands()
        .map(|s| s.get_name().to_owned())
        .collect();
    assert!(subcommands.contains(&"completions".to_owned()));
    for shell in ["bash", "zsh", "fish"] {
        let text = script(&env, shell);
        for name in &subcommands {
            assert!(text.contains(name.as_str()), "{shell} misses {name}");
        }
        for flag in ["--continue", "--resume", "--provider", "--json"] {
            assert!(
                text.contains(flag.trim_start_matches('-')),
                "{shell} misses {flag}"
            );
        }
        // The presets complete as values of --provider.
        assert!(text.contains("ollama"), "{shell}");
        insta::assert_snapshot!(format!("completions_{shell}"), digest(&text));
    }
    assert!(
        env.session_files().is_empty() && !env.home.join(".local/state/task-agent").exists(),
        "completions touch no state"
    );
}

#[test]
fn the_bash_script_is_valid_bash() {
    let env = TestEnv::new("completions-bash");
    let path = env.root.join("revolve.bash");
    std::fs::write(&path, script(&env, "bash")).unwrap();
    let status = std::process::Command::new("bash")
        .arg("-n")
        .arg(&path)
        .status()
        .expect("run bash -n");
    assert!(status.success(), "bash -n rejects the script");
}

#[test]
fn an_unknown_shell_is_a_usage_error() {
    let env = TestEnv::new("completions-bad");
    let run = env.run(&["completions", "tcsh"], "");
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(run.stderr.contains("tcsh"), "{run:?}");
}
