//! The sessions of one working directory: where they are, which exist, which
//! run, and opening a new one under the naming lock.

use std::collections::{BTreeMap, BTreeSet};
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
        let mut index = Index::load(&dir);
        let mut fresh = Index {
            version: INDEX_VERSION,
            entries: BTreeMap::new(),
        };
        let mut changed = false;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.ends_with(".jsonl") {
                continue;
            }
            let Ok(meta) = entry.metadata() else { continue };
            let stamp = Stamp::of(&meta);
            let cached = index.entries.remove(&name).filter(|e| e.stamp == stamp);
            let entry = match cached {
                Some(e) => e,
                None => {
                    changed = true;
                    match log::summary(&entry.path()) {
                        Ok(Some((header, summary))) => Indexed {
                            stamp,
                            cwd: Some(header.cwd),
                            summary: Some(summary),
                        },
                        // Remembered as unreadable until the file changes.
                        _ => Indexed {
                            stamp,
                            cwd: None,
                            summary: None,
                        },
                    }
                }
            };
            fresh.entries.insert(name, entry);
        }
        if changed || !index.entries.is_empty() {
            // A cache that cannot be written (read-only state dir) only costs
            // speed next time.
            fresh.save(&dir).ok();
        }
        let cwd = self.cwd_str();
        Ok(fresh
            .entries
            .into_values()
            .filter(|e| e.cwd.as_deref() == Some(cwd.as_str()))
            .filter_map(|e| e.summary)
            .collect())
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
/// with the size and modification time it was read at, its header's cwd and
/// its summary. It is only a cache: deleting it, or a version this build
/// does not read, costs one slow listing; it is rewritten atomically
/// (temp file + rename) whenever a file changed.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Index {
    version: u32,
    entries: BTreeMap<String, Indexed>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Indexed {
    stamp: Stamp,
    cwd: Option<String>,
    summary: Option<Summary>,
}

/// What says a file is unchanged: its size and modification time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Stamp {
    len: u64,
    mtime_ns: i128,
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Stamp {
        use std::os::unix::fs::MetadataExt;
        Stamp {
            len: meta.len(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
        }
    }
}

const INDEX_VERSION: u32 = 1;
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
