//! Session log files: the writer appends one complete line per `write`, the
//! reader folds lines back into records and skips what it cannot read.

use std::fs::{File, OpenOptions};
use std::io::{self, BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use revolve_core::record::{Header, LineError, Record, HEADER_START};
use revolve_core::summary::Summary;

use crate::files;
use crate::fsx;
use crate::regular;

/// Appends records to a session log.
#[derive(Debug)]
pub struct LogWriter {
    file: File,
    path: PathBuf,
    line: Vec<u8>,
    /// The file was created and its folder not synced yet: the first
    /// [`LogWriter::sync`] makes its name durable too.
    dir_unsynced: bool,
}

impl LogWriter {
    /// Creates a new log; fails if the file exists.
    pub fn create(path: &Path) -> io::Result<LogWriter> {
        if let Some(dir) = path.parent() {
            files::create_dir_all(dir)?;
        }
        // Readable too: a log unlinked under it is written again from the
        // open file (see [`LogWriter::relink`]).
        let file = files::options()
            .read(true)
            .append(true)
            .create_new(true)
            .open(path)?;
        Ok(LogWriter {
            file,
            path: path.to_path_buf(),
            line: Vec::with_capacity(4096),
            dir_unsynced: true,
        })
    }

    /// Creates a new log that starts with `header`, whole or not at all
    /// ([`fsx::create_atomic`]: the line is written to a hidden temp file
    /// beside it, which is then linked to the final name, failing if that
    /// exists), so no reader ever sees an empty or headless `*.jsonl`. The
    /// file and its folder are synced at the first [`LogWriter::sync`] (the
    /// first turn's end, when the log promises durability), not here: the
    /// first request waits for no disk. A crash before then may leave the
    /// file empty, which a listing leaves out (counted as unreadable); it
    /// held nothing acknowledged.
    pub fn create_with(path: &Path, header: &Record) -> io::Result<LogWriter> {
        let dir = path.parent().unwrap_or(Path::new("."));
        files::create_dir_all(dir)?;
        let mut line = header.to_line().into_bytes();
        line.push(b'\n');
        fsx::create_atomic_sync_later(path, &line)?;
        let (file, _) = regular::open(path, OpenOptions::new().read(true).append(true))?;
        Ok(LogWriter {
            file,
            path: path.to_path_buf(),
            line: Vec::with_capacity(4096),
            dir_unsynced: true,
        })
    }

    /// Opens an existing log for appending. A torn last line (a crash in the
    /// middle of a write) is ended with a newline first, so the next record
    /// starts on a line of its own and the torn one stays skippable.
    pub fn open(path: &Path) -> io::Result<LogWriter> {
        let (mut file, meta) = regular::open(path, OpenOptions::new().read(true).append(true))?;
        let len = meta.len();
        if len > 0 {
            let mut last = [0u8; 1];
            file.seek(SeekFrom::End(-1))?;
            file.read_exact(&mut last)?;
            if last[0] != b'\n' {
                file.write_all(b"\n")?;
            }
        }
        Ok(LogWriter {
            file,
            path: path.to_path_buf(),
            line: Vec::with_capacity(4096),
            dir_unsynced: false,
        })
    }

    /// The file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Makes sure the file written is still the one at [`LogWriter::path`]
    /// before more is appended: a log unlinked while the session runs (its
    /// folder deleted, say) would take every later record into nothing.
    /// Such a log is written again at its path, whole, from the open file
    /// (which still holds every byte): to a temp file beside it, synced,
    /// renamed into place; the writer goes on in it. Returns how many bytes
    /// were written again, or `None` when the log was in place. Another
    /// file at the path (the log replaced) is an error: nothing is written
    /// into someone else's file.
    pub fn relink(&mut self) -> io::Result<Option<u64>> {
        if self.in_place()? {
            return Ok(None);
        }
        let dir = self.path.parent().unwrap_or(Path::new("."));
        files::create_dir_all(dir)?;
        let bytes = fsx::write_atomic_with(&self.path, |out| {
            self.file.seek(SeekFrom::Start(0))?;
            io::copy(&mut self.file, out)
        })?;
        self.file = OpenOptions::new()
            .read(true)
            .append(true)
            .open(&self.path)?;
        Ok(Some(bytes))
    }

    /// Whether the path still names the open file (same device and inode,
    /// still linked); an error when another file took its place.
    fn in_place(&self) -> io::Result<bool> {
        let at_path = match std::fs::metadata(&self.path) {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(e),
        };
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let open = self.file.metadata()?;
            if open.nlink() == 0 || (open.dev(), open.ino()) != (at_path.dev(), at_path.ino()) {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    "another file took the log's place while the session ran; not writing into it",
                ));
            }
        }
        let _ = at_path;
        Ok(true)
    }

    /// Writes one record as one line, with one `write` call, and flushes it
    /// to the OS (no buffering in between).
    pub fn append(&mut self, record: &Record) -> io::Result<()> {
        self.line.clear();
        serde_json::to_writer(&mut self.line, record).map_err(io::Error::other)?;
        self.line.push(b'\n');
        self.file.write_all(&self.line)
    }

    /// Makes everything written so far durable (fsync of the data).
    pub fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()?;
        if self.dir_unsynced {
            fsx::sync_dir(self.path.parent().unwrap_or(Path::new(".")));
            self.dir_unsynced = false;
        }
        Ok(())
    }
}

