//! File edits: what `edit_file` and `write_file` make of a file, the diff
//! the user approves, and what a rewind puts back.
//!
//! # An edit, step by step
//!
//! 1. The session asks the shell to open the file ([`crate::Command::Open`]):
//!    the shell confines the path as `read_file` does and answers with its
//!    canonical path, its bytes, their hash, its mode, its hard links, and
//!    whether it is outside the working tree or in revolve's state folder.
//! 2. Where it may be written is decided first: never in revolve's state
//!    folder (session logs, spills, the content store); outside the working
//!    tree (a read grant reached it) only with the user's yes at a terminal
//!    to a question naming it as outside, whatever `--allow-edits` or an
//!    earlier "always" says. Then core checks that this session read the file (or wrote it) and that
//!    it did not change on disk since ([`State::files`] holds the hash it
//!    last saw), computes the new content from the model's text about the
//!    file as it was shown it ([`View`]: keys as `[key]`, bytes that are
//!    not UTF-8 as U+FFFD; every byte the model did not ask to change is
//!    kept, see [`redact`] for the rules) and its diff ([`diff_bytes`]:
//!    of the bytes, shown as the model sees them, its lines counted whole).
//! 3. Unless edits are allowed already (`--allow-edits`, or the user's
//!    "always"), the user is asked; without a terminal the edit is refused.
//!    An answer the user gave is logged as `approved`.
//! 4. The shell stores the prior and the new content, content-addressed,
//!    under the state directory ([`crate::Command::Stage`]); then core logs
//!    the `edit` record and only then asks for the write
//!    ([`crate::Command::Write`]), whose outcome is logged as `written`.
//!    The write carries the hash core expects the file to hold: the shell
//!    checks it and replaces the file as one step under a lock, so a file
//!    another session wrote meanwhile is refused, not overwritten. A file
//!    with several hard links is replaced at its one name, and the result
//!    says the other names keep the old content.
//!    A crash between the two leaves an `edit` without `written`: the next
//!    resume looks at the file and logs what it found.
//!
//! # Rewind
//!
//! [`plan`] takes back the last N turns: every file their edits changed is
//! put back to what it held before the first of them (a file one of them
//! created is removed: revolve never deletes a file it did not create),
//! and, unless only files are rewound, the turns leave the conversation.
//! The turns stay in the log; a `rewound` record says what was taken back,
//! and [`plan_undo`] takes a rewind back in turn. A file that changed on
//! disk since revolve last wrote it is somebody else's work: the rewind is
//! refused, naming it, unless forced.
//!
//! What a rewind may claim is decided here too, from what the shell finds
//! on disk after restoring ([`settle`]): a file is restored only when it
//! holds what the plan put back, and the turns that changed a file that
//! was not restored stay in the conversation. The plan is logged first
//! (`rewinding`), the outcome after (`rewound`), so a crash in between is
//! settled at the next resume the same way.
//!
//! [`State::files`]: crate::State::files

use std::collections::BTreeMap;

use serde::Serialize;
use time::OffsetDateTime;

use crate::record::{Restore, Rewound};
use crate::state::State;

pub mod redact;
pub use redact::{Keys, View, KEY_SHOWN};

/// The longest diff an `edit` record keeps, in bytes; a longer one is cut
/// (the content store still holds both versions whole).
pub(crate) const DIFF_CAP: usize = 256 * 1024;

pub use crate::record::Answer;
pub use crate::state::{FileEdit, RewindEntry};

/// `text` with `old` replaced by `new`: the one match, or every match with
/// `all`. A file whose lines end in CRLF is matched with the model's LF
/// text turned into CRLF, so its line endings stay. The error says how
/// many matches there are and on which lines. (An edit of a file goes
/// through [`View::replace`], which keeps the bytes the view does not
/// show.)
pub fn replace(text: &str, old: &str, new: &str, all: bool, shown: &str) -> Result<String, String> {
    let (starts, old, new) = matches(text, old, new, all, shown)?;
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for start in starts {
        out.push_str(&text[last..start]);
        out.push_str(&new);
        last = start + old.len();
    }
    out.push_str(&text[last..]);
    Ok(out)
}

