//! `/refine`: the model rewrites the memory files from the whole session,
//! and every rewrite can be taken back.
//!
//! Pure decisions only: the refinement request, validating the model's
//! answer into [`Change`]s, when an automatic refinement is due and what it
//! reads ([`unrefined`], [`auto_range`]), the history
//! as the user reads it, which snapshot an undo restores and how. The shell
//! (`revolve_io::refine`) snapshots, writes and restores.
//!
//! A snapshot entry is taken before anything is rewritten: the memory files
//! as they were, and a [`SnapshotMeta`]. Undo restores the newest entry still
//! standing and marks it undone; a second undo walks one further back,
//! rather than undoing the undo (jj's operation log works the same way).

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use time::{Duration, OffsetDateTime};

use crate::memory::{Label, MemoryFile, Scope, SnapshotKind, SnapshotMeta};
use crate::record::{Message, Role};
use crate::request::{AnswerLimit, Request, Wire};
use crate::text;

/// Turns after which a refinement runs on its own.
pub(crate) const AUTO_TURNS: u64 = 25;
/// The least time between two automatic refinements.
pub(crate) const COOLDOWN: Duration = Duration::minutes(20);

/// Whether an automatic refinement is due: after [`AUTO_TURNS`] turns since
/// the last refinement, or after a compaction, and never within
/// [`COOLDOWN`] of the last one.
pub(crate) fn auto_due(
    turns_since: u64,
    compacted_since: bool,
    last: Option<OffsetDateTime>,
    now: OffsetDateTime,
) -> bool {
    let cooled = last.is_none_or(|at| now - at >= COOLDOWN);
    cooled && (turns_since >= AUTO_TURNS || compacted_since)
}

/// The instructions of a refinement request.
pub const PROMPT: &str = "\
You maintain this user's memory files: markdown loaded into the system prompt of every session. \
Read the whole session above and the memory files as they are now, then rewrite the files so \
they hold what this session taught that will still matter later: durable facts about the \
project, decisions and their reasons, the user's preferences and habits. Keep what is still true, \
correct what the session proved wrong, remove what is obsolete, and do not copy the conversation.

