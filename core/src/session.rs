//! The turn state machine.
//!
//! # Driving it
//!
//! [`Session`] holds no sockets, files or clock. The shell:
//!
//! 1. makes one with [`Session::start`] (a new file: the shell supplies the
//!    header with the id, name and time it chose) or [`Session::resume`] (the
//!    folded records of an existing file);
//! 2. feeds every event as an [`Input`] to [`Session::handle`], each stamped
//!    with the time the shell read from its clock;
//! 3. executes the returned [`Command`]s **in order** before the next input:
//!    `Append` writes the record as one line, `Sync` makes the log durable
//!    (turn end), `Call` sends the request and later comes back as
//!    [`Input::Reply`], [`Input::Failed`] or [`Input::Interrupted`], and `Show`
//!    prints a line for the user on stderr.
//!
//! The session's [`State`] changes only by applying the records it asks to
//! append, which is why folding the file gives back the same state and
//! [`crate::state::requests`] the same requests.

use std::collections::BTreeSet;

use time::OffsetDateTime;

use crate::compact;
use crate::guard::{self, StopReason, Verdict};
use crate::names;
use crate::prompt;
use crate::record::{
    Compacted, Compacting, Context, Continued, Failed, Header, Interrupted, MemoryChanged,
    MemoryUndone, Message, Noted, Origin, Overflowed, Pruned, Record, Refined, Renamed, Resumed,
    Role, Squeezed, Stopped, ToolCall, Totals, WentOn,
};
use crate::refine;
use crate::request::Request;
use crate::state::State;
use crate::tools::{self, Tool};
use crate::view;

mod edits;
pub use edits::Opened;

/// Something that happened, as the shell reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    /// The user sent a line.
    User { text: String, now: OffsetDateTime },
    /// The model answered the request in flight.
    Reply { reply: Reply, now: OffsetDateTime },
    /// The request in flight failed; `partial` is what had streamed.
    Failed {
        error: String,
        partial: String,
        now: OffsetDateTime,
    },
    /// The request in flight was refused because it did not fit the
    /// server's context (the shell recognised it with
    /// [`crate::overflow::recognise`]); `limit` is the context size the
    /// server named, if it named one.
    Overflowed {
        error: String,
        limit: Option<u64>,
        /// The server's count of the refused request, when it gave one.
        asked: Option<u64>,
        now: OffsetDateTime,
    },
    /// The user interrupted the request or the tool in flight; `partial` is
    /// what the model had streamed.
    Interrupted {
        partial: String,
        now: OffsetDateTime,
    },
    /// A tool the session asked for finished. `grant` is a path the user
    /// allowed this session to read (from `request_file_grant`).
    ToolDone {
        id: String,
        output: String,
        grant: Option<String>,
        now: OffsetDateTime,
    },
    /// What the system prompt is built from now (memory files, goal): sent
    /// before each user line and after each tool, before its `ToolDone`.
    Prompt(prompt::Parts),
    /// A refinement ran (the shell wrote its entry, if any), in `pieces`
    /// requests.
    Refined {
        auto: bool,
        entry: Option<String>,
        pieces: u64,
        now: OffsetDateTime,
    },
    /// The user asked to compact now (`/compact`).
    Compact { now: OffsetDateTime },
    /// A refinement's validated changes are to be written: the shell
    /// snapshots and writes them ([`Command::Snapshot`]) and answers with
    /// [`Input::MemoryChanged`], which logs the change.
    ChangeMemory {
        entry: String,
        by: String,
        changes: Vec<crate::refine::Change>,
        meta: crate::memory::SnapshotMeta,
    },
    /// The memory was changed, snapshot first, as [`Command::Snapshot`]
    /// asked (or by the `remember` tool, which writes as it runs): `entry`
    /// is the snapshot entry taken; logged as `memory_changed`.
    MemoryChanged {
        entry: String,
        by: String,
        files: Vec<String>,
        now: OffsetDateTime,
    },
    /// The user asked to undo the last memory change (`/refine undo`).
    Undo,
    /// The undo [`Command::Undo`] asked for ran: the entry it restored (none
    /// when there was nothing to undo) and what it did to each file.
    Undone {
        entry: Option<String>,
        files: Vec<String>,
        now: OffsetDateTime,
    },
    /// The user lets a turn that was stopped after its last tool results
    /// (the tool-round cap) go on: the request is sent, with as many tool
    /// rounds again.
    GoOn { now: OffsetDateTime },
    /// The model wrote the working notes a [`Command::Summarize`] asked
    /// for; `new_id` is the id of the file the session goes on in.
    Summarized {
        reply: Reply,
        new_id: String,
        now: OffsetDateTime,
    },
    /// The summary request failed; the session goes on uncompacted.
    SummaryFailed { error: String, now: OffsetDateTime },
    /// The user asked for a new name; `used` are the names other sessions of
    /// this directory have.
    Rename {
        name: String,
        used: BTreeSet<String>,
        now: OffsetDateTime,
    },
    /// Messages found in the session's inbox (`revolve send`, `revolve
    /// attach`), in any order. Those taken already (numbered at or below
    /// [`Totals::delivered`]) are dropped; the rest become user messages
    /// marked with their origin, oldest first. With `answer` (an idle REPL)
    /// the model is asked at once; otherwise they go out with the request
    /// of the user's line, which the shell sends next. While a turn runs,
    /// nothing is taken. After the commands ran (the log synced), the shell
    /// removes from the inbox every message up to [`Totals::delivered`].
    Inbox {
        messages: Vec<Delivery>,
        answer: bool,
        now: OffsetDateTime,
    },
    /// `read_file` read the whole of a file whose content has this hash:
    /// sent before its `ToolDone`, so a later edit knows it was read.
    Seen {
        path: String,
        hash: String,
        now: OffsetDateTime,
    },
    /// The file a [`Command::Open`] asked for, or why it cannot be edited.
    Opened {
        id: String,
        opened: Result<Opened, String>,
        now: OffsetDateTime,
    },
    /// A [`Command::Stage`] ran: the hash of the new content, the user's
    /// answer when asked, or why the contents could not be stored.
    Staged {
        id: String,
        answer: Option<crate::edit::Answer>,
        after: String,
        error: Option<String>,
        now: OffsetDateTime,
    },
    /// What the `shell` call `id` changed in its git repository: sent
    /// before its `ToolDone`, logged as `edit` records by `shell`.
    ShellChanged {
        id: String,
        changes: Vec<crate::edit::Change>,
        now: OffsetDateTime,
    },
    /// A [`Command::Write`] ran (`error` when the file is unchanged).
    Wrote {
        id: String,
        error: Option<String>,
        now: OffsetDateTime,
    },
    /// At a resume, what the file of the edit a crash left unwritten
    /// ([`State::pending_edit`]) holds now: its hash, `None` when absent.
    Found {
        hash: Option<String>,
        now: OffsetDateTime,
    },
    /// Take back the last `turns` turns (`/rewind`, `revolve rewind`), or
    /// with `undo` the last rewind. `on_disk` is the hash each file of
    /// [`crate::edit::tracked_paths`] has now (`None`: not there).
    Rewind {
        turns: usize,
        scope: crate::edit::Scope,
        undo: bool,
        force: bool,
        on_disk: std::collections::BTreeMap<String, Option<String>>,
        now: OffsetDateTime,
    },
}

/// One message from the inbox.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    /// Its number in the inbox.
    pub seq: u64,
    /// Who sent it.
    pub from: String,
    pub text: String,
}

/// A complete answer from the model.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reply {
    pub text: String,
    /// The tools the model calls, in order.
    pub tool_calls: Vec<ToolCall>,
    /// The provider's token counts, when it gave them.
    pub usage: Option<Usage>,
}

