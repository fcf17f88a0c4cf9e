//! Hooks in the session (issue 43): a round of an event's hooks
//! ([`crate::hooks::Round`]) runs one [`ToolCommand::Hook`] at a time, each
//! answered by [`super::ToolInput::Hooked`] and logged as a `hook` record; when the
//! round is over the session goes on from what it was doing, with what
//! the hooks decided ([`Resume`]).

use time::OffsetDateTime;

use crate::hooks::{self, About, Got, Ran, Round};
use crate::plan;
use crate::record::{Image, Message, PlanSet, Record, ToolCall};

use super::phase::{Due, Front, Phase};
use super::{Command, Session, ToolCommand};

/// What a round of hooks goes on to once it is over.
#[derive(Clone, Debug)]
pub(super) enum Resume {
    /// `SessionStart`: nothing (the session was idle).
    Idle,
    /// `UserPromptSubmit`: the user's line, sent with what the hooks
    /// added, or not at all when one blocked.
    Line {
        text: String,
        images: Vec<crate::record::Image>,
    },
    /// `PreToolUse`: the first open call, as the hooks left its input,
    /// or its blocked result; `tasks`: the front's `task` calls checked
    /// before (see [`Front`]).
    Call {
        tasks: Vec<(ToolCall, Option<String>)>,
    },
    /// `PostToolUse`: the call `id`'s result (and the picture it read, if
    /// any), with what the hooks added; `spill`: whether a long one is
    /// spilled (not an edit's).
    Result {
        id: String,
        output: String,
        image: Option<Box<Image>>,
        spill: bool,
    },
    /// `PreToolUse` of the `task` call `id`: it is added to `tasks` (the
    /// front's calls checked before it) as the hooks left it, or blocked,
    /// and the next call goes on.
    Task {
        id: String,
        tasks: Vec<(ToolCall, Option<String>)>,
    },
    /// `PostToolUse` of the `task` call `id`: its result, with what the
    /// hooks added; then the results of the children after it (`rest`),
    /// whose checked calls are in `tasks`.
    Tasks {
        id: String,
        output: String,
        rest: Vec<super::protocol::TaskEnd>,
        tasks: Vec<(ToolCall, Option<String>)>,
    },
    /// `Stop`: the turn ends, or goes on with the reason a hook blocked.
    End,
    /// `PreCompact` of `/compact`: the compaction.
    Compact,
    /// `PreCompact` of an automatic compaction: the request due, decided
    /// again (it compacts without running them again).
    Request { due: Due },
    /// `Notification`: what was about to happen, as it was
    /// (the phase it waits in, the commands that ask for it).
    Then {
        phase: Box<Phase>,
        cmds: Vec<Command>,
    },
}

impl Resume {
    /// Whether the round runs inside a turn (Ctrl-C cuts it short).
    pub(super) fn in_turn(&self) -> bool {
        !matches!(self, Resume::Idle | Resume::Line { .. } | Resume::Compact)
    }
}

impl Session {
    /// Starts the round of `about`'s hooks, if any matches: the phase
    /// waits for the first hook's run.
    pub(super) fn hooks_for(
        &mut self,
        about: About,
        call: Option<(&str, &str)>,
        resume: Resume,
    ) -> Option<Vec<Command>> {
        let (round, next) = Round::start(&self.settings.hooks, about, call)?;
        self.phase = Phase::Hooking { round, resume };
        Some(vec![Command::Tool(ToolCommand::Hook(next))])
    }

    /// A hook of the round ran: its record, what the user is told, and
    /// the next hook, or what the round goes on to.
    pub(super) fn hook_ran(
        &mut self,
        mut round: Round,
        resume: Resume,
        ran: Ran,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        let (record, note, next) = round.ran(&ran, now);
        let mut cmds = self.append(vec![Record::Hook(record)]);
        if let Some(note) = note {
            cmds.push(Command::show(note));
        }
        match next {
            Some(next) => {
                self.phase = Phase::Hooking { round, resume };
                cmds.push(Command::Tool(ToolCommand::Hook(next)));
            }
            None => cmds.extend(self.hooks_done(round.got(), resume, now)),
        }
        cmds
    }

