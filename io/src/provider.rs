//! Model providers: send a core [`Request`], stream the answer's text, return
//! a [`Reply`].
//!
//! * [`OpenAi`] speaks the OpenAI Chat Completions protocol to any compatible
//!   server. It sends [`Request::body`] byte for byte, reads a server-sent
//!   event stream as it arrives (or a plain JSON answer), and turns every
//!   failure into a one-line [`ProviderError`] that keeps the text streamed
//!   before it.
//! * [`Scripted`] answers from a JSON Lines file, for tests and demos.
//!
//! # Timeouts of [`OpenAi`]
//!
//! * Connecting (after name resolution) may take at most 10 s, and so may
//!   resolving the host name.
//! * There is no limit on a whole request: a long answer may stream for as
//!   long as it keeps sending.
//! * Every single read from the socket, the wait for the response head
//!   included, may take at most the *stall timeout*, 120 s unless
//!   [`OpenAi::with_stall_timeout`] says otherwise (ureq's
//!   `timeout_per_read`). A server that goes silent for longer fails the
//!   request with `stream from URL stalled: …` (or `no answer from URL: …`
//!   before the head arrived), keeping the partial text. Requests built by
//!   core always stream, so a model that thinks for long still sends bytes
//!   (role chunks, SSE comments); a non-streamed answer that takes longer
//!   than the stall timeout to start fails.
//!
//! Nothing here retries: a `429` or `503` is reported (with its `Retry-After`,
//! when given) and the caller decides.

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use ureq::{Agent, Timeout};

use revolve_core::{Reply, Request, Usage};

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

    /// A short name for logs and headers: `openai`, `scripted`.
    fn name(&self) -> &'static str;
}

/// A request that failed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProviderError {
    /// What went wrong, on one line, naming the URL or file involved and
    /// never an API key.
    pub message: String,
    /// The text streamed before the failure, possibly empty.
    pub partial: String,
}

impl ProviderError {
    /// An error with this message (whitespace runs, newlines included,
    /// collapsed to one space) and the text streamed so far.
    pub fn new(message: impl AsRef<str>, partial: impl Into<String>) -> ProviderError {
        ProviderError {
            message: one_line(message.as_ref()),
            partial: partial.into(),
        }
    }
}

impl fmt::Display for ProviderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ProviderError {}

/// An OpenAI-compatible Chat Completions endpoint.
///
/// The key is sent as `Authorization: Bearer KEY` only, never shown: `Debug`
/// hides it and error messages are scrubbed of it.
#[derive(Clone)]
pub struct OpenAi {
    base_url: String,
    api_key: Option<String>,
    stall: Duration,
    agent: Agent,
}

/// How long connecting (and resolving the host) may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The default longest silence between two reads of an answer.
pub const STALL_TIMEOUT: Duration = Duration::from_secs(120);

/// How much of an error body is read, and how much of it is shown.
const ERROR_BODY_READ: u64 = 64 * 1024;
const ERROR_BODY_SHOWN: usize = 200;
/// The largest non-streamed answer read.
const JSON_BODY_LIMIT: u64 = 64 * 1024 * 1024;

impl OpenAi {
    /// A provider for `base_url` (such as `https://api.openai.com/v1`; a
    /// trailing `/` is dropped), with an optional API key and the default
    /// stall timeout.
    pub fn new(base_url: impl Into<String>, api_key: Option<String>) -> OpenAi {
        let base_url = base_url.into().trim_end_matches('/').to_owned();
        let api_key = api_key.filter(|k| !k.is_empty());
        OpenAi {
            base_url,
            api_key,
            stall: STALL_TIMEOUT,
            agent: agent(STALL_TIMEOUT),
        }
    }

    /// The same provider with another stall timeout: the longest silence
    /// allowed while waiting for any byte of the answer.
    pub fn with_stall_timeout(self, stall: Duration) -> OpenAi {
        OpenAi {
            stall,
            agent: agent(stall),
            ..self
        }
    }

