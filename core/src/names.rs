//! Generated session names: the first word of a fixed list that no session of
//! this directory uses, running or on disk.

use std::collections::{BTreeSet, HashSet};
use std::hash::BuildHasher;

use crate::summary::Summary;

/// The names in use, as [`allocate`] and [`validate`] ask about them: any
/// set of strings (the shell lists ten thousand sessions' names into a hash
/// set, which builds several times faster than an ordered one).
pub trait Used {
    /// Whether another session has this name already.
    fn contains_name(&self, name: &str) -> bool;
}

impl Used for BTreeSet<String> {
    fn contains_name(&self, name: &str) -> bool {
        self.contains(name)
    }
}

impl<S: BuildHasher> Used for HashSet<String, S> {
    fn contains_name(&self, name: &str) -> bool {
        self.contains(name)
    }
}

/// The words, in the order they are handed out.
pub const WORDS: [&str; 48] = [
    "amber", "birch", "cedar", "dune", "ember", "fern", "garnet", "heath", "iris", "juniper",
    "kelp", "larch", "maple", "nettle", "oak", "pine", "quartz", "reed", "sage", "thyme", "umber",
    "vale", "willow", "yarrow", "zinnia", "alder", "basalt", "clover", "delta", "elm", "flint",
    "grove", "hazel", "ivy", "jasper", "kestrel", "lichen", "moss", "north", "olive", "poplar",
    "quill", "rowan", "slate", "tansy", "upland", "violet", "wren",
];

/// The first free name: each word of [`WORDS`] in order, then `amber-2`,
/// `birch-2`, … and so on with higher numbers. Never returns a name in `used`.
pub fn allocate(used: &impl Used) -> String {
    use std::fmt::Write;
    // One buffer for every candidate: in a directory of ten thousand
    // sessions thousands are taken before a free one.
    let mut name = String::new();
    for round in 1u64.. {
        for w in WORDS {
            name.clear();
            name.push_str(w);
            if round > 1 {
                let _ = write!(name, "-{round}");
            }
            if !used.contains_name(&name) {
                return name;
            }
        }
    }
    // `used` is finite and the sequence is not, so a free name exists.
    unreachable!("an unbounded sequence of distinct names has a free one")
}

/// The names [`allocate`] passes over in `used` before the free one it
/// returns: all the core needs to be told to allocate the same name.
pub fn taken_before(used: &impl Used) -> BTreeSet<String> {
    let free = allocate(used);
    let mut taken = BTreeSet::new();
    for round in 1u64.. {
        for w in WORDS {
            let name = if round > 1 {
                format!("{w}-{round}")
            } else {
                w.to_owned()
            };
            if name == free {
                return taken;
            }
            taken.insert(name);
        }
    }
    taken
}

/// Why a name cannot be used.
#[derive(Debug, PartialEq, Eq)]
pub enum BadName {
    /// Empty.
    Empty,
    /// Longer than 64 characters.
    TooLong,
    /// A character other than letters, digits, `-`, `_` and `.`, or a
    /// leading `.` or `-`.
    Characters,
    /// Another session of this directory has it.
    InUse,
}

impl std::fmt::Display for BadName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BadName::Empty => "a name cannot be empty",
            BadName::TooLong => "a name has at most 64 characters",
            BadName::Characters => {
                "a name uses letters, digits, '-', '_' and '.', and starts with a letter or digit"
            }
            BadName::InUse => "another session of this directory has that name",
        })
    }
}

/// Checks a name the user chose.
pub fn validate(name: &str, used: &impl Used) -> Result<(), BadName> {
    if name.is_empty() {
        return Err(BadName::Empty);
    }
    if name.chars().count() > 64 {
        return Err(BadName::TooLong);
    }
    let ok = |c: char| c.is_alphanumeric() || matches!(c, '-' | '_' | '.');
    if !name.chars().all(ok) || name.starts_with(['.', '-']) {
        return Err(BadName::Characters);
    }
    if used.contains_name(name) {
        return Err(BadName::InUse);
    }
    Ok(())
}

/// Why a session could not be picked.
#[derive(Debug, PartialEq, Eq)]
pub enum Pick {
    /// Nothing matches.
    None,
    /// An id prefix matches several sessions.
    Ambiguous(Vec<String>),
}

/// Picks the session `needle` names among this directory's sessions: an
/// exact id, else a name (the most recently active session of that name),
/// else a unique id prefix.
pub fn pick<'a>(needle: &str, sessions: &'a [Summary]) -> Result<&'a Summary, Pick> {
    if let Some(s) = sessions.iter().find(|s| s.id == needle) {
        return Ok(s);
    }
    if let Some(s) = sessions
        .iter()
        .filter(|s| s.name.as_deref() == Some(needle))
        .max_by(|a, b| {
            a.last_activity
                .cmp(&b.last_activity)
                .then_with(|| a.id.cmp(&b.id))
        })
    {
        return Ok(s);
    }
    let prefixed: Vec<&Summary> = sessions
        .iter()
        .filter(|s| s.id.starts_with(needle))
        .collect();
    match prefixed.as_slice() {
        [] => Err(Pick::None),
        [one] => Ok(one),
        many => Err(Pick::Ambiguous(many.iter().map(|s| s.id.clone()).collect())),
    }
}

