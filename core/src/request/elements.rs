//! The `messages` array's elements, written straight from the history into
//! the body's buffer: the bytes `serde_json` writes for the same element
//! built as a [`Value`] (keys sorted, compact), without building one. A
//! message's text is escaped once, as it is written, and never copied into
//! a tree of values first (which took a copy of the whole history for
//! each request, and as much again to count its length). The unit tests
//! hold the two ways equal.

use serde_json::Value;

use crate::record::{Image, Message, Role, Thinking};

/// A JSON string, escaped as `serde_json` escapes it.
fn string(out: &mut Vec<u8>, text: &str) {
    // Writing a string to memory cannot fail.
    let _ = serde_json::to_writer(&mut *out, text);
}

/// Any value, as `serde_json` writes it.
fn value(out: &mut Vec<u8>, v: &Value) {
    // Writing a value to memory cannot fail.
    let _ = serde_json::to_writer(&mut *out, v);
}

/// `"key":` after `,` unless it is the object's first.
fn key(out: &mut Vec<u8>, first: bool, key: &str) {
    if !first {
        out.push(b',');
    }
    out.push(b'"');
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(b"\":");
}

/// The system prompt on the Chat Completions wire.
pub(super) fn openai_system(out: &mut Vec<u8>, system: &str) {
    out.extend_from_slice(b"{\"content\":");
    string(out, system);
    out.extend_from_slice(b",\"role\":\"system\"}");
}

/// One message of the history on the Chat Completions wire (see
/// `request::openai_message`, the same as a value).
pub(super) fn openai_message(out: &mut Vec<u8>, m: &Message, limited: bool, objects: bool) {
    out.extend_from_slice(b"{\"content\":");
    match m.role {
        Role::User if !m.images.is_empty() => {
            openai_parts(out, &m.model_text(), &m.images);
            out.extend_from_slice(b",\"role\":\"user\"}");
        }
        Role::User => {
            string(out, &m.model_text());
            out.extend_from_slice(b",\"role\":\"user\"}");
        }
        Role::Assistant if m.tool_calls.is_empty() => {
            string(out, &m.content);
            out.extend_from_slice(b",\"role\":\"assistant\"}");
        }
        Role::Assistant => {
            // Requests of format version 2 (those that carry their limit)
            // give an answer that only calls tools empty text, not null.
            if m.content.is_empty() && !limited {
                out.extend_from_slice(b"null");
            } else {
                string(out, &m.content);
            }
            out.extend_from_slice(b",\"role\":\"assistant\",\"tool_calls\":[");
            for (i, c) in m.tool_calls.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(b"{\"function\":{\"arguments\":");
                string(out, &super::sent_arguments(&c.arguments, objects));
                out.extend_from_slice(b",\"name\":");
                string(out, &c.name);
                out.extend_from_slice(b"},\"id\":");
                string(out, &c.id);
                out.extend_from_slice(b",\"type\":\"function\"}");
            }
            out.extend_from_slice(b"]}");
        }
        Role::Tool => {
            string(out, &m.content);
            out.extend_from_slice(b",\"role\":\"tool\",\"tool_call_id\":");
            match &m.tool_call_id {
                Some(id) => string(out, id),
                None => out.extend_from_slice(b"null"),
            }
            out.push(b'}');
        }
    }
}

/// The user message that carries the images of a run of tool results on
/// the Chat Completions wire (see `request::tool_images`).
pub(super) fn openai_tool_images(out: &mut Vec<u8>, results: &[Message]) {
    out.extend_from_slice(b"{\"content\":[");
    let mut first = true;
    for m in results.iter().filter(|m| !m.images.is_empty()) {
        if !first {
            out.push(b',');
        }
        first = false;
        out.extend_from_slice(b"{\"text\":");
        string(out, &super::tool_images_text(m));
        out.extend_from_slice(b",\"type\":\"text\"}");
        for image in &m.images {
            out.push(b',');
            openai_image(out, image);
        }
    }
    out.extend_from_slice(b"],\"role\":\"user\"}");
}

/// A content array of the Chat Completions wire: the text (when there is
/// some), then each image as an `image_url` part with a data URL.
fn openai_parts(out: &mut Vec<u8>, text: &str, images: &[Image]) {
    out.push(b'[');
    let mut first = true;
    if !text.is_empty() {
        out.extend_from_slice(b"{\"text\":");
        string(out, text);
        out.extend_from_slice(b",\"type\":\"text\"}");
        first = false;
    }
    for image in images {
        if !first {
            out.push(b',');
        }
        first = false;
        openai_image(out, image);
    }
    out.push(b']');
}

/// One `image_url` part.
fn openai_image(out: &mut Vec<u8>, image: &Image) {
    out.extend_from_slice(b"{\"image_url\":{\"url\":");
    string(out, &image.data_url());
    out.extend_from_slice(b"},\"type\":\"image_url\"}");
}

