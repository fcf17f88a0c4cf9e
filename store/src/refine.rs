//! The refinement store and what `/refine`, `/refine history` and
//! `/refine undo` do on disk. The decisions (what a reply changes, which
//! entry an undo restores, the history's text) are `revolve_core::refine`'s.
//!
//! # Crash safety
//!
//! An entry's `meta.cfg` says `pending = true` while what it guards is under
//! way: a rewrite (then the entry is not undone) or an undo (then it is).
//! Every file is written atomically. [`recover`], run at every start,
//! finishes what a crash interrupted: a pending rewrite is rolled back to its
//! snapshot and its entry removed (memory as it was, no entry), a pending
//! undo is completed. So memory is always either as it was or as the
//! rewrite (or undo) left it, and the store agrees with it.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use revolve_core::memory::{Scope, SnapshotMeta};
use revolve_core::refine::{self, Change, Entry, Restore};

use crate::files;
use crate::fsx::{self, Lock};
use crate::memory::{self, MemoryDirs};

/// The lock held across a memory change (snapshot, write, settle), an undo
/// or a recovery, so that one process's recovery never rolls back another's
/// change in flight. Released when dropped.
pub fn lock(state_root: &Path) -> io::Result<Lock> {
    let dir = state_root.join("refinements");
    files::create_dir_all(&dir)?;
    Lock::acquire(&dir.join(".lock"))
}

/// The memory directory of a scope.
fn dir(dirs: &MemoryDirs, scope: Scope) -> &Path {
    match scope {
        Scope::Global => &dirs.global,
        Scope::Project => &dirs.project,
    }
}

const SCOPES: [Scope; 2] = [Scope::Global, Scope::Project];

/// Every entry of this project's memory changes (unreadable ones left
/// out). Each change snapshots both directories under one name; the global
/// directory is shared by every project, so its entries count here only
/// when this project's directory has one of the same name.
pub fn entries(state_root: &Path, dirs: &MemoryDirs) -> io::Result<Vec<Entry>> {
    let mut out = Vec::new();
    for scope in [Scope::Project, Scope::Global] {
        let store = memory::refinements(state_root, dir(dirs, scope))?;
        let Ok(read) = fs::read_dir(&store) else {
            continue;
        };
        for entry in read.flatten() {
            let stamp = entry.file_name().to_string_lossy().into_owned();
            if stamp.starts_with('.') {
                continue;
            }
            if scope == Scope::Global && !out.iter().any(|e: &Entry| e.stamp == stamp) {
                continue;
            }
            let cfg = crate::regular::read_text(
                &entry.path().join("meta.cfg"),
                revolve_core::policy::OWN_FILE_CAP,
            )
            .unwrap_or_default();
            if let Ok(meta) = SnapshotMeta::parse_cfg(&cfg) {
                out.push(Entry { scope, stamp, meta });
            }
        }
    }
    Ok(out)
}

/// The regular, non-hidden files of a folder, by name.
pub fn files(dir: &Path) -> io::Result<BTreeMap<String, Vec<u8>>> {
    let mut out = BTreeMap::new();
    let Ok(read) = fs::read_dir(dir) else {
        return Ok(out);
    };
    for entry in read.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || !entry.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        out.insert(
            name,
            crate::regular::read_whole(&entry.path(), revolve_core::policy::OWN_FILE_CAP)?,
        );
    }
    Ok(out)
}

fn entry_dir(state_root: &Path, dirs: &MemoryDirs, e: &Entry) -> io::Result<PathBuf> {
    Ok(memory::refinements(state_root, dir(dirs, e.scope))?.join(&e.stamp))
}

fn write_meta(path: &Path, meta: &SnapshotMeta) -> io::Result<()> {
    fsx::write_atomic(&path.join("meta.cfg"), meta.to_cfg().as_bytes())
}

