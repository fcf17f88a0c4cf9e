//! A session's inbox: messages `revolve send` and `revolve attach` deliver
//! to a running session, kept on disk until the session has logged them.
//!
//! The inbox of the session NAME of the working directory CWD is
//! `<state>/projects/<project>/inbox/<slug of CWD>/<NAME>/`. Each message is
//! one file, `<seq>.json`, numbered under the inbox's lock from `.seq`, the
//! last number given; numbers only grow. The receiver reads the files,
//! logs each as a user message carrying its number (the core drops numbers
//! at or below the log's `delivered` count), syncs, and only then
//! [`Inbox::settle`]s: removes the files it took and raises `.seq` to at
//! least what it took. So a message is never lost (its file stays until the
//! log holds it) and never taken twice (its number is in the log), across
//! a crash at any point on either side.
//!
//! No link is followed below `<state>/projects/`: a command that could
//! write there (the sandbox keeps the state root read-only, but not
//! everywhere: `--sandbox off`, another program) could swap the inbox, or
//! a folder above it, for a symlink, and `send` (unsandboxed) would then
//! write wherever it leads while the session reads letters planted there.
//! Each folder from the project's down is checked not to be a link (and
//! the inbox's real path to be its own) before a letter is written or
//! read, and the lock file is opened without following a link; a swapped
//! inbox is an error naming it, the message is not sent.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use revolve_core::Delivery;

use crate::files;
use crate::fsx::{self, Lock};
use crate::paths::{slug, Project, Roots};

/// One session's inbox.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inbox {
    dir: PathBuf,
    /// `<state>/projects`: below it no folder on the way may be a link.
    base: PathBuf,
}

/// A message as its file holds it.
#[derive(Debug, Serialize, Deserialize)]
struct Letter {
    seq: u64,
    from: String,
    text: String,
    #[serde(with = "time::serde::rfc3339")]
    at: OffsetDateTime,
}

