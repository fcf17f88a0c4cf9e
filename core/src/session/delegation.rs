//! `task` calls (issue 43): the front run of `task` calls of an answer
//! goes out as one [`ToolCommand::Delegate`], so the children run side by
//! side, and comes back as one [`ToolInput::Delegated`]: a `delegated`
//! record and the result for each call, in call order. The decisions are
//! here: which definition, which tools (read-only by default, never
//! `task`), which model, and each child's share of what is left of
//! `--max-cost`.

use time::OffsetDateTime;

use crate::hooks::{self, About};
use crate::record::{Delegated, Message, Record, ToolCall};
use crate::tools::{self, Tool};

use super::hooking::Resume;
use super::phase::{Front, Phase};
use super::protocol::{Command, Delegation, TaskEnd, ToolCommand};
use super::Session;

impl Session {
    /// Starts the `task` calls at the front of the open calls as one
    /// delegation, each as its `PreToolUse` hooks left it (`checked`);
    /// `None` when the first open call is not a `task` call that can run
    /// (it then goes the way of every call). A call naming an unknown
    /// definition gets its error as result.
    pub(super) fn delegate(
        &mut self,
        checked: &mut Vec<(ToolCall, Option<String>)>,
        now: OffsetDateTime,
    ) -> Option<Vec<Command>> {
        let mut tasks = Vec::new();
        for call in &self.state.open_calls {
            // As its `PreToolUse` hooks left it; a call they blocked, or
            // did not see yet, waits for its own turn.
            let Some(call) = checked
                .iter()
                .find_map(|(c, blocked)| (c.id == call.id && blocked.is_none()).then_some(c))
            else {
                break;
            };
            let Ok(Tool::Task {
                description,
                prompt,
                subagent,
            }) = tools::parse(call)
            else {
                break;
            };
            let def = match &subagent {
                Some(name) => match self.parts.subagents.iter().find(|d| &d.name == name) {
                    Some(def) => Some(def.clone()),
                    None if tasks.is_empty() => {
                        let error = crate::subagents::unknown(name, &self.parts.subagents);
                        let result = Message::tool(now, call.id.clone(), error);
                        return Some(self.append(vec![Record::Message(result)]));
                    }
                    None => break,
                },
                None => None,
            };
            let (tools, _unknown) = crate::agents::allowed(
                def.as_ref().and_then(|d| d.tools.as_deref()),
                &tools::names(),
            );
            tasks.push(Delegation {
                id: call.id.clone(),
                description,
                prompt,
                subagent,
                tools,
                model: def.and_then(|d| d.model),
                budget: None,
                planning: self.state.planning,
            });
        }
        if tasks.is_empty() {
            return None;
        }
        if let Some(max) = self.settings.max_cost {
            let left = max.saturating_sub(self.state.totals.cost);
            if left == 0 {
                let error = "error: not run: the session's --max-cost is spent";
                let result = Message::tool(now, tasks[0].id.clone(), error.to_owned());
                return Some(self.append(vec![Record::Message(result)]));
            }
            // Side by side, each gets its share: together they stay
            // within the parent's limit.
            let share = left / tasks.len() as u64;
            for task in &mut tasks {
                task.budget = Some(share.max(1));
            }
        }
        self.phase = Phase::Delegating {
            ids: tasks.iter().map(|t| t.id.clone()).collect(),
            tasks: std::mem::take(checked),
        };
        Some(vec![Command::Tool(ToolCommand::Delegate { tasks })])
    }

    /// The children ended: for each, in call order, a `delegated` record
    /// (which adds what it spent to the totals) and its answer as the
    /// call's result (`tasks`: the calls as their `PreToolUse` hooks left
    /// them); then the next tool, or the turn cut short when Ctrl-C
    /// stopped them.
    pub(super) fn delegated(
        &mut self,
        ends: Vec<TaskEnd>,
        interrupted: bool,
        tasks: Vec<(ToolCall, Option<String>)>,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        let mut cmds = Vec::new();
        let mut ends = ends.into_iter();
        while let Some(end) = ends.next() {
            if !end.record.child.is_empty() {
                cmds.extend(self.append(vec![Record::Delegated(Delegated {
                    at: now,
                    ..end.record
                })]));
            }
            if interrupted {
                continue;
            }
            // Its `PostToolUse` hooks first, as for any tool's result.
            let input = tasks
                .iter()
                .find(|(c, _)| c.id == end.id)
                .map(|(c, _)| hooks::tool_input(&c.arguments))
                .unwrap_or_default();
            let about = About::PostToolUse {
                tool: "task".into(),
                input,
                output: end.answer.clone(),
            };
            let resume = Resume::Tasks {
                id: end.id.clone(),
                output: end.answer.clone(),
                rest: ends.as_slice().to_vec(),
                tasks: tasks.clone(),
            };
            if let Some(run) = self.hooks_for(about, Some((&end.id, "task")), resume) {
                cmds.extend(run);
                return cmds;
            }
            cmds.extend(self.spilled_result(end.id, end.answer, None, now));
        }
        if interrupted {
            cmds.extend(self.interrupt(String::new(), now));
            return cmds;
        }
        cmds.extend(self.next_tool_from(Front::tasks(tasks), now));
        cmds
    }

    /// The `PreToolUse` hooks of the `task` calls at the front, one call
    /// after another, so the children start together once all ran: false
    /// while a round runs (its commands in `cmds`). `checked`: the calls
    /// whose hooks ran, as they left them.
    pub(super) fn tasks_hooked(
        &mut self,
        checked: &mut Vec<(ToolCall, Option<String>)>,
        cmds: &mut Vec<Command>,
    ) -> bool {
        let front: Vec<_> = self
            .state
            .open_calls
            .iter()
            .take_while(|c| c.name == "task")
            .cloned()
            .collect();
        for call in front {
            match checked.iter().find(|(c, _)| c.id == call.id) {
                Some((_, Some(_))) => return true,
                Some(_) => continue,
                None => {}
            }
            let about = About::PreToolUse {
                tool: call.name.clone(),
                input: hooks::tool_input(&call.arguments),
            };
            let resume = Resume::Task {
                id: call.id.clone(),
                tasks: checked.clone(),
            };
            if let Some(run) = self.hooks_for(about, Some((&call.id, &call.name)), resume) {
                cmds.extend(run);
                return false;
            }
            checked.push((call, None));
        }
        true
    }
}

/// The reason the `PreToolUse` hooks blocked the `task` call `id`, if
/// they did (`checked`: the calls whose hooks ran).
pub(super) fn task_blocked(checked: &[(ToolCall, Option<String>)], id: &str) -> Option<String> {
    checked
        .iter()
        .find(|(c, _)| c.id == id)
        .and_then(|(_, blocked)| blocked.clone())
}

impl Session {
    /// This session is the child of a `task` call: the `spawned` record
    /// after its header (its requests then offer `spawned.tools` alone).
    pub fn spawned(&mut self, spawned: crate::record::Spawned) -> Vec<Command> {
        self.append(vec![Record::Spawned(spawned)])
    }

    /// The session's end stopped the background commands `ended` (their
    /// ids and how): a `background` record each.
    pub fn shells_ended(
        &mut self,
        ended: Vec<(String, String)>,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        let records = ended
            .into_iter()
            .map(|(id, status)| {
                Record::Background(crate::record::Background {
                    at: now,
                    call: String::new(),
                    id,
                    event: crate::record::BackgroundEvent::Ended { status },
                })
            })
            .collect();
        self.append(records)
    }
}
