//! Running sessions: one lock file per running session, held with an OS file
//! lock for the life of the process. A file whose lock is free belongs to a
//! process that died; it does not count as running and is cleaned up.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{self, Write};
#[cfg(unix)]
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use revolve_core::policy::{CLAIM_RETRY, CLAIM_TRIES};
use serde::{Deserialize, Serialize};

use crate::files::{self, ctx};
use crate::fsx::{self, Lock};
use crate::index::DirStamp;

/// What a lock file says about its session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Running {
    /// The running session's id.
    pub id: String,
    /// Its name, for listing it among the running ones.
    pub name: Option<String>,
    /// The directory it runs in.
    pub cwd: String,
    /// The process that runs it.
    pub pid: u32,
}

/// A claim on a running session, released (and its file removed) on drop.
#[derive(Debug)]
pub struct Claim {
    lock: Lock,
    path: PathBuf,
}

impl Claim {
    /// Claims `<dir>/<id>.lock` for this process.
    pub fn take(dir: &Path, running: &Running) -> io::Result<Claim> {
        files::create_dir_all(dir).map_err(ctx("cannot create", dir))?;
        let path = dir.join(format!("{}.lock", running.id));
        // A listing holds each lock file's lock for a moment (to see whether
        // it is free): a few short retries tell that from a real owner.
        let mut tries = 0;
        let lock = loop {
            match Lock::try_acquire(&path)? {
                None if tries < CLAIM_TRIES => {
                    tries += 1;
                    std::thread::sleep(CLAIM_RETRY);
                }
                // The owner we waited for may have ended meanwhile, removing
                // the file before unlocking it: the lock we got is then on a
                // file nobody else can see, while a newcomer may hold a new
                // one at the path. Only a lock on the file at the path counts.
                Some(lock) if !same_file(lock.file(), &path) => {
                    if tries >= CLAIM_TRIES {
                        break None;
                    }
                    tries += 1;
                }
                other => break other,
            }
        };
        let Some(lock) = lock else {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!(
                    "session {} is already running in another process",
                    running.id
                ),
            ));
        };
        let mut claim = Claim { lock, path };
        claim.update(running)?;
        // After the lock file exists (see [`Journal`] for why this order).
        journal(dir, &running.id).map_err(ctx("cannot add to the journal in", dir))?;
        Ok(claim)
    }

    /// Rewrites what the lock file says (after a rename).
    pub fn update(&mut self, running: &Running) -> io::Result<()> {
        let text = serde_json::to_string(running).map_err(io::Error::other)?;
        let file = self.lock.file();
        file.set_len(0)
            .and_then(|()| file.write_all_at(text.as_bytes(), 0))
            .map_err(ctx("cannot write", &self.path))
    }
}

/// Whether `path` still names the open `file` (same device and inode).
fn same_file(file: &File, path: &Path) -> bool {
    #[cfg(unix)]
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        // Remove first, then unlock by closing (the lock is dropped after
        // this): another process that opens the path after this sees no
        // file rather than a free lock.
        std::fs::remove_file(&self.path).ok();
    }
}

/// The sessions running now, from the lock files in `dir`. Files whose lock
/// is free are stale and not returned.
pub fn running(dir: &Path) -> Vec<Running> {
    scan(dir, false)
}

/// Whether the session `id` is running now: its lock file exists and its
/// lock is held (one file, where [`running`] reads them all).
pub fn is_running(dir: &Path, id: &str) -> bool {
    File::open(dir.join(format!("{id}.lock")))
        .is_ok_and(|file| matches!(file.try_lock_shared(), Err(TryLockError::WouldBlock)))
}

/// Removes stale lock files (whose lock nobody holds). Only under the naming
/// lock, so a claim being taken at that moment is never removed.
pub fn clean(dir: &Path, _naming: &NamingLock) {
    scan(dir, true);
}

