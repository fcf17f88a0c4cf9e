//! Unit tests of the parent module.

use super::*;
use revolve_core::record::{Record, Totals};

/// A store in a temporary directory that goes when the test ends.
struct Temp {
    store: Store,
    _dir: tempfile::TempDir,
}

impl std::ops::Deref for Temp {
    type Target = Store;

    fn deref(&self) -> &Store {
        &self.store
    }
}

fn store(name: &str) -> Temp {
    let dir = tempfile::Builder::new()
        .prefix(&format!("revolve-store-{name}-"))
        .tempdir()
        .unwrap();
    let root = dir.path();
    let cwd = root.join("work");
    std::fs::create_dir_all(&cwd).unwrap();
    Temp {
        store: Store {
            roots: Roots {
                state: root.join("state"),
                config: root.join("config"),
            },
            project: Project::from_key(cwd.clone()),
            cwd,
        },
        _dir: dir,
    }
}

fn header(store: &Store, id: &str) -> Header {
    Header {
        version: 1,
        id: id.into(),
        name: None,
        named: false,
        cwd: store.cwd_str(),
        project: store.cwd_str(),
        started: time::macros::datetime!(2026-12-02 10:00 UTC),
        model: "m".into(),
        window: 1000,
        provider: "scripted".into(),
        continues: None,
        tool_choice: None,
    }
}

fn totals(turns: u64) -> Record {
    Record::Totals(Totals {
        turns,
        ..Totals::default()
    })
}

/// Each session's listed turns, by id.
fn turns(store: &Store) -> Vec<(String, u64)> {
    let mut out: Vec<_> = store
        .list()
        .unwrap()
        .into_iter()
        .map(|s| (s.id, s.turns))
        .collect();
    out.sort();
    out
}

fn named(name: &str) -> Option<impl FnOnce(&Names) -> Result<Option<String>, String>> {
    let name = name.to_owned();
    Some(move |_: &Names| Ok(Some(name)))
}

#[test]
fn a_listing_sees_every_write_made_under_a_claim() {
    let store = store("claims");
    for id in ["a", "b", "c"] {
        let (mut w, _claim, _) = store.create(header(&store, id), named(id)).unwrap();
        w.append(&totals(1)).unwrap();
    }
    let ones = |b: u64| vec![("a".into(), 1), ("b".into(), b), ("c".into(), 1)];
    assert_eq!(turns(&store), ones(1));
    assert_eq!(turns(&store), ones(1), "from the cache");

    // Resumed and ended between two listings.
    {
        let _claim = store.claim("b", None).unwrap();
        LogWriter::open(&store.path_of("b"))
            .unwrap()
            .append(&totals(2))
            .unwrap();
    }
    assert_eq!(turns(&store), ones(2));

    // Running while a listing runs, writing after it: seen next time,
    // after the session ended too.
    let claim = store.claim("b", None).unwrap();
    assert_eq!(turns(&store), ones(2));
    let mut w = LogWriter::open(&store.path_of("b")).unwrap();
    w.append(&totals(3)).unwrap();
    assert_eq!(turns(&store), ones(3));
    w.append(&totals(4)).unwrap();
    drop(claim);
    assert_eq!(turns(&store), ones(4));
    assert_eq!(turns(&store), ones(4));

    // A removed file is gone; a new one (written by hand) is there.
    std::fs::remove_file(store.path_of("c")).unwrap();
    let mut w = LogWriter::create(&store.path_of("d")).unwrap();
    w.append(&Record::Header(header(&store, "d"))).unwrap();
    w.append(&totals(7)).unwrap();
    assert_eq!(
        turns(&store),
        vec![("a".into(), 1), ("b".into(), 4), ("d".into(), 7)]
    );
}

