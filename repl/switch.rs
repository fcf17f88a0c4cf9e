//! Going from one session to another in the same REPL: `/clear` ends
//! this session (it stays resumable, and its name is said) and starts a
//! new one; `/resume NAME` switches to another; a bare `/resume` (or a
//! bare `revolve -r`) picks one of the project's recent sessions from a
//! list (arrow keys or a number, Esc cancels).

use std::path::PathBuf;

use revolve_core::record::{Record, Role};
use revolve_store::store::Store;
use revolve_view::slash::{self, Slash};

use crate::console::Live;
use crate::error::Error;

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

/// A bare `-r` (`resume` empty): the session picked from a list on a
/// terminal takes its place; without a terminal, the error that lists
/// them. `Ok(false)`: the pick was cancelled and the run ends.
pub(crate) fn bare_resume(
    resume: &mut Option<String>,
    store: &Store,
    interactive: bool,
) -> Result<bool, Error> {
    if resume.as_deref() != Some("") {
        return Ok(true);
    }
    if !interactive {
        return Err(no_terminal(store));
    }
    match pick(store, None) {
        Ok(Some(path)) => {
            *resume = Some(path.to_string_lossy().into_owned());
            Ok(true)
        }
        Ok(None) => Ok(false),
        Err(why) => Err(Error::Usage(why)),
    }
}

/// A bare `revolve -r` without a terminal: the sessions it could resume
/// on stderr, and the line saying to name one (an error: exit 2).
fn no_terminal(store: &Store) -> Error {
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
