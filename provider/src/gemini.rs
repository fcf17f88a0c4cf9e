//! Google's Gemini API (issue 45), as its reference describes it
//! (<https://ai.google.dev/api/generate-content>).
//!
//! A request goes to `POST {base}/models/{model}:streamGenerateContent?alt=sse`
//! with the key in the `x-goog-api-key` header (never in the URL, so no
//! log line or error shows it). The stream is `data:` events, each a whole
//! `GenerateContentResponse`:
//!
//! * `candidates[0].content.parts[]`: a `text` part is text, shown at
//!   once; a `functionCall` part (`name`, `args` as an object) is a call,
//!   named [`revolve_core::request::gemini::call_id`] (Gemini gives none);
//!   a part's `thoughtSignature` is kept ([`Thinking::ThoughtSignature`],
//!   with the call it came on), to be sent back on the same part; a part
//!   marked `thought: true` (a thought summary) is progress, not kept;
//! * `candidates[0].finishReason`: `MAX_TOKENS` marks the reply
//!   [`Reply::truncated`]; any reason but `STOP` on an answer with
//!   nothing in it (`SAFETY`, `RECITATION`, `MALFORMED_FUNCTION_CALL`…)
//!   fails it with the reason; `promptFeedback.blockReason` without a
//!   candidate fails it too;
//! * `usageMetadata`: `promptTokenCount` (the cached part included),
//!   `cachedContentTokenCount` (read from the cache), `candidatesTokenCount`
//!   and `thoughtsTokenCount` (the answer's, both billed as output); each
//!   event's counts replace the last;
//! * `error` (`{"code": 503, "message": …, "status": "UNAVAILABLE"}`):
//!   fails the request, broken when its status says the server was busy
//!   or failed inside, an overflow when its words say so.
//!
//! The stream has no end event: it ends when the server closes it after
//! the event holding a `finishReason`; a stream that ends before one is
//! broken, keeping its text. A non-streamed answer (one response object,
//! or a JSON array of them) is read the same way. The window check counts
//! a request with `countTokens` ([`Body::counting`]), which is free.
//!
//! Failures: `400 INVALID_ARGUMENT` "The input token count (N) exceeds the
//! maximum number of tokens allowed (M)" is an overflow; `429
//! RESOURCE_EXHAUSTED` gives its wait in the body's `RetryInfo.retryDelay`
//! (`"37s"`), read as a `Retry-After`.
//!
//! [`Body::counting`]: revolve_core::request::Body::counting

use std::fmt;
use std::time::Duration;

use serde_json::Value;

use revolve_core::record::Thinking;
use revolve_core::request::gemini::call_id;
use revolve_core::{Reply, Request, Usage};

use super::http::{self, Answer, Http, Protocol};
use super::sse::SseEvent;
use super::{Provider, ProviderError};

/// A Gemini API endpoint.
///
/// The key is sent as `x-goog-api-key: KEY` only, never shown: `Debug`
/// hides it and error messages are scrubbed of it.
#[derive(Clone)]
pub struct Gemini {
    http: Http,
}

impl Gemini {
    /// A provider for `base_url` (such as
    /// `https://generativelanguage.googleapis.com/v1beta`; a trailing `/`
    /// is dropped), with an optional API key and the default stall timeout.
    pub fn new(base_url: impl Into<String>, api_key: Option<String>) -> Gemini {
        Gemini {
            http: Http::new(base_url.into(), api_key),
        }
    }

    /// The same provider, knowing which variable its key came from (for
    /// the hint of a 401 or 403).
    pub fn with_key_var(self, var: Option<&'static str>) -> Gemini {
        Gemini {
            http: self.http.with_key_var(var),
        }
    }

    /// The same provider with another stall timeout: the longest silence
    /// allowed while waiting for any byte of the answer.
    pub fn with_stall_timeout(self, stall: Duration) -> Gemini {
        Gemini {
            http: self.http.with_stall(stall),
        }
    }

    /// The base URL, without a trailing `/`.
    pub fn base_url(&self) -> &str {
        self.http.base_url()
    }

