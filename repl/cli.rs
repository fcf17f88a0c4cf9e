//! The command line (ARCHITECTURE.md section 5).

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use revolve_core::config::{self, Preset, ProviderChoice, Source};

/// The top level's examples.
const EXAMPLES: &str = "\
Examples:
  revolve                                  the REPL, in a new session of this directory
  revolve -p 'explain this' < error.log    one answer on stdout, then exit
  revolve --continue                       go on with the latest session here
  revolve --provider ollama --model qwen2.5-coder
                                           a local model, no key
  revolve sessions                         this directory's named sessions
  revolve send amber 'the tests pass now'  a message to the running session amber

Settings: flag > environment > ~/.config/task-agent/config.json > default
(revolve config show). Exit codes: 0 success, 1 runtime error, 2 usage error,
3 --goal-run stopped without the goal met, 130 interrupted, 143 stopped by
SIGTERM or SIGHUP.";

/// A terminal agent whose state outlives the process.
#[derive(Debug, Parser)]
#[command(
    name = "revolve",
    version = env!("REVOLVE_VERSION"),
    about,
    args_conflicts_with_subcommands = true,
    after_help = EXAMPLES
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Sub>,

    /// The first message; with -p, the only one
    pub prompt: Option<String>,

    /// Answer PROMPT (or all of stdin as one prompt) without the REPL, then exit
    #[arg(short, long)]
    pub print: bool,

    /// Resume the latest session of this directory
    #[arg(short, long, conflicts_with = "resume")]
    pub r#continue: bool,

    /// Resume a session by name, id or path; without one, pick it from a list
    #[arg(short, long, value_name = "NAME|ID|PATH", num_args = 0..=1, default_missing_value = "")]
    pub resume: Option<String>,

    /// Name this session
    #[arg(short, long, value_name = "NAME")]
    pub name: Option<String>,

    #[command(flatten)]
    pub model: ModelArgs,

    /// Load no memory and seed nothing
    #[arg(long)]
    pub bare: bool,

    /// Never refine the memory on its own (after 25 turns or a compaction)
    #[arg(long, env = "REVOLVE_NO_AUTO_REFINE", value_parser = clap::builder::BoolishValueParser::new())]
    pub no_auto_refine: bool,

    /// Keep taking turns toward the standing goal until the model proposes it met (exit 3 when it stops otherwise)
    #[arg(long, conflicts_with = "prompt")]
    pub goal_run: bool,

    /// With --goal-run: stop after N turns
    #[arg(long, value_name = "N", default_value_t = revolve_core::policy::GOAL_RUN_TURNS, requires = "goal_run")]
    pub max_turns: u32,

    /// Start planning: edits and writes refused, commands read-only (/plan off ends it)
    #[arg(long)]
    pub plan: bool,

    /// How hard a reasoning model thinks: OpenAI's reasoning_effort, Anthropic's thinking budget (config "effort"; /effort changes it)
    #[arg(long, value_name = "LEVEL", env = "REVOLVE_EFFORT", value_parser = ["low", "medium", "high"])]
    pub effort: Option<String>,

    /// Whether a turn's first request must call a tool: auto (the model decides) or required (config "tool_choice"; kept in a new session's log)
    #[arg(long, value_name = "CHOICE", value_parser = ["auto", "required"])]
    pub tool_choice: Option<String>,

    /// Let the model run shell commands without asking (needed without a terminal; or allow_shell in config.json)
    #[arg(long)]
    pub allow_shell: bool,

    /// Let the model edit and write files without asking (needed without a terminal; or allow_edits in config.json)
    #[arg(long)]
    pub allow_edits: bool,

    /// Let the model call MCP server tools without asking (needed without a terminal; or allow_mcp in config.json)
    #[arg(long)]
    pub allow_mcp: bool,

    #[arg(long, value_name = "MODE", env = "REVOLVE_SANDBOX", value_parser = ["read-only", "workspace-write", "off"],
        help = defaulted("The sandbox shell commands run in: read-only, workspace-write or off", revolve_core::sandbox::Mode::default().as_str()))]
    pub sandbox: Option<String>,

    /// Let sandboxed shell commands use the network (or sandbox_network in config.json); --network=off: no network at all, web_fetch refused too
    #[arg(long, value_name = "on|off", num_args = 0..=1, require_equals = true,
        default_missing_value = "on", value_parser = ["on", "off"])]
    pub network: Option<String>,

    /// Run calls this permission rule takes without asking, e.g. 'shell(git status)', 'edit(src/**)' (or permissions.allow in config.json)
    #[arg(long, value_name = "RULE")]
    pub allow: Vec<String>,

    /// Never run calls this permission rule takes, e.g. 'shell(rm *)'; deny wins over allow (or permissions.deny in config.json)
    #[arg(long, value_name = "RULE")]
    pub deny: Vec<String>,

    /// Let sandboxed shell commands write DIR too, as the working tree (or sandbox_writable in config.json)
    #[arg(long, value_name = "DIR")]
    pub writable: Vec<PathBuf>,

    /// Do not ask before a compaction or refinement of more than four model requests (or confirm_costly: false in config.json)
    #[arg(long)]
    pub yes: bool,

    /// Let the session read PATH (a file or a folder) outside the working tree
    #[arg(long, value_name = "PATH")]
    pub grant: Vec<PathBuf>,

    /// Attach the picture FILE (PNG, JPEG, GIF or WebP) to the -p prompt; repeat for more
    #[arg(long, value_name = "FILE", requires = "print")]
    pub image: Vec<PathBuf>,

    /// When to use colour and render answers as Markdown: on a terminal (auto), always, never; NO_COLOR turns auto off
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = crate::render::Choice::Auto)]
    pub color: crate::render::Choice,

    /// How a run without the REPL prints: text, one JSON event per line, or one JSON object at the end
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = crate::output::Format::Text)]
    pub output_format: crate::output::Format,

    /// (internal) Run as the subagent of the session PARENT's `task` call
    /// CALL: no `task` tool, no questions, a `spawned` record after the
    /// header
    #[arg(long, hide = true, value_name = "PARENT:CALL", requires = "print")]
    pub subagent_of: Option<String>,

    /// (internal) The subagent definition a child runs under
    #[arg(long, hide = true, value_name = "NAME", requires = "subagent_of")]
    pub subagent: Option<String>,

    /// (internal) The built-in tools a child offers, comma-separated
    #[arg(
        long,
        hide = true,
        value_name = "LIST",
        value_delimiter = ',',
        requires = "subagent_of"
    )]
    pub tools: Option<Vec<String>>,

    /// Where each argument's value came from (flag or environment), by
    /// argument id, at any depth of subcommands; filled by
    /// [`crate::config::parse_args`].
    #[arg(skip)]
    pub sources: BTreeMap<String, Source>,
}

