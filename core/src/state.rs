//! The fold: a session's state is its records applied in order.
//!
//! The live [`crate::Session`] changes its state only by applying the records
//! it asks the shell to append, so folding a file from the start gives exactly
//! the state the live run had, and [`requests`] rebuilds exactly the model
//! requests it sent.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;
use time::OffsetDateTime;

use crate::compact;
use crate::record::{
    Answer, Approved, Asked, Compacted, Compacting, Context, Continued, Counted, Edit, EditBy,
    EffortChanged, Header, McpTools, Message, ModelChanged, Noted, Overflowed, Planning, Pruned,
    Record, Refined, Renamed, Resumed, Rewound, Role, Seen, Squeezed, ToolCall, Totals, Written,
    ANSWER_LIMIT_VERSION, ARGUMENTS_VERSION, CACHE_VERSION, FORMAT_VERSION, THINKING_VERSION,
};
use crate::request::{AnswerLimit, Cache, Request, Shape, Shared, Think, Wire};

mod inconsistency;
mod reading;
mod requests;

pub use inconsistency::Inconsistency;
pub use reading::FileReading;
pub use requests::{requests, Rebuild};

/// Everything a session log says, folded.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct State {
    /// The header as written; `None` until the first line is read.
    pub(crate) header: Option<Header>,
    /// The current name (a rename replaces the header's).
    pub(crate) name: Option<String>,
    /// Whether the current name was chosen by the user.
    pub(crate) named: bool,
    /// The model requests go to now (a resume may change it).
    pub(crate) model: String,
    /// The declared context window now, in tokens.
    pub(crate) window: u64,
    /// The provider now (its wire protocol shapes the requests).
    pub(crate) provider: String,
    /// The last system prompt written.
    pub(crate) system: Option<String>,
    /// The conversation the model sees, shared with the requests made
    /// of it (a change copies it only while a request still holds it).
    pub(crate) messages: Arc<Vec<Message>>,
    /// The running totals, as last written.
    pub(crate) totals: Totals,
    /// The time of the last record that carries one.
    #[serde(with = "time::serde::rfc3339::option")]
    pub(crate) last_activity: Option<OffsetDateTime>,
    /// How many times the session was resumed.
    pub(crate) resumes: u32,
    /// Whether a request is due: the last message is the user's, or the
    /// last tool result of a round, and nothing answered it yet.
    pub(crate) awaiting: bool,
    /// The tool calls of the last assistant message still without a result,
    /// in the order they were made.
    pub(crate) open_calls: Vec<ToolCall>,
    /// The file this session went on in after a compaction, when this one
    /// ended that way.
    pub(crate) continued: Option<String>,
    /// The cut of the compaction whose notes are being written.
    pub(crate) compacting: Option<u64>,
    /// The piece of it being summarized now, `from..upto`.
    pub(crate) piece: (u64, u64),
    /// The notes on the pieces before it, when it is summarized in pieces.
    pub(crate) notes_so_far: Option<String>,
    /// When the memory was last refined from this session.
    #[serde(with = "time::serde::rfc3339::option")]
    pub(crate) refined_at: Option<OffsetDateTime>,
    /// The turn count at the last refinement.
    pub(crate) turns_at_refine: u64,
    /// How many of [`State::messages`] the last refinement of this file
    /// read: an automatic refinement reads the ones after (see
    /// [`crate::refine::unrefined`]). 0 in a file a compaction started, so
    /// its working notes and kept turns are read; lowered by a rewind that
    /// takes back messages before it.
    pub(crate) messages_at_refine: usize,
    /// Whether a compaction happened since the last refinement.
    pub(crate) compacted_since_refine: bool,
    /// The `refining` records since the last `refined` (or resume): the
    /// requests of the refinement under way, counted already.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(crate) refining_sent: u64,
    /// The tool rounds (answers that call tools) since the turn began or
    /// went on, for the tool-round cap.
    pub(crate) turn_rounds: u64,
    /// Tool calls whose results the log lost (a damaged line): the fold
    /// answered each with [`LOST_RESULT`] where the next message began.
    pub(crate) repaired: u64,
    /// The hash of each file's content as this session last read or wrote
    /// it (canonical paths): an edit of a file not here, or whose hash on
    /// disk differs, is refused.
    pub(crate) files: BTreeMap<String, String>,
    /// The file changes this session made, in order (see [`crate::edit`]).
    pub(crate) edits: Vec<FileEdit>,
    /// What each file held when revolve last changed it (an edit, a shell
    /// command's change, a rewind; `None`: removed), rewound edits and
    /// conversation-only rewinds included: what a rewind expects on disk.
    pub(crate) wrote: BTreeMap<String, Option<String>>,
    /// An edit logged but not yet known to be written.
    pub(crate) pending_edit: Option<Edit>,
    /// A rewind logged as `rewinding` with no `rewound` yet: a crash cut
    /// it short, and the next resume settles it.
    pub(crate) pending_rewind: Option<Rewound>,
    /// The rewinds, in order.
    pub(crate) rewinds: Vec<RewindEntry>,
    /// The user answered "always" to an edit: later ones are not asked.
    pub(crate) edits_always: bool,
    /// The user answered "always" to a shell command: later ones are not
    /// asked.
    pub(crate) shell_always: bool,
    /// Plan mode: edits and writes are refused, commands run read-only.
    pub(crate) planning: bool,
    /// The reasoning effort the requests ask (the last `effort` record).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) effort: Option<crate::models::Effort>,
    /// The provider's web search tool, offered with at most this many
    /// searches an answer (the last `web_search` record).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) web_search: Option<u32>,
    /// The MCP tools offered now (the last `mcp_tools` record).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) mcp_tools: Vec<crate::mcp::McpTool>,
    /// Background commands, children and, for a child, its parent's call
    /// (the `background`, `delegated` and `spawned` records).
    #[serde(skip_serializing_if = "crate::agents::Agents::is_empty")]
    pub(crate) agents: crate::agents::Agents,
    /// The MCP tools the user answered "always" for.
    #[serde(skip_serializing_if = "std::collections::BTreeSet::is_empty")]
    pub(crate) mcp_always: std::collections::BTreeSet<String>,
    /// The plan (the last `plan` record; see [`crate::plan`]).
    #[serde(skip_serializing_if = "crate::plan::Plan::is_empty")]
    pub(crate) plan: crate::plan::Plan,
    /// The pages `web_fetch` read from the network, by the URL asked for
    /// (the last `fetched` record of each that was not itself cached):
    /// the session's page cache ([`crate::web::cached`]).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) fetched: BTreeMap<String, crate::record::Fetched>,
    /// The hosts the user answered "always" for to a `web_fetch`.
    #[serde(skip_serializing_if = "std::collections::BTreeSet::is_empty")]
    pub(crate) web_always: std::collections::BTreeSet<String>,
    /// What `SessionStart` hooks added for the model since this run
    /// started, resumed or went on after a compaction (the system prompt
    /// holds it: [`crate::hooks::start_block`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) start_context: Vec<String>,
    /// `start_context` is what a compaction carried over: the first
    /// `SessionStart` hook that adds something replaces it.
    #[serde(skip)]
    pub(crate) start_carried: bool,
}

