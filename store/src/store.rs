//! The sessions of one working directory: where they are, which exist, which
//! run, and opening a new one under the naming lock.

use std::borrow::Cow;
use std::io;
use std::path::{Path, PathBuf};

use revolve_core::record::Header;
use revolve_core::summary::Summary;
// rustc's hash for the cache's lookups: they hash a hundred thousand short
// file names, which SipHash (std's default, made for untrusted keys) takes
// several times as long over. The names are the user's own files.
use rustc_hash::{FxBuildHasher, FxHashMap, FxHashSet};

pub use crate::error::FindError;
use crate::index::{self, DirStamp, Entry, Index, Row, Stamp};
use crate::log::{self, LogWriter};
use crate::paths::{Project, Roots};
use crate::registry::{self, Claim, NamingLock, Running};

/// The sessions of one working directory.
#[derive(Clone, Debug)]
pub struct Store {
    /// Where revolve keeps state and configuration.
    pub roots: Roots,
    /// The project the working directory belongs to (its key names the sessions folder).
    pub project: Project,
    /// The working directory; listing and resuming consider only sessions
    /// started here.
    pub cwd: PathBuf,
}

impl Store {
    /// The store for `cwd`, with roots from the environment.
    pub fn open(cwd: &Path) -> Result<Store, crate::error::Error> {
        let roots = Roots::from_env()?;
        let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
        Ok(Store {
            project: Project::of(&cwd),
            roots,
            cwd,
        })
    }

    /// Where this project's session files are.
    pub fn sessions_dir(&self) -> PathBuf {
        self.roots.sessions(&self.project)
    }

    /// The session file of an id.
    pub fn path_of(&self, id: &str) -> PathBuf {
        self.sessions_dir().join(format!("{id}.jsonl"))
    }

    fn cwd_str(&self) -> String {
        self.cwd.to_string_lossy().into_owned()
    }

    /// The session file `needle` names: a path to a file, or a name or id
    /// (prefix) of this directory's sessions; without one, the latest.
    pub fn find(&self, needle: Option<&str>) -> Result<PathBuf, FindError> {
        if let Some(n) = needle {
            let as_path = Path::new(n);
            if (n.contains('/') || n.ends_with(".jsonl")) && as_path.is_file() {
                return Ok(as_path.to_path_buf());
            }
        }
        let sessions = self
            .candidates(needle)
            .map_err(|error| FindError::Unlisted {
                dir: self.sessions_dir(),
                error,
            })?;
        let cwd = self.cwd.clone();
        let found = match needle {
            None => revolve_core::names::latest(&sessions).ok_or(FindError::NoSession { cwd })?,
            Some(n) => revolve_core::names::pick(n, &sessions).map_err(|p| match p {
                revolve_core::names::Pick::None => FindError::NoSuch {
                    needle: n.to_owned(),
                    cwd,
                },
                revolve_core::names::Pick::Ambiguous(ids) => FindError::Ambiguous {
                    needle: n.to_owned(),
                    ids,
                },
            })?,
        };
        Ok(PathBuf::from(&found.path))
    }

