//! Who allows a `shell` command: the approval state machine. A command
//! runs without asking with `--allow-shell` (or `allow_shell`), or once the
//! user answered "always" (an `approved` record, so a resumed session
//! remembers it). Otherwise a user at a terminal is asked (y, a, n) and the
//! answer is logged; without a terminal the command is refused, and the
//! user told which flag allows it.

use time::OffsetDateTime;

use super::{Command, Session};
use crate::edit::Answer;
use crate::record::{Approved, Message, Record};

/// What becomes of a shell call.
pub(super) enum Gate {
    /// It may run.
    Run,
    /// The user is asked first ([`Command::Ask`]).
    Ask,
    /// It is refused: its result is appended (these commands).
    Refused(Vec<Command>),
}

/// The result of a shell call the user did not allow.
pub const REFUSED: &str = "error: the user did not allow this command";

/// What stderr says when a command is refused for want of a terminal.
pub const NO_TERMINAL: &str =
    "revolve: refused a shell command (pass --allow-shell to allow them without a terminal)";

impl Session {
    /// Whether the shell call `id` may run `command` now.
    pub(super) fn shell_gate(&mut self, id: &str, now: OffsetDateTime) -> Gate {
        if self.settings.allow_shell
            || self.state.shell_always
            || self.allowed_call.take_if(|a| a == id).is_some()
        {
            return Gate::Run;
        }
        if self.settings.interactive {
            return Gate::Ask;
        }
        let mut cmds = vec![Command::Show(NO_TERMINAL.to_owned())];
        cmds.extend(self.append(vec![Record::Message(Message::tool(
            now,
            id.to_owned(),
            REFUSED,
        ))]));
        Gate::Refused(cmds)
    }

    /// The user answered about the shell call `id`: logged, then it runs
    /// or its refusal is its result.
    pub(super) fn answered(
        &mut self,
        id: String,
        answer: Answer,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        let Some(call) = self.running_call(&id) else {
            return vec![Command::Show(format!(
                "ignored an answer for tool call {id}, which is not waiting for one"
            ))];
        };
        let command = match crate::tools::parse(&call) {
            Ok(crate::tools::Tool::Shell { command, .. }) => command,
            _ => String::new(),
        };
        let mut cmds = self.append(vec![Record::Approved(Approved {
            at: now,
            call: id.clone(),
            path: command,
            answer,
            tool: "shell".to_owned(),
        })]);
        if answer == Answer::No {
            cmds.extend(self.append(vec![Record::Message(Message::tool(now, id, REFUSED))]));
        } else {
            self.allowed_call = Some(id);
        }
        cmds.extend(self.next_tool(now));
        cmds
    }
}
