//! The turn state machine.
//!
//! # Driving it
//!
//! [`Session`] holds no sockets, files or clock: it reads no time and
//! makes no id (both come in with the inputs) and does nothing itself
//! (everything that must happen leaves as a [`Command`]). The shell:
//!
//! 1. makes one with [`Session::start`] (a new file: the shell supplies the
//!    header with the id, name and time it chose) or [`Session::resume`] (the
//!    folded records of an existing file), and executes the commands they
//!    return;
//! 2. feeds every event as an [`Input`] to [`Session::handle`], each stamped
//!    with the time the shell read from its clock. What the user does is
//!    one [`UserInput`]: a line is [`UserInput::Line`], carrying everything
//!    its turn goes out with ([`TurnContext`]: the prompt's parts, the MCP
//!    tools offered, the inbox's messages);
//! 3. executes the returned [`Step`]'s commands **in order** before the
//!    next input, each by its family's executor (the families, who
//!    executes them and what answers them are the tables at the top of
//!    `core/src/session/protocol.rs`, beside the enums). A command that asks
//!    for an answer makes its executor queue exactly one input (its
//!    answer); the shell feeds its queue first in, first out, and the
//!    user's next input waits until the queue is empty (`run_input` in
//!    `io/src/live.rs`). So at most one request, tool or question is in
//!    flight, and each answer reaches the core before anything newer. A
//!    `handle` whose step has no command asking for an answer leaves the
//!    session idle or waiting for the user (the str0m rule: drain until
//!    nothing is queued);
//! 4. reports how the user's line or command ended from the steps'
//!    [`Outcome`]s: the last one that is not [`Outcome::Going`] or
//!    [`Outcome::Ignored`] stands. The shell never reads inputs or records
//!    to find it.
//!
//! Besides `handle`, the shell only reads: [`Session::state`] (the folded
//! log), [`Session::parts`], [`Session::grants`], [`Session::prices`],
//! [`Session::busy`] and [`Session::refine_due`] (asked after a turn that
//! ended done: an automatic refinement is then one more
//! [`UserInput::Refine`]).
//!
//! The session waits for one thing at a time: its phase (idle, counting,
//! confirming, requesting, summarizing, running a tool, asking, editing,
//! refining, rewinding, undoing), which carries what that wait needs. Every
//! command that asks for an answer moves it into the phase that waits for
//! that answer; [`Session::handle`] matches on the phase and the input, and
//! an input that answers nothing outstanding falls into one arm that
//! changes nothing and says so ([`Outcome::Ignored`]). [`Session::busy`]
//! is "not idle".
//!
//! The session's [`State`] changes only by applying the records it asks to
//! append, which is why folding the file gives back the same state and
//! [`crate::state::requests`] the same requests.
//!
//! ## The orders the shell feeds inputs in
//!
//! * A user line: one [`UserInput::Line`]; once the turn ended done,
//!   [`UserInput::Refine`] with `auto` when [`Session::refine_due`] says
//!   so (`Live::refine_if_due`).
//! * Messages arriving at an idle REPL: one [`UserInput::Inbox`]. A
//!   stopped turn let go on: one [`UserInput::GoOn`].
//! * A tool: its [`ToolCommand`] is answered by one [`ToolInput`], which
//!   carries the prompt's parts read after it and what the tool did
//!   besides its output ([`ToolEffects`]), or by
//!   [`UserInput::Interrupted`] alone.
//! * A resume (`Live::resume_at`): the commands of [`Session::resume`],
//!   then [`FileInput::Found`] when the log has an edit not seen written
//!   ([`State::pending_edit`]), then [`FileInput::Restored`] with
//!   `resumed` when it has an unfinished rewind
//!   ([`State::pending_rewind`]); the REPL then sends
//!   [`UserInput::Address`], [`UserInput::Plan`] (`--plan`) and
//!   [`UserInput::Effort`] (`--effort`).
//! * A command the user typed (`/compact`, `/name`, `/plan`, `/model`,
//!   `/effort`, `/refine`, `/refine undo`, `/rewind`) is one input between
//!   turns.
//!
//! ## One turn, from the REPL line to the request on the wire
//!
//! With this file and the protocol table (`core/src/session/protocol.rs`)
//! at hand, five files, in this order:
//!
//! 1. `repl/line.rs`: `handle` sends a line that is not a slash command to
//!    `Live::turn`;
//! 2. `io/src/live/user.rs`: `Live::turn` reads the turn's context and
//!    feeds one [`UserInput::Line`];
//! 3. `io/src/live.rs`: `run_input` feeds it to [`Session::handle`] (here:
//!    a user input goes to `user_input`, then `between`), then each
//!    answer, and hands each command to its family's executor;
//! 4. `core/src/session/turn.rs`: `line` logs the context and the
//!    message, then `request` logs the system prompt when it changed,
//!    compacts or counts when the window is near, and returns
//!    [`ModelCommand::Call`] with the body `crate::request` built byte for
//!    byte;
//! 5. `io/src/live/model.rs`: `execute_model` sends it through the
//!    provider (whose `http.rs` posts the body as it is) and returns the
//!    [`ModelInput`] that answers it.
//!
//! A memory refinement is driven the same way: [`UserInput::Refine`]
//! brings the memory files (and for `/refine` the session's whole chain);
//! the core may ask [`UserCommand::Confirm`], logs each request as a
//! `refining` record and sends it as [`ModelCommand::Refine`]; with changes
//! to write it asks [`MemoryCommand::Snapshot`]; a `refined` record ends
//! it. A tool's memory change (`remember`) comes inside its
//! [`ToolInput::Done`], as every side effect of a tool does.