/// (Call [`snapshot`], then [`settle`] or [`discard`], while holding
/// [`lock`].)
///
/// Takes a snapshot entry of both memory directories (global and project,
/// the whole memory) under one name, marked pending: the name is `stamp`, or
/// `stamp-2`… when that second is taken. `meta.files` names the files the
/// change will touch, `scope/name`; each directory's entry lists its own.
pub fn snapshot(
    state_root: &Path,
    dirs: &MemoryDirs,
    stamp: &str,
    meta: &SnapshotMeta,
) -> io::Result<String> {
    let mut stamp = stamp.to_owned();
    for scope in SCOPES {
        let prefix = format!("{}/", scope.as_str());
        let entry_meta = SnapshotMeta {
            files: meta
                .files
                .iter()
                .filter(|(f, _)| f.starts_with(&prefix))
                .cloned()
                .collect(),
            pending: true,
            ..meta.clone()
        };
        let entry = memory::snapshot(state_root, dir(dirs, scope), &stamp, &entry_meta)?;
        if let Some(name) = entry.file_name() {
            stamp = name.to_string_lossy().into_owned();
        }
    }
    Ok(stamp)
}

/// Removes the entry `stamp` (a change that did not happen after all).
pub fn discard(state_root: &Path, dirs: &MemoryDirs, stamp: &str) -> io::Result<()> {
    for e in entries(state_root, dirs)?
        .into_iter()
        .filter(|e| e.stamp == stamp)
    {
        fs::remove_dir_all(entry_dir(state_root, dirs, &e)?)?;
    }
    Ok(())
}

/// Marks the entry `stamp` done (no longer pending).
pub fn settle(state_root: &Path, dirs: &MemoryDirs, stamp: &str) -> io::Result<()> {
    for e in entries(state_root, dirs)?
        .into_iter()
        .filter(|e| e.stamp == stamp)
    {
        write_meta(
            &entry_dir(state_root, dirs, &e)?,
            &SnapshotMeta {
                pending: false,
                ..e.meta
            },
        )?;
    }
    Ok(())
}

/// Applies a refinement: a snapshot entry of the whole memory first
/// (pending), then the files, then the entry marked done. Returns the
/// entry's name.
pub fn apply(
    state_root: &Path,
    dirs: &MemoryDirs,
    stamp: &str,
    changes: &[Change],
    meta: &SnapshotMeta,
) -> io::Result<String> {
    let _lock = lock(state_root)?;
    let stamp = snapshot(state_root, dirs, stamp, meta)?;
    for c in changes {
        let target = dir(dirs, c.scope);
        files::create_dir_all(target)?;
        let path = target.join(c.label.file_name());
        // The error names the file (the user's memory, not revolve's own).
        let at = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
        match &c.content {
            Some(content) => fsx::write_atomic(&path, content.as_bytes()).map_err(at)?,
            None => match fs::remove_file(&path) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(at(e)),
                _ => {}
            },
        }
    }
    settle(state_root, dirs, &stamp)?;
    Ok(stamp)
}

/// `/refine undo`: restores the newest entry still standing (every memory
/// directory it covers), marks it undone, and says what it put back or
/// removed. `None` when nothing is left to undo. All its entries are marked
/// pending before any file is touched, so a crash at any point leaves
/// [`recover`] enough to finish the whole undo.
pub fn undo(state_root: &Path, dirs: &MemoryDirs) -> io::Result<Option<Vec<String>>> {
    Ok(undo_entry(state_root, dirs)?.map(|(_, lines)| lines))
}

/// [`undo`], naming the snapshot entry it restored.
pub fn undo_entry(
    state_root: &Path,
    dirs: &MemoryDirs,
) -> io::Result<Option<(String, Vec<String>)>> {
    let _lock = lock(state_root)?;
    let all = entries(state_root, dirs)?;
    let Some(stamp) = refine::undo_target(&all).map(str::to_owned) else {
        return Ok(None);
    };
    let group = in_order(&all, &stamp);
    // Marked undone and pending first, so a crash mid-restore is finished
    // at the next start; then restored; then settled.
    let mark = |pending: bool| -> io::Result<()> {
        for e in &group {
            let meta = SnapshotMeta {
                undone: true,
                pending,
                ..e.meta.clone()
            };
            write_meta(&entry_dir(state_root, dirs, e)?, &meta)?;
        }
        Ok(())
    };
    mark(true)?;
    let mut report = Vec::new();
    for e in &group {
        report.extend(restore(
            &entry_dir(state_root, dirs, e)?,
            dir(dirs, e.scope),
            e.scope,
        )?);
    }
    mark(false)?;
    Ok(Some((stamp, report)))
}

