//! Going from one session to another in the same REPL: `/clear` ends
//! this session (it stays resumable, and its name is said) and starts a
//! new one; `/resume NAME` switches to another; a bare `/resume` (or a
//! bare `revolve -r`) picks one of the project's recent sessions from a
//! list (arrow keys or a number, Esc cancels).

use std::path::PathBuf;

use revolve_core::record::{Record, Role};
use revolve_store::store::Store;
use revolve_view::slash::{self, Slash};

use crate::config::Settings;
use crate::console::Live;
use crate::error::Error;
use crate::repl::{self, Next};
use crate::sessions;

/// What a line asks of the session in the REPL.
pub(crate) enum Asked {
    /// Nothing of this module's: the line is a turn or another command.
    Not,
    /// A `/resume` that found nothing or was cancelled (said on stderr):
    /// the session goes on.
    Stay,
    /// Leave this session for a new one (`None`, `/clear`) or the session
    /// file chosen (`/resume`).
    Switch(Option<PathBuf>),
}

/// Whether `line` asks to leave this session for another.
pub(crate) fn asked(live: &Live, line: &str) -> Asked {
    match slash::parse(line) {
        Some(Slash::Clear) => Asked::Switch(None),
        Some(Slash::Resume(name)) => match resumed(live, &name) {
            Some(path) => Asked::Switch(Some(path)),
            None => Asked::Stay,
        },
        _ => Asked::Not,
    }
}

/// The session file `/resume NAME` (or a bare `/resume`, picked) names;
/// `None` said on stderr.
fn resumed(live: &Live, name: &str) -> Option<PathBuf> {
    let found = if name.is_empty() {
        match pick(live.store(), Some(live.state().id())) {
            Ok(found) => found?,
            Err(why) => {
                eprintln!("revolve: /{why}");
                return None;
            }
        }
    } else {
        match live.store().find(Some(name)) {
            Ok(path) => path,
            Err(e) => {
                eprintln!("revolve: /resume: {e}");
                return None;
            }
        }
    };
    if same_file(&found, live.path()) {
        eprintln!("/resume: that is this session");
        return None;
    }
    Some(found)
}

/// The REPL over one session after another, until one ends the run: the
/// session left is closed (and said how to come back to), the next
/// started or resumed with what this run set up (its MCP servers still
/// running).
pub(crate) fn chat(
    mut live: Live,
    first: Option<&str>,
    banner: &str,
    settings: &Settings,
) -> Result<(), Error> {
    let mut first = first;
    let mut banner = banner.to_owned();
    loop {
        let result = repl::run(&mut live, first.take(), &banner);
        let address = sessions::address(live.state());
        let id = live.state().id().to_owned();
        let (closed, store, mut runtime, front) = live.close_keeping();
        // Nothing a command started outlives the session.
        revolve_tools::end_session(&id);
        let to = match result {
            Ok(Next::Switch(to)) => to,
            other => {
                if !closed {
                    eprintln!("{}", sessions::exit_hint(&address));
                }
                return other.map(|_| ());
            }
        };
        if closed {
            eprintln!("ended {address} (it held nothing, so it is not kept)");
        } else {
            eprintln!(
                "ended {address}; revolve -r {address} (or /resume {address}) comes back to it"
            );
        }
        let (next, source) = match to {
            None => {
                // A new session asks what this run was told to ask.
                runtime.model = Some(settings.model.value.clone());
                runtime.window = Some(settings.window.value);
                (Live::start(store, runtime, front, None, true)?, "clear")
            }
            Some(path) => {
                // A resumed session keeps its model unless this run's
                // flags or variables chose one.
                let chosen = settings.model.source.overrides_resumed();
                runtime.model = chosen.then(|| settings.model.value.clone());
                runtime.window = chosen.then_some(settings.window.value);
                let mut live = Live::resume_at(store, &path, runtime, front, true)?;
                live.address()?;
                (live, "resume")
            }
        };
        live = next;
        live.start_hooks(source)?;
        banner = format!(
            "session {} · {}\n",
            live.state().name().as_deref().unwrap_or("(unnamed)"),
            live.state().model()
        );
    }
}

/// A bare `/resume` or `revolve -r`: the project's recent sessions
/// (not `own`), newest first, picked on the terminal. `Ok(None)`:
/// cancelled (said on stderr). Without a terminal, or with no session to
/// pick, an error line.
pub(crate) fn pick(store: &Store, own: Option<&str>) -> Result<Option<PathBuf>, String> {
    let (choices, rows) = rows(store, own)?;
    eprintln!("resume which session? (↑/↓ and Enter, or its number; Esc cancels)");
    match crate::keys::pick(&rows) {
        None => Err("resume: no terminal to pick on; name the session (revolve -r NAME)".into()),
        Some(None) => {
            eprintln!("resume cancelled; still in this session");
            Ok(None)
        }
        Some(Some(i)) => Ok(choices.get(i).map(|s| PathBuf::from(&s.path))),
    }
}

/// A bare `revolve -r` without a terminal: the sessions it could resume
/// on stderr, and the line saying to name one (an error: exit 2).
pub(crate) fn no_terminal(store: &Store) -> Error {
    match rows(store, None) {
        Ok((_, rows)) => {
            for row in rows {
                eprintln!("{row}");
            }
            Error::Usage(
                "-r without a NAME picks a session on a terminal; name one of the above: revolve -r NAME"
                    .into(),
            )
        }
        Err(why) => Error::Usage(why),
    }
}

/// The sessions a picker offers and their rows.
fn rows(
    store: &Store,
    own: Option<&str>,
) -> Result<(Vec<revolve_core::summary::Summary>, Vec<String>), String> {
    let list = store.list().map_err(|e| {
        format!(
            "resume: cannot list {}: {e}",
            store.sessions_dir().display()
        )
    })?;
    let choices = revolve_view::picker::choices(list, own);
    if choices.is_empty() {
        return Err("resume: no other session in this directory".into());
    }
    let now = revolve_io::clock::now();
    let rows = choices
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let first = first_prompt(&s.path);
            revolve_view::picker::row(i + 1, s, first.as_deref(), now)
        })
        .collect();
    Ok((choices, rows))
}

/// The first message the user typed in a session file (not one delivered
/// from its inbox); `None` when it has none or cannot be read.
fn first_prompt(path: &str) -> Option<String> {
    use std::io::BufRead;
    let file = std::fs::File::open(path).ok()?;
    std::io::BufReader::new(file)
        .lines()
        .map_while(Result::ok)
        .find_map(|line| match Record::parse_line(&line) {
            Ok(Record::Message(m)) if m.role == Role::User && m.origin.is_none() => Some(m.content),
            _ => None,
        })
}

/// Whether two paths name one file.
fn same_file(a: &std::path::Path, b: &std::path::Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}
