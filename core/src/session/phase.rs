//! What the session waits for: one [`Phase`] at a time, each carrying what
//! it needs, and what one [`super::Session::handle`] ended in ([`Step`]).

use crate::compact;
use crate::guard::StopReason;

use super::edits::Staged;
use super::refinement::Refinement;
use super::Command;

/// What the session waits for now. Every command that asks for an answer
/// moves the session into the phase that waits for it; the answer takes it
/// out. A turn, a `/compact` or a refinement that ends leaves it
/// [`Phase::Idle`]. `busy` is "not idle".
#[derive(Clone, Debug, Default)]
pub(super) enum Phase {
    /// Nothing outstanding: a user line, a command or a refinement may
    /// begin.
    #[default]
    Idle,
    /// The server counts the request due ([`ModelCommand::Count`]): the body
    /// size it counts.
    Counting { bytes: usize, due: Due },
    /// The user is asked whether a costly compaction may run
    /// ([`UserCommand::Confirm`]).
    Confirming { due: Due },
    /// The turn's request is out ([`ModelCommand::Call`]).
    Requesting { flight: Flight, retried: bool },
    /// Working notes are asked for ([`ModelCommand::Summarize`]), for the turn
    /// (the request goes out once they are in) or for `/compact`.
    Summarizing { flight: Flight, due: Due },
    /// The tool call `id` runs ([`ToolCommand::Run`], [`ToolCommand::CallMcp`]);
    /// `outside`: the user let it run outside the sandbox, once.
    Running { id: String, outside: bool },
    /// `task` calls run as children, these ids, side by side.
    Delegating { ids: Vec<String> },
    /// The user is asked about a tool call.
    Asking(Question),
    /// An event's hooks run, one [`super::ToolCommand::Hook`] at a time;
    /// `resume` is what the session goes on to once they are done.
    Hooking {
        round: crate::hooks::Round,
        resume: super::hooking::Resume,
    },
    /// The edit call `id` between its [`FileCommand::Open`] and its write:
    /// `staged` from [`FileCommand::Stage`] on.
    Editing { id: String, staged: Option<Staged> },
    /// The memory is refined (its own stages inside).
    Refining(Box<Refinement>),
    /// The files of a logged `rewinding` are put back
    /// ([`FileCommand::Restore`]).
    Rewinding,
    /// The last memory change is undone ([`MemoryCommand::Undo`]).
    Undoing,
}

impl Phase {
    /// Whether a turn or a compaction is in flight: what Ctrl-C cuts
    /// short.
    pub(super) fn in_turn(&self) -> bool {
        matches!(
            self,
            Phase::Counting { .. }
                | Phase::Confirming { .. }
                | Phase::Requesting { .. }
                | Phase::Summarizing { .. }
                | Phase::Running { .. }
                | Phase::Delegating { .. }
                | Phase::Asking(_)
                | Phase::Editing { .. }
        ) || matches!(self, Phase::Hooking { resume, .. } if resume.in_turn())
    }
}

/// The questions the session asks about a tool call.
#[derive(Clone, Debug)]
pub(super) enum Question {
    /// Whether the shell or MCP call `id` may run ([`UserCommand::Ask`]).
    Run { id: String },
    /// Whether the session may read `path` for the grant call `id`
    /// ([`UserCommand::AskGrant`]).
    Grant { id: String, path: String },
    /// Whether the shell call `id` the sandbox seems to have refused may
    /// run once outside ([`UserCommand::AskOutside`]); `output` is its result
    /// if not.
    Outside { id: String, output: String },
}

impl Question {
    /// The tool call it is about.
    pub(super) fn id(&self) -> &str {
        match self {
            Question::Run { id } | Question::Grant { id, .. } | Question::Outside { id, .. } => id,
        }
    }
}

/// What the deciding of the request due keeps between its steps (a count,
/// a question, a summary): each request compacts at most once on its own,
/// so a history that cannot shrink never loops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Due {
    /// The request due compacted already.
    pub compacted: bool,
    /// The server counted it already, before compacting.
    pub counted: bool,
    /// The server counted it already, before stopping.
    pub stop_counted: bool,
    /// The user said yes (or no) to a costly compaction of it.
    pub costly: Option<bool>,
    /// How many turns its compaction keeps verbatim:
    /// [`compact::KEEP_TURNS`], fewer when they do not fit.
    pub keep_turns: usize,
    /// A summary in pieces: the pieces asked for so far, and about how
    /// many it takes (said as "piece k of about n").
    pub pieces: (u64, u64),
    /// The turn's request was refused as too large once already.
    pub retried: bool,
    /// Making room for it stopped the turn (a costly compaction with no
    /// one to ask): nothing more is tried for it.
    pub stopped: bool,
    /// The `PreCompact` hooks ran for its automatic compaction.
    pub told: bool,
}

impl Default for Due {
    fn default() -> Due {
        Due {
            compacted: false,
            counted: false,
            stop_counted: false,
            costly: None,
            keep_turns: compact::KEEP_TURNS,
            pieces: (0, 0),
            retried: false,
            stopped: false,
            told: false,
        }
    }
}

impl Due {
    /// A request refused as too large once: decided again from the start,
    /// remembering the refusal.
    pub(super) fn retried() -> Due {
        Due {
            retried: true,
            ..Due::default()
        }
    }
}

/// A model request in flight.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Flight {
    /// Its token estimate, for when the provider reports no usage.
    pub estimate: u64,
    /// Its body size, for the calibration.
    pub bytes: usize,
}

/// What one input did: the commands to execute, in order, and how it
/// ended what the user asked (the shell reports the last one that says).
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use = "the shell must execute every command, in order"]
pub struct Step {
    /// What the shell must do, in order.
    pub commands: Vec<Command>,
    /// How the input ended the turn or the command, if it ended one.
    pub outcome: Outcome,
}

/// How a step ended what the user asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing ended here: the answers the commands ask for go on, or the
    /// input changed nothing a turn's outcome says.
    Going,
    /// The model answered (a turn may go on with tools, or ended).
    Answered,
    /// A model request failed (the turn's, or a summary's); the text says
    /// why.
    Failed(String),
    /// The user interrupted what was in flight.
    Interrupted,
    /// The core ended the turn on its own (a repeated call, the tool
    /// rounds, the window, the budget).
    Stopped(StopReason),
    /// The input answered nothing outstanding; the commands say so.
    Ignored,
}