fn scan(dir: &Path, remove_stale: bool) -> Vec<Running> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "lock") {
            continue;
        }
        let Ok(file) = File::open(&path) else {
            continue;
        };
        match file.try_lock_shared() {
            Ok(()) => {
                // Nobody holds it: a leftover of a process that died.
                if remove_stale {
                    std::fs::remove_file(&path).ok();
                }
            }
            Err(TryLockError::WouldBlock) => {
                let text = crate::regular::read_text(&path, revolve_core::policy::OWN_FILE_CAP)
                    .unwrap_or_default();
                if let Ok(r) = serde_json::from_str::<Running>(&text) {
                    out.push(r);
                }
            }
            Err(TryLockError::Error(_)) => {}
        }
    }
    out.sort_by(|a, b| a.id.cmp(&b.id));
    out
}

/// The claims journal, `<running>/.claims`: every claim appends its
/// session id, so a listing learns which session files may have changed
/// since it last looked without stat'ing every file (see
/// `store::Store::list`). Its first line is an epoch, new whenever the file
/// is started again (when missing, or past [`JOURNAL_MAX`] bytes): a reader
/// that remembered an offset in another epoch cannot trust it.
///
/// The guarantee a listing builds on: a session file is written only by a
/// process holding its claim, whose lock file exists from before its
/// journal line until after its last write. So a write after a listing read
/// a file is either by a claim journaled after the listing read the
/// journal's length, or by one whose lock file the listing saw.
///
/// Lines of [`Change`]s (`+…`, `=…`) say how the sessions folder changed
/// between them; a line is one write, so lines never interleave.
#[derive(Debug, Default)]
pub(crate) struct Journal {
    /// The first line; empty when there is no journal file.
    pub epoch: String,
    /// Its length when read.
    pub len: u64,
    text: String,
}

const JOURNAL: &str = ".claims";
/// Past this size the next claim starts the journal again.
const JOURNAL_MAX: u64 = 1 << 20; // not policy: when the journal starts over

impl Journal {
    /// The journal of the running dir `dir`; an empty one when there is none
    /// (or it cannot be read).
    pub(crate) fn read(dir: &Path) -> Option<Journal> {
        let bytes =
            match crate::regular::read_whole(&dir.join(JOURNAL), revolve_core::policy::INDEX_CAP) {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Some(Journal::default()),
                Err(_) => return None,
            };
        // Whole lines only: a claim being appended right now is read next
        // time (this listing started before it).
        let whole = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        let text = String::from_utf8(bytes[..whole].to_vec()).ok()?;
        let epoch = text
            .lines()
            .next()
            .filter(|e| e.starts_with("epoch "))?
            .to_owned();
        Some(Journal {
            epoch,
            len: text.len() as u64,
            text,
        })
    }

    /// The ids claimed at or after byte `offset`, or `None` when `offset` is
    /// not a line start of this journal. With no journal (no session was
    /// ever claimed here), nothing was claimed since offset 0.
    pub(crate) fn since(&self, offset: u64) -> Option<Vec<&str>> {
        if self.epoch.is_empty() {
            return (offset == 0).then(Vec::new);
        }
        let offset = usize::try_from(offset).ok()?;
        if offset <= self.epoch.len()
            || offset > self.text.len()
            || !self.text.is_char_boundary(offset)
            || !self.text[..offset].ends_with('\n')
        {
            return None;
        }
        Some(
            self.text[offset..]
                .lines()
                .filter(|l| !l.is_empty())
                .collect(),
        )
    }
}

/// A change of the sessions folder that the journal holds (see
/// [`Journal`]): its stamp before and after a session file was made
/// (`+ID BEFORE AFTER`), removed (`-ID BEFORE AFTER`) or the listing cache
/// was written (`=BEFORE AFTER`), each stamp `INODE:NANOSECONDS`. A
/// listing whose cache knew the folder at one stamp follows these from
/// it: when they lead, unbroken, to the folder's stamp now, the folder
/// changed by these alone and need not be read (see `store::Store::list`).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Change<'j> {
    /// The folder's stamp before.
    pub before: DirStamp,
    /// Its stamp after.
    pub after: DirStamp,
    /// What changed.
    pub what: What<'j>,
}

