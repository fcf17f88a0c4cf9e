//! The Anthropic Messages protocol.
//!
//! A stream is named SSE events, each `data` a JSON object whose `type`
//! repeats the event name:
//!
//! * `message_start`: `message.usage` holds the input tokens (and the cache
//!   tokens, which count as input here);
//! * `content_block_start`: a `text` block, a `tool_use` block with the
//!   call's `id` and `name`, or (extended thinking, `--effort`) a
//!   `thinking` block or a `redacted_thinking` block with its `data`;
//!   other blocks (server tools) are skipped;
//! * `content_block_delta`: a `text_delta` is text, shown at once; an
//!   `input_json_delta` brings a `partial_json` fragment of its block's
//!   arguments; a `thinking_delta` brings thinking text and a
//!   `signature_delta` its block's signature (just before the block's
//!   stop). Thinking is kept in the answer ([`Reply::thinking`]), to be
//!   sent back unchanged, and not shown;
//! * `content_block_stop`, `ping`: nothing to do;
//! * `message_delta`: `usage.output_tokens` (a running total), and
//!   `delta.stop_reason`: `max_tokens` marks the reply
//!   [`Reply::truncated`];
//! * `message_stop`: the end. A stream that closes without it is an error
//!   that keeps the partial text;
//! * `error`: fails the request with its `error.message`.
//!
//! Unknown events are ignored, as the API asks. A non-streamed answer is one
//! `message` object whose `content` array holds the text, thinking and
//! `tool_use` blocks, truncated when its `stop_reason` is `max_tokens`. A stream that
//! ends empty is asked again with `"stream": false` (see the `http`
//! module). Usage: prompt tokens are `input_tokens` plus
//! `cache_creation_input_tokens` and `cache_read_input_tokens`; completion
//! tokens are `output_tokens`; the cache counts are kept apart too, as
//! [`Usage::cache_read_tokens`] and [`Usage::cache_write_tokens`].

use std::fmt;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use revolve_core::record::Thinking;
use revolve_core::{Reply, Request, Usage};

use super::http::{self, Answer, Http, Protocol};
use super::sse::SseEvent;
use super::{excerpt, Provider, ProviderError};

/// The `anthropic-version` header sent with every request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// An Anthropic Messages endpoint.
///
/// The key is sent as `x-api-key: KEY` only, never shown: `Debug` hides it
/// and error messages are scrubbed of it.
#[derive(Clone)]
pub struct Anthropic {
    http: Http,
}

impl Anthropic {
    /// A provider for `base_url` (such as `https://api.anthropic.com/v1`; a
    /// trailing `/` is dropped), with an optional API key and the default
    /// stall timeout.
    pub fn new(base_url: impl Into<String>, api_key: Option<String>) -> Anthropic {
        Anthropic {
            http: Http::new(base_url.into(), api_key),
        }
    }

    /// The same provider, knowing which variable its key came from (for
    /// the hint of a 401 or 403).
    pub fn with_key_var(self, var: Option<&'static str>) -> Anthropic {
        Anthropic {
            http: self.http.with_key_var(var),
        }
    }

    /// The same provider with another stall timeout: the longest silence
    /// allowed while waiting for any byte of the answer.
    pub fn with_stall_timeout(self, stall: Duration) -> Anthropic {
        Anthropic {
            http: self.http.with_stall(stall),
        }
    }

    /// The same provider waiting this long for an answer's first content
    /// from a server on this machine, instead of
    /// [`revolve_core::policy::LOCAL_PREFILL_WAIT`] (a remote server gets
    /// the stall timeout throughout). Given after
    /// [`Anthropic::with_stall_timeout`], that timeout then bounds only the
    /// silences after the first content; otherwise an explicit stall
    /// timeout holds everywhere.
    pub fn with_prefill_wait(self, wait: Duration) -> Anthropic {
        Anthropic {
            http: self.http.with_prefill_wait(wait),
        }
    }

    /// The base URL, without a trailing `/`.
    pub fn base_url(&self) -> &str {
        self.http.base_url()
    }

    /// The models the endpoint offers: `GET {base_url}/models?limit=1000`
    /// (the most one page holds), ids in the server's order.
    pub fn models(&self) -> Result<Vec<String>, ProviderError> {
        let headers = self.headers();
        let url = format!("{}/models?limit=1000", self.http.base_url());
        self.http.models(&url, &headers)
    }

