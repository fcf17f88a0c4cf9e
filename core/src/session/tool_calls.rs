//! The session's side of tool calls: which call runs next (the repeat
//! guard, the cap on calls per answer, plan mode, the approval gates),
//! what a tool's result and side effects log, the sandbox's refusals.

use time::OffsetDateTime;

use super::approval;
use super::delegation::task_blocked;
use super::phase::{Due, Front};
use super::{Command, FileCommand, Phase, Question, Sandboxing, Session, ToolCommand, ToolEffects};
use super::{ToolInput, UserCommand, PLANNING_REFUSED};
use crate::guard::{self, StopReason, Verdict};
use crate::record::{ChangedBy, Image, MemoryChanged, Message, Record, Role, ToolCall};
use crate::tools::{self, Tool};

impl Session {
    /// The result of the running tool `call` ([`ToolInput::Done`],
    /// [`ToolInput::SandboxRefused`]): what it did is logged before it.
    pub(super) fn tool_ended(
        &mut self,
        call: ToolCall,
        outside: bool,
        input: ToolInput,
    ) -> Vec<Command> {
        match input {
            ToolInput::Done {
                id,
                output,
                grant,
                effects,
                parts: _,
                now,
            } => {
                let (mut cmds, image) = self.tool_effects(&id, effects, now);
                cmds.extend(self.tool_done(call, output, grant, image, now));
                cmds
            }
            ToolInput::SandboxRefused {
                id,
                output,
                effects,
                parts: _,
                now,
            } => {
                let (mut cmds, image) = self.tool_effects(&id, effects, now);
                cmds.extend(self.sandbox_refused(call, output, image, outside, now));
                cmds
            }
            // Hooks and children answer their own phases, never a running
            // tool.
            other @ (ToolInput::Hooked { .. } | ToolInput::Delegated { .. }) => {
                self.ignored(&super::Input::Tool(other)).0
            }
        }
    }

    /// Starts the first open call that parses and that the repeat guard
    /// and the cap on calls per answer let run; calls that do not get their
    /// error as result at once. When none is left, the next request goes
    /// out, unless the turn took its tool rounds.
    pub(super) fn next_tool(&mut self, now: OffsetDateTime) -> Vec<Command> {
        self.next_tool_from(Front::default(), now)
    }

    /// [`Session::next_tool`], with what the `PreToolUse` hooks (and the
    /// user) already made of the calls at the front.
    pub(super) fn next_tool_from(&mut self, mut front: Front, now: OffsetDateTime) -> Vec<Command> {
        let mut cmds = Vec::new();
        while let Some(call) = self.state.open_calls.first().cloned() {
            match self.start_call(call, &mut front, now) {
                Next::Answered(done) => cmds.extend(done),
                Next::Waits(done) => {
                    cmds.extend(done);
                    return cmds;
                }
            }
        }
        let limit = self.settings.max_tool_rounds;
        if self.state.turn_rounds >= u64::from(limit) {
            cmds.extend(self.stop(StopReason::ToolRounds { limit }, now));
            return cmds;
        }
        cmds.extend(self.request(Due::default(), now));
        cmds
    }

