//! The session's protocol with the shell: what happened ([`Input`]), what
//! must happen ([`Command`]), and what the session needs to know that the
//! log does not say ([`Settings`]).

use std::collections::BTreeSet;

use time::OffsetDateTime;

use super::Opened;
use crate::prompt;
use crate::record::{Header, Record, ToolCall};
use crate::request::Request;
use crate::tools::Tool;

/// Something that happened, as the shell reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
// Each variant's doc says what its fields are; `now` is always when the
// shell saw it happen (the session's only clock).
#[allow(missing_docs)]
pub enum Input {
    /// The user sent a line.
    User { text: String, now: OffsetDateTime },
    /// The server's count of the request of [`Command::Count`], in tokens;
    /// `None` when it could not count it (the request then goes on by the
    /// estimate).
    Counted {
        tokens: Option<u64>,
        now: OffsetDateTime,
    },
    /// The user's answer to [`Command::Confirm`].
    Confirmed { yes: bool, now: OffsetDateTime },
    /// The model answered the request in flight.
    Reply { reply: Reply, now: OffsetDateTime },
    /// The request in flight failed; `partial` is what had streamed.
    Failed {
        error: String,
        partial: String,
        now: OffsetDateTime,
    },
    /// The request in flight was refused because it did not fit the
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
    /// The user interrupted the request or the tool in flight; `partial` is
    /// what the model had streamed.
    Interrupted {
        partial: String,
        now: OffsetDateTime,
    },
    /// A tool the session asked for finished. `grant` is the path (canonical)
    /// a `request_file_grant` asks for, which the core grants, asks about
    /// or refuses; its `output` is then unused. `effects` is what the tool
    /// did besides its output, logged before the result.
    ToolDone {
        id: String,
        output: String,
        grant: Option<String>,
        effects: ToolEffects,
        now: OffsetDateTime,
    },
    /// What the system prompt is built from now (memory files, goal): sent
    /// before each user line and after each tool, before its `ToolDone`.
    Prompt(prompt::Parts),
    /// Refine the memory: the user asked (`/refine`), or, with `auto`, the
    /// shell found one due ([`super::Session::refine_due`]). `files` are
    /// the memory files as they are now. `chain` is what `/refine` reads:
    /// the session's every file of its chain, one
    /// [`crate::refine::block`] per message (an automatic refinement reads
    /// what this file added since the last one, and ignores it). The core
    /// decides the parts, asks about the cost ([`Command::Confirm`]), sends
    /// each part ([`Command::Refine`]), judges the answers and asks for the
    /// snapshot and the writes ([`Command::Snapshot`]); `refining` and
    /// `refined` records log it.
    Refine {
        auto: bool,
        files: Vec<crate::memory::MemoryFile>,
        chain: Vec<String>,
        now: OffsetDateTime,
    },
    /// The model answered the request of a [`Command::Refine`].
    RefineReply { reply: Reply, now: OffsetDateTime },
    /// The request of a [`Command::Refine`] failed.
    RefineFailed { error: String, now: OffsetDateTime },
    /// The user asked to compact now (`/compact`).
    Compact { now: OffsetDateTime },
    /// The memory was changed, snapshot first, as [`Command::Snapshot`]
    /// asked: `entry` is the snapshot entry taken; logged as
    /// `memory_changed` with the `by` and the files of the snapshot core
    /// asked for, then the refinement ends as `refined`.
    MemoryChanged { entry: String, now: OffsetDateTime },
    /// The user asked to undo the last memory change (`/refine undo`).
    Undo,
    /// The undo [`Command::Undo`] asked for ran: the entry it restored (none
    /// when there was nothing to undo) and what it did to each file.
    Undone {
        entry: Option<String>,
        files: Vec<String>,
        now: OffsetDateTime,
    },
    /// The user lets a turn that was stopped after its last tool results
    /// (the tool-round cap) go on: the request is sent, with as many tool
    /// rounds again.
    GoOn { now: OffsetDateTime },
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
    /// The shell call `id` ended with output that reads like the sandbox
    /// refused it (in place of its [`Input::ToolDone`]); `effects` as
    /// there, logged first.
    SandboxRefused {
        id: String,
        output: String,
        effects: ToolEffects,
        now: OffsetDateTime,
    },
    /// The user's answer to a [`Command::AskOutside`].
    Outside {
        id: String,
        yes: bool,
        now: OffsetDateTime,
    },
    /// The model wrote the working notes a [`Command::Summarize`] asked
    /// for; `new_id` is the id of the file the session goes on in.
    Summarized {
        reply: Reply,
        new_id: String,
        now: OffsetDateTime,
    },
    /// The summary request failed; the session goes on uncompacted.
    SummaryFailed { error: String, now: OffsetDateTime },
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
    /// Messages found in the session's inbox (`revolve send`, `revolve
    /// attach`), in any order. Those taken already (numbered at or below
    /// [`Totals::delivered`]) are dropped; the rest become user messages
    /// marked with their origin, oldest first. With `answer` (an idle REPL)
    /// the model is asked at once; otherwise they go out with the request
    /// of the user's line, which the shell sends next. While a turn runs,
    /// nothing is taken. After the commands ran (the log synced), the shell
    /// removes from the inbox every message up to [`Totals::delivered`].
    Inbox {
        messages: Vec<Delivery>,
        answer: bool,
        now: OffsetDateTime,
    },
    /// The file a [`Command::Open`] asked for, or why it cannot be edited.
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
    /// A [`Command::Stage`] ran: the hash of the new content, the user's
    /// answer when asked, or why the contents could not be stored.
    Staged {
        id: String,
        answer: Option<crate::edit::Answer>,
        after: String,
        error: Option<String>,
        now: OffsetDateTime,
    },
    /// The MCP tools the servers offer now (see [`crate::mcp::offered`]),
    /// sent before a user turn: logged as an `mcp_tools` record when the
    /// list changed.
    McpTools {
        tools: Vec<crate::mcp::McpTool>,
        now: OffsetDateTime,
    },
    /// The user's answer to a [`Command::Ask`].
    Answered {
        id: String,
        answer: crate::edit::Answer,
        now: OffsetDateTime,
    },
    /// A [`Command::Write`] ran (`error` when the file is unchanged).
    Wrote {
        id: String,
        error: Option<String>,
        now: OffsetDateTime,
    },
    /// At a resume, what the file of the edit a crash left unwritten
    /// ([`State::pending_edit`]) holds now: its hash, `None` when absent.
    Found {
        hash: Option<String>,
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
    /// The files of the rewind logged as `rewinding`
    /// ([`State::pending_rewind`]) were restored ([`Command::Restore`]),
    /// or, with `resumed`, a resume found it unfinished: what each of its
    /// files holds now (`None`: not there) and why a restore failed, by
    /// path. Core logs the `rewound` of what was done.
    Restored {
        on_disk: std::collections::BTreeMap<String, Option<String>>,
        errors: std::collections::BTreeMap<String, String>,
        resumed: bool,
        now: OffsetDateTime,
    },
}

impl Input {
    /// The variant's name, as the protocol table names it.
    pub fn name(&self) -> &'static str {
        match self {
            Input::User { .. } => "User",
            Input::Counted { .. } => "Counted",
            Input::Confirmed { .. } => "Confirmed",
            Input::Reply { .. } => "Reply",
            Input::Failed { .. } => "Failed",
            Input::Overflowed { .. } => "Overflowed",
            Input::Interrupted { .. } => "Interrupted",
            Input::ToolDone { .. } => "ToolDone",
            Input::Prompt(_) => "Prompt",
            Input::Refine { .. } => "Refine",
            Input::RefineReply { .. } => "RefineReply",
            Input::RefineFailed { .. } => "RefineFailed",
            Input::Compact { .. } => "Compact",
            Input::MemoryChanged { .. } => "MemoryChanged",
            Input::Undo => "Undo",
            Input::Undone { .. } => "Undone",
            Input::GoOn { .. } => "GoOn",
            Input::Plan { .. } => "Plan",
            Input::Model { .. } => "Model",
            Input::Effort { .. } => "Effort",
            Input::MaxCost { .. } => "MaxCost",
            Input::SandboxRefused { .. } => "SandboxRefused",
            Input::Outside { .. } => "Outside",
            Input::Summarized { .. } => "Summarized",
            Input::SummaryFailed { .. } => "SummaryFailed",
            Input::Rename { .. } => "Rename",
            Input::Address { .. } => "Address",
            Input::Inbox { .. } => "Inbox",
            Input::Opened { .. } => "Opened",
            Input::Staged { .. } => "Staged",
            Input::McpTools { .. } => "McpTools",
            Input::Answered { .. } => "Answered",
            Input::Wrote { .. } => "Wrote",
            Input::Found { .. } => "Found",
            Input::Rewind { .. } => "Rewind",
            Input::Restored { .. } => "Restored",
        }
    }
}

