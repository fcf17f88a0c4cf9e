//! The common questions answered without reading the whole cache:
//! `--continue`'s latest session, the sessions a needle names, whether a
//! name is in use, and the most recent sessions `revolve sessions` shows.
//!
//! The same proof as a listing's ([`Store::list`]) says which cached
//! entries still stand: the claims journal since the cache was written
//! must lead from the cache's folder stamp to the folder's stamp now (so
//! the folder changed only by files revolve made or removed and said so),
//! and the files that may have changed since (claimed since, running then
//! or now, made or removed since, or cached without a header) are few.
//! Those are read again now; every other entry is taken from the cache,
//! read by position (see [`Probe`]). When the proof fails, or too many
//! files changed, [`Store::quick`] says `None` and the caller lists the
//! folder the long way, which writes the cache again.

use super::*;
use crate::index::probe::Probe;
use crate::index::{Lists, Span, Table, NAMED_CAP, NEWEST};

/// How many files changed since the cache was written may be read again
/// (or how many ids a prefix may match) before a question reads the whole
/// cache; a listing writes it again past [`REWRITE_AFTER`] (16) changed
/// files, so only many sessions running at once reach this.
pub(super) const QUICK_MAX: usize = 64; // not policy: past it the long way is as quick
/// How many files that may have changed are looked at (a stat each, and
/// their entries found in the cache) before a question reads the whole
/// cache.
const SUSPECTS_MAX: usize = 4096; // not policy: past it the long way is as quick

/// The cache opened, and what changed since it was written.
#[derive(Debug)]
pub(super) struct Quick {
    probe: Probe,
    /// The index of this directory among the cache's working directories.
    mine: Option<usize>,
    /// The files whose cached entries do not stand (read again now).
    pub(super) stale: FxHashSet<String>,
    /// The entries of this directory's files among them, read now.
    fresh: Vec<Entry<'static>>,
    /// The files among them without a session header.
    headerless: Vec<String>,
    /// The sessions folder, as paths in summaries begin.
    dir_text: String,
}

impl Store {
    /// The cache, when what changed since it was written is known and
    /// small (see the module doc); `None`: list the long way.
    pub(super) fn quick(&self) -> Option<Quick> {
        let dir = self.sessions_dir();
        let running = self.roots.running(&self.project);
        // In this order, as a listing: the journal, the lock files, the files.
        let journal = registry::Journal::read(&running)?;
        let locked: FxHashSet<String> = registry::locked_ids(&running).into_iter().collect();
        let probe = Probe::open(&dir.join(index::FILE))?;
        if journal.epoch != probe.head.journal {
            return None;
        }
        let tail = journal.since(probe.head.offset)?;
        made_since(probe.head.dir, &tail, dir_stamp(&dir)?)?;
        let files: FxHashSet<String> = suspects(tail, &probe.head.volatile, &locked)
            .into_iter()
            .map(|id| format!("{id}.jsonl"))
            .chain(probe.head.headerless.iter().cloned())
            .collect();
        if files.len() > SUSPECTS_MAX || probe.head.odd.len() > QUICK_MAX {
            return None;
        }
        let cwd = self.cwd_str();
        let mut quick = Quick {
            mine: probe.head.cwds.iter().position(|c| *c == cwd),
            probe,
            stale: FxHashSet::default(),
            fresh: Vec::new(),
            headerless: Vec::new(),
            dir_text: dir.to_string_lossy().into_owned(),
        };
        let mut read = 0;
        for name in files {
            let path = dir.join(&name);
            let meta = match std::fs::metadata(&path) {
                Ok(meta) => meta,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    quick.stale.insert(name);
                    continue;
                }
                Err(_) => return None,
            };
            let stamp = stamp_of(&meta);
            // Claimed and unchanged: its entry stands, as in a listing.
            let cached = quick.probe.find(Table::Files, &name)?;
            if cached.iter().any(|e| e.stamp == stamp && e.row.is_some()) {
                continue;
            }
            read += 1;
            if read > QUICK_MAX {
                return None;
            }
            match log::summary(&path) {
                Ok(Some((header, s))) if header.cwd == cwd => quick.fresh.push(Entry {
                    file: Cow::Owned(name.clone()),
                    stamp,
                    row: Some(row_of(0, &s)),
                }),
                Ok(Some(_)) => {}
                Ok(None) => quick.headerless.push(name.clone()),
                // Unreadable: the long way says so.
                Err(_) => return None,
            }
            quick.stale.insert(name);
        }
        quick.headerless.sort();
        Some(quick)
    }
}

