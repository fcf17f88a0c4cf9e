//! The REPL's slash commands, parsed. A line starting with `/` is a command
//! in every input mode, so `printf '/name db\nhello\n' | revolve` works.

/// A parsed slash command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Slash {
    /// `/name NEW`: rename this session.
    Name(String),
    /// `/status`: show the status line.
    Status,
    /// `/cost`: the session's tokens and what they cost.
    Cost,
    /// `/max-cost USD` or `/max-cost off`: the session's cost limit from
    /// now on.
    MaxCost(String),
    /// `/model NAME`: ask another model from the next request on; empty
    /// (a bare `/model`): show the one in use.
    Model(String),
    /// `/effort [low|medium|high|default]`: the reasoning effort (shown
    /// without an argument).
    Effort(String),
    /// `/refine`, `/refine history [--diff]`, `/refine undo`.
    Refine(RefineCommand),
    /// `/goal [TEXT|done|pause|resume|clear]`: the standing goal.
    Goal(String),
    /// `/rewind [N]`, `/rewind undo`, `/rewind list`: take back the last N
    /// turns (files and conversation), the last rewind, or list the turns.
    Rewind(RewindCommand),
    /// `/compact`: summarize the history before the last three turns into
    /// working notes and go on in a fresh file.
    Compact,
    /// `/plan`, `/plan off`: plan mode on or off.
    Plan(bool),
    /// `/shells`: list the background shell commands; `/shells kill ID`
    /// kills one (the id).
    Shells(Option<String>),
    /// `/help`: list the commands.
    Help,
    /// `/help NAME`: what one command (builtin or skill) does.
    HelpOn(String),
    /// `/send NAME TEXT`: queue a message for another running session of
    /// this directory, as `revolve send` does.
    Send {
        /// The session's name or id.
        to: String,
        /// The message.
        text: String,
    },
    /// `/export [md|html|json] [FILE]`: write this session out (the
    /// words as typed; the shell reads them).
    Export(String),
    /// `/quit` or `/exit`: end the session.
    Quit,
    /// `/clear`: end this session (it stays resumable) and start a new
    /// one in the same REPL.
    Clear,
    /// `/resume [NAME]`: switch to another session of this directory; a
    /// bare `/resume` picks one from a list.
    Resume(String),
    /// `/init`: write an AGENTS.md summarizing the repository.
    Init,
    /// `/diff`: the changes this session's edits made, as one unified diff.
    Diff,
    /// `/mcp`: the configured MCP servers and their state.
    Mcp,
    /// Anything else starting with `/`: a command of the user's own (a
    /// skill's name) or unknown; the command word and the rest of the line.
    Other {
        /// The command word, without its `/`.
        word: String,
        /// The rest of the line.
        arg: String,
    },
    /// A command missing its argument; the text says what is missing.
    Incomplete(&'static str),
}

/// The `/refine` commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefineCommand {
    /// Rewrite the memory files from this session.
    Run,
    /// The log of memory changes, newest first.
    History {
        /// Whether each change shows its diff (`/refine history diff`).
        diff: bool,
    },
    /// Restore the newest change still standing.
    Undo,
}

/// The `/rewind` commands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RewindCommand {
    /// Take back the last N turns.
    Turns(usize),
    /// Take back the last rewind.
    Undo,
    /// The turns a rewind reaches, with the files each changed.
    List,
}