    fn hooks_done(&mut self, got: Got, resume: Resume, now: OffsetDateTime) -> Vec<Command> {
        match resume {
            Resume::Idle => Vec::new(),
            Resume::Line { text, images } => match got.blocked {
                Some(reason) => vec![Command::show(format!(
                    "not sent: a UserPromptSubmit hook blocked it: {reason}"
                ))],
                None => self.send_line(hooks::with_context(&text, &got.added), images, now),
            },
            Resume::Call { tasks } => {
                let Some(mut call) = self.state.open_calls.first().cloned() else {
                    return Vec::new();
                };
                if let Some(reason) = got.blocked {
                    let result = Message::tool(now, call.id, hooks::blocked_result(&reason));
                    let mut cmds = self.append(vec![Record::Message(result)]);
                    cmds.extend(self.next_tool_from(Front::tasks(tasks), now));
                    return cmds;
                }
                if let Some(input) = got.input {
                    call.arguments = input.to_string();
                }
                self.next_tool_from(Front::checked(call, false, tasks), now)
            }
            Resume::Result {
                id,
                output,
                image,
                spill,
            } => {
                let mut added = got.added;
                if let Some(reason) = got.blocked {
                    added.push(reason);
                }
                let output = hooks::after_result(&output, &added);
                self.tool_result(id, output, image, spill, now)
            }
            Resume::Task { id, mut tasks } => {
                let Some(mut call) = self.state.open_calls.iter().find(|c| c.id == id).cloned()
                else {
                    return Vec::new();
                };
                if let Some(input) = got.input.filter(|_| got.blocked.is_none()) {
                    call.arguments = input.to_string();
                }
                tasks.push((call, got.blocked));
                self.next_tool_from(Front::tasks(tasks), now)
            }
            Resume::Tasks {
                id,
                output,
                rest,
                tasks,
            } => {
                let mut added = got.added;
                if let Some(reason) = got.blocked {
                    added.push(reason);
                }
                let output = hooks::after_result(&output, &added);
                let mut cmds = self.spilled_result(id, output, None, now);
                cmds.extend(self.delegated(rest, false, tasks, now));
                cmds
            }
            Resume::Compact => self.compact(true, &mut Due::default(), now),
            Resume::Request { due } => self.request(due, now),
            Resume::Then { phase, cmds } => {
                self.phase = *phase;
                cmds
            }
            Resume::End => match got.blocked {
                Some(reason) => {
                    self.stop_rounds += 1;
                    let message = Message::user(now, hooks::stop_message(&reason));
                    let mut cmds = self.append(vec![Record::Message(message)]);
                    cmds.extend(self.request(Due::default(), now));
                    cmds
                }
                None => vec![Command::sync()],
            },
        }
    }

    /// The call the loop runs: the first open one as its `PreToolUse`
    /// hooks left it (as `front` holds it, when they ran already), or
    /// `None` when they are running now (their round started, its commands
    /// in `cmds`).
    pub(super) fn checked_call(
        &mut self,
        call: ToolCall,
        front: &mut Front,
        cmds: &mut Vec<Command>,
    ) -> Option<ToolCall> {
        if let Some(checked) = front.take_checked(&call.id) {
            return Some(checked);
        }
        let about = About::PreToolUse {
            tool: call.name.clone(),
            input: hooks::tool_input(&call.arguments),
        };
        let resume = Resume::Call {
            tasks: front.tasks.clone(),
        };
        match self.hooks_for(about, Some((&call.id, &call.name)), resume) {
            Some(run) => {
                cmds.extend(run);
                None
            }
            None => Some(call),
        }
    }

    /// The result of `call` (as its `PreToolUse` hooks left it), with the
    /// picture it read if any, once it ran: its `PostToolUse` hooks first.
    pub(super) fn after_tool(
        &mut self,
        call: ToolCall,
        output: String,
        image: Option<Box<Image>>,
        spill: bool,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        let about = About::PostToolUse {
            tool: call.name.clone(),
            input: hooks::tool_input(&call.arguments),
            output: output.clone(),
        };
        let resume = Resume::Result {
            id: call.id.clone(),
            output: output.clone(),
            image: image.clone(),
            spill,
        };
        if let Some(cmds) = self.hooks_for(about, Some((&call.id, &call.name)), resume) {
            return cmds;
        }
        self.tool_result(call.id, output, image, spill, now)
    }

    /// The turn would end: its `Stop` hooks first, while they may send it
    /// on; past the bound, said once.
    pub(super) fn turn_ends(&mut self) -> Vec<Command> {
        if !self.settings.hooks.any(hooks::Event::Stop) {
            return vec![Command::sync()];
        }
        if !hooks::stop_may_go_on(self.stop_rounds) {
            return vec![Command::show(hooks::stop_bounded_note()), Command::sync()];
        }
        let about = About::Stop {
            active: self.stop_rounds > 0,
        };
        self.hooks_for(about, None, Resume::End)
            .unwrap_or_else(|| vec![Command::sync()])
    }

    /// The question `ask` (waited for in `phase`), after the
    /// `Notification` hooks told of `message`.
    pub(super) fn notified(&mut self, message: String, phase: Phase, ask: Command) -> Vec<Command> {
        self.told_first(About::Notification { message }, phase, vec![ask])
    }

    /// What was about to happen (`phase`, `cmds`), after the hooks of
    /// `about` (`Notification` before a question, `PreCompact` before a
    /// summary), which cannot change it.
    pub(super) fn told_first(
        &mut self,
        about: About,
        phase: Phase,
        cmds: Vec<Command>,
    ) -> Vec<Command> {
        let resume = Resume::Then {
            phase: Box::new(phase.clone()),
            cmds: cmds.clone(),
        };
        match self.hooks_for(about, None, resume) {
            Some(run) => run,
            None => {
                self.phase = phase;
                cmds
            }
        }
    }

    /// `update_plan`: the plan logged and answered; nothing runs.
    pub(super) fn set_plan(
        &mut self,
        id: String,
        plan: plan::Plan,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        let text = plan::result_text(&plan);
        // The result first: the front shows the plan after the call.
        self.append(vec![
            Record::Message(Message::tool(now, id.clone(), text)),
            Record::Plan(PlanSet {
                at: now,
                call: Some(id),
                steps: plan,
            }),
        ])
    }

    /// The system prompt's blocks besides [`crate::prompt::system`]'s:
    /// what `SessionStart` hooks added, and the open plan.
    pub(super) fn hook_and_plan_blocks(&self, system: &mut String) {
        for block in [
            hooks::start_block(&self.state.start_context),
            plan::prompt_block(&self.state.plan),
        ]
        .into_iter()
        .flatten()
        {
            system.push_str("\n\n");
            system.push_str(&block);
        }
    }
}