/// Token counts of one request, as the provider reported them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// Something the shell must do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Write this record as one line at the end of the log.
    Append(Record),
    /// A turn ended: flush and fsync the log.
    Sync,
    /// Send this request to the model; answer with [`Input::Reply`],
    /// [`Input::Failed`] or [`Input::Interrupted`].
    Call(Request),
    /// Run this tool; answer with [`Input::ToolDone`] (errors are output
    /// starting `error:`) or [`Input::Interrupted`]. Paths outside the working
    /// tree may be read only when they are in `grants`.
    RunTool {
        id: String,
        tool: Tool,
        grants: Vec<String>,
    },
    /// Write `content` whole to the file at `path` (creating its folder)
    /// before executing the next command.
    Spill { path: String, content: String },
    /// Ask the model for working notes (without showing them); answer with
    /// [`Input::Summarized`] (with a new session id), [`Input::SummaryFailed`]
    /// or [`Input::Interrupted`].
    Summarize(Request),
    /// Create the session file that starts with this header (its first
    /// line), claim it as running, and append everything after this to it.
    StartFile(Header),
    /// Take a snapshot entry of the memory as it is, named `entry` (or the
    /// next free name in that second), with `meta`, then write `changes`;
    /// answer with [`Input::MemoryChanged`] naming the entry taken.
    Snapshot {
        entry: String,
        by: String,
        changes: Vec<crate::refine::Change>,
        meta: crate::memory::SnapshotMeta,
    },
    /// Restore the newest snapshot entry still standing; answer with
    /// [`Input::Undone`].
    Undo,
    /// Open the file an edit names (confined like `read_file`, which it
    /// need not exist to be); answer with [`Input::Opened`].
    Open {
        id: String,
        path: String,
        grants: Vec<String>,
    },
    /// Store `before` (when the file exists) and `after` in the content
    /// store; with `ask`, show `diff` and ask the user (y, a, n); answer
    /// with [`Input::Staged`]. Nothing is written to the file yet.
    Stage {
        id: String,
        path: String,
        before: Option<Vec<u8>>,
        after: Vec<u8>,
        diff: String,
        ask: bool,
    },
    /// Write `content` to `path` atomically (temp file, rename), with
    /// `mode` when given (the file's own); answer with [`Input::Wrote`].
    Write {
        id: String,
        path: String,
        content: Vec<u8>,
        mode: Option<u32>,
    },
    /// Put each file back to the content of hash `to` from the content
    /// store (`None`: remove it), storing what it holds first.
    Restore(Vec<crate::record::Restore>),
    /// Tell the user (stderr in pipe mode, the terminal in the REPL).
    Show(String),
}

/// What a session needs to know that the log does not say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// A tool result longer than this many characters is spilled to a file.
    pub spill_chars: usize,
    /// The folder spilled results go to, absolute.
    pub spill_dir: String,
    /// A tool result longer than this is pruned by a compaction's first step.
    pub prune_chars: usize,
    /// The `limit`-th identical tool call in a row is refused, the next one
    /// ends the turn ([`guard::REPEAT_LIMIT`] by default).
    pub repeat_limit: u32,
    /// A turn ends after this many tool rounds ([`guard::MAX_TOOL_ROUNDS`]
    /// by default).
    pub max_tool_rounds: u32,
    /// Edits need no approval (`--allow-edits`, `allow_edits`).
    pub allow_edits: bool,
    /// A user at a terminal can be asked to approve an edit.
    pub interactive: bool,
}

/// The default of `spill-result-chars`.
pub const SPILL_CHARS: usize = 32_000;

/// A live session.
#[derive(Clone, Debug)]
pub struct Session {
    state: State,
    settings: Settings,
    /// Paths this run may read outside the working tree: granted by the user
    /// or spilled by this run. Held here only, never logged, so a resumed
    /// session starts without them.
    grants: BTreeSet<String>,
    /// The token estimate of the request in flight, for when the provider
    /// reports no usage.
    estimate: u64,
    /// The memory files and goal the next request's system prompt holds.
    parts: prompt::Parts,
    /// Whether the request due now compacted already (each request
    /// compacts at most once on its own, so a history that cannot shrink
    /// never loops); cleared when a request goes out and when a turn begins.
    compacted_this_turn: bool,
    /// How many turns the compaction for the request due now keeps
    /// verbatim: [`compact::KEEP_TURNS`], fewer when they do not fit.
    keep_turns: usize,
    /// The body size of the request in flight, for the calibration.
    in_flight_bytes: usize,
    /// Whether the request due now was refused as too large once already.
    overflow_retried: bool,
    /// Whether messages taken from the inbox wait for the next user line's
    /// request.
    inbox_waiting: bool,
    /// The edit between its [`Command::Stage`] and its write.
    staged: Option<edits::Staged>,
}

impl Session {
    /// A new session: its file starts with `header`.
    pub fn start(header: Header, settings: Settings) -> (Session, Vec<Command>) {
        let mut session = Session::new(State::default(), settings);
        let cmds = session.append(vec![Record::Header(header)]);
        (session, cmds)
    }

    /// An existing session, folded from its file, continuing with `model`,
    /// `window` and `provider`. Tool calls a crash left without results get
    /// results saying so, and a request left unanswered is closed as
    /// interrupted, so the history the model gets next is well formed.
    pub fn resume(state: State, settings: Settings, resumed: Resumed) -> (Session, Vec<Command>) {
        let mut session = Session::new(state, settings);
        // A turn a crash left open is closed the way Ctrl-C closes one, so
        // the history the model gets next is well formed and the turn counts.
        let mut cmds = session.interrupt(String::new(), resumed.at);
        cmds.extend(session.append(vec![Record::Resumed(resumed)]));
        (session, cmds)
    }

    fn new(state: State, settings: Settings) -> Session {
        Session {
            state,
            settings,
            grants: BTreeSet::new(),
            estimate: 0,
            compacted_this_turn: false,
            keep_turns: compact::KEEP_TURNS,
            in_flight_bytes: 0,
            overflow_retried: false,
            parts: prompt::Parts::default(),
            inbox_waiting: false,
            staged: None,
        }
    }

    /// The folded state: what the log says so far.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// The paths this run may read outside the working tree.
    pub fn grants(&self) -> &BTreeSet<String> {
        &self.grants
    }

    /// Whether the memory should be refined now, on its own: idle, and
    /// [`crate::refine::auto_due`] after this session's turns, compactions
    /// and last refinement.
    pub fn refine_due(&self, now: OffsetDateTime) -> bool {
        let s = &self.state;
        !self.busy()
            && refine::auto_due(
                s.totals.turns.saturating_sub(s.turns_at_refine),
                s.compacted_since_refine,
                s.refined_at,
                now,
            )
    }

    /// Whether a request, a tool or a compaction is in flight.
    pub fn busy(&self) -> bool {
        self.state.awaiting || !self.state.open_calls.is_empty() || self.state.compacting.is_some()
    }

    /// Handles one input; the commands must be executed in order.
    pub fn handle(&mut self, input: Input) -> Vec<Command> {
        match input {
            Input::User { text, now } => self.user(text, now),
            Input::Reply { reply, now } => self.reply(reply, now),
            Input::Inbox {
                messages,
                answer,
                now,
            } => self.inbox(messages, answer, now),
            Input::Failed {
                error,
                partial,
                now,
            } => {
                // Only a request can fail; tools report errors as results,
                // and a summary's failure is SummaryFailed.
                if !self.state.awaiting || self.state.compacting.is_some() {
                    return Vec::new();
                }
                let end = Record::Failed(Failed { at: now, error });
                self.cut_short(partial, end, now)
            }
            Input::Overflowed {
                error,
                limit,
                asked,
                now,
            } => self.overflowed(error, crate::overflow::Overflow { limit, asked }, now),
            Input::Interrupted { partial, now } => self.interrupt(partial, now),
            Input::Refined {
                auto,
                entry,
                pieces,
                now,
            } => {
                let mut cmds = self.append(vec![Record::Refined(Refined {
                    at: now,
                    auto,
                    entry,
                    pieces,
                })]);
                cmds.push(Command::Sync);
                cmds
            }
            Input::Prompt(parts) => {
                self.parts = parts;
                Vec::new()
            }
            Input::Compact { now } => {
                if self.busy() {
                    return vec![Command::Show(
                        "a turn is still running; compact after it".into(),
                    )];
                }
                self.compact(true, now)
            }
            Input::GoOn { now } => self.go_on(now),
            Input::ChangeMemory {
                entry,
                by,
                changes,
                meta,
            } => vec![Command::Snapshot {
                entry,
                by,
                changes,
                meta,
            }],
            Input::MemoryChanged {
                entry,
                by,
                files,
                now,
            } => self.append(vec![Record::MemoryChanged(MemoryChanged {
                at: now,
                entry,
                by,
                files,
            })]),
            Input::Undo => vec![Command::Undo],
            Input::Undone { entry, files, now } => {
                let mut cmds = self.append(vec![Record::MemoryUndone(MemoryUndone {
                    at: now,
                    entry,
                    files,
                })]);
                cmds.push(Command::Sync);
                cmds
            }
            Input::Summarized { reply, new_id, now } => self.summarized(reply, new_id, now),
            Input::SummaryFailed { error, now } => {
                if self.state.compacting.is_none() {
                    return Vec::new();
                }
                let failed = Record::CompactionFailed(Failed {
                    at: now,
                    error: error.clone(),
                });
                let mut cmds = self.append(vec![failed]);
                cmds.push(Command::Show(format!(
                    "compaction failed ({error}); the session goes on uncompacted"
                )));
                if self.state.awaiting {
                    cmds.extend(self.request(now));
                }
                cmds
            }
            Input::ToolDone {
                id,
                output,
                grant,
                now,
            } => self.tool_done(id, output, grant, now),
            Input::Seen { path, hash, now } => self.seen(path, hash, now),
            Input::Opened { id, opened, now } => self.opened(id, opened, now),
            Input::Staged {
                id,
                answer,
                after,
                error,
                now,
            } => self.staged(id, answer, after, error, now),
            Input::Wrote { id, error, now } => self.wrote(id, error, now),
            Input::ShellChanged { id, changes, now } => self.shell_changed(id, changes, now),
            Input::Found { hash, now } => self.found(hash, now),
            Input::Rewind {
                turns,
                scope,
                undo,
                force,
                on_disk,
                now,
            } => self.rewind(turns, scope, undo, force, &on_disk, now),
            Input::Rename { name, used, now } => match names::validate(&name, &used) {
                Ok(()) => {
                    let renamed = Record::Renamed(Renamed {
                        at: now,
                        name: name.clone(),
                    });
                    let mut cmds = self.append(vec![renamed]);
                    cmds.push(Command::Show(format!("this session is now named '{name}'")));
                    cmds
                }
                Err(why) => vec![Command::Show(format!(
                    "cannot name this session '{name}': {why}"
                ))],
            },
        }
    }

