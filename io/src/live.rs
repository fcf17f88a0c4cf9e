//! A running session: feeds inputs to the core's state machine and executes
//! the commands it returns, in order (see `revolve_core::session`), showing
//! and asking through a [`Front`]. The binary reads lines and turns the
//! user's commands into calls here (`user.rs`: one input each).
//!
//! `Live::run_input` is the driver: it feeds an input, hands each
//! command of the step to its family's executor (`log.rs`, `model.rs`,
//! `tool.rs`, `file.rs`, `memory.rs`, `user.rs`, one `execute_<family>`
//! each, as the protocol table in `core/src/session/protocol.rs` says),
//! queues the answer each returns, and feeds the queue until it is empty.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use revolve_core::guard::StopReason;
use revolve_core::names;
use revolve_core::record::{Header, Resumed, FORMAT_VERSION};
use revolve_core::text as view;
use revolve_core::tools::Tool;
use revolve_core::{Command, Input, Outcome as CoreOutcome, Session, Settings, State};
use revolve_provider::Provider;
use revolve_store::goal;
use revolve_store::inbox::Inbox;
use revolve_store::log::LogWriter;
use revolve_store::memory::MemoryDirs;
use revolve_store::registry::Claim;
use revolve_store::store::{CreateError, Store};
use revolve_tools::FileId;

use crate::error::Error;
use crate::front::Front;
use crate::{clock, interrupt};

mod file;
mod log;
mod mcp;
mod memory;
mod model;
mod refine;
mod tool;
pub use tool::Attachment;
mod user;

/// How a line the user sent ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A command or a turn completed.
    Done,
    /// The model request failed; the text says why. The user's message is
    /// in the log and the next turn can go on.
    Failed(String),
    /// The user pressed Ctrl-C during the turn.
    Interrupted,
    /// The core ended the turn on its own: the model repeated a call, or
    /// the turn took its tool rounds.
    Stopped(StopReason),
    /// The user asked to end the session.
    Quit,
}

/// What a session runs with that its log does not say: the settled
/// settings, and what only the shell has (handles, paths, the provider).
pub struct Runtime {
    /// Who answers the session's model requests (an HTTP provider, or a script in tests).
    pub provider: Arc<dyn Provider>,
    /// The model; on resume, `None` keeps the session's.
    pub model: Option<String>,
    /// The declared window; on resume, `None` keeps the session's.
    pub window: Option<u64>,
    /// The settings the command line, the environment and the config file
    /// settled to, handed to the core as they are. Only what a session
    /// learns when it opens is filled in then: its spill folder, whether a
    /// user is at a terminal and whether the server counts tokens.
    pub settings: Settings,
    /// Where memory and the goal live.
    pub memory: MemoryDirs,
    /// Whether this run created the project directory (for `agent_info`).
    pub created_project_dir: bool,
    /// The working tree's identity when the run started (tools refuse a
    /// tree that is no longer the same directory).
    pub tree: Option<FileId>,
    /// The sandbox shell commands run in.
    pub sandbox: revolve_core::sandbox::Policy,
    /// What to say about the sandbox before the first shell command, once
    /// (what it cannot enforce here, or that it is off).
    pub sandbox_note: Option<String>,
    /// The MCP servers (whether their calls need approval, and how long
    /// one may take, are in [`Runtime::settings`]).
    pub mcp: Mcp,
    /// What children of `task` calls inherit, or whose child this is.
    pub agents: crate::task::Agents,
    /// `tool_choice` of a new session's requests (`--tool-choice`, config
    /// `tool_choice`), kept in its header; a resumed session keeps its own.
    pub tool_choice: Option<revolve_core::request::ToolChoice>,
}

/// The MCP servers of a session (none by default).
#[derive(Default)]
pub struct Mcp {
    /// The servers, started (in parallel with the first prompt).
    pub hub: Option<Arc<revolve_mcp::Hub>>,
    /// A replayed session's recorded lists and results, given back in
    /// place of servers (`--provider replay:NAME`).
    pub recorded: Option<revolve_core::mcp::Recorded>,
}

/// A session this process runs, shown and asked through `F`.
pub struct Live<F: Front> {
    session: Session,
    writer: LogWriter,
    claim: Claim,
    store: Store,
    runtime: Runtime,
    /// Where answers, tool calls and totals go, and who is asked.
    front: F,
    /// Where messages for this session arrive (a named session only).
    inbox: Option<Inbox>,
    /// Problems with the prompt's files already said (each once a run).
    said: Vec<String>,
}

