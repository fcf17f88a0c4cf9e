//! The session log: one JSON object per line, tagged by `"type"`.
//!
//! A session file is written as things happen and read back by folding its
//! records in order (see [`crate::State`]). This type is the format's
//! specification; each kind below shows one line as it is written.
//!
//! # Rules for readers and writers
//!
//! * The first line is a [`Header`]. Its `version` is [`FORMAT_VERSION`].
//!   Bytes before it (damage at the very start of a file) are skipped and
//!   reported, and the header is read from where it starts
//!   ([`Record::header_past_garbage`]). A log whose header has a newer
//!   version is read as well as it can be but never written to
//!   ([`Header::writable`]).
//! * `"type"` is always the first key, so a reader can dispatch on it without
//!   building a generic JSON value first ([`Record::parse_line`]).
//! * Fields added later carry `#[serde(default)]`, so older files still open.
//! * A reader skips a line whose `"type"` it does not know, and a torn or
//!   garbled line, counts what it skipped, and never refuses a whole file for
//!   one line.
//! * Times are RFC 3339 in UTC.
//!
//! # Kinds
//!
//! `header`, the first line of every file:
//! ```json
//! {"type":"header","version":5,"id":"20261202-102606-1a2b3c","name":"amber","named":false,"cwd":"/home/me/src/app","project":"/home/me/src/app","started":"2026-12-02T10:26:06Z","model":"gpt-4o-mini","window":128000,"provider":"openai","continues":null}
//! ```
//!
//! `context`, the system prompt, written before the request that first uses it
//! and again whenever it changes:
//! ```json
//! {"type":"context","at":"2026-12-02T10:26:10Z","system":"You are revolve, ..."}
//! ```
//!
//! `message`, a user or assistant message (`partial` marks an answer that was
//! cut off by an interruption or a failure; it is kept as it was streamed):
//! ```json
//! {"type":"message","at":"2026-12-02T10:26:10Z","role":"user","content":"hello"}
//! {"type":"message","at":"2026-12-02T10:26:12Z","role":"assistant","content":"Hi."}
//! ```
//!
//! An assistant message may call tools; each result is a `tool` message
//! naming the call it answers, appended as soon as the tool finished:
//! ```json
//! {"type":"message","at":"2026-12-02T10:26:13Z","role":"assistant","content":"","tool_calls":[{"id":"call_1","name":"read_file","arguments":"{\"path\":\"src/main.rs\"}"}]}
//! {"type":"message","at":"2026-12-02T10:26:13Z","role":"tool","content":"fn main() {}\n","tool_call_id":"call_1"}
//! ```
//!
//! `failed` and `interrupted`, a model request that ended without a complete
//! answer; the user's message stays and the next turn goes on from it:
//! ```json
//! {"type":"failed","at":"2026-12-02T10:26:12Z","error":"HTTP 503 from http://127.0.0.1:8080/v1/chat/completions"}
//! {"type":"interrupted","at":"2026-12-02T10:26:12Z"}
//! ```
//!
//! A message may carry images (issue 44): each names the bytes sent by
//! their hash in the content store (`<state>/blobs`), with the media type
//! and the size they went out at (see [`Image`]):
//! ```json
//! {"type":"message","at":"…","role":"user","content":"what is this? @shot.png","images":[{"hash":"sha256:5d1e…","media_type":"image/png","width":1568,"height":1568,"source":"shot.png"}]}
//! ```
//!
//! A turn interrupted while its tools ran first gets a result for every
//! call still open (saying it was interrupted), then
//! `{"type":"interrupted","at":"…","unsent":true}`: the request those
//! results were due for never went out.
//!
//! `model_changed`, `/model NAME` between turns: the requests after it ask
//! that model, declaring that window (a build before format 4 skips the
//! line):
//! ```json
//! {"type":"model_changed","at":"2026-12-02T10:30:00Z","model":"claude-opus-5","window":1000000}
//! ```
//!
//! An Anthropic answer given while thinking was on keeps its thinking
//! blocks (`thinking` with its `signature`, or `redacted_thinking` with
//! its `data`), which the requests after it send back unchanged:
//! ```json
//! {"type":"message","at":"2026-12-02T10:26:13Z","role":"assistant","content":"","tool_calls":[{"id":"toolu_1","name":"list_dir","arguments":"{\"path\":\".\"}"}],"thinking":[{"type":"thinking","thinking":"Look first.","signature":"EqQB…"}]}
//! ```
//!
//! `effort`, `--effort` or `/effort`: the reasoning effort the requests
//! after it ask (`reasoning_effort` on the Chat Completions wire; on the
//! Messages wire, from format 5, extended thinking, adaptive at that
//! effort or on its budget as the model takes it, see
//! [`crate::request::Think`]):
//! ```json
//! {"type":"effort","at":"2026-12-02T10:30:00Z","effort":"high"}
//! ```
//!
//! `totals`, the running totals after each turn (cumulative, so the last one
//! wins):
//! ```json
//! {"type":"totals","at":"2026-12-02T10:26:12Z","tokens_in":812,"tokens_out":40,"turns":1,"last_context":852,"estimated":false,"name":"amber"}
//! ```
//! `tokens_cached` and `tokens_cache_written`, the part of `tokens_in` the
//! provider read from and wrote to its prompt cache, are there only once
//! it reported some (a log without them read them as 0); so is `cost`, in
//! nano-dollars at the prices of the table of known models, and
//! `unpriced`, true once a request had no known price.
//!
//! `pruned`, a compaction's first step: the tool results at these indices
//! of the history were cut to head and tail in place (folding repeats the cut);
//! `compacting`, the summary request of step two going out (on the first
//! `cut` messages), and `compaction_failed` when its notes did not come;
//! `continued`, the last line of a file whose session went on in another
//! after a compaction; `compacted`, right after the header of that other
//! file (whose `continues` names the first): the working notes, the turns
//! kept verbatim and the totals carried over:
//! ```json
//! {"type":"pruned","at":"2026-12-02T12:00:00Z","messages":[14,31],"estimate":61000}
//! {"type":"compacting","at":"2026-12-02T12:00:01Z","cut":182}
//! ```
//!
//! When the part before the cut does not fit one summary request, it is
//! summarized in pieces cut at turn starts: each piece's `compacting` names
//! it (`from`, `upto`), its notes come back as `noted`, and the next piece's
//! request carries them; the last piece's notes go into `compacted`:
//! ```json
//! {"type":"compacting","at":"2026-12-02T12:00:01Z","cut":182,"upto":90}
//! {"type":"noted","at":"2026-12-02T12:00:04Z","upto":90,"notes":"Facts: …"}
//! {"type":"compacting","at":"2026-12-02T12:00:04Z","cut":182,"from":90}
//! {"type":"continued","at":"2026-12-02T12:00:05Z","next":"20261202-120005-0a1b2c"}
//! {"type":"compacted","at":"2026-12-02T12:00:05Z","from":"20261202-102606-1a2b3c","summarized":182,"notes":"Facts: …","kept":[…],"totals":{…}}
//! ```
//!
//! `refining`, a refinement's request, its body as sent (one per request:
//! a session larger than the window is read in parts), so `replay
//! --requests` gives it back; `refined`, the refinement ended (its
//! snapshot entry, if it changed anything, and how many requests it sent):
//! ```json
//! {"type":"refining","at":"2026-12-02T12:29:58Z","auto":true,"part":1,"of":1,"body":"{\"messages\":…}"}
//! {"type":"refined","at":"2026-12-02T12:30:00Z","auto":true,"entry":"20261202T123000Z","pieces":1}
//! ```
//! Files written before `refining` existed have the `refined` record
//! alone, which counts the requests it names.
//!
//! `stopped`, a turn core ended on its own (see [`crate::guard`]): the model
//! repeated a call, or the turn used up its tool rounds; every call still
//! open got a result saying it was not run. `went_on`, the user let a turn
//! stopped at its tool-round cap go on (the request is due again):
//! ```json
//! {"type":"stopped","at":"2026-12-02T12:10:00Z","reason":"repeated","tool":"read_file","times":4}
//! {"type":"stopped","at":"2026-12-02T12:20:00Z","reason":"tool_rounds","limit":100}
//! {"type":"went_on","at":"2026-12-02T12:20:09Z"}
//! ```
//!
//! `planning`, plan mode turned on or off (`--plan`, `/plan`, `/plan off`):
//! while on, edits and writes are refused and commands run read-only.
//! ```json
//! {"type":"planning","at":"2026-12-02T12:21:00Z","on":true}
//! ```
//!
//! `squeezed`, a tool result cut to a short head and tail so the request
//! fits the window (the last way the window gives way, after pruning and
//! keeping fewer turns): the message at that index, its whole text in `path`:
//! ```json
//! {"type":"squeezed","at":"2026-12-02T12:30:00Z","message":41,"path":"/…/spills/20261202-102606-1a2b3c/0042-squeezed-41.txt"}
//! ```
//!
//! `overflowed`, the server answered that the request was larger than its
//! context (see [`crate::overflow`]): the window the session goes on with
//! (the limit the server named, or below the size that failed); the same
//! request is due again, compacted to the new window:
//! ```json
//! {"type":"overflowed","at":"2026-12-02T12:31:00Z","error":"HTTP 400 Bad Request from …: the request exceeds the available context size","window":4096}
//! ```
//!
//! `counted`, the server's count of a request's prompt, asked before it
//! was sent (local servers only); it calibrates later estimates:
//! ```json
//! {"type":"counted","at":"2026-12-04T18:53:00Z","bytes":15008,"tokens":2322}
//! ```
//!
//! `memory_changed`, a change of the memory this session made (a
//! refinement or `remember`), after its snapshot entry; `memory_undone`, an
//! undo (`/refine undo`) and what it put back (`replay --check` verifies
//! both against the snapshot store):
//! ```json
//! {"type":"memory_changed","at":"2026-12-02T12:30:00Z","entry":"20261202T123000Z","by":"refine","files":["project/db.md: updated: the port moved"]}
//! {"type":"memory_undone","at":"2026-12-02T12:31:00Z","entry":"20261202T123000Z","files":["restored project/db.md"]}
//! ```
//!
//! `seen`, a file `read_file` read, with the hash of its whole content
//! then; `approved`, the user's answer to an edit; `edit`, a change of a
//! file decided and approved, logged before the file is written (both
//! contents are in the content store by their hashes); `written`, the
//! write's outcome (an `edit` without one is what a crash left: the next
//! resume logs what it found on disk). Changes a `shell` command made in a
//! git repository are `edit` records with `"by":"shell"` and
//! `"written":true`:
//! ```json
//! {"type":"seen","at":"…","path":"/home/me/src/app/src/a.rs","hash":"sha256:9f2c…"}
//! {"type":"approved","at":"…","call":"call_7","path":"/home/me/src/app/src/a.rs","answer":"always"}
//! {"type":"edit","at":"…","call":"call_7","path":"/home/me/src/app/src/a.rs","by":"edit_file","before":"sha256:9f2c…","after":"sha256:41ab…","diff":"--- a/src/a.rs\n+++ b/src/a.rs\n@@ …"}
//! {"type":"written","at":"…","call":"call_7","path":"/home/me/src/app/src/a.rs"}
//! ```
//!
//! `rewound`, a rewind: the turns from message `from` on left the
//! conversation (unless only files were rewound) and each file went back
//! from one content to another (`to` absent: removed, as revolve created
//! it); `undoes` names the rewind (by its place among the session's
//! rewinds) this one takes back:
//! ```json
//! {"type":"rewound","at":"…","turns":1,"from":12,"conversation":true,"files":[{"path":"/home/me/src/app/src/a.rs","from":"sha256:41ab…","to":"sha256:9f2c…"}]}
//! ```
//!
//! A rewind that restores files first logs its plan as `rewinding` (the
//! same fields), then restores, then logs `rewound` with only the files
//! found restored on disk (and, when some were not, only the turns none of
//! whose files failed). A `rewinding` with no `rewound` after it is a
//! rewind a crash cut short: the next resume looks at each file and logs
//! the `rewound` of what it finds. Logs without `rewinding` (older ones,
//! rewinds with no file) read as before.
//!
//! `resumed`, a later run picking the session up again (with the model and
//! window it runs with from then on); `renamed`, a new name:
//! ```json
//! {"type":"resumed","at":"2026-12-02T11:00:00Z","model":"gpt-4o-mini","window":128000,"provider":"openai"}
//! {"type":"renamed","at":"2026-12-02T11:00:05Z","name":"login-bug"}
//! ```
//!
//! `mcp_tools`, the MCP server tools offered from the next request on
//! (written before a turn whenever the list changes; an empty list: none
//! any more), after revolve's own tools in that order:
//! ```json
//! {"type":"mcp_tools","at":"2026-12-05T10:00:00Z","tools":[{"name":"mcp__git__log","server":"git","tool":"log","description":"Show the log.","input_schema":{"type":"object"}}]}
//! ```
//!
//! `hook`, a hook ran (see [`crate::hooks`]): the event, the command,
//! the tool call it ran for, its exit code (or `ended`: `killed`,
//! `timed_out`, `cut`, `failed`), its decision and what it added, rewrote
//! or told the user. What it changed for the model is in the records that
//! follow (the call's result, a user message, the system prompt), so
//! replay never runs a hook:
//! ```json
//! {"type":"hook","at":"…","event":"PreToolUse","command":"./no-rm.sh","call":"call_2","tool":"shell","exit":2,"decision":"block","reason":"rm is not allowed here"}
//! {"type":"hook","at":"…","event":"SessionStart","command":"git status -sb","exit":0,"decision":"go","added":"## main"}
//! ```
//!
//! `plan`, the plan an `update_plan` call set, whole (see [`crate::plan`];
//! without `call`: carried into the file a compaction continues in):
//! ```json
//! {"type":"plan","at":"…","call":"call_5","steps":[{"step":"read the code","status":"done"},{"step":"fix the bug","status":"in_progress"}]}
//! ```

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// The text impls of a record field that holds one of a few words: it is
/// read and written as the word itself (`#[serde(from = "String", into =
/// "String")]` on the type), and a word this build does not know, from a
/// newer one, is kept as it was. The type gives `as_str` and
/// `From<String>`; this adds `From<&str>`, `String::from` and `Display`.
macro_rules! word_field {
    ($t:ident) => {
        impl From<&str> for $t {
            fn from(word: &str) -> $t {
                $t::from(word.to_owned())
            }
        }

        impl From<$t> for String {
            fn from(v: $t) -> String {
                v.as_str().to_owned()
            }
        }

        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

mod agents;
mod compaction;
mod edits;
pub use agents::{Background, BackgroundEvent, Delegated, Spawned};
mod hooks;
mod images;
mod lines;
mod mcp;
mod memory;
mod messages;
mod turns;
mod web;
pub use compaction::{
    Compacted, Compacting, Continued, Counted, Noted, Overflowed, Pruned, Squeezed,
};
pub use edits::{Answer, Approved, Asked, Edit, EditBy, Restore, Rewound, Seen, Written};
pub use hooks::{Hooked, PlanSet};
pub use images::Image;
pub use lines::{LineError, HEADER_START};
pub use mcp::{McpTool, McpTools};
pub use memory::{ChangedBy, MemoryChanged, MemoryUndone, Refined, Refining};
pub use messages::{Message, Origin, Role, Thinking, ToolCall};
pub use turns::{EffortChanged, FixedKind, ModelChanged, Planning, StopReason, Stopped, WentOn};
pub use web::{Fetched, WebSearch};

/// The version written into every new header.
///
/// * 1: the first.
/// * 2: every request says how long its answer may be (`max_tokens`, or
///   `max_completion_tokens` for the `openai` preset), the room the
///   window keeps for it ([`crate::compact::room`]). A version-1 file
///   rebuilds its requests without it, as they were sent.
/// * 3: requests tell the prompt cache what stays: Anthropic's carry
///   `cache_control` breakpoints, those of the `openai` preset a
///   `prompt_cache_key` (the session's id). Older files rebuild theirs
///   without, as they were sent.
/// * 4: the point releases of OpenAI's reasoning models (`gpt-5.4-mini`,
///   `gpt-5.6-terra`, …) say their answer's limit as
///   `max_completion_tokens`, as `gpt-5` does; older files rebuild theirs
///   with `max_tokens`, as they were sent.
/// * 5: with an effort set, Anthropic requests turn on extended thinking
///   (`thinking`, adaptive or with the effort's budget as the model takes
///   it, `max_tokens` raised by the budget; see [`crate::request::Think`])
///   and send back the thinking blocks assistant messages keep; older
///   files rebuild theirs without, as they were sent.
/// * 6: on the Chat Completions wire, a tool call whose arguments are not
///   a JSON object goes back inside one, `{"unparsed_arguments": TEXT}`
///   (see `request::sent_arguments`): llama.cpp's server parses every call's
///   arguments in the history and refuses the whole request when one does
///   not parse (HTTP 500 "Failed to parse tool call arguments as JSON",
///   met when SmolLM2 rambled a path until its answer's limit). Older
///   files rebuild theirs as they were sent.
/// - 7: under a window of `prompt::BRIEF_BELOW` tokens, revolve's own tools
///   are offered in brief (`tools::brief`): each description's first
///   sentence, no descriptions of their arguments. At 4,096 tokens (a
///   local model's) their ~2,500 tokens whole left a session's second turn
///   no room beside the system prompt. Older files rebuild theirs whole.
pub const FORMAT_VERSION: u32 = 7;

/// The first version whose requests are marked for the prompt cache.
pub(crate) const CACHE_VERSION: u32 = 3;

/// The first version whose requests carry their answer's limit.
pub(crate) const ANSWER_LIMIT_VERSION: u32 = 2;

/// The first version whose `gpt-5.N` models say `max_completion_tokens`.
pub(crate) const POINT_RELEASE_VERSION: u32 = 4;

/// The first version whose Anthropic requests think at an effort.
pub(crate) const THINKING_VERSION: u32 = 5;

/// The first version whose Chat Completions requests send arguments that
/// are not a JSON object inside one.
pub(crate) const ARGUMENTS_VERSION: u32 = 6;

/// The first version whose requests offer revolve's tools in brief under
/// a small window.
pub(crate) const BRIEF_TOOLS_VERSION: u32 = 7;

/// One line of a session log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Record {
    /// The first line of a file: who, where, with which model.
    Header(Header),
    /// The system prompt, whenever it differs from the last one written.
    Context(Context),
    /// A user or assistant message.
    Message(Message),
    /// A model request that failed; the turn ended without a full answer.
    Failed(Failed),
    /// A turn the user interrupted (or a crash cut short).
    Interrupted(Interrupted),
    /// Running totals, appended at the end of every turn.
    Totals(Totals),
    /// A later run resumed this session.
    Resumed(Resumed),
    /// The session got a new name.
    Renamed(Renamed),
    /// Oversized tool results before the kept turns were pruned in place.
    Pruned(Pruned),
    /// A compaction asked the model for working notes on the first `cut`
    /// messages (the request is rebuilt from here).
    Compacting(Compacting),
    /// The notes did not come (network, bad reply, interrupted): nothing
    /// changed and the session goes on uncompacted.
    CompactionFailed(Failed),
    /// The start of a file that continues a compacted one: the working
    /// notes and the turns kept verbatim.
    Compacted(Compacted),
    /// The end of a compacted file: the session goes on in `next`.
    Continued(Continued),
    /// The memory was refined from this session (or a refinement found
    /// nothing to change).
    Refined(Refined),
    /// A refinement's request went out (before its `refined`).
    Refining(Refining),
    /// Core ended a turn on its own: a repeated call, or the tool-round cap.
    Stopped(Stopped),
    /// A turn stopped at its tool-round cap goes on, as the user allowed.
    WentOn(WentOn),
    /// The session began or ended planning (`--plan`, `/plan`, `/plan off`).
    Planning(Planning),
    /// `/model NAME`: the requests after it ask another model, with its
    /// window.
    ModelChanged(ModelChanged),
    /// `--effort`, `/effort`: the reasoning effort the requests after it
    /// ask.
    Effort(EffortChanged),
    /// Whether the provider's web search tool is offered from here on.
    WebSearch(WebSearch),
    /// A tool result cut to head and tail so the request fits the window,
    /// the whole of it spilled to a file.
    Squeezed(Squeezed),
    /// The server answered that the request did not fit its context: the
    /// window is lowered, and the request is due again.
    Overflowed(Overflowed),
    /// The server counted the request due before it was sent.
    Counted(Counted),
    /// The notes on one piece of a summary in pieces.
    Noted(Noted),
    /// The memory was changed (a refinement or `remember`), after a
    /// snapshot entry was taken.
    MemoryChanged(MemoryChanged),
    /// An undo restored a snapshot entry (`/refine undo`).
    MemoryUndone(MemoryUndone),
    /// `read_file` read a file: its hash then.
    Seen(Seen),
    /// The user's answer to an edit.
    Approved(Approved),
    /// A change of a file, logged before it is written.
    Edit(Edit),
    /// The outcome of writing an [`Edit`].
    Written(Written),
    /// A rewind about to restore files: what it plans, logged before the
    /// first file is touched. The `rewound` record that follows says what
    /// was done; a `rewinding` with none after it is a rewind a crash cut
    /// short, settled at the next resume.
    Rewinding(Rewound),
    /// A rewind: turns taken back, files restored.
    Rewound(Rewound),
    /// The MCP tools offered from now on (issue 30), whenever the list
    /// changes: every later request offers them after revolve's own.
    McpTools(McpTools),
    /// A background shell command started, was read or ended (issue 43).
    Background(Background),
    /// A `task` call ran a child session (issue 43).
    Delegated(Delegated),
    /// This session is a child of another's `task` call (issue 43).
    Spawned(Spawned),
    /// A hook ran (issue 43): its event, command, ending and decision.
    Hook(Hooked),
    /// `update_plan` set the plan (or a compaction carried it over).
    Plan(PlanSet),
    /// `web_fetch` read a page (issue 44): its URLs, status, type and
    /// the hash of its bytes (kept in the content store).
    Fetched(Fetched),
}

word_field!(ChangedBy);

/// The first line of a session file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// Format version, [`FORMAT_VERSION`] when written by this build.
    pub version: u32,
    /// Unique id, also the file's stem.
    pub id: String,
    /// The session's name, user-given or generated; `None` for piped runs.
    #[serde(default)]
    pub name: Option<String>,
    /// Whether the user chose the name (`--name`, `/name`). Only named
    /// sessions are listed by default.
    #[serde(default)]
    pub named: bool,
    /// The working directory the session started in.
    pub cwd: String,
    /// The project key: the main work tree of the repository, or the cwd.
    pub project: String,
    /// When the session started.
    #[serde(with = "time::serde::rfc3339")]
    pub started: OffsetDateTime,
    /// The model asked.
    pub model: String,
    /// The declared context window, in tokens.
    pub window: u64,
    /// Which provider answered: its preset's name (`openai`, `ollama`,
    /// `anthropic`, `scripted`, ...); every name but `anthropic` speaks
    /// Chat Completions.
    #[serde(default)]
    pub provider: String,
    /// The id of the file this one continues after a compaction.
    #[serde(default)]
    pub continues: Option<String>,
    /// `tool_choice` of the session's requests (see
    /// [`ToolChoice`]); absent: the model decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_choice: Option<ToolChoice>,
}