/// What `/help` prints.
pub const HELP: &str = "\
/name NAME   name this session (named sessions are listed by `revolve sessions`)
/status      show the session, turns, tokens and context reading
/cost        show the tokens sent and received and what they cost, where prices are known
/max-cost USD  raise (or set) this session's cost limit; /max-cost off lifts it
/model [NAME]  show the model, or ask another from the next request on (with its window from the model table)
/effort LEVEL  low, medium, high or default: how hard a reasoning model thinks
/compact     summarize all but the last three turns into notes; go on in a fresh file
/refine      rewrite the memory files from this session (every rewrite can be undone)
/refine history [--diff]   the memory changes, newest first; /refine undo takes one back
/rewind [N]  take back the last N turns (default 1): their file edits and the conversation
/rewind list the turns with the files each changed; /rewind undo takes the last rewind back
/goal TEXT   set the standing goal (kept in the prompt of every turn until /goal done)
/goal        show it with its progress notes; /goal pause|resume|done|clear
/plan        plan first: edits refused, commands read-only; /plan off ends it
/shells      list the background shell commands; /shells kill ID kills one
/send NAME TEXT   queue a message for another running session of this directory
/export [md|html|json] [FILE]   write this session out (default: NAME.md here); html is one page with a chart
/diff        show the changes this session's edits made, as one unified diff
/mcp         list the MCP servers: approved or not, running, their tools, the last error
/clear       end this session (it stays resumable) and start a new one here
/resume [NAME]   switch to another session of this directory (a bare /resume picks from a list)
/init        write an AGENTS.md for this repository (languages, build and test commands, layout)
/help        show this list; /help NAME shows one command (builtin or skill)
/quit, /exit end the session (Ctrl-D does the same)
!COMMAND     run a shell command yourself (sandboxed as the shell tool is); it and its output join the conversation
@path        attach a file of the working tree to the message (Tab completes it)
\\ then Enter, Ctrl-J or Alt+Enter: a new line in the message; Enter sends it
Esc or Ctrl-C cancels the turn in flight; what streamed so far is kept.
An approval takes one key: y yes, a always this session, n (or Esc, Ctrl-C) no.";

/// The builtin commands' words: a skill of the same name is no command
/// (the builtin wins), though the model may still read it.
pub const BUILTIN: [&str; 24] = [
    "name", "status", "cost", "max-cost", "model", "effort", "compact", "goal", "refine", "rewind",
    "plan", "shells", "send", "export", "help", "?", "quit", "exit", "q", "clear", "resume",
    "init", "diff", "mcp",
];

/// What Tab completes at `pos` in `line`: while the line is one word
/// starting with `/`, the commands (builtin, but for the one-letter
/// aliases, and the skills that are commands) that start with it, each
/// once, sorted; the word starts at 0.
/// Anything else completes to nothing.
pub fn complete(line: &str, pos: usize, skills: &[revolve_core::skills::Skill]) -> Vec<String> {
    let Some(word) = line.get(..pos).filter(|w| w.starts_with('/')) else {
        return Vec::new();
    };
    if word.contains(char::is_whitespace) {
        return Vec::new();
    }
    let mut out: Vec<String> = BUILTIN
        .iter()
        .filter(|name| name.len() > 1)
        .map(|name| format!("/{name}"))
        .chain(
            skills
                .iter()
                .filter(|s| !BUILTIN.contains(&s.name.as_str()))
                .map(|s| format!("/{}", s.name)),
        )
        .filter(|c| c.starts_with(word))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The names Tab can offer in a command's argument, gathered by the shell
/// (core reads no directory).
#[derive(Clone, Copy, Debug, Default)]
pub struct Names<'a> {
    /// The other running sessions of this directory, by name (the
    /// addresses `/send` takes).
    pub sessions: &'a [String],
    /// The session's skills (`/help` takes their names).
    pub skills: &'a [revolve_core::skills::Skill],
    /// The known models' names (`/model` takes them).
    pub models: &'a [String],
}

/// What a builtin command's first argument is, for Tab.
enum Takes {
    /// One of these words.
    Words(&'static [&'static str]),
    /// The name of another running session.
    Session,
    /// The name of a known model.
    Model,
    /// An effort level, or `default`.
    Effort,
    /// The name of a command: a builtin (but for the one-letter aliases)
    /// or a skill.
    Command,
}