/// A line the reader passed over.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    /// 1-based line number.
    pub line: usize,
    /// Why it could not be read, for the one-line warning.
    pub why: String,
    /// Whether the line was torn by a crash mid-write (as opposed to garbled
    /// or of an unknown kind).
    pub torn: bool,
}

/// What reading a log gave.
#[derive(Debug, Default)]
pub struct ReadLog {
    /// The records read, in order.
    pub records: Vec<Record>,
    /// The lines passed over, in order.
    pub skipped: Vec<Skipped>,
    /// Whether the last line was torn (no newline, not readable).
    pub torn_tail: bool,
}

/// Reads a whole log into records. See [`each_record`] to fold without
/// keeping them.
pub fn read(path: &Path) -> io::Result<ReadLog> {
    let mut log = ReadLog::default();
    log.torn_tail = each_record(path, |_, r| log.records.push(r), |s| log.skipped.push(s))?;
    Ok(log)
}

/// Streams a log's records in order, reporting each skipped line. Returns
/// whether the last line was torn.
pub fn each_record(
    path: &Path,
    mut record: impl FnMut(usize, Record),
    skipped: impl FnMut(Skipped),
) -> io::Result<bool> {
    each_record_while(
        path,
        |n, r| {
            record(n, r);
            true
        },
        skipped,
    )
}

/// [`each_record`], stopping early (after the record it was given) when
/// `record` returns `false`: a replay whose reader went away stops reading.
/// Only the current line is held, so any size of file streams in a buffer
/// the size of its longest line. Only a regular file is read (see
/// [`regular`]): a FIFO or a device is an error, never waited on.
pub fn each_record_while(
    path: &Path,
    mut record: impl FnMut(usize, Record) -> bool,
    mut skipped: impl FnMut(Skipped),
) -> io::Result<bool> {
    let (file, _) = regular::read(path)?;
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let mut buf = Vec::new();
    let mut number = 0;
    let mut torn = false;
    let mut pictures = crate::images::Pictures::of(path);
    // Until a record is read, a line may be the header behind stray bytes.
    let mut before_header = true;
    loop {
        buf.clear();
        if reader.read_until(b'\n', &mut buf)? == 0 {
            break;
        }
        number += 1;
        let complete = buf.ends_with(b"\n");
        if before_header {
            if let Some((stray, header)) = Record::header_past_garbage(&buf) {
                before_header = false;
                skipped(Skipped {
                    line: number,
                    why: format!("{stray} stray byte(s) before the header"),
                    torn: false,
                });
                if !record(number, Record::Header(header)) {
                    break;
                }
                continue;
            }
        }
        let Ok(line) = std::str::from_utf8(&buf) else {
            torn |= !complete;
            skipped(Skipped {
                line: number,
                why: "not UTF-8".into(),
                torn: !complete,
            });
            continue;
        };
        if line.trim().is_empty() {
            continue;
        }
        match Record::parse_line(line) {
            Ok(mut r) => {
                before_header = false;
                pictures.fill(&mut r);
                if !record(number, r) {
                    break;
                }
            }
            Err(e) => {
                torn |= !complete;
                let is_torn = matches!(e, LineError::Torn) || !complete;
                let why = match e {
                    _ if !complete => "torn final line".to_owned(),
                    LineError::Torn => {
                        "torn line (a crash cut its write short; later lines are whole)".to_owned()
                    }
                    e => e.to_string(),
                };
                skipped(Skipped {
                    line: number,
                    why,
                    torn: is_torn,
                });
            }
        }
    }
    Ok(torn)
}