/// The most recently active session that took a turn, for `--continue`
/// (an empty session, opened and left, is skipped: the work is in the one
/// before); the most recent of all when none took one.
pub fn latest(sessions: &[Summary]) -> Option<&Summary> {
    let newest = |a: &&Summary, b: &&Summary| {
        a.last_activity
            .cmp(&b.last_activity)
            .then_with(|| a.id.cmp(&b.id))
    };
    // A subagent's session is its parent's work, never the one to resume.
    let own = || sessions.iter().filter(|s| s.parent.is_none());
    own()
        .filter(|s| s.turns > 0)
        .max_by(newest)
        .or_else(|| own().max_by(newest))
}

/// Whether a new session the user did not name gets a generated name:
/// an interactive one does; a piped or `-p` run does not (it is one-off,
/// and a session without a name needs no look at the others' names).
pub fn gets_generated_name(interactive: bool) -> bool {
    interactive
}

#[cfg(test)]
mod tests {
    use super::*;
    use quickcheck::quickcheck;

    #[test]
    fn hands_out_in_order() {
        let mut used = BTreeSet::new();
        assert_eq!(allocate(&used), "amber");
        used.insert("amber".to_owned());
        assert_eq!(allocate(&used), "birch");
        used.extend(WORDS.iter().map(|w| w.to_string()));
        assert_eq!(allocate(&used), "amber-2");
    }

    #[test]
    fn taken_before_allocates_the_same_name() {
        let mut used = BTreeSet::new();
        assert!(taken_before(&used).is_empty());
        used.extend(["amber", "cedar", "zzz"].map(str::to_owned));
        let taken = taken_before(&used);
        assert_eq!(taken, BTreeSet::from(["amber".to_owned()]));
        assert_eq!(allocate(&taken), allocate(&used));
    }

    #[test]
    fn words_are_distinct() {
        let set: BTreeSet<_> = WORDS.iter().collect();
        assert_eq!(set.len(), WORDS.len());
    }

    #[test]
    fn validation() {
        let used = BTreeSet::from(["amber".to_owned()]);
        assert_eq!(validate("login-bug", &used), Ok(()));
        assert_eq!(validate("amber", &used), Err(BadName::InUse));
        assert_eq!(validate("", &used), Err(BadName::Empty));
        assert_eq!(validate("a/b", &used), Err(BadName::Characters));
        assert_eq!(validate("..", &used), Err(BadName::Characters));
        assert_eq!(validate(&"x".repeat(65), &used), Err(BadName::TooLong));
    }

    quickcheck! {
        fn allocation_never_returns_a_used_name(picks: Vec<u16>, extra: Vec<String>) -> bool {
            // Mostly real words and numbered words, so collisions are likely.
            let mut used: BTreeSet<String> = picks.iter().map(|p| {
                let w = WORDS[*p as usize % WORDS.len()];
                match p / 64 % 3 { 0 => w.to_owned(), n => format!("{w}-{}", n + 1) }
            }).collect();
            used.extend(extra);
            let name = allocate(&used);
            // Any set of the same names gives the same answer.
            // (A fixed hasher: no random seed in the core, tests included.)
            type Fixed = std::hash::BuildHasherDefault<std::hash::DefaultHasher>;
            let hashed: HashSet<String, Fixed> = used.iter().cloned().collect();
            !used.contains(&name) && allocate(&hashed) == name
        }

        fn allocation_fills_the_first_gap(n: u8) -> bool {
            let n = n as usize % WORDS.len();
            let used: BTreeSet<String> = WORDS[..n].iter().map(|w| w.to_string()).collect();
            allocate(&used) == WORDS[n]
        }
    }

    fn summary(id: &str, turns: u64, minute: u8) -> Summary {
        let at =
            time::macros::datetime!(2026-12-02 10:00 UTC) + time::Duration::minutes(minute.into());
        Summary {
            id: id.into(),
            name: None,
            named: false,
            started: at,
            turns,
            last_activity: at,
            path: format!("{id}.jsonl"),
            continued: None,
            spent: Default::default(),
            parent: None,
        }
    }

    #[test]
    fn latest_skips_sessions_without_a_turn() {
        let work = summary("a", 3, 1);
        let empty = summary("b", 0, 2);
        let sessions = [work.clone(), empty.clone()];
        assert_eq!(latest(&sessions).map(|s| s.id.as_str()), Some("a"));
        // With none that took a turn, the newest of all.
        let none = [summary("c", 0, 1), empty];
        assert_eq!(latest(&none).map(|s| s.id.as_str()), Some("b"));
        assert!(latest(&[]).is_none());
    }
}
