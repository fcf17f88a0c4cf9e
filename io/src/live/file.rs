//! The file family, executed: a spilled tool result written whole, the
//! edit commands (open, stage: store and ask, write), a rewind's restores;
//! and what a resume finds of an edit a crash left unwritten.

use std::collections::BTreeMap;
use std::path::Path;

use crate::{clock, interrupt};
use revolve_core::edit::Scope;
use revolve_core::{FileCommand, FileInput, Input, Session, UserInput};
use revolve_store::{files, fsx};
use revolve_tools::edit::{self, Blobs};

use super::{Flight, Live};
use crate::error::Error;
use crate::front::Front;

impl<F: Front> Live<F> {
    /// Executes one [`FileCommand`]: the input that answers it (none for a
    /// spill).
    pub(super) fn execute_file(
        &mut self,
        cmd: FileCommand,
        flight: &mut Flight,
    ) -> Result<Option<Input>, Error> {
        Ok(Some(match cmd {
            FileCommand::Spill { path, content } => {
                // The result still goes to the model (its head and tail);
                // only the whole of it is lost.
                if let Err(e) = spill(Path::new(&path), &content) {
                    self.front.notice(&format!(
                        "revolve: {e}; the model gets the head and tail only"
                    ));
                }
                return Ok(None);
            }
            FileCommand::Open {
                id,
                path,
                tool,
                arguments,
                grants,
            } => {
                // Shown as the call now; its result once core logs it.
                self.front.tool_call(&id, &tool, &arguments);
                flight.run(&id, Some(tool));
                self.open_edit(id, &path, &grants)
            }
            FileCommand::Stage {
                id,
                shown,
                before,
                after,
                diff,
                ask,
                once,
            } => self.stage_edit(id, &shown, before, &after, &diff, ask.then_some(once)),
            FileCommand::Write {
                id,
                path,
                content,
                mode,
                expect,
            } => self.write_edit(id, &path, &content, mode, expect),
            FileCommand::Restore(files) => self.restore(&files),
        }))
    }

    fn blobs(&self) -> Blobs {
        Blobs::new(&self.store.roots.state)
    }

    /// [`revolve_core::FileCommand::Open`]: the file an edit names, confined.
    fn open_edit(&mut self, id: String, raw: &str, grants: &[String]) -> Input {
        let ctx = self.tool_context();
        Input::File(FileInput::Opened {
            id,
            opened: edit::open(&ctx, grants, raw, &self.store.roots.state),
            keys: revolve_tools::keys(),
            now: clock::now(),
        })
    }

    /// [`revolve_core::FileCommand::Stage`]: both contents stored, then the
    /// user asked when core says so.
    fn stage_edit(
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
            return Input::User(UserInput::Interrupted {
                partial: String::new(),
                now: clock::now(),
            });
        }
        Input::File(FileInput::Staged {
            id,
            answer,
            after,
            error,
            now: clock::now(),
        })
    }

    /// [`revolve_core::FileCommand::Write`]: the file written whole or not at
    /// all, with its mode and owner, if it still holds what core expects.
    fn write_edit(
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
        Input::File(FileInput::Wrote {
            id,
            error,
            now: clock::now(),
        })
    }

    /// [`revolve_core::FileCommand::Restore`]: each file put back, then what
    /// each holds looked at, for core to log what was done.
    fn restore(&mut self, files: &[revolve_core::record::Restore]) -> Input {
        let errors = edit::restore(&self.blobs(), files).into_iter().collect();
        Input::File(FileInput::Restored {
            on_disk: hashes_of(files),
            errors,
            resumed: false,
            now: clock::now(),
        })
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
        self.drive(Input::File(FileInput::Restored {
            on_disk: hashes_of(&files),
            errors: BTreeMap::new(),
            resumed: true,
            now: clock::now(),
        }))
        .map(|_| ())
    }

    /// At a resume: an edit the last run logged but did not see written is
    /// looked at on disk, and what is found is logged.
    pub(super) fn settle_pending_edit(&mut self) -> Result<(), Error> {
        let Some(path) = self.state().pending_edit().as_ref().map(|e| e.path.clone()) else {
            return Ok(());
        };
        let hash = hash_now(&path);
        self.drive(Input::File(FileInput::Found {
            hash,
            now: clock::now(),
        }))
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
        let (_, did) = self.run_input(Input::User(UserInput::Rewind {
            turns,
            scope,
            undo,
            force,
            on_disk,
            now: clock::now(),
        }))?;
        // Core's refusal, if it refused (UserCommand::Refused).
        Ok(did.refused.map_or(Ok(()), Err))
    }
}

/// Writes a spilled tool result whole or not at all: through a temp file
/// renamed into place ([`fsx::write_atomic`]), so a full disk leaves no
/// partial file under the name the model is given.
fn spill(path: &Path, content: &str) -> Result<(), Error> {
    if let Some(dir) = path.parent() {
        files::create_dir_all(dir).map_err(|e| Error::at(dir, "cannot create", e))?;
    }
    fsx::write_atomic(path, content.as_bytes())
        .map_err(|e| Error::at(path, "cannot write the spilled tool output to", e))
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
