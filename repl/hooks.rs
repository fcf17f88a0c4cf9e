//! Hooks from the command line's side: which are configured (the config
//! file's `hooks`, and the repository's `.revolve/hooks.json` once
//! approved), `revolve hooks list` and `revolve hooks approve`.
//!
//! A project's hook file runs nothing until the user approves it, as a
//! project's `.mcp.json` starts nothing: each hook is approved by its
//! fingerprint ([`revolve_core::approval`]), its event, matcher and
//! command as written and the content of the files inside the repository
//! its words name (`./scripts/check.sh`). They are kept in
//! `<state>/hooks-approved.json` (`0600`), by the file's path; when any
//! differs from what was approved (a pull changed the file, a command
//! rewrote a script a hook runs), the file is asked about again, saying
//! what changed. The file is read through [`revolve_store::intree`], so a
//! repository cannot make it a link to something outside it.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use revolve_core::approval;
use revolve_core::hooks::{Hooks, Origin};
use revolve_store::store::Store;
use serde_json::{json, Value};

use crate::approvals::{self, Ledger, Prints, Question};
use crate::config::Settings;
use crate::error::{out, Error};

/// The project's hook file, relative to a folder of the repository.
pub(crate) const PROJECT_FILE: &str = ".revolve/hooks.json";

/// The project's hook file: in the working directory or a folder above
/// it, up to the repository's root (a link counts: reading it says why it
/// is refused).
fn project_file(store: &Store) -> Option<PathBuf> {
    approvals::project_file(store, PROJECT_FILE, |f| f.symlink_metadata().is_ok())
}

/// A project hook file read: its hooks, their fingerprints now, and
/// whether that is what was approved.
pub(crate) struct ProjectFile {
    path: PathBuf,
    hooks: Hooks,
    notes: Vec<String>,
    fingerprints: Prints,
    approved: bool,
    /// What differs from the approval, one phrase each (empty when it was
    /// never approved).
    changed: Vec<String>,
}

/// Reads the project's hook file, if there is one. Its text is `{"hooks":
/// {…}}` (as Claude Code's settings file holds them) or the events'
/// object itself.
fn read_project(store: &Store) -> Result<Option<ProjectFile>, Error> {
    let Some(path) = project_file(store) else {
        return Ok(None);
    };
    let tree = if store.cwd.starts_with(&store.project.key) {
        store.project.key.clone()
    } else {
        store.cwd.clone()
    };
    let bytes =
        revolve_store::intree::read_whole(&tree, &path, revolve_core::policy::REPO_FILE_CAP)
            .map_err(|e| Error::at(&path, "cannot read", e))?;
    let shown = path.to_string_lossy().into_owned();
    let value: Value = serde_json::from_slice(&bytes)
        .map_err(|e| Error::Usage(format!("bad hook file {shown}: {e}")))?;
    let events = match value.get("hooks") {
        Some(inner) => inner.clone(),
        None => value,
    };
    let (hooks, notes) = Hooks::parse(&events, &Origin::Project(shown.clone()))
        .map_err(|e| Error::Usage(format!("bad hook file {e}")))?;
    let fingerprints: Prints = hooks
        .approval_keys()
        .into_iter()
        .map(|(key, command)| {
            let words: Vec<String> = command.split_whitespace().map(str::to_owned).collect();
            let (program, args) = words.split_first().unwrap_or((&command, &[]));
            let print = revolve_io::approval::fingerprint(
                program,
                args,
                &BTreeMap::new(),
                &store.cwd,
                &tree,
            );
            (key, print)
        })
        .collect();
    let before = approved_prints(store, &path);
    let approved = before.as_ref() == Some(&fingerprints);
    let changed = match &before {
        Some(before) if !approved => {
            let mut what = Vec::new();
            for (key, now) in &fingerprints {
                match before.get(key) {
                    Some(then) => what.extend(
                        approval::changes(then, now)
                            .into_iter()
                            .map(|c| format!("{key}: {c}")),
                    ),
                    None => what.push(format!("{key}: new")),
                }
            }
            what.extend(
                before
                    .keys()
                    .filter(|k| !fingerprints.contains_key(*k))
                    .map(|k| format!("{k}: removed")),
            );
            what
        }
        _ => Vec::new(),
    };
    Ok(Some(ProjectFile {
        path,
        hooks,
        notes,
        fingerprints,
        approved,
        changed,
    }))
}

