//! Claude Code's custom slash commands on disk (see
//! [`revolve_core::commands`]): the repository's `.claude/commands/`,
//! then `~/.claude/commands/`; sub-folders are read too (they only sort
//! the files). The first file of a name wins.

use std::path::{Path, PathBuf};

use revolve_core::commands::{self, UserCommand};

/// The folders commands are read from, in order: the repository's (at
/// its root), then the user's (`home`).
pub fn folders(cwd: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    let root = crate::instructions::root(cwd);
    let mut out = vec![root.join(".claude").join("commands")];
    out.extend(home.map(|h| h.join(".claude").join("commands")));
    out
}

/// The commands of `folders`, the first of a name kept, sorted by name.
pub fn load(folders: &[PathBuf]) -> Vec<UserCommand> {
    let mut found: Vec<UserCommand> = Vec::new();
    for folder in folders {
        let mut files = Vec::new();
        collect(folder, 0, &mut files);
        files.sort();
        for file in files {
            let Some(name) = file.file_stem().and_then(|s| s.to_str()) else {
                continue;
            };
            if !commands::valid_name(name) || found.iter().any(|c| c.name == name) {
                continue;
            }
            let head = crate::intree::read(folder, &file, revolve_core::policy::REPO_FILE_CAP);
            if let Ok(Some(head)) = head {
                let text = String::from_utf8_lossy(&head.bytes);
                found.push(commands::parse(name, &file.to_string_lossy(), &text));
            }
        }
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    found
}

/// The `.md` files under `dir`, a few folders deep.
fn collect(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    if depth > 3 {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        match entry.file_type() {
            Ok(t) if t.is_dir() => collect(&path, depth + 1, out),
            Ok(t) if t.is_file() && path.extension().is_some_and(|e| e == "md") => out.push(path),
            _ => {}
        }
    }
}
