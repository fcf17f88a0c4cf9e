//! The plan: a checklist the model keeps with `update_plan` (Codex's tool
//! of that name, Gemini's `write_todos`), each step pending, in progress
//! or done.
//!
//! Every `update_plan` call gives the whole list again and is logged as a
//! `plan` record; the fold keeps the last one ([`crate::State::plan`]).
//! A compaction carries it into the next file (`compacted`'s `plan`), and
//! a resume folds it back, so the plan outlives both, as the goal does.
//! The system prompt holds it ([`prompt_block`]) while any step is not
//! done, so the model reads it after a compaction too.
//!
//! This module parses the tool's arguments and says how a plan reads: in
//! the prompt, as a checklist in the terminal and in `/status`, and in one
//! line.

use serde::{Deserialize, Serialize};

/// The most steps a plan holds (more are refused, so the prompt stays
/// small).
pub const MAX_STEPS: usize = 50;

/// The longest a step's text may be, in characters.
pub const MAX_STEP_CHARS: usize = 500;

/// One step of the plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// What the step is, one line.
    pub step: String,
    /// Where it stands.
    pub status: Status,
}

/// Where a step stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Not begun.
    Pending,
    /// Being worked on now (at most one step at a time).
    InProgress,
    /// Finished (`completed`, Codex's and Claude Code's word, reads as
    /// done).
    #[serde(alias = "completed")]
    Done,
}

impl Status {
    /// The word the tool and the log use.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::InProgress => "in_progress",
            Status::Done => "done",
        }
    }

    /// The box a checklist line starts with.
    pub fn mark(self) -> &'static str {
        match self {
            Status::Pending => "[ ]",
            Status::InProgress => "[~]",
            Status::Done => "[x]",
        }
    }
}

/// A plan: its steps in order. Empty: no plan.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Plan {
    /// The steps, in the order the model gave them.
    pub steps: Vec<Step>,
}

impl Plan {
    /// Whether there is no plan.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// How many steps are done.
    pub fn done(&self) -> usize {
        self.steps
            .iter()
            .filter(|s| s.status == Status::Done)
            .count()
    }

    /// Whether every step is done (an empty plan is not open).
    pub fn open(&self) -> bool {
        self.done() < self.steps.len()
    }

    /// The step in progress, if one is.
    pub fn current(&self) -> Option<&Step> {
        self.steps.iter().find(|s| s.status == Status::InProgress)
    }

