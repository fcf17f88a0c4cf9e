//! A server's answer that the request was larger than its context.
//!
//! Servers say so in their own words; [`recognise`] reads an error body (or
//! the one-line error made of it) and tells whether it is such an answer,
//! and the limit it names when it names one:
//!
//! * OpenAI: `400`, `"code":"context_length_exceeded"`, "This model's maximum
//!   context length is 128000 tokens. However, your messages resulted in …";
//! * vLLM: `400`, "This model's maximum context length is 4096 tokens.
//!   However, you requested 5000 tokens …";
//! * Anthropic: `400`, "prompt is too long: 208310 tokens > 200000 maximum";
//! * llama.cpp's server: `400`, `"type":"exceed_context_size_error"`, "the
//!   request exceeds the available context size, try increasing it", with
//!   `"n_ctx":4096`;
//! * Ollama: "input length exceeds the context length" (and, for a prompt
//!   over `num_ctx`, "exceeds maximum context length");
//! * Gemini: `400`, `INVALID_ARGUMENT`, "The input token count (1200293)
//!   exceeds the maximum number of tokens allowed (1048576).".
//!
//! What the session does about it is [`crate::Session`]'s: the window is
//! lowered to the limit named, or else below the size that failed, the
//! change is logged, and the request is compacted and sent once more. Such
//! an answer is never retried as if the server had failed
//! ([`crate::retry::delay`]).

/// A context overflow, as the server told it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Overflow {
    /// The context size the server named, in tokens, when it named one.
    pub limit: Option<u64>,
    /// The size the server counted for the refused request, in tokens,
    /// when it said (so later estimates are calibrated from it).
    pub asked: Option<u64>,
}

/// Whether `text` (an error body, or the error line holding it) says the
/// request did not fit the server's context.
pub fn recognise(text: &str) -> Option<Overflow> {
    let lower = text.to_ascii_lowercase();
    let said = [
        "context_length_exceeded",
        "maximum context length",
        "prompt is too long",
        "exceeds the available context size",
        "exceed_context_size_error",
        "exceeds the context length",
        "input length exceeds",
        "context window exceeded",
        "context length exceeded",
        "exceeds the maximum number of tokens allowed",
    ]
    .iter()
    .any(|phrase| lower.contains(phrase));
    if !said {
        return None;
    }
    let limit = number_after(&lower, "maximum context length is ")
        .or_else(|| number_after(&lower, "\"n_ctx\":"))
        .or_else(|| number_after(&lower, "n_ctx="))
        .or_else(|| number_before(&lower, " maximum"))
        .or_else(|| number_after(&lower, "tokens allowed ("))
        .filter(|&n| n > 0);
    // "you requested 5041 tokens (5031 in the messages, 10 in the
    // completion)" counts the answer's limit too: the prompt is the part
    // in the messages (vLLM, llama-cpp-python).
    let asked = number_after(&lower, "resulted in ")
        .or_else(|| number_before(&lower, " in the messages"))
        .or_else(|| number_after(&lower, "you requested "))
        .or_else(|| number_after(&lower, "prompt is too long: "))
        .or_else(|| number_after(&lower, "\"n_prompt_tokens\":"))
        .or_else(|| number_after(&lower, "input token count ("))
        .filter(|&n| n > 0);
    Some(Overflow { limit, asked })
}

/// Whether a server's count of `tokens` for a request body of `bytes` is
/// believable enough to calibrate estimates from: between
/// [`crate::policy::PLAUSIBLE_TENTHS_OF_BYTES_PER_TOKEN`] bytes a token.
/// A count that is not is kept in the log as the server said it, and
/// ignored.
pub fn plausible(bytes: u64, tokens: u64) -> bool {
    let (least, most) = crate::policy::PLAUSIBLE_TENTHS_OF_BYTES_PER_TOKEN;
    let tenths = u128::from(bytes) * 10;
    bytes > 0
        && tokens > 0
        && tenths >= u128::from(tokens) * u128::from(least)
        && tenths <= u128::from(tokens) * u128::from(most)
}

/// The number right after the first `marker` in `text`.
fn number_after(text: &str, marker: &str) -> Option<u64> {
    let at = text.find(marker)? + marker.len();
    let digits: String = text[at..]
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().ok()
}

/// The number right before the first `marker` (`… > 200000 maximum`).
fn number_before(text: &str, marker: &str) -> Option<u64> {
    let at = text.find(marker)?;
    let before = text[..at].trim_end();
    let start = before
        .rfind(|c: char| !c.is_ascii_digit())
        .map_or(0, |i| i + 1);
    before[start..].parse().ok()
}

