//! The records of keeping a session inside its window: a server's
//! overflow, pruned and squeezed tool results, and a compaction's summary
//! requests, notes and move to a new file.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::{is_false, is_zero, Message, Totals};

/// The server's count of a request's prompt, asked for before sending it
/// because the estimate said it may not fit (a server that reports no
/// usage, such as llama-cpp-python's, is never counted otherwise): later
/// estimates are calibrated from it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counted {
    /// When it happened, by the shell's clock: the log's only time.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// The request's body size, in bytes.
    pub bytes: u64,
    /// The server's count of its prompt, in tokens; 0 when none came back
    /// (an error, no usage): logged from format 7 on, so that replay
    /// rebuilds the count request too. Only a plausible count calibrates.
    pub tokens: u64,
}

/// A context overflow the server reported, and the window from then on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Overflowed {
    /// When it happened, by the shell's clock: the log's only time.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// What the server said, on one line.
    pub error: String,
    /// The window the session goes on with, in tokens.
    pub window: u64,
    /// The server's count of the refused request, in tokens, and the
    /// request's body size: later estimates are calibrated from them.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub asked: u64,
    /// The refused request's body size, in bytes.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub bytes: u64,
}

/// Tool results pruned by a compaction's first step, by their index in
/// the history (call ids need not be unique). Folding applies
/// [`crate::compact::prune`] to each, so replay gets the same text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pruned {
    /// When it happened, by the shell's clock: the log's only time.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// The indexes in the history of the tool results cut.
    pub messages: Vec<u64>,
    /// The documented estimate of the context after pruning, in tokens.
    pub estimate: u64,
    /// The `prune-result-chars` they were cut to (0, in older files: the
    /// default cut, [`crate::compact::prune`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub keep: u64,
}

/// What a compaction carried into the new file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Compacted {
    /// When it happened, by the shell's clock: the log's only time.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// The file compacted (also the header's `continues`).
    pub from: String,
    /// How many messages the notes replace.
    pub summarized: u64,
    /// The working notes the model wrote.
    pub notes: String,
    /// The turns kept verbatim.
    pub kept: Vec<Message>,
    /// The running totals, carried over.
    pub totals: Totals,
    /// Whether the turn that compacted still waits for its request (an
    /// automatic compaction), which then goes out from this file.
    #[serde(default, skip_serializing_if = "is_false")]
    pub pending: bool,
    /// When the memory was last refined from this session, carried over for
    /// the automatic refinement's cooldown.
    #[serde(
        default,
        with = "time::serde::rfc3339::option",
        skip_serializing_if = "Option::is_none"
    )]
    pub refined_at: Option<OffsetDateTime>,
    /// The turn count at that refinement.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub turns_at_refine: u64,
    /// The tool rounds the pending turn took so far, carried over for the
    /// tool-round cap.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub turn_rounds: u64,
    /// What `SessionStart` hooks had added for the model, carried over
    /// (until the hooks run for `compact` add something of their own).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub start_context: Vec<String>,
}

/// Where a compacted session goes on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Continued {
    /// When it happened, by the shell's clock: the log's only time.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// The id of the next file.
    pub next: String,
}

/// A summary request going out: the whole part before the cut, or one
/// piece of it when it does not fit one request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Compacting {
    /// When it happened, by the shell's clock: the log's only time.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// How many messages, from the start, the notes will replace.
    pub cut: u64,
    /// The first message of this piece (0: from the start).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub from: u64,
    /// The end of this piece, before `cut` (0: the piece runs to `cut`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub upto: u64,
    /// The piece asked again as one transcript with no tools offered:
    /// the model called a tool instead of writing notes when they were
    /// (small models held to a tool grammar do). Absent in older files.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bare: bool,
}

impl Compacting {
    /// The messages this piece summarizes, `from..upto`.
    pub fn piece(&self) -> (u64, u64) {
        let upto = if self.upto == 0 { self.cut } else { self.upto };
        (self.from, upto)
    }
}

/// The notes on one piece of a summary in pieces came back: the next
/// piece's request carries them, and the last piece's notes are the ones
/// the new file starts from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Noted {
    /// When it happened, by the shell's clock: the log's only time.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// The end of the piece they cover (they cover everything before it).
    pub upto: u64,
    /// The working notes the model wrote for the piece.
    pub notes: String,
}

/// A tool result the window made give way last: the message at this index
/// of the history is cut by [`crate::compact::squeeze`] (folding repeats the
/// cut), and `path` holds what it said before.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Squeezed {
    /// When it happened, by the shell's clock: the log's only time.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// The index in the history of the message cut.
    pub message: u64,
    /// The file that holds the message's whole text, for the model to read.
    pub path: String,
    /// The characters kept, head and tail together, when fewer than the
    /// default ([`crate::compact::SQUEEZE_HEAD`] + [`crate::compact::SQUEEZE_TAIL`]):
    /// small windows squeeze harder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep: Option<u64>,
}
