//! What a session needs to know that the log does not say: the settings
//! the shell settled (command line, environment, config file) and what it
//! learned when the session opened.

/// What a session needs to know that the log does not say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// A tool result longer than this many characters is spilled to a file.
    pub spill_chars: usize,
    /// The folder spilled results go to, absolute.
    pub spill_dir: String,
    /// A tool result longer than this is pruned by a compaction's first step.
    pub prune_chars: usize,
    /// The `limit`-th identical tool call in a row is refused, the next one
    /// ends the turn ([`crate::guard::REPEAT_LIMIT`] by default).
    pub repeat_limit: u32,
    /// A turn ends after this many tool rounds ([`crate::guard::MAX_TOOL_ROUNDS`]
    /// by default).
    pub max_tool_rounds: u32,
    /// Only this many tool calls of one answer run; the rest get an error
    /// result ([`crate::policy::MAX_CALLS_PER_ANSWER`] by default).
    pub max_calls_per_answer: u32,
    /// Edits need no approval (`--allow-edits`, `allow_edits`).
    pub allow_edits: bool,
    /// Shell commands need no approval (`--allow-shell`, `allow_shell`).
    pub allow_shell: bool,
    /// A user at a terminal can be asked to approve an edit, a command or
    /// a grant.
    pub interactive: bool,
    /// The permission rules (`--allow`, `--deny`, config `permissions`),
    /// decided before anyone is asked ([`crate::rules`]).
    pub rules: crate::rules::Rules,
    /// Paths the user granted up front (`--grant`), canonical: a
    /// `request_file_grant` of one, or of anything inside one, is granted
    /// without asking.
    pub granted: Vec<String>,
    /// The memory may be refined on its own when due (not
    /// `--no-auto-refine`).
    pub auto_refine: bool,
    /// `--bare`: no memory in this run, so none is refined.
    pub bare: bool,
    /// The server counts a request's tokens for free (llama.cpp, Ollama,
    /// Anthropic's count endpoint): a request the estimate says may not
    /// fit is counted first ([`super::ModelCommand::Count`]) when the estimate has no
    /// recent count behind it.
    pub counts: bool,
    /// Ask before a compaction or refinement that sends more than
    /// [`crate::compact::COSTLY_REQUESTS`] requests (not `--yes`, not
    /// `"confirm_costly": false`); asked only when `interactive`
    /// ([`Settings::asks_costly`]).
    pub confirm_costly: bool,
    /// MCP tool calls need no approval (`--allow-mcp`, `allow_mcp`).
    pub allow_mcp: bool,
    /// Seconds an MCP tool call may take (`mcp_timeout_s`).
    pub mcp_timeout_s: u64,
    /// The hooks that run (`hooks` of the config file, and an approved
    /// project hook file; see [`crate::hooks`]).
    pub hooks: crate::hooks::Hooks,
    /// The known models, whose prices the totals count the cost by.
    pub models: crate::models::Table,
    /// `--max-cost`, in nano-dollars: no request goes out that is expected
    /// to bring the session's cost past it (see
    /// [`crate::models::expected_cost`]).
    pub max_cost: Option<u64>,
    /// `--network=off`: nothing of the session reaches the network, so
    /// `web_fetch` is refused (shell commands' network is the sandbox's
    /// own setting, `--network`).
    pub network_off: bool,
}

impl Settings {
    /// A costly compaction or refinement is asked about first: the user
    /// wants to be asked, and a user at a terminal can answer.
    pub fn asks_costly(&self) -> bool {
        self.confirm_costly && self.interactive
    }

    /// A costly compaction or refinement is not run at all: the user
    /// wants to be asked, and no one is at a terminal to answer; it stops
    /// with a line saying how to allow it (`--yes`, `confirm_costly`).
    pub fn refuses_costly(&self) -> bool {
        self.confirm_costly && !self.interactive
    }
}

/// The default of `spill-result-chars`.
pub const SPILL_CHARS: usize = 32_000;