/// The window to go on with after an overflow, given `fixed` (the tokens of
/// the part of a request no compaction shrinks):
///
/// * the limit the server named (at most the window), unless it is below
///   [`crate::policy::LEAST_NAMED_WINDOW`] (no server's context; a number
///   misread): the server knows its context, and a window above it only
///   buys a second refusal. When the fixed part leaves little room in it,
///   the answer's room shrinks to what is left
///   ([`crate::compact::shrunk_room`]); when the fixed part does not fit,
///   the turn stops saying which part is too large;
/// * else nine tenths of what failed (the server's count of it, else the
///   estimate), so the next try is smaller for certain, but never below the
///   floor (the least window in which the fixed part fits below the
///   compaction point, a quarter of the window being the answer's room): a
///   server whose words name no limit that parses, or an absurd one, cannot
///   lower a session into one it can never leave.
pub(crate) fn lowered_window(
    window: u64,
    failed_estimate: u64,
    overflow: Overflow,
    fixed: u64,
) -> u64 {
    let below = |n: u64| n.saturating_sub(n / 10);
    let floor = fixed.saturating_mul(4).div_ceil(3).saturating_add(1);
    let lowered = match overflow
        .limit
        .filter(|&l| l >= crate::policy::LEAST_NAMED_WINDOW)
    {
        Some(limit) => limit.min(window),
        None => below(window.min(overflow.asked.unwrap_or(failed_estimate).max(1)))
            .max(floor.min(window)),
    };
    lowered.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_servers_words_are_recognised() {
        let openai = r#"{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
        let named = |limit, asked| {
            Some(Overflow {
                limit: Some(limit),
                asked: Some(asked),
            })
        };
        assert_eq!(recognise(openai), named(128_000, 130_512));
        let vllm = r#"{"object":"error","message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}"#;
        assert_eq!(
            recognise(vllm),
            named(4096, 4000),
            "the prompt, not prompt and answer"
        );
        let llama_cpp_python = r#"{"error":{"message":"This model's maximum context length is 4096 tokens. However, you requested 5041 tokens (5031 in the messages, 10 in the completion). Please reduce the length of the messages or completion.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
        assert_eq!(recognise(llama_cpp_python), named(4096, 5031));
        let anthropic = r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 208310 tokens > 200000 maximum"}}"#;
        assert_eq!(recognise(anthropic), named(200_000, 208_310));
        let llamacpp = r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5012,"n_ctx":4096}}"#;
        assert_eq!(recognise(llamacpp), named(4096, 5012));
        let ollama = r#"{"error":{"message":"input length exceeds the context length","type":"api_error","param":null,"code":null}}"#;
        let gemini = r#"{"error":{"code":400,"message":"The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}"#;
        assert_eq!(
            recognise(gemini),
            Some(Overflow {
                limit: Some(1_048_576),
                asked: Some(1_200_293)
            })
        );
        assert_eq!(
            recognise(ollama),
            Some(Overflow {
                limit: None,
                asked: None
            })
        );
        // As the shell's error line has it.
        let line = format!("HTTP 400 Bad Request from http://x/v1/chat/completions: {openai}");
        assert!(recognise(&line).is_some());
    }

    #[test]
    fn other_errors_are_not_overflows() {
        for body in [
            r#"{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}"#,
            r#"{"error":{"message":"Invalid API key","type":"invalid_request_error"}}"#,
            "HTTP 503 Service Unavailable",
            "",
        ] {
            assert_eq!(recognise(body), None, "{body}");
        }
    }

    #[test]
    fn the_window_always_goes_down() {
        let o = |limit, asked| Overflow { limit, asked };
        assert_eq!(lowered_window(24_000, 30_000, o(Some(4096), None), 0), 4096);
        assert_eq!(lowered_window(24_000, 20_000, o(None, None), 0), 18_000);
        assert_eq!(lowered_window(24_000, 90_000, o(None, None), 0), 21_600);
        assert_eq!(
            lowered_window(24_000, 90_000, o(None, Some(10_000)), 0),
            9_000
        );
        // A limit over the window keeps the window: the estimate was off,
        // and the server's count recalibrates it.
        assert_eq!(
            lowered_window(4096, 4000, o(Some(8192), Some(9000)), 0),
            4096
        );
        assert_eq!(lowered_window(1, 0, o(None, None), 0), 1);
        // A limit that did not parse lowers no further than the floor
        // (3,001 for a fixed part of 2,250).
        assert_eq!(lowered_window(128_000, 5, o(None, Some(5)), 2_250), 3_001);
        assert_eq!(lowered_window(2_000, 5, o(None, None), 2_250), 2_000);
        // So does an absurd limit, one no server has.
        assert_eq!(
            lowered_window(128_000, 90_000, o(Some(3), Some(5)), 2_250),
            3_001
        );
        // A limit the fixed part does not fit in is still the limit: the
        // turn then stops saying the fixed part is too large.
        assert_eq!(
            lowered_window(128_000, 90_000, o(Some(2_048), Some(5)), 2_250),
            2_048
        );
    }

    /// The CI run of 2026-12-06 (stop 49): llama-cpp-python at n_ctx 4096
    /// said "maximum context length is 4096 tokens … 9202 in the
    /// messages" for a session whose fixed part was about 3,200 tokens.
    /// Holding the window at the floor (4,268) threw the named limit away,
    /// the window went to 8,282, and the retry was refused again. The
    /// named limit is the window.
    #[test]
    fn a_named_limit_below_the_floor_is_still_the_limit() {
        let named = Overflow {
            limit: Some(4096),
            asked: Some(9202),
        };
        assert_eq!(lowered_window(128_000, 9_000, named, 3_200), 4096);
    }

    #[test]
    fn only_plausible_counts_calibrate() {
        assert!(plausible(20_000, 5_000));
        assert!(plausible(20_000, 13_000), "1.5 bytes a token");
        assert!(plausible(20_000, 1_700), "12 bytes a token");
        assert!(!plausible(20_000, 999_999_999));
        assert!(!plausible(20_000, 14_000));
        assert!(!plausible(20_000, 3));
        assert!(!plausible(0, 3));
        assert!(!plausible(20_000, 0));
        assert!(!plausible(u64::MAX, 1));
    }
}
