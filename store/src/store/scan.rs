//! The machinery of a listing's scan ([`super::Store`]'s `scan`): which
//! files may have changed since the cache was written, the news read from
//! them, the cache's entries found by name, and the folder read in batches
//! on a thread of its own.

use super::*;

/// Which entry a file has in a listing: the cache's, or one read now.
#[derive(Clone, Copy)]
pub(super) enum Slot {
    Old(usize),
    Fresh(usize),
}

/// What [`Store::scan`] learns from the files it reads again.
/// The files that may have changed since the cache was written: those the
/// journal's `tail` names, those the cache marked `volatile` (running
/// then), and those `locked` now.
pub(super) fn suspects(
    tail: Vec<&str>,
    volatile: &[String],
    locked: &FxHashSet<String>,
) -> FxHashSet<String> {
    tail.into_iter()
        .filter_map(registry::claimed)
        .map(str::to_owned)
        .chain(volatile.iter().cloned())
        .chain(locked.iter().cloned())
        .collect()
}

/// The entries of a new cache in the folder's `order`: each slot the old
/// entry that stands or the fresh one.
pub(super) fn in_order<'a>(
    order: Vec<Slot>,
    old: Vec<Entry<'a>>,
    fresh: Vec<Entry<'a>>,
) -> Vec<Entry<'a>> {
    let mut old: Vec<Option<Entry>> = old.into_iter().map(Some).collect();
    let mut fresh: Vec<Option<Entry>> = fresh.into_iter().map(Some).collect();
    order
        .into_iter()
        .filter_map(|slot| match slot {
            Slot::Old(i) => old[i].take(),
            Slot::Fresh(f) => fresh[f].take(),
        })
        .collect()
}

pub(super) struct News<'a, 'u> {
    /// The working directory, as the headers say it.
    pub(super) cwd: String,
    /// The working directories rows name, the cache's and any new ones.
    pub(super) cwds: Vec<Cow<'a, str>>,
    /// The index of `cwd` in `cwds`, once some row names it.
    pub(super) mine: Option<usize>,
    /// Entries of files new or changed since.
    pub(super) entries: Vec<Entry<'a>>,
    /// Files other than running sessions' that are new or changed since
    /// the cache was written (see [`REWRITE_AFTER`]).
    pub(super) dirty: usize,
    /// The files the listing cannot show.
    pub(super) unlisted: &'u mut Unlisted,
}

impl<'a, 'u> News<'a, 'u> {
    /// No news yet, of the listing of `cwd` among the cache's `cwds`.
    pub(super) fn new(
        cwd: String,
        cwds: Vec<Cow<'a, str>>,
        unlisted: &'u mut Unlisted,
    ) -> News<'a, 'u> {
        News {
            // Rows are compared by their cwd's index, not the string.
            mine: cwds.iter().position(|c| *c == *cwd),
            cwd,
            cwds,
            entries: Vec::new(),
            dirty: 0,
            unlisted,
        }
    }
}

impl<'a> News<'a, '_> {
    /// Looks again at file `name`, which may have changed since the cache
    /// was written (`known`: its entry in `old`, if it has one): the old
    /// entry when its stamp says it did not, else a fresh entry read now.
    /// `None` when the file went away or cannot be read (counted as
    /// unlisted). `locked`: a running session's file, which does not make
    /// the cache dirty.
    pub(super) fn look(
        &mut self,
        dir: &Path,
        name: &str,
        known: Option<usize>,
        old: &[Entry<'a>],
        locked: bool,
    ) -> Option<Slot> {
        let headerless = known.is_some_and(|i| old[i].row.is_none());
        let path = dir.join(name);
        let meta = match std::fs::metadata(&path) {
            Ok(meta) => meta,
            // Removed since the folder was read.
            Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
            Err(e) => {
                self.unlisted.unreadable(name, &e);
                return None;
            }
        };
        let stamp = stamp_of(&meta);
        if let Some(i) = known.filter(|&i| old[i].stamp == stamp && !headerless) {
            return Some(Slot::Old(i));
        }
        let row = match log::summary(&path) {
            Ok(Some((header, s))) => {
                let at = Index::intern(&mut self.cwds, &header.cwd);
                if header.cwd == self.cwd {
                    self.mine = Some(at);
                }
                Some(row_of(at, &s))
            }
            Ok(None) => {
                self.unlisted.headerless(name);
                None
            }
            Err(e) => {
                self.unlisted.unreadable(name, &e);
                return None;
            }
        };
        // Still without a header, and as it was: no change the cache must
        // be written again for.
        let same = headerless && row.is_none() && known.is_some_and(|i| old[i].stamp == stamp);
        self.dirty += usize::from(!locked && !same);
        self.entries.push(Entry {
            file: Cow::Owned(name.to_owned()),
            stamp,
            row,
        });
        Some(Slot::Fresh(self.entries.len() - 1))
    }
}

