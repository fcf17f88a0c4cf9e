//! The `revolve` binary: parses the command line, reads lines (rustyline in
//! a terminal, stdin otherwise), renders output. No decisions live here: the
//! core decides, `revolve-io` executes.
//!
//! Platforms: unix (Linux, macOS); Ctrl-C handling and the `shell` tool's
//! process groups are unix APIs (see `revolve-io`).

#![forbid(unsafe_code)]
// Not the workspace's lints: this library exists for the binary, its e2e
// tests and benches, and nothing outside this repository links it, so
// `missing_docs` would ask for docs no reader needs; `pub(crate)` by default
// still holds. (Set here, not in Cargo.toml, so the test helpers'
// `pub` in tests/common is not asked about.)
#![warn(unreachable_pub)]

#[cfg(not(unix))]
compile_error!("revolve supports Linux and macOS (unix); Windows is not supported yet");

mod approvals;
pub mod approve;
mod chats;
pub mod cli;
mod commands;
pub mod config;
pub mod console;
mod diffs;
pub mod error;
mod export;
mod highlight;
mod hooks;
mod init;
mod keys;
mod line;
mod mcp;
mod messages;
mod models;
pub mod output;
mod pipe;
mod progress;
pub mod render;
mod repl;
mod sessions;
mod stdin;
mod subagent;
mod switch;

use std::io::IsTerminal;
use std::sync::Arc;

use revolve_provider::{Anthropic, Gemini, OpenAi, Provider, Retrying, Scripted};
use revolve_store::memory::MemoryDirs;
use revolve_store::store::Store;

use revolve_io::live::{Outcome, Runtime};

use approve::Approvals;
use cli::{Cli, Sub};
use config::Settings;
use console::{Console, Live};
use error::Error;
use output::Format;

/// The settings of a subcommand that talks to the model (`compact`,
/// `models`, `replay --against`): no shell or edit flags of its own.
fn subcommand_settings(
    store: &Store,
    model: &cli::ModelArgs,
    yes: bool,
    sources: &std::collections::BTreeMap<String, revolve_core::config::Source>,
) -> Result<Settings, Error> {
    Settings::resolve(&store.roots.config, model, false, false, yes, sources)
}

/// Runs revolve with a parsed command line: a subcommand, or (with none) a
/// session ([`chat`]).
pub fn run(mut cli: Cli) -> Result<(), Error> {
    render::choose(cli.color);
    if let Some(Sub::Completions { shell }) = cli.command {
        return completions(shell);
    }
    if let Some(Sub::Man) = cli.command {
        return man();
    }
    let cwd = std::env::current_dir().map_err(Error::Cwd)?;
    let store = Store::open(&cwd)?;
    match cli.command.take() {
        Some(command) => subcommand(command, &cli, store),
        None => chat(cli, store),
    }
}

