//! The settings a run goes by: read from the command line, the environment
//! and `<config>/config.json`, chosen by [`revolve_core::config::pick`]
//! (flag > env > config > default), and shown by `revolve config show`.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory, FromArgMatches};
use serde_json::json;

use revolve_core::config::{self, pick, File, Preset, ProviderChoice, Setting, Source};

use crate::cli::{Cli, ModelArgs};
use crate::error::{out, Error};

mod rows;
mod settle;
use settle::{core_settings, sandboxing, window_of, Flags};

/// Parses the command line, noting for every argument whether its value
/// came from a flag or from the environment (clap merges the two).
pub fn parse_args() -> Cli {
    let matches = matches(std::env::args_os().collect()).unwrap_or_else(|e| e.exit());
    let mut cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    cli.sources = sources(&matches);
    cli
}

/// The matches of `args` (the program's name first). A subcommand's name
/// after global flags is the subcommand, as git and cargo read it:
/// `revolve --provider ollama models` is `revolve models --provider
/// ollama`, not the prompt "models" (the top level's arguments conflict
/// with subcommands, so clap alone takes it for the prompt). A word after
/// `--` stays a prompt.
fn matches(args: Vec<OsString>) -> Result<ArgMatches, clap::Error> {
    let cmd = Cli::command();
    let found = cmd.clone().try_get_matches_from(&args);
    let is_sub = |word: &OsString| {
        cmd.get_subcommands()
            .any(|s| s.get_name() == word || s.get_all_aliases().any(|a| a == word))
    };
    let prompt = match &found {
        Ok(m) if m.subcommand().is_some() => return found,
        Ok(m) => match m.get_one::<String>("prompt").map(OsString::from) {
            Some(word) if is_sub(&word) => Some(word),
            _ => return found,
        },
        Err(_) => None,
    };
    let before_dashes = args.iter().position(|a| a == "--").unwrap_or(args.len());
    let mut moved_error = None;
    // The word may also be some flag's value: try each place it stands.
    let places = (1..before_dashes)
        .filter(|&i| is_sub(&args[i]) && prompt.as_ref().is_none_or(|p| *p == args[i]));
    for at in places {
        // The flags go after the whole path of subcommands (`config show`).
        let mut end = at + 1;
        let mut sub = cmd.find_subcommand(&args[at]);
        while let Some(next) = args.get(end).and_then(|w| sub?.find_subcommand(w)) {
            sub = Some(next);
            end += 1;
        }
        let mut moved = vec![args[0].clone()];
        moved.extend(args[at..end].iter().cloned());
        moved.extend(args[1..at].iter().cloned());
        moved.extend(args[end..].iter().cloned());
        match cmd.clone().try_get_matches_from(moved) {
            Ok(m) if m.subcommand_name().is_some_and(|n| args[at] == n) => return Ok(m),
            Ok(_) => {}
            Err(e) => {
                moved_error.get_or_insert(e);
            }
        }
    }
    // A subcommand that the flags before it do not go with: its error
    // (`--bare sessions`), not a prompt.
    match (found, moved_error) {
        (Ok(_), Some(e)) => Err(e),
        (found, _) => found,
    }
}

fn sources(m: &ArgMatches) -> BTreeMap<String, Source> {
    let mut found = BTreeMap::new();
    for id in m.ids() {
        let source = match m.value_source(id.as_str()) {
            Some(ValueSource::CommandLine) => Source::Flag,
            Some(ValueSource::EnvVariable) => Source::Env,
            _ => continue,
        };
        found.insert(id.as_str().to_owned(), source);
    }
    if let Some((_, sub)) = m.subcommand() {
        found.extend(sources(sub));
    }
    found
}

