//! `revolve export`: a session as a document to read or share, Markdown
//! or one self-contained HTML page (see `docs/export.md`).
//!
//! Pure, like the rest of this crate: the shell reads the log and writes
//! the output; this module turns records into text. It is built to stream:
//!
//! 1. For HTML, the shell first folds the records [`CHART_KINDS`] names
//!    into a [`Chart`] (a few numbers per turn; every other line is
//!    skipped unparsed), so the chart can stand above the conversation.
//! 2. Then every record of the session's chain of files, oldest first,
//!    goes through [`Items::push`], which gives back what it completes (a
//!    tool call is held until its result comes, so the two fold
//!    together); [`Items::finish`] gives what is still open at the end.
//! 3. [`markdown`] and [`html`] write each [`Item`] as it comes; the HTML
//!    page starts with [`html::start`] and ends with [`html::end`].
//!
//! Nothing here holds more than one record's items and the open calls, so
//! a log of any size exports in the memory of its largest record. Keys
//! ([`Keys`]) are replaced by `[key]` in every text written, as the shell
//! does everywhere else; tool results and the system prompt are cut to a
//! head and a tail ([`crate::limits`]).

mod chart;
pub mod html;
pub mod markdown;

use revolve_core::edit::Keys;
use revolve_core::record::{Header, Message, Record, Role, ToolCall};
use time::OffsetDateTime;

pub use chart::{Chart, Mark, CHART_KINDS};

/// The formats `revolve export` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Markdown of the conversation, tool calls folded.
    Markdown,
    /// One self-contained HTML page: a chart and the conversation.
    Html,
    /// The records, a JSON array.
    Json,
}

impl Format {
    /// The format a word names (`md`, `markdown`, `html`, `json`).
    pub fn parse(word: &str) -> Option<Format> {
        match word {
            "md" | "markdown" => Some(Format::Markdown),
            "html" => Some(Format::Html),
            "json" => Some(Format::Json),
            _ => None,
        }
    }

    /// How many characters of a tool result, a call's arguments or a
    /// system prompt the format keeps (a head and a tail).
    pub fn bound(self) -> usize {
        match self {
            Format::Html => crate::limits::EXPORT_HTML_RESULT_CHARS,
            _ => crate::limits::EXPORT_RESULT_CHARS,
        }
    }

    /// The file extension of the format.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Markdown => "md",
            Format::Html => "html",
            Format::Json => "json",
        }
    }
}

/// What a marked event on the chart and in the conversation was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A compaction (pruning, working notes).
    Compaction,
    /// A change of the memory files, or an undo of one.
    Memory,
    /// Another model asked from then on.
    Model,
    /// Turns or files taken back.
    Rewind,
}

impl Event {
    /// The letter its marks carry on the chart.
    pub fn letter(self) -> char {
        match self {
            Event::Compaction => 'C',
            Event::Memory => 'M',
            Event::Model => 'S',
            Event::Rewind => 'R',
        }
    }

    /// The word the legend and the CSS class use.
    pub fn word(self) -> &'static str {
        match self {
            Event::Compaction => "compaction",
            Event::Memory => "memory",
            Event::Model => "model",
            Event::Rewind => "rewind",
        }
    }
}

/// One piece of the exported conversation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Item {
    /// The session: its first header.
    Start {
        /// The session's name, or its id.
        title: String,
        /// Id, directory, start, model and provider, one line.
        about: String,
    },
    /// The system prompt, whenever it changed (cut).
    System(Cut),
    /// A user message, numbered.
    User {
        /// Its number among the user messages exported.
        turn: u64,
        /// When it was written.
        at: OffsetDateTime,
        /// Who sent it, when it came through the inbox.
        from: Option<String>,
        /// The text.
        text: String,
    },
    /// The model's text (an answer, or what it said before calling tools).
    Answer {
        /// When it was written.
        at: OffsetDateTime,
        /// The text, Markdown as the model wrote it.
        text: String,
        /// Its thinking, when it showed some.
        thinking: Option<String>,
        /// `cut short`, `stopped at its length limit`, or none.
        cut: Option<&'static str>,
    },
    /// A tool call with its result and the diffs of the edits it made.
    Call {
        /// The tool's name.
        name: String,
        /// What it was called with, on one line (cut).
        brief: String,
        /// The arguments, as the model wrote them (pretty when JSON).
        arguments: Cut,
        /// The result (none: the log has no result for it).
        result: Option<Cut>,
        /// Whether the result is an error.
        error: bool,
        /// The edits it made: the file and its unified diff.
        diffs: Vec<(String, String)>,
    },
    /// A change in the session (compaction, memory, model, rewind) or a
    /// notice (a failed request, an interruption, a stop).
    Note {
        /// The marked kind, or none for a plain notice.
        event: Option<Event>,
        /// One line.
        text: String,
        /// More, folded (working notes, files changed), cut.
        more: Option<Cut>,
    },
}

