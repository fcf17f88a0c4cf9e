//! What a `shell` command changed in a git repository, so a rewind can
//! take it back too.
//!
//! Before the command: the repository's state is taken without touching
//! it or writing to it: `HEAD`, and every modified or untracked file `git
//! status` reports, with its fingerprint (device, inode, size, mtime,
//! ctime); those that fit are read once, hashed and kept in memory (up to
//! [`KEEP_CAP`] bytes in all), since git holds no copy of what they hold
//! now. A clean tracked file's content is `HEAD`'s. (No `git stash
//! create`: it needs a committer identity, which a fresh machine may not
//! have.) Initialized submodules (`.gitmodules`) are taken the same way,
//! each as a repository of its own.
//!
//! After it: every file `git status` reports then or before, and every
//! file that differs between the two `HEAD`s (a checkout, a reset),
//! is compared with what it held; a file whose fingerprint did not change
//! (and was not written in the second before it was taken, when a
//! timestamp cannot tell two writes apart) is not read again. Each one
//! that changed is a [`Change`], both contents stored in the content store
//! (the old one from memory or from git's objects), its diff with the API
//! keys replaced by `[key]` (the blobs hold the real bytes: a restore must
//! give the user's file back exactly).
//!
//! Files are opened one folder at a time from the repository's top, never
//! following a symlink, non-blocking, and only a regular file is read (its
//! type taken from the open handle), at most [`KEEP_CAP`] bytes of it. So
//! a FIFO, a device or a link (to `/dev/zero`, or out of the tree) is
//! never read nor waited on.
//!
//! Not tracked, and said so in the command's result ([`Tracked::notes`]):
//! a change to a file larger than what is kept, to or from something that
//! is not a regular file (a symlink, a FIFO), and inside a nested
//! repository that is not a submodule. Not tracked and not said: files git
//! ignores, anything outside the repository. Outside a git repository
//! nothing is tracked, and the user is told so once.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::Read;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, SystemTime};

use revolve_core::edit::{Change, Diff};
use rustix::fs::{Mode, OFlags};

use crate::edit::{self, Blobs};
use revolve_core::policy::KEEP_CAP;
use revolve_store::git::Git;

/// How recent a file's change may be for its fingerprint not to be
/// trusted: file timestamps come from a coarse clock, so two writes within
/// one tick look the same.
const RACY: Duration = Duration::from_secs(2); // not policy: a timestamp's uncertainty, not a choice

/// How deep submodules inside submodules are followed.
const SUBMODULE_DEPTH: usize = 4; // not policy: a bound on recursion, not a choice

/// What a command changed: the changes rewind can take back, and lines
/// saying what changed but could not be tracked.
#[derive(Default)]
pub(crate) struct Tracked {
    pub changes: Vec<Change>,
    pub notes: Vec<String>,
}

/// How many untracked changes a result names; the rest are counted.
const NOTES_SHOWN: usize = 20; // not policy: a bound on one result line, as list_dir's

impl Tracked {
    /// The line a command's result ends with when something changed but
    /// could not be tracked: `[not tracked for rewind: PATH: WHY; …]`.
    pub(crate) fn note(&self) -> Option<String> {
        if self.notes.is_empty() {
            return None;
        }
        let mut line = self.notes[..self.notes.len().min(NOTES_SHOWN)].join("; ");
        if self.notes.len() > NOTES_SHOWN {
            line.push_str(&format!("; and {} more", self.notes.len() - NOTES_SHOWN));
        }
        Some(format!("\n[not tracked for rewind: {line}]"))
    }
}

/// A repository's state before a command.
pub(crate) struct Before {
    top: PathBuf,
    /// `git` at the top, its filter drivers read once.
    git: Git,
    /// When the state was taken.
    taken: SystemTime,
    /// `HEAD` then: the content of every tracked file not reported.
    head: Option<String>,
    /// The files `git status` reported, as they were.
    dirty: BTreeMap<String, Was>,
    /// The reported files' contents, by path (those that fit).
    kept: BTreeMap<String, Vec<u8>>,
    /// The initialized submodules, taken on their own.
    subs: Vec<Before>,
}

