//! Memory on disk: where the memory directories are, reading them, seeding
//! the builtin documents, creating the project directory, writing one file
//! for the `remember` tool, and copying the directory aside before a rewrite.
//!
//! What to seed, what the prompt says and what a snapshot's metadata holds
//! are decided in `revolve_core::memory`; this module only moves bytes.
//! Every write that replaces something is a temp file (or temp folder) in
//! the same directory, fsynced, then renamed into place, so a crash leaves
//! either the old state or the new one. Temp names start with `.`, and hidden
//! names are never loaded, snapshotted or listed.

use std::fmt;
use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use revolve_core::memory::{
    to_seed_of, BadLabel, Label, MemoryFile, Scope, SnapshotMeta, BUILTIN, PROJECT_MEMORY_TEMPLATE,
    SUBAGENTS_README,
};

use crate::files;
use crate::fsx::{self, sync_dir, temp_sibling};
use crate::paths::{slug, Project, Roots};

/// Where one session's memory lives (ARCHITECTURE.md section 2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryDirs {
    /// What is true everywhere.
    pub global: PathBuf,
    /// What this repository has taught: `<project_dir>/memory`.
    pub project: PathBuf,
    /// The project directory, holding `memory/`, `tasks/` and `subagents/`
    /// (and the standing goal).
    pub project_dir: PathBuf,
    /// The `.task-agent/` workspace the directories are in, if one was found.
    pub workspace: Option<PathBuf>,
}

/// The name of the workspace folder shared with the task-agent program.
pub(crate) const WORKSPACE: &str = ".task-agent";

/// The list of builtin documents a global memory directory has received.
pub(crate) const SEEDED: &str = ".seeded";

impl MemoryDirs {
    /// The memory directories for a session in `cwd` (an absolute path).
    ///
    /// The nearest of `cwd` and its parents, up to the filesystem root, that
    /// holds a `.task-agent/` directory is the workspace: global memory is
    /// `.task-agent/memory/`, the project directory
    /// `.task-agent/projects/<repo-dir-name>/`, where the name is the last
    /// component of the project key. `$HOME/.task-agent` is such a parent
    /// like any other. Without a workspace, global memory is
    /// `<config>/memory/` and the project directory
    /// `<config>/projects/<slug>/`.
    pub fn locate(cwd: &Path, project: &Project, roots: &Roots) -> MemoryDirs {
        let workspace = cwd
            .ancestors()
            .map(|dir| dir.join(WORKSPACE))
            .find(|ws| ws.is_dir());
        let (global, project_dir) = match &workspace {
            Some(ws) => {
                let name = project
                    .key
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_else(|| project.slug.clone());
                (ws.join("memory"), ws.join("projects").join(name))
            }
            None => (
                roots.config.join("memory"),
                roots.config.join("projects").join(&project.slug),
            ),
        };
        MemoryDirs {
            global,
            project: project_dir.join("memory"),
            project_dir,
            workspace,
        }
    }
}

