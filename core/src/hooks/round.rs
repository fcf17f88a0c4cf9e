//! One event's hooks, run one after another: a [`Round`] hands out the
//! next hook to run with the input it reads, takes each run's outcome
//! (logged as a `hook` record), and gathers what they decided ([`Got`]).
//! The session holds a round while its hooks run and goes on from what
//! it got.
//!
//! A block ends the round: the hooks after it do not run. A `PreToolUse`
//! hook's rewritten input is what the hooks after it read.

use std::collections::VecDeque;

use serde_json::Value;
use time::OffsetDateTime;

use super::{decide, About, Decision, Ended, Hook, Hooks, Ran, Verdict};
use crate::record::Hooked;

/// What an event's hooks decided, together.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Got {
    /// Why a hook blocked (the round ended there).
    pub blocked: Option<String>,
    /// What the hooks added for the model, in order.
    pub added: Vec<String>,
    /// The tool input as the last `PreToolUse` hook rewrote it.
    pub input: Option<Value>,
}

/// The hooks of one event, being run.
#[derive(Clone, Debug, PartialEq)]
pub struct Round {
    about: About,
    /// The tool call it runs for (id, name), at a tool's events.
    call: Option<(String, String)>,
    /// The hooks still to run; the first is running.
    queue: VecDeque<Hook>,
    got: Got,
}

/// A hook to run now, with its input's facts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Next {
    /// The hook.
    pub hook: Hook,
    /// What its input says (the shell adds where it runs,
    /// [`super::Place`], and writes it with [`super::stdin`]).
    pub about: About,
}

impl Round {
    /// The round of `about`'s hooks (for the call `call`, id and name),
    /// and the first to run; `None` when no hook matches.
    pub fn start(hooks: &Hooks, about: About, call: Option<(&str, &str)>) -> Option<(Round, Next)> {
        let queue: VecDeque<Hook> = hooks
            .matching(about.event(), about.subject())
            .into_iter()
            .collect();
        let first = queue.front()?.clone();
        let round = Round {
            about: about.clone(),
            call: call.map(|(id, name)| (id.to_owned(), name.to_owned())),
            queue,
            got: Got::default(),
        };
        Some((round, Next { hook: first, about }))
    }

    /// The hook running now.
    pub fn running(&self) -> Option<&Hook> {
        self.queue.front()
    }

    /// What the event is about.
    pub fn about(&self) -> &About {
        &self.about
    }

    /// The running hook ended as `ran`: its record, what to tell the user
    /// (if anything), and the next hook to run, if any (`None`: the round
    /// is over, [`Round::got`] says what it decided).
    pub fn ran(
        &mut self,
        ran: &Ran,
        now: OffsetDateTime,
    ) -> (Hooked, Option<String>, Option<Next>) {
        let Some(hook) = self.queue.pop_front() else {
            // Nothing was running: an answer nobody waits for. Recorded
            // as what it is, deciding nothing.
            let stray = Hook {
                event: self.about.event(),
                command: String::new(),
                timeout_s: 0,
                origin: super::Origin::Config,
            };
            let verdict = decide(
                &stray,
                &Ran {
                    ended: super::Ended::Exited(0),
                    stdout: String::new(),
                    stderr: String::new(),
                },
            );
            return (hooked(now, &stray, None, &ran.ended, &verdict), None, None);
        };
        let verdict = decide(&hook, ran);
        let call = self
            .call
            .as_ref()
            .map(|(id, name)| (id.as_str(), name.as_str()));
        let record = hooked(now, &hook, call, &ran.ended, &verdict);
        if let Some(added) = &verdict.added {
            self.got.added.push(added.clone());
        }
        if let Some(input) = &verdict.input {
            self.got.input = Some(input.clone());
            if let About::PreToolUse { input: read, .. } = &mut self.about {
                *read = input.clone();
            }
        }
        if verdict.decision == Decision::Block {
            self.got.blocked = verdict.reason.clone();
            self.queue.clear();
        }
        let next = self.queue.front().map(|hook| Next {
            hook: hook.clone(),
            about: self.about.clone(),
        });
        (record, verdict.note, next)
    }