impl<F: Front> Live<F> {
    /// Starts a new session in `store`'s directory. `name` is the user's
    /// choice; without one an interactive session gets a generated name and
    /// a piped one none.
    pub fn start(
        store: Store,
        runtime: Runtime,
        front: F,
        name: Option<String>,
        interactive: bool,
    ) -> Result<Live<F>, Error> {
        let now = clock::now();
        let header = Header {
            version: FORMAT_VERSION,
            id: clock::session_id(now),
            name: None,
            named: name.is_some(),
            cwd: store.cwd.to_string_lossy().into_owned(),
            project: store.project.key.to_string_lossy().into_owned(),
            started: now,
            model: runtime
                .model
                .clone()
                .unwrap_or_else(|| DEFAULT_MODEL.to_owned()),
            window: runtime.window.unwrap_or(DEFAULT_WINDOW),
            provider: runtime.provider.name().to_owned(),
            continues: None,
            tool_choice: runtime.tool_choice,
        };
        // A piped run without --name gets no name, so it needs no listing.
        let naming =
            (name.is_some() || names::gets_generated_name(interactive)).then_some(|used: &_| {
                match name {
                    Some(n) => names::validate(&n, used)
                        .map(|()| Some(n.clone()))
                        .map_err(|why| match why {
                            names::BadName::InUse => {
                                format!(
                            "cannot name the session '{n}': {why} (resume it with --resume {n})"
                        )
                            }
                            why => format!("cannot name the session '{n}': {why}"),
                        }),
                    None => Ok(Some(names::allocate(used))),
                }
            });
        let created = store.create(header, naming);
        let (writer, claim, header) = match created {
            Ok(c) => c,
            Err(CreateError::Refused(why)) => return Err(Error::Usage(why)),
            Err(CreateError::Io(e)) => {
                return Err(Error::at(
                    &store.sessions_dir(),
                    "cannot create a session under",
                    e,
                ))
            }
        };
        // The store wrote the header; the core folds the same record.
        let settings = settings(&store, &header.id, &runtime, front.interactive());
        // The header is on disk already (written and synced before the file
        // took its name); the folder is synced with the first turn's end.
        let started = header.started;
        let (session, _header_cmd) = Session::start(header, settings);
        let mut live = Live::new(session, writer, claim, store, runtime, front);
        if let Some(child) = live.runtime.agents.child.clone() {
            // A subagent says whose call it runs for, right after its header.
            let cmds = live.session.spawned(revolve_core::record::Spawned {
                at: clock::now(),
                parent: child.parent,
                call: child.call,
                subagent: child.subagent,
                tools: child.tools,
            });
            live.log_only(cmds)?;
        }
        // The provider's web search, when a rule offers it.
        // At the header's time: no clock read for it.
        let offer = live.session.offer_search(started);
        live.log_only(offer)?;
        Ok(live)
    }

    /// A session opened, its log claimed, nothing run yet.
    fn new(
        session: Session,
        writer: LogWriter,
        claim: Claim,
        store: Store,
        runtime: Runtime,
        front: F,
    ) -> Live<F> {
        let inbox = inbox_of(&store, session.state().name().as_deref());
        Live {
            session,
            writer,
            claim,
            store,
            front,
            runtime,
            inbox,
            said: Vec::new(),
        }
    }

    /// Resumes the session `needle` names (name, id or path), or the latest
    /// one of this directory. Prints its conversation again on stderr.
    /// The runtime's model and window override what the session ran with
    /// when given.
    pub fn resume(
        store: Store,
        needle: Option<&str>,
        runtime: Runtime,
        front: F,
        show: bool,
    ) -> Result<Live<F>, Error> {
        let found = store.find(needle)?;
        Live::resume_at(store, &found, runtime, front, show)
    }