/// Which model, where.
#[derive(Clone, Debug, Default, Args)]
pub struct ModelArgs {
    #[arg(long, value_name = "PROVIDER", env = "REVOLVE_PROVIDER", value_parser = ProviderParser,
        help = defaulted("The model API or a preset for one, or replay:FILE|NAME (the answers a recorded session got, in order)", config::DEFAULT_PRESET.name()))]
    pub provider: Option<ProviderChoice>,

    /// The API's base URL [default: the provider's]
    #[arg(long, value_name = "URL", env = "REVOLVE_BASE_URL")]
    pub base_url: Option<String>,

    #[arg(long, value_name = "NAME", env = "REVOLVE_MODEL",
        help = defaulted("The model to ask", format!("the provider's, e.g. {}", config::DEFAULT_PRESET.model())))]
    pub model: Option<String>,

    #[arg(long, value_name = "TOKENS", env = "REVOLVE_WINDOW",
        help = defaulted("The declared context window in tokens", format!("the server's or the model table's, else {}", config::DEFAULT_WINDOW)))]
    pub window: Option<u64>,

    #[arg(long, value_name = "N", env = "REVOLVE_RETRIES",
        help = defaulted("Send a failed request again at most N times (429, 5xx, broken connections)", revolve_core::retry::MAX_RETRIES))]
    pub retries: Option<u32>,

    #[arg(long, value_name = "CHARS", env = "REVOLVE_PRUNE_RESULT_CHARS",
        help = defaulted("Prune tool results longer than this when compacting", revolve_core::compact::PRUNE_CHARS))]
    pub prune_result_chars: Option<usize>,

    #[arg(long, value_name = "CHARS", env = "REVOLVE_SPILL_RESULT_CHARS",
        help = defaulted("Spill tool results longer than this many characters to a file", revolve_core::session::SPILL_CHARS))]
    pub spill_result_chars: Option<usize>,

    #[arg(long, value_name = "SECONDS", env = "REVOLVE_STALL_TIMEOUT", value_parser = seconds,
        help = defaulted(&format!("Fail a request when the server sends nothing for this long (e.g. 0.5); unless given, a server on this machine may take {} s to its first content (reading the prompt)", revolve_core::policy::LOCAL_PREFILL_WAIT.as_secs()), revolve_core::policy::STALL_TIMEOUT.as_secs()))]
    pub stall_timeout: Option<std::time::Duration>,

    #[arg(long, value_name = "N", env = "REVOLVE_MAX_TOOL_ROUNDS", value_parser = clap::value_parser!(u32).range(1..),
        help = defaulted("End a turn after N tool rounds; in the REPL you are asked whether to go on", revolve_core::guard::MAX_TOOL_ROUNDS))]
    pub max_tool_rounds: Option<u32>,

    #[arg(long, value_name = "N", env = "REVOLVE_MAX_CALLS_PER_ANSWER", value_parser = clap::value_parser!(u32).range(1..),
        help = defaulted("Run at most N tool calls of one answer; the rest are refused", revolve_core::policy::MAX_CALLS_PER_ANSWER))]
    pub max_calls_per_answer: Option<u32>,

    #[arg(long, value_name = "N", env = "REVOLVE_MAX_REPEATED_CALLS", value_parser = clap::value_parser!(u32).range(2..),
        help = defaulted("Refuse the same tool call made N times in a row; one more ends the turn", revolve_core::guard::REPEAT_LIMIT))]
    pub max_repeated_calls: Option<u32>,

    /// Replies for the scripted provider: a JSONL file, one reply a line
    #[arg(long, value_name = "FILE", env = "REVOLVE_SCRIPT")]
    pub script: Option<PathBuf>,

    /// Stop before a request expected to bring the session's cost past USD (e.g. 0.50)
    #[arg(long, value_name = "USD", env = "REVOLVE_MAX_COST", value_parser = usd)]
    pub max_cost: Option<u64>,
}

