//! The REPL over one session after another: `/clear` and `/resume`
//! (see [`crate::switch`]) end the session and the loop goes on with the
//! next, started or resumed with what this run set up.

use crate::config::Settings;
use crate::console::Live;
use crate::error::Error;
use crate::repl::{self, Next};
use crate::sessions;

/// The REPL over one session after another, until one ends the run: the
/// session left is closed (and said how to come back to), the next
/// started or resumed with what this run set up (its MCP servers still
/// running).
pub(crate) fn chat(
    mut live: Live,
    first: Option<&str>,
    banner: &str,
    settings: &Settings,
) -> Result<(), Error> {
    let mut first = first;
    let mut banner = banner.to_owned();
    loop {
        let result = repl::run(&mut live, first.take(), &banner);
        let address = sessions::address(live.state());
        let id = live.state().id().to_owned();
        let (closed, store, mut runtime, front) = live.close_keeping();
        // Nothing a command started outlives the session.
        revolve_tools::end_session(&id);
        let to = match result {
            Ok(Next::Switch(to)) => to,
            other => {
                if !closed {
                    eprintln!("{}", sessions::exit_hint(&address));
                }
                return other.map(|_| ());
            }
        };
        if closed {
            eprintln!("ended {address} (it held nothing, so it is not kept)");
        } else {
            eprintln!(
                "ended {address}; revolve -r {address} (or /resume {address}) comes back to it"
            );
        }
        let (next, source) = match to {
            None => {
                // A new session asks what this run was told to ask.
                runtime.model = Some(settings.model.value.clone());
                runtime.window = Some(settings.window.value);
                (Live::start(store, runtime, front, None, true)?, "clear")
            }
            Some(path) => {
                // A resumed session keeps its model unless this run's
                // flags or variables chose one.
                let chosen = settings.model.source.overrides_resumed();
                runtime.model = chosen.then(|| settings.model.value.clone());
                runtime.window = chosen.then_some(settings.window.value);
                let mut live = Live::resume_at(store, &path, runtime, front, true)?;
                live.address()?;
                (live, "resume")
            }
        };
        live = next;
        live.start_hooks(source)?;
        banner = format!(
            "session {} · {}\n",
            live.state().name().as_deref().unwrap_or("(unnamed)"),
            live.state().model()
        );
    }
}
