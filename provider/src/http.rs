//! What the HTTP providers share: the agent and its timeouts, posting a
//! body, turning every failure into a [`ProviderError`], reading the answer
//! (an SSE stream or one JSON document) through a [`Protocol`], and putting
//! text, tool calls and usage together into a [`Reply`].
//!
//! # One connection for a session
//!
//! One [`Http`] holds one ureq [`Agent`], whose pool keeps a connection
//! for the next request once an answer's body was read to its end. A JSON
//! answer and an error body are read whole; a stream is read up to its
//! end event, and what is left after it (an empty line, the chunked
//! body's last chunk) is read too, at most [`STREAM_DRAIN_BYTES`] and for
//! at most [`STREAM_DRAIN_WAIT`] before the answer is returned (the rest on
//! a background thread), when the body is length-delimited and the server
//! did not say `Connection: close`. So the requests of a session (turns,
//! summaries, refinements) share one connection while the server keeps it.
//!
//! # A stream that ends empty
//!
//! Some servers refuse an oversized *streamed* request with `200`,
//! `text/event-stream` and a body that ends at once (llama.cpp's server
//! from `llama-cpp-python`), while the same request unstreamed gets their
//! real `400` overflow answer. So a stream that ends (at EOF) before its
//! end event having delivered nothing (no text, no tool call fragment, no
//! reasoning) is not taken for a broken connection at once: the request
//! is sent once more with `"stream": false` (and, for Chat Completions,
//! without `stream_options`), accepting JSON, on a new connection (the
//! server may be closing the one the empty stream came on, as uvicorn
//! does right after it), and what that answer says is
//! the result: its error through the usual status path (an overflow is
//! recognised, and is not broken), or its whole answer as the reply.
//! This happens once per request; the second answer's failure message says
//! it was sent again unstreamed. A stream that ends after some content
//! stays a broken `stream from URL ended before [DONE]` that keeps the
//! partial text.

use std::borrow::Cow;
use std::fmt;
use std::io::{ErrorKind, Read};
use std::time::{Duration, Instant};

use revolve_core::request::Body;
use serde_json::Value;
use ureq::unversioned::resolver::DefaultResolver;
use ureq::unversioned::transport::{ConnectProxyConnector, Connector as _, RustlsConnector};
use ureq::{Agent, Timeout};

use base64::prelude::{Engine as _, BASE64_STANDARD};
use revolve_core::config::{redact_url_credentials, url_userinfo};
use revolve_core::Reply;

mod answer;
mod failure;
mod source;

pub(crate) use answer::*;
pub(crate) use failure::{answer_error, bad_answer, bad_event, stream_error};
use failure::{describe, error_message, retry_delay, transient};
use source::{drain, Plain, Relay, Source};

use super::sse::{SseEvent, SseParser};
use super::tcp::QuickAckConnector;
use super::{excerpt, one_line, seconds, FailureKind, ProviderError};
use revolve_core::policy::{
    CONNECT_TIMEOUT, ERROR_BODY_READ, JSON_BODY_LIMIT, LOCAL_PREFILL_WAIT, MAX_ANSWER_BYTES,
    MAX_STREAM_BYTES, RETRY_AFTER_SHOWN, STALL_TIMEOUT,
};

pub(super) use revolve_core::policy::ERROR_BODY_SHOWN;

/// One wire protocol's way of reading an answer.
pub(super) trait Protocol: Default {
    /// What ends a complete stream, named when a stream stops before it:
    /// `[DONE]`, `message_stop`.
    const END: &'static str;

    /// What the stream delivered so far.
    fn answer(&mut self) -> &mut Answer;