/// The help of a setting with its default, as clap shows one:
/// `text [default: default]`. The default is the constant the setting
/// settles to, never a copy of it.
fn defaulted(text: &str, default: impl std::fmt::Display) -> String {
    format!("{text} [default: {default}]")
}

/// `--max-cost`: dollars as nano-dollars.
fn usd(text: &str) -> Result<u64, String> {
    revolve_core::models::parse_dollars(text)
}

/// The `--provider` parser: [`ProviderChoice::parse`], with the presets as
/// the possible values help and completions show.
#[derive(Clone, Copy, Debug)]
pub struct ProviderParser;

impl clap::builder::TypedValueParser for ProviderParser {
    type Value = ProviderChoice;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<ProviderChoice, clap::Error> {
        let flag = arg.map_or_else(|| "--provider".to_owned(), |a| format!("--{}", a.get_id()));
        let text = value.to_string_lossy();
        ProviderChoice::parse(&text).map_err(|why| {
            clap::Error::raw(
                clap::error::ErrorKind::InvalidValue,
                format!("invalid value '{text}' for '{flag}': {why}\n"),
            )
            .with_cmd(cmd)
        })
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        let replay = clap::builder::PossibleValue::new("replay:NAME")
            .help("The answers the recorded session NAME (or a session FILE) got, in order");
        Some(Box::new(
            Preset::ALL
                .iter()
                .map(|p| clap::builder::PossibleValue::new(p.name()).help(p.summary()))
                .chain([replay]),
        ))
    }
}

