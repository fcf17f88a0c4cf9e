//! What a subagent inherits from its parent's command line: the flags
//! that set where it asks and what it may do (the sandbox, the rules, the
//! allow flags, the limits), and never more. The environment and the
//! config file it shares already (the same `HOME`, the same variables).
//! The model and provider come from the parent's session as it is when
//! the child starts (after a `/model`, the new one), the rest from here.

use crate::cli::Cli;
use crate::error::Error;

/// What this run's children inherit, and whose child it is
/// (`--subagent-of PARENT:CALL`, `--subagent`, `--tools`).
pub(crate) fn agents(cli: &Cli) -> Result<revolve_io::task::Agents, Error> {
    let child = match &cli.subagent_of {
        None => None,
        Some(link) => {
            let Some((parent, call)) = link.split_once(':') else {
                return Err(Error::Usage(format!(
                    "--subagent-of {link}: give PARENT:CALL, the parent session's id and its call"
                )));
            };
            let tools = cli.tools.clone().unwrap_or_default();
            Some(revolve_io::task::ChildOf {
                parent: parent.to_owned(),
                call: call.to_owned(),
                subagent: cli.subagent.clone(),
                tools: tools.into_iter().filter(|t| !t.is_empty()).collect(),
            })
        }
    };
    Ok(revolve_io::task::Agents {
        inherited: inherited(cli),
        child,
    })
}

/// The parent's flags a child gets again, as arguments.
pub(crate) fn inherited(cli: &Cli) -> Vec<String> {
    let mut args = Vec::new();
    let mut flag = |name: &str, on: bool| {
        if on {
            args.push(format!("--{name}"));
        }
    };
    flag("bare", cli.bare);
    flag("allow-shell", cli.allow_shell);
    flag("allow-edits", cli.allow_edits);
    flag("allow-mcp", cli.allow_mcp);
    flag("network", cli.network.as_deref() == Some("on"));
    flag("network=off", cli.network.as_deref() == Some("off"));
    flag("yes", cli.yes);
    flag("no-auto-refine", cli.no_auto_refine);
    let m = &cli.model;
    let mut value = |name: &str, value: Option<String>| {
        if let Some(value) = value {
            args.push(format!("--{name}={value}"));
        }
    };
    value("base-url", m.base_url.clone());
    value("window", m.window.map(|w| w.to_string()));
    value("retries", m.retries.map(|r| r.to_string()));
    value(
        "prune-result-chars",
        m.prune_result_chars.map(|c| c.to_string()),
    );
    value(
        "spill-result-chars",
        m.spill_result_chars.map(|c| c.to_string()),
    );
    value(
        "stall-timeout",
        m.stall_timeout.map(|d| d.as_secs_f64().to_string()),
    );
    value("max-tool-rounds", m.max_tool_rounds.map(|n| n.to_string()));
    value(
        "max-calls-per-answer",
        m.max_calls_per_answer.map(|n| n.to_string()),
    );
    value(
        "max-repeated-calls",
        m.max_repeated_calls.map(|n| n.to_string()),
    );
    value("script", m.script.as_ref().map(|p| p.display().to_string()));
    value("sandbox", cli.sandbox.clone());
    value("effort", cli.effort.clone());
    for rule in &cli.allow {
        value("allow", Some(rule.clone()));
    }
    for rule in &cli.deny {
        value("deny", Some(rule.clone()));
    }
    for dir in &cli.writable {
        value("writable", Some(dir.display().to_string()));
    }
    for path in &cli.grant {
        value("grant", Some(path.display().to_string()));
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn a_child_gets_the_rights_and_limits_given_and_nothing_else() {
        let cli = Cli::try_parse_from([
            "revolve",
            "-p",
            "--allow-shell",
            "--sandbox",
            "read-only",
            "--deny",
            "shell(rm *)",
            "--base-url",
            "http://x/v1",
            "--name",
            "amber",
            "--max-cost",
            "1",
            "hello",
        ])
        .unwrap();
        assert_eq!(
            inherited(&cli),
            [
                "--allow-shell",
                "--base-url=http://x/v1",
                "--sandbox=read-only",
                "--deny=shell(rm *)"
            ]
        );
    }
}
