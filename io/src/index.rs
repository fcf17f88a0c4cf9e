//! The listing cache's file, `<sessions>/.index`: what [`crate::store`]
//! needs of every session file to list it or to see its name, with the size
//! and modification time the file was read at.
//!
//! A line per file, fields split by tabs, so that reading a hundred
//! thousand entries is a split, not a JSON parse (the JSON cache this
//! replaced took 45 ms to parse for 100k sessions; this one takes a few):
//!
//! ```text
//! revolve listing cache 5
//! {"journal":"epoch …","offset":812,"volatile":["…"],"cwds":["/src/app"],"entries":2}
//! 20261202-101500-a1b2c3.jsonl␉4211␉1764670500123456789␉0␉-␉amber␉1␉1764670500␉3␉-
//! broken.jsonl␉17␉1764670511000000000
//! ```
//!
//! (`␉` stands for a tab.)
//!
//! An entry is `file, len, mtime (ns)`, then, for a file with a header, its
//! row: `cwd (an index into cwds), id, name, named (0/1), started (unix
//! s), turns, continued`. An optional field is `-` when absent; the id is
//! `-` when it is the file's stem. Strings escape `\`, tab and newline as
//! `\\`, `\t`, `\n`, and a leading `-` as `\-`.
//!
//! It is only a cache: anything this build does not read exactly (another
//! version, a torn or edited line) reads as no cache at all.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

/// The cache's file name in the sessions folder.
pub const FILE: &str = ".index";
/// The JSON cache of earlier builds, removed when a cache is written.
pub const LEGACY_FILE: &str = ".index.json";
const MAGIC: &str = "revolve listing cache 5";
/// Fields of an entry with a row.
const FIELDS: usize = 10;

/// What says a file is unchanged: its size and modification time (ns).
pub type Stamp = (u64, i64);

/// The cache: where the claims journal was when it was written (its epoch
/// and length) with the sessions that had lock files then, the working
/// directories rows point into, and an entry per session file.
#[derive(Debug, Default, PartialEq)]
pub struct Index<'a> {
    /// The claims journal's epoch when written ("" without a journal).
    pub journal: String,
    /// Its length then.
    pub offset: u64,
    /// The sessions with lock files then.
    pub volatile: Vec<String>,
    pub cwds: Vec<Cow<'a, str>>,
    pub entries: Vec<Entry<'a>>,
}

/// One session file, as it was read.
#[derive(Debug, PartialEq)]
pub struct Entry<'a> {
    pub file: Cow<'a, str>,
    pub stamp: Stamp,
    /// `None`: the file could not be read or has no header; it is
    /// remembered as such until it changes.
    pub row: Option<Row<'a>>,
}

/// What a listing shows of a session file; its last activity is the
/// file's modification time.
#[derive(Debug, PartialEq)]
pub struct Row<'a> {
    /// An index into [`Index::cwds`].
    pub cwd: usize,
    pub id: Cow<'a, str>,
    pub name: Option<Cow<'a, str>>,
    pub named: bool,
    /// Unix seconds.
    pub started: i64,
    pub turns: u64,
    pub continued: Option<Cow<'a, str>>,
}

/// The JSON line after the magic one.
#[derive(Serialize, Deserialize)]
struct Head<'h> {
    journal: Cow<'h, str>,
    offset: u64,
    volatile: Vec<String>,
    cwds: Vec<String>,
    /// How many entry lines follow.
    entries: usize,
}