/// What a [`Change`] did to the sessions folder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum What<'j> {
    /// Made the file of this session.
    Made(&'j str),
    /// Removed the file of this session.
    Removed(&'j str),
    /// Wrote the listing cache.
    Cache,
}

impl<'j> Change<'j> {
    /// The change a journal line says, if it says one.
    pub(crate) fn of(line: &'j str) -> Option<Change<'j>> {
        let (what, rest) = match line.as_bytes().first()? {
            b'+' => {
                let (id, rest) = line[1..].split_once(' ')?;
                (What::Made(id), rest)
            }
            b'-' => {
                let (id, rest) = line[1..].split_once(' ')?;
                (What::Removed(id), rest)
            }
            b'=' => (What::Cache, &line[1..]),
            _ => return None,
        };
        let (before, after) = rest.split_once(' ')?;
        Some(Change {
            before: stamp_from(before)?,
            after: stamp_from(after)?,
            what,
        })
    }

    fn line(&self) -> String {
        let stamp = |(ino, ns): DirStamp| format!("{ino}:{ns}");
        let (before, after) = (stamp(self.before), stamp(self.after));
        match self.what {
            What::Made(id) => format!("+{id} {before} {after}\n"),
            What::Removed(id) => format!("-{id} {before} {after}\n"),
            What::Cache => format!("={before} {after}\n"),
        }
    }
}

fn stamp_from(text: &str) -> Option<DirStamp> {
    let (ino, ns) = text.split_once(':')?;
    Some((ino.parse().ok()?, ns.parse().ok()?))
}

/// The session a journal line says was claimed or made, if any.
pub(crate) fn claimed(line: &str) -> Option<&str> {
    match Change::of(line).map(|c| c.what) {
        Some(What::Made(id) | What::Removed(id)) => Some(id),
        Some(What::Cache) => None,
        None if line.starts_with(['+', '-', '=']) => None,
        None => Some(line),
    }
}

/// Appends a change of the sessions folder to the journal of `dir` (the
/// running folder); never starts the journal again (a change in an epoch a
/// cache does not know is of no use to it).
pub(crate) fn journal_change(dir: &Path, change: &Change) -> io::Result<()> {
    // One short write to an append-only file: never interleaved.
    OpenOptions::new()
        .append(true)
        .open(dir.join(JOURNAL))?
        .write_all(change.line().as_bytes())
}

/// Appends `id` to the journal of `dir`, starting it again (a new epoch,
/// written whole and renamed into place) when it is missing or too long.
fn journal(dir: &Path, id: &str) -> io::Result<()> {
    let path = dir.join(JOURNAL);
    let fresh = std::fs::metadata(&path).map_or(true, |m| m.len() > JOURNAL_MAX);
    if fresh {
        return fsx::write_atomic(&path, format!("{}\n{id}\n", epoch()).as_bytes());
    }
    // One short write to an append-only file: never interleaved.
    OpenOptions::new()
        .append(true)
        .open(&path)?
        .write_all(format!("{id}\n").as_bytes())
}

/// A new epoch line (without its newline).
fn epoch() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static STARTED: AtomicU64 = AtomicU64::new(0);
    // Unique enough: the wall clock (not the pinned one), the process
    // and a counter.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "epoch {nanos}-{}-{}",
        std::process::id(),
        STARTED.fetch_add(1, Ordering::Relaxed)
    )
}

/// Starts the journal of `dir` when there is none (no session was ever
/// claimed there), so a listing cache has one to follow: its epoch and
/// length. `None` when one exists by now (a claim started it) or it
/// cannot be made.
pub(crate) fn start_journal(dir: &Path) -> Option<(String, u64)> {
    let epoch = epoch();
    let line = format!("{epoch}\n");
    fsx::create_atomic(&dir.join(JOURNAL), line.as_bytes()).ok()?;
    Some((epoch, line.len() as u64))
}