/// `revolve SUBCOMMAND`: each runs on its own and ends the process.
fn subcommand(command: Sub, cli: &Cli, store: Store) -> Result<(), Error> {
    let sources = &cli.sources;
    match command {
        Sub::Sessions { all, json } => commands::sessions(&store, all, json),
        Sub::Replay {
            session,
            against: Some(against),
            mut model,
            ..
        } => {
            model.provider = Some(against);
            let settings = subcommand_settings(&store, &model, cli.yes, sources)?;
            let provider = provider(&settings, &store)?;
            commands::replay_against(&store, session.as_deref(), provider, model.model)
        }
        Sub::Replay {
            session,
            json,
            requests,
            check,
            ..
        } => commands::replay(
            &store,
            session.as_deref(),
            commands::ReplayMode::from_flags(json, requests, check),
        ),
        Sub::Export {
            session,
            format,
            output,
        } => export::export(
            &store,
            session.as_deref(),
            // clap admits only the formats' words.
            revolve_view::export::Format::parse(&format)
                .unwrap_or(revolve_view::export::Format::Markdown),
            output.as_deref(),
        ),
        Sub::Attach { name } => messages::attach(&store, &name),
        Sub::Send { name, text, from } => messages::send(&store, &name, text, from),
        Sub::Compact { session, model } => {
            let settings = subcommand_settings(&store, &model, cli.yes, sources)?;
            compact(store, session.as_deref(), &settings)
        }
        Sub::Models { json, model } => {
            let settings = subcommand_settings(&store, &model, cli.yes, sources)?;
            models::list(&settings, json)
        }
        Sub::Mcp { action } => mcp_command(action, cli, &store),
        Sub::Hooks { action } => match action {
            cli::HooksAction::List { json } => {
                let settings =
                    subcommand_settings(&store, &cli::ModelArgs::default(), cli.yes, sources)?;
                hooks::list(&store, &settings, json)
            }
            cli::HooksAction::Approve => hooks::approve_command(&store),
        },
        Sub::Config {
            action: cli::ConfigAction::Show { json, ref model },
        } => config_show(cli, &store, model, json),
        Sub::Goal { json, args } => goal(&store, json, &args.join(" ")),
        Sub::Rewind {
            session,
            turns,
            files_only,
            conversation_only,
            force,
            undo,
            list,
            json,
        } => {
            let scope = match (files_only, conversation_only) {
                (true, _) => revolve_core::edit::Scope::FilesOnly,
                (_, true) => revolve_core::edit::Scope::ConversationOnly,
                _ => revolve_core::edit::Scope::Both,
            };
            let turns = usize::try_from(turns).unwrap_or(usize::MAX);
            let how = Rewind {
                turns,
                scope,
                undo,
                force,
                list,
                json,
            };
            rewind(store, session.as_deref(), &how, sources)
        }
        Sub::Init => commands::init(&store),
        Sub::Completions { shell } => completions(shell),
        Sub::Man => man(),
        Sub::Memory { action } => memory_command(action, &store),
    }
}

/// `revolve mcp list | approve | login | logout`.
fn mcp_command(action: cli::McpAction, cli: &Cli, store: &Store) -> Result<(), Error> {
    let settings = || subcommand_settings(store, &cli::ModelArgs::default(), cli.yes, &cli.sources);
    match action {
        cli::McpAction::List { json } => mcp::list(store, &settings()?, json),
        cli::McpAction::Approve => mcp::approve_command(store),
        cli::McpAction::Login { name, no_browser } => {
            mcp::login(store, &settings()?, &name, no_browser)
        }
        cli::McpAction::Logout { name } => mcp::logout(store, &name),
    }
}

/// `revolve config show`: the settings as a new session would settle
/// them, the project's MCP file and the server's window included.
fn config_show(cli: &Cli, store: &Store, model: &cli::ModelArgs, json: bool) -> Result<(), Error> {
    let mut settings = Settings::settle(&store.roots.config, cli, model)?;
    settings.mcp_project = mcp::read_project(store)?
        .map(|f| (f.path.to_string_lossy().into_owned(), f.servers, f.approved));
    learn_window(&mut settings, false);
    config::show(&settings, json)
}

/// `revolve goal [TEXT|done|pause|resume|clear]`, in the project
/// directory.
fn goal(store: &Store, json: bool, args: &str) -> Result<(), Error> {
    let dirs = MemoryDirs::locate(&store.cwd, &store.project, &store.roots);
    // The goal is kept in the project directory: one set before any
    // session creates that directory whole, as the first session
    // would have, since no session fills in a folder that exists.
    revolve_store::memory::ensure_project_dir(&dirs)
        .map_err(|e| Error::at(&dirs.project_dir, "cannot create", e))?;
    if json {
        return commands::goal_json(&dirs.project_dir, args);
    }
    let text = commands::goal(&dirs.project_dir, args)?;
    error::out(&format!("{text}\n"))
}