/// A text cut to a head and a tail, with how much is left out between.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cut {
    /// The start of the text.
    pub head: String,
    /// Characters left out after `head`.
    pub omitted: usize,
    /// The end of the text (empty when nothing is left out).
    pub tail: String,
}

impl Cut {
    /// `text` with keys hidden, cut to about `max` characters: three
    /// quarters from its start, a quarter from its end.
    pub fn of(text: &str, max: usize, keys: &Keys) -> Cut {
        let text = keys.redact(text);
        // Fewer bytes than max: fewer characters too. ASCII (most tool
        // output) counts by bytes; std's check is fast even unoptimised.
        let ascii = text.is_ascii();
        let total = match text.len() {
            len if len <= max => len,
            len if ascii => len,
            _ => text.chars().count(),
        };
        if total <= max {
            return Cut {
                head: text.into_owned(),
                omitted: 0,
                tail: String::new(),
            };
        }
        let head_chars = max - max / 4;
        let tail_chars = max / 4;
        let (head_end, tail_start) = if ascii {
            (head_chars, total - tail_chars)
        } else {
            let at = |n: usize| text.char_indices().nth(n).map_or(text.len(), |(i, _)| i);
            (at(head_chars), at(total - tail_chars))
        };
        Cut {
            head: text[..head_end].to_owned(),
            omitted: total - head_chars - tail_chars,
            tail: text[tail_start..].to_owned(),
        }
    }

    /// The line that stands where text is left out.
    pub fn gap(&self) -> String {
        format!("[… {} characters left out …]", self.omitted)
    }
}

/// The records of a session turned into [`Item`]s, in order (see the
/// module doc).
#[derive(Debug)]
pub struct Items {
    keys: Keys,
    /// How much of a tool result, an argument list or a system prompt is
    /// kept.
    bound: usize,
    /// User messages so far.
    turns: u64,
    /// Whether the first header was seen (a later one starts a file that
    /// continues the session after a compaction).
    started: bool,
    /// The model asked, to tell a resume that switched it.
    model: String,
    /// Calls waiting for their results, in order, with their diffs.
    open: Vec<Open>,
}

/// A tool call whose result has not come yet.
#[derive(Debug)]
struct Open {
    call: ToolCall,
    diffs: Vec<(String, String)>,
}

impl Items {
    /// Items with these keys hidden and tool results cut to `bound`
    /// characters.
    pub fn new(keys: Keys, bound: usize) -> Items {
        Items {
            keys,
            bound,
            turns: 0,
            started: false,
            model: String::new(),
            open: Vec::new(),
        }
    }

    /// The items `record` completes.
    pub fn push(&mut self, record: &Record) -> Vec<Item> {
        let mut out = Vec::new();
        match record {
            Record::Header(h) => self.header(h, &mut out),
            Record::Context(c) => {
                out.push(Item::System(Cut::of(&c.system, self.bound, &self.keys)))
            }
            Record::Message(m) => self.message(m, &mut out),
            Record::Edit(e) => {
                let diff = self.keys.redact(&e.diff).into_owned();
                let path = self.keys.redact(&e.path).into_owned();
                match self.open.iter_mut().find(|o| o.call.id == e.call) {
                    Some(open) => open.diffs.push((path, diff)),
                    None => out.push(Item::Call {
                        name: e.by.as_str().to_owned(),
                        brief: path.clone(),
                        arguments: Cut::of("", 0, &self.keys),
                        result: None,
                        error: false,
                        diffs: vec![(path, diff)],
                    }),
                }
            }
            // A note while calls are open (a memory change a call made)
            // comes before the call, which waits for its result.
            other => out.extend(self.note(other)),
        }
        out
    }