impl State {
    /// The file edits of the session, in order (rewound ones marked).
    pub fn edits(&self) -> &[FileEdit] {
        &self.edits
    }

    /// Whether the session holds anything a user made or paid for: a
    /// message, a request sent (a refinement, a failed turn), a rewind, an
    /// edit, a resume or a compaction. Only a session without any of them
    /// may leave no file behind.
    pub fn holds_anything(&self) -> bool {
        !self.messages.is_empty()
            || self.totals.requests > 0
            || !self.rewinds.is_empty()
            || self.pending_rewind.is_some()
            || !self.edits.is_empty()
            || self.refined_at.is_some()
            || self.resumes > 0
            || self.continued.is_some()
    }

    /// The plan, as the last `update_plan` call set it.
    pub fn plan(&self) -> &crate::plan::Plan {
        &self.plan
    }

    /// What `SessionStart` hooks added for the model in this run.
    pub fn start_context(&self) -> &[String] {
        &self.start_context
    }

    /// The header as written.
    pub fn header(&self) -> &Option<Header> {
        &self.header
    }

    /// The current name (a rename replaces the header's).
    pub fn name(&self) -> &Option<String> {
        &self.name
    }

    /// The model requests go to now (a resume may change it).
    pub fn model(&self) -> &String {
        &self.model
    }

    /// The declared context window now, in tokens.
    pub fn window(&self) -> u64 {
        self.window
    }

    /// The provider now (its wire protocol shapes the requests).
    pub fn provider(&self) -> &String {
        &self.provider
    }

    /// The last system prompt written.
    pub fn system(&self) -> &Option<String> {
        &self.system
    }

    /// The conversation the model sees, shared with the requests made of it (a
    /// change copies it only while a request still holds it).
    pub fn messages(&self) -> &Arc<Vec<Message>> {
        &self.messages
    }

    /// The running totals, as last written.
    pub fn totals(&self) -> &Totals {
        &self.totals
    }

    /// How many times the session was resumed.
    pub fn resumes(&self) -> u32 {
        self.resumes
    }

    /// Whether a request is due.
    pub fn awaiting(&self) -> bool {
        self.awaiting
    }

    /// The tool calls of the last assistant message still without a result, in
    /// the order they were made.
    pub fn open_calls(&self) -> &Vec<ToolCall> {
        &self.open_calls
    }

    /// The file this session went on in after a compaction, when this one ended
    /// that way.
    pub fn continued(&self) -> &Option<String> {
        &self.continued
    }

    /// The cut of the compaction whose notes are being written.
    pub fn compacting(&self) -> Option<u64> {
        self.compacting
    }

    /// How many of [`State::messages`] the last refinement of this file read.
    pub fn messages_at_refine(&self) -> usize {
        self.messages_at_refine
    }

    /// The tool rounds (answers that call tools) since the turn began or went
    /// on, for the tool-round cap.
    pub fn turn_rounds(&self) -> u64 {
        self.turn_rounds
    }

    /// Tool calls whose results the log lost (a damaged line).
    pub fn repaired(&self) -> u64 {
        self.repaired
    }