    /// The first open call: refused at once (over the calls of its
    /// answer, repeated, unparsable), or started as its kind is (an MCP
    /// call, a tool). `front`: what its hooks and the user made of it (and
    /// of the `task` calls beside it).
    fn start_call(&mut self, call: ToolCall, front: &mut Front, now: OffsetDateTime) -> Next {
        let allowed = front.allowed(&call.id).then(|| call.id.clone());
        let allowed = allowed.as_deref();
        if let Some(error) = self.over_calls_per_answer() {
            return Next::Answered(self.result(call.id, error, now));
        }
        let verdict = guard::verdict(
            self.turn_calls().into_iter(),
            &call,
            self.settings.repeat_limit,
        );
        match verdict {
            Verdict::Run => {}
            Verdict::Refuse(error) => return Next::Answered(self.result(call.id, error, now)),
            Verdict::Stop(reason) => return Next::Waits(self.stop(reason, now)),
        }
        if let Some(refused) = self.state.agents.refusal(&call.name) {
            // A child calls only the tools it was given.
            return Next::Answered(self.result(call.id, refused, now));
        }
        if call.name == "task" {
            // Their `PreToolUse` hooks first, each call's, then the `task`
            // calls at the front go out together, as children.
            let tasks = &mut front.tasks;
            if let Some(reason) = task_blocked(tasks, &call.id) {
                let blocked = crate::hooks::blocked_result(&reason);
                return Next::Answered(self.result(call.id, blocked, now));
            }
            let mut hooked = Vec::new();
            if !self.tasks_hooked(tasks, &mut hooked) {
                return Next::Waits(hooked);
            }
            if let Some(started) = self.delegate(tasks, now) {
                return match self.phase {
                    Phase::Delegating { .. } => Next::Waits(started),
                    _ => Next::Answered(started),
                };
            }
            front.check_task(&call.id);
        }
        // Its `PreToolUse` hooks first: they may block it or rewrite its
        // input.
        let mut hooked = Vec::new();
        let Some(call) = self.checked_call(call, front, &mut hooked) else {
            return Next::Waits(hooked);
        };
        if crate::mcp::is_mcp(&call.name) {
            return self.start_mcp(call, allowed, now);
        }
        match tools::parse(&call) {
            Ok(tool) => self.start_tool(call, tool, allowed, now),
            Err(error) => Next::Answered(self.result(call.id, error, now)),
        }
    }

    /// An MCP call: refused while planning, else as its gate says (run,
    /// ask, refuse).
    fn start_mcp(&mut self, call: ToolCall, allowed: Option<&str>, now: OffsetDateTime) -> Next {
        if self.state.planning {
            return Next::Answered(self.result(call.id, PLANNING_REFUSED.to_owned(), now));
        }
        match self.mcp_gate(&call, allowed, now) {
            approval::Gate::Run(mut cmds) => {
                cmds.push(self.call_mcp(&call));
                self.phase = Phase::Running {
                    call,
                    outside: false,
                };
                Next::Waits(cmds)
            }
            approval::Gate::Ask => {
                let command = crate::mcp::question(&call.name, &call.arguments);
                Next::Waits(self.ask_run(call, command.clone(), command))
            }
            approval::Gate::Refused(refused) => Next::Answered(refused),
        }
    }

    /// A tool of revolve's own: a skill it does not know and a change
    /// while planning are refused; an edit opens its file; a shell command
    /// passes its gate first; the rest runs.
    fn start_tool(
        &mut self,
        call: ToolCall,
        tool: Tool,
        allowed: Option<&str>,
        now: OffsetDateTime,
    ) -> Next {
        let tool = match tool {
            Tool::UpdatePlan { plan } => return Next::Answered(self.set_plan(call.id, plan, now)),
            Tool::Skill { name, .. } => match crate::skills::find(&self.parts.skills, &name) {
                Some(skill) => Tool::Skill {
                    dir: skill.dir.clone(),
                    name,
                },
                None => {
                    let error = crate::skills::unknown(&self.parts.skills, &name);
                    return Next::Answered(self.result(call.id, error, now));
                }
            },
            other => other,
        };
        // The folders of the skills listed are readable, as a spill is.
        let grants = self
            .grants
            .iter()
            .cloned()
            .chain(self.parts.skills.iter().map(|s| s.dir.clone()))
            .collect();
        let web = matches!(tool, Tool::WebFetch { .. });
        if self.state.planning && !tool.changes_nothing() && !web {
            return Next::Answered(self.result(call.id, PLANNING_REFUSED.to_owned(), now));
        }
        if let Some(path) = tool.edit_path() {
            let open = Command::File(FileCommand::Open {
                id: call.id.clone(),
                path: path.to_owned(),
                tool,
                arguments: call.arguments.clone(),
                grants,
            });
            self.phase = Phase::Editing { call, staged: None };
            return Next::Waits(vec![open]);
        }
        let mut cmds = Vec::new();
        let tool = match tool {
            Tool::WebFetch { url, prompt, .. } => {
                match self.web_gate(&call.id, &url, allowed, now) {
                    approval::Gate::Run(logged) => cmds.extend(logged),
                    approval::Gate::Ask => {
                        let (_, host) = crate::web::checked(&url).unwrap_or(("", ""));
                        let message = format!("revolve asks to fetch {url}");
                        let ask = Command::User(UserCommand::AskFetch {
                            id: call.id.clone(),
                            url: url.clone(),
                            host: host.to_owned(),
                        });
                        let phase = Phase::Asking(Question::Run { call: call.clone() });
                        return Next::Waits(self.notified(message, phase, ask));
                    }
                    approval::Gate::Refused(refused) => return Next::Answered(refused),
                }
                self.web_fetch(&call.id, url, prompt, allowed, now)
            }
            other => other,
        };
        if let Tool::Shell { command, .. } = &tool {
            match self.shell_gate(&call.id, command, allowed, now) {
                approval::Gate::Run(logged) => cmds.extend(logged),
                approval::Gate::Ask => {
                    let message = format!("revolve asks to run `{command}`");
                    return Next::Waits(self.ask_run(call, command.clone(), message));
                }
                approval::Gate::Refused(refused) => return Next::Answered(refused),
            }
        }
        cmds.push(Command::Tool(ToolCommand::Run {
            id: call.id.clone(),
            tool,
            arguments: call.arguments.clone(),
            grants,
            sandbox: if self.state.planning {
                Sandboxing::ReadOnly
            } else {
                Sandboxing::Session
            },
        }));
        self.phase = Phase::Running {
            call,
            outside: false,
        };
        Next::Waits(cmds)
    }