    /// The base URL, without a trailing `/`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The URL requests go to: `{base_url}/chat/completions`.
    pub fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base_url)
    }

    fn send(
        &self,
        request: &Request,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<Reply, ProviderError> {
        let url = self.endpoint();
        let mut call = self
            .agent
            .post(&url)
            .header("Content-Type", "application/json")
            .header("Accept", "text/event-stream");
        if let Some(key) = &self.api_key {
            call = call.header("Authorization", format!("Bearer {key}"));
        }
        let response = call.send(request.body.as_str()).map_err(|e| {
            let message = match &e {
                ureq::Error::Timeout(Timeout::PerRead) => {
                    format!(
                        "no answer from {url}: nothing received for {}",
                        seconds(self.stall)
                    )
                }
                ureq::Error::Protocol(_) | ureq::Error::LargeResponseHeader(..) => {
                    format!("bad HTTP answer from {url}: {e}")
                }
                // An invalid URL or header value (a key with a newline, say).
                ureq::Error::Http(_) | ureq::Error::BadUri(_) => {
                    format!("cannot send to {url}: {e}")
                }
                _ => format!("cannot reach {url}: {}", describe(&e, self.stall)),
            };
            ProviderError::new(message, "")
        })?;

        let status = response.status();
        let content_type = header(&response, "content-type").to_ascii_lowercase();
        let retry_after = header(&response, "retry-after");
        let mut body = response.into_body();
        if !status.is_success() {
            let mut bytes = Vec::new();
            // A body that breaks off is shown as far as it came.
            let _ = body
                .as_reader()
                .take(ERROR_BODY_READ)
                .read_to_end(&mut bytes);
            let mut message = format!(
                "HTTP {} {} from {url}",
                status.as_u16(),
                status.canonical_reason().unwrap_or("")
            );
            if !retry_after.is_empty() {
                message.push_str(&format!(" (retry after {retry_after})"));
            }
            let shown = excerpt(&String::from_utf8_lossy(&bytes), ERROR_BODY_SHOWN);
            if !shown.is_empty() {
                message.push_str(": ");
                message.push_str(&shown);
            }
            return Err(ProviderError::new(message, ""));
        }

        if content_type.starts_with("text/event-stream") {
            return stream(&url, self.stall, body.into_reader(), on_text);
        }
        let bytes = body
            .with_config()
            .limit(JSON_BODY_LIMIT)
            .read_to_vec()
            .map_err(|e| {
                ProviderError::new(
                    format!("answer from {url} broke off: {}", describe(&e, self.stall)),
                    "",
                )
            })?;
        // Some servers stream without saying so.
        if bytes.trim_ascii_start().starts_with(b"data:") {
            return stream(&url, self.stall, bytes.as_slice(), on_text);
        }
        let reply = whole(&url, &bytes)?;
        if !reply.text.is_empty() {
            on_text(&reply.text);
        }
        Ok(reply)
    }

    /// Removes the key from a message, in case a lower layer echoed it.
    fn scrub(&self, mut error: ProviderError) -> ProviderError {
        if let Some(key) = &self.api_key {
            error.message = error.message.replace(key.as_str(), "[key]");
        }
        error
    }
}

impl Provider for OpenAi {
    fn complete(
        &self,
        request: &Request,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<Reply, ProviderError> {
        self.send(request, on_text).map_err(|e| self.scrub(e))
    }

    fn name(&self) -> &'static str {
        "openai"
    }
}

impl fmt::Debug for OpenAi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAi")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "[hidden]"))
            .field("stall", &self.stall)
            .finish()
    }
}

fn agent(stall: Duration) -> Agent {
    let config = Agent::config_builder()
        .http_status_as_error(false)
        .timeout_resolve(Some(CONNECT_TIMEOUT))
        .timeout_connect(Some(CONNECT_TIMEOUT))
        .timeout_per_read(Some(stall))
        .user_agent(concat!("revolve/", env!("CARGO_PKG_VERSION")))
        .build();
    Agent::new_with_config(config)
}

fn header(response: &ureq::http::Response<ureq::Body>, name: &str) -> String {
    response
        .headers()
        .get(name)
        .map(|v| one_line(&String::from_utf8_lossy(v.as_bytes())))
        .unwrap_or_default()
}

/// Reads an SSE answer as it arrives.
fn stream(
    url: &str,
    stall: Duration,
    mut reader: impl Read,
    on_text: &mut dyn FnMut(&str),
) -> Result<Reply, ProviderError> {
    let mut parser = SseParser::new();
    let mut answer = Answer::default();
    let mut buf = [0u8; 8192];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                let e = ureq::Error::from(e);
                let message = match e {
                    ureq::Error::Timeout(Timeout::PerRead) => {
                        format!(
                            "stream from {url} stalled: nothing received for {}",
                            seconds(stall)
                        )
                    }
                    _ => format!("stream from {url} broke off: {}", describe(&e, stall)),
                };
                return Err(ProviderError::new(message, answer.text));
            }
        };
        for event in parser.feed(&buf[..n]) {
            if answer.take(url, event, on_text)? {
                return Ok(answer.reply());
            }
        }
    }
    if let Some(event) = parser.finish() {
        if answer.take(url, event, on_text)? {
            return Ok(answer.reply());
        }
    }
    Err(ProviderError::new(
        format!("stream from {url} ended before [DONE]"),
        answer.text,
    ))
}

/// What a stream delivered so far.
#[derive(Default)]
struct Answer {
    text: String,
    usage: Option<Usage>,
}

