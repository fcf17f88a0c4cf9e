//! Where things live (ARCHITECTURE.md section 2). Every root comes from the
//! environment (`XDG_STATE_HOME`, `XDG_CONFIG_HOME`, `HOME`), so tests point
//! them at temp dirs.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The two roots everything else hangs off.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Roots {
    /// `$XDG_STATE_HOME/task-agent`, else `~/.local/state/task-agent`.
    pub state: PathBuf,
    /// `$XDG_CONFIG_HOME/task-agent`, else `~/.config/task-agent`.
    pub config: PathBuf,
}

impl Roots {
    /// The roots for this user, from the environment.
    pub fn from_env() -> Result<Roots, String> {
        let state = dirs::state_dir()
            .ok_or("cannot find the state directory: set HOME or XDG_STATE_HOME")?;
        let config = dirs::config_dir()
            .ok_or("cannot find the config directory: set HOME or XDG_CONFIG_HOME")?;
        Ok(Roots {
            state: state.join("task-agent"),
            config: config.join("task-agent"),
        })
    }

    /// The project folder under the state root.
    pub fn project(&self, project: &Project) -> PathBuf {
        self.state.join("projects").join(&project.slug)
    }

    /// Where a project's session logs are.
    pub fn sessions(&self, project: &Project) -> PathBuf {
        self.project(project).join("sessions")
    }

    /// Where a project's running-session locks are.
    pub fn running(&self, project: &Project) -> PathBuf {
        self.project(project).join("running")
    }

    /// The REPL's line history.
    pub fn history(&self) -> PathBuf {
        self.state.join("history.txt")
    }
}

/// The repository (or directory) a session belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Project {
    /// The main work tree of the repository, shared by all its worktrees;
    /// outside git, the working directory.
    pub key: PathBuf,
    /// The key's absolute path with `/` turned into `-`.
    pub slug: String,
}

impl Project {
    /// The project `cwd` belongs to, asking git for the common dir so that
    /// every worktree of a repository maps to the same project.
    pub fn of(cwd: &Path) -> Project {
        let key = git_main_worktree(cwd).unwrap_or_else(|| cwd.to_path_buf());
        Project::from_key(key)
    }

    /// The project with this key.
    pub fn from_key(key: PathBuf) -> Project {
        let slug = slug(&key);
        Project { key, slug }
    }
}

/// `/home/me/src/app` becomes `-home-me-src-app`.
pub fn slug(path: &Path) -> String {
    path.to_string_lossy().replace(['/', '\\'], "-")
}

fn git_main_worktree(cwd: &Path) -> Option<PathBuf> {
    let out = Command::new("git")
        .arg("-C")
        .arg(cwd)
        .args(["rev-parse", "--path-format=absolute", "--git-common-dir"])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let common = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    // `<main>/.git` for a normal repository; a bare repository is its own key.
    let key = match common.file_name() {
        Some(n) if n == ".git" => common.parent()?.to_path_buf(),
        _ => common,
    };
    Some(key.canonicalize().unwrap_or(key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slug_turns_slashes_into_dashes() {
        assert_eq!(slug(Path::new("/home/me/src/app")), "-home-me-src-app");
    }

    #[test]
    fn worktrees_share_a_project() {
        let tmp = std::env::temp_dir().join(format!("revolve-paths-{}", std::process::id()));
        let main = tmp.join("main");
        std::fs::create_dir_all(&main).unwrap();
        let git = |dir: &Path, args: &[&str]| {
            let ok = Command::new("git")
                .arg("-C")
                .arg(dir)
                .args(args)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .output()
                .map(|o| o.status.success())
                .unwrap_or(false);
            assert!(ok, "git {args:?}");
        };
        git(&main, &["init", "-q"]);
        git(
            &main,
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "-q",
                "--allow-empty",
                "-m",
                "x",
            ],
        );
        let wt = tmp.join("wt");
        git(&main, &["worktree", "add", "-q", wt.to_str().unwrap()]);
        let sub = main.join("sub");
        std::fs::create_dir_all(&sub).unwrap();
        let a = Project::of(&main);
        assert_eq!(a, Project::of(&wt));
        assert_eq!(a, Project::of(&sub));
        assert_eq!(a.key, main.canonicalize().unwrap());
        let outside = tmp.join("plain");
        std::fs::create_dir_all(&outside).unwrap();
        // Outside a repository the key is the directory itself (unless the
        // temp dir is inside one, in which case it is that repository).
        assert_ne!(Project::of(&outside), a);
        std::fs::remove_dir_all(&tmp).ok();
    }
}