    /// Asks the user whether `call` (as its hooks left it) may run
    /// `command`.
    fn ask_run(&mut self, call: ToolCall, command: String, message: String) -> Vec<Command> {
        let id = call.id.clone();
        let phase = Phase::Asking(Question::Run { call });
        let ask = Command::User(UserCommand::Ask { id, command });
        // The `Notification` hooks tell of it first.
        self.notified(message, phase, ask)
    }

    /// The call `id` gets `text` as its result at once (the next call is
    /// looked at by the caller).
    fn result(&mut self, id: String, text: String, now: OffsetDateTime) -> Vec<Command> {
        self.result_with(id, text, None, now)
    }

    /// [`Session::result`], with the picture the call's tool read (left
    /// out, and said so, for a model that takes none).
    fn result_with(
        &mut self,
        id: String,
        text: String,
        image: Option<Box<Image>>,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        let mut message = Message::tool(now, id, text);
        if let Some(image) = image {
            if self.blind() {
                message.content.push_str(&format!(
                    "\n[the image is left out: {} does not take images]",
                    self.state.model()
                ));
            } else {
                message.images.push(*image);
            }
        }
        self.append(vec![Record::Message(message)])
    }

    /// What the tool call `id` did besides its output, logged before its
    /// result, in the order of [`ToolEffects`]'s fields: a `shell`
    /// command's changes, the note that they are not tracked (once a
    /// run), what `read_file` saw, what `remember` wrote; and the picture
    /// it read, which its result carries once it is logged.
    pub(super) fn tool_effects(
        &mut self,
        id: &str,
        effects: ToolEffects,
        now: OffsetDateTime,
    ) -> (Vec<Command>, Option<Box<Image>>) {
        let ToolEffects {
            changes,
            untracked,
            seen,
            memory,
            background,
            image,
            fetched,
        } = effects;
        let mut cmds = Vec::new();
        if !changes.is_empty() {
            cmds.extend(self.shell_changed(id.to_owned(), changes, now));
        }
        if untracked && !self.told_untracked {
            self.told_untracked = true;
            let cwd = self.state.header.as_ref().map_or("", |h| h.cwd.as_str());
            cmds.push(Command::show(format!(
                "revolve: {cwd} is not in a git repository: what shell commands change in \
                 it is not tracked, and a rewind cannot take it back (edit_file and \
                 write_file are tracked)"
            )));
        }
        if let Some((path, hash)) = seen.map(|s| *s) {
            cmds.extend(self.seen(path, hash, now));
        }
        if let Some(w) = memory {
            cmds.extend(self.append(vec![Record::MemoryChanged(MemoryChanged {
                at: now,
                entry: w.entry,
                by: ChangedBy::Remember,
                files: w.files,
            })]));
        }
        if let Some((shell, event)) = background {
            cmds.extend(
                self.append(vec![Record::Background(crate::record::Background {
                    at: now,
                    call: id.to_owned(),
                    id: shell,
                    event,
                })]),
            );
        }
        if let Some(mut page) = fetched {
            page.call = id.to_owned();
            cmds.extend(self.append(vec![Record::Fetched(*page)]));
        }
        (cmds, image)
    }

