//! `/refine`, run: the shell reads the memory files and, for `/refine`,
//! the session's whole chain, and the core decides the rest (see
//! `revolve_core::session`'s refinement): the parts, the cost question,
//! each request (logged as `refining` before it goes out), what the
//! answers change. The shell sends what the core asks, snapshots and
//! writes the changes.

use revolve_core::state::FileReading;
use revolve_core::{Input, UserInput};
use revolve_store::{log, memory};

use crate::clock;

use super::{Live, Outcome};
use crate::error::Error;
use crate::front::Front;

impl<F: Front> Live<F> {
    /// Refines the memory from the whole session (every file of its chain),
    /// or, on its own, from what it added since the last refinement: the
    /// model answers with the files it changes; a usable answer is
    /// snapshotted and written, anything else changes nothing and says why.
    /// The refinement is logged either way, so the automatic trigger knows.
    pub fn refine(&mut self, auto: bool) -> Result<Outcome, Error> {
        let files = memory::load(&self.runtime.memory)
            .map_err(Error::memory("cannot read the memory files"))?;
        // On its own it reads what this file added, which the core has.
        let chain = if auto {
            Vec::new()
        } else {
            self.chain_blocks()?
        };
        let outcome = self.drive(Input::User(UserInput::Refine {
            auto,
            files,
            chain,
            now: clock::now(),
        }))?;
        // An interrupted refinement changed nothing and said so; the
        // session goes on.
        Ok(match outcome {
            Outcome::Interrupted => Outcome::Done,
            other => other,
        })
    }

    /// The session's real content, every file of its chain read as the
    /// core reads it ([`FileReading`]): what `/refine` asked for reads.
    fn chain_blocks(&self) -> Result<Vec<String>, Error> {
        let mut blocks = Vec::new();
        for (n, file) in self.store.chain(self.writer.path()).into_iter().enumerate() {
            let mut reading = FileReading::new(n > 0);
            log::each_record(&file, |_, r| reading.apply(&r), |_| {})
                .map_err(|e| Error::at(&file, "cannot read", e))?;
            blocks.extend(reading.blocks());
        }
        Ok(blocks)
    }

    /// Runs an automatic refinement when the core says one is due.
    pub fn refine_if_due(&mut self) -> Result<(), Error> {
        if self.session.refine_due(clock::now()) {
            self.refine(true)?;
        }
        Ok(())
    }
}
