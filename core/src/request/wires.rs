//! The two wires' shapes of a request's parts: the outer object, a
//! message, a picture, a thinking block (the Chat Completions wire's and
//! Anthropic's).

use super::*;

/// Chat Completions around the messages: the system prompt goes first
/// among them, tool calls as `tool_calls`, results as `tool` messages.
pub(super) fn openai_outer(model: &str, shape: &Shape) -> Value {
    let mut body = json!({
        "model": model,
        "messages": [],
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if shape.tools {
        let mut tools: Vec<Value> = tools::offered(shape.builtin.as_deref(), shape.brief)
            .into_iter()
            .map(|d| json!({"type": "function", "function": {"name": d.name, "description": d.description, "parameters": d.parameters}}))
            .collect();
        tools.extend(shape.mcp.iter().map(|t| {
            json!({"type": "function", "function": {
            "name": t.name, "description": t.description, "parameters": t.input_schema}})
        }));
        body["tools"] = Value::from(tools);
    }
    if let Some(key) = &shape.cache.key {
        body["prompt_cache_key"] = json!(key);
    }
    if let Some(effort) = shape.effort {
        body["reasoning_effort"] = json!(effort.as_str());
    }
    if let (true, Some(ToolChoice::Required)) = (shape.tools, shape.tool_choice) {
        body["tool_choice"] = json!("required");
    }
    body
}

/// One message of the history on the Chat Completions wire.
pub(super) fn openai_message(m: &Message, limited: bool, objects: bool) -> Value {
    match m.role {
        Role::User if !m.images.is_empty() => {
            let text = m.model_text();
            let mut parts: Vec<Value> = text_block(&text).into_iter().collect();
            parts.extend(m.images.iter().map(openai_image));
            json!({"role": "user", "content": parts})
        }
        Role::User => json!({"role": "user", "content": m.model_text()}),
        Role::Assistant if m.tool_calls.is_empty() => {
            json!({"role": "assistant", "content": m.content})
        }
        Role::Assistant => {
            let calls: Vec<Value> = m
                .tool_calls
                .iter()
                .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": sent_arguments(&c.arguments, objects)}}))
                .collect();
            // Requests of format version 2 (those that carry their limit)
            // give an answer that only calls tools empty text, not null:
            // llama-cpp-python's server refuses null with a 500.
            let content = match (m.content.is_empty(), limited) {
                (true, false) => Value::Null,
                _ => Value::from(m.content.as_str()),
            };
            json!({"role": "assistant", "content": content, "tool_calls": calls})
        }
        Role::Tool => {
            json!({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content})
        }
    }
}

/// The run of tool results that message `i` of `history` ends, when one
/// of them carries images: on the Chat Completions wire a `tool` message
/// holds text only, so the images go in a user message of their own right
/// after the run (never between results, which must follow their calls),
/// each result's introduced by a line naming its call; the result's own
/// text names the picture (docs/web.md, "Images").
pub(super) fn tool_images(history: &[Message], i: usize) -> Option<&[Message]> {
    let is_tool = |m: &Message| m.role == Role::Tool;
    if !history.get(i).is_some_and(is_tool) || history.get(i + 1).is_some_and(is_tool) {
        return None;
    }
    let start = history[..i]
        .iter()
        .rposition(|m| !is_tool(m))
        .map_or(0, |s| s + 1);
    let run = &history[start..=i];
    run.iter().any(|m| !m.images.is_empty()).then_some(run)
}

/// The line before a tool result's images in their user message.
pub(super) fn tool_images_text(m: &Message) -> String {
    format!(
        "The image(s) of the result of tool call {}:",
        m.tool_call_id.as_deref().unwrap_or("?")
    )
}

/// [`tool_images`]'s user message as a value.
pub(super) fn openai_tool_images(results: &[Message]) -> Value {
    let mut parts = Vec::new();
    for m in results.iter().filter(|m| !m.images.is_empty()) {
        parts.push(json!({"type": "text", "text": tool_images_text(m)}));
        parts.extend(m.images.iter().map(openai_image));
    }
    json!({"role": "user", "content": parts})
}

/// One `image_url` part of the Chat Completions wire.
pub(super) fn openai_image(image: &Image) -> Value {
    json!({"type": "image_url", "image_url": {"url": image.data_url()}})
}

/// One `image` block of the Messages wire.
pub(super) fn anthropic_image(image: &Image) -> Value {
    json!({"type": "image", "source": {"type": "base64", "media_type": image.media_type, "data": &*image.data}})
}

/// Anthropic Messages around the messages: the system prompt apart (with
/// a breakpoint, as blocks), the tools (the last with a breakpoint).
pub(super) fn anthropic_outer(model: &str, system: Option<&str>, shape: &Shape) -> Value {
    let mut body = json!({
        "model": model,
        "max_tokens": ANTHROPIC_MAX_TOKENS,
        "messages": [],
        "stream": true,
    });
    if shape.tools {
        let mut tools: Vec<Value> = tools::offered(shape.builtin.as_deref(), shape.brief)
            .into_iter()
            .map(|d| json!({"name": d.name, "description": d.description, "input_schema": d.parameters}))
            .collect();
        tools.extend(shape.mcp.iter().map(|t| {
            json!({"name": t.name, "description": t.description, "input_schema": t.input_schema})
        }));
        if let Some(uses) = shape.web_search {
            tools.insert(
                0,
                json!({"type": "web_search_20250305", "name": "web_search", "max_uses": uses}),
            );
        }
        if shape.cache.breakpoints {
            if let Some(last) = tools.last_mut() {
                last["cache_control"] = breakpoint();
            }
        }
        body["tools"] = Value::from(tools);
    }
    match system {
        Some(system) if shape.cache.breakpoints => {
            body["system"] =
                json!([{"type": "text", "text": system, "cache_control": breakpoint()}]);
        }
        Some(system) => body["system"] = json!(system),
        None => {}
    }
    if let Some(think) = shape.thinking {
        think.write(&mut body);
    }
    body
}

/// One message's content blocks on the Messages wire; with `thinking`, an
/// assistant message's thinking blocks first, exactly as they came.
pub(super) fn anthropic_blocks(m: &Message, thinking: bool) -> Vec<Value> {
    match m.role {
        Role::User => text_block(&m.model_text())
            .into_iter()
            .chain(m.images.iter().map(anthropic_image))
            .collect(),
        Role::Tool if !m.images.is_empty() => {
            let mut content: Vec<Value> = text_block(&m.content).into_iter().collect();
            content.extend(m.images.iter().map(anthropic_image));
            vec![json!({"type": "tool_result", "tool_use_id": m.tool_call_id, "content": content})]
        }
        Role::Tool => vec![
            json!({"type": "tool_result", "tool_use_id": m.tool_call_id, "content": m.content}),
        ],
        // An answer of thinking alone has no element (see `Runs::role`).
        Role::Assistant if m.content.is_empty() && m.tool_calls.is_empty() => Vec::new(),
        Role::Assistant => {
            let mut blocks: Vec<Value> = m
                .thinking
                .iter()
                .filter(|t| (thinking && t.anthropic()) || t.server())
                .map(thinking_block)
                .collect();
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
            blocks
        }
    }
}

/// A thinking block as the API sent it (its field names are the log's).
pub(super) fn thinking_block(t: &Thinking) -> Value {
    match t {
        Thinking::Thinking {
            thinking,
            signature,
        } => json!({"type": "thinking", "thinking": thinking, "signature": signature}),
        Thinking::RedactedThinking { data } => json!({"type": "redacted_thinking", "data": data}),
        other => other.wire(),
    }
}

pub(super) fn text_block(text: &str) -> Option<Value> {
    (!text.is_empty()).then(|| json!({"type": "text", "text": text}))
}