/// The entries of one change, global first: the project entry, which makes
/// the global one count as this project's, is always handled last.
fn in_order<'a>(all: &'a [Entry], stamp: &str) -> Vec<&'a Entry> {
    let mut group: Vec<&Entry> = all.iter().filter(|e| e.stamp == stamp).collect();
    group.sort_by_key(|e| e.scope != Scope::Global);
    group
}

/// Makes `target` hold exactly the entry's files.
fn restore(entry: &Path, target: &Path, scope: Scope) -> io::Result<Vec<String>> {
    let snapshot = files(&entry.join("files"))?;
    let current = files(target)?;
    let mut report = Vec::new();
    files::create_dir_all(target)?;
    for step in refine::restore_plan(&current, &snapshot) {
        match step {
            Restore::Put(name, bytes) => {
                fsx::write_atomic(&target.join(&name), &bytes)?;
                report.push(format!("put back {}/{name}", scope.as_str()));
            }
            Restore::Remove(name) => {
                fs::remove_file(target.join(&name))?;
                report.push(format!("removed {}/{name}", scope.as_str()));
            }
        }
    }
    Ok(report)
}

/// Finishes what a crash left pending (see the module doc), a change at a
/// time (all its directories together): a pending undo is completed, a
/// pending rewrite is rolled back and its entries removed. Returns what it
/// did, one line each.
pub fn recover(state_root: &Path, dirs: &MemoryDirs) -> io::Result<Vec<String>> {
    if !state_root.join("refinements").is_dir() {
        return Ok(Vec::new());
    }
    let _lock = lock(state_root)?;
    let all = entries(state_root, dirs)?;
    let pending: std::collections::BTreeSet<&str> = all
        .iter()
        .filter(|e| e.meta.pending)
        .map(|e| e.stamp.as_str())
        .collect();
    let mut done = Vec::new();
    for stamp in pending {
        let group = in_order(&all, stamp);
        let undoing = group.iter().any(|e| e.meta.pending && e.meta.undone);
        for e in &group {
            restore(
                &entry_dir(state_root, dirs, e)?,
                dir(dirs, e.scope),
                e.scope,
            )?;
        }
        for e in &group {
            let path = entry_dir(state_root, dirs, e)?;
            if undoing {
                write_meta(
                    &path,
                    &SnapshotMeta {
                        undone: true,
                        pending: false,
                        ..e.meta.clone()
                    },
                )?;
            } else {
                fs::remove_dir_all(&path)?;
            }
        }
        done.push(if undoing {
            format!("finished an interrupted undo of {stamp}")
        } else {
            format!("rolled back an interrupted refinement ({stamp})")
        });
    }
    Ok(done)
}

/// Each change's unified diff, by (stamp, file).
pub type Diffs = BTreeMap<(String, String), String>;

