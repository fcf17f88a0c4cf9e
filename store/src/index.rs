//! The listing cache's file, `<sessions>/.index`: what [`crate::store`]
//! needs of every session file to list it or to see its name, with the size
//! and modification time the file was read at; and, so the common questions
//! (`--continue`, `--resume NAME`, a name in use, the listing of the most
//! recent sessions) are answered without reading it whole, the newest
//! entries of each working directory in its head and three sorted tables
//! that find an entry by file, name or parent with a binary search of
//! positioned reads (see [`probe`]).
//!
//! Binary, read by moving a cursor: ten thousand entries read in well under
//! a millisecond (the JSON cache this replaced took 7 ms to parse; a
//! tab-separated text, 3.3 ms). All numbers little-endian:
//!
//! ```text
//! "revolve listing cache\0" u32 version
//! u32 length, then that many bytes of JSON:
//!     {"journal":"epoch …","offset":812,"volatile":["…"],"cwds":["/src/app"],"entries":2,
//!      "dir":[8812,1764670500123456789],"headerless":["copy.jsonl"],"odd":[],
//!      "body":412,"tables":[2,1,0],"check":3735928559,
//!      "lists":[{"cwd":0,"newest":[[0,120,1234]],…}]}
//!     ("dir", when present: the sessions folder's inode and modification
//!     time (ns) read before its names were, see `Store::list`;
//!     "headerless": the files of entries without a row; "odd": the files
//!     whose session id is not their stem; "body": the entries' length in
//!     bytes; "tables": how many slots each table has; "check": the check
//!     of all the bytes after the head; "lists": per working directory,
//!     the newest entries of a few kinds as spans into the body (as the
//!     tables' slots), and counts, see [`Lists`])
//! the body, an entry per session file:
//!     str file, u64 len, i64 mtime (ns), u8 has a row (0/1), and then the row:
//!     u32 cwd (an index into cwds), u8 flags (1 named, 2 has a name,
//!     4 has continued, 8 the id is not the file's stem, 16 has a parent),
//!     i64 started (unix s), u64 turns, u64 tokens in, u64 of them cached,
//!     u64 tokens out, u64 cost (nano-dollars), then str name, str
//!     continued, str parent, str id, each when flagged
//! the tables, each a slot per entry that has the key, sorted by the key
//! (then by offset): by file name (every entry), by name, by parent;
//!     a slot: u32 offset of the entry in the body, u32 its length, u32
//!     the check of its bytes (rustc's FxHash, cut to 32 bits)
//! str: u32 length, then that many bytes of UTF-8
//! ```
//!
//! It is only a cache: anything this build does not read exactly (another
//! version, a torn or edited file) reads as no cache at all.

pub(crate) mod probe;

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

/// The cache's file name in the sessions folder.
pub const FILE: &str = ".index";
/// The JSON cache of earlier builds, removed when a cache is written.
pub(crate) const LEGACY_FILE: &str = ".index.json";
const MAGIC: &[u8] = b"revolve listing cache\0";
const VERSION: u32 = 9; // not policy: the cache format's version

/// What says a file is unchanged: its size and modification time (ns).
pub type Stamp = (u64, i64);

/// The cache: where the claims journal was when it was written (its epoch
/// and length) with the sessions that had lock files then, the working
/// directories rows point into, and an entry per session file.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Index<'a> {
    /// The claims journal's epoch when written ("" without a journal).
    pub journal: String,
    /// Its length then.
    pub offset: u64,
    /// The sessions with lock files then.
    pub volatile: Vec<String>,
    /// The working directories of the rows, each once; a row names its own by index.
    pub cwds: Vec<Cow<'a, str>>,
    /// Every session file of the sessions folder, as read at `stamp`.
    pub entries: Vec<Entry<'a>>,
    /// The sessions folder's stamp when its names were read for these
    /// entries; `None`: unknown (a cache of an earlier build), so the
    /// folder is read again.
    pub dir: Option<DirStamp>,
}

/// What says a folder's names are unchanged: its inode and modification
/// time (ns). Every file made, removed or renamed in it changes the time.
pub type DirStamp = (u64, i64);