    /// The sessions [`Store::find`] chooses among, as
    /// `revolve_core::names::pick` and `latest` choose: for a needle, those
    /// whose id or name it is or whose id it begins; without one, the
    /// newest (by last activity, then id) of those that took a turn and
    /// the newest of all. Only these are made summaries: at 100,000
    /// sessions, making one of each was most of a `--continue`.
    fn candidates(&self, needle: Option<&str>) -> io::Result<Vec<Summary>> {
        // Without reading the whole cache, when it can say (see [`quick`]).
        if let Some(found) = self.quick().and_then(|q| match needle {
            Some(n) => q.matching(n),
            None => q.latest(),
        }) {
            return Ok(found);
        }
        let dir_text = self.sessions_dir().to_string_lossy().into_owned();
        let path = |name: &str| format!("{dir_text}/{name}");
        let mut out = Vec::new();
        // The newest that took a turn, and the newest of all.
        let mut newest: [Option<(i64, String, Summary)>; 2] = [None, None];
        self.scan(&mut Unlisted::default(), |row, name, stamp| match needle {
            Some(n) => {
                let named = row.name.as_deref() == Some(n);
                if row.id == n || named || row.id.starts_with(n) {
                    out.extend(summary(row, path(name), stamp));
                }
            }
            None => {
                for (slot, counts) in newest.iter_mut().zip([row.turns > 0, true]) {
                    let newer = slot
                        .as_ref()
                        .is_none_or(|(at, id, _)| (stamp.1, &*row.id) > (*at, id.as_str()));
                    if counts && newer {
                        if let Some(s) = summary(row, path(name), stamp) {
                            *slot = Some((stamp.1, row.id.to_string(), s));
                        }
                    }
                }
            }
        })?;
        out.extend(newest.into_iter().flatten().map(|(_, _, s)| s));
        Ok(out)
    }

    /// Every session file of this directory, read from head and tail only,
    /// through the listing cache (see [`Index`]). Files that cannot be read
    /// or have no header are left out.
    ///
    /// Which files are looked at again: with a cache written against the
    /// current claims journal (see [`registry::Journal`]), only the files
    /// of sessions claimed since, or running (a lock file) then or now, and
    /// files the cache does not know; those are stat'ed and read again when
    /// their size or modification time changed. Every other file is taken
    /// from the cache without a system call, since only a claimed session
    /// writes its file. Without such a cache (the first listing, a journal
    /// started again) every file is stat'ed.
    ///
    /// The trade-off: a file changed in place by something other than
    /// revolve (an editor, `>>`) keeps its cached summary until a session
    /// claims it or the cache (`.index`) is deleted; new, removed and
    /// renamed files are always seen (the directory is read every time).
    pub fn list(&self) -> io::Result<Vec<Summary>> {
        self.list_where(|_, _| true)
    }

    /// [`Store::list`], keeping only the sessions `keep(named, continued)`
    /// accepts (decided before a summary is built: a listing of named
    /// sessions builds only theirs).
    pub(crate) fn list_where(&self, keep: impl Fn(bool, bool) -> bool) -> io::Result<Vec<Summary>> {
        self.list_noting(keep, &mut Unlisted::default())
    }

    /// [`Store::list_where`], counting in `unlisted` the files left out
    /// because they cannot be read or hold no session header.
    pub fn list_noting(
        &self,
        keep: impl Fn(bool, bool) -> bool,
        unlisted: &mut Unlisted,
    ) -> io::Result<Vec<Summary>> {
        let dir_text = self.sessions_dir().to_string_lossy().into_owned();
        let mut out = Vec::new();
        self.scan(unlisted, |row, name, stamp| {
            if keep(row.named, row.continued.is_some()) {
                let mut path = String::with_capacity(dir_text.len() + name.len() + 1);
                path.push_str(&dir_text);
                path.push('/');
                path.push_str(name);
                if let Some(summary) = summary(row, path, stamp) {
                    out.push(summary);
                }
            }
        })?;
        Ok(out)
    }

