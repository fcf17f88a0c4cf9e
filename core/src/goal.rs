//! The standing goal: an objective the user set that outlives the turn it
//! was set in. It lives in `goal.json` beside the memory files and in the
//! system prompt of every turn, never in the history, so a compaction cannot
//! lose it and a later run in the same directory picks it up.
//!
//! Pure data and decisions: time arrives as an argument, and the shell
//! (`revolve_io::goal`) reads and writes the file.
//!
//! # Driving it
//!
//! 1. At start, load [`Goals`] from the project directory (a missing file is
//!    [`Goals::default`]).
//! 2. `/goal …` in the REPL and `revolve goal …`: [`parse`] the arguments,
//!    then [`Goals::apply`] with the current time. Show the `Ok` text to the
//!    user, or the `Err` text as the error. Save when the value changed
//!    (`Goals` is `PartialEq`: compare with a clone taken before).
//! 3. A `GoalProgress` tool call: [`Goals::progress`]. The `Ok` or `Err`
//!    text is the tool result the model gets (an `Err` starts `error:`, like
//!    every tool error). Save on `Ok`.
//! 4. Before every model request: [`prompt_block`] is the goal section of
//!    the system prompt (`None`: no section). Before every input line:
//!    [`status_row`] is the goal's line under the input.
//!
//! # States and commands
//!
//! A goal is current or ended. A current goal is active (in the prompt) or
//! paused (kept, but out of the prompt). The model may propose that it is
//! met ([`Goal::met_proposed`]); that is a mark, never a state change: the
//! goal stays current, and in the prompt, until the user ends it. Ended
//! goals move to [`Goals::history`], which only grows.
//!
//! | command       | no goal         | active                         | paused                        |
//! |---------------|-----------------|--------------------------------|-------------------------------|
//! | `Show`        | says none       | the goal and all its notes     | the same                      |
//! | `Set(text)`   | sets it         | replaces it: the old one ends as cleared | the same            |
//! | `Done`        | error           | ends it as done                | the same                      |
//! | `Pause`       | error           | pauses it                      | no change, says so            |
//! | `Resume`      | error           | no change; withdraws a met proposal | resumes it; withdraws a met proposal |
//! | `Clear`       | error           | ends it as cleared             | the same                      |
//!
//! * Setting the text the current goal already has changes nothing, so a
//!   script that sets its goal on every run keeps the notes.
//! * Replacing a goal ends the old one as cleared, not done: only
//!   `/goal done` says an objective was met.
//! * Pause and resume name the state they lead to, so asking for the state
//!   the goal is already in succeeds without a change.
//! * Resume also means "keep working": it withdraws the model's proposal
//!   that the goal is met, which is how the user answers "not yet".

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::text::{flat as one_line, when};

/// How many progress notes travel in the prompt (the newest ones).
pub(crate) const PROMPT_NOTES: usize = 8;

/// The longest progress note kept, in characters; a longer one is cut.
pub(crate) const NOTE_MAX_CHARS: usize = 500;

/// The standing goal of a project directory and the goals that ended there:
/// the content of `goal.json`.
///
/// ```json
/// {
///   "current": {
///     "text": "make the parser accept trailing commas",
///     "set_at": "2026-12-02T10:00:00Z",
///     "status": "active",
///     "met_proposed": null,
///     "notes": [{ "at": "2026-12-02T10:05:00Z", "text": "tokenizer done" }]
///   },
///   "history": [
///     { "text": "…", "set_at": "…", "status": "active", "met_proposed": null,
///       "ended": { "at": "…", "how": "done" }, "notes": [] }
///   ]
/// }
/// ```
///
/// Every field has a default and unknown fields are ignored, so an older or
/// newer file still reads.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Goals {
    /// The goal that stands, active or paused.
    #[serde(default)]
    pub current: Option<Goal>,
    /// Goals that ended (done or cleared), oldest first. Only grows.
    #[serde(default)]
    pub history: Vec<Goal>,
}

