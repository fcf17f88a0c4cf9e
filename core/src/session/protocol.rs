//! The session's protocol with the shell: what happened ([`Input`]) and
//! what must happen ([`Command`]). What the session needs to know that the
//! log does not say is its [`super::Settings`].
//!
//! # Families
//!
//! Commands come in six families, by what executes them; each family has
//! one executor in `io/src/live/` and is answered by inputs of the same
//! family (decision: nested enums, `Command::Model(ModelCommand::Call(..))`
//! answered by `Input::Model(ModelInput::Reply { .. })`, so a `match` on
//! the outer enum is the shell's whole dispatch and a new variant lands in
//! one family's executor only):
//!
//! | Family | Executor | Commands | Answered by |
//! |---|---|---|---|
//! | log | `io/src/live/log.rs` | [`LogCommand`]: the session file | nothing |
//! | model | `io/src/live/model.rs` | [`ModelCommand`]: requests to the model | [`ModelInput`] |
//! | tool | `io/src/live/tool.rs` | [`ToolCommand`]: tools and MCP calls | [`ToolInput`] |
//! | file | `io/src/live/file.rs` | [`FileCommand`]: files beside the log (spills, edits, restores) | [`FileInput`] |
//! | memory | `io/src/live/memory.rs` | [`MemoryCommand`]: memory snapshots and undo | [`MemoryInput`] |
//! | user | `io/src/live/user.rs` | [`UserCommand`]: what the user is told and asked | [`UserInput`] (the answers) |
//!
//! Two inputs cross families: [`UserInput::Interrupted`] (Ctrl-C) answers
//! whatever is in flight, and a [`FileCommand::Stage`] that asks the user
//! is answered by [`FileInput::Staged`] carrying the answer. Everything
//! else the user does (a line, `/compact`, `/model`…) is a [`UserInput`]
//! too, sent when the session is idle.
//!
//! Every command that asks for an answer is answered by exactly one input,
//! queued by its executor; the shell feeds the queue first in, first out
//! (see the session's module doc).
//!
//! ## Adding an input or a command
//!
//! 1. Add the variant to its family's enum here, with a doc comment saying
//!    who sends it (or what answers it), and a row to the table below (the
//!    tests at the end of this file name every variant and fail until it
//!    has one).
//! 2. Core: an answer gets an arm in [`super::Session::handle`]'s match on
//!    (phase, input) for the phase that waits for it (a new wait is a new
//!    [`super::Phase`] variant); a request from the user gets an arm in
//!    `Session::between`. A command that asks for an answer moves the
//!    session into the phase that waits for it.
//! 3. io: one arm in the family's executor (`io/src/live/<family>.rs`),
//!    which queues the answer input, if any.
//!
//! ## Inputs
//!
//! | Input | Sent by (in `io`) | When | The core answers with |
//! |---|---|---|---|
//! | [`UserInput::Line`] | `Live::turn` | the user's line, with its [`TurnContext`] (prompt parts, MCP tools, inbox) | `Append` of `mcp_tools` when the list changed, `Show` and `Append` per inbox message and `Sync`, `Append` of the message, then what a request needs: `Call`, or `Count`, `Summarize`, `Confirm` first |
//! | [`UserInput::Confirmed`] | `execute_user` | answer to `Confirm` | the compaction (yes) or `Show` and the `Call` uncompacted (no); in a refinement, its next step |
//! | [`UserInput::Answered`] | `execute_user` | answer to `Ask` or `AskGrant` | `Run`/`CallMcp`, or the grant or refusal result, then the next tool |
//! | [`UserInput::Outside`] | `execute_user` | answer to `AskOutside` | `Run` with [`Sandboxing::Off`] (yes) or the refused result (no) |
//! | [`UserInput::Interrupted`] | `execute_model`, `execute_tool`, `execute_user`, `execute_file` (`Stage`) | Ctrl-C during a request, tool or question | `Append` of a result for each open call (or the partial answer), `interrupted` and `totals`, `Sync`; during a summary, `compaction_failed` and `Show`; during a refinement, `Show`, `refined`, `Sync` |
//! | [`UserInput::Start`] | `Live::start_hooks` | a session started or resumed | `Hook` for each `SessionStart` hook (its `hook` record after each), or nothing |
//! | [`UserInput::Compact`] | `Live::compact` | `/compact`, `revolve compact` | the compaction's commands, or `Show` when busy |
//! | [`UserInput::Refine`] | `Live::refine` | `/refine`; with `auto`, a turn's end when [`super::Session::refine_due`] | `Show`, then `Confirm` (costly, asked) or `Append` of `refining` and `Refine` for the first part |
//! | [`UserInput::Undo`] | `Live::undo_memory` | `/refine undo` | `Undo` |
//! | [`UserInput::GoOn`] | `Live::go_on` | the user lets a stopped turn go on | `Call` |
//! | [`UserInput::Plan`] | `Live::plan` | `--plan`, `/plan` | `Append` of `planning`, `Show` |
//! | [`UserInput::Model`] | `Live::switch_model` | `/model` | `Append` of `model_changed`, `Show` |
//! | [`UserInput::Effort`] | `Live::set_effort` | `--effort`, `/effort` | `Append` of `effort` when it changed, `Show` |
//! | [`UserInput::MaxCost`] | `Live::set_max_cost` | `/max-cost` | `Show` |
//! | [`UserInput::Ran`] | `Live::ran` | `!COMMAND` in the REPL, run by the shell | `Append` of a user message holding the command and its output (cut as a tool result is), `Sync`; or `Show` when a turn runs |
//! | [`UserInput::Rename`] | `Live::rename` | `/name` | `Append` of `renamed`, `Show`; or `Show` why not |
//! | [`UserInput::Address`] | `Live::address` | the REPL resumes an unnamed session | `Append` of a generated `renamed`, `Show` |
//! | [`UserInput::Rewind`] | `Live::rewind` | `/rewind`, `revolve rewind` | `Append` of `rewinding`, `Sync`, `Restore`; or `Refused` |
//! | [`UserInput::Inbox`] | `Live::take_inbox` | messages arrived at an idle REPL | `Show` and `Append` per message, `Sync`, and `Call` |
//! | [`ModelInput::Reply`] | `execute_model` | answer to `Call` | `Append` of the answer, then the first tool's command (`Run`, `Open`, `Ask`, `CallMcp`), the next `Call`, or `Sync` at the turn's end |
//! | [`ModelInput::Failed`] | `execute_model` | answer to `Call` | `Append` of the partial answer, `failed` and `totals`, `Sync` (nothing when no request is in flight) |
//! | [`ModelInput::Overflowed`] | `execute_model` | answer to `Call` or `Summarize` the server refused as too large | a compaction, or a smaller `Summarize`, or `Failed` as above |
//! | [`ModelInput::Counted`] | `execute_model` | answer to `Count` | `Append` of `counted`, then `Call` or a compaction |
//! | [`ModelInput::Summarized`] | `execute_model` | answer to `Summarize` | the next `Summarize` (pieces), or `Append` of `compacted`, `Sync`, `StartFile`, then the `Call` the compaction made room for |
//! | [`ModelInput::SummaryFailed`] | `execute_model` | answer to `Summarize` | `Append` of `compaction_failed`, `Show`, and the `Call` uncompacted when one waits |
//! | [`ModelInput::RefineReply`] | `execute_model` | answer to `Refine` | `Append` of `totals` (when it reports usage), then the next part's `refining` and `Refine`, or `Snapshot` of all the changes, or `Show` and `Append` of `refined`, `Sync` when nothing changes |
//! | [`ModelInput::RefineFailed`] | `execute_model` | answer to `Refine` | `Show`, then the next part, or (one part) `Append` of `refined`, `Sync` |
//! | [`ToolInput::Done`] | `execute_tool` | answer to `Run` or `CallMcp`; carries the tool's [`ToolEffects`] and the prompt parts read after it | what the effects log, in order (`Append` of `edit` records by `shell`, `Show` once a run outside git, `Append` of `seen`, of `memory_changed`, of `background`, of `fetched`), then `Append` of the result (`Spill` first when long; `AskGrant` for a grant), then the next tool or `Call` |
//! | [`ToolInput::Delegated`] | `execute_tool` | answer to `Delegate`: each child's end, in call order, and whether Ctrl-C stopped them | `Append` of a `delegated` record and the result for each call, then the next tool or `Call`; interrupted, the turn is cut short as by `Interrupted` |
//! | [`ToolInput::SandboxRefused`] | `execute_tool` | answer to a `shell` `Run` whose output reads as refused; carries its [`ToolEffects`] and the prompt parts | what the effects log, as for `Done`, then `AskOutside`, or the result as `Done` would |
//! | [`ToolInput::Hooked`] | `execute_tool` | answer to `Hook` | `Append` of its `hook` record, `Show` of its note, then the next `Hook` of the round, or what the round goes on to (the call, its result, the line, the turn's end or going on; see `session/hooking.rs`) |
//! | [`FileInput::Opened`] | `execute_file` | answer to `Open` | `Stage`, or the edit's error result and the next tool |
//! | [`FileInput::Staged`] | `execute_file` | answer to `Stage` | `Append` of `approved` (when asked) and `edit`, `Write`; or the refusal and the next tool |
//! | [`FileInput::Wrote`] | `execute_file` | answer to `Write` | `Append` of `written` and the result, then the next tool or `Call` |
//! | [`FileInput::Restored`] | `execute_file`, `Live::settle_pending_rewind` | answer to `Restore`; a resume with [`crate::state::State::pending_rewind`] | `Append` of `rewound`, `Sync`, `Show` (and `Refused` for what failed) |
//! | [`FileInput::Found`] | `Live::settle_pending_edit` | a resume with [`crate::state::State::pending_edit`] | `Append` of `written` (what was found), `Show`, `Sync` |
//! | [`MemoryInput::Changed`] | `execute_memory` | answer to `Snapshot`: the entry taken | `Append` of `memory_changed` (its `by` and files those of the `Snapshot`), `Show`, then `refined`, `Sync` |
//! | [`MemoryInput::Undone`] | `execute_memory` | answer to `Undo` | `Append` of `memory_undone`, `Sync` |
//!
//! ## Commands
//!
//! | Command | The shell (`execute_<family>` in `io/src/live/<family>.rs`) | Answer it queues |
//! |---|---|---|
//! | [`LogCommand::Append`] | writes the record as one line (a tool result is shown once logged) | none |
//! | [`LogCommand::Sync`] | flushes and fsyncs the log (a turn's end) | none |
//! | [`LogCommand::StartFile`] | creates, syncs and claims the next file of the chain; later `Append`s go there | none |
//! | [`ModelCommand::Call`] | sends the request, streaming its text | `Reply`, `Failed`, `Overflowed` or `Interrupted` |
//! | [`ModelCommand::Summarize`] | sends the request without showing it | `Summarized`, `SummaryFailed`, `Overflowed` or `Interrupted` |
//! | [`ModelCommand::Refine`] | sends the refinement's request without showing it | `RefineReply`, `RefineFailed` or `Interrupted` |
//! | [`ModelCommand::Count`] | asks the server to count the request | `Counted` |
//! | [`ToolCommand::Run`] | shows the call (with the `arguments` core sends), runs the tool in the sandbox named, reads the prompt parts again | `Done`, `SandboxRefused` or `Interrupted` |
//! | [`ToolCommand::CallMcp`] | calls the MCP tool, within the timeout | `Done` |
//! | [`ToolCommand::Delegate`] | runs each `task` call as a child revolve (`io/src/task.rs`), side by side, one live line each | `Delegated` |
//! | [`ToolCommand::Hook`] | runs the hook's command under the session's sandbox with its input on stdin (`revolve_tools::hook`) | `Hooked` |
//! | [`FileCommand::Spill`] | writes the whole result to the file, before the next command | none (a failure is told) |
//! | [`FileCommand::Open`] | shows the call (the `tool` and `arguments` core sends), opens the file to edit; the result is shown once logged | `Opened` |
//! | [`FileCommand::Stage`] | stores before and after, asks when told to | `Staged` (or `Interrupted`) |
//! | [`FileCommand::Write`] | writes the file atomically if it still holds `expect` | `Wrote` |
//! | [`FileCommand::Restore`] | puts the files back from the content store | `Restored` |
//! | [`MemoryCommand::Snapshot`] | snapshots the memory, then writes the changes | `Changed` |
//! | [`MemoryCommand::Undo`] | restores the newest snapshot entry standing; the files it put back are returned to `/refine undo` | `Undone` |
//! | [`UserCommand::Confirm`] | asks the yes-or-no question | `Confirmed` |
//! | [`UserCommand::Ask`] | asks whether the shell or MCP call may run | `Answered` (or `Interrupted`) |
//! | [`UserCommand::AskGrant`] | asks whether the session may read the path | `Answered` (or `Interrupted`) |
//! | [`UserCommand::AskFetch`] | asks whether `web_fetch` may read the URL (y, always for its host, n) | `Answered` (or `Interrupted`) |
//! | [`UserCommand::AskOutside`] | asks whether the command may run outside the sandbox once | `Outside` |
//! | [`UserCommand::Refused`] | the text is returned (`Live::run_input`); the user's command fails with it | none |
//! | [`UserCommand::Show`] | tells the user (stderr, or the REPL's terminal) | none |

