//! Google's Gemini API (`POST {base}/models/{model}:streamGenerateContent?alt=sse`,
//! issue 45): the body's shape, as the API reference at
//! <https://ai.google.dev/api/generate-content> gives it.
//!
//! ```json
//! {"contents":[{"parts":[{"text":"hi"}],"role":"user"},
//!              {"parts":[{"functionCall":{"args":{"path":"."},"name":"list_dir"},
//!                         "thoughtSignature":"…"}],"role":"model"},
//!              {"parts":[{"functionResponse":{"name":"list_dir",
//!                         "response":{"output":"a.rs"}}}],"role":"user"}],
//!  "generationConfig":{"maxOutputTokens":32000,"thinkingConfig":{"thinkingBudget":2048}},
//!  "systemInstruction":{"parts":[{"text":"…"}]},
//!  "toolConfig":{"functionCallingConfig":{"mode":"ANY"}},
//!  "tools":[{"functionDeclarations":[{"description":"…","name":"list_dir","parameters":{…}}]}]}
//! ```
//!
//! * `contents` are runs of one role, as the API wants them to alternate:
//!   the user's messages and the tool results are `user`, the answers
//!   `model`. A result is a `functionResponse` part naming the call's
//!   function, in call order; the pictures of a run's results follow its
//!   results, each after a line naming its call (as on the Chat
//!   Completions wire), and a user's pictures follow their text, as
//!   `inlineData` parts.
//! * Gemini gives no call ids: the provider names each call
//!   [`call_id`] (its request's number and its place in the answer), so
//!   the log, replay and the results agree, and nothing is random.
//! * Thought signatures ([`Thinking::ThoughtSignature`]) go back on the
//!   part they came on: a call's on its `functionCall` part, the text's on
//!   the text part (an empty one when the answer had no text). Gemini 3
//!   refuses a turn's calls without theirs (`400`): for Gemini 3 models
//!   ([`validates`]), an answer whose first call has none (an answer of
//!   another model, before a `/model` switch) gets [`STAND_IN`], the
//!   value Google documents for calls the model did not make.
//! * The model is in the URL, not the body; the effort asks
//!   `thinkingConfig` of the models that think ([`thinks`]): Gemini 3's
//!   `thinkingLevel`, 2.5's `thinkingBudget` (the effort's
//!   [`Effort::thinking_budget`]); `maxOutputTokens` is raised by that
//!   budget, since thinking counts towards it.

use serde_json::{json, Map, Value};

use super::{tool_images_text, Shape, ToolChoice};
use crate::models::Effort;
use crate::record::{Image, Message, Role, Thinking};
use crate::tools;

/// The id of the call at `index` (from 0) of the answer to request `seq`.
pub fn call_id(seq: u64, index: usize) -> String {
    format!("gemini_{seq}_{index}")
}

/// The signature Gemini 3 takes for a call it did not make itself (a
/// turn of another model): Google's documented way past its check
/// ("thought signatures", "transferring a conversation from another
/// model"), which the SDKs and gateways send the same.
pub const STAND_IN: &str = "skip_thought_signature_validator";

/// Whether `model` checks its calls' signatures: Gemini 3 and later.
pub fn validates(model: &str) -> bool {
    version(model).is_some_and(|v| v >= (3, 0))
}

/// Whether `model` thinks, and so takes a `thinkingConfig`: Gemini 2.5
/// and later (`gemini-2.5-flash`, `gemini-3-pro-preview`; a `models/`
/// prefix is allowed). Older models refuse the field.
pub fn thinks(model: &str) -> bool {
    version(model).is_some_and(|v| v >= (2, 5))
}