/// Where `old` is replaced in `text` (see [`replace`]): the starts of the
/// matches, and `old` and `new` as matched (CRLF for a CRLF file).
pub(crate) fn matches(
    text: &str,
    old: &str,
    new: &str,
    all: bool,
    shown: &str,
) -> Result<(Vec<usize>, String, String), String> {
    if old.is_empty() {
        return Err(
            "error: edit_file: old_string is empty; to write a whole file use write_file".into(),
        );
    }
    let crlf = crlf(text.as_bytes());
    let (old, new) = if crlf && !old.contains('\r') && old.contains('\n') && !text.contains(old) {
        (old.replace('\n', "\r\n"), to_crlf(new))
    } else if crlf && !new.contains('\r') {
        (old.to_owned(), to_crlf(new))
    } else {
        (old.to_owned(), new.to_owned())
    };
    let starts: Vec<usize> = text.match_indices(old.as_str()).map(|(i, _)| i).collect();
    match starts.len() {
        0 => Err(format!(
            "error: edit_file: old_string is not in {shown}; read the file again and copy the \
             text exactly, whitespace included"
        )),
        1 => Ok((starts, old, new)),
        _ if all => Ok((starts, old, new)),
        n => {
            let lines: Vec<String> = starts
                .iter()
                .take(20)
                .map(|&i| (text[..i].matches('\n').count() + 1).to_string())
                .collect();
            let more = if n > 20 { ", …" } else { "" };
            Err(format!(
                "error: edit_file: old_string matches {n} times in {shown} (lines {}{more}); \
                 include more of the surrounding text so it matches once, or pass \
                 replace_all: true",
                lines.join(", ")
            ))
        }
    }
}

/// Whether a file's lines end in CRLF: most of its line ends do.
pub fn crlf(bytes: &[u8]) -> bool {
    let lf = bytes.iter().filter(|&&b| b == b'\n').count();
    let crlf = bytes.windows(2).filter(|w| w == b"\r\n").count();
    lf > 0 && crlf * 2 > lf
}

fn to_crlf(text: &str) -> String {
    if text.contains('\r') {
        return text.to_owned();
    }
    text.replace('\n', "\r\n")
}

/// The content `write_file` writes over `before`: a file whose lines end
/// in CRLF keeps them when the model wrote LF only.
pub fn keep_endings(before: Option<&[u8]>, content: &str) -> String {
    match before {
        Some(b) if crlf(b) => to_crlf(content),
        _ => content.to_owned(),
    }
}

/// The most lines the part of a change that differs may span, before and
/// after together, for a line-by-line diff; past it, that part is shown
/// removed whole, then added whole. Myers' diff takes time quadratic in
/// the lines that differ (a 3 MB file with every line changed took 44 s),
/// and a diff that long is cut at [`DIFF_CAP`] anyway.
pub const DIFF_LINES: usize = 20_000;

/// Lines of context around each change.
const CONTEXT: usize = 3;

/// The diff of an edit: its text, cut at [`DIFF_CAP`], and the lines it
/// adds and removes, counted from the whole change (not from the cut
/// text).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Diff {
    /// The unified diff, cut at [`DIFF_CAP`].
    pub text: String,
    /// Lines the whole change adds.
    pub added: usize,
    /// Lines the whole change removes.
    pub removed: usize,
}

/// The unified diff from `before` to `after` (3 lines of context), headed
/// `a/PATH` and `b/PATH` (`/dev/null` for a file that did not exist); cut
/// at [`DIFF_CAP`] bytes with a last line saying so. The lines both share
/// at the start and at the end are set aside first, so a small change of
/// a big file costs little; a change spanning more than [`DIFF_LINES`]
/// lines is shown as one block removed and added. (Text without keys: see
/// [`diff_bytes`].)
pub fn diff(shown: &str, before: Option<&str>, after: &str) -> String {
    diff_within(shown, before, after, DIFF_LINES)
}

