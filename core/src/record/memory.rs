//! The records of memory's changes: a refinement's request and its end,
//! and memory changed or undone by a tool or the user.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::*;

/// A change of the memory this session made: the snapshot entry taken
/// before it, and each file with what happened to it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryChanged {
    /// When it happened, by the shell's clock: the log's only time.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// The snapshot entry (its stamp) that takes the change back.
    pub entry: String,
    /// `refine`, `auto-refine` or `remember`.
    pub by: ChangedBy,
    /// `project/NAME.md: updated: what changed`, one a file.
    pub files: Vec<String>,
}

/// Who changed the memory: `memory_changed`'s `by`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum ChangedBy {
    /// `refine`: the user's `/refine` (or `revolve memory refine`).
    Refine,
    /// `auto-refine`: a refinement that ran on its own.
    AutoRefine,
    /// `remember`: the model's `remember` tool.
    Remember,
    /// A word this build does not know (a newer one wrote it), kept as it
    /// was.
    Other(String),
}

impl ChangedBy {
    /// The word as the log holds it.
    pub fn as_str(&self) -> &str {
        match self {
            ChangedBy::Refine => "refine",
            ChangedBy::AutoRefine => "auto-refine",
            ChangedBy::Remember => "remember",
            ChangedBy::Other(word) => word,
        }
    }
}

impl From<String> for ChangedBy {
    fn from(word: String) -> ChangedBy {
        match word.as_str() {
            "refine" => ChangedBy::Refine,
            "auto-refine" => ChangedBy::AutoRefine,
            "remember" => ChangedBy::Remember,
            _ => ChangedBy::Other(word),
        }
    }
}

/// An undo this session made: the entry it restored and what it put back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemoryUndone {
    /// When it happened, by the shell's clock: the log's only time.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// The entry restored; none when there was nothing to undo.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
    /// What the undo did to each file (`restored project/db.md`, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
}

/// A refinement ran (its request counts among the session's requests,
/// whether or not it changed anything).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refined {
    /// When it happened, by the shell's clock: the log's only time.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// Whether it ran on its own (after 25 turns or a compaction).
    pub auto: bool,
    /// The snapshot entry it left; none when nothing changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
    /// How many requests it sent: a session larger than the window is read
    /// in pieces (0, in older files: one).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub pieces: u64,
    /// Why it ended without changing the memory when it did not run to
    /// its end (`declined`, `failed: …`, `interrupted`, …); none when it
    /// ran (a change, or nothing to change).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unmade: Option<String>,
}

impl Refined {
    /// The requests this refinement counts for.
    pub fn requests(&self) -> u64 {
        self.pieces.max(1)
    }
}

/// A refinement's request, logged as it goes out: it is rebuilt from the
/// log (`replay --requests`) as the body here, numbered after the
/// requests before it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refining {
    /// When it happened, by the shell's clock: the log's only time.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// Whether the refinement runs on its own.
    pub auto: bool,
    /// Which part of the session this request reads (from 1), of how many.
    pub part: u64,
    /// How many parts the refinement reads in all.
    pub of: u64,
    /// The body sent, byte for byte.
    pub body: String,
}
