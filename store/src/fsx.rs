//! How revolve writes a file whole and holds a lock file: the one place for
//! both, used by every writer of the state and config directories (session
//! logs, the listing cache, the running journal, the inbox, memory, goals,
//! snapshots).
//!
//! * A replacement ([`write_atomic`], [`write_atomic_with`]) goes to a
//!   hidden temp file beside the target ([`temp_sibling`]: same directory,
//!   so the rename never crosses a file system), created `0600` like every
//!   file revolve makes ([`files`](crate::files)), written, fsynced, renamed
//!   over the target, and then the directory is fsynced so the rename is
//!   durable too. A reader sees the old file or the new one, never half of
//!   one; a failure removes the temp file and leaves the target as it was.
//! * A creation that must not overwrite ([`create_atomic`]) is the same with
//!   a hard link instead of the rename: it fails with `AlreadyExists` if
//!   the target is there, and the file never appears empty.
//! * A lock file ([`Lock`]) is opened or created (`0600`, never truncated)
//!   and held with an OS file lock until dropped, so a process that dies
//!   releases it. Errors name the operation and the path.
//!
//! Temp names start with `.`, so the readers that skip hidden names (memory,
//! the inbox) never see one. Syncing a directory is unix only and best
//! effort: some file systems refuse it, and the data itself is synced.

use std::fs::{File, TryLockError};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::files::{self, ctx};

/// Replaces `path` with `bytes`, whole or not at all (see the module doc).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with(path, |file| file.write_all(bytes))
}

/// Replaces `path` with what `fill` writes into the temp file, whole or not
/// at all; returns what `fill` returned.
pub fn write_atomic_with<T>(
    path: &Path,
    fill: impl FnOnce(&mut File) -> io::Result<T>,
) -> io::Result<T> {
    written(path, fill, |tmp| std::fs::rename(tmp, path), true)
}

/// Creates `path` with `bytes`, whole or not at all; fails (`AlreadyExists`)
/// if something is at `path` already.
pub fn create_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    create(path, bytes, true)
}

/// [`create_atomic`] without syncing the file or the directory: the bytes
/// and the new name are made durable by the caller's later sync of the
/// file and [`sync_dir`] (a session log's first sync, at its first turn
/// end, so the first request waits for neither). Readers still never see
/// the file empty or half written (it appears by a link, whole); only a
/// crash before that first sync may lose it, and with it nothing that was
/// acknowledged.
pub(crate) fn create_atomic_sync_later(path: &Path, bytes: &[u8]) -> io::Result<()> {
    create(path, bytes, false)
}

fn create(path: &Path, bytes: &[u8], now: bool) -> io::Result<()> {
    written(
        path,
        |file| file.write_all(bytes),
        |tmp| {
            std::fs::hard_link(tmp, path)?;
            // The file lives on at `path`; only the temp name goes.
            std::fs::remove_file(tmp).ok();
            Ok(())
        },
        now,
    )
}

/// A hidden name beside `path`, unique within this process and across
/// processes: `.<name>.<pid>-<n>.tmp`.
pub fn temp_sibling(path: &Path) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.{}-{n}.tmp", std::process::id()))
}

/// Removes the temp files and folders ([`temp_sibling`] names) in `dir`
/// that a process no longer running left: a write killed between its
/// temp file and its rename (a refinement's memory write, a snapshot, the
/// project directory being made). One whose process still runs is left
/// alone (it may be renaming it now); a name that is not revolve's, a
/// link, is never touched. Returns how many were removed. Best effort.
pub fn sweep(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(temp_owner) else {
            continue;
        };
        if pid == std::process::id() || alive(pid) {
            continue;
        }
        let path = entry.path();
        let gone = match entry.file_type() {
            Ok(kind) if kind.is_dir() => std::fs::remove_dir_all(&path).is_ok(),
            Ok(kind) if kind.is_file() => std::fs::remove_file(&path).is_ok(),
            _ => false,
        };
        removed += usize::from(gone);
    }
    if removed > 0 {
        sync_dir(dir);
    }
    removed
}