/// One objective the user set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Goal {
    /// The objective, as the user wrote it (trimmed).
    pub text: String,
    /// When the user set it.
    #[serde(with = "time::serde::rfc3339")]
    pub set_at: OffsetDateTime,
    /// Whether it is in the prompt.
    #[serde(default)]
    pub status: Status,
    /// When the model first proposed that the objective is reached, if it
    /// did and the user has not withdrawn the proposal (`/goal resume`).
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub met_proposed: Option<OffsetDateTime>,
    /// How and when it ended; `None` while it is current.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<Ended>,
    /// Every progress note, oldest first; the prompt carries the last
    /// [`PROMPT_NOTES`].
    #[serde(default)]
    pub notes: Vec<Note>,
}

/// Whether a current goal is in the prompt.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// In the prompt of every turn.
    #[default]
    Active,
    /// Kept, but out of the prompt until resumed.
    Paused,
}

/// The end of a goal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ended {
    /// When it ended.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// Whether the user called it done or dropped it.
    pub how: Ending,
}

/// How a goal ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Ending {
    /// The user confirmed the objective met (`/goal done`).
    Done,
    /// The user dropped it (`/goal clear`, or a new goal replaced it).
    Cleared,
}

/// A progress note the model recorded with `GoalProgress`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Note {
    /// When it was recorded.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// What advanced: one line, at most [`NOTE_MAX_CHARS`] characters.
    pub text: String,
}

/// A `/goal …` (or `revolve goal …`) command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GoalCommand {
    /// `/goal`: show the goal and its notes.
    Show,
    /// `/goal TEXT`: set the objective, replacing one that stands.
    Set(String),
    /// `/goal done`: the objective is met; end it.
    Done,
    /// `/goal pause`: take it out of the prompt, keep it.
    Pause,
    /// `/goal resume`: bring it back into the prompt.
    Resume,
    /// `/goal clear`: drop it.
    Clear,
}

/// What `/help` could say about `/goal`.
pub const HELP: &str = "\
/goal TEXT   set the standing goal: in every turn's prompt until /goal done
/goal        show it with its progress notes
/goal done | pause | resume | clear";

/// Parses what follows `/goal` (or `revolve goal`).
///
/// Nothing is [`GoalCommand::Show`]; `done`, `pause`, `resume` and `clear`
/// (any case) are the commands; anything else is the text of a new goal. A
/// command word followed by more text is refused rather than taken as a
/// goal, so `/goal done with the parser` cannot replace the goal it meant to
/// end; text in double quotes is always a goal (`/goal "done: ship it"`).
pub fn parse(args: &str) -> Result<GoalCommand, String> {
    let args = args.trim();
    if args.is_empty() {
        return Ok(GoalCommand::Show);
    }
    if let Some(quoted) = args
        .strip_prefix('"')
        .and_then(|rest| rest.strip_suffix('"'))
    {
        let text = quoted.trim();
        if text.is_empty() {
            return Err("the goal text is empty; /goal TEXT sets a goal".to_owned());
        }
        return Ok(GoalCommand::Set(text.to_owned()));
    }
    let (word, rest) = match args.split_once(char::is_whitespace) {
        Some((w, r)) => (w, r.trim()),
        None => (args, ""),
    };
    let keyword = match word.to_ascii_lowercase().as_str() {
        "done" => Some(GoalCommand::Done),
        "pause" => Some(GoalCommand::Pause),
        "resume" => Some(GoalCommand::Resume),
        "clear" => Some(GoalCommand::Clear),
        _ => None,
    };
    match keyword {
        Some(cmd) if rest.is_empty() => Ok(cmd),
        Some(_) => Err(format!(
            "/goal {} takes nothing after it; to set a goal that starts with {word:?}, \
             put the text in double quotes",
            word.to_ascii_lowercase()
        )),
        None => Ok(GoalCommand::Set(args.to_owned())),
    }
}

impl Goals {
    /// The current goal if it is active (in the prompt).
    pub fn active(&self) -> Option<&Goal> {
        self.current.as_ref().filter(|g| g.status == Status::Active)
    }

