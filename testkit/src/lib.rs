//! A fake model server for tests, speaking the OpenAI Chat Completions or
//! the Anthropic Messages protocol.
//!
//! [`FakeServer::start`] (OpenAI) or [`FakeServer::start_anthropic`] binds
//! `127.0.0.1` on a free port and answers each connection with the next
//! [`FakeReply`] of its script, in order, whatever the path; once the script
//! is exhausted it answers `500` with a body saying so. Every request it
//! receives is kept as a [`Recorded`] (method, path, headers, body byte for
//! byte) for the test to inspect with [`FakeServer::requests`].
//!
//! It speaks just enough HTTP/1.1: it reads the request head and a
//! `Content-Length` body (no chunked request bodies), and every answer carries
//! `Connection: close`. Streamed answers are real server-sent events with a
//! close-delimited body:
//!
//! * OpenAI: a role chunk, one chunk per text piece, for each tool call a
//!   chunk with its `index`, `id` and `function.name` and then its
//!   `function.arguments` in two or more fragments, a finish chunk, a usage
//!   chunk (`"choices":[]`) when usage is set, then `data: [DONE]`.
//! * Anthropic: `message_start` (with the input tokens when usage is set), a
//!   `text` content block (start, a `ping`, one `text_delta` per piece,
//!   stop) when there is text, a `tool_use` block per call (start with id
//!   and name, an empty and then two or more `input_json_delta` pieces,
//!   stop), `message_delta` (stop reason, output tokens), `message_stop`.
//!
//! A cut or stalled stream stops after its text pieces, in the middle of the
//! text block. [`FakeReply::Status`], [`FakeReply::Garbage`] and
//! [`FakeReply::Raw`] are the same in both protocols; [`FakeReply::Models`]
//! answers a model list in the protocol's own shape.
//!
//! One thread serves connections one after another. Dropping the server stops
//! it: the thread polls a non-blocking listener every few milliseconds, checks
//! a shutdown flag, and is joined by `Drop`, so no thread outlives a test.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde_json::json;

use revolve_core::view::word_pieces;

/// One scripted answer of the fake server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FakeReply {
    /// `200`, `text/event-stream`: one SSE chunk per piece of `chunks`, then a
    /// usage chunk when `usage` (prompt, completion) is set, then `[DONE]`.
    Stream {
        /// The `delta.content` pieces, in order.
        chunks: Vec<String>,
        /// `(prompt_tokens, completion_tokens)` of the usage chunk.
        usage: Option<(u64, u64)>,
    },
    /// `200`, `text/event-stream`: a streamed answer with this text (one
    /// chunk per word, as [`FakeReply::text`]) followed by these tool calls,
    /// each `(id, name, arguments JSON text)`, the arguments split into
    /// fragments.
    ToolCalls {
        /// The text before the calls, possibly empty.
        text: String,
        /// `(id, name, arguments)` of each call, in order.
        calls: Vec<(String, String, String)>,
        /// `(prompt_tokens, completion_tokens)` of the usage.
        usage: Option<(u64, u64)>,
    },
    /// `200`, `application/json`: a non-streamed answer (a `chat.completion`,
    /// or an Anthropic `message`).
    Json {
        /// The answer's text.
        text: String,
        /// `(prompt_tokens, completion_tokens)`, or no `usage` field.
        usage: Option<(u64, u64)>,
    },
    /// Any status with this body (`application/json` when it starts with `{`,
    /// else `text/plain`), and a `Retry-After` header in seconds when set.
    Status {
        /// The HTTP status code.
        code: u16,
        /// The response body, verbatim.
        body: String,
        /// The `Retry-After` header, in seconds.
        retry_after: Option<u64>,
    },
    /// A stream that sends these content chunks, then closes the connection
    /// without `[DONE]` (or `message_stop`).
    CutAfter {
        /// The `delta.content` pieces sent before the cut.
        chunks: Vec<String>,
    },
    /// A stream that sends these content chunks, then sends nothing more and
    /// keeps the connection open until the client closes it or the server is
    /// dropped: a stalled model, for read timeouts.
    Stall {
        /// The `delta.content` pieces sent before the stall.
        chunks: Vec<String>,
    },
    /// `200`, `text/event-stream`, with this body verbatim (so a test can send
    /// any SSE, well formed or not), then close.
    Garbage(String),
    /// These bytes verbatim on the socket instead of any HTTP answer, then
    /// close.
    Raw(String),
    /// `200`, `application/json`: a model list with these ids, as
    /// `GET /v1/models` answers (OpenAI: `{"object":"list","data":[{"id":…,
    /// "object":"model",…}]}`; Anthropic: `{"data":[{"type":"model","id":…,
    /// "display_name":…}],"has_more":false,…}`).
    Models(Vec<String>),
    /// Reads the request and sends nothing at all, not even a status line,
    /// keeping the connection open until the client closes it or the
    /// server is dropped: a server that hangs before answering.
    Hang,
    /// A complete streamed answer of these text pieces, each sent `every`
    /// after the one before: slow, but never silent for longer than
    /// `every`.
    Slow {
        /// The text pieces, in order.
        chunks: Vec<String>,
        /// The pause before each piece.
        every: Duration,
    },
    /// A stream of `piece` sent again and again, without end, until the
    /// client closes the connection, the server is dropped, or
    /// [`ENDLESS_CAP`] bytes have gone out: a server that never stops.
    Endless {
        /// The text of every chunk.
        piece: String,
    },
    /// This reply, after the server has waited this long with the request
    /// read and nothing sent: a slow model, for what is shown meanwhile.
    Delayed(Duration, Box<FakeReply>),
    /// A stream that sends these text pieces, then, every `every`, an SSE
    /// comment (`: ping`) and a chunk with an empty delta (OpenAI: `"delta":
    /// {}`; Anthropic: a `ping` event and an empty `text_delta`), without
    /// end, until the client closes the connection or the server is
    /// dropped: bytes keep coming, content never does.
    Keepalive {
        /// The text pieces sent first.
        chunks: Vec<String>,
        /// The pause between two keepalives.
        every: Duration,
    },
}