/// The pid in a [`temp_sibling`] name (`.<name>.<pid>-<n>.tmp`).
fn temp_owner(name: &str) -> Option<u32> {
    let stem = name.strip_prefix('.')?.strip_suffix(".tmp")?;
    let (_, tail) = stem.rsplit_once('.')?;
    let (pid, n) = tail.split_once('-')?;
    n.parse::<u64>().ok()?;
    pid.parse().ok()
}

/// Whether a process `pid` exists (one of another user counts).
fn alive(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Some(pid) = i32::try_from(pid)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
        else {
            return false;
        };
        match rustix::process::test_kill_process(pid) {
            Ok(()) => true,
            Err(e) => e != rustix::io::Errno::SRCH,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

/// Makes a rename, creation or removal in `dir` durable, where the platform
/// allows (best effort; a no-op off unix).
pub(crate) fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(d) = File::open(dir) {
        d.sync_all().ok();
    }
    #[cfg(not(unix))]
    let _ = dir;
}

/// A lock file held with an OS file lock; released when dropped (or when
/// the process dies). The file stays: removing it is the owner's business.
#[derive(Debug)]
pub struct Lock {
    file: File,
}

impl Lock {
    /// Opens or creates `path` and blocks until this process holds its lock.
    pub fn acquire(path: &Path) -> io::Result<Lock> {
        let file = open(path)?;
        file.lock().map_err(ctx("cannot lock", path))?;
        Ok(Lock { file })
    }

    /// Opens or creates `path` and takes its lock if it is free: `None`
    /// when another holds it.
    pub fn try_acquire(path: &Path) -> io::Result<Option<Lock>> {
        let file = open(path)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(Lock { file })),
            Err(TryLockError::WouldBlock) => Ok(None),
            Err(TryLockError::Error(e)) => Err(files::at("cannot lock", path, e)),
        }
    }

    /// The open lock file (its owner may write what it holds).
    pub fn file(&self) -> &File {
        &self.file
    }
}

/// Opens the lock file `path`, creating it (`0600`) if needed, for reading
/// and writing, never truncated (its owner may keep something in it).
fn open(path: &Path) -> io::Result<File> {
    files::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(ctx("cannot create", path))
}

