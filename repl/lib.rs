//! The `revolve` binary: parses the command line, reads lines (rustyline in
//! a terminal, stdin otherwise), renders output. No decisions live here: the
//! core decides, `revolve-io` executes.

pub mod approve;
pub mod cli;
mod commands;
pub mod error;
pub mod live;
mod repl;

use std::io::{IsTerminal, Read};
use std::sync::Arc;

use revolve_io::memory::MemoryDirs;
use revolve_io::provider::{Anthropic, OpenAi, Provider, Retrying, Scripted};
use revolve_io::store::Store;

use approve::Approvals;
use cli::{Cli, ModelArgs, ProviderKind, Sub};
use error::Error;
use live::{Live, Outcome, Runtime};

/// The default model when none is given.
pub const DEFAULT_MODEL: &str = "gpt-4o-mini";
/// The default declared context window.
pub const DEFAULT_WINDOW: u64 = 128_000;
/// The default OpenAI-compatible endpoint.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// The default Anthropic endpoint.
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com/v1";
/// The default Anthropic model.
pub const ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";

/// Runs revolve with a parsed command line.
pub fn run(cli: Cli) -> Result<(), Error> {
    let cwd = std::env::current_dir()
        .map_err(|e| Error::Runtime(format!("cannot read the working directory: {e}")))?;
    let store = Store::open(&cwd).map_err(Error::Runtime)?;
    match cli.command {
        Some(Sub::Sessions { all, json }) => commands::sessions(&store, all, json),
        Some(Sub::Replay {
            session,
            json,
            requests,
            check,
        }) => commands::replay(
            &store,
            session.as_deref(),
            commands::ReplayMode::from_flags(json, requests, check),
        ),
        Some(Sub::Compact { session, model }) => compact(store, session.as_deref(), &model),
        Some(Sub::Goal { args }) => {
            let dirs = MemoryDirs::locate(&store.cwd, &store.project, &store.roots);
            let text = commands::goal(&dirs.project_dir, &args.join(" "))?;
            error::out(&format!("{text}\n"))
        }
        Some(Sub::Init) => commands::init(&store),
        Some(Sub::Memory { action }) => {
            let dirs = MemoryDirs::locate(&store.cwd, &store.project, &store.roots);
            recover(&store, &dirs);
            let text = match action {
                cli::MemoryAction::History { diff } => {
                    commands::memory_history(&store, &dirs, diff)?
                }
                cli::MemoryAction::Undo => commands::memory_undo(&store, &dirs)?,
                cli::MemoryAction::Show => commands::memory_show(&dirs)?,
            };
            error::out(&text)
        }
        None => chat(cli, store),
    }
}

fn chat(cli: Cli, store: Store) -> Result<(), Error> {
    let stdin_tty = std::io::stdin().is_terminal();
    let interactive = stdin_tty && !cli.print;
    let resuming = cli.r#continue || cli.resume.is_some();
    let approvals = Approvals::new(stdin_tty, cli.allow_shell, &cli.grant);
    let memory = memory(&store, cli.bare, interactive);
    let runtime = runtime(&cli.model, resuming, approvals, memory, !cli.no_auto_refine)?;
    let mut live = if resuming {
        if cli.name.is_some() {
            return Err(Error::Usage(
                "--name names a new session; use /name to rename a resumed one".into(),
            ));
        }
        Live::resume(store, cli.resume.as_deref(), runtime, true)?
    } else {
        Live::start(store, runtime, cli.name.clone(), interactive)?
    };
    if cli.goal_run {
        return goal_run(&mut live, cli.max_turns);
    }
    if interactive {
        return repl::run(&mut live, cli.prompt.as_deref());
    }
    match cli.prompt {
        Some(prompt) => {
            let mut text = prompt;
            if !stdin_tty {
                let mut piped = String::new();
                std::io::stdin()
                    .read_to_string(&mut piped)
                    .map_err(|e| Error::Runtime(format!("cannot read stdin: {e}")))?;
                if !piped.trim().is_empty() {
                    text = format!("{text}\n\n{piped}");
                }
            }
            piped_line(&mut live, &text).map(|_| ())
        }
        None => {
            for line in std::io::stdin().lines() {
                let line = line.map_err(|e| Error::Runtime(format!("cannot read stdin: {e}")))?;
                if piped_line(&mut live, &line)? == Outcome::Quit {
                    break;
                }
            }
            Ok(())
        }
    }
}