/// `(major, minor)` of a `gemini-MAJOR[.MINOR]-…` name.
fn version(model: &str) -> Option<(u32, u32)> {
    let name = model.rsplit('/').next().unwrap_or(model);
    let number = name.strip_prefix("gemini-")?.split('-').next()?;
    let (major, minor) = number.split_once('.').unwrap_or((number, "0"));
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// The `thinkingConfig` of `model` at `effort`, and the tokens it may
/// spend (which `maxOutputTokens` is raised by).
fn thinking_config(model: &str, effort: Effort) -> (Value, u64) {
    let budget = effort.thinking_budget();
    if version(model).is_some_and(|v| v >= (3, 0)) {
        (json!({"thinkingLevel": effort.as_str()}), budget)
    } else {
        (json!({"thinkingBudget": budget}), budget)
    }
}

/// The body around its `contents` (left empty, for the writer to fill).
pub(super) fn outer(model: &str, system: Option<&str>, shape: &Shape) -> Value {
    let mut body = json!({"contents": []});
    let mut config = Map::new();
    let thinking = shape
        .effort
        .filter(|_| thinks(model))
        .map(|e| thinking_config(model, e));
    if let Some(limit) = shape.limit {
        let extra = thinking.as_ref().map_or(0, |(_, budget)| *budget);
        config.insert(
            "maxOutputTokens".into(),
            json!(limit.tokens.saturating_add(extra)),
        );
    }
    if let Some((thinking, _)) = thinking {
        config.insert("thinkingConfig".into(), thinking);
    }
    if !config.is_empty() {
        body["generationConfig"] = Value::Object(config);
    }
    if let Some(system) = system {
        body["systemInstruction"] = json!({"parts": [{"text": system}]});
    }
    if shape.tools {
        let mut declarations: Vec<Value> = tools::offered(shape.builtin.as_deref(), shape.brief)
            .into_iter()
            .map(|d| declaration(d.name, d.description, &d.parameters))
            .collect();
        declarations.extend(
            shape
                .mcp
                .iter()
                .map(|t| declaration(&t.name, &t.description, &t.input_schema)),
        );
        if !declarations.is_empty() {
            body["tools"] = json!([{"functionDeclarations": declarations}]);
            if shape.tool_choice == Some(ToolChoice::Required) {
                body["toolConfig"] = json!({"functionCallingConfig": {"mode": "ANY"}});
            }
        }
    }
    body
}

/// One `functionDeclarations` entry; a tool without arguments has no
/// `parameters` (the API refuses an object schema without properties).
fn declaration(name: &str, description: &str, parameters: &Value) -> Value {
    let mut entry = json!({"name": name, "description": description});
    let parameters = schema(parameters);
    if parameters.get("properties").is_some() {
        entry["parameters"] = parameters;
    }
    entry
}

/// A JSON Schema as the API's `Schema` takes it: "a select subset of an
/// OpenAPI 3.0 schema object" (<https://ai.google.dev/api/caching#Schema>).
/// Kept: `type` (one name; a list's `"null"` becomes `nullable`),
/// `description`, `title`, `nullable`, `enum` (of strings; `const` becomes
/// a one-name `enum`), `properties`, `required`, `items`, `anyOf` (and
/// `oneOf` as `anyOf`), the numeric and length bounds, `pattern`,
/// `default`, and `format` where the API knows it (`enum` and `date-time`
/// for strings, `float`/`double`/`int32`/`int64` for numbers: it refuses
/// others such as `uri`). Dropped, as the API refuses them with `400
/// Invalid JSON payload received. Unknown name …`: `$schema`, `$id`,
/// `$ref`, `$defs`, `additionalProperties`, `allOf`, `not`,
/// `exclusiveMinimum`/`exclusiveMaximum`, `if`/`then`/`else`,
/// `patternProperties`, `examples` and any other key. An object whose
/// `properties` are empty loses them (the API refuses an empty map).
pub fn schema(value: &Value) -> Value {
    let Some(map) = value.as_object() else {
        return json!({});
    };
    let mut out = Map::new();
    let mut kind = None;
    for (key, v) in map {
        match key.as_str() {
            "type" => match v {
                Value::String(t) => kind = Some(t.clone()),
                Value::Array(types) => {
                    kind = types
                        .iter()
                        .filter_map(Value::as_str)
                        .find(|t| *t != "null")
                        .map(str::to_owned);
                    if types.iter().any(|t| t == "null") {
                        out.insert("nullable".into(), json!(true));
                    }
                }
                _ => {}
            },
            "description" | "title" | "pattern" | "default" | "nullable" | "minimum"
            | "maximum" | "minItems" | "maxItems" | "minLength" | "maxLength" | "minProperties"
            | "maxProperties" | "propertyOrdering" => {
                out.insert(key.clone(), v.clone());
            }
            "required" if v.is_array() => {
                out.insert(key.clone(), v.clone());
            }
            "enum" => {
                if let Some(names) = strings(v) {
                    out.insert("enum".into(), names);
                }
            }
            "const" => {
                if let Some(name) = v.as_str() {
                    out.insert("enum".into(), json!([name]));
                }
            }
            "properties" => {
                let properties: Map<String, Value> = v
                    .as_object()
                    .into_iter()
                    .flatten()
                    .map(|(name, s)| (name.clone(), schema(s)))
                    .collect();
                if !properties.is_empty() {
                    out.insert("properties".into(), Value::Object(properties));
                }
            }
            "items" => {
                let items = match v {
                    Value::Array(tuple) => tuple.first().map(schema),
                    other => Some(schema(other)),
                };
                if let Some(items) = items {
                    out.insert("items".into(), items);
                }
            }
            "anyOf" | "oneOf" => {
                let alternatives: Vec<Value> =
                    v.as_array().into_iter().flatten().map(schema).collect();
                if !alternatives.is_empty() {
                    out.insert("anyOf".into(), Value::Array(alternatives));
                }
            }
            _ => {}
        }
    }
    if let Some(format) = map.get("format").and_then(Value::as_str) {
        let known = match kind.as_deref() {
            Some("string") => ["enum", "date-time"].contains(&format),
            Some("number" | "integer") => ["float", "double", "int32", "int64"].contains(&format),
            _ => false,
        };
        if known {
            out.insert("format".into(), json!(format));
        }
    }
    if let Some(kind) = kind {
        out.insert("type".into(), json!(kind));
    }
    if !out.contains_key("properties") {
        out.remove("required");
    }
    Value::Object(out)
}

/// `v` when it is a list of strings.
fn strings(v: &Value) -> Option<Value> {
    let items = v.as_array()?;
    items
        .iter()
        .all(Value::is_string)
        .then(|| Value::Array(items.clone()))
}

/// The runs of the history the API gets as one `contents` element each.
pub(super) struct Contents<'a> {
    history: &'a [Message],
    next: usize,
    /// A step's first call without a signature gets [`STAND_IN`].
    vouch: bool,
}

