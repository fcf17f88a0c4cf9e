//! The records of work beyond one loop: background shell commands (their
//! start, reads and end) and subagents (a child session linked to the
//! parent's `task` call). Replay reads them and runs nothing: the tool
//! results the model saw are `message` records as ever; these say what
//! happened around them, for `/shells`, `revolve sessions` and
//! `replay --requests` of a parent (which follows `delegated` to the
//! child's log).

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// `background`: something happened to a background shell command.
///
/// ```json
/// {"type":"background","at":"…","call":"c1","id":"bg1","event":"started","command":"python3 -m http.server 8000"}
/// {"type":"background","at":"…","call":"c2","id":"bg1","event":"read","bytes":120}
/// {"type":"background","at":"…","call":"c3","id":"bg1","event":"ended","status":"killed"}
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Background {
    /// When it happened, by the shell's clock: the log's only time.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// The tool call it answered (`shell`, `shell_output`, `shell_kill`);
    /// empty when the session's end or the user (`/shells`) ended it.
    #[serde(default)]
    pub call: String,
    /// The command's id, as the model names it (`bg1`, …).
    pub id: String,
    /// What happened.
    #[serde(flatten)]
    pub event: BackgroundEvent,
}

/// What happened to a background command.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum BackgroundEvent {
    /// It started.
    Started {
        /// The command line.
        command: String,
        /// The file that holds everything it prints.
        #[serde(default)]
        file: String,
    },
    /// Its output since the last read was read.
    Read {
        /// How many bytes were new.
        bytes: u64,
        /// Whether the result was cut to head and tail, the rest in the
        /// file.
        #[serde(default, skip_serializing_if = "super::is_false")]
        spilled: bool,
    },
    /// It ended: exited, killed, or stopped with the session.
    Ended {
        /// How: `exit status: 0`, `killed`, …
        status: String,
    },
}

/// `delegated`: a `task` call of this session ran a child session, whose
/// log is `log`; written when the child ended (its answer is the call's
/// result, a `message` as ever).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delegated {
    /// When the child ended, by the shell's clock.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// The `task` call.
    pub call: String,
    /// The child session's id (empty when it never started).
    #[serde(default)]
    pub child: String,
    /// The child's log file.
    #[serde(default)]
    pub log: String,
    /// What the call said it does.
    #[serde(default)]
    pub description: String,
    /// The definition it ran under, if one was named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagent: Option<String>,
    /// The model requests the child made.
    #[serde(default)]
    pub requests: u64,
    /// Its tokens in.
    #[serde(default)]
    pub tokens_in: u64,
    /// Its tokens out.
    #[serde(default)]
    pub tokens_out: u64,
    /// What it cost, in nano-dollars as [`crate::record::Totals`] counts
    /// (0 when the model's prices are not known).
    #[serde(default)]
    pub cost: u64,
}

/// `spawned`: this session is a subagent, run for the `task` call `call`
/// of the session `parent`; written after its header. The tools it offers
/// are `tools` (so replay offers the same).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spawned {
    /// When it happened, by the shell's clock.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// The parent session's id.
    pub parent: String,
    /// The parent's `task` call.
    pub call: String,
    /// The definition it runs under, if one was named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagent: Option<String>,
    /// The built-in tools it offers, by name.
    pub tools: Vec<String>,
}