use std::collections::BTreeSet;

use time::OffsetDateTime;

use super::Opened;
use crate::prompt;
use crate::record::{Header, Record, ToolCall};
use crate::request::Request;
use crate::tools::Tool;

/// Something that happened, as the shell reports it, by family (see the
/// module doc).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    /// The user's line, a command of theirs, an answer to a question, or
    /// Ctrl-C.
    User(UserInput),
    /// An answer from the model (or the server) to a [`ModelCommand`].
    Model(ModelInput),
    /// A tool's result, answering a [`ToolCommand`].
    Tool(ToolInput),
    /// An answer to a [`FileCommand`], or what a resume finds on disk.
    File(FileInput),
    /// An answer to a [`MemoryCommand`].
    Memory(MemoryInput),
}

/// What the user did. `now` is always when the shell saw it happen (the
/// session's only clock).
#[derive(Clone, Debug, PartialEq, Eq)]
// Each variant's doc says what its fields are.
#[allow(missing_docs)]
pub enum UserInput {
    /// The user sent a line: one input carrying what the turn goes out
    /// with ([`TurnContext`]). An empty line sends only its context
    /// (asking the model when inbox messages were taken).
    Line {
        text: String,
        context: TurnContext,
        now: OffsetDateTime,
    },
    /// The user's answer to [`UserCommand::Confirm`].
    Confirmed { yes: bool, now: OffsetDateTime },
    /// The user's answer to a [`UserCommand::Ask`] or
    /// [`UserCommand::AskGrant`].
    Answered {
        id: String,
        answer: crate::edit::Answer,
        now: OffsetDateTime,
    },
    /// The user's answer to a [`UserCommand::AskOutside`].
    Outside {
        id: String,
        yes: bool,
        now: OffsetDateTime,
    },
    /// The user interrupted the request, the tool or the question in
    /// flight; `partial` is what the model had streamed.
    Interrupted {
        partial: String,
        now: OffsetDateTime,
    },
    /// The session started (`source` `startup`) or resumed (`resume`):
    /// its `SessionStart` hooks run.
    Start { source: String },
    /// The user asked to compact now (`/compact`).
    Compact { now: OffsetDateTime },
    /// Refine the memory: the user asked (`/refine`), or, with `auto`, the
    /// shell found one due ([`super::Session::refine_due`]). `files` are
    /// the memory files as they are now. `chain` is what `/refine` reads:
    /// the session's every file of its chain, one
    /// [`crate::refine::block`] per message (an automatic refinement reads
    /// what this file added since the last one, and ignores it). The core
    /// decides the parts, asks about the cost ([`UserCommand::Confirm`]),
    /// sends each part ([`ModelCommand::Refine`]), judges the answers and
    /// asks for the snapshot and the writes ([`MemoryCommand::Snapshot`]);
    /// `refining` and `refined` records log it.
    Refine {
        auto: bool,
        files: Vec<crate::memory::MemoryFile>,
        chain: Vec<String>,
        now: OffsetDateTime,
    },
    /// The user asked to undo the last memory change (`/refine undo`).
    Undo,
    /// The user lets a turn that was stopped after its last tool results
    /// (the tool-round cap) go on: the request is sent, with as many tool
    /// rounds again, its system prompt built from `parts` (read now).
    GoOn {
        parts: prompt::Parts,
        now: OffsetDateTime,
    },
    /// Plan mode on or off (`--plan`, `/plan`, `/plan off`).
    Plan { on: bool, now: OffsetDateTime },
    /// `/model NAME`: ask `model` from the next request on, with its
    /// window from the table of known models (else the current one).
    Model { model: String, now: OffsetDateTime },
    /// `--effort`, `/effort`: the reasoning effort from the next request
    /// on (logged only when it changes).
    Effort {
        effort: Option<crate::models::Effort>,
        now: OffsetDateTime,
    },
    /// `/max-cost USD` (`/max-cost off`): the session's cost limit from
    /// now on, in nano-dollars, in place of `--max-cost`'s (a setting of
    /// this run, not logged).
    MaxCost { max: Option<u64> },
    /// `!COMMAND` in the REPL: the user ran a shell command themselves
    /// (the shell ran it under the session's sandbox); the command and
    /// its output join the conversation as a user message the next
    /// request carries.
    Ran {
        command: String,
        output: String,
        now: OffsetDateTime,
    },
    /// The user asked for a new name; `used` are the names other sessions of
    /// this directory have.
    Rename {
        name: String,
        used: BTreeSet<String>,
        now: OffsetDateTime,
    },
    /// An unnamed session resumed in the REPL needs an address (for `revolve
    /// send` and `revolve attach`): it gets a generated name, the first one
    /// not in `used`, which keeps it unlisted. A session with a name is left
    /// as it is.
    Address {
        used: BTreeSet<String>,
        now: OffsetDateTime,
    },
    /// Take back the last `turns` turns (`/rewind`, `revolve rewind`), or
    /// with `undo` the last rewind. `on_disk` is the hash each file of
    /// [`crate::edit::tracked_paths`] has now (`None`: not there).
    Rewind {
        turns: usize,
        scope: crate::edit::Scope,
        undo: bool,
        force: bool,
        on_disk: std::collections::BTreeMap<String, Option<String>>,
        now: OffsetDateTime,
    },
    /// Messages arrived in the inbox of an idle REPL (`revolve send`,
    /// `revolve attach`): taken as [`TurnContext::inbox`] is, and the
    /// model is asked at once, with a system prompt built from `parts`.
    Inbox {
        messages: Vec<Delivery>,
        parts: prompt::Parts,
        now: OffsetDateTime,
    },
}

