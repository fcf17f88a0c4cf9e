//! `--help` of the top level and of every subcommand: each teaches with an
//! example, and each is kept as a snapshot (clap's fixed width: no terminal
//! is asked, so the text does not depend on the one running the tests).

use clap::CommandFactory;
use revolve::cli::Cli;

use crate::common::TestEnv;

/// Every command path: `[]`, `["sessions"]`, `["memory", "history"]`, …
/// (clap's own `help` subcommands left out).
fn paths(cmd: &clap::Command, prefix: &[String], out: &mut Vec<Vec<String>>) {
    out.push(prefix.to_vec());
    for sub in cmd.get_subcommands() {
        if sub.get_name() == "help" {
            continue;
        }
        let mut path = prefix.to_vec();
        path.push(sub.get_name().to_owned());
        paths(sub, &path, out);
    }
}

#[test]
fn every_help_has_an_example_and_a_snapshot() {
    let env = TestEnv::new("help");
    let mut all = Vec::new();
    paths(&Cli::command(), &[], &mut all);
    assert!(all.len() > 10, "{all:?}");
    for path in &all {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let run = env.run(&args, "");
        assert_eq!(run.code, Some(0), "{args:?}: {run:?}");
        assert_eq!(run.stderr, "", "{args:?}");
        let text = &run.stdout;
        assert!(
            text.contains("Example:") || text.contains("Examples:"),
            "no example in {args:?}:\n{text}"
        );
        let name = if path.is_empty() {
            "help_revolve".to_owned()
        } else {
            format!("help_{}", path.join("_"))
        };
        insta::assert_snapshot!(name, text);
    }
}

#[test]
fn short_help_is_a_summary() {
    let env = TestEnv::new("help-short");
    let run = env.ok(&["-h"]);
    assert!(run.stdout.contains("Examples:"), "{run:?}");
    assert!(run.stdout.len() < env.ok(&["--help"]).stdout.len());
}