    /// Runs a user's command at `now`. `Ok` is what the user sees; `Err` is
    /// a sentence saying why nothing happened. See the module doc for the
    /// table of commands and states.
    pub fn apply(&mut self, cmd: &GoalCommand, now: OffsetDateTime) -> Result<String, String> {
        match cmd {
            GoalCommand::Show => Ok(self.show()),
            GoalCommand::Set(text) => self.set(text, now),
            GoalCommand::Done => {
                let goal = self.end(Ending::Done, now).ok_or("no goal to mark done")?;
                Ok(format!(
                    "goal done: {}. It is out of the prompt and kept in the goal history.",
                    brief(&goal.text)
                ))
            }
            GoalCommand::Clear => {
                let goal = self.end(Ending::Cleared, now).ok_or("no goal to clear")?;
                Ok(format!(
                    "goal cleared: {}. It is out of the prompt and kept in the goal history.",
                    brief(&goal.text)
                ))
            }
            GoalCommand::Pause => {
                let goal = self.current.as_mut().ok_or("no goal to pause")?;
                Ok(match goal.status {
                    Status::Paused => "the goal is already paused; /goal resume brings it back",
                    Status::Active => {
                        goal.status = Status::Paused;
                        "goal paused: out of the prompt until /goal resume"
                    }
                }
                .to_owned())
            }
            GoalCommand::Resume => {
                let goal = self.current.as_mut().ok_or("no goal to resume")?;
                let withdrawn = goal.met_proposed.take().is_some();
                let was = std::mem::replace(&mut goal.status, Status::Active);
                let mut out = match was {
                    Status::Paused => "goal resumed: back in the prompt from the next request",
                    Status::Active => "the goal is already active",
                }
                .to_owned();
                if withdrawn {
                    out.push_str(
                        "; the model's proposal that it is met is withdrawn, so work goes on",
                    );
                }
                Ok(out)
            }
        }
    }

    /// The `GoalProgress` tool at `now`: appends `note` to the active goal
    /// and, with `met`, proposes that the objective is reached. A proposal
    /// never ends the goal: it stays current and in the prompt until the
    /// user answers `/goal done`. `Ok` and `Err` are the tool result the
    /// model gets; `Err` starts `error:`.
    ///
    /// The note is made one line (control characters become spaces) and cut
    /// to [`NOTE_MAX_CHARS`]; every note is kept, the prompt carries the last
    /// [`PROMPT_NOTES`]. The first proposal's time is kept when the model
    /// proposes again.
    pub fn progress(
        &mut self,
        note: &str,
        met: bool,
        now: OffsetDateTime,
    ) -> Result<String, String> {
        let goal = match &mut self.current {
            None => {
                return Err(
                    "error: GoalProgress: there is no goal to record progress on; \
                     the user sets one with /goal"
                        .to_owned(),
                )
            }
            Some(g) if g.status == Status::Paused => {
                return Err(
                    "error: GoalProgress: the goal is paused, so there is no active \
                     goal to record progress on; only the user resumes it"
                        .to_owned(),
                )
            }
            Some(g) => g,
        };
        let flat = one_line(note);
        let text = flat.trim();
        if text.is_empty() {
            return Err("error: GoalProgress: note is empty; say what advanced".to_owned());
        }
        let (text, cut) = cut(text, NOTE_MAX_CHARS);
        goal.notes.push(Note { at: now, text });
        let count = goal.notes.len();
        let mut out = format!(
            "noted ({count} note{} on this goal).",
            if count == 1 { "" } else { "s" }
        );
        if met {
            goal.met_proposed.get_or_insert(now);
            out.push_str(
                " Proposed the objective met: the goal stays standing until the user \
                 confirms with /goal done; keep working on whatever remains.",
            );
        }
        if cut {
            out.push_str(&format!(
                " The note was cut to {NOTE_MAX_CHARS} characters."
            ));
        }
        Ok(out)
    }

