//! The edit commands, executed: open, stage (store and ask), write, and a
//! rewind's restores; and what a resume finds of an edit a crash left
//! unwritten.

use std::collections::BTreeMap;
use std::path::Path;

use crate::{clock, interrupt};
use revolve_core::edit::Scope;
use revolve_core::{Input, Session};
use revolve_tools::edit::{self, Blobs};

use super::Live;
use crate::error::Error;
use crate::front::Front;

impl<F: Front> Live<F> {
    fn blobs(&self) -> Blobs {
        Blobs::new(&self.store.roots.state)
    }

    /// [`revolve_core::Command::Open`]: the file an edit names, confined.
    pub(super) fn open_edit(&mut self, id: String, raw: &str, grants: &[String]) -> Input {
        let ctx = self.tool_context();
        Input::Opened {
            id,
            opened: edit::open(&ctx, grants, raw, &self.store.roots.state),
            keys: revolve_tools::keys(),
            now: clock::now(),
        }
    }

    /// [`revolve_core::Command::Stage`]: both contents stored, then the
    /// user asked when core says so.
    pub(super) fn stage_edit(
        &mut self,
        id: String,
        shown: &str,
        before: Option<(Vec<u8>, String)>,
        after: &[u8],
        diff: &str,
        ask: Option<bool>,
    ) -> Input {
        let before = before.as_ref().map(|(b, h)| (b.as_slice(), h.as_str()));
        let (after, error) = match edit::stage(&self.blobs(), before, after) {
            Ok(hash) => (hash, None),
            Err(e) => (String::new(), Some(e.to_string())),
        };
        // `ask`: Some(once) when the user is asked.
        let answer = ask
            .filter(|_| error.is_none())
            .map(|once| self.front.ask_edit(shown, diff, once));
        // Ctrl-C while the diff was asked about ends the turn, whatever
        // was typed (as at a shell or grant question).
        if answer.is_some() && interrupt::take() {
            return Input::Interrupted {
                partial: String::new(),
                now: clock::now(),
            };
        }
        Input::Staged {
            id,
            answer,
            after,
            error,
            now: clock::now(),
        }
    }

    /// [`revolve_core::Command::Write`]: the file written whole or not at
    /// all, with its mode and owner, if it still holds what core expects.
    pub(super) fn write_edit(
        &mut self,
        id: String,
        path: &str,
        content: &[u8],
        mode: Option<u32>,
        expect: Option<String>,
    ) -> Input {
        let expect = edit::Expect::Holds(expect.as_deref());
        let error = edit::write_checked(Path::new(path), content, mode, expect)
            .err()
            .map(|e| e.to_string());
        Input::Wrote {
            id,
            error,
            now: clock::now(),
        }
    }

    /// [`revolve_core::Command::Restore`]: each file put back, then what
    /// each holds looked at, for core to log what was done.
    pub(super) fn restore(&mut self, files: &[revolve_core::record::Restore]) -> Input {
        let errors = edit::restore(&self.blobs(), files).into_iter().collect();
        Input::Restored {
            on_disk: hashes_of(files),
            errors,
            resumed: false,
            now: clock::now(),
        }
    }

    /// At a resume: a rewind the last run logged as planned but not as
    /// done is looked at on disk, file by file, and what is found logged.
    pub(super) fn settle_pending_rewind(&mut self) -> Result<(), Error> {
        let Some(files) = self
            .state()
            .pending_rewind()
            .as_ref()
            .map(|r| r.files.clone())
        else {
            return Ok(());
        };
        self.drive(Input::Restored {
            on_disk: hashes_of(&files),
            errors: BTreeMap::new(),
            resumed: true,
            now: clock::now(),
        })
        .map(|_| ())
    }

    /// At a resume: an edit the last run logged but did not see written is
    /// looked at on disk, and what is found is logged.
    pub(super) fn settle_pending_edit(&mut self) -> Result<(), Error> {
        let Some(path) = self.state().pending_edit().as_ref().map(|e| e.path.clone()) else {
            return Ok(());
        };
        let hash = hash_now(&path);
        self.drive(Input::Found {
            hash,
            now: clock::now(),
        })
        .map(|_| ())
    }

    /// `/rewind`, `revolve rewind`: takes back the last `turns` turns (or,
    /// with `undo`, the last rewind). The refusal, when core refuses.
    pub fn rewind(
        &mut self,
        turns: usize,
        scope: Scope,
        undo: bool,
        force: bool,
    ) -> Result<Result<(), String>, Error> {
        let on_disk = on_disk(&self.session);
        let (_, did) = self.run_input(Input::Rewind {
            turns,
            scope,
            undo,
            force,
            on_disk,
            now: clock::now(),
        })?;
        // Core's refusal, if it refused (Command::Refused).
        Ok(did.refused.map_or(Ok(()), Err))
    }
}

/// What each file a rewind may touch holds now, by hash.
fn on_disk(session: &Session) -> BTreeMap<String, Option<String>> {
    revolve_core::edit::tracked_paths(session.state())
        .into_iter()
        .map(|p| {
            let hash = hash_now(&p);
            (p, hash)
        })
        .collect()
}

/// What each file of a rewind holds now, by hash.
fn hashes_of(files: &[revolve_core::record::Restore]) -> BTreeMap<String, Option<String>> {
    files
        .iter()
        .map(|f| (f.path.clone(), hash_now(&f.path)))
        .collect()
}

/// What the file at `path` holds now, by hash: `None` when there is none,
/// an empty hash when it cannot be read (it counts as changed).
fn hash_now(path: &str) -> Option<String> {
    edit::hash_of(Path::new(path)).unwrap_or(Some(String::new()))
}