    /// Calls `each` with the cached row, file name and stamp of every
    /// session file of this directory (see [`Store::list`]), and counts in
    /// `unlisted` the files of the folder it cannot show. A file that
    /// cannot be read is left out of the cache, so it is read again next
    /// time (a file made readable keeps its stamp).
    fn scan(
        &self,
        unlisted: &mut Unlisted,
        mut each: impl FnMut(&Row, &str, Stamp),
    ) -> io::Result<()> {
        let dir = self.sessions_dir();
        let running = self.roots.running(&self.project);
        // In this order: the journal, then the lock files, then the files.
        let journal = registry::Journal::read(&running);
        let locked: FxHashSet<String> = registry::locked_ids(&running).into_iter().collect();
        // The folder is read on a thread of its own, which hands its names
        // over a few hundred at a time, while the cache is read and parsed
        // here and then the names are looked at as they come: reading the
        // folder is most of a listing's time.
        let bytes =
            crate::regular::read_whole(&dir.join(index::FILE), revolve_core::policy::INDEX_CAP)
                .unwrap_or_default();
        let mut index = Index::parse(&bytes).unwrap_or_default();
        // The journal since the cache was written, or `None`: unknown.
        let tail = journal
            .as_ref()
            .filter(|j| j.epoch == index.journal)
            .and_then(|j| j.since(index.offset));
        // After the journal: a change journaled later is not followed.
        let stamp = dir_stamp(&dir);
        // The files made since, when the folder changed by nothing else
        // (see [`made_since`]): then its names are the cache's and these,
        // and it is not read.
        let made = tail
            .as_deref()
            .and_then(|tail| made_since(index.dir, tail, stamp?));
        let files = match &made {
            Some(made) => Files::Read(Ok(known_names(&index.entries, made))),
            None => Files::read(&dir),
        };
        // The files that may have changed since the cache was written, or
        // `None`: any may have.
        let suspects = tail.map(|tail| suspects(tail, &index.volatile, &locked));
        let unreadable = unlisted.unreadable;
        let cwd = self.cwd_str();
        let cwds = std::mem::take(&mut index.cwds);
        let mut news = News::new(cwd, cwds, unlisted);
        let old = std::mem::take(&mut index.entries);
        let mut finder = Finder::new(&old);
        // Which cache entry or fresh entry each file has, in the folder's
        // order (the order a new cache is written in).
        let mut order: Vec<Slot> = Vec::with_capacity(old.len() + 16);
        files.each(|name| {
            let id = &name[..name.len() - ".jsonl".len()];
            let claimed = suspects.as_ref().is_some_and(|s| s.contains(id));
            let suspect = claimed || suspects.is_none();
            let known = finder.find(name, claimed);
            // A file cached without a header is read again every time: a
            // reader may find what an earlier one did not (a header behind
            // stray bytes), and its stamp does not tell.
            let headerless = known.is_some_and(|i| old[i].row.is_none());
            // The old entry that stands, or the fresh one.
            let slot = match known {
                Some(i) if !suspect && !headerless => Slot::Old(i),
                known => {
                    let locked = locked.contains(id);
                    let Some(slot) = news.look(&dir, name, known, &old, locked) else {
                        return;
                    };
                    slot
                }
            };
            order.push(slot);
            let indexed = match slot {
                Slot::Old(i) => &old[i],
                Slot::Fresh(f) => &news.entries[f],
            };
            let Some(row) = &indexed.row else { return };
            if Some(row.cwd) == news.mine {
                each(row, name, indexed.stamp);
            }
        })?;
        let News {
            cwds,
            entries: fresh,
            mut dirty,
            unlisted,
            ..
        } = news;
        // A file that cannot be read has no entry: the folder is read
        // again next time, so it is counted again (and seen once readable).
        let stamp = stamp.filter(|_| unlisted.unreadable == unreadable);
        // A cache entry no file was found for is of a file gone since.
        // (Saturating: a folder read while it changes may list a name twice.)
        dirty += old.len().saturating_sub(finder.found);
        drop(finder);
        // A folder read (its names changed in a way the journal does not
        // say) is read once: the cache is written with its new stamp.
        if suspects.is_none() || dirty > REWRITE_AFTER || made.is_none() {
            let (journal, offset) = journal.map_or_else(Default::default, |j| (j.epoch, j.len));
            let entries = in_order(order, old, fresh);
            let mut fresh = Index {
                journal,
                offset,
                volatile: locked.into_iter().collect(),
                cwds,
                entries,
                dir: stamp,
            };
            // A cache that cannot be written (read-only state dir) only costs
            // speed next time.
            save(&dir, &running, &mut fresh).ok();
        }
        Ok(())
    }

