//! Where things live (ARCHITECTURE.md section 2). Every root comes from the
//! environment (`XDG_STATE_HOME`, `XDG_CONFIG_HOME`, `HOME`), so tests point
//! them at temp dirs.

use std::path::{Path, PathBuf};

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
    pub fn from_env() -> Result<Roots, crate::error::Error> {
        use crate::error::Error::NoHome;
        let state = dirs::state_dir().ok_or(NoHome {
            dir: "state",
            var: "XDG_STATE_HOME",
        })?;
        let config = dirs::config_dir().ok_or(NoHome {
            dir: "config",
            var: "XDG_CONFIG_HOME",
        })?;
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

/// What `git rev-parse --git-common-dir` says `cwd`'s repository is, as a
/// project key (see [`git_common_key`]), read from the files git reads
/// rather than by running git, which costs a process start (2 ms on the
/// machine the benchmarks ran on) before every command. Up from `cwd`,
/// stopping at a `GIT_CEILING_DIRECTORIES` entry or another filesystem as
/// git does, to the first `.git`: a folder (the main worktree is its
/// parent) or a `gitdir:` file (a linked worktree, whose git dir's
/// `commondir` names the main one's; a submodule's has none). Whatever
/// else git would have to judge (`GIT_DIR` and friends set, a bare
/// repository, a `.git` that does not read as one) is asked of git itself.
/// Not judged: git's `safe.directory` ownership check; a repository owned
/// by another user still names the project.
fn git_main_worktree(cwd: &Path) -> Option<PathBuf> {
    let unusual = [
        "GIT_DIR",
        "GIT_COMMON_DIR",
        "GIT_WORK_TREE",
        "GIT_DISCOVERY_ACROSS_FILESYSTEM",
    ];
    if unusual.iter().any(|v| std::env::var_os(v).is_some()) {
        return ask_git(cwd);
    }
    let ceilings: Vec<PathBuf> = match std::env::var_os("GIT_CEILING_DIRECTORIES") {
        // An empty entry changes how git resolves the ones after it.
        Some(v) if std::env::split_paths(&v).any(|p| p.as_os_str().is_empty()) => {
            return ask_git(cwd)
        }
        Some(v) => std::env::split_paths(&v)
            .filter(|p| p.is_absolute())
            .map(|p| p.canonicalize().unwrap_or(p))
            .collect(),
        None => Vec::new(),
    };
    find_git(cwd, &ceilings)
}

/// Whether `dir` has what git requires of a git dir.
fn is_git_dir(dir: &Path) -> bool {
    dir.join("HEAD").is_file() && dir.join("objects").is_dir() && dir.join("refs").is_dir()
}

/// The most read of a `.git` file or a `commondir` file: one path.
const GIT_FILE_CAP: u64 = 4096; // not policy: a path, as git writes it

/// [`git_main_worktree`] below the given ceilings.
fn find_git(cwd: &Path, ceilings: &[PathBuf]) -> Option<PathBuf> {
    #[cfg(unix)]
    use std::os::unix::fs::MetadataExt;
    // As git sees it after `-C`: the physical path.
    let cwd = &cwd.canonicalize().ok()?;
    let device = std::fs::metadata(cwd).ok()?.dev();
    for dir in cwd.ancestors() {
        if dir != cwd
            && (ceilings.iter().any(|c| c == dir)
                || std::fs::metadata(dir).map_or(true, |m| m.dev() != device))
        {
            return None;
        }
        let dot = dir.join(".git");
        match std::fs::metadata(&dot) {
            Ok(m) if m.is_dir() && is_git_dir(&dot) && !dot.join("commondir").exists() => {
                return Some(git_common_key(dot.canonicalize().unwrap_or(dot)));
            }
            Ok(m) if m.is_file() => {
                // A file in the tree: never through a link out, bounded.
                let text = crate::intree::read(dir, &dot, GIT_FILE_CAP)
                    .ok()
                    .flatten()
                    .map(|head| String::from_utf8_lossy(&head.bytes).into_owned());
                let Some(gitdir) = text.as_deref().and_then(|t| t.strip_prefix("gitdir: ")) else {
                    return ask_git(cwd);
                };
                let gitdir = dir.join(gitdir.trim_end_matches(['\n', '\r']));
                if !gitdir.join("HEAD").is_file() {
                    return ask_git(cwd);
                }
                let common =
                    match crate::regular::read_text(&gitdir.join("commondir"), GIT_FILE_CAP) {
                        Ok(c) => gitdir.join(c.trim()),
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => gitdir,
                        Err(_) => return ask_git(cwd),
                    };
                return match common.canonicalize() {
                    Ok(common) if is_git_dir(&common) => Some(git_common_key(common)),
                    _ => ask_git(cwd),
                };
            }
            Ok(_) => return ask_git(cwd),
            Err(_) if is_git_dir(dir) => {
                // Perhaps a bare repository, or inside a git dir.
                return ask_git(cwd);
            }
            Err(_) => {}
        }
    }
    None
}

/// The project key of a repository's common git dir: `<main>/.git` is
/// the main worktree `<main>`; a bare repository is its own key.
fn git_common_key(common: PathBuf) -> PathBuf {
    match (common.file_name(), common.parent()) {
        (Some(n), Some(parent)) if n == ".git" => parent.to_path_buf(),
        _ => common,
    }
}

/// [`git_main_worktree`] by running `git rev-parse`.
fn ask_git(cwd: &Path) -> Option<PathBuf> {
    let out = crate::git::command(cwd)
        .args(["rev-parse", "--path-format=absolute", "--git-common-dir"])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let common = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    let common = common.canonicalize().unwrap_or(common);
    Some(git_common_key(common))
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
        let tmp_dir = tempfile::Builder::new()
            .prefix("revolve-paths-")
            .tempdir()
            .unwrap();
        let tmp = tmp_dir.path().to_path_buf();
        let main = tmp.join("main");
        std::fs::create_dir_all(&main).unwrap();
        let git = |dir: &Path, args: &[&str]| {
            let ok = std::process::Command::new("git")
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
        let wt_sub = wt.join("deep").join("er");
        std::fs::create_dir_all(&wt_sub).unwrap();
        let bare = tmp.join("bare.git");
        git(
            &tmp,
            &[
                "clone",
                "-q",
                "--bare",
                main.to_str().unwrap(),
                bare.to_str().unwrap(),
            ],
        );
        let modules = tmp.join("outer");
        std::fs::create_dir_all(&modules).unwrap();
        git(&modules, &["init", "-q"]);
        git(
            &modules,
            &[
                "-c",
                "protocol.file.allow=always",
                "submodule",
                "add",
                "-q",
                main.to_str().unwrap(),
                "inner",
            ],
        );
        // Not git dirs, which git walks past or refuses.
        let half = main.join("half");
        std::fs::create_dir_all(half.join(".git")).unwrap();
        std::fs::write(half.join(".git").join("HEAD"), "ref: refs/heads/main\n").unwrap();
        let nospace = tmp.join("nospace");
        std::fs::create_dir_all(&nospace).unwrap();
        let gitfile = format!("gitdir:{}\n", main.join(".git").display());
        std::fs::write(nospace.join(".git"), gitfile).unwrap();
        // Read from the files, as git itself answers.
        for dir in [
            &half,
            &nospace,
            &main,
            &sub,
            &wt,
            &wt_sub,
            &bare,
            &modules,
            &modules.join("inner"),
        ] {
            let dir = dir.canonicalize().unwrap();
            assert_eq!(git_main_worktree(&dir), ask_git(&dir), "{}", dir.display());
        }
        // Not above a ceiling.
        assert_eq!(
            find_git(
                &sub.canonicalize().unwrap(),
                &[main.canonicalize().unwrap()]
            ),
            None
        );
        assert_eq!(
            find_git(
                &main.canonicalize().unwrap(),
                &[main.canonicalize().unwrap()]
            ),
            ask_git(&main)
        );
        let a = Project::of(&main);
        assert_eq!(a, Project::of(&wt_sub));
        assert_eq!(a, Project::of(&wt));
        assert_eq!(a, Project::of(&sub));
        assert_eq!(a.key, main.canonicalize().unwrap());
        let outside = tmp.join("plain");
        std::fs::create_dir_all(&outside).unwrap();
        // Outside a repository the key is the directory itself (unless the
        // temp dir is inside one, in which case it is that repository).
        assert_ne!(Project::of(&outside), a);
    }
}