#[derive(Debug, Subcommand)]
pub enum Sub {
    /// Follow a running session of this directory live, and type messages
    /// to it; Ctrl-D detaches
    #[command(
        after_help = "Example:\n  revolve attach amber   watch amber work, and type to it as it goes"
    )]
    Attach {
        /// The session's name
        name: String,
    },
    /// Deliver a message to a running session of this directory; it takes
    /// it before its next turn, or answers at once when idle in the REPL
    #[command(
        after_help = "Examples:\n  revolve send amber 'the tests pass now'   from another terminal or agent\n  make test 2>&1 | tail -20 | revolve send amber --from ci"
    )]
    Send {
        /// The session's name
        name: String,
        /// The message; read from stdin when left out. Options may come
        /// before or after it; words starting with '-' go after --
        #[arg(allow_negative_numbers = true)]
        text: Vec<String>,
        /// Who the message is from, as the session is told [default: the
        /// sending session's name inside revolve's shell tool, else "send"]
        #[arg(long, value_name = "WHO")]
        from: Option<String>,
    },
    /// List this directory's sessions (named ones; --all for every one)
    #[command(
        after_help = "Example:\n  revolve sessions --all --json   every session of this directory, for a script"
    )]
    Sessions {
        /// Include unnamed sessions
        #[arg(long)]
        all: bool,
        /// Print JSON, one array of sessions
        #[arg(long)]
        json: bool,
    },
    /// Take back the last turns of a session that is not running: the files
    /// their edits changed go back, and the conversation goes on from before
    /// them
    #[command(
        after_help = "Examples:\n  revolve rewind --list          the turns of the latest session, with the files each changed\n  revolve rewind amber --turns 2  take back amber's last two turns, files and conversation\n  revolve rewind --undo           take the last rewind back"
    )]
    Rewind {
        /// A name or id of this directory's sessions, or a file [default: the latest]
        #[arg(value_name = "NAME|ID|FILE")]
        session: Option<String>,
        /// How many turns to take back
        #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
        turns: u64,
        /// Restore the files only; the conversation keeps the turns
        #[arg(long, conflicts_with = "conversation_only")]
        files_only: bool,
        /// Take the turns out of the conversation only; files stay as they are
        #[arg(long)]
        conversation_only: bool,
        /// Overwrite files that changed on disk since revolve last wrote them
        #[arg(long)]
        force: bool,
        /// Take back the last rewind instead
        #[arg(long, conflicts_with_all = ["turns", "files_only", "conversation_only", "list"])]
        undo: bool,
        /// List the turns a rewind can reach, with the files each changed
        #[arg(long)]
        list: bool,
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Compact a session that is not running: prune, then summarize all but
    /// its last three turns into working notes
    #[command(after_help = "Example:\n  revolve compact db   compact the session named db now")]
    #[command(mut_args(|a| only_for_a_session(a, COMPACT_FLAGS)))]
    Compact {
        /// A name or id of this directory's sessions, or a file [default: the latest]
        #[arg(value_name = "NAME|ID|FILE")]
        session: Option<String>,
        #[command(flatten)]
        model: ModelArgs,
    },
    /// Show or change the standing goal of this project
    #[command(
        after_help = "Example:\n  revolve goal ship the parser with tests   set the goal every session works toward"
    )]
    Goal {
        /// Print the goal, its notes and the goals that ended as JSON (after the change, if any)
        #[arg(long)]
        json: bool,
        /// The goal's text, or done, pause, resume, clear; nothing shows it
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Show the memory files, their history, or undo a change (like /refine history, /refine undo)
    #[command(
        after_help = "Example:\n  revolve memory history --diff   every memory change, newest first, as diffs"
    )]
    Memory {
        #[command(subcommand)]
        action: MemoryAction,
    },
    /// Create the project directory (memory/, tasks/, subagents/) and print what was created
    #[command(
        after_help = "Example:\n  revolve init   create it before the first session, to write memory by hand"
    )]
    Init,
    /// List the models the provider's endpoint offers (GET {base_url}/models)
    #[command(
        after_help = "Example:\n  revolve models --provider ollama   the models a local Ollama has pulled"
    )]
    #[command(mut_args(|a| only_for_a_session(a, MODELS_FLAGS)))]
    Models {
        /// Print JSON: the provider, the base URL and the models
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        model: ModelArgs,
    },
    /// Print the manual page (roff), from the same definitions as --help
    #[command(after_help = "Example:\n  revolve man > ~/.local/share/man/man1/revolve.1")]
    Man,
    /// Print a shell completion script
    #[command(
        after_help = "Example:\n  revolve completions bash > ~/.local/share/bash-completion/completions/revolve"
    )]
    Completions {
        /// The shell to complete in
        shell: clap_complete::Shell,
    },
    /// List the MCP servers with their tools, approve the project's .mcp.json, log in to one
    #[command(
        after_help = "Examples:\n  revolve mcp list   each server, where it is configured, its state and tools\n  revolve mcp approve   let this repository's .mcp.json start its servers\n  revolve mcp login NAME   log in to a server that asks for OAuth"
    )]
    Mcp {
        #[command(subcommand)]
        action: McpAction,
    },
    /// List the hooks, or approve the project's .revolve/hooks.json
    #[command(
        after_help = "Examples:\n  revolve hooks list   each hook: its event, matcher, command and where it is configured\n  revolve hooks approve   let this repository's .revolve/hooks.json run its hooks"
    )]
    Hooks {
        #[command(subcommand)]
        action: HooksAction,
    },
    /// Show the settings in force and where each came from (file: <config>/config.json)
    #[command(
        after_help = "Example:\n  revolve config show --provider ollama   what a run with this flag would use"
    )]
    Config {
        #[command(subcommand)]
        action: ConfigAction,
    },
    /// Write a session out as Markdown, one self-contained HTML page, or JSON
    #[command(
        after_help = "Examples:\n  revolve export db --format html -o db.html   the page: a chart, then the conversation\n  revolve export --format md > session.md      the latest session as Markdown"
    )]
    Export {
        /// A session file, or a name or id of this directory's sessions
        /// [default: the latest]
        #[arg(value_name = "FILE|NAME")]
        session: Option<String>,
        /// What to write: md (Markdown), html (one page, nothing fetched), json (the records)
        #[arg(long, short = 'f', default_value = "md", value_parser = ["md", "html", "json"])]
        format: String,
        /// Write to FILE instead of stdout
        #[arg(long, short = 'o', value_name = "FILE")]
        output: Option<std::path::PathBuf>,
    },
    /// Show a session from its log: transcript, state, requests, or a check
    #[command(
        after_help = "Examples:\n  revolve replay db --requests   every request the session db sent, rebuilt from its log\n  revolve replay db --against anthropic   the recorded requests sent again, each answer diffed"
    )]
    #[command(mut_args(|a| only_for_a_session(a, REPLAY_FLAGS)))]
    Replay {
        /// A session file, or a name or id of this directory's sessions
        /// [default: the latest]
        #[arg(value_name = "FILE|NAME")]
        session: Option<String>,
        /// Print the folded state as JSON
        #[arg(long, conflicts_with_all = ["requests", "check"])]
        json: bool,
        /// Print every model request rebuilt from the log, one JSON per line
        #[arg(long, conflicts_with = "check")]
        requests: bool,
        /// Fold the file and report skipped lines and inconsistencies
        #[arg(long, conflicts_with = "against")]
        check: bool,
        /// Send every recorded request again to PROVIDER and print, per
        /// request, a diff between the recorded and the new answer (exit 1
        /// when any differs), e.g. `--against anthropic`
        #[arg(long, value_name = "PROVIDER", value_parser = ProviderParser, conflicts_with_all = ["json", "requests"])]
        against: Option<ProviderChoice>,
        #[command(flatten)]
        model: ModelArgs,
    },
}