Answer with one JSON object and nothing else:
{\"files\": [{\"file\": \"project/NAME.md\", \"content\": \"the whole new file\", \"change\": \"one \
sentence naming what changed\"}]}
List only files you change. `file` is `project/NAME.md` or `global/NAME.md` (NAME: letters, \
digits, '-', '_', '.'); to delete a file give `\"delete\": true` instead of content. Keep a \
file's front matter unless you mean to change it. If nothing should change, answer \
{\"files\": []}.";

/// The request that asks for a refinement: `transcript` is the whole
/// session (every file of its chain, or one piece of it), or for an
/// automatic refinement [`auto_text`]; `files` the memory as it is. The
/// answer is limited to `limit` as a turn's is (the room the window keeps:
/// [`crate::state::State::answer_limit`]), so a model that rambles stops.
pub fn request(
    wire: Wire,
    model: &str,
    transcript: &str,
    files: &[MemoryFile],
    at: OffsetDateTime,
    limit: Option<AnswerLimit>,
) -> Request {
    let mut text = format!("<session>\n{transcript}</session>\n\n<memory>\n");
    for f in sorted(files) {
        text.push_str(&format!(
            "## {}/{}\n{}\n\n",
            f.scope.as_str(),
            f.name,
            f.content.trim_end()
        ));
    }
    if files.is_empty() {
        text.push_str("(no memory files yet)\n");
    }
    text.push_str("</memory>\n\n");
    text.push_str(PROMPT);
    Request::limited(wire, model, None, &[Message::user(at, text)], limit)
}

/// One message of the session as a refinement reads it: its real content,
/// tool calls with their arguments, and tool results as the history holds
/// them (pruned results stay pruned; spilled and squeezed ones stay head,
/// tail and path). A delivered message says who sent it.
pub fn block(m: &Message) -> String {
    match m.role {
        Role::User => format!("[user]\n{}\n", m.model_text()),
        Role::Assistant => {
            let mut out = String::new();
            if !m.content.is_empty() || m.tool_calls.is_empty() {
                out.push_str(&format!("[assistant]\n{}\n", m.content));
            }
            for c in &m.tool_calls {
                out.push_str(&format!(
                    "[tool call {} {}] {}\n",
                    c.id, c.name, c.arguments
                ));
            }
            out
        }
        Role::Tool => format!(
            "[tool result {}]\n{}\n",
            m.tool_call_id.as_deref().unwrap_or(""),
            m.content
        ),
    }
}

/// How a block too large for any one request is cut: its head and tail.
const CUT_NOTE: &str = " of this message to fit the context window";

/// The bytes of session text one refinement request may carry under
/// `window`, when the rest of the request (prompt and memory files) is
/// `base` bytes: what fits under the compaction point, with a fifth kept
/// for JSON escaping; at least 1,000.
pub fn budget(window: u64, totals: &crate::record::Totals, base: usize) -> usize {
    let room = crate::compact::bytes_for(crate::compact::point(window), totals);
    (room.saturating_sub(base) * 4 / 5).max(1_000)
}

/// The pieces a refinement reads a session in: consecutive runs of
/// `blocks`, each at most `budget` bytes, whole blocks only, except that a
/// block over the budget is a piece of its own (cut by [`piece_text`]).
/// One piece when everything fits.
pub fn pieces(blocks: &[String], budget: usize) -> Vec<std::ops::Range<usize>> {
    let budget = budget.max(1);
    let mut out = Vec::new();
    let (mut start, mut size) = (0, 0);
    for (i, b) in blocks.iter().enumerate() {
        if i > start && size + b.len() > budget {
            out.push(start..i);
            (start, size) = (i, 0);
        }
        size += b.len();
    }
    if start < blocks.len() || out.is_empty() {
        out.push(start..blocks.len());
    }
    out
}

/// The text of one piece, at most `budget` bytes: its blocks whole, or the
/// head and tail of a block that alone is larger. Tool results are the
/// only blocks that large in practice; a message of the user or the
/// assistant is cut only when it alone exceeds the window.
pub(crate) fn piece_text(blocks: &[String], budget: usize) -> String {
    let whole: usize = blocks.iter().map(String::len).sum();
    if whole <= budget || blocks.len() != 1 {
        return blocks.concat();
    }
    let chars = budget / 4;
    crate::tools::cut(&blocks[0], chars * 4 / 5, chars / 5, CUT_NOTE)
}

/// What an automatic refinement may read: the live history after the
/// last refinement of this file (after a compaction, from its working notes
/// on). A `/refine` asked for reads the whole chain instead.
pub(crate) fn unrefined(state: &crate::State) -> &[Message] {
    let from = state.messages_at_refine.min(state.messages.len());
    &state.messages[from..]
}

/// How an automatic refinement's request begins.
const AUTO_INTRO: &str = "This is what the session added since the memory was last refined \
(after a compaction, its working notes first); the memory files below already hold what came \
before.\n\n";

/// The line saying how many older messages an automatic refinement left
/// out.
fn left_out(n: usize) -> String {
    format!(
        "[the {n} oldest message{} since the last refinement {} left out: they do not fit \
         one request]\n",
        if n == 1 { "" } else { "s" },
        if n == 1 { "is" } else { "are" }
    )
}

/// Which of `messages` (what the session added since the last refinement,
/// oldest first) an automatic refinement reads, in one request of `budget`
/// bytes of session text: the newest whose blocks fit it together with the
/// intro and the line naming what was left out. At least the newest one
/// (cut to the budget when it alone is larger); everything when it fits.
/// Only the blocks read are rendered, newest first, so a long history
/// costs nothing beyond what fits.
pub(crate) fn auto_range(messages: &[Message], budget: usize) -> std::ops::Range<usize> {
    let n = messages.len();
    // Everything, with no line about what was left out; or the newest that
    // fit beside that line, as it reads for where they start (its count has
    // fewer digits than `n`, and says "1 message" alone).
    let all = budget.saturating_sub(AUTO_INTRO.len());
    let (mut size, mut start) = (0, n);
    for (i, m) in messages.iter().enumerate().rev() {
        size += block(m).len();
        if size > all {
            return start.min(n - 1)..n;
        }
        if i == n - 1 || size + left_out(i).len() <= all {
            start = i;
        }
    }
    0..n
}

/// The session text of an automatic refinement's one request, at most
/// about `budget` bytes: the intro, the line naming what was left out (when
/// anything was), and the blocks of [`auto_range`].
pub(crate) fn auto_text(messages: &[Message], budget: usize) -> String {
    let range = auto_range(messages, budget);
    let mut text = AUTO_INTRO.to_owned();
    if range.start > 0 {
        text.push_str(&left_out(range.start));
    }
    let blocks: Vec<String> = messages[range].iter().map(block).collect();
    let room = budget.saturating_sub(text.len()).max(1);
    text.push_str(&piece_text(&blocks, room));
    text
}

/// The request for piece `part` (from 1) of `of`, reading `text` against the
/// memory `files` as the earlier pieces left them. With one piece, exactly
/// [`request`].
pub(crate) fn piece_request(
    wire: Wire,
    model: &str,
    text: &str,
    (part, of): (usize, usize),
    files: &[MemoryFile],
    at: OffsetDateTime,
    limit: Option<AnswerLimit>,
) -> Request {
    if of <= 1 {
        return request(wire, model, text, files, at, limit);
    }
    let intro = format!(
        "This session is too long for one request; here is part {part} of {of}. The memory \
         files below already hold what the earlier parts taught: rewrite them from this part, \
         keeping what still holds.\n\n"
    );
    request(wire, model, &format!("{intro}{text}"), files, at, limit)
}

/// The memory after `changes`, as a later piece reads it.
pub fn applied(files: &[MemoryFile], changes: &[Change]) -> Vec<MemoryFile> {
    let mut out: Vec<MemoryFile> = files.to_vec();
    for c in changes {
        let name = c.label.file_name();
        out.retain(|f| !(f.scope == c.scope && f.name == name));
        if let Some(content) = &c.content {
            out.push(MemoryFile {
                scope: c.scope,
                name,
                content: content.clone(),
            });
        }
    }
    out
}

/// The changes of every piece in order, as one refinement of `original`:
/// a file's last change wins, its sentences joined; a file that ends as it
/// began is no change.
pub(crate) fn combined(original: &[MemoryFile], pieces: Vec<Change>) -> Vec<Change> {
    // In the order the files were first named.
    let mut out: Vec<Change> = Vec::new();
    for c in pieces {
        match out.iter_mut().find(|b| b.path() == c.path()) {
            Some(before) => {
                before.sentence = format!("{}; {}", before.sentence, c.sentence);
                before.content = c.content;
            }
            None => out.push(c),
        }
    }
    out.retain(|c| {
        find(original, c.scope, &c.label.file_name()).map(|f| f.content.as_str())
            != c.content.as_deref()
    });
    out
}

fn sorted(files: &[MemoryFile]) -> Vec<&MemoryFile> {
    let mut v: Vec<&MemoryFile> = files.iter().collect();
    v.sort_by(|a, b| (a.scope, &a.name).cmp(&(b.scope, &b.name)));
    v
}

/// One file a refinement changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// Whether it is a global or a project memory file.
    pub scope: Scope,
    /// Which file, by its label (`<label>.md`).
    pub label: Label,
    /// The whole new file; `None` deletes it.
    pub content: Option<String>,
    /// What changed, in the model's words.
    pub sentence: String,
}