/// Finds a file's entry in the cache, which lists files in the order the
/// folder did when it was written; only files added or removed since
/// change that order. So the entry is looked for just after the last one
/// found, and only when it is not there in a map of every entry (built the
/// first time it is needed): a listing of an unchanged folder hashes
/// nothing.
pub(super) struct Finder<'o, 'a> {
    pub(super) old: &'o [Entry<'a>],
    pub(super) next: usize,
    pub(super) by_name: Option<FxHashMap<&'o str, usize>>,
    /// How many entries were found.
    pub(super) found: usize,
}

impl<'o, 'a> Finder<'o, 'a> {
    /// Entries removed in a row that the search just ahead still skips.
    const AHEAD: usize = 8; // not policy: a read-ahead size

    pub(super) fn new(old: &'o [Entry<'a>]) -> Finder<'o, 'a> {
        Finder {
            old,
            next: 0,
            by_name: None,
            found: 0,
        }
    }

    /// The entry of `name`. A file claimed since the cache was written
    /// (`claimed`) not found just ahead is taken as new rather than searched
    /// for: if it had an entry, it is read again, which costs only time.
    /// (Only those: without a journal every file is suspect, and taking a
    /// run of removed files for the end of the cache would read every file
    /// after it again.)
    pub(super) fn find(&mut self, name: &str, claimed: bool) -> Option<usize> {
        let end = self.old.len().min(self.next + Self::AHEAD);
        let near = (self.next..end).find(|&i| self.old[i].file == name);
        let at = match near {
            Some(i) => i,
            None if claimed => return None,
            None => {
                let old = self.old;
                let by_name = self.by_name.get_or_insert_with(|| {
                    let mut map = FxHashMap::with_capacity_and_hasher(old.len(), FxBuildHasher);
                    map.extend(old.iter().enumerate().map(|(i, e)| (&*e.file, i)));
                    map
                });
                by_name.get(name).copied()?
            }
        };
        self.next = at + 1;
        self.found += 1;
        Some(at)
    }
}

/// The session files of a folder (`*.jsonl`), read on a thread of their
/// own that sends their names (each ended by a `\0`) a batch at a time, or
/// read here when no thread can be started.
pub(super) enum Files {
    Reading(
        std::sync::mpsc::Receiver<String>,
        std::thread::JoinHandle<io::Result<()>>,
    ),
    Read(io::Result<String>),
}

impl Files {
    /// Starts reading `dir`.
    pub(super) fn read(dir: &Path) -> Files {
        let owned = dir.to_path_buf();
        let (send, receive) = std::sync::mpsc::channel();
        let reader = std::thread::Builder::new().name("readdir".into());
        match reader.spawn(move || session_files(&owned, &mut |batch| send.send(batch).is_ok())) {
            Ok(thread) => Files::Reading(receive, thread),
            Err(_) => {
                let mut names = String::new();
                let read = session_files(dir, &mut |batch| {
                    names.push_str(&batch);
                    true
                });
                Files::Read(read.map(|()| names))
            }
        }
    }

    /// Calls `each` with every name, in the folder's order; none when the
    /// folder does not exist.
    pub(super) fn each(self, mut each: impl FnMut(&str)) -> io::Result<()> {
        let read = match self {
            Files::Reading(batches, thread) => {
                for batch in batches {
                    batch.split_terminator('\0').for_each(&mut each);
                }
                thread
                    .join()
                    .map_err(|_| io::Error::other("reading the sessions folder failed"))?
            }
            Files::Read(names) => names.map(|names| names.split_terminator('\0').for_each(each)),
        };
        match read {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            read => read,
        }
    }
}