/// A real server's context: a request whose body counts more than `tokens`
/// (at `bytes_per_token` bytes a token) is refused with the provider's own
/// error body, and no scripted reply is used up; a request that fits gets
/// its scripted reply with the prompt count made true (body bytes over
/// `bytes_per_token`), or with no usage at all when `usage` is false (as
/// llama.cpp's OpenAI server from llama-cpp-python streams).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limit {
    /// The context size, in tokens.
    pub tokens: u64,
    /// How many body bytes the server counts as one token.
    pub bytes_per_token: u64,
    /// Whose error body an oversized request gets.
    pub says: Overflows,
    /// Whether answers carry usage.
    pub usage: bool,
}

/// Which server's words a refused request gets (each with its real status
/// and body).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overflows {
    /// `400`, `context_length_exceeded`.
    OpenAi,
    /// `400`, vLLM's `BadRequestError`.
    Vllm,
    /// `400`, `prompt is too long: N tokens > M maximum`.
    Anthropic,
    /// `400`, `exceed_context_size_error` with `n_ctx`.
    LlamaCpp,
    /// `500`, Ollama's "input length exceeds the context length".
    Ollama,
}

impl Overflows {
    /// The status and body a request of `asked` tokens gets under a
    /// context of `limit`.
    pub fn answer(self, asked: u64, limit: u64) -> (u16, String) {
        match self {
            Overflows::OpenAi => (
                400,
                json!({"error": {
                    "message": format!("This model's maximum context length is {limit} tokens. However, your messages resulted in {asked} tokens. Please reduce the length of the messages."),
                    "type": "invalid_request_error",
                    "param": "messages",
                    "code": "context_length_exceeded"
                }})
                .to_string(),
            ),
            Overflows::Vllm => (
                400,
                json!({
                    "object": "error",
                    "message": format!("This model's maximum context length is {limit} tokens. However, you requested {asked} tokens in the messages, Please reduce the length of the messages."),
                    "type": "BadRequestError",
                    "param": null,
                    "code": 400
                })
                .to_string(),
            ),
            Overflows::Anthropic => (
                400,
                json!({"type": "error", "error": {
                    "type": "invalid_request_error",
                    "message": format!("prompt is too long: {asked} tokens > {limit} maximum")
                }})
                .to_string(),
            ),
            Overflows::LlamaCpp => (
                400,
                json!({"error": {
                    "code": 400,
                    "message": "the request exceeds the available context size, try increasing it",
                    "type": "exceed_context_size_error",
                    "n_prompt_tokens": asked,
                    "n_ctx": limit
                }})
                .to_string(),
            ),
            Overflows::Ollama => (
                500,
                json!({"error": {
                    "message": "input length exceeds the context length",
                    "type": "api_error",
                    "param": null,
                    "code": null
                }})
                .to_string(),
            ),
        }
    }
}

/// `reply` with its prompt count made `prompt`, or without usage.
fn counted(reply: FakeReply, prompt: u64, usage: bool) -> FakeReply {
    let count = |u: Option<(u64, u64)>| {
        if usage {
            Some((prompt, u.map_or(1, |(_, c)| c)))
        } else {
            None
        }
    };
    match reply {
        FakeReply::Stream { chunks, usage } => FakeReply::Stream {
            chunks,
            usage: count(usage),
        },
        FakeReply::ToolCalls { text, calls, usage } => FakeReply::ToolCalls {
            text,
            calls,
            usage: count(usage),
        },
        FakeReply::Json { text, usage } => FakeReply::Json {
            text,
            usage: count(usage),
        },
        other => other,
    }
}

/// The most an [`FakeReply::Endless`] stream sends before it gives up.
pub const ENDLESS_CAP: usize = 1 << 30; // not policy: the test server's

impl FakeReply {
    /// A streamed answer of `text`, one chunk per word (each word with the
    /// whitespace before it), with usage `(10, number of chunks)`.
    pub fn text(text: &str) -> FakeReply {
        let chunks: Vec<String> = word_pieces(text).into_iter().map(str::to_owned).collect();
        let completion = chunks.len() as u64;
        FakeReply::Stream {
            chunks,
            usage: Some((10, completion)),
        }
    }

    /// A streamed answer of `text` and these `(id, name, arguments)` calls,
    /// with usage `(10, number of calls)`.
    pub fn tool_calls(text: &str, calls: &[(&str, &str, &str)]) -> FakeReply {
        FakeReply::ToolCalls {
            text: text.to_owned(),
            calls: calls
                .iter()
                .map(|(id, name, arguments)| {
                    (
                        (*id).to_owned(),
                        (*name).to_owned(),
                        (*arguments).to_owned(),
                    )
                })
                .collect(),
            usage: Some((10, calls.len() as u64)),
        }
    }
}

