//! The approval fingerprint of a program to run, read from the world: its
//! command, arguments and env as written, and what stands at each path
//! inside the repository they name (see [`revolve_core::approval`], which
//! decides which paths and what a change is). For a project's MCP server
//! now, and for anything else a repository asks revolve to run.

use std::collections::BTreeMap;
use std::path::Path;

use revolve_core::approval::{self, Fingerprint, Seen};

/// The fingerprint of `command` with `args` and `env` (as written), run in
/// `cwd`, the repository's root being `root`.
pub fn fingerprint(
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    cwd: &Path,
    root: &Path,
) -> Fingerprint {
    let tree = root.canonicalize().unwrap_or_else(|_| root.to_owned());
    let files: Vec<(String, Seen)> = approval::candidates(command, args, cwd, root)
        .into_iter()
        .map(|(name, path)| (name, seen(&path, &tree)))
        .collect();
    approval::fingerprint(command, args, env, &files)
}

/// What stands at `path`: a regular file inside `tree` is hashed (read
/// through no link, never a device or a FIFO); a link out of the tree is
/// named, not followed.
fn seen(path: &Path, tree: &Path) -> Seen {
    if std::fs::symlink_metadata(path).is_err() {
        return Seen::Absent;
    }
    let Ok(real) = path.canonicalize() else {
        // A link to nothing.
        return match std::fs::read_link(path) {
            Ok(to) => Seen::Outside(to.to_string_lossy().into_owned()),
            Err(_) => Seen::Special,
        };
    };
    if !real.starts_with(tree) {
        return Seen::Outside(real.to_string_lossy().into_owned());
    }
    match std::fs::metadata(&real) {
        Ok(m) if m.is_dir() => Seen::Folder,
        Ok(m) if m.is_file() => match revolve_tools::edit::hash_of(&real) {
            Ok(Some(hash)) => Seen::File(hash),
            Ok(None) => Seen::Absent,
            Err(_) => Seen::Special,
        },
        _ => Seen::Special,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rewritten_script_or_a_link_out_changes_the_fingerprint() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::write(root.join("s.py"), "print(1)").unwrap();
        let args = vec!["s.py".to_owned(), "--x=.".to_owned()];
        let env = BTreeMap::new();
        let first = fingerprint("python3", &args, &env, &root, &root);
        assert!(first.files["s.py"].starts_with("sha256:"), "{first:?}");
        assert_eq!(first.files["."], "a folder");
        assert_eq!(fingerprint("python3", &args, &env, &root, &root), first);
        std::fs::write(root.join("s.py"), "print(2)").unwrap();
        let second = fingerprint("python3", &args, &env, &root, &root);
        assert_eq!(approval::changes(&first, &second), ["the file s.py"]);
        #[cfg(unix)]
        {
            std::fs::remove_file(root.join("s.py")).unwrap();
            std::os::unix::fs::symlink("/etc/hostname", root.join("s.py")).unwrap();
            let third = fingerprint("python3", &args, &env, &root, &root);
            assert!(
                third.files["s.py"].starts_with("a link out of the tree"),
                "{third:?}"
            );
        }
    }
}
