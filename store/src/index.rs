//! The listing cache's file, `<sessions>/.index`: what [`crate::store`]
//! needs of every session file to list it or to see its name, with the size
//! and modification time the file was read at.
//!
//! Binary, read by moving a cursor: ten thousand entries read in well under
//! a millisecond (the JSON cache this replaced took 7 ms to parse; a
//! tab-separated text, 3.3 ms). All numbers little-endian:
//!
//! ```text
//! "revolve listing cache\0" u32 version
//! u32 length, then that many bytes of JSON:
//!     {"journal":"epoch …","offset":812,"volatile":["…"],"cwds":["/src/app"],"entries":2,
//!      "dir":[8812,1764670500123456789]}
//!     ("dir", when present: the sessions folder's inode and modification
//!     time (ns) read before its names were, see `Store::list`)
//! an entry per session file:
//!     str file, u64 len, i64 mtime (ns), u8 has a row (0/1), and then the row:
//!     u32 cwd (an index into cwds), u8 flags (1 named, 2 has a name,
//!     4 has continued, 8 the id is not the file's stem, 16 has a parent),
//!     i64 started (unix s), u64 turns, u64 tokens in, u64 of them cached,
//!     u64 tokens out, u64 cost (nano-dollars), then str name, str
//!     continued, str parent, str id, each when flagged
//! str: u32 length, then that many bytes of UTF-8
//! ```
//!
//! It is only a cache: anything this build does not read exactly (another
//! version, a torn or edited file) reads as no cache at all.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

/// The cache's file name in the sessions folder.
pub const FILE: &str = ".index";
/// The JSON cache of earlier builds, removed when a cache is written.
pub(crate) const LEGACY_FILE: &str = ".index.json";
const MAGIC: &[u8] = b"revolve listing cache\0";
const VERSION: u32 = 8; // not policy: the cache format's version

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

/// One session file, as it was read.
#[derive(Debug, PartialEq)]
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
#[derive(Debug, PartialEq)]
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
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Head<'h> {
    journal: Cow<'h, str>,
    offset: u64,
    volatile: Vec<String>,
    cwds: Vec<String>,
    /// How many entries follow.
    entries: usize,
    /// [`Index::dir`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    dir: Option<DirStamp>,
}

impl<'a> Index<'a> {
    /// The cache in `bytes`, or `None` when they are not exactly a cache
    /// this build writes.
    pub(crate) fn parse(bytes: &'a [u8]) -> Option<Index<'a>> {
        let mut at = Reader { bytes, at: 0 };
        if at.take(MAGIC.len())? != MAGIC || at.u32()? != VERSION {
            return None;
        }
        let head = at.u32()? as usize;
        let head: Head = serde_json::from_slice(at.take(head)?).ok()?;
        // Each working directory once: rows are matched by its index.
        let distinct: std::collections::HashSet<&String> = head.cwds.iter().collect();
        if distinct.len() != head.cwds.len() {
            return None;
        }
        let cwds: Vec<Cow<str>> = head.cwds.into_iter().map(Cow::Owned).collect();
        // At least 21 bytes an entry: a count the file cannot hold is a lie.
        if head.entries > bytes.len() / 21 {
            return None;
        }
        let mut entries = Vec::with_capacity(head.entries);
        for _ in 0..head.entries {
            entries.push(at.entry(cwds.len())?);
        }
        (at.at == bytes.len()).then(|| Index {
            journal: head.journal.into_owned(),
            offset: head.offset,
            volatile: head.volatile,
            cwds,
            entries,
            dir: head.dir,
        })
    }

    /// The cache as written to its file.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let head = Head {
            journal: Cow::Borrowed(&self.journal),
            offset: self.offset,
            volatile: self.volatile.clone(),
            cwds: self.cwds.iter().map(|c| c.to_string()).collect(),
            entries: self.entries.len(),
            dir: self.dir,
        };
        // A struct of strings and numbers always serializes.
        let head = serde_json::to_vec(&head).unwrap_or_default();
        let mut out = Vec::with_capacity(64 + head.len() + self.entries.len() * 80);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        put_u32(&mut out, head.len());
        out.extend_from_slice(&head);
        for entry in &self.entries {
            entry.write(&mut out);
        }
        out
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
        // By hand, as the module documents it.
        let head = br#"{"journal":"epoch 1-2-3","offset":812,"volatile":["a"],"cwds":["/src/app","/src/a\tb"],"entries":2}"#;
        let mut expected = b"revolve listing cache\0".to_vec();
        expected.extend(8u32.to_le_bytes());
        expected.extend((head.len() as u32).to_le_bytes());
        expected.extend(head);
        let str = |out: &mut Vec<u8>, s: &str| {
            out.extend((s.len() as u32).to_le_bytes());
            out.extend(s.as_bytes());
        };
        str(&mut expected, "20261202-101500-a1b2c3.jsonl");
        expected.extend(4211u64.to_le_bytes());
        expected.extend(1_764_670_500_123_456_789i64.to_le_bytes());
        expected.extend([1]);
        expected.extend(0u32.to_le_bytes());
        expected.extend([NAMED | HAS_NAME]);
        expected.extend(1_764_670_500i64.to_le_bytes());
        expected.extend(3u64.to_le_bytes());
        for n in [812u64, 512, 40, 1_558_500] {
            expected.extend(n.to_le_bytes());
        }
        str(&mut expected, "amber");
        str(&mut expected, "copy.jsonl");
        expected.extend(17u64.to_le_bytes());
        expected.extend((-1i64).to_le_bytes());
        expected.extend([0]);
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
        let head_end = MAGIC.len() + 8 + bytes[MAGIC.len() + 4] as usize;
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
