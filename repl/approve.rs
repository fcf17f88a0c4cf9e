//! The user at the terminal, asked whether a shell command may run, an
//! edit be made or a path be read. Whether anything is asked at all is
//! core's decision (it knows `--allow-shell`, `--allow-edits`, `--grant`
//! and the user's earlier "always" from the log); here it is only asked.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use revolve_core::edit::Answer;
use revolve_view::inert;

use crate::error::Error;

/// Who is asked: the user at the terminal, when there is one.
#[derive(Debug, Default)]
pub struct Approvals {
    /// Ask the user at the terminal (a TTY run).
    pub interactive: bool,
}

/// The paths of `--grant`, each resolved against `cwd` (the working
/// directory) and made canonical. A grant of a path that does not exist
/// (or cannot be resolved, or is not UTF-8) is a usage error naming it.
pub fn granted_up_front(grants: &[PathBuf], cwd: &Path) -> Result<Vec<String>, Error> {
    grants
        .iter()
        .map(|given| {
            let path = cwd.join(given);
            let canonical = path.canonicalize().map_err(|e| {
                Error::Usage(format!(
                    "--grant {}: cannot grant {}: {e}",
                    given.display(),
                    path.display()
                ))
            })?;
            canonical.into_os_string().into_string().map_err(|path| {
                Error::Usage(format!(
                    "--grant {}: {} is not valid UTF-8",
                    given.display(),
                    Path::new(&path).display()
                ))
            })
        })
        .collect()
}

impl Approvals {
    /// Asks whether a shell command may run: this one, every one of the
    /// session, or no (core decided to ask). End of input means no.
    pub fn ask_shell(&self, command: &str) -> Answer {
        ask(&format!(
            "run `{}`? [y]es, [a]lways this session, [n]o: ",
            inert(command)
        ))
    }

    /// Asks whether `web_fetch` may read `url`: this once, every page of
    /// `host` this session, or no. End of input means no.
    pub fn ask_fetch(&self, url: &str, host: &str) -> Answer {
        ask(&format!(
            "fetch {}? [y]es, [a]lways from {} this session, [n]o: ",
            inert(url),
            inert(host)
        ))
    }

    /// Shows the diff of an edit of `shown` and asks: this one, every edit
    /// of the session (not offered when `once`), or no. End of input means
    /// no.
    pub fn ask_edit(&self, shown: &str, diff: &str, once: bool) -> Answer {
        let diff = inert(diff.trim_end());
        eprintln!("{}", crate::render::diff(&diff, crate::render::stderr()));
        let always = if once { "" } else { "[a]lways this session, " };
        ask(&format!(
            "apply this change to {}? [y]es, {always}[n]o: ",
            inert(shown)
        ))
    }

    /// Asks whether the session may read `path` (outside the working
    /// tree), for the model's `reason`: yes or no ("always" is a yes: a
    /// grant is for this once). End of input means no.
    /// A yes-or-no question (a costly compaction or refinement): `y` or
    /// `a` is yes.
    pub fn confirm(&self, question: &str) -> bool {
        ask(question) != Answer::No
    }

    pub fn ask_grant(&self, path: &str, reason: Option<&str>) -> bool {
        let why = reason
            .map(|r| format!(" ({})", inert(r)))
            .unwrap_or_default();
        ask(&format!(
            "let this session read {}{why}? [y]es, [n]o: ",
            inert(path)
        )) != Answer::No
    }
}

/// Asks on stderr and reads one key of the terminal ([`crate::keys`]:
/// no Enter needed; Ctrl-C, Esc and Ctrl-D are no), or one line of stdin
/// when it is not a terminal. End of input means no.
fn ask(question: &str) -> Answer {
    if let Some(answer) = crate::keys::answer(question) {
        return answer;
    }
    eprint!("{question}");
    std::io::stderr().flush().ok();
    let mut line = String::new();
    if std::io::stdin().lock().read_line(&mut line).unwrap_or(0) == 0 {
        return Answer::No;
    }
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Answer::Yes,
        "a" | "always" => Answer::Always,
        _ => Answer::No,
    }
}
