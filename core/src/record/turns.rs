//! The records of how a turn went: stopped by a guard (and why), planning
//! on or off, the model or effort changed, gone on past the round cap.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// A turn core ended on its own.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stopped {
    /// When it happened, by the shell's clock: the log's only time.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// Why, with the figures the user is shown.
    #[serde(flatten)]
    pub reason: StopReason,
}

/// Why core ended a turn on its own (see [`crate::guard`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum StopReason {
    /// The model made the same call `times` times in a row.
    Repeated {
        /// The tool called.
        tool: String,
        /// How many times in a row.
        times: u32,
    },
    /// The turn took `limit` tool rounds.
    ToolRounds {
        /// The cap on tool rounds in one turn.
        limit: u32,
    },
    /// The request would need about `tokens` tokens, more than the window
    /// leaves, even with every tool result cut; `largest` is the largest
    /// part no compaction can shrink, and about how many tokens it takes
    /// (absent in older logs).
    TooLarge {
        /// The estimated size of the request.
        tokens: u64,
        /// The context window it had to fit.
        window: u64,
        /// The largest part no compaction can shrink, and its tokens.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        largest: Option<(FixedKind, u64)>,
    },
    /// The next request was expected to bring the session's cost from
    /// `spent` to `expected`, past `max` (`--max-cost`); nano-dollars.
    Budget {
        /// What the session had spent.
        spent: u64,
        /// What it would have spent after the request.
        expected: u64,
        /// The cap the user set.
        max: u64,
    },
    /// A compaction or refinement would send `requests` model requests
    /// (about `tokens` input tokens), more than
    /// [`crate::compact::COSTLY_REQUESTS`], and no one was at a terminal
    /// to say yes (`confirm_costly` on, no `--yes`).
    Costly {
        /// What it was: `compaction`, `refinement`, `automatic refinement`.
        what: String,
        /// About how many requests it would send.
        requests: u64,
        /// About how many input tokens, in all.
        tokens: u64,
    },
}

/// A part of every request that no compaction can shrink.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FixedKind {
    /// The system prompt: the base prompt, the memory files, the goal.
    System,
    /// The definitions of the tools offered.
    Tools,
    /// The newest message of the user.
    Message,
}

/// Plan mode turned on or off: while on, edits and writes are refused and
/// commands run read-only.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Planning {
    /// When it happened, by the shell's clock: the log's only time.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// Whether plan mode is on from now on.
    pub on: bool,
}

/// `/model NAME`: the model the requests after it ask, and its window.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelChanged {
    /// When it happened, by the shell's clock: the log's only time.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// The model the requests ask from now on.
    pub model: String,
    /// Its context window in tokens, from the table of known models or the one before.
    pub window: u64,
}

/// `--effort`, `/effort`: the reasoning effort of the requests after it
/// (none: the model's default).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EffortChanged {
    /// When it happened, by the shell's clock: the log's only time.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// The effort asked from now on; none: the model's default.
    #[serde(default)]
    pub effort: Option<crate::models::Effort>,
}

/// The user let a stopped turn go on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WentOn {
    /// When it happened, by the shell's clock: the log's only time.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
}
