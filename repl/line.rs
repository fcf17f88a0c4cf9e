//! One line the user sent: a slash command, told on stderr, or a turn.

use revolve_core::edit::{turns, Scope};
use revolve_io::live::Outcome;
use revolve_view as view;
use revolve_view::slash::{self, RefineCommand, RewindCommand, Slash};

use crate::commands;
use crate::console::Live;
use crate::error::Error;
use crate::messages;

/// Handles one line: a slash command or a user turn, with the pictures
/// the line attached (`@path`, `--image`), which go out with a turn. A
/// command that fails is told on stderr and the session goes on; only the
/// session's own failures (its log, a signal) are errors.
pub(crate) fn handle(
    live: &mut Live,
    text: &str,
    images: Vec<revolve_core::record::Image>,
) -> Result<Outcome, Error> {
    match slash::parse(text) {
        None => live.turn_with(text, images),
        Some(command) => command_line(live, command),
    }
}

/// A slash command, by what it does: those that change the session
/// return how they ended; those that tell something say it on stderr (a
/// failure too) and are done.
fn command_line(live: &mut Live, command: Slash) -> Result<Outcome, Error> {
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
        Slash::Model(model) => return switch_model(live, &model),
        Slash::Effort(arg) => return effort(live, &arg),
        Slash::MaxCost(text) => return max_cost(live, &text),
        Slash::Refine(RefineCommand::Run) => return live.refine(false),
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
        Slash::Rewind(how) => rewind(live, how)?,
        Slash::Shells(None) => eprint!("{}", shells_text(&live.shells())),
        Slash::Shells(Some(id)) => match live.kill_shell(&id)? {
            Some(how) => eprintln!("{id}: {how}"),
            None => eprintln!("/shells: there is no background command {id} (/shells lists them)"),
        },
        Slash::Status => eprint!("{}", status(live)),
        Slash::Cost => eprint!(
            "{}",
            view::cost(live.state(), live.prices(), live.max_cost())
        ),
        Slash::Help => {
            eprintln!("{}", slash::HELP);
            eprint!("{}", slash::help_commands(&live.skills()));
            eprint!("{}", slash::help_user_commands(&live.user_commands()));
        }
        Slash::HelpOn(name) => eprint!("{}", slash::help_on(&name, &live.skills())),
        Slash::Send { to, text } => send(live, &to, &text),
        Slash::Export(args) => export(live, &args),
        Slash::Incomplete(why) => eprintln!("{why}"),
        Slash::Clear | Slash::Resume(_) | Slash::Diff | Slash::Mcp | Slash::Init => {
            habits(live, &command);
        }
        Slash::Other { word, arg } => return users_command(live, &word, &arg),
    }
    Ok(Outcome::Done)
}

/// `/rewind` (the turns it can reach, or a rewind of N turns or an undo);
/// a refusal is said and the session goes on.
fn rewind(live: &mut Live, how: RewindCommand) -> Result<(), Error> {
    let (turns, undo) = match how {
        RewindCommand::List => {
            eprint!("{}", view::rewind_list(&turns(live.state()), true));
            return Ok(());
        }
        RewindCommand::Turns(n) => (n, false),
        _ => (0, true),
    };
    if let Err(why) = live.rewind(turns, Scope::Both, undo, false)? {
        eprintln!("{why}");
    }
    Ok(())
}

/// `/model [NAME]`: the model and its window told, or another asked.
fn switch_model(live: &mut Live, model: &str) -> Result<Outcome, Error> {
    if !model.is_empty() {
        return live.switch_model(model);
    }
    let state = live.state();
    eprintln!(
        "model {} · window {} tokens (/model NAME asks another)",
        state.model(),
        state.window()
    );
    Ok(Outcome::Done)
}

/// `/effort [low|medium|high|default]`: the effort told, or set.
fn effort(live: &mut Live, arg: &str) -> Result<Outcome, Error> {
    match arg {
        "" => eprintln!(
            "effort: {}",
            live.state()
                .effort()
                .map_or("the model's default", |e| e.as_str())
        ),
        "default" => return live.set_effort(None),
        text => match revolve_core::models::Effort::parse(text) {
            Ok(effort) => return live.set_effort(Some(effort)),
            Err(e) => eprintln!("/{e}"),
        },
    }
    Ok(Outcome::Done)
}

/// `/max-cost USD|off`: the session's budget set, or the word refused.
fn max_cost(live: &mut Live, text: &str) -> Result<Outcome, Error> {
    let max = match text {
        "off" | "none" => Ok(None),
        text => revolve_core::models::parse_dollars(text).map(Some),
    };
    match max {
        Ok(max) => live.set_max_cost(max),
        Err(e) => {
            eprintln!("/max-cost: {e}, or off");
            Ok(Outcome::Done)
        }
    }
}

/// `/NAME ARGS` of no builtin command: a skill of that name is a command
/// of the user's own (its body, with the arguments filled in, is the
/// user's message); then a Claude Code command (`.claude/commands/`).
fn users_command(live: &mut Live, word: &str, arg: &str) -> Result<Outcome, Error> {
    match live.skill_message(word, arg) {
        Some(Ok(message)) => live.turn(&message),
        Some(Err(e)) => {
            eprintln!("revolve: /{word}: {e}");
            Ok(Outcome::Done)
        }
        None => own_command(live, word, arg),
    }
}

