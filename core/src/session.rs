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
//! Five files, in this order:
//!
//! 1. `repl/line.rs`: `handle` sends a line that is not a slash command to
//!    `Live::turn`;
//! 2. `io/src/live/user.rs`: `Live::turn` reads the turn's context and
//!    feeds one [`UserInput::Line`]; `run_input` (`io/src/live.rs`) feeds
//!    it and each answer, and hands each command to its family's executor;
//! 3. `core/src/session/protocol.rs`: the inputs and commands, and the
//!    table of who sends and who executes each;
//! 4. `core/src/session.rs` (this file): [`Session::handle`] takes the
//!    line to `line`, then `request`, which logs the system prompt when
//!    it changed, compacts or counts when the window is near, and returns
//!    [`ModelCommand::Call`] with the body `crate::request` built byte for
//!    byte;
//! 5. `io/src/live/model.rs`: `execute_model` sends it through the
//!    provider (whose `http.rs` posts the body as it is) and queues the
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

use crate::compact;
use crate::guard::{self, StopReason, Verdict};
use crate::names;
use crate::prompt;
use crate::record::{
    ChangedBy, Context, Counted, Failed, Header, Interrupted, MemoryChanged, MemoryUndone, Message,
    Origin, Record, Renamed, Resumed, Role, Stopped, ToolCall, Totals, WentOn,
};
use crate::refine;
use crate::state::State;
use crate::text as view;
use crate::tools::{self, Tool};

mod approval;
mod compaction;
mod delegation;
mod edits;
mod phase;
mod protocol;
mod refinement;
pub use edits::Opened;
use phase::{Due, Flight, Phase, Question};
pub use phase::{Outcome, Step};
pub use protocol::{
    Command, Delegation, Delivery, FileCommand, FileInput, Input, LogCommand, MemoryCommand,
    MemoryInput, MemoryWrite, ModelCommand, ModelInput, Reply, Sandboxing, Settings, TaskEnd,
    ToolCommand, ToolEffects, ToolInput, TurnContext, Usage, UserCommand, UserInput, SPILL_CHARS,
};

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
}