    fn set(&mut self, text: &str, now: OffsetDateTime) -> Result<String, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("the goal text is empty; /goal TEXT sets a goal".to_owned());
        }
        if let Some(goal) = &self.current {
            if goal.text == text {
                return Ok(match goal.status {
                    Status::Active => "that goal is already set; nothing changed",
                    Status::Paused => {
                        "that goal is already set, and paused; /goal resume brings it back"
                    }
                }
                .to_owned());
            }
        }
        let old = self.end(Ending::Cleared, now).map(|g| brief(&g.text));
        self.current = Some(Goal {
            text: text.to_owned(),
            set_at: now,
            status: Status::Active,
            met_proposed: None,
            ended: None,
            notes: Vec::new(),
        });
        let mut out = format!(
            "goal set: {}. It stays in the prompt of every turn until /goal done.",
            brief(text)
        );
        if let Some(old) = old {
            out.push_str(&format!(
                "\nIt replaces {old}, which was cleared (not marked done) and kept in the goal history."
            ));
        }
        Ok(out)
    }

    /// Ends the current goal, moves it to the history, returns it.
    fn end(&mut self, how: Ending, now: OffsetDateTime) -> Option<&Goal> {
        let mut goal = self.current.take()?;
        goal.ended = Some(Ended { at: now, how });
        self.history.push(goal);
        self.history.last()
    }

    fn show(&self) -> String {
        let Some(goal) = &self.current else {
            let mut out = "no goal set; /goal TEXT sets one".to_owned();
            if let Some(last) = self.history.last() {
                if let Some(ended) = last.ended {
                    let how = match ended.how {
                        Ending::Done => "done",
                        Ending::Cleared => "cleared",
                    };
                    out.push_str(&format!(
                        "\nthe last one, {}, was {how} {}",
                        brief(&last.text),
                        when(ended.at)
                    ));
                }
            }
            return out;
        };
        let state = match goal.status {
            Status::Active => "active (in the prompt of every turn)",
            Status::Paused => "paused (out of the prompt; /goal resume brings it back)",
        };
        let mut out = format!(
            "goal: {}\nstate: {state}\nset: {}\n",
            goal.text,
            when(goal.set_at)
        );
        if let Some(at) = goal.met_proposed {
            out.push_str(&format!(
                "the model proposed it met at {}: /goal done ends it, /goal resume keeps it going\n",
                when(at)
            ));
        }
        if goal.notes.is_empty() {
            out.push_str("no progress notes yet");
        } else {
            out.push_str(&format!("notes ({}, oldest first):", goal.notes.len()));
            for note in &goal.notes {
                out.push_str(&format!("\n  {}  {}", when(note.at), note.text));
            }
        }
        out
    }
}

/// The user message of each turn of an autonomous run (`--goal-run`).
pub const RUN_PROMPT: &str = "Keep working toward the standing goal. Take the next concrete step, \
record what advanced with GoalProgress, and propose the goal met (met: true) only when it is.";

/// What an autonomous run does next, after `turns` turns of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunStep {
    /// Take another turn with [`RUN_PROMPT`].
    Turn,
    /// Stop, telling the user why.
    Stop(String),
}

/// The autonomous run's decision: go on while a goal is active, not yet
/// proposed met, and fewer than `max_turns` turns were taken.
pub fn run_step(goals: &Goals, turns: u32, max_turns: u32) -> RunStep {
    match &goals.current {
        None => RunStep::Stop("no goal is set; set one with /goal or revolve goal".into()),
        Some(g) if g.status == Status::Paused => RunStep::Stop("the goal is paused".into()),
        Some(g) if g.met_proposed.is_some() => {
            RunStep::Stop("the model proposes the goal met; end it with /goal done".into())
        }
        Some(_) if turns >= max_turns => {
            RunStep::Stop(format!("{turns} turns taken, the most asked for"))
        }
        Some(_) => RunStep::Turn,
    }
}

/// Whether a goal run that stopped reached what it runs for: the model
/// proposed the goal met (only the user ends it). Any other stop (the
/// turns taken, a paused or missing goal) is a run that did not.
pub fn run_met(goals: &Goals) -> bool {
    goals
        .current
        .as_ref()
        .is_some_and(|g| g.met_proposed.is_some())
}