impl<'a> Index<'a> {
    /// The cache in `bytes`, or `None` when they are not exactly a cache
    /// this build writes.
    pub fn parse(bytes: &'a [u8]) -> Option<Index<'a>> {
        let text = std::str::from_utf8(bytes).ok()?;
        let (magic, text) = text.split_once('\n')?;
        let (head, lines) = text.split_once('\n')?;
        if magic != MAGIC {
            return None;
        }
        let head: Head = serde_json::from_str(head).ok()?;
        let cwds: Vec<Cow<str>> = head.cwds.into_iter().map(Cow::Owned).collect();
        let mut entries = Vec::with_capacity(head.entries.min(bytes.len() / 8));
        // One pass over the bytes, cutting at tabs and newlines (a split per
        // line and then per field takes three times as long), noting which
        // fields hold an escape.
        let mut fields = [""; FIELDS];
        let mut escaped = 0u16;
        let (mut n, mut start) = (0, 0);
        for (i, b) in lines.bytes().enumerate() {
            match b {
                b'\t' | b'\n' => {
                    *fields.get_mut(n)? = &lines[start..i];
                    n += 1;
                    start = i + 1;
                    if b == b'\n' {
                        entries.push(Entry::parse(&fields[..n], escaped, cwds.len())?);
                        (n, escaped) = (0, 0);
                    }
                }
                b'\\' => escaped |= 1 << n.min(FIELDS),
                _ => {}
            }
        }
        // Every line ends with a newline: nothing may follow the last.
        if start != lines.len() {
            return None;
        }
        (entries.len() == head.entries).then(|| Index {
            journal: head.journal.into_owned(),
            offset: head.offset,
            volatile: head.volatile,
            cwds,
            entries,
        })
    }

    /// The cache as written to its file.
    pub fn to_bytes(&self) -> Vec<u8> {
        let head = Head {
            journal: Cow::Borrowed(&self.journal),
            offset: self.offset,
            volatile: self.volatile.clone(),
            cwds: self.cwds.iter().map(|c| c.to_string()).collect(),
            entries: self.entries.len(),
        };
        let mut out = String::with_capacity(128 + self.entries.len() * 96);
        out.push_str(MAGIC);
        out.push('\n');
        // A struct of strings and numbers always serializes.
        out.push_str(&serde_json::to_string(&head).unwrap_or_default());
        out.push('\n');
        for entry in &self.entries {
            entry.write(&mut out);
        }
        out.into_bytes()
    }

    /// The index of `cwd` in [`Index::cwds`], added when it is not there.
    pub fn intern(cwds: &mut Vec<Cow<'a, str>>, cwd: &str) -> usize {
        match cwds.iter().position(|c| c == cwd) {
            Some(i) => i,
            None => {
                cwds.push(Cow::Owned(cwd.to_owned()));
                cwds.len() - 1
            }
        }
    }
}

impl<'a> Entry<'a> {
    /// The entry of a line's fields; bit `i` of `escaped` says field `i`
    /// holds a backslash.
    fn parse(fields: &[&'a str], escaped: u16, cwds: usize) -> Option<Entry<'a>> {
        let text = |i: usize| -> Option<Cow<'a, str>> {
            if escaped & (1 << i) == 0 {
                Some(Cow::Borrowed(fields[i]))
            } else {
                unescape(fields[i])
            }
        };
        let optional = |i: usize| match fields[i] {
            "-" => Some(None),
            _ => text(i).map(Some),
        };
        let file = text(0)?;
        let stamp = (fields[1].parse().ok()?, fields[2].parse().ok()?);
        let row = match fields.len() {
            3 => None,
            FIELDS => {
                let id = match optional(4)? {
                    Some(id) => id,
                    None => match &file {
                        Cow::Borrowed(f) => Cow::Borrowed(f.strip_suffix(".jsonl")?),
                        Cow::Owned(f) => Cow::Owned(f.strip_suffix(".jsonl")?.to_owned()),
                    },
                };
                Some(Row {
                    cwd: fields[3].parse().ok().filter(|c| *c < cwds)?,
                    id,
                    name: optional(5)?,
                    named: match fields[6] {
                        "0" => false,
                        "1" => true,
                        _ => return None,
                    },
                    started: fields[7].parse().ok()?,
                    turns: fields[8].parse().ok()?,
                    continued: optional(9)?,
                })
            }
            _ => return None,
        };
        Some(Entry { file, stamp, row })
    }

    fn write(&self, out: &mut String) {
        use std::fmt::Write;
        escape(&self.file, out);
        let _ = write!(out, "\t{}\t{}", self.stamp.0, self.stamp.1);
        if let Some(row) = &self.row {
            let _ = write!(out, "\t{}\t", row.cwd);
            let own_id = self.file.strip_suffix(".jsonl") == Some(&*row.id);
            write_optional((!own_id).then_some(&*row.id), out);
            out.push('\t');
            write_optional(row.name.as_deref(), out);
            let _ = write!(
                out,
                "\t{}\t{}\t{}\t",
                u8::from(row.named),
                row.started,
                row.turns
            );
            write_optional(row.continued.as_deref(), out);
        }
        out.push('\n');
    }
}

fn escape(s: &str, out: &mut String) {
    if s.starts_with('-') {
        out.push('\\');
    }
    if !s.contains(['\\', '\t', '\n']) {
        out.push_str(s);
        return;
    }
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

fn unescape(field: &str) -> Option<Cow<'_, str>> {
    if !field.contains('\\') {
        return Some(Cow::Borrowed(field));
    }
    let mut out = String::with_capacity(field.len());
    let mut chars = field.chars();
    while let Some(c) = chars.next() {
        out.push(match c {
            '\\' => match chars.next()? {
                '\\' => '\\',
                't' => '\t',
                'n' => '\n',
                '-' if out.is_empty() => '-',
                _ => return None,
            },
            c => c,
        });
    }
    Some(Cow::Owned(out))
}

fn write_optional(s: Option<&str>, out: &mut String) {
    match s {
        Some(s) => escape(s, out),
        None => out.push('-'),
    }
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
        }
    }

