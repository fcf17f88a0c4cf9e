//! A project file's approvals, shared by the repository's hooks
//! (`.revolve/hooks.json`, see [`crate::hooks`]) and its MCP servers
//! (`.mcp.json`, see [`crate::mcp`]): finding the file, the approvals file
//! that remembers the user's answer by fingerprints, and the question
//! asked at a terminal.
//!
//! An approvals file (`<state>/hooks-approved.json`,
//! `<state>/mcp-approved.json`, `0600`) is one JSON object keyed by the
//! project file's canonical path; each entry holds, under one word
//! (`hooks`, `servers`, `declined`), the fingerprints
//! ([`revolve_core::approval`]) of what was answered. Writing an entry
//! replaces the file's whole entry (a yes replaces a no), by a temp file
//! and a rename. A file that cannot be read or parsed holds no approval:
//! everything is asked about again.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use revolve_core::approval::Fingerprint;
use revolve_store::store::Store;
use serde_json::{json, Value};

use crate::error::Error;

/// What a project file's entry remembers: each approved thing's
/// fingerprint by its name (a server's, a hook's key).
pub(crate) type Prints = BTreeMap<String, Fingerprint>;

/// The project file named `name` (a path relative to a folder of the
/// repository): in the working directory or a folder above it, up to the
/// repository's root; `found` says whether a candidate counts (a regular
/// file, or anything there at all).
pub(crate) fn project_file(
    store: &Store,
    name: &str,
    found: impl Fn(&Path) -> bool,
) -> Option<PathBuf> {
    let root = &store.project.key;
    let mut dir = Some(store.cwd.as_path());
    while let Some(d) = dir {
        let file = d.join(name);
        if found(&file) {
            return Some(file);
        }
        if d == root.as_path() || !d.starts_with(root) {
            break;
        }
        dir = d.parent();
    }
    None
}

/// An approvals file: what the user said about each project file.
pub(crate) struct Ledger {
    /// The file itself, under the state root.
    path: PathBuf,
}

impl Ledger {
    /// The approvals file `file_name` (`mcp-approved.json`) under the
    /// state root `state`.
    pub(crate) fn at(state: &Path, file_name: &str) -> Ledger {
        Ledger {
            path: state.join(file_name),
        }
    }

    /// The fingerprints the project file at `project` was answered with
    /// under `word` (`servers`, `declined`), if any: an entry of another
    /// shape (an older revolve's hash of the file) counts as none.
    pub(crate) fn prints(&self, project: &Path, word: &str) -> Option<Prints> {
        let entry = self.entries().remove(&key(project))?;
        serde_json::from_value(entry.get(word)?.clone()).ok()
    }

    /// Remembers `prints` under `word` as the project file's whole entry
    /// (a yes replaces a no, and the other way round).
    pub(crate) fn remember(
        &self,
        project: &Path,
        word: &str,
        prints: &Prints,
    ) -> Result<(), Error> {
        let mut all = self.entries();
        all.insert(key(project), json!({ word: prints }));
        if let Some(dir) = self.path.parent() {
            revolve_store::files::create_dir_all(dir)
                .map_err(|e| Error::at(dir, "cannot create", e))?;
        }
        let text = serde_json::to_string_pretty(&all).map_err(Error::encode)?;
        let temp = self.path.with_extension("json.tmp");
        revolve_store::files::options()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&temp)
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .and_then(|()| std::fs::rename(&temp, &self.path))
            .map_err(|e| Error::at(&self.path, "cannot write", e))
    }

    /// Every entry, by project file; none when the file is missing or
    /// not an object of entries.
    fn entries(&self) -> BTreeMap<String, Value> {
        std::fs::read_to_string(&self.path)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default()
    }
}

/// A project file's key in an approvals file: its canonical path (the
/// path as given when it cannot be resolved).
fn key(path: &Path) -> String {
    path.canonicalize()
        .unwrap_or_else(|_| path.to_owned())
        .to_string_lossy()
        .into_owned()
}

/// The question asked at a terminal before a project file's programs run.
pub(crate) struct Question<'a> {
    /// The first line: what the file configures (`… configures MCP
    /// servers, which run as programs of yours:`).
    pub(crate) about: String,
    /// What changed since the last approval, one line's worth (empty when
    /// it was never approved).
    pub(crate) changed: String,
    /// What is approved, a few indented lines (each item and the files
    /// of the repository it runs).
    pub(crate) items: String,
    /// The verb asked about (`start`, `run`).
    pub(crate) verb: &'a str,
}

impl Question<'_> {
    /// Asks on stderr and reads the answer from stdin: whether the user
    /// said yes.
    pub(crate) fn ask(&self) -> bool {
        self.ask_on(&mut std::io::stdin().lock(), &mut std::io::stderr())
    }

    /// Asks on `err` and reads a line of `input`: only `y`, `Y` or `yes`
    /// is a yes (a closed or failing input is a no).
    fn ask_on(&self, input: &mut dyn BufRead, err: &mut dyn Write) -> bool {
        // Not written is not asked: the answer read is still the user's.
        let _ = err.write_all(self.text().as_bytes());
        let _ = err.flush();
        let mut line = String::new();
        let _ = input.read_line(&mut line);
        matches!(line.trim(), "y" | "Y" | "yes")
    }

    /// The question as it is shown, ending at the prompt for the answer.
    fn text(&self) -> String {
        let mut text = format!("{}\n", self.about);
        if !self.changed.is_empty() {
            text.push_str(&format!(
                "changed since you approved them: {}\n",
                self.changed
            ));
        }
        text.push_str(&self.items);
        text.push_str(&format!(
            "{} them (remembered until any of this changes)? [y]es, [n]o: ",
            self.verb
        ));
        text
    }
}