/// [`diff`], line by line up to `limit` lines.
fn diff_within(shown: &str, before: Option<&str>, after: &str, limit: usize) -> String {
    let before = before.map(str::as_bytes);
    diff_bytes_within(shown, before, after.as_bytes(), &Keys::default(), limit).text
}

/// The diff of an edit from `before` to `after`, as [`diff`] writes it,
/// of their bytes: a line is changed when a byte of it is, though it may
/// look the same decoded. Each line is shown as the model sees the file
/// ([`Keys::show`]: undecodable bytes as U+FFFD, `keys` as `[key]`).
pub fn diff_bytes(shown: &str, before: Option<&[u8]>, after: &[u8], keys: &Keys) -> Diff {
    diff_bytes_within(shown, before, after, keys, DIFF_LINES)
}

fn diff_bytes_within(
    shown: &str,
    before: Option<&[u8]>,
    after: &[u8],
    keys: &Keys,
    limit: usize,
) -> Diff {
    let old_name = if before.is_some() {
        format!("a/{shown}")
    } else {
        "/dev/null".to_owned()
    };
    let old = before.unwrap_or(b"");
    if old == after {
        return Diff::default();
    }
    let old_lines: Vec<&[u8]> = line_ranges(old).into_iter().map(|r| &old[r]).collect();
    let new_lines: Vec<&[u8]> = line_ranges(after).into_iter().map(|r| &after[r]).collect();
    let ops = line_ops(&old_lines, &new_lines, limit);
    let mut out = Diff::default();
    for op in &ops {
        let (tag, o, n) = op.as_tag_tuple();
        if tag != similar::DiffTag::Equal {
            out.removed += o.len();
            out.added += n.len();
        }
    }
    let hunks = similar::group_diff_ops(ops, CONTEXT);
    if hunks.is_empty() {
        return out;
    }
    // Written whole up to the cap; past it, only measured.
    let mut text = Capped::default();
    text.push(&format!("--- {old_name}\n+++ b/{shown}\n"));
    for hunk in hunks {
        let (first, last) = (hunk[0], hunk[hunk.len() - 1]);
        let olds = first.old_range().start..last.old_range().end;
        let news = first.new_range().start..last.new_range().end;
        text.push(&format!(
            "@@ -{} +{} @@\n",
            range(olds.start, olds.len()),
            range(news.start, news.len())
        ));
        for op in hunk {
            let (tag, o, n) = op.as_tag_tuple();
            let parts: [(char, &[&[u8]]); 2] = match tag {
                similar::DiffTag::Equal => [(' ', &old_lines[o]), ('+', &[])],
                _ => [('-', &old_lines[o]), ('+', &new_lines[n])],
            };
            for (mark, lines) in parts {
                for line in lines {
                    let line = keys.show(line);
                    text.push_line(mark, &line);
                }
            }
        }
    }
    out.text = text.finish();
    out
}

/// A diff's text, kept up to [`DIFF_CAP`] and cut there on a line end,
/// with the length of what was cut.
#[derive(Default)]
struct Capped {
    text: String,
    /// Bytes past the cap, not kept.
    more: usize,
}

impl Capped {
    fn push(&mut self, piece: &str) {
        if self.more > 0 || self.text.len() + piece.len() > DIFF_CAP + 1 {
            self.more += piece.len();
        } else {
            self.text.push_str(piece);
        }
    }

    /// One line of a hunk: its mark, the line, and a note when it has no
    /// line end (as `similar` writes it).
    fn push_line(&mut self, mark: char, line: &str) {
        let mut buf = [0; 4];
        self.push(mark.encode_utf8(&mut buf));
        self.push(line);
        if !line.ends_with(['\r', '\n']) {
            self.push("\n\\ No newline at end of file\n");
        }
    }