    fn index(entries: Vec<Entry<'static>>) -> Index<'static> {
        Index {
            journal: "epoch 1-2-3".into(),
            offset: 812,
            volatile: vec!["a".into()],
            cwds: vec![Cow::Borrowed("/src/app"), Cow::Borrowed("/src/a\tb")],
            entries,
        }
    }

    #[test]
    fn the_format_reads_as_documented() {
        let bytes = index(vec![
            Entry {
                file: "20261202-101500-a1b2c3.jsonl".into(),
                stamp: (4211, 1_764_670_500_123_456_789),
                row: Some(row("20261202-101500-a1b2c3", Some("amber"), None)),
            },
            Entry {
                file: "copy.jsonl".into(),
                stamp: (17, 5),
                row: Some(row("-x", None, Some("next"))),
            },
            Entry {
                file: "broken.jsonl".into(),
                stamp: (17, -1),
                row: None,
            },
        ])
        .to_bytes();
        let text = String::from_utf8(bytes.clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], MAGIC);
        assert_eq!(
            lines[2],
            "20261202-101500-a1b2c3.jsonl\t4211\t1764670500123456789\t0\t-\tamber\t1\t1764670500\t3\t-"
        );
        assert_eq!(
            lines[3],
            "copy.jsonl\t17\t5\t0\t\\-x\t-\t0\t1764670500\t3\tnext"
        );
        assert_eq!(lines[4], "broken.jsonl\t17\t-1");
        let parsed = Index::parse(&bytes).unwrap();
        assert_eq!(
            parsed.entries[0].row.as_ref().unwrap().id,
            "20261202-101500-a1b2c3"
        );
        assert!(matches!(parsed.entries[0].file, Cow::Borrowed(_)));
        assert_eq!(parsed.cwds[1], "/src/a\tb");
    }

    #[test]
    fn anything_but_a_whole_cache_reads_as_none() {
        let bytes = index(vec![Entry {
            file: "a.jsonl".into(),
            stamp: (1, 2),
            row: Some(row("a", Some("n"), None)),
        }])
        .to_bytes();
        assert!(Index::parse(&bytes).is_some());
        for cut in 0..bytes.len() {
            assert_eq!(Index::parse(&bytes[..cut]), None, "cut at {cut}");
        }
        let text = String::from_utf8(bytes).unwrap();
        for bad in [
            text.replace("\t0\t-\tn\t1", "\t9\t-\tn\t1"),
            text.replace("\tn\t1\t", "\tn\t2\t"),
            text.replace("\t-\n", "\t-\textra\n"),
            text.replace("cache 5", "cache 4"),
            text.replace("a.jsonl\t1", "a\\q.jsonl\t1"),
            format!("{text}b.jsonl\t1\t2\n"),
            "{\"version\":4,\"entries\":[]}".to_owned(),
        ] {
            assert_eq!(Index::parse(bad.as_bytes()), None, "{bad}");
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
                }),
            }).collect();
            let written = index(entries);
            let bytes = written.to_bytes();
            Index::parse(&bytes).as_ref() == Some(&written)
        }
    }
}
