//! The sessions of one working directory: where they are, which exist, which
//! run, and opening a new one under the naming lock.

use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};

use revolve_core::record::Header;
use revolve_core::view::Summary;

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

    /// Every session file of this directory, read from head and tail only.
    /// Files that cannot be read or have no header are left out.
    pub fn list(&self) -> io::Result<Vec<Summary>> {
        let entries = match std::fs::read_dir(self.sessions_dir()) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let cwd = self.cwd_str();
        let mut out = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|e| e != "jsonl") {
                continue;
            }
            if let Ok(Some((header, summary))) = log::summary(&path) {
                if header.cwd == cwd {
                    out.push(summary);
                }
            }
        }
        Ok(out)
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
    pub fn claim(&self, id: &str, name: Option<String>) -> io::Result<Claim> {
        Claim::take(
            &self.roots.running(&self.project),
            &self.running_entry(id, name),
        )
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
