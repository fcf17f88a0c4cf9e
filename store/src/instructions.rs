//! Reading the project's instructions (`AGENTS.md`, else `CLAUDE.md`, in
//! each folder from the repository root down to the working directory; see
//! `revolve_core::instructions`): found, opened only if regular (a FIFO
//! never makes a start wait) and inside the repository (a link out of it,
//! to `/proc/self/environ` or a key, is refused; see [`crate::intree`]),
//! read up to the core's bound.

use std::io;
use std::path::{Path, PathBuf};

use revolve_core::instructions::{self, Instructions, CAP, NAMES};

use crate::intree;

/// The repository root `cwd` is in: the nearest folder up from it that
/// holds `.git` (a folder, or the file of a linked worktree or submodule);
/// `cwd` itself outside git.
pub fn root(cwd: &Path) -> PathBuf {
    cwd.ancestors()
        .find(|dir| dir.join(".git").symlink_metadata().is_ok())
        .unwrap_or(cwd)
        .to_path_buf()
}

/// The instructions that apply in `cwd`, root first, fitted to the core's
/// bound; and a line for each file that could not be read (left out).
pub fn load(cwd: &Path) -> (Vec<Instructions>, Vec<String>) {
    let mut read = Vec::new();
    let mut problems = Vec::new();
    let root = root(cwd);
    for folder in instructions::folders(&root, cwd) {
        let [agents, claude] = NAMES.map(|name| folder.join(name));
        let mut first = None;
        for path in [&agents, &claude] {
            // A CLAUDE.md that is a link to the AGENTS.md beside it is
            // that file, read already.
            if *path == claude && links_to(&claude, &agents) {
                continue;
            }
            match read_bounded(&root, path) {
                Ok(Some(file)) => {
                    let repeated = first
                        .as_ref()
                        .is_some_and(|a: &Vec<u8>| instructions::repeats(a, &file.bytes));
                    if *path == agents {
                        first = Some(file.bytes.clone());
                    }
                    if !repeated {
                        read.push(file);
                    }
                }
                Ok(None) => {}
                Err(e) => problems.push(format!(
                    "revolve: cannot read the project instructions {}: {e}; left out",
                    path.display()
                )),
            }
        }
    }
    (instructions::fit(read), problems)
}

/// Whether `path` is a link that resolves to `target`.
fn links_to(path: &Path, target: &Path) -> bool {
    path.symlink_metadata().is_ok_and(|m| m.is_symlink())
        && matches!(
            (path.canonicalize(), target.canonicalize()),
            (Ok(a), Ok(b)) if a == b
        )
}

/// The first [`CAP`] bytes of `path` and its size, `None` when there is no
/// such file.
fn read_bounded(root: &Path, path: &Path) -> io::Result<Option<instructions::Read>> {
    Ok(
        intree::read(root, path, CAP as u64)?.map(|head| instructions::Read {
            path: path.to_string_lossy().into_owned(),
            bytes: head.bytes,
            size: head.size,
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agents_md_and_claude_md_from_the_root_down() {
        let tmp = tempfile::Builder::new()
            .prefix("revolve-instr-")
            .tempdir()
            .unwrap();
        let dir = tmp.path().to_path_buf();
        let deep = dir.join("a").join("b");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::create_dir_all(dir.join(".git")).unwrap();
        std::fs::write(dir.join("AGENTS.md"), "root").unwrap();
        // Only an import of the AGENTS.md beside it: read once.
        std::fs::write(dir.join("CLAUDE.md"), "@AGENTS.md\n").unwrap();
        std::fs::write(dir.join("a").join("CLAUDE.md"), "a's claude").unwrap();
        std::fs::write(deep.join("AGENTS.md"), "b").unwrap();
        assert_eq!(root(&deep), dir);
        let (files, problems) = load(&deep);
        assert!(problems.is_empty(), "{problems:?}");
        let texts: Vec<&str> = files.iter().map(|f| f.text.as_str()).collect();
        assert_eq!(texts, ["root", "a's claude", "b"]);
        assert!(files[1].path.ends_with("a/CLAUDE.md"));
        // A folder holding something else by that name is said, not fatal.
        std::fs::remove_file(deep.join("AGENTS.md")).unwrap();
        std::fs::create_dir(deep.join("AGENTS.md")).unwrap();
        let (files, problems) = load(&deep);
        assert_eq!(files.len(), 2);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("not a regular file"), "{problems:?}");
        // A link out of the repository is refused, said, never read.
        std::fs::remove_dir(deep.join("AGENTS.md")).unwrap();
        std::os::unix::fs::symlink("/proc/self/environ", deep.join("AGENTS.md")).unwrap();
        let (files, problems) = load(&deep);
        assert_eq!(files.len(), 2);
        assert!(
            problems[0].contains("leads out of the tree"),
            "{problems:?}"
        );
    }

    /// Claude Code users keep Claude-only notes in a CLAUDE.md beside the
    /// AGENTS.md: both are read, once each; a copy or a link is read once.
    #[test]
    fn a_claude_md_beside_agents_md_is_read_unless_it_repeats_it() {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path();
        std::fs::create_dir_all(dir.join(".git")).unwrap();
        std::fs::write(dir.join("AGENTS.md"), "Use tabs.\n").unwrap();
        std::fs::write(dir.join("CLAUDE.md"), "Never push.\n").unwrap();
        let texts = |files: Vec<Instructions>| -> Vec<String> {
            files.into_iter().map(|f| f.text).collect()
        };
        let (files, problems) = load(dir);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(texts(files), ["Use tabs.", "Never push."]);
        std::fs::write(dir.join("CLAUDE.md"), "Use tabs.\n").unwrap();
        assert_eq!(texts(load(dir).0), ["Use tabs."]);
        std::fs::remove_file(dir.join("CLAUDE.md")).unwrap();
        std::os::unix::fs::symlink("AGENTS.md", dir.join("CLAUDE.md")).unwrap();
        let (files, problems) = load(dir);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(texts(files), ["Use tabs."]);
    }
}