#[test]
fn a_file_changed_behind_revolves_back_shows_once_the_cache_is_gone() {
    let store = store("behind");
    let (mut w, claim, _) = store.create(header(&store, "a"), named("a")).unwrap();
    w.append(&totals(1)).unwrap();
    drop((w, claim));
    assert_eq!(turns(&store), vec![("a".into(), 1)]);
    // The documented trade-off: no claim, no look.
    LogWriter::open(&store.path_of("a"))
        .unwrap()
        .append(&totals(2))
        .unwrap();
    assert_eq!(turns(&store), vec![("a".into(), 1)]);
    std::fs::remove_file(store.sessions_dir().join(index::FILE)).unwrap();
    assert_eq!(turns(&store), vec![("a".into(), 2)]);
    // A journal started again (here: deleted) makes every file looked at.
    LogWriter::open(&store.path_of("a"))
        .unwrap()
        .append(&totals(3))
        .unwrap();
    std::fs::remove_file(store.roots.running(&store.project).join(".claims")).unwrap();
    assert_eq!(turns(&store), vec![("a".into(), 3)]);
}

#[test]
fn the_folder_read_names_every_session_file_and_nothing_else() {
    #[cfg(unix)]
    use std::os::unix::ffi::OsStrExt;
    let store = store("readdir");
    let dir = store.sessions_dir();
    std::fs::create_dir_all(dir.join("folder.jsonl")).unwrap();
    let many: Vec<String> = (0..3000).map(|i| format!("s-{i:05}.jsonl")).collect();
    for name in
        many.iter()
            .map(String::as_str)
            .chain(["tab\tnew\nline.jsonl", "notes.txt", ".jsonl.tmp"])
    {
        std::fs::write(dir.join(name), "").unwrap();
    }
    std::fs::write(dir.join(std::ffi::OsStr::from_bytes(b"\xff.jsonl")), "").unwrap();
    let mut names = Vec::new();
    Files::read(&dir)
        .each(|n| names.push(n.to_owned()))
        .unwrap();
    names.sort_unstable();
    let mut expected = many.clone();
    expected.extend(["folder.jsonl".into(), "tab\tnew\nline.jsonl".into()]);
    expected.sort_unstable();
    assert_eq!(names, expected);
    let mut none = 0;
    Files::read(&dir.join("gone")).each(|_| none += 1).unwrap();
    assert_eq!(none, 0);
}

fn entries(names: &[&str]) -> Vec<Entry<'static>> {
    names
        .iter()
        .map(|n| Entry {
            file: Cow::Owned(format!("{n}.jsonl")),
            stamp: (0, 0),
            row: None,
        })
        .collect()
}

#[test]
fn without_a_journal_a_gap_in_the_cache_reads_nothing_again() {
    use std::time::SystemTime;
    let store = store("gap");
    for i in 0..30 {
        let id = format!("s{i:02}");
        let (mut w, _claim, _) = store.create(header(&store, &id), named(&id)).unwrap();
        w.append(&totals(1)).unwrap();
    }
    assert_eq!(turns(&store).len(), 30);
    // Ten files in a row of the cache's (the folder's) order removed.
    let bytes = std::fs::read(store.sessions_dir().join(index::FILE)).unwrap();
    let cached: Vec<String> = Index::parse(&bytes)
        .unwrap()
        .entries
        .iter()
        .map(|e| e.file.to_string())
        .collect();
    for file in &cached[5..15] {
        std::fs::remove_file(store.sessions_dir().join(file)).unwrap();
    }
    // The others changed behind revolve's back, size and time kept: a
    // file read again would show 2 turns.
    for file in cached[..5].iter().chain(&cached[15..]) {
        let path = store.sessions_dir().join(file);
        let modified: SystemTime = std::fs::metadata(&path).unwrap().modified().unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace("\"turns\":1", "\"turns\":2")).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(modified)
            .unwrap();
    }
    std::fs::remove_file(store.roots.running(&store.project).join(".claims")).unwrap();
    let listed = turns(&store);
    assert_eq!(listed.len(), 20);
    assert!(
        listed.iter().all(|(_, t)| *t == 1),
        "read again: {listed:?}"
    );
}