/// What a user's line goes out with, read by the shell just before it
/// (codex's `Op::UserTurn`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TurnContext {
    /// What the system prompt is built from now (instructions, memory
    /// files, skills, goal).
    pub parts: prompt::Parts,
    /// The MCP tools the servers offer now (see [`crate::mcp::offered`]),
    /// `None` when no MCP server is configured: logged as an `mcp_tools`
    /// record when the list changed (never while busy).
    pub mcp_tools: Option<Vec<crate::mcp::McpTool>>,
    /// Messages found in the session's inbox (`revolve send`, `revolve
    /// attach`), in any order. Those taken already (numbered at or below
    /// [`crate::record::Totals::delivered`]) are dropped; the rest become
    /// user messages marked with their origin, oldest first, logged and
    /// synced before the line, and go out with its request. While a turn
    /// runs, nothing is taken. After the commands ran, the shell removes
    /// from the inbox every message up to `delivered`.
    pub inbox: Vec<Delivery>,
    /// The images attached to the line (`@path` of a picture, `--image`),
    /// read, scaled and stored by the shell (issue 44): they go out with
    /// the user's message, or, when the model is known to read none, the
    /// line is refused before anything is logged or sent.
    pub images: Vec<crate::record::Image>,
}

/// What the model (or its server) answered.
#[derive(Clone, Debug, PartialEq, Eq)]
// Each variant's doc says what its fields are.
#[allow(missing_docs)]
pub enum ModelInput {
    /// The model answered the request in flight ([`ModelCommand::Call`]).
    Reply { reply: Reply, now: OffsetDateTime },
    /// The request in flight failed; `partial` is what had streamed.
    Failed {
        error: String,
        partial: String,
        now: OffsetDateTime,
    },
    /// The request in flight ([`ModelCommand::Call`] or
    /// [`ModelCommand::Summarize`]) was refused because it did not fit the
    /// server's context (the shell recognised it with
    /// [`crate::overflow::recognise`]); `limit` is the context size the
    /// server named, if it named one.
    Overflowed {
        error: String,
        limit: Option<u64>,
        /// The server's count of the refused request, when it gave one.
        asked: Option<u64>,
        now: OffsetDateTime,
    },
    /// The server's count of the request of [`ModelCommand::Count`], in
    /// tokens; `None` when it could not count it (the request then goes on
    /// by the estimate).
    Counted {
        tokens: Option<u64>,
        now: OffsetDateTime,
    },
    /// The model wrote the working notes a [`ModelCommand::Summarize`]
    /// asked for; `new_id` is the id of the file the session goes on in.
    Summarized {
        reply: Reply,
        new_id: String,
        now: OffsetDateTime,
    },
    /// The summary request failed; the session goes on uncompacted.
    SummaryFailed { error: String, now: OffsetDateTime },
    /// The model answered the request of a [`ModelCommand::Refine`].
    RefineReply { reply: Reply, now: OffsetDateTime },
    /// The request of a [`ModelCommand::Refine`] failed.
    RefineFailed { error: String, now: OffsetDateTime },
}

