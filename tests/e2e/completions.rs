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
        insta::assert_snapshot!(format!("completions_{shell}"), text);
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