#[test]
fn the_finder_hashes_nothing_while_the_folder_keeps_its_order() {
    let old = entries(&["a", "b", "c", "d", "e"]);
    let mut finder = Finder::new(&old);
    // b removed, x new (claimed since), c claimed since (resumed).
    assert_eq!(finder.find("a.jsonl", false), Some(0));
    assert_eq!(finder.find("x.jsonl", true), None);
    assert_eq!(finder.find("c.jsonl", true), Some(2));
    assert_eq!(finder.find("d.jsonl", false), Some(3));
    assert_eq!(finder.find("e.jsonl", false), Some(4));
    assert!(finder.by_name.is_none());
    assert_eq!(finder.found, 4);
    // Another order, and a file copied in by hand: the map answers.
    let mut finder = Finder::new(&old);
    assert_eq!(finder.find("e.jsonl", false), Some(4));
    assert_eq!(finder.find("hand.jsonl", false), None);
    assert_eq!(finder.find("a.jsonl", false), Some(0));
    assert!(finder.by_name.is_some());
}

quickcheck::quickcheck! {
    fn the_finder_finds_exactly_the_entries_there_are(old: Vec<u8>, seen: Vec<(u8, bool)>) -> bool {
        let mut names: Vec<String> = old.iter().map(|n| format!("{n}.jsonl")).collect();
        names.dedup();
        let old: Vec<Entry> = names
            .iter()
            .map(|n| Entry { file: Cow::Owned(n.clone()), stamp: (0, 0), row: None })
            .collect();
        let mut finder = Finder::new(&old);
        let mut listed = std::collections::HashSet::new();
        seen.into_iter().all(|(n, new_ish)| {
            let name = format!("{n}.jsonl");
            // A folder lists a name once.
            if !listed.insert(name.clone()) {
                return true;
            }
            match finder.find(&name, new_ish) {
                Some(i) => old[i].file == name,
                None => new_ish || !names.contains(&name),
            }
        })
    }
}

#[test]
fn a_listing_counts_what_it_cannot_show_every_time() {
    let store = store("unlisted");
    let (mut w, _claim, _) = store.create(header(&store, "a"), named("a")).unwrap();
    w.append(&totals(1)).unwrap();
    let dir = store.sessions_dir();
    std::fs::create_dir(dir.join("b.jsonl")).unwrap();
    std::fs::write(dir.join("c.jsonl"), "").unwrap();
    for _ in 0..2 {
        let mut unlisted = Unlisted::default();
        let listed = store.list_noting(|_, _| true, &mut unlisted).unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(
            unlisted,
            Unlisted {
                unreadable: 1,
                first_unreadable: Some((
                    "b.jsonl".into(),
                    "not a regular file (a directory)".into()
                )),
                headerless: 1,
                first_headerless: Some("c.jsonl".into()),
            }
        );
    }
    // Made readable behind the cache's back: listed at once.
    std::fs::remove_dir(dir.join("b.jsonl")).unwrap();
    std::fs::copy(store.path_of("a"), dir.join("b.jsonl")).unwrap();
    assert_eq!(turns(&store).len(), 2);
}

#[test]
fn a_piped_session_is_created_without_a_listing() {
    let store = store("unnamed");
    let mut none = named("never");
    none.take();
    let (_w, _claim, h) = store.create(header(&store, "a"), none).unwrap();
    assert_eq!(h.name, None);
    assert!(!store.sessions_dir().join(index::FILE).exists());
}

/// The ids listed, sorted.
fn ids(store: &Store) -> Vec<String> {
    let mut ids: Vec<String> = store.list().unwrap().into_iter().map(|s| s.id).collect();
    ids.sort();
    ids
}

/// Whether the cache on disk knows the folder's stamp now, with no
/// change journaled since: the next listing reads no folder.
fn cache_is_current(store: &Store) -> bool {
    let dir = store.sessions_dir();
    let bytes = std::fs::read(dir.join(index::FILE)).unwrap();
    let index = Index::parse(&bytes).unwrap();
    let journal = registry::Journal::read(&store.roots.running(&store.project)).unwrap();
    let tail = journal.since(index.offset).unwrap();
    index.journal == journal.epoch
        && made_since(index.dir, &tail, dir_stamp(&dir).unwrap()).is_some()
}

#[test]
fn sessions_made_by_revolve_are_found_without_reading_the_folder() {
    let store = store("made");
    for id in ["a", "b"] {
        let (mut w, _claim, _) = store.create(header(&store, id), named(id)).unwrap();
        w.append(&totals(1)).unwrap();
    }
    assert_eq!(ids(&store), ["a", "b"]);
    // The cache's own writing is journaled: the folder is not read again.
    assert!(cache_is_current(&store));
    let (_w, _claim, _) = store.create(header(&store, "c"), named("c")).unwrap();
    // Made under the naming lock and journaled with the folder's stamps.
    assert!(cache_is_current(&store));
    assert_eq!(ids(&store), ["a", "b", "c"]);
    assert_eq!(
        store.find(Some("c")).unwrap(),
        store.path_of("c"),
        "found by name"
    );
}