/// `revolve memory history | undo | show`, once a rewrite a crash
/// interrupted is finished.
fn memory_command(action: cli::MemoryAction, store: &Store) -> Result<(), Error> {
    let dirs = memory(store);
    let text = match action {
        cli::MemoryAction::History { diff, json: true } => {
            commands::memory_history_json(store, &dirs, diff)?
        }
        cli::MemoryAction::History { diff, json: false } => {
            commands::memory_history(store, &dirs, diff)?
        }
        cli::MemoryAction::Undo => commands::memory_undo(store, &dirs)?,
        cli::MemoryAction::Show => commands::memory_show(&dirs)?,
    };
    error::out(&text)
}

/// `revolve completions SHELL`: the completion script, from the same
/// definitions that parse the command line.
fn completions(shell: clap_complete::Shell) -> Result<(), Error> {
    let mut script = Vec::new();
    clap_complete::generate(
        shell,
        &mut <Cli as clap::CommandFactory>::command(),
        "revolve",
        &mut script,
    );
    error::out(&String::from_utf8_lossy(&script))
}

/// `revolve man`: the manual page, roff on stdout.
fn man() -> Result<(), Error> {
    let mut page = Vec::new();
    clap_mangen::Man::new(<Cli as clap::CommandFactory>::command())
        .render(&mut page)
        .map_err(Error::Manual)?;
    error::out(&String::from_utf8_lossy(&page))
}

/// A session, from the command line to its first line: the modes
/// checked, the settings settled, the MCP servers started, the window
/// learned, the runtime made, the session opened (new or resumed) and set
/// up; then its lines, in the REPL ([`chats::chat`]) or from PROMPT and
/// stdin ([`pipe::drive`]). Each line goes through [`line::handle`] to
/// `revolve_io::live::Live`, which feeds the core's session and sends the
/// requests it makes.
fn chat(mut cli: Cli, store: Store) -> Result<(), Error> {
    let stdin_tty = std::io::stdin().is_terminal();
    let interactive = stdin_tty && !cli.print;
    if !switch::bare_resume(&mut cli.resume, &store, interactive)? {
        return Ok(());
    }
    let resuming = check_modes(&cli, interactive, stdin_tty)?;
    let mut settings = settle(&cli, &store)?;
    prune_blobs(&store);
    let mcp = start_mcp(&store, &settings)?;
    // A new session's window, from the server when nobody gave one; a
    // resumed one keeps its own.
    learn_window(&mut settings, resuming);
    let runtime = chat_runtime(&cli, &store, &mut settings, resuming, mcp, stdin_tty)?;
    let dirs = runtime.memory.clone();
    let mut live = open(store, &cli, runtime, resuming, interactive, stdin_tty)?;
    let mut seeded = false;
    if !cli.bare {
        let (created, any) = prepare(&dirs, interactive);
        live.set_created_project_dir(created);
        seeded = any;
    }
    set_up(&mut live, &cli, &settings, resuming)?;
    if interactive && !cli.goal_run {
        let banner = banner(&live, &settings, seeded);
        return chats::chat(live, cli.prompt.as_deref(), &banner, &settings);
    }
    pipe::drive(live, cli, stdin_tty)
}

/// The modes that cannot go together, refused before anything starts:
/// JSON output in the REPL, `-p` with nothing to answer. Whether the run
/// resumes a session.
fn check_modes(cli: &Cli, interactive: bool, stdin_tty: bool) -> Result<bool, Error> {
    if interactive && !cli.goal_run && cli.output_format != Format::Text {
        return Err(Error::Usage(
            "--output-format stream-json and json are for runs without the REPL: add -p".into(),
        ));
    }
    let resuming = cli.r#continue || cli.resume.is_some();
    if cli.print && !cli.goal_run && cli.prompt.is_none() && !stdin::has_input(stdin_tty) {
        return Err(Error::Usage(pipe::NEEDS_INPUT.into()));
    }
    Ok(resuming)
}

/// The settings of a session: flags, variables and the config file; a
/// missing key is said before anything is asked or started (the
/// project's MCP servers included); a replay asks the recorded model.
fn settle(cli: &Cli, store: &Store) -> Result<Settings, Error> {
    let mut settings = Settings::settle(&store.roots.config, cli, &cli.model)?;
    if settings.replay.is_none() {
        settings.needed_key()?;
    }
    if let Some(source) = settings.replay.clone() {
        recorded_model(store, &source, &mut settings)?;
    }
    Ok(settings)
}

