//! How a failure is told: a server's error object read for an overflow or
//! an overload, a broken connection described in a few words, and whether
//! it may go away by itself.

use std::io::ErrorKind;
use std::time::Duration;

use serde_json::Value;
use ureq::Timeout;

use super::{CONNECT_TIMEOUT, ERROR_BODY_SHOWN};
use crate::{excerpt, seconds, ProviderError};

/// `bad JSON in stream from URL: why: data`.
pub(crate) fn bad_event(
    url: &str,
    error: &serde_json::Error,
    data: &str,
    partial: String,
) -> ProviderError {
    let message = format!(
        "bad JSON in stream from {url}: {error}: {}",
        excerpt(data, 100)
    );
    ProviderError::new(message, partial)
}

/// `error in stream from URL: message`, broken when the error's type
/// says the server was overloaded or failed inside, and an overflow (never
/// broken) when its words say the request did not fit.
pub(crate) fn stream_error(url: &str, error: &Value, partial: String) -> ProviderError {
    let message = format!("error in stream from {url}: {}", error_text(error));
    said(error, ProviderError::new(message, partial))
}

/// `error from URL: message` for a non-streamed answer holding an error.
pub(crate) fn answer_error(url: &str, error: &Value) -> ProviderError {
    let message = format!("error from {url}: {}", error_text(error));
    said(error, ProviderError::new(message, ""))
}

/// `base` with what the server's `error` object says: an overflow, or
/// else a broken one when its type says so.
fn said(error: &Value, base: ProviderError) -> ProviderError {
    let base = base.overflowing(&error.to_string());
    if base.overflow().is_none() && overloaded(error) {
        base.broken()
    } else {
        base
    }
}

/// `bad JSON from URL: why: text` for a non-streamed answer.
pub(crate) fn bad_answer(url: &str, error: &serde_json::Error, text: &str) -> ProviderError {
    ProviderError::new(
        format!("bad JSON from {url}: {error}: {}", excerpt(text, 100)),
        "",
    )
}

/// The message of an `error` field: `error.message` when there is one.
fn error_text(error: &Value) -> String {
    let text = match error.get("message").and_then(|m| m.as_str()) {
        Some(message) => message.to_owned(),
        None => match error.as_str() {
            Some(s) => s.to_owned(),
            None => error.to_string(),
        },
    };
    excerpt(&text, ERROR_BODY_SHOWN)
}

/// Whether an error object's `type` says the server is overloaded, rate
/// limited or failed inside (Anthropic's `overloaded_error`, `api_error`,
/// `rate_limit_error`; OpenAI's `server_error`), or its `status` does
/// (Gemini's `UNAVAILABLE`, `RESOURCE_EXHAUSTED`, `INTERNAL`): worth
/// sending again.
fn overloaded(error: &Value) -> bool {
    matches!(
        error.get("type").and_then(Value::as_str),
        Some("overloaded_error" | "api_error" | "rate_limit_error" | "server_error")
    ) || matches!(
        error.get("status").and_then(Value::as_str),
        Some("UNAVAILABLE" | "RESOURCE_EXHAUSTED" | "INTERNAL")
    )
}

/// The wait an error body asks for in seconds, rounded up: Gemini's
/// `{"error": {"details": [{"@type": "….RetryInfo", "retryDelay": "37s"}]}}`
/// (google.rpc.RetryInfo, a protobuf `Duration` as JSON: seconds with an
/// `s`).
pub(super) fn retry_delay(body: &str) -> Option<u64> {
    let value: Value = serde_json::from_str(body.trim()).ok()?;
    let error = value.get("error").unwrap_or(&value);
    error
        .get("details")?
        .as_array()?
        .iter()
        .filter(|d| {
            d["@type"]
                .as_str()
                .is_some_and(|t| t.ends_with("RetryInfo"))
        })
        .find_map(|d| {
            d["retryDelay"]
                .as_str()?
                .strip_suffix('s')?
                .parse::<f64>()
                .ok()
        })
        .filter(|s| s.is_finite() && *s >= 0.0 && *s < 1e9)
        // A finite number in range, checked just above.
        .map(|s| s.ceil() as u64)
}

/// Whether a connection failure may go away by itself: refused, reset,
/// closed early or timed out. A host that is not found, a TLS failure or a
/// bad URL is not.
pub(super) fn transient(error: &ureq::Error) -> bool {
    match error {
        ureq::Error::Io(e) => matches!(
            e.kind(),
            ErrorKind::ConnectionRefused
                | ErrorKind::ConnectionReset
                | ErrorKind::ConnectionAborted
                | ErrorKind::NotConnected
                | ErrorKind::BrokenPipe
                | ErrorKind::UnexpectedEof
                | ErrorKind::TimedOut
        ),
        ureq::Error::Timeout(_) | ureq::Error::ConnectionFailed | ureq::Error::BodyStalled => true,
        _ => false,
    }
}

/// What went wrong with a connection, in a few words.
pub(super) fn describe(error: &ureq::Error, stall: Duration) -> String {
    match error {
        ureq::Error::Io(e) => match e.kind() {
            ErrorKind::ConnectionRefused => "connection refused".to_owned(),
            ErrorKind::ConnectionReset => "connection reset".to_owned(),
            ErrorKind::ConnectionAborted => "connection aborted".to_owned(),
            ErrorKind::UnexpectedEof => "connection closed early".to_owned(),
            ErrorKind::TimedOut => "timed out".to_owned(),
            _ => e.to_string(),
        },
        ureq::Error::Timeout(Timeout::Connect) => {
            format!("no connection within {}", seconds(CONNECT_TIMEOUT))
        }
        ureq::Error::Timeout(Timeout::Resolve) => {
            format!("host name not resolved within {}", seconds(CONNECT_TIMEOUT))
        }
        ureq::Error::Timeout(Timeout::PerRead) => {
            format!("nothing received for {}", seconds(stall))
        }
        ureq::Error::Timeout(Timeout::RecvResponse) => {
            format!("no response headers within {}", seconds(stall))
        }
        ureq::Error::HostNotFound => "host not found".to_owned(),
        e => e.to_string(),
    }
}

/// The message of a JSON error body (`{"error": {"message": …}}`,
/// `{"error": "…"}` or `{"message": …}`), when the body is one.
pub(super) fn error_message(body: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(body.trim()).ok()?;
    let error = value.get("error").unwrap_or(&value);
    let said = match error {
        serde_json::Value::String(s) => s.as_str(),
        other => other.get("message")?.as_str()?,
    };
    Some(said.trim().to_owned()).filter(|s| !s.is_empty())
}
