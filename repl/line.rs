//! One line the user sent: a slash command, told on stderr, or a turn.

use revolve_core::edit::{turns, Scope};
use revolve_core::slash::{self, RefineCommand, RewindCommand, Slash};
use revolve_core::view;
use revolve_io::live::Outcome;

use crate::commands;
use crate::console::Live;
use crate::error::Error;

/// Handles one line: a slash command or a user turn. A command that fails
/// is told on stderr and the session goes on; only the session's own
/// failures (its log, a signal) are errors.
pub fn handle(live: &mut Live, text: &str) -> Result<Outcome, Error> {
    let Some(command) = slash::parse(text) else {
        return live.turn(text);
    };
    match command {
        Slash::Quit => return Ok(Outcome::Quit),
        // A failed summary changes nothing and the core said so: the
        // session goes on with the next line, as after any command.
        Slash::Compact => match live.compact()? {
            Outcome::Failed(_) => {}
            other => return Ok(other),
        },
        Slash::Name(name) => return live.rename(name),
        Slash::Plan(on) => return live.plan(on),
        Slash::Refine(RefineCommand::Run) => return live.refine(false),
        Slash::Rewind(RewindCommand::List) => {
            eprint!("{}", view::rewind_list(&turns(live.state())));
        }
        Slash::Rewind(how) => {
            let (turns, undo) = match how {
                RewindCommand::Turns(n) => (n, false),
                _ => (0, true),
            };
            if let Err(why) = live.rewind(turns, Scope::Both, undo, false)? {
                eprintln!("{why}");
            }
        }
        Slash::Refine(RefineCommand::History { diff }) => {
            match commands::memory_history(live.store(), live.memory(), diff) {
                Ok(text) => eprint!("{text}"),
                Err(e) => eprintln!("{e}"),
            }
        }
        Slash::Refine(RefineCommand::Undo) => match live.undo_memory() {
            Ok(done) => eprint!("{}", commands::undo_text(done.as_deref())),
            Err(e) => eprintln!("{e}"),
        },
        Slash::Goal(args) => match commands::goal(&live.memory().project_dir, &args) {
            Ok(text) => eprintln!("{text}"),
            Err(e) => eprintln!("{e}"),
        },
        Slash::Status => {
            eprintln!("{}", view::status(live.state()));
            eprintln!("{}", view::instructions(&live.instructions()));
        }
        Slash::Help => {
            eprintln!("{}", slash::HELP);
            eprint!("{}", slash::help_commands(&live.skills()));
        }
        Slash::Incomplete(why) => eprintln!("{why}"),
        Slash::Other { word, arg } => {
            // A skill of that name is a command of the user's own: its body,
            // with the arguments filled in, is the user's message.
            match live.skill_message(&word, &arg) {
                Some(Ok(message)) => return live.turn(&message),
                Some(Err(e)) => eprintln!("revolve: /{word}: {e}"),
                None => eprintln!("unknown command /{word}; /help lists them"),
            }
        }
    }
    Ok(Outcome::Done)
}