/// What a tool did besides its output, carried by its result
/// ([`Input::ToolDone`], [`Input::SandboxRefused`]) and logged before it,
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
    pub seen: Option<(String, String)>,
    /// The memory change `remember` made (snapshot first):
    /// `memory_changed`.
    pub memory: Option<MemoryWrite>,
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

/// Something the shell must do.
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use = "the shell must execute every command, in order"]
// Each variant's doc says what its fields are.
#[allow(missing_docs)]
pub enum Command {
    /// Write this record as one line at the end of the log.
    Append(Record),
    /// A turn ended: flush and fsync the log.
    Sync,
    /// Send this request to the model; answer with [`Input::Reply`],
    /// [`Input::Failed`] or [`Input::Interrupted`].
    Call(Request),
    /// Run this tool; answer with [`Input::ToolDone`] (errors are output
    /// starting `error:`) or [`Input::Interrupted`]. Paths outside the working
    /// tree may be read only when they are in `grants`.
    RunTool {
        id: String,
        tool: Tool,
        /// The call's arguments as the model wrote them (JSON text), for
        /// showing the call.
        arguments: String,
        grants: Vec<String>,
        /// The sandbox a command runs in.
        sandbox: Sandboxing,
    },
    /// Ask the user whether the shell call `id`, whose `command` the
    /// sandbox seems to have refused, may run once outside it; answer with
    /// [`Input::Outside`].
    AskOutside { id: String, command: String },
    /// Write `content` whole to the file at `path` (creating its folder)
    /// before executing the next command.
    Spill { path: String, content: String },
    /// Send this refinement request (logged as `refining` already), without
    /// showing the answer; answer with [`Input::RefineReply`],
    /// [`Input::RefineFailed`] or [`Input::Interrupted`].
    Refine(Request),
    /// Ask the model for working notes (without showing them); answer with
    /// [`Input::Summarized`] (with a new session id), [`Input::SummaryFailed`]
    /// or [`Input::Interrupted`].
    Summarize(Request),
    /// Ask the server how many tokens this request's prompt holds, without
    /// an answer; answer with [`Input::Counted`].
    Count(Request),
    /// Ask the user this yes-or-no question (a costly compaction); answer
    /// with [`Input::Confirmed`].
    Confirm(String),
    /// Create the session file that starts with this header (its first
    /// line), claim it as running, and append everything after this to it.
    StartFile(Header),
    /// Take a snapshot entry of the memory as it is, named `entry` (or the
    /// next free name in that second), with `meta`, then write `changes`;
    /// answer with [`Input::MemoryChanged`] naming the entry taken.
    Snapshot {
        entry: String,
        by: crate::record::ChangedBy,
        changes: Vec<crate::refine::Change>,
        meta: crate::memory::SnapshotMeta,
    },
    /// Restore the newest snapshot entry still standing; answer with
    /// [`Input::Undone`].
    Undo,
    /// Open the file an edit names (confined like `read_file`, which it
    /// need not exist to be); answer with [`Input::Opened`].
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
    /// with [`Input::Staged`]. Nothing is written to the file yet.
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
    /// a lock as one step; answer with [`Input::Wrote`].
    Write {
        id: String,
        path: String,
        content: Vec<u8>,
        mode: Option<u32>,
        expect: Option<String>,
    },
    /// Put each file back to the content of hash `to` from the content
    /// store (`None`: remove it), storing what it holds first.
    /// Answer with [`Input::Restored`], whatever happened.
    Restore(Vec<crate::record::Restore>),
    /// Ask the user whether the shell call `id` may run `command` (y, a,
    /// n); answer with [`Input::Answered`].
    Ask { id: String, command: String },
    /// Call `tool` of the MCP server `server` with `arguments` (the JSON
    /// text the model wrote) for call `id`, waiting at most `timeout_s`
    /// seconds; answer with [`Input::ToolDone`] (the text of
    /// [`crate::mcp::result_text`], or of [`crate::mcp::failed`]).
    CallMcp {
        id: String,
        server: String,
        tool: String,
        arguments: String,
        timeout_s: u64,
    },
    /// Ask the user whether the session may read `path` (canonical), for
    /// `request_file_grant` call `id` (y, n); answer with
    /// [`Input::Answered`].
    AskGrant {
        id: String,
        path: String,
        reason: Option<String>,
    },
    /// Tell the user why what they asked (a rewind) is refused: the
    /// command that asked fails with this text.
    Refused(String),
    /// Tell the user (stderr in pipe mode, the terminal in the REPL).
    Show(String),
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

/// What a session needs to know that the log does not say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// A tool result longer than this many characters is spilled to a file.
    pub spill_chars: usize,
    /// The folder spilled results go to, absolute.
    pub spill_dir: String,
    /// A tool result longer than this is pruned by a compaction's first step.
    pub prune_chars: usize,
    /// The `limit`-th identical tool call in a row is refused, the next one
    /// ends the turn ([`guard::REPEAT_LIMIT`] by default).
    pub repeat_limit: u32,
    /// A turn ends after this many tool rounds ([`guard::MAX_TOOL_ROUNDS`]
    /// by default).
    pub max_tool_rounds: u32,
    /// Only this many tool calls of one answer run; the rest get an error
    /// result ([`crate::policy::MAX_CALLS_PER_ANSWER`] by default).
    pub max_calls_per_answer: u32,
    /// Edits need no approval (`--allow-edits`, `allow_edits`).
    pub allow_edits: bool,
    /// Shell commands need no approval (`--allow-shell`, `allow_shell`).
    pub allow_shell: bool,
    /// A user at a terminal can be asked to approve an edit, a command or
    /// a grant.
    pub interactive: bool,
    /// The permission rules (`--allow`, `--deny`, config `permissions`),
    /// decided before anyone is asked ([`crate::rules`]).
    pub rules: crate::rules::Rules,
    /// Paths the user granted up front (`--grant`), canonical: a
    /// `request_file_grant` of one, or of anything inside one, is granted
    /// without asking.
    pub granted: Vec<String>,
    /// The memory may be refined on its own when due (not
    /// `--no-auto-refine`).
    pub auto_refine: bool,
    /// `--bare`: no memory in this run, so none is refined.
    pub bare: bool,
    /// The server counts a request's tokens for free (llama.cpp, Ollama,
    /// Anthropic's count endpoint): a request the estimate says may not
    /// fit is counted first ([`Command::Count`]) when the estimate has no
    /// recent count behind it.
    pub counts: bool,
    /// Ask before a compaction or refinement that sends more than
    /// [`crate::compact::COSTLY_REQUESTS`] requests (not `--yes`, not
    /// `"confirm_costly": false`); asked only when `interactive`
    /// ([`Settings::asks_costly`]).
    pub confirm_costly: bool,
    /// MCP tool calls need no approval (`--allow-mcp`, `allow_mcp`).
    pub allow_mcp: bool,
    /// Seconds an MCP tool call may take (`mcp_timeout_s`).
    pub mcp_timeout_s: u64,
    /// The known models, whose prices the totals count the cost by.
    pub models: crate::models::Table,
    /// `--max-cost`, in nano-dollars: no request goes out that is expected
    /// to bring the session's cost past it (see
    /// [`crate::models::expected_cost`]).
    pub max_cost: Option<u64>,
}

