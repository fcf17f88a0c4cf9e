//! The turn state machine.
//!
//! # Driving it
//!
//! [`Session`] holds no sockets, files or clock. The shell:
//!
//! 1. makes one with [`Session::start`] (a new file: the shell supplies the
//!    header with the id, name and time it chose) or [`Session::resume`] (the
//!    folded records of an existing file);
//! 2. feeds every event as an [`Input`] to [`Session::handle`], each stamped
//!    with the time the shell read from its clock;
//! 3. executes the returned [`Command`]s **in order** before the next input:
//!    `Append` writes the record as one line, `Sync` makes the log durable
//!    (turn end), `Call` sends the request and later comes back as
//!    [`Input::Reply`], [`Input::Failed`] or [`Input::Interrupted`], and `Show`
//!    prints a line for the user on stderr.
//!
//! The session's [`State`] changes only by applying the records it asks to
//! append, which is why folding the file gives back the same state and
//! [`crate::state::requests`] the same requests.

use std::collections::BTreeSet;

use time::OffsetDateTime;

use crate::names;
use crate::prompt;
use crate::record::{
    Context, Failed, Header, Message, Record, Renamed, Resumed, Role, Stamp, Totals,
};
use crate::request::Request;
use crate::state::State;

/// Something that happened, as the shell reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Input {
    /// The user sent a line.
    User { text: String, now: OffsetDateTime },
    /// The model answered the request in flight.
    Reply { reply: Reply, now: OffsetDateTime },
    /// The request in flight failed; `partial` is what had streamed.
    Failed {
        error: String,
        partial: String,
        now: OffsetDateTime,
    },
    /// The user interrupted the request in flight; `partial` is what had
    /// streamed.
    Interrupted {
        partial: String,
        now: OffsetDateTime,
    },
    /// The user asked for a new name; `used` are the names other sessions of
    /// this directory have.
    Rename {
        name: String,
        used: BTreeSet<String>,
        now: OffsetDateTime,
    },
}

/// A complete answer from the model.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reply {
    pub text: String,
    /// The provider's token counts, when it gave them.
    pub usage: Option<Usage>,
}

/// Token counts of one request, as the provider reported them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// Something the shell must do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Write this record as one line at the end of the log.
    Append(Record),
    /// A turn ended: flush and fsync the log.
    Sync,
    /// Send this request to the model.
    Call(Request),
    /// Tell the user (stderr in pipe mode, the terminal in the REPL).
    Show(String),
}

/// A live session.
#[derive(Clone, Debug)]
pub struct Session {
    state: State,
    /// The token estimate of the request in flight, for when the provider
    /// reports no usage.
    estimate: u64,
}

impl Session {
    /// A new session: its file starts with `header`.
    pub fn start(header: Header) -> (Session, Vec<Command>) {
        let mut session = Session {
            state: State::default(),
            estimate: 0,
        };
        let cmds = session.append(vec![Record::Header(header)]);
        (session, cmds)
    }

    /// An existing session, folded from its file, continuing with `model` and
    /// `window`. A request left unanswered by a crash is closed as
    /// interrupted, so the history the model gets next is well formed.
    pub fn resume(
        state: State,
        model: String,
        window: u64,
        now: OffsetDateTime,
    ) -> (Session, Vec<Command>) {
        let mut session = Session { state, estimate: 0 };
        let mut records = Vec::new();
        if session.state.awaiting {
            records.push(Record::Interrupted(Stamp { at: now }));
        }
        records.push(Record::Resumed(Resumed {
            at: now,
            model,
            window,
        }));
        let cmds = session.append(records);
        (session, cmds)
    }

    /// The folded state: what the log says so far.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// Whether a request is in flight.
    pub fn busy(&self) -> bool {
        self.state.awaiting
    }

