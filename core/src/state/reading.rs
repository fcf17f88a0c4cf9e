//! What `/refine` reads of a session's chain, one file at a time.

use super::*;

/// What `/refine` reads of one file of a session's chain: the file
/// folded, so the results a compaction pruned stay pruned, less the turns
/// a compaction carried in from the file before (that file's reading has
/// them already), each message as [`crate::refine::block`] writes it.
#[derive(Debug, Default)]
pub struct FileReading {
    folded: State,
    /// Whether this file follows another in the chain.
    later: bool,
    /// The messages at the start of the fold that the file before has.
    carried: usize,
}

impl FileReading {
    /// The reading of a file, the first of its chain or a later one.
    pub fn new(later: bool) -> FileReading {
        FileReading {
            later,
            ..FileReading::default()
        }
    }

    /// Folds the file's next record.
    pub fn apply(&mut self, record: &Record) {
        if let (true, Record::Compacted(c)) = (self.later, record) {
            // The summary note and the turns kept.
            self.carried = 1 + c.kept.len();
        }
        self.folded.apply(record);
    }

    /// The blocks read, in order.
    pub fn blocks(&self) -> impl Iterator<Item = String> + '_ {
        self.folded
            .messages()
            .iter()
            .skip(self.carried)
            .map(crate::refine::block)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::test_header as header;
    use time::macros::datetime;

    /// A later file of a chain reads what it added, not the turns its
    /// compaction carried in; the first file reads everything.
    #[test]
    fn a_later_file_skips_what_its_compaction_carried() {
        let at = datetime!(2026-12-06 17:40 UTC);
        let compacted = Record::Compacted(crate::record::Compacted {
            at,
            from: "old".into(),
            summarized: 4,
            notes: "notes".into(),
            kept: vec![
                Message::user(at, "kept q"),
                Message::assistant(at, "kept a"),
            ],
            totals: Totals::default(),
            pending: false,
            refined_at: None,
            turns_at_refine: 0,
            turn_rounds: 0,
            start_context: Vec::new(),
        });
        let records = [
            Record::Header(header()),
            compacted,
            Record::Message(Message::user(at, "new q")),
            Record::Message(Message::assistant(at, "new a")),
        ];
        let read = |later| {
            let mut reading = FileReading::new(later);
            records.iter().for_each(|r| reading.apply(r));
            reading.blocks().collect::<Vec<_>>()
        };
        let later = read(true);
        assert_eq!(later.len(), 2, "{later:?}");
        assert!(
            later[0].contains("new q") && later[1].contains("new a"),
            "{later:?}"
        );
        let first = read(false);
        assert_eq!(first.len(), 5, "{first:?}");
        assert!(first.iter().any(|b| b.contains("kept q")), "{first:?}");
    }
}
