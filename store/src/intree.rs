//! Reading a file because it sits in a tree (the repository: project
//! instructions, skills, a `.task-agent/` workspace's memory, a `.git`
//! file), as a cloned repository cannot turn it into something else.
//!
//! A repository chooses what its files are. `AGENTS.md` may be a link to
//! `/proc/self/environ` or to `~/.ssh/id_rsa`, a FIFO, a device. So such a
//! file is read only when:
//! * every link on its way resolves inside the tree (a link inside the
//!   tree to a file inside it is followed; one leading out is refused);
//! * it is opened without following a link at its last step
//!   (`O_NOFOLLOW`), non-blocking (a FIFO never makes revolve wait);
//! * the opened handle is a regular file (`fstat`), and on Linux the path
//!   the kernel gives for it (`/proc/self/fd/N`) is still inside the tree,
//!   so a folder swapped for a link between the check and the open is
//!   caught;
//! * at most a bound is read (the caller's, at most
//!   `revolve_core::policy::REPO_FILE_CAP`).
//!
//! Refusals are [`io::ErrorKind::PermissionDenied`] (out of the tree) or
//! [`io::ErrorKind::InvalidInput`] (not a regular file), with a message
//! naming why; a missing file is [`io::ErrorKind::NotFound`].

use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// What was read of a file: its first bytes (up to the cap) and its size.
#[derive(Debug)]
pub struct Head {
    /// The bytes read, at most the cap.
    pub bytes: Vec<u8>,
    /// The file's size when opened.
    pub size: u64,
}

/// Opens `path` for reading if it is a regular file inside `tree` (see the
/// module doc), with its metadata.
pub fn open(tree: &Path, path: &Path) -> io::Result<(File, Metadata)> {
    let tree = tree.canonicalize()?;
    let real = path.canonicalize()?;
    if !real.starts_with(&tree) {
        return Err(outside(&real));
    }
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use rustix::fs::OFlags;
        use std::os::unix::fs::OpenOptionsExt;
        // The flags' bits fit an `int`, as `open(2)` takes them.
        options.custom_flags((OFlags::NOFOLLOW | OFlags::NONBLOCK).bits() as i32);
    }
    let file = options.open(&real)?;
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // Where the kernel says the handle is; without /proc, the check
        // above stands alone.
        if let Ok(opened) = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())) {
            if !opened.starts_with(&tree) {
                return Err(outside(&opened));
            }
        }
    }
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("not a regular file ({})", crate::regular::kind(&meta)),
        ));
    }
    Ok((file, meta))
}

/// The first `cap` bytes (at most `REPO_FILE_CAP`) of `path`, a regular
/// file inside `tree` (see [`open`]), and its size; `None` when there is
/// no such file.
pub fn read(tree: &Path, path: &Path, cap: u64) -> io::Result<Option<Head>> {
    let (file, meta) = match open(tree, path) {
        Ok(opened) => opened,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let cap = cap.min(revolve_core::policy::REPO_FILE_CAP);
    let mut bytes = Vec::new();
    file.take(cap).read_to_end(&mut bytes)?;
    Ok(Some(Head {
        bytes,
        size: meta.len(),
    }))
}

/// The whole of `path`, a regular file inside `tree` (see [`open`]), if
/// it is at most `cap` bytes: a bigger one is an
/// [`io::ErrorKind::InvalidData`] error (as `regular::read_whole`).
pub fn read_whole(tree: &Path, path: &Path, cap: u64) -> io::Result<Vec<u8>> {
    let (file, meta) = open(tree, path)?;
    let too_big = || {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("over {cap} bytes, more than such a file holds"),
        )
    };
    if meta.len() > cap {
        return Err(too_big());
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(cap + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(too_big());
    }
    Ok(bytes)
}

fn outside(real: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::PermissionDenied,
        format!(
            "it leads out of the tree (to {}), which revolve does not follow",
            PathBuf::from(real).display()
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_inside_are_followed_links_out_and_odd_files_refused() {
        let tmp = tempfile::Builder::new()
            .prefix("revolve-intree-")
            .tempdir()
            .unwrap();
        let dir = tmp.path().to_path_buf();
        let tree = dir.join("tree");
        std::fs::create_dir_all(tree.join("sub")).unwrap();
        std::fs::write(tree.join("sub/real.md"), "inside").unwrap();
        std::fs::write(dir.join("secret"), "KEY").unwrap();
        let link = |target: &str, name: &str| {
            std::os::unix::fs::symlink(target, tree.join(name)).unwrap();
        };
        link("sub/real.md", "relative.md");
        link(tree.join("sub/real.md").to_str().unwrap(), "absolute.md");
        link("../secret", "up.md");
        link(dir.join("secret").to_str().unwrap(), "out.md");
        link("/proc/self/environ", "environ.md");
        link("/dev/zero", "zero.md");
        link("..", "parent");
        std::fs::create_dir(tree.join("folder.md")).unwrap();
        let read = |name: &str| read(&tree, &tree.join(name), 1024);
        let text = |name: &str| String::from_utf8(read(name).unwrap().unwrap().bytes).unwrap();
        assert_eq!(text("sub/real.md"), "inside");
        assert_eq!(text("relative.md"), "inside");
        assert_eq!(text("absolute.md"), "inside");
        for name in ["up.md", "out.md", "environ.md", "zero.md", "parent/secret"] {
            let err = read(name).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::PermissionDenied, "{name}: {err}");
            assert!(err.to_string().contains("leads out of the tree"), "{err}");
        }
        assert_eq!(
            read("folder.md").unwrap_err().to_string(),
            "not a regular file (a directory)"
        );
        assert!(read("absent.md").unwrap().is_none());
        let made = std::process::Command::new("mkfifo")
            .arg(tree.join("fifo.md"))
            .status();
        assert!(made.unwrap().success());
        assert_eq!(
            read("fifo.md").unwrap_err().to_string(),
            "not a regular file (a FIFO)"
        );
        // Bounded by the caller's cap.
        std::fs::write(tree.join("big.md"), "x".repeat(5000)).unwrap();
        let big = read("big.md").unwrap().unwrap();
        assert_eq!((big.bytes.len(), big.size), (1024, 5000));
    }
}
