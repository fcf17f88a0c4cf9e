//! Model providers: send a core [`Request`], stream the answer's text, return
//! a [`Reply`] with its text, tool calls and usage.
//!
//! * [`OpenAi`] speaks the OpenAI Chat Completions protocol to any compatible
//!   server (`POST {base}/chat/completions`, `Authorization: Bearer KEY`).
//! * [`Anthropic`] speaks the Anthropic Messages protocol
//!   (`POST {base}/messages`, `x-api-key: KEY`, `anthropic-version`).
//! * [`Gemini`] speaks Google's Gemini API (`POST
//!   {base}/models/MODEL:streamGenerateContent?alt=sse`, `x-goog-api-key: KEY`).
//! * [`Responses`] speaks OpenAI's Responses protocol (`POST
//!   {base}/responses`, `Authorization: Bearer KEY`), the wire of OpenAI's
//!   reasoning models.
//! * [`Scripted`] answers from a JSON Lines file, for tests and demos.
//! * [`Retrying`] wraps any of them and sends a failed request again when
//!   [`revolve_core::retry::delay`] says so.
//!
//! The two HTTP providers share everything but the protocol: they send
//! [`Request::body`] byte for byte, read a server-sent event stream as it
//! arrives (or a plain JSON answer), and turn every failure into a one-line
//! [`ProviderError`] that keeps the text streamed before it, names the URL
//! and never the key.
//!
//! # Tool calls
//!
//! A reply's [`Reply::tool_calls`] come in the order the model wrote them
//! (OpenAI: by `index`; Anthropic: by content block). Their arguments are the
//! JSON text the model wrote, fragments joined, not checked here; a call
//! whose arguments are empty gets `{}`, and one without an id (some local
//! servers) gets `call_INDEX`. The text may be empty when there are calls.
//!
//! # Timeouts of the HTTP providers
//!
//! * Connecting (after name resolution) may take at most 10 s, and so may
//!   resolving the host name.
//! * There is no limit on a whole request: a long answer may stream for as
//!   long as it keeps sending.
//! * Every single read from the socket, the wait for the response head
//!   included, may take at most the *stall timeout*, 120 s unless
//!   `with_stall_timeout` says otherwise (ureq's `timeout_per_read`). A server
//!   that goes silent for longer fails the request with
//!   `stream from URL stalled: …` (or `no answer from URL: …` before the head
//!   arrived), keeping the partial text. The whole response head, however
//!   it trickles in, must also arrive within the stall timeout (ureq's
//!   `timeout_recv_response`), else `no answer from URL: no response
//!   headers within …` (which is also what a server silent from the start
//!   gets: both bounds end at once). Requests built by core always
//!   stream, so a model that thinks for long still sends bytes (role chunks,
//!   pings, SSE comments); a non-streamed answer that takes longer than the
//!   stall timeout to start fails.
//! * A stream must also make *progress in content* within the stall
//!   timeout: text, tool calls, or reasoning the answer does not keep.
//!   Keepalive comments (`: ping`), `ping` events and chunks with empty
//!   deltas are bytes, not progress; a stream of nothing else fails with
//!   `stream from URL stalled: no content received for …`.
//! * A server on this machine (`localhost`, 127.0.0.0/8, `::1`) may take
//!   [`LOCAL_PREFILL_WAIT`] (600 s) instead, up to its answer's first
//!   content (the response head, and the stream up to its first text, tool
//!   call or reasoning): llama.cpp, Ollama or LM Studio on a CPU send
//!   nothing while they read a long prompt, for minutes. After the first
//!   content the stall timeout holds again. Past that wait the request
//!   fails with `… no content received for 600 s while the local server
//!   read the prompt (--stall-timeout raises it)` (or `no answer from URL:
//!   … within 600 s while …` before the head). An explicit
//!   `with_stall_timeout` holds everywhere instead (unless
//!   `with_prefill_wait` follows it); remote servers never get the wait.
//!   The per-read and head timeouts of such a request are the longer wait;
//!   its body is read on a thread, so that the stream can stop waiting at
//!   the stall timeout after the first content (the thread's read ends
//!   with the agent's timeout, holding the connection until then).
//!
//! # Size
//!
//! An answer may hold at most [`MAX_ANSWER_BYTES`] (8 MiB) of text and tool
//! calls together: a stream that goes on past it fails with `answer from
//! URL is longer than 8 MiB; stopped reading`, keeping the text so far, and
//! a non-streamed answer is read up to twice that (escaping) and fails
//! beyond it. A server that never stops sending takes bounded memory.
//!
//! # Failures and retries
//!
//! The providers never retry by themselves. A [`ProviderError`] carries what
//! the retry policy needs ([`ProviderError::failure`]): the HTTP status and
//! its `Retry-After` (in seconds; the HTTP-date form is ignored), and whether
//! the failure was *broken* ([`FailureKind::Broken`]): the connection was refused, reset or timed
//! out, the stream broke or stalled, or the server reported an overload or
//! internal error inside a `200` stream. A failure after text was shown is
//! final whatever it was, since sending again would show the text twice.
//! [`Retrying`] applies the policy.
//!
//! One exception is not a retry: a `200` stream that ends before its end
//! event having delivered nothing (llama-cpp-python's answer to a prompt
//! over its context) is asked again at once with `"stream": false`, and
//! that answer decides: its overflow error ([`FailureKind::Overflow`], never retried)
//! or its whole answer. This happens once per request (see the `http`
//! module).
//!
//! # Length
//!
//! An answer that stopped at the request's length limit (Chat
//! Completions' `finish_reason: "length"`, Anthropic's `stop_reason:
//! "max_tokens"`, a script line's `"truncated": true`) is a reply like any
//! other, marked [`Reply::truncated`].
//!
//! # Connections
//!
//! A provider holds one HTTP agent, and its clones share it: requests reuse
//! a kept-alive connection once the answer before was read to its end,
//! which a stream's is, up to a bound, after its end event (see the `http`
//! module). The shell makes one provider per session, so a session's
//! turns, summaries and refinements go over one connection while the
//! server keeps it.