impl Answer {
    /// Takes one event; `Ok(true)` at `[DONE]`.
    fn take(
        &mut self,
        url: &str,
        event: SseEvent,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<bool, ProviderError> {
        if event.data.trim() == "[DONE]" {
            return Ok(true);
        }
        if event.event.as_deref() == Some("error") {
            let message = format!(
                "error in stream from {url}: {}",
                excerpt(&event.data, ERROR_BODY_SHOWN)
            );
            return Err(ProviderError::new(message, std::mem::take(&mut self.text)));
        }
        let chunk: WireChunk = match serde_json::from_str(&event.data) {
            Ok(chunk) => chunk,
            Err(e) => {
                let message = format!(
                    "bad JSON in stream from {url}: {e}: {}",
                    excerpt(&event.data, 100)
                );
                return Err(ProviderError::new(message, std::mem::take(&mut self.text)));
            }
        };
        if let Some(error) = chunk.error {
            let message = format!("error in stream from {url}: {}", error_text(&error));
            return Err(ProviderError::new(message, std::mem::take(&mut self.text)));
        }
        let piece = chunk
            .choices
            .into_iter()
            .find(|c| c.index.unwrap_or(0) == 0)
            .and_then(|c| c.delta)
            .and_then(|d| d.content);
        if let Some(piece) = piece.filter(|p| !p.is_empty()) {
            on_text(&piece);
            self.text.push_str(&piece);
        }
        if let Some(usage) = chunk.usage {
            self.usage = Some(usage.into());
        }
        Ok(false)
    }

    fn reply(&mut self) -> Reply {
        Reply {
            text: std::mem::take(&mut self.text),
            usage: self.usage,
        }
    }
}

/// Reads a non-streamed `chat.completion`.
fn whole(url: &str, bytes: &[u8]) -> Result<Reply, ProviderError> {
    let text = String::from_utf8_lossy(bytes);
    let completion: WireCompletion = serde_json::from_str(&text).map_err(|e| {
        ProviderError::new(
            format!("bad JSON from {url}: {e}: {}", excerpt(&text, 100)),
            "",
        )
    })?;
    if let Some(error) = completion.error {
        return Err(ProviderError::new(
            format!("error from {url}: {}", error_text(&error)),
            "",
        ));
    }
    let Some(choice) = completion
        .choices
        .into_iter()
        .find(|c| c.index.unwrap_or(0) == 0)
    else {
        return Err(ProviderError::new(
            format!("answer from {url} has no choices: {}", excerpt(&text, 100)),
            "",
        ));
    };
    let text = choice.message.and_then(|m| m.content).unwrap_or_default();
    Ok(Reply {
        text,
        usage: completion.usage.map(Usage::from),
    })
}

#[derive(Deserialize)]
struct WireChunk {
    #[serde(default)]
    choices: Vec<WireChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct WireCompletion {
    #[serde(default)]
    choices: Vec<WireChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct WireChoice {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    delta: Option<WireContent>,
    #[serde(default)]
    message: Option<WireContent>,
}

#[derive(Deserialize)]
struct WireContent {
    #[serde(default)]
    content: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    prompt_tokens: u64,
    completion_tokens: u64,
}

impl From<WireUsage> for Usage {
    fn from(u: WireUsage) -> Usage {
        Usage {
            prompt_tokens: u.prompt_tokens,
            completion_tokens: u.completion_tokens,
        }
    }
}

/// The message of an `error` field: `error.message` when there is one.
fn error_text(error: &serde_json::Value) -> String {
    let text = match error.get("message").and_then(|m| m.as_str()) {
        Some(message) => message.to_owned(),
        None => match error.as_str() {
            Some(s) => s.to_owned(),
            None => error.to_string(),
        },
    };
    excerpt(&text, ERROR_BODY_SHOWN)
}

/// What went wrong with a connection, in a few words.
fn describe(error: &ureq::Error, stall: Duration) -> String {
    match error {
        ureq::Error::Io(e) => match e.kind() {
            std::io::ErrorKind::ConnectionRefused => "connection refused".to_owned(),
            std::io::ErrorKind::ConnectionReset => "connection reset".to_owned(),
            std::io::ErrorKind::ConnectionAborted => "connection aborted".to_owned(),
            std::io::ErrorKind::UnexpectedEof => "connection closed early".to_owned(),
            std::io::ErrorKind::TimedOut => "timed out".to_owned(),
            _ => e.to_string(),
        },
        ureq::Error::Timeout(Timeout::Connect) => {
            format!("no connection within {}", seconds(CONNECT_TIMEOUT))
        }
        ureq::Error::Timeout(Timeout::Resolve) => {
            format!("host name not resolved within {}", seconds(CONNECT_TIMEOUT))
        }
        ureq::Error::Timeout(Timeout::PerRead) => {
            format!("nothing received for {}", seconds(stall))
        }
        ureq::Error::HostNotFound => "host not found".to_owned(),
        e => e.to_string(),
    }
}

/// `120 s`, or `250 ms` below a second.
fn seconds(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

/// Whitespace runs collapsed to one space, trimmed.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The first `max` characters of `text` on one line, `…` when cut.
fn excerpt(text: &str, max: usize) -> String {
    let line = one_line(text);
    match line.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line,
    }
}

/// One server-sent event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, when the event had one.
    pub event: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
}

/// An incremental parser of a `text/event-stream` body.
///
/// Feed it bytes as they arrive, in pieces of any size; it returns every
/// event completed so far. It follows the WHATWG rules: lines end in `\n`,
/// `\r\n` or `\r` (also when split between two pieces); a field's value
/// drops one space after the colon; `:` starts a comment; a blank line ends
/// an event; an event without `data` is not dispatched; `id` and `retry` are
/// ignored; a leading byte-order mark is dropped. Invalid UTF-8 becomes
/// U+FFFD. It never panics and keeps at most [`SseParser::MAX_LINE`] bytes of
/// one line and of one event's data (the excess is dropped).
#[derive(Clone, Debug, Default)]
pub struct SseParser {
    line: Vec<u8>,
    after_cr: bool,
    started: bool,
    event: Option<String>,
    data: String,
    has_data: bool,
}

impl SseParser {
    /// The longest line, and the most data of one event, kept in bytes.
    pub const MAX_LINE: usize = 16 * 1024 * 1024;