/// A tool's result.
#[derive(Clone, Debug, PartialEq, Eq)]
// Each variant's doc says what its fields are.
#[allow(missing_docs)]
pub enum ToolInput {
    /// A tool the session asked for finished ([`ToolCommand::Run`],
    /// [`ToolCommand::CallMcp`]). `grant` is the path (canonical) a
    /// `request_file_grant` asks for, which the core grants, asks about
    /// or refuses; its `output` is then unused. `effects` is what the tool
    /// did besides its output, logged before the result. `parts` is what
    /// the system prompt is built from after it (a tool may have changed
    /// memory or the goal), `None` when it cannot have changed them.
    Done {
        id: String,
        output: String,
        grant: Option<String>,
        effects: ToolEffects,
        parts: Option<prompt::Parts>,
        now: OffsetDateTime,
    },
    /// The children a [`ToolCommand::Delegate`] ran ended (or Ctrl-C
    /// stopped them: `interrupted`), each with its answer, in call order.
    Delegated {
        ends: Vec<TaskEnd>,
        interrupted: bool,
        now: OffsetDateTime,
    },
    /// The shell call `id` ended with output that reads like the sandbox
    /// refused it (in place of its [`ToolInput::Done`]); `effects` and
    /// `parts` as there.
    SandboxRefused {
        id: String,
        output: String,
        effects: ToolEffects,
        parts: Option<prompt::Parts>,
        now: OffsetDateTime,
    },
    /// The hook of a [`ToolCommand::Hook`] ran, and ended as `ran`.
    Hooked {
        ran: crate::hooks::Ran,
        now: OffsetDateTime,
    },
}

