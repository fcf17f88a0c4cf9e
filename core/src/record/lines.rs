//! A record as one line of the log: reading a line (and a header past
//! damage at a file's start), writing one, and when a record says it
//! happened.

use serde::Deserialize;
use time::OffsetDateTime;

use super::{Header, Record, FORMAT_VERSION};

/// Why a line was not read as a record.
#[derive(Debug)]
pub enum LineError {
    /// The line is valid JSON with a `"type"` this build does not know.
    Unknown(String),
    /// The line ends in the middle of a record: a crash cut the write
    /// short. (A later append may have ended it with a newline.)
    Torn,
    /// The line is not a record: garbled, or missing fields.
    Malformed(String),
}

impl std::fmt::Display for LineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LineError::Unknown(kind) => write!(f, "unknown record type {kind:?}"),
            LineError::Torn => f.write_str("torn line (a write cut short)"),
            LineError::Malformed(why) => write!(f, "malformed line: {why}"),
        }
    }
}

impl From<serde_json::Error> for LineError {
    fn from(e: serde_json::Error) -> LineError {
        if e.is_eof() {
            LineError::Torn
        } else {
            LineError::Malformed(e.to_string())
        }
    }
}

impl Header {
    /// Whether this build may append to the log this header starts: not to
    /// one a newer version wrote, whose records this build cannot know and
    /// whose readers would take its records for theirs. The error is the
    /// line the user reads.
    pub fn writable(&self) -> Result<(), String> {
        if self.version > FORMAT_VERSION {
            Err(format!(
                "written by a newer revolve (log format version {}; this build writes version {FORMAT_VERSION}): \
                 not appending to it (replay still reads it)",
                self.version
            ))
        } else {
            Ok(())
        }
    }
}

/// How a header line written by revolve starts.
pub const HEADER_START: &[u8] = b"{\"type\":\"header\"";

impl Record {
    /// The header in `bytes` past stray bytes before it, and how many there
    /// were: damage at the very start of a file (a line that does not parse)
    /// must not hide the session behind it. Only a header as revolve writes
    /// it (`{"type":"header"` first) is looked for, and only after at least
    /// one stray byte; the raw text `{"type":"header"` cannot occur inside
    /// another record (a JSON string escapes its quotes).
    pub fn header_past_garbage(bytes: &[u8]) -> Option<(usize, Header)> {
        let at = bytes
            .windows(HEADER_START.len())
            .position(|w| w == HEADER_START)
            .filter(|&at| at > 0)?;
        let line = std::str::from_utf8(&bytes[at..]).ok()?;
        match Record::parse_line(line) {
            Ok(Record::Header(header)) => Some((at, header)),
            _ => None,
        }
    }

    /// Reads one line of a session log.
    ///
    /// Lines written by revolve start with `{"type":"…"`; for those the tag is
    /// read off the front and the rest is parsed straight into the record's
    /// struct, without building a generic JSON value first. Any other valid
    /// object goes the general way.
    pub fn parse_line(line: &str) -> Result<Record, LineError> {
        const PREFIX: &str = "{\"type\":\"";
        let line = line.trim_end_matches(['\n', '\r']);
        if let Some(rest) = line.strip_prefix(PREFIX) {
            if let Some(end) = rest.find('"') {
                return Record::parse_as(&rest[..end], line);
            }
        }
        let value: serde_json::Value = serde_json::from_str(line).map_err(LineError::from)?;
        let kind = value
            .get("type")
            .and_then(|t| t.as_str())
            .ok_or_else(|| LineError::Malformed("no \"type\" field".into()))?
            .to_owned();
        Record::parse_as(&kind, line)
    }

