//! MCP servers from the command line's side: which are configured (the
//! config file's `mcp_servers`, and the repository's `.mcp.json` once
//! approved), starting them, `revolve mcp list` and `revolve mcp approve`.
//!
//! A project file's servers are approved by their fingerprints
//! ([`revolve_core::approval`]): each server's command, arguments and env
//! as written, and the content of the files inside the repository they
//! name. They are kept in `<state>/mcp-approved.json` (`0600`), by the
//! file's path; when any server's fingerprint differs from the one
//! approved (a pull changed the file, or a command rewrote the script a
//! server runs) the file is asked about again, saying what changed. An
//! approval made by an older revolve (a hash of the file only) is asked
//! about again too.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use revolve_core::approval;
use revolve_core::mcp::{self as core_mcp, Origin, Server};
use revolve_mcp::{Hub, Spec, Status};
use revolve_store::store::Store;
use serde_json::json;

use crate::approvals::{self, Ledger, Prints, Question};
use crate::config::Settings;
use crate::error::{out, Error};

/// The name of a project's MCP file, at the repository's root.
pub(crate) const PROJECT_FILE: &str = ".mcp.json";

/// The project's `.mcp.json`: in the working directory or a folder above
/// it, up to the repository's root.
pub(crate) fn project_file(store: &Store) -> Option<PathBuf> {
    approvals::project_file(store, PROJECT_FILE, Path::is_file)
}

/// A project file read: its path, its servers with their fingerprints now,
/// and what changed since the approval (`None`: approved as it is).
pub(crate) struct ProjectFile {
    pub path: PathBuf,
    pub servers: Vec<Server>,
    pub fingerprints: Prints,
    pub approved: bool,
    /// Whether the user said no to the servers as they are now: not
    /// asked again until the file (or what it runs) changes.
    pub declined: bool,
    /// Per server, what differs from what was approved (empty when it
    /// was never approved).
    pub changed: Vec<(String, Vec<String>)>,
}

/// Reads the project file, if there is one.
pub(crate) fn read_project(store: &Store) -> Result<Option<ProjectFile>, Error> {
    let Some(path) = project_file(store) else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(&path).map_err(|e| Error::at(&path, "cannot read", e))?;
    let servers =
        core_mcp::parse_project_file(&text, &path.to_string_lossy()).map_err(Error::Usage)?;
    let fingerprints: Prints = servers
        .iter()
        .map(|s| {
            let (command, args, env) = core_mcp::approval_parts(s);
            let print = revolve_io::approval::fingerprint(
                command,
                args,
                env,
                &store.cwd,
                &store.project.key,
            );
            (s.name.clone(), print)
        })
        .collect();
    let before = remembered_prints(store, &path, APPROVED);
    let approved = before.as_ref() == Some(&fingerprints);
    let declined = remembered_prints(store, &path, DECLINED).as_ref() == Some(&fingerprints);
    let changed = match &before {
        Some(before) if !approved => fingerprints
            .iter()
            .map(|(name, now)| {
                let what = match before.get(name) {
                    Some(then) => approval::changes(then, now),
                    None => vec!["it is new".to_owned()],
                };
                (name.clone(), what)
            })
            .filter(|(_, what)| !what.is_empty())
            .collect(),
        _ => Vec::new(),
    };
    Ok(Some(ProjectFile {
        path,
        servers,
        fingerprints,
        approved,
        declined,
        changed,
    }))
}

/// The approvals of project MCP files.
fn ledger(store: &Store) -> Ledger {
    Ledger::at(&store.roots.state, "mcp-approved.json")
}

/// The key of an approval's fingerprints in `mcp-approved.json`.
const APPROVED: &str = "servers";
/// The key of a refusal's: the user said no to the servers as they were.
const DECLINED: &str = "declined";

/// The fingerprints the project file at `path` was approved with
/// (`APPROVED`) or refused with (`DECLINED`), if any (an older revolve's
/// approval, a hash of the file, counts as none).
fn remembered_prints(store: &Store, path: &Path, what: &str) -> Option<Prints> {
    ledger(store).prints(path, what)
}