/// Writes a temp file beside `path` with `fill`, syncs it, puts it in place
/// with `place` (which is given the temp file's path), then syncs the
/// directory; with `sync_now` false, neither sync (the caller syncs both
/// later). The temp file is removed when anything fails.
fn written<T>(
    path: &Path,
    fill: impl FnOnce(&mut File) -> io::Result<T>,
    place: impl FnOnce(&Path) -> io::Result<()>,
    sync_now: bool,
) -> io::Result<T> {
    let tmp = temp_sibling(path);
    let done = (|| -> io::Result<T> {
        let mut file = files::create_new(&tmp)?;
        let value = fill(&mut file)?;
        if sync_now {
            file.sync_all()?;
        }
        place(&tmp)?;
        Ok(value)
    })();
    if done.is_err() {
        std::fs::remove_file(&tmp).ok();
    }
    let value = done?;
    if !sync_now {
        return Ok(value);
    }
    if let Some(dir) = path.parent() {
        sync_dir(if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        });
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweep_removes_what_dead_processes_left_and_nothing_else() {
        let tmp = tempfile::Builder::new()
            .prefix("revolve-sweep-")
            .tempdir()
            .unwrap();
        let dir = tmp.path().to_path_buf();
        // A pid no process has: above the kernel's pid_max.
        let dead = 4_194_304 + 1;
        let mine = std::process::id();
        let write = |name: &str| std::fs::write(dir.join(name), "x").unwrap();
        write(&format!(".a.md.{dead}-0.tmp"));
        std::fs::create_dir(dir.join(format!(".2026.{dead}-3.tmp"))).unwrap();
        write(&format!(".b.md.{mine}-1.tmp"));
        write(".c.md.1-0.tmp"); // pid 1 always runs
        write("a.md");
        write(&format!("d.{dead}-0.tmp")); // not hidden: not revolve's
        assert_eq!(temp_owner(&format!(".x.y.{dead}-7.tmp")), Some(dead));
        assert_eq!(sweep(&dir), 2);
        let mut left: Vec<String> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                format!(".b.md.{mine}-1.tmp"),
                ".c.md.1-0.tmp".into(),
                "a.md".into(),
                format!("d.{dead}-0.tmp")
            ]
        );
    }

    /// A fresh, empty temp folder for one test: its guard, which removes
    /// it when dropped, and its path.
    fn scratch(name: &str) -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::Builder::new()
            .prefix(&format!("revolve-fsx-{name}-"))
            .tempdir()
            .unwrap();
        let dir = tmp.path().to_path_buf();
        (tmp, dir)
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_replacement_is_whole_and_leaves_no_temp_file() {
        let (_tmp, dir) = scratch("replace");
        let path = dir.join("a.json");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"two");
        let n = write_atomic_with(&path, |f| f.write_all(b"three").map(|()| 5)).unwrap();
        assert_eq!((n, std::fs::read(&path).unwrap()), (5, b"three".to_vec()));
        // A fill that fails leaves the old file and no temp file.
        let err = write_atomic_with(&path, |f| {
            f.write_all(b"half")?;
            Err::<(), _>(io::Error::other("stop"))
        })
        .unwrap_err();
        assert_eq!(err.to_string(), "stop");
        assert_eq!(std::fs::read(&path).unwrap(), b"three");
        assert_eq!(names(&dir), ["a.json"]);
    }

    #[test]
    fn a_creation_never_overwrites() {
        let (_tmp, dir) = scratch("create");
        let path = dir.join("log.jsonl");
        create_atomic(&path, b"first\n").unwrap();
        let err = create_atomic(&path, b"second\n").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&path).unwrap(), b"first\n");
        assert_eq!(names(&dir), ["log.jsonl"]);
    }

    #[test]
    fn temp_names_are_hidden_and_unique() {
        let a = temp_sibling(Path::new("/d/x.md"));
        let b = temp_sibling(Path::new("/d/x.md"));
        assert_ne!(a, b);
        assert_eq!(a.parent(), Some(Path::new("/d")));
        let name = a.file_name().unwrap().to_str().unwrap();
        assert!(
            name.starts_with(".x.md.") && name.ends_with(".tmp"),
            "{name}"
        );
    }

    #[test]
    fn a_lock_is_exclusive_until_dropped_and_its_file_stays() {
        let (_tmp, dir) = scratch("lock");
        let path = dir.join(".lock");
        std::fs::write(&path, "kept").unwrap();
        let held = Lock::acquire(&path).unwrap();
        assert!(Lock::try_acquire(&path).unwrap().is_none());
        drop(held);
        let again = Lock::try_acquire(&path).unwrap();
        assert!(again.is_some());
        assert_eq!(std::fs::read(&path).unwrap(), b"kept", "never truncated");
        let missing = dir.join("no/such/.lock");
        assert_eq!(
            Lock::acquire(&missing).unwrap_err().to_string(),
            format!(
                "cannot create {}: No such file or directory (os error 2)",
                missing.display()
            )
        );
    }

    #[cfg(unix)]
    #[test]
    fn what_is_written_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let (_tmp, dir) = scratch("mode");
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        write_atomic(&dir.join("w"), b"x").unwrap();
        create_atomic(&dir.join("c"), b"x").unwrap();
        drop(Lock::acquire(&dir.join("l")).unwrap());
        for name in ["w", "c", "l"] {
            assert_eq!(mode(&dir.join(name)), files::FILE_MODE, "{name}");
        }
    }
}