impl Entry<'_> {
    /// The entry with its own copies of its strings.
    pub fn into_owned(self) -> Entry<'static> {
        let own = |c: Cow<str>| Cow::Owned(c.into_owned());
        Entry {
            file: own(self.file),
            stamp: self.stamp,
            row: self.row.map(|r| Row {
                cwd: r.cwd,
                id: own(r.id),
                name: r.name.map(own),
                named: r.named,
                started: r.started,
                turns: r.turns,
                continued: r.continued.map(own),
                spent: r.spent,
                parent: r.parent.map(own),
            }),
        }
    }
}

/// One session file, as it was read.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry<'a> {
    /// The file's name inside the sessions folder.
    pub file: Cow<'a, str>,
    /// Its size and modification time when read: a change means reading it again.
    pub stamp: Stamp,
    /// `None`: the file could not be read or has no header. A listing
    /// reads such a file again every time (see `Store::list`).
    pub row: Option<Row<'a>>,
}

/// What a listing shows of a session file; its last activity is the
/// file's modification time.
#[derive(Clone, Debug, PartialEq)]
pub struct Row<'a> {
    /// An index into [`Index::cwds`].
    pub cwd: usize,
    /// The session's id.
    pub id: Cow<'a, str>,
    /// Its name, when it has one.
    pub name: Option<Cow<'a, str>>,
    /// Whether the user gave the name (else it was generated and is unlisted).
    pub named: bool,
    /// Unix seconds.
    pub started: i64,
    /// User lines so far.
    pub turns: u64,
    /// The id of the session this one went on in after compaction, if any.
    pub continued: Option<Cow<'a, str>>,
    /// What the session spent, from its last totals.
    pub spent: revolve_core::summary::Spent,
    /// The session whose `task` call ran it, for a subagent's.
    pub parent: Option<Cow<'a, str>>,
}

/// The JSON head after the magic bytes and the version.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Head {
    /// [`Index::journal`].
    pub journal: String,
    /// [`Index::offset`].
    pub offset: u64,
    /// [`Index::volatile`].
    pub volatile: Vec<String>,
    /// [`Index::cwds`].
    pub cwds: Vec<String>,
    /// How many entries follow.
    pub entries: usize,
    /// [`Index::dir`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<DirStamp>,
    /// The files of the entries without a row.
    pub headerless: Vec<String>,
    /// The files whose row's id is not their stem.
    pub odd: Vec<String>,
    /// The body's length in bytes.
    pub body: u64,
    /// How many slots each [`Table`] has.
    pub tables: [u32; 3],
    /// The [`check`] of the body and the tables.
    pub check: u32,
    /// The newest entries of each working directory that has rows.
    pub lists: Vec<Lists>,
}

/// Where an entry is in the body: its offset and length, and the
/// [`check`] of its bytes (an entry read by position is verified).
pub type Span = (u32, u32, u32);

/// A cheap hash of `bytes` (rustc's), to tell a damaged cache from a
/// whole one; not a defence against a forged one (the user's own file).
pub(crate) fn check(bytes: &[u8]) -> u32 {
    use std::hash::Hasher;
    let mut hasher = rustc_hash::FxHasher::default();
    hasher.write(bytes);
    hasher.finish() as u32
}

/// The bytes of a table slot (offset, length, check).
pub(crate) const SLOT: usize = 12; // not policy: the format's slot size

/// The newest entries of one working directory, newest first (by last
/// activity, then id), each kind at most its cap long: a list shorter
/// than its cap holds every entry of its kind. A session of a subagent is
/// "own" when it is not one (it has no parent); "open" when no compaction
/// continued it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Lists {
    /// An index into the cwds.
    pub cwd: usize,
    /// Own sessions ([`NEWEST`] at most).
    pub newest: Vec<Span>,
    /// Own sessions that took a turn.
    pub turned: Vec<Span>,
    /// Own open sessions.
    pub open: Vec<Span>,
    /// Own open sessions that took a turn.
    pub open_turned: Vec<Span>,
    /// Named open sessions ([`NAMED_CAP`] at most).
    pub named: Vec<Span>,
    /// How many named open sessions there are.
    pub named_count: u64,
    /// How many unnamed open sessions there are.
    pub unnamed_count: u64,
}