use std::collections::BTreeSet;

use time::OffsetDateTime;

use crate::prompt;
use crate::record::{Failed, Header, MemoryUndone, Message, Record, Resumed};
use crate::refine;
use crate::state::State;

mod approval;
mod commands;
mod compaction;
mod delegation;
mod edits;
mod fetching;
mod hooking;
mod phase;
mod protocol;
mod refinement;
mod settings;
mod tool_calls;
mod turn;
pub use edits::Opened;
use phase::{Due, Flight, Phase, Question};
pub use phase::{Outcome, Step};
pub use protocol::{
    Command, Delegation, Delivery, FileCommand, FileInput, Input, LogCommand, MemoryCommand,
    MemoryInput, MemoryWrite, ModelCommand, ModelInput, Reply, Sandboxing, TaskEnd, ToolCommand,
    ToolEffects, ToolInput, TurnContext, Usage, UserCommand, UserInput,
};
pub use settings::{Settings, SPILL_CHARS};

/// The result of an edit or a write while planning.
pub(crate) const PLANNING_REFUSED: &str =
    "error: not run: this session is planning (the user's /plan): \
edits, writes, memory, goal notes and MCP tools are refused (only tools that change nothing \
run); describe the change in your plan instead";

/// What the system prompt says while planning.
pub(crate) const PLANNING_PROMPT: &str =
    "Plan mode: the user wants a plan before any change. You may \
read, search and run commands (read-only: they cannot write); edit_file and write_file are \
refused. End with the plan: the steps, the files each touches, and how to check it.";

/// A live session.
#[derive(Clone, Debug)]
pub struct Session {
    state: State,
    settings: Settings,
    /// Paths this run may read outside the working tree: granted by the user
    /// or spilled by this run. Held here only, never logged, so a resumed
    /// session starts without them.
    grants: BTreeSet<String>,
    /// The memory files and goal the next request's system prompt holds.
    parts: prompt::Parts,
    /// Whether the user was told that shell changes outside git are not
    /// tracked (once a run).
    told_untracked: bool,
    /// What the session waits for now.
    phase: Phase,
    /// How many times `Stop` hooks sent the turn on since the user's line.
    stop_rounds: u32,
}