/// Blobs no session names any more go, at most once a day.
fn prune_blobs(store: &Store) {
    let state = &store.roots.state;
    if let Err(e) = revolve_tools::edit::prune_due(state, &state.join("projects")) {
        eprintln!(
            "revolve: cannot prune the content store {}: {e}",
            state.join("blobs").display()
        );
    }
}

/// The MCP servers start now, in parallel with the rest of the start and
/// the first prompt; a replayed session runs none (its calls are answered
/// from its log). What they said on the way is told on stderr.
fn start_mcp(store: &Store, settings: &Settings) -> Result<revolve_io::live::Mcp, Error> {
    let mut recorded = None;
    let (hub, notes) = if let Some(source) = &settings.replay {
        recorded = Some(mcp::recorded(store, source)?);
        (None, Vec::new())
    } else {
        let (servers, mut notes) = mcp::servers(store, settings, true);
        let bound = revolve_core::mcp::start_bound_s(settings.core.mcp_timeout_s);
        let (hub, started) = mcp::start(store, &servers, std::time::Duration::from_secs(bound));
        notes.extend(started);
        (hub, notes)
    };
    for note in notes {
        eprintln!("{note}");
    }
    Ok(revolve_io::live::Mcp { hub, recorded })
}

/// Asks the model server for its window when the core says to
/// ([`revolve_core::config::window_ask`]: a new session's, of a server
/// that can say), and takes what it answers; a line that says why goes to
/// stderr.
fn learn_window(settings: &mut Settings, resuming: bool) {
    use revolve_core::config::{window_ask, window_learned, WindowAsk};
    let replaying = settings.replay.is_some();
    let Some(ask) = window_ask(
        settings.provider.value,
        &settings.window,
        replaying,
        resuming,
    ) else {
        return;
    };
    // A key is sent when there is one; a local server needs none.
    let key = settings.needed_key().ok().flatten();
    let server = OpenAi::new(&settings.base_url.value, key);
    let model = &settings.model.value;
    let answer = match ask {
        WindowAsk::Ollama { .. } => server.ollama_context(model),
        WindowAsk::Server(probe) => server.context_window(probe, model),
    };
    if let Some((window, note)) = window_learned(ask, answer, model) {
        settings.window = window;
        if let Some(note) = note {
            eprintln!("{note}");
        }
    }
}

/// What a session runs with (see [`runtime`]), for a chat: `--grant`'s
/// paths, the provider, the MCP servers started, the subagents, the hooks
/// (asked about at a terminal) and the sandbox.
fn chat_runtime(
    cli: &Cli,
    store: &Store,
    settings: &mut Settings,
    resuming: bool,
    mcp: revolve_io::live::Mcp,
    stdin_tty: bool,
) -> Result<Runtime, Error> {
    settings.core.granted = approve::granted_up_front(&cli.grant, &store.cwd)?;
    let dirs = memory(store);
    let provider = provider(settings, store)?;
    let mut runtime = runtime(provider, store, settings, resuming, dirs);
    // Without a terminal nobody sees a command run unsandboxed: that is
    // refused where nothing can be enforced.
    // `revolve send` from a command writes the project's inboxes: they
    // are writable too (made now, since a rule needs a folder).
    let mut writable = settings.sandbox_writable.value.clone();
    let inboxes = store.roots.project(&store.project).join("inbox");
    if revolve_store::files::create_dir_all(&inboxes).is_ok() {
        writable.push(inboxes.to_string_lossy().into_owned());
    }
    runtime.mcp = mcp;
    runtime.agents = subagent::agents(cli)?;
    // The hooks: the config file's, and the project's once approved (a
    // replayed session runs none: its answers are recorded).
    if settings.replay.is_none() {
        let (hooks, notes) = hooks::hooks(store, settings, true);
        for note in notes {
            eprintln!("{note}");
        }
        runtime.settings.hooks = hooks;
    }
    (runtime.sandbox, runtime.sandbox_note) = revolve_core::sandbox::policy(
        settings.sandbox.value,
        settings.sandbox_network.value,
        writable,
        revolve_tools::sandbox::probe(),
        stdin_tty,
    );
    Ok(runtime)
}