/// The unified diff of every file of every entry: from the entry's
/// snapshot to the next newer entry's snapshot of the same directory, or to
/// the files as they are now for the newest.
pub fn diffs(state_root: &Path, dirs: &MemoryDirs, all: &[Entry]) -> io::Result<Diffs> {
    let mut out = BTreeMap::new();
    for scope in SCOPES {
        let mut mine: Vec<&Entry> = all.iter().filter(|e| e.scope == scope).collect();
        mine.sort_by(|a, b| refine::order(&a.stamp).cmp(&refine::order(&b.stamp)));
        for (i, e) in mine.iter().enumerate() {
            let before = files(&entry_dir(state_root, dirs, e)?.join("files"))?;
            // The newest entry's change is in the files as they are, unless
            // it was undone: then what it wrote is gone, and so is its diff.
            if i + 1 == mine.len() && e.meta.undone {
                continue;
            }
            let after = match mine.get(i + 1) {
                Some(next) => files(&entry_dir(state_root, dirs, next)?.join("files"))?,
                None => files(dir(dirs, scope))?,
            };
            for (file, _) in &e.meta.files {
                let name = file.rsplit('/').next().unwrap_or(file);
                let text = |m: &BTreeMap<String, Vec<u8>>| {
                    String::from_utf8_lossy(m.get(name).map_or(&[][..], |b| b)).into_owned()
                };
                out.insert(
                    (e.stamp.clone(), file.clone()),
                    refine::diff(file, &text(&before), &text(&after)),
                );
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use quickcheck::{Arbitrary, Gen, QuickCheck};
    use revolve_core::memory::{Label, MemoryFile, SnapshotKind};

    /// A fresh state root and memory directories, removed on drop (by
    /// the `TempDir` held).
    struct Place {
        tmp: tempfile::TempDir,
        dirs: MemoryDirs,
    }

    impl Place {
        fn new() -> Place {
            let tmp = tempfile::Builder::new()
                .prefix("revolve-refine-")
                .tempdir()
                .unwrap();
            let root = tmp.path();
            let dirs = MemoryDirs {
                global: root.join("config/memory"),
                project: root.join("config/projects/p/memory"),
                project_dir: root.join("config/projects/p"),
                workspace: None,
            };
            Place { tmp, dirs }
        }

        fn state(&self) -> PathBuf {
            self.tmp.path().join("state")
        }

        /// Both directories' files, by `scope/name`.
        fn memory(&self) -> BTreeMap<String, Vec<u8>> {
            let mut all = BTreeMap::new();
            for scope in SCOPES {
                for (name, bytes) in files(dir(&self.dirs, scope)).unwrap() {
                    all.insert(format!("{}/{name}", scope.as_str()), bytes);
                }
            }
            all
        }

        fn loaded(&self) -> Vec<MemoryFile> {
            memory::load(&self.dirs).unwrap()
        }
    }

    #[derive(Clone, Debug)]
    enum Op {
        /// `remember` of label n with content c (empty deletes).
        Remember(u8, u8),
        /// A refinement: per file (scope, label, content or delete).
        Refine(Vec<(bool, u8, Option<u8>)>),
        /// The user edits a file by hand (no snapshot).
        Hand(bool, u8, u8),
    }

    const CONTENTS: [&str; 4] = ["", "a\n", "b\r\n\u{1F600}\n", "x"];

    impl Arbitrary for Op {
        fn arbitrary(g: &mut Gen) -> Op {
            let small = |g: &mut Gen| u8::arbitrary(g) % 3;
            match u8::arbitrary(g) % 3 {
                0 => Op::Remember(small(g), u8::arbitrary(g) % 4),
                1 => Op::Refine(
                    (0..usize::arbitrary(g) % 3)
                        .map(|_| {
                            (
                                bool::arbitrary(g),
                                small(g),
                                Option::<u8>::arbitrary(g).map(|c| 1 + c % 3),
                            )
                        })
                        .collect(),
                ),
                _ => Op::Hand(bool::arbitrary(g), small(g), 1 + u8::arbitrary(g) % 3),
            }
        }
    }

    fn label(n: u8) -> Label {
        Label::parse(&format!("f{n}")).unwrap()
    }

    /// Runs the ops; returns the memory before each change that left an
    /// entry (oldest first).
    fn run(place: &Place, ops: &[Op]) -> Vec<BTreeMap<String, Vec<u8>>> {
        let mut befores = Vec::new();
        for op in ops {
            let before = place.memory();
            match op {
                Op::Remember(n, c) => {
                    let content = CONTENTS[*c as usize];
                    let path = place.dirs.project.join(label(*n).file_name());
                    let same = fs::read(&path).ok().as_deref() == Some(content.as_bytes());
                    if (content.is_empty() && !path.exists()) || same {
                        continue;
                    }
                    let meta = SnapshotMeta {
                        session: "s".into(),
                        messages: 1,
                        kind: SnapshotKind::Remember,
                        files: vec![(
                            format!("project/{}", label(*n).file_name()),
                            "updated: remember".into(),
                        )],
                        undone: false,
                        pending: false,
                    };
                    let stamp =
                        snapshot(&place.state(), &place.dirs, "20261202T100000Z", &meta).unwrap();
                    memory::write(&place.dirs.project, &label(*n), content, true).unwrap();
                    settle(&place.state(), &place.dirs, &stamp).unwrap();
                    befores.push(before);
                }
                Op::Refine(files) => {
                    let reply = serde_json::json!({"files": files.iter().map(|(global, n, c)| {
                        let file = format!("{}/{}", if *global { "global" } else { "project" }, label(*n).file_name());
                        match c {
                            Some(c) => serde_json::json!({"file": file, "content": CONTENTS[*c as usize], "change": "c"}),
                            None => serde_json::json!({"file": file, "delete": true, "change": "d"}),
                        }
                    }).collect::<Vec<_>>()});
                    let current = place.loaded();
                    // Duplicate files make the reply invalid: nothing changes.
                    let Ok(changes) = refine::parse_reply(&reply.to_string(), &current) else {
                        continue;
                    };
                    if changes.is_empty() {
                        let before_entries = entries(&place.state(), &place.dirs).unwrap().len();
                        assert_eq!(
                            before_entries,
                            entries(&place.state(), &place.dirs).unwrap().len()
                        );
                        continue;
                    }
                    let meta = refine::meta("s", 1, false, &changes, &current);
                    apply(
                        &place.state(),
                        &place.dirs,
                        "20261202T100000Z",
                        &changes,
                        &meta,
                    )
                    .unwrap();
                    befores.push(before);
                }
                Op::Hand(global, n, c) => {
                    let d = if *global {
                        &place.dirs.global
                    } else {
                        &place.dirs.project
                    };
                    fs::create_dir_all(d).unwrap();
                    fs::write(d.join(label(*n).file_name()), CONTENTS[*c as usize]).unwrap();
                }
            }
        }
        befores
    }

    #[test]
    fn k_undos_restore_the_memory_before_the_kth_newest_change() {
        fn prop(ops: Vec<Op>, k: u8) -> bool {
            let place = Place::new();
            let befores = run(&place, &ops);
            // An entry exists exactly when memory changed (one name, both
            // directories).
            let stamps: std::collections::BTreeSet<String> = entries(&place.state(), &place.dirs)
                .unwrap()
                .into_iter()
                .map(|e| e.stamp)
                .collect();
            assert_eq!(stamps.len(), befores.len());
            let now = place.memory();
            let k = usize::from(k) % (befores.len() + 2);
            for _ in 0..k {
                undo(&place.state(), &place.dirs).unwrap();
            }
            let expected = match k {
                0 => &now,
                k if k <= befores.len() => &befores[befores.len() - k],
                // More undos than changes: back to before the first.
                _ => befores.first().unwrap_or(&now),
            };
            place.memory() == *expected
        }
        // Every step fsyncs real files: short sequences, few cases.
        QuickCheck::new()
            .rng(Gen::new(8))
            .tests(40)
            .quickcheck(prop as fn(Vec<Op>, u8) -> bool);
    }

    #[test]
    fn a_crash_mid_rewrite_is_rolled_back_and_mid_undo_finished() {
        let place = Place::new();
        fs::create_dir_all(&place.dirs.project).unwrap();
        fs::write(place.dirs.project.join("a.md"), "old\n").unwrap();
        let current = place.loaded();
        let reply = r#"{"files":[{"file":"project/a.md","content":"new\n","change":"c"},{"file":"project/b.md","content":"b\n","change":"c"}]}"#;
        let changes = refine::parse_reply(reply, &current).unwrap();
        let meta = refine::meta("s", 1, false, &changes, &current);
        // The crash: the entry is pending and one file is written.
        snapshot(&place.state(), &place.dirs, "20261202T100000Z", &meta).unwrap();
        fsx::write_atomic(&place.dirs.project.join("a.md"), b"new\n").unwrap();
        let done = recover(&place.state(), &place.dirs).unwrap();
        assert_eq!(done.len(), 1, "one per change, both directories: {done:?}");
        assert_eq!(fs::read(place.dirs.project.join("a.md")).unwrap(), b"old\n");
        assert!(
            entries(&place.state(), &place.dirs).unwrap().is_empty(),
            "no entry for a change that did not happen"
        );

        // A whole rewrite, then an undo that crashed half way.
        apply(
            &place.state(),
            &place.dirs,
            "20261202T100000Z",
            &changes,
            &meta,
        )
        .unwrap();
        for e in entries(&place.state(), &place.dirs).unwrap() {
            let path = entry_dir(&place.state(), &place.dirs, &e).unwrap();
            write_meta(
                &path,
                &SnapshotMeta {
                    undone: true,
                    pending: true,
                    ..e.meta.clone()
                },
            )
            .unwrap();
        }
        fsx::write_atomic(&place.dirs.project.join("a.md"), b"old\n").unwrap();
        recover(&place.state(), &place.dirs).unwrap();
        assert_eq!(place.memory().keys().collect::<Vec<_>>(), ["project/a.md"]);
        assert!(entries(&place.state(), &place.dirs)
            .unwrap()
            .iter()
            .all(|e| e.meta.undone && !e.meta.pending));
    }
}
