//! The interactive loop: rustyline with history, a status line before each
//! prompt, Ctrl-C to cancel a turn (or clear the line), Ctrl-D to leave.

use rustyline::error::ReadlineError;
use rustyline::DefaultEditor;

use revolve_core::view;

use crate::error::Error;
use crate::live::{Live, Outcome};

pub fn run(live: &mut Live, first: Option<&str>) -> Result<(), Error> {
    let mut editor = DefaultEditor::new()
        .map_err(|e| Error::Runtime(format!("cannot start the line editor: {e}")))?;
    let history = live.history_path();
    editor.load_history(&history).ok();
    eprintln!(
        "session {} · {} · /help for commands",
        live.state().name.as_deref().unwrap_or("(unnamed)"),
        live.path().display()
    );
    if let Some(first) = first {
        if respond(live, first)? == Outcome::Quit {
            return Ok(());
        }
    }
    loop {
        eprintln!("{}", dim(&view::status(live.state())));
        let width = editor
            .dimensions()
            .map_or(80, |(columns, _)| usize::from(columns));
        if let Some(row) = live.goal_row(width) {
            eprintln!("{}", dim(&row));
        }
        match editor.readline("› ") {
            Ok(line) => {
                if !line.trim().is_empty() {
                    editor.add_history_entry(line.as_str()).ok();
                }
                if respond(live, &line)? == Outcome::Quit {
                    break;
                }
            }
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(Error::Runtime(format!("cannot read the terminal: {e}"))),
        }
    }
    if let Some(dir) = history.parent() {
        std::fs::create_dir_all(dir).ok();
    }
    editor.save_history(&history).ok();
    Ok(())
}

/// One line in the REPL: a failed or interrupted turn is told and the
/// session goes on.
fn respond(live: &mut Live, line: &str) -> Result<Outcome, Error> {
    let outcome = live.line(line)?;
    match &outcome {
        // Server and tool text can be in it: inert on a terminal.
        Outcome::Failed(why) => eprintln!("revolve: {}", view::inert(why)),
        Outcome::Interrupted => eprintln!("interrupted; the turn is logged as such"),
        _ => {}
    }
    Ok(outcome)
}

/// Dimmed, unless NO_COLOR is set (https://no-color.org).
fn dim(text: &str) -> String {
    if std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) {
        text.to_owned()
    } else {
        format!("\x1b[2m{text}\x1b[0m")
    }
}
