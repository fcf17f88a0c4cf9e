//! The log family, executed: every record appended as one line (a tool's
//! result shown once it is in the log), synced at a turn's end, and the
//! next file of the chain started after a compaction.

use revolve_core::record::{Header, Message, Record, Role};
use revolve_core::LogCommand;
use revolve_store::log::LogWriter;

use super::{Flight, Live, Logged};
use crate::error::Error;
use crate::front::Front;

impl<F: Front> Live<F> {
    /// Executes one [`LogCommand`]; nothing answers it.
    pub(super) fn execute_log(
        &mut self,
        cmd: LogCommand,
        flight: &mut Flight,
    ) -> Result<(), Error> {
        match cmd {
            LogCommand::Append(record) => self.append(&record, flight),
            LogCommand::Sync => self
                .writer
                .sync()
                .map_err(|e| Error::at(self.writer.path(), "cannot sync", e)),
            LogCommand::StartFile(header) => self.start_file(&header),
        }
    }

    fn append(&mut self, record: &Record, flight: &mut Flight) -> Result<(), Error> {
        // Never answer into nothing: a log deleted under the session is
        // written again first (from the open file, which holds it all).
        let relinked = self
            .writer
            .relink()
            .map_err(|e| Error::at(self.writer.path(), "cannot write the session log", e))?;
        if let Some(bytes) = relinked {
            self.front.notice(&format!(
                "revolve: the session log {} was deleted while the session ran; written again \
                 from the open file ({bytes} bytes), and the session goes on in it",
                self.writer.path().display()
            ));
        }
        self.writer
            .append(record)
            .map_err(|e| Error::at(self.writer.path(), "cannot write the session log", e))?;
        // A tool's result is shown once it is in the log.
        if let Record::Message(Message {
            role: Role::Tool,
            tool_call_id: Some(id),
            content,
            ..
        }) = record
        {
            match flight.logged(id) {
                Logged::Shown => {}
                Logged::Result(tool) => self.front.tool_result(id, &tool, content, false),
                Logged::NotRun => {
                    if let Some(call) = self.session.state().tool_call(id) {
                        self.front.not_run(call, content);
                    }
                }
            }
            self.front.logged(id);
        }
        // The plan the model set, shown once logged.
        if let Record::Plan(plan) = record {
            if plan.call.is_some() {
                self.front.plan(&plan.steps);
            }
        }
        Ok(())
    }

    /// Goes on in the file a compaction started: created with its header,
    /// claimed as running; the old file's claim is released.
    fn start_file(&mut self, header: &Header) -> Result<(), Error> {
        // Claimed first: a file nobody may write is never created.
        let claim = self
            .store
            .claim(&header.id, header.name.clone())
            .map_err(Error::store)?;
        let path = self.store.path_of(&header.id);
        let mut writer = LogWriter::create_with(&path, &Record::Header(header.clone()))
            .map_err(|e| Error::at(&path, "cannot create", e))?;
        writer
            .sync()
            .map_err(|e| Error::at(&path, "cannot sync", e))?;
        self.claim = claim;
        self.writer = writer;
        Ok(())
    }
}