/// The protocol a [`FakeServer`] speaks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FakeProtocol {
    /// OpenAI Chat Completions SSE and JSON.
    #[default]
    OpenAi,
    /// Anthropic Messages SSE and JSON.
    Anthropic,
}

/// A request the fake server received.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recorded {
    /// `POST`, `GET`, …
    pub method: String,
    /// The request target, e.g. `/v1/chat/completions`.
    pub path: String,
    /// Every header in order, names as the client spelled them.
    pub headers: Vec<(String, String)>,
    /// The body, byte for byte (invalid UTF-8, if any, replaced by U+FFFD).
    pub body: String,
}

impl Recorded {
    /// The value of the first header with this name, ignoring case.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A running fake server; dropping it stops the server thread.
#[derive(Debug)]
pub struct FakeServer {
    port: u16,
    requests: Arc<Mutex<Vec<Recorded>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl FakeServer {
    /// Binds `127.0.0.1` on a free port and serves `replies` in order, in
    /// the OpenAI protocol.
    pub fn start(replies: Vec<FakeReply>) -> io::Result<FakeServer> {
        FakeServer::start_with(FakeProtocol::OpenAi, replies)
    }

    /// The same in the Anthropic protocol.
    pub fn start_anthropic(replies: Vec<FakeReply>) -> io::Result<FakeServer> {
        FakeServer::start_with(FakeProtocol::Anthropic, replies)
    }

    /// Binds `127.0.0.1` on a free port and serves `replies` in order, in
    /// `protocol`.
    pub fn start_with(protocol: FakeProtocol, replies: Vec<FakeReply>) -> io::Result<FakeServer> {
        FakeServer::start_limited(protocol, replies, None)
    }

    /// [`FakeServer::start_with`], enforcing a real context [`Limit`].
    pub fn start_limited(
        protocol: FakeProtocol,
        replies: Vec<FakeReply>,
        limit: Option<Limit>,
    ) -> io::Result<FakeServer> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let server = Server {
            listener,
            protocol,
            limit,
            replies,
            served: 0,
            requests: Arc::clone(&requests),
            stop: Arc::clone(&stop),
        };
        let thread = thread::Builder::new()
            .name(format!("fake-model-{port}"))
            .spawn(move || server.run())?;
        Ok(FakeServer {
            port,
            requests,
            stop,
            thread: Some(thread),
        })
    }

    /// The base URL to give a provider: `http://127.0.0.1:PORT/v1`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// The port the server listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<Recorded> {
        lock(&self.requests).clone()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            // A panic in the server thread has nothing left to report here.
            let _ = thread.join();
        }
    }
}

/// How often the idle server looks at its listener and its stop flag.
const POLL: Duration = Duration::from_millis(5); // not policy: the test server's
/// How long the server waits for a client to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(2); // not policy: the test server's
/// The largest request head the server reads.
const MAX_HEAD: usize = 1 << 20; // not policy: the test server's

struct Server {
    listener: TcpListener,
    protocol: FakeProtocol,
    limit: Option<Limit>,
    replies: Vec<FakeReply>,
    served: usize,
    requests: Arc<Mutex<Vec<Recorded>>>,
    stop: Arc<AtomicBool>,
}

impl Server {
    fn run(mut self) {
        while !self.stop.load(Ordering::SeqCst) {
            match self.listener.accept() {
                Ok((stream, _)) => {
                    // A failed connection concerns only that client; the
                    // test sees it as a client-side error.
                    let _ = self.serve(stream);
                }
                // Nothing waiting (`WouldBlock`), or a failed accept that
                // only the client would notice: look again shortly.
                Err(_) => thread::sleep(POLL),
            }
        }
    }

    fn serve(&mut self, mut stream: TcpStream) -> io::Result<()> {
        stream.set_nonblocking(false)?;
        stream.set_read_timeout(Some(READ_TIMEOUT))?;
        let Some(recorded) = read_request(&mut stream)? else {
            return Ok(());
        };
        let size = recorded.body.len() as u64;
        lock(&self.requests).push(recorded);
        if let Some(limit) = self.limit {
            let asked = size.div_ceil(limit.bytes_per_token.max(1));
            if asked > limit.tokens {
                let (code, body) = limit.says.answer(asked, limit.tokens);
                write_status(&mut stream, code, &body, None)?;
                stream.flush()?;
                return stream.shutdown(Shutdown::Both);
            }
        }
        let reply = self
            .replies
            .get(self.served)
            .cloned()
            .map(|reply| match self.limit {
                Some(limit) => counted(
                    reply,
                    size.div_ceil(limit.bytes_per_token.max(1)),
                    limit.usage,
                ),
                None => reply,
            });
        self.served += 1;
        match reply {
            Some(reply) => self.answer(&mut stream, reply)?,
            None => {
                let body = format!(
                    "fake server: no reply left for request {} (the script holds {})",
                    self.served,
                    self.replies.len()
                );
                write_status(&mut stream, 500, &body, None)?;
            }
        }
        stream.flush()?;
        stream.shutdown(Shutdown::Both)
    }

