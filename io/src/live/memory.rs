//! The memory family, executed: a snapshot of the memory taken before the
//! writes a refinement decided, and the undo of the last change.

use revolve_core::{Input, MemoryCommand, MemoryInput};

use super::{Did, Live};
use crate::clock;
use crate::error::Error;
use crate::front::Front;

impl<F: Front> Live<F> {
    /// Executes one [`MemoryCommand`]: the input that answers it. An
    /// undo's files are kept in `did` for `/refine undo` to show.
    pub(super) fn execute_memory(
        &mut self,
        cmd: MemoryCommand,
        did: &mut Did,
    ) -> Result<Input, Error> {
        match cmd {
            MemoryCommand::Snapshot {
                entry,
                // Core logs who changed it, and what, itself.
                by: _,
                changes,
                meta,
            } => {
                let entry = revolve_store::refine::apply(
                    &self.store.roots.state,
                    &self.runtime.memory,
                    &entry,
                    &changes,
                    &meta,
                )
                .map_err(Error::memory("cannot write the refined memory"))?;
                Ok(Input::Memory(MemoryInput::Changed {
                    entry,
                    now: clock::now(),
                }))
            }
            MemoryCommand::Undo => {
                let done = revolve_store::refine::undo_entry(
                    &self.store.roots.state,
                    &self.runtime.memory,
                )
                .map_err(Error::memory("cannot undo"))?;
                did.undone = done.as_ref().map(|(_, files)| files.clone());
                let (entry, files) = match done {
                    Some((entry, files)) => (Some(entry), files),
                    None => (None, Vec::new()),
                };
                Ok(Input::Memory(MemoryInput::Undone {
                    entry,
                    files,
                    now: clock::now(),
                }))
            }
        }
    }
}
