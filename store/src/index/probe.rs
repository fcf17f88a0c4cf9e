//! The cache read without reading it whole: its head, then single entries
//! by positioned reads, found through the head's lists or a binary search
//! of a sorted table (about 17 steps for 100,000 entries, two reads
//! each). What a question needs of a hundred thousand sessions is then a
//! few kilobytes.

use std::fs::File;
use std::io;
use std::path::Path;

use super::{check, entry_of, head_len, parse_head, Entry, Head, Span, Table, SLOT};

/// How much of the file is read for the head at first (a head longer than
/// this is read again whole).
const FIRST_READ: usize = 16 * 1024; // not policy: a read size

/// An open cache, its head read.
#[derive(Debug)]
pub(crate) struct Probe {
    file: File,
    /// The cache's head.
    pub head: Head,
    /// Where the body begins in the file.
    base: u64,
}

impl Probe {
    /// The cache at `path`, or `None` when there is none this build reads.
    pub(crate) fn open(path: &Path) -> Option<Probe> {
        let (file, _) = crate::regular::read(path).ok()?;
        let mut start = vec![0; FIRST_READ];
        let got = read_at(&file, &mut start, 0).ok()?;
        start.truncate(got);
        let need = head_len(&start)?;
        if need > start.len() {
            start.resize(need, 0);
            if read_at(&file, &mut start, 0).ok()? != need {
                return None;
            }
        }
        let (head, base) = parse_head(&start)?;
        Some(Probe {
            file,
            head,
            base: base as u64,
        })
    }

    /// The entry at `span`, or `None` when the bytes there are not one.
    pub(crate) fn entry(&self, (at, len, sum): Span) -> Option<Entry<'static>> {
        if u64::from(at) + u64::from(len) > self.head.body {
            return None;
        }
        let mut bytes = vec![0; len as usize];
        let got = read_at(&self.file, &mut bytes, self.base + u64::from(at)).ok()?;
        if got != bytes.len() || check(&bytes) != sum {
            return None;
        }
        Some(entry_of(&bytes, self.head.cwds.len())?.into_owned())
    }

    /// The entries whose key in `table` is `key`; `None` when the cache
    /// cannot be read.
    pub(crate) fn find(&self, table: Table, key: &str) -> Option<Vec<Entry<'static>>> {
        let from = self.lower_bound(table, |k| k < key)?;
        let mut out = Vec::new();
        for i in from..self.slots(table) {
            let entry = self.slot_entry(table, i)?;
            if table.key(&entry) != Some(key) {
                break;
            }
            out.push(entry);
        }
        Some(out)
    }

    /// The entries whose key in `table` starts with `prefix`, when there
    /// are at most `max`; `Some(Err(n))`: there are `n`, more than `max`.
    pub(crate) fn prefixed(
        &self,
        table: Table,
        prefix: &str,
        max: usize,
    ) -> Option<Result<Vec<Entry<'static>>, usize>> {
        let from = self.lower_bound(table, |k| k < prefix)?;
        let to = self.lower_bound(table, |k| k < prefix || k.starts_with(prefix))?;
        if to - from > max {
            return Some(Err(to - from));
        }
        (from..to)
            .map(|i| self.slot_entry(table, i))
            .collect::<Option<Vec<_>>>()
            .map(Ok)
    }

    /// How many slots `table` has.
    fn slots(&self, table: Table) -> usize {
        self.head.tables[table as usize] as usize
    }

    /// The first slot of `table` whose key is not `before` (which holds
    /// for a prefix of the table's order).
    fn lower_bound(&self, table: Table, before: impl Fn(&str) -> bool) -> Option<usize> {
        let (mut lo, mut hi) = (0, self.slots(table));
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let entry = self.slot_entry(table, mid)?;
            if before(table.key(&entry)?) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Some(lo)
    }

    /// The entry slot `i` of `table` points at.
    fn slot_entry(&self, table: Table, i: usize) -> Option<Entry<'static>> {
        let before: u64 = self.head.tables[..table as usize]
            .iter()
            .map(|n| u64::from(*n))
            .sum();
        let at = self.base + self.head.body + (before + i as u64) * SLOT as u64;
        let mut slot = [0; SLOT];
        if read_at(&self.file, &mut slot, at).ok()? != SLOT {
            return None;
        }
        let n = |i: usize| u32::from_le_bytes([slot[i], slot[i + 1], slot[i + 2], slot[i + 3]]);
        let span = (n(0), n(4), n(8));
        self.entry(span)
    }
}

/// Reads into `buf` from `offset` until it is full or the file ends; how
/// much was read.
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        let n = read_once(file, &mut buf[done..], offset + done as u64)?;
        if n == 0 {
            break;
        }
        done += n;
    }
    Ok(done)
}

#[cfg(unix)]
fn read_once(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    use std::os::unix::fs::FileExt;
    file.read_at(buf, offset)
}

#[cfg(not(unix))]
fn read_once(mut file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    use std::io::{Read, Seek, SeekFrom};
    file.seek(SeekFrom::Start(offset))?;
    file.read(buf)
}
