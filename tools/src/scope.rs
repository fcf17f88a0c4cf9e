//! Confinement: what a tool may read or change, fixed when the session
//! starts (the working tree) or a grant is made.

use super::*;

/// The longest path a tool takes, in bytes (Linux's `PATH_MAX`): no file
/// has a longer one.
pub(crate) const PATH_MAX: usize = 4096; // not policy: the platform's limit

/// A path longer than [`PATH_MAX`] is refused without being echoed: an
/// error quoting megabytes of it would only fill the history.
pub(crate) fn too_long(raw: &str) -> Result<(), String> {
    if raw.len() > PATH_MAX {
        return Err(format!(
            "error: a path of {} bytes; a path has at most {PATH_MAX}",
            raw.len()
        ));
    }
    Ok(())
}

/// Whether the working tree is still the directory the session started
/// in: the same canonical path (no component swapped for a symlink) and
/// the same device and inode. Else the error every tool that uses it gets.
pub(crate) fn tree_unchanged(ctx: &Context) -> Result<(), String> {
    let same_path = fs::canonicalize(&ctx.root).is_ok_and(|now| now == ctx.root);
    let same_id = ctx.root_id.is_none() || FileId::of(&ctx.root) == ctx.root_id;
    if same_path && same_id {
        return Ok(());
    }
    Err(format!(
        "error: the working tree {} is no longer the directory this session started in \
         (moved, replaced or swapped for a symlink); its files are not read and no command \
         runs in it",
        ctx.root.display()
    ))
}

/// What may be read: the root and the grants, each fixed when it was
/// made. Neither is resolved again here: the root is the canonical path
/// the session started in, and a grant is the canonical path it was given
/// for, valid only while it still resolves to itself (a granted folder
/// swapped for a symlink to `/` grants nothing).
pub(crate) struct Scope {
    pub(crate) root: PathBuf,
    grants: Vec<PathBuf>,
}

impl Scope {
    pub(crate) fn new(root: &Path, grants: &[String]) -> Scope {
        Scope {
            root: root.to_path_buf(),
            grants: grants
                .iter()
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
                .filter(|p| fs::canonicalize(p).is_ok_and(|now| &now == p))
                .collect(),
        }
    }

    pub(crate) fn allows(&self, path: &Path) -> bool {
        path.starts_with(&self.root) || self.grants.iter().any(|g| path.starts_with(g))
    }

    /// The canonical path of `raw` if it exists and may be read; else the
    /// error the model gets.
    pub(crate) fn resolve(&self, raw: &str) -> Result<PathBuf, String> {
        too_long(raw)?;
        let joined = self.root.join(raw);
        match fs::canonicalize(&joined) {
            Ok(path) if self.allows(&path) => Ok(path),
            Ok(_) => Err(refusal(raw)),
            Err(e) if is_missing(&e) => {
                if self.allows(&lexical(&joined)) {
                    Err(format!("error: no such file: {raw}"))
                } else {
                    Err(refusal(raw))
                }
            }
            Err(e) => Err(format!("error: cannot open {raw}: {e}")),
        }
    }

    /// `path` relative to the root when inside it, else absolute.
    pub(crate) fn show(&self, path: &Path) -> String {
        match path.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".into(),
            Ok(rel) => rel.display().to_string(),
            Err(_) => path.display().to_string(),
        }
    }
}

pub(crate) fn refusal(raw: &str) -> String {
    format!(
        "error: {raw} is outside the working tree and not granted to this session; \
         ask with request_file_grant"
    )
}

pub(crate) fn is_missing(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

/// `path` with `.` and `..` resolved by name only (no symlinks followed).
pub(crate) fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}