/// The session opened: resumed (its past told in a line without the
/// REPL, or addressed in it), or started.
fn open(
    store: Store,
    cli: &Cli,
    runtime: Runtime,
    resuming: bool,
    interactive: bool,
    stdin_tty: bool,
) -> Result<Live, Error> {
    let front = Console::new(
        cli.output_format,
        Approvals {
            interactive: stdin_tty,
        },
    );
    if !resuming {
        return Live::start(store, runtime, front, cli.name.clone(), interactive);
    }
    if cli.name.is_some() {
        return Err(Error::Usage(
            "--name names a new session; use /name to rename a resumed one".into(),
        ));
    }
    // Without the REPL, one line about the past, not the transcript.
    let mut live = Live::resume(store, cli.resume.as_deref(), runtime, front, interactive)?;
    if interactive && !cli.goal_run {
        live.address()?;
    } else {
        eprintln!("{}", sessions::resumed_line(live.state()));
    }
    Ok(live)
}

/// What the session starts with once open: its start hooks, where its
/// window came from, the budget's note, `--plan` and `--effort`.
fn set_up(live: &mut Live, cli: &Cli, settings: &Settings, resuming: bool) -> Result<(), Error> {
    live.start_hooks(if resuming { "resume" } else { "startup" })?;
    let window = settings.window.source;
    live.front_mut().window_source =
        revolve_core::config::Takes::of(settings.model.source, window, resuming)
            .window_origin(window)
            .to_owned();
    if settings.core.max_cost.is_some() && live.prices().is_none() {
        eprintln!(
            "revolve: --max-cost: the prices of {} are not known, so no budget is kept \
             (add them under \"models\" in config.json)",
            live.state().model()
        );
    }
    if cli.plan {
        live.plan(true)?;
    }
    // The effort given for this run (a flag, the variable or the config
    // file), logged when it changes what the session asks.
    if settings.effort.value.is_some() {
        live.front_mut().hushed = true;
        let set = live.set_effort(settings.effort.value);
        live.front_mut().hushed = false;
        set?;
    }
    Ok(())
}

/// Finishes a refinement or an undo a crash interrupted, and says so.
fn recover(store: &Store, dirs: &MemoryDirs) {
    match revolve_store::refine::recover(&store.roots.state, dirs) {
        Ok(done) => done.iter().for_each(|d| eprintln!("revolve: {d}")),
        Err(e) => eprintln!("revolve: cannot check the memory snapshots: {e}"),
    }
}

/// Finds the memory directories and finishes a rewrite a crash interrupted
/// there; nothing is created yet (see [`prepare`]).
fn memory(store: &Store) -> MemoryDirs {
    let dirs = MemoryDirs::locate(&store.cwd, &store.project, &store.roots);
    recover(store, &dirs);
    dirs
}

/// Seeds the builtin documents and creates the project directory when it
/// does not exist yet; returns whether this run created it. Called once the
/// session is open (memory is read at each turn, not before), so a run that
/// stops at a usage error writes nothing here. The startup note on stderr
/// names exactly the files seeded, in every mode (stdout stays the answer
/// alone); the folder created is named in a terminal only. Failures here
/// are told, never fatal.
fn prepare(dirs: &MemoryDirs, interactive: bool) -> (bool, bool) {
    let mut any = false;
    match revolve_store::memory::seed(&dirs.global) {
        Ok(seeded) if !seeded.is_empty() => {
            any = true;
            eprintln!(
                "seeded {} into {}",
                seeded.join(", "),
                dirs.global.display()
            )
        }
        Ok(_) => {}
        Err(e) => eprintln!("revolve: cannot seed {}: {e}", dirs.global.display()),
    }
    if let Some(folder) = revolve_store::skills::global_folder(dirs) {
        match revolve_store::skills::seed(&folder) {
            Ok(seeded) if !seeded.is_empty() => {
                any = true;
                eprintln!("seeded {} into {}", seeded.join(", "), folder.display())
            }
            Ok(_) => {}
            Err(e) => eprintln!("revolve: cannot seed {}: {e}", folder.display()),
        }
    }
    match revolve_store::memory::ensure_project_dir(dirs) {
        Ok(Some(_)) => {
            if interactive {
                eprintln!(
                    "created the project directory {}",
                    dirs.project_dir.display()
                );
            }
            (true, any)
        }
        Ok(None) => (false, any),
        Err(e) => {
            eprintln!("revolve: cannot create {}: {e}", dirs.project_dir.display());
            (false, any)
        }
    }
}