    /// [`Live::resume`] of the session file `found` (see [`Store::find`]),
    /// for a caller that looked it up before building the runtime.
    pub fn resume_at(
        store: Store,
        found: &Path,
        runtime: Runtime,
        mut front: F,
        show: bool,
    ) -> Result<Live<F>, Error> {
        // The newest file of the chain, claimed, folded, checked (see
        // Store::resume).
        let reopened = store.resume(found, RESUME_SHOWS_BYTES)?;
        let revolve_store::resume::Reopened {
            path,
            state,
            claim,
            writer,
            shown,
            skipped,
        } = reopened;
        let id = state.id().to_owned();
        if show && !shown.is_empty() {
            let shown = view::inert(&shown);
            front.notice(shown.strip_suffix('\n').unwrap_or(&shown));
        }
        if skipped > 0 {
            front.notice(&format!(
                "(skipped {skipped} unreadable line(s) of {})",
                path.display()
            ));
        }
        if state.repaired() > 0 {
            front.notice(&format!(
                "({} tool call(s) of {} lost their result line; each is answered as lost)",
                state.repaired(),
                path.display()
            ));
        }
        let resumed = Resumed {
            at: clock::now(),
            model: runtime
                .model
                .clone()
                .unwrap_or_else(|| state.model().clone()),
            window: runtime.window.unwrap_or(state.window()),
            provider: runtime.provider.name().to_owned(),
        };
        let settings = settings(&store, &id, &runtime, front.interactive());
        let (session, cmds) = Session::resume(state, settings, resumed);
        let mut live = Live::new(session, writer, claim, store, runtime, front);
        live.execute(cmds, &mut VecDeque::new(), &mut Flight::default())?;
        live.settle_pending_edit()?;
        live.settle_pending_rewind()?;
        // Messages the log holds already (a crash after logging them) leave
        // the inbox; the others wait for the next turn.
        live.settle_inbox();
        Ok(live)
    }

    /// The folded state of the session.
    pub fn state(&self) -> &State {
        self.session.state()
    }

    /// The prices of the session's model, when the table knows them.
    pub fn prices(&self) -> Option<revolve_core::models::Prices> {
        self.session.prices()
    }

    /// `--max-cost`, in nano-dollars.
    pub fn max_cost(&self) -> Option<u64> {
        self.runtime.settings.max_cost
    }

    /// Records whether this run created the project directory (which it
    /// does once the session is open), for `agent_info`.
    pub fn set_created_project_dir(&mut self, created: bool) {
        self.runtime.created_project_dir = created;
    }

    /// The standing goal as saved now (empty when it cannot be read).
    pub fn goals(&self) -> Result<revolve_core::goal::Goals, Error> {
        if self.runtime.settings.bare {
            return Ok(revolve_core::goal::Goals::default());
        }
        goal::load(&self.runtime.memory.project_dir).map_err(Error::store)
    }

    /// The goal's status row, cut to `width` (none when there is no goal).
    pub fn goal_row(&self, width: usize) -> Option<String> {
        match self.goals() {
            Ok(goals) => revolve_core::goal::status_row(&goals, width),
            Err(e) => Some(format!("goal: unreadable ({e})")),
        }
    }

    /// Where the REPL keeps its line history.
    pub fn history_path(&self) -> PathBuf {
        self.store.roots.history()
    }

    /// The session's log file.
    pub fn path(&self) -> &Path {
        self.writer.path()
    }

    /// This session's inbox, when it has a name.
    pub fn inbox(&self) -> Option<&Inbox> {
        self.inbox.as_ref()
    }

    /// The tool rounds the last turn took (the one running, or the last
    /// one that ended).
    pub fn turn_rounds(&self) -> u64 {
        self.session.state().turn_rounds()
    }

    /// Removes from the inbox what the log holds.
    fn settle_inbox(&mut self) {
        if let Some(inbox) = &self.inbox {
            if let Err(e) = inbox.settle(self.state().totals().delivered) {
                self.front.notice(&format!(
                    "revolve: cannot tidy the inbox {}: {e}",
                    inbox.dir().display()
                ));
            }
        }
    }

    /// The key this session's background commands are known by.
    fn shells_key(&self) -> String {
        self.state()
            .name()
            .clone()
            .unwrap_or_else(|| self.state().id().to_owned())
    }

    /// This session's background shell commands (`/shells`).
    pub fn shells(&self) -> Vec<revolve_tools::background::Listed> {
        revolve_tools::background::list(&self.shells_key())
    }

    /// Kills the background command `id` for the user (`/shells kill`),
    /// logged; how it ended, or `None` when there is no such command.
    pub fn kill_shell(&mut self, id: &str) -> Result<Option<String>, Error> {
        let running = self
            .shells()
            .iter()
            .any(|s| s.id == id && s.ended.is_none());
        let Some(how) = revolve_tools::background::kill_for_user(&self.shells_key(), id) else {
            return Ok(None);
        };
        if running {
            let cmds = self
                .session
                .shells_ended(vec![(id.to_owned(), how.clone())], clock::now());
            self.log_only(cmds)?;
        }
        Ok(Some(how))
    }