/// The ids of the lock files in `dir`, whether or not their lock is held:
/// the sessions that may be writing now (or died while they did).
pub(crate) fn locked_ids(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.strip_suffix(".lock"))
                .map(str::to_owned)
        })
        .collect()
}

/// A lock held while a new session picks its name and claims it, so two
/// sessions started at the same moment never pick the same name.
#[derive(Debug)]
pub struct NamingLock {
    _lock: Lock,
}

impl NamingLock {
    /// Blocks until this process is the only one naming a session in `dir`.
    pub fn acquire(dir: &Path) -> io::Result<NamingLock> {
        files::create_dir_all(dir).map_err(ctx("cannot create", dir))?;
        Ok(NamingLock {
            _lock: Lock::acquire(&dir.join(".naming"))?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_is_running_until_dropped_and_stale_files_are_cleaned() {
        let tmp = tempfile::Builder::new()
            .prefix("revolve-reg-")
            .tempdir()
            .unwrap();
        // Not made yet, as the registry's folder is before its first claim.
        let dir = tmp.path().join("reg");
        let r = Running {
            id: "a".into(),
            name: Some("amber".into()),
            cwd: "/w".into(),
            pid: 1,
        };
        let mut claim = Claim::take(&dir, &r).unwrap();
        assert_eq!(running(&dir), std::slice::from_ref(&r));
        let renamed = Running {
            name: Some("db".into()),
            ..r.clone()
        };
        claim.update(&renamed).unwrap();
        assert_eq!(running(&dir), [renamed]);
        // A second claim on the same id fails while the first is held.
        assert!(Claim::take(&dir, &r).is_err());
        drop(claim);
        assert!(running(&dir).is_empty());
        // A stale file (nobody holds its lock) does not count; clean removes it.
        std::fs::write(dir.join("b.lock"), serde_json::to_string(&r).unwrap()).unwrap();
        assert!(running(&dir).is_empty());
        assert!(dir.join("b.lock").exists());
        clean(&dir, &NamingLock::acquire(&dir).unwrap());
        assert!(!dir.join("b.lock").exists());
    }

    #[test]
    fn the_journal_says_what_was_claimed_since_an_offset() {
        let tmp = tempfile::Builder::new()
            .prefix("revolve-journal-")
            .tempdir()
            .unwrap();
        // Not made yet, as the registry's folder is before its first claim.
        let dir = tmp.path().join("journal");
        let empty = Journal::read(&dir).unwrap();
        assert_eq!((empty.epoch.as_str(), empty.len), ("", 0));
        assert_eq!(empty.since(0), Some(vec![]));
        assert_eq!(empty.since(3), None);
        let entry = |id: &str| Running {
            id: id.into(),
            name: None,
            cwd: "/w".into(),
            pid: 1,
        };
        drop(Claim::take(&dir, &entry("a")).unwrap());
        let first = Journal::read(&dir).unwrap();
        assert!(first.epoch.starts_with("epoch "));
        drop(Claim::take(&dir, &entry("b")).unwrap());
        // A line being appended right now is not read yet.
        OpenOptions::new()
            .append(true)
            .open(dir.join(JOURNAL))
            .unwrap()
            .write_all(b"c-half")
            .unwrap();
        let now = Journal::read(&dir).unwrap();
        assert_eq!(now.epoch, first.epoch);
        assert_eq!(now.since(first.len), Some(vec!["b"]));
        assert_eq!(
            now.since(first.epoch.len() as u64 + 1),
            Some(vec!["a", "b"])
        );
        assert_eq!(now.since(now.len), Some(vec![]));
        // Not a line start, before the ids, past the end: unknown.
        assert_eq!(now.since(first.len - 1), None);
        assert_eq!(now.since(0), None);
        assert_eq!(now.since(now.len + 2), None);
        assert_eq!(locked_ids(&dir), Vec::<String>::new());
    }
}