/// What a path held, as seen through a handle opened without following a
/// link.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Was {
    Absent,
    /// Not a regular file (named), never read.
    Other(&'static str),
    /// A regular file: its fingerprint, and its hash when it was read
    /// (`None`: too large to keep).
    File {
        stamp: Stamp,
        hash: Option<String>,
    },
}

/// What tells one version of a file from another without reading it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

/// A path opened: a regular file with its fingerprint, or what else it is.
enum Opened {
    Absent,
    Other(&'static str),
    File(File, Stamp),
}

fn git(git: &Git, args: &[&str]) -> Option<Vec<u8>> {
    let out = git.command().args(args).output().ok()?;
    out.status.success().then_some(out.stdout)
}

fn text(bytes: Vec<u8>) -> String {
    String::from_utf8_lossy(&bytes).trim().to_owned()
}

/// `git status`: each path it reports (relative to the top), untracked
/// ones marked.
fn status(top: &Git) -> Option<Vec<(String, bool)>> {
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
    pub(crate) fn take(dir: &Path) -> Option<Before> {
        Before::take_at(dir, 0)
    }

    fn take_at(dir: &Path, depth: usize) -> Option<Before> {
        let found = Git::at(dir);
        let top = PathBuf::from(text(git(&found, &["rev-parse", "--show-toplevel"])?));
        let at_top = found.within(&top);
        let taken = SystemTime::now();
        let head = git(&at_top, &["rev-parse", "--verify", "-q", "HEAD"]).map(text);
        let mut dirty = BTreeMap::new();
        let mut kept = BTreeMap::new();
        let mut room = KEEP_CAP;
        for (path, _) in status(&at_top)? {
            let was = match open_beneath(&top, &path) {
                Opened::Absent => Was::Absent,
                Opened::Other(kind) => Was::Other(kind),
                Opened::File(file, stamp) => {
                    // Read only what fits: a file past the cap is known
                    // by its fingerprint alone.
                    let mut hash = None;
                    if stamp.size <= room as u64 {
                        if let Some(bytes) = read_capped(file, room) {
                            room -= bytes.len();
                            hash = Some(edit::hash(&bytes));
                            kept.insert(path.clone(), bytes);
                        }
                    }
                    Was::File { stamp, hash }
                }
            };
            dirty.insert(path, was);
        }
        let mut subs = Vec::new();
        if depth < SUBMODULE_DEPTH {
            for sub in submodules(&at_top, &top) {
                if let Some(before) = Before::take_at(&sub, depth + 1) {
                    // Its own top, resolved by git, is the folder itself:
                    // not the superproject's (not checked out), nor
                    // another repository a symlink on the way leads to.
                    if before.top == sub {
                        subs.push(before);
                    }
                }
            }
        }
        Some(Before {
            top,
            git: at_top,
            taken,
            head,
            dirty,
            kept,
            subs,
        })
    }

    /// What the command changed, each change's contents stored, and what
    /// changed but could not be tracked.
    pub(crate) fn changes(self, blobs: &Blobs) -> Tracked {
        let mut tracked = Tracked::default();
        self.changes_into(blobs, &mut tracked);
        tracked
    }

    fn changes_into(mut self, blobs: &Blobs, out: &mut Tracked) {
        let subs = std::mem::take(&mut self.subs);
        let sub_tops: BTreeSet<PathBuf> = subs.iter().map(|s| s.top.clone()).collect();
        for sub in subs {
            sub.changes_into(blobs, out);
        }
        let Some(now) = status(&self.git) else {
            return;
        };
        let mut paths: BTreeSet<String> = self.dirty.keys().cloned().collect();
        paths.extend(now.into_iter().map(|(p, _)| p));
        paths.extend(self.committed());
        // What HEAD held of the paths git did not report before, asked
        // at once (a command may change thousands of clean files).
        let mut head = Head {
            entries: self.head_entries(&paths),
            objects: Objects::new(&self.git),
        };
        for path in paths {
            if let Some(change) = self.change(&path, &sub_tops, &mut head, blobs, &mut out.notes) {
                out.changes.push(change);
            }
        }
    }

    /// The paths a commit made during the command changed: those between
    /// the HEAD before and the HEAD now.
    fn committed(&self) -> Vec<String> {
        let mut paths = Vec::new();
        let head = git(&self.git, &["rev-parse", "--verify", "-q", "HEAD"]).map(text);
        if let (Some(old), Some(new)) = (&self.head, &head) {
            if old != new {
                if let Some(out) = git(
                    &self.git,
                    &[
                        "diff",
                        "--no-ext-diff",
                        "--no-textconv",
                        "--name-only",
                        "-z",
                        old,
                        new,
                    ],
                ) {
                    paths.extend(
                        out.split(|&b| b == 0)
                            .filter(|p| !p.is_empty())
                            .map(|p| String::from_utf8_lossy(p).into_owned()),
                    );
                }
            }
        }
        paths
    }

    /// The change to `path` the command made, stored in `blobs`: `None`
    /// when it made none, or when it cannot be told (said in `notes`).
    fn change(
        &self,
        path: &str,
        sub_tops: &BTreeSet<PathBuf>,
        head: &mut Head,
        blobs: &Blobs,
        notes: &mut Vec<String>,
    ) -> Option<Change> {
        let full = self.top.join(path);
        let was = self.dirty.get(path);
        let opened = open_beneath(&self.top, path);
        // Unchanged by its fingerprint: not read again.
        if let (Some(Was::File { stamp, hash }), Opened::File(_, now)) = (was, &opened) {
            if stamp == now && (hash.is_none() || !self.racy(stamp)) {
                return None;
            }
        }
        let after = match opened {
            Opened::Absent => Ok(None),
            Opened::Other("a directory") => {
                // A submodule is taken on its own; another nested
                // repository is not tracked.
                let sub = self.top.join(path.trim_end_matches('/'));
                if !sub_tops.contains(&sub) && !self.is_submodule(path) {
                    notes.push(format!(
                        "{}: a nested repository, whose changes are not tracked",
                        path.trim_end_matches('/')
                    ));
                } else if !sub_tops.contains(&sub) {
                    notes.push(format!(
                        "{path}: a submodule not checked out, whose changes are not tracked"
                    ));
                }
                return None;
            }
            Opened::Other(kind) => {
                if was == Some(&Was::Other(kind)) {
                    return None;
                }
                Err(format!("it is now {kind}"))
            }
            Opened::File(file, _) => read_capped(file, KEEP_CAP)
                .map(Some)
                .ok_or_else(|| format!("it is now over {} MiB", KEEP_CAP >> 20)),
        };
        let before = match was {
            Some(Was::Absent) => Ok(None),
            Some(Was::Other(kind)) => Err(format!("it was {kind}")),
            Some(Was::File { .. }) => self
                .kept
                .get(path)
                .cloned()
                .map(Some)
                .ok_or_else(|| "it was too large to keep".to_owned()),
            None => self.head_content(path, head),
        };
        let (before, after) = match (before, after) {
            (Ok(before), Ok(after)) => (before, after),
            (Err(why), _) | (_, Err(why)) => {
                notes.push(format!("{path}: {why}"));
                return None;
            }
        };
        let before_hash = before.as_deref().map(edit::hash);
        let after_hash = after.as_deref().map(edit::hash);
        if before_hash == after_hash {
            return None;
        }
        // Stored under the hashes just taken, not hashed again.
        let stored = [(&before, &before_hash), (&after, &after_hash)]
            .into_iter()
            .try_for_each(|(content, hash)| match (content, hash) {
                (Some(content), Some(hash)) => blobs.put_as(hash, content),
                _ => Ok(()),
            });
        if stored.is_err() {
            notes.push(format!("{path}: its versions could not be stored"));
            return None;
        }
        // As git names it: relative to the repository's top.
        let shown = path;
        let diff = if [&before, &after]
            .iter()
            .any(|c| c.as_ref().is_some_and(|c| c.contains(&0)))
        {
            Diff {
                text: format!("binary file {shown} changed\n"),
                ..Diff::default()
            }
        } else {
            // Of the bytes (a changed byte is a changed line), each
            // line shown as read_file shows it, counted whole.
            revolve_core::edit::diff_bytes(
                shown,
                before.as_deref(),
                after.as_deref().unwrap_or_default(),
                &crate::keys(),
            )
        };
        Some(Change {
            path: full.to_string_lossy().into_owned(),
            before: before_hash,
            after: after_hash,
            // The blobs hold the real bytes, to restore them exactly;
            // what is logged and shown holds no key.
            diff: Diff {
                text: crate::redact_keys(diff.text),
                ..diff
            },
        })
    }

    /// Whether a fingerprint taken before the command is too recent to
    /// tell a later write from it.
    fn racy(&self, stamp: &Stamp) -> bool {
        let taken = self
            .taken
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let changed = stamp.mtime.0.max(stamp.ctime.0);
        changed.saturating_add(RACY.as_secs() as i64) >= taken as i64
    }

    /// Whether `HEAD` holds `path` as a submodule.
    fn is_submodule(&self, path: &str) -> bool {
        self.head.as_ref().is_some_and(|head| {
            entry(&self.git, head, path.trim_end_matches('/'))
                .is_some_and(|(mode, _, _)| mode == "160000")
        })
    }

    /// What a file git did not report held before the command: `HEAD`'s
    /// (a clean tracked file), or nothing (it did not exist); an error
    /// when that is not a file's content or is too large.
    fn head_content(&self, path: &str, head: &mut Head) -> Result<Option<Vec<u8>>, String> {
        let Some((mode, object, size)) = head.entries.get(path) else {
            return Ok(None);
        };
        match mode.as_str() {
            "120000" => return Err("it was a symlink".into()),
            "160000" => return Err("it was a submodule".into()),
            _ => {}
        }
        if *size > KEEP_CAP as u64 {
            return Err(format!("it was over {} MiB", KEEP_CAP >> 20));
        }
        head.objects
            .blob(object)
            .map(Some)
            .ok_or_else(|| "git did not give its old content".into())
    }

    /// The entries of `HEAD` (mode, object, size) at those of `paths`
    /// git did not report before the command, by path: one `git ls-tree`
    /// for up to [`PATHS_AT_ONCE`] paths.
    fn head_entries(&self, paths: &BTreeSet<String>) -> BTreeMap<String, Entry> {
        let mut entries = BTreeMap::new();
        let Some(head) = &self.head else {
            return entries;
        };
        let clean: Vec<&str> = paths
            .iter()
            .filter(|p| !self.dirty.contains_key(*p))
            .map(String::as_str)
            .collect();
        for chunk in clean.chunks(PATHS_AT_ONCE) {
            let mut args = vec!["ls-tree", "-z", "-l", head.as_str(), "--"];
            args.extend_from_slice(chunk);
            let Some(out) = self
                .git
                .command()
                .env("GIT_LITERAL_PATHSPECS", "1")
                .args(&args)
                .output()
                .ok()
                .filter(|o| o.status.success())
            else {
                continue;
            };
            for line in out.stdout.split(|&b| b == 0) {
                if let Some((path, entry)) = parse_entry(line) {
                    entries.insert(path, entry);
                }
            }
        }
        entries
    }
}

/// How many paths one `git ls-tree` is given (far under any platform's
/// limit on a command line).
const PATHS_AT_ONCE: usize = 1_000; // not policy: a bound on one command line

/// A tree entry: its mode, object and size (0 for a submodule).
type Entry = (String, String, u64);

/// What `HEAD` held, for the comparison after a command.
struct Head {
    entries: BTreeMap<String, Entry>,
    objects: Objects,
}

/// Objects read from the repository through one `git cat-file --batch`,
/// started at the first one asked (a command that changed nothing clean
/// starts none).
struct Objects {
    git: Git,
    batch: Option<Batch>,
}

struct Batch {
    child: std::process::Child,
    input: std::process::ChildStdin,
    output: std::io::BufReader<std::process::ChildStdout>,
}

impl Objects {
    fn new(git: &Git) -> Objects {
        Objects {
            git: git.clone(),
            batch: None,
        }
    }