    fn user(&mut self, text: String, now: OffsetDateTime) -> Vec<Command> {
        // Messages just taken from the inbox wait for this turn's request.
        let inbox = std::mem::take(&mut self.inbox_waiting);
        if self.busy() && !inbox {
            return vec![Command::Show(
                "a turn is still running; wait for it or press Ctrl-C".into(),
            )];
        }
        if text.trim().is_empty() {
            if inbox {
                self.compacted_this_turn = false;
                return self.request(now);
            }
            return Vec::new();
        }
        self.compacted_this_turn = false;
        self.overflow_retried = false;
        let mut cmds = self.append(vec![Record::Message(Message::user(now, text))]);
        cmds.extend(self.request(now));
        cmds
    }

    /// Takes the inbox's new messages (see [`Input::Inbox`]).
    fn inbox(
        &mut self,
        mut messages: Vec<Delivery>,
        answer: bool,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        if self.busy() {
            return Vec::new();
        }
        messages.sort_by_key(|m| m.seq);
        messages.dedup_by_key(|m| m.seq);
        let mut cmds = Vec::new();
        for m in messages {
            if m.seq <= self.state.totals.delivered {
                continue;
            }
            cmds.push(Command::Show(format!(
                "── message from {}: {}",
                view::inert(&m.from),
                view::inert(&m.text)
            )));
            let message = Message {
                origin: Some(Origin {
                    from: m.from,
                    seq: m.seq,
                }),
                ..Message::user(now, m.text)
            };
            cmds.extend(self.append(vec![Record::Message(message)]));
        }
        if cmds.is_empty() {
            return cmds;
        }
        // Taken for good before the inbox forgets them.
        cmds.push(Command::Sync);
        if answer {
            self.compacted_this_turn = false;
            cmds.extend(self.request(now));
        } else {
            self.inbox_waiting = true;
        }
        cmds
    }

    /// The next request, once it is due: the system prompt is written when
    /// it changed, and a session near its window compacts first.
    fn request(&mut self, now: OffsetDateTime) -> Vec<Command> {
        let mut cmds = Vec::new();
        let system = prompt::system(
            self.state.header.as_ref().map_or("", |h| &h.cwd),
            &self.parts,
        );
        if self.state.system.as_deref() != Some(system.as_str()) {
            cmds.extend(self.append(vec![Record::Context(Context { at: now, system })]));
        }
        let window = self.state.window;
        let (mut request, estimate) = self.measure();
        let due = compact::due(self.state.totals.last_context, window)
            || !compact::fits(estimate, window);
        if due && !self.compacted_this_turn {
            self.compacted_this_turn = true;
            let done = self.compact(false, now);
            if self.state.compacting.is_some() {
                // The request goes out once the notes are in.
                cmds.extend(done);
                return cmds;
            }
            if !done.is_empty() {
                request = None;
            }
            cmds.extend(done);
        }
        let (mut request, mut estimate) = match request {
            Some(r) => {
                let tokens = compact::estimate(r.body.len(), &self.state.totals);
                (r, tokens)
            }
            None => self.built(),
        };
        if !compact::fits(estimate, window) {
            cmds.extend(self.give_way(now));
            if self.state.compacting.is_some() {
                return cmds;
            }
            (request, estimate) = self.built();
        }
        if !compact::fits(estimate, window) {
            let reason = StopReason::TooLarge {
                tokens: estimate,
                window,
            };
            cmds.extend(self.stop(reason, now));
            return cmds;
        }
        self.estimate = estimate;
        self.in_flight_bytes = request.body.len();
        self.compacted_this_turn = false;
        self.keep_turns = compact::KEEP_TURNS;
        cmds.push(Command::Call(request));
        cmds
    }

    /// The request due now and its estimated size. A history whose text
    /// alone is over the window is not built into a body just to be
    /// measured (a resumed 100 MB session compacts first): then no request,
    /// and the text's estimate, a lower bound enough to know it does not fit.
    fn measure(&self) -> (Option<Request>, u64) {
        let totals = &self.state.totals;
        let text = compact::estimate(self.state.text_bytes(0..self.state.messages.len()), totals);
        if !compact::fits(text, self.state.window) {
            return (None, text);
        }
        let request = self.state.request();
        let tokens = compact::estimate(request.body.len(), totals);
        (Some(request), tokens)
    }

    /// The request due now, built whatever its size, and its estimate.
    fn built(&self) -> (Request, u64) {
        let request = self.state.request();
        let tokens = compact::estimate(request.body.len(), &self.state.totals);
        (request, tokens)
    }

    /// The estimated size of the request due now (see [`Session::measure`]).
    fn estimate_now(&self) -> u64 {
        self.measure().1
    }

    /// The request due now does not fit the window, even after this
    /// request's compaction: the history gives way, in this order, until it
    /// fits, each step said on stderr and logged:
    ///
    /// 1. oversized tool results (over `prune-result-chars`) are pruned
    ///    wherever they are, the kept turns too, oldest first;
    /// 2. the compaction keeps fewer turns verbatim (two, then one: the
    ///    turn in flight), summarizing the rest; a cut is always at a turn's
    ///    start, so no call is parted from its result;
    /// 3. tool results, newest first, are cut to a short head and tail, the
    ///    whole of each spilled to a file this run may read.
    ///
    /// Step 2 asks for notes and returns with the compaction in flight; the
    /// request comes back here once they are in.
    fn give_way(&mut self, now: OffsetDateTime) -> Vec<Command> {
        let window = self.state.window;
        let mut cmds = Vec::new();
        // 1. Prune, oldest first, until the estimate fits.
        let body = self.state.request().body.len();
        let mut saved = 0usize;
        let mut chosen = Vec::new();
        for (i, m) in self.state.messages.iter().enumerate() {
            if compact::fits(
                compact::estimate(body.saturating_sub(saved), &self.state.totals),
                window,
            ) {
                break;
            }
            if m.role == Role::Tool && compact::prunable(&m.content, self.settings.prune_chars) {
                saved += m
                    .content
                    .len()
                    .saturating_sub(compact::prune_to(&m.content, self.settings.prune_chars).len());
                chosen.push(i as u64);
            }
        }
        if !chosen.is_empty() {
            let estimate = compact::estimate(body.saturating_sub(saved), &self.state.totals);
            let n = chosen.len();
            cmds.extend(self.prune(chosen, estimate, now));
            cmds.push(Command::Show(format!(
                "window: pruned {n} oversized tool result(s) in the kept turns to fit the {}-token window",
                view::tokens(window)
            )));
            if compact::fits(self.estimate_now(), window) {
                return cmds;
            }
        }
        // 2. Keep fewer turns.
        while self.keep_turns > 1 {
            self.keep_turns -= 1;
            let plan = compact::Plan::keeping(
                &self.state.messages,
                self.settings.prune_chars,
                self.keep_turns,
            );
            if plan.summarizes() {
                let said = Command::Show(format!(
                    "window: {} turns do not fit the {}-token window; keeping {} verbatim",
                    compact::KEEP_TURNS,
                    view::tokens(window),
                    self.keep_turns
                ));
                if let Some(summary) = self.summarize(plan.cut, now) {
                    cmds.push(said);
                    cmds.extend(summary);
                    return cmds;
                }
            }
        }
        // 3. Squeeze results, newest first.
        let mut body = self.state.request().body.len();
        let mut squeezed = Vec::new();
        for (i, m) in self.state.messages.iter().enumerate().rev() {
            if compact::fits(compact::estimate(body, &self.state.totals), window) {
                break;
            }
            if m.role == Role::Tool && compact::squeezable(&m.content) {
                let path = format!(
                    "{}/{:04}-squeezed-{i}.txt",
                    self.settings.spill_dir.trim_end_matches('/'),
                    self.state.totals.requests.saturating_add(1),
                );
                body = body.saturating_sub(
                    m.content
                        .len()
                        .saturating_sub(compact::squeeze(&m.content, &path).len()),
                );
                squeezed.push((i, path, m.content.clone()));
            }
        }
        if !squeezed.is_empty() {
            cmds.push(Command::Show(format!(
                "window: cut {} tool result(s), newest first, to head and tail to fit the {}-token window; each is whole in a spill file",
                squeezed.len(),
                view::tokens(window)
            )));
        }
        for (i, path, content) in squeezed {
            self.grants.insert(path.clone());
            cmds.push(Command::Spill {
                path: path.clone(),
                content,
            });
            cmds.extend(self.append(vec![Record::Squeezed(Squeezed {
                at: now,
                message: i as u64,
                path,
            })]));
        }
        cmds
    }