impl Session {
    /// A new session: its file starts with `header`.
    #[must_use = "the shell must execute every command, in order"]
    pub fn start(header: Header, settings: Settings) -> (Session, Vec<Command>) {
        let mut session = Session::new(State::default(), settings);
        let cmds = session.append(vec![Record::Header(header)]);
        (session, cmds)
    }

    /// A `web_search` record when what the rules offer on this session's
    /// wire is not what the state offers (see
    /// [`crate::web::search_uses`]): the shell logs it right after a new
    /// session's header ([`Session::resume`] does it itself).
    #[must_use = "the shell must execute every command, in order"]
    pub fn offer_search(&mut self, at: time::OffsetDateTime) -> Vec<Command> {
        let wire = crate::request::Wire::of(&self.state.provider);
        let uses = crate::web::search_uses(&self.settings.rules, wire.searches());
        if uses == self.state.web_search {
            return Vec::new();
        }
        self.append(vec![Record::WebSearch(crate::record::WebSearch {
            at,
            max_uses: uses,
        })])
    }

    /// An existing session, folded from its file, continuing with `model`,
    /// `window` and `provider`. Tool calls a crash left without results get
    /// results saying so, and a request left unanswered is closed as
    /// interrupted, so the history the model gets next is well formed.
    #[must_use = "the shell must execute every command, in order"]
    pub fn resume(state: State, settings: Settings, resumed: Resumed) -> (Session, Vec<Command>) {
        let mut session = Session::new(state, settings);
        // A turn a crash left open is closed the way Ctrl-C closes one, so
        // the history the model gets next is well formed and the turn counts.
        let open = session.state.awaiting
            || !session.state.open_calls.is_empty()
            || session.state.compacting.is_some();
        let mut cmds = if open {
            session.interrupt(String::new(), resumed.at)
        } else {
            Vec::new()
        };
        let at = resumed.at;
        cmds.extend(session.append(vec![Record::Resumed(resumed)]));
        cmds.extend(session.offer_search(at));
        (session, cmds)
    }

    fn new(state: State, settings: Settings) -> Session {
        Session {
            state,
            settings,
            grants: BTreeSet::new(),
            parts: prompt::Parts::default(),
            told_untracked: false,
            phase: Phase::Idle,
            stop_rounds: 0,
        }
    }

    /// What the system prompt is built from, as the shell last read it
    /// (the project's instructions, memory files, the goal).
    pub fn parts(&self) -> &prompt::Parts {
        &self.parts
    }

    /// The folded state: what the log says so far.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// The paths this run may read outside the working tree.
    pub fn grants(&self) -> &BTreeSet<String> {
        &self.grants
    }

    /// Whether the memory should be refined now, on its own: allowed (not
    /// `--no-auto-refine`, not `--bare`), idle, and
    /// [`crate::refine::auto_due`] after this session's turns, compactions
    /// and last refinement.
    pub fn refine_due(&self, now: OffsetDateTime) -> bool {
        let s = &self.state;
        self.settings.auto_refine
            && !self.settings.bare
            && !self.busy()
            && refine::auto_due(
                s.totals.turns.saturating_sub(s.turns_at_refine),
                s.compacted_since_refine,
                s.refined_at,
                now,
            )
    }

    /// Whether anything is outstanding: a turn (its request, a count, a
    /// question, a summary, a tool, an edit), a compaction, a refinement,
    /// a rewind or an undo.
    pub fn busy(&self) -> bool {
        !matches!(self.phase, Phase::Idle)
    }

