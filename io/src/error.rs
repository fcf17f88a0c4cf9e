//! Why a run stopped, and the exit code each reason has: 0 success,
//! 1 runtime error, 2 usage error, 3 a goal run ended without the goal
//! met, 130 interrupted, 143 stopped by SIGTERM
//! or SIGHUP mid-turn. The binary turns one into a stderr line and exits
//! with its code.

use std::fmt;

/// Why revolve stopped.
#[derive(Debug)]
pub enum Error {
    /// The command line or its arguments are wrong (exit 2).
    Usage(String),
    /// Something failed while running (exit 1).
    Runtime(String),
    /// The user pressed Ctrl-C during a non-interactive run (exit 130).
    Interrupted,
    /// Stdout was closed by its reader: a normal end (exit 0).
    BrokenPipe,
    /// SIGTERM or SIGHUP arrived during a turn, which was logged as
    /// interrupted (exit 143).
    Terminated,
    /// `--goal-run` stopped without the goal proposed met: a turn limit,
    /// a paused or missing goal; the text says why (exit 3).
    GoalNotMet(String),
}

impl Error {
    /// The process exit code.
    pub fn code(&self) -> i32 {
        match self {
            Error::Usage(_) => 2,
            Error::Runtime(_) => 1,
            Error::Interrupted => 130,
            Error::BrokenPipe => 0,
            Error::Terminated => 143,
            Error::GoalNotMet(_) => 3,
        }
    }

    /// A runtime error about a path.
    pub fn at(path: &std::path::Path, what: &str, e: impl fmt::Display) -> Error {
        Error::Runtime(format!("{what} {}: {e}", path.display()))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(m) | Error::Runtime(m) => f.write_str(m),
            Error::GoalNotMet(why) => write!(f, "the goal run ended without the goal met: {why}"),
            Error::Interrupted => f.write_str("interrupted"),
            Error::BrokenPipe => f.write_str("stdout closed"),
            Error::Terminated => {
                f.write_str("stopped by a signal; the turn is logged as interrupted")
            }
        }
    }
}

impl std::error::Error for Error {}

impl From<revolve_store::store::FindError> for Error {
    fn from(e: revolve_store::store::FindError) -> Error {
        match e {
            revolve_store::store::FindError::Unlisted { .. } => Error::Runtime(e.to_string()),
            _ => Error::Usage(e.to_string()),
        }
    }
}
