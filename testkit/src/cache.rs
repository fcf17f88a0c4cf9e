//! A prompt cache that behaves as Anthropic's does, as its documentation
//! describes it (Messages API, "Prompt caching"):
//!
//! * The cached prefix runs in the order tools, system, messages, block by
//!   block; a block marked `cache_control` is a breakpoint, at most four per
//!   request (a fifth is refused with a `400`, as the API does).
//! * A request reads the longest prefix already written that ends at one of
//!   its breakpoints or at most 20 blocks before one; what the marks say is
//!   not part of the prefix, so a breakpoint may move from one request to the
//!   next.
//! * It writes the prefix at each breakpoint that is at least the model's
//!   least cacheable length (1024 tokens for Sonnet and Opus).
//! * The usage says `cache_read_input_tokens` (the prefix read),
//!   `cache_creation_input_tokens` (written beyond it, up to the last
//!   breakpoint) and `input_tokens` (the rest, after the last breakpoint).
//!
//! Tokens are bytes of the block's JSON over four, rounded up: the same
//! crude ratio the fake's limits use. Entries never expire (a test runs in
//! far less than the five minutes they live).

use std::collections::hash_map::DefaultHasher;
use std::collections::HashSet;
use std::hash::{Hash, Hasher};

use serde_json::Value;

/// The most breakpoints a request may carry.
pub(crate) const MAX_BREAKPOINTS: usize = 4; // not policy: the API's limit, played by the fake

/// How far before a breakpoint a hit is looked for, in blocks.
pub(crate) const LOOKBACK: usize = 20; // not policy: the API's documented look-back, played by the fake

/// What one request cost, as the server reports it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheUsage {
    /// `input_tokens`: neither read nor written.
    pub input: u64,
    /// `cache_read_input_tokens`.
    pub read: u64,
    /// `cache_creation_input_tokens`.
    pub written: u64,
}

impl CacheUsage {
    /// Every input token of the request.
    pub fn total(&self) -> u64 {
        self.input + self.read + self.written
    }
}

/// The prefixes written so far.
#[derive(Debug)]
pub struct PromptCache {
    least: u64,
    written: HashSet<u64>,
}

impl PromptCache {
    /// A cache whose model caches prefixes of at least `least` tokens.
    pub fn new(least: u64) -> PromptCache {
        PromptCache {
            least,
            written: HashSet::new(),
        }
    }

    /// What the request of this body costs, the cache updated by it; the
    /// API's error message when it carries too many breakpoints.
    pub fn usage(&mut self, body: &str) -> Result<CacheUsage, String> {
        let body: Value = serde_json::from_str(body).map_err(|e| e.to_string())?;
        let blocks = blocks(&body);
        let marks: Vec<usize> = (0..blocks.len()).filter(|&i| blocks[i].1).collect();
        if marks.len() > MAX_BREAKPOINTS {
            return Err(format!(
                "A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {}.",
                marks.len()
            ));
        }
        // The running hash and length of every prefix, ending at block i.
        let mut hashes = Vec::with_capacity(blocks.len());
        let mut ends = Vec::with_capacity(blocks.len());
        let (mut hasher, mut tokens) = (DefaultHasher::new(), 0u64);
        for (text, _) in &blocks {
            text.hash(&mut hasher);
            tokens += (text.len() as u64).div_ceil(4);
            hashes.push(hasher.finish());
            ends.push(tokens);
        }
        let total = tokens;
        let read = marks
            .iter()
            .flat_map(|&m| (m.saturating_sub(LOOKBACK)..=m).rev())
            .filter(|&i| self.written.contains(&hashes[i]))
            .map(|i| ends[i])
            .max()
            .unwrap_or(0);
        let last = marks.last().map_or(0, |&m| ends[m]);
        for &m in &marks {
            if ends[m] >= self.least {
                self.written.insert(hashes[m]);
            }
        }
        let written = if last >= self.least {
            last.saturating_sub(read)
        } else {
            0
        };
        Ok(CacheUsage {
            input: total - read - written,
            read,
            written,
        })
    }
}

/// The body's blocks in cache order, each as its JSON without the mark
/// (a message's blocks carry its role), and whether it was marked.
fn blocks(body: &Value) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut push = |prefix: &str, block: &Value| {
        let mut plain = block.clone();
        let marked = plain
            .as_object_mut()
            .and_then(|b| b.remove("cache_control"))
            .is_some();
        out.push((format!("{prefix}{plain}"), marked));
    };
    for tool in body["tools"].as_array().into_iter().flatten() {
        push("tool:", tool);
    }
    match &body["system"] {
        Value::String(text) => push(
            "system:",
            &serde_json::json!({"type": "text", "text": text}),
        ),
        Value::Array(blocks) => blocks.iter().for_each(|b| push("system:", b)),
        _ => {}
    }
    for message in body["messages"].as_array().into_iter().flatten() {
        let role = message["role"].as_str().unwrap_or("");
        match &message["content"] {
            Value::String(text) => push(
                &format!("{role}:"),
                &serde_json::json!({"type": "text", "text": text}),
            ),
            Value::Array(blocks) => blocks.iter().for_each(|b| push(&format!("{role}:"), b)),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(system: &str, messages: &[(&str, &str)], marks: &[usize]) -> String {
        let messages: Vec<Value> = messages
            .iter()
            .enumerate()
            .map(|(i, (role, text))| {
                let mut block = json!({"type": "text", "text": text});
                if marks.contains(&i) {
                    block["cache_control"] = json!({"type": "ephemeral"});
                }
                json!({"role": role, "content": [block]})
            })
            .collect();
        json!({"system": [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
               "messages": messages})
        .to_string()
    }

    #[test]
    fn the_second_request_reads_what_the_first_wrote() {
        let mut cache = PromptCache::new(10);
        let long = "x".repeat(400);
        let first = cache
            .usage(&body(&long, &[("user", "hello there")], &[0]))
            .unwrap();
        assert_eq!(first.read, 0);
        assert!(first.written > 100, "{first:?}");
        let second = cache
            .usage(&body(
                &long,
                &[
                    ("user", "hello there"),
                    ("assistant", "hi"),
                    ("user", "more"),
                ],
                &[0, 2],
            ))
            .unwrap();
        assert_eq!(second.read, first.written, "{second:?}");
        assert!(second.written > 0 && second.input == 0, "{second:?}");
    }

    #[test]
    fn without_marks_nothing_is_cached_and_a_fifth_mark_is_refused() {
        let mut cache = PromptCache::new(1);
        let plain = json!({"messages": [{"role": "user", "content": "hi"}]}).to_string();
        for _ in 0..2 {
            let usage = cache.usage(&plain).unwrap();
            assert_eq!((usage.read, usage.written), (0, 0));
            assert!(usage.input > 0);
        }
        let five = body("s", &[("user", "a"); 5], &[0, 1, 2, 3]);
        assert!(cache.usage(&five).unwrap_err().contains("Found 5."));
    }

    #[test]
    fn a_short_prefix_is_not_written() {
        let mut cache = PromptCache::new(1024);
        let request = body("short", &[("user", "hi")], &[0]);
        assert_eq!(cache.usage(&request).unwrap().written, 0);
        assert_eq!(cache.usage(&request).unwrap().read, 0);
    }
}
