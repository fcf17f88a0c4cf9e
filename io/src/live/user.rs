//! The user family: what the user asks (a line, a command) fed to the
//! core as one input each, and the user commands executed: what the user
//! is told, and the questions asked (the answer, or Ctrl-C pressed while
//! asking, queued as the input).

use revolve_core::edit::Answer;
use revolve_core::{Delivery, Input, TurnContext, UserCommand, UserInput};

use super::{inbox_of, Did, Live, Outcome};
use crate::error::Error;
use crate::front::Front;
use crate::{clock, interrupt};

impl<F: Front> Live<F> {
    /// Executes one [`UserCommand`]: the answer to a question, if it is
    /// one. A refusal is kept in `did` for the command that asked.
    pub(super) fn execute_user(&mut self, cmd: UserCommand, did: &mut Did) -> Option<Input> {
        let now = clock::now;
        match cmd {
            UserCommand::Confirm(question) => {
                let yes = self.front.confirm(&question);
                Some(Input::User(UserInput::Confirmed { yes, now: now() }))
            }
            UserCommand::Ask { id, command } => {
                let answer = self.front.ask_shell(&command);
                Some(answered(id, answer))
            }
            UserCommand::AskFetch { id, url, host } => {
                let answer = self.front.ask_fetch(&url, &host);
                Some(answered(id, answer))
            }
            UserCommand::AskGrant { id, path, reason } => {
                let yes = self.front.ask_grant(&path, reason.as_deref());
                let answer = if yes { Answer::Yes } else { Answer::No };
                Some(answered(id, answer))
            }
            UserCommand::AskOutside { id, command } => {
                let yes = self.front.confirm(&format!(
                    "the sandbox seems to have refused `{}`; run it once outside the sandbox? [y]es, [n]o: ",
                    revolve_core::text::inert(&command)
                ));
                Some(Input::User(UserInput::Outside {
                    id,
                    yes,
                    now: now(),
                }))
            }
            UserCommand::Refused(why) => {
                did.refused = Some(why);
                None
            }
            UserCommand::Show(text) => {
                self.front.notice(&text);
                None
            }
        }
    }

    /// `--effort`, `/effort`.
    pub fn set_effort(
        &mut self,
        effort: Option<revolve_core::models::Effort>,
    ) -> Result<Outcome, Error> {
        self.drive(Input::User(UserInput::Effort {
            effort,
            now: clock::now(),
        }))
    }

    /// `/max-cost USD`: the session's cost limit from now on (`None`:
    /// none), for `/cost` and the requests alike.
    pub fn set_max_cost(&mut self, max: Option<u64>) -> Result<Outcome, Error> {
        self.runtime.settings.max_cost = max;
        self.drive(Input::User(UserInput::MaxCost { max }))
    }

    /// `!COMMAND` in the REPL: runs `command` as the `shell` tool runs
    /// one (the session's sandbox, its timeout, Ctrl-C stops it), shows
    /// its output, and the core adds the command and its output to the
    /// conversation as a user message (logged, so replay rebuilds it).
    pub fn ran(&mut self, command: &str) -> Result<Outcome, Error> {
        let tool = revolve_core::tools::Tool::Shell {
            command: command.to_owned(),
            timeout_s: revolve_core::tools::shell_timeout(None),
            background: false,
        };
        let outcome = revolve_tools::run(
            &tool,
            &self.runtime.settings.granted,
            &self.tool_context(),
            &interrupt::pending,
        );
        interrupt::take();
        let shown = revolve_core::text::inert(outcome.output.trim_end());
        self.front.notice(&shown);
        self.drive(Input::User(UserInput::Ran {
            command: command.to_owned(),
            output: outcome.output,
            now: clock::now(),
        }))
    }

    /// `/model NAME`.
    pub fn switch_model(&mut self, model: &str) -> Result<Outcome, Error> {
        self.drive(Input::User(UserInput::Model {
            model: model.to_owned(),
            now: clock::now(),
        }))
    }

    /// Turns plan mode on or off from the next request on (`--plan`, `/plan`).
    pub fn plan(&mut self, on: bool) -> Result<Outcome, Error> {
        self.drive(Input::User(UserInput::Plan {
            on,
            now: clock::now(),
        }))
    }

    /// Lets a turn stopped at the tool-round cap go on with as many rounds again.
    pub fn go_on(&mut self) -> Result<Outcome, Error> {
        let parts = self.prompt_parts();
        let outcome = self.drive(Input::User(UserInput::GoOn {
            parts,
            now: clock::now(),
        }))?;
        self.front.totals(self.session.state().totals());
        Ok(outcome)
    }

    /// Takes the messages waiting in the inbox of an idle REPL: logged as
    /// user messages marked with their origin, then removed from the
    /// inbox, and the model answers them now.
    pub fn take_inbox(&mut self) -> Result<Outcome, Error> {
        let messages = self.waiting();
        if messages.is_empty() {
            return Ok(Outcome::Done);
        }
        let parts = self.prompt_parts();
        let outcome = self.drive(Input::User(UserInput::Inbox {
            messages,
            parts,
            now: clock::now(),
        }));
        // Whatever happened, what the log holds leaves the inbox.
        self.settle_inbox();
        outcome
    }

