//! What bounds a turn when the model misbehaves.
//!
//! A model can ask for the same tool call again and again (small local
//! models often do), or call tools without end. These limits stop that, all
//! settings of the session:
//!
//! * **The repeat guard.** The same call (same tool, same arguments) made
//!   [`REPEAT_LIMIT`] times in a row within a turn is not run: the model gets
//!   an error result saying it repeated itself and must change course. One
//!   more identical call in a row ends the turn ([`StopReason::Repeated`]).
//!   Arguments are compared as JSON values, so spacing and key order do not
//!   make two calls different.
//! * **The tool-round cap.** A turn may take at most [`MAX_TOOL_ROUNDS`]
//!   tool rounds (one model answer that calls tools, and those tools
//!   running). When the last round's results are in and the cap is reached,
//!   the next request does not go out and the turn ends
//!   ([`StopReason::ToolRounds`]). In the REPL the user may let it go on for
//!   as many rounds again.
//! * **The calls of one answer.** Only the first `max_calls_per_answer`
//!   ([`crate::policy::MAX_CALLS_PER_ANSWER`]) tool calls of one answer
//!   run; each later one gets an error result (`error: not run: this
//!   answer made N tool calls, …`) and the turn goes on. Decided where
//!   calls are dispatched (`Session::next_tool`).
//!
//! A stop is a `stopped` record in the log, so a replay sees it where the
//! live run did.

pub use crate::record::StopReason;
use crate::record::{FixedKind, ToolCall};

/// How many identical calls in a row a turn allows before refusing one.
pub const REPEAT_LIMIT: u32 = 3;

/// How many tool rounds a turn may take.
pub const MAX_TOOL_ROUNDS: u32 = 100;

/// `max_tool_rounds` as given: at least one round.
pub fn check_tool_rounds(n: u32) -> Result<u32, String> {
    if n >= 1 {
        Ok(n)
    } else {
        Err("max_tool_rounds must be at least 1".to_owned())
    }
}

/// `max_calls_per_answer` as given: at least one call.
pub fn check_calls_per_answer(n: u32) -> Result<u32, String> {
    if n >= 1 {
        Ok(n)
    } else {
        Err("max_calls_per_answer must be at least 1".to_owned())
    }
}

/// `max_repeated_calls` as given: at least 2, so a call may always be made
/// twice (once more after its result came back).
pub fn check_repeat_limit(n: u32) -> Result<u32, String> {
    if n >= 2 {
        Ok(n)
    } else {
        Err("max_repeated_calls must be at least 2".to_owned())
    }
}

/// What to do with the next tool call of a turn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Run it.
    Run,
    /// Do not run it; this error is its result, and the turn goes on.
    Refuse(String),
    /// Do not run it, and end the turn.
    Stop(StopReason),
}

/// The line that tells the user why a turn stopped, naming the setting
/// that decides.
pub fn describe(reason: &StopReason) -> String {
    match reason {
        StopReason::Repeated { tool, times } => format!(
            "stopped the turn: the model called {tool} with the same arguments {times} times \
                 in a row (--max-repeated-calls {})",
            times.saturating_sub(1)
        ),
        StopReason::ToolRounds { limit } => {
            format!("stopped the turn after {limit} tool rounds (--max-tool-rounds {limit})")
        }
        StopReason::TooLarge {
            tokens,
            window,
            largest,
        } => {
            let mut line = format!(
                "stopped the turn: its request needs about {tokens} tokens, more than the \
                 {window}-token window leaves for it even with every tool result cut"
            );
            match largest {
                Some((FixedKind::System, n)) => line.push_str(&format!(
                    "; the system prompt alone (memory files included) takes about {n}: \
                     start with --bare, or give a larger --window"
                )),
                Some((FixedKind::Tools, n)) => line.push_str(&format!(
                    "; the tool definitions alone take about {n}: give a larger --window"
                )),
                Some((FixedKind::Message, n)) => line.push_str(&format!(
                    "; your message alone takes about {n}: send a shorter one (or the file \
                     it quotes by path), or give a larger --window"
                )),
                None => line.push_str(" (--window)"),
            }
            line
        }
        StopReason::Budget {
            spent,
            expected,
            max,
        } => format!(
            "stopped before a request: the session has cost {} and the next request would bring \
             it to about {}, past --max-cost {} (raise --max-cost, or max_cost in config.json)",
            crate::models::dollars_text(*spent),
            crate::models::dollars_text(*expected),
            crate::models::dollars_text(*max)
        ),
        StopReason::Costly {
            what,
            requests,
            tokens,
        } => costly_unasked(what, *requests, *tokens),
    }
}

/// The line a costly compaction or refinement leaves when no one can be
/// asked about it: what it would send, and how to allow it.
pub fn costly_unasked(what: &str, requests: u64, tokens: u64) -> String {
    format!(
        "stopped before a costly {what}: it would send about {requests} model requests, about {} \
         input tokens in all, and there is no terminal to ask (run again with --yes, or set \
         \"confirm_costly\": false in config.json)",
        crate::compact::tokens_k(tokens)
    )
}