/// Every setting of a run, with where it came from. The API key is kept
/// for the provider and never shown: only the variable it was read from.
pub struct Settings {
    /// The config file, whether or not it exists.
    pub file: PathBuf,
    /// Whether the config file exists.
    pub file_found: bool,
    pub provider: Setting<Preset>,
    pub base_url: Setting<String>,
    pub model: Setting<String>,
    pub window: Setting<u64>,
    /// The config file's `effort` (the flag is the caller's, see
    /// [`Settings::effort_flag`]).
    pub effort: Setting<Option<revolve_core::models::Effort>>,
    /// `tool_choice` of a new session's requests: `--tool-choice`, else
    /// the config file's (see [`revolve_core::request::ToolChoice`]).
    pub tool_choice: Setting<Option<revolve_core::request::ToolChoice>>,
    pub retries: Setting<u32>,
    /// The settings the core runs by, settled once and handed to a
    /// session as they are (through [`revolve_io::live::Runtime`]): the
    /// limits, the approvals, the permission rules, the known models and
    /// `--max-cost`. What only a session knows (its spill folder, whether
    /// a user is at a terminal, whether the server counts tokens) is
    /// filled in when it opens; what only a command knows (`--grant`,
    /// `--bare`, auto-refinement) when its runtime is built.
    pub core: revolve_core::Settings,
    /// Where each of [`Settings::core`]'s settings came from, by its name
    /// in `config show` (not there: the default).
    sources: BTreeMap<&'static str, Source>,
    /// The sandbox of shell commands.
    pub sandbox: Setting<revolve_core::sandbox::Mode>,
    /// Whether sandboxed commands may use the network.
    pub sandbox_network: Setting<bool>,
    /// Folders sandboxed commands may write besides the tree (canonical).
    pub sandbox_writable: Setting<Vec<String>>,
    /// The rules as written, for `config show`: (allow, deny).
    pub rule_texts: (Vec<String>, Vec<String>),
    /// Whether a flag added rules (`config show` says where they came from).
    rules_from_flags: bool,
    /// `--script`, for the scripted provider.
    pub script: Option<PathBuf>,
    /// `--provider replay:FILE|NAME`: the recorded session answering.
    pub replay: Option<String>,
    /// `--stall-timeout`: the longest silence of the server.
    pub stall_timeout: Option<std::time::Duration>,
    /// The MCP servers of `mcp_servers` (values not expanded).
    pub mcp_servers: Vec<revolve_core::mcp::Server>,
    /// The hooks of `hooks` in the config file (the project's hook file
    /// is read at a session's start: `crate::hooks`).
    pub hooks: revolve_core::hooks::Hooks,
    /// What reading them had to say (an event this build does not know).
    pub hook_notes: Vec<String>,
    /// The project's `.mcp.json`, its servers and whether it is approved,
    /// for `config show` (set by the caller, which knows the project).
    pub mcp_project: Option<(String, Vec<revolve_core::mcp::Server>, bool)>,
    /// The API key and the variable it came from.
    key: Option<(&'static str, String)>,
}

impl Settings {
    /// Reads the config file under `config_root` and settles every
    /// setting. `sources` says which of `args` (and of `allow_shell`, the
    /// `--allow-shell` flag) came from a flag and which from the
    /// environment. A config file that cannot be read or parsed is a usage
    /// error naming the file, line and column.
    pub fn resolve(
        config_root: &Path,
        args: &ModelArgs,
        allow_shell: bool,
        allow_edits: bool,
        yes: bool,
        sources: &BTreeMap<String, Source>,
    ) -> Result<Settings, Error> {
        let path = config_root.join(config::FILE_NAME);
        let (mut file, file_found) = read(&path)?;
        let bad = |e: String| Error::Usage(format!("bad config file {}: {e}", path.display()));
        // `replay:` answers offline, like the scripted preset.
        let chosen = args.provider.as_ref().map(ProviderChoice::preset);
        let replay = match &args.provider {
            Some(ProviderChoice::Replay(source)) => Some(source.clone()),
            _ => None,
        };
        let provider = settle(
            sources,
            "provider",
            chosen,
            file.provider,
            config::DEFAULT_PRESET,
        );
        let base_url = settle(
            sources,
            "base_url",
            args.base_url.clone(),
            file.base_url.take(),
            provider.value.base_url().to_owned(),
        );
        let model = settle(
            sources,
            "model",
            args.model.clone(),
            file.model.take(),
            provider.value.model().to_owned(),
        );
        let models = revolve_core::models::Table::shipped()
            .with(file.models.as_ref().unwrap_or(&BTreeMap::new()));
        let window = window_of(sources, args, file.window, &models, &provider, &model);
        let effort = pick(None, None, file.effort.map(Some), None);
        let tool_choice = pick(None, None, file.tool_choice.map(Some), None);
        let retries = settle(
            sources,
            "retries",
            args.retries,
            file.retries,
            revolve_core::retry::MAX_RETRIES,
        );
        let (sandbox, sandbox_network, sandbox_writable) = sandboxing(&mut file, &bad)?;
        let mcp_servers = match &file.mcp_servers {
            Some(map) => revolve_core::mcp::parse_servers(map, &revolve_core::mcp::Origin::Config)
                .map_err(bad)?,
            None => Vec::new(),
        };
        let (hooks, hook_notes) = match &file.hooks {
            Some(value) => {
                revolve_core::hooks::Hooks::parse(value, &revolve_core::hooks::Origin::Config)
                    .map_err(bad)?
            }
            None => Default::default(),
        };
        let key = provider.value.key_vars().iter().find_map(|var| {
            std::env::var(var)
                .ok()
                .filter(|v| !v.is_empty())
                .map(|v| (*var, v))
        });
        let flags = Flags {
            allow_shell,
            allow_edits,
            yes,
        };
        let (core, core_sources, rule_texts) =
            core_settings(sources, args, file, flags, models, hooks.clone(), &bad)?;
        Ok(Settings {
            file: path,
            file_found,
            provider,
            base_url,
            model,
            window,
            effort,
            tool_choice,
            retries,
            core,
            sources: core_sources,
            sandbox,
            sandbox_network,
            sandbox_writable,
            rule_texts,
            rules_from_flags: false,
            script: args.script.clone(),
            replay,
            stall_timeout: args.stall_timeout,
            mcp_servers,
            hooks,
            hook_notes,
            mcp_project: None,
            key,
        })
    }

