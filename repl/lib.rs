//! The `revolve` binary: parses the command line, reads lines (rustyline in
//! a terminal, stdin otherwise), renders output. No decisions live here: the
//! core decides, `revolve-io` executes.

pub mod cli;
mod commands;
pub mod error;
pub mod live;
mod repl;

use std::io::{IsTerminal, Read};
use std::sync::Arc;

use revolve_io::provider::{OpenAi, Provider, Scripted};
use revolve_io::store::Store;

use cli::{Cli, ModelArgs, ProviderKind, Sub};
use error::Error;
use live::{Live, Model, Outcome};

/// The default model when none is given.
pub const DEFAULT_MODEL: &str = "gpt-4o-mini";
/// The default declared context window.
pub const DEFAULT_WINDOW: u64 = 128_000;
/// The default OpenAI-compatible endpoint.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

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
        None => chat(cli, store),
    }
}

fn chat(cli: Cli, store: Store) -> Result<(), Error> {
    let stdin_tty = std::io::stdin().is_terminal();
    let interactive = stdin_tty && !cli.print;
    let provider = provider(&cli.model)?;
    let mut live = if cli.r#continue || cli.resume.is_some() {
        if cli.name.is_some() {
            return Err(Error::Usage(
                "--name names a new session; use /name to rename a resumed one".into(),
            ));
        }
        Live::resume(
            store,
            cli.resume.as_deref(),
            provider,
            cli.model.model.clone(),
            cli.model.window,
        )?
    } else {
        let model = Model {
            provider,
            name: cli
                .model
                .model
                .clone()
                .unwrap_or_else(|| DEFAULT_MODEL.to_owned()),
            window: cli.model.window.unwrap_or(DEFAULT_WINDOW),
        };
        Live::start(store, model, cli.name.clone(), interactive)?
    };
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

/// One line without a terminal: a failed or interrupted turn ends the run.
fn piped_line(live: &mut Live, line: &str) -> Result<Outcome, Error> {
    match live.line(line)? {
        Outcome::Failed(why) => Err(Error::Runtime(why)),
        Outcome::Interrupted => Err(Error::Interrupted),
        other => Ok(other),
    }
}

fn provider(args: &ModelArgs) -> Result<Arc<dyn Provider>, Error> {
    match args.provider.unwrap_or(ProviderKind::Openai) {
        ProviderKind::Scripted => {
            let path = args.script.as_ref().ok_or_else(|| {
                Error::Usage(
                    "--provider scripted needs --script FILE (a JSONL file of replies)".into(),
                )
            })?;
            Ok(Arc::new(Scripted::load(path).map_err(Error::Usage)?))
        }
        ProviderKind::Openai => {
            let key = ["REVOLVE_API_KEY", "OPENAI_API_KEY"]
                .iter()
                .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()));
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
            Ok(Arc::new(OpenAi::new(&base, key)))
        }
    }
}
