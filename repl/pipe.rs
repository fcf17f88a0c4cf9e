//! A run without the REPL: PROMPT, the whole of stdin, or each stdin
//! line as a turn (what each makes is the core's
//! [`revolve_core::piped`]), or `--goal-run`'s turns toward the standing
//! goal. A failed, interrupted or stopped turn ends the run.

use revolve_core::piped::{self, Piped};
use revolve_io::live::Outcome;

use crate::cli::Cli;
use crate::console::{self, Live};
use crate::error::Error;
use crate::{line, stdin};

/// What `-p` says when it has nothing to answer.
pub(crate) const NEEDS_INPUT: &str =
    "-p needs a PROMPT or input on stdin (revolve -p 'explain this' < error.log)";

/// A run without the REPL, from start to end: its output begun, the
/// goal run or the piped lines, its output ended, the session closed.
pub(crate) fn drive(mut live: Live, cli: Cli, stdin_tty: bool) -> Result<(), Error> {
    console::begin(&mut live);
    let result = if cli.goal_run {
        goal_run(&mut live, cli.max_turns)
    } else {
        piped(&mut live, cli.prompt, cli.print, stdin_tty, &cli.image)
    };
    console::end(&mut live, &result);
    let id = live.state().id().to_owned();
    live.close();
    revolve_tools::end_session(&id);
    result
}

/// A run without the REPL: PROMPT (with piped stdin attached) as one turn;
/// with `-p` and no PROMPT, the whole of stdin as one turn (as `claude -p`
/// takes it); without `-p`, each stdin line as one.
fn piped(
    live: &mut Live,
    prompt: Option<String>,
    print: bool,
    stdin_tty: bool,
    image_files: &[std::path::PathBuf],
) -> Result<(), Error> {
    // `--image`: each picture made ready, or told in one line and left
    // out (the turn goes on without it).
    let mut images = Vec::new();
    for file in image_files {
        match live.image_file(file) {
            Ok(image) => images.push(image),
            Err(line) => eprintln!("revolve: {}", revolve_view::inert(&line)),
        }
    }
    match Piped::of(prompt, print, stdin_tty) {
        Piped::Whole => {
            let stdin = stdin::read_all().map_err(Error::Stdin)?;
            let text = piped::turn(None, &stdin).ok_or_else(|| Error::Usage(NEEDS_INPUT.into()))?;
            piped_line(live, &text, images).map(|_| ())
        }
        Piped::Prompt { prompt, attach } => {
            let stdin = if attach {
                stdin::read_all().map_err(Error::Stdin)?
            } else {
                String::new()
            };
            // Some always, with a prompt.
            let text = piped::turn(Some(&prompt), &stdin).unwrap_or(prompt);
            piped_line(live, &text, images).map(|_| ())
        }
        Piped::Lines => {
            for line in stdin::lines() {
                let line = line.map_err(Error::Stdin)?;
                if piped_line(live, &line, Vec::new())? == Outcome::Quit {
                    break;
                }
            }
            Ok(())
        }
    }
}

/// `--goal-run`: ordinary turns toward the standing goal, as long as the
/// core's [`revolve_core::goal::run_step`] says so; Ctrl-C ends it. It
/// counts the tool rounds its turns took as well as the turns (said once
/// there were any); a turn that reaches `--max-tool-rounds`, or repeats a
/// call, ends the run with exit 1; a run that stops without the goal
/// proposed met ends with exit 3.
fn goal_run(live: &mut Live, max_turns: u32) -> Result<(), Error> {
    let mut turns = 0;
    let mut rounds: u64 = 0;
    let told = |rounds: u64, when: &str| match rounds {
        0 => String::new(),
        1 => format!(" (1 tool round {when})"),
        n => format!(" ({n} tool rounds {when})"),
    };
    loop {
        match revolve_core::goal::run_step(&live.goals()?, turns, max_turns) {
            revolve_core::goal::RunStep::Turn => {
                eprintln!(
                    "── goal run: turn {} of at most {max_turns}{}",
                    turns + 1,
                    told(rounds, "so far")
                );
                let outcome = piped_line(live, revolve_core::goal::RUN_PROMPT, Vec::new());
                rounds += live.turn_rounds();
                turns += 1;
                if let Err(e) = outcome {
                    if e.code() == 1 {
                        eprintln!("── goal run ends at turn {turns}{}", told(rounds, "in all"));
                    }
                    return Err(e);
                }
            }
            revolve_core::goal::RunStep::Stop(why) => {
                eprintln!("── goal run ends: {why}{}", told(rounds, "in all"));
                if revolve_core::goal::run_met(&live.goals()?) {
                    return Ok(());
                }
                return Err(Error::GoalNotMet(why));
            }
        }
    }
}

/// One line without a terminal: a failed, interrupted or stopped turn ends
/// the run.
fn piped_line(
    live: &mut Live,
    line: &str,
    images: Vec<revolve_core::record::Image>,
) -> Result<Outcome, Error> {
    match line::handle(live, line, images)? {
        Outcome::Failed(why) => Err(Error::Failed(why)),
        Outcome::Interrupted => Err(Error::Interrupted),
        Outcome::Stopped(reason) => Err(Error::Stopped(reason)),
        other => Ok(other),
    }
}
