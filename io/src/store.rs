//! The sessions of one working directory: where they are, which exist, which
//! run, and opening a new one under the naming lock.

use std::collections::{BTreeSet, HashMap};
use std::io;
use std::path::{Path, PathBuf};

use revolve_core::record::Header;
use revolve_core::view::Summary;
use serde::{Deserialize, Serialize};

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
    /// through the listing cache (see [`Index`]): a file whose size and
    /// modification time are unchanged is not opened again. Files that cannot
    /// be read or have no header are left out.
    pub fn list(&self) -> io::Result<Vec<Summary>> {
        let dir = self.sessions_dir();
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let index = Index::load(&dir);
        let cwd = self.cwd_str();
        let mut out = Vec::new();
        // Rebuilt only when a file is new, changed or gone.
        let mut fresh: Option<Index> = None;
        let mut seen = 0;
        let mut found_all = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.ends_with(".jsonl") {
                continue;
            }
            let Ok(meta) = entry.metadata() else { continue };
            let stamp = Stamp::of(&meta);
            let path = entry.path();
            let known = index.entries.get(&name).filter(|e| (e.0, e.1) == stamp);
            let found = match known {
                Some(e) => {
                    seen += 1;
                    e.2.as_ref()
                        .and_then(|row| index.summary(row, &path, stamp))
                }
                None => {
                    fresh.get_or_insert_with(Index::new);
                    // An unreadable file is remembered as such until it changes.
                    log::summary(&path)
                        .ok()
                        .flatten()
                        .map(|(header, summary)| (header.cwd, summary))
                }
            };
            if let Some((c, summary)) = &found {
                if *c == cwd {
                    out.push(summary.clone());
                }
            }
            found_all.push((name, stamp, found));
        }
        if fresh.is_some() || seen != index.entries.len() {
            let mut fresh = Index::new();
            for (name, stamp, found) in found_all {
                let row = found.as_ref().map(|(c, s)| fresh.row(c, s));
                fresh.entries.insert(name, Indexed(stamp.0, stamp.1, row));
            }
            // A cache that cannot be written (read-only state dir) only costs
            // speed next time.
            fresh.save(&dir).ok();
        }
        Ok(out)
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

    /// Names this directory's sessions use, on disk or running.
    pub fn names_in_use(&self) -> io::Result<BTreeSet<String>> {
        let mut used: BTreeSet<String> = self.list()?.into_iter().filter_map(|s| s.name).collect();
        used.extend(self.running().into_iter().filter_map(|r| r.name));
        Ok(used)
    }

    /// Starts a new session file. Under the naming lock, `header` gets its
    /// name from `name(names in use)` (which may refuse), the file is created
    /// with the header as its first line, and the session is claimed as
    /// running, so two sessions started at once never share a name.
    pub fn create(
        &self,
        mut header: Header,
        name: impl FnOnce(&BTreeSet<String>) -> Result<Option<String>, String>,
    ) -> Result<(LogWriter, Claim, Header), CreateError> {
        let running_dir = self.roots.running(&self.project);
        let naming = NamingLock::acquire(&running_dir)?;
        registry::clean(&running_dir, &naming);
        let used = self.names_in_use()?;
        header.name = name(&used).map_err(CreateError::Refused)?;
        let mut writer = LogWriter::create(&self.path_of(&header.id))?;
        writer.append(&revolve_core::Record::Header(header.clone()))?;
        let claim = Claim::take(
            &running_dir,
            &self.running_entry(&header.id, header.name.clone()),
        )?;
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

/// The listing cache: `<sessions>/.index.json`, one entry per session file
/// with the size and modification time it was read at, and what the listing
/// needs of it (its header's cwd, as an index into `cwds`). Entries are JSON
/// arrays, not objects, so ten thousand of them parse in a few
/// milliseconds. It is only a cache: deleting it, or a version this build
/// does not read, costs one slow listing; it is rewritten atomically (temp
/// file + rename) whenever a file changed.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Index {
    version: u32,
    cwds: Vec<String>,
    entries: HashMap<String, Indexed>,
}

/// `[len, mtime_ns, row or null]`.
#[derive(Debug, Serialize, Deserialize)]
struct Indexed(u64, i64, Option<Row>);

/// `[cwd index, id, name, named, started (unix s), turns, continued]`; the
/// last activity is the file's modification time.
#[derive(Debug, Serialize, Deserialize)]
struct Row(
    usize,
    String,
    Option<String>,
    bool,
    i64,
    u64,
    Option<String>,
);

/// What says a file is unchanged: its size and modification time (ns).
type Stamp = (u64, i64);

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

impl Index {
    /// A row for the cache, interning its cwd.
    fn row(&mut self, cwd: &str, s: &Summary) -> Row {
        let i = match self.cwds.iter().position(|c| c == cwd) {
            Some(i) => i,
            None => {
                self.cwds.push(cwd.to_owned());
                self.cwds.len() - 1
            }
        };
        Row(
            i,
            s.id.clone(),
            s.name.clone(),
            s.named,
            s.started.unix_timestamp(),
            s.turns,
            s.continued.clone(),
        )
    }

    /// The cwd and summary a row stands for.
    fn summary(&self, row: &Row, path: &Path, stamp: Stamp) -> Option<(String, Summary)> {
        let cwd = self.cwds.get(row.0)?.clone();
        let started = time::OffsetDateTime::from_unix_timestamp(row.4).ok()?;
        let last_activity =
            time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(stamp.1)).ok()?;
        let summary = Summary {
            id: row.1.clone(),
            name: row.2.clone(),
            named: row.3,
            started,
            turns: row.5,
            last_activity,
            path: path.to_string_lossy().into_owned(),
            continued: row.6.clone(),
        };
        Some((cwd, summary))
    }

    fn new() -> Index {
        Index {
            version: INDEX_VERSION,
            cwds: Vec::new(),
            entries: HashMap::new(),
        }
    }
}
const INDEX_VERSION: u32 = 2;
const INDEX_FILE: &str = ".index.json";

impl Index {
    fn load(dir: &Path) -> Index {
        std::fs::read(dir.join(INDEX_FILE))
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Index>(&bytes).ok())
            .filter(|i| i.version == INDEX_VERSION)
            .unwrap_or_default()
    }

    fn save(&self, dir: &Path) -> io::Result<()> {
        let tmp = dir.join(format!("{INDEX_FILE}.{}.tmp", std::process::id()));
        let bytes = serde_json::to_vec(&self).map_err(io::Error::other)?;
        std::fs::write(&tmp, bytes)?;
        std::fs::rename(&tmp, dir.join(INDEX_FILE)).inspect_err(|_| {
            std::fs::remove_file(&tmp).ok();
        })
    }
}

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