impl Inbox {
    /// The inbox of the session `name` of the working directory `cwd`.
    pub fn of(roots: &Roots, project: &Project, cwd: &Path, name: &str) -> Inbox {
        Inbox {
            dir: roots
                .project(project)
                .join("inbox")
                .join(slug(cwd))
                .join(name),
            base: roots.state.join("projects"),
        }
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Queues a message; returns its number. The file is complete and
    /// synced before it appears under its name.
    pub fn send(&self, from: &str, text: &str, now: OffsetDateTime) -> io::Result<u64> {
        let _lock = self.lock()?;
        let seq = self.last()? + 1;
        let letter = Letter {
            seq,
            from: from.to_owned(),
            text: text.to_owned(),
            at: now,
        };
        let body = serde_json::to_vec(&letter).map_err(io::Error::other)?;
        fsx::write_atomic(&self.dir.join(format!("{seq:016}.json")), &body)?;
        fsx::write_atomic(&self.dir.join(".seq"), seq.to_string().as_bytes())?;
        Ok(seq)
    }

    /// The messages waiting, oldest first. A file that cannot be read or
    /// parsed is skipped and named in the second list (it stays where it
    /// is, for a person to look at).
    pub fn waiting(&self) -> io::Result<(Vec<Delivery>, Vec<PathBuf>)> {
        let mut out = Vec::new();
        let mut bad = Vec::new();
        match self.unlinked() {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((out, bad)),
            other => other?,
        }
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((out, bad)),
            Err(e) => return Err(e),
        };
        for entry in entries {
            let path = entry?.path();
            let is_letter = path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.ends_with(".json") && !n.starts_with('.'));
            if !is_letter {
                continue;
            }
            let letter = crate::regular::read_whole(&path, revolve_core::policy::OWN_FILE_CAP)
                .ok()
                .and_then(|b| serde_json::from_slice::<Letter>(&b).ok());
            match letter {
                Some(l) => out.push(Delivery {
                    seq: l.seq,
                    from: l.from,
                    text: l.text,
                }),
                None => bad.push(path),
            }
        }
        out.sort_by_key(|d| d.seq);
        Ok((out, bad))
    }

    /// Whether any message file is there (cheap: one directory read).
    pub fn has_mail(&self) -> bool {
        std::fs::read_dir(&self.dir).is_ok_and(|mut entries| {
            entries.any(|e| {
                e.ok()
                    .and_then(|e| e.file_name().into_string().ok())
                    .is_some_and(|n| n.ends_with(".json") && !n.starts_with('.'))
            })
        })
    }

    /// After the log holds every message numbered up to `delivered`: removes
    /// their files and keeps `.seq` at least that high, so numbers never go
    /// back even if `.seq` was lost.
    pub fn settle(&self, delivered: u64) -> io::Result<()> {
        if delivered == 0 && !self.dir.exists() {
            return Ok(());
        }
        let _lock = self.lock()?;
        let (waiting, _) = self.waiting()?;
        for d in waiting.iter().filter(|d| d.seq <= delivered) {
            match std::fs::remove_file(self.dir.join(format!("{:016}.json", d.seq))) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        if self.last()? < delivered {
            fsx::write_atomic(&self.dir.join(".seq"), delivered.to_string().as_bytes())?;
        }
        Ok(())
    }

    /// The last number given (0 when none).
    fn last(&self) -> io::Result<u64> {
        match crate::regular::read_text(&self.dir.join(".seq"), revolve_core::policy::OWN_FILE_CAP)
        {
            Ok(text) => text.trim().parse().map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{} is not a number", self.dir.join(".seq").display()),
                )
            }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(0),
            Err(e) => Err(e),
        }
    }

    fn lock(&self) -> io::Result<Lock> {
        self.unlinked_above()?;
        files::create_dir_all(&self.dir)?;
        self.unlinked()?;
        let lock = self.dir.join(".lock");
        if lock
            .symlink_metadata()
            .is_ok_and(|m| m.file_type().is_symlink())
        {
            return Err(swapped(&lock));
        }
        let held = Lock::acquire(&lock)?;
        // Checked again with the lock held: a swap in between is caught.
        self.unlinked()?;
        Ok(held)
    }

    /// That no folder from `<state>/projects` down to the inbox is a link
    /// and the inbox's real path is its own (see the module doc).
    fn unlinked(&self) -> io::Result<()> {
        self.unlinked_above()?;
        let meta = self.dir.symlink_metadata()?;
        if !meta.is_dir() {
            return Err(swapped(&self.dir));
        }
        let base = self.base.canonicalize()?;
        let real = self.dir.canonicalize()?;
        let rel = self.dir.strip_prefix(&self.base).unwrap_or(&self.dir);
        if real != base.join(rel) {
            return Err(swapped(&self.dir));
        }
        Ok(())
    }

    /// That no existing folder between `<state>/projects` and the inbox
    /// (excluded) is a link.
    fn unlinked_above(&self) -> io::Result<()> {
        let Ok(rel) = self.dir.strip_prefix(&self.base) else {
            return Ok(());
        };
        let mut at = self.base.clone();
        let parts: Vec<_> = rel.components().collect();
        for part in &parts[..parts.len().saturating_sub(1)] {
            at.push(part);
            match at.symlink_metadata() {
                Ok(m) if m.file_type().is_symlink() || !m.is_dir() => return Err(swapped(&at)),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// The error of an inbox (or a folder above it) that is not a folder of
/// its own.
fn swapped(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{} is a link or not a folder: the inbox was swapped, and revolve does not follow it; \
             remove it and send again",
            path.display()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    /// An inbox under a root not made yet, inside a temp folder whose
    /// guard (returned first) removes it all when dropped.
    fn inbox(name: &str) -> (tempfile::TempDir, Inbox, PathBuf) {
        let tmp = tempfile::Builder::new()
            .prefix(&format!("revolve-inbox-{name}-"))
            .tempdir()
            .unwrap();
        let root = tmp.path().join("root");
        (
            tmp,
            Inbox {
                dir: root.join("bob"),
                base: root.clone(),
            },
            root,
        )
    }

    #[test]
    fn messages_are_numbered_kept_until_settled_and_never_renumbered() {
        let (_tmp, inbox, _) = inbox("settle");
        let now = datetime!(2026-12-02 10:00 UTC);
        assert!(!inbox.has_mail());
        assert_eq!(inbox.send("alice", "one", now).unwrap(), 1);
        assert_eq!(inbox.send("attach", "two", now).unwrap(), 2);
        assert!(inbox.has_mail());
        let (waiting, bad) = inbox.waiting().unwrap();
        assert!(bad.is_empty());
        assert_eq!(
            waiting
                .iter()
                .map(|d| (d.seq, d.text.as_str()))
                .collect::<Vec<_>>(),
            vec![(1, "one"), (2, "two")]
        );
        inbox.settle(1).unwrap();
        assert_eq!(inbox.waiting().unwrap().0.len(), 1);
        inbox.settle(2).unwrap();
        assert!(!inbox.has_mail());
        // A lost `.seq` is raised again by the receiver's settle.
        std::fs::remove_file(inbox.dir().join(".seq")).unwrap();
        inbox.settle(2).unwrap();
        assert_eq!(inbox.send("alice", "three", now).unwrap(), 3);
    }

    #[cfg(unix)]
    #[test]
    fn a_swapped_inbox_is_neither_written_nor_read_through() {
        let (_tmp, inbox, root) = inbox("swapped");
        let now = datetime!(2026-12-02 10:00 UTC);
        inbox.send("alice", "one", now).unwrap();
        let elsewhere = root.with_extension("elsewhere");
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::rename(inbox.dir(), root.join("kept")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, inbox.dir()).unwrap();
        let err = inbox.send("alice", "two", now).unwrap_err();
        assert!(err.to_string().contains("the inbox was swapped"), "{err}");
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
        assert!(inbox.waiting().is_err());
    }

    #[test]
    fn a_garbled_file_is_named_and_left_alone() {
        let (_tmp, inbox, _) = inbox("garbled");
        let now = datetime!(2026-12-02 10:00 UTC);
        inbox.send("alice", "ok", now).unwrap();
        std::fs::write(inbox.dir().join("0000000000000009.json"), "{not json").unwrap();
        let (waiting, bad) = inbox.waiting().unwrap();
        assert_eq!(waiting.len(), 1);
        assert_eq!(bad.len(), 1);
    }
}