/// The cap of each list but the named one: how many of its entries may
/// have changed since the cache was written before a question must read
/// the whole cache.
pub const NEWEST: usize = 16; // not policy: a cache's slack
/// The cap of the named list.
pub const NAMED_CAP: usize = revolve_core::policy::SESSIONS_SHOWN + NEWEST;

/// A sorted table of the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Table {
    /// By file name, every entry.
    Files = 0,
    /// By the row's name.
    Names = 1,
    /// By the row's parent.
    Parents = 2,
}

impl Table {
    /// The key an entry has in this table, if it has one.
    pub fn key<'e>(self, entry: &'e Entry) -> Option<&'e str> {
        match self {
            Table::Files => Some(&entry.file),
            Table::Names => entry.row.as_ref()?.name.as_deref(),
            Table::Parents => entry.row.as_ref()?.parent.as_deref(),
        }
    }
}

/// The order of the lists: last activity, then id, newest first.
pub(crate) fn newer(a: &Entry, b: &Entry) -> std::cmp::Ordering {
    b.stamp
        .1
        .cmp(&a.stamp.1)
        .then_with(|| id_of(b).cmp(id_of(a)))
}

fn id_of<'e>(e: &'e Entry) -> &'e str {
    e.row.as_ref().map_or("", |r| &r.id)
}