/// The builtin commands whose first argument Tab completes.
const ARGUMENTS: [(&str, Takes); 9] = [
    ("export", Takes::Words(&["md", "html", "json"])),
    ("goal", Takes::Words(&["pause", "resume", "done", "clear"])),
    ("refine", Takes::Words(&["history", "undo"])),
    ("rewind", Takes::Words(&["list", "undo"])),
    ("plan", Takes::Words(&["off"])),
    ("send", Takes::Session),
    ("help", Takes::Command),
    ("model", Takes::Model),
    ("effort", Takes::Effort),
];

/// What Tab completes in a command's argument at `pos`: where the word
/// being typed starts, and the words or names the builtin command takes
/// that start with it (`/goal pa` → `pause`, `/send bi` → `birch`, `/help
/// rev` → `review`), each once, sorted. Nothing past the first argument,
/// nor outside a builtin command.
pub fn complete_argument(line: &str, pos: usize, names: Names<'_>) -> Option<(usize, Vec<String>)> {
    let before = line.get(..pos)?.strip_prefix('/')?;
    let (command, arg) = before.split_once(' ')?;
    if arg.contains(char::is_whitespace) {
        return None;
    }
    let start = pos - arg.len();
    let (_, takes) = ARGUMENTS.iter().find(|(c, _)| *c == command)?;
    let offered: Vec<String> = match takes {
        Takes::Words(words) => words.iter().map(|w| (*w).to_owned()).collect(),
        Takes::Session => names.sessions.to_vec(),
        Takes::Model => names.models.to_vec(),
        Takes::Effort => revolve_core::models::Effort::ALL
            .iter()
            .map(|e| e.as_str().to_owned())
            .chain(["default".to_owned()])
            .collect(),
        Takes::Command => complete("/", 1, names.skills)
            .into_iter()
            .map(|c| c.trim_start_matches('/').to_owned())
            .collect(),
    };
    let mut out: Vec<String> = offered.into_iter().filter(|w| w.starts_with(arg)).collect();
    out.sort();
    out.dedup();
    Some((start, out))
}

/// What `/help NAME` prints: the [`HELP`] lines of a builtin command, a
/// skill's name and description, or that there is no such command.
pub fn help_on(name: &str, skills: &[revolve_core::skills::Skill]) -> String {
    let name = name.trim_start_matches('/');
    if BUILTIN.contains(&name) {
        let word = format!("/{name}");
        let lines: Vec<&str> = HELP
            .lines()
            .filter(|l| l.split_whitespace().any(|w| w == word))
            .collect();
        if !lines.is_empty() {
            return format!("{}\n", lines.join("\n"));
        }
        return format!("/{name} is a builtin command; /help lists them all\n");
    }
    match skills.iter().find(|s| s.name == name) {
        Some(skill) => format!(
            "/{name}   {} (a skill: {}/SKILL.md; /{name} ARGS sends it with ARGS)\n",
            skill.description, skill.dir
        ),
        None => format!("unknown command /{name}; /help lists them\n"),
    }
}

/// The `/help` lines for the commands of the user's own (skills by name
/// and description), after [`HELP`]; a skill named like a builtin command
/// is said to be no command.
pub fn help_commands(skills: &[revolve_core::skills::Skill]) -> String {
    if skills.is_empty() {
        return String::new();
    }
    let mut out =
        String::from("Commands of your own (skills; /NAME ARGS sends the skill with ARGS):\n");
    for skill in skills {
        if BUILTIN.contains(&skill.name.as_str()) {
            out.push_str(&format!(
                "/{:<11} (not a command: /{} is builtin; the model may still use the skill)\n",
                skill.name, skill.name
            ));
        } else {
            out.push_str(&format!("/{:<11} {}\n", skill.name, skill.description));
        }
    }
    out
}

