//! What a `shell` command changed in a git repository, so a rewind can
//! take it back too.
//!
//! Before the command: the repository's state is taken without touching
//! it or writing to it: `HEAD`, and every modified or untracked file `git
//! status` reports, hashed and kept in memory (up to [`KEEP_CAP`] bytes in
//! all), since git holds no copy of what they hold now. A clean tracked
//! file's content is `HEAD`'s. (No `git stash create`: it needs a committer
//! identity, which a fresh machine may not have.)
//!
//! After it: every file `git status` reports then or before, and every
//! file that differs between the two `HEAD`s (a checkout, a reset),
//! is compared with what it held; each one that changed is a
//! [`Change`], both contents stored in the content store (the old one
//! from memory or from git's objects).
//!
//! Not tracked: files git ignores, anything outside the repository, and
//! changes to reported files larger than what was kept. Outside a git
//! repository nothing is tracked, and the user is told so once.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use revolve_core::edit::Change;

use crate::edit::{self, Blobs};
use revolve_core::policy::KEEP_CAP;

/// A repository's state before a command.
pub struct Before {
    top: PathBuf,
    /// `HEAD` then: the content of every tracked file not reported.
    head: Option<String>,
    /// The files `git status` reported, with their hash then (`None`:
    /// absent, as a deleted tracked file is).
    dirty: BTreeMap<String, Option<String>>,
    /// The reported files' contents, by path (those that fit).
    kept: BTreeMap<String, Vec<u8>>,
}

fn git(dir: &Path, args: &[&str]) -> Option<Vec<u8>> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status.success().then_some(out.stdout)
}

fn text(bytes: Vec<u8>) -> String {
    String::from_utf8_lossy(&bytes).trim().to_owned()
}

/// `git status`: each path it reports (relative to the top), untracked
/// ones marked.
fn status(top: &Path) -> Option<Vec<(String, bool)>> {
    let out = git(
        top,
        &[
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--no-renames",
        ],
    )?;
    let mut paths = Vec::new();
    for entry in out.split(|&b| b == 0).filter(|e| e.len() > 3) {
        let untracked = entry.starts_with(b"??");
        paths.push((String::from_utf8_lossy(&entry[3..]).into_owned(), untracked));
    }
    Some(paths)
}

impl Before {
    /// The state of the repository `dir` is in; `None` outside git.
    pub fn take(dir: &Path) -> Option<Before> {
        let top = PathBuf::from(text(git(dir, &["rev-parse", "--show-toplevel"])?));
        let head = git(&top, &["rev-parse", "--verify", "-q", "HEAD"]).map(text);
        let mut dirty = BTreeMap::new();
        let mut kept = BTreeMap::new();
        let mut room = KEEP_CAP;
        for (path, _) in status(&top)? {
            let full = top.join(&path);
            let bytes = std::fs::read(&full).ok();
            let hash = bytes.as_deref().map(edit::hash);
            if let Some(bytes) = bytes {
                if bytes.len() <= room {
                    room -= bytes.len();
                    kept.insert(path.clone(), bytes);
                }
            }
            dirty.insert(path, hash);
        }
        Some(Before {
            top,
            head,
            dirty,
            kept,
        })
    }

    /// What the command changed, each change's contents stored.
    pub fn changes(self, blobs: &Blobs) -> Vec<Change> {
        let Some(now) = status(&self.top) else {
            return Vec::new();
        };
        let mut paths: BTreeSet<String> = self.dirty.keys().cloned().collect();
        paths.extend(now.into_iter().map(|(p, _)| p));
        let head = git(&self.top, &["rev-parse", "--verify", "-q", "HEAD"]).map(text);
        if let (Some(old), Some(new)) = (&self.head, &head) {
            if old != new {
                if let Some(out) = git(&self.top, &["diff", "--name-only", "-z", old, new]) {
                    paths.extend(
                        out.split(|&b| b == 0)
                            .filter(|p| !p.is_empty())
                            .map(|p| String::from_utf8_lossy(p).into_owned()),
                    );
                }
            }
        }
        let mut changes = Vec::new();
        for path in paths {
            let full = self.top.join(&path);
            if full.is_dir() {
                continue;
            }
            let after = std::fs::read(&full).ok();
            let before = self.content_before(&path);
            let before_hash = match self.dirty.get(&path) {
                Some(hash) => hash.clone(),
                None => before.as_deref().map(edit::hash),
            };
            let after_hash = after.as_deref().map(edit::hash);
            if before_hash == after_hash {
                continue;
            }
            // The old content must be restorable: else the change is not
            // offered to rewind (an untracked file too large to keep).
            if before_hash.is_some() && before.is_none() {
                continue;
            }
            // Stored under the hashes just taken, not hashed again.
            let stored = [(&before, &before_hash), (&after, &after_hash)]
                .into_iter()
                .try_for_each(|(content, hash)| match (content, hash) {
                    (Some(content), Some(hash)) => blobs.put_as(hash, content),
                    _ => Ok(()),
                });
            if stored.is_err() {
                continue;
            }
            // As git names it: relative to the repository's top.
            let shown = &path;
            let diff = if [&before, &after]
                .iter()
                .any(|c| c.as_ref().is_some_and(|c| c.contains(&0)))
            {
                format!("binary file {shown} changed\n")
            } else {
                revolve_core::edit::diff(
                    shown,
                    before.as_deref().map(String::from_utf8_lossy).as_deref(),
                    &after
                        .as_deref()
                        .map(String::from_utf8_lossy)
                        .unwrap_or_default(),
                )
            };
            changes.push(Change {
                path: full.to_string_lossy().into_owned(),
                before: before_hash,
                after: after_hash,
                diff,
            });
        }
        changes
    }

    /// What `path` held before the command: kept in memory (a file git
    /// reported), or `HEAD`'s (a clean tracked file), or nothing (it did
    /// not exist, or was too large to keep).
    fn content_before(&self, path: &str) -> Option<Vec<u8>> {
        if let Some(bytes) = self.kept.get(path) {
            return Some(bytes.clone());
        }
        if self.dirty.contains_key(path) {
            return None;
        }
        let head = self.head.as_ref()?;
        git(&self.top, &["cat-file", "blob", &format!("{head}:{path}")])
    }
}
