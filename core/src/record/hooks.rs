//! The records of hooks and the plan: a hook's run, and the plan an
//! `update_plan` call set.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::plan::Plan;

/// A hook's run: which, how it ended and what it decided. What it changed
/// for the model is in the records after it (a tool's result, a user
/// message, the system prompt); this record is what lets replay show it
/// without running the hook, and lets the fold give back what a
/// `SessionStart` hook added. Made by [`crate::hooks::Round`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hooked {
    /// When it happened, by the shell's clock: the log's only time.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// The event (`PreToolUse`, …).
    pub event: String,
    /// The command, as configured.
    pub command: String,
    /// The tool call it ran for, at a tool's events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
    /// The tool's name, at a tool's events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The exit code, when it exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit: Option<i32>,
    /// How it ended otherwise: `killed`, `timed_out`, `cut`, `failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<String>,
    /// `go` or `block`.
    pub decision: String,
    /// Why it blocked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What it added for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub added: Option<String>,
    /// The tool input it rewrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input: Option<serde_json::Value>,
    /// What the user was told.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Hooked {
    /// Whether the hook blocked.
    pub fn blocked(&self) -> bool {
        self.decision == "block"
    }
}

/// `plan`: the plan an `update_plan` call set (the whole list).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanSet {
    /// When it happened, by the shell's clock: the log's only time.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// The call that set it (none: carried over by a compaction).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
    /// The steps.
    pub steps: Plan,
}
