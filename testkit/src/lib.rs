//! A fake model server for tests, speaking the OpenAI Chat Completions, the
//! Anthropic Messages or Google's Gemini protocol (see [`gemini`]).
//!
//! [`FakeServer::start`] (OpenAI) or [`FakeServer::start_anthropic`] binds
//! `127.0.0.1` on a free port and answers each connection with the next
//! [`FakeReply`] of its script, in order, whatever the path; once the script
//! is exhausted it answers `500` with a body saying so. Every request it
//! receives is kept as a [`Recorded`] (method, path, headers, body byte for
//! byte) for the test to inspect with [`FakeServer::requests`].
//!
//! It speaks just enough HTTP/1.1: it reads the request head and a
//! `Content-Length` body (no chunked request bodies), and by default every
//! answer carries `Connection: close` and one connection serves one request.
//! Streamed answers are real server-sent events with a close-delimited body
//! (chunked with [`FakeOptions::keep_alive`]):
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
//!   A [`FakeReply::Thinks`] begins with a `thinking` block (its text in
//!   `thinking_delta` pieces, then a `signature_delta`), and the server
//!   plays the API's rules for sending it back (see [`thinking`]).
//!
//! A cut or stalled stream stops after its text pieces, in the middle of the
//! text block. An answer cut at its length limit ([`FakeReply::Length`],
//! [`FakeReply::Rambles`]) ends with `finish_reason: "length"` (OpenAI) or
//! `stop_reason: "max_tokens"` (Anthropic). [`FakeReply::Status`],
//! [`FakeReply::Garbage`] and [`FakeReply::Raw`] are the same in both
//! protocols; [`FakeReply::Models`] answers a model list in the protocol's
//! own shape.
//!
//! One thread serves connections one after another. Dropping the server stops
//! it: the thread polls a non-blocking listener every few milliseconds, checks
//! a shutdown flag, and is joined by `Drop`, so no thread outlives a test.
//!
//! # What real servers do, opt-in
//!
//! [`FakeServer::start_with_options`] takes [`FakeOptions`]; the other
//! constructors keep the behaviour above.
//!
//! * **Keep-alive** ([`FakeOptions::keep_alive`]): answers leave the
//!   connection open for the client's next request, as real servers do: a
//!   JSON or status answer has a `Content-Length`, a stream goes out with
//!   `Transfer-Encoding: chunked` and its last chunk right after `[DONE]`
//!   (or `message_stop`). Each connection gets its own thread, reading
//!   request after request until the client closes it or the server is
//!   dropped. Replies that end by closing (a cut, stalled, hanging,
//!   keepalive-only or endless stream, [`FakeReply::Garbage`],
//!   [`FakeReply::Raw`]) still say `Connection: close` and close.
//!   [`FakeServer::connections`] counts the connections accepted (in
//!   either mode), so a test can see that a client reused one.
//! * **A context [`Limit`]** ([`FakeOptions::limit`], or
//!   [`FakeServer::start_limited`]): see there for each server's way of
//!   saying no, including llama-cpp-python's ([`Overflows::LlamaCppPython`]:
//!   a streamed request over the context gets `200`, `text/event-stream`
//!   and an empty body, and the connection is closed; the same request
//!   unstreamed gets its `400`) and Ollama's silent truncation ([`Overflows::Truncates`]: no
//!   refusal, the prompt counted as the whole context).
//! * **A model that rambles** ([`FakeReply::Rambles`]): it streams until
//!   the request's `max_tokens` (or `max_completion_tokens`), or, without
//!   one, until the [`Limit`]'s context is full, and ends with
//!   `finish_reason: "length"`.

#![forbid(unsafe_code)]

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use serde_json::json;

