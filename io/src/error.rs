//! Why a run stopped, and the exit code each reason has: 0 success,
//! 1 runtime error, 2 usage error, 3 a goal run ended without the goal
//! met, 130 interrupted, 143 stopped by SIGTERM
//! or SIGHUP mid-turn. The binary turns one into a stderr line and exits
//! with its code.
//!
//! The crates below the shell fail with errors of their own, each one
//! enum at its boundary that says what the user needs to know
//! ([`revolve_store::error::Error`], [`revolve_provider::ProviderError`]);
//! they come in here by `From`, and [`Error::code`] and `Display` are the
//! one place that maps any of them to an exit code and a line.

use std::fmt;

/// Why revolve stopped.
#[derive(Debug)]
pub enum Error {
    /// The command line or its arguments are wrong (exit 2).
    Usage(String),
    /// A turn's model request failed in a run that ends with it (a piped
    /// line, `revolve compact`); the text is the session's, saying why
    /// (exit 1).
    Failed(String),
    /// A rewind was refused: a file changed behind revolve's back, or
    /// there is nothing to rewind; the text is the core's (exit 1).
    Rewind(String),
    /// `revolve mcp login`: the OAuth flow with a server failed (exit 1).
    Login {
        /// The server, as configured.
        server: String,
        /// What went wrong (a discovery, the browser's answer, the token
        /// exchange).
        why: String,
    },
    /// revolve's own files: a log, a listing, a session not found (exit
    /// 1, or 2 for a session named that is not there, see
    /// [`revolve_store::error::Error::is_usage`]).
    Store(revolve_store::error::Error),
    /// The model server (exit 1).
    Provider(revolve_provider::ProviderError),
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
    /// Reading stdin failed (exit 1).
    Stdin(std::io::Error),
    /// Writing to stdout failed, other than by its reader closing it
    /// (exit 1).
    Stdout(std::io::Error),
    /// The terminal: the line editor could not start or read a line
    /// (exit 1).
    Terminal {
        /// What failed, as the line starts (`cannot read the terminal`).
        doing: &'static str,
        /// What the line editor said.
        error: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The working directory could not be read (exit 1).
    Cwd(std::io::Error),
    /// The manual page could not be rendered (exit 1).
    Manual(std::io::Error),
    /// What revolve prints as JSON could not be encoded (exit 1).
    Encode(Box<dyn std::error::Error + Send + Sync>),
    /// A turn was stopped by a guard (a repeated call, the tool-round
    /// cap…) in a run that ends with it (exit 1).
    Stopped(revolve_core::guard::StopReason),
    /// A session named that is known but not running, so nothing can be
    /// sent to it (exit 1).
    NotRunning(String),
    /// `revolve replay --check` or `--against`: the log does not replay
    /// as it should (exit 1).
    Replay {
        /// The session log.
        path: std::path::PathBuf,
        /// What is wrong with it.
        fault: ReplayFault,
    },
}

/// Why a log does not replay as it should.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplayFault {
    /// The file has no line at all.
    Empty,
    /// The file has lines but no session header.
    NoHeader,
    /// Lines were skipped (other than one torn tail per file) or the fold
    /// noted inconsistencies.
    NotClean,
    /// Fewer recorded answers than requests: the log is cut short.
    NotWhole {
        /// Requests the log rebuilds.
        requests: usize,
        /// Answers it recorded.
        answers: usize,
    },
    /// Answers a provider gave again that differ from the recorded ones.
    Differ {
        /// How many differ.
        differ: usize,
        /// Of how many.
        total: usize,
    },
}