/// Remembers the project file's servers as approved as they are now.
fn approve(store: &Store, file: &ProjectFile) -> Result<(), Error> {
    remember(store, file, APPROVED)
}

/// Remembers the user's yes (`APPROVED`) or no (`DECLINED`) to the project
/// file's servers as they are now; the one replaces the other.
fn remember(store: &Store, file: &ProjectFile, what: &str) -> Result<(), Error> {
    ledger(store).remember(&file.path, what, &file.fingerprints)
}

/// The servers a run starts: the config file's, and the project file's
/// when approved (asked at a terminal when `ask`; otherwise a line says
/// how to approve it). Lines for the user come back with them.
pub(crate) fn servers(store: &Store, settings: &Settings, ask: bool) -> (Vec<Server>, Vec<String>) {
    let mut notes = Vec::new();
    let project = match read_project(store) {
        Ok(Some(file)) if !file.servers.is_empty() => {
            if !file.approved && file.declined {
                notes.push(format!(
                    "revolve: the MCP servers of {} are not started: you said no to them as they \
                     are (run `revolve mcp approve` to start them)",
                    file.path.display()
                ));
                Vec::new()
            } else if !file.approved && ask && std::io::stdin().is_terminal() {
                if ask_approval(&file) {
                    if let Err(e) = approve(store, &file) {
                        notes.push(format!("revolve: {e}"));
                    }
                    file.servers
                } else {
                    if let Err(e) = remember(store, &file, DECLINED) {
                        notes.push(format!("revolve: {e}"));
                    }
                    notes.push(format!(
                        "revolve: the MCP servers of {} are not started (not asked again until \
                         the file changes; `revolve mcp approve` starts them)",
                        file.path.display()
                    ));
                    Vec::new()
                }
            } else if !file.approved {
                let names: Vec<&str> = file.servers.iter().map(|s| s.name.as_str()).collect();
                let since = if file.changed.is_empty() {
                    String::new()
                } else {
                    format!(" (changed since approved: {})", changes_text(&file.changed))
                };
                notes.push(format!(
                    "revolve: {} configures MCP servers ({}) that were not approved{since}, so they are not \
                     started: run `revolve mcp approve` to approve them as they are",
                    file.path.display(),
                    names.join(", ")
                ));
                Vec::new()
            } else {
                file.servers
            }
        }
        Ok(_) => Vec::new(),
        Err(e) => {
            notes.push(format!("revolve: {e}"));
            Vec::new()
        }
    };
    (
        core_mcp::merge(settings.mcp_servers.clone(), project),
        notes,
    )
}