impl Quick {
    /// `--continue`'s candidates: the newest session of this directory
    /// that took a turn and the newest of all (subagents' aside), as
    /// `revolve_core::names::latest` chooses; `None`: the cache cannot say.
    pub(super) fn latest(&self) -> Option<Vec<Summary>> {
        let turned = self.newest(
            |l| &l.turned,
            NEWEST,
            1,
            |r| r.parent.is_none() && r.turns > 0,
        )?;
        let any = self.newest(|l| &l.newest, NEWEST, 1, |r| r.parent.is_none())?;
        Some(self.summaries(turned.into_iter().chain(any)))
    }

    /// The sessions of this directory whose id or name `needle` is, or
    /// whose id it begins (as `revolve_core::names::pick` chooses among).
    pub(super) fn matching(&self, needle: &str) -> Option<Vec<Summary>> {
        let mut found = self.probe.find(Table::Files, &format!("{needle}.jsonl"))?;
        found.extend(self.probe.find(Table::Names, needle)?);
        found.extend(self.probe.prefixed(Table::Files, needle, QUICK_MAX)?.ok()?);
        for odd in &self.probe.head.odd {
            found.extend(self.probe.find(Table::Files, odd)?);
        }
        let matches = |r: &Row| {
            r.id == needle || r.name.as_deref() == Some(needle) || r.id.starts_with(needle)
        };
        found.retain(|e| self.stands(e) && e.row.as_ref().is_some_and(matches));
        found.extend(
            self.fresh
                .iter()
                .filter(|e| e.row.as_ref().is_some_and(matches))
                .cloned(),
        );
        found.sort_by(|a, b| a.file.cmp(&b.file));
        found.dedup_by(|a, b| a.file == b.file);
        Some(self.summaries(found))
    }

    /// Whether a session of this directory on disk has `name`; `None`:
    /// the cache cannot be read.
    pub(super) fn uses(&self, name: &str) -> Option<bool> {
        let has = |e: &Entry| {
            e.row
                .as_ref()
                .is_some_and(|r| r.name.as_deref() == Some(name))
        };
        if self.fresh.iter().any(has) {
            return Some(true);
        }
        let cached = self.probe.find(Table::Names, name)?;
        Some(cached.iter().any(|e| self.stands(e) && has(e)))
    }