/// The names of a folder that changed since `entries` were read only by
/// the files `changed` made (true) or removed (false), as
/// [`session_files`] gives them (each ended by a `\0`): the entries' in
/// their order, less those removed, then the new ones. (A file made while
/// the cache was written may be among the entries already.)
pub(super) fn known_names(entries: &[Entry], changed: &[(String, bool)]) -> String {
    let mut names = String::with_capacity(entries.len() * 32);
    // Each changed name, and whether it is there now; a made one found
    // among the entries is taken out (it is listed there).
    let mut changes: FxHashMap<&str, bool> = changed
        .iter()
        .map(|(name, made)| (name.as_str(), *made))
        .collect();
    for entry in entries {
        if !changes.is_empty() {
            match changes.get(&*entry.file) {
                Some(false) => continue,
                Some(true) => {
                    changes.remove(&*entry.file);
                }
                None => {}
            }
        }
        names.push_str(&entry.file);
        names.push('\0');
    }
    // In the journal's order, as a folder read would list them.
    for (name, _) in changed
        .iter()
        .filter(|(n, _)| changes.get(n.as_str()) == Some(&true))
    {
        names.push_str(name);
        names.push('\0');
    }
    names
}

/// How a folder changed since a cache knew it at `known`, when the
/// journal's `tail` since says how it went from there to `now`: every
/// [`registry::Change`] in it follows the one before (its `before` the
/// last one's `after`, the first's the cache's), and the last ends at
/// `now`. Each file made or removed, once (its last change: true when
/// made). `None` when they do not: something else changed the folder (a
/// file copied or removed by hand, a crash between a change and its
/// line), so it must be read. A change within a clock tick of a journaled
/// one could hide behind it on a file system whose times are coarse;
/// Linux from 6.13 stamps a change after a looked-at time with a finer
/// one.
pub(super) fn made_since(
    known: Option<DirStamp>,
    tail: &[&str],
    now: DirStamp,
) -> Option<Vec<(String, bool)>> {
    let mut at = known?;
    let mut changed: Vec<(String, bool)> = Vec::new();
    for change in tail.iter().filter_map(|line| registry::Change::of(line)) {
        if change.before != at {
            return None;
        }
        at = change.after;
        let (id, made) = match change.what {
            registry::What::Made(id) => (id, true),
            registry::What::Removed(id) => (id, false),
            registry::What::Cache => continue,
        };
        let name = format!("{id}.jsonl");
        changed.retain(|(n, _)| *n != name);
        changed.push((name, made));
    }
    (at == now).then_some(changed)
}

/// A folder's stamp now, `None` when it cannot be read.
pub(super) fn dir_stamp(dir: &Path) -> Option<DirStamp> {
    #[cfg(unix)]
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(dir).ok()?;
    Some((meta.ino(), stamp_of(&meta).1))
}

/// How many names [`session_files`] hands over at a time.
pub(super) const BATCH: usize = 512; // not policy: a batch size

/// Hands `batch` the `*.jsonl` names in `dir`, [`BATCH`] at a time, each
/// ended by a `\0` (which no file name holds), in the order the folder
/// lists them; names that are not UTF-8 are left out. Stops early when
/// `batch` says false. Read with rustix's `Dir` (getdents on Linux,
/// readdir elsewhere) straight into the batch's string: std's `read_dir`
/// allocates twice a file, which made reading a folder of 10,000 sessions
/// take half as long again.
#[cfg(unix)]
pub(super) fn session_files(dir: &Path, batch: &mut dyn FnMut(String) -> bool) -> io::Result<()> {
    use rustix::fs::{Dir, Mode, OFlags};
    let fd = rustix::fs::open(
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let mut entries = Dir::new(fd)?;
    let mut names = String::new();
    let mut count = 0;
    while let Some(entry) = entries.read() {
        let entry = entry?;
        if let Some(name) = entry
            .file_name()
            .to_str()
            .ok()
            .filter(|n| n.ends_with(".jsonl"))
        {
            names.push_str(name);
            names.push('\0');
            count += 1;
            if count % BATCH == 0 && !batch(std::mem::take(&mut names)) {
                return Ok(());
            }
        }
    }
    if !names.is_empty() {
        batch(names);
    }
    Ok(())
}

/// [`session_files`] through std elsewhere.
#[cfg(not(unix))]
pub(super) fn session_files(dir: &Path, batch: &mut dyn FnMut(String) -> bool) -> io::Result<()> {
    let mut names = String::new();
    for entry in std::fs::read_dir(dir)?.flatten() {
        if let Some(name) = entry.file_name().to_str().filter(|n| n.ends_with(".jsonl")) {
            names.push_str(name);
            names.push('\0');
        }
    }
    batch(names);
    Ok(())
}