/// `server: what, what; server: what`.
fn changes_text(changed: &[(String, Vec<String>)]) -> String {
    changed
        .iter()
        .map(|(name, what)| format!("{name}: {}", what.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

/// What the user approves, a few lines: each server as it runs (command,
/// arguments, env) and the files of the repository it runs, by hash.
fn approval_text(file: &ProjectFile) -> String {
    let mut text = String::new();
    for s in &file.servers {
        text.push_str(&format!("  {}  {}\n", s.name, core_mcp::describe(s)));
        if let Some(print) = file.fingerprints.get(&s.name) {
            text.push_str(&approvals::files_text(print));
        }
    }
    text
}

/// Asks at the terminal whether the project file's servers may start.
fn ask_approval(file: &ProjectFile) -> bool {
    Question {
        about: format!(
            "{} configures MCP servers, which run as programs of yours:",
            file.path.display()
        ),
        changed: changes_text(&file.changed),
        items: approval_text(file),
        verb: "start",
    }
    .ask()
}

/// Starts `servers` now, each on a thread (values expanded from the
/// environment); `None` when there are none. A server whose values name
/// an unset variable is not started, and said.
/// Each server gets `timeout` to start (`initialize`) and again to list
/// its tools.
pub(crate) fn start(
    store: &Store,
    servers: &[Server],
    timeout: Duration,
) -> (Option<Arc<Hub>>, Vec<String>) {
    if servers.is_empty() {
        return (None, Vec::new());
    }
    let lookup = |var: &str| std::env::var(var).ok();
    let logs = store.roots.project(&store.project).join("mcp");
    let mut notes = Vec::new();
    let mut specs = Vec::new();
    for server in servers {
        match core_mcp::expanded(server, &lookup) {
            Ok(expanded) => specs.push(Spec {
                secrets: core_mcp::secrets(server, &lookup),
                stderr_log: logs.join(format!("{}.stderr.log", server.name)),
                cwd: store.cwd.clone(),
                hidden: revolve_core::config::API_KEY_VARS.to_vec(),
                tokens: Some(tokens_path(store)),
                server: expanded,
            }),
            Err(why) => notes.push(format!(
                "revolve: {why} ({}); the server is not started",
                server.origin
            )),
        }
    }
    let hub = Hub::start(specs, timeout);
    (Some(Arc::new(hub)), notes)
}

/// A server as `mcp list` shows it: its state and its tools (offered name,
/// description).
type Row = (Server, String, Vec<(String, String)>);

/// `revolve mcp list [--json]`: every server started and waited for.
pub(crate) fn list(store: &Store, settings: &Settings, json: bool) -> Result<(), Error> {
    let (servers, _) = servers(store, settings, false);
    let project = read_project(store)?;
    // `mcp list` waits as long as the user allows a call
    // (`mcp_timeout_s`), not the session's start timeout.
    let timeout = Duration::from_secs(settings.core.mcp_timeout_s);
    let (hub, notes) = start(store, &servers, timeout);
    for n in notes {
        eprintln!("{n}");
    }
    let mut rows: Vec<Row> = Vec::new();
    if let Some(hub) = &hub {
        // Each server has the start timeout for `initialize` and again
        // for `tools/list`, and says it failed itself when over.
        hub.wait(timeout * 2);
        // The names as a session offers them (a collision once
        // sanitised said, and the second suffixed).
        let listed: Vec<(String, Vec<revolve_core::mcp::Listed>)> = hub
            .statuses()
            .into_iter()
            .filter_map(|(s, status)| match status {
                Status::Ready { tools, .. } => Some((s.name, tools)),
                _ => None,
            })
            .collect();
        let (offered, collisions) = core_mcp::offered_noting(&listed);
        for line in collisions {
            eprintln!("{line}");
        }
        for (running, status) in hub.statuses() {
            // Shown as written (a secret as its `${VAR}`), not expanded.
            let server = servers
                .iter()
                .find(|s| s.name == running.name)
                .cloned()
                .unwrap_or(running);
            let (state, tools) = match status {
                Status::Starting => ("starting".to_owned(), Vec::new()),
                Status::Failed(why) => (format!("failed: {why}"), Vec::new()),
                Status::NeedsLogin => (
                    format!("needs a login (revolve mcp login {})", server.name),
                    Vec::new(),
                ),
                Status::Ready { tools, info, .. } => (
                    format!("ready ({info})"),
                    tools
                        .iter()
                        .map(|t| {
                            let name = offered
                                .iter()
                                .find(|o| o.server == server.name && o.tool == t.name)
                                .map_or_else(
                                    || core_mcp::tool_name(&server.name, &t.name),
                                    |o| o.name.clone(),
                                );
                            (name, t.description.clone().unwrap_or_default())
                        })
                        .collect(),
                ),
            };
            rows.push((server, state, tools));
        }
    }
    // A project's servers not approved are listed, not started.
    if let Some(file) = project.filter(|f| !f.approved) {
        for s in file.servers {
            if !rows.iter().any(|(r, _, _)| r.name == s.name) {
                rows.push((
                    s,
                    "not approved (revolve mcp approve)".to_owned(),
                    Vec::new(),
                ));
            }
        }
    }
    rows.sort_by(|a, b| a.0.name.cmp(&b.0.name));
    if json {
        let list: Vec<_> = rows
            .iter()
            .map(|(s, state, tools)| {
                json!({
                    "name": s.name,
                    "origin": s.origin.to_string(),
                    "transport": core_mcp::describe(s),
                    "state": state,
                    "tools": tools.iter().map(|(n, d)| json!({"name": n, "description": d})).collect::<Vec<_>>(),
                })
            })
            .collect();
        return out(&format!("{}\n", json!(list)));
    }
    if rows.is_empty() {
        return out(&format!(
            "no MCP servers: add mcp_servers to {} or a {PROJECT_FILE} at the repository's root\n",
            settings.file.display()
        ));
    }
    let mut text = String::new();
    for (s, state, tools) in &rows {
        let origin = match &s.origin {
            Origin::Config => "config.json".to_owned(),
            Origin::Project(p) => p.clone(),
        };
        text.push_str(&format!(
            "{}  {}  [{origin}]  {state}\n",
            s.name,
            core_mcp::describe(s)
        ));
        for (name, description) in tools {
            let first = description.lines().next().unwrap_or("");
            let first: String = first.chars().take(100).collect(); // not policy: a listing's width
            text.push_str(&format!("  {name}  {first}\n"));
        }
    }
    out(&text)
}

/// `revolve mcp approve`: approves the project file as it is now.
pub(crate) fn approve_command(store: &Store) -> Result<(), Error> {
    let Some(file) = read_project(store)? else {
        return Err(Error::Usage(format!(
            "no {PROJECT_FILE} here or above, up to the repository's root"
        )));
    };
    approve(store, &file)?;
    let names: Vec<&str> = file.servers.iter().map(|s| s.name.as_str()).collect();
    out(&format!(
        "approved {} ({}): its servers start with the next session, as long as this stays as it is:\n{}",
        file.path.display(),
        names.join(", "),
        approval_text(&file)
    ))
}

/// Where OAuth tokens are kept: `mcp-tokens.json` beside the config
/// (`0600`).
pub(crate) fn tokens_path(store: &Store) -> PathBuf {
    store.roots.config.join("mcp-tokens.json")
}

/// `revolve mcp login NAME`: the OAuth flow for an HTTP server, now. The
/// authorization URL is printed on stderr, and opened in the browser
/// unless `no_browser` or nothing could show one.
pub(crate) fn login(
    store: &Store,
    settings: &Settings,
    name: &str,
    no_browser: bool,
) -> Result<(), Error> {
    let (servers, notes) = servers(store, settings, false);
    for n in notes {
        eprintln!("{n}");
    }
    let Some(server) = servers.iter().find(|s| s.name == name) else {
        let names: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
        return Err(Error::Usage(format!(
            "no MCP server is named {name} (configured: {}); see `revolve mcp list`",
            if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            }
        )));
    };
    let lookup = |var: &str| std::env::var(var).ok();
    let expanded = core_mcp::expanded(server, &lookup)
        .map_err(|why| Error::Usage(format!("{why} ({})", server.origin)))?;
    let core_mcp::Transport::Http { url, headers } = &expanded.transport else {
        return Err(Error::Usage(format!(
            "{name} is a stdio server: only HTTP servers log in (a stdio server takes its secrets in `env`)"
        )));
    };
    if !core_mcp::oauth::wanted(headers) {
        return Err(Error::Usage(format!(
            "{name} is configured with an Authorization header of its own: remove it from its headers to log in with OAuth"
        )));
    }
    let tokens = revolve_mcp::oauth::tokens::Tokens::at(&tokens_path(store));
    let browser = !no_browser && can_show_a_browser();
    let mut open = |url: &str| {
        eprintln!("revolve: to log in to {name}, open this URL in your browser:\n{url}");
        if browser {
            if let Err(e) = opener::open_browser(url) {
                eprintln!("revolve: no browser opened ({e}); open the URL above yourself");
            }
        }
        eprintln!(
            "revolve: waiting for the browser to come back (at most {} s)",
            revolve_core::policy::MCP_LOGIN_WAIT_S
        );
    };
    let done = revolve_mcp::oauth::login(
        &revolve_mcp::oauth::Login {
            name,
            url,
            tokens: &tokens,
            timeout: Duration::from_secs(settings.core.mcp_timeout_s),
            wait: Duration::from_secs(revolve_core::policy::MCP_LOGIN_WAIT_S),
        },
        &mut open,
    )
    .map_err(|why| Error::Login {
        server: name.to_owned(),
        why,
    })?;
    match done {
        revolve_mcp::oauth::LoggedIn::NotNeeded => {
            out(&format!("{name} answers without a login: nothing to do\n"))
        }
        revolve_mcp::oauth::LoggedIn::Kept { scope } => out(&format!(
            "logged in to {name}{}; the tokens are in {} (0600)\n",
            scope.map(|s| format!(" (scope: {s})")).unwrap_or_default(),
            tokens.path().display()
        )),
    }
}

/// Whether a browser can be shown: `$BROWSER` names one, or (on Linux
/// and the BSDs) a display is there; macOS and Windows always have one.
fn can_show_a_browser() -> bool {
    let set = |v: &str| std::env::var_os(v).is_some_and(|x| !x.is_empty());
    if set("BROWSER") {
        return true;
    }
    if cfg!(any(target_os = "macos", windows)) {
        return true;
    }
    set("DISPLAY") || set("WAYLAND_DISPLAY")
}

/// `revolve mcp logout NAME`: forgets the server's tokens.
pub(crate) fn logout(store: &Store, name: &str) -> Result<(), Error> {
    let tokens = revolve_mcp::oauth::tokens::Tokens::at(&tokens_path(store));
    let had = revolve_mcp::oauth::logout(&tokens, name)
        .map_err(|e| Error::at(tokens.path(), "cannot write", e))?;
    if had {
        out(&format!(
            "logged out of {name}: its tokens are gone from {}\n",
            tokens.path().display()
        ))
    } else {
        out(&format!("no tokens were kept for {name}\n"))
    }
}

/// What the MCP servers of the recorded session `source` (its whole
/// chain) gave, for `--provider replay:NAME`.
pub(crate) fn recorded(store: &Store, source: &str) -> Result<core_mcp::Recorded, Error> {
    let found = store.find(Some(source))?;
    let mut records = Vec::new();
    for file in store.chain(&store.head(&found)) {
        let read =
            revolve_store::log::read(&file).map_err(|e| Error::at(&file, "cannot read", e))?;
        records.extend(read.records);
    }
    Ok(core_mcp::Recorded::of(&records))
}

/// `/mcp`: the session's MCP servers, a line each: where it is
/// configured, whether it was approved (a project's), whether it runs,
/// how many tools it offers, and its last error; a project file's
/// servers that were declined or never asked about too.
pub(crate) fn slash(live: &crate::console::Live) -> String {
    let mut rows: Vec<(String, String)> = Vec::new();
    if let Some(hub) = live.mcp_hub() {
        for (server, status) in hub.statuses() {
            let origin = match &server.origin {
                Origin::Config => "config.json".to_owned(),
                Origin::Project(p) => format!("{p}, approved"),
            };
            let state = match status {
                Status::Starting => "starting".to_owned(),
                Status::Ready { tools, info, .. } => {
                    let plural = if tools.len() == 1 { "" } else { "s" };
                    format!("running ({info}), {} tool{plural}", tools.len())
                }
                Status::Failed(why) => {
                    format!("not running, last error: {}", revolve_view::inert(&why))
                }
                Status::NeedsLogin => format!(
                    "not running: needs a login (revolve mcp login {})",
                    server.name
                ),
            };
            rows.push((server.name, format!("[{origin}]  {state}")));
        }
    }
    // A project's servers that do not run: declined, or never asked.
    match read_project(live.store()) {
        Ok(Some(file)) if !file.approved => {
            let said = if file.declined {
                "declined (revolve mcp approve approves them)"
            } else {
                "not asked yet (asked at the next start; revolve mcp approve approves them)"
            };
            for s in file.servers {
                if !rows.iter().any(|(name, _)| *name == s.name) {
                    let origin = file.path.display();
                    rows.push((s.name, format!("[{origin}]  {said}")));
                }
            }
        }
        Ok(_) => {}
        Err(e) => rows.push((PROJECT_FILE.to_owned(), format!("cannot be read: {e}"))),
    }
    if rows.is_empty() {
        return format!(
            "no MCP servers: add mcp_servers to config.json or a {PROJECT_FILE} at the repository's root\n"
        );
    }
    rows.sort();
    rows.iter()
        .map(|(name, text)| format!("{name}  {text}\n"))
        .collect()
}
