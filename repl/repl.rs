//! The interactive loop: rustyline with history, a status line before each
//! prompt, Ctrl-C or Esc to cancel a turn (Ctrl-C clears the line), Ctrl-D
//! to leave. A newline goes into the line with `\` then Enter, Ctrl-J,
//! Alt+Enter (Option+Enter) or Shift+Enter where the terminal tells it
//! from Enter.

use std::collections::VecDeque;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rustyline::completion::{Completer, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::Validator;
use rustyline::{
    Cmd, ConditionalEventHandler, Editor, Event, EventContext, EventHandler, Helper, KeyCode,
    KeyEvent, Modifiers, RepeatCount,
};

use revolve_core::guard;
use revolve_view as view;
use revolve_view::slash;

use revolve_io::live::Outcome;

use crate::console::Live;
use crate::error::Error;
use crate::line;

/// The line editor: rustyline, completing commands with Tab.
type LineEditor = Editor<Commands, DefaultHistory>;

/// Tab completion of `/` commands: the builtin ones and the skills of the
/// session (read again before each prompt, as each turn reads them), and
/// their arguments where they are words or names: the other running
/// sessions of this directory (read on each Tab), skills and commands. The
/// choice is `revolve_view::slash::complete` and `complete_argument`.
#[derive(Default)]
struct Commands {
    skills: Vec<revolve_core::skills::Skill>,
    /// The known models' names (`/model` takes them).
    models: Vec<String>,
    /// Where the running sessions are found, and this session's own name
    /// (never offered to `/send`).
    sessions: Option<(revolve_store::store::Store, Option<String>)>,
    /// The custom commands named like a builtin, said once (by file).
    said: Vec<String>,
}

impl Completer for Commands {
    type Candidate = Pair;

    /// A command completed is followed by a space, as a shell does, ready
    /// for its arguments.
    fn complete(
        &self,
        line: &str,
        pos: usize,
        _: &rustyline::Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let sessions = match &self.sessions {
            Some((store, own)) if line.starts_with('/') => {
                crate::messages::others(store, own.as_deref())
            }
            _ => Vec::new(),
        };
        let names = revolve_view::slash::Names {
            sessions: &sessions,
            skills: &self.skills,
            models: &self.models,
        };
        if let Some((start, words)) = revolve_view::slash::complete_argument(line, pos, names) {
            return Ok((start, spaced(words)));
        }
        if let Some((start, pairs)) = at_path(line, pos) {
            return Ok((start, pairs));
        }
        let commands = revolve_view::slash::complete(line, pos, &self.skills);
        Ok((0, spaced(commands)))
    }
}

/// Candidates that are whole words: each followed by a space once chosen.
fn spaced(words: Vec<String>) -> Vec<Pair> {
    words
        .into_iter()
        .map(|display| Pair {
            replacement: format!("{display} "),
            display,
        })
        .collect()
}

/// Tab in an `@path` word: the entries of the working tree's folder it
/// names that start with what is typed (folders end with `/`); nothing
/// outside the tree (an absolute path or `..`).
fn at_path(line: &str, pos: usize) -> Option<(usize, Vec<Pair>)> {
    let before = line.get(..pos)?;
    let start = before.rfind(char::is_whitespace).map_or(0, |i| i + 1);
    let typed = before[start..].strip_prefix('@')?;
    if typed.starts_with('/') || typed.split('/').any(|part| part == "..") {
        return None;
    }
    let (dir, prefix) = match typed.rfind('/') {
        Some(i) => (&typed[..=i], &typed[i + 1..]),
        None => ("", typed),
    };
    let folder = if dir.is_empty() { "." } else { dir };
    let mut pairs: Vec<Pair> = std::fs::read_dir(folder)
        .ok()?
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            if !name.starts_with(prefix) || (name.starts_with('.') && !prefix.starts_with('.')) {
                return None;
            }
            let slash = if entry.file_type().ok()?.is_dir() {
                "/"
            } else {
                ""
            };
            Some(Pair {
                display: format!("{name}{slash}"),
                replacement: format!("@{dir}{name}{slash}"),
            })
        })
        .collect();
    pairs.sort_by(|a, b| a.display.cmp(&b.display));
    Some((start, pairs))
}

impl Hinter for Commands {
    type Hint = String;
}

impl Highlighter for Commands {}

impl Validator for Commands {}

impl Helper for Commands {}

/// Enter after a `\` at the end of the line: the line goes on below (as a
/// shell continues a line), and the `\` is taken out when the line is
/// sent ([`Continue::sent`]). (rustyline leaves the cursor before text a
/// command replaces, so the `\` stays on screen until then.)
#[derive(Clone, Default)]
struct Continue(Arc<AtomicBool>);