/// A system prompt as it was sent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Context {
    /// When it happened, by the shell's clock: the log's only time.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// The whole system prompt, byte for byte.
    pub system: String,
    /// The subagent definitions a `task` call may name from now on, by
    /// name (issue 43): `task` is offered only while there are some.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub subagents: Vec<String>,
}

/// A failed request and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failed {
    /// When it happened, by the shell's clock: the log's only time.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// The error as the user saw it, one line.
    pub error: String,
}

/// A turn cut short.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interrupted {
    /// When it happened, by the shell's clock: the log's only time.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// The turn was cut while tools ran, before the request their results
    /// were due to go out in: no request was sent, so none is rebuilt.
    #[serde(default, skip_serializing_if = "is_false")]
    pub unsent: bool,
}

/// Running totals of a session, cumulative across runs.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    /// When it happened, by the shell's clock: the log's only time.
    #[serde(with = "time::serde::rfc3339::option", default)]
    pub at: Option<OffsetDateTime>,
    /// Input tokens the provider counted, all requests so far.
    #[serde(default)]
    pub tokens_in: u64,
    /// Output tokens the provider counted, all requests so far.
    #[serde(default)]
    pub tokens_out: u64,
    /// Of `tokens_in`, those the provider read from its prompt cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tokens_cached: u64,
    /// Of `tokens_in`, those the provider wrote to its prompt cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tokens_cache_written: u64,
    /// What the requests counted so far cost, in nano-dollars, at the
    /// prices of the table of known models (see [`crate::models`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cost: u64,
    /// Whether some request had no known price (and is not in `cost`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub unpriced: bool,
    /// User lines answered so far.
    #[serde(default)]
    pub turns: u64,
    /// The size of the context at the last answer, in tokens.
    #[serde(default)]
    pub last_context: u64,
    /// Whether `last_context` is an estimate rather than the provider's count.
    #[serde(default)]
    pub estimated: bool,
    /// Model requests sent so far (answered, failed or summarizing), across
    /// compactions: the next request is number `requests + 1`.
    #[serde(default)]
    pub requests: u64,
    /// The session's name at this point, so a listing that reads only the
    /// end of a file still sees a rename made long before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Whether that name was chosen by the user.
    #[serde(default, skip_serializing_if = "is_false")]
    pub named: bool,
    /// The inbox number of the last message taken (see [`Origin`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delivered: u64,
    /// The body size, in bytes, of the last request the provider counted,
    /// and the prompt tokens it counted: what request sizes are estimated
    /// from (see [`crate::compact::estimate`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cal_bytes: u64,
    /// The prompt tokens of that request.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cal_tokens: u64,
    /// Whether `tokens_in` and `tokens_out` hold estimates: some answer
    /// came without the provider's count.
    #[serde(default, skip_serializing_if = "is_false")]
    pub in_out_estimated: bool,
}