    /// Takes one event of the stream; `Ok(true)` when it ends the answer.
    /// A failure keeps the text streamed so far as its partial text.
    fn event(
        &mut self,
        url: &str,
        event: SseEvent,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<bool, ProviderError>;

    /// Reads a non-streamed answer.
    fn whole(url: &str, bytes: &[u8]) -> Result<Reply, ProviderError>;

    /// The request `body` asking for the same answer unstreamed (see the
    /// module doc, "A stream that ends empty"); `None` when the body is not
    /// a JSON object.
    fn unstreamed(body: &str) -> Option<String>;

    /// Whether `event` carries content the answer does not keep (a
    /// thinking model's reasoning): progress of the stream all the same.
    fn carries_unkept(_event: &SseEvent) -> bool {
        false
    }

    /// The answer of a stream that ended (the server closed it) without
    /// its end event, for a protocol whose streams have none (Gemini's
    /// ends after the event that says why the answer stopped); `None`:
    /// the stream broke off.
    fn ended(&mut self, _url: &str) -> Option<Result<Reply, ProviderError>> {
        None
    }
}

/// Whether `data` (an event's JSON) holds a non-empty string at one of
/// `keys`, at any depth: a cheap look first, the parse only when it may.
pub(super) fn holds_text(data: &str, keys: &[&str]) -> bool {
    fn walk(value: &Value, keys: &[&str]) -> bool {
        match value {
            Value::Object(map) => map.iter().any(|(k, v)| {
                (keys.contains(&k.as_str()) && v.as_str().is_some_and(|t| !t.is_empty()))
                    || walk(v, keys)
            }),
            Value::Array(items) => items.iter().any(|v| walk(v, keys)),
            _ => false,
        }
    }
    keys.iter().any(|k| data.contains(k))
        && serde_json::from_str::<Value>(data).is_ok_and(|v| walk(&v, keys))
}

/// An endpoint's base URL, key and timeouts, with the agent that talks to it.
#[derive(Clone)]
pub(super) struct Http {
    base_url: String,
    api_key: Option<String>,
    /// The forms the base URL's credentials are sent or may be echoed in
    /// (`user:password`, and its base64 as in `Authorization: Basic`),
    /// scrubbed from every error.
    url_secrets: Vec<String>,
    /// The variable the key came from, for the hint of a 401 or 403.
    key_var: Option<&'static str>,
    stall: Duration,
    /// The longest wait for an answer's first content from a server on
    /// this machine (see [`LOCAL_PREFILL_WAIT`]); none for a remote server
    /// or once the stall timeout was set explicitly.
    prefill: Option<Duration>,
    agent: Agent,
}

impl Http {
    /// `base_url` without its trailing `/`; an empty key counts as none.
    pub(super) fn new(base_url: String, api_key: Option<String>) -> Http {
        let url_secrets = url_userinfo(&base_url)
            .map(|userinfo| {
                let base64 = BASE64_STANDARD.encode(&userinfo);
                // The base64 first: it may hold the plain form by chance.
                vec![base64, userinfo]
            })
            .unwrap_or_default();
        Http {
            url_secrets,
            base_url: base_url.trim_end_matches('/').to_owned(),
            api_key: api_key.filter(|k| !k.is_empty()),
            key_var: None,
            stall: STALL_TIMEOUT,
            prefill: loopback(&base_url).then_some(LOCAL_PREFILL_WAIT),
            agent: agent(STALL_TIMEOUT),
        }
    }

    /// An explicit stall timeout: it holds before the first content too,
    /// for a local server as for any.
    pub(super) fn with_stall(self, stall: Duration) -> Http {
        Http {
            stall,
            prefill: None,
            agent: agent(stall),
            ..self
        }
    }

    /// Another wait for a local server's first content (for tests: set
    /// after [`Http::with_stall`], it makes that stall the limit between
    /// contents only). A remote server gets none.
    pub(super) fn with_prefill_wait(self, wait: Duration) -> Http {
        Http {
            prefill: loopback(&self.base_url).then_some(wait),
            ..self
        }
    }

    /// The wait for the first content when it is longer than the stall
    /// timeout: a local server, no explicit stall timeout.
    pub(super) fn prefill(&self) -> Option<Duration> {
        self.prefill.filter(|wait| *wait > self.stall)
    }

    pub(super) fn stall(&self) -> Duration {
        self.stall
    }

    /// The same client, knowing which variable its key came from (for the
    /// hint of a 401 or 403).
    pub(super) fn with_key_var(self, var: Option<&'static str>) -> Http {
        Http {
            key_var: var,
            ..self
        }
    }

    /// What a 401 or 403 asks the user to check.
    fn refused_key_hint(&self) -> String {
        match (&self.api_key, self.key_var) {
            (Some(_), Some(var)) => format!(
                "the server refused the API key from {var}; check it, and that --base-url {} is \
                 the server it is for",
                self.base_url
            ),
            (Some(_), None) => format!(
                "the server refused the API key; check it, and that --base-url {} is the server \
                 it is for",
                self.base_url
            ),
            (None, _) => format!(
                "no API key was sent; set the provider's key variable (see `revolve config \
                 show`), or check --base-url {}",
                self.base_url
            ),
        }
    }

    pub(super) fn base_url(&self) -> &str {
        &self.base_url
    }

    pub(super) fn api_key(&self) -> Option<&str> {
        self.api_key.as_deref()
    }

