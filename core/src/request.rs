//! Model requests, built in core so that replay rebuilds them byte for byte.
//!
//! The body is the exact JSON the shell sends; the shell adds only transport
//! (URL, headers, key). Three wire protocols: OpenAI Chat Completions (also
//! spoken by Ollama, llama.cpp, vLLM, OpenRouter, and read by the scripted
//! provider), Anthropic Messages, and Google's Gemini API ([`gemini`]).

use std::fmt;
use std::io;
use std::sync::Arc;

use serde::Serialize;
use serde_json::{json, Value};

use crate::models::Effort;
use crate::record::{Image, McpTool, Message, Role, Thinking};
use crate::tools;

mod body;
mod count;
mod elements;
pub mod gemini;
mod responses;
mod wires;
use body::Elements;
pub use body::{Body, BodyReader};
use wires::*;

/// The wire protocol of a provider.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Wire {
    /// OpenAI Chat Completions (`POST /chat/completions`).
    OpenAi,
    /// Anthropic Messages (`POST /messages`).
    Anthropic,
    /// Google's Gemini API (`POST /models/MODEL:streamGenerateContent`).
    Gemini,
    /// OpenAI Responses (`POST /responses`, issue 45; see
    /// `request::responses`).
    Responses,
}

impl Wire {
    /// The wire a provider name speaks (as written in the header).
    pub fn of(provider: &str) -> Wire {
        match provider {
            "anthropic" => Wire::Anthropic,
            "gemini" => Wire::Gemini,
            "openai-responses" => Wire::Responses,
            _ => Wire::OpenAi,
        }
    }

    /// Whether the provider has a web search tool of its own on this
    /// wire (Anthropic's, the Responses API's; not Chat Completions).
    pub fn searches(self) -> bool {
        matches!(self, Wire::Anthropic | Wire::Responses)
    }
}

pub use crate::record::ToolChoice;

/// `max_tokens` of Anthropic requests of version-1 logs (the API requires
/// one); later requests say the room the window keeps ([`AnswerLimit`]).
pub(crate) const ANTHROPIC_MAX_TOKENS: u32 = 8192;

/// How long an answer may be, in tokens, and the body's field that says it:
/// the room the compaction point keeps below the window, so a request that
/// fits, plus its answer, fits the window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AnswerLimit {
    /// The body's key: `max_completion_tokens` for OpenAI's reasoning
    /// models (`o1`, `o3`, `o4`, `gpt-5` and their variants), which refuse
    /// `max_tokens`; `max_tokens` for every other model and server
    /// (llama.cpp's servers do not know the newer name). Decided by the
    /// model, not the provider, so a recorded session replayed through
    /// `--provider replay:NAME` sends the same bytes.
    pub field: &'static str,
    /// The most tokens the answer may hold.
    pub tokens: u64,
}

impl AnswerLimit {
    /// The limit of `tokens` for a model, in a log of this build's format.
    pub fn of(model: &str, tokens: u64) -> AnswerLimit {
        AnswerLimit::of_version(model, tokens, crate::record::FORMAT_VERSION)
    }

    /// The limit of `tokens` for a model, as a log of format `version`
    /// wrote it: before [`crate::record::POINT_RELEASE_VERSION`], the
    /// `gpt-5.N` point releases were not known as reasoning models.
    pub(crate) fn of_version(model: &str, tokens: u64, version: u32) -> AnswerLimit {
        let name = model.rsplit('/').next().unwrap_or(model);
        let point = version >= crate::record::POINT_RELEASE_VERSION;
        let reasoning = ["o1", "o3", "o4", "gpt-5"].iter().any(|family| {
            name == *family
                || name.starts_with(&format!("{family}-"))
                || (point && *family == "gpt-5" && name.starts_with("gpt-5."))
        });
        let field = if reasoning {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        AnswerLimit { field, tokens }
    }
}

/// One model request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Request {
    /// The model asked.
    pub model: String,
    /// The protocol `body` is written in.
    pub wire: Wire,
    /// The exact body sent: one line of JSON (keys sorted, so the same
    /// history always gives the same bytes), streaming, with usage asked
    /// for, offering every tool; written as it is sent (see [`Body`]).
    pub body: Body,
    /// How many messages of the history it carries (system prompt excluded).
    pub messages: usize,
    /// Its number in the session, from 1 (a scripted provider answers
    /// request N with reply N).
    pub seq: u64,
}

/// What the prompt cache is told: set from format version 3 on (see
/// [`crate::record::CACHE_VERSION`]), so older files rebuild their
/// requests as they were sent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cache {
    /// Anthropic: mark `cache_control` breakpoints (the tools, the system
    /// prompt, the end of the history the previous request sent, and the
    /// end of this one), so each request reads what the one before it
    /// wrote. Nothing on the Chat Completions wire.
    pub breakpoints: bool,
    /// Chat Completions: `prompt_cache_key`, which OpenAI's API uses to
    /// send a session's requests to the machines that hold its prefix.
    /// Set only for the `openai` preset: other servers get nothing new.
    pub key: Option<String>,
}

