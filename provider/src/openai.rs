//! The OpenAI Chat Completions protocol, spoken by OpenAI and by most local
//! and hosted servers (Ollama, llama.cpp, vLLM, OpenRouter, …).
//!
//! A stream is `data:` events of `chat.completion.chunk` objects ending in
//! `data: [DONE]`. Of each chunk only choice 0 is read: `delta.content` is
//! text; `delta.tool_calls[]` entries carry an `index`, on their first
//! appearance the call's `id` and `function.name`, and `function.arguments`
//! in fragments joined per index. A chunk with `usage` (asked for with
//! `stream_options.include_usage`) gives the token counts. A
//! `finish_reason` of `"length"` in any chunk's choice 0 marks the reply
//! [`Reply::truncated`]. An `error` field or an `event: error` fails the
//! request (its `error.message`, or its data as it came); either is an
//! overflow when its words say so. A non-streamed answer is one
//! `chat.completion` with `choices[0].message.content` and `.tool_calls`,
//! truncated when `choices[0].finish_reason` is `"length"`.
//!
//! A stream that ends empty is asked again with `"stream": false` and
//! without `stream_options` (see the `http` module).

use revolve_core::config::WindowProbe;
use std::fmt;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use revolve_core::{Reply, Request, Usage};

use super::http::{self, Answer, Http, Protocol, ERROR_BODY_SHOWN};
use super::sse::SseEvent;
use super::{excerpt, Provider, ProviderError};

/// An OpenAI-compatible Chat Completions endpoint.
///
/// The key is sent as `Authorization: Bearer KEY` only, never shown: `Debug`
/// hides it and error messages are scrubbed of it.
#[derive(Clone)]
pub struct OpenAi {
    http: Http,
    /// Whether [`Provider::count`] asks the server (local servers only).
    counts: bool,
    /// The preset it was made for (`openai`, `ollama`, ...), the name the
    /// log keeps: the `openai` preset's requests carry a cache key.
    name: &'static str,
}

impl OpenAi {
    /// A provider for `base_url` (such as `https://api.openai.com/v1`; a
    /// trailing `/` is dropped), with an optional API key and the default
    /// stall timeout.
    pub fn new(base_url: impl Into<String>, api_key: Option<String>) -> OpenAi {
        OpenAi {
            http: Http::new(base_url.into(), api_key),
            counts: false,
            name: "openai",
        }
    }

    /// The same provider, named for the preset it serves.
    pub fn with_name(self, name: &'static str) -> OpenAi {
        OpenAi { name, ..self }
    }

    /// The same provider, knowing which variable its key came from (for
    /// the hint of a 401 or 403).
    pub fn with_key_var(self, var: Option<&'static str>) -> OpenAi {
        OpenAi {
            http: self.http.with_key_var(var),
            ..self
        }
    }

    /// The same provider asking the server to count requests when the
    /// core wants a count (see [`Provider::count`]): for local servers,
    /// where it costs the user nothing.
    pub fn with_counts(self, counts: bool) -> OpenAi {
        OpenAi { counts, ..self }
    }

    /// The same provider with another stall timeout: the longest silence
    /// allowed while waiting for any byte of the answer.
    pub fn with_stall_timeout(self, stall: Duration) -> OpenAi {
        OpenAi {
            http: self.http.with_stall(stall),
            ..self
        }
    }

    /// The same provider waiting this long for an answer's first content
    /// from a server on this machine, instead of
    /// [`revolve_core::policy::LOCAL_PREFILL_WAIT`] (a remote server gets
    /// the stall timeout throughout). Given after
    /// [`OpenAi::with_stall_timeout`], that timeout then bounds only the
    /// silences after the first content; otherwise an explicit stall
    /// timeout holds everywhere.
    pub fn with_prefill_wait(self, wait: Duration) -> OpenAi {
        OpenAi {
            http: self.http.with_prefill_wait(wait),
            ..self
        }
    }