    /// The plan as a checklist, one line a step (`[x] step`), no final
    /// newline; empty when there is no plan.
    pub fn checklist(&self) -> String {
        self.steps
            .iter()
            .map(|s| format!("{} {}", s.status.mark(), s.step))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// One line for a status row: `plan: 2/5 done · now: the step`.
    pub fn summary(&self) -> Option<String> {
        if self.is_empty() {
            return None;
        }
        let mut line = format!("plan: {}/{} done", self.done(), self.steps.len());
        if let Some(now) = self.current() {
            line.push_str(" · now: ");
            line.push_str(&now.step);
        }
        Some(line)
    }
}

/// The arguments of an `update_plan` call as the model wrote them, checked:
/// at least one step, at most [`MAX_STEPS`], each a non-empty line of at
/// most [`MAX_STEP_CHARS`], at most one in progress.
pub fn parse(arguments: &str) -> Result<Plan, String> {
    #[derive(Deserialize)]
    struct Args {
        #[serde(alias = "plan", alias = "todos")]
        steps: Vec<Arg>,
    }
    #[derive(Deserialize)]
    struct Arg {
        #[serde(alias = "content", alias = "description")]
        step: String,
        status: Status,
    }
    let args: Args = serde_json::from_str(arguments)
        .map_err(|e| format!("error: bad arguments for update_plan: {e}"))?;
    if args.steps.is_empty() {
        return Err("error: update_plan needs at least one step".into());
    }
    if args.steps.len() > MAX_STEPS {
        return Err(format!(
            "error: update_plan takes at most {MAX_STEPS} steps; merge some"
        ));
    }
    let mut steps = Vec::with_capacity(args.steps.len());
    for (n, a) in args.steps.into_iter().enumerate() {
        let step = a.step.split_whitespace().collect::<Vec<_>>().join(" ");
        if step.is_empty() {
            return Err(format!("error: update_plan: step {} is empty", n + 1));
        }
        if step.chars().count() > MAX_STEP_CHARS {
            return Err(format!(
                "error: update_plan: step {} is longer than {MAX_STEP_CHARS} characters",
                n + 1
            ));
        }
        steps.push(Step {
            step,
            status: a.status,
        });
    }
    let plan = Plan { steps };
    if plan
        .steps
        .iter()
        .filter(|s| s.status == Status::InProgress)
        .count()
        > 1
    {
        return Err("error: update_plan: at most one step may be in_progress".into());
    }
    Ok(plan)
}

/// What the model reads back from an `update_plan` call: the plan as it
/// now stands.
pub fn result_text(plan: &Plan) -> String {
    format!(
        "Plan updated ({}/{} done):\n{}",
        plan.done(),
        plan.steps.len(),
        plan.checklist()
    )
}

/// The plan's block of the system prompt, while a step is not done.
pub fn prompt_block(plan: &Plan) -> Option<String> {
    if !plan.open() {
        return None;
    }
    Some(format!(
        "## Your plan\n\n\
         The checklist you keep with update_plan (it survives compaction); update it as steps \
         finish:\n{}",
        plan.checklist()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(steps: &[(&str, Status)]) -> Plan {
        Plan {
            steps: steps
                .iter()
                .map(|(s, st)| Step {
                    step: (*s).into(),
                    status: *st,
                })
                .collect(),
        }
    }

    #[test]
    fn the_arguments_become_a_plan_and_the_peers_words_are_read() {
        let p = parse(
            r#"{"steps":[{"step":"read  the code","status":"done"},{"step":"fix","status":"in_progress"},{"step":"test","status":"pending"}]}"#,
        )
        .unwrap();
        assert_eq!(
            p,
            plan(&[
                ("read the code", Status::Done),
                ("fix", Status::InProgress),
                ("test", Status::Pending)
            ])
        );
        let codex = parse(r#"{"plan":[{"step":"a","status":"completed"}]}"#).unwrap();
        assert_eq!(codex, plan(&[("a", Status::Done)]));
        let todos = parse(r#"{"todos":[{"content":"a","status":"pending"}]}"#).unwrap();
        assert_eq!(todos, plan(&[("a", Status::Pending)]));
    }

    #[test]
    fn bad_plans_are_refused_with_a_reason_the_model_can_act_on() {
        for (args, says) in [
            (r#"{"steps":[]}"#, "at least one step"),
            (
                r#"{"steps":[{"step":" ","status":"done"}]}"#,
                "step 1 is empty",
            ),
            (
                r#"{"steps":[{"step":"a","status":"in_progress"},{"step":"b","status":"in_progress"}]}"#,
                "at most one step",
            ),
            (
                r#"{"steps":[{"step":"a","status":"later"}]}"#,
                "bad arguments",
            ),
            ("not json", "bad arguments"),
        ] {
            let e = parse(args).unwrap_err();
            assert!(e.starts_with("error: ") && e.contains(says), "{args}: {e}");
        }
        let long = format!(
            r#"{{"steps":[{{"step":"{}","status":"done"}}]}}"#,
            "x".repeat(501)
        );
        assert!(parse(&long).unwrap_err().contains("longer than 500"));
        let many: Vec<String> = (0..=MAX_STEPS)
            .map(|n| format!(r#"{{"step":"s{n}","status":"pending"}}"#))
            .collect();
        let many = format!(r#"{{"steps":[{}]}}"#, many.join(","));
        assert!(parse(&many).unwrap_err().contains("at most 50 steps"));
    }

    #[test]
    fn a_plan_reads_as_a_checklist_a_line_and_a_prompt_block_while_open() {
        let p = plan(&[
            ("read", Status::Done),
            ("fix", Status::InProgress),
            ("test", Status::Pending),
        ]);
        assert_eq!(p.checklist(), "[x] read\n[~] fix\n[ ] test");
        assert_eq!(p.summary().unwrap(), "plan: 1/3 done · now: fix");
        assert!(prompt_block(&p).unwrap().ends_with("[~] fix\n[ ] test"));
        assert_eq!(
            result_text(&p),
            "Plan updated (1/3 done):\n[x] read\n[~] fix\n[ ] test"
        );
        let finished = plan(&[("read", Status::Done)]);
        assert_eq!(prompt_block(&finished), None);
        assert_eq!(finished.summary().unwrap(), "plan: 1/1 done");
        assert_eq!(Plan::default().summary(), None);
        assert_eq!(Plan::default().checklist(), "");
    }

    #[test]
    fn a_plan_is_written_as_a_list_of_steps() {
        let p = plan(&[("a", Status::InProgress)]);
        let text = serde_json::to_string(&p).unwrap();
        assert_eq!(text, r#"[{"step":"a","status":"in_progress"}]"#);
        assert_eq!(serde_json::from_str::<Plan>(&text).unwrap(), p);
    }
}