    /// What the round decided (complete once [`Round::ran`] gave no next
    /// hook).
    pub fn got(self) -> Got {
        self.got
    }
}

/// The record of `hook`'s run, which ended as `ended` and meant
/// `verdict`, for the tool call `call` (id and name) if any.
fn hooked(
    at: OffsetDateTime,
    hook: &Hook,
    call: Option<(&str, &str)>,
    ended: &Ended,
    verdict: &Verdict,
) -> Hooked {
    let (exit, how) = match ended {
        Ended::Exited(code) => (Some(*code), None),
        Ended::Killed(_) => (None, Some("killed")),
        Ended::TimedOut(_) => (None, Some("timed_out")),
        Ended::Cut(_) => (None, Some("cut")),
        Ended::Failed(_) => (None, Some("failed")),
    };
    Hooked {
        at,
        event: hook.event.as_str().to_owned(),
        command: hook.command.clone(),
        call: call.map(|(id, _)| id.to_owned()),
        tool: call.map(|(_, name)| name.to_owned()),
        exit,
        ended: how.map(str::to_owned),
        decision: verdict.decision.as_str().to_owned(),
        reason: verdict.reason.clone(),
        added: verdict.added.clone(),
        input: verdict.input.clone(),
        note: verdict.note.clone(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::{Ended, Origin};
    use super::*;

    fn hooks() -> Hooks {
        Hooks::parse(
            &json!({"PreToolUse": [{"matcher": "shell", "hooks": [
                {"command": "./rewrite.sh"}, {"command": "./check.sh"}, {"command": "./log.sh"}
            ]}]}),
            &Origin::Config,
        )
        .unwrap()
        .0
    }

    fn ran(code: i32, stdout: &str, stderr: &str) -> Ran {
        Ran {
            ended: Ended::Exited(code),
            stdout: stdout.into(),
            stderr: stderr.into(),
        }
    }

    #[test]
    fn hooks_run_in_turn_each_reading_the_input_the_one_before_rewrote() {
        let now = time::macros::datetime!(2026-12-06 12:00 UTC);
        let about = About::PreToolUse {
            tool: "shell".into(),
            input: json!({"command": "rm -rf build"}),
        };
        let (mut round, first) = Round::start(&hooks(), about, Some(("call_1", "shell"))).unwrap();
        assert_eq!(first.hook.command, "./rewrite.sh");
        let (record, note, next) = round.ran(
            &ran(0, r#"{"updatedInput":{"command":"rm -rf ./build"}}"#, ""),
            now,
        );
        assert_eq!(record.call.as_deref(), Some("call_1"));
        assert_eq!(record.input, Some(json!({"command": "rm -rf ./build"})));
        assert_eq!(note, None);
        let next = next.unwrap();
        assert_eq!(next.hook.command, "./check.sh");
        assert_eq!(
            next.about,
            About::PreToolUse {
                tool: "shell".into(),
                input: json!({"command": "rm -rf ./build"})
            }
        );
        // A block ends the round: ./log.sh does not run.
        let (record, _, next) = round.ran(&ran(2, "", "no rm"), now);
        assert!(record.blocked() && next.is_none());
        assert_eq!(round.running(), None);
        let got = round.got();
        assert_eq!(got.blocked.as_deref(), Some("no rm"));
        assert_eq!(got.input, Some(json!({"command": "rm -rf ./build"})));
    }

    #[test]
    fn no_matching_hook_is_no_round_and_a_stray_answer_decides_nothing() {
        let about = About::PreToolUse {
            tool: "read_file".into(),
            input: json!({}),
        };
        assert!(Round::start(&hooks(), about, None).is_none());
        let now = time::macros::datetime!(2026-12-06 12:00 UTC);
        let about = About::PreToolUse {
            tool: "shell".into(),
            input: json!({}),
        };
        let (mut round, _) = Round::start(&hooks(), about, None).unwrap();
        for _ in 0..3 {
            let (_, _, _) = round.ran(&ran(0, "", ""), now);
        }
        let (record, note, next) = round.ran(&ran(2, "", "late"), now);
        assert!(!record.blocked() && note.is_none() && next.is_none());
        assert_eq!(round.got(), Got::default());
    }
}
