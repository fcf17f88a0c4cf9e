//! How revolve makes its own files and folders, and says what failed.
//!
//! Everything revolve creates is private, as ssh and gpg make theirs: a
//! folder `0700`, a file `0600`, whatever the umask (session logs, spills,
//! the listing cache, lock files, the inbox, memory, goals, snapshots). A
//! file or folder that exists keeps its mode. Errors made with [`at`] name
//! the operation and the path (`cannot create /…/running/x.lock: File too
//! large (os error 27)`), so a full or read-only state directory is never
//! reported as a bare OS error.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;

/// The mode of a folder revolve creates.
#[cfg(unix)]
pub const DIR_MODE: u32 = revolve_core::policy::DIR_MODE;
/// The mode of a file revolve creates.
#[cfg(unix)]
pub const FILE_MODE: u32 = revolve_core::policy::FILE_MODE;

/// Creates `path` and its missing parents, each `0700`.
pub fn create_dir_all(path: &Path) -> io::Result<()> {
    builder().recursive(true).create(path)
}

/// Creates the folder `path` (`0700`); its parent must exist.
pub fn create_dir(path: &Path) -> io::Result<()> {
    builder().create(path)
}

/// Open options whose `create` makes a `0600` file.
pub fn options() -> OpenOptions {
    let mut options = OpenOptions::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(FILE_MODE);
    }
    options
}

/// Creates `path`, which must not exist, for writing (`0600`).
pub(crate) fn create_new(path: &Path) -> io::Result<File> {
    options().write(true).create_new(true).open(path)
}

/// `e` with the operation (`what`, e.g. "cannot create") and `path` in
/// front, of the same kind.
pub fn at(what: &str, path: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{what} {}: {e}", path.display()))
}

/// [`at`] as a closure for `map_err`.
pub fn ctx<'a>(what: &'a str, path: &'a Path) -> impl FnOnce(io::Error) -> io::Error + 'a {
    move |e| at(what, path, e)
}

fn builder() -> std::fs::DirBuilder {
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(DIR_MODE);
    }
    builder
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn folders_and_files_are_private_whatever_the_umask() {
        let tmp = tempfile::Builder::new()
            .prefix("revolve-files-")
            .tempdir()
            .unwrap();
        let root = tmp.path().to_path_buf();
        let deep = root.join("a/b");
        create_dir_all(&deep).unwrap();
        create_dir(&deep.join("c")).unwrap();
        create_new(&deep.join("n")).unwrap();
        options()
            .append(true)
            .create(true)
            .open(deep.join("o"))
            .unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        for dir in [root.join("a"), deep.clone(), deep.join("c")] {
            assert_eq!(mode(&dir), DIR_MODE, "{}", dir.display());
        }
        for file in ["n", "o"] {
            assert_eq!(mode(&deep.join(file)), FILE_MODE, "{file}");
        }
    }
}