/// `revolve mcp …`.
#[derive(Debug, Subcommand)]
pub enum McpAction {
    /// Start each configured server and print where it is configured, its state and its tools
    #[command(
        after_help = "Example:\n  revolve mcp list --json   the servers and their tools as JSON"
    )]
    List {
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Approve this repository's .mcp.json as it is now (remembered by its hash)
    #[command(
        after_help = "Example:\n  revolve mcp approve   after reading .mcp.json: its servers start from the next session on"
    )]
    Approve,
    /// Log in to an HTTP server that asks for OAuth (opens your browser; keeps the tokens)
    #[command(
        after_help = "Examples:\n  revolve mcp login linear   opens the authorization page; sessions then send the token\n  revolve mcp login linear --no-browser   prints the URL to open elsewhere"
    )]
    Login {
        /// The server's name in mcp_servers or .mcp.json
        name: String,
        /// Print the authorization URL and open no browser
        #[arg(long)]
        no_browser: bool,
    },
    /// Forget the tokens kept for a server (the next session asks you to log in again)
    #[command(after_help = "Example:\n  revolve mcp logout linear")]
    Logout {
        /// The server's name
        name: String,
    },
}

/// `revolve hooks …`.
#[derive(Debug, Subcommand)]
pub enum HooksAction {
    /// Print every hook: its event, matcher, command, timeout and where it is configured
    #[command(after_help = "Example:\n  revolve hooks list --json   the hooks as JSON")]
    List {
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// Approve this repository's .revolve/hooks.json as it is now (its commands and the scripts they name, by hash)
    #[command(
        after_help = "Example:\n  revolve hooks approve   after reading .revolve/hooks.json: its hooks run from the next session on"
    )]
    Approve,
}