/// `/send NAME TEXT`: a message queued for another running session.
fn send(live: &mut Live, to: &str, text: &str) {
    let own = live.state().name().as_deref();
    if Some(to) == own {
        eprintln!("/send {to}: that is this session; /send is for another one");
        return;
    }
    let from = own.unwrap_or("send");
    match messages::running(live.store(), to)
        .and_then(|_| messages::queue(live.store(), to, from, text))
    {
        Ok(said) => eprintln!("{said}"),
        Err(e) => eprintln!("revolve: /send: {e}"),
    }
}

/// `/export …`: the session written out, titled by its name (else its id).
fn export(live: &mut Live, args: &str) {
    let title = live
        .state()
        .name()
        .clone()
        .unwrap_or_else(|| live.state().id().to_owned());
    match crate::export::slash(live.store(), live.path(), &title, args) {
        Ok(said) => eprintln!("{said}"),
        Err(e) => eprintln!("{e}"),
    }
}

/// `/diff`, `/mcp`, `/init`, and `/clear` or `/resume` where the REPL
/// did not take them (piped lines).
fn habits(live: &mut Live, command: &Slash) {
    match command {
        Slash::Diff => match crate::diffs::session(live) {
            Ok(text) => eprint!("{}", crate::render::diff(&text, crate::render::stderr())),
            Err(e) => eprintln!("revolve: /diff: {e}"),
        },
        Slash::Mcp => eprint!("{}", crate::mcp::slash(live)),
        Slash::Init => crate::init::slash(live),
        // The REPL takes these before a line gets here (crate::switch).
        _ => eprintln!(
            "/clear and /resume switch sessions in the REPL; here, run revolve again (revolve -r NAME resumes one)"
        ),
    }
}

/// `/NAME ARGS` of a Claude Code command (`.claude/commands/NAME.md`):
/// its message is the user's turn; no such command is said.
fn own_command(live: &mut Live, word: &str, arg: &str) -> Result<Outcome, Error> {
    match revolve_core::commands::find(&live.user_commands(), word) {
        Some(c) => live.turn(&revolve_core::commands::message(&c.body, arg)),
        None => {
            eprintln!("unknown command /{word}; /help lists them");
            Ok(Outcome::Done)
        }
    }
}

/// `/status`: the status row, then the model and where its window came
/// from, the session file, and the files the prompt carries.
fn status(live: &mut Live) -> String {
    let (memory, instructions) = live.prompt_files();
    let state = live.state();
    let source = &live.front().window_source;
    let source = if source.is_empty() {
        String::new()
    } else {
        format!(" (from {source})")
    };
    let memory = if memory.is_empty() {
        "memory: none".to_owned()
    } else {
        format!("memory: {}", memory.join(", "))
    };
    let provider = if state.provider().is_empty() {
        "(not recorded)"
    } else {
        state.provider().as_str()
    };
    let mut out = format!(
        "{}\nmodel {} · provider {provider} · window {} tokens{source}\nsession file {}\n{memory}\n{}\n",
        view::status(state),
        state.model(),
        state.window(),
        live.path().display(),
        view::instructions(&instructions),
    );
    if let Some(plan) = view::plan(state.plan()) {
        out.push_str(&plan);
        out.push('\n');
    }
    out
}

/// The REPL's line with the files its `@path` words name attached (see
/// [`revolve_view::attach`]), and the pictures among them as image parts;
/// a mention that cannot be read is said on stderr and left as text (a
/// picture that cannot be read: `image PATH: why, left out`, and the turn
/// goes on without it). A slash command is left as it is. (Only in the
/// REPL: a piped log's `@param` is text.)
pub(crate) fn attached(live: &Live, text: &str) -> (String, Vec<revolve_core::record::Image>) {
    if slash::parse(text).is_some() {
        return (text.to_owned(), Vec::new());
    }
    let mut files = Vec::new();
    let mut images = Vec::new();
    for path in revolve_view::attach::mentions(text) {
        match live.attachment(&path) {
            Ok(revolve_io::live::Attachment::Text(content)) => {
                eprintln!("attached {path}");
                files.push((path, content));
            }
            Ok(revolve_io::live::Attachment::Image(image)) => {
                eprintln!(
                    "attached {path} ({}, {}×{})",
                    image.media_type, image.width, image.height
                );
                images.push(image);
            }
            Err(why) if why.starts_with("error: image ") => {
                eprintln!("revolve: {}", view::inert(&why["error: ".len()..]));
            }
            Err(why) => eprintln!("not attached: @{path}: {}", view::inert(&why)),
        }
    }
    (revolve_view::attach::message(text, &files), images)
}

/// `/shells`: a line per background command (id, state, bytes written,
/// command), or that there are none.
fn shells_text(shells: &[revolve_tools::background::Listed]) -> String {
    if shells.is_empty() {
        return "no background shell commands (the model starts one with shell and background: true)\n".into();
    }
    let mut out = String::new();
    for s in shells {
        out.push_str(&format!(
            "{:5} {:28} {:>9} bytes  {}\n",
            s.id,
            s.ended.as_deref().unwrap_or("running"),
            s.bytes,
            revolve_core::text::one_line(&s.command, 80)
        ));
    }
    out.push_str("/shells kill ID kills one\n");
    out
}