impl<'a> Index<'a> {
    /// The cache in `bytes`, or `None` when they are not exactly a cache
    /// this build writes.
    pub(crate) fn parse(bytes: &'a [u8]) -> Option<Index<'a>> {
        let (head, base) = parse_head(bytes)?;
        let mut at = Reader { bytes, at: base };
        let cwds: Vec<Cow<str>> = head.cwds.into_iter().map(Cow::Owned).collect();
        // At least 21 bytes an entry: a count the file cannot hold is a lie.
        if head.entries > bytes.len() / 21 {
            return None;
        }
        let mut entries = Vec::with_capacity(head.entries);
        for _ in 0..head.entries {
            entries.push(at.entry(cwds.len())?);
        }
        let slots: u64 = head.tables.iter().map(|n| u64::from(*n)).sum();
        let end = (base as u64)
            .checked_add(head.body)?
            .checked_add(slots * SLOT as u64)?;
        let whole = at.at as u64 == base as u64 + head.body && end == bytes.len() as u64;
        (whole && check(&bytes[base..]) == head.check).then_some(Index {
            journal: head.journal,
            offset: head.offset,
            volatile: head.volatile,
            cwds,
            entries,
            dir: head.dir,
        })
    }

    /// The cache as written to its file.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let mut body = Vec::with_capacity(self.entries.len() * 80);
        let spans: Vec<Span> = self
            .entries
            .iter()
            .map(|entry| {
                let at = body.len();
                entry.write(&mut body);
                (as_u32(at), as_u32(body.len() - at), check(&body[at..]))
            })
            .collect();
        let tables = [Table::Files, Table::Names, Table::Parents].map(|t| self.table(t, &spans));
        let of = |f: fn(&Entry) -> bool| -> Vec<String> {
            self.entries
                .iter()
                .filter(|e| f(e))
                .map(|e| e.file.to_string())
                .collect()
        };
        let head = Head {
            journal: self.journal.clone(),
            offset: self.offset,
            volatile: self.volatile.clone(),
            cwds: self.cwds.iter().map(|c| c.to_string()).collect(),
            entries: self.entries.len(),
            dir: self.dir,
            headerless: of(|e| e.row.is_none()),
            odd: of(|e| {
                e.row
                    .as_ref()
                    .is_some_and(|r| e.file.strip_suffix(".jsonl") != Some(&*r.id))
            }),
            body: body.len() as u64,
            tables: tables.each_ref().map(|t| as_u32(t.len())),
            check: 0,
            lists: self.lists(&spans),
        };
        let slots: usize = tables.iter().map(Vec::len).sum();
        let mut rest = body;
        rest.reserve(slots * SLOT);
        for (at, len, sum) in tables.iter().flatten() {
            for n in [at, len, sum] {
                rest.extend_from_slice(&n.to_le_bytes());
            }
        }
        let head = Head {
            check: check(&rest),
            ..head
        };
        // A struct of strings and numbers always serializes.
        let head = serde_json::to_vec(&head).unwrap_or_default();
        let mut out = Vec::with_capacity(64 + head.len() + rest.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        put_u32(&mut out, head.len());
        out.extend_from_slice(&head);
        out.extend_from_slice(&rest);
        out
    }

    /// The slots of `table`, sorted by key, then offset.
    fn table(&self, table: Table, spans: &[Span]) -> Vec<Span> {
        let mut keyed: Vec<(&str, Span)> = self
            .entries
            .iter()
            .zip(spans)
            .filter_map(|(e, span)| Some((table.key(e)?, *span)))
            .collect();
        keyed.sort_unstable();
        keyed.into_iter().map(|(_, span)| span).collect()
    }

    /// The [`Lists`] of every working directory that has rows.
    fn lists(&self, spans: &[Span]) -> Vec<Lists> {
        let mut by_cwd: Vec<Vec<usize>> = vec![Vec::new(); self.cwds.len()];
        for (i, e) in self.entries.iter().enumerate() {
            if let Some(row) = &e.row {
                if let Some(list) = by_cwd.get_mut(row.cwd) {
                    list.push(i);
                }
            }
        }
        let row = |i: &usize| self.entries[*i].row.as_ref();
        by_cwd
            .iter()
            .enumerate()
            .filter(|(_, rows)| !rows.is_empty())
            .map(|(cwd, rows)| {
                let top = |cap: usize, keep: &dyn Fn(&Row) -> bool| {
                    let mut kept: Vec<usize> = rows
                        .iter()
                        .copied()
                        .filter(|i| row(i).is_some_and(keep))
                        .collect();
                    let by = |a: &usize, b: &usize| newer(&self.entries[*a], &self.entries[*b]);
                    if kept.len() > cap {
                        kept.select_nth_unstable_by(cap, by);
                        kept.truncate(cap);
                    }
                    kept.sort_unstable_by(by);
                    kept.into_iter().map(|i| spans[i]).collect()
                };
                let count = |keep: &dyn Fn(&Row) -> bool| {
                    rows.iter().filter(|i| row(i).is_some_and(keep)).count() as u64
                };
                Lists {
                    cwd,
                    newest: top(NEWEST, &|r| r.parent.is_none()),
                    turned: top(NEWEST, &|r| r.parent.is_none() && r.turns > 0),
                    open: top(NEWEST, &|r| r.parent.is_none() && r.continued.is_none()),
                    open_turned: top(NEWEST, &|r| {
                        r.parent.is_none() && r.continued.is_none() && r.turns > 0
                    }),
                    named: top(NAMED_CAP, &|r| r.named && r.continued.is_none()),
                    named_count: count(&|r| r.named && r.continued.is_none()),
                    unnamed_count: count(&|r| !r.named && r.continued.is_none()),
                }
            })
            .collect()
    }

    /// The index of `cwd` in [`Index::cwds`], added when it is not there.
    pub(crate) fn intern(cwds: &mut Vec<Cow<'a, str>>, cwd: &str) -> usize {
        match cwds.iter().position(|c| c == cwd) {
            Some(i) => i,
            None => {
                cwds.push(Cow::Owned(cwd.to_owned()));
                cwds.len() - 1
            }
        }
    }
}

const NAMED: u8 = 1; // not policy: format flags
const HAS_NAME: u8 = 2; // not policy: format flags
const HAS_CONTINUED: u8 = 4; // not policy: format flags
const OWN_ID: u8 = 8; // not policy: format flags
const HAS_PARENT: u8 = 16; // not policy: format flags

impl Entry<'_> {
    fn write(&self, out: &mut Vec<u8>) {
        put_str(out, &self.file);
        out.extend_from_slice(&self.stamp.0.to_le_bytes());
        out.extend_from_slice(&self.stamp.1.to_le_bytes());
        let Some(row) = &self.row else {
            out.push(0);
            return;
        };
        out.push(1);
        put_u32(out, row.cwd);
        let stem = self.file.strip_suffix(".jsonl") == Some(&*row.id);
        let flag = |on: bool, bit: u8| if on { bit } else { 0 };
        out.push(
            flag(row.named, NAMED)
                | flag(row.name.is_some(), HAS_NAME)
                | flag(row.continued.is_some(), HAS_CONTINUED)
                | flag(!stem, OWN_ID)
                | flag(row.parent.is_some(), HAS_PARENT),
        );
        out.extend_from_slice(&row.started.to_le_bytes());
        out.extend_from_slice(&row.turns.to_le_bytes());
        let s = &row.spent;
        for n in [s.tokens_in, s.tokens_cached, s.tokens_out, s.cost_nano_usd] {
            out.extend_from_slice(&n.to_le_bytes());
        }
        for s in [
            row.name.as_deref(),
            row.continued.as_deref(),
            row.parent.as_deref(),
        ]
        .into_iter()
        .flatten()
        {
            put_str(out, s);
        }
        if !stem {
            put_str(out, &row.id);
        }
    }
}