/// A later run picked the session up.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resumed {
    /// When it happened, by the shell's clock: the log's only time.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// The model the requests ask from now on.
    pub model: String,
    /// Its context window in tokens, as declared or known.
    pub window: u64,
    /// The provider from now on; empty in files from before it was written.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub provider: String,
}

/// The session's new name. A rename the user asked for makes a session
/// named (listed); a `generated` one (an unnamed session resumed in the
/// REPL, given an address) keeps it unlisted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Renamed {
    /// When it happened, by the shell's clock: the log's only time.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// The name, unique among the directory's sessions.
    pub name: String,
    /// Whether revolve made it up (the session stays unlisted).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub generated: bool,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Whether the model must call a tool (`tool_choice` in `config.json`,
/// `--tool-choice`), kept in the session's header so replay asks the same.
///
/// With [`ToolChoice::Required`], the request that answers a user message
/// (a turn's first) says `"tool_choice": "required"` on the Chat
/// Completions wire: the model calls at least one tool before it may
/// answer in words; the requests after a tool result leave the choice to
/// the model, so a turn still ends. Summaries and notes never carry it.
/// [`ToolChoice::Auto`] writes nothing (the API's default). Anthropic
/// requests carry nothing either way (forced tool use and extended
/// thinking do not mix there).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolChoice {
    /// The model decides: the default.
    #[default]
    Auto,
    /// A turn's first request must call a tool.
    Required,
}

impl ToolChoice {
    /// The word of the config file and the flag.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolChoice::Auto => "auto",
            ToolChoice::Required => "required",
        }
    }

    /// `auto` or `required`; otherwise what is accepted.
    pub fn parse(text: &str) -> Result<ToolChoice, String> {
        match text {
            "auto" => Ok(ToolChoice::Auto),
            "required" => Ok(ToolChoice::Required),
            other => Err(format!(
                "tool choice {other:?} is not one of auto, required"
            )),
        }
    }
}

/// The header the unit tests start from: session `s1`, named `amber`
/// (not by the user), in `/w`.
#[cfg(test)]
pub(crate) fn test_header() -> Header {
    Header {
        version: FORMAT_VERSION,
        id: "s1".into(),
        name: Some("amber".into()),
        named: false,
        cwd: "/w".into(),
        project: "/w".into(),
        started: time::macros::datetime!(2026-12-02 10:00 UTC),
        model: "m".into(),
        window: 100_000,
        provider: "scripted".into(),
        continues: None,
        tool_choice: None,
    }
}

#[cfg(test)]
mod tests;