    /// Where the core setting `name` (as `config show` names it) came from.
    pub fn source(&self, name: &str) -> Source {
        self.sources.get(name).copied().unwrap_or(Source::Default)
    }

    /// The settings of a run of `cli`, `model` its model arguments (the
    /// top level's, or its subcommand's): the config file under
    /// `config_root`, the environment and every flag, settled once, flag >
    /// env > config > default. `--grant`, resolved against the working
    /// directory, is the caller's to add.
    pub fn settle(config_root: &Path, cli: &Cli, model: &ModelArgs) -> Result<Settings, Error> {
        let sources = &cli.sources;
        let mut settings = Settings::resolve(
            config_root,
            model,
            cli.allow_shell,
            cli.allow_edits,
            cli.yes,
            sources,
        )?;
        let network = cli.network.as_deref();
        settings.sandbox_flags(
            cli.sandbox.as_deref(),
            network == Some("on"),
            &cli.writable,
            sources,
        )?;
        settings.core.network_off = network == Some("off");
        settings.rule_flags(&cli.allow, &cli.deny)?;
        settings.mcp_flag(cli.allow_mcp);
        settings.effort_flag(cli.effort.as_deref(), sources);
        if let Some(choice) = cli.tool_choice.as_deref() {
            let value = revolve_core::request::ToolChoice::parse(choice).map_err(Error::Usage)?;
            settings.tool_choice = Setting {
                value: Some(value),
                source: Source::Flag,
            };
        }
        settings.core.bare = cli.bare;
        settings.core.auto_refine = !cli.no_auto_refine;
        Ok(settings)
    }