    /// The headers every call carries: the API version, and the key when
    /// there is one.
    fn headers(&self) -> Vec<(&'static str, String)> {
        let mut headers = vec![("anthropic-version", ANTHROPIC_VERSION.to_owned())];
        if let Some(key) = self.http.api_key() {
            headers.push(("x-api-key", key.to_owned()));
        }
        headers
    }

    /// The URL requests go to: `{base_url}/messages`.
    pub fn endpoint(&self) -> String {
        format!("{}/messages", self.http.base_url())
    }
}

impl Provider for Anthropic {
    fn complete(
        &self,
        request: &Request,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<Reply, ProviderError> {
        let headers = self.headers();
        self.http
            .exchange::<Messages>(&self.endpoint(), &headers, &request.body, on_text)
    }

    fn name(&self) -> &'static str {
        "anthropic"
    }
}

impl fmt::Debug for Anthropic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.http.debug("Anthropic", f)
    }
}

/// A Messages answer being read.
#[derive(Default)]
struct Messages {
    answer: Answer,
    /// The counts seen so far; later events override earlier ones.
    usage: Option<WireUsage>,
    /// The `input` of server tool blocks as it streams, by block index.
    server_input: std::collections::BTreeMap<u64, String>,
}

impl Messages {
    fn count(&mut self, usage: WireUsage) {
        let before = self.usage.take().unwrap_or_default();
        let merged = WireUsage {
            input_tokens: usage.input_tokens.or(before.input_tokens),
            output_tokens: usage.output_tokens.or(before.output_tokens),
            cache_creation_input_tokens: usage
                .cache_creation_input_tokens
                .or(before.cache_creation_input_tokens),
            cache_read_input_tokens: usage
                .cache_read_input_tokens
                .or(before.cache_read_input_tokens),
        };
        self.answer.usage = merged.usage();
        self.usage = Some(merged);
    }
}

impl Protocol for Messages {
    const END: &'static str = "message_stop";

    fn carries_unkept(event: &SseEvent) -> bool {
        http::holds_text(&event.data, &["thinking", "signature"])
    }

    fn answer(&mut self) -> &mut Answer {
        &mut self.answer
    }