    /// Handles one input: the commands must be executed in order, and the
    /// outcome says how it ended what the user asked (see the module doc).
    /// Each family's inputs are matched with the phase that waits for
    /// them; what answers nothing outstanding falls to one arm
    /// ([`Session::ignored`]).
    pub fn handle(&mut self, input: Input) -> Step {
        let phase = std::mem::take(&mut self.phase);
        let (commands, outcome) = match input {
            Input::User(input) => self.user_input(phase, input),
            Input::Model(input) => self.model_input(phase, input),
            Input::Tool(input) => self.tool_input(phase, input),
            Input::File(input) => self.file_input(phase, input),
            Input::Memory(input) => self.memory_input(phase, input),
        };
        // A turn core ended on its own says why in its `stopped` record.
        let outcome = commands
            .iter()
            .find_map(|c| match c {
                Command::Log(LogCommand::Append(Record::Stopped(s))) => {
                    Some(Outcome::Stopped(s.reason.clone()))
                }
                _ => None,
            })
            .unwrap_or(outcome);
        Step { commands, outcome }
    }

    /// What the user did: an answer to the question asked, Ctrl-C, or (in
    /// [`Session::between`]) a line or a command of theirs.
    fn user_input(&mut self, phase: Phase, input: UserInput) -> (Vec<Command>, Outcome) {
        match (phase, input) {
            (Phase::Confirming { due }, UserInput::Confirmed { yes, now }) => {
                (self.confirmed(due, yes, now), Outcome::Going)
            }
            (
                p @ Phase::Refining(_),
                input @ (UserInput::Confirmed { .. } | UserInput::Interrupted { .. }),
            ) => {
                self.phase = p;
                self.refinement_input(Input::User(input))
            }
            (
                Phase::Asking(Question::Outside {
                    call,
                    output,
                    image,
                }),
                UserInput::Outside { id, yes, now },
            ) if call.id == id => (self.outside(call, output, image, yes, now), Outcome::Going),
            (Phase::Asking(q), UserInput::Answered { id, answer, now }) if q.id() == id => {
                (self.answered(q, id, answer, now), Outcome::Going)
            }
            (phase, UserInput::Interrupted { partial, now }) if phase.in_turn() => {
                (self.interrupt(partial, now), Outcome::Interrupted)
            }
            (phase, input) => {
                self.phase = phase;
                self.between(input)
            }
        }
    }

    /// An answer from the model, to the request the phase waits for.
    fn model_input(&mut self, phase: Phase, input: ModelInput) -> (Vec<Command>, Outcome) {
        match (phase, input) {
            (Phase::Counting { bytes, due }, ModelInput::Counted { tokens, now }) => {
                (self.counted(bytes, due, tokens, now), Outcome::Going)
            }
            (
                Phase::Requesting { flight, retried },
                input @ (ModelInput::Reply { .. }
                | ModelInput::Failed { .. }
                | ModelInput::Overflowed { .. }),
            ) => self.request_answered(flight, retried, input),
            (
                Phase::Summarizing { flight, due, bare },
                input @ (ModelInput::Summarized { .. }
                | ModelInput::SummaryFailed { .. }
                | ModelInput::Overflowed { .. }),
            ) => self.summary_answered(flight, due, bare, input),
            (
                p @ Phase::Refining(_),
                input @ (ModelInput::RefineReply { .. } | ModelInput::RefineFailed { .. }),
            ) => {
                self.phase = p;
                self.refinement_input(Input::Model(input))
            }
            (phase, input) => {
                self.phase = phase;
                self.ignored(&Input::Model(input))
            }
        }
    }

    /// The running tool's result.
    fn tool_input(&mut self, phase: Phase, mut input: ToolInput) -> (Vec<Command>, Outcome) {
        // The prompt's parts read after the tool stand, whatever it answers.
        if let Some(parts) = input.take_parts() {
            self.parts = parts;
        }
        match (phase, input) {
            (Phase::Hooking { round, resume }, ToolInput::Hooked { ran, now }) => {
                (self.hook_ran(round, resume, ran, now), Outcome::Going)
            }
            (Phase::Running { call, outside }, input)
                if !matches!(input, ToolInput::Hooked { .. }) && input.id() == call.id =>
            {
                (self.tool_ended(call, outside, input), Outcome::Going)
            }
            (
                Phase::Delegating { ids, tasks },
                ToolInput::Delegated {
                    ends,
                    interrupted,
                    now,
                },
            ) if ends.iter().map(|e| &e.id).eq(ids.iter()) => {
                let outcome = if interrupted {
                    Outcome::Interrupted
                } else {
                    Outcome::Going
                };
                (self.delegated(ends, interrupted, tasks, now), outcome)
            }
            (phase, input) => {
                self.phase = phase;
                self.ignored(&Input::Tool(input))
            }
        }
    }

