//! The records of file edits and rewinds: what was read, what the user
//! answered, what changed and was written, and what a rewind put back.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::is_false;

/// A file `read_file` read, and the hash of its whole content then.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seen {
    /// When it happened, by the shell's clock: the log's only time.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// Canonical and absolute.
    pub path: String,
    /// The hash of the whole content read, which a later edit must start from.
    pub hash: String,
}

/// The user's answer to an edit of `path` by the call `call`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approved {
    /// When it happened, by the shell's clock: the log's only time.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// The id of the tool call asked about.
    pub call: String,
    /// The file of an edit, or the command of a `shell` call.
    pub path: String,
    /// What the user said.
    pub answer: Answer,
    /// What was asked about: an edit (the field left out), a `shell`
    /// command, a `grant`, …; see [`Asked`].
    #[serde(default, skip_serializing_if = "Asked::is_edit")]
    pub tool: Asked,
    /// The permission rule that decided, when a rule did (no one was
    /// asked); `None` for the user's answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
}

/// A change of one file: its content before and after, by hash (both are
/// in the content store), and the diff.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Edit {
    /// When it happened, by the shell's clock: the log's only time.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// The tool call that made it.
    pub call: String,
    /// Canonical and absolute.
    pub path: String,
    /// `edit_file`, `write_file` or `shell`.
    pub by: EditBy,
    /// `None`: the file did not exist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
    /// `None`: the file was removed (by a shell command).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// The unified diff, cut at [`crate::edit::DIFF_CAP`].
    #[serde(default)]
    pub diff: String,
    /// The lines the change adds and removes, counted from the whole
    /// change (the diff may be cut); `None` in logs that predate them:
    /// then counted from `diff` (`edit::lines`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub added: Option<usize>,
    /// The lines the change removes (see `added`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removed: Option<usize>,
    /// Written already when logged (a shell command's change).
    #[serde(default, skip_serializing_if = "is_false")]
    pub written: bool,
}

/// What an `approved` record answers: its `tool`, a word (none for an
/// edit) or the name of a tool.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum Asked {
    /// An edit or a write of a file in the working tree (the field is
    /// left out).
    #[default]
    Edit,
    /// `outside`: an edit of a file outside the working tree (never
    /// "always").
    Outside,
    /// `shell`: a shell command (its command in `path`).
    Shell,
    /// `unsandboxed`: whether a command the sandbox refused may run once
    /// outside it.
    Unsandboxed,
    /// `grant`: a `request_file_grant` (its path the one asked for).
    Grant,
    /// Any other word, kept as it was: the name of an MCP tool the model
    /// called (`mcp__SERVER__TOOL`, see [`crate::mcp::is_mcp`]), or a word
    /// a newer build wrote.
    Tool(String),
}

impl Asked {
    /// The word as the log holds it (empty for an edit).
    pub fn as_str(&self) -> &str {
        match self {
            Asked::Edit => "",
            Asked::Outside => "outside",
            Asked::Shell => "shell",
            Asked::Unsandboxed => "unsandboxed",
            Asked::Grant => "grant",
            Asked::Tool(name) => name,
        }
    }

    /// Whether it answers an edit in the working tree (the field is left
    /// out).
    pub fn is_edit(&self) -> bool {
        *self == Asked::Edit
    }
}

impl From<String> for Asked {
    fn from(word: String) -> Asked {
        match word.as_str() {
            "" => Asked::Edit,
            "outside" => Asked::Outside,
            "shell" => Asked::Shell,
            "unsandboxed" => Asked::Unsandboxed,
            "grant" => Asked::Grant,
            _ => Asked::Tool(word),
        }
    }
}

word_field!(Asked);

/// The tool that made an [`Edit`]: its `by`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum EditBy {
    /// `edit_file`.
    EditFile,
    /// `write_file`.
    WriteFile,
    /// `shell`: what a shell command changed in a git repository, found
    /// after it ran (written already when logged).
    Shell,
    /// A word this build does not know (a newer one wrote it), kept as it
    /// was.
    Other(String),
}

impl EditBy {
    /// The word as the log holds it.
    pub fn as_str(&self) -> &str {
        match self {
            EditBy::EditFile => "edit_file",
            EditBy::WriteFile => "write_file",
            EditBy::Shell => "shell",
            EditBy::Other(word) => word,
        }
    }
}

impl From<String> for EditBy {
    fn from(word: String) -> EditBy {
        match word.as_str() {
            "edit_file" => EditBy::EditFile,
            "write_file" => EditBy::WriteFile,
            "shell" => EditBy::Shell,
            _ => EditBy::Other(word),
        }
    }
}

word_field!(EditBy);

/// The outcome of writing an [`Edit`]: `error` when the file was not
/// changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Written {
    /// When it happened, by the shell's clock: the log's only time.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// The id of the edit's tool call.
    pub call: String,
    /// The file written, canonical and absolute.
    pub path: String,
    /// Why the write failed, as the model is told.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A rewind: the turns from message `from` on taken back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rewound {
    /// When it happened, by the shell's clock: the log's only time.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// How many turns.
    pub turns: u64,
    /// The index in the history of the first message of the first of them.
    pub from: u64,
    /// Whether the turns left the conversation (not `--files-only`).
    pub conversation: bool,
    /// What each file went back to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<Restore>,
    /// The rewind this one takes back, by its place among this session's
    /// rewinds (0 first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undoes: Option<u64>,
    /// Files changed behind revolve's back were overwritten (`--force`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub forced: bool,
}

/// One file a rewind restored: from the content on disk to another, by
/// hash (`None`: no file).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Restore {
    /// The file, canonical and absolute.
    pub path: String,
    /// The hash of the content on disk before (`None`: no file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// The hash of the content put back (`None`: the file removed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
}

/// An answer to "may this edit (or this shell command) go ahead?".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// This one.
    Yes,
    /// This one and every later one of its kind in the session.
    Always,
    /// Not this one.
    No,
}