    fn parse_as(kind: &str, line: &str) -> Result<Record, LineError> {
        fn body<'a, T: Deserialize<'a>>(line: &'a str) -> Result<T, LineError> {
            serde_json::from_str(line).map_err(LineError::from)
        }
        Ok(match kind {
            "header" => Record::Header(body(line)?),
            "context" => Record::Context(body(line)?),
            "message" => Record::Message(body(line)?),
            "failed" => Record::Failed(body(line)?),
            "interrupted" => Record::Interrupted(body(line)?),
            "totals" => Record::Totals(body(line)?),
            "resumed" => Record::Resumed(body(line)?),
            "renamed" => Record::Renamed(body(line)?),
            "pruned" => Record::Pruned(body(line)?),
            "compacting" => Record::Compacting(body(line)?),
            "compaction_failed" => Record::CompactionFailed(body(line)?),
            "compacted" => Record::Compacted(body(line)?),
            "continued" => Record::Continued(body(line)?),
            "refined" => Record::Refined(body(line)?),
            "refining" => Record::Refining(body(line)?),
            "stopped" => Record::Stopped(body(line)?),
            "went_on" => Record::WentOn(body(line)?),
            "planning" => Record::Planning(body(line)?),
            "model_changed" => Record::ModelChanged(body(line)?),
            "effort" => Record::Effort(body(line)?),
            "web_search" => Record::WebSearch(body(line)?),
            "squeezed" => Record::Squeezed(body(line)?),
            "overflowed" => Record::Overflowed(body(line)?),
            "counted" => Record::Counted(body(line)?),
            "noted" => Record::Noted(body(line)?),
            "memory_changed" => Record::MemoryChanged(body(line)?),
            "memory_undone" => Record::MemoryUndone(body(line)?),
            "seen" => Record::Seen(body(line)?),
            "approved" => Record::Approved(body(line)?),
            "edit" => Record::Edit(body(line)?),
            "written" => Record::Written(body(line)?),
            "rewound" => Record::Rewound(body(line)?),
            "rewinding" => Record::Rewinding(body(line)?),
            "mcp_tools" => Record::McpTools(body(line)?),
            "background" => Record::Background(body(line)?),
            "delegated" => Record::Delegated(body(line)?),
            "spawned" => Record::Spawned(body(line)?),
            "hook" => Record::Hook(body(line)?),
            "plan" => Record::Plan(body(line)?),
            "fetched" => Record::Fetched(body(line)?),
            other => {
                // Make sure it is at least JSON before calling it unknown.
                serde_json::from_str::<serde::de::IgnoredAny>(line).map_err(LineError::from)?;
                return Err(LineError::Unknown(other.to_owned()));
            }
        })
    }

    /// The record as one line of JSON, without the newline.
    pub fn to_line(&self) -> String {
        // A record holds only strings, numbers and booleans, which always
        // serialize.
        serde_json::to_string(self).expect("records always serialize")
    }

    /// When the record was written, where it says.
    pub fn at(&self) -> Option<OffsetDateTime> {
        match self {
            Record::Header(h) => Some(h.started),
            Record::Context(c) => Some(c.at),
            Record::Message(m) => Some(m.at),
            Record::Failed(f) => Some(f.at),
            Record::Interrupted(s) => Some(s.at),
            Record::Totals(t) => t.at,
            Record::Resumed(r) => Some(r.at),
            Record::Renamed(r) => Some(r.at),
            Record::Pruned(p) => Some(p.at),
            Record::Compacting(c) => Some(c.at),
            Record::CompactionFailed(f) => Some(f.at),
            Record::Compacted(c) => Some(c.at),
            Record::Continued(c) => Some(c.at),
            Record::Refined(r) => Some(r.at),
            Record::Refining(r) => Some(r.at),
            Record::Stopped(s) => Some(s.at),
            Record::WentOn(w) => Some(w.at),
            Record::Planning(p) => Some(p.at),
            Record::ModelChanged(m) => Some(m.at),
            Record::Effort(e) => Some(e.at),
            Record::WebSearch(w) => Some(w.at),
            Record::Squeezed(q) => Some(q.at),
            Record::Overflowed(o) => Some(o.at),
            Record::Counted(c) => Some(c.at),
            Record::Noted(n) => Some(n.at),
            Record::MemoryChanged(m) => Some(m.at),
            Record::MemoryUndone(m) => Some(m.at),
            Record::Seen(r) => Some(r.at),
            Record::Approved(r) => Some(r.at),
            Record::Edit(r) => Some(r.at),
            Record::Written(r) => Some(r.at),
            Record::Rewound(r) | Record::Rewinding(r) => Some(r.at),
            Record::McpTools(r) => Some(r.at),
            Record::Background(r) => Some(r.at),
            Record::Delegated(r) => Some(r.at),
            Record::Spawned(r) => Some(r.at),
            Record::Hook(r) => Some(r.at),
            Record::Plan(r) => Some(r.at),
            Record::Fetched(r) => Some(r.at),
        }
    }
}