    fn finish(self) -> String {
        let Capped { text, more } = self;
        if more == 0 && text.len() <= DIFF_CAP {
            return text;
        }
        let total = text.len() + more;
        let mut end = DIFF_CAP.min(text.len());
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        let end = text[..end].rfind('\n').map_or(end, |i| i + 1);
        format!(
            "{}[… diff cut: {} more bytes; both versions are in the content store]\n",
            &text[..end],
            total - end
        )
    }
}

/// The diff's operations on lines: the lines both share at the start and
/// at the end set aside, the rest line by line (Myers, as `similar` does
/// it) when it spans at most `limit` lines, else one block replaced.
pub(crate) fn line_ops(old: &[&[u8]], new: &[&[u8]], limit: usize) -> Vec<similar::DiffOp> {
    use similar::DiffOp;
    let start = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let room = old.len().min(new.len()) - start;
    let end = old[old.len() - room..]
        .iter()
        .rev()
        .zip(new[new.len() - room..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let (old_mid, new_mid) = (&old[start..old.len() - end], &new[start..new.len() - end]);
    let mut ops = Vec::new();
    if start > 0 {
        ops.push(DiffOp::Equal {
            old_index: 0,
            new_index: 0,
            len: start,
        });
    }
    if old_mid.len() + new_mid.len() <= limit {
        let shift = |op: DiffOp| match op {
            DiffOp::Equal {
                old_index,
                new_index,
                len,
            } => DiffOp::Equal {
                old_index: old_index + start,
                new_index: new_index + start,
                len,
            },
            DiffOp::Delete {
                old_index,
                old_len,
                new_index,
            } => DiffOp::Delete {
                old_index: old_index + start,
                old_len,
                new_index: new_index + start,
            },
            DiffOp::Insert {
                old_index,
                new_index,
                new_len,
            } => DiffOp::Insert {
                old_index: old_index + start,
                new_index: new_index + start,
                new_len,
            },
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => DiffOp::Replace {
                old_index: old_index + start,
                old_len,
                new_index: new_index + start,
                new_len,
            },
        };
        ops.extend(
            similar::capture_diff_slices(similar::Algorithm::Myers, old_mid, new_mid)
                .into_iter()
                .map(shift),
        );
    } else {
        ops.push(match (old_mid.len(), new_mid.len()) {
            (old_len, 0) => DiffOp::Delete {
                old_index: start,
                old_len,
                new_index: start,
            },
            (0, new_len) => DiffOp::Insert {
                old_index: start,
                new_index: start,
                new_len,
            },
            (old_len, new_len) => DiffOp::Replace {
                old_index: start,
                old_len,
                new_index: start,
                new_len,
            },
        });
    }
    if end > 0 {
        ops.push(DiffOp::Equal {
            old_index: old.len() - end,
            new_index: new.len() - end,
            len: end,
        });
    }
    ops
}

/// Where the lines of `text` are, as the diff counts them (a line ends at
/// `\n`, `\r\n` or a lone `\r`; the last may have no end).
pub(crate) fn line_ranges(text: &[u8]) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b'\n' => {
                out.push(start..i + 1);
                start = i + 1;
            }
            b'\r' if text.get(i + 1) == Some(&b'\n') => {
                i += 1;
                out.push(start..i + 1);
                start = i + 1;
            }
            b'\r' => {
                out.push(start..i + 1);
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    if start < text.len() {
        out.push(start..text.len());
    }
    out
}

/// The lines of `text` as the diff counts them.
#[cfg(test)]
fn lines_of(text: &str) -> Vec<&str> {
    line_ranges(text.as_bytes())
        .into_iter()
        .map(|r| &text[r])
        .collect()
}

/// A hunk header's range of `len` lines from line `start` (0-based), as
/// unified diffs write it.
fn range(start: usize, len: usize) -> String {
    match len {
        0 => format!("{start},0"),
        1 => format!("{}", start + 1),
        _ => format!("{},{len}", start + 1),
    }
}

/// Lines added and removed in a unified diff. Only the `---`/`+++` file
/// headers before the first hunk are left out: a removed line `-- x` is
/// `--- x` in a hunk and counts.
pub fn stat(diff: &str) -> (usize, usize) {
    let mut added = 0;
    let mut removed = 0;
    let mut in_hunk = false;
    for line in diff.lines() {
        in_hunk |= line.starts_with("@@");
        if !in_hunk {
            continue;
        }
        if line.starts_with('+') {
            added += 1;
        } else if line.starts_with('-') {
            removed += 1;
        }
    }
    (added, removed)
}

/// The lines an [`Edit`](crate::record::Edit) adds and removes: as
/// counted when it was logged, else (an older log, a shell command's
/// change) from its diff.
pub fn lines(e: &crate::record::Edit) -> (usize, usize) {
    match (e.added, e.removed) {
        (Some(added), Some(removed)) => (added, removed),
        _ => stat(&e.diff),
    }
}

/// A change a `shell` command made to a file of the git repository it ran
/// in, as the shell found it (both contents stored): logged as an `edit`
/// by `shell`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// Canonical and absolute.
    pub path: String,
    /// The hash before; `None`: the file did not exist.
    pub before: Option<String>,
    /// The hash after; `None`: the command removed it.
    pub after: Option<String>,
    /// Its lines counted whole (none for a binary file).
    pub diff: Diff,
}

/// What is rewound.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Scope {
    /// Files and conversation.
    #[default]
    Both,
    /// The files only: the conversation goes on with the turns in it.
    FilesOnly,
    /// The conversation only: files stay as they are.
    ConversationOnly,
}

