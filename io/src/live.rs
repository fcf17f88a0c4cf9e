//! A running session: feeds inputs to the core's state machine and executes
//! the commands it returns, in order (see `revolve_core::session`), showing
//! and asking through a [`Front`]. This is the executor; the binary reads
//! lines and turns the user's commands into calls here.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use revolve_core::edit::Answer;
use revolve_core::guard::StopReason;
use revolve_core::names;
use revolve_core::record::{Header, Message, Record, Resumed, Role, FORMAT_VERSION};
use revolve_core::text as view;
use revolve_core::tools::Tool;
use revolve_core::{Command, Input, Outcome as CoreOutcome, Session, Settings, State};
use revolve_provider::Provider;
use revolve_store::goal;
use revolve_store::inbox::Inbox;
use revolve_store::log::LogWriter;
use revolve_store::memory::{self, MemoryDirs};
use revolve_store::registry::Claim;
use revolve_store::store::{CreateError, Store};
use revolve_store::{files, fsx};
use revolve_tools::FileId;

use crate::error::Error;
use crate::front::Front;
use crate::{clock, interrupt};

mod ask;
mod edits;
mod mcp;
mod refine;
mod tools;

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
        let (session, _header_cmd) = Session::start(header, settings);
        Ok(Live::new(session, writer, claim, store, runtime, front))
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

    /// Lets a turn stopped at its tool-round cap go on, for as many rounds
    /// again.
    /// Plan mode on or off (`--plan`, `/plan`, `/plan off`): logged, and
    /// told.
    /// `--effort`, `/effort`.
    pub fn set_effort(
        &mut self,
        effort: Option<revolve_core::models::Effort>,
    ) -> Result<Outcome, Error> {
        self.drive(Input::Effort {
            effort,
            now: clock::now(),
        })
    }

    /// `/max-cost USD`: the session's cost limit from now on (`None`:
    /// none), for `/cost` and the requests alike.
    pub fn set_max_cost(&mut self, max: Option<u64>) -> Result<Outcome, Error> {
        self.runtime.settings.max_cost = max;
        self.drive(Input::MaxCost { max })
    }

    /// `/model NAME`.
    pub fn switch_model(&mut self, model: &str) -> Result<Outcome, Error> {
        self.drive(Input::Model {
            model: model.to_owned(),
            now: clock::now(),
        })
    }

    /// Turns plan mode on or off from the next request on (`--plan`, `/plan`).
    pub fn plan(&mut self, on: bool) -> Result<Outcome, Error> {
        self.drive(Input::Plan {
            on,
            now: clock::now(),
        })
    }

    /// Lets a turn stopped at the tool-round cap go on with as many rounds again.
    pub fn go_on(&mut self) -> Result<Outcome, Error> {
        let parts = self.prompt_parts();
        self.drive(parts)?;
        let outcome = self.drive(Input::GoOn { now: clock::now() })?;
        self.front.totals(self.session.state().totals());
        Ok(outcome)
    }

    /// The tool rounds the last turn took (the one running, or the last
    /// one that ended).
    pub fn turn_rounds(&self) -> u64 {
        self.session.state().turn_rounds()
    }

    /// Takes the messages waiting in the inbox: logged as user messages
    /// marked with their origin, then removed from the inbox. With `answer`
    /// the model answers them now; otherwise they go with the next turn.
    pub fn take_inbox(&mut self, answer: bool) -> Result<Outcome, Error> {
        let Some(inbox) = &self.inbox else {
            return Ok(Outcome::Done);
        };
        let messages = match inbox.waiting() {
            Ok((messages, bad)) => {
                for path in bad {
                    self.front.notice(&format!(
                        "revolve: {} is not a readable message; left where it is",
                        path.display()
                    ));
                }
                messages
            }
            Err(e) => {
                self.front.notice(&format!(
                    "revolve: cannot read the inbox {}: {e}",
                    inbox.dir().display()
                ));
                return Ok(Outcome::Done);
            }
        };
        if messages.is_empty() {
            return Ok(Outcome::Done);
        }
        if answer {
            let parts = self.prompt_parts();
            self.drive(parts)?;
        }
        let outcome = self.drive(Input::Inbox {
            messages,
            answer,
            now: clock::now(),
        });
        // Whatever happened, what the log holds leaves the inbox.
        self.settle_inbox();
        outcome
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

    /// A user turn: the prompt read again, messages delivered meanwhile
    /// taken along, the model asked until the turn ends, and the memory
    /// refined afterwards when the core says it is due.
    pub fn turn(&mut self, text: &str) -> Result<Outcome, Error> {
        let parts = self.prompt_parts();
        self.drive(parts)?;
        self.offer_mcp()?;
        // Messages delivered meanwhile go out with this turn.
        self.take_inbox(false)?;
        let outcome = self.drive(Input::User {
            text: text.to_owned(),
            now: clock::now(),
        })?;
        self.front.totals(self.session.state().totals());
        if outcome == Outcome::Done {
            // After 25 turns or a compaction, as the core decides.
            self.refine_if_due()?;
        }
        Ok(outcome)
    }

    /// `/compact`: compacts the session now.
    pub fn compact(&mut self) -> Result<Outcome, Error> {
        self.drive(Input::Compact { now: clock::now() })
    }

    /// `/refine undo`: the core asks for the undo and logs what it did.
    /// What the undo put back or removed, a line a file, or `None` when
    /// there was nothing to undo.
    pub fn undo_memory(&mut self) -> Result<Option<Vec<String>>, Error> {
        Ok(self.run_input(Input::Undo)?.1.undone)
    }

    /// `/name NAME`: renames the session, under the naming lock as a new
    /// session picks its name, so two sessions never end up with one name.
    /// Its inbox and its entry among the running sessions follow the name.
    pub fn rename(&mut self, name: String) -> Result<Outcome, Error> {
        let _naming = self.store.naming().map_err(Error::store)?;
        let mut used = self.store.names_in_use().map_err(Error::store)?;
        if let Some(own) = &self.state().name() {
            used.remove(own);
        }
        let outcome = self.drive(Input::Rename {
            name,
            used: used.into_iter().collect(),
            now: clock::now(),
        })?;
        self.inbox = inbox_of(&self.store, self.state().name().as_deref());
        let entry = self
            .store
            .running_entry(self.state().id(), self.state().name().clone());
        self.claim.update(&entry).map_err(Error::store)?;
        Ok(outcome)
    }

    /// Gives an unnamed session (a piped one resumed in the REPL) a
    /// generated name, under the naming lock, so `revolve send` and
    /// `revolve attach` can address it (the core picks the name; it stays
    /// unlisted). A session with a name is left as it is.
    pub fn address(&mut self) -> Result<Outcome, Error> {
        if self.state().name().is_some() {
            return Ok(Outcome::Done);
        }
        let _naming = self.store.naming().map_err(Error::store)?;
        let used = self.store.names_in_use().map_err(Error::store)?;
        let outcome = self.drive(Input::Address {
            used: used.into_iter().collect(),
            now: clock::now(),
        })?;
        self.inbox = inbox_of(&self.store, self.state().name().as_deref());
        let entry = self
            .store
            .running_entry(self.state().id(), self.state().name().clone());
        self.claim.update(&entry).map_err(Error::store)?;
        Ok(outcome)
    }

    /// Ends the session; one this run started that never held anything
    /// (no message, request, rewind or edit: see
    /// [`revolve_core::state::State::holds_anything`]) leaves no file, so its name is free again and `--continue` finds
    /// the session before it. Returns whether the file was removed.
    pub fn close(self) -> bool {
        let state = self.state();
        if state.holds_anything() {
            return false;
        }
        // Under the naming lock, before the claim goes: no new session
        // sees the name free while the file is still there, nor the
        // reverse.
        let naming = self.store.naming().ok();
        let removed = std::fs::remove_file(self.writer.path()).is_ok();
        drop(self);
        drop(naming);
        removed
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

    /// Executes `cmds` in order, queueing the answers they ask for; what
    /// they did beyond that. `flight` is the tool call in flight, kept
    /// across the commands of one [`Live::run_input`].
    fn execute(
        &mut self,
        cmds: Vec<Command>,
        queue: &mut VecDeque<Input>,
        flight: &mut Flight,
    ) -> Result<Did, Error> {
        let mut did = Did::default();
        for cmd in cmds {
            match cmd {
                Command::Append(record) => self.append(&record, flight)?,
                Command::Sync => self
                    .writer
                    .sync()
                    .map_err(|e| Error::at(self.writer.path(), "cannot sync", e))?,
                Command::Call(request) => queue.push_back(self.call(request)?),
                Command::RunTool {
                    id,
                    tool,
                    arguments,
                    grants,
                    sandbox,
                } => queue.extend(self.run_tool(id, &tool, &arguments, &grants, sandbox, flight)),
                Command::AskOutside { id, command } => {
                    let yes = self.front.confirm(&format!(
                        "the sandbox seems to have refused `{}`; run it once outside the sandbox? [y]es, [n]o: ",
                        revolve_core::text::inert(&command)
                    ));
                    queue.push_back(Input::Outside {
                        id,
                        yes,
                        now: clock::now(),
                    });
                }
                Command::Spill { path, content } => {
                    // The result still goes to the model (its head and tail);
                    // only the whole of it is lost.
                    if let Err(e) = spill(Path::new(&path), &content) {
                        self.front.notice(&format!(
                            "revolve: {e}; the model gets the head and tail only"
                        ));
                    }
                }
                Command::Summarize(request) => queue.push_back(self.summarize(request)),
                Command::Refine(request) => queue.push_back(self.refine_request(request)),
                Command::Confirm(question) => {
                    let yes = self.front.confirm(&question);
                    queue.push_back(Input::Confirmed {
                        yes,
                        now: clock::now(),
                    });
                }
                Command::Count(request) => {
                    let tokens = self.runtime.provider.count(&request);
                    queue.push_back(Input::Counted {
                        tokens,
                        now: clock::now(),
                    });
                }
                Command::StartFile(header) => self.start_file(&header)?,
                Command::Snapshot {
                    entry,
                    // Core logs who changed it, and what, itself.
                    by: _,
                    changes,
                    meta,
                } => {
                    let entry = revolve_store::refine::apply(
                        &self.store.roots.state,
                        &self.runtime.memory,
                        &entry,
                        &changes,
                        &meta,
                    )
                    .map_err(Error::memory("cannot write the refined memory"))?;
                    queue.push_back(Input::MemoryChanged {
                        entry,
                        now: clock::now(),
                    });
                }
                Command::Undo => {
                    let done = revolve_store::refine::undo_entry(
                        &self.store.roots.state,
                        &self.runtime.memory,
                    )
                    .map_err(Error::memory("cannot undo"))?;
                    did.undone = done.as_ref().map(|(_, files)| files.clone());
                    let (entry, files) = match done {
                        Some((entry, files)) => (Some(entry), files),
                        None => (None, Vec::new()),
                    };
                    queue.push_back(Input::Undone {
                        entry,
                        files,
                        now: clock::now(),
                    });
                }
                Command::Open {
                    id,
                    path,
                    tool,
                    arguments,
                    grants,
                } => {
                    // Shown as the call now; its result once core logs it.
                    self.front.tool_call(&id, &tool, &arguments);
                    flight.run(&id, Some(tool));
                    queue.push_back(self.open_edit(id, &path, &grants));
                }
                Command::Stage {
                    id,
                    shown,
                    before,
                    after,
                    diff,
                    ask,
                    once,
                } => queue.push_back(self.stage_edit(
                    id,
                    &shown,
                    before,
                    &after,
                    &diff,
                    ask.then_some(once),
                )),
                Command::Write {
                    id,
                    path,
                    content,
                    mode,
                    expect,
                } => queue.push_back(self.write_edit(id, &path, &content, mode, expect)),
                Command::Restore(files) => queue.push_back(self.restore(&files)),
                Command::Ask { id, command } => {
                    let answer = self.front.ask_shell(&command);
                    queue.push_back(answered(id, answer));
                }
                Command::CallMcp {
                    id,
                    server,
                    tool,
                    arguments,
                    timeout_s,
                } => queue.push_back(self.call_mcp(id, &server, &tool, &arguments, timeout_s)),
                Command::AskGrant { id, path, reason } => {
                    let yes = self.front.ask_grant(&path, reason.as_deref());
                    let answer = if yes { Answer::Yes } else { Answer::No };
                    queue.push_back(answered(id, answer));
                }
                Command::Refused(why) => did.refused = Some(why),
                Command::Show(text) => self.front.notice(&text),
            }
        }
        Ok(did)
    }

    fn append(&mut self, record: &Record, flight: &mut Flight) -> Result<(), Error> {
        // Never answer into nothing: a log deleted under the session is
        // written again first (from the open file, which holds it all).
        let relinked = self
            .writer
            .relink()
            .map_err(|e| Error::at(self.writer.path(), "cannot write the session log", e))?;
        if let Some(bytes) = relinked {
            self.front.notice(&format!(
                "revolve: the session log {} was deleted while the session ran; written again \
                 from the open file ({bytes} bytes), and the session goes on in it",
                self.writer.path().display()
            ));
        }
        self.writer
            .append(record)
            .map_err(|e| Error::at(self.writer.path(), "cannot write the session log", e))?;
        // A tool's result is shown once it is in the log.
        if let Record::Message(Message {
            role: Role::Tool,
            tool_call_id: Some(id),
            content,
            ..
        }) = record
        {
            match flight.logged(id) {
                Logged::Shown => {}
                Logged::Result(tool) => self.front.tool_result(id, &tool, content, false),
                Logged::NotRun => {
                    if let Some(call) = self.session.state().tool_call(id) {
                        self.front.not_run(call, content);
                    }
                }
            }
            self.front.logged(id);
        }
        Ok(())
    }

    /// Goes on in the file a compaction started: created with its header,
    /// claimed as running; the old file's claim is released.
    fn start_file(&mut self, header: &Header) -> Result<(), Error> {
        // Claimed first: a file nobody may write is never created.
        let claim = self
            .store
            .claim(&header.id, header.name.clone())
            .map_err(Error::store)?;
        let path = self.store.path_of(&header.id);
        let mut writer = LogWriter::create_with(&path, &Record::Header(header.clone()))
            .map_err(|e| Error::at(&path, "cannot create", e))?;
        writer
            .sync()
            .map_err(|e| Error::at(&path, "cannot sync", e))?;
        self.claim = claim;
        self.writer = writer;
        Ok(())
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
        let Input::Prompt(parts) = self.prompt_parts() else {
            return (self.memory_files(), self.instructions());
        };
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
    fn prompt_parts(&mut self) -> Input {
        let mut parts = revolve_core::prompt::Parts::default();
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
            match memory::load(&self.runtime.memory) {
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
        Input::Prompt(parts)
    }
}

/// What executed commands did beyond the answers they queued.
#[derive(Debug, Default, PartialEq, Eq)]
struct Did {
    /// The text of a [`Command::Refused`].
    refused: Option<String>,
    /// The files a [`Command::Undo`] put back, when it restored an entry.
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

/// The user's answer to a question about the call `id`; Ctrl-C pressed
/// while it was asked ends the turn instead, whatever the answer was.
fn answered(id: String, answer: Answer) -> Input {
    let now = clock::now();
    if interrupt::take() {
        return Input::Interrupted {
            partial: String::new(),
            now,
        };
    }
    Input::Answered { id, answer, now }
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

/// Writes a spilled tool result whole or not at all: through a temp file
/// renamed into place ([`fsx::write_atomic`]), so a full disk leaves no
/// partial file under the name the model is given.
fn spill(path: &Path, content: &str) -> Result<(), Error> {
    if let Some(dir) = path.parent() {
        files::create_dir_all(dir).map_err(|e| Error::at(dir, "cannot create", e))?;
    }
    fsx::write_atomic(path, content.as_bytes())
        .map_err(|e| Error::at(path, "cannot write the spilled tool output to", e))
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