/// `revolve config …`.
#[derive(Debug, Subcommand)]
pub enum ConfigAction {
    /// Print each setting, its value and where it came from (flag, env, config, default)
    #[command(
        after_help = "Example:\n  REVOLVE_MODEL=gpt-4o revolve config show --json   settings as JSON, model from env"
    )]
    Show {
        /// Print JSON: the config file and every setting with its value and source
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        model: ModelArgs,
    },
}

/// `revolve memory …`.
#[derive(Debug, Subcommand)]
pub enum MemoryAction {
    /// List every memory change, newest first
    #[command(
        after_help = "Example:\n  revolve memory history --diff   each change with what it did to the files"
    )]
    History {
        /// Show each change as a unified diff
        #[arg(long)]
        diff: bool,
        /// Print JSON: an array of changes, newest first
        #[arg(long)]
        json: bool,
    },
    /// Restore the newest memory change still standing; again to walk further back
    #[command(
        after_help = "Example:\n  revolve memory undo   take back the last refinement or remember"
    )]
    Undo,
    /// Print the memory files as the system prompt holds them
    #[command(
        after_help = "Example:\n  revolve memory show | less   what every request carries as memory"
    )]
    Show,
}

/// The [`ModelArgs`] a subcommand's help shows; the others tune a running
/// session (its window, spills, tool rounds) and are hidden there (still
/// accepted, so a shell alias with them keeps working).
const MODELS_FLAGS: &[&str] = &["provider", "base_url", "retries", "stall_timeout", "script"];
/// See [`MODELS_FLAGS`]: `revolve compact` asks a model and prunes.
const COMPACT_FLAGS: &[&str] = &[
    "provider",
    "base_url",
    "model",
    "retries",
    "stall_timeout",
    "prune_result_chars",
    "script",
];
/// See [`MODELS_FLAGS`]: `revolve replay --against` asks a model.
const REPLAY_FLAGS: &[&str] = &["base_url", "model", "retries", "stall_timeout", "script"];

