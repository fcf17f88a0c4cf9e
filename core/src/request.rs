//! Model requests, built in core so that replay rebuilds them byte for byte.
//!
//! The body is the exact JSON the shell sends; the shell adds only transport
//! (URL, headers, key). A provider that does not speak this wire protocol
//! (the scripted one) reads what it needs from [`Request::messages`].

use serde::Serialize;

use crate::record::{Message, Role};

/// One model request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Request {
    /// The model asked.
    pub model: String,
    /// The exact body sent: one line of JSON in the OpenAI Chat Completions
    /// format, streaming, with usage asked for.
    pub body: String,
    /// How many messages of the history it carries (system prompt excluded).
    pub messages: usize,
}

#[derive(Serialize)]
struct ChatBody<'a> {
    model: &'a str,
    messages: Vec<ChatMessage<'a>>,
    stream: bool,
    stream_options: StreamOptions,
}

#[derive(Serialize)]
struct ChatMessage<'a> {
    role: &'static str,
    content: &'a str,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

impl Request {
    /// A Chat Completions request for this system prompt and history.
    pub fn openai(model: &str, system: Option<&str>, history: &[Message]) -> Request {
        let mut messages = Vec::with_capacity(history.len() + 1);
        if let Some(system) = system {
            messages.push(ChatMessage {
                role: "system",
                content: system,
            });
        }
        messages.extend(history.iter().map(|m| ChatMessage {
            role: match m.role {
                Role::User => "user",
                Role::Assistant => "assistant",
            },
            content: &m.content,
        }));
        let body = ChatBody {
            model,
            messages,
            stream: true,
            stream_options: StreamOptions {
                include_usage: true,
            },
        };
        Request {
            model: model.to_owned(),
            // Strings and booleans only: serialization cannot fail.
            body: serde_json::to_string(&body).expect("request bodies always serialize"),
            messages: history.len(),
        }
    }

    /// A token estimate for this request when the provider gives no count:
    /// one token per four bytes of body, rounded up. Documented, crude, and
    /// on the safe side for English text and code.
    pub fn estimated_tokens(&self) -> u64 {
        (self.body.len() as u64).div_ceil(4)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn body_is_chat_completions() {
        let at = datetime!(2026-12-02 10:00 UTC);
        let r = Request::openai(
            "m",
            Some("sys"),
            &[Message::user(at, "hi"), Message::assistant(at, "yo")],
        );
        assert_eq!(
            r.body,
            r#"{"model":"m","messages":[{"role":"system","content":"sys"},{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}],"stream":true,"stream_options":{"include_usage":true}}"#
        );
        assert_eq!(r.messages, 2);
        assert_eq!(r.estimated_tokens(), (r.body.len() as u64).div_ceil(4));
    }
}