    /// An answer about the edit in flight, the rewind's restores, or what
    /// a resume found on disk.
    fn file_input(&mut self, phase: Phase, input: FileInput) -> (Vec<Command>, Outcome) {
        match (phase, input) {
            (Phase::Editing { call, staged }, input)
                if input.edit_id() == Some(call.id.as_str()) =>
            {
                (self.edit_input(call, staged, input), Outcome::Going)
            }
            (
                Phase::Rewinding,
                FileInput::Restored {
                    on_disk,
                    errors,
                    resumed,
                    now,
                },
            ) => (
                self.restored(&on_disk, &errors, resumed, now),
                Outcome::Going,
            ),
            (
                Phase::Idle,
                FileInput::Restored {
                    on_disk,
                    errors,
                    resumed: true,
                    now,
                },
            ) => (self.restored(&on_disk, &errors, true, now), Outcome::Going),
            (phase, FileInput::Found { hash, now }) => {
                self.phase = phase;
                (self.found(hash, now), Outcome::Going)
            }
            (phase, input) => {
                self.phase = phase;
                self.ignored(&Input::File(input))
            }
        }
    }

    /// What the memory commands did.
    fn memory_input(&mut self, phase: Phase, input: MemoryInput) -> (Vec<Command>, Outcome) {
        match (phase, input) {
            (p @ Phase::Refining(_), input @ MemoryInput::Changed { .. }) => {
                self.phase = p;
                self.refinement_input(Input::Memory(input))
            }
            (Phase::Undoing, MemoryInput::Undone { entry, files, now }) => {
                let mut cmds = self.append(vec![Record::MemoryUndone(MemoryUndone {
                    at: now,
                    entry,
                    files,
                })]);
                cmds.push(Command::sync());
                (cmds, Outcome::Going)
            }
            (phase, input) => {
                self.phase = phase;
                self.ignored(&Input::Memory(input))
            }
        }
    }

    /// The answer to the turn's request in flight.
    fn request_answered(
        &mut self,
        flight: Flight,
        retried: bool,
        input: ModelInput,
    ) -> (Vec<Command>, Outcome) {
        match input {
            ModelInput::Reply { reply, now } => (self.reply(flight, reply, now), Outcome::Answered),
            ModelInput::Failed {
                error,
                partial,
                now,
            } => {
                let end = Record::Failed(Failed {
                    at: now,
                    error: error.clone(),
                });
                (self.cut_short(partial, end, now), Outcome::Failed(error))
            }
            ModelInput::Overflowed {
                error,
                limit,
                asked,
                now,
            } => {
                let overflow = crate::overflow::Overflow { limit, asked };
                let cmds = self.overflowed(flight, retried, error, overflow, now);
                (cmds, Outcome::Going)
            }
            other => self.ignored(&Input::Model(other)),
        }
    }

