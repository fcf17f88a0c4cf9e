//! Google's Gemini API as the fake plays it (issue 45), from its reference
//! (<https://ai.google.dev/api/generate-content>) and its thought
//! signature rules (<https://ai.google.dev/gemini-api/docs/thought-signatures>):
//!
//! * A stream (`…:streamGenerateContent?alt=sse`) is `data:` events, each
//!   a whole `GenerateContentResponse`: one per text piece, one per call
//!   (a `functionCall` with its whole `args` object: Gemini never splits
//!   them), then one with an empty text part, the `finishReason` (`STOP`,
//!   or `MAX_TOKENS` at the length limit) and the `usageMetadata`. There is
//!   no end event: the server closes the stream. A cut stream stops after
//!   its text pieces.
//! * Every answer carries a thought signature, as Gemini 3's do: on its
//!   first `functionCall` part when it calls, else on its last part. The
//!   server remembers them, and refuses (`400 INVALID_ARGUMENT`, the
//!   API's words) a request whose current turn (the model contents after
//!   the last user content holding text) has a call step whose first
//!   `functionCall` part lacks the signature it was given (or the
//!   documented stand-in for calls the model did not make, [`STAND_IN`]).
//! * `…:countTokens` answers `{"totalTokens": N}`, N the counted request
//!   body's bytes over the [`crate::Limit`]'s bytes a token (four without
//!   one), and takes no scripted reply.
//! * Errors are `{"error": {"code", "message", "status"}}`.

use serde_json::{json, Value};

use super::*;

/// The API's `400` for a call step sent back without its signature.
pub const MISSING_SIGNATURE: &str =
    "Function call is missing a thought_signature in functionCall parts. This is required for \
     tools to work correctly, and missing thought_signature may lead to degraded model \
     performance.";

/// The signature the API takes for calls the model did not make.
pub const STAND_IN: &str = "skip_thought_signature_validator";

/// An error body of the API.
pub fn error(code: u16, message: &str, status: &str) -> String {
    json!({"error": {"code": code, "message": message, "status": status}}).to_string()
}

/// The `429 RESOURCE_EXHAUSTED` body asking to wait `seconds`, as the API
/// sends it (its `RetryInfo`).
pub fn rate_limited(seconds: u64) -> String {
    json!({"error": {
        "code": 429,
        "message": "You exceeded your current quota, please check your plan and billing details.",
        "status": "RESOURCE_EXHAUSTED",
        "details": [
            {"@type": "type.googleapis.com/google.rpc.QuotaFailure",
             "violations": [{"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests"}]},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": format!("{seconds}s")},
        ]
    }})
    .to_string()
}

/// The signature the fake gives the answer numbered `n`.
pub fn signature_of(n: usize) -> String {
    crate::thinking::signature(&format!("gemini answer {n}"))
}

/// One event of parts (and, at the end, the finish and usage).
fn event(parts: Value, finish: Option<&str>, usage: Option<(u64, u64)>) -> String {
    let mut candidate = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
    if let Some(reason) = finish {
        candidate["finishReason"] = json!(reason);
    }
    let mut response = json!({"candidates": [candidate], "modelVersion": "fake"});
    if let Some((prompt, output)) = usage {
        response["usageMetadata"] = json!({
            "promptTokenCount": prompt,
            "candidatesTokenCount": output,
            "totalTokenCount": prompt + output,
        });
    }
    response.to_string()
}

/// One text piece as its event.
pub(crate) fn piece(text: &str) -> String {
    format!("data: {}\n\n", event(json!([{ "text": text }]), None, None))
}

/// The last event of a text answer of `usage`.
pub(crate) fn end(finish: &str, usage: Option<(u64, u64)>, signature: Option<&str>) -> String {
    let mut part = json!({"text": ""});
    if let Some(signature) = signature {
        part["thoughtSignature"] = json!(signature);
    }
    format!("data: {}\n\n", event(json!([part]), Some(finish), usage))
}

/// The events of an answer (see the module doc), signed `signature`.
pub(crate) fn stream(
    conn: &mut Conn,
    chunks: &[String],
    calls: &[(String, String, String)],
    usage: Option<(u64, u64)>,
    end_by: End,
    signature: &str,
) -> io::Result<()> {
    for text in chunks {
        conn.write_all(piece(text).as_bytes())?;
        conn.flush()?;
    }
    if end_by == End::Cut {
        return Ok(());
    }
    for (i, (_, name, arguments)) in calls.iter().enumerate() {
        let args: Value = serde_json::from_str(arguments).unwrap_or_else(|_| json!({}));
        let mut part = json!({"functionCall": {"name": name, "args": args}});
        if i == 0 {
            part["thoughtSignature"] = json!(signature);
        }
        conn.write_all(format!("data: {}\n\n", event(json!([part]), None, None)).as_bytes())?;
        conn.flush()?;
    }
    let finish = if end_by == End::Length {
        "MAX_TOKENS"
    } else {
        "STOP"
    };
    let text_signature = calls.is_empty().then_some(signature);
    conn.write_all(end(finish, usage, text_signature).as_bytes())?;
    conn.flush()
}

/// A non-streamed answer of `text`.
pub(crate) fn whole(text: &str, usage: Option<(u64, u64)>) -> String {
    event(json!([{ "text": text }]), Some("STOP"), usage)
}

/// A model list (`GET …/models`).
pub(crate) fn models(ids: &[String]) -> String {
    let models: Vec<Value> = ids
        .iter()
        .map(|id| {
            json!({"name": format!("models/{id}"), "displayName": id,
                         "inputTokenLimit": 1_048_576, "outputTokenLimit": 65_536})
        })
        .collect();
    json!({ "models": models }).to_string()
}

/// What the API says to this request body, given the signatures it
/// answered with: `Err` with the message of its `400`.
pub fn check(body: &str, given: &[String]) -> Result<(), String> {
    let Ok(body) = serde_json::from_str::<Value>(body) else {
        return Ok(());
    };
    let contents = body["contents"].as_array().map_or(&[][..], Vec::as_slice);
    // The current turn begins after the last user content holding text.
    let start = contents
        .iter()
        .rposition(|c| {
            c["role"] == "user"
                && c["parts"]
                    .as_array()
                    .is_some_and(|p| p.iter().any(|p| p.get("text").is_some()))
        })
        .map_or(0, |i| i + 1);
    for (position, content) in contents.iter().enumerate().skip(start) {
        if content["role"] != "model" {
            continue;
        }
        let parts = content["parts"].as_array().map_or(&[][..], Vec::as_slice);
        let Some(first) = parts.iter().find(|p| p.get("functionCall").is_some()) else {
            continue;
        };
        let signed = first["thoughtSignature"]
            .as_str()
            .is_some_and(|s| s == STAND_IN || given.iter().any(|g| g == s));
        if !signed {
            let name = first["functionCall"]["name"].as_str().unwrap_or("");
            return Err(format!(
                "{MISSING_SIGNATURE} Additional data, function call `default_api:{name}` , \
                 position {}. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures \
                 for more details.",
                position + 1
            ));
        }
    }
    Ok(())
}

/// The `countTokens` answer for `body`.
pub(crate) fn count(body: &str, bytes_per_token: u64) -> String {
    let tokens = (body.len() as u64).div_ceil(bytes_per_token.max(1));
    json!({ "totalTokens": tokens }).to_string()
}