/// Every memory file: the `.md` files of global memory, then of project
/// memory, each sorted by name. Hidden files, directories and symlinks are
/// left out; a directory that does not exist has no files. Content that is
/// not UTF-8 is read lossily.
/// Temp files a killed write left there (see [`fsx::sweep`]) are removed
/// first, and from the project directory.
pub fn load(dirs: &MemoryDirs) -> io::Result<Vec<MemoryFile>> {
    for dir in [&dirs.global, &dirs.project, &dirs.project_dir] {
        fsx::sweep(dir);
    }
    let mut files = Vec::new();
    for (scope, dir) in [
        (Scope::Global, &dirs.global),
        (Scope::Project, &dirs.project),
    ] {
        for name in regular_files(dir)? {
            if !name.ends_with(".md") {
                continue;
            }
            let path = dir.join(&name);
            let cap = revolve_core::policy::OWN_FILE_CAP;
            // In a `.task-agent/` workspace (which a cloned repository may
            // hold), never through a link out of the folder holding it.
            let read = match dirs.workspace.as_deref().and_then(Path::parent) {
                Some(tree) => crate::intree::read_whole(tree, &path, cap),
                None => crate::regular::read_whole(&path, cap),
            };
            let bytes = match read {
                Ok(b) => b,
                // Deleted between listing and reading: it is simply gone.
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            files.push(MemoryFile {
                scope,
                name,
                content: String::from_utf8_lossy(&bytes).into_owned(),
            });
        }
    }
    Ok(files)
}

/// Writes the builtin documents `global` has not had yet (see
/// `revolve_core::memory::to_seed`), creating the directory if needed, and
/// appends their names to its `.seeded` list. Returns exactly the names
/// written, for the startup note.
///
/// Seeding happens under an OS file lock on `.seeded` (as running sessions
/// hold theirs), and what to seed is decided again once the lock is held:
/// of processes starting at once, the first writes and lists each document
/// and gets its name, the others find it listed and get nothing. A start
/// with nothing to seed takes no lock and writes nothing.
pub fn seed(global: &Path) -> io::Result<Vec<String>> {
    seed_from(global, &BUILTIN, |dir, name| dir.join(name))
}

/// [`seed`] of any list of shipped defaults `(name, content)` into `dir`,
/// each written at `file(dir, name)` (its folder made when missing); the
/// builtin skills are seeded this way too.
pub(crate) fn seed_from(
    dir: &Path,
    builtin: &[(&'static str, &'static str)],
    file: fn(&Path, &str) -> PathBuf,
) -> io::Result<Vec<String>> {
    let seeded_path = dir.join(SEEDED);
    let listed = match crate::regular::read_text(&seeded_path, revolve_core::policy::OWN_FILE_CAP) {
        Ok(s) => s,
        Err(e) if e.kind() == io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e),
    };
    if to_seed_of(builtin, &names_listed(&listed), &present(dir)?).is_empty() {
        return Ok(Vec::new());
    }
    files::create_dir_all(dir)?;
    // Released when dropped, on return or when the process dies. Written
    // after it is read to its end, so what is added goes at the end.
    let lock = fsx::Lock::acquire(&seeded_path)?;
    let mut list = lock.file();
    let mut listed = String::new();
    list.read_to_string(&mut listed)?;
    let names = to_seed_of(builtin, &names_listed(&listed), &present(dir)?);
    if names.is_empty() {
        return Ok(Vec::new());
    }
    for name in &names {
        let content = builtin
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, c)| *c)
            .unwrap_or_default();
        let path = file(dir, name);
        if let Some(parent) = path.parent() {
            files::create_dir_all(parent)?;
        }
        fsx::write_atomic(&path, content.as_bytes())?;
    }
    // Recorded after the files are written: a crash in between leaves a
    // file present but unlisted, which the next start also leaves alone.
    let mut line = String::new();
    if !listed.is_empty() && !listed.ends_with('\n') {
        line.push('\n');
    }
    for name in &names {
        line.push_str(name);
        line.push('\n');
    }
    list.write_all(line.as_bytes())?;
    list.sync_all()?;
    Ok(names.into_iter().map(str::to_owned).collect())
}

/// Creates the project directory when it does not exist yet: `memory/`
/// with `project.md`, `tasks/`, and `subagents/` with `README`. Returns
/// `Some(paths created)`, the folder first, only when this call created it;
/// `None` when it already existed, in which case nothing is touched: a
/// folder the user emptied, or that something else made first (saving the
/// goal, say), stays as it is (only `revolve init` fills it in, with
/// [`complete_project_dir`]).
///
/// The folder is built under a hidden temp name beside it and renamed into
/// place, so it appears whole or not at all, and of two sessions racing to
/// create it exactly one gets `Some`.
pub fn ensure_project_dir(dirs: &MemoryDirs) -> io::Result<Option<Vec<PathBuf>>> {
    let target = &dirs.project_dir;
    if exists(target)? {
        return Ok(None);
    }
    let parent = target.parent().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "the project directory has no parent",
        )
    })?;
    files::create_dir_all(parent)?;
    let tmp = temp_sibling(target);
    let built = build_project_dir(&tmp);
    if let Err(e) = built {
        fs::remove_dir_all(&tmp).ok();
        return Err(e);
    }
    if exists(target)? {
        fs::remove_dir_all(&tmp).ok();
        return Ok(None);
    }
    if let Err(e) = fs::rename(&tmp, target) {
        fs::remove_dir_all(&tmp).ok();
        // Somebody else created it in the meantime (a rename onto a
        // non-empty directory fails): theirs stands.
        if exists(target)? {
            return Ok(None);
        }
        return Err(e);
    }
    sync_dir(parent);
    Ok(Some(
        [
            "",
            "memory",
            "memory/project.md",
            "tasks",
            "subagents",
            "subagents/README",
        ]
        .iter()
        .map(|p| {
            if p.is_empty() {
                target.clone()
            } else {
                target.join(p)
            }
        })
        .collect(),
    ))
}