/// The REPL's first lines: how to turn seeding off (when this run seeded),
/// then the session with its provider and model, its sandbox, what is
/// asked before it runs, and whether project instructions were found.
fn banner(live: &Live, settings: &Settings, seeded: bool) -> String {
    let mut out = String::new();
    if seeded {
        out.push_str(
            "(first run: the notes and skills above are yours to edit or delete; \
             --bare starts without memory or skills)\n",
        );
    }
    let state = live.state();
    let sandbox = match settings.sandbox.value {
        revolve_core::sandbox::Mode::Off => "no sandbox".to_owned(),
        mode => format!("sandbox {}", mode.as_str()),
    };
    let core = &settings.core;
    let asks = match (core.allow_shell, core.allow_edits) {
        (true, true) => "runs commands and edits without asking",
        (true, false) => "asks before edits",
        (false, true) => "asks before commands",
        (false, false) => "asks before commands and edits",
    };
    // As the first turn will read them (the prompt is built then).
    let instructions: Vec<String> = if settings.core.bare {
        Vec::new()
    } else {
        revolve_store::instructions::load(&live.store().cwd)
            .0
            .into_iter()
            .map(|f| f.path)
            .collect()
    };
    let found = match instructions.first() {
        None => "no AGENTS.md".to_owned(),
        Some(_) => {
            let names: Vec<&str> = instructions
                .iter()
                .map(|p| p.rsplit('/').next().unwrap_or(p))
                .collect();
            format!("{} found", names.join(", "))
        }
    };
    out.push_str(&format!(
        "session {} · {} {} · {sandbox}, {asks} · {found}\n",
        state.name().as_deref().unwrap_or("(unnamed)"),
        settings.speaks().name(),
        state.model(),
    ));
    out.push_str("/help for commands · @path attaches a file · \\ then Enter for a new line\n");
    out
}

/// What a session runs with: the settings as they settled, asking
/// `provider`, with its memory in `memory`. A resumed session keeps its
/// model and window unless a flag or a variable asks for others (the
/// core's rule, [`revolve_core::config::Takes`]).
fn runtime(
    provider: Arc<dyn Provider>,
    store: &Store,
    settings: &Settings,
    resuming: bool,
    memory: MemoryDirs,
) -> Runtime {
    let takes =
        revolve_core::config::Takes::of(settings.model.source, settings.window.source, resuming);
    Runtime {
        agents: Default::default(),
        settings: settings.core.clone(),
        memory,
        // Told once the session is open (Live::set_created_project_dir).
        created_project_dir: false,
        tree: revolve_tools::FileId::of(&store.cwd),
        provider,
        model: takes.model.then(|| settings.model.value.clone()),
        window: takes.window.then_some(settings.window.value),
        // A chat sets the session's (see [`chat`]); nothing else runs
        // commands.
        sandbox: revolve_core::sandbox::Policy::off(),
        sandbox_note: None,
        mcp: Default::default(),
        tool_choice: settings.tool_choice.value,
    }
}

/// What `revolve rewind` was asked.
struct Rewind {
    turns: usize,
    scope: revolve_core::edit::Scope,
    undo: bool,
    force: bool,
    list: bool,
    json: bool,
}