#![forbid(unsafe_code)]

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

pub use revolve_core::retry::FailureKind;
use revolve_core::retry::{self, Failure};
use revolve_core::text::squeezed as one_line;
use revolve_core::{Reply, Request};

mod anthropic;
mod gemini;
mod http;
mod openai;
mod responses;
mod scripted;
mod sse;
mod tcp;

pub use anthropic::{Anthropic, ANTHROPIC_VERSION};
pub use gemini::Gemini;
pub use openai::OpenAi;
pub use responses::Responses;
pub use revolve_core::policy::{
    CONNECT_TIMEOUT, LOCAL_PREFILL_WAIT, MAX_ANSWER_BYTES, STALL_TIMEOUT,
};
pub use scripted::{Scripted, ScriptedReply};
pub use sse::{SseEvent, SseParser};

/// A model API.
pub trait Provider: Send + Sync {
    /// Sends `request` and returns the complete answer, calling `on_text`
    /// with every piece of text as it arrives (the pieces concatenated are
    /// the reply's text). On failure the error holds what had streamed.
    fn complete(
        &self,
        request: &Request,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<Reply, ProviderError>;

    /// A short name for logs and headers: `openai`, `anthropic`, `scripted`.
    fn name(&self) -> &'static str;

    /// Whether [`Provider::count`] asks the server, at no cost to the
    /// user (a local server, or a free count endpoint).
    fn counts(&self) -> bool {
        false
    }

    /// The server's count of `request`'s prompt, in tokens, without an
    /// answer; `None` when it cannot say.
    fn count(&self, _request: &Request) -> Option<u64> {
        None
    }
}

impl<P: Provider + ?Sized> Provider for Box<P> {
    fn complete(
        &self,
        request: &Request,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<Reply, ProviderError> {
        (**self).complete(request, on_text)
    }

    fn name(&self) -> &'static str {
        (**self).name()
    }

    fn counts(&self) -> bool {
        (**self).counts()
    }

    fn count(&self, request: &Request) -> Option<u64> {
        (**self).count(request)
    }
}

impl<P: Provider + ?Sized> Provider for Arc<P> {
    fn complete(
        &self,
        request: &Request,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<Reply, ProviderError> {
        (**self).complete(request, on_text)
    }

    fn name(&self) -> &'static str {
        (**self).name()
    }

    fn counts(&self) -> bool {
        (**self).counts()
    }

    fn count(&self, request: &Request) -> Option<u64> {
        (**self).count(request)
    }
}

/// A request that failed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProviderError {
    /// What went wrong, on one line, naming the URL or file involved and
    /// never an API key.
    pub message: String,
    /// The text streamed before the failure, possibly empty.
    pub partial: String,
    /// The HTTP status, when the server answered with a failing one.
    pub status: Option<u16>,
    /// The server's `Retry-After`, in seconds, when it sent one.
    pub retry_after: Option<u64>,
    /// What kind of failure it is: an answer that is not one, a broken
    /// connection or an overload (sending again may work), nothing
    /// listening on this machine, or a context overflow (read from the
    /// server's whole error body by [`revolve_core::overflow::recognise`]).
    pub kind: FailureKind,
}