impl ConditionalEventHandler for Continue {
    fn handle(&self, _: &Event, _: RepeatCount, _: bool, ctx: &EventContext) -> Option<Cmd> {
        let line = ctx.line();
        let goes_on = ctx.pos() == line.len() && line.ends_with('\\');
        if goes_on {
            self.0.store(true, Ordering::SeqCst);
        }
        goes_on.then_some(Cmd::Newline)
    }
}

impl Continue {
    /// The line as sent: each `\` that continued it taken out.
    fn sent(&self, line: String) -> String {
        if self.0.swap(false, Ordering::SeqCst) {
            line.replace("\\\n", "\n")
        } else {
            line
        }
    }
}

/// The keys that put a newline in the line instead of sending it.
fn bind_newlines(editor: &mut LineEditor, enter: &Continue) {
    for key in [
        KeyEvent(KeyCode::Char('J'), Modifiers::CTRL),
        KeyEvent(KeyCode::Enter, Modifiers::ALT),
        KeyEvent(KeyCode::Enter, Modifiers::SHIFT),
    ] {
        editor.bind_sequence(key, EventHandler::Simple(Cmd::Newline));
    }
    editor.bind_sequence(
        KeyEvent(KeyCode::Enter, Modifiers::NONE),
        EventHandler::Conditional(Box::new(enter.clone())),
    );
}

/// How the REPL of one session ended.
pub(crate) enum Next {
    /// `/quit`, Ctrl-D: the run ends.
    Quit,
    /// `/clear` (`None`) or `/resume` (the session file): this session
    /// ends and the REPL goes on with another.
    Switch(Option<std::path::PathBuf>),
}

pub(crate) fn run(live: &mut Live, first: Option<&str>, banner: &str) -> Result<Next, Error> {
    // As a shell completes: the common prefix, then the list on a second Tab.
    let config = rustyline::Config::builder()
        .completion_type(rustyline::CompletionType::List)
        .build();
    let mut editor =
        LineEditor::with_config(config).map_err(Error::terminal("cannot start the line editor"))?;
    editor.set_helper(Some(Commands::default()));
    let enter = Continue::default();
    bind_newlines(&mut editor, &enter);
    live.front_mut().sink.allow_spinner();
    let history = live.history_path();
    editor.load_history(&history).ok();
    eprint!("{banner}");
    // What was typed during a turn: whole lines, then the start of one.
    let mut ahead = Ahead::default();
    if let Some(first) = first {
        if respond(live, first, &mut editor, &mut ahead)? == Outcome::Quit {
            return Ok(Next::Quit);
        }
    }
    let mut next = Next::Quit;
    let watcher = Watcher::start(live);
    loop {
        // Messages delivered during the last turn are answered now.
        if live.inbox().is_some_and(|i| i.has_mail()) {
            respond_to_inbox(live, &mut editor, &mut ahead)?;
        }
        let width = editor
            .dimensions()
            .map_or(80, |(columns, _)| usize::from(columns));
        // Cut, not wrapped: one row whatever the width.
        eprintln!(
            "{}",
            dim(&crate::render::cut(&view::status(live.state()), width))
        );
        if let Some(row) = live.goal_row(width) {
            eprintln!("{}", dim(&row));
        }
        if let Some(commands) = editor.helper_mut() {
            commands.skills = live.skills();
            // Claude Code's commands complete as skills do; one named
            // like a builtin is said once and left out.
            for c in live.user_commands() {
                if let Some(line) = slash::shadowed(&c) {
                    if !commands.said.contains(&c.path) {
                        eprintln!("{line}");
                        commands.said.push(c.path.clone());
                    }
                } else if !commands.skills.iter().any(|s| s.name == c.name) {
                    commands.skills.push(revolve_core::skills::Skill {
                        name: c.name,
                        description: c.description,
                        dir: c.path,
                    });
                }
            }
            if commands.models.is_empty() {
                commands.models = live.models().iter().map(|(n, _)| n.to_owned()).collect();
            }
            commands.sessions = Some((live.store().clone(), live.state().name().clone()));
        }
        let typed_ahead = !ahead.lines.is_empty();
        let read = match ahead.lines.pop_front() {
            Some(line) => {
                eprintln!("› {line}");
                Ok(line)
            }
            None => {
                let start = std::mem::take(&mut ahead.rest);
                watcher.idle(true);
                let read = editor.readline_with_initial("› ", (&start, ""));
                watcher.idle(false);
                read.map(|line| enter.sent(line))
            }
        };
        match read {
            Ok(line) => {
                if !line.trim().is_empty() {
                    editor.add_history_entry(line.as_str()).ok();
                }
                match crate::switch::asked(live, &line) {
                    crate::switch::Asked::Not => {}
                    crate::switch::Asked::Stay => continue,
                    crate::switch::Asked::Switch(to) => {
                        next = Next::Switch(to);
                        break;
                    }
                }
                if let Some(command) = line.strip_prefix('!').map(str::trim) {
                    ran(live, command, typed_ahead, &mut editor, &mut ahead)?;
                    continue;
                }
                if respond(live, &line, &mut editor, &mut ahead)? == Outcome::Quit {
                    break;
                }
            }
            // The watcher woke the editor for a message (answered at the
            // top of the loop), or the user pressed Ctrl-C.
            Err(ReadlineError::Interrupted) => {
                watcher.woken();
                continue;
            }
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(Error::terminal("cannot read the terminal")(e)),
        }
    }
    if let Some(dir) = history.parent() {
        revolve_store::files::create_dir_all(dir).ok();
    }
    editor.save_history(&history).ok();
    Ok(next)
}