    /// The base URL, without a trailing `/`.
    pub fn base_url(&self) -> &str {
        self.http.base_url()
    }

    /// The models the endpoint offers: `GET {base_url}/models`, ids in the
    /// server's order.
    pub fn models(&self) -> Result<Vec<String>, ProviderError> {
        let headers = self.headers();
        let url = format!("{}/models", self.http.base_url());
        self.http.models(&url, &headers)
    }

    /// The context window the server says it has for `model`, asked the
    /// way `probe` says, within two seconds; `None` when it does not say
    /// (or cannot be asked). The core reads the answer.
    pub fn context_window(&self, probe: WindowProbe, model: &str) -> Option<u64> {
        let base = self.http.base_url();
        let root = base.strip_suffix("/v1").unwrap_or(base);
        let headers = self.headers();
        let within = revolve_core::policy::WINDOW_PROBE_WAIT;
        let answer = match probe {
            WindowProbe::LlamacppProps => {
                self.http
                    .ask_json(&format!("{root}/props"), &headers, None, within)
            }
            WindowProbe::OllamaShow => {
                let body = serde_json::json!({ "model": model }).to_string();
                self.http
                    .ask_json(&format!("{root}/api/show"), &headers, Some(&body), within)
            }
            WindowProbe::OllamaPs => {
                self.http
                    .ask_json(&format!("{root}/api/ps"), &headers, None, within)
            }
            WindowProbe::ModelList => {
                self.http
                    .ask_json(&format!("{base}/models"), &headers, None, within)
            }
        };
        revolve_core::config::window_from(probe, &answer.ok()?, model)
    }

    /// The context Ollama runs `model` at, learned before the first
    /// request: its Modelfile's `num_ctx` (`/api/show`), else the context
    /// of the loaded model (`/api/ps`); a model not loaded yet is loaded
    /// (an empty `/api/generate` does that) and asked about again. `None`
    /// when the server does not say.
    pub fn ollama_context(&self, model: &str) -> Option<u64> {
        if let Some(n) = self.context_window(WindowProbe::OllamaShow, model) {
            return Some(n);
        }
        if let Some(n) = self.context_window(WindowProbe::OllamaPs, model) {
            return Some(n);
        }
        let base = self.http.base_url();
        let root = base.strip_suffix("/v1").unwrap_or(base);
        let body = serde_json::json!({ "model": model }).to_string();
        self.http
            .ask_json(
                &format!("{root}/api/generate"),
                &self.headers(),
                Some(&body),
                revolve_core::policy::OLLAMA_LOAD_WAIT,
            )
            .ok()?;
        self.context_window(WindowProbe::OllamaPs, model)
    }

    /// The headers every call carries: the key as a bearer token, when
    /// there is one.
    fn headers(&self) -> Vec<(&'static str, String)> {
        self.http
            .api_key()
            .map(|key| ("authorization", format!("Bearer {key}")))
            .into_iter()
            .collect()
    }

    /// The URL requests go to: `{base_url}/chat/completions`.
    pub fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.http.base_url())
    }
}

impl Provider for OpenAi {
    fn complete(
        &self,
        request: &Request,
        on_text: &mut dyn FnMut(&str),
    ) -> Result<Reply, ProviderError> {
        let headers = self.headers();
        self.http
            .exchange::<Chat>(&self.endpoint(), &headers, &request.body, on_text)
    }

    fn counts(&self) -> bool {
        self.counts
    }

    /// The prompt's count from an unstreamed request for one token, as
    /// core builds it ([`Request::counting`]): its `usage.prompt_tokens`,
    /// or the count the server's refusal names when the prompt is larger
    /// than the context.
    fn count(&self, request: &Request) -> Option<u64> {
        if !self.counts {
            return None;
        }
        let body = request.counting()?;
        let headers = self.headers();
        match self.http.ask_json(
            &self.endpoint(),
            &headers,
            Some(&body.text()),
            self.http.stall(),
        ) {
            Ok(answer) => answer["usage"]["prompt_tokens"]
                .as_u64()
                .filter(|&n| n <= revolve_core::policy::MAX_TOKEN_COUNT),
            Err(error) => error.overflow().and_then(|o| o.asked),
        }
    }