impl ProviderError {
    /// An error with this message (whitespace runs, newlines included,
    /// collapsed to one space) and the text streamed so far; of the kind
    /// [`FailureKind::Answered`], without a status.
    pub fn new(message: impl AsRef<str>, partial: impl Into<String>) -> ProviderError {
        ProviderError {
            message: one_line(message.as_ref()),
            partial: partial.into(),
            ..ProviderError::default()
        }
    }

    /// The same error, of the kind [`FailureKind::Broken`]: sending again
    /// may work.
    pub(crate) fn broken(self) -> ProviderError {
        ProviderError {
            kind: FailureKind::Broken,
            ..self
        }
    }

    /// The same error, of the kind [`FailureKind::Overflow`] when the
    /// server's words (`said`) say the request did not fit its context.
    pub(crate) fn overflowing(self, said: &str) -> ProviderError {
        match revolve_core::overflow::recognise(said) {
            Some(o) => ProviderError {
                kind: FailureKind::Overflow(o),
                ..self
            },
            None => self,
        }
    }

    /// The overflow the server told, when this is one.
    pub fn overflow(&self) -> Option<revolve_core::overflow::Overflow> {
        match self.kind {
            FailureKind::Overflow(o) => Some(o),
            _ => None,
        }
    }

    /// What the retry policy needs to know; `streamed` when some text had
    /// already been shown.
    pub fn failure(&self) -> Failure {
        Failure {
            status: self.status,
            retry_after: self.retry_after,
            kind: self.kind,
            streamed: !self.partial.is_empty(),
        }
    }
}

impl fmt::Display for ProviderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ProviderError {}

/// A provider that sends a failed request again, as
/// [`revolve_core::retry::delay`] decides.
///
/// After failed attempt number `n`, it asks `delay(n, &error.failure())`.
/// With `Some(wait)` it tells the user through the notice callback
/// (`retrying in 2 s (attempt 2 of 5): HTTP 429 Too Many Requests from URL`),
/// sleeps `wait` and sends again; with `None` it returns the error, whose
/// message ends with `(after N attempts)` when there was more than one.
/// Text is shown only by an attempt that is not retried afterwards: the
/// policy never retries a failure that streamed text.
///
/// The sleep is injectable ([`Retrying::with_sleep`]) so that tests do not
/// wait, and a caller can make the wait interruptible: a sleep that returns
/// `false` gives up, and the last error is returned without another try.
pub struct Retrying<P> {
    inner: P,
    notice: Box<dyn Fn(&str) + Send + Sync>,
    sleep: Box<dyn Fn(Duration) -> bool + Send + Sync>,
    retries: u32,
}

impl<P: Provider> Retrying<P> {
    /// Wraps `inner`; `notice` is called with one line before each wait.
    /// Waits with [`std::thread::sleep`].
    pub fn new(inner: P, notice: impl Fn(&str) + Send + Sync + 'static) -> Retrying<P> {
        Retrying {
            inner,
            notice: Box::new(notice),
            sleep: Box::new(|wait| {
                std::thread::sleep(wait);
                true
            }),
            retries: retry::MAX_RETRIES,
        }
    }

    /// The same wrapper, waiting with `sleep` instead; `sleep` returns
    /// whether to try again.
    pub fn with_sleep(
        self,
        sleep: impl Fn(Duration) -> bool + Send + Sync + 'static,
    ) -> Retrying<P> {
        Retrying {
            sleep: Box::new(sleep),
            ..self
        }
    }

    /// The same wrapper, sending a failed request again at most `retries`
    /// times (0: once only).
    pub fn with_retries(self, retries: u32) -> Retrying<P> {
        Retrying { retries, ..self }
    }

    /// The wrapped provider.
    pub fn inner(&self) -> &P {
        &self.inner
    }
}

impl<P: Provider> Provider for Retrying<P> {
    fn complete(
        &self,
        request: &Request,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<Reply, ProviderError> {
        let mut attempt = 1;
        loop {
            let error = match self.inner.complete(request, on_text) {
                Ok(reply) => return Ok(reply),
                Err(error) => error,
            };
            match retry::delay(attempt, self.retries, &error.failure()) {
                Some(wait) => {
                    (self.notice)(&format!(
                        "retrying in {} (attempt {} of {}): {}",
                        seconds(wait),
                        attempt + 1,
                        self.retries + 1,
                        error.message
                    ));
                    if !(self.sleep)(wait) {
                        return Err(error);
                    }
                    attempt += 1;
                }
                None if attempt > 1 => {
                    let message = format!("{} (after {attempt} attempts)", error.message);
                    return Err(ProviderError { message, ..error });
                }
                None => return Err(error),
            }
        }
    }

    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn counts(&self) -> bool {
        self.inner.counts()
    }

    fn count(&self, request: &Request) -> Option<u64> {
        self.inner.count(request)
    }
}

impl<P: fmt::Debug> fmt::Debug for Retrying<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Retrying")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

/// `120 s`, or `250 ms` below a whole second.
fn seconds(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

/// The first `max` characters of `text` on one line, `…` when cut.
fn excerpt(text: &str, max: usize) -> String {
    let line = one_line(text);
    match line.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line,
    }
}

pub use revolve_core::text::word_pieces;

/// Helpers shared by the providers' tests.
#[cfg(test)]
mod testing {
    use revolve_core::request::Wire;
    use revolve_core::{Reply, Request};