/// `--goal-run`: ordinary turns toward the standing goal, as long as the
/// core's [`revolve_core::goal::run_step`] says so; Ctrl-C ends it.
fn goal_run(live: &mut Live, max_turns: u32) -> Result<(), Error> {
    let mut turns = 0;
    loop {
        match revolve_core::goal::run_step(&live.goals()?, turns, max_turns) {
            revolve_core::goal::RunStep::Turn => {
                eprintln!("── goal run: turn {} of at most {max_turns}", turns + 1);
                piped_line(live, revolve_core::goal::RUN_PROMPT)?;
                turns += 1;
            }
            revolve_core::goal::RunStep::Stop(why) => {
                eprintln!("── goal run ends: {why}");
                return Ok(());
            }
        }
    }
}

/// One line without a terminal: a failed or interrupted turn ends the run.
fn piped_line(live: &mut Live, line: &str) -> Result<Outcome, Error> {
    match live.line(line)? {
        Outcome::Failed(why) => Err(Error::Runtime(why)),
        Outcome::Interrupted => Err(Error::Interrupted),
        other => Ok(other),
    }
}

/// Finishes a refinement or an undo a crash interrupted, and says so.
fn recover(store: &Store, dirs: &MemoryDirs) {
    match revolve_io::refine::recover(&store.roots.state, dirs) {
        Ok(done) => done.iter().for_each(|d| eprintln!("revolve: {d}")),
        Err(e) => eprintln!("revolve: cannot check the memory snapshots: {e}"),
    }
}

/// Where this run's memory is, and what starting it did there.
struct Memory {
    dirs: MemoryDirs,
    bare: bool,
    created: bool,
}

/// Finds the memory directories; unless `bare`, seeds the builtin documents
/// and creates the project directory when it does not exist yet. In a
/// terminal the startup note names exactly the files seeded and the folder
/// created; piped runs stay quiet. Failures here are told, never fatal.
fn memory(store: &Store, bare: bool, interactive: bool) -> Memory {
    let dirs = MemoryDirs::locate(&store.cwd, &store.project, &store.roots);
    recover(store, &dirs);
    if bare {
        return Memory {
            dirs,
            bare,
            created: false,
        };
    }
    match revolve_io::memory::seed(&dirs.global) {
        Ok(seeded) if !seeded.is_empty() && interactive => {
            eprintln!(
                "seeded {} into {}",
                seeded.join(", "),
                dirs.global.display()
            )
        }
        Ok(_) => {}
        Err(e) => eprintln!("revolve: cannot seed {}: {e}", dirs.global.display()),
    }
    let created = match revolve_io::memory::ensure_project_dir(&dirs) {
        Ok(Some(_)) => {
            if interactive {
                eprintln!(
                    "created the project directory {}",
                    dirs.project_dir.display()
                );
            }
            true
        }
        Ok(None) => false,
        Err(e) => {
            eprintln!("revolve: cannot create {}: {e}", dirs.project_dir.display());
            false
        }
    };
    Memory {
        dirs,
        bare,
        created,
    }
}

/// What a session runs with, from the flags. A resumed session keeps its
/// model unless one is asked for.
fn runtime(
    args: &ModelArgs,
    resuming: bool,
    approvals: Approvals,
    memory: Memory,
    auto_refine: bool,
) -> Result<Runtime, Error> {
    let (provider, default_model) = provider(args)?;
    Ok(Runtime {
        memory: memory.dirs,
        bare: memory.bare,
        created_project_dir: memory.created,
        auto_refine,
        provider,
        model: args
            .model
            .clone()
            .or_else(|| (!resuming).then(|| default_model.to_owned())),
        window: args.window,
        spill_chars: args
            .spill_result_chars
            .unwrap_or(revolve_core::session::SPILL_CHARS),
        prune_chars: args
            .prune_result_chars
            .unwrap_or(revolve_core::compact::PRUNE_CHARS),
        approvals,
    })
}

