//! OpenAI's Responses protocol (issue 45): `POST {base}/responses`, the
//! wire OpenAI's reasoning models are served on first.
//!
//! A stream is SSE events named by their data's `type` (the `event:` name
//! when the data has none), ending with `response.completed` (or
//! `response.incomplete`, an answer cut at `max_output_tokens`, marked
//! [`Reply::truncated`]):
//!
//! * `response.output_text.delta` (`delta`) is text, shown as it comes;
//!   a `message` item whose text came in no delta gives it when it is
//!   done (`response.output_item.done`).
//! * `response.output_item.added` of a `function_call` starts a call at
//!   its `output_index` (`call_id`, `name`); its arguments come in
//!   `response.function_call_arguments.delta`, and
//!   `response.function_call_arguments.done` and the item's
//!   `response.output_item.done` give them whole (they win).
//! * `response.output_item.done` of a `reasoning` item keeps the item (its
//!   `summary`, its `encrypted_content`) as a [`Thinking::Reasoning`], for
//!   the log and the next request; `response.reasoning_summary_text.delta`
//!   is progress of the stream, and the summary is shown in the
//!   transcript as thinking.
//! * `response.completed` carries `response.usage`: `input_tokens`
//!   (`input_tokens_details.cached_tokens` of them read from the cache)
//!   and `output_tokens`.
//! * `response.failed` (its `response.error`) and `error` events fail the
//!   request: an overflow when the error's code or words say the input did
//!   not fit (`context_length_exceeded`), broken (sent again) when its code
//!   says the server failed or was busy (`server_error`,
//!   `rate_limit_exceeded`).
//!
//! A non-streamed answer is one `response` object: its `output` items
//! read as above, its `usage`, truncated when its `status` is
//! `incomplete`. Statuses (429 with `Retry-After`, a `400` overflow) are
//! read as on the other wires (the `http` module).

use std::collections::BTreeSet;
use std::fmt;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value};

use revolve_core::record::Thinking;
use revolve_core::{Reply, Request, Usage};

use super::http::{self, Answer, Http, Protocol};
use super::sse::SseEvent;
use super::{excerpt, Provider, ProviderError};

/// An OpenAI Responses endpoint. The key goes as `Authorization: Bearer
/// KEY` only, never shown.
#[derive(Clone)]
pub struct Responses {
    http: Http,
}

impl Responses {
    /// A provider for `base_url` (`https://api.openai.com/v1`; a trailing
    /// `/` is dropped), with an optional API key.
    pub fn new(base_url: impl Into<String>, api_key: Option<String>) -> Responses {
        Responses {
            http: Http::new(base_url.into(), api_key),
        }
    }

    /// The same provider, knowing which variable its key came from.
    pub fn with_key_var(self, var: Option<&'static str>) -> Responses {
        Responses {
            http: self.http.with_key_var(var),
        }
    }

    /// The same provider with another stall timeout.
    pub fn with_stall_timeout(self, stall: Duration) -> Responses {
        Responses {
            http: self.http.with_stall(stall),
        }
    }

    /// The URL requests go to: `{base_url}/responses`.
    pub fn endpoint(&self) -> String {
        format!("{}/responses", self.http.base_url())
    }

    fn headers(&self) -> Vec<(&'static str, String)> {
        self.http
            .api_key()
            .map(|key| ("authorization", format!("Bearer {key}")))
            .into_iter()
            .collect()
    }
}

impl Provider for Responses {
    fn complete(
        &self,
        request: &Request,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<Reply, ProviderError> {
        let headers = self.headers();
        self.http
            .exchange::<Stream>(&self.endpoint(), &headers, &request.body, on_text)
    }

    fn name(&self) -> &'static str {
        "openai-responses"
    }
}

impl fmt::Debug for Responses {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.http.debug("Responses", f)
    }
}

/// A Responses answer being read.
#[derive(Default)]
struct Stream {
    answer: Answer,
    /// The output items whose text came in deltas.
    streamed: BTreeSet<u64>,
}

/// One event's data: its `type` and what the kinds read carry.
#[derive(Deserialize)]
struct WireEvent {
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(default)]
    output_index: Option<u64>,
    #[serde(default)]
    delta: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
    #[serde(default)]
    item: Option<Value>,
    #[serde(default)]
    response: Option<Value>,
}

impl Protocol for Stream {
    const END: &'static str = "response.completed";