    /// What the user asks between turns (each says itself what it does
    /// while busy), and the one arm for an answer nobody waits for.
    fn between(&mut self, input: UserInput) -> (Vec<Command>, Outcome) {
        let cmds = match input {
            UserInput::Line { text, context, now } => self.line(text, context, now),
            UserInput::Inbox {
                messages,
                parts,
                now,
            } => {
                self.parts = parts;
                self.inbox(messages, now)
            }
            UserInput::Start { source } => {
                if self.busy() {
                    return (Vec::new(), Outcome::Going);
                }
                let about = crate::hooks::About::SessionStart { source };
                self.hooks_for(about, None, hooking::Resume::Idle)
                    .unwrap_or_default()
            }
            UserInput::Compact { now } => {
                if self.busy() {
                    let busy = "a turn is still running; compact after it";
                    return (vec![Command::show(busy.into())], Outcome::Going);
                }
                let about = crate::hooks::About::PreCompact {
                    trigger: "manual".into(),
                };
                match self.hooks_for(about, None, hooking::Resume::Compact) {
                    Some(run) => run,
                    None => self.compact(true, &mut Due::default(), now),
                }
            }
            UserInput::Refine {
                auto,
                files,
                chain,
                now,
            } if !self.busy() => self.refine(auto, files, chain, now),
            UserInput::GoOn { parts, now } => {
                self.parts = parts;
                self.go_on(now)
            }
            UserInput::Plan { on, now } => self.plan(on, now),
            UserInput::Model { model, now } => self.switch_model(model, now),
            UserInput::Effort { effort, now } => self.set_effort(effort, now),
            UserInput::MaxCost { max } => self.set_max_cost(max),
            UserInput::Ran {
                command,
                output,
                now,
            } => {
                if self.busy() {
                    let busy = "a turn is still running; !COMMAND runs when it has ended";
                    return (vec![Command::show(busy.into())], Outcome::Going);
                }
                let text = crate::tools::ran_message(&command, &output);
                let mut cmds = self.append(vec![Record::Message(Message::user(now, text))]);
                cmds.push(Command::sync());
                cmds
            }
            UserInput::Undo if !self.busy() => {
                self.phase = Phase::Undoing;
                vec![Command::Memory(MemoryCommand::Undo)]
            }
            UserInput::Rewind {
                turns,
                scope,
                undo,
                force,
                on_disk,
                now,
            } => self.rewind(turns, scope, undo, force, &on_disk, now),
            UserInput::Rename { name, used, now } => self.rename(name, &used, now),
            UserInput::Address { used, now } => self.address(&used, now),
            other => return self.ignored(&Input::User(other)),
        };
        (cmds, Outcome::Going)
    }

    /// The one arm for an input that answers nothing the session waits
    /// for: nothing changes, and the user is told (an interrupt with
    /// nothing in flight, or an answer to a request no longer waited for,
    /// is told nothing: it raced with the end it answers).
    fn ignored(&mut self, input: &Input) -> (Vec<Command>, Outcome) {
        let quiet = matches!(
            input,
            Input::User(UserInput::Interrupted { .. } | UserInput::Confirmed { .. })
                | Input::Model(
                    ModelInput::Failed { .. }
                        | ModelInput::Counted { .. }
                        | ModelInput::Overflowed { .. }
                        | ModelInput::SummaryFailed { .. }
                        | ModelInput::Summarized { .. }
                        | ModelInput::RefineReply { .. }
                        | ModelInput::RefineFailed { .. }
                )
                | Input::File(FileInput::Restored { .. })
        );
        let cmds = if quiet {
            Vec::new()
        } else {
            let call = tool_id(input).map_or(String::new(), |id| format!(" for tool call {id}"));
            vec![Command::show(format!(
                "ignored {}{call}: it answers nothing the session waits for",
                input.name()
            ))]
        };
        (cmds, Outcome::Ignored)
    }

    /// Applies the records and asks the shell to append them, in order.
    fn append(&mut self, records: Vec<Record>) -> Vec<Command> {
        records
            .into_iter()
            .map(|r| {
                self.state.apply(&r);
                Command::append(r)
            })
            .collect()
    }
}

/// The tool call an answer about a tool is for.
fn tool_id(input: &Input) -> Option<&str> {
    match input {
        Input::Tool(input) => Some(input.id()),
        Input::File(input) => input.edit_id(),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