    /// The calls still open at the end (their results never came).
    pub fn finish(&mut self) -> Vec<Item> {
        let mut out = Vec::new();
        self.close_all(&mut out);
        out
    }

    fn header(&mut self, h: &Header, out: &mut Vec<Item>) {
        self.model.clone_from(&h.model);
        if self.started {
            return;
        }
        self.started = true;
        let title = h.name.clone().unwrap_or_else(|| h.id.clone());
        let mut about = format!("session {} · {} · started ", h.id, h.cwd);
        revolve_core::text::push_when(&mut about, h.started);
        about.push_str(&format!(" · {}", h.model));
        if !h.provider.is_empty() {
            about.push_str(&format!(" ({})", h.provider));
        }
        out.push(Item::Start {
            title: self.keys.redact(&title).into_owned(),
            about: self.keys.redact(&about).into_owned(),
        });
    }

    fn message(&mut self, m: &Message, out: &mut Vec<Item>) {
        match m.role {
            Role::User => {
                self.close_all(out);
                self.turns += 1;
                out.push(Item::User {
                    turn: self.turns,
                    at: m.at,
                    from: m.origin.as_ref().map(|o| o.from.clone()),
                    text: self.keys.redact(&m.content).into_owned(),
                });
            }
            Role::Assistant => {
                self.close_all(out);
                let cut = if m.partial {
                    Some("cut short")
                } else if m.truncated {
                    Some("stopped at its length limit")
                } else {
                    None
                };
                let thinking = m
                    .thinking
                    .iter()
                    .any(|t| t.thought())
                    .then(|| self.keys.redact(&crate::thought(&m.thinking)).into_owned());
                if !m.content.is_empty() || m.tool_calls.is_empty() || thinking.is_some() {
                    out.push(Item::Answer {
                        at: m.at,
                        text: self.keys.redact(&m.content).into_owned(),
                        thinking,
                        cut,
                    });
                }
                self.open.extend(m.tool_calls.iter().map(|call| Open {
                    call: call.clone(),
                    diffs: Vec::new(),
                }));
            }
            Role::Tool => {
                let id = m.tool_call_id.as_deref().unwrap_or("");
                let open = match self.open.iter().position(|o| o.call.id == id) {
                    Some(i) => self.open.remove(i),
                    None => Open {
                        call: ToolCall {
                            id: id.to_owned(),
                            name: "(a call not in the log)".into(),
                            arguments: String::new(),
                        },
                        diffs: Vec::new(),
                    },
                };
                out.push(self.call(open, Some(&m.content)));
            }
        }
    }

    /// A call's item, with its result if it came.
    fn call(&self, open: Open, result: Option<&str>) -> Item {
        let arguments = match serde_json::from_str::<serde_json::Value>(&open.call.arguments) {
            Ok(v) if v.is_object() => {
                serde_json::to_string_pretty(&v).unwrap_or_else(|_| open.call.arguments.clone())
            }
            _ => open.call.arguments.clone(),
        };
        let brief = brief(&open.call.arguments);
        Item::Call {
            name: self.keys.redact(&open.call.name).into_owned(),
            brief: self.keys.redact(&brief).into_owned(),
            arguments: Cut::of(&arguments, self.bound, &self.keys),
            error: result.is_some_and(|r| r.starts_with("error:")),
            result: result.map(|r| Cut::of(r, self.bound, &self.keys)),
            diffs: open.diffs,
        }
    }

    fn close_all(&mut self, out: &mut Vec<Item>) {
        for open in std::mem::take(&mut self.open) {
            out.push(self.call(open, None));
        }
    }

    /// The note a record other than a message, header, context or edit
    /// makes, if any.
    fn note(&mut self, record: &Record) -> Option<Item> {
        let (event, text, more) = match record {
            Record::Compacted(c) => (
                Some(Event::Compaction),
                format!(
                    "compacted: {} messages summarized into working notes (the session goes on in a new file)",
                    c.summarized
                ),
                Some(c.notes.clone()),
            ),
            Record::Pruned(p) => (
                Some(Event::Compaction),
                format!(
                    "pruned {} oversized tool result{} (compaction, step one)",
                    p.messages.len(),
                    if p.messages.len() == 1 { "" } else { "s" }
                ),
                None,
            ),
            Record::CompactionFailed(f) => (None, format!("compaction failed: {}", f.error), None),
            Record::MemoryChanged(m) => (
                Some(Event::Memory),
                format!("memory changed by {} (snapshot {})", m.by, m.entry),
                Some(m.files.join("\n")),
            ),
            _ => return self.other_note(record),
        };
        Some(self.noted(event, text, more))
    }