    /// The shell call `call` reads as refused by the sandbox: a user at a
    /// terminal is asked whether it may run once outside (not while
    /// planning, and once per call); otherwise its output is its result.
    pub(super) fn sandbox_refused(
        &mut self,
        call: ToolCall,
        output: String,
        image: Option<Box<Image>>,
        again: bool,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        let id = call.id.clone();
        // The command as its hooks left it: what the sandbox refused, and
        // what would run again outside it.
        let command = match tools::parse(&call) {
            Ok(Tool::Shell { command, .. }) if self.running_call(&id).is_some() => Some(command),
            _ => None,
        };
        match command {
            Some(command) if self.settings.interactive && !self.state.planning && !again => {
                self.phase = Phase::Asking(Question::Outside {
                    call,
                    output,
                    image,
                });
                vec![Command::User(UserCommand::AskOutside { id, command })]
            }
            _ => self.tool_done(call, output, None, image, now),
        }
    }

    /// The user answered whether the refused call `checked` (as its
    /// hooks left it) may run once outside the sandbox: logged (an
    /// `approved` record of `unsandboxed`); yes runs it again outside, no
    /// keeps the sandbox's result (`output`, `image`).
    pub(super) fn outside(
        &mut self,
        checked: ToolCall,
        output: String,
        image: Option<Box<Image>>,
        yes: bool,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        let id = checked.id.clone();
        if self.running_call(&id).is_none() {
            return Vec::new();
        }
        // As its hooks left it, as the user was asked: a hook's rewrite
        // holds outside the sandbox too.
        let Ok(tool) = tools::parse(&checked) else {
            return self.tool_done(checked, output, None, image, now);
        };
        let command = match &tool {
            Tool::Shell { command, .. } => command.clone(),
            _ => String::new(),
        };
        let mut cmds = self.append(vec![Record::Approved(crate::record::Approved {
            at: now,
            call: id.clone(),
            path: command,
            answer: if yes {
                crate::edit::Answer::Yes
            } else {
                crate::edit::Answer::No
            },
            tool: crate::record::Asked::Unsandboxed,
            rule: None,
        })]);
        if !yes {
            cmds.extend(self.tool_done(checked, output, None, image, now));
            return cmds;
        }
        let arguments = checked.arguments.clone();
        self.phase = Phase::Running {
            call: checked,
            outside: true,
        };
        cmds.push(Command::Tool(ToolCommand::Run {
            id,
            tool,
            arguments,
            grants: self.grants.iter().cloned().collect(),
            sandbox: Sandboxing::Off,
        }));
        cmds
    }