    /// The newest file of the chain `path` belongs to: compacted files point
    /// forward to the file the session went on in.
    pub fn head(&self, path: &Path) -> PathBuf {
        let mut path = path.to_path_buf();
        // Bounded: a chain that loops (hand-edited files) ends somewhere.
        for _ in 0..10_000 {
            match log::summary(&path) {
                Ok(Some((_, summary))) => match summary.continued {
                    // Followed only when the next file holds its `compacted`
                    // record: a crash in the middle of the switch leaves the
                    // old file as the head.
                    Some(next) if starts_compacted(&self.path_of(&next)) => {
                        path = self.path_of(&next)
                    }
                    _ => break,
                },
                _ => break,
            }
        }
        path
    }

    /// Every file of the chain `path` belongs to, oldest first: back through
    /// each header's `continues`, then forward to the head.
    pub fn chain(&self, path: &Path) -> Vec<PathBuf> {
        let dir = path
            .parent()
            .map_or_else(|| self.sessions_dir(), Path::to_path_buf);
        let mut back = vec![path.to_path_buf()];
        while back.len() < 10_000 {
            let first = &back[back.len() - 1];
            let Ok(Some((header, _))) = log::summary(first) else {
                break;
            };
            match header.continues {
                Some(prev) if dir.join(format!("{prev}.jsonl")).is_file() => {
                    back.push(dir.join(format!("{prev}.jsonl")))
                }
                _ => break,
            }
        }
        back.reverse();
        let head = self.head(path);
        let mut forward = path.to_path_buf();
        while forward != head && back.len() < 20_000 {
            match log::summary(&forward)
                .ok()
                .flatten()
                .and_then(|(_, s)| s.continued)
            {
                Some(next) => {
                    forward = dir.join(format!("{next}.jsonl"));
                    back.push(forward.clone());
                }
                None => break,
            }
        }
        back
    }

    /// The sessions of this directory running now.
    pub fn running(&self) -> Vec<Running> {
        let cwd = self.cwd_str();
        registry::running(&self.roots.running(&self.project))
            .into_iter()
            .filter(|r| r.cwd == cwd)
            .collect()
    }

    /// Names this directory's sessions use, on disk or running, asked one
    /// name at a time: from the cache's table of names when it can say
    /// (see [`quick`]), else from a listing.
    pub fn names_in_use(&self) -> io::Result<Names> {
        let running = self.running().into_iter().filter_map(|r| r.name).collect();
        match self.quick() {
            Some(quick) => Ok(Names {
                running,
                quick: Some(Box::new(quick)),
                store: Some(self.clone()),
                all: std::sync::OnceLock::new(),
                asked: Default::default(),
            }),
            None => Ok(Names {
                running,
                quick: None,
                store: None,
                all: std::sync::OnceLock::from(self.names_listed()?),
                asked: Default::default(),
            }),
        }
    }

    /// The names of this directory's session files, from a listing.
    fn names_listed(&self) -> io::Result<FxHashSet<String>> {
        let mut used = FxHashSet::default();
        self.scan(&mut Unlisted::default(), |row, _, _| {
            if let Some(name) = &row.name {
                if !used.contains(&**name) {
                    used.insert(name.to_string());
                }
            }
        })?;
        Ok(used)
    }

    /// What `revolve sessions` shows: of this directory's sessions that no
    /// compaction continued, the `shown` most recently active named ones,
    /// the latest (as `revolve_core::names::latest` picks it) and the
    /// subagents' sessions of these, with how many named and unnamed ones
    /// there are in all; read from the cache's head when it can say (see
    /// [`quick`]), else from a listing.
    pub fn recent(&self, shown: usize, unlisted: &mut Unlisted) -> io::Result<Recent> {
        if let Some(recent) = self.quick().and_then(|q| q.recent(shown, unlisted)) {
            return Ok(recent);
        }
        let list = self.list_noting(|_, continued| !continued, unlisted)?;
        let latest = revolve_core::names::latest(&list).map(|s| s.id.clone());
        let named = list.iter().filter(|s| s.named).count() as u64;
        let unnamed = list.len() as u64 - named;
        Ok(Recent {
            sessions: revolve_core::summary::recent(list, shown, latest.as_deref()),
            latest,
            named,
            unnamed,
        })
    }