    /// What `revolve sessions` shows of this directory (see
    /// [`Store::recent`]).
    pub(super) fn recent(&self, shown: usize, unlisted: &mut Unlisted) -> Option<Recent> {
        let open = |r: &Row| r.parent.is_none() && r.continued.is_none();
        let mut newest = self.newest(|l| &l.open_turned, NEWEST, 1, |r| open(r) && r.turns > 0)?;
        newest.extend(self.newest(|l| &l.open, NEWEST, 1, open)?);
        let latest =
            revolve_core::names::latest(&self.summaries(newest.clone())).map(|s| s.id.clone());
        let named = |r: &Row| r.named && r.continued.is_none();
        let mut sessions = self.newest(|l| &l.named, NAMED_CAP, shown, named)?;
        let (mut named_count, mut unnamed_count) = self
            .lists()
            .map_or((0, 0), |l| (l.named_count, l.unnamed_count));
        // The files read again: out with what the cache said of them, in
        // with what they say now.
        for file in &self.stale {
            for e in self.probe.find(Table::Files, file)? {
                if let Some(r) = e.row.as_ref().filter(|r| Some(r.cwd) == self.mine) {
                    named_count = named_count.saturating_sub(u64::from(named(r)));
                    let unnamed = !r.named && r.continued.is_none();
                    unnamed_count = unnamed_count.saturating_sub(u64::from(unnamed));
                }
            }
        }
        for r in self.fresh.iter().filter_map(|e| e.row.as_ref()) {
            named_count += u64::from(named(r));
            unnamed_count += u64::from(!r.named && r.continued.is_none());
        }
        let parents: Vec<String> = sessions
            .iter()
            .filter_map(|e| e.row.as_ref().map(|r| r.id.to_string()))
            .chain(latest.clone())
            .collect();
        // (No cached subagent at all: nothing to look up.)
        let cached_children = self.probe.head.tables[Table::Parents as usize] > 0;
        for parent in parents.iter().filter(|_| cached_children) {
            let mut children = self.probe.find(Table::Parents, parent)?;
            children.retain(|e| {
                self.stands(e) && e.row.as_ref().is_some_and(|r| r.continued.is_none())
            });
            sessions.extend(children);
        }
        let child = |r: &Row| {
            r.parent
                .as_ref()
                .is_some_and(|p| parents.iter().any(|q| q == p))
        };
        sessions.extend(
            self.fresh
                .iter()
                .filter(|e| {
                    e.row
                        .as_ref()
                        .is_some_and(|r| r.continued.is_none() && child(r))
                })
                .cloned(),
        );
        let is_latest = |e: &Entry| {
            e.row
                .as_ref()
                .is_some_and(|r| latest.as_deref() == Some(&*r.id))
        };
        sessions.extend(newest.into_iter().filter(is_latest));
        for name in &self.headerless {
            unlisted.headerless(name);
        }
        sessions.sort_by(|a, b| a.file.cmp(&b.file));
        sessions.dedup_by(|a, b| a.file == b.file);
        Some(Recent {
            sessions: self.summaries(sessions),
            latest,
            named: named_count,
            unnamed: unnamed_count,
        })
    }

    /// This directory's lists in the cache, if it has rows there.
    fn lists(&self) -> Option<&Lists> {
        let mine = self.mine?;
        self.probe.head.lists.iter().find(|l| l.cwd == mine)
    }

    /// Whether a cached entry stands and is of this directory.
    fn stands(&self, e: &Entry) -> bool {
        !self.stale.contains(&*e.file) && e.row.as_ref().is_some_and(|r| Some(r.cwd) == self.mine)
    }

    /// The `want` newest entries of this directory that `keep` accepts,
    /// from the cached list `pick` chooses (at most `cap` long) and the
    /// files read again; `None` when too many of the list's entries
    /// changed to know.
    fn newest(
        &self,
        pick: fn(&Lists) -> &Vec<Span>,
        cap: usize,
        want: usize,
        keep: impl Fn(&Row) -> bool,
    ) -> Option<Vec<Entry<'static>>> {
        let list = self.lists().map_or(&[][..], |l| pick(l).as_slice());
        let mut out = Vec::new();
        for span in list {
            let e = self.probe.entry(*span)?;
            if self.stands(&e) {
                out.push(e);
            }
        }
        // A full list tells only of its own entries: past them, older
        // entries the cache did not list may be next.
        if list.len() >= cap && out.len() < want {
            return None;
        }
        out.extend(
            self.fresh
                .iter()
                .filter(|e| e.row.as_ref().is_some_and(&keep))
                .cloned(),
        );
        out.sort_by(crate::index::newer);
        out.truncate(want);
        Some(out)
    }

    fn summaries(&self, entries: impl IntoIterator<Item = Entry<'static>>) -> Vec<Summary> {
        entries
            .into_iter()
            .filter_map(|e| {
                let path = format!("{}/{}", self.dir_text, e.file);
                summary(e.row.as_ref()?, path, e.stamp)
            })
            .collect()
    }
}