/// What [`write`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteOutcome {
    /// The file did not exist and now does.
    Created,
    /// The file's content was replaced.
    Replaced,
    /// The file was removed (the new content was empty).
    Deleted,
}

/// Why [`write`] did nothing. `Display` is the tool result the model gets,
/// starting with `error:`.
#[derive(Debug)]
pub enum MemoryError {
    /// The label was refused (for a caller that parses and writes in one go).
    BadLabel(BadLabel),
    /// The file exists and `replace` was not passed.
    Exists(Label),
    /// Empty content asks to delete a file that does not exist.
    Missing(Label),
    /// The file system said no.
    Io(Label, io::Error),
}

impl fmt::Display for MemoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemoryError::BadLabel(bad) => write!(f, "error: {bad}"),
            MemoryError::Exists(l) => {
                write!(
                    f,
                    "error: memory '{l}' exists; pass replace: true to overwrite it"
                )
            }
            MemoryError::Missing(l) => write!(
                f,
                "error: memory '{l}' does not exist, so there is nothing to delete"
            ),
            MemoryError::Io(l, e) => write!(f, "error: cannot write memory '{l}': {e}"),
        }
    }
}

impl std::error::Error for MemoryError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            MemoryError::BadLabel(bad) => Some(bad),
            MemoryError::Io(_, e) => Some(e),
            MemoryError::Exists(_) | MemoryError::Missing(_) => None,
        }
    }
}

impl From<BadLabel> for MemoryError {
    fn from(bad: BadLabel) -> MemoryError {
        MemoryError::BadLabel(bad)
    }
}

/// Writes `<label>.md` in `dir` with exactly `content`, creating `dir` if
/// needed; empty content deletes the file instead. An existing file is
/// refused unless `replace`. The write is atomic: a temp file in `dir`,
/// fsynced, renamed over the target.
pub fn write(
    dir: &Path,
    label: &Label,
    content: &str,
    replace: bool,
) -> Result<WriteOutcome, MemoryError> {
    let path = dir.join(label.file_name());
    let io_err = |e| MemoryError::Io(label.clone(), e);
    if content.is_empty() {
        return match fs::remove_file(&path) {
            Ok(()) => {
                sync_dir(dir);
                Ok(WriteOutcome::Deleted)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                Err(MemoryError::Missing(label.clone()))
            }
            Err(e) => Err(io_err(e)),
        };
    }
    let existed = exists(&path).map_err(io_err)?;
    if existed && !replace {
        return Err(MemoryError::Exists(label.clone()));
    }
    files::create_dir_all(dir).map_err(io_err)?;
    fsx::write_atomic(&path, content.as_bytes()).map_err(io_err)?;
    Ok(if existed {
        WriteOutcome::Replaced
    } else {
        WriteOutcome::Created
    })
}

/// Copies every regular, non-hidden file of `memory_dir` to
/// `<state_root>/refinements/<encoded memory_dir>/<stamp>/files/` and writes
/// `meta` beside it as `meta.cfg`. `<encoded memory_dir>` is the directory's
/// absolute path with `/` turned into `-`, like a project slug. A missing
/// `memory_dir` gives an entry with no files.
///
/// The entry is built in a hidden temp folder and renamed into place, so a
/// crash never leaves half an entry. If `<stamp>` is taken (two snapshots in
/// one second), the entry is `<stamp>-2`, `<stamp>-3`, …. Returns the
/// entry's folder.
pub fn snapshot(
    state_root: &Path,
    memory_dir: &Path,
    stamp: &str,
    meta: &SnapshotMeta,
) -> io::Result<PathBuf> {
    let store = refinements(state_root, memory_dir)?;
    files::create_dir_all(&store)?;
    fsx::sweep(&store);
    let tmp = temp_sibling(&store.join(stamp));
    let built = build_snapshot(&tmp, memory_dir, meta);
    if let Err(e) = built {
        fs::remove_dir_all(&tmp).ok();
        return Err(e);
    }
    for n in 1u32.. {
        let entry = if n == 1 {
            store.join(stamp)
        } else {
            store.join(format!("{stamp}-{n}"))
        };
        if exists(&entry)? {
            continue;
        }
        match fs::rename(&tmp, &entry) {
            Ok(()) => {
                sync_dir(&store);
                return Ok(entry);
            }
            // Taken in the meantime: try the next name.
            Err(_) if exists(&entry)? => continue,
            Err(e) => {
                fs::remove_dir_all(&tmp).ok();
                return Err(e);
            }
        }
    }
    unreachable!("an unbounded range of entry names has a free one")
}