impl Error {
    /// The process exit code.
    pub fn code(&self) -> i32 {
        match self {
            Error::Usage(_) => 2,
            Error::Failed(_)
            | Error::Rewind(_)
            | Error::Login { .. }
            | Error::Stdin(_)
            | Error::Stdout(_)
            | Error::Terminal { .. }
            | Error::Cwd(_)
            | Error::Manual(_)
            | Error::Encode(_)
            | Error::Stopped(_)
            | Error::NotRunning(_)
            | Error::Replay { .. } => 1,
            Error::Store(e) if e.is_usage() => 2,
            Error::Store(_) | Error::Provider(_) => 1,
            Error::Interrupted => 130,
            Error::BrokenPipe => 0,
            Error::Terminated => 143,
            Error::GoalNotMet(_) => 3,
        }
    }

    /// A file operation of revolve's own that failed: `what` is how the
    /// line starts (`cannot read`), `path` what it was done to.
    pub fn at(path: &std::path::Path, what: &'static str, e: std::io::Error) -> Error {
        Error::Store(revolve_store::error::Error::io(what, path, e))
    }

    /// A store operation that failed, its error naming the file already.
    pub fn store(e: std::io::Error) -> Error {
        Error::Store(revolve_store::error::Error::Named(e))
    }

    /// A change of the memory or its snapshots that failed: the line says
    /// `doing` (`cannot undo`) and why.
    pub fn memory(doing: &'static str) -> impl FnOnce(std::io::Error) -> Error {
        move |error| Error::Store(revolve_store::error::Error::Memory { doing, error })
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Usage(m) | Error::Failed(m) | Error::Rewind(m) => f.write_str(m),
            Error::Login { server, why } => write!(f, "cannot log in to {server}: {why}"),
            Error::Store(e) => e.fmt(f),
            Error::Provider(e) => e.fmt(f),
            Error::GoalNotMet(why) => write!(f, "the goal run ended without the goal met: {why}"),
            Error::Interrupted => f.write_str("interrupted"),
            Error::BrokenPipe => f.write_str("stdout closed"),
            Error::Terminated => {
                f.write_str("stopped by a signal; the turn is logged as interrupted")
            }
            Error::Stdin(e) => write!(f, "cannot read stdin: {e}"),
            Error::Stdout(e) => write!(f, "cannot write to stdout: {e}"),
            Error::Terminal { doing, error } => write!(f, "{doing}: {error}"),
            Error::Cwd(e) => write!(f, "cannot read the working directory: {e}"),
            Error::Manual(e) => write!(f, "cannot render the manual page: {e}"),
            Error::Encode(e) => e.fmt(f),
            Error::Stopped(reason) => f.write_str(&revolve_core::guard::describe(reason)),
            Error::NotRunning(name) => write!(
                f,
                "session '{name}' is not running (revolve --resume {name} continues it)"
            ),
            Error::Replay { path, fault } => {
                let path = path.display();
                match fault {
                    ReplayFault::Empty => write!(f, "{path} is empty: not a session log"),
                    ReplayFault::NoHeader => {
                        write!(f, "{path} holds no session header: not a session log")
                    }
                    ReplayFault::NotClean => write!(f, "{path} does not replay cleanly"),
                    ReplayFault::NotWhole { requests, answers } => write!(
                        f,
                        "{path}: {requests} requests but {answers} answers; the log is not whole (revolve replay --check tells more)"
                    ),
                    ReplayFault::Differ { differ, total } => {
                        write!(f, "{differ} of {total} answers differ from the recording")
                    }
                }
            }
        }
    }
}

impl std::error::Error for Error {}

impl From<revolve_store::error::Error> for Error {
    fn from(e: revolve_store::error::Error) -> Error {
        Error::Store(e)
    }
}

impl From<revolve_store::store::FindError> for Error {
    fn from(e: revolve_store::store::FindError) -> Error {
        Error::Store(e.into())
    }
}

impl From<revolve_store::resume::ResumeError> for Error {
    fn from(e: revolve_store::resume::ResumeError) -> Error {
        Error::Store(e.into())
    }
}