impl Change {
    /// `project/name.md`.
    pub fn path(&self) -> String {
        format!("{}/{}", self.scope.as_str(), self.label.file_name())
    }

    /// `created`, `updated` or `deleted`, against the files as they are.
    pub fn verb(&self, current: &[MemoryFile]) -> &'static str {
        match (
            &self.content,
            find(current, self.scope, &self.label.file_name()),
        ) {
            (None, _) => "deleted",
            (Some(_), Some(_)) => "updated",
            (Some(_), None) => "created",
        }
    }
}

fn find<'a>(files: &'a [MemoryFile], scope: Scope, name: &str) -> Option<&'a MemoryFile> {
    files.iter().find(|f| f.scope == scope && f.name == name)
}

#[derive(Deserialize)]
struct Reply {
    files: Vec<ReplyFile>,
}

#[derive(Deserialize)]
struct ReplyFile {
    file: String,
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    delete: bool,
    #[serde(default)]
    change: String,
}

/// Validates the model's answer against the memory as it is. The changes
/// that would leave a file as it is are dropped, so an empty result means
/// the refinement changes nothing (and leaves no entry). Any malformed part
/// rejects the whole answer: nothing is written, and the error says why.
pub fn parse_reply(text: &str, current: &[MemoryFile]) -> Result<Vec<Change>, String> {
    let json = json_object(text).ok_or("the answer holds no JSON object")?;
    let reply: Reply =
        serde_json::from_str(json).map_err(|e| format!("the answer is not the asked JSON: {e}"))?;
    let mut seen = BTreeSet::new();
    let mut changes = Vec::new();
    for f in reply.files {
        let (scope, name) = match f.file.split_once('/') {
            Some(("project", name)) => (Scope::Project, name),
            Some(("global", name)) => (Scope::Global, name),
            _ => {
                return Err(format!(
                    "{:?} is not project/NAME.md or global/NAME.md",
                    f.file
                ))
            }
        };
        let label = Label::parse(name).map_err(|e| format!("{:?}: {e}", f.file))?;
        if !seen.insert((scope, label.file_name())) {
            return Err(format!("{:?} is given twice", f.file));
        }
        // One line of plain words: it is shown on the terminal and in the
        // history, so no control character of the model's survives.
        let sentence = f
            .change
            .split(|c: char| c.is_whitespace() || c.is_control())
            .filter(|w| !w.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        if sentence.is_empty() {
            return Err(format!("{:?} has no sentence saying what changed", f.file));
        }
        let content = match (f.delete, f.content) {
            (true, _) => None,
            (false, Some(c)) if !c.trim().is_empty() => Some(c),
            (false, _) => {
                return Err(format!(
                    "{:?} has no content (to delete it, say \"delete\": true)",
                    f.file
                ))
            }
        };
        let now = find(current, scope, &label.file_name()).map(|f| f.content.as_str());
        if now == content.as_deref() {
            continue;
        }
        changes.push(Change {
            scope,
            label,
            content,
            sentence,
        });
    }
    Ok(changes)
}

/// The outermost `{…}` of a text (models wrap JSON in prose or fences).
fn json_object(text: &str) -> Option<&str> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    (start < end).then(|| &text[start..=end])
}