/// The folder holding the snapshots of one memory directory:
/// `<state_root>/refinements/<memory_dir's absolute path, slugged>`.
pub fn refinements(state_root: &Path, memory_dir: &Path) -> io::Result<PathBuf> {
    let absolute = std::path::absolute(memory_dir)?;
    Ok(state_root.join("refinements").join(slug(&absolute)))
}

/// What `revolve init` adds to a project directory that exists: each of
/// memory/, tasks/ and subagents/ that is missing is created, with its
/// template; nothing that exists is touched. `Some` lists what was
/// created, when anything was. A session never calls this (see
/// [`ensure_project_dir`]).
pub fn complete_project_dir(dirs: &MemoryDirs) -> io::Result<Option<Vec<PathBuf>>> {
    let target = &dirs.project_dir;
    let mut created = Vec::new();
    for (folder, template) in [
        ("memory", Some(("project.md", PROJECT_MEMORY_TEMPLATE))),
        ("tasks", None),
        ("subagents", Some(("README", SUBAGENTS_README))),
    ] {
        let dir = target.join(folder);
        match files::create_dir(&dir) {
            Ok(()) => created.push(dir.clone()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
        if let Some((name, text)) = template {
            write_new(&dir.join(name), text)?;
            created.push(dir.join(name));
        }
        sync_dir(&dir);
    }
    Ok((!created.is_empty()).then_some(created))
}

fn build_project_dir(tmp: &Path) -> io::Result<()> {
    files::create_dir(tmp)?;
    files::create_dir(&tmp.join("memory"))?;
    files::create_dir(&tmp.join("tasks"))?;
    files::create_dir(&tmp.join("subagents"))?;
    write_new(&tmp.join("memory/project.md"), PROJECT_MEMORY_TEMPLATE)?;
    write_new(&tmp.join("subagents/README"), SUBAGENTS_README)?;
    for d in ["memory", "tasks", "subagents", ""] {
        sync_dir(&tmp.join(d));
    }
    Ok(())
}

fn build_snapshot(tmp: &Path, memory_dir: &Path, meta: &SnapshotMeta) -> io::Result<()> {
    let files = tmp.join("files");
    crate::files::create_dir_all(&files)?;
    for name in regular_files(memory_dir)? {
        // Read and written, not copied: a copy keeps the source's mode, and
        // every file revolve makes is private.
        match crate::regular::read_whole(
            &memory_dir.join(&name),
            revolve_core::policy::OWN_FILE_CAP,
        ) {
            Ok(bytes) => write_new(&files.join(&name), &bytes)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        }
    }
    sync_dir(&files);
    write_new(&tmp.join("meta.cfg"), meta.to_cfg())?;
    sync_dir(tmp);
    Ok(())
}

/// The names a `.seeded` list holds, one a line.
fn names_listed(listed: &str) -> Vec<String> {
    listed
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Every name directly in `dir` (a missing `dir` has none), for seeding:
/// whatever holds a builtin's name, file or not, keeps it from being written.
fn present(dir: &Path) -> io::Result<Vec<String>> {
    match fs::read_dir(dir) {
        Ok(entries) => entries
            .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// The names of the regular, non-hidden files directly in `dir`, sorted; a
/// missing `dir` has none. Symlinks are not followed, so they are left out.
fn regular_files(dir: &Path) -> io::Result<Vec<String>> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if name.starts_with('.') || !entry.file_type()?.is_file() {
            continue;
        }
        names.push(name);
    }
    names.sort();
    Ok(names)
}

/// Creates `path`, which must not exist, with `bytes`, fsynced (inside a
/// temp folder, which is renamed into place whole).
fn write_new(path: &Path, bytes: impl AsRef<[u8]>) -> io::Result<()> {
    let mut f = files::create_new(path)?;
    f.write_all(bytes.as_ref())?;
    f.sync_all()
}

/// Whether anything (a file, a folder, a dangling symlink) is at `path`.
fn exists(path: &Path) -> io::Result<bool> {
    match fs::symlink_metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests;