/// One turn of the conversation as a rewind sees it (`--list`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TurnEdits {
    /// 1 for the last turn, 2 for the one before, …: what `--turns N`
    /// counts.
    pub back: usize,
    /// The user's message, first line.
    pub said: String,
    /// The files the turn changed (not rewound), each with what changed it.
    pub files: Vec<String>,
}

/// The turns a rewind can reach, newest first, with the files each
/// changed.
pub fn turns(state: &State) -> Vec<TurnEdits> {
    let starts = turn_starts(state);
    let mut out = Vec::new();
    for (k, &start) in starts.iter().enumerate().rev() {
        let end = starts.get(k + 1).copied().unwrap_or(usize::MAX);
        let mut files: Vec<String> = Vec::new();
        for e in state
            .edits
            .iter()
            .filter(|e| !e.rewound && e.turn >= start && e.turn < end)
        {
            let line = format!("{} ({})", e.path, e.by);
            if !files.contains(&line) {
                files.push(line);
            }
        }
        let said = state.messages[start]
            .content
            .lines()
            .next()
            .unwrap_or("")
            .to_owned();
        out.push(TurnEdits {
            back: starts.len() - k,
            said,
            files,
        });
    }
    out
}

/// Where each turn a rewind can reach begins: the turns of the history
/// ([`crate::compact::turns`], which leaves a compaction's notes out).
fn turn_starts(state: &State) -> Vec<usize> {
    crate::compact::turns(&state.messages)
        .into_iter()
        .map(|turn| turn.start)
        .collect()
}

