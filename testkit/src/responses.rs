//! OpenAI's Responses API as the fake plays it (issue 45), in the shapes
//! of OpenAI's API reference ("Streaming events") and of the streams that
//! openai-python's tests and codex-rs's `codex-api` read:
//!
//! * `response.created` and `response.in_progress`, each with the
//!   `response` so far; every event has a `sequence_number`, and each is
//!   sent as `event: TYPE` and `data: {…"type":TYPE…}`.
//! * A [`crate::FakeReply::Thinks`] begins with a `reasoning` item
//!   (`output_item.added`, `reasoning_summary_part.added`, one
//!   `reasoning_summary_text.delta` per word, `…text.done`, `…part.done`,
//!   `output_item.done` with its `summary` and `encrypted_content`, the
//!   signature of [`crate::thinking::signature`]). The server remembers it
//!   and refuses (`400`, as the API does when a call's reasoning is
//!   missing) a later request that sends one of its calls back without the
//!   item's `encrypted_content` before it ([`check`]).
//! * Text: a `message` item (`output_item.added`, `content_part.added`,
//!   one `output_text.delta` per piece, `output_text.done`,
//!   `content_part.done`, `output_item.done`).
//! * Each call: a `function_call` item (`output_item.added` with
//!   `call_id`, `name` and empty `arguments`, two or more
//!   `function_call_arguments.delta`, `…arguments.done`,
//!   `output_item.done`).
//! * The end: `response.completed` with `usage` (`input_tokens`,
//!   `input_tokens_details.cached_tokens`, `output_tokens`,
//!   `output_tokens_details.reasoning_tokens`, `total_tokens`; `null`
//!   without usage), or, for an answer cut at its limit,
//!   `response.incomplete` with `incomplete_details.reason:
//!   "max_output_tokens"`.
//!
//! A cut stream stops after its text deltas.

use serde_json::{json, Value};

use crate::thinking::{signature, Thought};
use crate::wire::{fragments, End};
use crate::Conn;
use revolve_core::text::word_pieces;

/// Writes the events of one answer, numbering them.
pub(crate) struct Events<'a> {
    conn: &'a mut Conn,
    seq: u64,
}

