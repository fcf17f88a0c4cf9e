//! The unit tests of the standing goal: every command in every state, the progress notes, the prompt block and the file format.

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
            let notes = g
                .current
                .iter()
                .flat_map(|c| &c.notes)
                .all(|n| n.text.chars().count() <= NOTE_MAX_CHARS && !n.text.contains('\n'));
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

#[test]
fn a_run_met_its_goal_only_when_the_model_proposed_it_met() {
    let met: Vec<bool> = FIXTURES.iter().map(|f| run_met(&goals(*f))).collect();
    assert_eq!(met, [false, false, false, true, true]);
}
