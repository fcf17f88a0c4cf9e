//! How [`super::Settings::resolve`] settles the window, the sandbox, the
//! session's limits and the core settings from the flags, the environment
//! and the config file.

use std::collections::BTreeMap;

use revolve_core::config::{self, pick, File, Preset, Setting, Source};
use revolve_core::guard;

use super::{dollars_of, settle, writable_dirs, Took};
use crate::cli::ModelArgs;
use crate::error::Error;

/// The flags of a run that settle core settings: `--allow-shell`,
/// `--allow-edits` and `--yes`.
pub(super) struct Flags {
    pub(super) allow_shell: bool,
    pub(super) allow_edits: bool,
    pub(super) yes: bool,
}

/// The rule texts a run's permissions were parsed from: allow, deny.
pub(super) type RuleTexts = (Vec<String>, Vec<String>);

/// The sandbox's mode, whether it leaves the network open, and the
/// directories it lets commands write besides the tree.
pub(super) type Sandboxing = (
    Setting<revolve_core::sandbox::Mode>,
    Setting<bool>,
    Setting<Vec<String>>,
);

/// The window: a flag's, the environment's or the file's, else the model
/// table's for a model it knows (a local server that says its own still
/// wins, in `learn_window`), else the default.
pub(super) fn window_of(
    sources: &BTreeMap<String, Source>,
    args: &ModelArgs,
    file: Option<u64>,
    models: &revolve_core::models::Table,
    provider: &Setting<Preset>,
    model: &Setting<String>,
) -> Setting<u64> {
    let window = settle(sources, "window", args.window, file, config::DEFAULT_WINDOW);
    let known = models
        .find(provider.value.name(), &model.value)
        .and_then(|(_, m)| m.window);
    match known {
        Some(value) if window.source == Source::Default => Setting {
            value,
            source: Source::Table,
        },
        _ => window,
    }
}

/// The sandbox's mode, whether it leaves the network open, and the
/// directories it lets commands write besides the tree: the file's, else
/// the defaults.
pub(super) fn sandboxing(
    file: &mut File,
    bad: &impl Fn(String) -> Error,
) -> Result<Sandboxing, Error> {
    let sandbox = pick(
        None,
        None,
        file.sandbox
            .as_deref()
            .map(revolve_core::sandbox::Mode::parse)
            .transpose()
            .map_err(bad)?,
        revolve_core::sandbox::Mode::default(),
    );
    let network = pick(None, None, file.sandbox_network, false);
    let writable = pick(
        None,
        None,
        file.sandbox_writable
            .take()
            .map(|dirs| writable_dirs(&dirs))
            .transpose()
            .map_err(bad)?,
        Vec::new(),
    );
    Ok((sandbox, network, writable))
}

/// The session machine's settings, where each came from, and the rule
/// texts they were parsed from.
pub(super) fn core_settings(
    sources: &BTreeMap<String, Source>,
    args: &ModelArgs,
    file: File,
    flags: Flags,
    models: revolve_core::models::Table,
    hooks: revolve_core::hooks::Hooks,
    bad: &impl Fn(String) -> Error,
) -> Result<
    (
        revolve_core::Settings,
        BTreeMap<&'static str, Source>,
        RuleTexts,
    ),
    Error,