impl ToolInput {
    /// The tool call it is the result of.
    pub fn id(&self) -> &str {
        match self {
            ToolInput::Done { id, .. } | ToolInput::SandboxRefused { id, .. } => id,
            ToolInput::Delegated { ends, .. } => ends.first().map_or("", |e| e.id.as_str()),
            ToolInput::Hooked { .. } => "",
        }
    }

    /// Takes out the prompt's parts it carries.
    pub fn take_parts(&mut self) -> Option<prompt::Parts> {
        match self {
            ToolInput::Done { parts, .. } | ToolInput::SandboxRefused { parts, .. } => parts.take(),
            ToolInput::Delegated { .. } => None,
            ToolInput::Hooked { .. } => None,
        }
    }
}

/// What the files beside the log hold, answering a [`FileCommand`].
#[derive(Clone, Debug, PartialEq, Eq)]
// Each variant's doc says what its fields are.
#[allow(missing_docs)]
pub enum FileInput {
    /// The file a [`FileCommand::Open`] asked for, or why it cannot be
    /// edited.
    Opened {
        id: String,
        opened: Result<Opened, String>,
        /// The API keys of this process: what the model, the log and the
        /// terminal are shown of the file hides them, and a `[key]` the
        /// model writes back where the file held one stays the key
        /// ([`crate::edit::View`]). Held for the edit only, never logged.
        keys: crate::edit::Keys,
        now: OffsetDateTime,
    },
    /// A [`FileCommand::Stage`] ran: the hash of the new content, the
    /// user's answer when asked, or why the contents could not be stored.
    Staged {
        id: String,
        answer: Option<crate::edit::Answer>,
        after: String,
        error: Option<String>,
        now: OffsetDateTime,
    },
    /// A [`FileCommand::Write`] ran (`error` when the file is unchanged).
    Wrote {
        id: String,
        error: Option<String>,
        now: OffsetDateTime,
    },
    /// The files of the rewind logged as `rewinding`
    /// ([`crate::state::State::pending_rewind`]) were restored
    /// ([`FileCommand::Restore`]), or, with `resumed`, a resume found it
    /// unfinished: what each of its files holds now (`None`: not there)
    /// and why a restore failed, by path. Core logs the `rewound` of what
    /// was done.
    Restored {
        on_disk: std::collections::BTreeMap<String, Option<String>>,
        errors: std::collections::BTreeMap<String, String>,
        resumed: bool,
        now: OffsetDateTime,
    },
    /// At a resume, what the file of the edit a crash left unwritten
    /// ([`crate::state::State::pending_edit`]) holds now: its hash, `None`
    /// when absent.
    Found {
        hash: Option<String>,
        now: OffsetDateTime,
    },
}

impl FileInput {
    /// The edit call it answers about (none for a rewind's or a resume's).
    pub fn edit_id(&self) -> Option<&str> {
        match self {
            FileInput::Opened { id, .. }
            | FileInput::Staged { id, .. }
            | FileInput::Wrote { id, .. } => Some(id),
            FileInput::Restored { .. } | FileInput::Found { .. } => None,
        }
    }
}

/// What the memory commands did.
#[derive(Clone, Debug, PartialEq, Eq)]
// Each variant's doc says what its fields are.
#[allow(missing_docs)]
pub enum MemoryInput {
    /// The memory was changed, snapshot first, as
    /// [`MemoryCommand::Snapshot`] asked: `entry` is the snapshot entry
    /// taken; logged as `memory_changed` with the `by` and the files of
    /// the snapshot core asked for, then the refinement ends as `refined`.
    Changed { entry: String, now: OffsetDateTime },
    /// The undo [`MemoryCommand::Undo`] asked for ran: the entry it
    /// restored (none when there was nothing to undo) and what it did to
    /// each file.
    Undone {
        entry: Option<String>,
        files: Vec<String>,
        now: OffsetDateTime,
    },
}