    fn name(&self) -> &'static str {
        self.name
    }
}

impl fmt::Debug for OpenAi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.http.debug("OpenAi", f)
    }
}

/// A Chat Completions answer being read.
#[derive(Default)]
struct Chat {
    answer: Answer,
}

impl Protocol for Chat {
    const END: &'static str = "[DONE]";

    fn carries_unkept(event: &SseEvent) -> bool {
        http::holds_text(&event.data, &["reasoning", "reasoning_content"])
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
        let answer = &mut self.answer;
        if event.data.trim() == "[DONE]" {
            return Ok(true);
        }
        if event.event.as_deref() == Some("error") {
            let partial = std::mem::take(&mut answer.text);
            return Err(match serde_json::from_str::<Value>(&event.data) {
                Ok(Value::Object(mut object)) => {
                    let error = object.remove("error").unwrap_or(Value::Object(object));
                    http::stream_error(url, &error, partial)
                }
                _ => {
                    let message = format!(
                        "error in stream from {url}: {}",
                        excerpt(&event.data, ERROR_BODY_SHOWN)
                    );
                    ProviderError::new(message, partial).overflowing(&event.data)
                }
            });
        }
        let chunk: WireChunk = serde_json::from_str(&event.data)
            .map_err(|e| http::bad_event(url, &e, &event.data, std::mem::take(&mut answer.text)))?;
        if let Some(error) = chunk.error {
            return Err(http::stream_error(
                url,
                &error,
                std::mem::take(&mut answer.text),
            ));
        }
        if let Some(choice) = chunk
            .choices
            .into_iter()
            .find(|c| c.index.unwrap_or(0) == 0)
        {
            answer.truncated |= choice.finish_reason.as_deref() == Some("length");
            if let Some(delta) = choice.delta {
                answer.push_text(delta.content.as_deref().unwrap_or(""), on_text);
                for call in delta.tool_calls.unwrap_or_default() {
                    add_fragment(answer, call);
                }
            }
        }
        if let Some(usage) = chunk.usage.as_ref().and_then(WireUsage::read) {
            answer.usage = Some(usage);
        }
        Ok(false)
    }

    fn whole(url: &str, bytes: &[u8]) -> Result<Reply, ProviderError> {
        let text = String::from_utf8_lossy(bytes);
        let completion: WireCompletion =
            serde_json::from_str(&text).map_err(|e| http::bad_answer(url, &e, &text))?;
        if let Some(error) = completion.error {
            return Err(http::answer_error(url, &error));
        }
        let Some(choice) = completion
            .choices
            .into_iter()
            .find(|c| c.index.unwrap_or(0) == 0)
        else {
            return Err(ProviderError::new(
                format!("answer from {url} has no choices: {}", excerpt(&text, 100)),
                "",
            ));
        };
        let mut answer = Answer {
            usage: completion.usage.as_ref().and_then(WireUsage::read),
            truncated: choice.finish_reason.as_deref() == Some("length"),
            ..Answer::default()
        };
        if let Some(message) = choice.message {
            answer.text = message.content.unwrap_or_default();
            for (i, call) in message
                .tool_calls
                .unwrap_or_default()
                .into_iter()
                .enumerate()
            {
                // A whole answer's calls are in its array's order; an
                // `index` a server adds is not trusted (two alike would
                // merge two calls).
                let entry = answer.call(i as u64);
                entry.id = call.id.unwrap_or_default();
                if let Some(function) = call.function {
                    entry.name = function.name.unwrap_or_default();
                    entry.arguments = function
                        .arguments
                        .as_ref()
                        .map(http::arguments_text)
                        .unwrap_or_default();
                }
            }
        }
        Ok(answer.reply())
    }

