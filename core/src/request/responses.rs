//! The OpenAI Responses wire (issue 45): `POST {base}/responses`, the body
//! built here byte for byte like the other wires'.
//!
//! * Around the items: `instructions` (the system prompt), `tools` as
//!   `{"type":"function","name","description","parameters"}`, `store:
//!   false` (nothing kept on OpenAI's side: revolve's log is the state),
//!   with `include: ["reasoning.encrypted_content"]` for the reasoning
//!   models (the others refuse it), `prompt_cache_key` as the Chat wire
//!   sends it, `reasoning: {"effort": …}` from `--effort`, the answer's
//!   limit as `max_output_tokens`, and `tool_choice: "required"` when asked.
//! * The `input` items, message by message: a user message as a `message`
//!   of `input_text` and `input_image` (data URL) parts; an answer as its
//!   reasoning items (as the server sent them, less their `id`: with
//!   `store: false` no item is kept under its id, and the encrypted
//!   content carries the reasoning), then a `message` of `output_text`,
//!   then a `function_call` per call (`call_id`, `name`, `arguments`); a
//!   tool result as a `function_call_output`, a run of results with
//!   pictures followed by a user message holding them, as on the Chat
//!   wire (see `tool_images`).
//!
//! Each item is built as a small [`Value`] and written at once: one
//! message's items at a time, never the whole history.

use super::*;

/// The body around the `input` items (which it holds empty).
pub(super) fn outer(model: &str, system: Option<&str>, shape: &Shape) -> Value {
    let mut body = json!({
        "model": model,
        "input": [],
        "store": false,
        "stream": true,
    });
    if reasons(model) {
        body["include"] = json!(["reasoning.encrypted_content"]);
    }
    if let Some(system) = system {
        body["instructions"] = json!(system);
    }
    if shape.tools {
        let mut tools: Vec<Value> = tools::offered(shape.builtin.as_deref(), shape.brief)
            .into_iter()
            .map(|d| json!({"type": "function", "name": d.name, "description": d.description, "parameters": d.parameters}))
            .collect();
        tools.extend(shape.mcp.iter().map(|t| {
            json!({"type": "function", "name": t.name, "description": t.description, "parameters": t.input_schema})
        }));
        if shape.web_search.is_some() {
            tools.push(json!({"type": "web_search"}));
        }
        body["tools"] = Value::from(tools);
    }
    if let Some(limit) = shape.limit {
        body["max_output_tokens"] = json!(limit.tokens);
    }
    if let Some(key) = &shape.cache.key {
        body["prompt_cache_key"] = json!(key);
    }
    if let Some(effort) = shape.effort {
        body["reasoning"] = json!({"effort": effort.as_str()});
    }
    if let (true, Some(ToolChoice::Required)) = (shape.tools, shape.tool_choice) {
        body["tool_choice"] = json!("required");
    }
    body
}

/// Whether `model` is one of OpenAI's reasoning models (those whose Chat
/// requests say `max_completion_tokens`): they keep reasoning items, and
/// only they take `include: ["reasoning.encrypted_content"]`.
pub(crate) fn reasons(model: &str) -> bool {
    AnswerLimit::of(model, 0).field == "max_completion_tokens"
}

/// The `input` items of message `i` of `history` (none for a message with
/// nothing to send: a user message without text or picture).
pub(super) fn items(history: &[Message], i: usize) -> Vec<Value> {
    let m = &history[i];
    let mut items = Vec::new();
    match m.role {
        Role::User => {
            let mut parts: Vec<Value> = Vec::new();
            let text = m.model_text();
            if !text.is_empty() {
                parts.push(json!({"type": "input_text", "text": text}));
            }
            parts.extend(m.images.iter().map(image));
            if !parts.is_empty() {
                items.push(json!({"type": "message", "role": "user", "content": parts}));
            }
        }
        Role::Assistant => {
            items.extend(m.thinking.iter().filter_map(reasoning));
            if !m.content.is_empty() {
                items.push(json!({"type": "message", "role": "assistant",
                    "content": [{"type": "output_text", "text": m.content}]}));
            }
            items.extend(m.tool_calls.iter().map(|c| {
                json!({"type": "function_call", "call_id": c.id, "name": c.name, "arguments": c.arguments})
            }));
        }
        Role::Tool => {
            items.push(json!({"type": "function_call_output",
                "call_id": m.tool_call_id, "output": m.content}));
            if let Some(run) = tool_images(history, i) {
                let mut parts = Vec::new();
                for m in run.iter().filter(|m| !m.images.is_empty()) {
                    parts.push(json!({"type": "input_text", "text": tool_images_text(m)}));
                    parts.extend(m.images.iter().map(image));
                }
                items.push(json!({"type": "message", "role": "user", "content": parts}));
            }
        }
    }
    items
}

/// Writes message `i`'s items into `out`, comma-separated; false when it
/// has none.
pub(super) fn write_items(out: &mut Vec<u8>, history: &[Message], i: usize) -> bool {
    let items = items(history, i);
    for (n, item) in items.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        // Writing a value to memory cannot fail.
        let _ = serde_json::to_writer(&mut *out, item);
    }
    !items.is_empty()
}