    /// Compaction, step one then, only if needed, step two. Automatic
    /// compaction (`manual` false) stops after pruning when the history then
    /// fits; `/compact` always summarizes what lies before the kept turns.
    fn compact(&mut self, manual: bool, now: OffsetDateTime) -> Vec<Command> {
        let plan = compact::Plan::of(&self.state.messages, self.settings.prune_chars);
        let mut cmds = Vec::new();
        if !plan.prune.is_empty() {
            let messages = &self.state.messages;
            let saved: u64 = plan
                .prune
                .iter()
                .map(|&i| {
                    compact::saved_tokens(
                        &messages[i].content,
                        &compact::prune_to(&messages[i].content, self.settings.prune_chars),
                    )
                })
                .sum();
            let indices = plan.prune.iter().map(|&i| i as u64).collect();
            let estimate = self.state.totals.last_context.saturating_sub(saved);
            cmds.extend(self.prune(indices, estimate, now));
            cmds.push(Command::Show(format!(
                "compaction: pruned {} oversized tool result(s), about {} tokens",
                plan.prune.len(),
                view::tokens(saved)
            )));
            if !manual
                && !compact::due(estimate, self.state.window)
                && compact::fits(self.estimate_now(), self.state.window)
            {
                return cmds;
            }
        }
        if !plan.summarizes() {
            if manual && plan.prune.is_empty() {
                cmds.push(Command::Show(format!(
                    "nothing to compact: the session has at most {} turns, which are kept verbatim",
                    compact::KEEP_TURNS
                )));
            }
            return cmds;
        }
        match self.summarize(plan.cut, now) {
            Some(summary) => cmds.extend(summary),
            None => cmds.push(Command::Show(format!(
                "compaction: the {} messages to summarize do not fit one request to the {}-token window; the session goes on uncompacted",
                plan.cut,
                view::tokens(self.state.window)
            ))),
        }
        cmds
    }

    /// Prunes the tool results at `messages` to `prune-result-chars` (the
    /// record names the limit, so the fold cuts the same).
    fn prune(&mut self, messages: Vec<u64>, estimate: u64, now: OffsetDateTime) -> Vec<Command> {
        let keep = self.settings.prune_chars as u64;
        self.append(vec![Record::Pruned(Pruned {
            at: now,
            messages,
            estimate,
            keep,
        })])
    }

    /// Step two of a compaction: asks for working notes on the first `cut`
    /// messages, in one request when it fits the window, else in pieces
    /// (see [`Session::next_piece`]); `None` when not even a first piece
    /// fits.
    fn summarize(&mut self, cut: usize, now: OffsetDateTime) -> Option<Vec<Command>> {
        let mut cmds = Vec::new();
        let text = compact::estimate(self.state.text_bytes(0..cut), &self.state.totals);
        let whole = compact::fits(text, self.state.window).then(|| {
            let summary = self.state.summary_request(cut);
            let tokens = compact::estimate(summary.body.len(), &self.state.totals);
            (summary, tokens)
        });
        if let Some((summary, tokens)) = whole.filter(|(_, t)| compact::fits(*t, self.state.window))
        {
            cmds.extend(self.append(vec![Record::Compacting(Compacting {
                at: now,
                cut: cut as u64,
                from: 0,
                upto: 0,
            })]));
            cmds.push(Command::Show(format!(
                "compaction: summarizing {cut} messages into working notes; the last {} turns stay verbatim",
                self.keep_turns
            )));
            self.estimate = tokens;
            self.in_flight_bytes = summary.body.len();
            cmds.push(Command::Summarize(summary));
            return Some(cmds);
        }
        let first = self.next_piece(cut, 0, now)?;
        cmds.push(Command::Show(format!(
            "compaction: the {cut} messages to summarize do not fit one request to the {}-token window; summarizing them in pieces, each carrying the notes so far",
            view::tokens(self.state.window)
        )));
        cmds.extend(first);
        Some(cmds)
    }

    /// The request for the piece of a summary that starts at `from`: as
    /// far as fits the window, cut at a turn start (see
    /// [`compact::piece_end`]), carrying the notes so far. `None` when not
    /// even one message fits.
    fn next_piece(&mut self, cut: usize, from: usize, now: OffsetDateTime) -> Option<Vec<Command>> {
        let notes = if from == 0 {
            None
        } else {
            self.state.notes_so_far.clone()
        };
        let (state, window) = (&self.state, self.state.window);
        let upto = compact::piece_end(&state.messages, from, cut, |end| {
            // Measured by its text first: most ends tried are far too big.
            let text = state.text_bytes(from..end) + notes.as_ref().map_or(0, String::len);
            compact::fits(compact::estimate(text, &state.totals), window) && {
                let request = state.piece_request(from, end, notes.as_deref());
                compact::fits(compact::estimate(request.body.len(), &state.totals), window)
            }
        })?;
        let request = self.state.piece_request(from, upto, notes.as_deref());
        let mut cmds = self.append(vec![Record::Compacting(Compacting {
            at: now,
            cut: cut as u64,
            from: from as u64,
            upto: if upto == cut { 0 } else { upto as u64 },
        })]);
        cmds.push(Command::Show(format!(
            "compaction: summarizing messages {}..{upto} of {cut}",
            from + 1
        )));
        self.estimate = compact::estimate(request.body.len(), &self.state.totals);
        self.in_flight_bytes = request.body.len();
        cmds.push(Command::Summarize(request));
        Some(cmds)
    }

    /// The notes are in: the old file ends pointing forward, and the session
    /// goes on in a new file holding the notes and the kept turns.
    fn summarized(&mut self, reply: Reply, new_id: String, now: OffsetDateTime) -> Vec<Command> {
        let (Some(cut), Some(old)) = (self.state.compacting, self.state.header.clone()) else {
            return Vec::new();
        };
        let error = if !reply.tool_calls.is_empty() {
            "the model called a tool instead of writing notes"
        } else if reply.text.trim().is_empty() {
            "the model wrote no notes"
        } else {
            ""
        };
        if !error.is_empty() {
            return self.handle(Input::SummaryFailed {
                error: error.to_owned(),
                now,
            });
        }
        let (_, upto) = self.state.piece;
        if upto < cut {
            // A piece before the last: its notes carry on into the next.
            let noted = Record::Noted(Noted {
                at: now,
                upto,
                notes: reply.text,
            });
            let mut cmds = self.append(vec![noted]);
            let before = &self.state.totals;
            let totals = self.totals(
                reply.usage,
                before.last_context,
                before.estimated,
                false,
                now,
            );
            cmds.extend(self.append(vec![totals]));
            let idx = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
            match self.next_piece(idx(cut), idx(upto), now) {
                Some(next) => cmds.extend(next),
                None => cmds.extend(self.handle(Input::SummaryFailed {
                    error: "a piece of the part to summarize does not fit the window".into(),
                    now,
                })),
            }
            return cmds;
        }
        let (notes, usage) = (reply.text, reply.usage);
        let cut = usize::try_from(cut)
            .unwrap_or(usize::MAX)
            .min(self.state.messages.len());
        let kept = self.state.messages[cut..].to_vec();
        let usage = usage.unwrap_or_default();
        let before = &self.state.totals;
        let estimate = (compact::notes_message(&notes).len()
            + kept.iter().map(|m| m.content.len()).sum::<usize>()) as u64
            / 4;
        let totals = Totals {
            at: Some(now),
            tokens_in: before.tokens_in.saturating_add(usage.prompt_tokens),
            tokens_out: before.tokens_out.saturating_add(usage.completion_tokens),
            last_context: estimate,
            estimated: true,
            ..before.clone()
        };
        let header = Header {
            id: new_id.clone(),
            name: self.state.name.clone(),
            named: self.state.named,
            started: now,
            model: self.state.model.clone(),
            window: self.state.window,
            provider: self.state.provider.clone(),
            continues: Some(old.id.clone()),
            ..old
        };
        let pending = self.state.awaiting;
        let (refined_at, turns_at_refine) = (self.state.refined_at, self.state.turns_at_refine);
        let turn_rounds = self.state.turn_rounds;
        let mut cmds = self.append(vec![Record::Continued(Continued {
            at: now,
            next: new_id,
        })]);
        cmds.push(Command::Sync);
        cmds.push(Command::StartFile(header.clone()));
        self.state = State::default();
        self.state.apply(&Record::Header(header));
        let compacted = Compacted {
            at: now,
            from: old.id,
            summarized: cut as u64,
            notes,
            kept,
            totals,
            pending,
            refined_at,
            turns_at_refine,
            turn_rounds,
        };
        cmds.extend(self.append(vec![Record::Compacted(compacted)]));
        cmds.push(Command::Show(format!(
            "compaction: {cut} messages became working notes; the session goes on in a new file"
        )));
        if pending {
            cmds.extend(self.request(now));
        } else {
            // A file must end with its totals: listings read them there.
            let totals = self.state.totals.clone();
            cmds.extend(self.append(vec![Record::Totals(totals)]));
            cmds.push(Command::Sync);
        }
        cmds
    }