    /// Posts `body` to `url` with `headers` (besides `content-type` and
    /// `accept`, which every request carries) and reads the answer as `P`.
    /// The error message is [`Http::scrub`]bed.
    pub(super) fn exchange<P: Protocol>(
        &self,
        url: &str,
        headers: &[(&str, String)],
        body: &Body,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<Reply, ProviderError> {
        self.send::<P>(url, headers, Payload::Body(body), on_text, Ask::Streamed)
            .map_err(|error| self.scrub(error))
    }

    /// `error` without the key, in case a lower layer echoed it, without
    /// the base URL's credentials in the forms they were sent in (a server
    /// may echo `Authorization: Basic …` in its error body), and without
    /// the credentials of any URL it names or any `Basic` token: its
    /// message goes to the log and to stderr.
    fn scrub(&self, mut error: ProviderError) -> ProviderError {
        if let Some(key) = &self.api_key {
            error.message = error.message.replace(key.as_str(), "[key]");
        }
        // URLs first, so that they keep their user name.
        if let Cow::Owned(hidden) = redact_url_credentials(&error.message) {
            error.message = hidden;
        }
        for secret in self.url_secrets.iter().filter(|s| s.len() > 1) {
            error.message = error.message.replace(secret.as_str(), "***");
        }
        error
    }

    /// The model ids `GET url` lists, read as `{"data": [{"id": …}, …]}`
    /// (the shape of OpenAI's and Anthropic's model lists alike), in the
    /// server's order. Failures are one line naming the URL, never the key.
    pub(super) fn models(
        &self,
        url: &str,
        headers: &[(&str, String)],
    ) -> Result<Vec<String>, ProviderError> {
        self.list_models(url, headers)
            .map_err(|error| self.scrub(error))
    }

    /// The JSON a server answers `GET url` with, or `POST url` with
    /// `body`: for the questions asked once at start (a context size),
    /// within `within` however the server stalls.
    pub(super) fn ask_json(
        &self,
        url: &str,
        headers: &[(&str, String)],
        body: Option<&str>,
        within: Duration,
    ) -> Result<Value, ProviderError> {
        let agent = agent(within);
        let sent = match body {
            Some(body) => {
                let mut call = agent
                    .post(url)
                    .header("accept", "application/json")
                    .header("content-type", "application/json");
                for (name, value) in headers {
                    call = call.header(*name, value.as_str());
                }
                call.send(body)
            }
            None => {
                let mut call = agent.get(url).header("accept", "application/json");
                for (name, value) in headers {
                    call = call.header(*name, value.as_str());
                }
                call.call()
            }
        };
        let response = sent.map_err(|e| self.unsent(url, &e))?;
        let status = response.status();
        let bytes = response
            .into_body()
            .with_config()
            .limit(JSON_BODY_LIMIT)
            .read_to_vec()
            .map_err(|e| ProviderError::new(format!("answer from {url} broke off: {e}"), ""))?;
        if !status.is_success() {
            return Err(ProviderError {
                status: Some(status.as_u16()),
                ..ProviderError::new(format!("HTTP {} from {url}", status.as_u16()), "")
            }
            .overflowing(&String::from_utf8_lossy(&bytes)));
        }
        serde_json::from_slice(&bytes)
            .map_err(|e| bad_answer(url, &e, &String::from_utf8_lossy(&bytes)))
    }

    fn list_models(
        &self,
        url: &str,
        headers: &[(&str, String)],
    ) -> Result<Vec<String>, ProviderError> {
        let mut call = self.agent.get(url).header("accept", "application/json");
        for (name, value) in headers {
            call = call.header(*name, value.as_str());
        }
        let response = call.call().map_err(|e| self.unsent(url, &e))?;
        let status = response.status();
        let bytes = response
            .into_body()
            .with_config()
            .limit(JSON_BODY_LIMIT)
            .read_to_vec()
            .map_err(|e| {
                let why = describe(&e, self.stall);
                ProviderError::new(format!("answer from {url} broke off: {why}"), "")
            })?;
        let text = String::from_utf8_lossy(&bytes);
        if !status.is_success() {
            let mut message = format!(
                "HTTP {} {} from {url}",
                status.as_u16(),
                status.canonical_reason().unwrap_or("")
            );
            let shown = excerpt(&text, ERROR_BODY_SHOWN);
            if !shown.is_empty() {
                message.push_str(": ");
                message.push_str(&shown);
            }
            return Err(ProviderError {
                status: Some(status.as_u16()),
                ..ProviderError::new(message, "")
            });
        }
        let list: Value = serde_json::from_slice(&bytes).map_err(|e| bad_answer(url, &e, &text))?;
        let Some(data) = list.get("data").and_then(Value::as_array) else {
            return Err(ProviderError::new(
                format!(
                    "no model list from {url} (expected {{\"data\": [...]}}): {}",
                    excerpt(&text, 100)
                ),
                "",
            ));
        };
        Ok(data
            .iter()
            .filter_map(|m| m.get("id").and_then(Value::as_str))
            .map(str::to_owned)
            .collect())
    }

    /// Sends `sent` to `url` with these headers, accepting a stream or
    /// not as `ask` says, the head and first content given the prefill
    /// wait when there is one.
    fn post(
        &self,
        url: &str,
        headers: &[(&str, String)],
        sent: Payload<'_>,
        ask: Ask,
        prefill: Option<Duration>,
    ) -> Result<ureq::http::Response<ureq::Body>, ProviderError> {
        let accept = match ask {
            Ask::Streamed => "text/event-stream",
            Ask::Unstreamed => "application/json",
        };
        let mut call = self
            .agent
            .post(url)
            .header("content-type", "application/json")
            .header("accept", accept);
        if ask == Ask::Unstreamed {
            // Not on the connection the empty stream came on: its server
            // may be closing it (uvicorn does, right after the last chunk).
            call = call.config().max_idle_age(Duration::ZERO).build();
        }
        if let Some(wait) = prefill {
            // The head and the first content may take the prefill wait;
            // the stream below holds later silences to the stall timeout.
            call = call
                .config()
                .timeout_per_read(Some(wait))
                .timeout_recv_response(Some(wait))
                .build();
        }
        for (name, value) in headers {
            call = call.header(*name, value.as_str());
        }
        match sent {
            Payload::Text(text) => call.send(text),
            // Written into the connection as it is read: the whole body is
            // never in memory. Its length is known, so it goes out with a
            // `Content-Length` (some servers refuse chunked requests).
            Payload::Body(body) => {
                // Each read filled whole, so the body goes out in as few
                // writes as ureq's buffer allows, not one per message.
                let mut reader = Filled(body.reader());
                call.header("content-length", body.len().to_string())
                    .send(ureq::SendBody::from_reader(&mut reader))
            }
        }
        .map_err(|e| self.unsent_within(url, &e, prefill))
    }

    fn send<P: Protocol>(
        &self,
        url: &str,
        headers: &[(&str, String)],
        sent: Payload<'_>,
        on_text: &mut dyn FnMut(&str),
        ask: Ask,
    ) -> Result<Reply, ProviderError> {
        let prefill = self.prefill();
        let response = self.post(url, headers, sent, ask, prefill)?;

        let status = response.status();
        let content_type = header(&response, "content-type").to_ascii_lowercase();
        let retry_after = header(&response, "retry-after");
        let reusable = reusable(&response);
        let mut body = response.into_body();
        if !status.is_success() {
            return Err(self.refused(url, status, &retry_after, &mut body));
        }

        if content_type.starts_with("text/event-stream") {
            let reader = body.into_reader();
            if let Some(wait) = prefill {
                // Reads may block for the whole prefill wait: a relay
                // thread reads, and the stream waits on it only as long
                // as its phase allows. Its thread drains the rest.
                let mut relay = Relay::start(reader);
                let streamed = self.stream::<P>(url, &mut relay, Some(wait), on_text);
                if streamed.is_ok() && reusable {
                    relay.finish();
                }
                return self.unless_empty::<P>(streamed, url, headers, sent, on_text, ask);
            }
            let mut reader = Plain(reader);
            let streamed = self.stream::<P>(url, &mut reader, None, on_text);
            if streamed.is_ok() && reusable {
                drain(reader.0);
            }
            return self.unless_empty::<P>(streamed, url, headers, sent, on_text, ask);
        }
        let bytes = body
            .with_config()
            .limit(JSON_BODY_LIMIT)
            .read_to_vec()
            .map_err(|e| match e {
                ureq::Error::BodyExceedsLimit(limit) => ProviderError::new(
                    format!(
                        "answer from {url} is larger than {} MiB; not read",
                        limit >> 20
                    ),
                    "",
                ),
                e => {
                    let why = describe(&e, self.stall);
                    ProviderError::new(format!("answer from {url} broke off: {why}"), "").broken()
                }
            })?;
        // Some servers stream without saying so.
        let start = bytes.trim_ascii_start();
        if start.starts_with(b"data:") || start.starts_with(b"event:") {
            let streamed = self.stream::<P>(url, &mut Plain(bytes.as_slice()), None, on_text);
            return self.unless_empty::<P>(streamed, url, headers, sent, on_text, ask);
        }
        let reply = P::whole(url, &bytes)?;
        if !reply.text.is_empty() {
            on_text(&reply.text);
        }
        Ok(reply)
    }

    /// The error of an answer with a failing `status`: its status line,
    /// the server's `Retry-After`, the hint for a refused key, and the
    /// body's words as far as they came (an overflow when they say so).
    fn refused(
        &self,
        url: &str,
        status: ureq::http::StatusCode,
        retry_after: &str,
        body: &mut ureq::Body,
    ) -> ProviderError {
        let mut bytes = Vec::new();
        // A body that breaks off is shown as far as it came.
        let _ = body
            .as_reader()
            .take(ERROR_BODY_READ)
            .read_to_end(&mut bytes);
        let reason = match status.as_u16() {
            529 => "Overloaded",
            _ => status.canonical_reason().unwrap_or(""),
        };
        let mut message = format!("HTTP {} {reason} from {url}", status.as_u16());
        if !retry_after.is_empty() {
            // A header of the server's: as long as it likes.
            let shown = excerpt(retry_after, RETRY_AFTER_SHOWN);
            message.push_str(&format!(" (retry after {shown})"));
        }
        let text = String::from_utf8_lossy(&bytes);
        let mut shown = excerpt(&text, ERROR_BODY_SHOWN);
        if matches!(status.as_u16(), 401 | 403) {
            // What to do first, the server's words after: its message
            // alone, not the JSON around it.
            message.push_str(&format!(": {}", self.refused_key_hint()));
            if let Some(said) = error_message(&text) {
                shown = excerpt(&said, ERROR_BODY_SHOWN);
            }
        }
        if !shown.is_empty() {
            message.push_str(": ");
            message.push_str(&shown);
        }
        ProviderError {
            status: Some(status.as_u16()),
            // Gemini says its wait in the body (`RetryInfo`), not a header.
            retry_after: retry_after.parse().ok().or_else(|| retry_delay(&text)),
            ..ProviderError::new(message, "")
        }
        .overflowing(&text)
    }

    /// What a stream came to: its reply or its failure, except that a
    /// stream that ended empty is asked again unstreamed, once (see the
    /// module doc).
    fn unless_empty<P: Protocol>(
        &self,
        streamed: Result<Reply, Stop>,
        url: &str,
        headers: &[(&str, String)],
        sent: Payload<'_>,
        on_text: &mut dyn FnMut(&str),
        ask: Ask,
    ) -> Result<Reply, ProviderError> {
        match streamed {
            Ok(reply) => Ok(reply),
            Err(Stop::Failed(error)) => Err(error),
            Err(Stop::Ended { error, empty }) => {
                let again = match (empty, ask) {
                    (true, Ask::Streamed) => P::unstreamed(&sent.text()),
                    _ => None,
                };
                let Some(again) = again else {
                    return Err(error);
                };
                self.send::<P>(url, headers, Payload::Text(&again), on_text, Ask::Unstreamed)
                    .map_err(|e| ProviderError {
                        message: format!(
                            "{} (sent again unstreamed: the stream had ended before {} with nothing in it)",
                            e.message,
                            P::END
                        ),
                        ..e
                    })
            }
        }
    }

    /// The error of a request that got no answer head.
    fn unsent(&self, url: &str, e: &ureq::Error) -> ProviderError {
        self.unsent_within(url, e, None)
    }

    /// The error of a request that got no answer head, the head having had
    /// `prefill` (a local server reading the prompt) when set, else the
    /// stall timeout.
    fn unsent_within(
        &self,
        url: &str,
        e: &ureq::Error,
        prefill: Option<Duration>,
    ) -> ProviderError {
        let (wait, why) = match prefill {
            Some(wait) => (wait, PREFILL_WHY),
            None => (self.stall, ""),
        };
        let error = match e {
            ureq::Error::Timeout(Timeout::PerRead) => {
                let message = format!(
                    "no answer from {url}: nothing received for {}{why}",
                    seconds(wait)
                );
                return ProviderError::new(message, "").broken();
            }
            ureq::Error::Timeout(Timeout::RecvResponse) => {
                let message = format!(
                    "no answer from {url}: no response headers within {}{why}",
                    seconds(wait)
                );
                return ProviderError::new(message, "").broken();
            }
            ureq::Error::Protocol(_) | ureq::Error::LargeResponseHeader(..) => {
                ProviderError::new(format!("bad HTTP answer from {url}: {e}"), "")
            }
            // An invalid URL or header value (a key with a newline, say).
            ureq::Error::Http(_) | ureq::Error::BadUri(_) => {
                ProviderError::new(format!("cannot send to {url}: {e}"), "")
            }
            ureq::Error::Io(io) if io.kind() == ErrorKind::ConnectionRefused && loopback(url) => {
                // Waiting will not start a server nobody started.
                return ProviderError {
                    kind: FailureKind::NobodyListens,
                    ..ProviderError::new(
                        format!(
                            "cannot reach {url}: connection refused: nothing listens there; \
                             start the model server (`ollama serve`, or llama.cpp's server) or \
                             give another --base-url"
                        ),
                        "",
                    )
                };
            }
            _ => ProviderError::new(
                format!("cannot reach {url}: {}", describe(e, self.stall)),
                "",
            ),
        };
        if transient(e) {
            error.broken()
        } else {
            error
        }
    }

    /// Why a stream stalled: before its first content, within the prefill
    /// wait `prefill` of a local server; after it, with nothing at all
    /// received (`silent`) or only keepalives and empty chunks.
    fn stalled(&self, url: &str, prefill: Option<Duration>, silent: bool) -> String {
        match prefill {
            Some(wait) => format!(
                "stream from {url} stalled: no content received for {}{PREFILL_WHY}",
                seconds(wait)
            ),
            None if silent => format!(
                "stream from {url} stalled: nothing received for {}",
                seconds(self.stall)
            ),
            None => format!(
                "stream from {url} stalled: no content received for {} (only keepalives or empty chunks)",
                seconds(self.stall)
            ),
        }
    }

    /// Reads an SSE answer as it arrives, up to its end event; until its
    /// first content it may wait `prefill` when set (a local server reading
    /// the prompt), else the stall timeout.
    fn stream<P: Protocol>(
        &self,
        url: &str,
        reader: &mut impl Source,
        prefill: Option<Duration>,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<Reply, Stop> {
        let mut parser = SseParser::new();
        let mut protocol = P::default();
        let mut buf = [0u8; 8192];
        let mut received = 0usize;
        // Progress is content, not bytes: keepalive comments and empty
        // deltas alone make a stalled stream.
        let mut content_at = Instant::now();
        let mut bytes_at = content_at;
        // Until the first content, the prefill wait (when set).
        let mut limit = prefill.unwrap_or(self.stall);
        let mut first = prefill.is_some();
        let mut size = 0usize;
        // Whether anything came that the answer does not keep (reasoning).
        let mut unkept_seen = false;
        loop {
            let n = match reader.read_by(&mut buf, content_at + limit) {
                Ok(Some(0)) => break,
                Ok(Some(n)) => n,
                // The relay's deadline passed.
                Ok(None) => {
                    let silent = !first && bytes_at.elapsed() >= self.stall;
                    let message = self.stalled(url, first.then_some(limit), silent);
                    let partial = std::mem::take(&mut protocol.answer().text);
                    return Err(ProviderError::new(message, partial).broken().into());
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => {
                    let message = match ureq::Error::from(e) {
                        ureq::Error::Timeout(Timeout::PerRead) => format!(
                            "stream from {url} stalled: nothing received for {}",
                            seconds(self.stall)
                        ),
                        e => format!("stream from {url} broke off: {}", describe(&e, self.stall)),
                    };
                    let partial = std::mem::take(&mut protocol.answer().text);
                    return Err(ProviderError::new(message, partial).broken().into());
                }
            };
            bytes_at = Instant::now();
            // Bytes that never make an event (an endless line, endless
            // comments) count too.
            received += n;
            if received > MAX_STREAM_BYTES {
                let message = format!(
                    "answer from {url} sent more than {} MiB; stopped reading",
                    MAX_STREAM_BYTES >> 20
                );
                let partial = std::mem::take(&mut protocol.answer().text);
                return Err(ProviderError::new(message, partial).into());
            }
            for event in parser.feed(&buf[..n]) {
                let unkept = P::carries_unkept(&event);
                unkept_seen |= unkept;
                if protocol.event(url, event, on_text)? {
                    return Ok(protocol.answer().reply());
                }
                let now = protocol.answer().size();
                if now != size || unkept {
                    size = now;
                    content_at = Instant::now();
                    limit = self.stall;
                    first = false;
                }
                if protocol.answer().size() > MAX_ANSWER_BYTES {
                    let message = format!(
                        "answer from {url} is longer than {} MiB; stopped reading",
                        MAX_ANSWER_BYTES >> 20
                    );
                    let partial = std::mem::take(&mut protocol.answer().text);
                    return Err(ProviderError::new(message, partial).into());
                }
            }
            if content_at.elapsed() > limit {
                let message = self.stalled(url, first.then_some(limit), false);
                let partial = std::mem::take(&mut protocol.answer().text);
                return Err(ProviderError::new(message, partial).broken().into());
            }
        }
        if let Some(event) = parser.finish() {
            unkept_seen |= P::carries_unkept(&event);
            if protocol.event(url, event, on_text)? {
                return Ok(protocol.answer().reply());
            }
        }
        if let Some(ended) = protocol.ended(url) {
            return ended.map_err(Stop::Failed);
        }
        let empty = protocol.answer().size() == 0 && !unkept_seen;
        let message = format!("stream from {url} ended before {}", P::END);
        let partial = std::mem::take(&mut protocol.answer().text);
        Err(Stop::Ended {
            error: ProviderError::new(message, partial).broken(),
            empty,
        })
    }

    /// `Debug` as `name { base_url, api_key: [hidden], stall }`.
    pub(super) fn debug(&self, name: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(name)
            .field("base_url", &redact_url_credentials(&self.base_url))
            .field("api_key", &self.api_key.as_ref().map(|_| "[hidden]"))
            .field("stall", &self.stall)
            .finish()
    }
}

/// How a request asks for its answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ask {
    /// As core built it: streamed (`accept: text/event-stream`).
    Streamed,
    /// Sent again with `"stream": false` after a stream that ended empty
    /// (`accept: application/json`); never sent again itself.
    Unstreamed,
}

/// Why a stream stopped without its reply.
#[derive(Debug)]
enum Stop {
    /// It failed: a broken or stalled connection, an error event, bad
    /// JSON, too much.
    Failed(ProviderError),
    /// It ended before its end event; `empty` when nothing had come (no
    /// text, no tool call fragment, no reasoning).
    Ended { error: ProviderError, empty: bool },
}

impl From<ProviderError> for Stop {
    fn from(error: ProviderError) -> Stop {
        Stop::Failed(error)
    }
}

/// What a stall message before the first content of a local server adds.
const PREFILL_WHY: &str = " while the local server read the prompt (--stall-timeout raises it)";

/// Whether the connection of `response` may serve another request once
/// its body is read: a length-delimited body (`Content-Length` or chunked),
/// and no `Connection: close`.
fn reusable(response: &ureq::http::Response<ureq::Body>) -> bool {
    let delimited = response.headers().contains_key("content-length")
        || header(response, "transfer-encoding")
            .to_ascii_lowercase()
            .contains("chunked");
    let closes = header(response, "connection")
        .to_ascii_lowercase()
        .split(',')
        .any(|token| token.trim() == "close");
    delimited && !closes
}

/// The agent of one [`Http`]: ureq's connector chain (a CONNECT proxy,
/// TCP, TLS) with TCP opened by [`QuickAckConnector`], so a kept
/// connection is not held by delayed ACKs (see [`super::tcp`]).
pub(super) fn agent(stall: Duration) -> Agent {
    let config = Agent::config_builder()
        .http_status_as_error(false)
        .timeout_resolve(Some(CONNECT_TIMEOUT))
        .timeout_connect(Some(CONNECT_TIMEOUT))
        .timeout_per_read(Some(stall))
        // The whole head, however it trickles: a byte now and then must
        // not hold a request without end.
        .timeout_recv_response(Some(stall))
        .user_agent(concat!("revolve/", env!("CARGO_PKG_VERSION")))
        .build();
    let connector =
        ().chain(ConnectProxyConnector::default())
            .chain(QuickAckConnector)
            .chain(RustlsConnector::default());
    Agent::with_parts(config, connector, DefaultResolver::default())
}

/// A reader whose every read fills the buffer it is given, unless the
/// end comes first.
struct Filled<R>(R);

impl<R: Read> Read for Filled<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let mut filled = 0;
        while filled < buf.len() {
            match self.0.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(filled)
    }
}

fn header(response: &ureq::http::Response<ureq::Body>, name: &str) -> String {
    response
        .headers()
        .get(name)
        .map(|v| one_line(&String::from_utf8_lossy(v.as_bytes())))
        .unwrap_or_default()
}

/// Whether `url` names this machine (`localhost`, `127.x.x.x`, `::1`).
pub(super) fn loopback(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match host_port.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host_port.split(':').next().unwrap_or(""),
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;
    use revolve_core::policy::{ANSWER_BYTES_PER_CALL, MAX_TOKEN_COUNT};

    #[test]
    fn answer_orders_calls_and_fills_gaps() {
        let mut answer = Answer::default();
        let mut shown = Vec::new();
        answer.push_text("", &mut |p| shown.push(p.to_owned()));
        answer.push_text("hi", &mut |p| shown.push(p.to_owned()));
        answer.call(3).name = "b".into();
        let first = answer.call(1);
        first.id = "x".into();
        first.name = "a".into();
        first.arguments = "{\"k\":".into();
        answer.call(1).arguments.push_str("1}");
        let reply = answer.reply();
        assert_eq!(shown, ["hi"]);
        assert_eq!(reply.text, "hi");
        let calls: Vec<(&str, &str, &str)> = reply
            .tool_calls
            .iter()
            .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
            .collect();
        assert_eq!(calls, [("x", "a", "{\"k\":1}"), ("call_3", "b", "{}")]);
    }

    #[test]
    fn token_counts_read_what_is_sensible() {
        #[derive(serde::Deserialize)]
        struct Count {
            #[serde(default, deserialize_with = "token_count")]
            n: Option<u64>,
        }
        let read = |n: &str| {
            serde_json::from_str::<Count>(&format!("{{\"n\": {n}}}"))
                .unwrap()
                .n
        };
        assert_eq!(read("12"), Some(12));
        assert_eq!(read("12.0"), Some(12));
        assert_eq!(read("12.6"), Some(13));
        for odd in ["null", "-1", "-0.5", "1e300", "\"12\"", "[1]", "{}", "true"] {
            assert_eq!(read(odd), None, "{odd}");
        }
        assert_eq!(read(&MAX_TOKEN_COUNT.to_string()), Some(MAX_TOKEN_COUNT));
        assert_eq!(read(&(MAX_TOKEN_COUNT + 1).to_string()), None);
    }

    #[test]
    fn ids_within_an_answer_are_unique() {
        let mut answer = Answer::default();
        for (index, id) in [(0, "a"), (1, "a"), (2, ""), (3, "call_1"), (4, "call_3")] {
            answer.call(index).id = id.into();
        }
        let ids: Vec<String> = answer
            .reply()
            .tool_calls
            .into_iter()
            .map(|c| c.id)
            .collect();
        assert_eq!(ids, ["a", "call_1_2", "call_2", "call_1", "call_3"]);
    }

    #[test]
    fn every_call_counts_towards_the_answer_size() {
        let mut answer = Answer::default();
        for index in 0..10 {
            answer.call(index * 1_000_000_000);
        }
        assert_eq!(answer.size(), 10 * ANSWER_BYTES_PER_CALL);
    }

    #[test]
    fn arguments_keep_strings_and_serialize_the_rest() {
        assert_eq!(arguments_text(&Value::from("{\"a\": 1}")), "{\"a\": 1}");
        assert_eq!(
            arguments_text(&serde_json::json!({"b": [1, 2], "a": "x"})),
            "{\"a\":\"x\",\"b\":[1,2]}"
        );
        assert_eq!(arguments_text(&Value::Null), "");
    }

    #[test]
    fn unstreamed_bodies_ask_for_json() {
        let body = r#"{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}"#;
        let again: Value =
            serde_json::from_str(&unstreamed(body, &["stream_options"]).unwrap()).unwrap();
        assert_eq!(
            again,
            serde_json::json!({"model":"m","stream":false,"messages":[{"role":"user","content":"hi"}]})
        );
        let again: Value = serde_json::from_str(&unstreamed(body, &[]).unwrap()).unwrap();
        assert_eq!(again["stream_options"]["include_usage"], true);
        assert_eq!(again["stream"], false);
        assert_eq!(unstreamed("[1]", &[]), None);
        assert_eq!(unstreamed("not json", &[]), None);
    }

    #[test]
    fn overflows_are_never_broken() {
        let error = serde_json::json!({"type": "server_error",
            "message": "This model's maximum context length is 4096 tokens."});
        let e = stream_error("u", &error, String::new());
        assert_eq!(e.overflow().and_then(|o| o.limit), Some(4096));
        let e = answer_error("u", &error);
        assert!(e.overflow().is_some());
    }

    #[test]
    fn overload_errors_are_broken() {
        let error = serde_json::json!({"type": "overloaded_error", "message": "Overloaded"});
        let e = stream_error("u", &error, "part".into());
        assert_eq!(e.message, "error in stream from u: Overloaded");
        assert!(e.kind == FailureKind::Broken && e.partial == "part");
        let e = answer_error("u", &serde_json::json!({"type": "invalid_request_error"}));
        assert_eq!(e.kind, FailureKind::Answered);
        assert!(e.message.starts_with("error from u: {"), "{e}");
    }
}