    use super::{Provider, ProviderError};

    /// An OpenAI-wire request of these user messages, each but the last
    /// answered `ok`, after a system prompt.
    pub(crate) fn request(users: &[&str]) -> Request {
        let mut messages = vec![serde_json::json!({"role":"system","content":"sys"})];
        for (i, u) in users.iter().enumerate() {
            if i > 0 {
                messages.push(serde_json::json!({"role":"assistant","content":"ok"}));
            }
            messages.push(serde_json::json!({"role":"user","content":u}));
        }
        let body = serde_json::json!({"model":"m","messages":messages,"stream":true}).to_string();
        Request {
            model: "m".into(),
            wire: Wire::OpenAi,
            body: body.into(),
            messages: messages.len() - 1,
            seq: 0,
        }
    }

    /// Runs `provider` on a one-message request, collecting the pieces.
    pub(crate) fn run(provider: &dyn Provider) -> (Result<Reply, ProviderError>, Vec<String>) {
        let mut pieces = Vec::new();
        let result = provider.complete(&request(&["hi"]), &mut |p| pieces.push(p.to_owned()));
        (result, pieces)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use revolve_core::retry::MAX_RETRIES;

    use super::testing::run;
    use super::*;
    use revolve_testkit::{FakeReply, FakeServer};

    #[test]
    fn providers_are_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<OpenAi>();
        check::<Anthropic>();
        check::<Gemini>();
        check::<Scripted>();
        check::<Box<dyn Provider>>();
        check::<Retrying<Arc<dyn Provider>>>();
    }

    #[test]
    fn failure_says_what_the_policy_needs() {
        let error = ProviderError {
            status: Some(429),
            retry_after: Some(3),
            ..ProviderError::new("busy\n now", "")
        };
        assert_eq!(error.message, "busy now");
        assert_eq!(
            error.failure(),
            Failure {
                status: Some(429),
                retry_after: Some(3),
                kind: FailureKind::Answered,
                streamed: false,
            }
        );
        let cut = ProviderError::new("cut", "Hel").broken();
        assert_eq!(
            cut.failure(),
            Failure {
                kind: FailureKind::Broken,
                streamed: true,
                ..Failure::default()
            }
        );
    }

    /// A retrying provider over `replies`, recording notices and sleeps.
    struct Harness {
        server: FakeServer,
        provider: Retrying<OpenAi>,
        notices: Arc<Mutex<Vec<String>>>,
        sleeps: Arc<Mutex<Vec<Duration>>>,
    }

    fn harness(replies: Vec<FakeReply>) -> Harness {
        let server = FakeServer::start(replies).unwrap();
        let notices = Arc::new(Mutex::new(Vec::new()));
        let sleeps = Arc::new(Mutex::new(Vec::new()));
        let (n, s) = (Arc::clone(&notices), Arc::clone(&sleeps));
        let provider = Retrying::new(OpenAi::new(server.url(), Some("sk-k".into())), move |m| {
            n.lock().unwrap().push(m.to_owned())
        })
        .with_sleep(move |d| {
            s.lock().unwrap().push(d);
            true
        });
        Harness {
            server,
            provider,
            notices,
            sleeps,
        }
    }

    fn status(code: u16, retry_after: Option<u64>) -> FakeReply {
        FakeReply::Status {
            code,
            body: String::new(),
            retry_after,
        }
    }