/// What was typed while a turn ran, for the prompts after it.
#[derive(Default)]
struct Ahead {
    /// Lines ended with Enter, answered in order.
    lines: VecDeque<String>,
    /// The start of the next line.
    rest: String,
}

impl Ahead {
    fn add(&mut self, typed: crate::keys::Typed) {
        self.lines.extend(typed.lines);
        self.rest.push_str(&typed.rest);
    }
}

/// One line in the REPL: a failed, interrupted or stopped turn is told and
/// the session goes on. While it runs, Esc interrupts it and other keys
/// are kept for later ([`crate::keys::TurnKeys`]).
fn respond(
    live: &mut Live,
    line: &str,
    editor: &mut LineEditor,
    ahead: &mut Ahead,
) -> Result<Outcome, Error> {
    let (line, images) = line::attached(live, line);
    let keys = crate::keys::TurnKeys::start();
    let outcome = line::handle(live, &line, images);
    ahead.add(keys.finish());
    told(live, outcome?, editor)
}

/// `!COMMAND`: the user's own shell command, run as the shell tool runs
/// one (Esc or Ctrl-C stops it); its output joins the conversation. One
/// typed while a turn ran is not run: it was typed blind, before the
/// turn's end could be seen.
fn ran(
    live: &mut Live,
    command: &str,
    typed_ahead: bool,
    editor: &mut LineEditor,
    ahead: &mut Ahead,
) -> Result<(), Error> {
    if typed_ahead {
        eprintln!("!{command}: not run: it was typed while a turn ran; type it again to run it");
        return Ok(());
    }
    if command.is_empty() {
        eprintln!("! needs a command, e.g. !git status");
        return Ok(());
    }
    let keys = crate::keys::TurnKeys::start();
    let outcome = live.ran(command);
    ahead.add(keys.finish());
    told(live, outcome?, editor)?;
    Ok(())
}

/// Tells how a turn ended. A turn stopped at its tool-round cap asks
/// whether to go on, as often as the user says yes.
fn told(live: &mut Live, mut outcome: Outcome, editor: &mut LineEditor) -> Result<Outcome, Error> {
    loop {
        match &outcome {
            // Server and tool text can be in it: inert on a terminal.
            Outcome::Failed(why) => {
                let line = format!("revolve: {}", view::inert(why));
                eprintln!("{}", crate::render::error(&line, crate::render::stderr()));
            }
            Outcome::Interrupted => eprintln!("interrupted; the turn is logged as such"),
            Outcome::Stopped(reason) => {
                eprintln!("revolve: {}", view::inert(&guard::describe(reason)));
                if let Some(question) = guard::go_on_question(reason) {
                    let yes = matches!(
                        editor.readline(&question).as_deref().map(str::trim),
                        Ok("y" | "Y" | "yes")
                    );
                    if yes {
                        outcome = live.go_on()?;
                        continue;
                    }
                }
            }
            Outcome::Done | Outcome::Quit => {}
        }
        return Ok(outcome);
    }
}

/// Messages from the inbox, shown and answered while the REPL is idle.
fn respond_to_inbox(
    live: &mut Live,
    editor: &mut LineEditor,
    ahead: &mut Ahead,
) -> Result<(), Error> {
    let keys = crate::keys::TurnKeys::start();
    let outcome = live.take_inbox();
    ahead.add(keys.finish());
    told(live, outcome?, editor)?;
    Ok(())
}