    fn answer(&self, stream: &mut TcpStream, reply: FakeReply) -> io::Result<()> {
        let words = |text: &str| -> Vec<String> {
            word_pieces(text).into_iter().map(str::to_owned).collect()
        };
        match reply {
            FakeReply::Stream { chunks, usage } => self.stream(stream, &chunks, &[], usage, true),
            FakeReply::ToolCalls { text, calls, usage } => {
                self.stream(stream, &words(&text), &calls, usage, true)
            }
            FakeReply::Json { text, usage } => {
                let body = match self.protocol {
                    FakeProtocol::OpenAi => {
                        let usage =
                            usage.map_or(String::new(), |(p, c)| format!(",{}", usage_field(p, c)));
                        format!(
                            r#"{{"id":"x","object":"chat.completion","choices":[{{"index":0,"message":{{"role":"assistant","content":{}}},"finish_reason":"stop"}}]{usage}}}"#,
                            json_string(&text)
                        )
                    }
                    FakeProtocol::Anthropic => {
                        let mut message = json!({
                            "id": "msg_fake",
                            "type": "message",
                            "role": "assistant",
                            "model": "fake",
                            "content": [{"type": "text", "text": text}],
                            "stop_reason": "end_turn",
                            "stop_sequence": null,
                        });
                        if let Some((p, c)) = usage {
                            message["usage"] = json!({"input_tokens": p, "output_tokens": c});
                        }
                        message.to_string()
                    }
                };
                write_head(stream, 200, "application/json", Some(body.len()), None)?;
                stream.write_all(body.as_bytes())
            }
            FakeReply::Status {
                code,
                body,
                retry_after,
            } => write_status(stream, code, &body, retry_after),
            FakeReply::CutAfter { chunks } => self.stream(stream, &chunks, &[], None, false),
            FakeReply::Stall { chunks } => {
                self.stream(stream, &chunks, &[], None, false)?;
                self.stall(stream)
            }
            FakeReply::Garbage(body) => {
                write_head(stream, 200, "text/event-stream", None, None)?;
                stream.write_all(body.as_bytes())
            }
            FakeReply::Raw(bytes) => stream.write_all(bytes.as_bytes()),
            FakeReply::Delayed(wait, reply) => {
                let deadline = Instant::now() + wait;
                while Instant::now() < deadline && !self.stop.load(Ordering::SeqCst) {
                    thread::sleep(POLL);
                }
                self.answer(stream, *reply)
            }
            FakeReply::Models(ids) => {
                let body = match self.protocol {
                    FakeProtocol::OpenAi => {
                        let data: Vec<_> = ids
                            .iter()
                            .map(|id| json!({"id": id, "object": "model", "created": 0, "owned_by": "fake"}))
                            .collect();
                        json!({"object": "list", "data": data})
                    }
                    FakeProtocol::Anthropic => {
                        let data: Vec<_> = ids
                            .iter()
                            .map(|id| json!({"type": "model", "id": id, "display_name": id,
                                             "created_at": "2026-01-01T00:00:00Z"}))
                            .collect();
                        json!({"data": data, "has_more": false,
                               "first_id": ids.first(), "last_id": ids.last()})
                    }
                }
                .to_string();
                write_head(stream, 200, "application/json", Some(body.len()), None)?;
                stream.write_all(body.as_bytes())
            }
            FakeReply::Hang => self.stall(stream),
            FakeReply::Slow { chunks, every } => {
                write_head(stream, 200, "text/event-stream", None, None)?;
                self.text_start(stream)?;
                for piece in &chunks {
                    thread::sleep(every);
                    self.text_piece(stream, piece)?;
                }
                self.text_end(stream)
            }
            FakeReply::Keepalive { chunks, every } => {
                write_head(stream, 200, "text/event-stream", None, None)?;
                self.text_start(stream)?;
                for piece in &chunks {
                    self.text_piece(stream, piece)?;
                }
                let empty = match self.protocol {
                    FakeProtocol::OpenAi => format!(": ping\n\ndata: {}\n\n", chunk("{}")),
                    FakeProtocol::Anthropic => {
                        let delta = json!({"type": "text_delta", "text": ""});
                        let data =
                            json!({"type": "content_block_delta", "index": 0, "delta": delta});
                        format!(
                            ": ping\n\nevent: ping\ndata: {{\"type\":\"ping\"}}\n\n\
                             event: content_block_delta\ndata: {data}\n\n"
                        )
                    }
                };
                while !self.stop.load(Ordering::SeqCst) {
                    // A write error is the client hanging up: the end.
                    if stream
                        .write_all(empty.as_bytes())
                        .and_then(|()| stream.flush())
                        .is_err()
                    {
                        return Ok(());
                    }
                    let deadline = Instant::now() + every;
                    while Instant::now() < deadline && !self.stop.load(Ordering::SeqCst) {
                        thread::sleep(POLL.min(every));
                    }
                }
                Ok(())
            }
            FakeReply::Endless { piece } => {
                write_head(stream, 200, "text/event-stream", None, None)?;
                self.text_start(stream)?;
                // Written in batches: one event per write would make the
                // server, not the client, the slow side.
                let mut batch = Vec::new();
                while batch.len() < 64 * 1024 {
                    batch.extend_from_slice(self.piece_event(&piece).as_bytes());
                }
                let mut sent = 0;
                while sent < ENDLESS_CAP && !self.stop.load(Ordering::SeqCst) {
                    // A write error is the client hanging up: the end.
                    if stream.write_all(&batch).is_err() {
                        return Ok(());
                    }
                    sent += batch.len();
                }
                Ok(())
            }
        }
    }

