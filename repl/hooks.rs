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
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

use revolve_core::approval::{self, Fingerprint};
use revolve_core::hooks::{Hooks, Origin};
use revolve_store::store::Store;
use serde_json::{json, Value};

use crate::config::Settings;
use crate::error::{out, Error};

/// The project's hook file, relative to a folder of the repository.
pub(crate) const PROJECT_FILE: &str = ".revolve/hooks.json";

/// The project's hook file: in the working directory or a folder above
/// it, up to the repository's root.
fn project_file(store: &Store) -> Option<PathBuf> {
    let root = &store.project.key;
    let mut dir = Some(store.cwd.as_path());
    while let Some(d) = dir {
        let file = d.join(PROJECT_FILE);
        if file.symlink_metadata().is_ok() {
            return Some(file);
        }
        if d == root.as_path() || !d.starts_with(root) {
            break;
        }
        dir = d.parent();
    }
    None
}

/// A project hook file read: its hooks, their fingerprints now, and
/// whether that is what was approved.
pub(crate) struct ProjectFile {
    path: PathBuf,
    hooks: Hooks,
    notes: Vec<String>,
    fingerprints: BTreeMap<String, Fingerprint>,
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
    let fingerprints: BTreeMap<String, Fingerprint> = hooks
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

fn approvals_path(store: &Store) -> PathBuf {
    store.roots.state.join("hooks-approved.json")
}

fn key(path: &Path) -> String {
    path.canonicalize()
        .unwrap_or_else(|_| path.to_owned())
        .to_string_lossy()
        .into_owned()
}

fn approvals(store: &Store) -> BTreeMap<String, Value> {
    std::fs::read_to_string(approvals_path(store))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

fn approved_prints(store: &Store, path: &Path) -> Option<BTreeMap<String, Fingerprint>> {
    let entry = approvals(store).remove(&key(path))?;
    serde_json::from_value(entry.get("hooks")?.clone()).ok()
}

/// Remembers the project file's hooks as approved as they are now.
fn approve(store: &Store, file: &ProjectFile) -> Result<(), Error> {
    let mut all = approvals(store);
    all.insert(key(&file.path), json!({"hooks": file.fingerprints}));
    let path = approvals_path(store);
    if let Some(dir) = path.parent() {
        revolve_store::files::create_dir_all(dir)
            .map_err(|e| Error::at(dir, "cannot create", e))?;
    }
    let text = serde_json::to_string_pretty(&all).map_err(Error::encode)?;
    let temp = path.with_extension("json.tmp");
    revolve_store::files::options()
        .write(true)
        .create(true)
        .truncate(true)
        .open(&temp)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .and_then(|()| std::fs::rename(&temp, &path))
        .map_err(|e| Error::at(&path, "cannot write", e))
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
    }
    text
}

/// Asks at the terminal whether the project file's hooks may run.
fn ask_approval(file: &ProjectFile) -> bool {
    let mut err = std::io::stderr();
    let _ = writeln!(
        err,
        "{} configures hooks, commands that run as programs of yours at points of every session:",
        file.path.display()
    );
    if !file.changed.is_empty() {
        let _ = writeln!(
            err,
            "changed since you approved them: {}",
            file.changed.join("; ")
        );
    }
    let _ = write!(err, "{}", approval_text(file));
    let _ = write!(
        err,
        "run them (remembered until any of this changes)? [y]es, [n]o: "
    );
    let _ = err.flush();
    let mut line = String::new();
    let _ = std::io::stdin().lock().read_line(&mut line);
    matches!(line.trim(), "y" | "Y" | "yes")
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
