//! When a failed model request is sent again: the policy, as a pure
//! function the shell consults between attempts.

use std::time::Duration;

/// What the shell knows about a failed attempt.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Failure {
    /// The HTTP status, when the server answered.
    pub status: Option<u16>,
    /// The server's `Retry-After`, in seconds.
    pub retry_after: Option<u64>,
    /// What kind of failure it was.
    pub kind: FailureKind,
    /// Some of the answer had already been shown to the user; sending again
    /// would show it twice, so such a failure is final.
    pub streamed: bool,
}

/// What kind of failure an attempt was, as the provider tells it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FailureKind {
    /// The server answered, and not with what was asked: a failing status,
    /// an error in the stream that is no overload, words that are no
    /// answer. The status, when there is one, says whether sending again
    /// may work.
    #[default]
    Answered,
    /// The connection failed or broke (refused by a remote host, reset,
    /// timed out, closed or stalled mid-stream), or the stream reported an
    /// overload: sending again may work.
    Broken,
    /// A server on this machine refused the connection: nothing listens
    /// there (Ollama or llama.cpp not started), and seconds of waiting
    /// will not start it.
    NobodyListens,
    /// The server said the request did not fit its context
    /// ([`crate::overflow`]): the same request would fail again, whatever
    /// the status.
    Overflow(crate::overflow::Overflow),
}

/// How many times a request is sent again at most, unless the user says
/// otherwise (`--retries`).
pub const MAX_RETRIES: u32 = 4;
/// The longest wait between attempts, even when the server asks for more.
pub(crate) const MAX_WAIT: Duration = Duration::from_secs(60);

/// How long to wait before sending again after failed attempt number
/// `attempt` (1 for the first), or `None` when it should not be sent again:
/// retried are 408, 409, 429, 5xx and 529 answers and broken connections,
/// at most `retries` times, honouring `Retry-After` (capped at
/// [`MAX_WAIT`]) and otherwise backing off 1, 2, 4, 8 s; never a context
/// overflow, whatever its status, nor a refused connection to this machine
/// (nothing listens there: the user must start the server).
pub fn delay(attempt: u32, retries: u32, failure: &Failure) -> Option<Duration> {
    let retryable = match (failure.kind, failure.status) {
        (FailureKind::Overflow(_) | FailureKind::NobodyListens, _) => false,
        (_, Some(s)) => matches!(s, 408 | 409 | 429 | 500..=599),
        (FailureKind::Broken, None) => true,
        (FailureKind::Answered, None) => false,
    };
    if !retryable || failure.streamed || attempt == 0 || attempt > retries {
        return None;
    }
    let backoff = Duration::from_secs(1 << (attempt - 1).min(5));
    Some(
        failure
            .retry_after
            .map_or(backoff, Duration::from_secs)
            .min(MAX_WAIT),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy() {
        let busy = Failure {
            status: Some(429),
            ..Failure::default()
        };
        assert_eq!(delay(1, MAX_RETRIES, &busy), Some(Duration::from_secs(1)));
        assert_eq!(delay(3, MAX_RETRIES, &busy), Some(Duration::from_secs(4)));
        assert_eq!(delay(5, MAX_RETRIES, &busy), None);
        let told = Failure {
            retry_after: Some(7),
            ..busy
        };
        assert_eq!(delay(1, MAX_RETRIES, &told), Some(Duration::from_secs(7)));
        let greedy = Failure {
            retry_after: Some(3600),
            ..busy
        };
        assert_eq!(delay(1, MAX_RETRIES, &greedy), Some(MAX_WAIT));
        assert_eq!(
            delay(
                1,
                MAX_RETRIES,
                &Failure {
                    status: Some(401),
                    ..Failure::default()
                }
            ),
            None
        );
        assert_eq!(
            delay(
                1,
                MAX_RETRIES,
                &Failure {
                    status: Some(503),
                    streamed: true,
                    ..Failure::default()
                }
            ),
            None
        );
        assert_eq!(
            delay(
                2,
                MAX_RETRIES,
                &Failure {
                    kind: FailureKind::Broken,
                    ..Failure::default()
                }
            ),
            Some(Duration::from_secs(2))
        );
        assert_eq!(delay(1, MAX_RETRIES, &Failure::default()), None);
        let overflow = Failure {
            status: Some(500),
            kind: FailureKind::Overflow(crate::overflow::Overflow {
                limit: Some(4096),
                asked: None,
            }),
            ..Failure::default()
        };
        assert_eq!(
            delay(1, MAX_RETRIES, &overflow),
            None,
            "whatever the status"
        );
        assert_eq!(delay(1, 0, &busy), None, "--retries 0 sends once");
    }

    #[test]
    fn a_server_on_this_machine_that_is_not_started_is_not_waited_for() {
        let refused = Failure {
            kind: FailureKind::NobodyListens,
            ..Failure::default()
        };
        assert_eq!(delay(1, MAX_RETRIES, &refused), None);
        let remote = Failure {
            kind: FailureKind::Broken,
            ..refused
        };
        assert_eq!(delay(1, MAX_RETRIES, &remote), Some(Duration::from_secs(1)));
    }
}