/// The records of `kinds` in a log, in order, passing every other line
/// over unparsed: a line revolve wrote starts with its `"type"`, read off
/// the front. Lines that cannot be read are passed over too (see
/// [`each_record`] for a reader that reports them). For a fold that needs
/// a few kinds of a large log (the chart of `revolve export`).
pub fn each_record_of(
    path: &Path,
    kinds: &[&str],
    mut record: impl FnMut(Record),
) -> io::Result<()> {
    const PREFIX: &[u8] = b"{\"type\":\"";
    let (file, _) = regular::read(path)?;
    let mut reader = BufReader::with_capacity(1 << 16, file);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        if reader.read_until(b'\n', &mut buf)? == 0 {
            return Ok(());
        }
        if let Some(rest) = buf.strip_prefix(PREFIX) {
            let end = rest.iter().position(|b| *b == b'"').unwrap_or(0);
            if !kinds.iter().any(|k| k.as_bytes() == &rest[..end]) {
                continue;
            }
        }
        if let Ok(Ok(r)) = std::str::from_utf8(&buf).map(Record::parse_line) {
            record(r);
        }
    }
}

/// How much of a file's head and tail [`summary`] reads.
const PEEK: u64 = 8 * 1024; // not policy: a read size

/// A session's listing entry, read from its header and its last records
/// only, so listing thousands of sessions stays fast. `None` when the file has
/// no readable header; an error when it cannot be read or is not a regular
/// file (a FIFO is refused, never waited on: see [`regular`]).
pub fn summary(path: &Path) -> io::Result<Option<(Header, Summary)>> {
    let (mut file, meta) = regular::read(path)?;
    let len = meta.len();
    let mut head = Vec::with_capacity(PEEK as usize);
    (&mut file).take(PEEK).read_to_end(&mut head)?;
    let first = head.split(|b| *b == b'\n').next().unwrap_or(&[]);
    let header = match std::str::from_utf8(first).ok().map(Record::parse_line) {
        Some(Ok(Record::Header(h))) => h,
        _ => match header_in_head(&mut file, &head, len)? {
            Some(h) => h,
            None => return Ok(None),
        },
    };
    // A subagent's `spawned` record comes right after its header.
    let parent = head
        .split(|b| *b == b'\n')
        .skip(1)
        .take(4)
        .filter(|l| l.starts_with(b"{\"type\":\"spawned\""))
        .find_map(
            |l| match std::str::from_utf8(l).ok().map(Record::parse_line) {
                Some(Ok(Record::Spawned(s))) => Some(s.parent),
                _ => None,
            },
        );
    let tail = if len <= PEEK {
        head
    } else {
        let mut tail = Vec::with_capacity(PEEK as usize);
        file.seek(SeekFrom::Start(len - PEEK))?;
        file.read_to_end(&mut tail)?;
        tail
    };
    let mut summary = Summary {
        id: header.id.clone(),
        name: header.name.clone(),
        named: header.named,
        started: header.started,
        turns: 0,
        last_activity: header.started,
        path: path.to_string_lossy().into_owned(),
        continued: None,
        spent: Default::default(),
        parent,
    };
    if let Ok(modified) = meta.modified() {
        summary.last_activity = modified.into();
    }
    // The last totals record gives the turns; the last rename, or the name a
    // totals record carries, gives the name. Both kinds are short lines.
    let (mut turns, mut name) = (None, None);
    // A compacted file ends with `continued` (after its last totals).
    if let Some(last) = tail.rsplit(|b| *b == b'\n').find(|l| !l.is_empty()) {
        if let Some(Ok(Record::Continued(c))) =
            std::str::from_utf8(last).ok().map(Record::parse_line)
        {
            summary.continued = Some(c.next);
        }
    }
    for line in tail.rsplit(|b| *b == b'\n') {
        if turns.is_some() && name.is_some() {
            break;
        }
        if !line.starts_with(b"{\"type\":\"totals\"") && !line.starts_with(b"{\"type\":\"renamed\"")
        {
            continue;
        }
        match std::str::from_utf8(line).ok().map(Record::parse_line) {
            Some(Ok(Record::Totals(t))) => {
                if turns.is_none() {
                    summary.spent = revolve_core::summary::Spent::of(&t);
                }
                turns.get_or_insert(t.turns);
                if name.is_none() && t.name.is_some() {
                    name = Some((t.name, t.named));
                }
            }
            Some(Ok(Record::Renamed(r))) => {
                name.get_or_insert((Some(r.name), !r.generated));
            }
            _ => {}
        }
    }
    summary.turns = turns.unwrap_or(0);
    if let Some((n, named)) = name {
        summary.name = n;
        summary.named = named;
    }
    Ok(Some((header, summary)))
}

