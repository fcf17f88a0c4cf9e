//! What a listing knows of a session, and which sessions `revolve sessions`
//! shows (the text of the listing is the shell's).

use serde::Serialize;
use time::OffsetDateTime;

/// What a session has spent, from its last totals: the tokens in (of them
/// read from a prompt cache) and out, and the money, in nano-dollars,
/// where the model's prices are known (absent otherwise).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Spent {
    /// Input tokens, the cached ones included.
    #[serde(default)]
    pub tokens_in: u64,
    /// Of `tokens_in`, those read from a prompt cache.
    #[serde(default)]
    pub tokens_cached: u64,
    /// Output tokens.
    #[serde(default)]
    pub tokens_out: u64,
    /// The cost, in nano-dollars (0: unknown prices or none spent).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cost_nano_usd: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Spent {
    /// What the totals say.
    pub fn of(t: &crate::record::Totals) -> Spent {
        Spent {
            tokens_in: t.tokens_in,
            tokens_cached: t.tokens_cached,
            tokens_out: t.tokens_out,
            cost_nano_usd: t.cost,
        }
    }
}

/// One session as `revolve sessions` lists it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Summary {
    /// The session's id.
    pub id: String,
    /// Its name, if it has one.
    pub name: Option<String>,
    /// Whether the user named it (else unlisted unless `--all`).
    pub named: bool,
    /// When its header was written.
    #[serde(with = "time::serde::rfc3339")]
    pub started: OffsetDateTime,
    /// User lines answered.
    pub turns: u64,
    /// When its file was last written.
    #[serde(with = "time::serde::rfc3339")]
    pub last_activity: OffsetDateTime,
    /// Its log file.
    pub path: String,
    /// The id of the file this session went on in after a compaction: such
    /// a file is not listed, and resuming it resumes the newest of the chain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continued: Option<String>,
    /// What it spent (`revolve sessions --json` says it).
    #[serde(flatten, default)]
    pub spent: Spent,
    /// The session whose `task` call ran it, when it is a subagent (its
    /// `spawned` record): listed under its parent, never the latest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
}

/// Whether `revolve sessions` (`--all` with `all`) shows a session file:
/// named ones (any with `all`), and not a file a compaction continued.
pub fn shown(named: bool, continued: bool, all: bool) -> bool {
    (all || named) && !continued
}

/// The sessions `revolve sessions` shows, newest activity first: the named
/// ones (all with `all`), and of a compacted session only the newest file
/// of its chain.
pub fn listed(mut sessions: Vec<Summary>, all: bool) -> Vec<Summary> {
    sessions.retain(|s| shown(s.named, s.continued.is_some(), all));
    // Ids are unique, so the order is total and an unstable sort (faster,
    // no scratch buffer for a hundred thousand sessions) gives the same.
    sessions.sort_unstable_by(|a, b| {
        b.last_activity
            .cmp(&a.last_activity)
            .then_with(|| b.id.cmp(&a.id))
    });
    under_parents(sessions)
}

/// `sessions` (in their order) with each child moved right after its
/// parent, when its parent is among them.
fn under_parents(sessions: Vec<Summary>) -> Vec<Summary> {
    if sessions.iter().all(|s| s.parent.is_none()) {
        return sessions;
    }
    let ids: std::collections::BTreeSet<String> = sessions.iter().map(|s| s.id.clone()).collect();
    let (children, mut rest): (Vec<Summary>, Vec<Summary>) = sessions
        .into_iter()
        .partition(|s| s.parent.as_ref().is_some_and(|p| ids.contains(p)));
    let mut out = Vec::with_capacity(rest.len() + children.len());
    for s in rest.drain(..) {
        let id = s.id.clone();
        out.push(s);
        out.extend(
            children
                .iter()
                .filter(|c| c.parent.as_deref() == Some(id.as_str()))
                .cloned(),
        );
    }
    out
}