    /// Starts a new session file. Under the naming lock, `header` gets its
    /// name from `name` (`None`: no name, and no listing to choose one),
    /// called with the names in use (it may refuse); the session is claimed
    /// as running and its file created with the header as its first line, so
    /// two sessions started at once never share a name.
    pub fn create(
        &self,
        mut header: Header,
        name: Option<impl FnOnce(&Names) -> Result<Option<String>, String>>,
    ) -> Result<(LogWriter, Claim, Header), CreateError> {
        let running_dir = self.roots.running(&self.project);
        let naming = NamingLock::acquire(&running_dir)?;
        registry::clean(&running_dir, &naming);
        header.name = match name {
            Some(name) => name(&self.names_in_use()?).map_err(CreateError::Refused)?,
            None => None,
        };
        // Claimed before the file exists: a session file is only ever
        // written under its claim (the listing cache relies on it).
        let claim = Claim::take(
            &running_dir,
            &self.running_entry(&header.id, header.name.clone()),
        )?;
        // The folder's stamps around the file's making, journaled (under
        // the naming lock, so no other session is made between them): the
        // next listing knows the folder changed by this file alone.
        let dir = self.sessions_dir();
        let before = dir_stamp(&dir);
        let writer = LogWriter::create_with(
            &self.path_of(&header.id),
            &revolve_core::Record::Header(header.clone()),
        )?;
        if let (Some(before), Some(after)) = (before, dir_stamp(&dir)) {
            let change = registry::Change {
                before,
                after,
                what: registry::What::Made(&header.id),
            };
            // Unjournaled, the next listing reads the folder: only slower.
            registry::journal_change(&running_dir, &change).ok();
        }
        drop(naming);
        Ok((writer, claim, header))
    }

    /// Removes the session file `path` (a session that never held
    /// anything). Under the naming lock (`naming`), the change is
    /// journaled like a creation (see [`registry::Change`]), so the next
    /// listing need not read the folder. Whether it was removed.
    pub fn remove(&self, path: &Path, naming: Option<&NamingLock>) -> bool {
        let dir = path.parent().unwrap_or(Path::new("."));
        let before = dir_stamp(dir);
        let removed = std::fs::remove_file(path).is_ok();
        let id = path.file_stem().and_then(|s| s.to_str());
        if let (true, Some(_), Some(before), Some(after), Some(id)) =
            (removed, naming, before, dir_stamp(dir), id)
        {
            let change = registry::Change {
                before,
                after,
                what: registry::What::Removed(id),
            };
            registry::journal_change(&self.roots.running(&self.project), &change).ok();
        }
        removed
    }

    /// Claims an existing session as running in this process.
    /// (Under the naming lock, so stale-lock cleaning never unlinks a
    /// file being claimed.)
    pub fn claim(&self, id: &str, name: Option<String>) -> io::Result<Claim> {
        let _naming = self.naming()?;
        Claim::take(
            &self.roots.running(&self.project),
            &self.running_entry(id, name),
        )
    }

    /// The lock that makes choosing a name and claiming it one step.
    pub fn naming(&self) -> io::Result<NamingLock> {
        NamingLock::acquire(&self.roots.running(&self.project))
    }

    /// What this process's lock file says.
    pub fn running_entry(&self, id: &str, name: Option<String>) -> Running {
        Running {
            id: id.to_owned(),
            name,
            cwd: self.cwd_str(),
            pid: std::process::id(),
        }
    }
}