> {
    let given = |id: &str| sources.get(id).copied();
    let max_cost = settle(
        sources,
        "max_cost",
        args.max_cost.map(Some),
        file.max_cost
            .as_ref()
            .map(|n| revolve_core::models::parse_dollars(&dollars_of(n)).map(Some))
            .transpose()
            .map_err(|e| bad(format!("max_cost: {e}")))?,
        None,
    );
    let limits = Limits::settle(sources, args, &file, bad)?;
    let allow_shell = pick(
        (flags.allow_shell && given("allow_shell") == Some(Source::Flag)).then_some(true),
        None,
        file.allow_shell,
        false,
    );
    let allow_edits = pick(
        (flags.allow_edits && given("allow_edits") == Some(Source::Flag)).then_some(true),
        None,
        file.allow_edits,
        false,
    );
    let confirm_costly = pick(flags.yes.then_some(false), None, file.confirm_costly, true);
    let permissions = file.permissions.unwrap_or_default();
    let rules =
        revolve_core::rules::Rules::parse(&permissions.allow, &permissions.deny).map_err(bad)?;
    let mcp_timeout_s = pick(
        None,
        None,
        file.mcp_timeout_s.filter(|&t| t > 0),
        revolve_core::policy::MCP_TIMEOUT_S,
    );
    let allow_mcp = pick(None, None, file.allow_mcp, false);
    let mut core_sources = BTreeMap::new();
    let mut took = Took(&mut core_sources);
    let core = revolve_core::Settings {
        spill_chars: took.value("spill_result_chars", limits.spill_result_chars),
        // The session's, when it opens.
        spill_dir: String::new(),
        prune_chars: took.value("prune_result_chars", limits.prune_result_chars),
        repeat_limit: took.value("max_repeated_calls", limits.max_repeated_calls),
        max_tool_rounds: took.value("max_tool_rounds", limits.max_tool_rounds),
        max_calls_per_answer: took.value("max_calls_per_answer", limits.max_calls_per_answer),
        allow_edits: took.value("allow_edits", allow_edits),
        allow_shell: took.value("allow_shell", allow_shell),
        // A session's front says, when it opens.
        interactive: false,
        rules,
        // A run's (see `settle`): `--grant`, `--bare`,
        // `--no-auto-refine`; a subcommand's session (compact, rewind)
        // has none of them.
        granted: Vec::new(),
        auto_refine: false,
        bare: false,
        // The provider says, when a session opens.
        counts: false,
        confirm_costly: took.value("confirm_costly", confirm_costly),
        allow_mcp: took.value("allow_mcp", allow_mcp),
        mcp_timeout_s: took.value("mcp_timeout_s", mcp_timeout_s),
        // The project's hook file joins at a session's start
        // (`crate::hooks`).
        hooks,
        models,
        max_cost: took.value("max_cost", max_cost),
        // A run's: `--network=off` (see `settle`).
        network_off: false,
    };
    Ok((core, core_sources, (permissions.allow, permissions.deny)))
}

/// The session's size limits and guards, settled.
struct Limits {
    spill_result_chars: Setting<usize>,
    prune_result_chars: Setting<usize>,
    max_tool_rounds: Setting<u32>,
    max_calls_per_answer: Setting<u32>,
    max_repeated_calls: Setting<u32>,
}

impl Limits {
    fn settle(
        sources: &BTreeMap<String, Source>,
        args: &ModelArgs,
        file: &File,
        bad: &impl Fn(String) -> Error,
    ) -> Result<Limits, Error> {
        Ok(Limits {
            spill_result_chars: settle(
                sources,
                "spill_result_chars",
                args.spill_result_chars,
                file.spill_result_chars,
                revolve_core::session::SPILL_CHARS,
            ),
            prune_result_chars: settle(
                sources,
                "prune_result_chars",
                args.prune_result_chars,
                file.prune_result_chars,
                revolve_core::compact::PRUNE_CHARS,
            ),
            max_tool_rounds: settle(
                sources,
                "max_tool_rounds",
                args.max_tool_rounds,
                file.max_tool_rounds
                    .map(guard::check_tool_rounds)
                    .transpose()
                    .map_err(bad)?,
                guard::MAX_TOOL_ROUNDS,
            ),
            max_calls_per_answer: settle(
                sources,
                "max_calls_per_answer",
                args.max_calls_per_answer,
                file.max_calls_per_answer
                    .map(guard::check_calls_per_answer)
                    .transpose()
                    .map_err(bad)?,
                revolve_core::policy::MAX_CALLS_PER_ANSWER,
            ),
            max_repeated_calls: settle(
                sources,
                "max_repeated_calls",
                args.max_repeated_calls,
                file.max_repeated_calls
                    .map(guard::check_repeat_limit)
                    .transpose()
                    .map_err(bad)?,
                guard::REPEAT_LIMIT,
            ),
        })
    }
}