    /// A parser at the start of a stream.
    pub fn new() -> SseParser {
        SseParser::default()
    }

    /// Takes the next bytes of the stream; returns the events they complete.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        for &b in bytes {
            if self.after_cr {
                self.after_cr = false;
                if b == b'\n' {
                    continue;
                }
            }
            match b {
                b'\n' | b'\r' => {
                    self.after_cr = b == b'\r';
                    let line = std::mem::take(&mut self.line);
                    if let Some(event) = self.line_end(&line) {
                        events.push(event);
                    }
                }
                _ if self.line.len() < Self::MAX_LINE => self.line.push(b),
                _ => {}
            }
        }
        events
    }

    /// Ends the stream: returns the last event if its lines were complete but
    /// the blank line after them never came. A line cut off without its end
    /// is dropped.
    pub fn finish(&mut self) -> Option<SseEvent> {
        self.line.clear();
        self.after_cr = false;
        self.dispatch()
    }

    /// Handles one complete line; returns an event at a blank line.
    fn line_end(&mut self, raw: &[u8]) -> Option<SseEvent> {
        let mut line = String::from_utf8_lossy(raw);
        if !self.started {
            self.started = true;
            if let Some(rest) = line.strip_prefix('\u{feff}') {
                line = rest.to_owned().into();
            }
        }
        if line.is_empty() {
            return self.dispatch();
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_ref(), ""),
        };
        match field {
            "data" => {
                if self.data.len() + value.len() < Self::MAX_LINE {
                    if self.has_data {
                        self.data.push('\n');
                    }
                    self.data.push_str(value);
                }
                self.has_data = true;
            }
            "event" => self.event = Some(value.to_owned()),
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = self.event.take();
        if !std::mem::take(&mut self.has_data) {
            return None;
        }
        Some(SseEvent {
            event,
            data: std::mem::take(&mut self.data),
        })
    }
}

/// One reply of a [`Scripted`] provider.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScriptedReply {
    /// The text streamed (before the error, when there is one).
    pub text: String,
    /// The usage reported with the reply.
    pub usage: Option<Usage>,
    /// When set, the request fails with this message after streaming `text`,
    /// which becomes the error's partial text.
    pub error: Option<String>,
}

/// A provider that answers from a script: the Nth user message of a request
/// gets the Nth reply.
///
/// The script is a JSON Lines file, one reply per line:
///
/// ```text
/// # comment lines and blank lines are skipped
/// {"text":"Hello there.","usage":{"prompt_tokens":12,"completion_tokens":3}}
/// {"text":"No usage on this one."}
/// {"error":"the model is overloaded"}
/// {"text":"Half an ans","error":"stream cut"}
/// ```
///
/// `usage` is optional and needs both counts; a line needs `text`, `error`
/// or both (text first streams, then the error fails the request with it as
/// the partial text); other keys are ignored. The user messages are counted
/// in the request body's `messages`, so a resumed session continues the
/// script where it left off.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scripted {
    path: PathBuf,
    replies: Vec<ScriptedReply>,
}

impl Scripted {
    /// Reads a script file; a bad line is an error `FILE:LINE: why`.
    pub fn load(path: impl AsRef<Path>) -> Result<Scripted, String> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the script {}: {e}", path.display()))?;
        Scripted::parse(path, &text)
    }

    /// Parses a script's text; `path` names it in messages.
    pub fn parse(path: impl AsRef<Path>, text: &str) -> Result<Scripted, String> {
        let path = path.as_ref().to_owned();
        let mut replies = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |why: String| format!("{}:{}: {why}", path.display(), i + 1);
            let wire: WireScripted =
                serde_json::from_str(line).map_err(|e| bad(format!("bad reply: {e}")))?;
            if wire.text.is_none() && wire.error.is_none() {
                return Err(bad("a reply needs \"text\" or \"error\"".to_owned()));
            }
            replies.push(ScriptedReply {
                text: wire.text.unwrap_or_default(),
                usage: wire.usage.map(Usage::from),
                error: wire.error,
            });
        }
        Ok(Scripted { path, replies })
    }

    /// A script of these replies, named `path` in messages.
    pub fn new(path: impl AsRef<Path>, replies: Vec<ScriptedReply>) -> Scripted {
        Scripted {
            path: path.as_ref().to_owned(),
            replies,
        }
    }

    /// The replies, in order.
    pub fn replies(&self) -> &[ScriptedReply] {
        &self.replies
    }

    /// The file the script came from.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Provider for Scripted {
    fn complete(
        &self,
        request: &Request,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<Reply, ProviderError> {
        let script = self.path.display();
        let n = user_messages(&request.body).map_err(|why| {
            ProviderError::new(format!("the script {script} cannot answer: {why}"), "")
        })?;
        let Some(reply) = n.checked_sub(1).and_then(|i| self.replies.get(i)) else {
            let message = format!(
                "the script {script} has no reply {n} (it holds {})",
                self.replies.len()
            );
            return Err(ProviderError::new(message, ""));
        };
        for piece in word_pieces(&reply.text) {
            on_text(piece);
        }
        match &reply.error {
            Some(error) => Err(ProviderError::new(error, reply.text.clone())),
            None => Ok(Reply {
                text: reply.text.clone(),
                usage: reply.usage,
            }),
        }
    }

    fn name(&self) -> &'static str {
        "scripted"
    }
}

