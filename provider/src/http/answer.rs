//! What an answer holds: the body sent again unstreamed, a payload as it
//! arrives, the answer built from it, and the lenient readers of the
//! numbers and arguments servers send.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashSet};

use revolve_core::policy::{ANSWER_BYTES_PER_CALL, MAX_TOKEN_COUNT};
use revolve_core::record::Thinking;
use revolve_core::request::Body;
use revolve_core::{Reply, ToolCall, Usage};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// `body` with its top-level `stream` set to `false` and these `keys`
/// removed; `None` when it is not a JSON object.
pub(crate) fn unstreamed(body: &str, remove: &[&str]) -> Option<String> {
    let mut value: Value = serde_json::from_str(body).ok()?;
    let object = value.as_object_mut()?;
    object.insert("stream".to_owned(), Value::Bool(false));
    for key in remove {
        object.remove(*key);
    }
    serde_json::to_string(&value).ok()
}

/// What a request sends: a body core made, written as it is sent, or a
/// text (a body edited to ask again unstreamed).
#[derive(Clone, Copy)]
pub(crate) enum Payload<'a> {
    Body(&'a Body),
    Text(&'a str),
}

impl Payload<'_> {
    pub(crate) fn text(&self) -> Cow<'_, str> {
        match self {
            Payload::Body(body) => Cow::Owned(body.text()),
            Payload::Text(text) => Cow::Borrowed(text),
        }
    }
}

/// An answer as it is put together: text, tool calls by index, usage.
#[derive(Debug, Default)]
pub(crate) struct Answer {
    /// The text so far.
    pub text: String,
    /// The tool calls so far, by their index in the answer.
    pub calls: BTreeMap<u64, ToolCall>,
    /// The usage, when the server reported one.
    pub usage: Option<Usage>,
    /// The answer stopped at the request's length limit.
    pub truncated: bool,
    /// Anthropic's thinking blocks so far, by their index in the answer:
    /// kept, not shown.
    pub thinking: BTreeMap<u64, Thinking>,
}

impl Answer {
    /// Adds a piece of text and shows it; empty pieces are dropped.
    pub(crate) fn push_text(&mut self, piece: &str, on_text: &mut dyn FnMut(&str)) {
        if !piece.is_empty() {
            on_text(piece);
            self.text.push_str(piece);
        }
    }

    /// The bytes held so far: text and every call's id, name and
    /// arguments, and [`ANSWER_BYTES_PER_CALL`] for each call besides, so
    /// that a flood of empty calls (each a new `index`) is bounded too.
    pub(crate) fn size(&self) -> usize {
        let thinking = self.thinking.values().fold(0, |n, t| {
            n + match t {
                Thinking::Thinking {
                    thinking,
                    signature,
                } => thinking.len() + signature.len(),
                Thinking::RedactedThinking { data } => data.len(),
                other => other.wire().to_string().len(),
            }
        });
        self.calls
            .values()
            .fold(self.text.len() + thinking, |n, c| {
                n + ANSWER_BYTES_PER_CALL + c.id.len() + c.name.len() + c.arguments.len()
            })
    }

    /// The call at `index`, made on first use.
    pub(crate) fn call(&mut self, index: u64) -> &mut ToolCall {
        self.calls.entry(index).or_insert_with(|| ToolCall {
            id: String::new(),
            name: String::new(),
            arguments: String::new(),
        })
    }

    /// The reply: calls in index order, a missing id, or one an earlier
    /// call of the answer has, made up as `call_INDEX` (with `_N` added
    /// until no other call has it: results are matched to calls by id, so
    /// ids within one answer are unique), empty arguments as `{}`.
    pub(crate) fn reply(&mut self) -> Reply {
        let calls = std::mem::take(&mut self.calls);
        let mut taken: HashSet<String> = HashSet::new();
        // The server's ids first, so that a made-up one never takes one.
        let given: HashSet<String> = calls.values().map(|c| c.id.clone()).collect();
        let tool_calls = calls
            .into_iter()
            .map(|(index, mut call)| {
                if call.id.is_empty() || taken.contains(&call.id) {
                    let base = format!("call_{index}");
                    let mut id = base.clone();
                    let mut n = 1u64;
                    while taken.contains(&id) || given.contains(&id) {
                        n += 1;
                        id = format!("{base}_{n}");
                    }
                    call.id = id;
                }
                taken.insert(call.id.clone());
                if call.arguments.trim().is_empty() {
                    call.arguments = "{}".to_owned();
                }
                call
            })
            .collect();
        Reply {
            thinking: std::mem::take(&mut self.thinking).into_values().collect(),
            truncated: self.truncated,
            text: std::mem::take(&mut self.text),
            tool_calls,
            usage: self.usage,
        }
    }
}

/// A token count as a server wrote it, for `deserialize_with`: a whole
/// number up to [`MAX_TOKEN_COUNT`], or a finite float in that range
/// (rounded). Anything else (`null`, a negative or larger number, a
/// string) is read as no count, never as a failure: usage is advisory,
/// and the answer it comes with was shown already.
pub(crate) fn token_count<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let value = Option::<Value>::deserialize(d)?;
    Ok(value.as_ref().and_then(sensible_count))
}

fn sensible_count(value: &Value) -> Option<u64> {
    let Value::Number(n) = value else {
        return None;
    };
    let count = match n.as_u64() {
        Some(count) => count,
        None => {
            let f = n.as_f64().filter(|f| f.is_finite() && *f >= 0.0)?;
            if f > MAX_TOKEN_COUNT as f64 {
                return None;
            }
            // In range, checked just above.
            f.round() as u64
        }
    };
    (count <= MAX_TOKEN_COUNT).then_some(count)
}

/// A field read as `T` when it can be, and as absent when it cannot, for
/// `deserialize_with`: for parts of an answer that are advisory (usage),
/// so that their shape never fails the answer.
pub(crate) fn lenient<'de, D: Deserializer<'de>, T: DeserializeOwned>(
    d: D,
) -> Result<Option<T>, D::Error> {
    let value = Option::<Value>::deserialize(d)?;
    Ok(value.and_then(|v| serde_json::from_value(v).ok()))
}

/// Arguments as the JSON text the model wrote: a string as is, anything
/// else (an object, from servers that parse it) serialized compactly.
pub(crate) fn arguments_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}