impl Input {
    /// The variant's name, as the protocol table names it
    /// (`ToolInput::Done`).
    pub fn name(&self) -> &'static str {
        match self {
            Input::User(UserInput::Line { .. }) => "UserInput::Line",
            Input::User(UserInput::Confirmed { .. }) => "UserInput::Confirmed",
            Input::User(UserInput::Answered { .. }) => "UserInput::Answered",
            Input::User(UserInput::Outside { .. }) => "UserInput::Outside",
            Input::User(UserInput::Interrupted { .. }) => "UserInput::Interrupted",
            Input::User(UserInput::Start { .. }) => "UserInput::Start",
            Input::User(UserInput::Compact { .. }) => "UserInput::Compact",
            Input::User(UserInput::Refine { .. }) => "UserInput::Refine",
            Input::User(UserInput::Undo) => "UserInput::Undo",
            Input::User(UserInput::GoOn { .. }) => "UserInput::GoOn",
            Input::User(UserInput::Plan { .. }) => "UserInput::Plan",
            Input::User(UserInput::Model { .. }) => "UserInput::Model",
            Input::User(UserInput::Effort { .. }) => "UserInput::Effort",
            Input::User(UserInput::MaxCost { .. }) => "UserInput::MaxCost",
            Input::User(UserInput::Ran { .. }) => "UserInput::Ran",
            Input::User(UserInput::Rename { .. }) => "UserInput::Rename",
            Input::User(UserInput::Address { .. }) => "UserInput::Address",
            Input::User(UserInput::Rewind { .. }) => "UserInput::Rewind",
            Input::User(UserInput::Inbox { .. }) => "UserInput::Inbox",
            Input::Model(ModelInput::Reply { .. }) => "ModelInput::Reply",
            Input::Model(ModelInput::Failed { .. }) => "ModelInput::Failed",
            Input::Model(ModelInput::Overflowed { .. }) => "ModelInput::Overflowed",
            Input::Model(ModelInput::Counted { .. }) => "ModelInput::Counted",
            Input::Model(ModelInput::Summarized { .. }) => "ModelInput::Summarized",
            Input::Model(ModelInput::SummaryFailed { .. }) => "ModelInput::SummaryFailed",
            Input::Model(ModelInput::RefineReply { .. }) => "ModelInput::RefineReply",
            Input::Model(ModelInput::RefineFailed { .. }) => "ModelInput::RefineFailed",
            Input::Tool(ToolInput::Done { .. }) => "ToolInput::Done",
            Input::Tool(ToolInput::SandboxRefused { .. }) => "ToolInput::SandboxRefused",
            Input::Tool(ToolInput::Delegated { .. }) => "ToolInput::Delegated",
            Input::Tool(ToolInput::Hooked { .. }) => "ToolInput::Hooked",
            Input::File(FileInput::Opened { .. }) => "FileInput::Opened",
            Input::File(FileInput::Staged { .. }) => "FileInput::Staged",
            Input::File(FileInput::Wrote { .. }) => "FileInput::Wrote",
            Input::File(FileInput::Restored { .. }) => "FileInput::Restored",
            Input::File(FileInput::Found { .. }) => "FileInput::Found",
            Input::Memory(MemoryInput::Changed { .. }) => "MemoryInput::Changed",
            Input::Memory(MemoryInput::Undone { .. }) => "MemoryInput::Undone",
        }
    }
}
/// What a tool did besides its output, carried by its result
/// ([`ToolInput::Done`], [`ToolInput::SandboxRefused`]) and logged before it,
/// in this order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolEffects {
    /// What a `shell` command changed in its git repository: `edit`
    /// records by `shell`.
    pub changes: Vec<crate::edit::Change>,
    /// A `shell` command ran outside a git repository: what it changed is
    /// not tracked (the user is told once a run).
    pub untracked: bool,
    /// The file `read_file` read whole (canonical) and the hash of its
    /// content: a `seen` record, so a later edit knows it was read.
    pub seen: Option<Box<(String, String)>>,
    /// The memory change `remember` made (snapshot first):
    /// `memory_changed`.
    pub memory: Option<MemoryWrite>,
    /// What happened to a background command (`shell` with `background`,
    /// `shell_output`, `shell_kill`): its id and the event, a `background`
    /// record.
    pub background: Option<(String, crate::record::BackgroundEvent)>,
    /// The picture `read_file` read (issue 44), scaled and stored by the
    /// shell: the result carries it (unless the model reads no images).
    pub image: Option<Box<crate::record::Image>>,
    /// The page `web_fetch` read (its bytes put in the content store):
    /// a `fetched` record.
    pub fetched: Option<Box<crate::record::Fetched>>,
}

/// One `task` call to run as a child session ([`ToolCommand::Delegate`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delegation {
    /// The call.
    pub id: String,
    /// What it does, in a few words (the live line).
    pub description: String,
    /// The child's whole task.
    pub prompt: String,
    /// The definition it runs under, when one was named.
    pub subagent: Option<String>,
    /// The built-in tools it offers ([`crate::agents::allowed`]).
    pub tools: Vec<String>,
    /// The model it asks, when its definition names one.
    pub model: Option<String>,
    /// Its `--max-cost`: its share of what is left of the parent's.
    pub budget: Option<u64>,
    /// The parent plans: so does the child.
    pub planning: bool,
}

/// How one child ended ([`ToolInput::Delegated`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskEnd {
    /// The call.
    pub id: String,
    /// Its answer (the call's result), or why there is none (`error:`).
    pub answer: String,
    /// The child's session, log and what it spent (its `at` unused).
    pub record: crate::record::Delegated,
}

/// A memory change a tool made as it ran (`remember`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryWrite {
    /// The snapshot entry taken before the write.
    pub entry: String,
    /// What it did to each file (`project/NAME.md: created: …`).
    pub files: Vec<String>,
}

/// One message from the inbox.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    /// Its number in the inbox.
    pub seq: u64,
    /// Who sent it.
    pub from: String,
    /// The message as the sender wrote it.
    pub text: String,
}

/// A complete answer from the model.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reply {
    /// The answer's text, as streamed.
    pub text: String,
    /// The tools the model calls, in order.
    pub tool_calls: Vec<ToolCall>,
    /// The provider's token counts, when it gave them.
    pub usage: Option<Usage>,
    /// The answer stopped at the request's limit on its length
    /// (`finish_reason: "length"`, Anthropic's `stop_reason: "max_tokens"`):
    /// kept as it came, and the turn says it was cut.
    pub truncated: bool,
    /// The thinking blocks the answer began with (Anthropic's extended
    /// thinking), kept with the message to be sent back.
    pub thinking: Vec<crate::record::Thinking>,
}

/// Token counts of one request, as the provider reported them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    /// All input tokens, the cached ones included.
    pub prompt_tokens: u64,
    /// Output tokens, thinking included.
    pub completion_tokens: u64,
    /// Of `prompt_tokens`, those read from the provider's prompt cache
    /// (Anthropic's `cache_read_input_tokens`, OpenAI's
    /// `prompt_tokens_details.cached_tokens`).
    pub cache_read_tokens: u64,
    /// Of `prompt_tokens`, those written to the prompt cache (Anthropic's
    /// `cache_creation_input_tokens`; OpenAI does not report them).
    pub cache_write_tokens: u64,
}

/// Something the shell must do, by family: each family has one executor
/// (see the module doc).
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use = "the shell must execute every command, in order"]
pub enum Command {
    /// The session file.
    Log(LogCommand),
    /// A request to the model.
    Model(ModelCommand),
    /// A tool to run.
    Tool(ToolCommand),
    /// A file beside the log: a spill, an edit, a rewind's restores.
    File(FileCommand),
    /// The memory's snapshots.
    Memory(MemoryCommand),
    /// Something to tell or ask the user.
    User(UserCommand),
}