#[derive(Deserialize)]
struct WireScripted {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<String>,
}

/// How many `"role":"user"` entries the body's `messages` holds.
fn user_messages(body: &str) -> Result<usize, String> {
    let body: serde_json::Value =
        serde_json::from_str(body).map_err(|e| format!("the request body is not JSON: {e}"))?;
    let messages = body
        .get("messages")
        .and_then(|m| m.as_array())
        .ok_or("the request body has no \"messages\" list")?;
    Ok(messages
        .iter()
        .filter(|m| m.get("role").and_then(|r| r.as_str()) == Some("user"))
        .count())
}

/// `text` cut before every whitespace run that follows a non-space, so each
/// piece is a word with the whitespace before it; the pieces concatenated
/// are `text`.
pub(crate) fn word_pieces(text: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut after_space = true;
    for (i, c) in text.char_indices() {
        let space = c.is_whitespace();
        if space && !after_space && i > start {
            pieces.push(&text[start..i]);
            start = i;
        }
        after_space = space;
    }
    if start < text.len() {
        pieces.push(&text[start..]);
    }
    pieces
}

#[cfg(test)]
mod tests {
    use std::net::TcpListener;

    use super::*;
    use crate::fake::{FakeReply, FakeServer};

    fn request(users: &[&str]) -> Request {
        let messages: Vec<serde_json::Value> = users
            .iter()
            .flat_map(|u| {
                [
                    serde_json::json!({"role":"user","content":u}),
                    serde_json::json!({"role":"assistant","content":"ok"}),
                ]
            })
            .collect();
        let mut messages = messages;
        messages.pop();
        messages.insert(0, serde_json::json!({"role":"system","content":"sys"}));
        let body = serde_json::json!({"model":"m","messages":messages,"stream":true}).to_string();
        Request {
            model: "m".into(),
            body,
            messages: users.len() * 2 - 1,
        }
    }

    /// Runs `provider` on a one-message request, collecting the pieces.
    fn run(provider: &dyn Provider) -> (Result<Reply, ProviderError>, Vec<String>) {
        let mut pieces = Vec::new();
        let result = provider.complete(&request(&["hi"]), &mut |p| pieces.push(p.to_owned()));
        (result, pieces)
    }

    fn fake(replies: Vec<FakeReply>) -> (FakeServer, OpenAi) {
        let server = FakeServer::start(replies).unwrap();
        let provider = OpenAi::new(format!("{}/", server.url()), Some("sk-secret-123".into()));
        (server, provider)
    }

