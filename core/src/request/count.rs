//! The request that asks a server to count a prompt, built here so that a
//! provider sends only bytes core made: Gemini's `countTokens` body
//! ([`Body::counting`]) and, on the Chat Completions wire, the same request
//! unstreamed for one token, whose `usage.prompt_tokens` is the count (or
//! whose refusal names it, when the prompt is over the context).

use serde_json::Value;

use super::{Body, Elements, Request, Wire};

impl Request {
    /// The body that asks the server to count this request's prompt, on
    /// the wires that can: Gemini's `countTokens` body, and on Chat
    /// Completions the same request unstreamed for one token
    /// (`"stream": false`, `"max_tokens": 1`, no `stream_options`, no
    /// `max_completion_tokens`). `None` on Anthropic Messages and the
    /// Responses wire, which count nothing, and for a body that is not a
    /// JSON object. A body given whole (a refinement's) counts too.
    pub fn counting(&self) -> Option<Body> {
        match self.wire {
            Wire::Gemini => self.body.counting(&self.model),
            Wire::OpenAi => self.body.one_token(),
            Wire::Anthropic | Wire::Responses => None,
        }
    }
}

impl Body {
    /// A Chat Completions body as an unstreamed request for one token, its
    /// messages as they are.
    fn one_token(&self) -> Option<Body> {
        let whole = matches!(self.elements, Elements::Whole);
        let outer = if whole {
            self.text()
        } else {
            format!("{}{}", self.head, self.tail)
        };
        let mut value: Value = serde_json::from_str(&outer).ok()?;
        let map = value.as_object_mut()?;
        map.insert("stream".into(), false.into());
        map.remove("stream_options");
        map.remove("max_completion_tokens");
        map.insert("max_tokens".into(), 1.into());
        Some(if whole {
            Body::from(value.to_string())
        } else {
            Body::around(&value, self.elements.clone())
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};
    use time::macros::datetime;

    use crate::record::{Message, ToolCall};
    use crate::request::{AnswerLimit, Body, Request, Shape, Wire};

    fn history() -> Vec<Message> {
        let at = datetime!(2026-12-06 20:30 UTC);
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
            Message::tool(at, "c1", "contents \"quoted\" ü"),
            Message::user(at, "again"),
        ]
    }

    fn parsed(body: &Body) -> Value {
        serde_json::from_str(&body.text()).unwrap()
    }

    /// The body sent, unstreamed for one token.
    fn one_token(mut sent: Value) -> Value {
        let map = sent.as_object_mut().unwrap();
        map.insert("stream".into(), json!(false));
        map.remove("stream_options");
        map.remove("max_completion_tokens");
        map.insert("max_tokens".into(), json!(1));
        sent
    }

    #[test]
    fn a_chat_count_asks_the_same_messages_for_one_token() {
        // A reasoning model's limit is `max_completion_tokens`, another's
        // `max_tokens`: either way the count asks one token, unstreamed.
        for model in ["gpt-5", "qwen3"] {
            let shape = Shape::limited(Some(AnswerLimit::of(model, 100)));
            let r = Request::shaped(Wire::OpenAi, model, Some("sys"), history(), &shape);
            let count = r.counting().unwrap();
            assert_eq!(parsed(&count), one_token(parsed(&r.body)), "{model}");
            assert_eq!(count.len(), count.text().len());
            assert_eq!(count.text().matches(r#""max_tokens":1"#).count(), 1);
            assert!(!count.text().contains("stream_options"));
            assert!(!count.text().contains("max_completion_tokens"));
        }
    }

    #[test]
    fn a_body_given_whole_counts_as_chat_and_other_wires_as_their_own() {
        let built = Request::build(Wire::OpenAi, "m", Some("sys"), &history());
        let whole = Request {
            body: Body::from(built.body.text()),
            ..built.clone()
        };
        let count = whole.counting().unwrap();
        assert_eq!(parsed(&count), one_token(parsed(&built.body)));
        assert_eq!(count.len(), count.text().len());
        let not_json = Request {
            body: Body::from("not json"),
            ..built
        };
        assert!(not_json.counting().is_none());

        for wire in [Wire::Anthropic, Wire::Responses] {
            let r = Request::build(wire, "m", Some("sys"), &history());
            assert!(r.counting().is_none(), "{wire:?}");
        }
        let gemini = Request::build(Wire::Gemini, "gemini-2.5-flash", Some("sys"), &history());
        assert_eq!(
            gemini.counting().map(|b| b.text()),
            gemini.body.counting("gemini-2.5-flash").map(|b| b.text())
        );
    }
}