impl Settings {
    /// A costly compaction or refinement is asked about first: the user
    /// wants to be asked, and a user at a terminal can answer.
    pub fn asks_costly(&self) -> bool {
        self.confirm_costly && self.interactive
    }

    /// A costly compaction or refinement is not run at all: the user
    /// wants to be asked, and no one is at a terminal to answer; it stops
    /// with a line saying how to allow it (`--yes`, `confirm_costly`).
    pub fn refuses_costly(&self) -> bool {
        self.confirm_costly && !self.interactive
    }
}

/// The default of `spill-result-chars`.
pub const SPILL_CHARS: usize = 32_000;

#[cfg(test)]
mod tests {
    use super::{Command, Input};

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

    /// The first cells of the rows of the session doc's table that name
    /// variants of `ty`: `//! | [`Input::User`] | ...`.
    fn rows(ty: &str) -> Vec<String> {
        let doc = include_str!("../session.rs");
        let start = format!("//! | [`{ty}::");
        doc.lines()
            .take_while(|l| l.starts_with("//!"))
            .filter_map(|l| l.strip_prefix(&start))
            .filter_map(|rest| rest.split_once("`]").map(|(name, _)| name.to_owned()))
            .collect()
    }

    #[test]
    fn every_input_has_one_row_in_the_protocol_table() {
        let names = variants!(Input: User, Counted, Confirmed, Reply, Failed, Overflowed,
            Interrupted, ToolDone, Prompt, Refine, RefineReply, RefineFailed, Compact, MemoryChanged,
            Undo, Undone, GoOn, Plan, Model, Effort, MaxCost, SandboxRefused, Outside, Summarized,
            SummaryFailed, Rename, Address, Inbox, Opened, Staged,
            McpTools, Answered, Wrote, Found, Rewind, Restored);
        let mut rows = rows("Input");
        rows.sort();
        let mut names: Vec<String> = names.into_iter().map(str::to_owned).collect();
        names.sort();
        assert_eq!(
            rows, names,
            "core/src/session.rs: one row per Input variant"
        );
    }

    #[test]
    fn every_command_has_one_row_in_the_protocol_table() {
        let names = variants!(Command: Append, Sync, Call, RunTool, AskOutside, Spill,
            Summarize, Refine, Count, Confirm, StartFile, Snapshot, Undo, Open, Stage, Write,
            Restore, Ask, CallMcp, AskGrant, Refused, Show);
        let mut rows = rows("Command");
        rows.sort();
        let mut names: Vec<String> = names.into_iter().map(str::to_owned).collect();
        names.sort();
        assert_eq!(
            rows, names,
            "core/src/session.rs: one row per Command variant"
        );
    }
}