    /// An edit logged but not yet known to be written.
    pub fn pending_edit(&self) -> &Option<Edit> {
        &self.pending_edit
    }

    /// A rewind logged as `rewinding` with no `rewound` yet.
    pub fn pending_rewind(&self) -> &Option<Rewound> {
        &self.pending_rewind
    }

    /// The rewinds, in order.
    pub fn rewinds(&self) -> &Vec<RewindEntry> {
        &self.rewinds
    }

    /// Whether the session is planning (`/plan`): edits refused.
    pub fn planning(&self) -> bool {
        self.planning
    }

    /// The reasoning effort the requests ask (the last `effort` record).
    pub fn effort(&self) -> Option<crate::models::Effort> {
        self.effort
    }
}

/// An edit of a file, as the session's state holds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FileEdit {
    /// The tool call that made it.
    pub call: String,
    /// The file, canonical and absolute.
    pub path: String,
    /// The hash of the content before; `None` when the file did not exist.
    pub before: Option<String>,
    /// The hash of the content after; `None` when the file was removed.
    pub after: Option<String>,
    /// `edit_file`, `write_file` or `shell`.
    pub by: EditBy,
    /// The index in [`State::messages`] of the user message that began
    /// the turn that made it.
    pub turn: usize,
    /// Taken back by a rewind still standing.
    pub rewound: bool,
}

/// A rewind, as the session's state holds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RewindEntry {
    /// What the `rewound` record said.
    pub record: Rewound,
    /// The messages it took out of the conversation, to put back when it
    /// is itself taken back.
    pub messages: Vec<crate::record::Message>,
    /// The edits it marked rewound, by index in [`State::edits`].
    pub edits: Vec<usize>,
    /// Taken back since.
    pub undone: bool,
}

/// The result the fold gives a tool call whose result line was lost, so
/// every request after it still pairs each call with a result.
pub(crate) const LOST_RESULT: &str =
    "error: the result of this call was lost (a damaged line in the session log)";