/// The snapshot metadata of a refinement.
pub fn meta(
    session: &str,
    messages: u64,
    auto: bool,
    changes: &[Change],
    current: &[MemoryFile],
) -> SnapshotMeta {
    SnapshotMeta {
        session: session.to_owned(),
        messages,
        kind: if auto {
            SnapshotKind::Automatic
        } else {
            SnapshotKind::Manual
        },
        files: changes
            .iter()
            .map(|c| (c.path(), format!("{}: {}", c.verb(current), c.sentence)))
            .collect(),
        undone: false,
        pending: false,
    }
}

/// One snapshot entry of one memory directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The memory directory it belongs to.
    pub scope: Scope,
    /// The entry's folder name: `20261202T102606Z`, `-2`, `-3`… for more in
    /// the same second.
    pub stamp: String,
    /// What its `meta.cfg` says.
    pub meta: SnapshotMeta,
}

/// What `replay --check` finds wrong with a memory record of a session,
/// against the snapshot store's `entries`: a change whose entry is not
/// there, an undo of an entry the store does not mark undone.
pub fn check_record(record: &crate::record::Record, entries: &[Entry]) -> Option<String> {
    use crate::record::Record;
    let find =
        |stamp: &str| -> Vec<&Entry> { entries.iter().filter(|e| e.stamp == stamp).collect() };
    match record {
        Record::MemoryChanged(m) if find(&m.entry).is_empty() => Some(format!(
            "memory change: snapshot entry {} is not in the snapshot store",
            m.entry
        )),
        Record::MemoryUndone(m) => {
            let entry = m.entry.as_deref()?;
            let found = find(entry);
            if found.is_empty() {
                Some(format!(
                    "memory undo: snapshot entry {entry} is not in the snapshot store"
                ))
            } else if !found.iter().any(|e| e.meta.undone) {
                Some(format!(
                    "memory undo: the snapshot store does not mark {entry} undone"
                ))
            } else {
                None
            }
        }
        _ => None,
    }
}