    /// The models the endpoint offers: `GET {base_url}/models?pageSize=1000`,
    /// their names without `models/`, in the server's order.
    pub fn models(&self) -> Result<Vec<String>, ProviderError> {
        let url = format!("{}/models?pageSize=1000", self.http.base_url());
        let within = self.http.stall();
        let list = self.http.ask_json(&url, &self.headers(), None, within)?;
        Ok(list["models"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m["name"].as_str())
            .map(|name| name.strip_prefix("models/").unwrap_or(name).to_owned())
            .collect())
    }

    /// The headers every call carries: the key, when there is one.
    fn headers(&self) -> Vec<(&'static str, String)> {
        self.http
            .api_key()
            .map(|key| ("x-goog-api-key", key.to_owned()))
            .into_iter()
            .collect()
    }

    /// The URL of `model`'s `method` (`streamGenerateContent`,
    /// `countTokens`).
    fn url(&self, model: &str, method: &str) -> String {
        let model = model.strip_prefix("models/").unwrap_or(model);
        format!("{}/models/{model}:{method}", self.http.base_url())
    }

    /// The URL requests for `model` go to.
    pub fn endpoint(&self, model: &str) -> String {
        format!("{}?alt=sse", self.url(model, "streamGenerateContent"))
    }
}

impl Provider for Gemini {
    fn complete(
        &self,
        request: &Request,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<Reply, ProviderError> {
        let url = self.endpoint(&request.model);
        let mut reply =
            self.http
                .exchange::<Stream>(&url, &self.headers(), &request.body, on_text)?;
        name_calls(&mut reply, request.seq);
        Ok(reply)
    }

    fn name(&self) -> &'static str {
        "gemini"
    }

    /// `countTokens` is free.
    fn counts(&self) -> bool {
        true
    }

    /// The `totalTokens` of `countTokens` for the same request, or the
    /// count the server's refusal names when it is over the model's limit.
    fn count(&self, request: &Request) -> Option<u64> {
        let body = request.counting()?;
        let url = self.url(&request.model, "countTokens");
        let asked =
            self.http
                .ask_json(&url, &self.headers(), Some(&body.text()), self.http.stall());
        match asked {
            Ok(answer) => answer["totalTokens"]
                .as_u64()
                .filter(|&n| n <= revolve_core::policy::MAX_TOKEN_COUNT),
            Err(error) => error.overflow().and_then(|o| o.asked),
        }
    }
}

impl fmt::Debug for Gemini {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.http.debug("Gemini", f)
    }
}

/// The reply's calls named by their place in the answer to request
/// `seq`, and their signatures moved with them.
fn name_calls(reply: &mut Reply, seq: u64) {
    for (index, call) in reply.tool_calls.iter_mut().enumerate() {
        let id = call_id(seq, index);
        for t in &mut reply.thinking {
            if let Thinking::ThoughtSignature {
                call: Some(named), ..
            } = t
            {
                if *named == call.id {
                    named.clone_from(&id);
                }
            }
        }
        call.id = id;
    }
}

/// A Gemini answer being read.
#[derive(Default)]
struct Stream {
    answer: Answer,
    /// Calls so far (their index in the answer).
    calls: u64,
    /// Signatures so far (their place among the answer's thinking).
    signatures: u64,
    /// The text part's signature, the last one seen.
    text_signature: Option<String>,
    /// The reason the answer stopped, once an event said it.
    finished: Option<String>,
}