    /// Ends the session; one this run started that never held anything
    /// (no message, request, rewind or edit: see
    /// [`revolve_core::state::State::holds_anything`]) leaves no file, so its name is free again and `--continue` finds
    /// the session before it. Its background commands are killed first
    /// (each a `background` record). Returns whether the file was removed.
    pub fn close(self) -> bool {
        self.close_keeping().0
    }

    /// [`Live::close`], handing back what another session of this run
    /// starts with (`/clear`, `/resume` in the REPL): the store, the
    /// runtime (its MCP servers still running) and the front.
    pub fn close_keeping(mut self) -> (bool, Store, Runtime, F) {
        // The background commands end with the session, each said in the log.
        let key = self.shells_key();
        let ended = revolve_tools::background::end_all(Some(&key));
        if !ended.is_empty() {
            let cmds = self.session.shells_ended(ended, clock::now());
            let _ = self.log_only(cmds);
        }
        let Live {
            session,
            writer,
            claim,
            store,
            runtime,
            front,
            ..
        } = self;
        if session.state().holds_anything() {
            return (false, store, runtime, front);
        }
        // Under the naming lock, before the claim goes: no new session
        // sees the name free while the file is still there, nor the
        // reverse.
        let naming = store.naming().ok();
        let removed = store.remove(writer.path(), naming.as_ref());
        drop((writer, claim));
        drop(naming);
        (removed, store, runtime, front)
    }

    /// The known models: the shipped table and the config file's.
    pub fn models(&self) -> &revolve_core::models::Table {
        &self.runtime.settings.models
    }

    /// The store the session is kept in.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Where the session's memory and goal live.
    pub fn memory(&self) -> &MemoryDirs {
        &self.runtime.memory
    }

    /// Where the session shows and asks.
    pub fn front(&self) -> &F {
        &self.front
    }

    /// The session's MCP servers, when any was started (`/mcp` shows
    /// them).
    pub fn mcp_hub(&self) -> Option<&Arc<revolve_mcp::Hub>> {
        self.runtime.mcp.hub.as_ref()
    }

    /// Where the session shows and asks, to change how.
    pub fn front_mut(&mut self) -> &mut F {
        &mut self.front
    }

    /// Feeds an input and executes commands until the core has nothing more
    /// to do; how it ended.
    fn drive(&mut self, input: Input) -> Result<Outcome, Error> {
        self.run_input(input).map(|(outcome, _)| outcome)
    }

    /// [`Live::drive`], with what the commands did that the user's command
    /// reports (a refusal, an undo's files).
    fn run_input(&mut self, input: Input) -> Result<(Outcome, Did), Error> {
        let _signals = interrupt::Guard::new();
        let mut queue = VecDeque::from([input]);
        let mut outcome = Outcome::Done;
        let mut did = Did::default();
        let mut flight = Flight::default();
        while let Some(input) = queue.pop_front() {
            let step = self.session.handle(input);
            // The core says how the step ended what the user asked; the
            // last one that says stands.
            match step.outcome {
                CoreOutcome::Going | CoreOutcome::Ignored => {}
                CoreOutcome::Answered => outcome = Outcome::Done,
                CoreOutcome::Failed(error) => outcome = Outcome::Failed(error),
                CoreOutcome::Interrupted => outcome = Outcome::Interrupted,
                CoreOutcome::Stopped(reason) => outcome = Outcome::Stopped(reason),
            }
            let cmds = step.commands;
            did.then(self.execute(cmds, &mut queue, &mut flight)?);
        }
        self.front.settled();
        if interrupt::terminated() {
            return Err(Error::Terminated);
        }
        if interrupt::take() {
            // Ctrl-C after the last poll, as the turn ended: the turn is
            // whole, and the user still asked to stop.
            outcome = Outcome::Interrupted;
        }
        if self.front.closed() {
            return Err(Error::BrokenPipe);
        }
        Ok((outcome, did))
    }

    /// Executes commands that only write the log (records the session
    /// made outside a turn).
    fn log_only(&mut self, cmds: Vec<Command>) -> Result<(), Error> {
        let mut flight = Flight::default();
        for cmd in cmds {
            if let Command::Log(cmd) = cmd {
                self.execute_log(cmd, &mut flight)?;
            }
        }
        Ok(())
    }