/// One `input_image` part, its picture as a data URL.
fn image(image: &Image) -> Value {
    json!({"type": "input_image", "image_url": image.data_url()})
}

/// A reasoning or web search item as it goes back: as it came, less its
/// `id`; `None` for Anthropic's blocks.
fn reasoning(t: &Thinking) -> Option<Value> {
    if !matches!(
        t,
        Thinking::Reasoning { .. } | Thinking::WebSearchCall { .. }
    ) {
        return None;
    }
    let mut item = t.wire();
    if let Some(item) = item.as_object_mut() {
        item.remove("id");
    }
    Some(item)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::ToolCall;
    use time::macros::datetime;

    fn reasoning_item() -> Thinking {
        let item = json!({"id": "rs_1", "summary": [{"type": "summary_text", "text": "Look first."}],
            "encrypted_content": "gAAAA-secret"});
        match item {
            Value::Object(item) => Thinking::Reasoning { item },
            _ => unreachable!(),
        }
    }

    fn history() -> Vec<Message> {
        let at = datetime!(2026-12-06 17:00 UTC);
        vec![
            Message::user(at, "list it"),
            Message {
                thinking: vec![reasoning_item()],
                tool_calls: vec![ToolCall {
                    id: "call_1".into(),
                    name: "list_dir".into(),
                    arguments: r#"{"path":"."}"#.into(),
                }],
                ..Message::assistant(at, "")
            },
            Message::tool(at, "call_1", "a.txt"),
            Message::assistant(at, "One file."),
        ]
    }

    #[test]
    fn the_body_has_the_responses_shape() {
        let shape = Shape {
            cache: Cache {
                breakpoints: false,
                key: Some("k".into()),
            },
            effort: Some(crate::models::Effort::High),
            tool_choice: Some(ToolChoice::Required),
            ..Shape::limited(Some(AnswerLimit::of("gpt-5", 1000)))
        };
        let r = Request::shaped(Wire::Responses, "gpt-5", Some("sys"), history(), &shape);
        let body: Value = serde_json::from_str(&r.body.text()).unwrap();
        assert_eq!(body["instructions"], "sys");
        assert_eq!(body["store"], false);
        assert_eq!(body["stream"], true);
        assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
        assert_eq!(body["max_output_tokens"], 1000);
        assert_eq!(body.get("max_completion_tokens"), None);
        assert_eq!(body["prompt_cache_key"], "k");
        assert_eq!(body["reasoning"], json!({"effort": "high"}));
        assert_eq!(body["tool_choice"], "required");
        let tool = &body["tools"][0];
        assert_eq!(tool["type"], "function");
        assert!(tool["name"].is_string() && tool["parameters"].is_object());
        let input = body["input"].as_array().unwrap();
        let kinds: Vec<&str> = input.iter().map(|i| i["type"].as_str().unwrap()).collect();
        assert_eq!(
            kinds,
            [
                "message",
                "reasoning",
                "function_call",
                "function_call_output",
                "message"
            ]
        );
        assert_eq!(
            input[0]["content"][0],
            json!({"type": "input_text", "text": "list it"})
        );
        assert_eq!(input[1]["encrypted_content"], "gAAAA-secret");
        assert_eq!(input[1].get("id"), None);
        assert_eq!(input[2]["call_id"], "call_1");
        assert_eq!(input[2]["arguments"], r#"{"path":"."}"#);
        assert_eq!(
            input[3],
            json!({"type": "function_call_output", "call_id": "call_1", "output": "a.txt"})
        );
        assert_eq!(input[4]["content"][0]["type"], "output_text");
        assert_eq!(r.messages, 4);
    }

    #[test]
    fn a_model_that_does_not_reason_is_not_asked_for_encrypted_reasoning() {
        let r = Request::shaped(
            Wire::Responses,
            "gpt-4.1",
            None,
            history(),
            &Shape::limited(None),
        );
        let body: Value = serde_json::from_str(&r.body.text()).unwrap();
        assert_eq!(body.get("include"), None);
        assert_eq!(body.get("instructions"), None);
        assert_eq!(body.get("reasoning"), None);
    }

    #[test]
    fn the_items_written_straight_are_the_values() {
        let r = Request::shaped(
            Wire::Responses,
            "o3",
            Some("s"),
            history(),
            &Shape::limited(None),
        );
        let mut valued = Vec::new();
        r.body.write_valued_to(&mut valued).unwrap();
        assert_eq!(r.body.text().as_bytes(), valued.as_slice());
        assert_eq!(r.body.len(), valued.len());
    }

    #[test]
    fn anthropic_leaves_reasoning_items_out() {
        let shape = Shape {
            thinking: Some(crate::request::Think::Budget(1024)),
            ..Shape::limited(None)
        };
        let r = Request::shaped(Wire::Anthropic, "claude", None, history(), &shape);
        assert!(!r.body.text().contains("gAAAA-secret"), "{}", r.body.text());
    }
}