impl Error {
    /// The line editor failed doing `doing` (`cannot read the terminal`).
    pub fn terminal<E: std::error::Error + Send + Sync + 'static>(
        doing: &'static str,
    ) -> impl FnOnce(E) -> Error {
        move |e| Error::Terminal {
            doing,
            error: Box::new(e),
        }
    }

    /// JSON output that could not be encoded.
    pub fn encode<E: std::error::Error + Send + Sync + 'static>(e: E) -> Error {
        Error::Encode(Box::new(e))
    }
}

impl From<revolve_provider::ProviderError> for Error {
    fn from(e: revolve_provider::ProviderError) -> Error {
        Error::Provider(e)
    }
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::path::{Path, PathBuf};

    use revolve_store::error::Error as StoreError;
    use revolve_store::store::FindError;

    use super::Error;

    /// Each boundary's error as the binary shows it: its line and its
    /// exit code.
    fn shown(e: Error) -> (String, i32) {
        (e.to_string(), e.code())
    }

    #[test]
    fn boundary_errors_map_to_one_line_and_one_code() {
        let denied = || io::Error::new(io::ErrorKind::PermissionDenied, "Permission denied");
        assert_eq!(
            shown(Error::at(Path::new("/s/a.jsonl"), "cannot read", denied())),
            ("cannot read /s/a.jsonl: Permission denied".into(), 1)
        );
        assert_eq!(
            shown(Error::memory("cannot undo")(denied())),
            ("cannot undo: Permission denied".into(), 1)
        );
        assert_eq!(
            shown(
                StoreError::NoHome {
                    dir: "state",
                    var: "XDG_STATE_HOME"
                }
                .into()
            ),
            (
                "cannot find the state directory: set HOME or XDG_STATE_HOME".into(),
                1
            )
        );
        // A session named that is not there is the user's to fix (2); a
        // folder that cannot be listed is not (1).
        let cwd = PathBuf::from("/w");
        assert_eq!(
            shown(
                FindError::NoSuch {
                    needle: "birch".into(),
                    cwd
                }
                .into()
            ),
            (
                "no session 'birch' in /w (revolve sessions --all lists them)".into(),
                2
            )
        );
        assert_eq!(
            shown(
                FindError::Unlisted {
                    dir: "/s".into(),
                    error: denied()
                }
                .into()
            ),
            ("cannot list /s: Permission denied".into(), 1)
        );
        let refused = revolve_provider::ProviderError::new("HTTP 401 from http://h/v1", "");
        assert_eq!(
            shown(refused.into()),
            ("HTTP 401 from http://h/v1".into(), 1)
        );
    }

    #[test]
    fn the_shells_own_failures_keep_their_lines() {
        let closed = || io::Error::new(io::ErrorKind::UnexpectedEof, "closed");
        assert_eq!(
            shown(Error::Stdin(closed())),
            ("cannot read stdin: closed".into(), 1)
        );
        assert_eq!(
            shown(Error::Stdout(closed())),
            ("cannot write to stdout: closed".into(), 1)
        );
        assert_eq!(
            shown(Error::terminal("cannot read the terminal")(closed())),
            ("cannot read the terminal: closed".into(), 1)
        );
        assert_eq!(
            shown(Error::Replay {
                path: PathBuf::from("/s/a.jsonl"),
                fault: super::ReplayFault::NotWhole {
                    requests: 3,
                    answers: 2
                },
            }),
            (
                "/s/a.jsonl: 3 requests but 2 answers; the log is not whole (revolve replay --check tells more)"
                    .into(),
                1
            )
        );
        assert_eq!(
            shown(Error::Login {
                server: "docs".into(),
                why: "the browser did not come back".into()
            }),
            (
                "cannot log in to docs: the browser did not come back".into(),
                1
            )
        );
        assert_eq!(
            shown(Error::Failed("HTTP 500 from http://h/v1".into())),
            ("HTTP 500 from http://h/v1".into(), 1)
        );
        assert_eq!(
            shown(Error::NotRunning("amber".into())),
            (
                "session 'amber' is not running (revolve --resume amber continues it)".into(),
                1
            )
        );
    }
}