    /// The messages waiting in the inbox (none without one); what cannot
    /// be read is told and left where it is.
    fn waiting(&mut self) -> Vec<Delivery> {
        let Some(inbox) = &self.inbox else {
            return Vec::new();
        };
        match inbox.waiting() {
            Ok((messages, bad)) => {
                for path in bad {
                    self.front.notice(&format!(
                        "revolve: {} is not a readable message; left where it is",
                        path.display()
                    ));
                }
                messages
            }
            Err(e) => {
                self.front.notice(&format!(
                    "revolve: cannot read the inbox {}: {e}",
                    inbox.dir().display()
                ));
                Vec::new()
            }
        }
    }

    /// A user turn: one [`UserInput::Line`] carrying what it goes out
    /// with, read now (the prompt's parts, the MCP tools offered, messages
    /// delivered meanwhile), the model asked until the turn ends, and the
    /// memory refined afterwards when the core says it is due.
    pub fn turn(&mut self, text: &str) -> Result<Outcome, Error> {
        self.turn_with(text, Vec::new())
    }

    /// [`Live::turn`] with pictures attached (`@path` of an image,
    /// `--image`), made ready by [`Live::attachment`] or
    /// [`Live::image_file`]: they go out with the line, or the core refuses
    /// the line when the model reads none.
    pub fn turn_with(
        &mut self,
        text: &str,
        images: Vec<revolve_core::record::Image>,
    ) -> Result<Outcome, Error> {
        let context = TurnContext {
            parts: self.prompt_parts(),
            mcp_tools: self.mcp_offered(),
            inbox: self.waiting(),
            images,
        };
        let took = !context.inbox.is_empty();
        let outcome = self.drive(Input::User(UserInput::Line {
            text: text.to_owned(),
            context,
            now: clock::now(),
        }));
        if took {
            // Whatever happened, what the log holds leaves the inbox.
            self.settle_inbox();
        }
        let outcome = outcome?;
        self.front.totals(self.session.state().totals());
        if outcome == Outcome::Done {
            // After 25 turns or a compaction, as the core decides.
            self.refine_if_due()?;
        }
        Ok(outcome)
    }

    /// The session started (`startup`) or resumed (`resume`): its
    /// `SessionStart` hooks run, as the core decides.
    pub fn start_hooks(&mut self, source: &str) -> Result<Outcome, Error> {
        // No clock is read: a start with no hook is no event.
        self.drive(Input::User(UserInput::Start {
            source: source.to_owned(),
        }))
    }

    /// `/compact`: compacts the session now.
    pub fn compact(&mut self) -> Result<Outcome, Error> {
        self.drive(Input::User(UserInput::Compact { now: clock::now() }))
    }

    /// `/refine undo`: the core asks for the undo and logs what it did.
    /// What the undo put back or removed, a line a file, or `None` when
    /// there was nothing to undo.
    pub fn undo_memory(&mut self) -> Result<Option<Vec<String>>, Error> {
        Ok(self.run_input(Input::User(UserInput::Undo))?.1.undone)
    }

    /// `/name NAME`: renames the session, under the naming lock as a new
    /// session picks its name, so two sessions never end up with one name.
    /// Its inbox and its entry among the running sessions follow the name.
    pub fn rename(&mut self, name: String) -> Result<Outcome, Error> {
        let _naming = self.store.naming().map_err(Error::store)?;
        let names = self.store.names_in_use().map_err(Error::store)?;
        // The core asks only about this name; its own is not another's.
        let own = self.state().name();
        let used = std::iter::once(name.clone())
            .filter(|n| own.as_ref() != Some(n) && names.contains(n))
            .collect();
        let outcome = self.drive(Input::User(UserInput::Rename {
            name,
            used,
            now: clock::now(),
        }))?;
        self.inbox = inbox_of(&self.store, self.state().name().as_deref());
        let entry = self
            .store
            .running_entry(self.state().id(), self.state().name().clone());
        self.claim.update(&entry).map_err(Error::store)?;
        Ok(outcome)
    }

    /// Gives an unnamed session (a piped one resumed in the REPL) a
    /// generated name, under the naming lock, so `revolve send` and
    /// `revolve attach` can address it (the core picks the name; it stays
    /// unlisted). A session with a name is left as it is.
    pub fn address(&mut self) -> Result<Outcome, Error> {
        if self.state().name().is_some() {
            return Ok(Outcome::Done);
        }
        let _naming = self.store.naming().map_err(Error::store)?;
        let names = self.store.names_in_use().map_err(Error::store)?;
        let outcome = self.drive(Input::User(UserInput::Address {
            used: revolve_core::names::taken_before(&names),
            now: clock::now(),
        }))?;
        self.inbox = inbox_of(&self.store, self.state().name().as_deref());
        let entry = self
            .store
            .running_entry(self.state().id(), self.state().name().clone());
        self.claim.update(&entry).map_err(Error::store)?;
        Ok(outcome)
    }
}

/// The user's answer to a question about the call `id`; Ctrl-C pressed
/// while it was asked ends the turn instead, whatever the answer was.
fn answered(id: String, answer: Answer) -> Input {
    let now = clock::now();
    if interrupt::take() {
        return Input::User(UserInput::Interrupted {
            partial: String::new(),
            now,
        });
    }
    Input::User(UserInput::Answered { id, answer, now })
}
