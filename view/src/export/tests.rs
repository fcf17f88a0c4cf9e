use time::macros::datetime;

use super::*;
use revolve_core::record::{Edit, EditBy, MemoryChanged, ModelChanged, Totals};

fn at() -> OffsetDateTime {
    datetime!(2026-12-02 10:00 UTC)
}

fn keys() -> Keys {
    Keys::new(["sk-secret-0123456789".to_owned()])
}

#[test]
fn a_long_text_is_cut_to_a_head_and_a_tail() {
    let text = "a".repeat(300) + &"b".repeat(100);
    let cut = Cut::of(&text, 100, &Keys::default());
    assert_eq!(cut.head, "a".repeat(75));
    assert_eq!(cut.tail, "b".repeat(25));
    assert_eq!(cut.omitted, 300);
    let short = Cut::of("héllo", 5, &Keys::default());
    assert_eq!((short.head.as_str(), short.omitted), ("héllo", 0));
}

#[test]
fn a_call_waits_for_its_result_and_takes_its_edit_along() {
    let mut items = Items::new(keys(), 1000);
    let mut call = Message::assistant(at(), "");
    call.tool_calls.push(ToolCall {
        id: "c1".into(),
        name: "edit_file".into(),
        arguments: r#"{"path":"a.rs","old_string":"x","new_string":"sk-secret-0123456789"}"#.into(),
    });
    assert_eq!(items.push(&Record::Message(call)), vec![]);
    let edit = Record::Edit(Edit {
        at: at(),
        call: "c1".into(),
        path: "/w/a.rs".into(),
        by: EditBy::from("edit_file"),
        before: None,
        after: None,
        diff: "--- a/a.rs\n+++ b/a.rs\n@@ -1 +1 @@\n-x\n+sk-secret-0123456789\n".into(),
        added: None,
        removed: None,
        written: false,
    });
    assert_eq!(items.push(&edit), vec![]);
    let got = items.push(&Record::Message(Message::tool(at(), "c1", "edited a.rs")));
    let [Item::Call {
        name,
        brief,
        arguments,
        result,
        diffs,
        error,
    }] = got.as_slice()
    else {
        panic!("one call: {got:?}");
    };
    assert_eq!(
        (name.as_str(), brief.as_str(), *error),
        ("edit_file", "a.rs", false)
    );
    assert!(arguments.head.contains("[key]") && !arguments.head.contains("sk-secret"));
    assert_eq!(
        result.as_ref().map(|r| r.head.as_str()),
        Some("edited a.rs")
    );
    assert_eq!(diffs.len(), 1);
    assert!(diffs[0].1.contains("+[key]"), "{diffs:?}");
}

#[test]
fn a_call_without_a_result_is_told_at_the_next_message() {
    let mut items = Items::new(Keys::default(), 1000);
    let mut call = Message::assistant(at(), "looking");
    call.tool_calls.push(ToolCall {
        id: "c1".into(),
        name: "shell".into(),
        arguments: "{".into(),
    });
    let first = items.push(&Record::Message(call));
    assert!(
        matches!(first.as_slice(), [Item::Answer { .. }]),
        "{first:?}"
    );
    let next = items.push(&Record::Message(Message::user(at(), "go on")));
    assert!(
        matches!(
            next.as_slice(),
            [Item::Call { result: None, .. }, Item::User { turn: 1, .. }]
        ),
        "{next:?}"
    );
}

#[test]
fn the_chart_marks_changes_after_the_turn_they_follow() {
    let mut chart = Chart::default();
    let totals = |turns, ctx, cost| {
        Record::Totals(Totals {
            turns,
            last_context: ctx,
            cost,
            ..Totals::default()
        })
    };
    chart.push(&totals(1, 1_000, 10));
    chart.push(&Record::ModelChanged(ModelChanged {
        at: at(),
        model: "m2".into(),
        window: 9,
    }));
    chart.push(&totals(2, 3_000, 30));
    chart.push(&Record::MemoryChanged(MemoryChanged {
        at: at(),
        entry: "e".into(),
        by: "remember".into(),
        files: vec![],
    }));
    let marks: Vec<(u64, Event)> = chart.marks().iter().map(|m| (m.turn, m.event)).collect();
    assert_eq!(marks, vec![(1, Event::Model), (2, Event::Memory)]);
    let svg = chart.svg();
    assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
    assert_eq!(svg.matches("<polyline").count(), 2, "{svg}");
    assert!(svg.contains("after turn 1: model m2"), "{svg}");
    assert!(!svg.contains("http"), "{svg}");
}

#[test]
fn a_fence_outlasts_the_backticks_inside() {
    let mut out = String::new();
    markdown::item(
        &Item::System(Cut {
            head: "a ```` b".into(),
            omitted: 0,
            tail: String::new(),
        }),
        &mut out,
    );
    assert!(out.contains("`````text\na ```` b\n`````\n"), "{out}");
}

#[test]
fn html_escapes_what_the_model_wrote() {
    let mut out = String::new();
    html::item(
        &Item::Answer {
            at: at(),
            text: "<img src=x onerror=alert(1)> & \"q\"".into(),
            thinking: None,
            cut: None,
        },
        &mut out,
    );
    assert!(
        out.contains("&lt;img src=x onerror=alert(1)&gt; &amp; \"q\""),
        "{out}"
    );
    assert!(!out.contains("<img"), "{out}");
    let mut link = String::new();
    html::item(
        &Item::Answer {
            at: at(),
            text: "[a](http://h/x) ![b](http://h/y.png)".into(),
            thinking: None,
            cut: None,
        },
        &mut link,
    );
    assert!(
        link.contains("a &lt;http://h/x&gt; [image: b &lt;http://h/y.png&gt;]"),
        "{link}"
    );
    assert!(!link.contains("<a ") && !link.contains("<img"), "{link}");
}