/// A provider for commands that never ask a model (`revolve rewind`): its
/// empty name keeps the session's provider in the `resumed` record.
struct Offline;

impl Provider for Offline {
    fn complete(
        &self,
        _: &revolve_core::Request,
        _: &mut dyn FnMut(&str),
    ) -> Result<revolve_core::Reply, revolve_provider::ProviderError> {
        Err(revolve_provider::ProviderError::new(
            "this command asks no model",
            "",
        ))
    }

    fn name(&self) -> &'static str {
        ""
    }
}

/// `revolve rewind`: the turns a session's rewind can reach (`--list`), or
/// a rewind of a session that is not running. A refusal (a file changed
/// behind revolve's back, nothing to rewind) is an error: exit 1.
fn rewind(
    store: Store,
    needle: Option<&str>,
    how: &Rewind,
    sources: &std::collections::BTreeMap<String, revolve_core::config::Source>,
) -> Result<(), Error> {
    let found = store.find(needle)?;
    if how.list {
        let read = revolve_store::log::read(&store.head(&found))
            .map_err(|e| Error::at(&found, "cannot read", e))?;
        let state = revolve_core::State::fold(&read.records);
        let turns = revolve_core::edit::turns(&state);
        if how.json {
            let text = serde_json::to_string_pretty(&turns).unwrap_or_default();
            return error::out(&format!("{text}\n"));
        }
        return error::out(&revolve_view::rewind_list(&turns, false));
    }
    let args = cli::ModelArgs::default();
    let mut settings = Settings::resolve(&store.roots.config, &args, false, false, false, sources)?;
    // A rewind reads no memory.
    settings.core.bare = true;
    let memory = MemoryDirs::locate(&store.cwd, &store.project, &store.roots);
    let runtime = runtime(Arc::new(Offline), &store, &settings, true, memory);
    let front = Console::new(Format::Text, Approvals::default());
    let mut live = Live::resume_at(store, &found, runtime, front, false)?;
    let done = live.rewind(how.turns, how.scope, how.undo, how.force)?;
    match done {
        Ok(()) if how.json => {
            let r = live.state().rewinds().last().map(|r| r.record.clone());
            let text = serde_json::to_string_pretty(&r).unwrap_or_default();
            error::out(&format!("{text}\n"))
        }
        Ok(()) => Ok(()),
        Err(why) => Err(Error::Rewind(why)),
    }
}

/// `revolve compact`: a session that is not running, compacted now. The
/// session is looked up first: a name that matches none is that error, not
/// the provider's (a missing key, say).
fn compact(store: Store, needle: Option<&str>, settings: &Settings) -> Result<(), Error> {
    let found = store.find(needle)?;
    let memory = MemoryDirs::locate(&store.cwd, &store.project, &store.roots);
    let provider = provider(settings, &store)?;
    let runtime = runtime(provider, &store, settings, true, memory);
    let front = Console::new(Format::Text, Approvals::default());
    let mut live = Live::resume_at(store, &found, runtime, front, false)?;
    match live.compact()? {
        Outcome::Failed(why) => Err(Error::Failed(why)),
        Outcome::Interrupted => Err(Error::Interrupted),
        _ => Ok(()),
    }
}