/// The goal section of the system prompt: `Some` only while a goal is
/// current and active. It carries the objective as standing intent, the last
/// [`PROMPT_NOTES`] notes oldest first, a met proposal if there is one, and
/// how to use `GoalProgress`.
pub fn prompt_block(goals: &Goals) -> Option<String> {
    let goal = goals.active()?;
    let mut out = format!(
        "## Standing goal\n\n\
         The user set this objective earlier; it still stands. Work toward it; it needs no \
         acknowledgement.\n\n\
         Objective (set {}):\n{}\n\n",
        when(goal.set_at),
        goal.text
    );
    let total = goal.notes.len();
    let shown = &goal.notes[total.saturating_sub(PROMPT_NOTES)..];
    if shown.is_empty() {
        out.push_str("No progress recorded yet.\n\n");
    } else {
        if shown.len() < total {
            out.push_str(&format!(
                "Progress so far, oldest first (the last {} of {total} notes):\n",
                shown.len()
            ));
        } else {
            out.push_str("Progress so far, oldest first:\n");
        }
        for note in shown {
            out.push_str(&format!("- {}: {}\n", when(note.at), note.text));
        }
        out.push('\n');
    }
    if let Some(at) = goal.met_proposed {
        out.push_str(&format!(
            "At {} you proposed that the objective is reached. The user has not confirmed \
             it, so it still stands.\n\n",
            when(at)
        ));
    }
    out.push_str(
        "Record progress with the GoalProgress tool at the moment it happens, not at the end \
         of the turn: `note` says what advanced. Pass `met: true` to propose that the objective \
         is reached; that is a proposal, not an ending: only the user ends the goal.",
    );
    Some(out)
}

/// The goal's line under the input: `goal: TEXT`, `goal (paused): TEXT` or
/// `goal (met?): TEXT` (an active goal the model proposed met), on one line
/// and cut to `width` characters with `…`. `None` without a current goal.
pub fn status_row(goals: &Goals, width: usize) -> Option<String> {
    let goal = goals.current.as_ref()?;
    let prefix = match (goal.status, goal.met_proposed) {
        (Status::Paused, _) => "goal (paused)",
        (Status::Active, Some(_)) => "goal (met?)",
        (Status::Active, None) => "goal",
    };
    let line = format!("{prefix}: {}", one_line(&goal.text));
    if line.chars().count() <= width {
        return Some(line);
    }
    let Some(keep) = width.checked_sub(1) else {
        return Some(String::new());
    };
    Some(line.chars().take(keep).chain(['…']).collect())
}

/// `text` cut to at most `max` characters (the last one `…` when cut), and
/// whether it was cut.
fn cut(text: &str, max: usize) -> (String, bool) {
    if text.chars().count() <= max {
        return (text.to_owned(), false);
    }
    let kept: String = text.chars().take(max.saturating_sub(1)).collect();
    (format!("{}…", kept.trim_end()), true)
}

/// A goal's text quoted on one line for a message, at most 60 characters.
fn brief(text: &str) -> String {
    format!("{:?}", cut(one_line(text).trim(), 60).0)
}

#[cfg(test)]
mod run_tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn an_autonomous_run_stops_for_every_reason() {
        let now = datetime!(2026-12-02 10:00 UTC);
        let mut goals = Goals::default();
        assert!(matches!(run_step(&goals, 0, 5), RunStep::Stop(_)));
        goals.apply(&GoalCommand::Set("ship".into()), now).unwrap();
        assert_eq!(run_step(&goals, 0, 5), RunStep::Turn);
        assert!(matches!(run_step(&goals, 5, 5), RunStep::Stop(s) if s.contains("5 turns")));
        goals.apply(&GoalCommand::Pause, now).unwrap();
        assert!(matches!(run_step(&goals, 0, 5), RunStep::Stop(s) if s.contains("paused")));
        goals.apply(&GoalCommand::Resume, now).unwrap();
        goals.progress("done", true, now).unwrap();
        assert!(matches!(run_step(&goals, 1, 5), RunStep::Stop(s) if s.contains("met")));
    }
}

#[cfg(test)]
mod tests;