/// The files of the repository an approved command runs, a line each, as
/// an approval question shows them (MCP servers and project hooks alike).
pub(crate) fn files_text(print: &Fingerprint) -> String {
    let mut text = String::new();
    for (name, seen) in &print.files {
        if let Some(hash) = seen.strip_prefix("sha256:") {
            text.push_str(&format!(
                "    runs {name} (sha256 {})\n",
                &hash[..hash.len().min(12)]
            ));
        } else if seen.starts_with("a link") {
            text.push_str(&format!("    names {name}: {seen}\n"));
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use revolve_core::approval::Fingerprint;

    use super::{files_text, Ledger, Prints, Question};

    fn prints(command: &str) -> Prints {
        let print = Fingerprint {
            command: command.to_owned(),
            args: Vec::new(),
            env: BTreeMap::new(),
            files: BTreeMap::from([("run.sh".to_owned(), "sha256:0123456789abcdef".to_owned())]),
        };
        BTreeMap::from([("srv".to_owned(), print)])
    }

    #[test]
    fn an_answer_is_remembered_by_the_files_path_and_replaces_the_last() {
        let state = tempfile::tempdir().unwrap();
        let repo = tempfile::tempdir().unwrap();
        let project = repo.path().join(".mcp.json");
        std::fs::write(&project, "{}").unwrap();
        let ledger = Ledger::at(&state.path().join("deeper"), "mcp-approved.json");
        assert_eq!(ledger.prints(&project, "servers"), None);

        ledger.remember(&project, "declined", &prints("a")).unwrap();
        assert_eq!(ledger.prints(&project, "declined"), Some(prints("a")));
        assert_eq!(ledger.prints(&project, "servers"), None);

        // A yes replaces the no; the path is the same file by another
        // spelling.
        let spelled = repo.path().join(".").join(".mcp.json");
        ledger.remember(&spelled, "servers", &prints("b")).unwrap();
        assert_eq!(ledger.prints(&project, "servers"), Some(prints("b")));
        assert_eq!(ledger.prints(&project, "declined"), None);
        // Another project file's entry is its own.
        assert_eq!(ledger.prints(&repo.path().join("other"), "servers"), None);

        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let file = state.path().join("deeper/mcp-approved.json");
            let mode = std::fs::metadata(file).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn an_unreadable_or_older_approval_counts_as_none() {
        let state = tempfile::tempdir().unwrap();
        let project = state.path().join("hooks.json");
        let ledger = Ledger::at(state.path(), "hooks-approved.json");
        let file = state.path().join("hooks-approved.json");
        std::fs::write(&file, "not json").unwrap();
        assert_eq!(ledger.prints(&project, "hooks"), None);
        // An older revolve's entry: a hash of the file, no fingerprints.
        let key = project.to_string_lossy().into_owned();
        std::fs::write(
            &file,
            serde_json::json!({ key: {"sha256": "ab"} }).to_string(),
        )
        .unwrap();
        assert_eq!(ledger.prints(&project, "hooks"), None);
        // Writing over a broken file starts it again.
        ledger.remember(&project, "hooks", &prints("c")).unwrap();
        assert_eq!(ledger.prints(&project, "hooks"), Some(prints("c")));
    }

    fn question(changed: &str) -> Question<'static> {
        Question {
            about: "/r/.mcp.json configures MCP servers, which run as programs of yours:".into(),
            changed: changed.into(),
            items: "  srv  python run.py\n".into(),
            verb: "start",
        }
    }

    #[test]
    fn the_question_says_what_changed_and_takes_only_a_yes() {
        let asked = |q: &Question, answer: &str| {
            let mut shown = Vec::new();
            let yes = q.ask_on(&mut answer.as_bytes(), &mut shown);
            (yes, String::from_utf8(shown).unwrap())
        };
        let (yes, shown) = asked(&question(""), "y\n");
        assert!(yes);
        assert_eq!(
            shown,
            "/r/.mcp.json configures MCP servers, which run as programs of yours:\n  srv  python \
             run.py\nstart them (remembered until any of this changes)? [y]es, [n]o: "
        );
        let (_, shown) = asked(&question("srv: its command"), "yes\n");
        assert!(shown.contains("\nchanged since you approved them: srv: its command\n  srv"));
        for (answer, yes) in [("Y\n", true), ("yes", true), ("n\n", false), ("", false)] {
            assert_eq!(asked(&question(""), answer).0, yes, "{answer:?}");
        }
        assert!(!asked(&question(""), "yes please\n").0);
    }

    #[test]
    fn the_files_a_command_runs_are_named_with_a_short_hash() {
        let print = Fingerprint {
            command: "sh".into(),
            args: Vec::new(),
            env: BTreeMap::new(),
            files: BTreeMap::from([
                ("run.sh".to_owned(), "sha256:0123456789abcdef".to_owned()),
                ("bin".to_owned(), "a link to /usr/bin".to_owned()),
                ("gone".to_owned(), "missing".to_owned()),
            ]),
        };
        assert_eq!(
            files_text(&print),
            "    names bin: a link to /usr/bin\n    runs run.sh (sha256 0123456789ab)\n"
        );
    }
}