    #[test]
    fn retrying_honours_retry_after_then_succeeds() {
        let h = harness(vec![
            status(429, Some(7)),
            status(503, None),
            FakeReply::text("fine"),
        ]);
        let (reply, pieces) = run(&h.provider);
        assert_eq!(reply.unwrap().text, "fine");
        assert_eq!(pieces, ["fine"]);
        assert_eq!(
            *h.sleeps.lock().unwrap(),
            [Duration::from_secs(7), Duration::from_secs(2)]
        );
        let url = format!("{}/chat/completions", h.server.url());
        assert_eq!(
            *h.notices.lock().unwrap(),
            [
                format!("retrying in 7 s (attempt 2 of 5): HTTP 429 Too Many Requests from {url} (retry after 7)"),
                format!("retrying in 2 s (attempt 3 of 5): HTTP 503 Service Unavailable from {url}"),
            ]
        );
        let requests = h.server.requests();
        assert_eq!(requests.len(), 3);
        assert!(requests.iter().all(|r| r.body == requests[0].body));
        assert_eq!(h.provider.name(), "openai");
    }

    #[test]
    fn retrying_gives_up_after_the_last_attempt() {
        let h = harness(vec![status(503, None); 6]);
        let err = run(&h.provider).0.unwrap_err();
        let attempts = MAX_RETRIES as usize + 1;
        assert_eq!(h.server.requests().len(), attempts);
        assert_eq!(
            err.message,
            format!(
                "HTTP 503 Service Unavailable from {}/chat/completions (after {attempts} attempts)",
                h.server.url()
            )
        );
        assert_eq!(err.status, Some(503));
        let secs: Vec<u64> = h
            .sleeps
            .lock()
            .unwrap()
            .iter()
            .map(|d| d.as_secs())
            .collect();
        assert_eq!(secs, [1, 2, 4, 8]);
        assert_eq!(h.notices.lock().unwrap().len(), MAX_RETRIES as usize);
    }

    #[test]
    fn retrying_leaves_final_failures_alone() {
        let h = harness(vec![
            status(401, None),
            FakeReply::CutAfter {
                chunks: vec!["Half".into()],
            },
            FakeReply::CutAfter { chunks: vec![] },
            status(503, None),
            FakeReply::text("again"),
        ]);
        let err = run(&h.provider).0.unwrap_err();
        assert_eq!(err.status, Some(401));
        assert!(!err.message.contains("attempts"), "{err}");
        assert_eq!(h.server.requests().len(), 1);

        // Text was shown: sending again would show it twice.
        let (result, pieces) = run(&h.provider);
        let err = result.unwrap_err();
        assert_eq!(
            (err.partial.as_str(), pieces),
            ("Half", vec!["Half".to_owned()])
        );
        assert_eq!(err.kind, FailureKind::Broken);
        assert_eq!(h.server.requests().len(), 2);
        assert!(h.sleeps.lock().unwrap().is_empty());

        // A stream that ended before any text is asked again unstreamed at
        // once; that answer's failure is sent again as the policy says.
        let (result, pieces) = run(&h.provider);
        assert_eq!(result.unwrap().text, "again");
        assert_eq!(pieces, ["again"]);
        assert_eq!(*h.sleeps.lock().unwrap(), [Duration::from_secs(1)]);
        let requests = h.server.requests();
        assert_eq!(requests.len(), 5);
        assert!(requests[3].body.contains(r#""stream":false"#));
        assert_eq!(requests[4].body, requests[2].body);
    }

    /// Nothing listening on this machine is not a blip: the first refusal
    /// is final, with the hint to start the server.
    #[test]
    fn a_refused_local_connection_is_not_retried() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let sleeps = Arc::new(Mutex::new(0));
        let s = Arc::clone(&sleeps);
        let provider: Box<dyn Provider> =
            Box::new(OpenAi::new(format!("http://127.0.0.1:{port}/v1"), None));
        let provider = Retrying::new(provider, |_| {}).with_sleep(move |_| {
            *s.lock().unwrap() += 1;
            true
        });
        let err = run(&provider).0.unwrap_err();
        assert_eq!(err.kind, FailureKind::NobodyListens);
        assert_eq!(*sleeps.lock().unwrap(), 0);
        assert!(err.message.ends_with("or give another --base-url"), "{err}");
    }

    #[test]
    fn retrying_scripted_errors_are_final() {
        let script = Scripted::new(
            "s.jsonl",
            vec![ScriptedReply {
                error: Some("boom".into()),
                ..ScriptedReply::default()
            }],
        );
        let provider = Retrying::new(script, |_| panic!("no retry")).with_sleep(|_| panic!());
        assert_eq!(run(&provider).0.unwrap_err().message, "boom");
    }

    #[test]
    fn word_pieces_keep_every_byte() {
        for text in [
            "",
            " ",
            "a",
            "hello world",
            "  lead and trail  ",
            "tab\tand\nnewline",
            "é ü ñ",
        ] {
            assert_eq!(word_pieces(text).concat(), text);
        }
        assert_eq!(word_pieces("  lead x"), ["  lead", " x"]);
    }
}