/// One `image` block of the Messages wire (after a `cache_control` key
/// when `first` is false).
fn anthropic_image(out: &mut Vec<u8>, first: bool, image: &Image) {
    key(out, first, "source");
    out.extend_from_slice(b"{\"data\":");
    string(out, &image.data);
    out.extend_from_slice(b",\"media_type\":");
    string(out, &image.media_type);
    out.extend_from_slice(b",\"type\":\"base64\"},\"type\":\"image\"}");
}

/// A content block of the Messages wire, borrowed from a message.
enum Block<'a> {
    Text(std::borrow::Cow<'a, str>),
    ToolResult(&'a Message),
    ToolUse(&'a crate::record::ToolCall),
    Thinking(&'a Thinking),
    Image(&'a Image),
}

impl Block<'_> {
    /// The block, with a cache breakpoint when `marked` (its key sorts
    /// first: `cache_control`).
    fn write(&self, out: &mut Vec<u8>, marked: bool) {
        if let Block::Thinking(t) = self {
            if t.server() {
                // A server tool block, whole as it came.
                let mut block = t.wire();
                if marked {
                    block["cache_control"] = serde_json::json!({"type": "ephemeral"});
                }
                return value(out, &block);
            }
        }
        out.push(b'{');
        if marked {
            out.extend_from_slice(b"\"cache_control\":{\"type\":\"ephemeral\"}");
        }
        let first = !marked;
        match self {
            Block::Text(text) => {
                key(out, first, "text");
                string(out, text);
                out.extend_from_slice(b",\"type\":\"text\"}");
            }
            Block::ToolResult(m) => {
                key(out, first, "content");
                if m.images.is_empty() {
                    string(out, &m.content);
                } else {
                    // A result with images: its text and its images as
                    // blocks inside it.
                    out.push(b'[');
                    let mut inner = Vec::new();
                    if !m.content.is_empty() {
                        inner.push(Block::Text(m.content.as_str().into()));
                    }
                    inner.extend(m.images.iter().map(Block::Image));
                    for (i, block) in inner.iter().enumerate() {
                        if i > 0 {
                            out.push(b',');
                        }
                        block.write(out, false);
                    }
                    out.push(b']');
                }
                out.extend_from_slice(b",\"tool_use_id\":");
                match &m.tool_call_id {
                    Some(id) => string(out, id),
                    None => out.extend_from_slice(b"null"),
                }
                out.extend_from_slice(b",\"type\":\"tool_result\"}");
            }
            Block::ToolUse(c) => {
                key(out, first, "id");
                string(out, &c.id);
                out.extend_from_slice(b",\"input\":");
                // The API wants the input as an object; a model that wrote
                // something else gets an empty one (its result says why).
                match serde_json::from_str::<Value>(&c.arguments) {
                    Ok(input) if input.is_object() => value(out, &input),
                    _ => out.extend_from_slice(b"{}"),
                }
                out.extend_from_slice(b",\"name\":");
                string(out, &c.name);
                out.extend_from_slice(b",\"type\":\"tool_use\"}");
            }
            Block::Thinking(Thinking::Thinking {
                thinking,
                signature,
            }) => {
                key(out, first, "signature");
                string(out, signature);
                out.extend_from_slice(b",\"thinking\":");
                string(out, thinking);
                out.extend_from_slice(b",\"type\":\"thinking\"}");
            }
            Block::Image(image) => anthropic_image(out, first, image),
            Block::Thinking(Thinking::RedactedThinking { data }) => {
                key(out, first, "data");
                string(out, data);
                out.extend_from_slice(b",\"type\":\"redacted_thinking\"}");
            }
            // Never made: `blocks` leaves reasoning items and Gemini's
            // signatures out, and server blocks are written above.
            Block::Thinking(
                Thinking::Reasoning { .. }
                | Thinking::ThoughtSignature { .. }
                | Thinking::WebSearchCall { .. }
                | Thinking::ServerToolUse { .. }
                | Thinking::WebSearchToolResult { .. },
            ) => {
                key(out, first, "text");
                out.extend_from_slice(b"\"\",\"type\":\"text\"}");
            }
        }
    }
}

/// One message's blocks (see `request::anthropic_blocks`, the same as
/// values).
fn blocks(m: &Message, thinking: bool) -> Vec<Block<'_>> {
    fn text(t: std::borrow::Cow<'_, str>) -> Option<Block<'_>> {
        (!t.is_empty()).then_some(Block::Text(t))
    }
    match m.role {
        Role::User => text(m.model_text())
            .into_iter()
            .chain(m.images.iter().map(Block::Image))
            .collect(),
        Role::Tool => vec![Block::ToolResult(m)],
        Role::Assistant if m.content.is_empty() && m.tool_calls.is_empty() => Vec::new(),
        Role::Assistant => {
            let mut blocks: Vec<Block> = m
                .thinking
                .iter()
                .filter(|t| (thinking && t.anthropic()) || t.server())
                .map(Block::Thinking)
                .collect();
            blocks.extend(text(m.content.as_str().into()));
            blocks.extend(m.tool_calls.iter().map(Block::ToolUse));
            blocks
        }
    }
}

/// One run of the Messages wire: `role` with the blocks of `messages`, the
/// last marked for the cache when `marked`.
pub(super) fn anthropic_run(
    out: &mut Vec<u8>,
    role: &str,
    messages: &[Message],
    thinking: bool,
    marked: bool,
) {
    out.extend_from_slice(b"{\"content\":[");
    let blocks: Vec<Block> = messages.iter().flat_map(|m| blocks(m, thinking)).collect();
    for (i, block) in blocks.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        block.write(out, marked && i + 1 == blocks.len());
    }
    out.extend_from_slice(b"],\"role\":");
    string(out, role);
    out.push(b'}');
}

#[cfg(test)]
mod tests {
    use quickcheck::{quickcheck, TestResult};
    use time::macros::datetime;

    use crate::record::{Message, Origin, Thinking, ToolCall};
    use crate::request::{AnswerLimit, Cache, Request, Shape, Think, Wire};

    /// A message from arbitrary parts: role by `kind`, any text (escapes,
    /// control characters, non-ASCII), calls whose arguments may or may
    /// not be an object.
    fn message(kind: u8, text: String, args: Vec<String>, thought: Option<String>) -> Message {
        let at = datetime!(2026-12-06 11:00 UTC);
        let images = |n: usize| -> Vec<crate::record::Image> {
            (0..n)
                .map(|i| crate::record::Image {
                    hash: format!("sha256:{i:064}"),
                    media_type: "image/png".into(),
                    width: 3,
                    height: 2,
                    source: text.clone(),
                    data: format!("iVBO{i}+/=").into(),
                })
                .collect()
        };
        match kind % 7 {
            5 => Message {
                images: images(1 + text.len() % 2),
                ..Message::user(at, text.as_str())
            },
            6 => Message {
                images: images(1),
                ..Message::tool(at, format!("c{}", text.len()), text.as_str())
            },
            0 => Message::user(at, text.as_str()),
            1 => Message {
                origin: Some(Origin {
                    from: text.clone(),
                    seq: 3,
                }),
                ..Message::user(at, text.as_str())
            },
            2 => Message::tool(at, format!("c\"{}", text.len()), text.as_str()),
            _ => Message {
                tool_calls: args
                    .into_iter()
                    .enumerate()
                    .map(|(i, arguments)| ToolCall {
                        id: format!("call_{i}"),
                        name: "read_file".into(),
                        arguments,
                    })
                    .collect(),
                thinking: thought
                    .map(|t| {
                        vec![
                            Thinking::Thinking {
                                thinking: t.clone(),
                                signature: "c2ln".into(),
                            },
                            Thinking::RedactedThinking { data: t },
                        ]
                    })
                    .unwrap_or_default(),
                ..Message::assistant(at, text.as_str())
            },
        }
    }

    quickcheck! {
        fn written_straight_equals_built_as_values(
            parts: Vec<(u8, String, Vec<String>, Option<String>)>,
            system: Option<String>,
            shape: u8
        ) -> TestResult {
            let history: Vec<Message> = parts
                .into_iter()
                .map(|(kind, text, args, thought)| message(kind, text, args, thought))
                .collect();
            let mut args = vec![r#"{"path":"a\u00e9\n","n":[1,2.5,null]}"#.to_owned()];
            args.push("not json".into());
            let with_calls = message(3, "see \"this\"\n\t\u{1}".into(), args, Some("hm".into()));
            let history: Vec<Message> = history.into_iter().chain([with_calls]).collect();
            for wire in [Wire::OpenAi, Wire::Anthropic] {
                let shape = Shape {
                    cache: Cache {
                        breakpoints: shape & 1 == 1,
                        key: None,
                    },
                    thinking: (shape & 2 == 2).then(|| Think::of("claude", crate::models::Effort::Low)),
                    objects: shape & 8 == 8,
                    ..Shape::limited((shape & 4 == 4).then(|| AnswerLimit::of("m", 100)))
                };
                let r = Request::shaped(wire, "m", system.as_deref(), &history[..], &shape);
                let mut valued = Vec::new();
                r.body.write_valued_to(&mut valued).unwrap();
                let straight = r.body.text();
                if straight.as_bytes() != valued.as_slice() || r.body.len() != valued.len() {
                    return TestResult::error(format!(
                        "{wire:?}\n{straight}\n{}",
                        String::from_utf8_lossy(&valued)
                    ));
                }
            }
            TestResult::passed()
        }
    }
}
