//! The conversation's records: a message (the user's, the model's, a
//! tool's result) with the tool calls, thinking blocks and origin it
//! carries.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use super::Image;

/// A message of the conversation, with the time it was written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// When it happened, by the shell's clock: the log's only time.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// Who wrote it.
    pub role: Role,
    /// Its text (for a tool result, the output the model read).
    pub content: String,
    /// The tools an assistant message calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// The call a tool message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// An answer cut short by an interruption or a failure.
    #[serde(default, skip_serializing_if = "super::is_false")]
    pub partial: bool,
    /// An answer that stopped at the request's limit on its length
    /// (`max_tokens`): whole as the model wrote it, but cut.
    #[serde(default, skip_serializing_if = "super::is_false")]
    pub truncated: bool,
    /// A user message delivered from the session's inbox (`revolve send`,
    /// `revolve attach`): who sent it, and its place in the inbox.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<Origin>,
    /// The thinking blocks an assistant message began with (Anthropic's
    /// extended thinking), as the server sent them: sent back unchanged,
    /// before the message's text and tool calls, while thinking is on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thinking: Vec<Thinking>,
    /// The images it carries (issue 44): a user message's attachments, or
    /// the picture `read_file` read for a tool result.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
}

/// A thinking block of an answer, as Anthropic's Messages API sends it and
/// wants it back: the text with the `signature` that vouches for it, or a
/// `redacted_thinking` block whose `data` is encrypted. The field names
/// are the API's, so a block is written to the wire as it is logged.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Thinking {
    /// The model's reasoning, readable.
    Thinking {
        /// The reasoning text.
        thinking: String,
        /// The server's proof that the text is its own, sent back with it.
        signature: String,
    },
    /// Reasoning the server encrypted.
    RedactedThinking {
        /// The encrypted reasoning, sent back as it came.
        data: String,
    },
    /// Gemini's thought signature (issue 45): an opaque token the API put
    /// on one part of the answer, sent back on the same part (see
    /// [`crate::request::gemini`]): the part of the call `call` names, or
    /// the answer's text part when it names none. Never sent on another
    /// wire.
    ThoughtSignature {
        /// The token, as it came.
        signature: String,
        /// The id of the call whose part carried it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call: Option<String>,
    },
    /// A `reasoning` output item of OpenAI's Responses API (issue 45), as
    /// the server sent it in `response.output_item.done` but for its
    /// `type`: its `id`, `summary` (the readable summary parts), and the
    /// `encrypted_content` asked for with `store: false`. Sent back
    /// before the answer's message and calls on the Responses wire (less
    /// its `id`, see `request::responses`); never on the other wires.
    Reasoning {
        /// The item's fields, as they came.
        #[serde(flatten)]
        item: serde_json::Map<String, serde_json::Value>,
    },
    /// Anthropic's `server_tool_use` block (issue 44): the server's own
    /// tool called (`web_search`, its `id`, its `input.query`). Sent back
    /// in its assistant message, as it came, whether thinking is on or
    /// not: the API wants a search and its result kept together.
    ServerToolUse {
        /// The block's fields, as they came.
        #[serde(flatten)]
        block: serde_json::Map<String, serde_json::Value>,
    },
    /// Anthropic's `web_search_tool_result` block: the results of the
    /// search `tool_use_id` names (`content`: `web_search_result`s with
    /// `title`, `url` and `encrypted_content`, or an error), sent back as
    /// it came.
    WebSearchToolResult {
        /// The block's fields, as they came.
        #[serde(flatten)]
        block: serde_json::Map<String, serde_json::Value>,
    },
    /// A `web_search_call` output item of the Responses API (its
    /// `action.query`, `status`): sent back, less its `id`, in order with
    /// the answer's reasoning items.
    WebSearchCall {
        /// The item's fields, as they came.
        #[serde(flatten)]
        item: serde_json::Map<String, serde_json::Value>,
    },
}

impl Thinking {
    /// Its readable text: the thinking, or a reasoning item's summary
    /// parts joined by blank lines; empty for a redacted block.
    pub fn text(&self) -> String {
        match self {
            Thinking::Thinking { thinking, .. } => thinking.clone(),
            Thinking::RedactedThinking { .. }
            | Thinking::ThoughtSignature { .. }
            | Thinking::ServerToolUse { .. }
            | Thinking::WebSearchToolResult { .. }
            | Thinking::WebSearchCall { .. } => String::new(),
            Thinking::Reasoning { item } => item
                .get("summary")
                .and_then(serde_json::Value::as_array)
                .map(|parts| {
                    parts
                        .iter()
                        .filter_map(|p| p.get("text").and_then(serde_json::Value::as_str))
                        .collect::<Vec<_>>()
                        .join("\n\n")
                })
                .unwrap_or_default(),
        }
    }

    /// Whether it is one of Anthropic's thinking blocks (a thinking or
    /// redacted thinking block), sent back while thinking is on.
    pub fn anthropic(&self) -> bool {
        matches!(
            self,
            Thinking::Thinking { .. } | Thinking::RedactedThinking { .. }
        )
    }

    /// Whether it is one of Anthropic's server tool blocks, always sent
    /// back.
    pub fn server(&self) -> bool {
        matches!(
            self,
            Thinking::ServerToolUse { .. } | Thinking::WebSearchToolResult { .. }
        )
    }

    /// Whether it is thought (not a search): what the transcript's
    /// thinking line counts.
    pub fn thought(&self) -> bool {
        matches!(
            self,
            Thinking::Thinking { .. }
                | Thinking::RedactedThinking { .. }
                | Thinking::Reasoning { .. }
        )
    }

    /// The block or item as the API sent it: its fields with its `type`.
    pub fn wire(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

/// Where a delivered message came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    /// Who sent it, as the sender said (`attach`, another session's name…).
    pub from: String,
    /// Its number in the session's inbox; numbers only grow, so a message
    /// at or below [`super::Totals::delivered`] was taken already.
    pub seq: u64,
}

/// A tool call as the model made it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id for the call; its result names it.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments, as the JSON text the model wrote (not necessarily
    /// valid).
    pub arguments: String,
}

impl Message {
    /// A complete user message.
    pub fn user(at: OffsetDateTime, content: impl Into<String>) -> Message {
        Message::new(at, Role::User, content.into())
    }

    /// A complete assistant message without tool calls.
    pub fn assistant(at: OffsetDateTime, content: impl Into<String>) -> Message {
        Message::new(at, Role::Assistant, content.into())
    }

    /// The result of the tool call `id`.
    pub fn tool(at: OffsetDateTime, id: impl Into<String>, content: impl Into<String>) -> Message {
        Message {
            tool_call_id: Some(id.into()),
            ..Message::new(at, Role::Tool, content.into())
        }
    }

    fn new(at: OffsetDateTime, role: Role, content: String) -> Message {
        Message {
            at,
            role,
            content,
            tool_calls: Vec::new(),
            tool_call_id: None,
            partial: false,
            truncated: false,
            origin: None,
            thinking: Vec::new(),
            images: Vec::new(),
        }
    }

    /// The text the model gets for this message: a delivered message says
    /// who sent it.
    pub(crate) fn model_text(&self) -> std::borrow::Cow<'_, str> {
        match &self.origin {
            Some(o) => format!("[message from {}]\n{}", o.from, self.content).into(),
            None => self.content.as_str().into(),
        }
    }
}

/// Who wrote a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// A line the user typed, or a message delivered to the session.
    User,
    /// The model's answer.
    Assistant,
    /// A tool's result, answering one call of the assistant message before.
    Tool,
}