/// [`listed`], and without `all` the session `latest` names too when the
/// REPL gave it an address (a generated name): the one its exit hint
/// told the user to resume.
pub fn listed_with(mut sessions: Vec<Summary>, all: bool, latest: Option<&str>) -> Vec<Summary> {
    let kept: std::collections::BTreeSet<String> = sessions
        .iter()
        .filter(|s| {
            shown(s.named, s.continued.is_some(), all)
                || (s.continued.is_none() && s.name.is_some() && Some(s.id.as_str()) == latest)
        })
        .map(|s| s.id.clone())
        .collect();
    // A listed session's children are listed under it.
    sessions
        .retain(|s| kept.contains(&s.id) || s.parent.as_ref().is_some_and(|p| kept.contains(p)));
    listed(sessions, true)
}

/// Of `sessions` (a directory's, none a compaction continued), the ones
/// `revolve sessions` shows without `--all`: the `shown` most recently
/// active named ones, the one `latest` names, and the subagents' sessions
/// of these ([`listed_with`] then orders them and keeps the latest only
/// when it has a name). The rest are counted, not listed: a directory
/// can hold a hundred thousand sessions.
pub fn recent(mut sessions: Vec<Summary>, shown: usize, latest: Option<&str>) -> Vec<Summary> {
    let mut named: Vec<&Summary> = sessions.iter().filter(|s| s.named).collect();
    named.sort_unstable_by(|a, b| {
        b.last_activity
            .cmp(&a.last_activity)
            .then_with(|| b.id.cmp(&a.id))
    });
    let kept: std::collections::BTreeSet<String> = named
        .iter()
        .take(shown)
        .map(|s| s.id.clone())
        .chain(latest.map(str::to_owned))
        .collect();
    sessions
        .retain(|s| kept.contains(&s.id) || s.parent.as_ref().is_some_and(|p| kept.contains(p)));
    sessions
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    fn session(id: &str, named: bool, parent: Option<&str>, minute: u8) -> Summary {
        let at = datetime!(2026-12-06 12:00 UTC) + time::Duration::minutes(i64::from(minute));
        Summary {
            id: id.into(),
            name: named.then(|| id.to_owned()),
            named,
            started: at,
            turns: 1,
            last_activity: at,
            path: String::new(),
            continued: None,
            spent: Spent::default(),
            parent: parent.map(str::to_owned),
        }
    }

    #[test]
    fn children_are_listed_under_their_parent_and_are_never_the_latest() {
        let sessions = vec![
            session("amber", true, None, 1),
            session("k1", false, Some("amber"), 5),
            session("k2", false, Some("amber"), 4),
            session("birch", true, None, 3),
            session("lost", false, Some("gone"), 6),
        ];
        let ids = |list: &[Summary]| list.iter().map(|s| s.id.clone()).collect::<Vec<_>>();
        // Named only: amber's children come along under it.
        assert_eq!(
            ids(&listed_with(sessions.clone(), false, None)),
            ["birch", "amber", "k1", "k2"]
        );
        assert_eq!(
            ids(&listed(sessions.clone(), true)),
            ["lost", "birch", "amber", "k1", "k2"]
        );
        assert_eq!(crate::names::latest(&sessions).unwrap().id, "birch");
    }

    #[test]
    fn recent_keeps_the_newest_named_the_latest_and_their_children() {
        let sessions = vec![
            session("amber", true, None, 1),
            session("k1", false, Some("amber"), 5),
            session("birch", true, None, 3),
            session("cedar", true, None, 2),
            session("loose", false, None, 4),
            session("k2", false, Some("cedar"), 6),
        ];
        let ids = |list: Vec<Summary>| list.into_iter().map(|s| s.id).collect::<Vec<_>>();
        // The two newest named, and the latest unnamed one.
        assert_eq!(
            ids(recent(sessions.clone(), 2, Some("loose"))),
            ["birch", "cedar", "loose", "k2"]
        );
        assert_eq!(ids(recent(sessions.clone(), 1, None)), ["birch"]);
        assert_eq!(ids(recent(sessions.clone(), 50, None)).len(), 5);
    }
}