/// What the log writer does. Nothing answers these.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LogCommand {
    /// Write this record as one line at the end of the log.
    Append(Record),
    /// A turn ended: flush and fsync the log.
    Sync,
    /// Create the session file that starts with this header (its first
    /// line), claim it as running, and append everything after this to it.
    StartFile(Header),
}

/// A request to the model, answered by a [`ModelInput`] (or
/// [`UserInput::Interrupted`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModelCommand {
    /// Send this request to the model; answer with [`ModelInput::Reply`],
    /// [`ModelInput::Failed`], [`ModelInput::Overflowed`] or
    /// [`UserInput::Interrupted`].
    Call(Request),
    /// Ask the model for working notes (without showing them); answer with
    /// [`ModelInput::Summarized`] (with a new session id),
    /// [`ModelInput::SummaryFailed`], [`ModelInput::Overflowed`] or
    /// [`UserInput::Interrupted`].
    Summarize(Request),
    /// Send this refinement request (logged as `refining` already), without
    /// showing the answer; answer with [`ModelInput::RefineReply`],
    /// [`ModelInput::RefineFailed`] or [`UserInput::Interrupted`].
    Refine(Request),
    /// Ask the server how many tokens this request's prompt holds, without
    /// an answer; answer with [`ModelInput::Counted`].
    Count(Request),
}

/// A tool to run, answered by a [`ToolInput`] (or
/// [`UserInput::Interrupted`]).
#[derive(Clone, Debug, PartialEq, Eq)]
// Each variant's doc says what its fields are.
#[allow(missing_docs)]
pub enum ToolCommand {
    /// Run this tool; answer with [`ToolInput::Done`] (errors are output
    /// starting `error:`), [`ToolInput::SandboxRefused`] or
    /// [`UserInput::Interrupted`], carrying the prompt parts read again
    /// after it. Paths outside the working tree may be read only when they
    /// are in `grants`.
    Run {
        id: String,
        tool: Tool,
        /// The call's arguments as the model wrote them (JSON text), for
        /// showing the call.
        arguments: String,
        grants: Vec<String>,
        /// The sandbox a command runs in.
        sandbox: Sandboxing,
    },
    /// Call `tool` of the MCP server `server` with `arguments` (the JSON
    /// text the model wrote) for call `id`, waiting at most `timeout_s`
    /// seconds; answer with [`ToolInput::Done`] (the text of
    /// [`crate::mcp::result_text`], or of [`crate::mcp::failed`]).
    CallMcp {
        id: String,
        server: String,
        tool: String,
        arguments: String,
        timeout_s: u64,
    },
    /// Run these `task` calls as child sessions, side by side (at most
    /// [`crate::policy::PARALLEL_TASKS`] at once); answer with
    /// [`ToolInput::Delegated`].
    Delegate { tasks: Vec<Delegation> },
    /// Run this hook (see [`crate::hooks`]) with its input: the shell
    /// adds where it runs ([`crate::hooks::Place`]) and writes it with
    /// [`crate::hooks::stdin`]; answer with [`ToolInput::Hooked`].
    Hook(crate::hooks::Next),
}

/// A file beside the log, answered by a [`FileInput`] (a spill by
/// nothing).
#[derive(Clone, Debug, PartialEq, Eq)]
// Each variant's doc says what its fields are.
#[allow(missing_docs)]
pub enum FileCommand {
    /// Write `content` whole to the file at `path` (creating its folder)
    /// before executing the next command.
    Spill { path: String, content: String },
    /// Open the file an edit names (confined like `read_file`, which it
    /// need not exist to be); answer with [`FileInput::Opened`].
    Open {
        id: String,
        path: String,
        /// The edit call, parsed, and its arguments as the model wrote
        /// them: shown as the call, and its result once logged.
        tool: Tool,
        arguments: String,
        grants: Vec<String>,
    },
    /// Store `before` (when the file exists) and `after` in the content
    /// store; with `ask`, show `diff` and ask the user (y, a, n); answer
    /// with [`FileInput::Staged`]. Nothing is written to the file yet.
    Stage {
        id: String,
        /// How the question names the file (the model's path, or the
        /// canonical one marked as outside the working tree).
        shown: String,
        /// The content before, with the hash the shell gave it when it
        /// opened the file (stored under it without hashing again).
        before: Option<(Vec<u8>, String)>,
        after: Vec<u8>,
        diff: String,
        ask: bool,
        /// Asked as this write only: "always" is not offered (a write
        /// outside the working tree).
        once: bool,
    },
    /// Write `content` to `path` atomically (temp file, rename), with
    /// `mode` when given (the file's own), relative to a folder handle
    /// that no symlink swap can redirect, and only if the file still
    /// holds `expect` (`None`: still absent), checked and replaced under
    /// a lock as one step; answer with [`FileInput::Wrote`].
    Write {
        id: String,
        path: String,
        content: Vec<u8>,
        mode: Option<u32>,
        expect: Option<String>,
    },
    /// Put each file back to the content of hash `to` from the content
    /// store (`None`: remove it), storing what it holds first.
    /// Answer with [`FileInput::Restored`], whatever happened.
    Restore(Vec<crate::record::Restore>),
}

/// The memory's snapshots, answered by a [`MemoryInput`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemoryCommand {
    /// Take a snapshot entry of the memory as it is, named `entry` (or the
    /// next free name in that second), with `meta`, then write `changes`;
    /// answer with [`MemoryInput::Changed`] naming the entry taken.
    Snapshot {
        /// The entry's name.
        entry: String,
        /// Who changes the memory.
        by: crate::record::ChangedBy,
        /// The writes, after the snapshot.
        changes: Vec<crate::refine::Change>,
        /// What the entry's `meta.cfg` says.
        meta: crate::memory::SnapshotMeta,
    },
    /// Restore the newest snapshot entry still standing; answer with
    /// [`MemoryInput::Undone`].
    Undo,
}

