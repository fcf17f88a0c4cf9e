//! Extended thinking as Anthropic's Messages API plays it, as its
//! documentation describes it ("Extended thinking", "Thinking with tool
//! use"):
//!
//! * A request turns it on with `"thinking": {"type": "enabled",
//!   "budget_tokens": N}` (N must be at least 1,024 and below
//!   `max_tokens`, else `400`), or with `{"type": "adaptive"}` (Claude
//!   4.6 and later; how much to think is the model's, at
//!   `output_config.effort`).
//! * An answer that thinks begins with a `thinking` block: its text comes
//!   as `thinking_delta`s, then its `signature` as one `signature_delta`
//!   just before the block's stop.
//! * While thinking is on, an assistant message that called tools must be
//!   sent back beginning with the thinking block it came with, unchanged:
//!   a missing block, or one whose text or signature changed, is refused
//!   with `400` and the API's words. With thinking off, nothing is checked
//!   (the API drops the blocks).
//!
//! The signature is made up here (a 64-bit FNV-1a hash of the text, the
//! same on every machine and toolchain), as opaque to the client as the
//! real one.

use serde_json::Value;

/// The least budget the API takes.
pub(crate) const MIN_BUDGET: u64 = 1024; // not policy: the API's floor, played by the fake

/// A thinking block the server answered with, and the calls after it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Thought {
    /// The thinking text.
    pub thinking: String,
    /// Its signature.
    pub signature: String,
    /// The ids of the calls the same answer made.
    pub calls: Vec<String>,
}

/// The signature the fake gives a thinking text.
pub fn signature(thinking: &str) -> String {
    let hash = thinking.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("EqS{hash:016x}==")
}

/// What the API says to this request body, given the thoughts answered
/// before: `Err` with the message of its `400`.
pub fn check(body: &str, thoughts: &[Thought]) -> Result<(), String> {
    let Ok(body) = serde_json::from_str::<Value>(body) else {
        return Ok(());
    };
    let Some(asked) = body
        .get("thinking")
        .filter(|t| t["type"] == "enabled" || t["type"] == "adaptive")
    else {
        return Ok(());
    };
    let budget = asked["budget_tokens"].as_u64().unwrap_or(0);
    if asked["type"] == "adaptive" {
        // No budget to check.
    } else if budget < MIN_BUDGET {
        return Err(format!(
            "thinking.enabled.budget_tokens: Input should be greater than or equal to {MIN_BUDGET}"
        ));
    }
    let max_tokens = body["max_tokens"].as_u64().unwrap_or(0);
    if asked["type"] == "enabled" && max_tokens <= budget {
        return Err(format!(
            "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size ({max_tokens} <= {budget})"
        ));
    }
    let messages = body["messages"].as_array().map_or(&[][..], Vec::as_slice);
    for (i, message) in messages.iter().enumerate() {
        if message["role"] != "assistant" {
            continue;
        }
        let blocks = message["content"].as_array().map_or(&[][..], Vec::as_slice);
        let called: Vec<&str> = blocks
            .iter()
            .filter(|b| b["type"] == "tool_use")
            .filter_map(|b| b["id"].as_str())
            .collect();
        let Some(thought) = thoughts
            .iter()
            .find(|t| t.calls.iter().any(|c| called.contains(&c.as_str())))
        else {
            continue;
        };
        let first = blocks.first();
        let kind = first.and_then(|b| b["type"].as_str()).unwrap_or("nothing");
        if kind != "thinking" && kind != "redacted_thinking" {
            return Err(format!(
                "messages.{i}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{kind}`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
            ));
        }
        let first = first.unwrap_or(&Value::Null);
        if first["signature"] != thought.signature.as_str()
            || first["thinking"] != thought.thinking.as_str()
        {
            return Err(format!(
                "messages.{i}.content.0: Invalid `signature` in `thinking` block"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(first: Value) -> String {
        json!({
            "max_tokens": 4096,
            "thinking": {"type": "enabled", "budget_tokens": 2048},
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "look"}]},
                {"role": "assistant", "content": [first, {"type": "tool_use", "id": "t1", "name": "x", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
            ],
        })
        .to_string()
    }

    #[test]
    fn a_call_must_come_back_after_its_thinking_unchanged() {
        let thought = Thought {
            thinking: "Look first.".into(),
            signature: signature("Look first."),
            calls: vec!["t1".into()],
        };
        let good =
            json!({"type": "thinking", "thinking": "Look first.", "signature": thought.signature});
        assert_eq!(check(&body(good), std::slice::from_ref(&thought)), Ok(()));
        let text = json!({"type": "text", "text": "hi"});
        let missing = check(&body(text), std::slice::from_ref(&thought)).unwrap_err();
        assert!(
            missing.starts_with("messages.1.content.0.type: Expected `thinking`"),
            "{missing}"
        );
        let forged =
            json!({"type": "thinking", "thinking": "Look first.", "signature": "EqSforged=="});
        assert_eq!(
            check(&body(forged), std::slice::from_ref(&thought)),
            Err("messages.1.content.0: Invalid `signature` in `thinking` block".into())
        );
        // Thinking off: nothing is checked.
        let off =
            body(json!({"type": "text", "text": "hi"})).replace("\"enabled\"", "\"disabled\"");
        assert_eq!(check(&off, std::slice::from_ref(&thought)), Ok(()));
        // Adaptive thinking is checked the same, without a budget.
        let adaptive = |first: Value| {
            body(first).replace(
                r#"{"budget_tokens":2048,"type":"enabled"}"#,
                r#"{"type":"adaptive"}"#,
            )
        };
        let text = json!({"type": "text", "text": "hi"});
        assert!(adaptive(text.clone()).contains("adaptive"));
        assert!(check(&adaptive(text), std::slice::from_ref(&thought)).is_err());
        let good =
            json!({"type": "thinking", "thinking": "Look first.", "signature": thought.signature});
        assert_eq!(
            check(&adaptive(good), std::slice::from_ref(&thought)),
            Ok(())
        );
        // The budget's bounds.
        let low = body(json!({})).replace("2048", "512");
        assert!(check(&low, &[])
            .unwrap_err()
            .contains("greater than or equal to 1024"));
        let high = body(json!({})).replace("2048", "4096");
        assert!(check(&high, &[])
            .unwrap_err()
            .starts_with("`max_tokens` must be greater"));
    }
}
