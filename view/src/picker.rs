//! The `/resume` picker's rows (and a bare `revolve -r`'s listing): the
//! project's recent sessions, newest activity first, each with its name,
//! age, turns and first prompt.

use time::OffsetDateTime;

use revolve_core::summary::Summary;

use crate::limits::{PICKER_PROMPT_CHARS, PICKER_ROWS};

/// The sessions a picker offers: not a file a compaction continued, not
/// a subagent's, not `own` (the session asking), newest activity first,
/// at most [`PICKER_ROWS`].
pub fn choices(mut sessions: Vec<Summary>, own: Option<&str>) -> Vec<Summary> {
    sessions.retain(|s| s.continued.is_none() && s.parent.is_none() && Some(s.id.as_str()) != own);
    sessions.sort_by_key(|s| std::cmp::Reverse(s.last_activity));
    sessions.truncate(PICKER_ROWS);
    sessions
}

/// One row: `N  NAME  AGE  T turns  first prompt` (the number from 1;
/// the name, or the id of an unnamed session).
pub fn row(n: usize, s: &Summary, first: Option<&str>, now: OffsetDateTime) -> String {
    let name = s.name.as_deref().unwrap_or(&s.id);
    let turns = if s.turns == 1 { "turn" } else { "turns" };
    let first = first.map_or_else(
        || "(no prompt)".to_owned(),
        |p| revolve_core::text::one_line(p, PICKER_PROMPT_CHARS),
    );
    format!(
        "{n:>2}  {name:<16}  {:>10}  {:>3} {turns:<5}  {}",
        age(now - s.last_activity),
        s.turns,
        revolve_core::text::inert(&first)
    )
}

/// How long ago, in the largest whole unit: `40 s ago`, `5 min ago`,
/// `3 h ago`, `2 d ago`.
pub fn age(ago: time::Duration) -> String {
    let s = ago.whole_seconds().max(0);
    match s {
        0..60 => format!("{s} s ago"),
        60..3_600 => format!("{} min ago", s / 60),
        3_600..86_400 => format!("{} h ago", s / 3_600),
        _ => format!("{} d ago", s / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(id: &str, name: Option<&str>, minutes_ago: i64, turns: u64) -> Summary {
        let now = OffsetDateTime::UNIX_EPOCH + time::Duration::days(1);
        Summary {
            id: id.into(),
            name: name.map(str::to_owned),
            named: name.is_some(),
            started: now - time::Duration::minutes(minutes_ago + 1),
            turns,
            last_activity: now - time::Duration::minutes(minutes_ago),
            path: format!("/s/{id}.jsonl"),
            continued: None,
            spent: Default::default(),
            parent: None,
        }
    }

    #[test]
    fn newest_first_without_the_own_the_continued_or_a_subagent() {
        let mut continued = summary("c", Some("old"), 1, 2);
        continued.continued = Some("d".into());
        let mut child = summary("e", None, 0, 1);
        child.parent = Some("a".into());
        let list = vec![
            summary("a", Some("amber"), 30, 3),
            summary("b", Some("birch"), 5, 1),
            continued,
            child,
            summary("own", Some("cedar"), 0, 0),
        ];
        let ids: Vec<String> = choices(list, Some("own"))
            .into_iter()
            .map(|s| s.id)
            .collect();
        assert_eq!(ids, ["b", "a"]);
    }

    #[test]
    fn a_row_says_name_age_turns_and_first_prompt() {
        let now = OffsetDateTime::UNIX_EPOCH + time::Duration::days(1);
        let s = summary("20261206-1", Some("amber"), 5, 1);
        assert_eq!(
            row(1, &s, Some("fix the login\nbug"), now),
            " 1  amber              5 min ago    1 turn   fix the login bug"
        );
        let s = summary("20261206-2", None, 3 * 60, 4);
        assert_eq!(
            row(12, &s, None, now),
            "12  20261206-2           3 h ago    4 turns  (no prompt)"
        );
        assert_eq!(age(time::Duration::seconds(59)), "59 s ago");
        assert_eq!(age(time::Duration::days(2)), "2 d ago");
    }
}
