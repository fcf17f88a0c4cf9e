//! Running sessions: one lock file per running session, held with an OS file
//! lock for the life of the process. A file whose lock is free belongs to a
//! process that died; it does not count as running and is cleaned up.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// What a lock file says about its session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Running {
    pub id: String,
    pub name: Option<String>,
    pub cwd: String,
    pub pid: u32,
}

/// A claim on a running session, released (and its file removed) on drop.
#[derive(Debug)]
pub struct Claim {
    file: File,
    path: PathBuf,
}

impl Claim {
    /// Claims `<dir>/<id>.lock` for this process.
    pub fn take(dir: &Path, running: &Running) -> io::Result<Claim> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(format!("{}.lock", running.id));
        // A listing holds each lock file's lock for a moment (to see whether
        // it is free): a few short retries tell that from a real owner.
        let mut tries = 0;
        let (file, locked) = loop {
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)?;
            match file.try_lock() {
                Err(TryLockError::WouldBlock) if tries < 20 => {
                    tries += 1;
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                // The owner we waited for may have ended meanwhile, removing
                // the file before unlocking it: the lock we got is then on a
                // file nobody else can see, while a newcomer may hold a new
                // one at the path. Only a lock on the file at the path counts.
                Ok(()) if !same_file(&file, &path) => {
                    if tries >= 20 {
                        break (file, Err(TryLockError::WouldBlock));
                    }
                    tries += 1;
                }
                other => break (file, other),
            }
        };
        match locked {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!(
                        "session {} is already running in another process",
                        running.id
                    ),
                ))
            }
            Err(TryLockError::Error(e)) => return Err(e),
        }
        let mut claim = Claim { file, path };
        claim.update(running)?;
        Ok(claim)
    }

    /// Rewrites what the lock file says (after a rename).
    pub fn update(&mut self, running: &Running) -> io::Result<()> {
        self.file.set_len(0)?;
        let text = serde_json::to_string(running).map_err(io::Error::other)?;
        self.file.write_all_at(text.as_bytes(), 0)
    }
}

/// Whether `path` still names the open `file` (same device and inode).
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        // Remove first, then unlock by closing: another process that opens
        // the path after this sees no file rather than a free lock.
        std::fs::remove_file(&self.path).ok();
        self.file.flush().ok();
    }
}

/// The sessions running now, from the lock files in `dir`. Files whose lock
/// is free are stale and not returned.
pub fn running(dir: &Path) -> Vec<Running> {
    scan(dir, false)
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
                let text = std::fs::read_to_string(&path).unwrap_or_default();
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

/// A lock held while a new session picks its name and claims it, so two
/// sessions started at the same moment never pick the same name.
#[derive(Debug)]
pub struct NamingLock {
    _file: File,
}

impl NamingLock {
    /// Blocks until this process is the only one naming a session in `dir`.
    pub fn acquire(dir: &Path) -> io::Result<NamingLock> {
        std::fs::create_dir_all(dir)?;
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(dir.join(".naming"))?;
        file.lock()?;
        Ok(NamingLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_is_running_until_dropped_and_stale_files_are_cleaned() {
        let dir = std::env::temp_dir().join(format!("revolve-reg-{}", std::process::id()));
        std::fs::remove_dir_all(&dir).ok();
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
        std::fs::remove_dir_all(&dir).ok();
    }
}