#[test]
fn the_cache_is_built_again_when_damaged_deleted_or_stale() {
    let store = store("rebuilt");
    for id in ["a", "b", "c"] {
        let (mut w, _claim, _) = store.create(header(&store, id), named(id)).unwrap();
        w.append(&totals(1)).unwrap();
    }
    assert_eq!(ids(&store), ["a", "b", "c"]);
    let dir = store.sessions_dir();
    let cache = dir.join(index::FILE);
    // Damaged: bytes changed in the middle, or cut short.
    let mut bytes = std::fs::read(&cache).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    std::fs::write(&cache, &bytes).unwrap();
    assert_eq!(ids(&store), ["a", "b", "c"]);
    assert!(cache_is_current(&store), "written again whole");
    let bytes = std::fs::read(&cache).unwrap();
    std::fs::write(&cache, &bytes[..bytes.len() - 3]).unwrap();
    assert_eq!(ids(&store), ["a", "b", "c"]);
    // Deleted.
    std::fs::remove_file(&cache).unwrap();
    assert_eq!(ids(&store), ["a", "b", "c"]);
    assert!(cache_is_current(&store));
    // Stale: a file removed and one copied in by hand, no journal line.
    std::fs::remove_file(store.path_of("b")).unwrap();
    assert_eq!(ids(&store), ["a", "c"]);
    let mut w = LogWriter::create(&store.path_of("d")).unwrap();
    w.append(&Record::Header(header(&store, "d"))).unwrap();
    w.append(&totals(1)).unwrap();
    assert_eq!(ids(&store), ["a", "c", "d"]);
    assert_eq!(store.find(None).unwrap(), store.path_of("d"), "the latest");
    // A file renamed by hand.
    std::fs::rename(store.path_of("a"), dir.join("e.jsonl")).unwrap();
    assert_eq!(
        store.list().unwrap().len(),
        3,
        "the renamed file is listed, the old name is gone"
    );
    assert!(!store
        .list()
        .unwrap()
        .iter()
        .any(|s| s.path.ends_with("/a.jsonl")));
}

#[test]
fn a_crash_between_a_change_and_its_journal_line_reads_the_folder() {
    let store = store("crash");
    let (mut w, _claim, _) = store.create(header(&store, "a"), named("a")).unwrap();
    w.append(&totals(1)).unwrap();
    assert_eq!(ids(&store), ["a"]);
    assert!(cache_is_current(&store));
    // A file made, and the process gone before its `+` line: the
    // folder's stamp no longer follows from the journal.
    let running = store.roots.running(&store.project);
    drop(store.claim("b", None).unwrap());
    let mut w = LogWriter::create(&store.path_of("b")).unwrap();
    w.append(&Record::Header(header(&store, "b"))).unwrap();
    assert!(!cache_is_current(&store));
    assert_eq!(ids(&store), ["a", "b"]);
    // A line that does not follow the one before (a change in between
    // that was never journaled) breaks the chain too.
    let stamp = dir_stamp(&store.sessions_dir()).unwrap();
    let lie = registry::Change {
        before: (stamp.0, stamp.1 - 1),
        after: stamp,
        what: registry::What::Made("x"),
    };
    registry::journal_change(&running, &lie).unwrap();
    assert!(!cache_is_current(&store));
    assert_eq!(ids(&store), ["a", "b"], "the made file x does not exist");
}