    /// What opens a streamed text answer.
    fn text_start(&self, stream: &mut TcpStream) -> io::Result<()> {
        match self.protocol {
            FakeProtocol::OpenAi => {
                write_event(stream, &chunk(r#"{"role":"assistant","content":""}"#))
            }
            FakeProtocol::Anthropic => {
                let message = json!({
                    "id": "msg_fake", "type": "message", "role": "assistant", "model": "fake",
                    "content": [], "stop_reason": null, "stop_sequence": null,
                });
                write_named(stream, "message_start", json!({"message": message}))?;
                let block = json!({"type": "text", "text": ""});
                write_named(
                    stream,
                    "content_block_start",
                    json!({"index": 0, "content_block": block}),
                )
            }
        }
    }

    /// One text piece of a streamed answer, as its SSE event.
    fn piece_event(&self, piece: &str) -> String {
        match self.protocol {
            FakeProtocol::OpenAi => format!(
                "data: {}\n\n",
                chunk(&format!(r#"{{"content":{}}}"#, json_string(piece)))
            ),
            FakeProtocol::Anthropic => {
                let delta = json!({"type": "text_delta", "text": piece});
                let data = json!({"type": "content_block_delta", "index": 0, "delta": delta});
                format!("event: content_block_delta\ndata: {data}\n\n")
            }
        }
    }

    fn text_piece(&self, stream: &mut TcpStream, piece: &str) -> io::Result<()> {
        stream.write_all(self.piece_event(piece).as_bytes())?;
        stream.flush()
    }

    /// What ends a streamed text answer.
    fn text_end(&self, stream: &mut TcpStream) -> io::Result<()> {
        match self.protocol {
            FakeProtocol::OpenAi => {
                write_event(
                    stream,
                    r#"{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
                )?;
                write_event(stream, "[DONE]")
            }
            FakeProtocol::Anthropic => {
                write_named(stream, "content_block_stop", json!({"index": 0}))?;
                let delta = json!({"delta": {"stop_reason": "end_turn", "stop_sequence": null}});
                write_named(stream, "message_delta", delta)?;
                write_named(stream, "message_stop", json!({}))
            }
        }
    }

    /// A streamed answer: text pieces, then tool calls and the end when
    /// `complete`; otherwise it stops after the text pieces.
    fn stream(
        &self,
        stream: &mut TcpStream,
        chunks: &[String],
        calls: &[(String, String, String)],
        usage: Option<(u64, u64)>,
        complete: bool,
    ) -> io::Result<()> {
        write_head(stream, 200, "text/event-stream", None, None)?;
        match self.protocol {
            FakeProtocol::OpenAi => openai_stream(stream, chunks, calls, usage, complete),
            FakeProtocol::Anthropic => anthropic_stream(stream, chunks, calls, usage, complete),
        }
    }

    /// Waits, sending nothing, until the client hangs up or the server stops.
    fn stall(&self, stream: &mut TcpStream) -> io::Result<()> {
        stream.flush()?;
        stream.set_read_timeout(Some(Duration::from_millis(10)))?;
        let mut byte = [0u8; 1];
        while !self.stop.load(Ordering::SeqCst) {
            match stream.read(&mut byte) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => break,
            }
        }
        Ok(())
    }
}

/// Reads one request; `None` when the client left before sending it whole.
fn read_request(stream: &mut TcpStream) -> io::Result<Option<Recorded>> {
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = find(&data, b"\r\n\r\n") {
            break at;
        }
        if data.len() > MAX_HEAD {
            return Ok(None);
        }
        match stream.read(&mut buf) {
            Ok(0) => return Ok(None),
            Ok(n) => data.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Ok(None),
        }
    };
    let head = String::from_utf8_lossy(&data[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next().unwrap_or_default().split(' ');
    let method = request_line.next().unwrap_or_default().to_owned();
    let path = request_line.next().unwrap_or_default().to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_owned(), value.trim().to_owned()))
        .collect();
    let length = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = data.split_off(head_end + 4);
    while body.len() < length {
        match stream.read(&mut buf) {
            Ok(0) => return Ok(None),
            Ok(n) => body.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Ok(None),
        }
    }
    body.truncate(length);
    let body = String::from_utf8_lossy(&body).into_owned();
    Ok(Some(Recorded {
        method,
        path,
        headers,
        body,
    }))
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn write_head(
    stream: &mut TcpStream,
    code: u16,
    content_type: &str,
    length: Option<usize>,
    retry_after: Option<u64>,
) -> io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {code} {}\r\nContent-Type: {content_type}\r\n",
        reason(code)
    );
    if let Some(length) = length {
        head.push_str(&format!("Content-Length: {length}\r\n"));
    }
    if let Some(secs) = retry_after {
        head.push_str(&format!("Retry-After: {secs}\r\n"));
    }
    head.push_str("Cache-Control: no-cache\r\nConnection: close\r\n\r\n");
    stream.write_all(head.as_bytes())
}

fn write_status(
    stream: &mut TcpStream,
    code: u16,
    body: &str,
    retry_after: Option<u64>,
) -> io::Result<()> {
    let content_type = if body.starts_with('{') {
        "application/json"
    } else {
        "text/plain; charset=utf-8"
    };
    write_head(stream, code, content_type, Some(body.len()), retry_after)?;
    stream.write_all(body.as_bytes())
}

/// The OpenAI chunks of an answer (see the module doc).
fn openai_stream(
    stream: &mut TcpStream,
    chunks: &[String],
    calls: &[(String, String, String)],
    usage: Option<(u64, u64)>,
    complete: bool,
) -> io::Result<()> {
    write_event(stream, &chunk(r#"{"role":"assistant","content":""}"#))?;
    for piece in chunks {
        write_event(
            stream,
            &chunk(&format!(r#"{{"content":{}}}"#, json_string(piece))),
        )?;
    }
    if !complete {
        return Ok(());
    }
    for (index, (id, name, arguments)) in calls.iter().enumerate() {
        let call = json!({"index": index, "id": id, "type": "function",
                          "function": {"name": name, "arguments": ""}});
        write_event(stream, &chunk(&json!({"tool_calls": [call]}).to_string()))?;
        for piece in fragments(arguments) {
            let call = json!({"index": index, "function": {"arguments": piece}});
            write_event(stream, &chunk(&json!({"tool_calls": [call]}).to_string()))?;
        }
    }
    let reason = if calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    write_event(
        stream,
        &format!(
            r#"{{"id":"x","object":"chat.completion.chunk","choices":[{{"index":0,"delta":{{}},"finish_reason":"{reason}"}}]}}"#
        ),
    )?;
    if let Some((prompt, completion)) = usage {
        write_event(stream, &usage_chunk(prompt, completion))?;
    }
    write_event(stream, "[DONE]")
}

/// The Anthropic events of an answer (see the module doc).
fn anthropic_stream(
    stream: &mut TcpStream,
    chunks: &[String],
    calls: &[(String, String, String)],
    usage: Option<(u64, u64)>,
    complete: bool,
) -> io::Result<()> {
    let mut message = json!({
        "id": "msg_fake", "type": "message", "role": "assistant", "model": "fake",
        "content": [], "stop_reason": null, "stop_sequence": null,
    });
    if let Some((prompt, _)) = usage {
        message["usage"] = json!({"input_tokens": prompt, "output_tokens": 1});
    }
    write_named(stream, "message_start", json!({"message": message}))?;
    let mut index = 0;
    if !chunks.is_empty() {
        let block = json!({"type": "text", "text": ""});
        write_named(
            stream,
            "content_block_start",
            json!({"index": 0, "content_block": block}),
        )?;
        write_named(stream, "ping", json!({}))?;
        for piece in chunks {
            let delta = json!({"type": "text_delta", "text": piece});
            write_named(
                stream,
                "content_block_delta",
                json!({"index": 0, "delta": delta}),
            )?;
        }
    }
    if !complete {
        return Ok(());
    }
    if !chunks.is_empty() {
        write_named(stream, "content_block_stop", json!({"index": 0}))?;
        index = 1;
    }
    for (id, name, arguments) in calls {
        let block = json!({"type": "tool_use", "id": id, "name": name, "input": {}});
        write_named(
            stream,
            "content_block_start",
            json!({"index": index, "content_block": block}),
        )?;
        for piece in std::iter::once("").chain(fragments(arguments)) {
            let delta = json!({"type": "input_json_delta", "partial_json": piece});
            write_named(
                stream,
                "content_block_delta",
                json!({"index": index, "delta": delta}),
            )?;
        }
        write_named(stream, "content_block_stop", json!({"index": index}))?;
        index += 1;
    }
    let reason = if calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    };
    let mut delta = json!({"delta": {"stop_reason": reason, "stop_sequence": null}});
    if let Some((_, completion)) = usage {
        delta["usage"] = json!({"output_tokens": completion});
    }
    write_named(stream, "message_delta", delta)?;
    write_named(stream, "message_stop", json!({}))
}

/// `text` in three pieces at character boundaries (two for two
/// characters); fewer only when it is shorter.
fn fragments(text: &str) -> Vec<&str> {
    let ends: Vec<usize> = text.char_indices().map(|(i, _)| i).skip(1).collect();
    let n = ends.len() + 1;
    let cuts: Vec<usize> = [n / 3, 2 * n / 3]
        .into_iter()
        .filter(|&k| k > 0 && k < n)
        .map(|k| ends[k - 1])
        .collect();
    let mut pieces = Vec::new();
    let mut start = 0;
    for cut in cuts {
        if cut > start {
            pieces.push(&text[start..cut]);
            start = cut;
        }
    }
    if start < text.len() {
        pieces.push(&text[start..]);
    }
    pieces
}

/// An Anthropic event: `event: NAME` and the data with `type: NAME`.
fn write_named(stream: &mut TcpStream, name: &str, mut data: serde_json::Value) -> io::Result<()> {
    data["type"] = json!(name);
    stream.write_all(format!("event: {name}\ndata: {data}\n\n").as_bytes())?;
    stream.flush()
}

fn write_event(stream: &mut TcpStream, data: &str) -> io::Result<()> {
    stream.write_all(format!("data: {data}\n\n").as_bytes())?;
    stream.flush()
}

fn chunk(delta: &str) -> String {
    format!(
        r#"{{"id":"x","object":"chat.completion.chunk","choices":[{{"index":0,"delta":{delta}}}]}}"#
    )
}

fn usage_chunk(prompt: u64, completion: u64) -> String {
    format!(
        r#"{{"id":"x","object":"chat.completion.chunk","choices":[],{}}}"#,
        usage_field(prompt, completion)
    )
}

fn usage_field(prompt: u64, completion: u64) -> String {
    format!(
        r#""usage":{{"prompt_tokens":{prompt},"completion_tokens":{completion},"total_tokens":{}}}"#,
        prompt + completion
    )
}

fn json_string(text: &str) -> String {
    // A `str` always serializes; the fallback only keeps this panic-free.
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".to_owned())
}

fn reason(code: u16) -> &'static str {
    match code {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        529 => "Overloaded",
        _ => "Status",
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // The data is a plain list; a panic while holding the lock cannot leave
    // it half-updated, so a poisoned lock is still good to read.
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Waits until `server` has recorded `n` requests or `within` passes; for
/// tests that race a client against the server thread.
pub fn wait_for_requests(server: &FakeServer, n: usize, within: Duration) -> Vec<Recorded> {
    let start = Instant::now();
    loop {
        let requests = server.requests();
        if requests.len() >= n || start.elapsed() >= within {
            return requests;
        }
        thread::sleep(POLL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sends a raw request and reads the whole close-delimited answer.
    fn exchange(server: &FakeServer, request: &str) -> String {
        let mut stream = TcpStream::connect(("127.0.0.1", server.port())).unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        answer
    }

    fn post(body: &str) -> String {
        format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Test: yes\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
    }

    #[test]
    fn streams_chunks_usage_and_done_then_runs_dry() {
        let server = FakeServer::start(vec![FakeReply::text("hello big world")]).unwrap();
        let answer = exchange(&server, &post(r#"{"a":"é"}"#));
        assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
        assert!(answer.contains("Content-Type: text/event-stream\r\n"));
        assert!(answer.contains("Connection: close\r\n"));
        assert!(answer.contains(r#""delta":{"content":" big"}"#));
        assert!(answer.contains(
            r#""choices":[],"usage":{"prompt_tokens":10,"completion_tokens":3,"total_tokens":13}"#
        ));
        assert!(answer.ends_with("data: [DONE]\n\n"));

        let answer = exchange(&server, &post(""));
        assert!(answer.starts_with("HTTP/1.1 500 "), "{answer}");
        assert!(answer.contains("no reply left for request 2 (the script holds 1)"));

        let requests = server.requests();
        assert_eq!(requests.len(), 2);
        assert_eq!(requests[0].method, "POST");
        assert_eq!(requests[0].path, "/v1/chat/completions");
        assert_eq!(requests[0].body, r#"{"a":"é"}"#);
        assert_eq!(requests[0].header("x-test"), Some("yes"));
        assert_eq!(requests[1].body, "");
    }

    #[test]
    fn text_splits_at_words_and_keeps_every_byte() {
        let FakeReply::Stream { chunks, usage } = FakeReply::text("a  b\nc ") else {
            panic!("text streams");
        };
        assert_eq!(chunks, ["a", "  b", "\nc", " "]);
        assert_eq!(chunks.concat(), "a  b\nc ");
        assert_eq!(usage, Some((10, 4)));
    }

    #[test]
    fn status_json_cut_and_raw() {
        let server = FakeServer::start(vec![
            FakeReply::Status {
                code: 429,
                body: "slow down".into(),
                retry_after: Some(7),
            },
            FakeReply::Json {
                text: "hi \"you\"".into(),
                usage: Some((1, 2)),
            },
            FakeReply::CutAfter {
                chunks: vec!["par".into()],
            },
            FakeReply::Raw("nonsense".into()),
        ])
        .unwrap();
        let answer = exchange(&server, &post("{}"));
        assert!(answer.starts_with("HTTP/1.1 429 Too Many Requests\r\n"));
        assert!(answer.contains("Retry-After: 7\r\n"));
        assert!(answer.ends_with("\r\n\r\nslow down"));

        let answer = exchange(&server, &post("{}"));
        let body = answer.split("\r\n\r\n").nth(1).unwrap();
        let json: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(json["choices"][0]["message"]["content"], "hi \"you\"");
        assert_eq!(json["usage"]["total_tokens"], 3);

        let answer = exchange(&server, &post("{}"));
        assert!(answer.contains(r#"{"content":"par"}"#));
        assert!(!answer.contains("[DONE]"));

        assert_eq!(exchange(&server, &post("{}")), "nonsense");
    }

    #[test]
    fn a_client_that_sends_nothing_uses_no_reply() {
        let server = FakeServer::start(vec![FakeReply::Garbage("data: x\n\n".into())]).unwrap();
        drop(TcpStream::connect(("127.0.0.1", server.port())).unwrap());
        let answer = exchange(&server, &post("{}"));
        assert!(answer.ends_with("\r\n\r\ndata: x\n\n"), "{answer}");
        assert_eq!(server.requests().len(), 1);
    }

    #[test]
    fn drop_stops_a_stalled_server_promptly() {
        let server = FakeServer::start(vec![FakeReply::Stall {
            chunks: vec!["a".into()],
        }])
        .unwrap();
        let mut stream = TcpStream::connect(("127.0.0.1", server.port())).unwrap();
        stream.write_all(post("{}").as_bytes()).unwrap();
        assert_eq!(
            wait_for_requests(&server, 1, Duration::from_secs(5)).len(),
            1
        );
        let start = Instant::now();
        drop(server);
        assert!(start.elapsed() < Duration::from_secs(1));
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        assert!(answer.contains(r#"{"content":"a"}"#));
    }

    /// The `data:` of each event of an answer, parsed, with its `event:`.
    fn events(answer: &str) -> Vec<(Option<String>, serde_json::Value)> {
        let body = answer.split_once("\r\n\r\n").unwrap().1;
        body.split("\n\n")
            .filter(|e| !e.is_empty())
            .map(|e| {
                let mut name = None;
                let mut data = serde_json::Value::Null;
                for line in e.lines() {
                    if let Some(n) = line.strip_prefix("event: ") {
                        name = Some(n.to_owned());
                    } else if let Some(d) = line.strip_prefix("data: ") {
                        data = serde_json::from_str(d).unwrap_or_else(|_| json!(d));
                    }
                }
                (name, data)
            })
            .collect()
    }

    #[test]
    fn openai_tool_calls_stream_arguments_in_fragments() {
        let server = FakeServer::start(vec![FakeReply::tool_calls(
            "ok",
            &[
                ("c1", "read_file", r#"{"path":"x"}"#),
                ("c2", "agent_info", "{}"),
            ],
        )])
        .unwrap();
        let answer = exchange(&server, &post("{}"));
        let events = events(&answer);
        let deltas: Vec<&serde_json::Value> = events
            .iter()
            .filter_map(|(_, d)| d["choices"][0].get("delta"))
            .collect();
        let calls: Vec<&serde_json::Value> = deltas
            .iter()
            .filter_map(|d| d["tool_calls"].get(0))
            .collect();
        assert_eq!(calls[0]["index"], 0);
        assert_eq!(calls[0]["id"], "c1");
        assert_eq!(calls[0]["function"]["name"], "read_file");
        let arguments = |index: u64| -> Vec<&str> {
            calls
                .iter()
                .filter(|c| c["index"] == index && c.get("id").is_none())
                .map(|c| c["function"]["arguments"].as_str().unwrap())
                .collect()
        };
        assert_eq!(arguments(0), [r#"{"pa"#, r#"th":"#, r#""x"}"#]);
        assert_eq!(arguments(1), ["{", "}"]);
        assert_eq!(calls[4]["id"], "c2");
        let finish = &events[events.len() - 3].1["choices"][0]["finish_reason"];
        assert_eq!(finish, "tool_calls");
        assert_eq!(events[events.len() - 2].1["usage"]["completion_tokens"], 2);
        assert!(answer.ends_with("data: [DONE]\n\n"));
    }

    #[test]
    fn anthropic_streams_named_events() {
        let server = FakeServer::start_anthropic(vec![
            FakeReply::tool_calls("Hi you", &[("t1", "grep", r#"{"pattern":"a"}"#)]),
            FakeReply::CutAfter {
                chunks: vec!["par".into()],
            },
            FakeReply::Json {
                text: "whole".into(),
                usage: Some((3, 4)),
            },
        ])
        .unwrap();
        let answer = exchange(&server, &post("{}"));
        assert!(answer.contains("Content-Type: text/event-stream\r\n"));
        let all = events(&answer);
        let names: Vec<&str> = all.iter().map(|(n, _)| n.as_deref().unwrap()).collect();
        assert_eq!(
            names,
            [
                "message_start",
                "content_block_start",
                "ping",
                "content_block_delta",
                "content_block_delta",
                "content_block_stop",
                "content_block_start",
                "content_block_delta",
                "content_block_delta",
                "content_block_delta",
                "content_block_delta",
                "content_block_stop",
                "message_delta",
                "message_stop",
            ]
        );
        for (name, data) in &all {
            assert_eq!(data["type"], name.as_deref().unwrap());
        }
        assert_eq!(all[0].1["message"]["usage"]["input_tokens"], 10);
        assert_eq!(all[3].1["delta"]["text"], "Hi");
        assert_eq!(all[6].1["index"], 1);
        assert_eq!(all[6].1["content_block"]["id"], "t1");
        let json: String = all[7..11]
            .iter()
            .map(|(_, d)| d["delta"]["partial_json"].as_str().unwrap())
            .collect();
        assert_eq!(json, r#"{"pattern":"a"}"#);
        assert_eq!(all[7].1["delta"]["partial_json"], "");
        assert_eq!(all[12].1["delta"]["stop_reason"], "tool_use");
        assert_eq!(all[12].1["usage"]["output_tokens"], 1);

        let answer = exchange(&server, &post("{}"));
        let names: Vec<String> = events(&answer)
            .into_iter()
            .map(|(n, _)| n.unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "message_start",
                "content_block_start",
                "ping",
                "content_block_delta"
            ]
        );

        let answer = exchange(&server, &post("{}"));
        let body = answer.split("\r\n\r\n").nth(1).unwrap();
        let json: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(json["content"][0]["text"], "whole");
        assert_eq!(json["usage"]["output_tokens"], 4);
    }

    #[test]
    fn fragments_cut_at_characters() {
        assert_eq!(fragments(""), Vec::<&str>::new());
        assert_eq!(fragments("a"), ["a"]);
        assert_eq!(fragments("ab"), ["a", "b"]);
        assert_eq!(fragments("éüñ"), ["é", "ü", "ñ"]);
        assert_eq!(fragments("{\"k\":1}").concat(), "{\"k\":1}");
    }
}