impl State {
    /// Folds records from the start.
    pub fn fold<'a>(records: impl IntoIterator<Item = &'a Record>) -> State {
        let mut state = State::default();
        for record in records {
            state.apply(record);
        }
        state
    }

    /// Applies one record. Never panics, whatever the order of records;
    /// returns what does not fit when the record does not fit what came
    /// before (shown by `replay --check`), after applying what it can.
    pub fn apply(&mut self, record: &Record) -> Option<Inconsistency> {
        let earlier = self.before(record);
        let own = match record {
            Record::Header(h) => {
                if self.header.is_some() {
                    return Some(Inconsistency::SecondHeader);
                }
                self.apply_header(h)
            }
            Record::Context(c) => self.apply_context(c),
            Record::Message(m) => self.apply_message(m),
            Record::Failed(_) => self.apply_failed(),
            Record::Counted(c) => self.apply_counted(c),
            Record::Overflowed(o) => self.apply_overflowed(o),
            Record::Stopped(_) => self.apply_stopped(),
            Record::Planning(p) => self.apply_planning(p),
            Record::Effort(e) => self.apply_effort(e),
            Record::WebSearch(w) => {
                self.web_search = w.max_uses;
                None
            }
            Record::ModelChanged(m) => self.apply_model_changed(m),
            Record::McpTools(r) => self.apply_mcp_tools(r),
            Record::WentOn(_) => self.apply_went_on(),
            Record::Interrupted(_) => self.apply_interrupted(),
            Record::Compacting(c) => self.apply_compacting(c),
            Record::Noted(n) => self.apply_noted(n),
            Record::CompactionFailed(_) => self.apply_compaction_failed(),
            Record::Totals(t) => self.apply_totals(t),
            Record::Resumed(r) => self.apply_resumed(r),
            Record::Renamed(r) => self.apply_renamed(r),
            Record::Pruned(p) => self.apply_pruned(p),
            // Memory lives beside the session, not in it.
            Record::MemoryChanged(_) | Record::MemoryUndone(_) => None,
            Record::Seen(r) => self.apply_seen(r),
            Record::Approved(r) => self.apply_approved(r),
            Record::Edit(e) => self.apply_edit(e),
            Record::Written(w) => self.apply_written(w),
            Record::Rewinding(r) => self.apply_rewinding(r),
            Record::Rewound(r) => self.apply_rewound(r),
            Record::Squeezed(q) => self.apply_squeezed(q),
            Record::Refining(_) => self.apply_refining(),
            Record::Refined(r) => self.apply_refined(r),
            Record::Compacted(c) => self.apply_compacted(c),
            Record::Continued(c) => self.apply_continued(c),
            Record::Background(r) => self
                .agents
                .apply_background(r)
                .map(|id| Inconsistency::BackgroundNeverStarted { id }),
            Record::Delegated(r) => {
                self.agents.apply_delegated(r, &mut self.totals);
                None
            }
            Record::Spawned(r) => self
                .agents
                .apply_spawned(r)
                .then_some(Inconsistency::SecondSpawned),
            Record::Hook(h) => self.apply_hook(h),
            Record::Plan(p) => {
                self.plan = p.steps.clone();
                None
            }
            Record::Fetched(f) => {
                if f.cached.is_none() {
                    self.fetched.insert(f.url.clone(), f.clone());
                }
                None
            }
        };
        // A record's own note replaces an earlier one (a repair, a record
        // before the header), except a message's and a totals record's,
        // which the earlier one keeps out.
        match record {
            Record::Message(_) | Record::Totals(_) => earlier.or(own),
            _ => own.or(earlier),
        }
    }

    /// What every record does before its own kind's part: the repair of
    /// results whose lines were lost, the request count, the last activity.
    /// Returns the note of the repair, or that the record came before the
    /// header.
    fn before(&mut self, record: &Record) -> Option<Inconsistency> {
        let repaired = self.repair(record);
        if self.answers(record) || matches!(record, Record::Compacting(_) | Record::Refining(_)) {
            self.totals.requests = self.totals.requests.saturating_add(1);
        }
        if let Record::Refined(r) = record {
            // Requests its `refining` records counted already are not
            // counted again (older files have none).
            let counted = r.requests().saturating_sub(self.refining_sent);
            self.totals.requests = self.totals.requests.saturating_add(counted);
        }
        if let Some(at) = record.at() {
            self.last_activity = Some(at);
        }
        let mut note = repaired;
        if self.header.is_none() && !matches!(record, Record::Header(_)) {
            note = Some(Inconsistency::BeforeHeader);
        }
        note
    }

    fn apply_header(&mut self, h: &Header) -> Option<Inconsistency> {
        self.header = Some(h.clone());
        self.name = h.name.clone();
        self.named = h.named;
        self.model = h.model.clone();
        self.window = h.window;
        self.provider = h.provider.clone();
        None
    }

    fn apply_context(&mut self, c: &Context) -> Option<Inconsistency> {
        self.system = Some(c.system.clone());
        self.agents.subagents = c.subagents.clone();
        None
    }

    fn apply_message(&mut self, m: &Message) -> Option<Inconsistency> {
        let mut note = None;
        let mut set = |n: Inconsistency| {
            note.get_or_insert(n);
        };
        match m.role {
            Role::User => {
                if !self.open_calls.is_empty() {
                    set(Inconsistency::UserWhileCalls);
                }
                if let Some(origin) = &m.origin {
                    self.totals.delivered = self.totals.delivered.max(origin.seq);
                }
                self.awaiting = true;
                self.turn_rounds = 0;
            }
            Role::Assistant => {
                if !self.awaiting {
                    set(Inconsistency::AnswerToNothing);
                }
                self.awaiting = false;
                self.open_calls = m.tool_calls.clone();
                if !m.tool_calls.is_empty() {
                    self.turn_rounds = self.turn_rounds.saturating_add(1);
                }
            }
            Role::Tool => {
                let id = m.tool_call_id.as_deref().unwrap_or("");
                match self.open_calls.iter().position(|c| c.id == id) {
                    Some(i) => {
                        self.open_calls.remove(i);
                        self.awaiting = self.open_calls.is_empty();
                    }
                    None => set(Inconsistency::ResultForNoCall),
                }
            }
        }
        Arc::make_mut(&mut self.messages).push(m.clone());
        note
    }

    fn apply_failed(&mut self) -> Option<Inconsistency> {
        self.awaiting = false;
        None
    }

    // The request is due again, under the lowered window (or, in a
    // compaction, its summary fails and is tried again under it).
    fn apply_counted(&mut self, c: &Counted) -> Option<Inconsistency> {
        if crate::overflow::plausible(c.bytes, c.tokens) {
            self.totals.cal_bytes = c.bytes;
            self.totals.cal_tokens = c.tokens;
        }
        None
    }

    fn apply_overflowed(&mut self, o: &Overflowed) -> Option<Inconsistency> {
        self.window = o.window;
        // An absurd count is kept as said, never calibrated from.
        if crate::overflow::plausible(o.bytes, o.asked) {
            self.totals.cal_bytes = o.bytes;
            self.totals.cal_tokens = o.asked;
        }
        None
    }

    fn apply_stopped(&mut self) -> Option<Inconsistency> {
        let mut note = None;
        if !self.open_calls.is_empty() {
            note = Some(Inconsistency::StopWithOpenCalls);
        }
        self.awaiting = false;
        note
    }

    fn apply_planning(&mut self, p: &Planning) -> Option<Inconsistency> {
        self.planning = p.on;
        None
    }

    fn apply_effort(&mut self, e: &EffortChanged) -> Option<Inconsistency> {
        self.effort = e.effort;
        None
    }

    fn apply_model_changed(&mut self, m: &ModelChanged) -> Option<Inconsistency> {
        self.model = m.model.clone();
        self.window = m.window;
        None
    }

    fn apply_mcp_tools(&mut self, r: &McpTools) -> Option<Inconsistency> {
        self.mcp_tools = r.tools.clone();
        None
    }

    fn apply_went_on(&mut self) -> Option<Inconsistency> {
        let mut note = None;
        if self.awaiting || !self.open_calls.is_empty() {
            note = Some(Inconsistency::WentOnWhileDue);
        }
        self.awaiting = self.open_calls.is_empty();
        self.turn_rounds = 0;
        note
    }

    fn apply_interrupted(&mut self) -> Option<Inconsistency> {
        self.awaiting = false;
        self.end_compaction();
        None
    }

    fn apply_compacting(&mut self, c: &Compacting) -> Option<Inconsistency> {
        if c.from == 0 {
            self.notes_so_far = None;
        }
        self.compacting = Some(c.cut);
        self.piece = c.piece();
        None
    }

    fn apply_noted(&mut self, n: &Noted) -> Option<Inconsistency> {
        let mut note = None;
        if self.compacting.is_none() {
            note = Some(Inconsistency::NotesForNoCompaction);
        }
        self.notes_so_far = Some(n.notes.clone());
        note
    }

    fn apply_compaction_failed(&mut self) -> Option<Inconsistency> {
        self.end_compaction();
        None
    }

    fn apply_totals(&mut self, t: &Totals) -> Option<Inconsistency> {
        let mut note = None;
        if t.turns < self.totals.turns {
            note = Some(Inconsistency::TurnsWentBack {
                from: self.totals.turns,
                to: t.turns,
            });
        }
        if t.name.is_some() {
            self.name = t.name.clone();
            self.named = t.named;
        }
        // A delivered message is taken for good, whatever a totals
        // record written by an older version says.
        let delivered = self.totals.delivered.max(t.delivered);
        self.totals = t.clone();
        self.totals.delivered = delivered;
        note
    }

    fn apply_resumed(&mut self, r: &Resumed) -> Option<Inconsistency> {
        // A refinement a crash cut short counted its requests.
        self.refining_sent = 0;
        // This run's `SessionStart` hooks say it again.
        self.start_context.clear();
        self.start_carried = false;
        self.resumes += 1;
        self.model = r.model.clone();
        self.window = r.window;
        if !r.provider.is_empty() {
            self.provider = r.provider.clone();
        }
        None
    }

    fn apply_renamed(&mut self, r: &Renamed) -> Option<Inconsistency> {
        self.name = Some(r.name.clone());
        self.named = !r.generated;
        None
    }

    fn apply_pruned(&mut self, p: &Pruned) -> Option<Inconsistency> {
        for &i in &p.messages {
            if let Some(m) = usize::try_from(i)
                .ok()
                .and_then(|i| Arc::make_mut(&mut self.messages).get_mut(i))
            {
                if m.role == Role::Tool {
                    m.content = match usize::try_from(p.keep) {
                        Ok(0) | Err(_) => compact::prune(&m.content),
                        Ok(keep) => compact::prune_to(&m.content, keep),
                    };
                }
            }
        }
        self.totals.last_context = p.estimate;
        self.totals.estimated = true;
        None
    }

    fn apply_seen(&mut self, r: &Seen) -> Option<Inconsistency> {
        self.files.insert(r.path.clone(), r.hash.clone());
        None
    }

    fn apply_approved(&mut self, r: &Approved) -> Option<Inconsistency> {
        if r.answer == Answer::Always {
            // A grant is never "always" (and is not remembered).
            match &r.tool {
                Asked::Shell => self.shell_always = true,
                Asked::Edit => self.edits_always = true,
                Asked::Tool(tool) if crate::mcp::is_mcp(tool) => {
                    self.mcp_always.insert(tool.clone());
                }
                Asked::Tool(tool) if tool == crate::web::TOOL => {
                    self.web_always.insert(r.path.clone());
                }
                _ => {}
            }
        }
        None
    }

    fn apply_edit(&mut self, e: &Edit) -> Option<Inconsistency> {
        let mut note = None;
        // Core edits only a file whose content it knows: the chain
        // of hashes holds (a shell command's change is whatever it
        // found, so it is not held to it).
        if e.by != EditBy::Shell && e.before.as_ref() != self.files.get(&e.path) {
            note = Some(Inconsistency::EditFromUnknown {
                path: e.path.clone(),
            });
        }
        if e.written {
            self.edited(e);
        } else {
            if self.pending_edit.is_some() {
                note = Some(Inconsistency::EditWhilePending);
            }
            self.pending_edit = Some(e.clone());
        }
        note
    }

    fn apply_written(&mut self, w: &Written) -> Option<Inconsistency> {
        let mut note = None;
        match self.pending_edit.take() {
            Some(e) if e.call == w.call && e.path == w.path => {
                if w.error.is_none() {
                    self.edited(&e);
                }
            }
            other => {
                self.pending_edit = other;
                note = Some(Inconsistency::WriteOfNoEdit);
            }
        }
        note
    }

    fn apply_rewinding(&mut self, r: &Rewound) -> Option<Inconsistency> {
        let mut note = None;
        if self.pending_rewind.is_some() {
            note = Some(Inconsistency::RewindWhilePending);
        }
        self.pending_rewind = Some(r.clone());
        note
    }

    fn apply_rewound(&mut self, r: &Rewound) -> Option<Inconsistency> {
        let mut note = None;
        self.pending_rewind = None;
        let broken = r
            .files
            .iter()
            .find(|f| !r.forced && f.from.is_some() && f.from.as_ref() != self.files.get(&f.path));
        if let Some(f) = broken {
            note = Some(Inconsistency::RewindFromUnknown {
                path: f.path.clone(),
            });
        }
        if let Some(n) = self.rewound(r) {
            note = Some(n);
        }
        note
    }

    fn apply_squeezed(&mut self, q: &Squeezed) -> Option<Inconsistency> {
        let mut note = None;
        match usize::try_from(q.message)
            .ok()
            .and_then(|i| Arc::make_mut(&mut self.messages).get_mut(i))
        {
            Some(m) if m.role == Role::Tool => {
                m.content = compact::squeeze(&m.content, &q.path, squeezed_keep(q));
            }
            // An answer of the model: its text and every call's
            // arguments that are long enough (see
            // [`compact::squeeze_answer`]).
            Some(m) if m.role == Role::Assistant => {
                compact::squeeze_answer(m, &q.path, squeezed_keep(q));
            }
            _ => note = Some(Inconsistency::SqueezedNoResult),
        }
        note
    }

    fn apply_refining(&mut self) -> Option<Inconsistency> {
        self.refining_sent = self.refining_sent.saturating_add(1);
        None
    }

    fn apply_refined(&mut self, r: &Refined) -> Option<Inconsistency> {
        self.refining_sent = 0;
        self.refined_at = Some(r.at);
        self.turns_at_refine = self.totals.turns;
        self.messages_at_refine = self.messages.len();
        self.compacted_since_refine = false;
        None
    }

    fn apply_compacted(&mut self, c: &Compacted) -> Option<Inconsistency> {
        self.compacted_since_refine = true;
        self.refined_at = c.refined_at;
        self.turns_at_refine = c.turns_at_refine;
        self.messages_at_refine = 0;
        let mut messages = Vec::with_capacity(c.kept.len() + 1);
        messages.push(Message::user(c.at, compact::notes_message(&c.notes)));
        messages.extend(c.kept.iter().cloned());
        self.messages = Arc::new(messages);
        self.totals = c.totals.clone();
        self.open_calls.clear();
        self.awaiting = c.pending;
        self.turn_rounds = c.turn_rounds;
        // Edits and rewinds reach back to the compaction: the new
        // file starts without them, and so does the live session.
        self.files.clear();
        self.edits.clear();
        self.wrote.clear();
        self.pending_edit = None;
        self.pending_rewind = None;
        self.rewinds.clear();
        // What `SessionStart` hooks added goes on, until the hooks run
        // for `compact` add something of their own.
        self.start_context = c.start_context.clone();
        self.start_carried = !c.start_context.is_empty();
        None
    }

    /// A hook's run: what a `SessionStart` hook added stays for the
    /// system prompt; every other hook's effect is in the records after it.
    fn apply_hook(&mut self, h: &crate::record::Hooked) -> Option<Inconsistency> {
        if h.event == crate::hooks::Event::SessionStart.as_str() {
            if let Some(added) = &h.added {
                if std::mem::take(&mut self.start_carried) {
                    self.start_context.clear();
                }
                self.start_context.push(added.clone());
            }
        }
        None
    }

    fn apply_continued(&mut self, c: &Continued) -> Option<Inconsistency> {
        self.continued = Some(c.next.clone());
        self.end_compaction();
        self.awaiting = false;
        self.open_calls.clear();
        None
    }

    /// A message of the user or the model while tool calls still wait for
    /// results (their lines were lost): each gets [`LOST_RESULT`] first, so
    /// the history stays well formed and the request due is the one the
    /// live run sent. Says what it did.
    fn repair(&mut self, record: &Record) -> Option<Inconsistency> {
        let Record::Message(m) = record else {
            return None;
        };
        if m.role == Role::Tool || self.open_calls.is_empty() {
            return None;
        }
        let lost = std::mem::take(&mut self.open_calls);
        for call in &lost {
            Arc::make_mut(&mut self.messages).push(Message::tool(
                m.at,
                call.id.clone(),
                LOST_RESULT,
            ));
        }
        self.repaired = self.repaired.saturating_add(lost.len() as u64);
        self.awaiting = true;
        Some(Inconsistency::LostResults { calls: lost.len() })
    }

    /// An edit took effect.
    fn edited(&mut self, e: &Edit) {
        let turn = self
            .messages
            .iter()
            .rposition(|m| m.role == Role::User)
            .unwrap_or(0);
        match &e.after {
            Some(hash) => self.files.insert(e.path.clone(), hash.clone()),
            None => self.files.remove(&e.path),
        };
        self.wrote.insert(e.path.clone(), e.after.clone());
        self.edits.push(FileEdit {
            call: e.call.clone(),
            path: e.path.clone(),
            before: e.before.clone(),
            after: e.after.clone(),
            by: e.by.clone(),
            turn,
            rewound: false,
        });
    }

    /// A rewind, or the taking back of one.
    fn rewound(&mut self, r: &crate::record::Rewound) -> Option<Inconsistency> {
        let from = usize::try_from(r.from).unwrap_or(usize::MAX);
        let mut note = None;
        for f in &r.files {
            match &f.to {
                Some(hash) => self.files.insert(f.path.clone(), hash.clone()),
                None => self.files.remove(&f.path),
            };
            self.wrote.insert(f.path.clone(), f.to.clone());
        }
        let mut entry = RewindEntry {
            record: r.clone(),
            messages: Vec::new(),
            edits: Vec::new(),
            undone: false,
        };
        match r.undoes {
            None => {
                if r.conversation && from <= self.messages.len() {
                    entry.messages = Arc::make_mut(&mut self.messages).split_off(from);
                    self.messages_at_refine = self.messages_at_refine.min(from);
                    // The turns taken back no longer count.
                    self.totals.turns = self.totals.turns.saturating_sub(r.turns);
                    self.turns_at_refine = self.turns_at_refine.min(self.totals.turns);
                } else if r.conversation {
                    note = Some(Inconsistency::RewindPastEnd);
                }
                for (i, e) in self.edits.iter_mut().enumerate() {
                    if !e.rewound && e.turn >= from {
                        e.rewound = true;
                        entry.edits.push(i);
                    }
                }
            }
            Some(k) => {
                let k = usize::try_from(k).unwrap_or(usize::MAX);
                match self.rewinds.get_mut(k) {
                    Some(undone) if !undone.undone => {
                        undone.undone = true;
                        if undone.record.conversation {
                            if self.messages.len() == from {
                                Arc::make_mut(&mut self.messages).append(&mut undone.messages);
                                self.totals.turns =
                                    self.totals.turns.saturating_add(undone.record.turns);
                            } else {
                                note = Some(Inconsistency::RewindUndoneAfterTurns);
                            }
                        }
                        for &i in &undone.edits {
                            if let Some(e) = self.edits.get_mut(i) {
                                e.rewound = false;
                            }
                        }
                    }
                    _ => note = Some(Inconsistency::UndoesNoRewind),
                }
            }
        }
        self.rewinds.push(entry);
        note
    }

    /// No compaction is in flight any more.
    fn end_compaction(&mut self) {
        self.compacting = None;
        self.piece = (0, 0);
        self.notes_so_far = None;
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The characters a `squeezed` record keeps (the default in older logs).
fn squeezed_keep(q: &crate::record::Squeezed) -> usize {
    q.keep
        .map_or(compact::SQUEEZE_HEAD + compact::SQUEEZE_TAIL, |k| {
            usize::try_from(k).unwrap_or(usize::MAX)
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Failed, Renamed};
    use time::macros::datetime;

    use crate::record::test_header as header;

    /// What `SessionStart` hooks added is carried by a compaction, kept
    /// when the hooks run for `compact` add nothing, replaced when they
    /// add something.
    #[test]
    fn a_compaction_carries_the_start_context_until_compact_hooks_add_their_own() {
        let at = datetime!(2026-12-05 10:00 UTC);
        let compacted = Record::Compacted(Compacted {
            at,
            from: "old".into(),
            summarized: 2,
            notes: "n".into(),
            kept: Vec::new(),
            totals: Totals::default(),
            pending: false,
            refined_at: None,
            turns_at_refine: 0,
            turn_rounds: 0,
            start_context: vec!["branch: x".into()],
        });
        let hook = |added: Option<&str>| {
            Record::Hook(crate::record::Hooked {
                at,
                event: "SessionStart".into(),
                command: "c".into(),
                call: None,
                tool: None,
                exit: Some(0),
                ended: None,
                decision: "go".into(),
                reason: None,
                added: added.map(str::to_owned),
                input: None,
                note: None,
            })
        };
        let s = State::fold(&[Record::Header(header()), compacted.clone(), hook(None)]);
        assert_eq!(s.start_context(), ["branch: x"]);
        let records = [
            Record::Header(header()),
            compacted,
            hook(Some("a")),
            hook(Some("b")),
        ];
        assert_eq!(State::fold(&records).start_context(), ["a", "b"]);
    }

    /// A header's `required` tool choice is asked by the request that
    /// answers a user message only: after a tool result the model may
    /// answer in words; without it nothing is written; a header without
    /// the field (older logs) reads as none.
    #[test]
    fn required_tool_choice_asks_a_turns_first_request_only() {
        let at = datetime!(2026-12-05 10:00 UTC);
        let required = Header {
            tool_choice: Some(crate::request::ToolChoice::Required),
            ..header()
        };
        let user = Record::Message(Message::user(at, "list the files"));
        let mut calling = Message::assistant(at, "");
        calling.tool_calls = vec![ToolCall {
            id: "c1".into(),
            name: "list_dir".into(),
            arguments: r#"{"path":"."}"#.into(),
        }];
        let result = Message::tool(at, "c1", "a.txt");
        let first = State::fold(&[Record::Header(required.clone()), user.clone()]);
        assert!(first
            .request()
            .body
            .text()
            .contains(r#""tool_choice":"required""#));
        let after = State::fold(&[
            Record::Header(required),
            user.clone(),
            Record::Message(calling),
            Record::Message(result),
        ]);
        assert_eq!(after.tool_choice(), None);
        assert!(!after.request().body.text().contains("tool_choice"));
        let auto = State::fold(&[Record::Header(header()), user]);
        assert!(!auto.request().body.text().contains("tool_choice"));
        let line = serde_json::to_string(&header()).unwrap();
        assert!(!line.contains("tool_choice"), "{line}");
    }

    /// Under a small window, a file of version 7 on offers revolve's tools
    /// in brief; a larger window, or an older file, whole.
    #[test]
    fn a_small_window_offers_the_tools_in_brief_from_version_7() {
        let at = datetime!(2026-12-05 10:00 UTC);
        let user = Record::Message(Message::user(at, "list the files"));
        let body = |version: u32, window: u64| {
            let h = Header {
                version,
                window,
                ..header()
            };
            State::fold(&[Record::Header(h), user.clone()])
                .request()
                .body
                .text()
        };
        let whole = "Large files: pass offset and limit";
        let small = body(crate::record::FORMAT_VERSION, 4_096);
        assert!(!small.contains(whole), "{small}");
        assert!(small.contains(r#""description":"Read a text file of the working tree (or a path granted to this session).""#));
        assert!(body(crate::record::FORMAT_VERSION, 100_000).contains(whole));
        assert!(body(6, 4_096).contains(whole));
        assert!(small.len() + 2_000 < body(6, 4_096).len());
    }

    /// The effort thinks on the Anthropic wire from format 5 on; a
    /// format-4 log (whose requests sent nothing for it there) and the
    /// Chat Completions wire rebuild without it; no effort, no thinking.
    #[test]
    fn thinking_at_an_effort_on_anthropic_from_format_5() {
        let at = datetime!(2026-12-05 10:00 UTC);
        let fold = |version: u32, provider: &str, effort: Option<crate::models::Effort>| {
            State::fold(&[
                Record::Header(Header {
                    version,
                    provider: provider.into(),
                    ..header()
                }),
                Record::Effort(crate::record::EffortChanged { at, effort }),
            ])
        };
        let high = Some(crate::models::Effort::High);
        assert_eq!(
            fold(FORMAT_VERSION, "anthropic", high).thinking(),
            Some(Think::Budget(24_576))
        );
        assert_eq!(
            fold(THINKING_VERSION, "anthropic", high)
                .shape(None, true)
                .thinking,
            Some(Think::Budget(24_576))
        );
        assert_eq!(
            fold(THINKING_VERSION - 1, "anthropic", high).thinking(),
            None
        );
        assert_eq!(fold(FORMAT_VERSION, "openai", high).thinking(), None);
        assert_eq!(fold(FORMAT_VERSION, "anthropic", None).thinking(), None);
    }

    #[test]
    fn requests_are_rebuilt_before_each_answer() {
        let at = datetime!(2026-12-02 10:01 UTC);
        let records = vec![
            Record::Header(header()),
            Record::Message(Message::user(at, "one")),
            Record::Failed(Failed {
                at,
                error: "boom".into(),
            }),
            Record::Message(Message::user(at, "two")),
            Record::Message(Message::assistant(at, "ok")),
        ];
        let reqs = requests(&records);
        assert_eq!(reqs.len(), 2);
        assert!(
            reqs[0].body.text().contains("\"one\"") && !reqs[0].body.text().contains("\"two\"")
        );
        assert!(reqs[1].body.text().contains("\"one\"") && reqs[1].body.text().contains("\"two\""));
    }

    #[test]
    fn an_edit_must_start_from_what_the_session_last_saw() {
        use crate::record::{Edit, Seen, Written};
        let at = datetime!(2026-12-02 10:01 UTC);
        let mut s = State::fold(&[Record::Header(header())]);
        let seen = Record::Seen(Seen {
            at,
            path: "/w/a".into(),
            hash: "h1".into(),
        });
        assert!(s.apply(&seen).is_none());
        let edit = |before: &str| {
            Record::Edit(Edit {
                at,
                call: "c".into(),
                path: "/w/a".into(),
                by: "edit_file".into(),
                before: Some(before.into()),
                after: Some("h2".into()),
                diff: String::new(),
                added: None,
                removed: None,
                written: false,
            })
        };
        let note = s.clone().apply(&edit("h0")).unwrap();
        assert!(
            note.to_string().contains("had not last read or wrote"),
            "{note}"
        );
        assert!(s.apply(&edit("h1")).is_none());
        assert!(s.pending_edit.is_some());
        let written = Record::Written(Written {
            at,
            call: "c".into(),
            path: "/w/a".into(),
            error: None,
        });
        assert!(s.apply(&written).is_none());
        assert_eq!(s.files["/w/a"], "h2");
        assert_eq!(s.edits.len(), 1);
        assert!(s.apply(&written).is_some(), "a second write of no edit");
    }

    #[test]
    fn rename_and_notes() {
        let at = datetime!(2026-12-02 10:01 UTC);
        let mut s = State::default();
        assert!(s
            .apply(&Record::Message(Message::assistant(at, "x")))
            .is_some());
        let mut s2 = State::fold(&[Record::Header(header())]);
        assert!(s2
            .apply(&Record::Renamed(Renamed {
                at,
                name: "db".into(),
                generated: false,
            }))
            .is_none());
        assert_eq!((s2.name.as_deref(), s2.named), (Some("db"), true));
        assert!(s2.apply(&Record::Header(header())).is_some());
    }
}
