//! The sessions of one working directory: where they are, which exist, which
//! run, and opening a new one under the naming lock.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};

use revolve_core::record::Header;
use revolve_core::view::Summary;

use crate::index::{self, Entry, Index, Row, Stamp};
use crate::log::{self, LogWriter};
use crate::paths::{Project, Roots};
use crate::registry::{self, Claim, NamingLock, Running};

/// The sessions of one working directory.
#[derive(Clone, Debug)]
pub struct Store {
    pub roots: Roots,
    pub project: Project,
    /// The working directory; listing and resuming consider only sessions
    /// started here.
    pub cwd: PathBuf,
}

impl Store {
    /// The store for `cwd`, with roots from the environment.
    pub fn open(cwd: &Path) -> Result<Store, String> {
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
    pub fn list_where(&self, keep: impl Fn(bool, bool) -> bool) -> io::Result<Vec<Summary>> {
        let dir_text = self.sessions_dir().to_string_lossy().into_owned();
        let mut out = Vec::new();
        self.scan(|row, name, stamp| {
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
    /// session file of this directory (see [`Store::list`]).
    fn scan(&self, mut each: impl FnMut(&Row, &str, Stamp)) -> io::Result<()> {
        let dir = self.sessions_dir();
        let running = self.roots.running(&self.project);
        // In this order: the journal, then the lock files, then the files.
        let journal = registry::Journal::read(&running);
        let locked: HashSet<String, Fast> = registry::locked_ids(&running).into_iter().collect();
        // The folder is read on a thread of its own while the cache is read
        // and parsed here: on a hundred thousand files each takes tens of
        // milliseconds.
        let files = Files::read(&dir);
        let bytes = std::fs::read(dir.join(index::FILE)).unwrap_or_default();
        let mut index = Index::parse(&bytes).unwrap_or_default();
        // The files that may have changed since the cache was written, or
        // `None`: any may have.
        let suspects: Option<HashSet<String, Fast>> = journal
            .as_ref()
            .filter(|j| j.epoch == index.journal)
            .and_then(|j| j.since(index.offset))
            .map(|tail| {
                tail.into_iter()
                    .map(str::to_owned)
                    .chain(index.volatile.iter().cloned())
                    .chain(locked.iter().cloned())
                    .collect()
            });
        let cwd = self.cwd_str();
        let mut cwds = std::mem::take(&mut index.cwds);
        // Rows are compared by their cwd's index, not the string.
        let mut mine = cwds.iter().position(|c| *c == *cwd);
        let old = std::mem::take(&mut index.entries);
        // The cache's entries by name (borrowed: nothing is moved or copied
        // for a file that did not change), and which of them still stand.
        let mut by_name: HashMap<&str, usize, Fast> =
            HashMap::with_capacity_and_hasher(old.len(), Fast::default());
        by_name.extend(old.iter().enumerate().map(|(i, e)| (&*e.file, i)));
        let mut stands = vec![false; old.len()];
        // Entries of files new or changed since.
        let mut fresh: Vec<Entry> = Vec::new();
        // Files other than running sessions' that are new or changed since
        // the cache was written (see [`REWRITE_AFTER`]).
        let mut dirty = 0usize;
        let mut matched = 0;
        let names = files.wait()?;
        for name in names.split_terminator('\0') {
            let id = &name[..name.len() - ".jsonl".len()];
            let known = by_name.get(name).copied();
            matched += usize::from(known.is_some());
            let trusted = known.is_some() && suspects.as_ref().is_some_and(|s| !s.contains(id));
            // The old entry that stands, or the fresh one.
            let indexed = match known {
                Some(_) if trusted => None,
                known => {
                    let path = dir.join(name);
                    let Ok(meta) = std::fs::metadata(&path) else {
                        continue;
                    };
                    let stamp = Stamp::of(&meta);
                    match known {
                        Some(i) if old[i].stamp == stamp => None,
                        _ => {
                            dirty += usize::from(!locked.contains(id));
                            let row = log::summary(&path).ok().flatten().map(|(header, s)| {
                                let at = Index::intern(&mut cwds, &header.cwd);
                                if header.cwd == cwd {
                                    mine = Some(at);
                                }
                                row_of(at, &s)
                            });
                            fresh.push(Entry {
                                file: Cow::Owned(name.to_owned()),
                                stamp,
                                row,
                            });
                            Some(fresh.len() - 1)
                        }
                    }
                }
            };
            let indexed = match (indexed, known) {
                (Some(f), _) => &fresh[f],
                (None, Some(i)) => {
                    stands[i] = true;
                    &old[i]
                }
                (None, None) => continue,
            };
            if let Some(row) = &indexed.row {
                if Some(row.cwd) == mine {
                    each(row, name, indexed.stamp);
                }
            }
        }
        drop(by_name);
        // A cache entry no file was found for is of a file gone since.
        dirty += old.len() - matched;
        if suspects.is_none() || dirty > REWRITE_AFTER {
            let (journal, offset) = journal.map_or_else(Default::default, |j| (j.epoch, j.len));
            let entries = old
                .into_iter()
                .zip(stands)
                .filter_map(|(e, stands)| stands.then_some(e))
                .chain(fresh)
                .collect();
            let fresh = Index {
                journal,
                offset,
                volatile: locked.into_iter().collect(),
                cwds,
                entries,
            };
            // A cache that cannot be written (read-only state dir) only costs
            // speed next time.
            save(&dir, &fresh).ok();
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

    /// Names this directory's sessions use, on disk or running. (Names
    /// only: no summary is built. A hash set: ten thousand names went into
    /// an ordered set in 2.4 ms.)
    pub fn names_in_use(&self) -> io::Result<Names> {
        let mut used = Names::default();
        self.scan(|row, _, _| {
            if let Some(name) = &row.name {
                if !used.contains(&**name) {
                    used.insert(name.to_string());
                }
            }
        })?;
        used.extend(self.running().into_iter().filter_map(|r| r.name));
        Ok(used)
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
        let mut writer = LogWriter::create(&self.path_of(&header.id))?;
        writer.append(&revolve_core::Record::Header(header.clone()))?;
        drop(naming);
        Ok((writer, claim, header))
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

/// The names in use in a directory (see [`Store::names_in_use`]).
pub type Names = HashSet<String, Fast>;

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

/// The session files of a folder (`*.jsonl`), read on a thread of their
/// own (or here, when no thread can be started): their names, each ended
/// by a `\0`.
enum Files {
    Reading(std::thread::JoinHandle<io::Result<String>>),
    Read(io::Result<String>),
}

impl Files {
    /// Starts reading `dir`.
    fn read(dir: &Path) -> Files {
        let owned = dir.to_path_buf();
        let reader = std::thread::Builder::new().name("readdir".into());
        match reader.spawn(move || session_files(&owned)) {
            Ok(thread) => Files::Reading(thread),
            Err(_) => Files::Read(session_files(dir)),
        }
    }

    /// The names; none when the folder does not exist.
    fn wait(self) -> io::Result<String> {
        let read = match self {
            Files::Reading(thread) => thread
                .join()
                .map_err(|_| io::Error::other("reading the sessions folder failed"))?,
            Files::Read(read) => read,
        };
        match read {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(String::new()),
            read => read,
        }
    }
}

/// The `*.jsonl` names in `dir`, each ended by a `\0` (which no file name
/// holds), in the order the folder lists them; names that are not UTF-8
/// are left out. Read with `readdir(3)` straight into one string: std's
/// `read_dir` allocates twice a file, which made reading a folder of
/// 10,000 sessions take half as long again.
#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
fn session_files(dir: &Path) -> io::Result<String> {
    use std::ffi::{c_char, CStr, CString};
    use std::os::unix::ffi::OsStrExt;
    /// `struct dirent` of glibc and musl on 64-bit Linux.
    #[repr(C)]
    struct Dirent {
        ino: u64,
        off: i64,
        reclen: u16,
        kind: u8,
        name: [c_char; 256],
    }
    /// `DIR`, only ever behind a pointer.
    enum Dir {}
    extern "C" {
        fn opendir(name: *const c_char) -> *mut Dir;
        fn readdir(dir: *mut Dir) -> *const Dirent;
        fn closedir(dir: *mut Dir) -> i32;
    }
    let path = CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: `path` is NUL-terminated and outlives the call.
    let handle = unsafe { opendir(path.as_ptr()) };
    if handle.is_null() {
        return Err(io::Error::last_os_error());
    }
    let mut names = String::new();
    loop {
        // SAFETY: `handle` is an open stream, used by this thread only; the
        // entry returned stays valid until the next call on it, and its
        // name is copied out before that.
        let entry = unsafe { readdir(handle) };
        if entry.is_null() {
            break;
        }
        // SAFETY: `entry` is non-null and points at a `struct dirent` whose
        // `d_name` is NUL-terminated; the field is reached through a raw
        // pointer, never a reference to the whole 256-byte array (the
        // record may be shorter).
        let name = unsafe { CStr::from_ptr(std::ptr::addr_of!((*entry).name).cast::<c_char>()) };
        if let Some(name) = name.to_str().ok().filter(|n| n.ends_with(".jsonl")) {
            names.push_str(name);
            names.push('\0');
        }
    }
    // SAFETY: opened above and closed once.
    unsafe { closedir(handle) };
    Ok(names)
}

/// [`session_files`] through std elsewhere.
#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
fn session_files(dir: &Path) -> io::Result<String> {
    let mut names = String::new();
    for entry in std::fs::read_dir(dir)?.flatten() {
        if let Some(name) = entry.file_name().to_str().filter(|n| n.ends_with(".jsonl")) {
            names.push_str(name);
            names.push('\0');
        }
    }
    Ok(names)
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
    })
}

/// Writes the cache atomically (temp file + rename), and removes the JSON
/// cache of earlier builds.
fn save(dir: &Path, index: &Index) -> io::Result<()> {
    let tmp = dir.join(format!("{}.{}.tmp", index::FILE, std::process::id()));
    std::fs::write(&tmp, index.to_bytes())?;
    std::fs::rename(&tmp, dir.join(index::FILE)).inspect_err(|_| {
        std::fs::remove_file(&tmp).ok();
    })?;
    std::fs::remove_file(dir.join(index::LEGACY_FILE)).ok();
    Ok(())
}

/// The hash of the cache's lookups (FxHash's: eight bytes a step, a
/// rotate, a xor and a multiply): they hash a hundred thousand short file
/// names, which SipHash (std's default, made for untrusted keys) takes
/// several times as long over. The names are the user's own files.
#[derive(Default)]
pub struct FastHasher(u64);

impl std::hash::Hasher for FastHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x517c_c1b7_2722_0a95;
        let mut h = self.0;
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            let word = u64::from_le_bytes(word.try_into().unwrap_or_default());
            h = (h.rotate_left(5) ^ word).wrapping_mul(K);
        }
        for b in words.remainder() {
            h = (h.rotate_left(5) ^ u64::from(*b)).wrapping_mul(K);
        }
        self.0 = h;
    }
}

pub type Fast = std::hash::BuildHasherDefault<FastHasher>;

trait StampOf {
    fn of(meta: &std::fs::Metadata) -> Stamp;
}

impl StampOf for Stamp {
    fn of(meta: &std::fs::Metadata) -> Stamp {
        use std::os::unix::fs::MetadataExt;
        (
            meta.len(),
            meta.mtime()
                .saturating_mul(1_000_000_000)
                .saturating_add(meta.mtime_nsec()),
        )
    }
}

/// How many files may be new, changed or gone since the cache was written
/// before a listing writes it again. Below that, each listing reads those
/// few files again (the cache and its journal offset still say which), which
/// costs less than rewriting a cache of a hundred thousand entries every
/// time one session started or took a turn. Reading a file's summary takes
/// about 0.1 ms and writing the cache 0.5 µs an entry: with one session
/// started per listing, 16 keeps both near a millisecond a listing for
/// 10,000 sessions (64 spent up to 6 ms a start reading files again).
const REWRITE_AFTER: usize = 16;

/// Whether a file's second line is its `compacted` record.
fn starts_compacted(path: &Path) -> bool {
    use std::io::BufRead;
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    let mut lines = std::io::BufReader::new(file).lines();
    lines.next();
    lines
        .next()
        .and_then(Result::ok)
        .is_some_and(|l| l.starts_with("{\"type\":\"compacted\""))
}

#[cfg(test)]
mod tests {
    use super::*;
    use revolve_core::record::{Record, Totals};

    fn store(name: &str) -> Store {
        let root =
            std::env::temp_dir().join(format!("revolve-store-{}-{name}", std::process::id()));
        std::fs::remove_dir_all(&root).ok();
        let cwd = root.join("work");
        std::fs::create_dir_all(&cwd).unwrap();
        Store {
            roots: Roots {
                state: root.join("state"),
                config: root.join("config"),
            },
            project: Project::from_key(cwd.clone()),
            cwd,
        }
    }

    fn header(store: &Store, id: &str) -> Header {
        Header {
            version: 1,
            id: id.into(),
            name: None,
            named: false,
            cwd: store.cwd_str(),
            project: store.cwd_str(),
            started: time::macros::datetime!(2026-12-02 10:00 UTC),
            model: "m".into(),
            window: 1000,
            provider: "scripted".into(),
            continues: None,
        }
    }

    fn totals(turns: u64) -> Record {
        Record::Totals(Totals {
            turns,
            ..Totals::default()
        })
    }

    /// Each session's listed turns, by id.
    fn turns(store: &Store) -> Vec<(String, u64)> {
        let mut out: Vec<_> = store
            .list()
            .unwrap()
            .into_iter()
            .map(|s| (s.id, s.turns))
            .collect();
        out.sort();
        out
    }

    fn named(name: &str) -> Option<impl FnOnce(&Names) -> Result<Option<String>, String>> {
        let name = name.to_owned();
        Some(move |_: &Names| Ok(Some(name)))
    }

    #[test]
    fn a_listing_sees_every_write_made_under_a_claim() {
        let store = store("claims");
        for id in ["a", "b", "c"] {
            let (mut w, _claim, _) = store.create(header(&store, id), named(id)).unwrap();
            w.append(&totals(1)).unwrap();
        }
        let ones = |b: u64| vec![("a".into(), 1), ("b".into(), b), ("c".into(), 1)];
        assert_eq!(turns(&store), ones(1));
        assert_eq!(turns(&store), ones(1), "from the cache");

        // Resumed and ended between two listings.
        {
            let _claim = store.claim("b", None).unwrap();
            LogWriter::open(&store.path_of("b"))
                .unwrap()
                .append(&totals(2))
                .unwrap();
        }
        assert_eq!(turns(&store), ones(2));

        // Running while a listing runs, writing after it: seen next time,
        // after the session ended too.
        let claim = store.claim("b", None).unwrap();
        assert_eq!(turns(&store), ones(2));
        let mut w = LogWriter::open(&store.path_of("b")).unwrap();
        w.append(&totals(3)).unwrap();
        assert_eq!(turns(&store), ones(3));
        w.append(&totals(4)).unwrap();
        drop(claim);
        assert_eq!(turns(&store), ones(4));
        assert_eq!(turns(&store), ones(4));

        // A removed file is gone; a new one (written by hand) is there.
        std::fs::remove_file(store.path_of("c")).unwrap();
        let mut w = LogWriter::create(&store.path_of("d")).unwrap();
        w.append(&Record::Header(header(&store, "d"))).unwrap();
        w.append(&totals(7)).unwrap();
        assert_eq!(
            turns(&store),
            vec![("a".into(), 1), ("b".into(), 4), ("d".into(), 7)]
        );
    }

    #[test]
    fn a_file_changed_behind_revolves_back_shows_once_the_cache_is_gone() {
        let store = store("behind");
        let (mut w, claim, _) = store.create(header(&store, "a"), named("a")).unwrap();
        w.append(&totals(1)).unwrap();
        drop((w, claim));
        assert_eq!(turns(&store), vec![("a".into(), 1)]);
        // The documented trade-off: no claim, no look.
        LogWriter::open(&store.path_of("a"))
            .unwrap()
            .append(&totals(2))
            .unwrap();
        assert_eq!(turns(&store), vec![("a".into(), 1)]);
        std::fs::remove_file(store.sessions_dir().join(index::FILE)).unwrap();
        assert_eq!(turns(&store), vec![("a".into(), 2)]);
        // A journal started again (here: deleted) makes every file looked at.
        LogWriter::open(&store.path_of("a"))
            .unwrap()
            .append(&totals(3))
            .unwrap();
        std::fs::remove_file(store.roots.running(&store.project).join(".claims")).unwrap();
        assert_eq!(turns(&store), vec![("a".into(), 3)]);
    }

    #[test]
    fn the_folder_read_names_every_session_file_and_nothing_else() {
        use std::os::unix::ffi::OsStrExt;
        let store = store("readdir");
        let dir = store.sessions_dir();
        std::fs::create_dir_all(dir.join("folder.jsonl")).unwrap();
        let many: Vec<String> = (0..3000).map(|i| format!("s-{i:05}.jsonl")).collect();
        for name in many.iter().map(String::as_str).chain([
            "tab\tnew\nline.jsonl",
            "notes.txt",
            ".jsonl.tmp",
        ]) {
            std::fs::write(dir.join(name), "").unwrap();
        }
        std::fs::write(dir.join(std::ffi::OsStr::from_bytes(b"\xff.jsonl")), "").unwrap();
        let read = Files::read(&dir).wait().unwrap();
        let mut names: Vec<&str> = read.split_terminator('\0').collect();
        names.sort_unstable();
        let mut expected: Vec<&str> = many.iter().map(String::as_str).collect();
        expected.extend(["folder.jsonl", "tab\tnew\nline.jsonl"]);
        expected.sort_unstable();
        assert_eq!(names, expected);
        assert_eq!(Files::read(&dir.join("gone")).wait().unwrap(), "");
    }

    #[test]
    fn a_piped_session_is_created_without_a_listing() {
        let store = store("unnamed");
        let mut none = named("never");
        none.take();
        let (_w, _claim, h) = store.create(header(&store, "a"), none).unwrap();
        assert_eq!(h.name, None);
        assert!(!store.sessions_dir().join(index::FILE).exists());
    }
}