/// A cursor over the cache's bytes; every read is bounds-checked.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let taken = self.bytes.get(self.at..self.at.checked_add(n)?)?;
        self.at += n;
        Some(taken)
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }

    fn u8(&mut self) -> Option<u8> {
        Some(self.array::<1>()?[0])
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.array()?))
    }

    fn i64(&mut self) -> Option<i64> {
        Some(i64::from_le_bytes(self.array()?))
    }

    fn str(&mut self) -> Option<&'a str> {
        let n = self.u32()? as usize;
        std::str::from_utf8(self.take(n)?).ok()
    }

    fn entry(&mut self, cwds: usize) -> Option<Entry<'a>> {
        let file = self.str()?;
        let stamp = (self.u64()?, self.i64()?);
        let row = match self.u8()? {
            0 => None,
            1 => {
                let cwd = self.u32()? as usize;
                let flags = self.u8()?;
                if cwd >= cwds
                    || flags & !(NAMED | HAS_NAME | HAS_CONTINUED | OWN_ID | HAS_PARENT) != 0
                {
                    return None;
                }
                let (started, turns) = (self.i64()?, self.u64()?);
                let spent = revolve_core::summary::Spent {
                    tokens_in: self.u64()?,
                    tokens_cached: self.u64()?,
                    tokens_out: self.u64()?,
                    cost_nano_usd: self.u64()?,
                };
                let mut optional = |bit: u8| match flags & bit {
                    0 => Some(None),
                    _ => self.str().map(|s| Some(Cow::Borrowed(s))),
                };
                let name = optional(HAS_NAME)?;
                let continued = optional(HAS_CONTINUED)?;
                let parent = optional(HAS_PARENT)?;
                let id = match optional(OWN_ID)? {
                    Some(id) => id,
                    None => Cow::Borrowed(file.strip_suffix(".jsonl")?),
                };
                Some(Row {
                    cwd,
                    id,
                    name,
                    named: flags & NAMED != 0,
                    started,
                    turns,
                    continued,
                    spent,
                    parent,
                })
            }
            _ => return None,
        };
        Some(Entry {
            file: Cow::Borrowed(file),
            stamp,
            row,
        })
    }
}

/// A length or index as the u32 the file holds (a cache entry is never
/// 4 GiB, and there are never four billion working directories).
fn put_u32(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(&u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes());
}

/// An offset or length in the body as the u32 a slot holds (a cache is
/// read whole only up to [`revolve_core::policy::INDEX_CAP`], 1 GiB).
fn as_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The head of a cache in `bytes` (which may be its start only) and where
/// its body begins, or `None` when they do not start a cache this build
/// writes.
pub(crate) fn parse_head(bytes: &[u8]) -> Option<(Head, usize)> {
    let mut at = Reader { bytes, at: 0 };
    if at.take(MAGIC.len())? != MAGIC || at.u32()? != VERSION {
        return None;
    }
    let len = at.u32()? as usize;
    let head: Head = serde_json::from_slice(at.take(len)?).ok()?;
    // Each working directory once: rows are matched by its index.
    let distinct: std::collections::HashSet<&String> = head.cwds.iter().collect();
    if distinct.len() != head.cwds.len() || head.lists.iter().any(|l| l.cwd >= head.cwds.len()) {
        return None;
    }
    Some((head, at.at))
}

/// How many bytes of a cache [`parse_head`] needs: the head's length is
/// in the bytes before it.
pub(crate) fn head_len(start: &[u8]) -> Option<usize> {
    let at = MAGIC.len() + 4;
    let len = u32::from_le_bytes(start.get(at..at + 4)?.try_into().ok()?);
    Some(at + 4 + len as usize)
}