    /// Handles one input; the commands must be executed in order.
    pub fn handle(&mut self, input: Input) -> Vec<Command> {
        match input {
            Input::User { text, now } => self.user(text, now),
            Input::Reply { reply, now } => {
                if !self.busy() {
                    return vec![Command::Show("ignored an answer to no request".into())];
                }
                let last_context = match reply.usage {
                    Some(u) => u.prompt_tokens.saturating_add(u.completion_tokens),
                    None => self
                        .estimate
                        .saturating_add((reply.text.len() as u64).div_ceil(4)),
                };
                let answer = Message::assistant(now, reply.text);
                self.end_turn(Some(answer), None, reply.usage, last_context, now)
            }
            Input::Failed {
                error,
                partial,
                now,
            } => {
                let end = Record::Failed(Failed { at: now, error });
                self.cut_short(partial, end, now)
            }
            Input::Interrupted { partial, now } => {
                let end = Record::Interrupted(Stamp { at: now });
                self.cut_short(partial, end, now)
            }
            Input::Rename { name, used, now } => match names::validate(&name, &used) {
                Ok(()) => {
                    let mut cmds = self.append(vec![Record::Renamed(Renamed {
                        at: now,
                        name: name.clone(),
                    })]);
                    cmds.push(Command::Show(format!("this session is now named '{name}'")));
                    cmds
                }
                Err(why) => vec![Command::Show(format!(
                    "cannot name this session '{name}': {why}"
                ))],
            },
        }
    }

    fn user(&mut self, text: String, now: OffsetDateTime) -> Vec<Command> {
        if self.busy() {
            return vec![Command::Show(
                "a turn is still running; wait for it or press Ctrl-C".into(),
            )];
        }
        if text.trim().is_empty() {
            return Vec::new();
        }
        let mut records = Vec::new();
        let system = prompt::system(self.state.header.as_ref().map_or("", |h| &h.cwd));
        if self.state.system.as_deref() != Some(system.as_str()) {
            records.push(Record::Context(Context { at: now, system }));
        }
        records.push(Record::Message(Message::user(now, text)));
        let mut cmds = self.append(records);
        let request = self.state.request();
        self.estimate = request.estimated_tokens();
        cmds.push(Command::Call(request));
        cmds
    }

    fn cut_short(&mut self, partial: String, end: Record, now: OffsetDateTime) -> Vec<Command> {
        if !self.busy() {
            return Vec::new();
        }
        let answer = (!partial.is_empty()).then_some(Message {
            at: now,
            role: Role::Assistant,
            content: partial,
            partial: true,
        });
        let last_context = self.state.totals.last_context;
        self.end_turn(answer, Some(end), None, last_context, now)
    }

    fn end_turn(
        &mut self,
        answer: Option<Message>,
        end: Option<Record>,
        usage: Option<Usage>,
        last_context: u64,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        let before = &self.state.totals;
        let usage = usage.unwrap_or_default();
        let totals = Totals {
            at: Some(now),
            tokens_in: before.tokens_in.saturating_add(usage.prompt_tokens),
            tokens_out: before.tokens_out.saturating_add(usage.completion_tokens),
            turns: before.turns.saturating_add(1),
            last_context,
            estimated: usage == Usage::default() && last_context != 0,
            name: self.state.name.clone(),
            named: self.state.named,
        };
        let records = answer
            .map(Record::Message)
            .into_iter()
            .chain(end)
            .chain([Record::Totals(totals)]);
        let mut cmds = self.append(records.collect());
        cmds.push(Command::Sync);
        cmds
    }

