//! What the session waits for: one [`Phase`] at a time, each carrying what
//! it needs, and what one [`super::Session::handle`] ended in ([`Step`]).

use crate::compact;
use crate::guard::StopReason;
use crate::record::{Image, ToolCall};

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
    /// (the request goes out once they are in) or for `/compact`; `bare`:
    /// the piece asked again with no tools offered
    /// ([`crate::record::Compacting::bare`]).
    Summarizing {
        flight: Flight,
        due: Due,
        bare: bool,
    },
    /// The tool call `call` runs ([`ToolCommand::Run`], [`ToolCommand::CallMcp`]),
    /// as its `PreToolUse` hooks left it (its `PostToolUse` hooks see that
    /// input); `outside`: the user let it run outside the sandbox, once.
    Running { call: ToolCall, outside: bool },
    /// `task` calls run as children, these ids, side by side; `tasks`: the
    /// front run's calls as their `PreToolUse` hooks left them (see
    /// [`Front::tasks`]).
    Delegating {
        ids: Vec<String>,
        tasks: Vec<(ToolCall, Option<String>)>,
    },
    /// The user is asked about a tool call.
    Asking(Question),
    /// An event's hooks run, one [`super::ToolCommand::Hook`] at a time;
    /// `resume` is what the session goes on to once they are done.
    Hooking {
        round: crate::hooks::Round,
        resume: super::hooking::Resume,
    },
    /// The edit call `call` (as its `PreToolUse` hooks left it) between its
    /// [`FileCommand::Open`] and its write: `staged` from
    /// [`FileCommand::Stage`] on.
    Editing {
        call: ToolCall,
        staged: Option<Staged>,
    },
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
    /// Whether the shell, MCP or fetch call `call` (as its `PreToolUse`
    /// hooks left it) may run ([`UserCommand::Ask`]).
    Run { call: ToolCall },
    /// Whether the session may read `path` for the grant call `id`
    /// ([`UserCommand::AskGrant`]).
    Grant { id: String, path: String },
    /// Whether the shell call `call` the sandbox seems to have refused may
    /// run once outside ([`UserCommand::AskOutside`]); `output` (and the
    /// picture it read, if any) is its result if not.
    Outside {
        call: ToolCall,
        output: String,
        image: Option<Box<Image>>,
    },
}

impl Question {
    /// The tool call it is about.
    pub(super) fn id(&self) -> &str {
        match self {
            Question::Run { call } | Question::Outside { call, .. } => &call.id,
            Question::Grant { id, .. } => id,
        }
    }
}

/// What the look at the open calls carries from one call to the next:
/// what their `PreToolUse` hooks (and the user) made of the calls at the
/// front. Made where those hooks end (or are found to have none), carried
/// by the phases that wait on those calls and dropped with them, so
/// nothing of one answer's calls outlives it.
#[derive(Clone, Debug, Default)]
pub(super) struct Front {
    /// The first open call as its hooks left it (its input perhaps
    /// rewritten): it runs without running them again (after a question,
    /// say).
    checked: Option<ToolCall>,
    /// The user just allowed the checked call.
    allowed: bool,
    /// The `task` calls at the front whose hooks ran, in call order: each
    /// as they left it, with the reason when one blocked it. (A `task`
    /// call that cannot be delegated goes the way of every call, so both
    /// may be held.)
    pub tasks: Vec<(ToolCall, Option<String>)>,
}

impl Front {
    /// The first open call `call`, as its hooks left it; `allowed`: the
    /// user just allowed it.
    pub(super) fn checked(
        call: ToolCall,
        allowed: bool,
        tasks: Vec<(ToolCall, Option<String>)>,
    ) -> Front {
        Front {
            checked: Some(call),
            allowed,
            tasks,
        }
    }

    /// The `task` calls at the front whose hooks ran.
    pub(super) fn tasks(tasks: Vec<(ToolCall, Option<String>)>) -> Front {
        Front {
            tasks,
            ..Front::default()
        }
    }

    /// The `task` call `id`, whose hooks ran with the front's but which
    /// cannot be delegated, goes the way of every call as they left it,
    /// without running them again.
    pub(super) fn check_task(&mut self, id: &str) {
        if let Some((call, _)) = self.tasks.iter().find(|(c, _)| c.id == id) {
            self.checked = Some(call.clone());
        }
    }

    /// Whether the user just allowed the call `id`.
    pub(super) fn allowed(&self, id: &str) -> bool {
        self.allowed && self.checked.as_ref().is_some_and(|c| c.id == id)
    }

    /// The checked call, if it is the call `id` (used up: the next call
    /// is another one).
    pub(super) fn take_checked(&mut self, id: &str) -> Option<ToolCall> {
        self.allowed = false;
        self.checked.take().filter(|c| c.id == id)
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