    /// The content of the blob `object`; `None` when git gives none (a
    /// missing object, or not a blob). After a failure the batch ends, and
    /// the next object asked starts a new one, so one bad answer never
    /// leaves the stream out of step.
    fn blob(&mut self, object: &str) -> Option<Vec<u8>> {
        use std::io::{BufRead, Write};
        if self.batch.is_none() {
            let mut child = self
                .git
                .command()
                .args(["cat-file", "--batch"])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .ok()?;
            let input = child.stdin.take()?;
            let output = std::io::BufReader::new(child.stdout.take()?);
            self.batch = Some(Batch {
                child,
                input,
                output,
            });
        }
        let batch = self.batch.as_mut()?;
        let read = (|| {
            writeln!(batch.input, "{object}").ok()?;
            batch.input.flush().ok()?;
            // `<object> blob <size>`, the bytes and a line end; or
            // `<object> missing`.
            let mut header = Vec::new();
            batch.output.read_until(b'\n', &mut header).ok()?;
            let header = String::from_utf8_lossy(&header);
            let mut fields = header.split_whitespace();
            let (_, kind, size) = (fields.next()?, fields.next()?, fields.next()?);
            let size: usize = size.parse().ok()?;
            let mut bytes = vec![0; size + 1];
            batch.output.read_exact(&mut bytes).ok()?;
            bytes.pop();
            (kind == "blob").then_some(bytes)
        })();
        if read.is_none() {
            self.batch = None;
        }
        read
    }
}

impl Drop for Batch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The mode, object and size (0 for a submodule) of `path` in commit
/// `head`; `None` when it holds no such path.
fn entry(git: &Git, head: &str, path: &str) -> Option<Entry> {
    let out = self::git(git, &["ls-tree", "-z", "-l", head, "--", path])?;
    let line = out.split(|&b| b == 0).next()?;
    parse_entry(line).map(|(_, entry)| entry)
}

/// One line of `git ls-tree -z -l`: `MODE KIND OBJECT SIZE\tPATH`.
fn parse_entry(line: &[u8]) -> Option<(String, Entry)> {
    let line = String::from_utf8_lossy(line);
    let (meta, path) = line.split_once('\t')?;
    let mut fields = meta.split_whitespace();
    let mode = fields.next()?.to_owned();
    let _kind = fields.next()?;
    let object = fields.next()?.to_owned();
    let size = fields.next()?.parse().unwrap_or(0);
    Some((path.to_owned(), (mode, object, size)))
}

/// The folders of the submodules `.gitmodules` names that are checked
/// out (hold a `.git`).
fn submodules(git: &Git, top: &Path) -> Vec<PathBuf> {
    // `.gitmodules` must be a regular file before git reads it (a FIFO
    // would block git).
    if !matches!(open_beneath(top, ".gitmodules"), Opened::File(..)) {
        return Vec::new();
    }
    let Some(out) = self::git(
        git,
        &[
            "config",
            "-z",
            "--file",
            ".gitmodules",
            "--get-regexp",
            r"^submodule\..*\.path$",
        ],
    ) else {
        return Vec::new();
    };
    out.split(|&b| b == 0)
        .filter_map(|entry| {
            let entry = String::from_utf8_lossy(entry);
            let (_, path) = entry.split_once('\n')?;
            let inside = Path::new(path)
                .components()
                .all(|c| matches!(c, Component::Normal(_)));
            // A folder reached through no symlink, holding a `.git`.
            let folder = inside
                && !path.is_empty()
                && matches!(open_beneath(top, path), Opened::Other("a directory"));
            let dir = top.join(path);
            (folder && dir.join(".git").symlink_metadata().is_ok()).then_some(dir)
        })
        .collect()
}

/// Opens `rel` under `top` one folder at a time, following no symlink, so
/// nothing outside the repository and nothing but a regular file is ever
/// opened for reading; non-blocking, so a FIFO never waits.
fn open_beneath(top: &Path, rel: &str) -> Opened {
    let mut names = Vec::new();
    for part in Path::new(rel).components() {
        match part {
            Component::Normal(name) => names.push(name),
            _ => return Opened::Other("outside the repository"),
        }
    }
    let Some((last, folders)) = names.split_last() else {
        return Opened::Other("a directory");
    };
    let folder = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let Ok(mut dir) = rustix::fs::open(top, folder, Mode::empty()) else {
        return Opened::Absent;
    };
    for name in folders {
        match rustix::fs::openat(&dir, *name, folder | OFlags::NOFOLLOW, Mode::empty()) {
            Ok(next) => dir = next,
            Err(_) => {
                // A folder swapped for a link is not walked through; a
                // folder that is gone (or is now a file) holds nothing.
                let link = rustix::fs::statat(&dir, *name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)
                    .is_ok_and(|st| {
                        rustix::fs::FileType::from_raw_mode(st.st_mode)
                            == rustix::fs::FileType::Symlink
                    });
                return if link {
                    Opened::Other("behind a symlink")
                } else {
                    Opened::Absent
                };
            }
        }
    }
    let flags =
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let fd = match rustix::fs::openat(&dir, *last, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) | Err(rustix::io::Errno::NOTDIR) => return Opened::Absent,
        Err(rustix::io::Errno::LOOP) => return Opened::Other("a symlink"),
        Err(rustix::io::Errno::NXIO) => return Opened::Other("a socket"),
        Err(_) => return Opened::Other("unreadable"),
    };
    let file = File::from(fd);
    let Ok(meta) = file.metadata() else {
        return Opened::Other("unreadable");
    };
    let kind = meta.file_type();
    if !kind.is_file() {
        return Opened::Other(if kind.is_dir() {
            "a directory"
        } else if kind.is_symlink() {
            "a symlink"
        } else {
            use std::os::unix::fs::FileTypeExt;
            if kind.is_fifo() {
                "a FIFO"
            } else if kind.is_char_device() || kind.is_block_device() {
                "a device"
            } else {
                "not a regular file"
            }
        });
    }
    use std::os::unix::fs::MetadataExt;
    let stamp = Stamp {
        dev: meta.dev(),
        ino: meta.ino(),
        size: meta.size(),
        mtime: (meta.mtime(), meta.mtime_nsec()),
        ctime: (meta.ctime(), meta.ctime_nsec()),
    };
    Opened::File(file, stamp)
}