    fn unstreamed(body: &str) -> Option<String> {
        http::unstreamed(body, &["stream_options"])
    }
}

/// Adds one `delta.tool_calls[]` entry to the calls so far. An entry
/// without an `index` (some servers leave it out) starts a new call when it
/// brings an id not seen yet, and otherwise continues the last call.
fn add_fragment(answer: &mut Answer, call: WireCall) {
    let index = call.index.unwrap_or_else(|| {
        let last = answer.calls.keys().next_back().copied();
        let known = |id: &str| answer.calls.values().any(|c| c.id == id);
        match (last, call.id.as_deref()) {
            (None, _) => 0,
            // An index is the server's number: at its largest, the last call.
            (Some(last), Some(id)) if !id.is_empty() && !known(id) => last.saturating_add(1),
            (Some(last), _) => last,
        }
    });
    let entry = answer.call(index);
    if let Some(id) = call.id.filter(|id| !id.is_empty()) {
        if entry.id.is_empty() {
            entry.id = id;
        }
    }
    if let Some(function) = call.function {
        // Some servers repeat the name in every fragment.
        if let Some(name) = function.name.filter(|n| !n.is_empty()) {
            if entry.name.is_empty() {
                entry.name = name;
            }
        }
        if let Some(arguments) = &function.arguments {
            entry.arguments.push_str(&http::arguments_text(arguments));
        }
    }
}

#[derive(Deserialize)]
struct WireChunk {
    #[serde(default)]
    choices: Vec<WireChoice>,
    /// Read by [`WireUsage::read`]: a usage of any shape never fails the
    /// chunk.
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct WireCompletion {
    #[serde(default)]
    choices: Vec<WireChoice>,
    #[serde(default)]
    usage: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct WireChoice {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    delta: Option<WireMessage>,
    #[serde(default)]
    message: Option<WireMessage>,
    /// `stop`, `length`, `tool_calls`, …; `null` until the last chunk.
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireCall>>,
}

#[derive(Deserialize)]
struct WireCall {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<WireFunction>,
}

#[derive(Deserialize)]
struct WireFunction {
    #[serde(default)]
    name: Option<String>,
    /// A string, or an object from servers that parse it.
    #[serde(default)]
    arguments: Option<Value>,
}

/// A `usage` object. Usage is advisory: a count that is not a sensible
/// number (see [`http::token_count`]) is read as missing.
#[derive(Deserialize)]
struct WireUsage {
    #[serde(default, deserialize_with = "http::token_count")]
    prompt_tokens: Option<u64>,
    #[serde(default, deserialize_with = "http::token_count")]
    completion_tokens: Option<u64>,
    /// `cached_tokens`: the prompt tokens read from the prompt cache.
    #[serde(default, deserialize_with = "http::lenient")]
    prompt_tokens_details: Option<WireDetails>,
}

/// `usage.prompt_tokens_details`.
#[derive(Deserialize)]
struct WireDetails {
    #[serde(default, deserialize_with = "http::token_count")]
    cached_tokens: Option<u64>,
}

impl WireUsage {
    /// The counts of a `usage` value, when both read as sensible numbers;
    /// otherwise none, and core estimates both. Never an error: the answer
    /// was shown already.
    fn read(value: &Value) -> Option<Usage> {
        let usage = WireUsage::deserialize(value).ok()?;
        let prompt_tokens = usage.prompt_tokens?;
        // Part of the prompt, so never more than it.
        let cached = usage
            .prompt_tokens_details
            .and_then(|d| d.cached_tokens)
            .unwrap_or(0)
            .min(prompt_tokens);
        Some(Usage {
            prompt_tokens,
            completion_tokens: usage.completion_tokens?,
            cache_read_tokens: cached,
            cache_write_tokens: 0,
        })
    }
}

#[cfg(test)]
mod tests;