/// Hides a [`ModelArgs`] flag that is not in `shown`; other arguments are
/// left as they are.
fn only_for_a_session(arg: clap::Arg, shown: &[&str]) -> clap::Arg {
    const TUNING: &[&str] = &[
        "provider",
        "base_url",
        "model",
        "window",
        "retries",
        "prune_result_chars",
        "spill_result_chars",
        "stall_timeout",
        "max_tool_rounds",
        "max_calls_per_answer",
        "max_repeated_calls",
        "script",
    ];
    let id = arg.get_id().as_str();
    if TUNING.contains(&id) && !shown.contains(&id) {
        arg.hide(true)
    } else {
        arg
    }
}

/// A positive number of seconds, fractions allowed (`0.5`).
fn seconds(text: &str) -> Result<std::time::Duration, String> {
    let secs: f64 = text
        .parse()
        .map_err(|_| format!("not a number of seconds: {text}"))?;
    if !(secs > 0.0 && secs <= 86_400.0) {
        return Err(format!("must be above 0 and at most 86400 seconds: {text}"));
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use clap::CommandFactory;

    use super::{Cli, ModelArgs};
    use crate::config::Settings;

    /// The `[default: …]` the help of `--id` shows.
    fn shown(id: &str) -> String {
        let cli = Cli::command();
        let arg = cli
            .get_arguments()
            .find(|a| a.get_id() == id)
            .unwrap_or_else(|| panic!("no argument {id}"));
        let help = arg.get_help().expect("a help text").to_string();
        let (_, default) = help
            .rsplit_once("[default: ")
            .unwrap_or_else(|| panic!("--{id} shows no default: {help}"));
        default
            .strip_suffix(']')
            .expect("a closing bracket")
            .to_owned()
    }

    /// The settings of a run that sets nothing (no flag, no environment,
    /// no config file), with `args`.
    fn settled(args: &ModelArgs) -> Settings {
        let dir = tempfile::tempdir().expect("a temp dir");
        Settings::resolve(dir.path(), args, false, false, false, &BTreeMap::new())
            .expect("the defaults settle")
    }

    #[test]
    fn each_default_the_help_shows_is_the_one_a_run_gets() {
        let s = settled(&ModelArgs::default());
        assert_eq!(shown("provider"), s.provider.value.name());
        assert_eq!(shown("retries"), s.retries.value.to_string());
        assert_eq!(shown("prune_result_chars"), s.core.prune_chars.to_string());
        assert_eq!(shown("spill_result_chars"), s.core.spill_chars.to_string());
        assert_eq!(shown("max_tool_rounds"), s.core.max_tool_rounds.to_string());
        assert_eq!(
            shown("max_calls_per_answer"),
            s.core.max_calls_per_answer.to_string()
        );
        assert_eq!(shown("max_repeated_calls"), s.core.repeat_limit.to_string());
        assert_eq!(shown("sandbox"), s.sandbox.value.as_str());
        assert_eq!(
            shown("model"),
            format!("the provider's, e.g. {}", s.model.value)
        );
        // A model the table does not know gets the window the help names
        // last.
        let unknown = settled(&ModelArgs {
            model: Some("no-such-model-anywhere".into()),
            ..ModelArgs::default()
        });
        assert_eq!(
            shown("window"),
            format!(
                "the server's or the model table's, else {}",
                unknown.window.value
            )
        );
        // The provider applies the stall timeout itself when none is given
        // (`revolve_provider::http`, from the policy).
        assert_eq!(
            shown("stall_timeout"),
            revolve_core::policy::STALL_TIMEOUT.as_secs().to_string()
        );
    }
}