impl Session {
    /// A new session: its file starts with `header`.
    #[must_use = "the shell must execute every command, in order"]
    pub fn start(header: Header, settings: Settings) -> (Session, Vec<Command>) {
        let mut session = Session::new(State::default(), settings);
        let cmds = session.append(vec![Record::Header(header)]);
        (session, cmds)
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
        cmds.extend(session.append(vec![Record::Resumed(resumed)]));
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
                Phase::Asking(Question::Outside { id: held, output }),
                UserInput::Outside { id, yes, now },
            ) if held == id => (self.outside(id, output, yes, now), Outcome::Going),
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
                Phase::Summarizing { flight, due },
                input @ (ModelInput::Summarized { .. }
                | ModelInput::SummaryFailed { .. }
                | ModelInput::Overflowed { .. }),
            ) => self.summary_answered(flight, due, input),
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
            (
                Phase::Running {
                    id: running,
                    outside,
                },
                input,
            ) if input.id() == running => (self.tool_ended(outside, input), Outcome::Going),
            (
                Phase::Delegating { ids },
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
                (self.delegated(ends, interrupted, now), outcome)
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
            (
                Phase::Editing {
                    id: editing,
                    staged,
                },
                input,
            ) if input.edit_id() == Some(editing.as_str()) => {
                (self.edit_input(staged, input), Outcome::Going)
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
            UserInput::Compact { now } => {
                if self.busy() {
                    let busy = "a turn is still running; compact after it";
                    return (vec![Command::show(busy.into())], Outcome::Going);
                }
                self.compact(true, &mut Due::default(), now)
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

    /// `/max-cost`: the session's cost limit from now on.
    fn set_max_cost(&mut self, max: Option<u64>) -> Vec<Command> {
        self.settings.max_cost = max;
        vec![Command::show(match max {
            Some(max) => format!(
                "max cost: {} for this session from now on (spent {})",
                crate::models::dollars_text(max),
                crate::models::dollars_text(self.state.totals.cost)
            ),
            None => "max cost: none for this session from now on".to_owned(),
        })]
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

    /// `/name`: the name, when no other session of this directory uses
    /// it.
    fn rename(
        &mut self,
        name: String,
        used: &BTreeSet<String>,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        match names::validate(&name, used) {
            Ok(()) => {
                let renamed = Record::Renamed(Renamed {
                    at: now,
                    name: name.clone(),
                    generated: false,
                });
                let mut cmds = self.append(vec![renamed]);
                cmds.push(Command::show(format!("this session is now named '{name}'")));
                cmds
            }
            Err(why) => vec![Command::show(format!(
                "cannot name this session '{name}': {why}"
            ))],
        }
    }

    /// An unnamed session gets a generated name, for `revolve send` and
    /// `attach`.
    fn address(&mut self, used: &BTreeSet<String>, now: OffsetDateTime) -> Vec<Command> {
        if self.state().name.is_some() {
            return Vec::new();
        }
        let name = names::allocate(used);
        let renamed = Record::Renamed(Renamed {
            at: now,
            name: name.clone(),
            generated: true,
        });
        let mut cmds = self.append(vec![renamed]);
        cmds.push(Command::show(format!(
            "this session has no name: it is '{name}' now, for revolve send and attach"
        )));
        cmds
    }

    /// The MCP tools offered now, logged when the list changed; between
    /// turns only: a request in flight was sent with the list standing,
    /// and replay rebuilds it with that one.
    fn mcp_tools(&mut self, tools: Vec<crate::mcp::McpTool>, now: OffsetDateTime) -> Vec<Command> {
        if tools == self.state.mcp_tools || self.busy() {
            return Vec::new();
        }
        self.append(vec![Record::McpTools(crate::record::McpTools {
            at: now,
            tools,
        })])
    }

    /// A compaction's summary failed: the session goes on uncompacted (the
    /// turn's request goes out when one waits).
    fn summary_failed(&mut self, due: Due, error: String, now: OffsetDateTime) -> Vec<Command> {
        let failed = Record::CompactionFailed(Failed {
            at: now,
            error: error.clone(),
        });
        let mut cmds = self.append(vec![failed]);
        cmds.push(Command::show(format!(
            "compaction failed ({error}); the session goes on uncompacted"
        )));
        if self.state.awaiting {
            cmds.extend(self.request(due, now));
        }
        cmds
    }

    /// The running tool's result ([`ToolInput::Done`],
    /// [`ToolInput::SandboxRefused`]): what it did is logged before it.
    fn tool_ended(&mut self, outside: bool, input: ToolInput) -> Vec<Command> {
        match input {
            ToolInput::Done {
                id,
                output,
                grant,
                effects,
                parts: _,
                now,
            } => {
                let mut cmds = self.tool_effects(&id, effects, now);
                cmds.extend(self.tool_done(id, output, grant, now));
                cmds
            }
            ToolInput::SandboxRefused {
                id,
                output,
                effects,
                parts: _,
                now,
            } => {
                let mut cmds = self.tool_effects(&id, effects, now);
                cmds.extend(self.sandbox_refused(id, output, outside, now));
                cmds
            }
            // Children answer a delegation, never a running tool.
            ToolInput::Delegated { .. } => Vec::new(),
        }
    }

    /// The user's line ([`UserInput::Line`]): its context first (the
    /// prompt's parts; the MCP tools, logged when they changed; the inbox's
    /// new messages, logged and synced), then the message and its request.
    fn line(&mut self, text: String, context: TurnContext, now: OffsetDateTime) -> Vec<Command> {
        let TurnContext {
            parts,
            mcp_tools,
            inbox,
        } = context;
        self.parts = parts;
        if self.busy() {
            // A line with nothing in it asks nothing.
            if text.trim().is_empty() {
                return Vec::new();
            }
            return vec![Command::show(
                "a turn is still running; wait for it or press Ctrl-C".into(),
            )];
        }
        let mut cmds = match mcp_tools {
            Some(tools) => self.mcp_tools(tools, now),
            None => Vec::new(),
        };
        let taken = self.take_inbox(inbox, now);
        let took = !taken.is_empty();
        cmds.extend(taken);
        if text.trim().is_empty() {
            // Messages just taken go out without a line of the user's.
            if took {
                cmds.extend(self.request(Due::default(), now));
            }
            return cmds;
        }
        cmds.extend(self.append(vec![Record::Message(Message::user(now, text))]));
        cmds.extend(self.request(Due::default(), now));
        cmds
    }

    /// Messages that arrived at an idle REPL ([`UserInput::Inbox`]):
    /// taken, and the model asked at once.
    fn inbox(&mut self, messages: Vec<Delivery>, now: OffsetDateTime) -> Vec<Command> {
        if self.busy() {
            return Vec::new();
        }
        let mut cmds = self.take_inbox(messages, now);
        if !cmds.is_empty() {
            cmds.extend(self.request(Due::default(), now));
        }
        cmds
    }

    /// Takes the inbox's new messages (see [`TurnContext::inbox`]): each
    /// shown and logged as a user message marked with its origin, then the
    /// log synced; nothing when none is new.
    fn take_inbox(&mut self, mut messages: Vec<Delivery>, now: OffsetDateTime) -> Vec<Command> {
        messages.sort_by_key(|m| m.seq);
        messages.dedup_by_key(|m| m.seq);
        let mut cmds = Vec::new();
        for m in messages {
            if m.seq <= self.state.totals.delivered {
                continue;
            }
            cmds.push(Command::show(format!(
                "── message from {}: {}",
                view::inert(&m.from),
                view::inert(&m.text)
            )));
            let message = Message {
                origin: Some(Origin {
                    from: m.from,
                    seq: m.seq,
                }),
                ..Message::user(now, m.text)
            };
            cmds.extend(self.append(vec![Record::Message(message)]));
        }
        if cmds.is_empty() {
            return cmds;
        }
        // Taken for good before the inbox forgets them.
        cmds.push(Command::sync());
        cmds
    }

    /// The next request, once it is due: the system prompt is written when
    /// it changed, and a session near its window compacts first.
    fn request(&mut self, mut due: Due, now: OffsetDateTime) -> Vec<Command> {
        let mut cmds = Vec::new();
        let mut system = prompt::system(
            self.state.header.as_ref().map_or("", |h| &h.cwd),
            &self.parts,
            self.state.window,
        );
        if self.state.planning {
            system.push_str("\n\n");
            system.push_str(PLANNING_PROMPT);
        }
        if self.state.system.as_deref() != Some(system.as_str()) {
            cmds.extend(self.append(vec![Record::Context(Context { at: now, system })]));
        }
        let window = self.state.window;
        let (mut request, estimate) = self.measure();
        let near = compact::due(self.state.totals.last_context, window)
            || !compact::fits(estimate, window);
        // Before compacting on an estimate no count stands behind, ask
        // the server to count, where that is free.
        if near && !due.compacted && !due.counted && self.settings.counts {
            if let Some(request) = request.as_ref().filter(|r| {
                compact::count_helps(&self.state.totals, r.body.len(), estimate, window)
            }) {
                due.counted = true;
                let bytes = request.body.len();
                self.phase = Phase::Counting { bytes, due };
                cmds.push(Command::Model(ModelCommand::Count(request.clone())));
                return cmds;
            }
        }
        if near && !due.compacted {
            due.compacted = true;
            let done = self.compact(false, &mut due, now);
            if self.waits_for_notes() {
                // The request goes out once the notes are in.
                cmds.extend(done);
                return cmds;
            }
            if !done.is_empty() {
                request = None;
            }
            cmds.extend(done);
        }
        let (mut request, mut estimate) = match request {
            Some(r) => {
                let tokens = compact::estimate(r.body.len(), &self.state.totals);
                (r, tokens)
            }
            None => self.built(),
        };
        if !compact::fits(estimate, window) {
            cmds.extend(self.give_way(&mut due, now));
            if self.waits_for_notes() || due.stopped {
                return cmds;
            }
            (request, estimate) = self.built();
        }
        // Before stopping on an estimate, the server's count of the very
        // request, where that is free: it may fit after all.
        if !compact::fits(estimate, window)
            && self.settings.counts
            && !due.stop_counted
            && request.body.len() as u64 != self.state.totals.cal_bytes
        {
            due.stop_counted = true;
            let bytes = request.body.len();
            self.phase = Phase::Counting { bytes, due };
            cmds.push(Command::Model(ModelCommand::Count(request)));
            return cmds;
        }
        if !compact::answerable(estimate, window) {
            // When the part no compaction shrinks is what does not fit,
            // name its largest piece and what to do about it.
            // With too little left beside it for the work of a turn (a
            // quarter of the answer's room), it is what is too big too.
            let fixed = self.fixed_tokens() + compact::room(window) / 4;
            let largest = (!compact::fits(fixed, window))
                .then(|| self.fixed_parts().into_iter().max_by_key(|p| p.tokens))
                .flatten()
                .map(|p| (p.what, p.tokens));
            let reason = StopReason::TooLarge {
                tokens: estimate,
                window,
                largest,
            };
            cmds.extend(self.stop(reason, now));
            return cmds;
        }
        if let Some(reason) = self.over_budget(estimate) {
            cmds.extend(self.stop(reason, now));
            return cmds;
        }
        self.phase = Phase::Requesting {
            flight: Flight {
                estimate,
                bytes: request.body.len(),
            },
            retried: due.retried,
        };
        cmds.push(Command::Model(ModelCommand::Call(request)));
        cmds
    }

    /// Whether the request due waits for working notes, or for the user's
    /// yes to writing them.
    fn waits_for_notes(&self) -> bool {
        matches!(
            self.phase,
            Phase::Summarizing { .. } | Phase::Confirming { .. }
        )
    }

    /// The prices of the model this session asks, when the table knows
    /// them; none for the offline providers (scripted, replay), whose
    /// answers cost nothing.
    pub fn prices(&self) -> Option<crate::models::Prices> {
        if self.offline() {
            return None;
        }
        self.settings
            .models
            .find(&self.state.provider, &self.state.model)
            .and_then(|(_, m)| m.prices)
    }

    /// Why a request of about `input` tokens may not go out: with
    /// `--max-cost` and known prices, when it is expected to bring the
    /// session's cost past the limit (see [`crate::models::expected_cost`]).
    /// The shell asks it before each request it sends itself (a
    /// refinement's).
    pub(crate) fn over_budget(&self, input: u64) -> Option<StopReason> {
        let max = self.settings.max_cost?;
        let prices = self.prices()?;
        let t = &self.state.totals;
        let mean = t.tokens_out.checked_div(t.requests).unwrap_or(0);
        let limit = self.state.answer_limit().map(|l| l.tokens);
        let expected = t
            .cost
            .saturating_add(crate::models::expected_cost(&prices, input, mean, limit));
        (expected > max).then_some(StopReason::Budget {
            spent: t.cost,
            expected,
            max,
        })
    }

    /// The user answered whether a costly compaction may run: yes runs it
    /// (the request due, or `/compact`, decided again); no leaves the
    /// history as it is, and the turn goes on as far as it fits.
    fn confirmed(&mut self, mut due: Due, yes: bool, now: OffsetDateTime) -> Vec<Command> {
        due.costly = Some(yes);
        due.compacted = false;
        due.keep_turns = compact::KEEP_TURNS;
        let mut cmds = Vec::new();
        if !yes {
            cmds.push(Command::show(
                "compaction declined: the history stays as it is".into(),
            ));
        }
        if self.state.awaiting {
            cmds.extend(self.request(due, now));
        } else if yes {
            cmds.extend(self.compact(true, &mut due, now));
            // The yes was for this compaction only.
            if let Phase::Summarizing { due, .. } = &mut self.phase {
                due.costly = None;
            }
        }
        cmds
    }

    /// The server counted the request due ([`ModelCommand::Count`]): the count
    /// is logged (it calibrates every later estimate) and the request is
    /// decided again.
    fn counted(
        &mut self,
        bytes: usize,
        due: Due,
        tokens: Option<u64>,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        if bytes == 0 || !self.state.awaiting {
            return Vec::new();
        }
        let mut cmds = Vec::new();
        if let Some(tokens) = tokens.filter(|&t| t > 0) {
            cmds.extend(self.append(vec![Record::Counted(Counted {
                at: now,
                bytes: bytes as u64,
                tokens,
            })]));
        }
        cmds.extend(self.request(due, now));
        cmds
    }

    fn reply(&mut self, flight: Flight, reply: Reply, now: OffsetDateTime) -> Vec<Command> {
        // Without the provider's count, the estimate: the request's, and
        // the answer's text and calls as the same bytes per token.
        let answer_bytes = reply.text.len()
            + reply
                .tool_calls
                .iter()
                .map(|c| c.name.len() + c.arguments.len())
                .sum::<usize>();
        let usage = reply.usage.unwrap_or(Usage {
            prompt_tokens: flight.estimate,
            completion_tokens: compact::estimate(answer_bytes, &self.state.totals),
            ..Usage::default()
        });
        let last_context = usage.prompt_tokens.saturating_add(usage.completion_tokens);
        let counted = reply.usage.is_some();
        let ends_turn = reply.tool_calls.is_empty();
        let answer = Message {
            tool_calls: reply.tool_calls,
            truncated: reply.truncated,
            thinking: reply.thinking,
            ..Message::assistant(now, reply.text)
        };
        // The totals after the answer, which counts as a request.
        let mut cmds = self.append(vec![Record::Message(answer)]);
        if reply.truncated {
            cmds.push(Command::show(format!(
                "the answer was cut at its {}-token limit (the room the {}-token window keeps for it)",
                view::tokens(compact::room(self.state.window)),
                view::tokens(self.state.window)
            )));
        }
        let mut totals = self.totals(Some(usage), last_context, !counted, ends_turn, now);
        if let Record::Totals(t) = &mut totals {
            t.in_out_estimated |= !counted;
            if counted && usage.prompt_tokens > 0 && flight.bytes > 0 {
                t.cal_bytes = flight.bytes as u64;
                t.cal_tokens = usage.prompt_tokens;
            }
        }
        cmds.extend(self.append(vec![totals]));
        if ends_turn {
            cmds.push(Command::sync());
        } else {
            cmds.extend(self.next_tool(now));
        }
        cmds
    }

    /// Starts the first open call that parses and that the repeat guard
    /// and the cap on calls per answer let run; calls that do not get their
    /// error as result at once. When none is left, the next request goes
    /// out, unless the turn took its tool rounds.
    fn next_tool(&mut self, now: OffsetDateTime) -> Vec<Command> {
        self.next_tool_allowed(None, now)
    }

    /// [`Session::next_tool`], where the user just allowed the call
    /// `allowed` (it runs without asking).
    fn next_tool_allowed(&mut self, allowed: Option<&str>, now: OffsetDateTime) -> Vec<Command> {
        let mut cmds = Vec::new();
        while let Some(call) = self.state.open_calls.first().cloned() {
            if let Some(error) = self.over_calls_per_answer() {
                let result = Message::tool(now, call.id, error);
                cmds.extend(self.append(vec![Record::Message(result)]));
                continue;
            }
            match guard::verdict(
                self.turn_calls().into_iter(),
                &call,
                self.settings.repeat_limit,
            ) {
                Verdict::Run => {}
                Verdict::Refuse(error) => {
                    let result = Message::tool(now, call.id, error);
                    cmds.extend(self.append(vec![Record::Message(result)]));
                    continue;
                }
                Verdict::Stop(reason) => {
                    cmds.extend(self.stop(reason, now));
                    return cmds;
                }
            }
            if crate::mcp::is_mcp(&call.name) && self.state.planning {
                let refused = Message::tool(now, call.id, PLANNING_REFUSED);
                cmds.extend(self.append(vec![Record::Message(refused)]));
                continue;
            }
            if crate::mcp::is_mcp(&call.name) {
                match self.mcp_gate(&call, allowed, now) {
                    approval::Gate::Run(logged) => {
                        cmds.extend(logged);
                        cmds.push(self.call_mcp(&call));
                        self.phase = Phase::Running {
                            id: call.id,
                            outside: false,
                        };
                        return cmds;
                    }
                    approval::Gate::Ask => {
                        self.phase = Phase::Asking(Question::Run {
                            id: call.id.clone(),
                        });
                        cmds.push(Command::User(UserCommand::Ask {
                            command: crate::mcp::question(&call.name, &call.arguments),
                            id: call.id,
                        }));
                        return cmds;
                    }
                    approval::Gate::Refused(refused) => {
                        cmds.extend(refused);
                        continue;
                    }
                }
            }
            if let Some(refused) = self.state.agents.refusal(&call.name) {
                // A child calls only the tools it was given.
                let result = Message::tool(now, call.id, refused);
                cmds.extend(self.append(vec![Record::Message(result)]));
                continue;
            }
            if call.name == "task" {
                if let Some(started) = self.delegate(now) {
                    let going = matches!(self.phase, Phase::Delegating { .. });
                    cmds.extend(started);
                    if going {
                        return cmds;
                    }
                    continue;
                }
            }
            match tools::parse(&call) {
                Ok(Tool::Skill { name, .. })
                    if crate::skills::find(&self.parts.skills, &name).is_none() =>
                {
                    let error = crate::skills::unknown(&self.parts.skills, &name);
                    let result = Message::tool(now, call.id, error);
                    cmds.extend(self.append(vec![Record::Message(result)]));
                }
                Ok(tool) => {
                    let tool = match tool {
                        Tool::Skill { name, .. } => {
                            let dir = crate::skills::find(&self.parts.skills, &name)
                                .map(|s| s.dir.clone())
                                .unwrap_or_default();
                            Tool::Skill { name, dir }
                        }
                        other => other,
                    };
                    // The folders of the skills listed are readable, as a
                    // spill is.
                    let grants = self
                        .grants
                        .iter()
                        .cloned()
                        .chain(self.parts.skills.iter().map(|s| s.dir.clone()))
                        .collect();
                    if self.state.planning && !tool.changes_nothing() {
                        cmds.extend(self.append(vec![Record::Message(Message::tool(
                            now,
                            call.id,
                            PLANNING_REFUSED,
                        ))]));
                        continue;
                    }
                    if let Some(path) = tool.edit_path() {
                        self.phase = Phase::Editing {
                            id: call.id.clone(),
                            staged: None,
                        };
                        cmds.push(Command::File(FileCommand::Open {
                            id: call.id,
                            path: path.to_owned(),
                            tool,
                            arguments: call.arguments,
                            grants,
                        }));
                        return cmds;
                    }
                    if let Tool::Shell { command, .. } = &tool {
                        match self.shell_gate(&call.id, command, allowed, now) {
                            approval::Gate::Run(logged) => cmds.extend(logged),
                            approval::Gate::Ask => {
                                self.phase = Phase::Asking(Question::Run {
                                    id: call.id.clone(),
                                });
                                cmds.push(Command::User(UserCommand::Ask {
                                    id: call.id,
                                    command: command.clone(),
                                }));
                                return cmds;
                            }
                            approval::Gate::Refused(refused) => {
                                cmds.extend(refused);
                                continue;
                            }
                        }
                    }
                    self.phase = Phase::Running {
                        id: call.id.clone(),
                        outside: false,
                    };
                    cmds.push(Command::Tool(ToolCommand::Run {
                        id: call.id,
                        tool,
                        arguments: call.arguments,
                        grants,
                        sandbox: if self.state.planning {
                            Sandboxing::ReadOnly
                        } else {
                            Sandboxing::Session
                        },
                    }));
                    return cmds;
                }
                Err(error) => cmds
                    .extend(self.append(vec![Record::Message(Message::tool(now, call.id, error))])),
            }
        }
        let limit = self.settings.max_tool_rounds;
        if self.state.turn_rounds >= u64::from(limit) {
            cmds.extend(self.stop(StopReason::ToolRounds { limit }, now));
            return cmds;
        }
        cmds.extend(self.request(Due::default(), now));
        cmds
    }

    /// What the tool call `id` did besides its output, logged before its
    /// result, in the order of [`ToolEffects`]'s fields: a `shell`
    /// command's changes, the note that they are not tracked (once a
    /// run), what `read_file` saw, what `remember` wrote.
    fn tool_effects(
        &mut self,
        id: &str,
        effects: ToolEffects,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        let ToolEffects {
            changes,
            untracked,
            seen,
            memory,
            background,
        } = effects;
        let mut cmds = Vec::new();
        if !changes.is_empty() {
            cmds.extend(self.shell_changed(id.to_owned(), changes, now));
        }
        if untracked && !self.told_untracked {
            self.told_untracked = true;
            let cwd = self.state.header.as_ref().map_or("", |h| h.cwd.as_str());
            cmds.push(Command::show(format!(
                "revolve: {cwd} is not in a git repository: what shell commands change in \
                 it is not tracked, and a rewind cannot take it back (edit_file and \
                 write_file are tracked)"
            )));
        }
        if let Some((path, hash)) = seen {
            cmds.extend(self.seen(path, hash, now));
        }
        if let Some(w) = memory {
            cmds.extend(self.append(vec![Record::MemoryChanged(MemoryChanged {
                at: now,
                entry: w.entry,
                by: ChangedBy::Remember,
                files: w.files,
            })]));
        }
        if let Some((shell, event)) = background {
            cmds.extend(
                self.append(vec![Record::Background(crate::record::Background {
                    at: now,
                    call: id.to_owned(),
                    id: shell,
                    event,
                })]),
            );
        }
        cmds
    }

    /// The shell call `id` reads as refused by the sandbox: a user at a
    /// terminal is asked whether it may run once outside (not while
    /// planning, and once per call); otherwise its output is its result.
    fn sandbox_refused(
        &mut self,
        id: String,
        output: String,
        again: bool,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        let command = self
            .running_call(&id)
            .and_then(|call| match tools::parse(call) {
                Ok(Tool::Shell { command, .. }) => Some(command),
                _ => None,
            });
        match command {
            Some(command) if self.settings.interactive && !self.state.planning && !again => {
                self.phase = Phase::Asking(Question::Outside {
                    id: id.clone(),
                    output,
                });
                vec![Command::User(UserCommand::AskOutside { id, command })]
            }
            _ => self.tool_done(id, output, None, now),
        }
    }

    /// The user answered whether the refused call `id` may run once
    /// outside the sandbox: logged (an `approved` record of `unsandboxed`);
    /// yes runs it again outside, no keeps the sandbox's result.
    fn outside(
        &mut self,
        id: String,
        output: String,
        yes: bool,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        let Some(call) = self.running_call(&id).cloned() else {
            return Vec::new();
        };
        let Ok(tool) = tools::parse(&call) else {
            return self.tool_done(id, output, None, now);
        };
        let command = match &tool {
            Tool::Shell { command, .. } => command.clone(),
            _ => String::new(),
        };
        let mut cmds = self.append(vec![Record::Approved(crate::record::Approved {
            at: now,
            call: id.clone(),
            path: command,
            answer: if yes {
                crate::edit::Answer::Yes
            } else {
                crate::edit::Answer::No
            },
            tool: crate::record::Asked::Unsandboxed,
            rule: None,
        })]);
        if !yes {
            cmds.extend(self.tool_done(id, output, None, now));
            return cmds;
        }
        self.phase = Phase::Running {
            id: id.clone(),
            outside: true,
        };
        cmds.push(Command::Tool(ToolCommand::Run {
            id,
            tool,
            arguments: call.arguments,
            grants: self.grants.iter().cloned().collect(),
            sandbox: Sandboxing::Off,
        }));
        cmds
    }

    /// `/model NAME` between turns: logged as a `model_changed` record, so
    /// the requests after it (live and rebuilt) ask that model, with the
    /// table's window for it, else the window the session had.
    fn switch_model(&mut self, model: String, now: OffsetDateTime) -> Vec<Command> {
        let model = model.trim().to_owned();
        if self.busy() {
            return vec![Command::show(
                "/model waits for the turn in flight to end".into(),
            )];
        }
        if model.is_empty() || model.chars().any(char::is_whitespace) {
            return vec![Command::show(format!(
                "/model takes one model name; the session asks {}",
                self.state.model
            ))];
        }
        if model == self.state.model {
            return vec![Command::show(format!("already asking {model}"))];
        }
        let entry = self.settings.models.find(&self.state.provider, &model);
        // A budget is kept only at known prices: a switch to a model
        // without them would end it without a word, so it is refused.
        let priced = entry.as_ref().is_some_and(|(_, m)| m.prices.is_some());
        if self.settings.max_cost.is_some() && self.prices().is_some() && !priced {
            return vec![Command::show(format!(
                "/model: the prices of {model} are not known, so --max-cost could not be kept; \
                 the session stays with {} (add its prices under \"models\" in config.json)",
                self.state.model
            ))];
        }
        let known = entry.and_then(|(_, m)| m.window);
        let window = known.unwrap_or(self.state.window);
        let mut cmds = self.append(vec![Record::ModelChanged(crate::record::ModelChanged {
            at: now,
            model: model.clone(),
            window,
        })]);
        let from = if known.is_some() {
            "the model table"
        } else {
            "the session's, as the model table does not know it"
        };
        cmds.push(Command::show(format!(
            "model {model} from the next request on; window {window} tokens ({from})"
        )));
        cmds
    }

    /// The reasoning effort from the next request on: logged as an
    /// `effort` record when it changes, so replay rebuilds the requests.
    fn set_effort(
        &mut self,
        effort: Option<crate::models::Effort>,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        let named = effort.map_or("the model's default", |e| e.as_str());
        if self.state.effort == effort {
            return vec![Command::show(format!("effort: {named}"))];
        }
        if self.busy() {
            return vec![Command::show(
                "/effort waits for the turn in flight to end".into(),
            )];
        }
        let mut cmds = self.append(vec![Record::Effort(crate::record::EffortChanged {
            at: now,
            effort,
        })]);
        cmds.push(Command::show(format!(
            "effort: {named} from the next request on"
        )));
        cmds
    }

    /// Plan mode turned on or off: logged when it changes, and told.
    fn plan(&mut self, on: bool, now: OffsetDateTime) -> Vec<Command> {
        if self.state.planning == on {
            return vec![Command::show(
                if on {
                    "already planning (/plan off ends it)"
                } else {
                    "not planning"
                }
                .to_owned(),
            )];
        }
        let mut cmds = self.append(vec![Record::Planning(crate::record::Planning {
            at: now,
            on,
        })]);
        cmds.push(Command::show(
            if on {
                "planning: the model may read, search and run commands read-only; edits and \
                 writes are refused (/plan off ends it)"
            } else {
                "planning ended: edits and commands are as before"
            }
            .to_owned(),
        ));
        cmds
    }

    /// The error result of the first open call when it comes after the
    /// first [`Settings::max_calls_per_answer`] calls of its answer: one
    /// answer cannot make any number of calls run.
    fn over_calls_per_answer(&self) -> Option<String> {
        let made = self
            .state
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant)
            .map_or(0, |m| m.tool_calls.len());
        let position = made.saturating_sub(self.state.open_calls.len());
        let limit = self.settings.max_calls_per_answer;
        (position >= limit as usize).then(|| {
            format!(
                "error: not run: this answer made {made} tool calls, and only the first {limit} of one answer run (max_calls_per_answer). Make the calls still needed in your next answer."
            )
        })
    }

    /// This turn's tool calls that have their results, in order: the calls
    /// of every assistant message since the last user message, without the
    /// ones still open.
    fn turn_calls(&self) -> Vec<&ToolCall> {
        let messages = &self.state.messages;
        let start = messages
            .iter()
            .rposition(|m| m.role == Role::User)
            .map_or(0, |i| i + 1);
        let mut calls: Vec<&ToolCall> = messages[start..]
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .flat_map(|m| &m.tool_calls)
            .collect();
        calls.truncate(calls.len().saturating_sub(self.state.open_calls.len()));
        calls
    }

    /// Ends the turn on core's own account: every open call gets a result
    /// saying it was not run, then the `stopped` record and the totals.
    /// The shell tells the user, from the record.
    fn stop(&mut self, reason: StopReason, now: OffsetDateTime) -> Vec<Command> {
        let text = guard::stopped_result(&reason);
        let mut records: Vec<Record> = self
            .state
            .open_calls
            .iter()
            .map(|c| Record::Message(Message::tool(now, c.id.clone(), text.clone())))
            .collect();
        // A message the budget refused before any request went out is
        // not a turn: nothing was asked, nothing answered.
        let unasked = matches!(reason, StopReason::Budget { .. })
            && self
                .state
                .messages
                .last()
                .is_some_and(|m| m.role == Role::User);
        records.push(Record::Stopped(Stopped { at: now, reason }));
        if unasked {
            let mut cmds = self.append(records);
            let before = &self.state.totals;
            let totals = self.totals(None, before.last_context, before.estimated, false, now);
            cmds.extend(self.append(vec![totals]));
            cmds.push(Command::sync());
            return cmds;
        }
        self.close_turn(records, now)
    }

    /// `GoOn`: a turn stopped after its last tool results sends its request
    /// after all, with a fresh count of tool rounds.
    fn go_on(&mut self, now: OffsetDateTime) -> Vec<Command> {
        let after_results = self
            .state
            .messages
            .last()
            .is_some_and(|m| m.role == Role::Tool);
        if self.busy() || !after_results {
            return vec![Command::show(
                "nothing to go on with: no turn stopped after its tool results".into(),
            )];
        }
        let mut cmds = self.append(vec![Record::WentOn(WentOn { at: now })]);
        cmds.extend(self.request(Due::default(), now));
        cmds
    }

    fn tool_done(
        &mut self,
        id: String,
        output: String,
        grant: Option<String>,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        if self.state.open_calls.first().is_none_or(|c| c.id != id) {
            return vec![Command::show(format!(
                "ignored a result for tool call {id}, which is not running"
            ))];
        }
        if let Some(path) = grant {
            return self.grant_gate(id, path, now);
        }
        let mut cmds = self.tool_result(id, output, now);
        cmds.extend(self.next_tool(now));
        cmds
    }

    /// The result `output` of the call `id`, logged (spilled first when
    /// long), without going on to the next tool.
    fn tool_result(&mut self, id: String, output: String, now: OffsetDateTime) -> Vec<Command> {
        let mut cmds = Vec::new();
        let content = if output.chars().count() > self.settings.spill_chars {
            // Named by the request that made the call (numbers only grow,
            // across compactions and resumes) and the result's place in its
            // round, so no spill ever takes another's name.
            let round = self
                .state
                .messages
                .iter()
                .rev()
                .take_while(|m| m.role == Role::Tool)
                .count()
                + 1;
            let path = format!(
                "{}/{:04}-{round}-{}.txt",
                self.settings.spill_dir.trim_end_matches('/'),
                self.state.totals.requests,
                file_safe(&id)
            );
            let note = format!(
                " of {} in total; the whole output is in {path}, read it with read_file and an offset",
                output.chars().count()
            );
            // The same head and tail as a pruned result, or less when the
            // threshold is lower, so what the model sees stays under it.
            let spill = self.settings.spill_chars;
            let shown = tools::cut(
                &output,
                tools::HEAD_CHARS.min(spill * 4 / 5),
                tools::TAIL_CHARS.min(spill / 5),
                &note,
            );
            self.grants.insert(path.clone());
            cmds.push(Command::File(FileCommand::Spill {
                path,
                content: output,
            }));
            shown
        } else {
            output
        };
        cmds.extend(self.append(vec![Record::Message(Message::tool(now, id, content))]));
        cmds
    }

    /// Ctrl-C (or a crash found on resume): ends what is in flight.
    fn interrupt(&mut self, partial: String, now: OffsetDateTime) -> Vec<Command> {
        if self.state.compacting.is_some() && !self.state.awaiting {
            // A /compact cut short: nothing changed.
            let failed = Record::CompactionFailed(Failed {
                at: now,
                error: "interrupted".into(),
            });
            let mut cmds = self.append(vec![failed]);
            cmds.push(Command::show(
                "compaction interrupted; nothing changed".into(),
            ));
            return cmds;
        }
        // Cut while tools ran or notes were written, the turn's request
        // never went out.
        let unsent = !self.state.open_calls.is_empty() || self.state.compacting.is_some();
        // Only a request that went out can have streamed anything.
        let partial = if unsent { String::new() } else { partial };
        self.cut_short(
            partial,
            Record::Interrupted(Interrupted { at: now, unsent }),
            now,
        )
    }

    /// Ends a turn in flight: open tool calls get results saying they were
    /// cut, or what streamed is kept as a partial answer; then `end`.
    fn cut_short(&mut self, partial: String, end: Record, now: OffsetDateTime) -> Vec<Command> {
        let mut records = interrupted_results(&self.state.open_calls, now);
        if !partial.is_empty() && records.is_empty() {
            records.push(Record::Message(Message {
                partial: true,
                ..Message::assistant(now, partial)
            }));
        }
        records.push(end);
        self.close_turn(records, now)
    }

    /// Appends what ends a turn (results for the calls still open, the
    /// record saying why), then the totals counting the turn, and syncs.
    fn close_turn(&mut self, records: Vec<Record>, now: OffsetDateTime) -> Vec<Command> {
        // Whatever was asked or staged is about a call that ends here.
        self.phase = Phase::Idle;
        let mut cmds = self.append(records);
        let before = &self.state.totals;
        let totals = self.totals(None, before.last_context, before.estimated, true, now);
        cmds.extend(self.append(vec![totals]));
        cmds.push(Command::sync());
        cmds
    }

    /// What a request beside the turn (a summary, a refinement) spent,
    /// appended as totals: the context the turn last measured stays as it
    /// was.
    fn spent_aside(&mut self, usage: Option<Usage>, now: OffsetDateTime) -> Vec<Command> {
        let before = &self.state.totals;
        let totals = self.totals(usage, before.last_context, before.estimated, false, now);
        self.append(vec![totals])
    }

    /// The totals after one model answer (or a turn cut short).
    fn totals(
        &self,
        usage: Option<Usage>,
        last_context: u64,
        estimated: bool,
        ends_turn: bool,
        now: OffsetDateTime,
    ) -> Record {
        let before = &self.state.totals;
        let (cost, unpriced) = self.cost_after(usage);
        let usage = usage.unwrap_or_default();
        Record::Totals(Totals {
            cost,
            unpriced,
            at: Some(now),
            tokens_in: before.tokens_in.saturating_add(usage.prompt_tokens),
            tokens_out: before.tokens_out.saturating_add(usage.completion_tokens),
            tokens_cached: before.tokens_cached.saturating_add(usage.cache_read_tokens),
            tokens_cache_written: before
                .tokens_cache_written
                .saturating_add(usage.cache_write_tokens),
            turns: before.turns.saturating_add(u64::from(ends_turn)),
            last_context,
            estimated,
            name: self.state.name.clone(),
            named: self.state.named,
            requests: before.requests,
            delivered: before.delivered,
            cal_bytes: before.cal_bytes,
            cal_tokens: before.cal_tokens,
            in_out_estimated: before.in_out_estimated,
        })
    }

    /// The session's cost and whether some request was unpriced, once an
    /// answer with `usage` (none: estimated, or nothing counted) is in.
    fn cost_after(&self, usage: Option<Usage>) -> (u64, bool) {
        let before = &self.state.totals;
        let Some(u) = usage.filter(|u| *u != Usage::default()) else {
            return (before.cost, before.unpriced);
        };
        match self.prices() {
            Some(prices) => {
                let tokens = crate::models::Tokens {
                    input: u.prompt_tokens,
                    cached: u.cache_read_tokens,
                    written: u.cache_write_tokens,
                    output: u.completion_tokens,
                };
                (
                    before.cost.saturating_add(prices.cost(tokens)),
                    before.unpriced,
                )
            }
            None => (before.cost, before.unpriced || !self.offline()),
        }
    }

    /// Whether answers come from a file, offline (no price to know).
    fn offline(&self) -> bool {
        matches!(self.state.provider.as_str(), "scripted" | "replay")
    }

    /// The tool call `id`, when it is the one running now (the first still
    /// open).
    fn running_call(&self, id: &str) -> Option<&ToolCall> {
        self.state.open_calls.first().filter(|c| c.id == id)
    }

    /// The call `id` gets `text` as its result; then the next tool runs,
    /// or the next request goes out.
    fn answer(&mut self, id: String, text: String, now: OffsetDateTime) -> Vec<Command> {
        let mut cmds = self.append(vec![Record::Message(Message::tool(now, id, text))]);
        cmds.extend(self.next_tool(now));
        cmds
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

/// A result for each call that will never get one now.
fn interrupted_results(open: &[ToolCall], now: OffsetDateTime) -> Vec<Record> {
    open.iter()
        .map(|c| {
            let text = format!(
                "error: interrupted before {} finished; it may or may not have run",
                c.name
            );
            Record::Message(Message::tool(now, c.id.clone(), text))
        })
        .collect()
}

/// A call id as a file name: letters, digits, `-` and `_` only.
fn file_safe(id: &str) -> String {
    let safe: String = id
        .chars()
        .take(64)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if safe.is_empty() {
        "call".to_owned()
    } else {
        safe
    }
}

#[cfg(test)]
mod tests;