/// The `/help` lines for Claude Code's custom commands
/// (`.claude/commands/`), after the skills; one named like a builtin
/// command is said to be no command.
pub fn help_user_commands(commands: &[revolve_core::commands::UserCommand]) -> String {
    if commands.is_empty() {
        return String::new();
    }
    let mut out =
        String::from("Custom commands (.claude/commands/; /NAME ARGS sends the file with ARGS):\n");
    for c in commands {
        if BUILTIN.contains(&c.name.as_str()) {
            out.push_str(&format!(
                "/{:<11} (not a command: /{} is builtin; {})\n",
                c.name, c.name, c.path
            ));
            continue;
        }
        let hint = c
            .argument_hint
            .as_deref()
            .map(|h| format!(" {h}"))
            .unwrap_or_default();
        out.push_str(&format!("/{}{hint}  {}\n", c.name, c.description));
    }
    out
}

/// The line said once a run for each custom command named like a builtin
/// one: the builtin wins.
pub fn shadowed(command: &revolve_core::commands::UserCommand) -> Option<String> {
    BUILTIN.contains(&command.name.as_str()).then(|| {
        format!(
            "/{} of {} is not offered: /{} is a builtin command (rename the file to use it)",
            command.name, command.path, command.name
        )
    })
}

/// Parses a line; `None` when it is not a command (does not start with `/`).
pub fn parse(line: &str) -> Option<Slash> {
    let rest = line.trim().strip_prefix('/')?;
    let (word, arg) = match rest.split_once(char::is_whitespace) {
        Some((w, a)) => (w, a.trim()),
        None => (rest, ""),
    };
    Some(match word {
        "name" if arg.is_empty() => Slash::Incomplete("/name needs a name, e.g. /name login-bug"),
        "name" => Slash::Name(arg.to_owned()),
        "status" => Slash::Status,
        "cost" => Slash::Cost,
        "max-cost" if arg.is_empty() => {
            Slash::Incomplete("/max-cost takes an amount of US dollars (e.g. /max-cost 5) or off")
        }
        "max-cost" => Slash::MaxCost(arg.to_owned()),
        // A bare `/model` shows the one in use (an empty name).
        "model" => Slash::Model(arg.to_owned()),
        "effort" => Slash::Effort(arg.to_owned()),
        "compact" => Slash::Compact,
        "goal" => Slash::Goal(arg.to_owned()),
        "refine" => match arg {
            "" => Slash::Refine(RefineCommand::Run),
            "history" => Slash::Refine(RefineCommand::History { diff: false }),
            "history --diff" => Slash::Refine(RefineCommand::History { diff: true }),
            "undo" => Slash::Refine(RefineCommand::Undo),
            _ => Slash::Incomplete("/refine takes nothing, history [--diff] or undo"),
        },
        "rewind" => match arg {
            "" => Slash::Rewind(RewindCommand::Turns(1)),
            "undo" => Slash::Rewind(RewindCommand::Undo),
            "list" => Slash::Rewind(RewindCommand::List),
            n => match n.parse::<usize>() {
                Ok(n) if n >= 1 => Slash::Rewind(RewindCommand::Turns(n)),
                _ => Slash::Incomplete("/rewind takes a number of turns (1 or more), undo or list"),
            },
        },
        "plan" => match arg {
            "" | "on" => Slash::Plan(true),
            "off" => Slash::Plan(false),
            _ => Slash::Incomplete("/plan takes nothing (to start planning) or off"),
        },
        "shells" => match arg.split_once(char::is_whitespace) {
            None if arg.is_empty() => Slash::Shells(None),
            Some(("kill", id)) if !id.trim().is_empty() => {
                Slash::Shells(Some(id.trim().to_owned()))
            }
            _ => Slash::Incomplete("/shells takes nothing (to list them) or kill ID"),
        },
        "send" => match arg.split_once(char::is_whitespace) {
            Some((to, text)) if !text.trim().is_empty() => Slash::Send {
                to: to.to_owned(),
                text: text.trim().to_owned(),
            },
            _ => Slash::Incomplete(
                "/send needs a session and a message, e.g. /send birch the tests pass now",
            ),
        },
        "export" => Slash::Export(arg.to_owned()),
        "help" | "?" if arg.is_empty() => Slash::Help,
        "help" | "?" => Slash::HelpOn(arg.to_owned()),
        "quit" | "exit" | "q" => Slash::Quit,
        "clear" if arg.is_empty() => Slash::Clear,
        "clear" => Slash::Incomplete("/clear takes nothing: it starts a new session"),
        "resume" => Slash::Resume(arg.to_owned()),
        "init" if arg.is_empty() => Slash::Init,
        "init" => Slash::Incomplete("/init takes nothing: it writes AGENTS.md here"),
        "diff" if arg.is_empty() => Slash::Diff,
        "diff" => Slash::Incomplete("/diff takes nothing: it shows this session's changes"),
        "mcp" if arg.is_empty() => Slash::Mcp,
        "mcp" => Slash::Incomplete("/mcp takes nothing: it lists the MCP servers"),
        other => Slash::Other {
            word: other.to_owned(),
            arg: arg.to_owned(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses() {
        assert_eq!(parse("hello"), None);
        assert_eq!(parse(" /name  db "), Some(Slash::Name("db".into())));
        assert!(matches!(parse("/name"), Some(Slash::Incomplete(_))));
        assert_eq!(parse("/quit"), Some(Slash::Quit));
        assert_eq!(
            parse("/frob x  y "),
            Some(Slash::Other {
                word: "frob".into(),
                arg: "x  y".into()
            })
        );
        let skill = |name: &str| revolve_core::skills::Skill {
            name: name.into(),
            description: String::new(),
            dir: String::new(),
        };
        let skills = [skill("review"), skill("release"), skill("status")];
        assert_eq!(
            complete("/re", 3, &skills),
            ["/refine", "/release", "/resume", "/review", "/rewind"]
        );
        assert_eq!(complete("/st", 3, &skills), ["/status"], "a builtin once");
        assert_eq!(
            complete("/q", 2, &skills),
            ["/quit"],
            "aliases are not offered"
        );
        assert!(
            complete("/review x", 9, &skills).is_empty(),
            "only the first word"
        );
        assert!(complete("review", 6, &skills).is_empty(), "not a command");
        assert_eq!(
            complete("/", 1, &[]).len(),
            22,
            "every builtin but the aliases ? and q (/send since issue 32, /cost, /model and /effort since issue 29, /max-cost since issue 47, /shells since issue 43, /export since issue 44, /clear, /resume, /init, /diff and /mcp since issue 47)"
        );
        assert_eq!(parse("/shells"), Some(Slash::Shells(None)));
        assert_eq!(
            parse("/shells kill bg2"),
            Some(Slash::Shells(Some("bg2".into())))
        );
        assert!(matches!(parse("/shells frob"), Some(Slash::Incomplete(_))));
        for word in BUILTIN {
            assert!(
                !matches!(parse(&format!("/{word} x")), Some(Slash::Other { .. })),
                "{word}"
            );
        }
    }

    #[test]
    fn arguments_complete_to_the_words_a_command_takes() {
        let none = Names::default();
        assert_eq!(
            complete_argument("/goal p", 7, none),
            Some((6, vec!["pause".to_owned()]))
        );
        assert_eq!(
            complete_argument("/rewind ", 8, none),
            Some((8, vec!["list".to_owned(), "undo".to_owned()]))
        );
        assert_eq!(complete_argument("/goal ship it", 13, none), None);
        assert_eq!(complete_argument("/status x", 9, none), None);
        assert_eq!(complete_argument("hello /goal p", 13, none), None);
    }

    fn skill(name: &str, description: &str) -> revolve_core::skills::Skill {
        revolve_core::skills::Skill {
            name: name.into(),
            description: description.into(),
            dir: format!("/skills/{name}"),
        }
    }

    #[test]
    fn send_completes_the_running_sessions_by_name() {
        let sessions = ["birch".to_owned(), "cedar".to_owned(), "beech".to_owned()];
        let names = Names {
            sessions: &sessions,
            skills: &[],
            models: &[],
        };
        assert_eq!(
            complete_argument("/send b", 7, names),
            Some((6, vec!["beech".to_owned(), "birch".to_owned()]))
        );
        assert_eq!(
            complete_argument("/send ", 6, names),
            Some((
                6,
                vec!["beech".to_owned(), "birch".to_owned(), "cedar".to_owned()]
            ))
        );
        // The message is text: nothing past the name.
        assert_eq!(complete_argument("/send birch t", 13, names), None);
        // No other session running: nothing to offer.
        assert_eq!(
            complete_argument("/send b", 7, Names::default()),
            Some((6, vec![]))
        );
    }

    #[test]
    fn model_completes_known_models_and_effort_its_levels() {
        let models = [
            "gpt-5.4-mini".to_owned(),
            "gpt-5.6-terra".to_owned(),
            "claude-sonnet-5".to_owned(),
        ];
        let names = || Names {
            sessions: &[],
            skills: &[],
            models: &models,
        };
        assert_eq!(
            complete_argument("/model gpt-5", 12, names()),
            Some((
                7,
                vec!["gpt-5.4-mini".to_owned(), "gpt-5.6-terra".to_owned()]
            ))
        );
        assert_eq!(
            complete_argument("/effort ", 8, names()),
            Some((
                8,
                vec![
                    "default".to_owned(),
                    "high".to_owned(),
                    "low".to_owned(),
                    "medium".to_owned()
                ]
            ))
        );
    }

    #[test]
    fn help_completes_commands_and_skills_by_name() {
        let skills = [
            skill("review", "review a diff"),
            skill("status", "shadowed"),
        ];
        let names = Names {
            sessions: &[],
            skills: &skills,
            models: &[],
        };
        assert_eq!(
            complete_argument("/help re", 8, names),
            Some((
                6,
                vec![
                    "refine".to_owned(),
                    "resume".to_owned(),
                    "review".to_owned(),
                    "rewind".to_owned()
                ]
            ))
        );
        // A skill named like a builtin is offered once, aliases never.
        assert_eq!(
            complete_argument("/help st", 8, names),
            Some((6, vec!["status".to_owned()]))
        );
        assert_eq!(
            complete_argument("/help q", 7, names),
            Some((6, vec!["quit".to_owned()]))
        );
    }

    #[test]
    fn help_on_one_command() {
        let skills = [skill("review", "review a diff")];
        assert_eq!(
            help_on("rewind", &skills),
            "/rewind [N]  take back the last N turns (default 1): their file edits and the conversation\n\
             /rewind list the turns with the files each changed; /rewind undo takes the last rewind back\n"
        );
        assert_eq!(
            help_on("/review", &skills),
            "/review   review a diff (a skill: /skills/review/SKILL.md; /review ARGS sends it with ARGS)\n"
        );
        assert_eq!(
            help_on("frob", &skills),
            "unknown command /frob; /help lists them\n"
        );
        assert!(help_on("q", &skills).contains("/q is a builtin command"));
    }

    #[test]
    fn send_and_help_parse() {
        assert_eq!(
            parse("/send birch  the tests pass "),
            Some(Slash::Send {
                to: "birch".into(),
                text: "the tests pass".into()
            })
        );
        assert!(matches!(parse("/send birch"), Some(Slash::Incomplete(_))));
        assert!(matches!(parse("/send"), Some(Slash::Incomplete(_))));
        assert_eq!(parse("/help"), Some(Slash::Help));
        assert_eq!(parse("/help review"), Some(Slash::HelpOn("review".into())));
    }
}
