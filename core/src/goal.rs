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

use crate::view::when;

/// How many progress notes travel in the prompt (the newest ones).
pub const PROMPT_NOTES: usize = 8;

/// The longest progress note kept, in characters; a longer one is cut.
pub const NOTE_MAX_CHARS: usize = 500;

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

/// Text on one line: every control character (newlines, tabs) is a space.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
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
mod tests {
    use super::*;
    use quickcheck::{Arbitrary, Gen, QuickCheck};
    use time::macros::datetime;
    use time::Duration;

    const T0: OffsetDateTime = datetime!(2026-12-02 10:00 UTC);

    fn at(minutes: i64) -> OffsetDateTime {
        T0 + Duration::minutes(minutes)
    }

    /// The states a goal can be in, as test fixtures.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Fixture {
        NoGoal,
        Active,
        Paused,
        MetProposed,
        PausedMetProposed,
    }

    const FIXTURES: [Fixture; 5] = [
        Fixture::NoGoal,
        Fixture::Active,
        Fixture::Paused,
        Fixture::MetProposed,
        Fixture::PausedMetProposed,
    ];

    fn goals(f: Fixture) -> Goals {
        let mut g = Goals::default();
        if let Fixture::NoGoal = f {
            // One ended goal, so history growth is visible.
            g.apply(&GoalCommand::Set("old".into()), at(-60)).unwrap();
            g.apply(&GoalCommand::Done, at(-30)).unwrap();
            return g;
        }
        g.apply(&GoalCommand::Set("ship the parser".into()), T0)
            .unwrap();
        g.progress("tokenizer done", false, at(1)).unwrap();
        if matches!(f, Fixture::MetProposed | Fixture::PausedMetProposed) {
            g.progress("all tests pass", true, at(2)).unwrap();
        }
        if matches!(f, Fixture::Paused | Fixture::PausedMetProposed) {
            g.apply(&GoalCommand::Pause, at(3)).unwrap();
        }
        g
    }

    /// What a command did, in a few words, for the table.
    #[derive(Debug, PartialEq, Eq)]
    enum Effect {
        /// `Err`, and nothing changed.
        Refused,
        /// `Ok`, and nothing changed.
        Unchanged,
        /// `Ok`; the current goal is now in this state (status, met?) and
        /// the history grew by this much.
        Now(Option<(Status, bool)>, usize),
    }

    fn effect(before: &Goals, after: &Goals, result: &Result<String, String>) -> Effect {
        if result.is_err() {
            assert_eq!(before, after, "an error changed the state");
            return Effect::Refused;
        }
        if before == after {
            return Effect::Unchanged;
        }
        let now = after
            .current
            .as_ref()
            .map(|g| (g.status, g.met_proposed.is_some()));
        Effect::Now(now, after.history.len() - before.history.len())
    }

    #[test]
    fn every_command_in_every_state() {
        use Effect::*;
        use Fixture as F;
        use GoalCommand as C;
        let active = Some((Status::Active, false));
        let paused = Some((Status::Paused, false));
        let paused_met = Some((Status::Paused, true));
        let set = || C::Set("new goal".into());
        #[rustfmt::skip]
        let table: Vec<(F, C, Effect)> = vec![
            (F::NoGoal, C::Show, Unchanged),
            (F::NoGoal, set(), Now(active, 0)),
            (F::NoGoal, C::Done, Refused),
            (F::NoGoal, C::Pause, Refused),
            (F::NoGoal, C::Resume, Refused),
            (F::NoGoal, C::Clear, Refused),

            (F::Active, C::Show, Unchanged),
            (F::Active, set(), Now(active, 1)),
            (F::Active, C::Set("ship the parser".into()), Unchanged),
            (F::Active, C::Done, Now(None, 1)),
            (F::Active, C::Pause, Now(paused, 0)),
            (F::Active, C::Resume, Unchanged),
            (F::Active, C::Clear, Now(None, 1)),

            (F::Paused, C::Show, Unchanged),
            (F::Paused, set(), Now(active, 1)),
            (F::Paused, C::Set("ship the parser".into()), Unchanged),
            (F::Paused, C::Done, Now(None, 1)),
            (F::Paused, C::Pause, Unchanged),
            (F::Paused, C::Resume, Now(active, 0)),
            (F::Paused, C::Clear, Now(None, 1)),

            (F::MetProposed, C::Show, Unchanged),
            (F::MetProposed, set(), Now(active, 1)),
            (F::MetProposed, C::Done, Now(None, 1)),
            (F::MetProposed, C::Pause, Now(paused_met, 0)),
            (F::MetProposed, C::Resume, Now(active, 0)),
            (F::MetProposed, C::Clear, Now(None, 1)),

            (F::PausedMetProposed, C::Show, Unchanged),
            (F::PausedMetProposed, set(), Now(active, 1)),
            (F::PausedMetProposed, C::Done, Now(None, 1)),
            (F::PausedMetProposed, C::Pause, Unchanged),
            (F::PausedMetProposed, C::Resume, Now(active, 0)),
            (F::PausedMetProposed, C::Clear, Now(None, 1)),
        ];
        for f in FIXTURES {
            for c in [set(), C::Show, C::Done, C::Pause, C::Resume, C::Clear] {
                assert!(
                    table.iter().any(|(tf, tc, _)| *tf == f && *tc == c),
                    "the table misses {f:?} {c:?}"
                );
            }
        }
        for (f, cmd, expected) in table {
            let before = goals(f);
            let mut after = before.clone();
            let result = after.apply(&cmd, at(10));
            let got = effect(&before, &after, &result);
            assert_eq!(got, expected, "{f:?} {cmd:?}: {result:?}");
            let text = result.unwrap_or_else(|e| e);
            assert!(!text.trim().is_empty(), "{f:?} {cmd:?}: empty text");
        }
    }

    #[test]
    fn ending_records_how_and_when_and_keeps_the_notes() {
        for (cmd, how) in [
            (GoalCommand::Done, Ending::Done),
            (GoalCommand::Clear, Ending::Cleared),
            (GoalCommand::Set("next".into()), Ending::Cleared),
        ] {
            let mut g = goals(Fixture::MetProposed);
            g.apply(&cmd, at(10)).unwrap();
            let old = g.history.last().unwrap();
            assert_eq!(old.ended, Some(Ended { at: at(10), how }), "{cmd:?}");
            assert_eq!(old.text, "ship the parser");
            assert_eq!(old.notes.len(), 2);
            assert_eq!(old.met_proposed, Some(at(2)));
        }
    }

    #[test]
    fn messages_say_what_happened() {
        let mut g = goals(Fixture::Active);
        let replaced = g.apply(&GoalCommand::Set("b".into()), at(5)).unwrap();
        assert_eq!(
            replaced,
            "goal set: \"b\". It stays in the prompt of every turn until /goal done.\n\
             It replaces \"ship the parser\", which was cleared (not marked done) and kept in \
             the goal history."
        );
        let mut none = Goals::default();
        assert_eq!(
            none.apply(&GoalCommand::Pause, T0),
            Err("no goal to pause".into())
        );
        assert_eq!(
            none.apply(&GoalCommand::Done, T0),
            Err("no goal to mark done".into())
        );
        assert_eq!(
            none.apply(&GoalCommand::Show, T0),
            Ok("no goal set; /goal TEXT sets one".into())
        );
        assert_eq!(
            goals(Fixture::NoGoal).apply(&GoalCommand::Show, T0),
            Ok("no goal set; /goal TEXT sets one\n\
                the last one, \"old\", was done 2026-12-02 09:30 UTC"
                .into())
        );
        let mut met = goals(Fixture::MetProposed);
        assert_eq!(
            met.apply(&GoalCommand::Resume, T0),
            Ok(
                "the goal is already active; the model's proposal that it is met is \
                withdrawn, so work goes on"
                    .into()
            )
        );
        assert_eq!(
            Goals::default().apply(&GoalCommand::Set("  \n ".into()), T0),
            Err("the goal text is empty; /goal TEXT sets a goal".into())
        );
    }

    #[test]
    fn show_lists_every_note() {
        let mut g = goals(Fixture::PausedMetProposed);
        insta::assert_snapshot!("show_paused_met", g.apply(&GoalCommand::Show, T0).unwrap());
    }

    #[test]
    fn parses() {
        use GoalCommand as C;
        let ok = [
            ("", C::Show),
            ("   ", C::Show),
            ("done", C::Done),
            (" DONE ", C::Done),
            ("pause", C::Pause),
            ("Resume", C::Resume),
            ("clear", C::Clear),
            ("ship it", C::Set("ship it".into())),
            ("  ship\nit  ", C::Set("ship\nit".into())),
            ("donut", C::Set("donut".into())),
            (
                "\"done with the parser\"",
                C::Set("done with the parser".into()),
            ),
            ("\"clear\"", C::Set("clear".into())),
            ("\"", C::Set("\"".into())),
        ];
        for (args, cmd) in ok {
            assert_eq!(parse(args), Ok(cmd), "{args:?}");
        }
        for args in ["\"\"", "\"   \"", "done with the parser", "pause now"] {
            assert!(parse(args).is_err(), "{args:?}");
        }
        assert_eq!(
            parse("Done with it"),
            Err(
                "/goal done takes nothing after it; to set a goal that starts with \"Done\", \
                 put the text in double quotes"
                    .into()
            )
        );
    }

    #[test]
    fn progress_needs_an_active_goal() {
        let mut none = Goals::default();
        let e = none.progress("x", false, T0).unwrap_err();
        assert!(
            e.starts_with("error: GoalProgress: there is no goal"),
            "{e}"
        );
        let mut paused = goals(Fixture::Paused);
        let before = paused.clone();
        let e = paused.progress("x", true, T0).unwrap_err();
        assert!(
            e.starts_with("error: GoalProgress: the goal is paused"),
            "{e}"
        );
        assert_eq!(paused, before);
    }

    #[test]
    fn progress_appends_cut_one_line_notes() {
        let mut g = goals(Fixture::Active);
        assert_eq!(
            g.progress("  parser\nhandles commas\t ", false, at(5)),
            Ok("noted (2 notes on this goal).".into())
        );
        let current = g.current.as_ref().unwrap();
        assert_eq!(current.notes[1].text, "parser handles commas");
        assert_eq!(current.notes[1].at, at(5));
        assert_eq!(current.met_proposed, None);

        let long = "é".repeat(NOTE_MAX_CHARS + 10);
        let r = g.progress(&long, false, at(6)).unwrap();
        assert!(r.ends_with("The note was cut to 500 characters."), "{r}");
        let note = &g.current.as_ref().unwrap().notes[2].text;
        assert_eq!(note.chars().count(), NOTE_MAX_CHARS);
        assert!(note.ends_with('…'));
        let exact = "x".repeat(NOTE_MAX_CHARS);
        assert!(!g.progress(&exact, false, at(7)).unwrap().contains("cut"));

        let before = g.clone();
        let e = g.progress(" \n ", true, at(8)).unwrap_err();
        assert_eq!(e, "error: GoalProgress: note is empty; say what advanced");
        assert_eq!(g, before, "an empty note proposes nothing");
    }

    #[test]
    fn met_is_a_proposal_that_keeps_the_goal_standing() {
        let mut g = goals(Fixture::Active);
        let r = g.progress("tests pass", true, at(5)).unwrap();
        assert!(r.contains("until the user confirms with /goal done"), "{r}");
        assert_eq!(g.history.len(), 0);
        let current = g.current.as_ref().unwrap();
        assert_eq!(current.status, Status::Active);
        assert_eq!(current.met_proposed, Some(at(5)));
        assert!(prompt_block(&g)
            .unwrap()
            .contains("At 2026-12-02 10:05 UTC you proposed"));
        assert_eq!(
            status_row(&g, 80).as_deref(),
            Some("goal (met?): ship the parser")
        );
        // Proposing again keeps the first time; a plain note keeps the proposal.
        g.progress("docs too", true, at(6)).unwrap();
        g.progress("tidied", false, at(7)).unwrap();
        assert_eq!(g.current.as_ref().unwrap().met_proposed, Some(at(5)));
        // Only the user ends it.
        g.apply(&GoalCommand::Done, at(8)).unwrap();
        assert_eq!(g.current, None);
        assert_eq!(prompt_block(&g), None);
        assert_eq!(status_row(&g, 80), None);
    }

    #[test]
    fn prompt_block_only_for_an_active_goal() {
        for f in FIXTURES {
            let g = goals(f);
            let active = matches!(f, Fixture::Active | Fixture::MetProposed);
            assert_eq!(prompt_block(&g).is_some(), active, "{f:?}");
        }
    }

    fn ten_notes() -> Goals {
        let mut g = Goals::default();
        g.apply(
            &GoalCommand::Set("make the parser accept trailing commas\nin every list".into()),
            T0,
        )
        .unwrap();
        for i in 1..=10 {
            g.progress(&format!("step {i}"), false, at(i)).unwrap();
        }
        g
    }

    #[test]
    fn prompt_block_snapshots() {
        let mut g = ten_notes();
        insta::assert_snapshot!("prompt_block_ten_notes", prompt_block(&g).unwrap());
        g.progress("all lists accept trailing commas; tests pass", true, at(11))
            .unwrap();
        insta::assert_snapshot!("prompt_block_met_proposed", prompt_block(&g).unwrap());
        let mut fresh = Goals::default();
        fresh
            .apply(&GoalCommand::Set("keep the build green".into()), T0)
            .unwrap();
        insta::assert_snapshot!("prompt_block_no_notes", prompt_block(&fresh).unwrap());
    }

    #[test]
    fn status_row_snapshots() {
        let mut out = String::new();
        for f in [Fixture::Active, Fixture::Paused, Fixture::MetProposed] {
            let mut g = goals(f);
            if let Some(goal) = &mut g.current {
                goal.text = "make the parser accept trailing commas\nin every list".into();
            }
            for width in [80, 40, 20, 14, 1, 0] {
                let row = status_row(&g, width).unwrap();
                assert!(
                    row.chars().count() <= width,
                    "{row:?} is wider than {width}"
                );
                out.push_str(&format!("{f:?} {width:>2} |{row}|\n"));
            }
        }
        insta::assert_snapshot!("status_rows", out);
    }

    #[test]
    fn serde_round_trip_and_defaults() {
        let mut g = ten_notes();
        g.progress("done", true, at(20)).unwrap();
        g.apply(&GoalCommand::Set("next".into()), at(21)).unwrap();
        let json = serde_json::to_string(&g).unwrap();
        assert_eq!(serde_json::from_str::<Goals>(&json).unwrap(), g);
        assert_eq!(
            serde_json::from_str::<Goals>("{}").unwrap(),
            Goals::default()
        );
        let minimal: Goals = serde_json::from_str(
            r#"{"current":{"text":"x","set_at":"2026-12-02T10:00:00Z"},"future":1}"#,
        )
        .unwrap();
        let current = minimal.current.unwrap();
        assert_eq!(current.status, Status::Active);
        assert!(current.notes.is_empty() && current.met_proposed.is_none());
    }

    /// One step of a random run.
    #[derive(Clone, Debug)]
    enum Op {
        Command(GoalCommand),
        Progress(String, bool),
    }

    impl Arbitrary for Op {
        fn arbitrary(g: &mut Gen) -> Op {
            let texts = ["a", "b", "", "  ", "line\nbreak", "über", "done"];
            let text = g.choose(&texts).copied().unwrap_or_default().to_owned();
            match u8::arbitrary(g) % 8 {
                0 => Op::Command(GoalCommand::Show),
                1 => Op::Command(GoalCommand::Set(text)),
                2 => Op::Command(GoalCommand::Done),
                3 => Op::Command(GoalCommand::Pause),
                4 => Op::Command(GoalCommand::Resume),
                5 => Op::Command(GoalCommand::Clear),
                _ => Op::Progress(
                    if bool::arbitrary(g) {
                        String::arbitrary(g)
                    } else {
                        text
                    },
                    bool::arbitrary(g),
                ),
            }
        }
    }

    #[test]
    fn any_run_keeps_the_invariants() {
        fn prop(ops: Vec<Op>, width: u8) -> bool {
            let mut g = Goals::default();
            for (i, op) in ops.into_iter().enumerate() {
                let before = g.clone();
                let now = T0 + Duration::seconds(i as i64);
                let result = match &op {
                    Op::Command(c) => g.apply(c, now),
                    Op::Progress(note, met) => g.progress(note, *met, now),
                };
                let history_grew = g.history.len() >= before.history.len()
                    && g.history[..before.history.len()] == before.history[..];
                let errors_change_nothing = result.is_ok() || g == before;
                let shapes = g.current.as_ref().is_none_or(|c| c.ended.is_none())
                    && g.history.iter().all(|h| h.ended.is_some());
                let prompt = prompt_block(&g).is_some() == g.active().is_some();
                let row = status_row(&g, width.into())
                    .is_none_or(|r| r.chars().count() <= width.into() && !r.contains('\n'));
                let notes =
                    g.current.iter().flat_map(|c| &c.notes).all(|n| {
                        n.text.chars().count() <= NOTE_MAX_CHARS && !n.text.contains('\n')
                    });
                if !(history_grew && errors_change_nothing && shapes && prompt && row && notes) {
                    return false;
                }
            }
            true
        }
        QuickCheck::new()
            .tests(500)
            .quickcheck(prop as fn(Vec<Op>, u8) -> bool);
    }
}
