//! The command line (ARCHITECTURE.md section 5).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// A terminal agent whose state outlives the process.
#[derive(Debug, Parser)]
#[command(
    name = "revolve",
    version,
    about,
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Sub>,

    /// The first message; with -p, the only one
    pub prompt: Option<String>,

    /// Answer PROMPT (or each stdin line) without the REPL, then exit
    #[arg(short, long)]
    pub print: bool,

    /// Resume the latest session of this directory
    #[arg(short, long, conflicts_with = "resume")]
    pub r#continue: bool,

    /// Resume a session by name, id or path
    #[arg(short, long, value_name = "NAME|ID|PATH")]
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

    /// Keep taking turns toward the standing goal until the model proposes it met
    #[arg(long, conflicts_with = "prompt")]
    pub goal_run: bool,

    /// With --goal-run: stop after N turns
    #[arg(long, value_name = "N", default_value_t = 20, requires = "goal_run")]
    pub max_turns: u32,

    /// Let the model run shell commands without asking (needed without a terminal)
    #[arg(long)]
    pub allow_shell: bool,

    /// Let the session read PATH (a file or a folder) outside the working tree
    #[arg(long, value_name = "PATH")]
    pub grant: Vec<PathBuf>,
}

/// Which model, where.
#[derive(Clone, Debug, Args)]
pub struct ModelArgs {
    /// The model API [default: openai]
    #[arg(long, value_enum, env = "REVOLVE_PROVIDER")]
    pub provider: Option<ProviderKind>,

    /// The API's base URL [default: https://api.openai.com/v1, or https://api.anthropic.com/v1]
    #[arg(long, value_name = "URL", env = "REVOLVE_BASE_URL")]
    pub base_url: Option<String>,

    /// The model to ask [default: gpt-4o-mini, or claude-sonnet-4-5 with anthropic]
    #[arg(long, value_name = "NAME", env = "REVOLVE_MODEL")]
    pub model: Option<String>,

    /// The declared context window in tokens [default: 128000]
    #[arg(long, value_name = "TOKENS", env = "REVOLVE_WINDOW")]
    pub window: Option<u64>,

    /// Send a failed request again at most N times (429, 5xx, broken connections) [default: 4]
    #[arg(long, value_name = "N", env = "REVOLVE_RETRIES")]
    pub retries: Option<u32>,

    /// Prune tool results longer than this when compacting [default: 16000]
    #[arg(long, value_name = "CHARS", env = "REVOLVE_PRUNE_RESULT_CHARS")]
    pub prune_result_chars: Option<usize>,

    /// Spill tool results longer than this many characters to a file [default: 32000]
    #[arg(long, value_name = "CHARS", env = "REVOLVE_SPILL_RESULT_CHARS")]
    pub spill_result_chars: Option<usize>,

    /// Fail a request when the server sends nothing for this long (e.g. 0.5) [default: 120]
    #[arg(long, value_name = "SECONDS", env = "REVOLVE_STALL_TIMEOUT", value_parser = seconds)]
    pub stall_timeout: Option<std::time::Duration>,

    /// Replies for the scripted provider: a JSONL file, one reply a line
    #[arg(long, value_name = "FILE", env = "REVOLVE_SCRIPT")]
    pub script: Option<PathBuf>,
}

/// The model APIs revolve speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ProviderKind {
    /// OpenAI-compatible Chat Completions (OpenAI, Ollama, llama.cpp, vLLM, OpenRouter)
    Openai,
    /// Anthropic Messages
    Anthropic,
    /// Answers from a file of replies, offline
    Scripted,
}

#[derive(Debug, Subcommand)]
pub enum Sub {
    /// List this directory's sessions (named ones; --all for every one)
    Sessions {
        /// Include unnamed sessions
        #[arg(long)]
        all: bool,
        /// Print JSON, one array of sessions
        #[arg(long)]
        json: bool,
    },
    /// Compact a session that is not running: prune, then summarize all but
    /// its last three turns into working notes (e.g. `revolve compact db`)
    Compact {
        /// A name or id of this directory's sessions, or a file [default: the latest]
        #[arg(value_name = "NAME|ID|FILE")]
        session: Option<String>,
        #[command(flatten)]
        model: ModelArgs,
    },
    /// Show or change the standing goal of this project (e.g. `revolve goal ship the parser`)
    Goal {
        /// The goal's text, or done, pause, resume, clear; nothing shows it
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// The memory files' history, undo, and contents (like /refine history, /refine undo)
    Memory {
        #[command(subcommand)]
        action: MemoryAction,
    },
    /// Create the project directory (memory/, tasks/, subagents/) and print what was created
    Init,
    /// Show a session from its log
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
        #[arg(long)]
        check: bool,
    },
}

/// `revolve memory …`.
#[derive(Debug, Subcommand)]
pub enum MemoryAction {
    /// Every memory change, newest first (e.g. `revolve memory history --diff`)
    History {
        /// Show each change as a unified diff
        #[arg(long)]
        diff: bool,
    },
    /// Restore the newest memory change still standing; again to walk further back
    Undo,
    /// Print the memory files as the system prompt holds them
    Show,
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