    #[test]
    fn providers_are_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<OpenAi>();
        check::<Scripted>();
        check::<Box<dyn Provider>>();
    }

    #[test]
    fn openai_streams_text_and_usage_and_sends_the_body_verbatim() {
        let (server, provider) = fake(vec![FakeReply::text("Hello big world")]);
        let req = request(&["hi"]);
        let mut pieces = Vec::new();
        let reply = provider
            .complete(&req, &mut |p| pieces.push(p.to_owned()))
            .unwrap();
        assert_eq!(reply.text, "Hello big world");
        assert_eq!(
            reply.usage,
            Some(Usage {
                prompt_tokens: 10,
                completion_tokens: 3
            })
        );
        assert_eq!(pieces, ["Hello", " big", " world"]);

        let recorded = server.requests();
        assert_eq!(recorded.len(), 1);
        let r = &recorded[0];
        assert_eq!(
            (r.method.as_str(), r.path.as_str()),
            ("POST", "/v1/chat/completions")
        );
        assert_eq!(r.body, req.body);
        assert_eq!(r.header("content-type"), Some("application/json"));
        assert_eq!(r.header("accept"), Some("text/event-stream"));
        assert_eq!(r.header("authorization"), Some("Bearer sk-secret-123"));
        assert_eq!(provider.name(), "openai");
    }

    #[test]
    fn openai_without_a_key_sends_no_authorization() {
        let server = FakeServer::start(vec![FakeReply::text("x")]).unwrap();
        let provider = OpenAi::new(server.url(), None);
        run(&provider).0.unwrap();
        assert_eq!(server.requests()[0].header("authorization"), None);
        assert!(!format!("{provider:?}").contains("sk-"));
    }

    #[test]
    fn debug_hides_the_key() {
        let provider = OpenAi::new("http://h/v1///", Some("sk-secret-123".into()));
        assert_eq!(provider.base_url(), "http://h/v1");
        assert_eq!(provider.endpoint(), "http://h/v1/chat/completions");
        let shown = format!("{provider:?}");
        assert!(
            !shown.contains("sk-secret-123") && shown.contains("[hidden]"),
            "{shown}"
        );
    }

    #[test]
    fn openai_reads_a_json_answer() {
        let (_server, provider) = fake(vec![
            FakeReply::Json {
                text: "Whole answer".into(),
                usage: Some((5, 2)),
            },
            FakeReply::Json {
                text: "No usage".into(),
                usage: None,
            },
        ]);
        let (reply, pieces) = run(&provider);
        let reply = reply.unwrap();
        assert_eq!(reply.text, "Whole answer");
        assert_eq!(
            reply.usage,
            Some(Usage {
                prompt_tokens: 5,
                completion_tokens: 2
            })
        );
        assert_eq!(pieces, ["Whole answer"]);
        assert_eq!(
            run(&provider).0.unwrap(),
            Reply {
                text: "No usage".into(),
                usage: None
            }
        );
    }

    #[test]
    fn openai_http_error_names_status_and_url_not_the_key() {
        let body =
            "{\"error\":{\"message\":\"overloaded\nplease wait\"}}".to_owned() + &"x".repeat(500);
        let (server, provider) = fake(vec![
            FakeReply::Status {
                code: 503,
                body,
                retry_after: Some(30),
            },
            FakeReply::Status {
                code: 401,
                body: "bad key sk-secret-123".into(),
                retry_after: None,
            },
        ]);
        let err = run(&provider).0.unwrap_err();
        let url = format!("{}/chat/completions", server.url());
        assert!(
            err.message.starts_with(&format!(
                "HTTP 503 Service Unavailable from {url} (retry after 30): {{\"error\":{{\"message\":\"overloaded please wait\"}}}}xxx"
            )),
            "{err}"
        );
        assert!(err.message.ends_with("x…"), "{err}");
        assert!(!err.message.contains('\n'));
        assert!(err.message.chars().count() < 300);
        assert_eq!(err.partial, "");

        let err = run(&provider).0.unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("HTTP 401 Unauthorized from {url}: bad key [key]")
        );
    }

    #[test]
    fn openai_cut_stream_keeps_the_partial_text() {
        let (server, provider) = fake(vec![FakeReply::CutAfter {
            chunks: vec!["Hel".into(), "lo".into()],
        }]);
        let (result, pieces) = run(&provider);
        let err = result.unwrap_err();
        assert_eq!(
            err.message,
            format!(
                "stream from {}/chat/completions ended before [DONE]",
                server.url()
            )
        );
        assert_eq!(err.partial, "Hello");
        assert_eq!(pieces, ["Hel", "lo"]);
    }

    #[test]
    fn openai_stalled_stream_fails_after_the_stall_timeout() {
        let (server, provider) = fake(vec![FakeReply::Stall {
            chunks: vec!["Wait".into()],
        }]);
        let provider = provider.with_stall_timeout(Duration::from_millis(300));
        let start = std::time::Instant::now();
        let (result, pieces) = run(&provider);
        let err = result.unwrap_err();
        assert!(start.elapsed() < Duration::from_secs(5));
        assert_eq!(
            err.message,
            format!(
                "stream from {}/chat/completions stalled: nothing received for 300 ms",
                server.url()
            )
        );
        // The text arrived before the stall, so it was delivered as it came.
        assert_eq!(
            (err.partial.as_str(), pieces),
            ("Wait", vec!["Wait".to_owned()])
        );
    }

    #[test]
    fn openai_garbage_is_an_error_not_a_panic() {
        let (server, provider) = fake(vec![
            FakeReply::Garbage(
                "data: {\"choices\":[{\"delta\":{\"content\":\"ok\"}}]}\n\ndata: {not json\n\n"
                    .into(),
            ),
            FakeReply::Garbage("data: {\"error\":{\"message\":\"quota\"}}\n\n".into()),
            FakeReply::Garbage("\u{0}\u{1}binary\r\r\n\n:::\n\n".into()),
            FakeReply::Raw("this is not HTTP\r\n\r\n".into()),
            FakeReply::Status {
                code: 200,
                body: "{\"choices\":[]}".into(),
                retry_after: None,
            },
            FakeReply::Status {
                code: 200,
                body: "{\"choices\":[{\"message\":{".into(),
                retry_after: None,
            },
        ]);
        let url = format!("{}/chat/completions", server.url());

        let err = run(&provider).0.unwrap_err();
        assert!(
            err.message
                .starts_with(&format!("bad JSON in stream from {url}: ")),
            "{err}"
        );
        assert!(err.message.ends_with(": {not json"), "{err}");
        assert_eq!(err.partial, "ok");

        let err = run(&provider).0.unwrap_err();
        assert_eq!(err.message, format!("error in stream from {url}: quota"));

        let err = run(&provider).0.unwrap_err();
        assert_eq!(
            err.message,
            format!("stream from {url} ended before [DONE]")
        );

        let err = run(&provider).0.unwrap_err();
        assert!(
            err.message
                .starts_with(&format!("bad HTTP answer from {url}: ")),
            "{err}"
        );

        let err = run(&provider).0.unwrap_err();
        assert!(
            err.message
                .starts_with(&format!("answer from {url} has no choices")),
            "{err}"
        );

        let err = run(&provider).0.unwrap_err();
        assert!(
            err.message.starts_with(&format!("bad JSON from {url}: ")),
            "{err}"
        );
    }

    #[test]
    fn openai_reads_sse_sent_as_another_content_type() {
        let body = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\ndata: [DONE]\n\n";
        let (_server, provider) = fake(vec![FakeReply::Status {
            code: 200,
            body: body.into(),
            retry_after: None,
        }]);
        assert_eq!(
            run(&provider).0.unwrap(),
            Reply {
                text: "a".into(),
                usage: None
            }
        );
    }

    #[test]
    fn openai_bad_key_or_url_says_so_without_the_key() {
        let provider = OpenAi::new("http://127.0.0.1:9/v1", Some("sk-bad\nkey".into()));
        let err = run(&provider).0.unwrap_err();
        let prefix = "cannot send to http://127.0.0.1:9/v1/chat/completions: http: ";
        assert!(err.message.starts_with(prefix), "{err}");
        assert!(!err.message.contains("sk-bad"), "{err}");
        let err = run(&OpenAi::new("localhost:4000", None)).0.unwrap_err();
        let prefix = "cannot send to localhost:4000/chat/completions: ";
        assert!(err.message.starts_with(prefix), "{err}");
    }

    #[test]
    fn openai_connection_refused() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let provider = OpenAi::new(
            format!("http://127.0.0.1:{port}/v1"),
            Some("sk-secret-123".into()),
        );
        let (result, pieces) = run(&provider);
        let err = result.unwrap_err();
        assert_eq!(
            err.message,
            format!("cannot reach http://127.0.0.1:{port}/v1/chat/completions: connection refused")
        );
        assert!(pieces.is_empty());
    }

    #[test]
    fn openai_ignores_events_without_content() {
        let body = concat!(
            ": keep-alive\r\n\r\n",
            "event: message\r\ndata:{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\r\n\r\n",
            "data: {\"choices\":[{\"index\":1,\"delta\":{\"content\":\"other\"}},{\"index\":0,\"delta\":{\"content\":\"mine\"}}]}\n\n",
            "data: {\"choices\":[],\"usage\":null}\n\n",
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1,\"total_tokens\":4}}\n\n",
            "data: [DONE]\n",
        );
        let (_server, provider) = fake(vec![FakeReply::Garbage(body.into())]);
        let reply = run(&provider).0.unwrap();
        assert_eq!(reply.text, "mine");
        assert_eq!(
            reply.usage,
            Some(Usage {
                prompt_tokens: 3,
                completion_tokens: 1
            })
        );
    }

    fn parse_all(input: &[u8], piece: usize) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        let mut events: Vec<SseEvent> = input
            .chunks(piece.max(1))
            .flat_map(|c| parser.feed(c))
            .collect();
        events.extend(parser.finish());
        events
    }

    fn data(events: &[SseEvent]) -> Vec<&str> {
        events.iter().map(|e| e.data.as_str()).collect()
    }

    #[test]
    fn sse_fields_comments_and_line_ends() {
        let input = "\u{feff}data: a\n\n: comment\ndata:b\ndata:  c\r\n\r\nevent: error\rdata\r\rid: 7\nretry: 10\nevent: x\n\ndata: [DONE]\n";
        for piece in [1, 2, 3, 7, 1000] {
            let events = parse_all(input.as_bytes(), piece);
            assert_eq!(data(&events), ["a", "b\n c", "", "[DONE]"], "piece {piece}");
            assert_eq!(events[0].event, None);
            assert_eq!(events[2].event.as_deref(), Some("error"));
            assert_eq!(
                events[3].event, None,
                "an event without data resets the type"
            );
        }
    }

    #[test]
    fn sse_drops_a_cut_line_but_keeps_complete_lines() {
        assert_eq!(data(&parse_all(b"data: x\n\ndata: {\"par", 4)), ["x"]);
        assert_eq!(data(&parse_all(b"data: y\n", 4)), ["y"]);
        let mut parser = SseParser::new();
        assert_eq!(parser.feed(b"data: a\r"), []);
        assert_eq!(
            data(&parser.feed(b"\n\r\n")),
            ["a"],
            "CRLF split between pieces"
        );
    }

    #[test]
    fn sse_survives_garbage() {
        let mut inputs: Vec<Vec<u8>> = vec![
            vec![0xff, 0xfe, b'\n', b'\n', 0x80, b':', b'\r'],
            b"data\xff: \xc3\n\n".to_vec(),
            b"\r\r\r\n\n\n::::\n:\n".to_vec(),
            (0..=255u8).cycle().take(5000).collect(),
        ];
        let mut seed = 0x2545_f491_u32;
        for _ in 0..50 {
            let mut bytes = Vec::new();
            for _ in 0..300 {
                seed ^= seed << 13;
                seed ^= seed >> 17;
                seed ^= seed << 5;
                bytes.push(b"data: \r\n:{}x\xff"[(seed % 13) as usize]);
            }
            inputs.push(bytes);
        }
        for input in &inputs {
            for piece in [1, 5, 64] {
                let events = parse_all(input, piece);
                assert_eq!(
                    events,
                    parse_all(input, input.len()),
                    "pieces must not matter"
                );
            }
        }
        let events = parse_all(b"data\xff: \xc3\n\n", 1);
        assert!(events.is_empty(), "the field name with U+FFFD is not data");
        assert_eq!(data(&parse_all(b"data: \xc3\n\n", 1)), ["\u{fffd}"]);
    }

    #[test]
    fn scripted_loads_and_answers_the_nth_user_message() {
        let dir = std::env::temp_dir().join(format!("revolve-scripted-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("script.jsonl");
        std::fs::write(
            &path,
            "# greeting\n{\"text\":\"Hello there, you.\",\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2}}\n\n   \n{\"text\":\"Second\"}\n{\"error\":\"boom\\nbang\"}\n{\"text\":\"Half an\",\"error\":\"cut\"}\n",
        )
        .unwrap();
        let script = Scripted::load(&path).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(script.replies().len(), 4);
        assert_eq!(script.name(), "scripted");

        let mut pieces = Vec::new();
        let reply = script
            .complete(&request(&["a"]), &mut |p| pieces.push(p.to_owned()))
            .unwrap();
        assert_eq!(reply.text, "Hello there, you.");
        assert_eq!(
            reply.usage,
            Some(Usage {
                prompt_tokens: 1,
                completion_tokens: 2
            })
        );
        assert_eq!(pieces, ["Hello", " there,", " you."]);

        let reply = script.complete(&request(&["a", "b"]), &mut |_| {}).unwrap();
        assert_eq!(
            reply,
            Reply {
                text: "Second".into(),
                usage: None
            }
        );

        let err = script
            .complete(&request(&["a", "b", "c"]), &mut |_| {})
            .unwrap_err();
        assert_eq!(
            err,
            ProviderError {
                message: "boom bang".into(),
                partial: String::new()
            }
        );

        let err = script
            .complete(&request(&["a", "b", "c", "d"]), &mut |_| {})
            .unwrap_err();
        assert_eq!(
            err,
            ProviderError {
                message: "cut".into(),
                partial: "Half an".into()
            }
        );

        let err = script
            .complete(&request(&["a", "b", "c", "d", "e"]), &mut |_| {})
            .unwrap_err();
        assert_eq!(
            err.message,
            format!("the script {} has no reply 5 (it holds 4)", path.display())
        );
    }

    #[test]
    fn scripted_counts_user_messages_of_the_real_request_body() {
        use revolve_core::Message;
        let at = time::macros::datetime!(2026-12-02 10:00 UTC);
        let history = [
            Message::user(at, "one"),
            Message::assistant(at, "x"),
            Message::user(at, "two"),
        ];
        let req = Request::openai("m", Some("sys"), &history);
        let script = Scripted::new(
            "s.jsonl",
            vec![
                ScriptedReply {
                    text: "1".into(),
                    ..Default::default()
                },
                ScriptedReply {
                    text: "2".into(),
                    ..Default::default()
                },
            ],
        );
        assert_eq!(script.complete(&req, &mut |_| {}).unwrap().text, "2");
        let bad = Request {
            model: "m".into(),
            body: "not json".into(),
            messages: 0,
        };
        let err = script.complete(&bad, &mut |_| {}).unwrap_err();
        assert!(
            err.message
                .starts_with("the script s.jsonl cannot answer: the request body is not JSON"),
            "{err}"
        );
    }

    #[test]
    fn scripted_bad_lines_name_file_and_line() {
        let err = Scripted::parse("s.jsonl", "{\"text\":\"ok\"}\n# c\n{\"text\":\n").unwrap_err();
        assert!(err.starts_with("s.jsonl:3: bad reply: "), "{err}");
        let err = Scripted::parse(
            "s.jsonl",
            "\n{\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2}}",
        )
        .unwrap_err();
        assert_eq!(err, "s.jsonl:2: a reply needs \"text\" or \"error\"");
        let err = Scripted::parse(
            "s.jsonl",
            "{\"text\":\"a\",\"usage\":{\"prompt_tokens\":1}}",
        )
        .unwrap_err();
        assert!(
            err.starts_with("s.jsonl:1: bad reply: missing field `completion_tokens`"),
            "{err}"
        );
        let err = Scripted::parse("s.jsonl", "{\"text\":5}").unwrap_err();
        assert!(err.starts_with("s.jsonl:1: "), "{err}");
        let err = Scripted::load("/nonexistent/revolve/script.jsonl").unwrap_err();
        assert!(
            err.starts_with("cannot read the script /nonexistent/revolve/script.jsonl: "),
            "{err}"
        );
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