/// Everything a request carries besides its model, system prompt and
/// history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shape {
    /// How long the answer may be, when the body says it.
    pub limit: Option<AnswerLimit>,
    /// Whether the tools are offered.
    pub tools: bool,
    /// What the prompt cache is told.
    pub cache: Cache,
    /// The MCP servers' tools, offered after revolve's own when the tools
    /// are (see [`crate::mcp`]).
    pub mcp: Vec<McpTool>,
    /// How hard a reasoning model thinks (`--effort`, `/effort`): OpenAI's
    /// `reasoning_effort` on the Chat Completions wire.
    pub effort: Option<Effort>,
    /// Anthropic's extended thinking (see [`Think`]): the body asks it,
    /// its `max_tokens` is raised by the effort's budget (thinking counts
    /// towards it, and the API wants a budget below it: the answer keeps
    /// the room it had), and the assistant messages' thinking blocks go
    /// back before their text and tool calls, as the API requires while
    /// tools are used. Without it, thinking blocks are not sent. Nothing
    /// on the Chat Completions wire.
    pub thinking: Option<Think>,
    /// The built-in tools offered, by name (a subagent's, from its
    /// `spawned` record); `None`: all of them.
    pub builtin: Option<Vec<String>>,
    /// `tool_choice` of this request, when it is asked (see
    /// [`ToolChoice`]); only on the Chat Completions wire, with tools.
    pub tool_choice: Option<ToolChoice>,
    /// The provider's web search tool, at most this many searches an
    /// answer (issue 44, `--allow web_search`): Anthropic's
    /// `web_search_20250305` first among the tools, the Responses API's
    /// `{"type": "web_search"}` last; nothing on the Chat Completions wire.
    pub web_search: Option<u32>,
    /// Whether a call whose arguments are not a JSON object goes back
    /// inside one on the Chat Completions wire ([`sent_arguments`]; logs
    /// of version 6 on).
    pub objects: bool,
    /// Whether revolve's own tools are offered in brief ([`tools::brief`]):
    /// under a small window, for logs of version 7 on.
    pub brief: bool,
}

/// A call's arguments as the Chat Completions wire sends them back: as
/// the model wrote them, or, when `objects` and they are not a JSON
/// object, that text inside one as `{"unparsed_arguments": TEXT}`: a
/// server that parses the history, as llama.cpp's does, refuses a request
/// holding arguments it cannot read, and the model still sees what it
/// wrote (or how a call too large for the window was cut); the call's
/// result says what was wrong.
pub(crate) fn sent_arguments(arguments: &str, objects: bool) -> std::borrow::Cow<'_, str> {
    let object = || {
        serde_json::from_str::<Value>(arguments)
            .ok()
            .is_some_and(|v| v.is_object())
    };
    if !objects || object() {
        arguments.into()
    } else {
        json!({ "unparsed_arguments": arguments })
            .to_string()
            .into()
    }
}

/// How an Anthropic request thinks at an effort, decided by the model (not
/// the provider, so a recorded session replayed through `--provider
/// replay:NAME` sends the same bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Think {
    /// `"thinking": {"type": "enabled", "budget_tokens": N}`, N from
    /// [`Effort::thinking_budget`]: the manual mode, the only one of the
    /// models before Claude 4.6 (and of names that are not Claude's).
    Budget(u64),
    /// `"thinking": {"type": "adaptive"}` and `"output_config":
    /// {"effort": LEVEL}`: Claude 4.6 and later, where the model decides
    /// how much to think at that effort (from Opus 4.7 on, a budget is
    /// refused with a 400; on 4.6 it is deprecated).
    Adaptive(Effort),
}

impl Think {
    /// How `model` thinks at `effort`.
    pub fn of(model: &str, effort: Effort) -> Think {
        if adaptive(model) {
            Think::Adaptive(effort)
        } else {
            Think::Budget(effort.thinking_budget())
        }
    }

    /// The tokens `max_tokens` is raised by.
    pub fn budget(self) -> u64 {
        match self {
            Think::Budget(n) => n,
            Think::Adaptive(effort) => effort.thinking_budget(),
        }
    }

    /// The body's fields.
    fn write(self, body: &mut Value) {
        match self {
            Think::Budget(n) => {
                body["thinking"] = json!({"type": "enabled", "budget_tokens": n});
            }
            Think::Adaptive(effort) => {
                body["thinking"] = json!({"type": "adaptive"});
                body["output_config"] = json!({"effort": effort.as_str()});
            }
        }
    }
}

/// Whether a model thinks adaptively: a Claude model named
/// `claude-FAMILY-MAJOR[-MINOR][-DATE]` of version 4.6 or later. Older
/// names (`claude-3-7-sonnet-…`, `claude-sonnet-4-5`, `claude-opus-4-…`)
/// and other names think on a budget.
fn adaptive(model: &str) -> bool {
    let name = model.rsplit('/').next().unwrap_or(model);
    let Some(rest) = name.strip_prefix("claude-") else {
        return false;
    };
    let mut parts = rest.split('-');
    let family = parts.next().unwrap_or("");
    if family.is_empty() || family.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    let number = |p: Option<&str>| {
        p.filter(|p| (1..=2).contains(&p.len()))
            .and_then(|p| p.parse::<u32>().ok())
    };
    let Some(major) = number(parts.next()) else {
        return false;
    };
    let minor = number(parts.next()).unwrap_or(0);
    (major, minor) >= (4, 6)
}

