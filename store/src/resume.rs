//! Picking a session up again: its file claimed before it is folded, the
//! fold, and the checks that it may be written to ([`Store::resume`]).

use std::io;
use std::path::{Path, PathBuf};

use revolve_core::State;
use revolve_view::TranscriptTail;

pub use crate::error::ResumeError;
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
