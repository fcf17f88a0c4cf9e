//! Picking a session up again: its file claimed before it is folded, the
//! fold, and the checks that it may be written to ([`Store::resume`]).

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use revolve_core::view::TranscriptTail;
use revolve_core::State;

use crate::log::{self, LogWriter};
use crate::registry::Claim;
use crate::store::Store;

/// A session file opened to go on: claimed, folded, open for appending.
pub struct Reopened {
    /// The file (the newest of its chain).
    pub path: PathBuf,
    /// Its records, folded.
    pub state: State,
    /// This process's claim on it.
    pub claim: Claim,
    /// Appends to it.
    pub writer: LogWriter,
    /// The end of its transcript, at most the bytes asked for.
    pub shown: String,
    /// Lines that could not be read.
    pub skipped: usize,
}

/// Why a session cannot be picked up again.
#[derive(Debug)]
pub enum ResumeError {
    /// Reading, claiming or opening the file failed.
    Io {
        /// The session file.
        path: PathBuf,
        /// What failed, as the message says it ("cannot read").
        what: &'static str,
        /// What the system said.
        error: io::Error,
    },
    /// The file holds no header: not a session log.
    NoHeader {
        /// The session file.
        path: PathBuf,
    },
    /// A newer version wrote it: nothing is written into it.
    NotWritable {
        /// The session file.
        path: PathBuf,
        /// The line the user reads: which version wrote it.
        why: String,
    },
    /// The session went on in a file another process runs now.
    RunningElsewhere {
        /// The id of the file that runs elsewhere.
        id: String,
    },
    /// Claiming it failed (another process runs it, or the lock failed).
    Claim(io::Error),
}

impl fmt::Display for ResumeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResumeError::Io { path, what, error } => {
                write!(f, "{what} {}: {error}", path.display())
            }
            ResumeError::NoHeader { path } => write!(f, "{} has no session header", path.display()),
            ResumeError::NotWritable { path, why } => write!(f, "{}: {why}", path.display()),
            ResumeError::RunningElsewhere { id } => {
                write!(f, "session {id} is already running in another process")
            }
            ResumeError::Claim(error) => write!(f, "{error}"),
        }
    }
}

impl std::error::Error for ResumeError {}

impl Store {
    /// Opens the session of `found` to go on in it: the newest file of its
    /// chain, claimed before it is folded (a process that wrote to it until
    /// a moment ago has ended, so the fold sees all it wrote), refused when
    /// a newer version wrote it or the session went on in a file another
    /// process runs. `shows` bounds the transcript tail kept for the user.
    pub fn resume(&self, found: &Path, shows: usize) -> Result<Reopened, ResumeError> {
        let path = self.head(found);
        let io_error = |what: &'static str| {
            let path = path.clone();
            move |error: io::Error| ResumeError::Io { path, what, error }
        };
        let peek = log::summary(&path).map_err(io_error("cannot read"))?;
        let mut claim = match peek {
            Some((header, summary)) => Some(
                self.claim(&header.id, summary.name)
                    .map_err(ResumeError::Claim)?,
            ),
            None => None,
        };
        let mut state = State::default();
        let mut shown = TranscriptTail::new(shows);
        let mut skipped = 0;
        log::each_record(
            &path,
            |_, r| {
                state.apply(&r);
                shown.push(&r);
            },
            |_| skipped += 1,
        )
        .map_err(io_error("cannot read"))?;
        let Some(header) = state.header().clone() else {
            return Err(ResumeError::NoHeader { path });
        };
        // Nothing is written into a log of a newer version, not even the
        // newline that ends a torn last line.
        header.writable().map_err(|why| ResumeError::NotWritable {
            path: path.clone(),
            why: why.to_string(),
        })?;
        // The file may have been compacted between finding it and claiming
        // it: if the session went on in a file that is running now, that
        // process owns the session.
        if let Some(next) = &state.continued() {
            if self.running().iter().any(|r| &r.id == next) {
                return Err(ResumeError::RunningElsewhere { id: next.clone() });
            }
        }
        let entry = self.running_entry(&header.id, state.name().clone());
        let claim = match claim.take() {
            Some(mut claim) => {
                claim.update(&entry).map_err(ResumeError::Claim)?;
                claim
            }
            None => self
                .claim(&header.id, state.name().clone())
                .map_err(ResumeError::Claim)?,
        };
        let writer = LogWriter::open(&path).map_err(io_error("cannot open"))?;
        Ok(Reopened {
            path,
            state,
            claim,
            writer,
            shown: shown.finish(),
            skipped,
        })
    }
}
