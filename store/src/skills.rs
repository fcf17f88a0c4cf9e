//! Finding skills (see `revolve_core::skills`): each folder with a
//! `SKILL.md` in the skill folders given, read bounded and only if regular
//! and inside the skill's own folder (see [`crate::intree`]): a
//! repository's `.agents/skills/` cannot lead revolve out through a link.

use std::io;
use std::path::{Path, PathBuf};

use revolve_core::skills::{self, Skill, FILE};

use crate::intree;
use crate::memory::MemoryDirs;

/// The skill folders of a session working in `cwd` with memory in `dirs`,
/// first wins on a name: the project's (`skills/` in the project
/// directory), the repository's `.agents/skills/` then `.claude/skills/`
/// (Claude Code's) at its root, the global ones (`skills/` beside the
/// global memory folder).
pub fn folders(dirs: &MemoryDirs, cwd: &Path) -> Vec<PathBuf> {
    let root = crate::instructions::root(cwd);
    let mut out = vec![dirs.project_dir.join("skills")];
    // The repository's, unless a link takes it out of the repository.
    for tool in [".agents", ".claude"] {
        let repo = root.join(tool).join("skills");
        let inside = match (repo.canonicalize(), root.canonicalize()) {
            (Ok(real), Ok(root)) => real.starts_with(root),
            _ => true,
        };
        if inside {
            out.push(repo);
        }
    }
    out.extend(global_folder(dirs));
    out
}

/// The global skill folder: `skills/` beside the global memory folder.
pub fn global_folder(dirs: &MemoryDirs) -> Option<PathBuf> {
    dirs.global.parent().map(|config| config.join("skills"))
}

/// Writes the builtin skills (`revolve_core::skills::BUILTIN`) the global
/// skill folder has not had yet, as the builtin memory documents are
/// seeded (`.seeded` lists them; one deleted is never written back).
/// Returns the names written.
pub fn seed(folder: &Path) -> io::Result<Vec<String>> {
    crate::memory::seed_from(folder, &skills::BUILTIN, |dir, name| {
        dir.join(name).join(FILE)
    })
}

/// The skills in `folders`, each name once, in folder order then by
/// folder name; and a line for each skill left out (its `SKILL.md` does
/// not parse or cannot be read, or its name was taken).
pub fn load(folders: &[PathBuf]) -> (Vec<Skill>, Vec<String>) {
    let mut found: Vec<Skill> = Vec::new();
    let mut problems = Vec::new();
    for folder in folders {
        let Ok(entries) = std::fs::read_dir(folder) else {
            continue;
        };
        let mut dirs: Vec<PathBuf> = entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.path())
            .collect();
        dirs.sort();
        for dir in dirs {
            let path = dir.join(FILE);
            let text = match read(&dir, &path) {
                Ok(Some(text)) => text,
                Ok(None) => continue,
                Err(e) => {
                    problems.push(format!(
                        "revolve: skill {} left out: cannot read it: {e}",
                        path.display()
                    ));
                    continue;
                }
            };
            let parsed = match skills::parse(&text) {
                Ok(parsed) => parsed,
                Err(e) => {
                    problems.push(format!("revolve: skill {} left out: {e}", path.display()));
                    continue;
                }
            };
            if let Some(first) = found.iter().find(|s| s.name == parsed.name) {
                problems.push(format!(
                    "revolve: skill {} left out: {} has the name {} already",
                    path.display(),
                    first.dir,
                    parsed.name
                ));
                continue;
            }
            found.push(Skill {
                name: parsed.name,
                description: parsed.description,
                dir: dir.to_string_lossy().into_owned(),
            });
        }
    }
    (found, problems)
}

/// The body of the skill in `dir` (what follows its front matter), or why
/// it cannot be had.
pub fn body(dir: &Path) -> Result<String, String> {
    let path = dir.join(FILE);
    match read(dir, &path) {
        Ok(Some(text)) => skills::parse(&text)
            .map(|p| p.body)
            .map_err(|e| format!("{} is not a skill: {e}", path.display())),
        Ok(None) => Err(format!("{} is gone", path.display())),
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

/// The text of `path` in the skill folder `dir` (at most
/// `REPO_FILE_CAP` bytes), `None` when there is none.
fn read(dir: &Path, path: &Path) -> io::Result<Option<String>> {
    let head = intree::read(dir, path, revolve_core::policy::REPO_FILE_CAP)?;
    Ok(head.map(|head| String::from_utf8_lossy(&head.bytes).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skills_are_found_first_name_wins_and_bad_ones_are_said() {
        let tmp = tempfile::Builder::new()
            .prefix("revolve-skills-")
            .tempdir()
            .unwrap();
        let dir = tmp.path().to_path_buf();
        let (a, b) = (dir.join("a"), dir.join("b"));
        let skill = |folder: &Path, sub: &str, text: &str| {
            std::fs::create_dir_all(folder.join(sub)).unwrap();
            std::fs::write(folder.join(sub).join(FILE), text).unwrap();
        };
        skill(
            &a,
            "release",
            "---\nname: release\ndescription: Cut a release.\n---\nSteps.",
        );
        skill(&a, "broken", "no front matter");
        skill(
            &b,
            "release",
            "---\nname: release\ndescription: Another.\n---\n",
        );
        skill(
            &b,
            "review",
            "---\nname: review\ndescription: Review a diff.\n---\n",
        );
        std::fs::create_dir_all(b.join("empty")).unwrap();
        let (skills, problems) = load(&[a.clone(), b.clone(), dir.join("none")]);
        let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["release", "review"]);
        assert_eq!(skills[0].description, "Cut a release.");
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("broken/SKILL.md left out: it does not start"));
        assert!(problems[1].contains("has the name release already"));
    }
}
