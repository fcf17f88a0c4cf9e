//! Who allows a `shell` command or a grant: the approval state machine. A
//! command runs without asking with `--allow-shell` (or `allow_shell`), or
//! once the user answered "always" (an `approved` record, so a resumed
//! session remembers it). Otherwise a user at a terminal is asked (y, a, n)
//! and the answer is logged; without a terminal the command is refused, and
//! the user told which flag allows it.
//!
//! A `request_file_grant` is granted without asking when a `--grant` path
//! holds it; otherwise a user at a terminal is asked (y, n; logged as
//! `approved` by `grant`), and without a terminal it is refused. A grant
//! lives in memory only: a resumed session asks again.

use time::OffsetDateTime;

use super::{Command, Phase, Question, Session};
use super::{ToolCommand, UserCommand};
use crate::edit::Answer;
use crate::record::{Approved, Asked, Message, Record};
use crate::rules::Verdict;

/// What becomes of a shell call.
pub(super) enum Gate {
    /// It may run (after these commands: the rule that allowed it logged).
    Run(Vec<Command>),
    /// The user is asked first ([`UserCommand::Ask`]).
    Ask,
    /// It is refused: its result is appended (these commands).
    Refused(Vec<Command>),
}

/// The result of a shell call the user did not allow.
pub(super) const REFUSED: &str = "error: the user did not allow this command";

/// What stderr says when a command is refused for want of a terminal.
pub(super) const NO_TERMINAL: &str =
    "revolve: refused a shell command (pass --allow-shell to allow them without a terminal)";

/// The `tool` of an `approved` record that answers a grant
/// ([`Asked::Grant`]'s word, as the tests read it).
#[cfg(test)]
pub(super) const GRANT: &str = "grant";

/// The result of a grant the user allowed.
pub(super) fn granted(path: &str) -> String {
    format!("granted: {path} (this session may now read it)")
}

/// The result of a grant the user did not allow.
pub(super) fn not_granted(path: &str) -> String {
    format!("error: the user did not grant {path}")
}

impl Session {
    /// Whether the shell call `id` may run `command` now: a permission
    /// rule decides first (a deny one over everything, logged with it),
    /// then the flags, the user's "always", the user.
    pub(super) fn shell_gate(
        &mut self,
        id: &str,
        command: &str,
        allowed: Option<&str>,
        now: OffsetDateTime,
    ) -> Gate {
        match self.settings.rules.decide("shell", command) {
            Verdict::Deny(rule) => {
                let mut cmds = self.append(vec![Record::Approved(Approved {
                    at: now,
                    call: id.to_owned(),
                    path: command.to_owned(),
                    answer: Answer::No,
                    tool: Asked::Shell,
                    rule: Some(rule.clone()),
                })]);
                cmds.extend(self.append(vec![Record::Message(Message::tool(
                    now,
                    id.to_owned(),
                    crate::rules::denied(&rule),
                ))]));
                return Gate::Refused(cmds);
            }
            Verdict::Allow(rule) => {
                return Gate::Run(self.append(vec![Record::Approved(Approved {
                    at: now,
                    call: id.to_owned(),
                    path: command.to_owned(),
                    answer: Answer::Yes,
                    tool: Asked::Shell,
                    rule: Some(rule),
                })]));
            }
            Verdict::Unclear(why) => {
                // Only the user's own yes runs it.
                if allowed == Some(id) {
                    return Gate::Run(Vec::new());
                }
                if self.settings.interactive {
                    return Gate::Ask;
                }
                let mut cmds = vec![Command::show(format!(
                    "revolve: refused a shell command that cannot be checked against the deny rules ({why})"
                ))];
                cmds.extend(self.append(vec![Record::Message(Message::tool(
                    now,
                    id.to_owned(),
                    crate::rules::unclear(&why),
                ))]));
                return Gate::Refused(cmds);
            }
            Verdict::Silent => {}
        }
        if self.settings.allow_shell || self.state.shell_always || allowed == Some(id) {
            return Gate::Run(Vec::new());
        }
        if self.settings.interactive {
            return Gate::Ask;
        }
        let mut cmds = vec![Command::show(NO_TERMINAL.to_owned())];
        cmds.extend(self.append(vec![Record::Message(Message::tool(
            now,
            id.to_owned(),
            REFUSED,
        ))]));
        Gate::Refused(cmds)
    }

    /// Whether the MCP call may run now: a tool not offered gets its
    /// error at once; then the rules, `--allow-mcp`, the user's "always"
    /// for this tool, the user, as for a shell command.
    pub(super) fn mcp_gate(
        &mut self,
        call: &crate::record::ToolCall,
        allowed: Option<&str>,
        now: OffsetDateTime,
    ) -> Gate {
        let id = call.id.clone();
        let result = |s: &mut Session, text: String| {
            s.append(vec![Record::Message(Message::tool(now, id.clone(), text))])
        };
        if !self.state.mcp_tools.iter().any(|t| t.name == call.name) {
            let text = crate::mcp::unknown(&call.name, &self.state.mcp_tools);
            return Gate::Refused(result(self, text));
        }
        let approved = |answer: Answer, rule: Option<String>| {
            Record::Approved(Approved {
                at: now,
                call: call.id.clone(),
                path: String::new(),
                answer,
                tool: call.name.clone().into(),
                rule,
            })
        };
        match self.settings.rules.decide(&call.name, "") {
            Verdict::Deny(rule) => {
                let mut cmds = self.append(vec![approved(Answer::No, Some(rule.clone()))]);
                cmds.extend(result(self, crate::rules::denied(&rule)));
                return Gate::Refused(cmds);
            }
            Verdict::Allow(rule) => {
                return Gate::Run(self.append(vec![approved(Answer::Yes, Some(rule))]));
            }
            Verdict::Silent | Verdict::Unclear(_) => {}
        }
        if self.settings.allow_mcp
            || self.state.mcp_always.contains(&call.name)
            || allowed == Some(call.id.as_str())
        {
            return Gate::Run(Vec::new());
        }
        if self.settings.interactive {
            return Gate::Ask;
        }
        let mut cmds = vec![Command::show(crate::mcp::NO_TERMINAL.to_owned())];
        cmds.extend(result(self, crate::mcp::REFUSED.to_owned()));
        Gate::Refused(cmds)
    }