    /// `--effort` (or `REVOLVE_EFFORT`) over what the config file said.
    pub fn effort_flag(&mut self, text: Option<&str>, sources: &BTreeMap<String, Source>) {
        if let Some(effort) = text.and_then(|t| revolve_core::models::Effort::parse(t).ok()) {
            let source = sources.get("effort").copied().unwrap_or(Source::Flag);
            self.effort = Setting {
                value: Some(effort),
                source,
            };
        }
    }

    /// `--allow-mcp` over what the config file said.
    pub fn mcp_flag(&mut self, allow: bool) {
        if allow {
            self.core.allow_mcp = true;
            self.sources.insert("allow_mcp", Source::Flag);
        }
    }

    /// The sandbox flags of a run (`--sandbox`, or `REVOLVE_SANDBOX`;
    /// `--network`; `--writable`) over what the config file said.
    pub fn sandbox_flags(
        &mut self,
        mode: Option<&str>,
        network: bool,
        writable: &[PathBuf],
        sources: &BTreeMap<String, Source>,
    ) -> Result<(), Error> {
        if let Some(text) = mode {
            let value = revolve_core::sandbox::Mode::parse(text).map_err(Error::Usage)?;
            let source = sources.get("sandbox").copied().unwrap_or(Source::Flag);
            self.sandbox = revolve_core::config::Setting { value, source };
        }
        if network {
            self.sandbox_network = revolve_core::config::Setting {
                value: true,
                source: Source::Flag,
            };
        }
        if !writable.is_empty() {
            let given: Vec<String> = writable
                .iter()
                .map(|p| p.to_string_lossy().into_owned())
                .collect();
            let mut value = self.sandbox_writable.value.clone();
            value.extend(
                writable_dirs(&given).map_err(|e| Error::Usage(format!("--writable: {e}")))?,
            );
            self.sandbox_writable = revolve_core::config::Setting {
                value,
                source: Source::Flag,
            };
        }
        Ok(())
    }

    /// The permission rules of the flags (`--allow`, `--deny`), added to
    /// the config file's.
    pub fn rule_flags(&mut self, allow: &[String], deny: &[String]) -> Result<(), Error> {
        let (mut all_allow, mut all_deny) = self.rule_texts.clone();
        all_allow.extend(allow.iter().cloned());
        all_deny.extend(deny.iter().cloned());
        self.core.rules =
            revolve_core::rules::Rules::parse(&all_allow, &all_deny).map_err(Error::Usage)?;
        self.rule_texts = (all_allow, all_deny);
        self.rules_from_flags |= !allow.is_empty() || !deny.is_empty();
        Ok(())
    }

    /// The variable the API key was read from, if one was.
    pub fn key_var(&self) -> Option<&'static str> {
        self.key.as_ref().map(|(var, _)| *var)
    }

    /// The API key, if one is set; a usage error when the provider at its
    /// base URL cannot work without one.
    pub fn needed_key(&self) -> Result<Option<String>, Error> {
        let preset = self.provider.value;
        match &self.key {
            Some((_, key)) => Ok(Some(key.clone())),
            None if preset.needs_key(&self.base_url.value) => {
                let var = preset
                    .key_vars()
                    .last()
                    .copied()
                    .unwrap_or("REVOLVE_API_KEY");
                Err(Error::Usage(format!(
                    "no API key: set {var} (or REVOLVE_API_KEY), point --base-url at a local \
                     server, or run offline with --provider scripted --script FILE"
                )))
            }
            None => Ok(None),
        }
    }

    /// The preset the run speaks: the one chosen, except that `openai`
    /// at OpenAI's own address speaks `openai-responses` for a model the
    /// table marks Responses-first ([`Preset::settled`]).
    pub fn speaks(&self) -> Preset {
        let first = self
            .core
            .models
            .find(self.provider.value.name(), &self.model.value)
            .is_some_and(|(_, m)| m.responses == Some(true));
        self.provider.value.settled(first, &self.base_url.value)
    }
}

