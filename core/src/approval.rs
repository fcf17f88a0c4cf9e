//! What a user's approval of a program to run covers: its **fingerprint**.
//! An MCP server of a project's `.mcp.json` (and later a project's hook)
//! starts only while the fingerprint it was approved with is the one it
//! has now; any difference asks again.
//!
//! A fingerprint holds the program (`command`), its arguments and its
//! environment as written (a secret as its `${VAR}` spelling, never its
//! value), and what stands at every path inside the repository that the
//! command or an argument names (also the value of a `--flag=PATH`
//! argument): a regular file's SHA-256, or what is there instead
//! (nothing, a folder, something not a regular file, a link out of the
//! tree). So a sandboxed command that rewrites the in-tree script an
//! approved server runs, or creates one an argument names, makes the next
//! start ask again.
//!
//! It does not cover what the program reads or imports on its own (a
//! module beside the script, a config file it opens), a file an `env`
//! value names (it is covered by its text only), nor programs found on
//! `PATH` (`python3`, `npx` and what they fetch). The shell reads the
//! files ([`candidates`] says which); this module decides the rest.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};

/// What a user approved to run (see the module doc).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// The program, as written (an HTTP server's URL).
    pub command: String,
    /// Its arguments, as written.
    #[serde(default)]
    pub args: Vec<String>,
    /// Its environment (an HTTP server's headers), as written: a secret is
    /// its `${VAR}` spelling.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The paths inside the repository the command and arguments name,
    /// relative to its root, each with what stands there ([`Seen`]'s
    /// text).
    #[serde(default)]
    pub files: BTreeMap<String, String>,
}

/// What stands at a path a fingerprint covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seen {
    /// A regular file, with the hash of its content.
    File(String),
    /// Nothing.
    Absent,
    /// A folder (covered by its name only).
    Folder,
    /// Something else: a device, a FIFO, a socket.
    Special,
    /// A link leading out of the repository, to this path.
    Outside(String),
}

impl std::fmt::Display for Seen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Seen::File(hash) => write!(f, "sha256:{hash}"),
            Seen::Absent => f.write_str("absent"),
            Seen::Folder => f.write_str("a folder"),
            Seen::Special => f.write_str("not a regular file"),
            Seen::Outside(to) => write!(f, "a link out of the tree to {to}"),
        }
    }
}

/// The paths whose contents a fingerprint of `command` with `args`, run in
/// `cwd`, covers: those the command (when it names a path, with a `/`)
/// and each argument (and the value of `--flag=VALUE`) name, resolved
/// against `cwd` and cleaned without touching the disk, that fall inside
/// `root`. Each with its name relative to `root`.
pub fn candidates(
    command: &str,
    args: &[String],
    cwd: &Path,
    root: &Path,
) -> Vec<(String, PathBuf)> {
    let mut words: Vec<&str> = Vec::new();
    if command.contains('/') {
        words.push(command);
    }
    for a in args {
        words.push(a);
        if let Some((_, value)) = a.split_once('=') {
            words.push(value);
        }
    }
    let mut out: BTreeMap<String, PathBuf> = BTreeMap::new();
    for word in words {
        if word.is_empty() || word.contains("${") {
            continue;
        }
        let path = clean(&cwd.join(word));
        if let Ok(rel) = path.strip_prefix(root) {
            let name = if rel.as_os_str().is_empty() {
                ".".to_owned()
            } else {
                rel.to_string_lossy().into_owned()
            };
            out.insert(name, path);
        }
    }
    out.into_iter().collect()
}

/// The fingerprint of `command` with `args` and `env` (as written), given
/// what stands at each of its [`candidates`].
pub fn fingerprint(
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    files: &[(String, Seen)],
) -> Fingerprint {
    Fingerprint {
        command: command.to_owned(),
        args: args.to_vec(),
        env: env.clone(),
        files: files
            .iter()
            .map(|(name, seen)| (name.clone(), seen.to_string()))
            .collect(),
    }
}

/// What differs between the fingerprint approved and the one now, one
/// phrase each (`its arguments`, `the file server.py`), for the question
/// asked again.
pub fn changes(approved: &Fingerprint, now: &Fingerprint) -> Vec<String> {
    let mut out = Vec::new();
    if approved.command != now.command {
        out.push("its command".to_owned());
    }
    if approved.args != now.args {
        out.push("its arguments".to_owned());
    }
    if approved.env != now.env {
        out.push("its env".to_owned());
    }
    let names: std::collections::BTreeSet<&String> =
        approved.files.keys().chain(now.files.keys()).collect();
    for name in names {
        if approved.files.get(name) != now.files.get(name) {
            out.push(format!("the file {name}"));
        }
    }
    out
}

/// `path` with `.` and `..` resolved by name (no links followed).
fn clean(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_and_arguments_inside_the_tree_are_covered() {
        let args: Vec<String> = [
            "server.py",
            "--config=conf/x.json",
            "-y",
            "/usr/lib/a.js",
            "../out",
            "${HOME}/x",
            ".",
        ]
        .map(String::from)
        .to_vec();
        let got = candidates("./bin/run", &args, Path::new("/r/sub"), Path::new("/r"));
        let names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "out",
                "sub",
                "sub/--config=conf/x.json",
                "sub/-y",
                "sub/bin/run",
                "sub/conf/x.json",
                "sub/server.py"
            ]
        );
        assert!(candidates("python3", &[], Path::new("/r"), Path::new("/r")).is_empty());
        let up = candidates("x", &["../r/a".into()], Path::new("/r"), Path::new("/r"));
        assert_eq!(up, [("a".to_owned(), PathBuf::from("/r/a"))]);
    }

    #[test]
    fn any_change_is_named() {
        let env = BTreeMap::from([("K".to_owned(), "${TOKEN}".to_owned())]);
        let a = fingerprint(
            "python3",
            &["s.py".into()],
            &env,
            &[("s.py".into(), Seen::File("ab".into()))],
        );
        assert!(changes(&a, &a).is_empty());
        let mut b = a.clone();
        b.files.insert("s.py".into(), Seen::Absent.to_string());
        b.env.insert("NODE_OPTIONS".into(), "--require x".into());
        assert_eq!(changes(&a, &b), ["its env", "the file s.py"]);
        let text = serde_json::to_string(&a).unwrap();
        assert!(
            text.contains("${TOKEN}") && text.contains("sha256:ab"),
            "{text}"
        );
        assert_eq!(serde_json::from_str::<Fingerprint>(&text).unwrap(), a);
    }
}