    fn other_note(&mut self, record: &Record) -> Option<Item> {
        let (event, text, more) = match record {
            Record::MemoryUndone(m) => (
                Some(Event::Memory),
                match &m.entry {
                    Some(entry) => format!("memory undone: snapshot {entry} restored"),
                    None => "memory undo: nothing to undo".to_owned(),
                },
                Some(m.files.join("\n")),
            ),
            Record::ModelChanged(m) => {
                self.model.clone_from(&m.model);
                (
                    Some(Event::Model),
                    format!(
                        "model {} from here on (window {})",
                        m.model,
                        crate::tokens(m.window)
                    ),
                    None,
                )
            }
            Record::Resumed(r) if r.model != self.model => {
                self.model.clone_from(&r.model);
                (
                    Some(Event::Model),
                    format!("resumed with model {}", r.model),
                    None,
                )
            }
            Record::Resumed(r) => (None, format!("resumed ({})", r.model), None),
            Record::Rewound(r) => (
                Some(Event::Rewind),
                format!(
                    "rewound {} turn{}{}",
                    r.turns,
                    if r.turns == 1 { "" } else { "s" },
                    match (r.conversation, r.files.len()) {
                        (true, 0) => String::new(),
                        (false, n) => format!(" (files only: {n})"),
                        (true, n) => format!(" and {n} file{}", if n == 1 { "" } else { "s" }),
                    }
                ),
                Some(
                    r.files
                        .iter()
                        .map(|f| f.path.as_str())
                        .collect::<Vec<_>>()
                        .join("\n"),
                ),
            ),
            Record::Failed(f) => (None, format!("the request failed: {}", f.error), None),
            Record::Interrupted(_) => (None, "interrupted".to_owned(), None),
            Record::Stopped(s) => (None, revolve_core::guard::describe(&s.reason), None),
            Record::Renamed(r) => (None, format!("renamed to {}", r.name), None),
            Record::Planning(p) => (
                None,
                if p.on {
                    "planning: edits refused, commands read-only"
                } else {
                    "planning ended"
                }
                .to_owned(),
                None,
            ),
            Record::Refined(r) if r.unmade.is_none() && r.entry.is_none() => {
                (None, "memory refined: nothing changed".to_owned(), None)
            }
            _ => return None,
        };
        Some(self.noted(event, text, more))
    }

    fn noted(&self, event: Option<Event>, text: String, more: Option<String>) -> Item {
        Item::Note {
            event,
            text: self.keys.redact(&text).into_owned(),
            more: more
                .filter(|m| !m.is_empty())
                .map(|m| Cut::of(&m, self.bound, &self.keys)),
        }
    }
}

/// A file's size as the user reads it: `812 bytes`, `12.3 KB`, `4.1 MB`.
pub fn size(bytes: u64) -> String {
    match bytes {
        0..1_000 => format!("{bytes} bytes"),
        1_000..1_000_000 => format!("{:.1} KB", bytes as f64 / 1e3),
        _ => format!("{:.1} MB", bytes as f64 / 1e6),
    }
}

/// A call's arguments on one line: the value of a string argument that
/// says what it is about (`path`, `command`, `url`, …) when there is one,
/// else the arguments flattened; cut to 120 characters.
fn brief(arguments: &str) -> String {
    const SAYS: [&str; 6] = ["path", "command", "url", "pattern", "label", "name"];
    if let Ok(serde_json::Value::Object(map)) = serde_json::from_str(arguments) {
        for key in SAYS {
            if let Some(serde_json::Value::String(s)) = map.get(key) {
                return revolve_core::text::one_line(s, crate::limits::EXPORT_BRIEF_CHARS);
            }
        }
    }
    revolve_core::text::one_line(arguments, crate::limits::EXPORT_BRIEF_CHARS)
}

#[cfg(test)]
mod tests;