    fn carries_unkept(event: &SseEvent) -> bool {
        event.data.contains("reasoning") && http::holds_text(&event.data, &["delta"])
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
        let partial = |s: &mut Stream| std::mem::take(&mut s.answer.text);
        let mut value: Value = match serde_json::from_str(&event.data) {
            Ok(value) => value,
            Err(e) => return Err(http::bad_event(url, &e, &event.data, partial(self))),
        };
        if let (Some(object), Some(name)) = (value.as_object_mut(), &event.event) {
            object
                .entry("type")
                .or_insert_with(|| Value::String(name.clone()));
        }
        if value["type"] == "error" {
            let error = match value.get("error") {
                Some(error) if error.is_object() => error.clone(),
                _ => value,
            };
            return Err(failed(url, &error, partial(self)));
        }
        let parsed: WireEvent = match serde_json::from_value(value) {
            Ok(parsed) => parsed,
            Err(e) => return Err(http::bad_event(url, &e, &event.data, partial(self))),
        };
        let index = parsed.output_index.unwrap_or(0);
        match parsed.kind.as_str() {
            "response.output_text.delta" | "response.refusal.delta" => {
                self.streamed.insert(index);
                self.answer
                    .push_text(parsed.delta.as_deref().unwrap_or(""), on_text);
            }
            "response.output_item.added" | "response.output_item.done" => {
                let done = parsed.kind.ends_with("done");
                if let Some(item) = parsed.item {
                    self.item(index, item, done, on_text);
                }
            }
            "response.function_call_arguments.delta" => {
                let call = self.answer.call(index);
                call.arguments
                    .push_str(parsed.delta.as_deref().unwrap_or(""));
            }
            "response.function_call_arguments.done" => {
                if let Some(arguments) = parsed.arguments {
                    self.answer.call(index).arguments = arguments;
                }
            }
            "response.completed" | "response.incomplete" => {
                let response = parsed.response.unwrap_or(Value::Null);
                self.answer.truncated |=
                    response["status"] == "incomplete" || parsed.kind == "response.incomplete";
                self.answer.usage = read_usage(&response["usage"]);
                return Ok(true);
            }
            "response.failed" => {
                let response = parsed.response.unwrap_or(Value::Null);
                let error = match response.get("error") {
                    Some(error) if !error.is_null() => error.clone(),
                    _ => response,
                };
                return Err(failed(url, &error, partial(self)));
            }
            _ => {}
        }
        Ok(false)
    }

    fn whole(url: &str, bytes: &[u8]) -> Result<Reply, ProviderError> {
        let text = String::from_utf8_lossy(bytes);
        let response: Value =
            serde_json::from_str(&text).map_err(|e| http::bad_answer(url, &e, &text))?;
        if let Some(error) = response.get("error").filter(|e| !e.is_null()) {
            return Err(http::answer_error(url, error));
        }
        let Some(output) = response["output"].as_array() else {
            return Err(ProviderError::new(
                format!("answer from {url} has no output: {}", excerpt(&text, 100)),
                "",
            ));
        };
        let mut stream = Stream::default();
        for (i, item) in output.iter().enumerate() {
            stream.item(i as u64, item.clone(), true, &mut |_| {});
        }
        stream.answer.truncated = response["status"] == "incomplete";
        stream.answer.usage = read_usage(&response["usage"]);
        Ok(stream.answer.reply())
    }

    fn unstreamed(body: &str) -> Option<String> {
        http::unstreamed(body, &[])
    }
}

impl Stream {
    /// An output item at `index`, begun or `done`.
    fn item(&mut self, index: u64, item: Value, done: bool, on_text: &mut dyn FnMut(&str)) {
        let Value::Object(mut item) = item else {
            return;
        };
        let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_owned();
        match item.get("type").and_then(Value::as_str) {
            Some("function_call") => {
                let call = self.answer.call(index);
                call.id = text(item.get("call_id"));
                call.name = text(item.get("name"));
                let arguments = text(item.get("arguments"));
                if done || !arguments.is_empty() {
                    call.arguments = arguments;
                }
            }
            Some("reasoning") if done => {
                item.remove("type");
                self.answer
                    .thinking
                    .insert(index, Thinking::Reasoning { item });
            }
            Some("web_search_call") if done => {
                item.remove("type");
                self.answer
                    .thinking
                    .insert(index, Thinking::WebSearchCall { item });
            }
            Some("message") if done && !self.streamed.contains(&index) => {
                for part in item
                    .get("content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let piece = part
                        .get("text")
                        .or_else(|| part.get("refusal"))
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    self.answer.push_text(piece, on_text);
                }
                self.streamed.insert(index);
            }
            _ => {}
        }
    }
}

/// `error in stream from URL: message`: an overflow when the error says
/// the input did not fit, broken when its code says the server failed or
/// was busy.
fn failed(url: &str, error: &Value, partial: String) -> ProviderError {
    let base = http::stream_error(url, error, partial);
    let busy = matches!(
        error.get("code").and_then(Value::as_str),
        Some("server_error" | "rate_limit_exceeded" | "server_is_overloaded")
    );
    if busy && base.overflow().is_none() {
        base.broken()
    } else {
        base
    }
}

/// A `usage` object: `input_tokens`, `output_tokens` and
/// `input_tokens_details.cached_tokens`; none when either count is not a
/// sensible number (core then estimates).
fn read_usage(usage: &Value) -> Option<Usage> {
    #[derive(Deserialize)]
    struct Wire {
        #[serde(default, deserialize_with = "http::token_count")]
        input_tokens: Option<u64>,
        #[serde(default, deserialize_with = "http::token_count")]
        output_tokens: Option<u64>,
        #[serde(default, deserialize_with = "http::lenient")]
        input_tokens_details: Option<Map<String, Value>>,
    }
    let usage = Wire::deserialize(usage).ok()?;
    let input = usage.input_tokens?;
    let cached = usage
        .input_tokens_details
        .and_then(|d| d.get("cached_tokens").and_then(Value::as_u64))
        .unwrap_or(0)
        .min(input);
    Some(Usage {
        prompt_tokens: input,
        completion_tokens: usage.output_tokens?,
        cache_read_tokens: cached,
        cache_write_tokens: 0,
    })
}

#[cfg(test)]
mod tests;
