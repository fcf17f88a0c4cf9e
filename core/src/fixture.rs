//! A recorded session as a test fixture: the answers its model gave, in the
//! order its requests went out, so a provider can give them again
//! (`--provider replay:FILE`) and a re-run is offline and deterministic.
//!
//! Requests are counted exactly as [`State`] counts them (the numbering
//! [`crate::Request::seq`] carries): an answer, a failure or an interruption
//! of a due request, a compaction's summary, and a refinement. What the log
//! does not hold (a refinement's answer) comes back as
//! [`Answer::NotRecorded`], which keeps every later answer in its place.

use crate::record::{Record, Role, Totals};
use crate::session::{Reply, Usage};
use crate::state::State;

/// What one recorded request got.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// A complete answer (text and tool calls, with the usage the totals
    /// after it show, when the provider reported one).
    Reply(Reply),
    /// A failure or an interruption, with what had streamed before it.
    Failed {
        /// What had streamed before it.
        partial: String,
        /// The error, as the user saw it.
        error: String,
    },
    /// A request whose answer the log does not hold (a refinement's; the
    /// `refined` record keeps only what changed).
    NotRecorded,
}

impl Answer {
    /// The answer as `replay --against` compares it: the text, then one
    /// line per tool call (name and arguments; ids differ between runs),
    /// or the failure.
    pub fn render(&self) -> String {
        match self {
            Answer::Reply(reply) => {
                let mut out = reply.text.clone();
                if !out.is_empty() && !out.ends_with('\n') {
                    out.push('\n');
                }
                for call in &reply.tool_calls {
                    out.push_str(&format!("→ {} {}\n", call.name, call.arguments));
                }
                out
            }
            Answer::Failed { partial, error } => {
                let mut out = partial.clone();
                if !out.is_empty() && !out.ends_with('\n') {
                    out.push('\n');
                }
                out.push_str(&format!("! failed: {error}\n"));
                out
            }
            Answer::NotRecorded => "! not recorded\n".to_owned(),
        }
    }
}

/// A unified diff from the recorded answer to the new one, or `None` when
/// they render the same.
pub fn diff(recorded: &Answer, new: &Answer) -> Option<String> {
    let (old, new) = (recorded.render(), new.render());
    if old == new {
        return None;
    }
    Some(
        similar::TextDiff::from_lines(&old, &new)
            .unified_diff()
            .header("recorded", "new")
            .to_string(),
    )
}

/// The failure a request whose answer is not recorded replays as.
pub const REFINE_NOT_RECORDED: &str =
    "a refinement's answer is not in the log; replayed as a failure";

/// Every answer of `records` (a session file, or a whole chain in order),
/// one per request [`crate::state::requests`] rebuilds (a refinement's
/// is [`Answer::NotRecorded`]) plus one [`Answer::NotRecorded`] per
/// request an older file's refinement counts without logging it, in order. A chain must be folded
/// as one: a compaction's summary request is in the old file, its answer
/// (the notes) in the new one.
pub fn answers<'a>(records: impl IntoIterator<Item = &'a Record>) -> Vec<Answer> {
    let mut state = State::default();
    let mut out: Vec<Answer> = Vec::new();
    // The answer whose usage the next totals record tells.
    let mut usage_of: Option<usize> = None;
    // A summary answer waiting for its `compacted` record.
    let mut summary: Option<usize> = None;
    // A cut-short answer waiting for the record that says why.
    let mut cut: Option<usize> = None;
    for record in records {
        let before = state.totals.clone();
        let answers = state.answers(record);
        match record {
            Record::Message(m) if answers && m.role == Role::Assistant && m.partial => {
                cut = Some(out.len());
                out.push(Answer::Failed {
                    partial: m.content.clone(),
                    error: "cut short".into(),
                });
            }
            Record::Message(m) if answers && m.role == Role::Assistant => {
                usage_of = Some(out.len());
                out.push(Answer::Reply(Reply {
                    text: m.content.clone(),
                    tool_calls: m.tool_calls.clone(),
                    usage: None,
                    truncated: m.truncated,
                    thinking: m.thinking.clone(),
                }));
            }
            Record::Failed(f) => match cut.take() {
                Some(i) => set_error(&mut out[i], &f.error),
                None if answers => out.push(Answer::Failed {
                    partial: String::new(),
                    error: f.error.clone(),
                }),
                None => {}
            },
            // Replayed as the failure it was (the replaying provider does
            // not say it was an overflow, so the turn fails there).
            Record::Overflowed(o) if answers => out.push(Answer::Failed {
                partial: String::new(),
                error: o.error.clone(),
            }),
            Record::Interrupted(_) => match cut.take() {
                Some(i) => set_error(&mut out[i], "interrupted"),
                None if answers => out.push(Answer::Failed {
                    partial: String::new(),
                    error: "interrupted".into(),
                }),
                None => {}
            },
            Record::Compacting(_) => {
                summary = Some(out.len());
                out.push(Answer::Failed {
                    partial: String::new(),
                    error: "the compaction's summary is not in the log".into(),
                });
            }
            Record::Compacted(c) => {
                if let Some(i) = summary.take() {
                    let usage = usage_between(&before, &c.totals);
                    out[i] = Answer::Reply(Reply {
                        text: c.notes.clone(),
                        tool_calls: Vec::new(),
                        usage: (usage != Usage::default()).then_some(usage),
                        truncated: false,
                        thinking: Vec::new(),
                    });
                }
            }
            Record::Noted(n) => {
                if let Some(i) = summary.take() {
                    out[i] = Answer::Reply(Reply {
                        text: n.notes.clone(),
                        tool_calls: Vec::new(),
                        usage: None,
                        truncated: false,
                        thinking: Vec::new(),
                    });
                }
            }
            Record::CompactionFailed(f) => {
                if let Some(i) = summary.take() {
                    set_error(&mut out[i], &f.error);
                }
            }
            // A refinement's answer is not logged: each request its
            // `refining` records logged, or (older files) its `refined`
            // counts, replays as not recorded.
            Record::Refining(_) => out.push(Answer::NotRecorded),
            Record::Refined(r) => {
                for _ in 0..r.requests().saturating_sub(state.refining_sent) {
                    out.push(Answer::NotRecorded);
                }
            }
            Record::Totals(t) => {
                if let Some(i) = usage_of.take() {
                    if let Answer::Reply(reply) = &mut out[i] {
                        if !t.estimated {
                            reply.usage = Some(usage_between(&before, t));
                        }
                    }
                }
            }
            _ => {}
        }
        state.apply(record);
    }
    out
}