/// `revolve compact`: a session that is not running, compacted now.
fn compact(store: Store, needle: Option<&str>, args: &ModelArgs) -> Result<(), Error> {
    let memory = Memory {
        dirs: MemoryDirs::locate(&store.cwd, &store.project, &store.roots),
        bare: false,
        created: false,
    };
    let runtime = runtime(args, true, Approvals::new(false, false, &[]), memory, false)?;
    let mut live = Live::resume(store, needle, runtime, false)?;
    match live.line("/compact")? {
        Outcome::Failed(why) => Err(Error::Runtime(why)),
        Outcome::Interrupted => Err(Error::Interrupted),
        _ => Ok(()),
    }
}

/// The provider the flags ask for, with the default model it goes with.
/// Network providers retry by the core's policy and say so on stderr.
fn provider(args: &ModelArgs) -> Result<(Arc<dyn Provider>, &'static str), Error> {
    let key = |names: &[&str]| {
        names
            .iter()
            .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
    };
    match args.provider.unwrap_or(ProviderKind::Openai) {
        ProviderKind::Scripted => {
            let path = args.script.as_ref().ok_or_else(|| {
                Error::Usage(
                    "--provider scripted needs --script FILE (a JSONL file of replies)".into(),
                )
            })?;
            Ok((
                Arc::new(Scripted::load(path).map_err(Error::Usage)?),
                DEFAULT_MODEL,
            ))
        }
        ProviderKind::Openai => {
            let key = key(&["REVOLVE_API_KEY", "OPENAI_API_KEY"]);
            let base = args
                .base_url
                .clone()
                .unwrap_or_else(|| DEFAULT_BASE_URL.to_owned());
            if key.is_none() && base == DEFAULT_BASE_URL {
                return Err(Error::Usage(
                    "no API key: set OPENAI_API_KEY (or REVOLVE_API_KEY), point --base-url at a local server, \
                     or run offline with --provider scripted --script FILE"
                        .into(),
                ));
            }
            Ok((
                Arc::new(retrying(
                    stall(OpenAi::new(&base, key), args, OpenAi::with_stall_timeout),
                    args.retries,
                )),
                DEFAULT_MODEL,
            ))
        }
        ProviderKind::Anthropic => {
            let key = key(&["REVOLVE_API_KEY", "ANTHROPIC_API_KEY"]);
            let base = args
                .base_url
                .clone()
                .unwrap_or_else(|| ANTHROPIC_BASE_URL.to_owned());
            if key.is_none() && base == ANTHROPIC_BASE_URL {
                return Err(Error::Usage(
                    "no API key: set ANTHROPIC_API_KEY (or REVOLVE_API_KEY), or point --base-url at another server".into(),
                ));
            }
            Ok((
                Arc::new(retrying(
                    stall(
                        Anthropic::new(&base, key),
                        args,
                        Anthropic::with_stall_timeout,
                    ),
                    args.retries,
                )),
                ANTHROPIC_MODEL,
            ))
        }
    }
}

/// The provider with `--stall-timeout`, when given.
fn stall<P>(provider: P, args: &ModelArgs, with: fn(P, std::time::Duration) -> P) -> P {
    match args.stall_timeout {
        Some(timeout) => with(provider, timeout),
        None => provider,
    }
}

/// A network provider that retries by the core's policy, says so on stderr,
/// and stops waiting when Ctrl-C abandons the request.
fn retrying<P: Provider>(inner: P, retries: Option<u32>) -> Retrying<P> {
    let retries = retries.unwrap_or(revolve_core::retry::MAX_RETRIES);
    let notice = |text: &str| eprintln!("revolve: {text}");
    Retrying::new(inner, notice)
        .with_retries(retries)
        .with_sleep(|wait| {
            let deadline = std::time::Instant::now() + wait;
            while std::time::Instant::now() < deadline {
                if revolve_io::interrupt::pending() || revolve_io::interrupt::abandoned() {
                    return false;
                }
                std::thread::sleep(std::time::Duration::from_millis(25).min(wait));
            }
            true
        })
}
