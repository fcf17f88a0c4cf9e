//! Running `git` for revolve itself (the project key, a shell command's
//! change tracking), outside the sandbox, without running anything the
//! repository's own configuration names.
//!
//! A sandboxed command can write a repository's config where its `.git` is
//! not guarded (a repository it made itself, a nested one, a platform
//! without the read-only `.git`), and `git status` run by revolve after it
//! would start whatever `core.fsmonitor`, a filter driver or a hook names,
//! unsandboxed. So every such `git`:
//! * reads no system config (`GIT_CONFIG_NOSYSTEM`), takes no optional
//!   locks, never prompts;
//! * runs with `core.fsmonitor=false` and `core.hooksPath=/dev/null`;
//! * has every filter driver the config names (`filter.<x>.clean`,
//!   `smudge`, `process`) overridden to nothing: the names are read first
//!   with `git config`, which runs nothing;
//! * is only ever a builtin command (an alias never shadows one).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Settings given to every revolve `git`, over whatever the repository's
/// config says.
const SAFE: [&str; 4] = [
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.untrackedCache=false",
    "protocol.allow=never",
];

/// A `git -C dir` with the repository's config-driven execution disabled
/// (see the module doc); add the subcommand and its arguments. stdin is
/// null, stderr discarded.
pub fn command(dir: &Path) -> Command {
    Git::at(dir).command()
}

/// The repository at a folder with the filter drivers its config names
/// read once, for a caller that runs many `git`s there: each
/// [`command`] otherwise runs `git config` first.
#[derive(Clone, Debug)]
pub struct Git {
    dir: PathBuf,
    filters: Vec<String>,
}

impl Git {
    /// The repository `dir` is in, its filter drivers read now.
    pub fn at(dir: &Path) -> Git {
        Git {
            dir: dir.to_path_buf(),
            filters: filters(dir),
        }
    }

    /// The same repository's config, run in `dir` (its top, a folder of
    /// it).
    pub fn within(&self, dir: &Path) -> Git {
        Git {
            dir: dir.to_path_buf(),
            filters: self.filters.clone(),
        }
    }

    /// [`command`] in this folder.
    pub fn command(&self) -> Command {
        let mut git = bare(&self.dir);
        for name in &self.filters {
            git.arg("-c").arg(format!("{name}="));
        }
        git
    }
}

/// The command without the filter overrides.
fn bare(dir: &Path) -> Command {
    let mut git = Command::new("git");
    git.arg("-C").arg(dir);
    for setting in SAFE {
        git.arg("-c").arg(setting);
    }
    git.env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .stderr(Stdio::null());
    git
}

/// The filter-driver commands the config of the repository at `dir`
/// names (`filter.<x>.clean|smudge|process`); none outside a repository.
fn filters(dir: &Path) -> Vec<String> {
    let Ok(out) = bare(dir)
        .args([
            "config",
            "--null",
            "--name-only",
            "--get-regexp",
            r"^filter\.",
        ])
        .output()
    else {
        return Vec::new();
    };
    out.stdout
        .split(|&b| b == 0)
        .filter_map(|name| std::str::from_utf8(name).ok())
        .filter(|name| {
            [".clean", ".smudge", ".process"]
                .iter()
                .any(|end| name.ends_with(end))
        })
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repository whose config names an fsmonitor and a clean filter for
    /// its files: `git status` run through [`command`] starts neither.
    #[test]
    fn status_runs_no_fsmonitor_and_no_filter_the_config_names() {
        let tmp = tempfile::Builder::new()
            .prefix("revolve-git-")
            .tempdir()
            .unwrap();
        let dir = tmp.path().to_path_buf();
        let git = |args: &[&str]| {
            let ok = Command::new("git")
                .arg("-C")
                .arg(&dir)
                .args(args)
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .output()
                .map(|o| o.status.success())
                .unwrap_or(false);
            assert!(ok, "git {args:?}");
        };
        git(&["init", "-q"]);
        std::fs::write(dir.join(".gitattributes"), "a filter=x\n").unwrap();
        std::fs::write(dir.join("a"), "a\n").unwrap();
        git(&["add", "a", ".gitattributes"]);
        git(&[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "x",
        ]);
        let ran = dir.join("ran");
        let plant = format!("touch {}; cat", ran.display());
        git(&["config", "filter.x.clean", &plant]);
        git(&[
            "config",
            "core.fsmonitor",
            &format!("touch {}", ran.display()),
        ]);
        std::fs::write(dir.join("a"), "changed\n").unwrap();
        let out = command(&dir)
            .args(["status", "--porcelain"])
            .output()
            .unwrap();
        assert!(out.status.success());
        assert_eq!(String::from_utf8_lossy(&out.stdout), " M a\n");
        assert!(!ran.exists(), "the planted program ran");
    }
}