/// The provider the settings ask for: a recorded session's answers
/// (`replay:`), or a preset's API. Network providers retry by the core's
/// policy and say so on stderr.
fn provider(settings: &Settings, store: &Store) -> Result<Arc<dyn Provider>, Error> {
    if let Some(source) = &settings.replay {
        return Ok(Arc::new(replaying(store, source)?));
    }
    let preset = settings.speaks();
    let base = settings.base_url.value.clone();
    let key = settings.needed_key()?;
    let key_var = settings.key_var();
    let retries = settings.retries.value;
    if preset.wire().is_some() {
        revolve_core::config::check_base_url(&base).map_err(Error::Usage)?;
    }
    match preset.wire() {
        None => {
            let path = settings.script.as_ref().ok_or_else(|| {
                Error::Usage(
                    "--provider scripted needs --script FILE (a JSONL file of replies)".into(),
                )
            })?;
            Ok(Arc::new(Scripted::load(path).map_err(Error::Usage)?))
        }
        Some(revolve_core::request::Wire::OpenAi) => Ok(Arc::new(retrying(
            stall(
                OpenAi::new(&base, key)
                    .with_key_var(key_var)
                    .with_name(preset.name())
                    .with_counts(preset.counts_free()),
                settings,
                OpenAi::with_stall_timeout,
            ),
            retries,
        ))),
        Some(revolve_core::request::Wire::Responses) => Ok(Arc::new(retrying(
            stall(
                revolve_provider::Responses::new(&base, key).with_key_var(key_var),
                settings,
                revolve_provider::Responses::with_stall_timeout,
            ),
            retries,
        ))),
        Some(revolve_core::request::Wire::Anthropic) => Ok(Arc::new(retrying(
            stall(
                Anthropic::new(&base, key).with_key_var(key_var),
                settings,
                Anthropic::with_stall_timeout,
            ),
            retries,
        ))),
        Some(revolve_core::request::Wire::Gemini) => Ok(Arc::new(retrying(
            stall(
                Gemini::new(&base, key).with_key_var(key_var),
                settings,
                Gemini::with_stall_timeout,
            ),
            retries,
        ))),
    }
}

/// `--provider replay:FILE|NAME`: the answers the session's whole chain
/// recorded, given again in order.
fn replaying(store: &Store, source: &str) -> Result<Scripted, Error> {
    let found = store.find(Some(source))?;
    let mut records = Vec::new();
    for file in store.chain(&store.head(&found)) {
        let read =
            revolve_store::log::read(&file).map_err(|e| Error::at(&file, "cannot read", e))?;
        records.extend(read.records);
    }
    let answers = revolve_core::fixture::answers(&records);
    if answers.is_empty() {
        return Err(Error::Usage(format!(
            "{} holds no model answer to replay",
            found.display()
        )));
    }
    Ok(Scripted::replaying(found, answers))
}

/// `--provider replay:NAME` asks the model the recorded session began
/// with, at its window, so its requests are the recorded ones; a model or
/// window given by a flag or a variable still wins.
fn recorded_model(store: &Store, source: &str, settings: &mut Settings) -> Result<(), Error> {
    let found = store.find(Some(source))?;
    let Some(first) = store.chain(&store.head(&found)).into_iter().next() else {
        return Ok(());
    };
    let read = revolve_store::log::read(&first).map_err(|e| Error::at(&first, "cannot read", e))?;
    let Some(revolve_core::record::Record::Header(header)) = read.records.first() else {
        return Ok(());
    };
    (settings.model.value, settings.window.value) = revolve_core::config::replayed(
        &settings.model,
        &settings.window,
        (&header.model, header.window),
    );
    Ok(())
}

/// The provider with `--stall-timeout`, when given.
fn stall<P>(provider: P, settings: &Settings, with: fn(P, std::time::Duration) -> P) -> P {
    match settings.stall_timeout {
        Some(timeout) => with(provider, timeout),
        None => provider,
    }
}

/// A network provider that retries by the core's policy, says so on stderr,
/// and stops waiting when Ctrl-C abandons the request.
fn retrying<P: Provider>(inner: P, retries: u32) -> Retrying<P> {
    let notice = |text: &str| {
        // On a terminal, over the REPL's waiting line rather than after it.
        let clear = if std::io::stderr().is_terminal() {
            "\r\x1b[K"
        } else {
            ""
        };
        eprintln!("{clear}revolve: {}", revolve_view::inert(text));
    };
    Retrying::new(inner, notice)
        .with_retries(retries)
        .with_sleep(|wait| {
            // Counted down on a terminal (progress::countdown).
            progress::countdown(wait, std::io::stderr().is_terminal(), || {
                revolve_io::interrupt::pending() || revolve_io::interrupt::abandoned()
            })
        })
}