/// A JSON number of dollars as [`revolve_core::models::parse_dollars`]
/// reads it: `1e-6` as `0.000001000`, a plain decimal as it is written.
fn dollars_of(n: &serde_json::Number) -> String {
    let text = n.to_string();
    match n.as_f64() {
        Some(f) if text.contains(['e', 'E']) && f >= 0.0 => format!("{f:.9}"),
        _ => text,
    }
}

/// Nano-dollars as a JSON number of dollars (`3.5`).
fn nanos_dollars(nanos: u64) -> serde_json::Value {
    // not policy: nano-dollars per dollar, a unit.
    let per_dollar = 1e9;
    serde_json::Number::from_f64(nanos as f64 / per_dollar)
        .map_or(serde_json::Value::Null, Into::into)
}

/// `revolve config show [--json]`.
pub fn show(settings: &Settings, json: bool) -> Result<(), Error> {
    let rows = settings.rows();
    if json {
        let mut map = serde_json::Map::new();
        for (name, value, source) in rows {
            map.insert(name.to_owned(), json!({"value": value, "source": source}));
        }
        let doc = json!({
            "file": settings.file.to_string_lossy(),
            "file_found": settings.file_found,
            "settings": map,
        });
        let text = serde_json::to_string_pretty(&doc).map_err(Error::encode)?;
        return out(&format!("{text}\n"));
    }
    let found = if settings.file_found {
        ""
    } else {
        " (not found)"
    };
    let mut text = format!("config file: {}{found}\n", settings.file.display());
    let shown: Vec<(&str, String, &str)> = rows
        .into_iter()
        .map(|(name, value, source)| {
            let value = match value {
                serde_json::Value::Number(_) if name == "max_cost" => settings
                    .core
                    .max_cost
                    .map_or_else(String::new, revolve_core::models::dollars_text),
                serde_json::Value::String(s) if name == "api_key" => format!("from {s}"),
                // The project's servers by name: their commands are
                // `--json`'s (and `revolve mcp list`'s), so the table
                // keeps its width.
                serde_json::Value::Object(project) if name == "mcp_project_servers" => {
                    let names: Vec<&str> = project["servers"]
                        .as_object()
                        .map(|m| m.keys().map(String::as_str).collect())
                        .unwrap_or_default();
                    let approved = if project["approved"] == json!(true) {
                        "approved"
                    } else {
                        "not approved"
                    };
                    format!(
                        "{} in {} ({approved})",
                        names.join(", "),
                        project["file"].as_str().unwrap_or("")
                    )
                }
                serde_json::Value::String(s) => s,
                serde_json::Value::Null => "(none)".to_owned(),
                other => other.to_string(),
            };
            // The project's `.mcp.json`, not the user's config file.
            let source = if name == "mcp_project_servers" {
                "project"
            } else {
                source
            };
            (name, value, source)
        })
        .collect();
    let width = shown
        .iter()
        .map(|(_, v, _)| v.chars().count())
        .max()
        .unwrap_or(0);
    let names = shown
        .iter()
        .map(|(n, _, _)| n.chars().count())
        .max()
        .unwrap_or(0);
    for (name, value, source) in &shown {
        text.push_str(&format!("{name:<names$}  {value:<width$}  {source}\n"));
    }
    out(&text)
}

/// The setting `id`: `value` is what clap read from a flag or a variable
/// (`sources` says which), `file` the config file's, `default` the rest;
/// the core's [`pick`] chooses.
fn settle<T>(
    sources: &BTreeMap<String, Source>,
    id: &str,
    value: Option<T>,
    file: Option<T>,
    default: T,
) -> Setting<T> {
    let (flag, env) = match sources.get(id) {
        Some(Source::Flag) => (value, None),
        _ => (None, value),
    };
    pick(flag, env, file, default)
}

/// Takes the values of settled settings into [`revolve_core::Settings`],
/// noting where each came from.
struct Took<'a>(&'a mut BTreeMap<&'static str, Source>);