/// Watches the inbox while the REPL waits for a line, and wakes the line
/// editor when a message arrives (as Ctrl-C would; the editor returns
/// `Interrupted` and the loop answers the message). Only where the editor
/// catches SIGINT: stdin and stdout are terminals and the terminal is one
/// rustyline supports.
struct Watcher {
    shared: Option<Arc<Shared>>,
}

struct Shared {
    /// Whether the REPL waits in the line editor; the watcher wakes it only
    /// then, holding this lock, so a turn is never interrupted.
    idle: Mutex<bool>,
    woken: AtomicBool,
}

/// How often the watcher looks at the inbox.
const WATCH_EVERY: Duration = Duration::from_millis(200); // not policy: a poll interval

impl Watcher {
    fn start(live: &Live) -> Watcher {
        let editor_catches_sigint = std::io::stdin().is_terminal()
            && std::io::stdout().is_terminal()
            && !matches!(
                std::env::var("TERM").as_deref(),
                Ok("dumb" | "cons25" | "emacs")
            );
        let Some(inbox) = live.inbox().cloned().filter(|_| editor_catches_sigint) else {
            return Watcher { shared: None };
        };
        // The SIGINT goes to this thread, the one in read(2). (rustyline's
        // external printer would let any thread's signal wake it, but then
        // a pasted line waits in its buffer for the next key.)
        let waker = revolve_io::interrupt::Waker::this_thread();
        let shared = Arc::new(Shared {
            idle: Mutex::new(false),
            woken: AtomicBool::new(false),
        });
        let watched = Arc::clone(&shared);
        std::thread::spawn(move || loop {
            std::thread::sleep(WATCH_EVERY);
            let idle = watched.idle.lock().unwrap_or_else(|e| e.into_inner());
            if *idle && !watched.woken.load(Ordering::SeqCst) && inbox.has_mail() {
                watched.woken.store(true, Ordering::SeqCst);
                waker.wake();
            }
            drop(idle);
        });
        Watcher {
            shared: Some(shared),
        }
    }

    fn idle(&self, idle: bool) {
        if let Some(shared) = &self.shared {
            *shared.idle.lock().unwrap_or_else(|e| e.into_inner()) = idle;
        }
    }

    /// The editor returned `Interrupted`: a wake-up is used up.
    fn woken(&self) {
        if let Some(shared) = &self.shared {
            shared.woken.store(false, Ordering::SeqCst);
        }
    }
}

/// Dimmed when stderr gets colour (see [`crate::render`]).
fn dim(text: &str) -> String {
    crate::render::dim(text, crate::render::stderr())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(name: &str) -> revolve_core::skills::Skill {
        revolve_core::skills::Skill {
            name: name.into(),
            description: format!("the {name} skill"),
            dir: format!("/skills/{name}"),
        }
    }

    /// What Tab offers at the end of `line`: where the replacement starts
    /// and each candidate's replacement.
    fn tab(commands: &Commands, line: &str) -> (usize, Vec<String>) {
        let history = DefaultHistory::new();
        let (start, pairs) = commands
            .complete(line, line.len(), &rustyline::Context::new(&history))
            .unwrap();
        (start, pairs.into_iter().map(|p| p.replacement).collect())
    }

    #[test]
    fn tab_completes_commands_then_their_words_and_names() {
        let commands = Commands {
            skills: vec![skill("review"), skill("release")],
            models: vec!["gpt-5.4-mini".to_owned(), "claude-sonnet-5".to_owned()],
            sessions: None,
            said: Vec::new(),
        };
        assert_eq!(
            tab(&commands, "/rel"),
            (0, vec!["/release ".to_owned()]),
            "a skill is a command"
        );
        assert_eq!(tab(&commands, "/goal pa"), (6, vec!["pause ".to_owned()]));
        assert_eq!(
            tab(&commands, "/help re"),
            (
                6,
                vec![
                    "refine ".to_owned(),
                    "release ".to_owned(),
                    "resume ".to_owned(),
                    "review ".to_owned(),
                    "rewind ".to_owned()
                ]
            ),
            "skills and builtins by name"
        );
        // No store to look in: no session to offer.
        assert_eq!(tab(&commands, "/send b"), (6, vec![]));
        assert_eq!(
            tab(&commands, "/model claude"),
            (7, vec!["claude-sonnet-5 ".to_owned()]),
            "the known models by name"
        );
        assert_eq!(tab(&commands, "/effort h"), (8, vec!["high ".to_owned()]));
        assert_eq!(tab(&commands, "plain words"), (0, vec![]));
    }
}