    fn event(
        &mut self,
        url: &str,
        event: SseEvent,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<bool, ProviderError> {
        let partial = |m: &mut Messages| std::mem::take(&mut m.answer.text);
        let mut value: Value = match serde_json::from_str(&event.data) {
            Ok(value) => value,
            Err(e) => return Err(http::bad_event(url, &e, &event.data, partial(self))),
        };
        // The type is in the data; fall back on the event's name.
        if let (Some(object), Some(name)) = (value.as_object_mut(), event.event) {
            object.entry("type").or_insert(Value::String(name));
        }
        let parsed: WireEvent = match serde_json::from_value(value) {
            Ok(parsed) => parsed,
            Err(e) => return Err(http::bad_event(url, &e, &event.data, partial(self))),
        };
        match parsed {
            WireEvent::MessageStart { message } => {
                if let Some(usage) = message.usage {
                    self.count(usage);
                }
            }
            WireEvent::ContentBlockStart {
                index,
                content_block,
            } => match content_block {
                WireBlock::Text { text } => self.answer.push_text(&text, on_text),
                WireBlock::ToolUse { id, name, input } => {
                    let call = self.answer.call(index);
                    call.id = id;
                    call.name = name;
                    // Streamed input comes in deltas; a start block that
                    // already holds some is kept as their beginning.
                    call.arguments = input
                        .filter(|i| i.as_object().is_some_and(|o| !o.is_empty()))
                        .map(|i| i.to_string())
                        .unwrap_or_default();
                }
                WireBlock::Thinking {
                    thinking,
                    signature,
                } => {
                    let block = Thinking::Thinking {
                        thinking,
                        signature,
                    };
                    self.answer.thinking.insert(index, block);
                }
                WireBlock::RedactedThinking { data } => {
                    let block = Thinking::RedactedThinking { data };
                    self.answer.thinking.insert(index, block);
                }
                WireBlock::ServerToolUse(block) => {
                    self.answer
                        .thinking
                        .insert(index, Thinking::ServerToolUse { block });
                }
                WireBlock::WebSearchToolResult(block) => {
                    self.answer
                        .thinking
                        .insert(index, Thinking::WebSearchToolResult { block });
                }
                WireBlock::Other => {}
            },
            WireEvent::ContentBlockDelta { index, delta } => match delta {
                WireDelta::TextDelta { text } => self.answer.push_text(&text, on_text),
                WireDelta::InputJsonDelta { partial_json } => {
                    if let Some(call) = self.answer.calls.get_mut(&index) {
                        call.arguments.push_str(&partial_json);
                    } else if let Some(Thinking::ServerToolUse { block }) =
                        self.answer.thinking.get_mut(&index)
                    {
                        // A server tool's input: whole once it parses.
                        let input = self.server_input.entry(index).or_default();
                        input.push_str(&partial_json);
                        if let Ok(value @ Value::Object(_)) = serde_json::from_str(input) {
                            block.insert("input".into(), value);
                        }
                    }
                }
                WireDelta::ThinkingDelta { thinking: piece } => {
                    if let Some(Thinking::Thinking { thinking, .. }) =
                        self.answer.thinking.get_mut(&index)
                    {
                        thinking.push_str(&piece);
                    }
                }
                WireDelta::SignatureDelta { signature: piece } => {
                    if let Some(Thinking::Thinking { signature, .. }) =
                        self.answer.thinking.get_mut(&index)
                    {
                        signature.push_str(&piece);
                    }
                }
                WireDelta::Other => {}
            },
            WireEvent::MessageDelta { usage, delta } => {
                if let Some(usage) = usage {
                    self.count(usage);
                }
                if delta.and_then(|d| d.stop_reason).as_deref() == Some("max_tokens") {
                    self.answer.truncated = true;
                }
            }
            WireEvent::MessageStop => return Ok(true),
            WireEvent::Error { error } => {
                return Err(http::stream_error(url, &error, partial(self)));
            }
            WireEvent::ContentBlockStop | WireEvent::Ping | WireEvent::Other => {}
        }
        Ok(false)
    }

    fn whole(url: &str, bytes: &[u8]) -> Result<Reply, ProviderError> {
        let text = String::from_utf8_lossy(bytes);
        let message: WireWhole =
            serde_json::from_str(&text).map_err(|e| http::bad_answer(url, &e, &text))?;
        if let Some(error) = message.error {
            return Err(http::answer_error(url, &error));
        }
        let Some(content) = message.content else {
            return Err(ProviderError::new(
                format!("answer from {url} has no content: {}", excerpt(&text, 100)),
                "",
            ));
        };
        let mut answer = Answer {
            usage: message.usage.and_then(|u| u.usage()),
            truncated: message.stop_reason.as_deref() == Some("max_tokens"),
            ..Answer::default()
        };
        for (index, block) in content.into_iter().enumerate() {
            match block {
                WireBlock::Text { text } => answer.text.push_str(&text),
                WireBlock::ToolUse { id, name, input } => {
                    let call = answer.call(index as u64);
                    call.id = id;
                    call.name = name;
                    call.arguments = input.as_ref().map(http::arguments_text).unwrap_or_default();
                }
                WireBlock::Thinking {
                    thinking,
                    signature,
                } => {
                    let block = Thinking::Thinking {
                        thinking,
                        signature,
                    };
                    answer.thinking.insert(index as u64, block);
                }
                WireBlock::RedactedThinking { data } => {
                    let block = Thinking::RedactedThinking { data };
                    answer.thinking.insert(index as u64, block);
                }
                WireBlock::ServerToolUse(block) => {
                    answer
                        .thinking
                        .insert(index as u64, Thinking::ServerToolUse { block });
                }
                WireBlock::WebSearchToolResult(block) => {
                    answer
                        .thinking
                        .insert(index as u64, Thinking::WebSearchToolResult { block });
                }
                WireBlock::Other => {}
            }
        }
        Ok(answer.reply())
    }

    fn unstreamed(body: &str) -> Option<String> {
        http::unstreamed(body, &[])
    }
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireEvent {
    MessageStart {
        message: WireStart,
    },
    ContentBlockStart {
        index: u64,
        content_block: WireBlock,
    },
    ContentBlockDelta {
        index: u64,
        delta: WireDelta,
    },
    ContentBlockStop,
    MessageDelta {
        #[serde(default, deserialize_with = "http::lenient")]
        usage: Option<WireUsage>,
        #[serde(default)]
        delta: Option<WireStop>,
    },
    MessageStop,
    Ping,
    Error {
        error: Value,
    },
    #[serde(other)]
    Other,
}

/// The `delta` of a `message_delta`.
#[derive(Deserialize)]
struct WireStop {
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireStart {
    #[serde(default, deserialize_with = "http::lenient")]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireBlock {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        #[serde(default)]
        id: String,
        #[serde(default)]
        name: String,
        #[serde(default)]
        input: Option<Value>,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
        #[serde(default)]
        signature: String,
    },
    RedactedThinking {
        #[serde(default)]
        data: String,
    },
    /// The server's own tool called (web search), kept whole.
    ServerToolUse(serde_json::Map<String, Value>),
    /// A web search's results, kept whole.
    WebSearchToolResult(serde_json::Map<String, Value>),
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireDelta {
    TextDelta {
        text: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    ThinkingDelta {
        thinking: String,
    },
    SignatureDelta {
        signature: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct WireWhole {
    #[serde(default)]
    content: Option<Vec<WireBlock>>,
    #[serde(default, deserialize_with = "http::lenient")]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    stop_reason: Option<String>,
}

/// A `usage` object. Usage is advisory: a count that is not a sensible
/// number (see [`http::token_count`]) is read as missing, and a `usage`
/// that is not an object at all as none.
#[derive(Clone, Copy, Default, Deserialize)]
struct WireUsage {
    #[serde(default, deserialize_with = "http::token_count")]
    input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "http::token_count")]
    output_tokens: Option<u64>,
    #[serde(default, deserialize_with = "http::token_count")]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default, deserialize_with = "http::token_count")]
    cache_read_input_tokens: Option<u64>,
}

impl WireUsage {
    /// The counts, when at least one input count read sensibly; otherwise
    /// none, and core estimates them.
    fn usage(&self) -> Option<Usage> {
        let input = [
            self.input_tokens,
            self.cache_creation_input_tokens,
            self.cache_read_input_tokens,
        ];
        input.iter().any(Option::is_some).then(|| Usage {
            prompt_tokens: input
                .iter()
                .flatten()
                .fold(0u64, |a, b| a.saturating_add(*b)),
            completion_tokens: self.output_tokens.unwrap_or(0),
            cache_read_tokens: self.cache_read_input_tokens.unwrap_or(0),
            cache_write_tokens: self.cache_creation_input_tokens.unwrap_or(0),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use revolve_core::request::Wire;
    use revolve_core::{Message, ToolCall};

    use super::*;
    use crate::testing::run;
    use crate::FailureKind;
    use revolve_testkit::{FakeReply, FakeServer};

    fn fake(replies: Vec<FakeReply>) -> (FakeServer, Anthropic) {
        let server = FakeServer::start_anthropic(replies).unwrap();
        let provider = Anthropic::new(format!("{}/", server.url()), Some("sk-ant-secret".into()));
        (server, provider)
    }

    fn calls(reply: &Reply) -> Vec<(&str, &str, &str)> {
        reply
            .tool_calls
            .iter()
            .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
            .collect()
    }

    fn garbage(events: &[(&str, &str)]) -> FakeReply {
        let body: String = events
            .iter()
            .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
            .collect();
        FakeReply::Garbage(body)
    }

    #[test]
    fn a_web_search_is_kept_as_its_two_blocks_and_calls_nothing() {
        let (_server, provider) = fake(vec![FakeReply::Searches {
            query: "rust ureq".into(),
            results: vec![("ureq".into(), "https://docs.rs/ureq".into())],
            reply: Box::new(FakeReply::text("Found it.")),
        }]);
        let reply = run(&provider).0.unwrap();
        assert_eq!(reply.text, "Found it.");
        assert!(reply.tool_calls.is_empty(), "{:?}", reply.tool_calls);
        let [Thinking::ServerToolUse { block: used }, Thinking::WebSearchToolResult { block: found }] =
            &reply.thinking[..]
        else {
            panic!("{:?}", reply.thinking);
        };
        assert_eq!(used["name"], "web_search");
        assert_eq!(used["input"], serde_json::json!({"query": "rust ureq"}));
        assert_eq!(found["tool_use_id"], used["id"]);
        assert_eq!(found["content"][0]["url"], "https://docs.rs/ureq");
    }

    #[test]
    fn anthropic_text_and_tool_use_round_trip() {
        let (server, provider) = fake(vec![
            FakeReply::tool_calls(
                "Let me read it.",
                &[
                    ("toolu_1", "read_file", r#"{"path":"a.txt","limit":5}"#),
                    ("toolu_2", "agent_info", ""),
                ],
            ),
            FakeReply::text("It says hi."),
        ]);
        let at = time::macros::datetime!(2026-12-02 10:00 UTC);
        let mut history = vec![Message::user(at, "read a.txt")];
        let request = Request::build(Wire::Anthropic, "claude", Some("sys"), &history);
        let mut pieces = Vec::new();
        let reply = provider
            .complete(&request, &mut |p| pieces.push(p.to_owned()))
            .unwrap();
        assert_eq!(reply.text, "Let me read it.");
        assert_eq!(pieces, ["Let", " me", " read", " it."]);
        assert_eq!(
            calls(&reply),
            [
                ("toolu_1", "read_file", r#"{"path":"a.txt","limit":5}"#),
                ("toolu_2", "agent_info", "{}"),
            ]
        );
        assert_eq!(
            reply.usage,
            Some(Usage {
                prompt_tokens: 10,
                completion_tokens: 2,
                ..Default::default()
            })
        );

        // The calls go back in the next request, with their results.
        history.push(Message {
            tool_calls: reply.tool_calls.clone(),
            ..Message::assistant(at, reply.text)
        });
        history.push(Message::tool(at, "toolu_1", "hi"));
        history.push(Message::tool(at, "toolu_2", "session s1"));
        let second = Request::build(Wire::Anthropic, "claude", Some("sys"), &history);
        let reply = provider.complete(&second, &mut |_| {}).unwrap();
        assert_eq!(reply.text, "It says hi.");
        assert!(reply.tool_calls.is_empty());

        let recorded = server.requests();
        assert_eq!(recorded.len(), 2);
        for (r, sent) in recorded.iter().zip([&request, &second]) {
            assert_eq!(
                (r.method.as_str(), r.path.as_str()),
                ("POST", "/v1/messages")
            );
            assert_eq!(r.body, sent.body);
            assert_eq!(r.header("x-api-key"), Some("sk-ant-secret"));
            assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
            assert_eq!(r.header("content-type"), Some("application/json"));
            assert_eq!(r.header("accept"), Some("text/event-stream"));
            assert_eq!(r.header("authorization"), None);
        }
        assert!(recorded[1]
            .body
            .contains(r#""input":{"limit":5,"path":"a.txt"}"#));
        assert_eq!(provider.name(), "anthropic");
    }

    #[test]
    fn anthropic_without_a_key_and_debug() {
        let server = FakeServer::start_anthropic(vec![FakeReply::text("x")]).unwrap();
        let provider = Anthropic::new(server.url(), Some(String::new()));
        assert_eq!(run(&provider).0.unwrap().text, "x");
        assert_eq!(server.requests()[0].header("x-api-key"), None);
        let provider = Anthropic::new(
            "https://api.anthropic.com/v1/",
            Some("sk-ant-secret".into()),
        );
        assert_eq!(provider.endpoint(), "https://api.anthropic.com/v1/messages");
        let shown = format!("{provider:?}");
        assert!(
            shown.starts_with("Anthropic {")
                && shown.contains("[hidden]")
                && !shown.contains("sk-ant"),
            "{shown}"
        );
    }

    #[test]
    fn anthropic_usage_counts_cache_tokens() {
        let start = r#"{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"usage":{"input_tokens":3,"cache_creation_input_tokens":100,"cache_read_input_tokens":20,"output_tokens":1}}}"#;
        let (_server, provider) = fake(vec![garbage(&[
            ("message_start", start),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}"#,
            ),
            (
                "content_block_stop",
                r#"{"type":"content_block_stop","index":0}"#,
            ),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":"Hi"}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":" there"}}"#,
            ),
            (
                "content_block_stop",
                r#"{"type":"content_block_stop","index":1}"#,
            ),
            ("brand_new_event", r#"{"type":"brand_new_event","x":1}"#),
            (
                "message_delta",
                r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":9}}"#,
            ),
            ("message_stop", r#"{"type":"message_stop"}"#),
        ])]);
        let (reply, pieces) = run(&provider);
        let reply = reply.unwrap();
        assert_eq!(pieces, ["Hi", " there"]);
        assert_eq!(reply.text, "Hi there");
        assert_eq!(
            reply.usage,
            Some(Usage {
                prompt_tokens: 123,
                completion_tokens: 9,
                cache_read_tokens: 20,
                cache_write_tokens: 100,
            })
        );
    }

    #[test]
    fn anthropic_thinking_blocks_are_kept_whole_and_not_shown() {
        let start = r#"{"type":"message_start","message":{"usage":{"input_tokens":3}}}"#;
        let (_server, provider) = fake(vec![garbage(&[
            ("message_start", start),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Look "}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"first."}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB=="}}"#,
            ),
            (
                "content_block_stop",
                r#"{"type":"content_block_stop","index":0}"#,
            ),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"ZW5j"}}"#,
            ),
            (
                "content_block_stop",
                r#"{"type":"content_block_stop","index":1}"#,
            ),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"list_dir","input":{}}}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"path\":\".\"}"}}"#,
            ),
            (
                "content_block_stop",
                r#"{"type":"content_block_stop","index":2}"#,
            ),
            ("message_stop", r#"{"type":"message_stop"}"#),
        ])]);
        let (reply, pieces) = run(&provider);
        let reply = reply.unwrap();
        assert!(pieces.is_empty(), "{pieces:?}");
        assert_eq!(
            reply.thinking,
            [
                Thinking::Thinking {
                    thinking: "Look first.".into(),
                    signature: "EqQB==".into(),
                },
                Thinking::RedactedThinking {
                    data: "ZW5j".into()
                },
            ]
        );
        assert_eq!(calls(&reply), [("toolu_1", "list_dir", r#"{"path":"."}"#)]);
    }

    #[test]
    fn anthropic_error_event_fails_with_its_message() {
        let (server, provider) = fake(vec![
            garbage(&[
                (
                    "message_start",
                    r#"{"type":"message_start","message":{"usage":{"input_tokens":3}}}"#,
                ),
                (
                    "content_block_start",
                    r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
                ),
                (
                    "content_block_delta",
                    r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Par"}}"#,
                ),
                (
                    "error",
                    r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
                ),
            ]),
            garbage(&[(
                "error",
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"bad\nthing"}}"#,
            )]),
            garbage(&[("message_start", "{not json")]),
        ]);
        let url = format!("{}/messages", server.url());
        let (result, pieces) = run(&provider);
        let err = result.unwrap_err();
        assert_eq!(
            err.message,
            format!("error in stream from {url}: Overloaded")
        );
        assert_eq!(
            (err.partial.as_str(), pieces),
            ("Par", vec!["Par".to_owned()])
        );
        assert!(err.kind == FailureKind::Broken && err.failure().streamed);

        let err = run(&provider).0.unwrap_err();
        assert_eq!(
            err.message,
            format!("error in stream from {url}: bad thing")
        );
        assert_ne!(err.kind, FailureKind::Broken);

        let err = run(&provider).0.unwrap_err();
        assert!(
            err.message
                .starts_with(&format!("bad JSON in stream from {url}: ")),
            "{err}"
        );
    }

    #[test]
    fn anthropic_cut_and_stalled_streams_keep_the_partial_text() {
        let (server, provider) = fake(vec![
            FakeReply::CutAfter {
                chunks: vec!["Hel".into(), "lo".into()],
            },
            FakeReply::Stall {
                chunks: vec!["Wait".into()],
            },
        ]);
        let url = format!("{}/messages", server.url());
        let (result, pieces) = run(&provider);
        let err = result.unwrap_err();
        assert_eq!(
            err.message,
            format!("stream from {url} ended before message_stop")
        );
        assert_eq!(
            (err.partial.as_str(), pieces),
            ("Hello", vec!["Hel".to_owned(), "lo".to_owned()])
        );
        assert_eq!(err.kind, FailureKind::Broken);

        let provider = provider.with_stall_timeout(Duration::from_millis(300));
        let err = run(&provider).0.unwrap_err();
        assert_eq!(
            err.message,
            format!("stream from {url} stalled: nothing received for 300 ms")
        );
        assert_eq!(err.partial, "Wait");
    }

    #[test]
    fn anthropic_pings_and_empty_deltas_alone_trip_the_stall_timeout() {
        let (server, provider) = fake(vec![FakeReply::Keepalive {
            chunks: vec!["Wait".into()],
            every: Duration::from_millis(50),
        }]);
        let provider = provider.with_stall_timeout(Duration::from_millis(300));
        let err = run(&provider).0.unwrap_err();
        assert_eq!(
            err.message,
            format!(
                "stream from {}/messages stalled: no content received for 300 ms \
                 (only keepalives or empty chunks)",
                server.url()
            )
        );
        assert_eq!(err.partial, "Wait");
        let thinking = r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}"#;
        let event = SseEvent {
            event: Some("content_block_delta".into()),
            data: thinking.into(),
        };
        assert!(Messages::carries_unkept(&event));
    }

    #[test]
    fn anthropic_http_errors_name_status_and_url_not_the_key() {
        let body = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
        let (server, provider) = fake(vec![
            FakeReply::Status {
                code: 529,
                body: body.into(),
                retry_after: Some(4),
            },
            FakeReply::Status {
                code: 401,
                body: "invalid x-api-key sk-ant-secret".into(),
                retry_after: None,
            },
        ]);
        let url = format!("{}/messages", server.url());
        let err = run(&provider).0.unwrap_err();
        assert_eq!(
            err.message,
            format!("HTTP 529 Overloaded from {url} (retry after 4): {body}")
        );
        assert_eq!((err.status, err.retry_after), (Some(529), Some(4)));
        let err = run(&provider).0.unwrap_err();
        assert_eq!(
            err.message,
            format!(
                "HTTP 401 Unauthorized from {url}: the server refused the API key; check it, \
                 and that --base-url {} is the server it is for: invalid x-api-key [key]",
                server.url()
            )
        );
    }

    #[test]
    fn anthropic_reads_a_json_answer() {
        let whole = r#"{"id":"m","type":"message","role":"assistant","content":[
            {"type":"text","text":"Looking."},
            {"type":"tool_use","id":"toolu_9","name":"grep","input":{"pattern":"fn main"}},
            {"type":"tool_use","id":"toolu_10","name":"agent_info","input":{}}],
            "stop_reason":"tool_use","usage":{"input_tokens":5,"cache_read_input_tokens":1,"output_tokens":2}}"#;
        let (server, provider) = fake(vec![
            FakeReply::Json {
                text: "Whole answer".into(),
                usage: Some((5, 2)),
            },
            FakeReply::Status {
                code: 200,
                body: whole.into(),
                retry_after: None,
            },
            FakeReply::Status {
                code: 200,
                body: r#"{"type":"error","error":{"type":"api_error","message":"oops"}}"#.into(),
                retry_after: None,
            },
            FakeReply::Status {
                code: 200,
                body: r#"{"type":"message"}"#.into(),
                retry_after: None,
            },
        ]);
        let (reply, pieces) = run(&provider);
        let reply = reply.unwrap();
        assert_eq!(
            (reply.text.as_str(), pieces),
            ("Whole answer", vec!["Whole answer".to_owned()])
        );
        assert_eq!(
            reply.usage,
            Some(Usage {
                prompt_tokens: 5,
                completion_tokens: 2,
                ..Default::default()
            })
        );

        let reply = run(&provider).0.unwrap();
        assert_eq!(reply.text, "Looking.");
        assert_eq!(
            calls(&reply),
            [
                ("toolu_9", "grep", r#"{"pattern":"fn main"}"#),
                ("toolu_10", "agent_info", "{}"),
            ]
        );
        assert_eq!(reply.usage.map(|u| u.prompt_tokens), Some(6));

        let url = format!("{}/messages", server.url());
        let err = run(&provider).0.unwrap_err();
        assert_eq!(err.message, format!("error from {url}: oops"));
        assert_eq!(err.kind, FailureKind::Broken);
        let err = run(&provider).0.unwrap_err();
        assert!(
            err.message
                .starts_with(&format!("answer from {url} has no content")),
            "{err}"
        );
    }

    #[test]
    fn anthropic_tool_use_without_deltas_or_with_start_input() {
        let (_server, provider) = fake(vec![garbage(&[
            ("message_start", r#"{"type":"message_start","message":{}}"#),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t0","name":"agent_info","input":{}}}"#,
            ),
            (
                "content_block_stop",
                r#"{"type":"content_block_stop","index":0}"#,
            ),
            (
                "content_block_start",
                r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t1","name":"list_dir","input":{"path":"."}}}"#,
            ),
            (
                "content_block_stop",
                r#"{"type":"content_block_stop","index":1}"#,
            ),
            (
                "content_block_delta",
                r#"{"type":"content_block_delta","index":7,"delta":{"type":"input_json_delta","partial_json":"{}"}}"#,
            ),
            ("message_stop", r#"{"type":"message_stop"}"#),
        ])]);
        let reply = run(&provider).0.unwrap();
        assert_eq!(
            reply.tool_calls,
            [
                ToolCall {
                    id: "t0".into(),
                    name: "agent_info".into(),
                    arguments: "{}".into()
                },
                ToolCall {
                    id: "t1".into(),
                    name: "list_dir".into(),
                    arguments: r#"{"path":"."}"#.into()
                },
            ]
        );
        assert_eq!(reply.usage, None);
    }

    #[test]
    fn anthropic_max_tokens_marks_the_reply_truncated() {
        let whole = r#"{"id":"m","type":"message","role":"assistant","content":[{"type":"text","text":"Cut sh"}],"stop_reason":"max_tokens","usage":{"input_tokens":5,"output_tokens":2}}"#;
        let (_server, provider) = fake(vec![
            FakeReply::Length {
                chunks: vec!["Cut".into(), " sho".into()],
                usage: Some((10, 2)),
            },
            FakeReply::Status {
                code: 200,
                body: whole.into(),
                retry_after: None,
            },
            FakeReply::text("Whole."),
        ]);
        let reply = run(&provider).0.unwrap();
        assert_eq!((reply.text.as_str(), reply.truncated), ("Cut sho", true));
        assert_eq!(reply.usage.map(|u| u.completion_tokens), Some(2));
        let reply = run(&provider).0.unwrap();
        assert_eq!((reply.text.as_str(), reply.truncated), ("Cut sh", true));
        assert!(!run(&provider).0.unwrap().truncated);
    }

    #[test]
    fn anthropic_an_empty_stream_is_asked_again_unstreamed() {
        let body = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"}}"#;
        let (server, provider) = fake(vec![
            FakeReply::Garbage(String::new()),
            FakeReply::Status {
                code: 400,
                body: body.into(),
                retry_after: None,
            },
            FakeReply::Garbage(": ping\n\n".into()),
            FakeReply::Json {
                text: "Whole".into(),
                usage: None,
            },
        ]);
        let err = run(&provider).0.unwrap_err();
        assert_eq!(err.overflow().and_then(|o| o.limit), Some(200_000));
        assert!(err.overflow().is_some() && err.status == Some(400));
        let sent = server.requests();
        assert_eq!(sent.len(), 2);
        let again: Value = serde_json::from_str(&sent[1].body).unwrap();
        assert_eq!(again["stream"], false);
        assert_eq!(sent[1].header("accept"), Some("application/json"));

        let (reply, pieces) = run(&provider);
        assert_eq!(reply.unwrap().text, "Whole");
        assert_eq!(pieces, ["Whole"]);
        assert_eq!(server.requests().len(), 4);
    }

    #[test]
    fn anthropic_requests_share_one_kept_alive_connection() {
        use revolve_testkit::{FakeOptions, FakeProtocol};
        let options = FakeOptions {
            keep_alive: true,
            ..FakeOptions::default()
        };
        let replies = vec![
            FakeReply::text("One."),
            FakeReply::tool_calls("Two.", &[("t1", "agent_info", "{}")]),
            FakeReply::Json {
                text: "Three.".into(),
                usage: None,
            },
        ];
        let server =
            FakeServer::start_with_options(FakeProtocol::Anthropic, replies, options).unwrap();
        let provider = Anthropic::new(server.url(), None);
        assert_eq!(run(&provider).0.unwrap().text, "One.");
        assert_eq!(run(&provider).0.unwrap().tool_calls.len(), 1);
        assert_eq!(run(&provider).0.unwrap().text, "Three.");
        assert_eq!(server.connections(), 1);
    }
}