use revolve_core::text::word_pieces;

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
    /// A response head sent one byte every `every`, without end (a header
    /// line that never finishes), until the client closes the connection
    /// or the server is dropped: a server that is never silent for long
    /// and never gets to its answer.
    TrickleHead {
        /// The pause before each byte.
        every: Duration,
    },
    /// `200`, `text/event-stream`: a complete streamed answer of these
    /// text pieces that stopped at the request's length limit: its finish
    /// chunk says `"finish_reason": "length"` (Anthropic: `message_delta`
    /// with `"stop_reason": "max_tokens"`), then the usage chunk when
    /// `usage` is set, then `[DONE]`.
    Length {
        /// The `delta.content` pieces, in order.
        chunks: Vec<String>,
        /// `(prompt_tokens, completion_tokens)` of the usage chunk.
        usage: Option<(u64, u64)>,
    },
    /// A model that does not stop by itself: `piece` streamed again and
    /// again until the request's length limit, then the end of a
    /// [`FakeReply::Length`] answer. The limit is the request body's
    /// `max_tokens` (else `max_completion_tokens`), cut to the context the
    /// prompt leaves under a [`Limit`]; without either, the context the
    /// prompt leaves ([`Limit::tokens`] less the prompt's count); without
    /// a limit at all, [`RAMBLE_WORDS`] pieces. Tokens are counted at the
    /// limit's `bytes_per_token`, or one a piece without a limit. Its usage
    /// is `(10, tokens sent)` (the prompt count made true, or left out, as
    /// the [`Limit`] says). It always streams.
    Rambles {
        /// The text of every chunk, such as `" blah"`.
        piece: String,
    },
    /// Anthropic: `reply` (a [`FakeReply::Stream`] or
    /// [`FakeReply::ToolCalls`]) after a `thinking` block of this text,
    /// streamed as `thinking_delta` pieces and a `signature_delta` (see
    /// [`thinking`]); the server remembers the block and refuses a later
    /// request that does not send it back, unchanged, before the calls.
    /// OpenAI: `reply` alone.
    Thinks {
        /// The thinking text.
        thinking: String,
        /// The answer after it.
        reply: Box<FakeReply>,
    },
    /// `reply` (streamed) after a web search the server made (issue 44):
    /// Anthropic, a `server_tool_use` block (`web_search`, its `input`
    /// in `input_json_delta` pieces) and a `web_search_tool_result` block
    /// of these `(title, url)` results (each with `encrypted_content`),
    /// before the text; Responses, a `web_search_call` item
    /// (`in_progress`, `searching`, `completed`, done with its
    /// `action.query` and `action.sources`). OpenAI: `reply` alone.
    Searches {
        /// The query searched.
        query: String,
        /// The results, `(title, url)`.
        results: Vec<(String, String)>,
        /// The answer after it.
        reply: Box<FakeReply>,
    },
}

/// The most pieces a [`FakeReply::Rambles`] sends when neither the request
/// nor a [`Limit`] bounds it.
pub(crate) const RAMBLE_WORDS: u64 = 4096; // not policy: the test server's

/// A real server's context: a request whose body counts more than `tokens`
/// (at `bytes_per_token` bytes a token) is refused with the provider's own
/// error body, and no scripted reply is used up; a request that fits gets
/// its scripted reply with the prompt count made true (body bytes over
/// `bytes_per_token`), or with no usage at all when `usage` is false (as
/// llama.cpp's OpenAI server from llama-cpp-python streams). How an
/// oversized request is refused, or not, is [`Limit::says`].
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
    /// `400`, `context_length_exceeded` as OpenAI's Responses API words
    /// it ("Your input exceeds the context window of this model…",
    /// `param: "input"`).
    Responses,
    /// `400`, vLLM's `BadRequestError`.
    Vllm,
    /// `400`, `prompt is too long: N tokens > M maximum`.
    Anthropic,
    /// `400`, `INVALID_ARGUMENT`, "The input token count (N) exceeds the
    /// maximum number of tokens allowed (M)."
    Gemini,
    /// `400`, `exceed_context_size_error` with `n_ctx`.
    LlamaCpp,
    /// `500`, Ollama's "input length exceeds the context length".
    Ollama,
    /// llama.cpp's server from `llama-cpp-python` (as measured with its
    /// 0.3 server): a request with `"stream": true` gets `200`,
    /// `text/event-stream` and a body that ends at once, no event at all,
    /// and the connection is closed (with keep-alive, as uvicorn does it: a
    /// chunked body that is only its last chunk, no `Connection: close`,
    /// then the close); any other gets `400`,
    /// `context_length_exceeded`, "This model's maximum context length is
    /// N tokens. However, you requested T tokens (P in the messages, M in
    /// the completion)…", M being the request's `max_tokens` (`None` when
    /// it has none, as that server prints it) and T = P + M.
    LlamaCppPython,
    /// Ollama's silent truncation: nothing is refused; an oversized
    /// request is answered as if it fit, its prompt count (when the answer
    /// carries usage) being the whole context, `tokens`, because the
    /// server dropped the start of the prompt without a word.
    Truncates,
}