/// The counts one answer added, from the totals before and after it.
fn usage_between(before: &Totals, after: &Totals) -> Usage {
    Usage {
        prompt_tokens: after.tokens_in.saturating_sub(before.tokens_in),
        completion_tokens: after.tokens_out.saturating_sub(before.tokens_out),
        cache_read_tokens: after.tokens_cached.saturating_sub(before.tokens_cached),
        cache_write_tokens: after
            .tokens_cache_written
            .saturating_sub(before.tokens_cache_written),
    }
}

fn set_error(answer: &mut Answer, why: &str) {
    if let Answer::Failed { error, .. } = answer {
        *error = why.to_owned();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Failed, Header, Message, ToolCall};
    use time::macros::datetime;

    fn header() -> Record {
        Record::Header(Header {
            name: None,
            ..crate::record::test_header()
        })
    }

    fn totals(tokens_in: u64, tokens_out: u64, estimated: bool) -> Record {
        Record::Totals(Totals {
            tokens_in,
            tokens_out,
            estimated,
            ..Totals::default()
        })
    }

    #[test]
    fn answers_follow_the_requests_with_their_usage() {
        let at = datetime!(2026-12-02 10:01 UTC);
        let call = ToolCall {
            id: "c1".into(),
            name: "list_dir".into(),
            arguments: "{}".into(),
        };
        let records = vec![
            header(),
            Record::Message(Message::user(at, "hi")),
            Record::Message(Message {
                tool_calls: vec![call.clone()],
                ..Message::assistant(at, "looking")
            }),
            totals(10, 2, false),
            Record::Message(Message::tool(at, "c1", "a\nb")),
            Record::Message(Message::assistant(at, "two files")),
            totals(25, 5, false),
            Record::Message(Message::user(at, "again")),
            Record::Message(Message {
                partial: true,
                ..Message::assistant(at, "half")
            }),
            Record::Failed(Failed {
                at,
                error: "stream cut".into(),
            }),
            totals(25, 5, true),
        ];
        let got = answers(&records);
        assert_eq!(
            got,
            vec![
                Answer::Reply(Reply {
                    thinking: Vec::new(),
                    truncated: false,
                    text: "looking".into(),
                    tool_calls: vec![call],
                    usage: Some(Usage {
                        prompt_tokens: 10,
                        completion_tokens: 2,
                        ..Default::default()
                    }),
                }),
                Answer::Reply(Reply {
                    thinking: Vec::new(),
                    truncated: false,
                    text: "two files".into(),
                    tool_calls: vec![],
                    usage: Some(Usage {
                        prompt_tokens: 15,
                        completion_tokens: 3,
                        ..Default::default()
                    }),
                }),
                Answer::Failed {
                    partial: "half".into(),
                    error: "stream cut".into()
                },
            ]
        );
        assert_eq!(got.len(), crate::state::requests(&records).len());
    }
}