impl Took<'_> {
    fn value<T>(&mut self, name: &'static str, setting: Setting<T>) -> T {
        self.0.insert(name, setting.source);
        setting.value
    }
}

/// Folders a sandboxed command may write, made canonical: each must be an
/// existing folder (a rule on a path that is not there protects nothing,
/// and a typo should not pass unseen).
fn writable_dirs(dirs: &[String]) -> Result<Vec<String>, String> {
    dirs.iter()
        .map(|dir| {
            let path =
                std::fs::canonicalize(dir).map_err(|e| format!("writable folder {dir}: {e}"))?;
            if !path.is_dir() {
                return Err(format!("writable folder {dir}: not a folder"));
            }
            Ok(path.to_string_lossy().into_owned())
        })
        .collect()
}

/// The config file's settings, and whether it exists; a missing file is an
/// empty config.
fn read(path: &Path) -> Result<(File, bool), Error> {
    let text = match revolve_store::regular::read_text(path, revolve_core::policy::OWN_FILE_CAP) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((File::default(), false)),
        Err(e) => return Err(Error::at(path, "cannot read the config file", e)),
    };
    let file = File::parse(&text)
        .map_err(|bad| Error::Usage(format!("bad config file {}: {bad}", path.display())))?;
    Ok((file, true))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use revolve_core::config::Source;

    use super::Settings;
    use crate::cli::ModelArgs;

    /// The settings of `config` (a config file's text, none for no file),
    /// with `args` read from the sources `sources` says and the
    /// `--allow-shell`, `--allow-edits` and `--yes` flags given.
    fn settled(
        config: Option<&str>,
        args: &ModelArgs,
        flags: [bool; 3],
        sources: &[(&str, Source)],
    ) -> Settings {
        let dir = tempfile::tempdir().expect("a temp dir");
        if let Some(text) = config {
            std::fs::write(dir.path().join(revolve_core::config::FILE_NAME), text)
                .expect("the config file is written");
        }
        let sources: BTreeMap<String, Source> = sources
            .iter()
            .map(|(id, s)| ((*id).to_owned(), *s))
            .collect();
        let [allow_shell, allow_edits, yes] = flags;
        Settings::resolve(dir.path(), args, allow_shell, allow_edits, yes, &sources)
            .expect("the settings settle")
    }

    /// A flag wins over the environment, the environment over the config
    /// file, the config file over the default; the core's settings are
    /// settled into the one struct a session gets, each with its source.
    #[test]
    fn the_core_settings_settle_flag_over_env_over_config_over_default() {
        let config = r#"{"max_tool_rounds": 7, "spill_result_chars": 500,
            "max_repeated_calls": 4, "allow_shell": false, "allow_edits": true,
            "confirm_costly": true, "mcp_timeout_s": 9, "max_cost": 0.5}"#;
        let none = settled(None, &ModelArgs::default(), [false; 3], &[]);
        assert_eq!(
            none.core.max_tool_rounds,
            revolve_core::guard::MAX_TOOL_ROUNDS
        );
        assert_eq!(none.source("max_tool_rounds"), Source::Default);
        assert_eq!(none.core.spill_chars, revolve_core::session::SPILL_CHARS);
        assert!(!none.core.allow_edits && !none.core.allow_shell);
        assert!(none.core.confirm_costly);
        assert_eq!(none.core.max_cost, None);
        assert_eq!(none.source("max_cost"), Source::Default);

        let file = settled(Some(config), &ModelArgs::default(), [false; 3], &[]);
        assert_eq!(file.core.max_tool_rounds, 7);
        assert_eq!(file.source("max_tool_rounds"), Source::Config);
        assert_eq!(file.core.spill_chars, 500);
        assert_eq!(file.core.repeat_limit, 4);
        assert!(file.core.allow_edits);
        assert_eq!(file.source("allow_edits"), Source::Config);
        assert_eq!(file.core.mcp_timeout_s, 9);
        assert_eq!(file.core.max_cost, Some(500_000_000));
        assert_eq!(file.source("max_cost"), Source::Config);

        let args = ModelArgs {
            max_tool_rounds: Some(9),
            spill_result_chars: Some(800),
            ..ModelArgs::default()
        };
        let env = settled(
            Some(config),
            &args,
            [false; 3],
            &[
                ("max_tool_rounds", Source::Env),
                ("spill_result_chars", Source::Env),
            ],
        );
        assert_eq!(env.core.max_tool_rounds, 9);
        assert_eq!(env.source("max_tool_rounds"), Source::Env);
        assert_eq!(env.core.spill_chars, 800);
        // What nobody overrode stays the config file's.
        assert_eq!(env.core.repeat_limit, 4);
        assert_eq!(env.source("max_repeated_calls"), Source::Config);

        let flag = settled(
            Some(config),
            &args,
            [true, false, true],
            &[
                ("max_tool_rounds", Source::Flag),
                ("spill_result_chars", Source::Env),
                ("allow_shell", Source::Flag),
            ],
        );
        assert_eq!(flag.core.max_tool_rounds, 9);
        assert_eq!(flag.source("max_tool_rounds"), Source::Flag);
        assert_eq!(flag.source("spill_result_chars"), Source::Env);
        assert!(flag.core.allow_shell);
        assert_eq!(flag.source("allow_shell"), Source::Flag);
        // `--yes` says no to asking first, whatever the file said.
        assert!(!flag.core.confirm_costly);
        assert_eq!(flag.source("confirm_costly"), Source::Flag);
    }

    /// A run's command line settles whole, its top-level flags included,
    /// into the struct a session gets.
    #[test]
    fn a_run_settles_its_flags_into_the_core_settings() {
        use clap::FromArgMatches;
        let settle = |args: &[&str]| {
            let args = args.iter().map(std::ffi::OsString::from).collect();
            let matches = super::matches(args).expect("the arguments parse");
            let mut cli = crate::cli::Cli::from_arg_matches(&matches).expect("a command line");
            cli.sources = super::sources(&matches);
            let dir = tempfile::tempdir().expect("a temp dir");
            Settings::settle(dir.path(), &cli, &cli.model).expect("the settings settle")
        };
        let plain = settle(&["revolve"]);
        assert!(!plain.core.bare && !plain.core.allow_shell && !plain.core.allow_mcp);
        assert_eq!(plain.core.rules, Default::default());
        let s = settle(&[
            "revolve",
            "--bare",
            "--no-auto-refine",
            "--allow-shell",
            "--allow-mcp",
            "--deny",
            "shell(rm *)",
            "--max-tool-rounds",
            "5",
        ]);
        assert!(s.core.bare);
        assert!(!s.core.auto_refine);
        assert!(s.core.allow_shell);
        assert_eq!(s.source("allow_shell"), Source::Flag);
        assert!(s.core.allow_mcp);
        assert_ne!(s.core.rules, plain.core.rules);
        assert_eq!(s.core.max_tool_rounds, 5);
        assert_eq!(s.source("max_tool_rounds"), Source::Flag);
    }

    /// `--allow-mcp` and the rule flags settle into the same struct.
    #[test]
    fn the_later_flags_settle_into_the_core_settings() {
        let mut s = settled(
            Some(r#"{"allow_mcp": false}"#),
            &ModelArgs::default(),
            [false; 3],
            &[],
        );
        assert!(!s.core.allow_mcp);
        assert_eq!(s.source("allow_mcp"), Source::Config);
        s.mcp_flag(true);
        assert!(s.core.allow_mcp);
        assert_eq!(s.source("allow_mcp"), Source::Flag);
        let before = s.core.rules.clone();
        s.rule_flags(&["shell(git status)".to_owned()], &[])
            .expect("the rule parses");
        assert_ne!(s.core.rules, before);
    }
}