impl<'a> Contents<'a> {
    pub(super) fn new(history: &'a [Message], vouch: bool) -> Contents<'a> {
        Contents {
            history,
            next: 0,
            vouch,
        }
    }

    /// A message's role on the wire, `None` when it has no part.
    fn role(m: &Message) -> Option<&'static str> {
        match m.role {
            Role::User if m.origin.is_none() && m.content.is_empty() && m.images.is_empty() => None,
            Role::User | Role::Tool => Some("user"),
            Role::Assistant if m.content.is_empty() && m.tool_calls.is_empty() => None,
            Role::Assistant => Some("model"),
        }
    }

    /// The parts of the run `history[start..end]`.
    fn parts(&self, start: usize, end: usize) -> Vec<Value> {
        let mut parts = Vec::new();
        // Results' pictures go after the results of their run.
        let mut pictures: Vec<&Message> = Vec::new();
        for (i, m) in self.history[start..end].iter().enumerate() {
            if m.role != Role::Tool {
                flush(&mut parts, &mut pictures);
            }
            match m.role {
                Role::User => {
                    let text = m.model_text();
                    if !text.is_empty() {
                        parts.push(json!({"text": text}));
                    }
                    parts.extend(m.images.iter().map(inline));
                }
                Role::Tool => {
                    let id = m.tool_call_id.as_deref().unwrap_or("");
                    let name = self.call_name(start + i, id);
                    parts.push(json!({"functionResponse": {
                        "name": name, "response": {"output": m.content}}}));
                    if !m.images.is_empty() {
                        pictures.push(m);
                    }
                }
                Role::Assistant => parts.extend(answer(m, self.vouch)),
            }
        }
        flush(&mut parts, &mut pictures);
        parts
    }

    /// The function of the call `id` that the result at `at` answers: the
    /// latest such call before it (its own id when none is found).
    fn call_name(&self, at: usize, id: &'a str) -> &'a str {
        self.history[..at]
            .iter()
            .rev()
            .flat_map(|m| &m.tool_calls)
            .find(|c| c.id == id)
            .map_or(id, |c| c.name.as_str())
    }
}

impl Iterator for Contents<'_> {
    type Item = Value;

    fn next(&mut self) -> Option<Value> {
        let (start, role) = self.history[self.next..]
            .iter()
            .enumerate()
            .find_map(|(i, m)| Contents::role(m).map(|r| (self.next + i, r)))?;
        let mut end = start;
        while let Some(m) = self.history.get(end) {
            match Contents::role(m) {
                Some(r) if r != role => break,
                _ => end += 1,
            }
        }
        self.next = end;
        Some(json!({"parts": self.parts(start, end), "role": role}))
    }
}

/// The pictures of the results in `pictures`, each after a line naming
/// its call, appended to `parts`.
fn flush(parts: &mut Vec<Value>, pictures: &mut Vec<&Message>) {
    for m in pictures.drain(..) {
        parts.push(json!({"text": tool_images_text(m)}));
        parts.extend(m.images.iter().map(inline));
    }
}

/// One `inlineData` part.
fn inline(image: &Image) -> Value {
    json!({"inlineData": {"data": &*image.data, "mimeType": image.media_type}})
}

/// An answer's parts: its text (with the text's signature), then its
/// calls (each with its own; with `vouch`, the first one [`STAND_IN`]
/// when the answer has none).
fn answer(m: &Message, vouch: bool) -> Vec<Value> {
    let signature = |call: Option<&str>| {
        m.thinking.iter().find_map(|t| match t {
            Thinking::ThoughtSignature { signature, call: c } if c.as_deref() == call => {
                Some(signature.as_str())
            }
            _ => None,
        })
    };
    let mut parts = Vec::new();
    let text = signature(None);
    if !m.content.is_empty() || text.is_some() {
        let mut part = json!({"text": m.content});
        if let Some(signature) = text {
            part["thoughtSignature"] = json!(signature);
        }
        parts.push(part);
    }
    let unsigned = !m
        .thinking
        .iter()
        .any(|t| matches!(t, Thinking::ThoughtSignature { call: Some(_), .. }));
    for (i, c) in m.tool_calls.iter().enumerate() {
        // The API wants the arguments as an object; a model that wrote
        // something else gets an empty one (its result says why).
        let args = serde_json::from_str::<Value>(&c.arguments)
            .ok()
            .filter(Value::is_object)
            .unwrap_or_else(|| json!({}));
        let mut part = json!({"functionCall": {"args": args, "name": c.name}});
        if let Some(signature) = signature(Some(&c.id)) {
            part["thoughtSignature"] = json!(signature);
        } else if vouch && unsigned && i == 0 {
            part["thoughtSignature"] = json!(STAND_IN);
        }
        parts.push(part);
    }
    parts
}

#[cfg(test)]
mod tests;