/// One entry read alone from its bytes (a [`Span`] of the body), with
/// `cwds` working directories: `None` unless the bytes are exactly one.
pub(crate) fn entry_of(bytes: &[u8], cwds: usize) -> Option<Entry<'_>> {
    let mut at = Reader { bytes, at: 0 };
    let entry = at.entry(cwds)?;
    (at.at == bytes.len()).then_some(entry)
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_u32(out, s.len());
    out.extend_from_slice(s.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;
    use quickcheck::quickcheck;

    fn row(id: &str, name: Option<&str>, continued: Option<&str>) -> Row<'static> {
        Row {
            cwd: 0,
            id: Cow::Owned(id.to_owned()),
            name: name.map(|n| Cow::Owned(n.to_owned())),
            named: name.is_some(),
            started: 1_764_670_500,
            turns: 3,
            continued: continued.map(|c| Cow::Owned(c.to_owned())),
            spent: revolve_core::summary::Spent {
                tokens_in: 812,
                tokens_cached: 512,
                tokens_out: 40,
                cost_nano_usd: 1_558_500,
            },
            parent: (id == "child").then(|| Cow::Owned("parent".to_owned())),
        }
    }

    fn index(entries: Vec<Entry<'static>>) -> Index<'static> {
        Index {
            journal: "epoch 1-2-3".into(),
            offset: 812,
            volatile: vec!["a".into()],
            cwds: vec![Cow::Borrowed("/src/app"), Cow::Borrowed("/src/a\tb")],
            entries,
            dir: None,
        }
    }

    #[test]
    fn the_format_reads_as_documented() {
        let written = index(vec![
            Entry {
                file: "20261202-101500-a1b2c3.jsonl".into(),
                stamp: (4211, 1_764_670_500_123_456_789),
                row: Some(row("20261202-101500-a1b2c3", Some("amber"), None)),
            },
            Entry {
                file: "copy.jsonl".into(),
                stamp: (17, -1),
                row: None,
            },
        ]);
        let bytes = written.to_bytes();
        // By hand, as the module documents it: the body first.
        let str = |out: &mut Vec<u8>, s: &str| {
            out.extend((s.len() as u32).to_le_bytes());
            out.extend(s.as_bytes());
        };
        let mut body = Vec::new();
        str(&mut body, "20261202-101500-a1b2c3.jsonl");
        body.extend(4211u64.to_le_bytes());
        body.extend(1_764_670_500_123_456_789i64.to_le_bytes());
        body.extend([1]);
        body.extend(0u32.to_le_bytes());
        body.extend([NAMED | HAS_NAME]);
        body.extend(1_764_670_500i64.to_le_bytes());
        body.extend(3u64.to_le_bytes());
        for n in [812u64, 512, 40, 1_558_500] {
            body.extend(n.to_le_bytes());
        }
        str(&mut body, "amber");
        let first = body.len();
        str(&mut body, "copy.jsonl");
        body.extend(17u64.to_le_bytes());
        body.extend((-1i64).to_le_bytes());
        body.extend([0]);
        let amber = (0, first as u32, check(&body[..first]));
        let copy = (
            first as u32,
            (body.len() - first) as u32,
            check(&body[first..]),
        );
        // The tables: by file (both), by name (amber), by parent (none).
        let mut rest = body.clone();
        for (at, len, sum) in [amber, copy, amber] {
            for n in [at, len, sum] {
                rest.extend(n.to_le_bytes());
            }
        }
        let span = |(at, len, sum): Span| format!("[[{at},{len},{sum}]]");
        let a = span(amber);
        let head = format!(
            r#"{{"journal":"epoch 1-2-3","offset":812,"volatile":["a"],"cwds":["/src/app","/src/a\tb"],"entries":2,"headerless":["copy.jsonl"],"odd":[],"body":{},"tables":[2,1,0],"check":{},"lists":[{{"cwd":0,"newest":{a},"turned":{a},"open":{a},"open_turned":{a},"named":{a},"named_count":1,"unnamed_count":0}}]}}"#,
            body.len(),
            check(&rest),
        );
        let mut expected = b"revolve listing cache\0".to_vec();
        expected.extend(9u32.to_le_bytes());
        expected.extend((head.len() as u32).to_le_bytes());
        expected.extend(head.as_bytes());
        expected.extend(rest);
        assert_eq!(bytes, expected);
        let parsed = Index::parse(&bytes).unwrap();
        assert_eq!(parsed, written);
        // Strings are borrowed from the bytes, not copied.
        assert!(matches!(parsed.entries[0].file, Cow::Borrowed(_)));
        assert!(matches!(
            parsed.entries[0].row.as_ref().unwrap().id,
            Cow::Borrowed("20261202-101500-a1b2c3")
        ));
    }

    #[test]
    fn anything_but_a_whole_cache_reads_as_none() {
        let written = index(vec![Entry {
            file: "a.jsonl".into(),
            stamp: (1, 2),
            row: Some(row("other-id", Some("n"), Some("next"))),
        }]);
        let bytes = written.to_bytes();
        assert_eq!(Index::parse(&bytes).as_ref(), Some(&written));
        for cut in 0..bytes.len() {
            assert_eq!(Index::parse(&bytes[..cut]), None, "cut at {cut}");
        }
        let head_end = head_len(&bytes).unwrap();
        let flags = head_end + 4 + "a.jsonl".len() + 16 + 1 + 4;
        let changed = |at: usize, to: u8| {
            let mut b = bytes.clone();
            b[at] = to;
            b
        };
        for (what, bad) in [
            ("another version", changed(MAGIC.len(), 5)),
            ("a cwd out of range", changed(flags - 4, 2)),
            ("an unknown flag", changed(flags, 0xff)),
            ("a bad row tag", changed(flags - 5, 2)),
            ("a byte after the end", [bytes.clone(), vec![0]].concat()),
            ("not UTF-8", changed(head_end + 4, 0xff)),
        ] {
            assert_eq!(Index::parse(&bad), None, "{what}");
        }
        let mut twice = written;
        twice.cwds = vec![Cow::Borrowed("/src/app"), Cow::Borrowed("/src/app")];
        assert_eq!(Index::parse(&twice.to_bytes()), None, "a cwd twice");
        // The JSON cache of earlier builds is not one.
        assert_eq!(Index::parse(br#"{"version":4,"entries":[]}"#), None);
    }

    quickcheck! {
        fn no_bytes_make_it_panic(bytes: Vec<u8>, at: usize, flips: Vec<(usize, u8)>) -> bool {
            // Arbitrary bytes, and a real cache with arbitrary bytes changed.
            Index::parse(&bytes);
            let mut real = index(vec![Entry {
                file: "a.jsonl".into(),
                stamp: (1, 2),
                row: Some(row("a", Some("n"), None)),
            }])
            .to_bytes();
            for (i, b) in flips {
                let len = real.len();
                real[i % len] = b;
            }
            real.truncate(real.len() - at % 8);
            Index::parse(&real);
            true
        }
    }

    /// A row's strings and numbers: id, name, named, started, turns,
    /// continued.
    type Fields = (String, Option<String>, bool, i64, u64, Option<String>);

    quickcheck! {
        fn what_is_written_reads_back(rows: Vec<(String, u64, i64, Option<Fields>)>) -> bool {
            let entries = rows.into_iter().map(|(file, len, mtime, row)| Entry {
                file: Cow::Owned(file),
                stamp: (len, mtime),
                row: row.map(|(id, name, named, started, turns, continued)| Row {
                    cwd: usize::from(named),
                    id: Cow::Owned(id),
                    name: name.map(Cow::Owned),
                    named,
                    started,
                    turns,
                    continued: continued.map(Cow::Owned),
                    spent: revolve_core::summary::Spent {
                        tokens_in: turns.wrapping_mul(7),
                        tokens_cached: turns / 2,
                        tokens_out: turns.rotate_left(3),
                        cost_nano_usd: turns ^ 0x55,
                    },
                    parent: (turns % 3 == 0).then(|| Cow::Owned(format!("p{turns}"))),
                }),
            }).collect();
            let written = index(entries);
            let bytes = written.to_bytes();
            Index::parse(&bytes).as_ref() == Some(&written)
        }
    }
}