impl<'a> Events<'a> {
    pub(crate) fn new(conn: &'a mut Conn) -> Events<'a> {
        Events { conn, seq: 0 }
    }

    /// One event of `kind` with these fields.
    pub(crate) fn send(&mut self, kind: &str, mut data: Value) -> std::io::Result<()> {
        use std::io::Write;
        data["type"] = json!(kind);
        data["sequence_number"] = json!(self.seq);
        self.seq += 1;
        self.conn
            .write_all(format!("event: {kind}\ndata: {data}\n\n").as_bytes())?;
        self.conn.flush()
    }

    /// `response.created` and `response.in_progress`.
    pub(crate) fn start(&mut self) -> std::io::Result<()> {
        let response = response("in_progress", &[], None);
        self.send("response.created", json!({"response": response}))?;
        self.send("response.in_progress", json!({"response": response}))
    }

    /// The opening of a text message item at `index`.
    pub(crate) fn text_start(&mut self, index: usize) -> std::io::Result<()> {
        let item = json!({"id": MESSAGE_ID, "type": "message", "status": "in_progress",
            "role": "assistant", "content": []});
        self.send(
            "response.output_item.added",
            json!({"output_index": index, "item": item}),
        )?;
        let part = json!({"type": "output_text", "text": "", "annotations": []});
        self.send(
            "response.content_part.added",
            json!({"item_id": MESSAGE_ID, "output_index": index, "content_index": 0, "part": part}),
        )
    }

    /// One text delta of the message at `index`.
    pub(crate) fn text_piece(&mut self, index: usize, piece: &str) -> std::io::Result<()> {
        self.send("response.output_text.delta", delta(index, piece))
    }

    /// The end of the message at `index` holding `text`.
    pub(crate) fn text_end(&mut self, index: usize, text: &str) -> std::io::Result<()> {
        let at = json!({"item_id": MESSAGE_ID, "output_index": index, "content_index": 0});
        let mut done = at.clone();
        done["text"] = json!(text);
        self.send("response.output_text.done", done)?;
        let mut part = at;
        part["part"] = json!({"type": "output_text", "text": text, "annotations": []});
        self.send("response.content_part.done", part)?;
        self.send(
            "response.output_item.done",
            json!({"output_index": index, "item": message(text)}),
        )
    }

    /// The end of a whole answer of `output` items.
    pub(crate) fn end(
        &mut self,
        output: &[Value],
        usage: Option<(u64, u64)>,
        end: End,
    ) -> std::io::Result<()> {
        if end == End::Length {
            let mut r = response("incomplete", output, usage);
            r["incomplete_details"] = json!({"reason": "max_output_tokens"});
            return self.send("response.incomplete", json!({"response": r}));
        }
        let r = response("completed", output, usage);
        self.send("response.completed", json!({"response": r}))
    }
}

/// The id of the fake's message items.
const MESSAGE_ID: &str = "msg_fake";

/// A `response.output_text.delta`'s fields.
fn delta(index: usize, piece: &str) -> Value {
    json!({"item_id": MESSAGE_ID, "output_index": index, "content_index": 0, "delta": piece,
        "logprobs": []})
}

/// A whole assistant `message` item of `text`.
pub(crate) fn message(text: &str) -> Value {
    json!({"id": MESSAGE_ID, "type": "message", "status": "completed", "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}]})
}

/// A `response` object in `status` with these `output` items.
pub(crate) fn response(status: &str, output: &[Value], usage: Option<(u64, u64)>) -> Value {
    let usage = usage.map(|(input, output)| {
        json!({"input_tokens": input, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": output, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input + output})
    });
    json!({"id": "resp_fake", "object": "response", "created_at": 1_765_000_000,
        "status": status, "model": "fake", "output": output, "usage": usage,
        "error": null, "incomplete_details": null})
}

/// A whole answer's stream (see the module doc).
pub(crate) fn stream(
    conn: &mut Conn,
    chunks: &[String],
    calls: &[(String, String, String)],
    usage: Option<(u64, u64)>,
    end: End,
) -> std::io::Result<()> {
    let thinking = conn.thinking.take();
    let search = conn.search.take();
    let mut events = Events::new(conn);
    events.start()?;
    let mut output = Vec::new();
    if let Some(thinking) = thinking {
        output.push(reasoning(&mut events, output.len(), &thinking)?);
    }
    if let Some((query, results)) = search {
        output.push(web_search(&mut events, output.len(), &query, &results)?);
    }
    if !chunks.is_empty() {
        let index = output.len();
        events.text_start(index)?;
        for piece in chunks {
            events.text_piece(index, piece)?;
        }
        if end == End::Cut {
            return Ok(());
        }
        let text = chunks.concat();
        events.text_end(index, &text)?;
        output.push(message(&text));
    } else if end == End::Cut {
        return Ok(());
    }
    for (id, name, arguments) in calls {
        let index = output.len();
        let item_id = format!("fc_fake_{index}");
        let item = |arguments: &str, status: &str| {
            json!({"id": item_id, "type": "function_call", "status": status,
                "call_id": id, "name": name, "arguments": arguments})
        };
        events.send(
            "response.output_item.added",
            json!({"output_index": index, "item": item("", "in_progress")}),
        )?;
        for piece in fragments(arguments) {
            events.send(
                "response.function_call_arguments.delta",
                json!({"item_id": item_id, "output_index": index, "delta": piece}),
            )?;
        }
        events.send(
            "response.function_call_arguments.done",
            json!({"item_id": item_id, "output_index": index, "arguments": arguments}),
        )?;
        let done = item(arguments, "completed");
        events.send(
            "response.output_item.done",
            json!({"output_index": index, "item": done}),
        )?;
        output.push(done);
    }
    events.end(&output, usage, end)
}

/// A `web_search_call` item at `index`, streamed; the item done.
fn web_search(
    events: &mut Events,
    index: usize,
    query: &str,
    results: &[(String, String)],
) -> std::io::Result<Value> {
    let id = format!("ws_fake_{index}");
    let added = json!({"id": id, "type": "web_search_call", "status": "in_progress"});
    events.send(
        "response.output_item.added",
        json!({"output_index": index, "item": added}),
    )?;
    for step in ["in_progress", "searching", "completed"] {
        events.send(
            &format!("response.web_search_call.{step}"),
            json!({"item_id": id, "output_index": index}),
        )?;
    }
    let sources: Vec<Value> = results
        .iter()
        .map(|(_, url)| json!({"type": "url", "url": url}))
        .collect();
    let item = json!({"id": id, "type": "web_search_call", "status": "completed",
        "action": {"type": "search", "query": query, "sources": sources}});
    events.send(
        "response.output_item.done",
        json!({"output_index": index, "item": item}),
    )?;
    Ok(item)
}

/// A reasoning item of `thinking` at `index`, streamed; the item done.
fn reasoning(events: &mut Events, index: usize, thinking: &str) -> std::io::Result<Value> {
    let id = format!("rs_fake_{index}");
    let added = json!({"id": id, "type": "reasoning", "summary": []});
    events.send(
        "response.output_item.added",
        json!({"output_index": index, "item": added}),
    )?;
    let at = json!({"item_id": id, "output_index": index, "summary_index": 0});
    let mut part = at.clone();
    part["part"] = json!({"type": "summary_text", "text": ""});
    events.send("response.reasoning_summary_part.added", part)?;
    for piece in word_pieces(thinking) {
        let mut d = at.clone();
        d["delta"] = json!(piece);
        events.send("response.reasoning_summary_text.delta", d)?;
    }
    let mut done = at.clone();
    done["text"] = json!(thinking);
    events.send("response.reasoning_summary_text.done", done)?;
    let mut part = at;
    part["part"] = json!({"type": "summary_text", "text": thinking});
    events.send("response.reasoning_summary_part.done", part)?;
    let item = json!({"id": id, "type": "reasoning",
        "summary": [{"type": "summary_text", "text": thinking}],
        "encrypted_content": signature(thinking)});
    events.send(
        "response.output_item.done",
        json!({"output_index": index, "item": item}),
    )?;
    Ok(item)
}

/// What the API says to this request body, given the reasoning answered
/// before: `Err` with the message of its `400` when a call of a thought
/// comes back without the thought's reasoning item (its
/// `encrypted_content`) somewhere before it.
pub fn check(body: &str, thoughts: &[Thought]) -> Result<(), String> {
    let Ok(body) = serde_json::from_str::<Value>(body) else {
        return Ok(());
    };
    let input = body["input"].as_array().map_or(&[][..], Vec::as_slice);
    for (i, item) in input.iter().enumerate() {
        if item["type"] != "function_call" {
            continue;
        }
        let call = item["call_id"].as_str().unwrap_or("");
        let Some(thought) = thoughts.iter().find(|t| t.calls.iter().any(|c| c == call)) else {
            continue;
        };
        let carried = input[..i].iter().any(|earlier| {
            earlier["type"] == "reasoning"
                && earlier["encrypted_content"] == thought.signature.as_str()
        });
        if !carried {
            return Err(format!(
                "Item 'fc_fake' of type 'function_call' was provided without its required 'reasoning' item (input[{i}], call {call})."
            ));
        }
    }
    Ok(())
}