impl Overflows {
    /// The status and body a request of `asked` tokens gets under a
    /// context of `limit` (for [`Overflows::LlamaCppPython`] an
    /// unstreamed request without `max_tokens`).
    pub fn answer(self, asked: u64, limit: u64) -> (u16, String) {
        self.answer_to(asked, limit, None)
    }

    /// [`Overflows::answer`] for a request asking for at most
    /// `max_tokens` (which only llama-cpp-python's words name). For
    /// [`Overflows::Truncates`], which refuses nothing, a `200` with an
    /// empty body (never sent).
    pub(crate) fn answer_to(
        self,
        asked: u64,
        limit: u64,
        max_tokens: Option<u64>,
    ) -> (u16, String) {
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
            Overflows::Responses => (
                400,
                json!({"error": {
                    "message": "Your input exceeds the context window of this model. Please adjust your input and try again.",
                    "type": "invalid_request_error",
                    "param": "input",
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
            Overflows::Gemini => (
                400,
                gemini::error(
                    400,
                    &format!("The input token count ({asked}) exceeds the maximum number of tokens allowed ({limit})."),
                    "INVALID_ARGUMENT",
                ),
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
            Overflows::LlamaCppPython => {
                let completion = max_tokens.map_or("None".to_owned(), |m| m.to_string());
                let requested = asked + max_tokens.unwrap_or(0);
                (
                    400,
                    json!({"error": {
                        "message": format!("This model's maximum context length is {limit} tokens. However, you requested {requested} tokens ({asked} in the messages, {completion} in the completion). Please reduce the length of the messages or completion."),
                        "type": "invalid_request_error",
                        "param": "messages",
                        "code": "context_length_exceeded"
                    }})
                    .to_string(),
                )
            }
            Overflows::Truncates => (200, String::new()),
        }
    }
}

/// `reply` with its prompt count made `prompt`, or without usage.
pub(crate) fn counted(reply: FakeReply, prompt: u64, usage: bool) -> FakeReply {
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
        FakeReply::Length { chunks, usage } => FakeReply::Length {
            chunks,
            usage: count(usage),
        },
        FakeReply::Searches {
            query,
            results,
            reply,
        } => FakeReply::Searches {
            query,
            results,
            reply: Box::new(counted(*reply, prompt, usage)),
        },
        FakeReply::Thinks { thinking, reply } => FakeReply::Thinks {
            thinking,
            reply: Box::new(counted(*reply, prompt, usage)),
        },
        other => other,
    }
}

/// The most an [`FakeReply::Endless`] stream sends before it gives up.
pub(crate) const ENDLESS_CAP: usize = 1 << 30; // not policy: the test server's

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

    /// `reply` after a thinking block of `thinking` ([`FakeReply::Thinks`]).
    pub fn thinks(thinking: &str, reply: FakeReply) -> FakeReply {
        FakeReply::Thinks {
            thinking: thinking.to_owned(),
            reply: Box::new(reply),
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
    /// Google's Gemini API SSE and JSON (see [`gemini`]).
    Gemini,
    /// OpenAI Responses SSE and JSON (see [`responses`]).
    Responses,
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

/// How a [`FakeServer`] behaves besides its script; the default is the
/// plain server of the crate doc.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FakeOptions {
    /// A real context limit, enforced.
    pub limit: Option<Limit>,
    /// Keep connections open between requests (see the crate doc).
    pub keep_alive: bool,
    /// Anthropic only: a prompt cache that reads and writes at the
    /// request's `cache_control` breakpoints as the API does, caching
    /// prefixes of at least this many tokens, and reports it in the
    /// usage of streamed answers (see [`cache`]).
    pub prompt_cache: Option<u64>,
    /// Set `TCP_NODELAY` on the server's connections, so its small writes
    /// go out at once. Off by default, as in most real servers (Python's
    /// standard `http.server`, uvicorn before it sets it): a small write
    /// after another waits for the client's ACK of the first (Nagle), which
    /// a client that delays its ACKs holds for about 40 ms. The benches
    /// compare a client against both.
    pub no_delay: bool,
    /// OpenAI only: llama.cpp's C++ `llama-server` (`--jinja`), which
    /// parses every tool call's arguments in the history to render them
    /// through the chat template, and refuses the whole request with
    /// `500` when one does not parse (captured 2026-12-06, SmolLM2 having
    /// rambled a path to its answer's limit).
    pub parses_arguments: bool,
}

/// A running fake server; dropping it stops the server thread.
#[derive(Debug)]
pub struct FakeServer {
    port: u16,
    requests: Arc<Mutex<Vec<Recorded>>>,
    connections: Arc<AtomicUsize>,
    cached: Arc<Mutex<Vec<CacheUsage>>>,
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

    /// The same in Google's Gemini protocol.
    pub fn start_gemini(replies: Vec<FakeReply>) -> io::Result<FakeServer> {
        FakeServer::start_with(FakeProtocol::Gemini, replies)
    }

    /// The same in OpenAI's Responses protocol.
    pub fn start_responses(replies: Vec<FakeReply>) -> io::Result<FakeServer> {
        FakeServer::start_with(FakeProtocol::Responses, replies)
    }

    /// Binds `127.0.0.1` on a free port and serves `replies` in order, in
    /// `protocol`.
    pub(crate) fn start_with(
        protocol: FakeProtocol,
        replies: Vec<FakeReply>,
    ) -> io::Result<FakeServer> {
        FakeServer::start_limited(protocol, replies, None)
    }

    /// [`FakeServer::start_with`], enforcing a real context [`Limit`].
    pub fn start_limited(
        protocol: FakeProtocol,
        replies: Vec<FakeReply>,
        limit: Option<Limit>,
    ) -> io::Result<FakeServer> {
        let options = FakeOptions {
            limit,
            ..FakeOptions::default()
        };
        FakeServer::start_with_options(protocol, replies, options)
    }

    /// Binds `127.0.0.1` on a free port and serves `replies` in order, in
    /// `protocol`, as `options` say.
    pub fn start_with_options(
        protocol: FakeProtocol,
        replies: Vec<FakeReply>,
        options: FakeOptions,
    ) -> io::Result<FakeServer> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(AtomicUsize::new(0));
        let cached = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let server = Server {
            listener,
            shared: Arc::new(Shared {
                protocol,
                limit: options.limit,
                keep_alive: options.keep_alive,
                no_delay: options.no_delay,
                parses_arguments: options.parses_arguments,
                script: Mutex::new(Script { replies, served: 0 }),
                requests: Arc::clone(&requests),
                connections: Arc::clone(&connections),
                cache: options
                    .prompt_cache
                    .map(|least| Mutex::new(PromptCache::new(least))),
                cached: Arc::clone(&cached),
                thoughts: Mutex::new(Vec::new()),
                signatures: Mutex::new(Vec::new()),
                stop: Arc::clone(&stop),
            }),
        };
        let thread = thread::Builder::new()
            .name(format!("fake-model-{port}"))
            .spawn(move || server.run())?;
        Ok(FakeServer {
            port,
            requests,
            connections,
            cached,
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

    /// What the prompt cache reported for each request it answered, in
    /// order (empty without [`FakeOptions::prompt_cache`]).
    pub fn cache_usage(&self) -> Vec<CacheUsage> {
        lock(&self.cached).clone()
    }

    /// How many connections the server has accepted so far.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
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

pub mod cache;
pub mod gemini;
pub mod responses;
mod server;
pub mod thinking;
mod wire;

pub use cache::{CacheUsage, PromptCache};

use server::*;
use wire::*;

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
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
mod tests;