    fn reply(&mut self, reply: Reply, now: OffsetDateTime) -> Vec<Command> {
        // While notes are being written, the turn's request has not gone out.
        if !self.state.awaiting || self.state.compacting.is_some() {
            return vec![Command::Show("ignored an answer to no request".into())];
        }
        self.overflow_retried = false;
        // Without the provider's count, the estimate: the request's, and
        // the answer's text and calls as the same bytes per token.
        let answer_bytes = reply.text.len()
            + reply
                .tool_calls
                .iter()
                .map(|c| c.name.len() + c.arguments.len())
                .sum::<usize>();
        let usage = reply.usage.unwrap_or(Usage {
            prompt_tokens: self.estimate,
            completion_tokens: compact::estimate(answer_bytes, &self.state.totals),
        });
        let last_context = usage.prompt_tokens.saturating_add(usage.completion_tokens);
        let counted = reply.usage.is_some();
        let ends_turn = reply.tool_calls.is_empty();
        let answer = Message {
            tool_calls: reply.tool_calls,
            ..Message::assistant(now, reply.text)
        };
        // The totals after the answer, which counts as a request.
        let mut cmds = self.append(vec![Record::Message(answer)]);
        let mut totals = self.totals(Some(usage), last_context, !counted, ends_turn, now);
        if let Record::Totals(t) = &mut totals {
            t.in_out_estimated |= !counted;
            if counted && usage.prompt_tokens > 0 && self.in_flight_bytes > 0 {
                t.cal_bytes = self.in_flight_bytes as u64;
                t.cal_tokens = usage.prompt_tokens;
            }
        }
        cmds.extend(self.append(vec![totals]));
        if ends_turn {
            cmds.push(Command::Sync);
        } else {
            cmds.extend(self.next_tool(now));
        }
        cmds
    }

    /// Starts the first open call that parses and that the repeat guard
    /// lets run; calls that do not get their error as result at once. When
    /// none is left, the next request goes out, unless the turn took its
    /// tool rounds.
    fn next_tool(&mut self, now: OffsetDateTime) -> Vec<Command> {
        let mut cmds = Vec::new();
        while let Some(call) = self.state.open_calls.first().cloned() {
            match guard::verdict(
                self.turn_calls().into_iter(),
                &call,
                self.settings.repeat_limit,
            ) {
                Verdict::Run => {}
                Verdict::Refuse(error) => {
                    let result = Message::tool(now, call.id, error);
                    cmds.extend(self.append(vec![Record::Message(result)]));
                    continue;
                }
                Verdict::Stop(reason) => {
                    cmds.extend(self.stop(reason, now));
                    return cmds;
                }
            }
            match tools::parse(&call) {
                Ok(tool) => {
                    let grants = self.grants.iter().cloned().collect();
                    if let Some(path) = tool.edit_path() {
                        cmds.push(Command::Open {
                            id: call.id,
                            path: path.to_owned(),
                            grants,
                        });
                        return cmds;
                    }
                    cmds.push(Command::RunTool {
                        id: call.id,
                        tool,
                        grants,
                    });
                    return cmds;
                }
                Err(error) => cmds
                    .extend(self.append(vec![Record::Message(Message::tool(now, call.id, error))])),
            }
        }
        let limit = self.settings.max_tool_rounds;
        if self.state.turn_rounds >= u64::from(limit) {
            cmds.extend(self.stop(StopReason::ToolRounds { limit }, now));
            return cmds;
        }
        cmds.extend(self.request(now));
        cmds
    }

    /// This turn's tool calls that have their results, in order: the calls
    /// of every assistant message since the last user message, without the
    /// ones still open.
    fn turn_calls(&self) -> Vec<&ToolCall> {
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

    /// Ends the turn on core's own account: every open call gets a result
    /// saying it was not run, then the `stopped` record and the totals.
    /// The shell tells the user, from the record.
    fn stop(&mut self, reason: StopReason, now: OffsetDateTime) -> Vec<Command> {
        let text = guard::stopped_result(&reason);
        let mut records: Vec<Record> = self
            .state
            .open_calls
            .iter()
            .map(|c| Record::Message(Message::tool(now, c.id.clone(), text.clone())))
            .collect();
        records.push(Record::Stopped(Stopped { at: now, reason }));
        self.close_turn(records, now)
    }

    /// `GoOn`: a turn stopped after its last tool results sends its request
    /// after all, with a fresh count of tool rounds.
    fn go_on(&mut self, now: OffsetDateTime) -> Vec<Command> {
        let after_results = self
            .state
            .messages
            .last()
            .is_some_and(|m| m.role == Role::Tool);
        if self.busy() || !after_results {
            return vec![Command::Show(
                "nothing to go on with: no turn stopped after its tool results".into(),
            )];
        }
        self.compacted_this_turn = false;
        let mut cmds = self.append(vec![Record::WentOn(WentOn { at: now })]);
        cmds.extend(self.request(now));
        cmds
    }

    fn tool_done(
        &mut self,
        id: String,
        output: String,
        grant: Option<String>,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        if self.state.open_calls.first().is_none_or(|c| c.id != id) {
            return vec![Command::Show(format!(
                "ignored a result for tool call {id}, which is not running"
            ))];
        }
        if let Some(path) = grant {
            self.grants.insert(path);
        }
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
            cmds.push(Command::Spill {
                path,
                content: output,
            });
            shown
        } else {
            output
        };
        cmds.extend(self.append(vec![Record::Message(Message::tool(now, id, content))]));
        cmds.extend(self.next_tool(now));
        cmds
    }

    /// The server refused the request as larger than its context. The first
    /// time for a request: the window is lowered (to the limit named, or
    /// below the size that failed), logged, and the request compacted to it
    /// and sent again. A second refusal fails the turn.
    fn overflowed(
        &mut self,
        error: String,
        overflow: crate::overflow::Overflow,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        if self.state.compacting.is_some() {
            return self.summary_overflowed(error, overflow, now);
        }
        if !self.state.awaiting {
            return Vec::new();
        }
        if self.overflow_retried {
            let end = Record::Failed(Failed { at: now, error });
            return self.cut_short(String::new(), end, now);
        }
        self.overflow_retried = true;
        let (lowered, before, window) = self.lowered(error, overflow, now);
        let mut cmds = self.append(vec![lowered]);
        cmds.push(Command::Show(format!(
            "window: the request is larger than the server's context; the window goes from {} to {} tokens, and the request is compacted and sent once more",
            view::tokens(before),
            view::tokens(window)
        )));
        self.compacted_this_turn = false;
        self.keep_turns = compact::KEEP_TURNS;
        cmds.extend(self.request(now));
        cmds
    }

    /// The `overflowed` record for the request in flight: the window it
    /// lowers to (see [`crate::overflow::lowered_window`]) and the server's
    /// count for the calibration; with the window before and after.
    fn lowered(
        &self,
        error: String,
        overflow: crate::overflow::Overflow,
        now: OffsetDateTime,
    ) -> (Record, u64, u64) {
        let before = self.state.window;
        let window = crate::overflow::lowered_window(before, self.estimate, overflow);
        let record = Record::Overflowed(Overflowed {
            at: now,
            error,
            window,
            asked: overflow.asked.unwrap_or(0),
            bytes: self.in_flight_bytes as u64,
        });
        (record, before, window)
    }