/// The header of a file whose first line is not one: a header longer than
/// the peek `head` holds of the file (read whole from the file), or one
/// behind stray bytes or lines at the start (damage that must not hide the
/// session: see [`Record::header_past_garbage`]).
fn header_in_head(file: &mut File, head: &[u8], len: u64) -> io::Result<Option<Header>> {
    let long = len > PEEK && !head.contains(&b'\n');
    let Some(at) = head
        .windows(HEADER_START.len())
        .position(|w| w == HEADER_START)
        .or(long.then_some(0))
    else {
        return Ok(None);
    };
    let line = match head[at..].iter().position(|b| *b == b'\n') {
        Some(end) => std::str::from_utf8(&head[at..at + end])
            .ok()
            .map(str::to_owned),
        None if len > PEEK => {
            file.seek(SeekFrom::Start(at as u64))?;
            let mut line = String::new();
            // Not UTF-8: no header.
            BufReader::new(file).read_line(&mut line).ok().map(|_| line)
        }
        None => std::str::from_utf8(&head[at..]).ok().map(str::to_owned),
    };
    match line.as_deref().map(Record::parse_line) {
        Some(Ok(Record::Header(h))) => Ok(Some(h)),
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use revolve_core::record::{Message, Renamed, Totals};
    use time::macros::datetime;

    fn header() -> Header {
        Header {
            version: 1,
            id: "s1".into(),
            name: Some("amber".into()),
            named: false,
            cwd: "/w".into(),
            project: "/w".into(),
            started: datetime!(2026-12-02 10:00 UTC),
            model: "m".into(),
            window: 1000,
            provider: "scripted".into(),
            continues: None,
            tool_choice: None,
        }
    }

    /// A path in a temporary directory that goes when the test ends.
    struct Temp {
        path: PathBuf,
        _dir: tempfile::TempDir,
    }

    impl std::ops::Deref for Temp {
        type Target = PathBuf;

        fn deref(&self) -> &PathBuf {
            &self.path
        }
    }

    impl AsRef<std::path::Path> for Temp {
        fn as_ref(&self) -> &std::path::Path {
            &self.path
        }
    }

    fn temp(name: &str) -> Temp {
        let dir = tempfile::Builder::new()
            .prefix(&format!("revolve-log-{name}-"))
            .tempdir()
            .unwrap();
        Temp {
            path: dir.path().join("s1.jsonl"),
            _dir: dir,
        }
    }

    #[test]
    fn an_unlinked_log_is_written_again_and_a_replaced_one_refused() {
        let path = temp("relink");
        let at = datetime!(2026-12-02 10:01 UTC);
        let mut w = LogWriter::create(&path).unwrap();
        assert_eq!(w.relink().unwrap(), None);
        w.append(&Record::Header(header())).unwrap();
        w.append(&Record::Message(Message::user(at, "hi"))).unwrap();
        let before = std::fs::read(&path).unwrap();
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
        assert_eq!(w.relink().unwrap(), Some(before.len() as u64));
        assert_eq!(std::fs::read(&path).unwrap(), before);
        w.append(&Record::Message(Message::user(at, "again")))
            .unwrap();
        assert_eq!(read(&path).unwrap().records.len(), 3);
        assert_eq!(w.relink().unwrap(), None);

        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, "someone else's\n").unwrap();
        let err = w.relink().unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "someone else's\n");
        std::fs::remove_dir_all(path.parent().unwrap()).ok();
    }

    #[test]
    fn skips_garbage_and_a_torn_tail_then_appends_cleanly() {
        let path = temp("torn");
        let at = datetime!(2026-12-02 10:01 UTC);
        let mut w = LogWriter::create(&path).unwrap();
        w.append(&Record::Header(header())).unwrap();
        w.append(&Record::Message(Message::user(at, "hi"))).unwrap();
        drop(w);
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(
            b"garbage\n{\"type\":\"future\",\"x\":1}\n\xff\xfe\n{\"type\":\"message\",\"at\":\"20",
        )
        .unwrap();
        drop(f);
        let log = read(&path).unwrap();
        assert_eq!(log.records.len(), 2);
        assert!(log.torn_tail);
        let lines: Vec<usize> = log.skipped.iter().map(|s| s.line).collect();
        assert_eq!(lines, [3, 4, 5, 6]);
        assert_eq!(log.skipped[3].why, "torn final line");

        let mut w = LogWriter::open(&path).unwrap();
        w.append(&Record::Message(Message::assistant(at, "yo")))
            .unwrap();
        let log = read(&path).unwrap();
        assert_eq!(log.records.len(), 3);
        assert!(!log.torn_tail);
    }

    #[test]
    fn a_header_behind_stray_bytes_or_lines_is_read_and_the_rest_reported() {
        let path = temp("stray");
        let at = datetime!(2026-12-02 10:01 UTC);
        let mut w = LogWriter::create(&path).unwrap();
        w.append(&Record::Header(header())).unwrap();
        w.append(&Record::Message(Message::user(at, "hi"))).unwrap();
        drop(w);
        let whole = std::fs::read(&path).unwrap();
        for (stray, why) in [
            (b"\xff\x00".as_slice(), "2 stray byte(s) before the header"),
            (
                b"garbage\n",
                "malformed line: expected value at line 1 column 1",
            ),
        ] {
            std::fs::write(&path, [stray, &whole].concat()).unwrap();
            let log = read(&path).unwrap();
            assert_eq!(log.records.len(), 2, "{why}");
            assert!(matches!(&log.records[0], Record::Header(h) if h.id == "s1"));
            assert_eq!(log.skipped.len(), 1);
            assert_eq!((log.skipped[0].line, &*log.skipped[0].why), (1, why));
            let (h, s) = summary(&path).unwrap().expect("a summary");
            assert_eq!((h.id.as_str(), s.name.as_deref()), ("s1", Some("amber")));
        }
    }

    #[test]
    fn summary_reads_head_and_tail() {
        let path = temp("summary");
        let at = datetime!(2026-12-02 10:01 UTC);
        let mut w = LogWriter::create(&path).unwrap();
        w.append(&Record::Header(header())).unwrap();
        w.append(&Record::Renamed(Renamed {
            at,
            name: "db".into(),
            generated: false,
        }))
        .unwrap();
        for i in 0..200 {
            w.append(&Record::Message(Message::user(at, "x".repeat(100))))
                .unwrap();
            let t = Totals {
                at: Some(at),
                turns: i + 1,
                name: Some("db".into()),
                named: true,
                ..Totals::default()
            };
            w.append(&Record::Totals(t)).unwrap();
        }
        w.append(&Record::Renamed(Renamed {
            at,
            name: "api".into(),
            generated: false,
        }))
        .unwrap();
        let (h, s) = summary(&path).unwrap().unwrap();
        assert_eq!(h.id, "s1");
        assert_eq!(
            (s.name.as_deref(), s.named, s.turns),
            (Some("api"), true, 200)
        );
    }
}