impl Shape {
    /// Tools offered, the answer limited to `limit`, no cache marks.
    pub fn limited(limit: Option<AnswerLimit>) -> Shape {
        Shape {
            limit,
            tools: true,
            cache: Cache::default(),
            mcp: Vec::new(),
            effort: None,
            thinking: None,
            builtin: None,
            tool_choice: None,
            web_search: None,
            objects: true,
            brief: false,
        }
    }
}

/// The mark of a cache breakpoint (Anthropic's only kind, five minutes).
fn breakpoint() -> Value {
    json!({"type": "ephemeral"})
}

impl Request {
    /// The request for this system prompt and history, leaving the
    /// answer's length to the server (Anthropic's to
    /// [`ANTHROPIC_MAX_TOKENS`]): as version-1 logs were sent.
    pub fn build(wire: Wire, model: &str, system: Option<&str>, history: &[Message]) -> Request {
        Request::limited(wire, model, system, history, None)
    }

    /// The request for this system prompt and history, its answer limited
    /// to `limit` when given (see [`AnswerLimit`]), nothing marked for the
    /// cache: as version-2 logs were sent.
    pub fn limited(
        wire: Wire,
        model: &str,
        system: Option<&str>,
        history: &[Message],
        limit: Option<AnswerLimit>,
    ) -> Request {
        Request::shaped(wire, model, system, history, &Shape::limited(limit))
    }

    /// [`Request::limited`] offering no tools: a summary request whose
    /// history is one transcript message, when the tool definitions do
    /// not fit beside it.
    pub fn toolless(
        wire: Wire,
        model: &str,
        system: Option<&str>,
        history: &[Message],
        limit: Option<AnswerLimit>,
    ) -> Request {
        let shape = Shape {
            tools: false,
            ..Shape::limited(limit)
        };
        Request::shaped(wire, model, system, history, &shape)
    }

    /// The request for this system prompt and history, in this shape.
    pub(crate) fn shaped(
        wire: Wire,
        model: &str,
        system: Option<&str>,
        history: impl Into<Shared>,
        shape: &Shape,
    ) -> Request {
        let history = history.into();
        let messages = history.get().len();
        Request {
            model: model.to_owned(),
            wire,
            body: Body::of(wire, model, system, history, shape),
            messages,
            seq: 0,
        }
    }

    /// A token estimate for this request when the provider gives no count:
    /// one token per four bytes of body (its [`Body::weight`]), rounded
    /// up. Documented, crude, and on the safe side for English text and
    /// code.
    pub fn estimated_tokens(&self) -> u64 {
        (self.body.weight() as u64).div_ceil(4)
    }
}

/// Messages a request carries: a prefix of a history it shares with the
/// state (the turn's request copies nothing), or its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shared {
    messages: Arc<Vec<Message>>,
    upto: usize,
}

impl Shared {
    /// The whole of `messages`, shared.
    pub fn of(messages: &Arc<Vec<Message>>) -> Shared {
        Shared {
            messages: Arc::clone(messages),
            upto: messages.len(),
        }
    }

    fn get(&self) -> &[Message] {
        &self.messages[..self.upto]
    }
}

impl From<&[Message]> for Shared {
    fn from(history: &[Message]) -> Shared {
        Shared::from(history.to_vec())
    }
}

impl From<&Vec<Message>> for Shared {
    fn from(history: &Vec<Message>) -> Shared {
        Shared::from(history.as_slice())
    }
}

impl<const N: usize> From<&[Message; N]> for Shared {
    fn from(history: &[Message; N]) -> Shared {
        Shared::from(history.as_slice())
    }
}