    /// The command that calls the offered MCP tool of `call`.
    pub(super) fn call_mcp(&self, call: &crate::record::ToolCall) -> Command {
        let (server, tool) = self
            .state
            .mcp_tools
            .iter()
            .find(|t| t.name == call.name)
            .map(|t| (t.server.clone(), t.tool.clone()))
            .unwrap_or_default();
        Command::Tool(ToolCommand::CallMcp {
            id: call.id.clone(),
            server,
            tool,
            arguments: call.arguments.clone(),
            timeout_s: self.settings.mcp_timeout_s,
        })
    }

    /// The `request_file_grant` call `id` asks for `path` (canonical):
    /// granted when a `--grant` path holds it, asked about at a terminal,
    /// refused without one.
    pub(super) fn grant_gate(
        &mut self,
        id: String,
        path: String,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        let up_front = self
            .settings
            .granted
            .iter()
            .any(|g| std::path::Path::new(&path).starts_with(g));
        if up_front {
            return self.grant_result(id, path, true, now);
        }
        if let Verdict::Allow(rule) | Verdict::Deny(rule) =
            self.settings.rules.decide("grant", &path)
        {
            let yes = self.settings.rules.decide("grant", &path) == Verdict::Allow(rule.clone());
            let mut cmds = self.append(vec![Record::Approved(Approved {
                at: now,
                call: id.clone(),
                path: path.clone(),
                answer: if yes { Answer::Yes } else { Answer::No },
                tool: Asked::Grant,
                rule: Some(rule),
            })]);
            cmds.extend(self.grant_result(id, path, yes, now));
            return cmds;
        }
        if self.settings.interactive {
            let reason = self
                .running_call(&id)
                .and_then(|call| match crate::tools::parse(call) {
                    Ok(crate::tools::Tool::RequestFileGrant { reason, .. }) => reason,
                    _ => None,
                });
            self.phase = Phase::Asking(Question::Grant {
                id: id.clone(),
                path: path.clone(),
            });
            return vec![Command::User(UserCommand::AskGrant { id, path, reason })];
        }
        let mut cmds = vec![Command::show(format!(
            "revolve: refused to grant {path} (pass --grant PATH to allow it without a terminal)"
        ))];
        cmds.extend(self.grant_result(id, path, false, now));
        cmds
    }

    /// The grant's result: the path added to the session's grants, or
    /// refused; then the next tool.
    fn grant_result(
        &mut self,
        id: String,
        path: String,
        yes: bool,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        let text = if yes {
            granted(&path)
        } else {
            not_granted(&path)
        };
        if yes {
            self.grants.insert(path);
        }
        self.answer(id, text, now)
    }

    /// The user answered about the shell call or the grant `id`: logged,
    /// then it runs (or is granted) or its refusal is its result.
    pub(super) fn answered(
        &mut self,
        question: Question,
        id: String,
        answer: Answer,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        let checked = match question {
            Question::Run { call } => Some(call),
            Question::Grant { path, .. } => {
                if self.running_call(&id).is_none() {
                    None
                } else {
                    // A grant is this once: "always" means yes.
                    let yes = answer != Answer::No;
                    let answer = if yes { Answer::Yes } else { Answer::No };
                    let mut cmds = self.append(vec![Record::Approved(Approved {
                        at: now,
                        call: id.clone(),
                        path: path.clone(),
                        answer,
                        tool: Asked::Grant,
                        rule: None,
                    })]);
                    cmds.extend(self.grant_result(id, path, yes, now));
                    return cmds;
                }
            }
            Question::Outside { .. } => None,
        };
        let Some((call, checked)) = checked.and_then(|c| Some((self.running_call(&id)?, c))) else {
            return vec![Command::show(format!(
                "ignored an answer for tool call {id}, which is not waiting for one"
            ))];
        };
        let mcp = crate::mcp::is_mcp(&call.name);
        let web = call.name == crate::web::TOOL;
        let (tool, command) = match crate::tools::parse(call) {
            _ if mcp => (call.name.clone().into(), String::new()),
            Ok(crate::tools::Tool::WebFetch { url, .. }) => (
                Asked::Tool(crate::web::TOOL.to_owned()),
                super::fetching::host(&url),
            ),
            Ok(crate::tools::Tool::Shell { command, .. }) => (Asked::Shell, command),
            _ => (Asked::Shell, String::new()),
        };
        let mut cmds = self.append(vec![Record::Approved(Approved {
            at: now,
            call: id.clone(),
            path: command,
            answer,
            tool,
            rule: None,
        })]);
        if answer == Answer::No {
            let refused = if mcp {
                crate::mcp::REFUSED
            } else if web {
                super::fetching::REFUSED
            } else {
                REFUSED
            };
            cmds.extend(self.append(vec![Record::Message(Message::tool(now, id, refused))]));
            cmds.extend(self.next_tool(now));
            return cmds;
        }
        let front = super::phase::Front::checked(checked, true, Vec::new());
        cmds.extend(self.next_tool_from(front, now));
        cmds
    }
}