impl Stream {
    /// Takes one `GenerateContentResponse`.
    fn take(
        &mut self,
        url: &str,
        response: &Value,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<(), ProviderError> {
        if let Some(error) = response.get("error") {
            let partial = std::mem::take(&mut self.answer.text);
            return Err(http::stream_error(url, error, partial));
        }
        if let Some(usage) = usage(&response["usageMetadata"]) {
            self.answer.usage = Some(usage);
        }
        let candidate = &response["candidates"][0];
        if candidate.is_null() {
            if let Some(reason) = response["promptFeedback"]["blockReason"].as_str() {
                let message = format!("{url} refused the prompt: {reason}");
                return Err(ProviderError::new(message, ""));
            }
        }
        for part in candidate["content"]["parts"]
            .as_array()
            .into_iter()
            .flatten()
        {
            self.part(part, on_text);
        }
        if let Some(reason) = candidate["finishReason"].as_str() {
            self.answer.truncated |= reason == "MAX_TOKENS";
            self.finished = Some(reason.to_owned());
        }
        Ok(())
    }

    /// Takes one part of the answer.
    fn part(&mut self, part: &Value, on_text: &mut dyn FnMut(&str)) {
        let signature = part["thoughtSignature"].as_str().map(str::to_owned);
        if part["thought"] == Value::Bool(true) {
            return;
        }
        if let Some(call) = part.get("functionCall") {
            let index = self.calls;
            self.calls += 1;
            // A placeholder id, unique in the answer, named by its place
            // once the answer is whole (`name_calls`).
            let id = format!("#{index}");
            let slot = self.answer.call(index);
            slot.id.clone_from(&id);
            slot.name = call["name"].as_str().unwrap_or_default().to_owned();
            slot.arguments = call
                .get("args")
                .map(http::arguments_text)
                .unwrap_or_default();
            if let Some(signature) = signature {
                let block = Thinking::ThoughtSignature {
                    signature,
                    call: Some(id),
                };
                self.answer.thinking.insert(self.signatures, block);
                self.signatures += 1;
            }
            return;
        }
        if let Some(text) = part["text"].as_str() {
            self.answer.push_text(text, on_text);
        }
        if signature.is_some() {
            self.text_signature = signature;
        }
    }

    /// The reply, once the answer ended: a stop with nothing in it, for a
    /// reason other than the model's own, is a failure.
    fn finish(&mut self, url: &str) -> Result<Reply, ProviderError> {
        let reason = self.finished.as_deref().unwrap_or("STOP");
        let empty = self.answer.text.is_empty() && self.answer.calls.is_empty();
        if empty && !matches!(reason, "STOP" | "MAX_TOKENS" | "FINISH_REASON_UNSPECIFIED") {
            let message = format!("the model at {url} stopped without an answer: {reason}");
            return Err(ProviderError::new(message, ""));
        }
        if let Some(signature) = self.text_signature.take() {
            let block = Thinking::ThoughtSignature {
                signature,
                call: None,
            };
            self.answer.thinking.insert(self.signatures, block);
        }
        Ok(self.answer.reply())
    }
}

impl Protocol for Stream {
    const END: &'static str = "a finishReason";

    fn carries_unkept(event: &SseEvent) -> bool {
        http::holds_text(&event.data, &["thoughtSignature"])
            || event.data.contains("\"thought\":true")
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
        let value: Value = match serde_json::from_str(&event.data) {
            Ok(value) => value,
            Err(e) => {
                let partial = std::mem::take(&mut self.answer.text);
                return Err(http::bad_event(url, &e, &event.data, partial));
            }
        };
        self.take(url, &value, on_text)?;
        Ok(false)
    }

    fn ended(&mut self, url: &str) -> Option<Result<Reply, ProviderError>> {
        self.finished.is_some().then(|| self.finish(url))
    }

    fn whole(url: &str, bytes: &[u8]) -> Result<Reply, ProviderError> {
        let text = String::from_utf8_lossy(bytes);
        let value: Value =
            serde_json::from_str(&text).map_err(|e| http::bad_answer(url, &e, &text))?;
        if let Some(error) = value.get("error") {
            return Err(http::answer_error(url, error));
        }
        let mut stream = Stream::default();
        let responses = match value {
            Value::Array(items) => items,
            one => vec![one],
        };
        for response in &responses {
            stream.take(url, response, &mut |_| {})?;
        }
        stream.finish(url)
    }

    fn unstreamed(_body: &str) -> Option<String> {
        // Streaming is the URL's (`streamGenerateContent`), not the body's.
        None
    }
}

/// A `usageMetadata` object's counts, when its prompt count reads as a
/// sensible number.
fn usage(value: &Value) -> Option<Usage> {
    let count = |key: &str| {
        value
            .get(key)
            .and_then(Value::as_u64)
            .filter(|&n| n <= revolve_core::policy::MAX_TOKEN_COUNT)
    };
    let prompt = count("promptTokenCount")?;
    let output = count("candidatesTokenCount").unwrap_or(0);
    Some(Usage {
        prompt_tokens: prompt,
        completion_tokens: output.saturating_add(count("thoughtsTokenCount").unwrap_or(0)),
        cache_read_tokens: count("cachedContentTokenCount").unwrap_or(0).min(prompt),
        cache_write_tokens: 0,
    })
}

#[cfg(test)]
mod tests;