/// The approvals of project hook files.
fn ledger(store: &Store) -> Ledger {
    Ledger::at(&store.roots.state, "hooks-approved.json")
}

/// The key of an approval's fingerprints in `hooks-approved.json`.
const APPROVED: &str = "hooks";

fn approved_prints(store: &Store, path: &Path) -> Option<Prints> {
    ledger(store).prints(path, APPROVED)
}

/// Remembers the project file's hooks as approved as they are now.
fn approve(store: &Store, file: &ProjectFile) -> Result<(), Error> {
    ledger(store).remember(&file.path, APPROVED, &file.fingerprints)
}

/// The hooks a session runs: the config file's, and the project file's
/// when approved (asked at a terminal when `ask`; otherwise a line says
/// how to approve it). Lines for the user come back with them.
pub(crate) fn hooks(store: &Store, settings: &Settings, ask: bool) -> (Hooks, Vec<String>) {
    let mut notes = settings.hook_notes.clone();
    let project = match read_project(store) {
        Ok(Some(file)) if !file.hooks.is_empty() => {
            notes.extend(file.notes.iter().cloned());
            if file.approved {
                file.hooks
            } else if ask && std::io::stdin().is_terminal() && ask_approval(&file) {
                if let Err(e) = approve(store, &file) {
                    notes.push(format!("revolve: {e}"));
                }
                file.hooks
            } else {
                let since = if file.changed.is_empty() {
                    String::new()
                } else {
                    format!(" (changed since approved: {})", file.changed.join("; "))
                };
                notes.push(format!(
                    "revolve: {} configures hooks that were not approved{since}, so none of them \
                     runs: run `revolve hooks approve` to approve them as they are",
                    file.path.display()
                ));
                Hooks::default()
            }
        }
        Ok(_) => Hooks::default(),
        Err(e) => {
            notes.push(format!("revolve: {e}; its hooks do not run"));
            Hooks::default()
        }
    };
    (settings.hooks.clone().merge(project), notes)
}

/// What the user approves: each hook as it runs, and the files of the
/// repository it runs, by hash.
fn approval_text(file: &ProjectFile) -> String {
    let mut text = String::new();
    for (key, print) in &file.fingerprints {
        text.push_str(&format!("  {key}\n"));
        text.push_str(&approvals::files_text(print));
    }
    text
}

/// Asks at the terminal whether the project file's hooks may run.
fn ask_approval(file: &ProjectFile) -> bool {
    Question {
        about: format!(
            "{} configures hooks, commands that run as programs of yours at points of every session:",
            file.path.display()
        ),
        changed: file.changed.join("; "),
        items: approval_text(file),
        verb: "run",
    }
    .ask()
}

/// `revolve hooks list`: every hook, where it is configured, and whether
/// a project's runs.
pub(crate) fn list(store: &Store, settings: &Settings, json: bool) -> Result<(), Error> {
    let project = read_project(store)?;
    let mut rows: Vec<Value> = settings
        .hooks
        .listing()
        .into_iter()
        .map(|h| json!({"hook": h, "runs": true}))
        .collect();
    if let Some(file) = &project {
        rows.extend(
            file.hooks
                .listing()
                .into_iter()
                .map(|h| json!({"hook": h, "runs": file.approved})),
        );
    }
    if json {
        return out(&format!("{}\n", Value::Array(rows)));
    }
    let mut text = String::new();
    for row in &rows {
        let runs = if row["runs"] == true {
            ""
        } else {
            "  [not approved: revolve hooks approve]"
        };
        text.push_str(&format!("{}{runs}\n", row["hook"].as_str().unwrap_or("")));
    }
    if rows.is_empty() {
        text.push_str(&format!(
            "no hooks: add \"hooks\" to config.json or {PROJECT_FILE} (see docs/hooks.md)\n"
        ));
    }
    out(&text)
}

/// `revolve hooks approve`: approves the project file as it is now.
pub(crate) fn approve_command(store: &Store) -> Result<(), Error> {
    let Some(file) = read_project(store)? else {
        return Err(Error::Usage(format!(
            "no {PROJECT_FILE} in this directory or above it in the repository"
        )));
    };
    approve(store, &file)?;
    out(&format!(
        "approved {}: its hooks run from the next session on, as long as this stays as it is:\n{}",
        file.path.display(),
        approval_text(&file)
    ))
}
