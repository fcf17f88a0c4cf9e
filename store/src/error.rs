//! Why the store failed: one enum for the crate's boundary, each variant
//! with what the user reads (what failed, where, and what to do where
//! there is something to do). The binary maps it to its stderr line and
//! exit code in one place (`revolve_io::error`).

use std::fmt;
use std::io;
use std::path::PathBuf;

/// Why the store could not do what was asked.
#[derive(Debug)]
pub enum Error {
    /// A file or folder of revolve's could not be read, written, listed,
    /// created or synced: what was being done (`cannot read`), where, and
    /// the system's reason.
    Io {
        /// What was being done: `cannot read`, `cannot create`, ….
        doing: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// What the system said.
        error: io::Error,
    },
    /// A file operation of the store, its error as the store made it
    /// (naming the operation and the path where it can, with
    /// [`crate::files::at`]).
    Named(io::Error),
    /// The memory or its snapshots: what was being done (`cannot undo`)
    /// and why.
    Memory {
        /// What was being done: `cannot undo`, ….
        doing: &'static str,
        /// What the system said.
        error: io::Error,
    },
    /// Where revolve keeps its files is unknown: neither `HOME` nor the
    /// XDG variable `var` is set (`dir` is `state` or `config`).
    NoHome {
        /// Which of revolve's directories: `state` or `config`.
        dir: &'static str,
        /// The XDG variable that would name it.
        var: &'static str,
    },
    /// The session asked for (a name, an id, the latest) was not found.
    Find(FindError),
    /// A session could not be picked up again.
    Resume(ResumeError),
}

impl Error {
    /// A failed file operation: `doing` is how the line starts (`cannot
    /// read`, `cannot create a session under`), `path` what it was done to.
    pub fn io(doing: &'static str, path: impl Into<PathBuf>, error: io::Error) -> Error {
        Error::Io {
            doing,
            path: path.into(),
            error,
        }
    }

    /// Whether the error is the user's to fix on the command line (a
    /// session named that does not exist, or a name several match), not
    /// a failure while running.
    pub fn is_usage(&self) -> bool {
        match self {
            Error::Find(FindError::Unlisted { .. }) => false,
            Error::Find(_) => true,
            Error::Io { .. }
            | Error::Named(_)
            | Error::Memory { .. }
            | Error::NoHome { .. }
            | Error::Resume(_) => false,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { doing, path, error } => write!(f, "{doing} {}: {error}", path.display()),
            Error::Named(error) => error.fmt(f),
            Error::Memory { doing, error } => write!(f, "{doing}: {error}"),
            Error::NoHome { dir, var } => {
                write!(f, "cannot find the {dir} directory: set HOME or {var}")
            }
            Error::Find(e) => e.fmt(f),
            Error::Resume(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { error, .. } | Error::Named(error) | Error::Memory { error, .. } => {
                Some(error)
            }
            Error::Resume(e) => Some(e),
            Error::NoHome { .. } | Error::Find(_) => None,
        }
    }
}

impl From<FindError> for Error {
    fn from(e: FindError) -> Error {
        Error::Find(e)
    }
}

impl From<ResumeError> for Error {
    fn from(e: ResumeError) -> Error {
        Error::Resume(e)
    }
}

/// Why [`crate::store::Store::find`] found no session.
#[derive(Debug)]
pub enum FindError {
    /// The sessions folder could not be listed.
    Unlisted {
        /// The sessions folder.
        dir: PathBuf,
        /// What the system said.
        error: io::Error,
    },
    /// No session at all in this directory (looking for the latest).
    NoSession {
        /// The working directory looked in.
        cwd: PathBuf,
    },
    /// No session of that name or id.
    NoSuch {
        /// The name or id prefix asked for.
        needle: String,
        /// The working directory looked in.
        cwd: PathBuf,
    },
    /// The name or id prefix matches several sessions.
    Ambiguous {
        /// The name or id prefix asked for.
        needle: String,
        /// The ids of the sessions it matches.
        ids: Vec<String>,
    },
}

impl fmt::Display for FindError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FindError::Unlisted { dir, error } => {
                write!(f, "cannot list {}: {error}", dir.display())
            }
            FindError::NoSession { cwd } => write!(f, "no session in {}", cwd.display()),
            FindError::NoSuch { needle, cwd } => write!(
                f,
                "no session '{needle}' in {} (revolve sessions --all lists them)",
                cwd.display()
            ),
            FindError::Ambiguous { needle, ids } => {
                write!(f, "'{needle}' matches several sessions: {}", ids.join(", "))
            }
        }
    }
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