    /// Executes `cmds` in order, each by its family's executor, queueing
    /// the answer each asks for (one at most); what they did beyond that.
    /// `flight` is the tool call in flight, kept across the commands of
    /// one [`Live::run_input`].
    fn execute(
        &mut self,
        cmds: Vec<Command>,
        queue: &mut VecDeque<Input>,
        flight: &mut Flight,
    ) -> Result<Did, Error> {
        let mut did = Did::default();
        for cmd in cmds {
            let answer = match cmd {
                Command::Log(cmd) => {
                    self.execute_log(cmd, flight)?;
                    None
                }
                Command::Model(cmd) => Some(self.execute_model(cmd)?),
                Command::Tool(cmd) => Some(self.execute_tool(cmd, flight)),
                Command::File(cmd) => self.execute_file(cmd, flight)?,
                Command::Memory(cmd) => Some(self.execute_memory(cmd, &mut did)?),
                Command::User(cmd) => self.execute_user(cmd, &mut did),
            };
            queue.extend(answer);
        }
        Ok(did)
    }

    /// The skills found now (none with `--bare`): the commands of the
    /// user's own.
    pub fn skills(&self) -> Vec<revolve_core::skills::Skill> {
        if self.runtime.settings.bare {
            return Vec::new();
        }
        let folders = revolve_store::skills::folders(&self.runtime.memory, &self.store.cwd);
        revolve_store::skills::load(&folders).0
    }

    /// Claude Code's custom slash commands found now (the repository's
    /// `.claude/commands/`, then `~/.claude/commands/`; none with
    /// `--bare`).
    pub fn user_commands(&self) -> Vec<revolve_core::commands::UserCommand> {
        if self.runtime.settings.bare {
            return Vec::new();
        }
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let folders = revolve_store::commands::folders(&self.store.cwd, home.as_deref());
        revolve_store::commands::load(&folders)
    }

    /// The message a `/NAME ARGS` command of the user's own sends: the
    /// skill `name`'s body with `args` filled in; `None` when no skill has
    /// that name, an error when its file cannot be read now.
    pub fn skill_message(&self, name: &str, args: &str) -> Option<Result<String, String>> {
        let skills = self.skills();
        let skill = revolve_core::skills::find(&skills, name)?;
        Some(
            revolve_store::skills::body(std::path::Path::new(&skill.dir))
                .map(|body| revolve_core::skills::command_message(&body, args)),
        )
    }

    /// The paths of the project's instructions the prompt carries now,
    /// root first.
    pub fn instructions(&self) -> Vec<String> {
        let parts = self.session.parts();
        parts.instructions.iter().map(|f| f.path.clone()).collect()
    }

    /// The memory files the prompt carries now, as `scope/name`
    /// (`global/verify-before-commit.md`), global first.
    pub fn memory_files(&self) -> Vec<String> {
        let parts = self.session.parts();
        parts
            .memory
            .iter()
            .map(|f| format!("{}/{}", f.scope.as_str(), f.name))
            .collect()
    }

    /// The memory files (as [`Live::memory_files`]) and the project's
    /// instruction files (as [`Live::instructions`]) the next request's
    /// prompt carries, read now: right before the first turn too, when
    /// the session has not read them yet.
    pub fn prompt_files(&mut self) -> (Vec<String>, Vec<String>) {
        let parts = self.prompt_parts();
        let memory = parts
            .memory
            .iter()
            .map(|f| format!("{}/{}", f.scope.as_str(), f.name))
            .collect();
        let instructions = parts.instructions.iter().map(|f| f.path.clone()).collect();
        (memory, instructions)
    }

    /// What the next system prompt is built from, read now: the project's
    /// instructions, memory files and the goal (none with `--bare`). A file
    /// that cannot be read is left out and said so (once), never fatal.
    fn prompt_parts(&mut self) -> revolve_core::prompt::Parts {
        let mut parts = revolve_core::prompt::Parts::default();
        let folders = revolve_store::subagents::folders(&self.runtime.memory, &self.store.cwd);
        let (definitions, problems) = revolve_store::subagents::load(&folders);
        for problem in problems {
            if !self.said.contains(&problem) {
                self.front.notice(&problem);
                self.said.push(problem);
            }
        }
        match &self.runtime.agents.child {
            // A child has no `task` tool: its part is its definition's.
            Some(child) => {
                let def = child
                    .subagent
                    .as_ref()
                    .and_then(|name| definitions.iter().find(|d| &d.name == name));
                parts.role = Some(def.map(|d| d.prompt.clone()).unwrap_or_default());
            }
            None => parts.subagents = definitions,
        }
        if !self.runtime.settings.bare {
            let (instructions, mut problems) = revolve_store::instructions::load(&self.store.cwd);
            parts.instructions = instructions;
            let folders = revolve_store::skills::folders(&self.runtime.memory, &self.store.cwd);
            let (skills, skipped) = revolve_store::skills::load(&folders);
            parts.skills = skills;
            problems.extend(skipped);
            for problem in problems {
                if !self.said.contains(&problem) {
                    self.front.notice(&problem);
                    self.said.push(problem);
                }
            }
            match revolve_store::memory::load(&self.runtime.memory) {
                Ok(files) => parts.memory = files,
                Err(e) => self
                    .front
                    .notice(&format!("revolve: cannot read the memory files: {e}")),
            }
            match goal::load(&self.runtime.memory.project_dir) {
                Ok(goals) => parts.goals = goals,
                Err(e) => self.front.notice(&format!("revolve: {e}")),
            }
        }
        parts
    }
}

