//! The unit tests of /refine: when it is due, the model's reply, the history, the diff and the session text.

use super::*;
use quickcheck::quickcheck;
use time::macros::datetime;

fn file(scope: Scope, name: &str, content: &str) -> MemoryFile {
    MemoryFile {
        scope,
        name: name.into(),
        content: content.into(),
    }
}

#[test]
fn auto_refinement_waits_for_turns_or_a_compaction_and_cools_down() {
    let now = datetime!(2026-12-02 12:00 UTC);
    assert!(!auto_due(24, false, None, now));
    assert!(auto_due(25, false, None, now));
    assert!(auto_due(0, true, None, now));
    assert!(!auto_due(30, true, Some(now - Duration::minutes(19)), now));
    assert!(auto_due(30, false, Some(now - Duration::minutes(20)), now));
}

#[test]
fn replies_are_validated_whole() {
    let current = [file(Scope::Project, "db.md", "port 5432\n")];
    let ok = r#"Here you go: ```json
            {"files": [
              {"file": "project/db.md", "content": "port 6543\n", "change": "the port moved"},
              {"file": "global/style.md", "content": "tabs\n", "change": "noted the style"},
              {"file": "project/same.md", "delete": true, "change": "x"}
            ]} ```"#;
    let changes = parse_reply(ok, &current).unwrap();
    // Deleting a file that is not there changes nothing: dropped.
    assert_eq!(changes.len(), 2);
    assert_eq!(changes[0].verb(&current), "updated");
    assert_eq!(changes[1].path(), "global/style.md");
    assert_eq!(changes[1].verb(&current), "created");
    let delete = r#"{"files":[{"file":"project/db.md","delete":true,"change":"obsolete"}]}"#;
    assert_eq!(
        parse_reply(delete, &current).unwrap()[0].verb(&current),
        "deleted"
    );
    // Unchanged content is no change.
    let same = r#"{"files":[{"file":"project/db.md","content":"port 5432\n","change":"none"}]}"#;
    assert_eq!(parse_reply(same, &current), Ok(vec![]));
    for bad in [
        "no json here",
        r#"{"files": 3}"#,
        r#"{"files":[{"file":"db.md","content":"x","change":"y"}]}"#,
        r#"{"files":[{"file":"project/../x.md","content":"x","change":"y"}]}"#,
        r#"{"files":[{"file":"project/a.md","content":"x","change":""}]}"#,
        r#"{"files":[{"file":"project/a.md","change":"y"}]}"#,
        r#"{"files":[{"file":"project/a.md","content":"x","change":"y"},{"file":"project/a.md","content":"z","change":"y"}]}"#,
    ] {
        assert!(parse_reply(bad, &current).is_err(), "{bad}");
    }
}

#[test]
fn history_reads_as_a_log_newest_first() {
    let entry = |stamp: &str, session: &str, undone| Entry {
        scope: Scope::Project,
        stamp: stamp.into(),
        meta: SnapshotMeta {
            session: session.into(),
            messages: 4,
            kind: SnapshotKind::Manual,
            files: vec![(
                "project/worktree-preferences.md".into(),
                "updated: added the lint table constraint".into(),
            )],
            undone,
            pending: false,
        },
    };
    let text = history(
        &[
            entry("20260812T122300Z", "refine-check", false),
            entry("20260812T122300Z-2", "later", true),
        ],
        &BTreeMap::new(),
    );
    assert_eq!(
        text,
        "2026-08-12 12:23 UTC · session 'later' · after 4 messages · manual · (undone)\n    \
         updated project/worktree-preferences.md — added the lint table constraint\n\
         2026-08-12 12:23 UTC · session 'refine-check' · after 4 messages · manual\n    \
         updated project/worktree-preferences.md — added the lint table constraint\n"
    );
    let entries = [
        entry("20260812T122300Z", "a", false),
        entry("20260812T122300Z-10", "b", true),
        entry("20260812T122300Z-2", "c", false),
    ];
    assert_eq!(undo_target(&entries), Some("20260812T122300Z-2"));
}

#[test]
fn a_diff_is_unified() {
    let d = diff(
        "project/db.md",
        "port 5432\nhost a\n",
        "port 6543\nhost a\n",
    );
    assert!(
        d.contains("--- a/project/db.md") && d.contains("-port 5432") && d.contains("+port 6543"),
        "{d}"
    );
}

#[test]
fn a_session_reads_as_its_real_content() {
    let at = datetime!(2026-12-02 10:00 UTC);
    let call = crate::record::ToolCall {
        id: "c1".into(),
        name: "read_file".into(),
        arguments: r#"{"path":"src/db.rs"}"#.into(),
    };
    let blocks: Vec<String> = [
        Message::user(at, "where is the port set?"),
        Message {
            tool_calls: vec![call],
            ..Message::assistant(at, "")
        },
        Message::tool(at, "c1", "const PORT: u16 = 5432;\nfn main() {}\n"),
        Message::assistant(at, "In src/db.rs: 5432."),
    ]
    .iter()
    .map(block)
    .collect();
    let text = blocks.concat();
    assert!(text.contains("[tool call c1 read_file] {\"path\":\"src/db.rs\"}"));
    // The whole result, not its first line.
    assert!(text.contains("const PORT: u16 = 5432;\nfn main() {}"));
    assert!(text.contains("[assistant]\nIn src/db.rs: 5432."));
}

#[test]
fn pieces_chain_their_changes() {
    let f = |name: &str, content: &str| MemoryFile {
        scope: Scope::Project,
        name: name.into(),
        content: content.into(),
    };
    let original = vec![f("a.md", "one"), f("b.md", "bee")];
    let change = |name: &str, content: Option<&str>, why: &str| Change {
        scope: Scope::Project,
        label: Label::parse(name).unwrap(),
        content: content.map(str::to_owned),
        sentence: why.into(),
    };
    let first = vec![change("a.md", Some("two"), "a to two")];
    let after = applied(&original, &first);
    assert!(after.iter().any(|x| x.name == "a.md" && x.content == "two"));
    let second = vec![
        change("a.md", Some("three"), "a to three"),
        change("b.md", Some("bee"), "b back"),
        change("c.md", None, "no c"),
    ];
    // b ends as it began, and c was never there: neither is a change.
    let all = combined(&original, [first, second].concat());
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(all[0].content.as_deref(), Some("three"));
    assert_eq!(all[0].sentence, "a to two; a to three");
}

fn said(n: usize, text: &str) -> Message {
    Message::user(datetime!(2026-12-02 10:00 UTC), format!("{n}: {text}"))
}

#[test]
fn an_automatic_refinement_reads_everything_new_when_it_fits() {
    let messages: Vec<Message> = (0..4).map(|n| said(n, "short")).collect();
    assert_eq!(auto_range(&messages, 10_000), 0..4);
    let text = auto_text(&messages, 10_000);
    assert!(text.starts_with(AUTO_INTRO), "{text}");
    assert!(!text.contains("left out"), "{text}");
    let blocks: String = messages.iter().map(block).collect();
    assert!(text.ends_with(&blocks), "{text}");
    // Nothing new: the intro alone.
    assert_eq!(auto_range(&[], 10_000), 0..0);
    assert_eq!(auto_text(&[], 10_000), AUTO_INTRO);
}

#[test]
fn an_automatic_refinement_reads_the_newest_that_fit_one_request() {
    let messages: Vec<Message> = (0..10).map(|n| said(n, &"x".repeat(1_000))).collect();
    let each = block(&messages[0]).len();
    // Room for three blocks beside the intro and the line.
    let budget = AUTO_INTRO.len() + left_out(10).len() + 3 * each + each / 2;
    assert_eq!(auto_range(&messages, budget), 7..10);
    let text = auto_text(&messages, budget);
    assert!(text.len() <= budget, "{} over {budget}", text.len());
    assert!(
        text.starts_with(&format!("{AUTO_INTRO}{}", left_out(7))),
        "{text}"
    );
    assert!(text.contains("the 7 oldest messages since the last refinement are left out"));
    assert!(!text.contains("6: x") && text.contains("7: x") && text.contains("9: x"));
    // One left out says so in the singular.
    assert!(left_out(1).contains("the 1 oldest message since the last refinement is left out"));
}

#[test]
fn an_automatic_refinement_cuts_a_newest_message_larger_than_the_request() {
    let messages = vec![said(0, "old"), said(1, &"y".repeat(50_000))];
    assert_eq!(auto_range(&messages, 4_000), 1..2);
    let text = auto_text(&messages, 4_000);
    assert!(text.len() <= 4_000, "{}", text.len());
    assert!(text.contains("characters cut of this message to fit the context window"));
    assert!(text.contains(&left_out(1)) && !text.contains("0: old"));
}

#[test]
fn what_an_automatic_refinement_reads_starts_at_the_last_refinement_or_compaction() {
    use crate::record::{Compacted, Record, Refined, Rewound, Totals};
    let at = datetime!(2026-12-02 10:00 UTC);
    let mut s = crate::State::fold(&[Record::Header(crate::record::test_header())]);
    let turn = |s: &mut crate::State, n: usize| {
        s.apply(&Record::Message(said(n, "question")));
        s.apply(&Record::Message(Message::assistant(
            at,
            format!("answer {n}"),
        )));
    };
    let texts = |s: &crate::State| -> Vec<String> {
        unrefined(s).iter().map(|m| m.content.clone()).collect()
    };
    turn(&mut s, 1);
    assert_eq!(unrefined(&s).len(), 2, "never refined: everything");
    s.apply(&Record::Refined(Refined {
        at,
        auto: false,
        entry: None,
        pieces: 1,
        unmade: None,
    }));
    assert!(unrefined(&s).is_empty());
    turn(&mut s, 2);
    assert_eq!(texts(&s), ["2: question", "answer 2"]);

    // A rewind of turn two and one before it: what is left is read again.
    s.apply(&Record::Rewound(Rewound {
        at,
        turns: 2,
        from: 0,
        conversation: true,
        files: Vec::new(),
        undoes: None,
        forced: false,
    }));
    assert_eq!(s.messages_at_refine, 0);
    turn(&mut s, 3);
    assert_eq!(texts(&s), ["3: question", "answer 3"]);

    // A compaction starts a file whose notes and kept turns are read.
    let mut s = crate::State::fold(&[Record::Header(crate::record::test_header())]);
    s.messages_at_refine = 40;
    s.apply(&Record::Compacted(Compacted {
        at,
        from: "s0".into(),
        summarized: 40,
        notes: "port 5432".into(),
        kept: vec![said(4, "kept"), Message::assistant(at, "answer 4")],
        totals: Totals::default(),
        pending: false,
        refined_at: Some(at),
        turns_at_refine: 3,
        turn_rounds: 0,
        start_context: Vec::new(),
    }));
    turn(&mut s, 5);
    let read = unrefined(&s);
    assert_eq!(read.len(), 5);
    assert!(crate::compact::is_notes(&read[0]), "{:?}", read[0]);
    assert!(read[0].content.ends_with("port 5432"));
    assert_eq!(read[4].content, "answer 5");
}

quickcheck! {
    fn pieces_cover_every_block_once_within_the_budget(sizes: Vec<u16>, budget: u16) -> bool {
        let budget = usize::from(budget) + 1;
        let blocks: Vec<String> = sizes.iter().map(|&n| "x".repeat(usize::from(n) % 5000)).collect();
        let ranges = pieces(&blocks, budget);
        let mut next = 0;
        for r in &ranges {
            assert_eq!(r.start, next);
            let size: usize = blocks[r.clone()].iter().map(String::len).sum();
            assert!(size <= budget || r.len() == 1, "{r:?}: {size} over {budget}");
            assert!(piece_text(&blocks[r.clone()], budget).len() <= budget.max(size.min(budget) + 200));
            next = r.end;
        }
        next == blocks.len() && !ranges.is_empty()
    }

    fn an_automatic_refinement_reads_the_newest_messages_that_fit(sizes: Vec<u16>, budget: u16) -> bool {
        // `budget` is never under 1,000.
        let budget = usize::from(budget) + 1_000;
        let messages: Vec<Message> = sizes
            .iter()
            .enumerate()
            .map(|(n, &k)| said(n, &"x".repeat(usize::from(k) % 3000)))
            .collect();
        let n = messages.len();
        let r = auto_range(&messages, budget);
        let text = auto_text(&messages, budget);
        let blocks = |r: std::ops::Range<usize>| -> usize { messages[r].iter().map(|m| block(m).len()).sum() };
        // The newest, always; a run up to the end.
        assert_eq!(r.end, n);
        assert!(n == 0 || !r.is_empty());
        if r.start == 0 {
            // Everything fits, or there is one message only.
            assert!(AUTO_INTRO.len() + blocks(0..n) <= budget || n <= 1);
        } else {
            // One more would not fit beside the line naming what was left.
            assert!(AUTO_INTRO.len() + left_out(r.start).len() + blocks(r.start - 1..n) > budget);
            assert!(text.contains(&left_out(r.start)));
        }
        // Within the budget unless the newest alone is cut to it.
        assert!(text.len() <= budget || (r.len() == 1 && text.len() <= budget + 200));
        true
    }

    fn restoring_gives_the_snapshot_back_byte_for_byte(
        current: BTreeMap<String, Vec<u8>>,
        snapshot: BTreeMap<String, Vec<u8>>
    ) -> bool {
        let mut dir = current.clone();
        for step in restore_plan(&current, &snapshot) {
            match step {
                Restore::Put(n, b) => { dir.insert(n, b); }
                Restore::Remove(n) => { dir.remove(&n); }
            }
        }
        dir == snapshot && restore_plan(&dir, &snapshot).is_empty()
    }
}
