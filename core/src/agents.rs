//! What a session knows of the work beyond its own loop (issue 43): the
//! background shell commands it started, the children its `task` calls
//! ran, and, for a child, the call it was spawned for and the tools it
//! may use. Folded from the `background`, `delegated` and `spawned`
//! records (see [`crate::record::Background`]); nothing here runs
//! anything.
//!
//! The decisions a child's rights come from are here too: which tools a
//! subagent definition allows ([`allowed`]: read-only by default, never
//! `task`), and whether a call names one of them ([`Agents::refusal`]).

use serde::Serialize;

use crate::record::{Background, BackgroundEvent, Delegated, Spawned};

/// The tools a subagent gets when its definition names none: those that
/// change nothing (a read-only helper).
pub const READ_ONLY_TOOLS: [&str; 5] = ["read_file", "list_dir", "grep", "skill", "agent_info"];

/// The tools no child gets, whatever its definition says: children do
/// not spawn children, nor ask the user for a grant.
pub const NEVER_IN_A_CHILD: [&str; 2] = ["task", "request_file_grant"];

/// A background command as the log tells it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Shell {
    /// Its id (`bg1`, …).
    pub id: String,
    /// The command line.
    pub command: String,
    /// How it ended, once it did.
    pub ended: Option<String>,
}

/// The session's background commands and children, and its own link to
/// a parent.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Agents {
    /// Set in a child: the parent's call and the tools it offers.
    pub spawned: Option<Spawned>,
    /// The children that ran, in the order they ended.
    pub delegated: Vec<Delegated>,
    /// The background commands, in the order they started.
    pub shells: Vec<Shell>,
    /// The subagent definitions a `task` call may name, as the last
    /// `context` record listed them.
    pub subagents: Vec<String>,
}

impl Agents {
    /// Nothing beyond the session's own loop happened.
    pub fn is_empty(&self) -> bool {
        self == &Agents::default()
    }

    /// Folds one `background` record; the id of a command that ended
    /// without having started, when it did.
    pub(crate) fn apply_background(&mut self, r: &Background) -> Option<String> {
        match &r.event {
            BackgroundEvent::Started { command, .. } => {
                self.shells.push(Shell {
                    id: r.id.clone(),
                    command: command.clone(),
                    ended: None,
                });
                None
            }
            BackgroundEvent::Read { .. } => None,
            BackgroundEvent::Ended { status } => {
                match self.shells.iter_mut().rev().find(|s| s.id == r.id) {
                    Some(shell) => {
                        shell.ended = Some(status.clone());
                        None
                    }
                    None => Some(r.id.clone()),
                }
            }
        }
    }

    /// Folds one `delegated` record; its requests, tokens and cost roll
    /// into `totals` (the parent's), so `--max-cost` counts them.
    pub(crate) fn apply_delegated(&mut self, r: &Delegated, totals: &mut crate::record::Totals) {
        totals.requests = totals.requests.saturating_add(r.requests);
        totals.tokens_in = totals.tokens_in.saturating_add(r.tokens_in);
        totals.tokens_out = totals.tokens_out.saturating_add(r.tokens_out);
        totals.cost = totals.cost.saturating_add(r.cost);
        self.delegated.push(r.clone());
    }

    /// Folds one `spawned` record; whether one came before it.
    pub(crate) fn apply_spawned(&mut self, r: &Spawned) -> bool {
        let again = self.spawned.is_some();
        self.spawned = Some(r.clone());
        again
    }

    /// The built-in tools this session's next request offers, by name, of
    /// `known` (every built-in tool, in order): a child's are its
    /// `spawned` record's. Of them, `task` only while subagent definitions
    /// are listed, `shell_output` and `shell_kill` only while a background
    /// command runs (see docs/subagents.md and docs/shells.md).
    pub fn offered(&self, known: &[&str]) -> Vec<String> {
        let running = self.running_shells().next().is_some();
        let all = match &self.spawned {
            Some(s) => s.tools.clone(),
            None => known.iter().map(|n| (*n).to_owned()).collect(),
        };
        all.into_iter()
            .filter(|name| match name.as_str() {
                "task" => !self.subagents.is_empty(),
                "shell_output" | "shell_kill" => running,
                _ => true,
            })
            .collect()
    }

    /// Why a call of the built-in tool `name` is refused in this session,
    /// if it is: a child calls only the tools it was given.
    pub fn refusal(&self, name: &str) -> Option<String> {
        let spawned = self.spawned.as_ref()?;
        if spawned.tools.iter().any(|t| t == name) {
            return None;
        }
        Some(format!(
            "error: {name} is not among this subagent's tools ({}); do without it, or say in \
             your answer what the parent should do",
            spawned.tools.join(", ")
        ))
    }

    /// The commands still running as the log tells it.
    pub fn running_shells(&self) -> impl Iterator<Item = &Shell> {
        self.shells.iter().filter(|s| s.ended.is_none())
    }

    /// What the children cost together: requests, tokens in, tokens out,
    /// nano-dollars.
    pub fn children_totals(&self) -> (u64, u64, u64, u64) {
        self.delegated.iter().fold((0, 0, 0, 0), |(r, i, o, c), d| {
            (
                r.saturating_add(d.requests),
                i.saturating_add(d.tokens_in),
                o.saturating_add(d.tokens_out),
                c.saturating_add(d.cost),
            )
        })
    }
}