    /// A summary request (or a piece of one) was refused as larger than the
    /// server's context: the window is lowered, this compaction fails, and
    /// it starts again under the lowered window, once.
    fn summary_overflowed(
        &mut self,
        error: String,
        overflow: crate::overflow::Overflow,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        let retry = !self.overflow_retried;
        self.overflow_retried = true;
        let failed = Record::CompactionFailed(Failed {
            at: now,
            error: error.clone(),
        });
        let (lowered, before, window) = self.lowered(error, overflow, now);
        let mut cmds = self.append(vec![lowered, failed]);
        cmds.push(Command::Show(format!(
            "window: the summary request is larger than the server's context; the window goes from {} to {} tokens{}",
            view::tokens(before),
            view::tokens(window),
            if retry { ", and the compaction starts again" } else { "" }
        )));
        if !retry {
            if self.state.awaiting {
                cmds.extend(self.request(now));
            }
            return cmds;
        }
        self.keep_turns = compact::KEEP_TURNS;
        if self.state.awaiting {
            self.compacted_this_turn = false;
            cmds.extend(self.request(now));
        } else {
            cmds.extend(self.compact(true, now));
        }
        cmds
    }

    /// Ctrl-C (or a crash found on resume): ends what is in flight.
    fn interrupt(&mut self, partial: String, now: OffsetDateTime) -> Vec<Command> {
        if self.state.compacting.is_some() && !self.state.awaiting {
            // A /compact cut short: nothing changed.
            let failed = Record::CompactionFailed(Failed {
                at: now,
                error: "interrupted".into(),
            });
            let mut cmds = self.append(vec![failed]);
            cmds.push(Command::Show(
                "compaction interrupted; nothing changed".into(),
            ));
            return cmds;
        }
        // Cut while tools ran or notes were written, the turn's request
        // never went out.
        let unsent = !self.state.open_calls.is_empty() || self.state.compacting.is_some();
        // Only a request that went out can have streamed anything.
        let partial = if unsent { String::new() } else { partial };
        self.cut_short(
            partial,
            Record::Interrupted(Interrupted { at: now, unsent }),
            now,
        )
    }

    /// Ends a turn in flight: open tool calls get results saying they were
    /// cut, or what streamed is kept as a partial answer; then `end`.
    fn cut_short(&mut self, partial: String, end: Record, now: OffsetDateTime) -> Vec<Command> {
        if !self.busy() {
            return Vec::new();
        }
        let mut records = interrupted_results(&self.state.open_calls, now);
        if !partial.is_empty() && records.is_empty() {
            records.push(Record::Message(Message {
                partial: true,
                ..Message::assistant(now, partial)
            }));
        }
        records.push(end);
        self.close_turn(records, now)
    }

    /// Appends what ends a turn (results for the calls still open, the
    /// record saying why), then the totals counting the turn, and syncs.
    fn close_turn(&mut self, records: Vec<Record>, now: OffsetDateTime) -> Vec<Command> {
        let mut cmds = self.append(records);
        let before = &self.state.totals;
        let totals = self.totals(None, before.last_context, before.estimated, true, now);
        cmds.extend(self.append(vec![totals]));
        cmds.push(Command::Sync);
        cmds
    }

    /// The totals after one model answer (or a turn cut short).
    fn totals(
        &self,
        usage: Option<Usage>,
        last_context: u64,
        estimated: bool,
        ends_turn: bool,
        now: OffsetDateTime,
    ) -> Record {
        let before = &self.state.totals;
        let usage = usage.unwrap_or_default();
        Record::Totals(Totals {
            at: Some(now),
            tokens_in: before.tokens_in.saturating_add(usage.prompt_tokens),
            tokens_out: before.tokens_out.saturating_add(usage.completion_tokens),
            turns: before.turns.saturating_add(u64::from(ends_turn)),
            last_context,
            estimated,
            name: self.state.name.clone(),
            named: self.state.named,
            requests: before.requests,
            delivered: before.delivered,
            cal_bytes: before.cal_bytes,
            cal_tokens: before.cal_tokens,
            in_out_estimated: before.in_out_estimated,
        })
    }

    /// Applies the records and asks the shell to append them, in order.
    fn append(&mut self, records: Vec<Record>) -> Vec<Command> {
        records
            .into_iter()
            .map(|r| {
                self.state.apply(&r);
                Command::Append(r)
            })
            .collect()
    }
}