/// A stamp's sort key: time, then its same-second number.
pub fn order(stamp: &str) -> (&str, u32) {
    match stamp.split_once('-') {
        Some((t, n)) => (t, n.parse().unwrap_or(0)),
        None => (stamp, 1),
    }
}

const STAMP: &[time::format_description::BorrowedFormatItem<'static>] =
    time::macros::format_description!("[year][month][day]T[hour][minute][second]Z");

/// The name of an entry taken at `at`: `20261202T102606Z`.
pub fn stamp(at: OffsetDateTime) -> String {
    at.to_offset(time::UtcOffset::UTC)
        .format(STAMP)
        .unwrap_or_else(|_| "snapshot".into())
}

/// When an entry was taken, from its stamp.
pub(crate) fn stamp_time(stamp: &str) -> Option<OffsetDateTime> {
    time::PrimitiveDateTime::parse(order(stamp).0, STAMP)
        .ok()
        .map(|t| t.assume_utc())
}

/// One memory change as the history shows it: the entries of one stamp
/// (one per memory directory a refinement touched) merged.
///
/// As JSON (`revolve memory history --json` prints an array of these,
/// newest first):
///
/// ```json
/// { "stamp": "20261202T102606Z", "at": "2026-12-02T10:26:06Z",
///   "session": "amber", "messages": 4, "kind": "manual", "undone": false,
///   "files": [{ "file": "project/notes.md", "change": "created: …",
///               "diff": "--- …" }] }
/// ```
///
/// `kind` is `manual`, `automatic` or `remember`; `at` is `null` for a
/// stamp that is not a time; `diff` is there only when diffs were asked for
/// (`null` for a file without one).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct HistoryEntry {
    /// The entry's folder name.
    pub stamp: String,
    /// When the change was made, read from the stamp.
    #[serde(with = "time::serde::rfc3339::option")]
    pub at: Option<OffsetDateTime>,
    /// The id of the session that made it.
    pub session: String,
    /// How many messages that session had then.
    pub messages: u64,
    /// `manual`, `automatic` or `remember`.
    pub kind: &'static str,
    /// Whether an undo took it back since.
    pub undone: bool,
    /// What it did to each file.
    pub files: Vec<FileChange>,
}

/// One file of a [`HistoryEntry`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FileChange {
    /// The file's name, such as `verify-before-commit.md`.
    pub file: String,
    /// The sentence `meta.cfg` holds (`created: …`, `updated: …`).
    pub change: String,
    /// The unified diff, when diffs were asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<Option<String>>,
}