/// The files of a sessions folder a listing left out (see
/// [`Store::list_noting`]): the user is told, so no session vanishes
/// without a word. Files of every directory of the project count, since
/// which directory an unreadable file belongs to cannot be known.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Unlisted {
    /// How many files could not be read (not a regular file, no
    /// permission, an I/O error).
    pub unreadable: usize,
    /// The first of them, by file name, and why.
    pub first_unreadable: Option<(String, String)>,
    /// How many files hold no session header (empty, or not a log).
    pub headerless: usize,
    /// The first of them, by file name.
    pub first_headerless: Option<String>,
}

impl Unlisted {
    fn unreadable(&mut self, name: &str, error: &io::Error) {
        self.unreadable += 1;
        self.first_unreadable
            .get_or_insert_with(|| (name.to_owned(), error.to_string()));
    }

    fn headerless(&mut self, name: &str) {
        self.headerless += 1;
        self.first_headerless.get_or_insert_with(|| name.to_owned());
    }
}

/// The names in use in a directory (see [`Store::names_in_use`]): the
/// running sessions', and the session files' looked up in the cache one
/// at a time (or all of them, read by a listing).
#[derive(Debug)]
pub struct Names {
    running: FxHashSet<String>,
    quick: Option<Box<Quick>>,
    /// For a listing when the cache cannot be read after all.
    store: Option<Store>,
    /// Every session file's name, once listed.
    all: std::sync::OnceLock<FxHashSet<String>>,
    /// How many names were asked about.
    asked: std::cell::Cell<usize>,
}

/// How many names [`Names`] looks up one by one before it reads them all.
const LOOKUPS: usize = 64; // not policy: when a listing is cheaper

impl Names {
    /// Whether a session of this directory, running or on disk, has `name`.
    pub fn contains(&self, name: &str) -> bool {
        if self.running.contains(name) {
            return true;
        }
        if let Some(used) = self.all.get() {
            return used.contains(name);
        }
        // A lookup is a binary search of the cache; past a few dozen (a
        // generated name among thousands taken) every name is read once.
        self.asked.set(self.asked.get() + 1);
        if self.asked.get() <= LOOKUPS {
            if let Some(used) = self.quick.as_ref().and_then(|q| q.uses(name)) {
                return used;
            }
        }
        // Many asked, or the cache went away under us: the long way, once.
        // A folder that cannot be listed now could not be written either.
        let listed = || {
            self.store
                .as_ref()
                .and_then(|s| s.names_listed().ok())
                .unwrap_or_default()
        };
        self.all.get_or_init(listed).contains(name)
    }
}

impl revolve_core::names::Used for Names {
    fn contains_name(&self, name: &str) -> bool {
        self.contains(name)
    }
}

/// What `revolve sessions` shows (see [`Store::recent`]).
#[derive(Debug, Default)]
pub struct Recent {
    /// The sessions to list (a superset: `revolve_core::summary::listed_with`
    /// orders and keeps them).
    pub sessions: Vec<Summary>,
    /// The id of the latest session, the one `--continue` resumes.
    pub latest: Option<String>,
    /// How many named sessions there are.
    pub named: u64,
    /// How many unnamed sessions there are.
    pub unnamed: u64,
}

/// Why a new session could not be created.
#[derive(Debug)]
pub enum CreateError {
    /// The name was refused; the text says why.
    Refused(String),
    /// The state directory could not be written.
    Io(io::Error),
}

impl From<io::Error> for CreateError {
    fn from(e: io::Error) -> CreateError {
        CreateError::Io(e)
    }
}

/// A cache row for a summary read from its file, its cwd at `cwd`.
fn row_of(cwd: usize, s: &Summary) -> Row<'static> {
    Row {
        cwd,
        id: Cow::Owned(s.id.clone()),
        name: s.name.clone().map(Cow::Owned),
        named: s.named,
        started: s.started.unix_timestamp(),
        turns: s.turns,
        continued: s.continued.clone().map(Cow::Owned),
        spent: s.spent,
        parent: s.parent.clone().map(Cow::Owned),
    }
}