/// A result for each call that will never get one now.
fn interrupted_results(open: &[ToolCall], now: OffsetDateTime) -> Vec<Record> {
    open.iter()
        .map(|c| {
            let text = format!(
                "error: interrupted before {} finished; it may or may not have run",
                c.name
            );
            Record::Message(Message::tool(now, c.id.clone(), text))
        })
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    use crate::record::test_header as header;

    fn settings() -> Settings {
        Settings {
            spill_chars: 100,
            spill_dir: "/state/spills/s1".into(),
            prune_chars: compact::PRUNE_CHARS,
            repeat_limit: guard::REPEAT_LIMIT,
            max_tool_rounds: guard::MAX_TOOL_ROUNDS,
            allow_edits: false,
            interactive: false,
        }
    }

    fn start() -> Session {
        Session::start(header(), settings()).0
    }

    fn user(s: &mut Session, text: &str) -> Vec<Command> {
        s.handle(Input::User {
            text: text.into(),
            now: datetime!(2026-12-02 10:01 UTC),
        })
    }

    fn reply(s: &mut Session, text: &str, calls: &[(&str, &str, &str)]) -> Vec<Command> {
        let tool_calls = calls
            .iter()
            .map(|(id, name, args)| ToolCall {
                id: (*id).into(),
                name: (*name).into(),
                arguments: (*args).into(),
            })
            .collect();
        let usage = Some(Usage {
            prompt_tokens: 10,
            completion_tokens: 2,
        });
        s.handle(Input::Reply {
            reply: Reply {
                text: text.into(),
                tool_calls,
                usage,
            },
            now: datetime!(2026-12-02 10:02 UTC),
        })
    }

    fn done(s: &mut Session, id: &str, output: &str, grant: Option<&str>) -> Vec<Command> {
        let grant = grant.map(str::to_owned);
        s.handle(Input::ToolDone {
            id: id.into(),
            output: output.into(),
            grant,
            now: datetime!(2026-12-02 10:03 UTC),
        })
    }

    fn kinds(cmds: &[Command]) -> Vec<&'static str> {
        cmds.iter()
            .map(|c| match c {
                Command::Append(Record::Header(_)) => "header",
                Command::Append(Record::Context(_)) => "context",
                Command::Append(Record::Message(m)) if m.role == Role::Tool => "result",
                Command::Append(Record::Message(_)) => "message",
                Command::Append(Record::Totals(_)) => "totals",
                Command::Append(Record::Failed(_)) => "failed",
                Command::Append(Record::Interrupted(_)) => "interrupted",
                Command::Append(Record::Pruned(_)) => "pruned",
                Command::Append(Record::Continued(_)) => "continued",
                Command::Append(Record::Compacted(_)) => "compacted",
                Command::Append(Record::Compacting(_)) => "compacting",
                Command::Append(Record::CompactionFailed(_)) => "compaction-failed",
                Command::Append(Record::Stopped(_)) => "stopped",
                Command::Append(Record::WentOn(_)) => "went-on",
                Command::Append(_) => "other",
                Command::Sync => "sync",
                Command::Call(_) => "call",
                Command::RunTool { .. } => "run",
                Command::Spill { .. } => "spill",
                Command::Summarize(_) => "summarize",
                Command::StartFile(_) => "start-file",
                Command::Snapshot { .. } => "snapshot",
                Command::Undo => "undo",
                Command::Open { .. } => "open",
                Command::Stage { .. } => "stage",
                Command::Write { .. } => "write",
                Command::Restore(_) => "restore",
                Command::Show(_) => "show",
            })
            .collect()
    }

    #[test]
    fn a_turn_appends_then_calls_then_ends() {
        let (mut s, cmds) = Session::start(header(), settings());
        assert_eq!(kinds(&cmds), ["header"]);
        assert_eq!(kinds(&user(&mut s, "hi")), ["message", "context", "call"]);
        assert_eq!(kinds(&user(&mut s, "again")), ["show"]);
        assert_eq!(
            kinds(&reply(&mut s, "yo", &[])),
            ["message", "totals", "sync"]
        );
        let t = &s.state().totals;
        assert_eq!(
            (
                t.tokens_in,
                t.tokens_out,
                t.turns,
                t.last_context,
                t.estimated
            ),
            (10, 2, 1, 12, false)
        );
        // The prompt did not change, so the second turn writes no context.
        assert_eq!(kinds(&user(&mut s, "more")), ["message", "call"]);
    }

    #[test]
    fn tools_run_one_at_a_time_in_order_and_bad_calls_get_error_results() {
        let mut s = start();
        user(&mut s, "look");
        let calls = [
            ("c1", "read_file", r#"{"path":"a"}"#),
            ("c2", "nope", "{}"),
            ("c3", "list_dir", r#"{"path":"."}"#),
        ];
        let cmds = reply(&mut s, "", &calls);
        assert_eq!(kinds(&cmds), ["message", "totals", "run"]);
        assert!(
            matches!(&cmds[2], Command::RunTool { id, tool: Tool::ReadFile { .. }, .. } if id == "c1")
        );
        assert_eq!(
            s.state().totals.turns,
            0,
            "a tool round does not end the turn"
        );
        // c1 done; c2 is unknown and answered at once; c3 runs.
        let cmds = done(&mut s, "c1", "text", None);
        assert_eq!(kinds(&cmds), ["result", "result", "run"]);
        assert!(
            matches!(&cmds[1], Command::Append(Record::Message(m)) if m.content.contains("no tool named"))
        );
        assert_eq!(kinds(&done(&mut s, "c9", "x", None)), ["show"]);
        assert_eq!(kinds(&done(&mut s, "c3", "a\nb", None)), ["result", "call"]);
        assert_eq!(
            kinds(&reply(&mut s, "done", &[])),
            ["message", "totals", "sync"]
        );
        assert_eq!(s.state().totals.turns, 1);
        assert_eq!(s.state().totals.tokens_in, 20);
    }

    fn result_of<'a>(cmds: &'a [Command], id: &str) -> Option<&'a str> {
        cmds.iter().find_map(|c| match c {
            Command::Append(Record::Message(m)) if m.tool_call_id.as_deref() == Some(id) => {
                Some(m.content.as_str())
            }
            _ => None,
        })
    }

    #[test]
    fn a_call_repeated_three_times_is_refused_and_a_fourth_ends_the_turn() {
        let mut s = start();
        user(&mut s, "read a");
        let args = r#"{"path":"a"}"#;
        for id in ["c1", "c2"] {
            let cmds = reply(&mut s, "", &[(id, "read_file", args)]);
            assert!(matches!(cmds.last(), Some(Command::RunTool { .. })), "{id}");
            done(&mut s, id, "x", None);
        }
        // The third: not run, an error result, and the next request goes out.
        let cmds = reply(&mut s, "", &[("c3", "read_file", r#"{ "path": "a" }"#)]);
        assert_eq!(
            kinds(&cmds),
            ["message", "totals", "result", "call"],
            "{cmds:?}"
        );
        assert!(result_of(&cmds, "c3").unwrap().contains("3 times in a row"));
        // The fourth, with another call after it: both answered, turn ended.
        let cmds = reply(
            &mut s,
            "",
            &[("c4", "read_file", args), ("c5", "list_dir", "{}")],
        );
        assert_eq!(
            kinds(&cmds),
            ["message", "totals", "result", "result", "stopped", "totals", "sync"]
        );
        assert!(result_of(&cmds, "c5")
            .unwrap()
            .starts_with("error: not run"));
        assert!(!s.busy());
        assert_eq!(s.state().totals.turns, 1);
        let Some(Command::Append(Record::Stopped(stop))) = cmds.get(4) else {
            panic!("{cmds:?}");
        };
        assert_eq!(
            stop.reason,
            StopReason::Repeated {
                tool: "read_file".into(),
                times: 4
            }
        );
        // A new turn starts the count again.
        user(&mut s, "again");
        let cmds = reply(&mut s, "", &[("c6", "read_file", args)]);
        assert!(matches!(cmds.last(), Some(Command::RunTool { .. })));
    }

    #[test]
    fn distinct_calls_are_never_refused() {
        let mut s = start();
        user(&mut s, "read");
        for i in 0..10 {
            let id = format!("c{i}");
            let args = format!(r#"{{"path":"f{}"}}"#, i % 2);
            let cmds = reply(&mut s, "", &[(&id, "read_file", &args)]);
            assert!(matches!(cmds.last(), Some(Command::RunTool { .. })), "{i}");
            done(&mut s, &id, "x", None);
        }
    }

    #[test]
    fn the_tool_round_cap_ends_the_turn_and_go_on_resets_it() {
        let mut s = Session::start(
            header(),
            Settings {
                max_tool_rounds: 2,
                ..settings()
            },
        )
        .0;
        user(&mut s, "work");
        reply(&mut s, "", &[("a", "read_file", r#"{"path":"1"}"#)]);
        let cmds = done(&mut s, "a", "x", None);
        assert!(matches!(cmds.last(), Some(Command::Call(_))));
        reply(&mut s, "", &[("b", "read_file", r#"{"path":"2"}"#)]);
        let cmds = done(&mut s, "b", "x", None);
        assert_eq!(kinds(&cmds), ["result", "stopped", "totals", "sync"]);
        assert!(!s.busy());
        let Some(Command::Append(Record::Stopped(stop))) = cmds.get(1) else {
            panic!("{cmds:?}");
        };
        assert_eq!(stop.reason, StopReason::ToolRounds { limit: 2 });
        assert!(guard::describe(&stop.reason).contains("--max-tool-rounds 2"));
        // Going on sends the request the cap held back, with two rounds more.
        let cmds = s.handle(Input::GoOn {
            now: datetime!(2026-12-02 10:04 UTC),
        });
        assert_eq!(kinds(&cmds), ["went-on", "call"]);
        assert_eq!(s.state().turn_rounds, 0);
        reply(&mut s, "", &[("c", "read_file", r#"{"path":"3"}"#)]);
        let cmds = done(&mut s, "c", "x", None);
        assert!(matches!(cmds.last(), Some(Command::Call(_))));
        reply(&mut s, "done", &[]);
        let cmds = s.handle(Input::GoOn {
            now: datetime!(2026-12-02 10:05 UTC),
        });
        assert_eq!(kinds(&cmds), ["show"], "nothing to go on with");
    }

    #[test]
    fn big_results_are_spilled_and_granted_to_this_run_only() {
        let mut s = start();
        user(&mut s, "run it");
        reply(
            &mut s,
            "",
            &[("call/1", "shell", r#"{"command":"yes | head -c 5000"}"#)],
        );
        let big = "y\n".repeat(2500);
        let cmds = done(&mut s, "call/1", &big, None);
        assert_eq!(kinds(&cmds), ["spill", "result", "call"]);
        let Command::Spill { path, content } = &cmds[0] else {
            unreachable!()
        };
        assert_eq!(path, "/state/spills/s1/0001-1-call_1.txt");
        assert_eq!(content, &big);
        let shown = &s.state().messages.last().unwrap().content;
        assert!(shown.contains(path) && shown.len() < big.len(), "{shown}");
        assert!(s.grants().contains(path));
        // The next tool run carries the grant.
        reply(
            &mut s,
            "",
            &[("c2", "read_file", &format!(r#"{{"path":"{path}"}}"#))],
        );
        // A resumed session does not have it.
        let resumed = Resumed {
            at: datetime!(2026-12-02 11:00 UTC),
            model: "m".into(),
            window: 1000,
            provider: String::new(),
        };
        let (r, _) = Session::resume(s.state().clone(), settings(), resumed);
        assert!(r.grants().is_empty());
    }

    #[test]
    fn grants_from_the_user_reach_later_tool_runs() {
        let mut s = start();
        user(&mut s, "read /etc/hosts");
        reply(
            &mut s,
            "",
            &[("g", "request_file_grant", r#"{"path":"/etc/hosts"}"#)],
        );
        done(&mut s, "g", "granted: /etc/hosts", Some("/etc/hosts"));
        let cmds = reply(
            &mut s,
            "",
            &[("r", "read_file", r#"{"path":"/etc/hosts"}"#)],
        );
        assert!(
            matches!(&cmds[2], Command::RunTool { grants, .. } if grants == &["/etc/hosts".to_owned()])
        );
    }

    #[test]
    fn an_interrupted_stream_keeps_what_arrived() {
        let mut s = start();
        user(&mut s, "hi");
        let cmds = s.handle(Input::Interrupted {
            partial: "Hel".into(),
            now: datetime!(2026-12-02 10:01 UTC),
        });
        assert_eq!(kinds(&cmds), ["message", "interrupted", "totals", "sync"]);
        let last = s.state().messages.last().unwrap();
        assert!(last.partial && last.content == "Hel");
        assert!(!s.busy());
    }

    #[test]
    fn interrupting_tools_answers_every_open_call_and_sends_nothing() {
        let mut s = start();
        user(&mut s, "go");
        reply(
            &mut s,
            "",
            &[
                ("a", "shell", r#"{"command":"sleep 100"}"#),
                ("b", "agent_info", "{}"),
            ],
        );
        let cmds = s.handle(Input::Interrupted {
            partial: String::new(),
            now: datetime!(2026-12-02 10:05 UTC),
        });
        assert_eq!(
            kinds(&cmds),
            ["result", "result", "interrupted", "totals", "sync"]
        );
        assert!(matches!(&cmds[2], Command::Append(Record::Interrupted(i)) if i.unsent));
        assert!(!s.busy());
        assert_eq!(kinds(&user(&mut s, "next")), ["message", "call"]);
    }

    #[test]
    fn resume_closes_what_a_crash_left_open() {
        let mut s = start();
        user(&mut s, "hi");
        let resumed = Resumed {
            at: datetime!(2026-12-02 11:00 UTC),
            model: "m2".into(),
            window: 50,
            provider: "anthropic".into(),
        };
        let (r, cmds) = Session::resume(s.state().clone(), settings(), resumed.clone());
        assert_eq!(kinds(&cmds), ["interrupted", "totals", "sync", "other"]);
        assert_eq!(r.state().totals.turns, 1);
        assert!(!r.busy());
        assert_eq!(
            (
                r.state().model.as_str(),
                r.state().window,
                r.state().provider.as_str()
            ),
            ("m2", 50, "anthropic")
        );

        let mut s = start();
        user(&mut s, "hi");
        reply(&mut s, "", &[("a", "shell", r#"{"command":"make"}"#)]);
        let (r, cmds) = Session::resume(s.state().clone(), settings(), resumed);
        assert_eq!(
            kinds(&cmds),
            ["result", "interrupted", "totals", "sync", "other"]
        );
        assert!(!r.busy());
    }

    /// A session with `turns` complete turns whose last answer read
    /// `context` tokens, with a 30,000-character tool result in turn one.
    fn long_session(turns: usize, context: u64) -> Session {
        let mut s = start();
        s.state.window = 128_000;
        for i in 0..turns {
            user(&mut s, &format!("question {i}"));
            if i == 0 {
                reply(&mut s, "", &[("big", "shell", r#"{"command":"make"}"#)]);
                s.settings.spill_chars = usize::MAX;
                done(&mut s, "big", &"log line\n".repeat(3_000), None);
            }
            let read = if i + 1 == turns { context } else { 100 };
            let usage = Some(Usage {
                prompt_tokens: read,
                completion_tokens: 0,
            });
            let reply = Reply {
                text: format!("answer {i}"),
                tool_calls: Vec::new(),
                usage,
            };
            s.handle(Input::Reply {
                reply,
                now: datetime!(2026-12-02 10:02 UTC),
            });
        }
        s
    }

    #[test]
    fn pruning_alone_can_make_room() {
        // Due at 115,200 of 128,000; the big result is worth about 6,000
        // tokens, which brings 110,000 + room under the window... not quite:
        // 110,000 is below the point already, so read it as 118,000.
        let mut s = long_session(5, 118_000);
        let cmds = user(&mut s, "next");
        assert_eq!(
            kinds(&cmds),
            ["message", "pruned", "show", "call"],
            "{cmds:#?}"
        );
        let pruned = s
            .state()
            .messages
            .iter()
            .find(|m| m.tool_call_id.as_deref() == Some("big"))
            .unwrap();
        assert!(pruned.content.contains("characters cut by compaction"));
        assert!(s.state().totals.last_context < 115_200);
    }

    #[test]
    fn summarizing_moves_the_session_to_a_new_file() {
        let mut s = long_session(5, 127_000);
        let cmds = user(&mut s, "next");
        assert_eq!(
            kinds(&cmds),
            [
                "message",
                "pruned",
                "show",
                "compacting",
                "show",
                "summarize"
            ],
            "{cmds:#?}"
        );
        let Command::Summarize(req) = &cmds[5] else {
            unreachable!()
        };
        assert!(req.body.contains("question 0") && !req.body.contains("question 3"));
        assert!(req.body.contains("Keep verbatim"));
        assert!(s.busy());
        assert_eq!(kinds(&user(&mut s, "again")), ["show"]);
        let now = datetime!(2026-12-02 10:05 UTC);
        let cmds = s.handle(Input::Summarized {
            reply: Reply {
                text: "Facts: port 5432".into(),
                usage: None,
                ..Reply::default()
            },
            new_id: "s2".into(),
            now,
        });
        assert_eq!(
            kinds(&cmds),
            [
                "continued",
                "sync",
                "start-file",
                "compacted",
                "show",
                "context",
                "call"
            ],
            "{cmds:#?}"
        );
        let Command::StartFile(h) = &cmds[2] else {
            unreachable!()
        };
        assert_eq!(
            (h.id.as_str(), h.continues.as_deref(), h.name.as_deref()),
            ("s2", Some("s1"), Some("amber"))
        );
        let m = &s.state().messages;
        assert!(m[0].content.contains("Facts: port 5432"));
        let users: Vec<&str> = m
            .iter()
            .filter(|m| m.role == Role::User)
            .map(|m| m.content.as_str())
            .collect();
        assert_eq!(&users[1..], ["question 3", "question 4", "next"]);
        let Command::Call(req) = &cmds[6] else {
            unreachable!()
        };
        assert!(req.body.contains("Facts: port 5432") && !req.body.contains("question 2"));
        assert_eq!(s.state().totals.turns, 5);
    }

    #[test]
    fn a_failed_summary_changes_nothing_and_the_turn_goes_on() {
        let mut s = long_session(5, 127_000);
        user(&mut s, "next");
        let before = s.state().messages.len();
        let now = datetime!(2026-12-02 10:05 UTC);
        let cmds = s.handle(Input::SummaryFailed {
            error: "HTTP 500".into(),
            now,
        });
        assert_eq!(kinds(&cmds), ["compaction-failed", "show", "call"]);
        assert_eq!(s.state().messages.len(), before);
    }

    #[test]
    fn notes_that_call_a_tool_are_no_notes() {
        let mut s = long_session(5, 127_000);
        user(&mut s, "next");
        let call = ToolCall {
            id: "c".into(),
            name: "shell".into(),
            arguments: "{}".into(),
        };
        let reply = Reply {
            text: "let me check".into(),
            tool_calls: vec![call],
            usage: None,
        };
        let now = datetime!(2026-12-02 10:05 UTC);
        let cmds = s.handle(Input::Summarized {
            reply,
            new_id: "s2".into(),
            now,
        });
        assert_eq!(kinds(&cmds), ["compaction-failed", "show", "call"]);
        assert!(matches!(&cmds[1], Command::Show(t) if t.contains("called a tool")));
    }

    #[test]
    fn manual_compaction() {
        let now = datetime!(2026-12-02 10:05 UTC);
        let mut s = long_session(2, 100);
        assert_eq!(
            kinds(&s.handle(Input::Compact { now })),
            ["show"],
            "two turns: nothing to do"
        );
        let mut s = long_session(5, 100);
        let cmds = s.handle(Input::Compact { now });
        assert_eq!(
            kinds(&cmds),
            ["pruned", "show", "compacting", "show", "summarize"]
        );
        let cmds = s.handle(Input::Summarized {
            reply: Reply {
                text: "notes".into(),
                usage: None,
                ..Reply::default()
            },
            new_id: "s2".into(),
            now,
        });
        assert_eq!(
            kinds(&cmds),
            [
                "continued",
                "sync",
                "start-file",
                "compacted",
                "show",
                "totals",
                "sync"
            ]
        );
        assert!(!s.busy());
        // Interrupting a /compact leaves everything as it was.
        let mut s = long_session(5, 100);
        s.handle(Input::Compact { now });
        let cmds = s.handle(Input::Interrupted {
            partial: String::new(),
            now,
        });
        assert_eq!(kinds(&cmds), ["compaction-failed", "show"]);
        assert!(!s.busy());
    }

    #[test]
    fn rename_is_validated() {
        let now = datetime!(2026-12-02 10:01 UTC);
        let mut s = start();
        let used = BTreeSet::from(["birch".to_owned()]);
        assert_eq!(
            kinds(&s.handle(Input::Rename {
                name: "birch".into(),
                used: used.clone(),
                now
            })),
            ["show"]
        );
        assert_eq!(
            kinds(&s.handle(Input::Rename {
                name: "db".into(),
                used,
                now
            })),
            ["other", "show"]
        );
        assert_eq!(s.state().name.as_deref(), Some("db"));
    }
}