/// Whether two calls ask for the same thing: the same tool with the same
/// arguments, compared as JSON when both parse and as text otherwise.
pub fn same_call(a: &ToolCall, b: &ToolCall) -> bool {
    if a.name != b.name {
        return false;
    }
    if a.arguments == b.arguments {
        return true;
    }
    match (
        serde_json::from_str::<serde_json::Value>(&a.arguments),
        serde_json::from_str::<serde_json::Value>(&b.arguments),
    ) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// The verdict on `next`, the call after `before` (this turn's earlier
/// calls, in order) with at most `limit` identical calls in a row: the
/// `limit`-th is refused, any later one stops the turn.
pub fn verdict<'a>(
    before: impl DoubleEndedIterator<Item = &'a ToolCall>,
    next: &ToolCall,
    limit: u32,
) -> Verdict {
    let repeats = before.rev().take_while(|c| same_call(c, next)).count();
    let times = u32::try_from(repeats).unwrap_or(u32::MAX).saturating_add(1);
    if times < limit {
        Verdict::Run
    } else if times == limit {
        Verdict::Refuse(format!(
            "error: not run: this is the same {} call (same arguments) {times} times in a row, \
             and its result would not change. Change course: try something else, or answer \
             with what you know. Calling it once more ends the turn.",
            next.name
        ))
    } else {
        Verdict::Stop(StopReason::Repeated {
            tool: next.name.clone(),
            times,
        })
    }
}

/// What the user may be asked after a stop: whether to go on
/// ([`crate::Input::GoOn`]), for a turn that used up its tool rounds; a
/// repeated call or a request too large is no question of going on.
pub fn go_on_question(reason: &StopReason) -> Option<String> {
    match reason {
        StopReason::ToolRounds { limit } => {
            Some(format!("go on for up to {limit} more tool rounds? [y/N] "))
        }
        StopReason::Repeated { .. }
        | StopReason::TooLarge { .. }
        | StopReason::Budget { .. }
        | StopReason::Costly { .. } => None,
    }
}

/// The result given to a call that a stop leaves unanswered.
pub(crate) fn stopped_result(reason: &StopReason) -> String {
    match reason {
        StopReason::Repeated { .. } => {
            "error: not run: the turn was stopped because the same call was repeated".to_owned()
        }
        StopReason::ToolRounds { limit } => {
            format!("error: not run: the turn was stopped after {limit} tool rounds")
        }
        StopReason::TooLarge { .. } => {
            "error: not run: the turn was stopped; its request does not fit the window".to_owned()
        }
        StopReason::Budget { .. } => {
            "error: not run: the turn was stopped at the session's cost limit".to_owned()
        }
        StopReason::Costly { .. } => {
            "error: not run: the turn was stopped before a costly compaction".to_owned()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quickcheck::{quickcheck, TestResult};

    fn call(name: &str, args: &str) -> ToolCall {
        ToolCall {
            id: "c".into(),
            name: name.into(),
            arguments: args.into(),
        }
    }

    #[test]
    fn arguments_compare_as_json() {
        let a = call("read_file", r#"{"path":"a","limit":3}"#);
        let b = call("read_file", r#"{ "limit": 3, "path": "a" }"#);
        assert!(same_call(&a, &b));
        assert!(!same_call(&a, &call("read_file", r#"{"path":"b"}"#)));
        assert!(!same_call(&a, &call("grep", r#"{"path":"a","limit":3}"#)));
        assert!(same_call(&call("x", "{bad"), &call("x", "{bad")));
        assert!(!same_call(&call("x", "{bad"), &call("x", "{bad ")));
    }

    #[test]
    fn the_third_is_refused_and_the_fourth_stops() {
        let c = call("read_file", r#"{"path":"a"}"#);
        let turn: Vec<ToolCall> = Vec::new();
        assert_eq!(verdict(turn.iter(), &c, 3), Verdict::Run);
        let turn = [c.clone()];
        assert_eq!(verdict(turn.iter(), &c, 3), Verdict::Run);
        let turn = [c.clone(), c.clone()];
        assert!(matches!(verdict(turn.iter(), &c, 3), Verdict::Refuse(t) if t.contains("3 times")));
        let turn = [c.clone(), c.clone(), c.clone()];
        assert_eq!(
            verdict(turn.iter(), &c, 3),
            Verdict::Stop(StopReason::Repeated {
                tool: "read_file".into(),
                times: 4
            })
        );
        // Another call in between starts the count again.
        let turn = [c.clone(), c.clone(), call("grep", "{}")];
        assert_eq!(verdict(turn.iter(), &c, 3), Verdict::Run);
    }

    /// A random call sequence over a few calls, fed to the guard one call
    /// at a time: it refuses exactly at the `limit`-th identical call in a
    /// row, stops at the one after, and never refuses or stops a call that
    /// differs from the one before it.
    fn prop_guard(picks: Vec<u8>, limit: u8) -> TestResult {
        let limit = u32::from(limit % 5) + 2;
        let pool = [
            call("read_file", r#"{"path":"a"}"#),
            call("read_file", r#"{ "path": "a" }"#),
            call("read_file", r#"{"path":"b"}"#),
            call("grep", r#"{"pattern":"x"}"#),
        ];
        let mut turn: Vec<ToolCall> = Vec::new();
        let mut run = 0u32;
        for p in picks {
            let next = pool[usize::from(p) % pool.len()].clone();
            run = match turn.last() {
                Some(last) if same_call(last, &next) => run + 1,
                _ => 1,
            };
            let expected = if run < limit {
                Verdict::Run
            } else if run == limit {
                Verdict::Refuse(String::new())
            } else {
                Verdict::Stop(StopReason::Repeated {
                    tool: next.name.clone(),
                    times: run,
                })
            };
            let got = verdict(turn.iter(), &next, limit);
            let agrees = match (&got, &expected) {
                (Verdict::Refuse(_), Verdict::Refuse(_)) => true,
                (g, e) => g == e,
            };
            if !agrees || (run == 1 && got != Verdict::Run) {
                return TestResult::failed();
            }
            if matches!(got, Verdict::Stop(_)) {
                return TestResult::passed();
            }
            turn.push(next);
        }
        TestResult::passed()
    }

    quickcheck! {
        fn the_guard_stops_exactly_at_the_nth_identical_call(picks: Vec<u8>, limit: u8) -> TestResult {
            prop_guard(picks, limit)
        }
    }
}