#[test]
fn made_since_follows_an_unbroken_chain_only() {
    let lines = [
        "+a 1:10 1:20",
        "b",
        "=1:20 1:30",
        "+c 1:30 1:40",
        "-a 1:40 1:45",
        "-d 1:45 1:50",
    ];
    let changed = |v: &[(&str, bool)]| {
        Some(
            v.iter()
                .map(|(n, m)| (format!("{n}.jsonl"), *m))
                .collect::<Vec<_>>(),
        )
    };
    assert_eq!(
        made_since(Some((1, 10)), &lines, (1, 50)),
        changed(&[("c", true), ("a", false), ("d", false)])
    );
    let at = |n| (1, n);
    assert_eq!(
        made_since(Some(at(10)), &lines, at(51)),
        None,
        "changed since"
    );
    assert_eq!(
        made_since(Some(at(11)), &lines, at(50)),
        None,
        "before the first"
    );
    assert_eq!(made_since(None, &lines, at(50)), None, "no stamp");
    assert_eq!(made_since(Some(at(10)), &[], at(10)), changed(&[]));
    assert_eq!(
        made_since(Some(at(10)), &[], (2, 10)),
        None,
        "another folder"
    );
    let gap = ["+a 1:10 1:20", "+c 1:25 1:40"];
    assert_eq!(made_since(Some(at(10)), &gap, at(40)), None, "a gap");
}

#[test]
fn a_file_removed_through_the_store_is_journaled() {
    let store = store("removed");
    for id in ["a", "b"] {
        let (mut w, _claim, _) = store.create(header(&store, id), named(id)).unwrap();
        w.append(&totals(1)).unwrap();
    }
    assert_eq!(ids(&store), ["a", "b"]);
    assert!(store.remove(&store.path_of("a"), Some(&store.naming().unwrap())));
    assert!(cache_is_current(&store));
    assert_eq!(ids(&store), ["b"]);
    assert!(!store.remove(&store.path_of("a"), None), "gone already");
}

#[test]
fn find_chooses_as_the_core_does_over_the_whole_listing() {
    let store = store("find");
    // Ids that share prefixes, names used twice, sessions with no turn.
    for (id, name, turns) in [
        ("a1", "db", 1),
        ("a2", "db", 2),
        ("b1", "web", 0),
        ("b2", "api", 3),
        ("c1", "empty", 0),
    ] {
        let mut h = header(&store, id);
        h.name = Some(name.into());
        let mut w = LogWriter::create(&store.path_of(id)).unwrap();
        w.append(&Record::Header(h)).unwrap();
        if turns > 0 {
            w.append(&totals(turns)).unwrap();
        }
    }
    let all = store.list().unwrap();
    let path = |s: &Summary| PathBuf::from(&s.path);
    let latest = revolve_core::names::latest(&all).map(path);
    assert_eq!(store.find(None).ok(), latest);
    for needle in ["db", "a", "a1", "b", "b2", "web", "c", "api", "x", "empty"] {
        let core = revolve_core::names::pick(needle, &all).map(path);
        let found = store.find(Some(needle));
        match core {
            Ok(p) => assert_eq!(found.unwrap(), p, "{needle}"),
            Err(_) => assert!(found.is_err(), "{needle}"),
        }
    }
}

/// What the quick answers (see [`quick`]) say against what a listing
/// says of the same folder, as `revolve_core` chooses over it.
fn quick_agrees(store: &Store, needles: &[&str]) {
    let all = store.list().unwrap();
    let quick = store.quick().expect("the cache just written answers");
    let path = |s: &Summary| s.path.clone();
    let latest = revolve_core::names::latest(&all).map(path);
    let chosen = quick.latest().unwrap();
    assert_eq!(revolve_core::names::latest(&chosen).map(path), latest);
    // An ambiguous prefix's ids, in any order.
    let sorted = |p: Result<String, revolve_core::names::Pick>| {
        p.map_err(|e| match e {
            revolve_core::names::Pick::Ambiguous(mut ids) => {
                ids.sort();
                ids
            }
            revolve_core::names::Pick::None => Vec::new(),
        })
    };
    for needle in needles {
        let core = sorted(revolve_core::names::pick(needle, &all).map(path));
        let found = quick.matching(needle).unwrap();
        assert_eq!(
            sorted(revolve_core::names::pick(needle, &found).map(path)),
            core,
            "{needle}"
        );
        let used = all.iter().any(|s| s.name.as_deref() == Some(needle));
        assert_eq!(quick.uses(needle), Some(used), "{needle} in use");
    }
    let slow = |shown| {
        let open: Vec<Summary> = all
            .iter()
            .filter(|s| s.continued.is_none())
            .cloned()
            .collect();
        let latest = revolve_core::names::latest(&open).map(|s| s.id.clone());
        let named = open.iter().filter(|s| s.named).count() as u64;
        let unnamed = open.len() as u64 - named;
        let list = revolve_core::summary::recent(open, shown, latest.as_deref());
        let list = revolve_core::summary::listed_with(list, false, latest.as_deref());
        (list, named, unnamed)
    };
    for shown in [1, 2, 50] {
        let recent = quick.recent(shown, &mut Unlisted::default()).unwrap();
        let list = revolve_core::summary::listed_with(
            revolve_core::summary::recent(recent.sessions, shown, recent.latest.as_deref()),
            false,
            recent.latest.as_deref(),
        );
        assert_eq!((list, recent.named, recent.unnamed), slow(shown), "{shown}");
    }
}