    /// Applies the records and asks the shell to append them, in order.
    fn append(&mut self, records: Vec<Record>) -> Vec<Command> {
        records
            .into_iter()
            .map(|r| {
                self.state.apply(&r);
                Command::Append(r)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::FORMAT_VERSION;
    use time::macros::datetime;

    fn header() -> Header {
        Header {
            version: FORMAT_VERSION,
            id: "s1".into(),
            name: Some("amber".into()),
            named: false,
            cwd: "/w".into(),
            project: "/w".into(),
            started: datetime!(2026-12-02 10:00 UTC),
            model: "m".into(),
            window: 1000,
            provider: "scripted".into(),
            continues: None,
        }
    }

    fn kinds(cmds: &[Command]) -> Vec<&'static str> {
        cmds.iter()
            .map(|c| match c {
                Command::Append(Record::Header(_)) => "header",
                Command::Append(Record::Context(_)) => "context",
                Command::Append(Record::Message(_)) => "message",
                Command::Append(Record::Totals(_)) => "totals",
                Command::Append(Record::Failed(_)) => "failed",
                Command::Append(Record::Interrupted(_)) => "interrupted",
                Command::Append(_) => "other",
                Command::Sync => "sync",
                Command::Call(_) => "call",
                Command::Show(_) => "show",
            })
            .collect()
    }

    #[test]
    fn a_turn_appends_then_calls_then_ends() {
        let now = datetime!(2026-12-02 10:01 UTC);
        let (mut s, cmds) = Session::start(header());
        assert_eq!(kinds(&cmds), ["header"]);
        let cmds = s.handle(Input::User {
            text: "hi".into(),
            now,
        });
        assert_eq!(kinds(&cmds), ["context", "message", "call"]);
        assert_eq!(
            kinds(&s.handle(Input::User {
                text: "again".into(),
                now
            })),
            ["show"]
        );
        let usage = Some(Usage {
            prompt_tokens: 10,
            completion_tokens: 2,
        });
        let cmds = s.handle(Input::Reply {
            reply: Reply {
                text: "yo".into(),
                usage,
            },
            now,
        });
        assert_eq!(kinds(&cmds), ["message", "totals", "sync"]);
        let t = &s.state().totals;
        assert_eq!(
            (
                t.tokens_in,
                t.tokens_out,
                t.turns,
                t.last_context,
                t.estimated
            ),
            (10, 2, 1, 12, false)
        );
        // The prompt did not change, so the second turn writes no context.
        assert_eq!(
            kinds(&s.handle(Input::User {
                text: "more".into(),
                now
            })),
            ["message", "call"]
        );
    }

    #[test]
    fn an_interrupted_stream_keeps_what_arrived() {
        let now = datetime!(2026-12-02 10:01 UTC);
        let (mut s, _) = Session::start(header());
        s.handle(Input::User {
            text: "hi".into(),
            now,
        });
        let cmds = s.handle(Input::Interrupted {
            partial: "Hel".into(),
            now,
        });
        assert_eq!(kinds(&cmds), ["message", "interrupted", "totals", "sync"]);
        let last = s.state().messages.last().unwrap();
        assert!(last.partial && last.content == "Hel");
        assert!(!s.busy());
    }

    #[test]
    fn resume_closes_a_request_a_crash_left_open() {
        let now = datetime!(2026-12-02 10:01 UTC);
        let (mut s, _) = Session::start(header());
        s.handle(Input::User {
            text: "hi".into(),
            now,
        });
        let (r, cmds) = Session::resume(s.state().clone(), "m2".into(), 50, now);
        assert_eq!(kinds(&cmds), ["interrupted", "other"]);
        assert!(!r.busy());
        assert_eq!((r.state().model.as_str(), r.state().window), ("m2", 50));
    }

    #[test]
    fn rename_is_validated() {
        let now = datetime!(2026-12-02 10:01 UTC);
        let (mut s, _) = Session::start(header());
        let used = BTreeSet::from(["birch".to_owned()]);
        assert_eq!(
            kinds(&s.handle(Input::Rename {
                name: "birch".into(),
                used: used.clone(),
                now
            })),
            ["show"]
        );
        assert_eq!(
            kinds(&s.handle(Input::Rename {
                name: "db".into(),
                used,
                now
            })),
            ["other", "show"]
        );
        assert_eq!(s.state().name.as_deref(), Some("db"));
    }
}