/// At most `cap` bytes of `file`; `None` when it holds more (or cannot be
/// read).
fn read_capped(file: File, cap: usize) -> Option<Vec<u8>> {
    let mut bytes = Vec::new();
    file.take(cap as u64 + 1).read_to_end(&mut bytes).ok()?;
    (bytes.len() <= cap).then_some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh, empty temp folder for one test: its guard, which removes
    /// it when dropped, and its path.
    fn dir(name: &str) -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::Builder::new()
            .prefix(&format!("revolve-track-{name}-"))
            .tempdir()
            .unwrap();
        let dir = tmp.path().to_path_buf();
        (tmp, dir)
    }

    fn kind(top: &Path, rel: &str) -> String {
        match open_beneath(top, rel) {
            Opened::Absent => "absent".into(),
            Opened::Other(kind) => kind.into(),
            Opened::File(_, stamp) => format!("file of {}", stamp.size),
        }
    }

    #[test]
    fn only_regular_files_beneath_the_top_open_and_no_link_is_followed() {
        let (_tmp, top) = dir("open");
        std::fs::write(top.join("file"), "four").unwrap();
        std::fs::create_dir(top.join("d")).unwrap();
        std::fs::write(top.join("d/inner"), "in").unwrap();
        std::os::unix::fs::symlink("/dev/zero", top.join("zero")).unwrap();
        std::os::unix::fs::symlink("file", top.join("link")).unwrap();
        std::os::unix::fs::symlink("/dev", top.join("dev")).unwrap();
        let made = std::process::Command::new("mkfifo")
            .arg(top.join("fifo"))
            .status()
            .unwrap();
        assert!(made.success());
        assert_eq!(kind(&top, "file"), "file of 4");
        assert_eq!(kind(&top, "d/inner"), "file of 2");
        assert_eq!(kind(&top, "d"), "a directory");
        assert_eq!(kind(&top, "zero"), "a symlink");
        assert_eq!(kind(&top, "link"), "a symlink");
        assert_eq!(kind(&top, "dev/zero"), "behind a symlink");
        assert_eq!(kind(&top, "fifo"), "a FIFO");
        assert_eq!(kind(&top, "gone"), "absent");
        assert_eq!(kind(&top, "file/below"), "absent");
        assert_eq!(kind(&top, "../file"), "outside the repository");
    }

    #[test]
    fn a_read_stops_past_the_cap() {
        let (_tmp, top) = dir("cap");
        std::fs::write(top.join("f"), "12345").unwrap();
        let open = || match open_beneath(&top, "f") {
            Opened::File(file, _) => file,
            _ => panic!("a file"),
        };
        assert_eq!(read_capped(open(), 5).as_deref(), Some(&b"12345"[..]));
        assert_eq!(read_capped(open(), 4), None);
    }

    #[test]
    fn the_note_names_at_most_a_bound_of_paths() {
        let mut tracked = Tracked::default();
        assert_eq!(tracked.note(), None);
        tracked.notes = (0..NOTES_SHOWN + 3).map(|i| format!("f{i}: why")).collect();
        let note = tracked.note().unwrap();
        assert!(note.starts_with("\n[not tracked for rewind: f0: why; f1: why"));
        assert!(note.ends_with("; and 3 more]"), "{note}");
    }

    /// A repository at a temp folder with `files` committed.
    fn committed(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            std::process::Command::new("git")
                .args(args)
                .current_dir(dir.path())
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_CEILING_DIRECTORIES", dir.path().parent().unwrap())
                .output()
                .is_ok_and(|o| o.status.success())
        };
        assert!(
            git(&["init", "-q"]),
            "this test needs git on PATH (Debian: apt-get install git)"
        );
        for (rel, content) in files {
            let path = dir.path().join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content).unwrap();
        }
        assert!(git(&["add", "."]));
        assert!(git(&[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "start"
        ]));
        dir
    }

    #[test]
    fn head_entries_come_in_one_batch_and_objects_survive_a_missing_one() {
        let files = [
            ("a/b/deep.txt", "deep\n"),
            ("with space.txt", "spaced\n"),
            ("été.txt", "summer\n"),
            ("dirty.txt", "dirty\n"),
        ];
        let repo = committed(&files);
        std::fs::write(repo.path().join("dirty.txt"), "changed\n").unwrap();
        let before = Before::take(repo.path()).expect("a repository");
        assert!(before.dirty.contains_key("dirty.txt"));
        let paths: BTreeSet<String> = files
            .iter()
            .map(|(p, _)| p.to_string())
            .chain(["not-there.txt".to_owned()])
            .collect();
        // Only the paths git did not report: the others' content is kept.
        let entries = before.head_entries(&paths);
        let named: Vec<&str> = entries.keys().map(String::as_str).collect();
        assert_eq!(named, ["a/b/deep.txt", "with space.txt", "été.txt"]);
        let mut objects = Objects::new(&before.git);
        let (_, deep, size) = &entries["a/b/deep.txt"];
        assert_eq!(*size, 5);
        assert_eq!(objects.blob(deep).as_deref(), Some(&b"deep\n"[..]));
        assert_eq!(objects.blob(&"0".repeat(40)), None);
        let (_, summer, _) = &entries["été.txt"];
        assert_eq!(objects.blob(summer).as_deref(), Some(&b"summer\n"[..]));
    }
}
