//! What the fold notes when a record does not fit what came before it
//! (`replay --check` lists them): the record is applied as far as it can
//! be, and the fold goes on.

use std::fmt;

/// A record that does not fit what came before it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Inconsistency {
    /// A second header: ignored.
    SecondHeader,
    /// A record before the file's header.
    BeforeHeader,
    /// Tool calls were left without their result lines (a crash): they
    /// are answered as lost before this record.
    LostResults {
        /// How many calls.
        calls: usize,
    },
    /// A user message while tool calls wait for their results.
    UserWhileCalls,
    /// An assistant message when no request was out.
    AnswerToNothing,
    /// A tool result whose call is not open.
    ResultForNoCall,
    /// A `stopped` record while tool calls wait for their results.
    StopWithOpenCalls,
    /// A `went_on` record while a request was due already.
    WentOnWhileDue,
    /// Working notes on a piece when no compaction is being written.
    NotesForNoCompaction,
    /// A totals record counting fewer turns than the one before.
    TurnsWentBack {
        /// The turns counted before.
        from: u64,
        /// The turns this record counts.
        to: u64,
    },
    /// An edit of a file from a content the session had not last read or
    /// written.
    EditFromUnknown {
        /// The file.
        path: String,
    },
    /// An edit while another waits for its write.
    EditWhilePending,
    /// A `written` record of no pending edit.
    WriteOfNoEdit,
    /// A rewind while another waits to be settled.
    RewindWhilePending,
    /// A rewind of a file from a content revolve had not last written.
    RewindFromUnknown {
        /// The file.
        path: String,
    },
    /// A rewind of more turns than the history holds.
    RewindPastEnd,
    /// A rewind taken back after later turns were added.
    RewindUndoneAfterTurns,
    /// An undo of a rewind that is not standing.
    UndoesNoRewind,
    /// A `squeezed` record naming a message that is no tool result.
    SqueezedNoResult,
    /// A background command's end when it never started.
    BackgroundNeverStarted {
        /// Its id.
        id: String,
    },
    /// A second `spawned` record: the last one counts.
    SecondSpawned,
}

impl fmt::Display for Inconsistency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Inconsistency::SecondHeader => f.write_str("a second header; ignored"),
            Inconsistency::BeforeHeader => f.write_str("record before the header"),
            Inconsistency::LostResults { calls } => write!(
                f,
                "{calls} tool call(s) without a result line before this message; answered as lost"
            ),
            Inconsistency::UserWhileCalls => {
                f.write_str("a user message while tool calls wait for results")
            }
            Inconsistency::AnswerToNothing => {
                f.write_str("an assistant message that answers no request")
            }
            Inconsistency::ResultForNoCall => f.write_str("a tool result for no open call"),
            Inconsistency::StopWithOpenCalls => {
                f.write_str("a stop while tool calls wait for results")
            }
            Inconsistency::WentOnWhileDue => f.write_str("went on while a request was due"),
            Inconsistency::NotesForNoCompaction => f.write_str("notes for no compaction"),
            Inconsistency::TurnsWentBack { from, to } => {
                write!(f, "turns went back from {from} to {to}")
            }
            Inconsistency::EditFromUnknown { path } => write!(
                f,
                "an edit of {path} from a content the session had not last read or wrote"
            ),
            Inconsistency::EditWhilePending => {
                f.write_str("an edit while another waits for its write")
            }
            Inconsistency::WriteOfNoEdit => f.write_str("a write of no pending edit"),
            Inconsistency::RewindWhilePending => {
                f.write_str("a rewind while another waits to be settled")
            }
            Inconsistency::RewindFromUnknown { path } => write!(
                f,
                "a rewind of {path} from a content revolve had not last written"
            ),
            Inconsistency::RewindPastEnd => {
                f.write_str("a rewind from past the end of the history")
            }
            Inconsistency::RewindUndoneAfterTurns => {
                f.write_str("a rewind taken back after later turns")
            }
            Inconsistency::UndoesNoRewind => f.write_str("takes back no standing rewind"),
            Inconsistency::SqueezedNoResult => {
                f.write_str("a squeezed message that is no tool result")
            }
            Inconsistency::BackgroundNeverStarted { id } => {
                write!(f, "background command {id} ended, never started")
            }
            Inconsistency::SecondSpawned => {
                f.write_str("a second spawned record; the last one counts")
            }
        }
    }
}