/// The summary a row stands for.
fn summary(row: &Row, path: String, stamp: Stamp) -> Option<Summary> {
    let started = time::OffsetDateTime::from_unix_timestamp(row.started).ok()?;
    let last_activity =
        time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(stamp.1)).ok()?;
    Some(Summary {
        id: row.id.to_string(),
        name: row.name.as_ref().map(|n| n.to_string()),
        named: row.named,
        started,
        turns: row.turns,
        last_activity,
        path,
        continued: row.continued.as_ref().map(|c| c.to_string()),
        spent: row.spent,
        parent: row.parent.as_ref().map(|p| p.to_string()),
    })
}

/// Writes the cache, whole or not at all, and journals the change it
/// makes to the sessions folder `dir` (see [`registry::Change`]), so the
/// next listing need not read the folder for it; removes the JSON cache of
/// earlier builds. The temp file is written in the `running` folder, so
/// the sessions folder changes only by the rename, between the two stamps
/// journaled. Not fsynced: a cache a crash tore does not parse, and is
/// built again.
fn save(dir: &Path, running: &Path, index: &mut Index) -> io::Result<()> {
    if dir.join(index::LEGACY_FILE).exists() {
        std::fs::remove_file(dir.join(index::LEGACY_FILE)).ok();
    }
    crate::files::create_dir_all(running)?;
    if index.journal.is_empty() {
        if let Some((epoch, len)) = registry::start_journal(running) {
            (index.journal, index.offset) = (epoch, len);
        }
    }
    let tmp = crate::fsx::temp_sibling(&running.join(index::FILE));
    let placed = (|| {
        use std::io::Write;
        crate::files::create_new(&tmp)?.write_all(&index.to_bytes())?;
        let before = dir_stamp(dir);
        std::fs::rename(&tmp, dir.join(index::FILE))?;
        Ok::<_, io::Error>(before)
    })();
    let before = placed.inspect_err(|_| {
        std::fs::remove_file(&tmp).ok();
    })?;
    // Journaled only when nothing changed the folder since the cache's
    // stamp was read: else the next listing reads it again.
    if let (Some(before), Some(after)) = (before.filter(|b| Some(*b) == index.dir), dir_stamp(dir))
    {
        let change = registry::Change {
            before,
            after,
            what: registry::What::Cache,
        };
        registry::journal_change(running, &change).ok();
    }
    Ok(())
}

/// A file's stamp: its size and modification time (ns).
fn stamp_of(meta: &std::fs::Metadata) -> Stamp {
    #[cfg(unix)]
    use std::os::unix::fs::MetadataExt;
    (
        meta.len(),
        meta.mtime()
            .saturating_mul(1_000_000_000)
            .saturating_add(meta.mtime_nsec()),
    )
}

/// How many files may be new, changed or gone since the cache was written
/// before a listing writes it again. Below that, each listing reads those
/// few files again (the cache and its journal offset still say which), which
/// costs less than rewriting a cache of a hundred thousand entries every
/// time one session started or took a turn. Reading a file's summary takes
/// about 0.1 ms and writing the cache 0.5 µs an entry: with one session
/// started per listing, 16 keeps both near a millisecond a listing for
/// 10,000 sessions (64 spent up to 6 ms a start reading files again).
const REWRITE_AFTER: usize = 16; // not policy: when the cache is rewritten

/// Whether a file's second line is its `compacted` record.
fn starts_compacted(path: &Path) -> bool {
    use std::io::BufRead;
    let Ok((file, _)) = crate::regular::read(path) else {
        return false;
    };
    let mut lines = std::io::BufReader::new(file).lines();
    lines.next();
    lines
        .next()
        .and_then(Result::ok)
        .is_some_and(|l| l.starts_with("{\"type\":\"compacted\""))
}

mod quick;
mod scan;
use quick::Quick;
use scan::*;

#[cfg(test)]
mod tests;