/// Something to tell or ask the user; a question is answered by a
/// [`UserInput`].
#[derive(Clone, Debug, PartialEq, Eq)]
// Each variant's doc says what its fields are.
#[allow(missing_docs)]
pub enum UserCommand {
    /// Ask the user this yes-or-no question (a costly compaction or
    /// refinement); answer with [`UserInput::Confirmed`].
    Confirm(String),
    /// Ask the user whether the shell call `id` may run `command` (y, a,
    /// n); answer with [`UserInput::Answered`].
    Ask { id: String, command: String },
    /// Ask the user whether the session may read `path` (canonical), for
    /// `request_file_grant` call `id` (y, n); answer with
    /// [`UserInput::Answered`].
    AskGrant {
        id: String,
        path: String,
        reason: Option<String>,
    },
    /// Ask the user whether the `web_fetch` call `id` may read `url`, from
    /// `host` (y; a: every page of that host this session; n); answer
    /// with [`UserInput::Answered`].
    AskFetch {
        id: String,
        url: String,
        host: String,
    },
    /// Ask the user whether the shell call `id`, whose `command` the
    /// sandbox seems to have refused, may run once outside it; answer with
    /// [`UserInput::Outside`].
    AskOutside { id: String, command: String },
    /// Tell the user why what they asked (a rewind) is refused: the
    /// command that asked fails with this text.
    Refused(String),
    /// Tell the user (stderr in pipe mode, the terminal in the REPL).
    Show(String),
}

impl Command {
    /// [`UserCommand::Show`]: tell the user `text`.
    pub fn show(text: String) -> Command {
        Command::User(UserCommand::Show(text))
    }

    /// [`LogCommand::Append`] of `record`.
    pub fn append(record: Record) -> Command {
        Command::Log(LogCommand::Append(record))
    }

    /// [`LogCommand::Sync`].
    pub fn sync() -> Command {
        Command::Log(LogCommand::Sync)
    }
}

/// The sandbox a tool's command runs in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sandboxing {
    /// The session's (`--sandbox`).
    Session,
    /// Read-only (plan mode).
    ReadOnly,
    /// None: the user let this one command run outside it.
    Off,
}

#[cfg(test)]
mod tests {
    use super::{
        FileCommand, FileInput, LogCommand, MemoryCommand, MemoryInput, ModelCommand, ModelInput,
        ToolCommand, ToolInput, UserCommand, UserInput,
    };

    /// The names of an enum's variants, from a `match` that stops
    /// compiling when a variant is added and not listed here.
    macro_rules! variants {
        ($ty:ident: $($v:ident),* $(,)?) => {{
            #[allow(dead_code)]
            fn every(x: &$ty) {
                match x {
                    $($ty::$v { .. } => {})*
                }
            }
            vec![$(stringify!($v)),*]
        }};
    }

    /// The first cells of the rows of this module doc's tables that name
    /// variants of `ty`: `//! | [`UserInput::Line`] | ...`.
    fn rows(ty: &str) -> Vec<String> {
        let doc = include_str!("protocol.rs");
        let start = format!("//! | [`{ty}::");
        let mut rows: Vec<String> = doc
            .lines()
            .take_while(|l| l.starts_with("//!"))
            .filter_map(|l| l.strip_prefix(&start))
            .filter_map(|rest| rest.split_once("`]").map(|(name, _)| name.to_owned()))
            .collect();
        rows.sort();
        rows
    }

    fn sorted(names: Vec<&str>) -> Vec<String> {
        let mut names: Vec<String> = names.into_iter().map(str::to_owned).collect();
        names.sort();
        names
    }

    #[test]
    fn every_input_has_one_row_in_the_protocol_table() {
        let families = [
            (
                "UserInput",
                variants!(UserInput: Line, Confirmed, Answered, Outside, Interrupted, Start, Compact,
                    Refine, Undo, GoOn, Plan, Model, Effort, MaxCost, Ran, Rename, Address,
                    Rewind, Inbox),
            ),
            (
                "ModelInput",
                variants!(ModelInput: Reply, Failed, Overflowed, Counted, Summarized,
                    SummaryFailed, RefineReply, RefineFailed),
            ),
            (
                "ToolInput",
                variants!(ToolInput: Done, SandboxRefused, Delegated, Hooked),
            ),
            (
                "FileInput",
                variants!(FileInput: Opened, Staged, Wrote, Restored, Found),
            ),
            ("MemoryInput", variants!(MemoryInput: Changed, Undone)),
        ];
        for (ty, names) in families {
            assert_eq!(
                rows(ty),
                sorted(names),
                "core/src/session/protocol.rs: one row per {ty} variant"
            );
        }
    }

    #[test]
    fn every_command_has_one_row_in_the_protocol_table() {
        let families = [
            ("LogCommand", variants!(LogCommand: Append, Sync, StartFile)),
            (
                "ModelCommand",
                variants!(ModelCommand: Call, Summarize, Refine, Count),
            ),
            (
                "ToolCommand",
                variants!(ToolCommand: Run, CallMcp, Delegate, Hook),
            ),
            (
                "FileCommand",
                variants!(FileCommand: Spill, Open, Stage, Write, Restore),
            ),
            ("MemoryCommand", variants!(MemoryCommand: Snapshot, Undo)),
            (
                "UserCommand",
                variants!(UserCommand: Confirm, Ask, AskGrant, AskFetch, AskOutside, Refused, Show),
            ),
        ];
        for (ty, names) in families {
            assert_eq!(
                rows(ty),
                sorted(names),
                "core/src/session/protocol.rs: one row per {ty} variant"
            );
        }
    }

    #[test]
    fn every_input_is_named_as_its_row() {
        let now = time::OffsetDateTime::UNIX_EPOCH;
        let input = super::Input::Tool(ToolInput::SandboxRefused {
            id: "c1".into(),
            output: String::new(),
            effects: Default::default(),
            parts: None,
            now,
        });
        assert_eq!(input.name(), "ToolInput::SandboxRefused");
        let doc = include_str!("protocol.rs");
        assert!(doc.contains(&format!("//! | [`{}`]", input.name())));
    }
}
