//! Finding subagent definitions (see `revolve_core::subagents`): the
//! `NAME.md` files of `subagents/` in the project directory, then of the
//! repository's `.agents/agents/` and `.claude/agents/`; the first file of
//! a name wins. A repository's files are read bounded and only if regular
//! and inside their folder (see [`crate::intree`]).

use std::path::{Path, PathBuf};

use revolve_core::subagents::{self, Definition};

use crate::intree;
use crate::memory::MemoryDirs;

/// The definition folders of a session working in `cwd` with memory in
/// `dirs`, first wins on a name.
pub fn folders(dirs: &MemoryDirs, cwd: &Path) -> Vec<PathBuf> {
    let root = crate::instructions::root(cwd);
    vec![
        dirs.project_dir.join("subagents"),
        root.join(".agents").join("agents"),
        root.join(".claude").join("agents"),
    ]
}

/// The definitions in `folders`, each name once, in folder order then by
/// file name; and a line for each file left out.
pub fn load(folders: &[PathBuf]) -> (Vec<Definition>, Vec<String>) {
    let mut found: Vec<Definition> = Vec::new();
    let mut problems = Vec::new();
    for folder in folders {
        let Ok(entries) = std::fs::read_dir(folder) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
            .collect();
        files.sort();
        for path in files {
            let stem = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let text = match intree::read(folder, &path, revolve_core::policy::REPO_FILE_CAP) {
                Ok(Some(head)) => String::from_utf8_lossy(&head.bytes).into_owned(),
                Ok(None) => continue,
                Err(e) => {
                    problems.push(format!(
                        "revolve: subagent {} left out: cannot read it: {e}",
                        path.display()
                    ));
                    continue;
                }
            };
            match subagents::parse(&stem, &text) {
                Ok(def) if found.iter().any(|d| d.name == def.name) => {}
                Ok(def) => found.push(def),
                Err(e) => problems.push(format!(
                    "revolve: subagent {} left out: {e}",
                    path.display()
                )),
            }
        }
    }
    (found, problems)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn definitions_are_found_first_name_wins_and_bad_ones_are_said() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        std::fs::write(a.join("explore.md"), "---\ndescription: Looks.\n---\nLook.").unwrap();
        std::fs::write(a.join("bad name.md"), "x").unwrap();
        std::fs::write(a.join("notes.txt"), "not a definition").unwrap();
        std::fs::write(b.join("explore.md"), "---\ndescription: Other.\n---\n").unwrap();
        std::fs::write(b.join("writer.md"), "---\ntools: Read, Write\n---\nWrite.").unwrap();
        let (found, problems) = load(&[a, b, dir.path().join("none")]);
        let names: Vec<&str> = found.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["explore", "writer"]);
        assert_eq!(found[0].description, "Looks.");
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("bad name.md left out"), "{problems:?}");
    }
}