/// The `rewound` record that takes back the last `n` turns, given what
/// each file the session changed holds now (`on_disk`: path to hash, `None`
/// for a file that is not there). Refused, with the reason, when there is
/// nothing to rewind or, unless `force`, when a file changed on disk since
/// revolve last wrote it.
pub fn plan(
    state: &State,
    n: usize,
    scope: Scope,
    force: bool,
    on_disk: &BTreeMap<String, Option<String>>,
    now: OffsetDateTime,
) -> Result<Rewound, String> {
    let starts = turn_starts(state);
    if n == 0 {
        return Err("rewind: --turns must be at least 1".into());
    }
    if starts.is_empty() {
        return Err("rewind: there is no turn to rewind (since the last compaction)".into());
    }
    let n = n.min(starts.len());
    let from = starts[starts.len() - n];
    let mut files: Vec<Restore> = Vec::new();
    if scope != Scope::ConversationOnly {
        // Each file goes back to what it held before the first of these
        // edits; it must hold what revolve last left there (the last of
        // them, or a later turn's edit a conversation-only rewind kept).
        let mut first: BTreeMap<&str, Option<String>> = BTreeMap::new();
        for e in state.edits.iter().filter(|e| !e.rewound && e.turn >= from) {
            first.entry(&e.path).or_insert_with(|| e.before.clone());
        }
        for (path, to) in first {
            let expected = state.wrote.get(path).cloned().flatten();
            let now_there = on_disk.get(path).cloned().flatten();
            if now_there != expected && !force {
                return Err(format!(
                    "rewind: {path} changed on disk since revolve last wrote it; somebody \
                     else's work is not overwritten (pass --force to rewind it anyway)"
                ));
            }
            if now_there != to {
                files.push(Restore {
                    path: path.to_owned(),
                    from: now_there,
                    to,
                });
            }
        }
    }
    let conversation = scope != Scope::FilesOnly;
    if !conversation && files.is_empty() {
        return Err(format!(
            "rewind: the last {n} turn(s) changed no file that is not rewound already"
        ));
    }
    Ok(Rewound {
        at: now,
        turns: n as u64,
        from: from as u64,
        conversation,
        files,
        undoes: None,
        forced: force,
    })
}

/// The `rewound` record that takes back the newest rewind still standing:
/// its files go back to what they held before it, its turns come back
/// into the conversation. Refused when there is none, when turns were
/// taken since its turns left the conversation, or (unless `force`) when a
/// file it restored changed on disk since.
pub(crate) fn plan_undo(
    state: &State,
    force: bool,
    on_disk: &BTreeMap<String, Option<String>>,
    now: OffsetDateTime,
) -> Result<Rewound, String> {
    let Some((k, entry)) = state
        .rewinds
        .iter()
        .enumerate()
        .rev()
        .find(|(_, r)| !r.undone && r.record.undoes.is_none())
    else {
        return Err("rewind: there is no rewind to take back".into());
    };
    let r = &entry.record;
    if r.conversation && state.messages.len() as u64 != r.from {
        return Err(
            "rewind: turns were taken after that rewind; rewind them first to take it back".into(),
        );
    }
    let mut files = Vec::new();
    for f in &r.files {
        let now_there = on_disk.get(&f.path).cloned().flatten();
        if now_there != f.to && !force {
            return Err(format!(
                "rewind: {} changed on disk since the rewind wrote it; somebody else's work is \
                 not overwritten (pass --force to take the rewind back anyway)",
                f.path
            ));
        }
        files.push(Restore {
            path: f.path.clone(),
            from: now_there,
            to: f.from.clone(),
        });
    }
    Ok(Rewound {
        at: now,
        turns: r.turns,
        from: r.from,
        conversation: r.conversation,
        files,
        undoes: Some(k as u64),
        forced: force,
    })
}