/// What executed commands did beyond the answers they queued.
#[derive(Debug, Default, PartialEq, Eq)]
struct Did {
    /// The text of a [`UserCommand::Refused`].
    refused: Option<String>,
    /// The files a [`MemoryCommand::Undo`] put back, when it restored an entry.
    undone: Option<Vec<String>>,
}

impl Did {
    /// `later`'s commands ran after these: what they did wins.
    fn then(&mut self, later: Did) {
        if later.refused.is_some() {
            self.refused = later.refused;
        }
        if later.undone.is_some() {
            self.undone = later.undone;
        }
    }
}

/// The tool call in flight during one [`Live::run_input`], as the front
/// was shown it.
#[derive(Debug, Default)]
struct Flight {
    /// The call the front was shown run, until its result is logged (a
    /// result of any other call is of one that did not run).
    shown: Option<String>,
    /// The call whose result the core decides after the tool ran (an
    /// edit, a grant), and its tool: the result is shown once it is
    /// logged.
    awaited: Option<(String, Tool)>,
}

/// How the front is shown a tool result once it is logged.
#[derive(Debug, PartialEq, Eq)]
enum Logged {
    /// As it ran: nothing more.
    Shown,
    /// Now: the result core decided for this tool.
    Result(Tool),
    /// As a call that did not run.
    NotRun,
}

impl Flight {
    /// The call `id` was shown run; with `awaited`, core decides its
    /// result, which is shown once logged.
    fn run(&mut self, id: &str, awaited: Option<Tool>) {
        self.shown = Some(id.to_owned());
        if let Some(tool) = awaited {
            self.awaited = Some((id.to_owned(), tool));
        }
    }

    /// The result of the call `id` is in the log: how it is shown. Ids
    /// repeat across rounds (a server that gives none gets `call_0` for
    /// every first call): the call is forgotten once its result is logged.
    fn logged(&mut self, id: &str) -> Logged {
        let ran = self.shown.take_if(|s| s == id).is_some();
        match self.awaited.take_if(|(e, _)| e == id) {
            Some((_, tool)) => Logged::Result(tool),
            None if ran => Logged::Shown,
            None => Logged::NotRun,
        }
    }
}

/// The core's settings for a session of `store` run with `runtime`: the
/// settled ones as they are, with what the session learns when it opens.
fn settings(store: &Store, id: &str, runtime: &Runtime, interactive: bool) -> Settings {
    // Canonical, as grants are: the spill grant is compared as it is.
    let project = store.roots.project(&store.project);
    let project = project.canonicalize().unwrap_or(project);
    let spill_dir = project.join("spills").join(id);
    Settings {
        spill_dir: spill_dir.to_string_lossy().into_owned(),
        interactive,
        counts: runtime.provider.counts(),
        ..runtime.settings.clone()
    }
}

/// The inbox of the session `name` of `store`'s directory.
fn inbox_of(store: &Store, name: Option<&str>) -> Option<Inbox> {
    name.map(|n| Inbox::of(&store.roots, &store.project, &store.cwd, n))
}

/// The model of a session nobody chose one for.
const DEFAULT_MODEL: &str = revolve_core::config::DEFAULT_PRESET.model();
/// The declared context window of a session nobody declared one for.
const DEFAULT_WINDOW: u64 = revolve_core::config::DEFAULT_WINDOW;

/// How much of the conversation a resume shows again, at most.
const RESUME_SHOWS_BYTES: usize = revolve_core::policy::RESUME_SHOWS_BYTES;

#[cfg(test)]
mod tests;