/// The changes, newest first. With `with_diffs`, each file carries its
/// diff from `diffs` (per stamp and file), or `null`.
pub fn history_entries(
    entries: &[Entry],
    diffs: &BTreeMap<(String, String), String>,
    with_diffs: bool,
) -> Vec<HistoryEntry> {
    // One change, one entry per memory directory under one name: merged.
    type Merged<'a> = (&'a SnapshotMeta, Vec<&'a (String, String)>, bool);
    let mut merged: BTreeMap<(&str, u32), Merged> = BTreeMap::new();
    for e in entries {
        let slot = merged
            .entry(order(&e.stamp))
            .or_insert((&e.meta, Vec::new(), false));
        slot.1.extend(&e.meta.files);
        slot.2 |= e.meta.undone;
    }
    merged
        .into_iter()
        .rev()
        .map(|((time, n), (meta, files, undone))| {
            let stamp = if n == 1 {
                time.to_owned()
            } else {
                format!("{time}-{n}")
            };
            let files = files
                .into_iter()
                .map(|(file, change)| FileChange {
                    file: file.clone(),
                    change: change.clone(),
                    diff: with_diffs.then(|| diffs.get(&(stamp.clone(), file.clone())).cloned()),
                })
                .collect();
            HistoryEntry {
                at: stamp_time(&stamp),
                stamp,
                session: meta.session.clone(),
                messages: meta.messages,
                kind: meta.kind.as_str(),
                undone,
                files,
            }
        })
        .collect()
}

/// The history, newest first, as a log:
///
/// ```text
/// 2026-08-12 12:23 UTC · session 'refine-check' · after 4 messages · manual
///     updated project/worktree-preferences.md — added the lint table constraint
/// ```
///
/// An entry already rolled back ends its first line with `· (undone)`.
/// `diffs` holds, per stamp and file, a unified diff to print under its line.
pub fn history(entries: &[Entry], diffs: &BTreeMap<(String, String), String>) -> String {
    if entries.is_empty() {
        return "no memory changes yet\n".to_owned();
    }
    let mut out = String::new();
    for change in history_entries(entries, diffs, true) {
        let when = change.at.map_or_else(|| change.stamp.clone(), text::when);
        let undone = if change.undone { " · (undone)" } else { "" };
        out.push_str(&format!(
            "{when} · session '{}' · after {} messages · {}{undone}\n",
            change.session, change.messages, change.kind
        ));
        for f in &change.files {
            let line = match f.change.split_once(": ") {
                Some((verb @ ("created" | "updated" | "deleted"), sentence)) => {
                    format!("{verb} {} — {sentence}", f.file)
                }
                _ => format!("{} — {}", f.file, f.change),
            };
            out.push_str(&format!("    {line}\n"));
            if let Some(Some(diff)) = &f.diff {
                for d in diff.lines() {
                    out.push_str(&format!("      {d}\n"));
                }
            }
        }
    }
    out
}

/// The stamp an undo restores: the newest entry still standing. All
/// entries of that stamp (one per memory directory a refinement touched)
/// are restored together.
pub fn undo_target(entries: &[Entry]) -> Option<&str> {
    entries
        .iter()
        .filter(|e| !e.meta.undone)
        .map(|e| e.stamp.as_str())
        .max_by(|a, b| order(a).cmp(&order(b)))
}

/// One step of a restore.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Restore {
    /// Write this file back with these bytes.
    Put(String, Vec<u8>),
    /// Remove this file (the snapshot did not have it).
    Remove(String),
}

/// What makes a directory's files equal to a snapshot's, byte for byte,
/// by file name; files already equal are left alone.
pub fn restore_plan(
    current: &BTreeMap<String, Vec<u8>>,
    snapshot: &BTreeMap<String, Vec<u8>>,
) -> Vec<Restore> {
    let mut steps: Vec<Restore> = snapshot
        .iter()
        .filter(|(name, bytes)| current.get(*name) != Some(*bytes))
        .map(|(name, bytes)| Restore::Put(name.clone(), bytes.clone()))
        .collect();
    steps.extend(
        current
            .keys()
            .filter(|n| !snapshot.contains_key(*n))
            .map(|n| Restore::Remove(n.clone())),
    );
    steps
}

/// A unified diff of one file, `a` before and `b` after.
pub fn diff(name: &str, before: &str, after: &str) -> String {
    similar::TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(2)
        .header(&format!("a/{name}"), &format!("b/{name}"))
        .to_string()
}

#[cfg(test)]
mod tests;