    /// The error result of the first open call when it comes after the
    /// first [`Settings::max_calls_per_answer`] calls of its answer: one
    /// answer cannot make any number of calls run.
    pub(super) fn over_calls_per_answer(&self) -> Option<String> {
        let made = self
            .state
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::Assistant)
            .map_or(0, |m| m.tool_calls.len());
        let position = made.saturating_sub(self.state.open_calls.len());
        let limit = self.settings.max_calls_per_answer;
        (position >= limit as usize).then(|| {
            format!(
                "error: not run: this answer made {made} tool calls, and only the first {limit} of one answer run (max_calls_per_answer). Make the calls still needed in your next answer."
            )
        })
    }

    /// This turn's tool calls that have their results, in order: the calls
    /// of every assistant message since the last user message, without the
    /// ones still open.
    pub(super) fn turn_calls(&self) -> Vec<&ToolCall> {
        let messages = &self.state.messages;
        let start = messages
            .iter()
            .rposition(|m| m.role == Role::User)
            .map_or(0, |i| i + 1);
        let mut calls: Vec<&ToolCall> = messages[start..]
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .flat_map(|m| &m.tool_calls)
            .collect();
        calls.truncate(calls.len().saturating_sub(self.state.open_calls.len()));
        calls
    }

    /// The tool of `call` (as its hooks left it) ended with `output`
    /// (and the picture it read): a grant it asks for is decided, else its
    /// result goes out.
    pub(super) fn tool_done(
        &mut self,
        call: ToolCall,
        output: String,
        grant: Option<String>,
        image: Option<Box<Image>>,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        let id = call.id.clone();
        if self.state.open_calls.first().is_none_or(|c| c.id != id) {
            return vec![Command::show(format!(
                "ignored a result for tool call {id}, which is not running"
            ))];
        }
        if let Some(path) = grant {
            return self.grant_gate(id, path, now);
        }
        // Its `PostToolUse` hooks first, then `tool_result`.
        self.after_tool(call, output, image, true, now)
    }

    /// The call `id`'s result (with the picture its tool read) logged,
    /// spilled first when `spill` and long; then the next tool or request.
    pub(super) fn tool_result(
        &mut self,
        id: String,
        output: String,
        image: Option<Box<Image>>,
        spill: bool,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        let mut cmds = if spill {
            self.spilled_result(id, output, image, now)
        } else {
            self.result_with(id, output, image, now)
        };
        cmds.extend(self.next_tool(now));
        cmds
    }

    /// The call `id`'s result (with the picture its tool read) logged,
    /// spilled first when long, without going on to the next tool.
    pub(super) fn spilled_result(
        &mut self,
        id: String,
        output: String,
        image: Option<Box<Image>>,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        let mut cmds = Vec::new();
        let content = if output.chars().count() > self.settings.spill_chars {
            // Named by the request that made the call (numbers only grow,
            // across compactions and resumes) and the result's place in its
            // round, so no spill ever takes another's name.
            let round = self
                .state
                .messages
                .iter()
                .rev()
                .take_while(|m| m.role == Role::Tool)
                .count()
                + 1;
            let path = format!(
                "{}/{:04}-{round}-{}.txt",
                self.settings.spill_dir.trim_end_matches('/'),
                self.state.totals.requests,
                file_safe(&id)
            );
            let note = format!(
                " of {} in total; the whole output is in {path}, read it with read_file and an offset",
                output.chars().count()
            );
            // The same head and tail as a pruned result, or less when the
            // threshold is lower, so what the model sees stays under it.
            let spill = self.settings.spill_chars;
            let shown = tools::cut(
                &output,
                tools::HEAD_CHARS.min(spill * 4 / 5),
                tools::TAIL_CHARS.min(spill / 5),
                &note,
            );
            self.grants.insert(path.clone());
            cmds.push(Command::File(FileCommand::Spill {
                path,
                content: output,
            }));
            shown
        } else {
            output
        };
        cmds.extend(self.result_with(id, content, image, now));
        cmds
    }

    /// The tool call `id`, when it is the one running now (the first still
    /// open).
    pub(super) fn running_call(&self, id: &str) -> Option<&ToolCall> {
        self.state.open_calls.first().filter(|c| c.id == id)
    }

    /// The call `id` gets `text` as its result; then the next tool runs,
    /// or the next request goes out.
    pub(super) fn answer(&mut self, id: String, text: String, now: OffsetDateTime) -> Vec<Command> {
        let mut cmds = self.append(vec![Record::Message(Message::tool(now, id, text))]);
        cmds.extend(self.next_tool(now));
        cmds
    }
}

/// A call id as a file name: letters, digits, `-` and `_` only.
fn file_safe(id: &str) -> String {
    let safe: String = id
        .chars()
        .take(64)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if safe.is_empty() {
        "call".to_owned()
    } else {
        safe
    }
}

/// What became of the first open call.
enum Next {
    /// It got its result at once (an error, a refusal): the next one is
    /// looked at.
    Answered(Vec<Command>),
    /// It runs, a question about it is asked, or the turn stopped: the
    /// session waits.
    Waits(Vec<Command>),
}