/// The `rewound` record a planned rewind (`planned`, logged as
/// `rewinding`) may claim, given what each of its files holds now
/// (`on_disk`, after the shell restored them or at the resume after a
/// crash) and why a restore failed (`errors`, by path): only the files
/// that hold what the plan put back, and only the turns none of whose
/// edits touched a file that was not restored. The second value names
/// each file not restored, with why.
pub fn settle(
    state: &State,
    planned: &Rewound,
    on_disk: &BTreeMap<String, Option<String>>,
    errors: &BTreeMap<String, String>,
    now: OffsetDateTime,
) -> (Rewound, Vec<(String, String)>) {
    let mut r = planned.clone();
    r.at = now;
    r.files.clear();
    let mut failed = Vec::new();
    for f in &planned.files {
        let now_there = on_disk.get(&f.path).cloned().flatten();
        if on_disk.contains_key(&f.path) && now_there == f.to {
            r.files.push(f.clone());
            continue;
        }
        let why = match errors.get(&f.path) {
            Some(e) => e.clone(),
            None if now_there == f.from => "not restored: it still holds what it held before \
                 the rewind"
                .to_owned(),
            None => "not restored: it holds neither what it held before the rewind nor what \
                 the rewind puts back"
                .to_owned(),
        };
        failed.push((f.path.clone(), why));
    }
    if failed.is_empty() {
        return (r, failed);
    }
    if r.undoes.is_some() {
        // Part of a rewind taken back: the files that went back are
        // logged as a rewind of files only, and the rewind stays standing.
        r.undoes = None;
        r.conversation = false;
        r.turns = 0;
        r.from = state.messages.len() as u64;
        return (r, failed);
    }
    // Turns after the last one that changed a file not restored may still
    // leave; that one and the ones before it stay.
    let from = usize::try_from(planned.from).unwrap_or(usize::MAX);
    let last_failed = state
        .edits
        .iter()
        .filter(|e| !e.rewound && e.turn >= from)
        .filter(|e| failed.iter().any(|(p, _)| *p == e.path))
        .map(|e| e.turn)
        .max();
    let starts = turn_starts(state);
    let kept_to = last_failed.unwrap_or(usize::MAX);
    match starts.iter().position(|&s| s > kept_to && s >= from) {
        Some(k) if last_failed.is_some() => {
            r.from = starts[k] as u64;
            r.turns = (starts.len() - k) as u64;
        }
        _ => {
            r.from = state.messages.len() as u64;
            r.turns = 0;
            r.conversation = false;
        }
    }
    (r, failed)
}

/// What a rewind could not do, for the user: each file not restored and
/// why, and what stayed in the conversation.
pub(crate) fn describe_failed(
    planned: &Rewound,
    done: &Rewound,
    failed: &[(String, String)],
) -> String {
    let mut out = format!("rewind: {} file(s) not restored:", failed.len());
    for (path, why) in failed {
        out.push_str(&format!("\n  {path}: {why}"));
    }
    if planned.undoes.is_some() {
        out.push_str(
            "\n  the rewind is not taken back: its turns stay out of the conversation, and the \
             files that went back are logged as such",
        );
    } else if planned.conversation {
        let kept = planned.turns.saturating_sub(done.turns);
        out.push_str(&format!(
            "\n  {kept} of the {} turn(s) stay in the conversation: they changed a file that \
             was not restored",
            planned.turns
        ));
    }
    out
}

/// Every content hash a record names (an edit's before and after, a
/// rewind's contents): what the content store must hold for the session
/// to be rewound (`replay --check` looks).
pub fn hashes(record: &crate::Record) -> Vec<&str> {
    match record {
        crate::Record::Edit(e) => e
            .before
            .iter()
            .chain(&e.after)
            .map(String::as_str)
            .collect(),
        crate::Record::Rewound(r) | crate::Record::Rewinding(r) => r
            .files
            .iter()
            .flat_map(|f| f.from.iter().chain(&f.to))
            .map(String::as_str)
            .collect(),
        _ => Vec::new(),
    }
}

/// The paths a rewind may have to look at: every file this session's edits
/// and rewinds touched.
pub fn tracked_paths(state: &State) -> Vec<String> {
    // Every file an edit or a rewind wrote, each once: what `wrote` holds.
    state.wrote.keys().cloned().collect()
}

/// What a rewind did, in one line per file for the user.
pub fn describe(r: &Rewound) -> String {
    let what = match (r.undoes.is_some(), r.conversation) {
        (false, true) => format!("rewound {} turn(s)", r.turns),
        (false, false) => format!("rewound the files of {} turn(s)", r.turns),
        (true, true) => format!("took back the rewind of {} turn(s)", r.turns),
        (true, false) => format!("took back the file rewind of {} turn(s)", r.turns),
    };
    let mut out = what;
    if r.files.is_empty() {
        out.push_str("; no file to restore");
    }
    for f in &r.files {
        let line = match (&f.from, &f.to) {
            (_, None) => format!("removed {} (revolve created it)", f.path),
            (None, Some(_)) => format!("recreated {}", f.path),
            (Some(_), Some(_)) => format!("restored {}", f.path),
        };
        out.push_str("\n  ");
        out.push_str(&line);
    }
    out
}

#[cfg(test)]
mod tests;