/// A session file written by hand: its id, name, turns and parent.
fn session(store: &Store, id: &str, name: Option<&str>, turns: u64, parent: Option<&str>) {
    let mut h = header(store, id);
    h.name = name.map(str::to_owned);
    h.named = name.is_some_and(|n| !n.starts_with("gen"));
    let mut w = LogWriter::create(&store.path_of(id)).unwrap();
    w.append(&Record::Header(h)).unwrap();
    if let Some(parent) = parent {
        w.append(&Record::Spawned(revolve_core::record::Spawned {
            at: time::macros::datetime!(2026-12-02 10:00 UTC),
            parent: parent.into(),
            call: "call".into(),
            subagent: None,
            tools: Vec::new(),
        }))
        .unwrap();
    }
    if turns > 0 {
        w.append(&totals(turns)).unwrap();
    }
}

#[test]
fn the_quick_answers_are_a_listings_through_every_change() {
    let store = store("quick");
    let needles = ["db", "a", "a1", "b", "b2", "web", "gen1", "k", "x", "api"];
    for (id, name, turns, parent) in [
        ("a1", Some("db"), 1, None),
        ("a2", Some("db"), 2, None),
        ("b1", Some("web"), 0, None),
        ("b2", Some("gen1"), 3, None),
        ("k1", None, 1, Some("a2")),
        ("k2", Some("kid"), 0, Some("b2")),
        ("c1", None, 0, None),
    ] {
        session(&store, id, name, turns, parent);
        // Distinct modification times, in this order.
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    quick_agrees(&store, &needles);
    // Claimed and written since: read again, the rest from the cache.
    {
        let _claim = store.claim("a1", None).unwrap();
        LogWriter::open(&store.path_of("a1"))
            .unwrap()
            .append(&totals(5))
            .unwrap();
    }
    assert!(store.quick().unwrap().stale.contains("a1.jsonl"));
    quick_agrees(&store, &needles);
    // Made through the store, and removed through it.
    let (mut w, claim, _) = store.create(header(&store, "d1"), named("api")).unwrap();
    w.append(&totals(1)).unwrap();
    drop((w, claim));
    assert!(store.remove(&store.path_of("b1"), Some(&store.naming().unwrap())));
    let quick = store.quick().expect("journaled changes only");
    assert!(quick.stale.contains("d1.jsonl") && quick.stale.contains("b1.jsonl"));
    quick_agrees(&store, &needles);
    // A running session's file, written while it runs.
    let claim = store.claim("b2", None).unwrap();
    LogWriter::open(&store.path_of("b2"))
        .unwrap()
        .append(&totals(9))
        .unwrap();
    quick_agrees(&store, &needles);
    drop(claim);
    // Claimed and unchanged: its entry stands.
    drop(store.claim("a2", None).unwrap());
    assert!(!store.quick().unwrap().stale.contains("a2.jsonl"));
    // More changed files than the quick answers read: the long way,
    // which writes the cache again, after which they answer.
    let many: Vec<String> = (0..=quick::QUICK_MAX).map(|i| format!("z{i}")).collect();
    for id in &many {
        session(&store, id, None, 1, None);
    }
    quick_agrees(&store, &needles);
    for id in &many {
        let _claim = store.claim(id, None).unwrap();
        LogWriter::open(&store.path_of(id))
            .unwrap()
            .append(&totals(2))
            .unwrap();
    }
    assert!(store.quick().is_none());
    quick_agrees(&store, &needles);
}

#[test]
fn the_quick_answers_refuse_a_damaged_or_stale_cache_and_it_is_built_again() {
    let store = store("quick-damaged");
    for (id, name) in [("a1", "db"), ("a2", "web"), ("a3", "api")] {
        let (mut w, claim, _) = store.create(header(&store, id), named(name)).unwrap();
        w.append(&totals(1)).unwrap();
        drop((w, claim));
    }
    let cache = store.sessions_dir().join(index::FILE);
    let needles = ["db", "web", "a", "a3", "x"];
    quick_agrees(&store, &needles);
    // Damaged in its head, its body, its tables; cut short; deleted.
    let whole = std::fs::read(&cache).unwrap();
    let body = index::head_len(&whole).unwrap();
    for (what, bytes) in [
        ("head", {
            let mut b = whole.clone();
            b[40] ^= 0xff;
            b
        }),
        ("body", {
            let mut b = whole.clone();
            b[body + 2] = 0xff;
            b
        }),
        ("a table", {
            let mut b = whole.clone();
            let n = b.len();
            b[n - 3] = 0x7f;
            b
        }),
        ("cut short", whole[..whole.len() - 5].to_vec()),
    ] {
        std::fs::write(&cache, &bytes).unwrap();
        // Whatever the quick answers make of it, they never name a
        // session that is not there, and the next listing mends it.
        if let Some(quick) = store.quick() {
            for needle in needles {
                for found in quick.matching(needle).unwrap_or_default() {
                    assert!(Path::new(&found.path).exists(), "{what}: {found:?}");
                }
            }
        }
        assert_eq!(ids(&store), ["a1", "a2", "a3"], "{what}");
        quick_agrees(&store, &needles);
    }
    std::fs::remove_file(&cache).unwrap();
    assert!(store.quick().is_none(), "deleted");
    assert_eq!(store.find(Some("web")).unwrap(), store.path_of("a2"));
    assert!(store.names_in_use().unwrap().contains("api"));
    quick_agrees(&store, &needles);
    // Stale: a file made by hand under a name that is not its id's, and
    // one removed by hand, no journal line.
    let copy = store.sessions_dir().join("copy.jsonl");
    session(&store, "q7", Some("odd"), 1, None);
    std::fs::rename(store.path_of("q7"), &copy).unwrap();
    std::fs::remove_file(store.path_of("a3")).unwrap();
    assert!(
        store.quick().is_none(),
        "the folder changed behind revolve's back"
    );
    assert_eq!(store.find(None).unwrap(), copy);
    assert!(!store.names_in_use().unwrap().contains("api"));
    assert!(store.quick().is_some(), "built again");
    assert_eq!(store.find(Some("q7")).unwrap(), copy, "by its id");
    quick_agrees(&store, &["db", "a1", "q7", "q", "odd", "api"]);
}

#[test]
fn a_generated_name_among_many_taken_is_the_one_a_listing_gives() {
    let store = store("many-names");
    // The first 70 candidates taken: the 71st lookup reads every name.
    let taken: Vec<String> = revolve_core::names::WORDS
        .iter()
        .map(|w| w.to_string())
        .chain(revolve_core::names::WORDS.iter().map(|w| format!("{w}-2")))
        .take(70)
        .collect();
    for (i, name) in taken.iter().enumerate() {
        // Generated names (unlisted), as the REPL gives them.
        let mut h = header(&store, &format!("s{i}"));
        h.name = Some(name.clone());
        let mut w = LogWriter::create(&store.path_of(&format!("s{i}"))).unwrap();
        w.append(&Record::Header(h)).unwrap();
    }
    store.list().unwrap();
    assert!(store.quick().is_some());
    let names = store.names_in_use().unwrap();
    let all: std::collections::BTreeSet<String> = store
        .list()
        .unwrap()
        .into_iter()
        .filter_map(|s| s.name)
        .collect();
    assert_eq!(
        revolve_core::names::allocate(&names),
        revolve_core::names::allocate(&all)
    );
    assert_eq!(revolve_core::names::allocate(&names), "willow-2");
}
