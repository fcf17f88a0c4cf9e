//! The record of a `web_fetch` (issue 44): what was read, from where,
//! and the hash its bytes are kept under in the user's content store (the
//! `blobs/` folder edits keep theirs in). The result the model saw is a
//! `message` record as ever, so replay rebuilds every request from the
//! log and never goes to the network; this record is the fetch's
//! provenance and the session's page cache ([`crate::web::cached`]).

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// `fetched`: a page `web_fetch` read (or took from the session's cache).
///
/// ```json
/// {"type":"fetched","at":"…","call":"c1","url":"http://127.0.0.1:8080/a","final_url":"http://127.0.0.1:8080/b","status":200,"content_type":"text/html","hash":"sha256:…","bytes":1234,"redirects":1}
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fetched {
    /// When it happened, by the shell's clock: the log's only time.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// The `web_fetch` call it answered.
    pub call: String,
    /// The URL the model asked for.
    pub url: String,
    /// The URL the page came from, after the redirects.
    pub final_url: String,
    /// The HTTP status of the last answer.
    pub status: u16,
    /// Its `content-type`, as sent (empty: none).
    #[serde(default)]
    pub content_type: String,
    /// The body's content hash (`sha256:…`), its bytes in the store.
    pub hash: String,
    /// How many bytes of the body were read.
    pub bytes: u64,
    /// Whether the body went on past the bound.
    #[serde(default, skip_serializing_if = "super::is_false")]
    pub cut: bool,
    /// How many redirects led to it.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub redirects: u32,
    /// When the page came from the session's cache: the time of the fetch
    /// that read it from the network.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "time::serde::rfc3339::option"
    )]
    pub cached: Option<OffsetDateTime>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// `web_search`: whether the provider's own web search tool is offered to
/// the model from here on (issue 44): `--allow web_search` on a wire that
/// has one (Anthropic's `web_search_20250305`, the Responses API's
/// `web_search`). Appended when a session starts or resumes with the
/// rule, and when one that had it resumes without it, so replay rebuilds
/// the tools each request offered.
///
/// ```json
/// {"type":"web_search","at":"…","max_uses":5}
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebSearch {
    /// When it happened, by the shell's clock: the log's only time.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// The most searches one Anthropic answer may make; none: not offered.
    #[serde(default)]
    pub max_uses: Option<u32>,
}