/// The built-in tools a subagent definition's `tools` list allows: the
/// names it gives that exist, less [`NEVER_IN_A_CHILD`]; none given:
/// [`READ_ONLY_TOOLS`]. `known` is every built-in tool's name. Names it
/// does not know come back apart, for a note.
pub fn allowed(listed: Option<&[String]>, known: &[&str]) -> (Vec<String>, Vec<String>) {
    let Some(listed) = listed else {
        return (
            READ_ONLY_TOOLS.iter().map(|t| (*t).to_owned()).collect(),
            Vec::new(),
        );
    };
    let mut tools = Vec::new();
    let mut unknown = Vec::new();
    for name in listed {
        let name = tool_name(name);
        if NEVER_IN_A_CHILD.contains(&name.as_str()) {
            continue;
        }
        if known.contains(&name.as_str()) {
            if !tools.contains(&name) {
                tools.push(name);
            }
        } else {
            unknown.push(name);
        }
    }
    (tools, unknown)
}

/// A tool name as a definition may write it: revolve's own, or Claude
/// Code's (`Read`, `Grep`, `Glob`, `Bash`, `Edit`, `Write`, `LS`).
fn tool_name(name: &str) -> String {
    match name.trim() {
        "Read" => "read_file",
        "Grep" | "Glob" => "grep",
        "LS" => "list_dir",
        "Bash" => "shell",
        "Edit" | "MultiEdit" => "edit_file",
        "Write" => "write_file",
        other => other,
    }
    .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    const KNOWN: [&str; 7] = [
        "read_file",
        "list_dir",
        "grep",
        "shell",
        "edit_file",
        "write_file",
        "task",
    ];

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_definition_without_tools_is_read_only_and_no_child_gets_task() {
        let (tools, unknown) = allowed(None, &KNOWN);
        assert_eq!(tools, names(&READ_ONLY_TOOLS));
        assert!(unknown.is_empty());
        let listed = names(&["Read", "Bash", "task", "edit_file", "frobnicate", "Read"]);
        let (tools, unknown) = allowed(Some(&listed), &KNOWN);
        assert_eq!(tools, names(&["read_file", "shell", "edit_file"]));
        assert_eq!(unknown, names(&["frobnicate"]));
    }

    #[test]
    fn a_child_refuses_what_it_was_not_given_and_a_session_refuses_nothing() {
        let mut agents = Agents::default();
        assert_eq!(agents.refusal("write_file"), None);
        assert_eq!(agents.offered(&KNOWN), names(&KNOWN[..6]), "no task");
        let spawned = Spawned {
            at: datetime!(2026-12-06 11:00 UTC),
            parent: "p".into(),
            call: "c1".into(),
            subagent: None,
            tools: names(&["read_file", "grep"]),
        };
        assert!(!agents.apply_spawned(&spawned));
        assert_eq!(agents.offered(&KNOWN), names(&["read_file", "grep"]));
        assert_eq!(agents.refusal("grep"), None);
        let refused = agents.refusal("write_file").unwrap();
        assert!(
            refused.starts_with("error: write_file is not among"),
            "{refused}"
        );
    }

    #[test]
    fn task_is_offered_with_definitions_and_shell_output_while_a_command_runs() {
        let known = ["read_file", "shell", "shell_output", "shell_kill", "task"];
        let mut agents = Agents::default();
        assert_eq!(agents.offered(&known), names(&["read_file", "shell"]));
        agents.subagents = names(&["reviewer"]);
        assert_eq!(
            agents.offered(&known),
            names(&["read_file", "shell", "task"])
        );
        let started = Background {
            at: datetime!(2026-12-06 11:00 UTC),
            call: "c1".into(),
            id: "bg1".into(),
            event: BackgroundEvent::Started {
                command: "sleep 9".into(),
                file: String::new(),
            },
        };
        agents.apply_background(&started);
        assert_eq!(agents.offered(&known), names(&known));
        let ended = Background {
            event: BackgroundEvent::Ended {
                status: "exited 0".into(),
            },
            ..started
        };
        agents.apply_background(&ended);
        agents.subagents.clear();
        assert_eq!(agents.offered(&known), names(&["read_file", "shell"]));
    }

    #[test]
    fn background_commands_start_and_end_and_children_add_up() {
        let at = datetime!(2026-12-06 11:00 UTC);
        let mut agents = Agents::default();
        let started = Background {
            at,
            call: "c1".into(),
            id: "bg1".into(),
            event: BackgroundEvent::Started {
                command: "sleep 9".into(),
                file: String::new(),
            },
        };
        assert_eq!(agents.apply_background(&started), None);
        assert_eq!(agents.running_shells().count(), 1);
        let ended = Background {
            event: BackgroundEvent::Ended {
                status: "killed".into(),
            },
            ..started.clone()
        };
        assert_eq!(agents.apply_background(&ended), None);
        assert_eq!(agents.running_shells().count(), 0);
        let stray = Background {
            id: "bg9".into(),
            ..ended
        };
        assert!(agents.apply_background(&stray).is_some());
        let mut totals = crate::record::Totals {
            requests: 1,
            tokens_in: 1,
            ..Default::default()
        };
        for n in 1..=2 {
            let d = Delegated {
                at,
                call: format!("c{n}"),
                child: format!("k{n}"),
                log: String::new(),
                description: String::new(),
                subagent: None,
                requests: n,
                tokens_in: 10 * n,
                tokens_out: n,
                cost: 5,
            };
            agents.apply_delegated(&d, &mut totals);
        }
        assert_eq!(agents.children_totals(), (3, 30, 3, 10));
        assert_eq!(
            (
                totals.requests,
                totals.tokens_in,
                totals.tokens_out,
                totals.cost
            ),
            (4, 31, 3, 10),
            "they roll into the parent's totals"
        );
    }
}