impl From<Vec<Message>> for Shared {
    fn from(history: Vec<Message>) -> Shared {
        let upto = history.len();
        Shared {
            messages: Arc::new(history),
            upto,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::ToolCall;
    use time::macros::datetime;

    fn history() -> Vec<Message> {
        let at = datetime!(2026-12-02 10:00 UTC);
        let call = ToolCall {
            id: "c1".into(),
            name: "read_file".into(),
            arguments: r#"{"path":"a"}"#.into(),
        };
        vec![
            Message::user(at, "hi"),
            Message {
                tool_calls: vec![call],
                ..Message::assistant(at, "")
            },
            Message::tool(at, "c1", "contents"),
            Message::assistant(at, "done"),
            Message::user(at, "again"),
        ]
    }

    #[test]
    fn openai_body() {
        let r = Request::build(Wire::OpenAi, "m", Some("sys"), &history());
        let v: Value = serde_json::from_str(&r.body.text()).unwrap();
        assert!(r.body.text().contains(r#""messages":[{"content":"sys","role":"system"},{"content":"hi","role":"user"},{"content":null,"role":"assistant","tool_calls":[{"function":{"arguments":"{\"path\":\"a\"}","name":"read_file"},"id":"c1","type":"function"}]},{"content":"contents","role":"tool","tool_call_id":"c1"}"#), "{}", r.body);
        assert_eq!(v["model"], "m");
        assert_eq!(v["stream"], true);
        assert_eq!(v["stream_options"]["include_usage"], true);
        assert_eq!(v["tools"][0]["function"]["name"], "read_file");
        assert_eq!(r.messages, 5);
    }

    /// Arguments a model cut short (it rambled to its answer's limit) go
    /// back inside an object in logs of version 6 on, as written before.
    #[test]
    fn arguments_that_are_no_object_go_back_inside_one() {
        let at = time::macros::datetime!(2026-12-06 17:30 UTC);
        let cut = ToolCall {
            id: "c1".into(),
            name: "list_dir".into(),
            arguments: "{\"path\": \"current_dir/master/master/mas".into(),
        };
        let history = [
            Message::user(at, "list"),
            Message {
                tool_calls: vec![cut],
                ..Message::assistant(at, "")
            },
            Message::tool(at, "c1", "error: bad arguments for list_dir: EOF"),
        ];
        let sent = |objects| {
            let shape = Shape {
                objects,
                ..Shape::limited(None)
            };
            let body = Request::shaped(Wire::OpenAi, "m", None, &history, &shape)
                .body
                .text();
            let v: Value = serde_json::from_str(&body).unwrap();
            v["messages"][1]["tool_calls"][0]["function"]["arguments"].clone()
        };
        assert_eq!(
            sent(true),
            json!(r#"{"unparsed_arguments":"{\"path\": \"current_dir/master/master/mas"}"#)
        );
        assert_eq!(
            sent(false),
            json!("{\"path\": \"current_dir/master/master/mas")
        );
    }

    #[test]
    fn anthropic_body_alternates_roles() {
        let r = Request::build(Wire::Anthropic, "claude", Some("sys"), &history());
        let v: Value = serde_json::from_str(&r.body.text()).unwrap();
        assert_eq!(
            (&v["model"], &v["max_tokens"], &v["system"]),
            (&json!("claude"), &json!(8192), &json!("sys"))
        );
        let roles: Vec<&str> = v["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["user", "assistant", "user", "assistant", "user"]);
        assert_eq!(v["messages"][1]["content"][0]["type"], "tool_use");
        assert_eq!(v["messages"][1]["content"][0]["input"]["path"], "a");
        assert_eq!(v["messages"][2]["content"][0]["tool_use_id"], "c1");
        assert_eq!(v["tools"][0]["input_schema"]["type"], "object");
    }
}

#[cfg(test)]
mod limit_tests {
    use super::*;

    #[test]
    fn thinking_asks_its_budget_raises_max_tokens_and_sends_blocks_back() {
        let at = time::macros::datetime!(2026-12-05 10:00 UTC);
        let call = crate::record::ToolCall {
            id: "toolu_1".into(),
            name: "list_dir".into(),
            arguments: r#"{"path":"."}"#.into(),
        };
        let msgs = [
            Message::user(at, "look"),
            Message {
                tool_calls: vec![call],
                thinking: vec![
                    Thinking::Thinking {
                        thinking: "Look first.".into(),
                        signature: "c2ln".into(),
                    },
                    Thinking::RedactedThinking {
                        data: "ZW5j".into(),
                    },
                ],
                ..Message::assistant(at, "")
            },
            Message::tool(at, "toolu_1", "a.rs"),
        ];
        let shape = Shape {
            effort: Some(Effort::High),
            thinking: Some(Think::of("claude", Effort::High)),
            ..Shape::limited(Some(AnswerLimit::of("claude", 20_000)))
        };
        let body: Value = serde_json::from_str(
            &Request::shaped(Wire::Anthropic, "claude", None, &msgs[..], &shape)
                .body
                .text(),
        )
        .unwrap();
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": 24_576})
        );
        // The answer keeps its room; the budget is below max_tokens.
        assert_eq!(body["max_tokens"], 20_000 + 24_576);
        assert!(body.get("temperature").is_none());
        assert_eq!(
            body["messages"][1]["content"],
            json!([
                {"type": "thinking", "thinking": "Look first.", "signature": "c2ln"},
                {"type": "redacted_thinking", "data": "ZW5j"},
                {"type": "tool_use", "id": "toolu_1", "name": "list_dir", "input": {"path": "."}},
            ])
        );
        // Thinking off: no budget, and the blocks are not sent.
        let off = Request::shaped(
            Wire::Anthropic,
            "claude",
            None,
            &msgs[..],
            &Shape::limited(Some(AnswerLimit::of("claude", 20_000))),
        );
        let text = off.body.text();
        assert!(!text.contains("thinking"), "{text}");
        assert!(text.contains(r#""max_tokens":20000"#), "{text}");
        // The Chat Completions wire gets nothing of it.
        let openai = Request::shaped(Wire::OpenAi, "o3", None, &msgs[..], &shape);
        assert!(!openai.body.text().contains("thinking"));
        assert!(!openai.body.text().contains("signature"));
        // Claude 4.6 and later think adaptively at the effort.
        let adaptive_shape = Shape {
            thinking: Some(Think::of("claude-sonnet-5", Effort::Low)),
            ..shape.clone()
        };
        let request = Request::shaped(
            Wire::Anthropic,
            "claude-sonnet-5",
            None,
            &msgs[..],
            &adaptive_shape,
        );
        let body: Value = serde_json::from_str(&request.body.text()).unwrap();
        assert_eq!(body["thinking"], json!({"type": "adaptive"}));
        assert_eq!(body["output_config"], json!({"effort": "low"}));
        assert_eq!(body["max_tokens"], 20_000 + 2_048);
        assert_eq!(body["messages"][1]["content"][0]["type"], "thinking");
        // Which models think adaptively.
        for (model, yes) in [
            ("claude-sonnet-5", true),
            ("claude-opus-4-7", true),
            ("claude-sonnet-4-6", true),
            ("claude-haiku-5-5", true),
            ("claude-mythos-5-1", true),
            ("anthropic/claude-opus-4-8", true),
            ("claude-sonnet-4-5", false),
            ("claude-sonnet-4-5-20250929", false),
            ("claude-opus-4-20250514", false),
            ("claude-3-7-sonnet-20250219", false),
            ("claude", false),
            ("m", false),
        ] {
            assert_eq!(adaptive(model), yes, "{model}");
        }
        // Every level is within the API's bounds.
        for e in [Effort::Low, Effort::Medium, Effort::High] {
            assert!(e.thinking_budget() >= 1_024, "{e:?}");
        }
    }

    #[test]
    fn effort_is_reasoning_effort_on_the_chat_completions_wire_only() {
        let msgs = [Message::user(
            time::macros::datetime!(2026-12-05 10:00 UTC),
            "hi",
        )];
        let shape = Shape {
            effort: Some(Effort::High),
            ..Shape::limited(None)
        };
        let openai = Request::shaped(Wire::OpenAi, "o3", None, &msgs[..], &shape);
        let body: Value = serde_json::from_str(&openai.body.text()).unwrap();
        assert_eq!(body["reasoning_effort"], "high");
        let anthropic = Request::shaped(Wire::Anthropic, "claude", None, &msgs[..], &shape);
        assert!(!anthropic.body.text().contains("effort"));
        assert_eq!(Effort::parse("medium"), Ok(Effort::Medium));
        assert!(Effort::parse("max").is_err());
    }

    #[test]
    fn reasoning_models_get_the_newer_name() {
        for model in [
            "o1",
            "o3-mini",
            "o4-mini",
            "gpt-5",
            "gpt-5-mini",
            "openai/o3",
            "gpt-5.4-mini",
            "openai/gpt-5.6-terra",
        ] {
            assert_eq!(
                AnswerLimit::of(model, 9).field,
                "max_completion_tokens",
                "{model}"
            );
        }
        // A log of version 3 rebuilds them as they were sent.
        assert_eq!(
            AnswerLimit::of_version("gpt-5.4-mini", 9, 3).field,
            "max_tokens"
        );
        assert_eq!(
            AnswerLimit::of_version("gpt-5-mini", 9, 3).field,
            "max_completion_tokens"
        );
        for model in [
            "gpt-4o-mini",
            "smollm2",
            "llama3.2",
            "o1x",
            "claude-sonnet-4-5",
        ] {
            assert_eq!(AnswerLimit::of(model, 9).field, "max_tokens", "{model}");
        }
    }
}

#[cfg(test)]
mod content_tests {
    use super::*;
    use crate::record::ToolCall;
    use time::macros::datetime;

    #[test]
    fn a_calling_answer_has_empty_text_from_version_2_on() {
        let at = datetime!(2026-12-04 10:00 UTC);
        let call = ToolCall {
            id: "c".into(),
            name: "list_dir".into(),
            arguments: "{}".into(),
        };
        let history = [
            Message::user(at, "look"),
            Message {
                tool_calls: vec![call],
                ..Message::assistant(at, "")
            },
            Message::tool(at, "c", "a.txt"),
        ];
        let body = |r: Request| serde_json::from_str::<Value>(&r.body.text()).unwrap();
        let old = body(Request::build(Wire::OpenAi, "m", None, &history));
        assert!(old["messages"][1]["content"].is_null(), "version 1 as sent");
        let limit = Some(AnswerLimit::of("m", 100));
        let new = body(Request::limited(Wire::OpenAi, "m", None, &history, limit));
        assert_eq!(new["messages"][1]["content"], "");
        assert_eq!(new["max_tokens"], 100);
    }
}

#[cfg(test)]
mod cache_tests {
    use super::*;
    use crate::record::ToolCall;
    use quickcheck::quickcheck;
    use time::macros::datetime;

    fn marked() -> Shape {
        Shape {
            cache: Cache {
                breakpoints: true,
                key: Some("20261205-120000-abcdef".into()),
            },
            ..Shape::limited(Some(AnswerLimit::of("m", 100)))
        }
    }

    /// A history of `turns` user messages, each answered by `calls` tool
    /// calls and their results, then a text answer.
    fn history(turns: u8, calls: u8) -> Vec<Message> {
        let at = datetime!(2026-12-05 12:00 UTC);
        let mut history = Vec::new();
        for t in 0..turns {
            history.push(Message::user(at, format!("question {t}")));
            let ids: Vec<String> = (0..calls).map(|c| format!("c{t}-{c}")).collect();
            if !ids.is_empty() {
                history.push(Message {
                    tool_calls: ids
                        .iter()
                        .map(|id| ToolCall {
                            id: id.clone(),
                            name: "read_file".into(),
                            arguments: r#"{"path":"a"}"#.into(),
                        })
                        .collect(),
                    ..Message::assistant(at, "")
                });
                for id in &ids {
                    history.push(Message::tool(at, id, "contents"));
                }
            }
            history.push(Message::assistant(at, "answer"));
        }
        history.push(Message::user(at, "next"));
        history
    }

    fn unmarked(mut value: Value) -> Value {
        match &mut value {
            Value::Object(map) => {
                map.remove("cache_control");
                for v in map.values_mut() {
                    *v = unmarked(v.take());
                }
            }
            Value::Array(items) => {
                for v in items.iter_mut() {
                    *v = unmarked(v.take());
                }
            }
            _ => {}
        }
        value
    }

    #[test]
    fn anthropic_marks_tools_system_and_both_ends() {
        let r = Request::shaped(Wire::Anthropic, "c", Some("sys"), history(2, 2), &marked());
        let v: Value = serde_json::from_str(&r.body.text()).unwrap();
        let mark = json!({"type": "ephemeral"});
        assert_eq!(
            v["system"],
            json!([{"type": "text", "text": "sys", "cache_control": mark}])
        );
        assert_eq!(
            v["tools"].as_array().unwrap().last().unwrap()["cache_control"],
            mark
        );
        let messages = v["messages"].as_array().unwrap();
        let marked: Vec<usize> = (0..messages.len())
            .filter(|&i| messages[i].to_string().contains("cache_control"))
            .collect();
        // user, assistant(calls), user(results), assistant, user(q1), ...:
        // the last message, and the one before the latest answer.
        assert_eq!(marked, [messages.len() - 3, messages.len() - 1]);
        assert!(v.get("prompt_cache_key").is_none(), "not on this wire");
    }

    #[test]
    fn openai_gets_the_key_and_no_marks() {
        let r = Request::shaped(Wire::OpenAi, "m", Some("sys"), history(1, 1), &marked());
        let v: Value = serde_json::from_str(&r.body.text()).unwrap();
        assert_eq!(v["prompt_cache_key"], "20261205-120000-abcdef");
        assert!(!r.body.text().contains("cache_control"));
        let unmarked = Request::limited(Wire::OpenAi, "m", Some("sys"), &history(1, 1), None);
        assert!(!unmarked.body.text().contains("prompt_cache_key"));
    }

    quickcheck! {
        /// The Messages API refuses a fifth breakpoint: whatever the
        /// history, a body carries at most four.
        fn at_most_four_breakpoints(turns: u8, calls: u8, system: bool) -> bool {
            let history = history(turns % 6, calls % 4);
            let system = system.then_some("sys");
            let r = Request::shaped(Wire::Anthropic, "c", system, &history, &marked());
            r.body.text().matches("cache_control").count() <= 4
        }

        /// What the previous request sent begins this one unchanged
        /// (tools, system prompt, its messages: the marks aside, which the
        /// server does not count as content), and this one has a
        /// breakpoint where the previous one ended, so it reads what that
        /// one wrote however many blocks came between.
        fn the_previous_request_begins_this_one(turns: u8, calls: u8) -> bool {
            let history = history(turns % 6 + 1, calls % 4);
            let previous = &history[..history.len() - 2];
            let body = |h: &[Message]| -> Value {
                let r = Request::shaped(Wire::Anthropic, "c", Some("sys"), h, &marked());
                serde_json::from_str(&r.body.text()).unwrap()
            };
            let (old, new) = (body(previous), body(&history));
            let ended = old["messages"].as_array().unwrap().len() - 1;
            let read_there = new["messages"][ended].to_string().contains("cache_control");
            let (old, new) = (unmarked(old), unmarked(new));
            let old_messages = old["messages"].as_array().unwrap();
            let new_messages = new["messages"].as_array().unwrap();
            read_there
                && old["tools"] == new["tools"]
                && old["system"] == new["system"]
                && new_messages[..old_messages.len()] == old_messages[..]
        }
    }
}

/// The builders as they were, a `serde_json::Value` tree of the whole
/// body: the oracle the streaming [`Parts`] must match byte for byte.
#[cfg(test)]
mod oracle {
    use super::*;

    pub(super) fn shaped(
        wire: Wire,
        model: &str,
        system: Option<&str>,
        history: &[Message],
        shape: &Shape,
    ) -> String {
        let mut body = match wire {
            Wire::OpenAi => openai(model, system, history, shape.objects, shape.brief),
            Wire::Anthropic => anthropic(
                model,
                system,
                history,
                shape.thinking.is_some(),
                shape.brief,
            ),
            Wire::Gemini => unreachable!("the oracle holds the two older wires"),
            Wire::Responses => unimplemented!("the oracle holds the two older wires"),
        };
        if !shape.tools {
            if let Some(map) = body.as_object_mut() {
                map.remove("tools");
            }
        }
        if let Some(limit) = shape.limit {
            body[limit.field] = json!(limit.tokens);
            if let Some(messages) = body["messages"].as_array_mut() {
                for m in messages.iter_mut().filter(|m| m["content"].is_null()) {
                    m["content"] = json!("");
                }
            }
        }
        match wire {
            Wire::Anthropic if shape.cache.breakpoints => mark_breakpoints(&mut body),
            Wire::OpenAi => {
                if let Some(key) = &shape.cache.key {
                    body["prompt_cache_key"] = json!(key);
                }
                if let Some(effort) = shape.effort {
                    body["reasoning_effort"] = json!(effort.as_str());
                }
                if let (true, Some(ToolChoice::Required)) = (shape.tools, shape.tool_choice) {
                    body["tool_choice"] = json!("required");
                }
            }
            Wire::Anthropic | Wire::Gemini | Wire::Responses => {}
        }
        let answer = shape
            .limit
            .map_or(u64::from(ANTHROPIC_MAX_TOKENS), |l| l.tokens);
        match (wire, shape.thinking) {
            (Wire::Anthropic, Some(Think::Budget(budget))) => {
                body["max_tokens"] = json!(answer + budget);
                body["thinking"] = json!({"type": "enabled", "budget_tokens": budget});
            }
            (Wire::Anthropic, Some(Think::Adaptive(effort))) => {
                body["max_tokens"] = json!(answer + effort.thinking_budget());
                body["thinking"] = json!({"type": "adaptive"});
                body["output_config"] = json!({"effort": effort.as_str()});
            }
            _ => {}
        }
        body.to_string()
    }

    /// Chat Completions: the system prompt first, tool calls as `tool_calls`,
    /// results as `tool` messages.
    fn openai(
        model: &str,
        system: Option<&str>,
        history: &[Message],
        objects: bool,
        brief: bool,
    ) -> Value {
        let mut messages = Vec::with_capacity(history.len() + 1);
        if let Some(system) = system {
            messages.push(json!({"role": "system", "content": system}));
        }
        for m in history {
            messages.push(match m.role {
                Role::User => json!({"role": "user", "content": m.model_text()}),
                Role::Assistant if m.tool_calls.is_empty() => json!({"role": "assistant", "content": m.content}),
                Role::Assistant => {
                    let calls: Vec<Value> = m
                        .tool_calls
                        .iter()
                        .map(|c| {
                            let object = serde_json::from_str::<Value>(&c.arguments).is_ok_and(|v| v.is_object());
                            let arguments = if objects && !object {
                                json!({"unparsed_arguments": c.arguments}).to_string()
                            } else {
                                c.arguments.clone()
                            };
                            json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": arguments}})
                        })
                        .collect();
                    let content = if m.content.is_empty() { Value::Null } else { Value::from(m.content.as_str()) };
                    json!({"role": "assistant", "content": content, "tool_calls": calls})
                }
                Role::Tool => json!({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content}),
            });
        }
        let tools: Vec<Value> = tools::offered(None, brief)
            .into_iter()
            .map(|d| json!({"type": "function", "function": {"name": d.name, "description": d.description, "parameters": d.parameters}}))
            .collect();
        json!({
            "model": model,
            "messages": messages,
            "tools": tools,
            "stream": true,
            "stream_options": {"include_usage": true},
        })
    }

    /// Anthropic Messages: the system prompt apart, content blocks, tool results
    /// as `tool_result` blocks of a user message, and consecutive messages of one
    /// role merged (the API wants the roles to alternate).
    fn anthropic(
        model: &str,
        system: Option<&str>,
        history: &[Message],
        thinking: bool,
        brief: bool,
    ) -> Value {
        let mut messages: Vec<(&str, Vec<Value>)> = Vec::new();
        for m in history {
            let (role, blocks) = match m.role {
                Role::User => (
                    "user",
                    text_block(&m.model_text()).into_iter().collect::<Vec<_>>(),
                ),
                Role::Tool => (
                    "user",
                    vec![
                        json!({"type": "tool_result", "tool_use_id": m.tool_call_id, "content": m.content}),
                    ],
                ),
                Role::Assistant => {
                    let mut blocks: Vec<Value> = Vec::new();
                    if thinking {
                        for t in m.thinking.iter().filter(|t| t.anthropic()) {
                            blocks.push(serde_json::to_value(t).unwrap());
                        }
                    }
                    blocks.extend(text_block(&m.content));
                    blocks.extend(m.tool_calls.iter().map(|c| {
                        // The API wants the input as an object; a model that wrote
                        // something else gets an empty one (its result says why).
                        let input = serde_json::from_str::<Value>(&c.arguments)
                            .ok()
                            .filter(Value::is_object)
                            .unwrap_or_else(|| json!({}));
                        json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input})
                    }));
                    if m.content.is_empty() && m.tool_calls.is_empty() {
                        blocks.clear();
                    }
                    ("assistant", blocks)
                }
            };
            if blocks.is_empty() {
                continue;
            }
            match messages.last_mut() {
                Some((last, existing)) if *last == role => existing.extend(blocks),
                _ => messages.push((role, blocks)),
            }
        }
        let messages: Vec<Value> = messages
            .into_iter()
            .map(|(role, content)| json!({"role": role, "content": content}))
            .collect();
        let tools: Vec<Value> = tools::offered(None, brief)
            .into_iter()
            .map(
                |d| json!({"name": d.name, "description": d.description, "input_schema": d.parameters}),
            )
            .collect();
        let mut body = json!({
            "model": model,
            "max_tokens": ANTHROPIC_MAX_TOKENS,
            "messages": messages,
            "tools": tools,
            "stream": true,
        });
        if let Some(system) = system {
            body["system"] = json!(system);
        }
        body
    }

    /// The four breakpoints the Messages API allows, on the parts that do not
    /// change from one request to the next: the last tool (so the tools are
    /// read from cache), the system prompt, the last block of the message
    /// that ended the previous request (the one before the latest answer, so
    /// this request reads what that one wrote, however many blocks the answer
    /// and its results added), and the last block of this request (so the
    /// next one reads it). Breakpoints on prefixes shorter than the model's
    /// least cacheable length are ignored by the server, not refused.
    fn mark_breakpoints(body: &mut Value) {
        if let Some(last) = body
            .get_mut("tools")
            .and_then(Value::as_array_mut)
            .and_then(|t| t.last_mut())
        {
            last["cache_control"] = breakpoint();
        }
        if let Some(system) = body.get("system").and_then(Value::as_str) {
            body["system"] =
                json!([{"type": "text", "text": system, "cache_control": breakpoint()}]);
        }
        if let Some(messages) = body["messages"].as_array_mut() {
            let n = messages.len();
            let ends = [n.checked_sub(1), n.checked_sub(3)];
            for i in ends.into_iter().flatten() {
                if let Some(block) = messages[i]["content"]
                    .as_array_mut()
                    .and_then(|blocks| blocks.last_mut())
                {
                    block["cache_control"] = breakpoint();
                }
            }
        }
    }
}

#[cfg(test)]
mod streaming_tests {
    use super::*;
    use crate::record::{Origin, Thinking, ToolCall};
    use quickcheck::{quickcheck, Arbitrary, Gen};
    use time::macros::datetime;

    #[derive(Clone, Debug)]
    struct History(Vec<Message>);

    fn text(g: &mut Gen) -> String {
        let pieces = [
            "",
            "a",
            "hi there",
            "\"q\"",
            "line\nnext",
            "tab\t",
            "é ∑ 😀",
            "\\",
            "\u{1}",
            "</x>",
        ];
        let n = usize::arbitrary(g) % 4;
        (0..n).map(|_| *g.choose(&pieces).unwrap()).collect()
    }

    /// The thinking blocks an assistant message may begin with.
    fn thinking(g: &mut Gen) -> Vec<Thinking> {
        (0..u8::arbitrary(g) % 3)
            .map(|_| {
                if bool::arbitrary(g) {
                    Thinking::Thinking {
                        thinking: text(g),
                        signature: text(g),
                    }
                } else {
                    Thinking::RedactedThinking { data: text(g) }
                }
            })
            .collect()
    }

    impl Arbitrary for History {
        fn arbitrary(g: &mut Gen) -> History {
            let at = datetime!(2026-12-05 13:00 UTC);
            let n = usize::arbitrary(g) % 12;
            let history = (0..n)
                .map(|i| {
                    let content = text(g);
                    match u8::arbitrary(g) % 4 {
                        0 => Message {
                            origin: bool::arbitrary(g).then(|| Origin {
                                from: "amber".into(),
                                seq: 1,
                            }),
                            ..Message::user(at, &content)
                        },
                        1 => Message {
                            thinking: thinking(g),
                            ..Message::assistant(at, &content)
                        },
                        2 => Message {
                            thinking: thinking(g),
                            tool_calls: (0..u8::arbitrary(g) % 3)
                                .map(|c| ToolCall {
                                    id: format!("c{i}-{c}"),
                                    name: "read_file".into(),
                                    arguments: g
                                        .choose(&[
                                            r#"{"path":"a\"b"}"#,
                                            "{}",
                                            "not json",
                                            "[1]",
                                            "",
                                        ])
                                        .unwrap()
                                        .to_string(),
                                })
                                .collect(),
                            ..Message::assistant(at, &content)
                        },
                        _ => Message::tool(at, format!("c{i}"), &content),
                    }
                })
                .collect();
            History(history)
        }
    }

    quickcheck! {
        /// Whatever the history, wire and shape, the body written in parts
        /// is the body the whole tree gave, byte for byte, read or written,
        /// and its counted length is its length.
        fn parts_write_what_the_tree_gave(
            history: History,
            anthropic: bool,
            system: bool,
            limit: Option<u16>,
            tools: bool,
            cache: (bool, bool),
            reasoning: (Option<u8>, Option<u16>)
        ) -> bool {
            let (breakpoints, key) = cache;
            let (effort, thinking) = reasoning;
            let wire = if anthropic { Wire::Anthropic } else { Wire::OpenAi };
            let system = system.then_some("the \"system\"\nprompt");
            let shape = Shape {
                limit: limit.map(|t| AnswerLimit::of("m", u64::from(t))),
                tools,
                cache: Cache {
                    breakpoints,
                    key: key.then(|| "20261205-130000-abcdef".to_owned()),
                },
                mcp: Vec::new(),
                builtin: None,
                effort: effort.map(|e| [Effort::Low, Effort::Medium, Effort::High][usize::from(e % 3)]),
                thinking: thinking.map(|t| match t % 2 {
                    0 => Think::Budget(u64::from(t)),
                    _ => Think::Adaptive([Effort::Low, Effort::Medium, Effort::High][usize::from(t % 3)]),
                }),
                tool_choice: limit.map(|t| [ToolChoice::Auto, ToolChoice::Required][usize::from(t % 2 == 0)]),
                web_search: None,
                objects: effort.is_some_and(|e| e % 2 == 0),
                brief: breakpoints != key,
            };
            let built = Request::shaped(wire, "m", system, &history.0, &shape);
            let text = built.body.text();
            let mut read = Vec::new();
            std::io::Read::read_to_end(&mut built.body.reader(), &mut read).unwrap();
            text == oracle::shaped(wire, "m", system, &history.0, &shape)
                && built.body.len() == text.len()
                && read == text.as_bytes()
        }
    }
}
