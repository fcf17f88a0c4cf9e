//! The requests a state builds: the turn's, a compaction's summary pieces,
//! a refinement's; and [`requests`], every request of a session file
//! rebuilt from its records.

use super::*;

impl State {
    /// The session id, empty before the header.
    pub fn id(&self) -> &str {
        self.header.as_ref().map_or("", |h| &h.id)
    }

    /// The tool call `id` of the conversation, the newest of that id.
    pub fn tool_call(&self, id: &str) -> Option<&ToolCall> {
        self.messages
            .iter()
            .rev()
            .flat_map(|m| &m.tool_calls)
            .find(|c| c.id == id)
    }

    /// The bytes of text the messages `range` hold (contents, call names
    /// and arguments): a lower bound of what they add to a request body,
    /// known without building it.
    pub(crate) fn text_bytes(&self, range: std::ops::Range<usize>) -> usize {
        let end = range.end.min(self.messages.len());
        let start = range.start.min(end);
        self.messages[start..end]
            .iter()
            .map(|m| {
                m.content.len()
                    + m.tool_calls
                        .iter()
                        .map(|c| c.name.len() + c.arguments.len())
                        .sum::<usize>()
            })
            .sum()
    }

    /// How long the answer to a request of this state may be: the room the
    /// window keeps ([`compact::room`]), for files of a version that says
    /// it on the wire; none for older files (rebuilt as they were sent).
    pub fn answer_limit(&self) -> Option<AnswerLimit> {
        let version = self.header.as_ref().map_or(FORMAT_VERSION, |h| h.version);
        (version >= ANSWER_LIMIT_VERSION && self.window > 0)
            .then(|| AnswerLimit::of_version(&self.model, compact::room(self.window), version))
    }

    /// How long the notes of a summary request may be: half the answer's
    /// room, so the notes that start the next file leave that file room
    /// to work in (512 tokens at a 4,096-token window).
    pub(crate) fn notes_limit(&self) -> Option<AnswerLimit> {
        self.answer_limit().map(|l| AnswerLimit {
            tokens: l.tokens / 2,
            ..l
        })
    }

    /// What the prompt cache is told, for files of a version that says
    /// it on the wire; nothing for older files (rebuilt as they were
    /// sent). The key is the file's id, only for the `openai` and
    /// `openai-responses` presets.
    pub fn cache(&self) -> Cache {
        match &self.header {
            Some(h) if h.version >= CACHE_VERSION => Cache {
                breakpoints: true,
                key: matches!(self.provider.as_str(), "openai" | "openai-responses")
                    .then(|| h.id.clone()),
            },
            _ => Cache::default(),
        }
    }

    /// The shape of this state's requests: the answer limited to `limit`,
    /// the tools offered or not, the cache told what it is told.
    pub fn shape(&self, limit: Option<AnswerLimit>, tools: bool) -> Shape {
        Shape {
            limit,
            tools,
            cache: self.cache(),
            // The MCP tools offered are as fixed as revolve's own, so a
            // summary piece shares the turn's prefix too.
            mcp: if tools {
                self.mcp_tools.clone()
            } else {
                Vec::new()
            },
            effort: self.effort,
            thinking: self.thinking(),
            builtin: Some(self.agents.offered(&crate::tools::names())),
            tool_choice: None,
            web_search: self.web_search.filter(|_| tools),
            objects: self.header.as_ref().map_or(FORMAT_VERSION, |h| h.version)
                >= ARGUMENTS_VERSION,
            brief: self.brief_tools(),
        }
    }

    /// Whether this state's requests offer revolve's tools in brief: under
    /// [`crate::prompt::BRIEF_BELOW`] tokens of window (as the builtin
    /// memory documents are), for files of a version that does; older
    /// files rebuild theirs whole.
    pub(crate) fn brief_tools(&self) -> bool {
        let version = self.header.as_ref().map_or(FORMAT_VERSION, |h| h.version);
        version >= crate::record::BRIEF_TOOLS_VERSION
            && self.window > 0
            && self.window < crate::prompt::BRIEF_BELOW
    }

    /// Background commands, children and the parent's call, as folded.
    pub fn agents(&self) -> &crate::agents::Agents {
        &self.agents
    }

    /// The `tool_choice` of the request [`State::request`] sends now: the
    /// header's `required` when that request answers a user message (a
    /// turn's first), else none (see [`crate::request::ToolChoice`]).
    pub fn tool_choice(&self) -> Option<crate::request::ToolChoice> {
        let asked = self.header.as_ref().and_then(|h| h.tool_choice)?;
        let answers_user = self.messages.last().is_some_and(|m| m.role == Role::User);
        (asked == crate::request::ToolChoice::Required && answers_user).then_some(asked)
    }

    /// How this state's Anthropic requests think at its effort
    /// ([`Think::of`] its model), for files of a version whose requests
    /// think ([`THINKING_VERSION`]); none on the Chat Completions wire,
    /// without an effort, or for older files (rebuilt as they were sent).
    pub fn thinking(&self) -> Option<Think> {
        let version = self.header.as_ref().map_or(FORMAT_VERSION, |h| h.version);
        let anthropic = Wire::of(&self.provider) == Wire::Anthropic;
        self.effort
            .filter(|_| anthropic && version >= THINKING_VERSION)
            .map(|effort| Think::of(&self.model, effort))
    }

    /// A request of this state for `system` and `history`, in `shape`.
    pub(crate) fn request_of(
        &self,
        system: Option<&str>,
        history: impl Into<Shared>,
        shape: &Shape,
    ) -> Request {
        Request::shaped(
            Wire::of(&self.provider),
            &self.model,
            system,
            history,
            shape,
        )
    }

    /// The length in bytes of [`State::request`]'s body (counted, never
    /// held whole).
    pub(crate) fn request_len(&self) -> usize {
        self.request().body.weight()
    }

    /// The request this state would send now.
    pub fn request(&self) -> Request {
        let limit = self.answer_limit();
        let shape = |limit| Shape {
            tool_choice: self.tool_choice(),
            ..self.shape(limit, true)
        };
        let mut request = self.request_of(
            self.system.as_deref(),
            Shared::of(&self.messages),
            &shape(limit),
        );
        // A history that gave way as far as it can but still leaves less
        // than the answer's full room asks for what is left (see
        // compact::shrunk_room): a request sent with the full room never
        // changes, so older logs rebuild as they were sent.
        let tokens = compact::estimate(request.body.weight(), &self.totals);
        if let (Some(limit), Some(left)) = (limit, compact::shrunk_room(tokens, self.window)) {
            if left < limit.tokens {
                let limit = AnswerLimit {
                    tokens: left,
                    ..limit
                };
                request = self.request_of(
                    self.system.as_deref(),
                    Shared::of(&self.messages),
                    &shape(Some(limit)),
                );
            }
        }
        Request {
            seq: self.totals.requests.saturating_add(1),
            ..request
        }
    }

    /// The request asking for working notes on the messages `from..upto`,
    /// carrying `notes` (the notes on everything before `from`) in its last
    /// user message, after [`compact::SUMMARY_PROMPT`]: the first of
    /// [`State::whole_piece`]'s shapes that fits the window, else the
    /// transcript with every message over its share of the room cut to its
    /// head and tail (for the summary only: the log keeps it whole), so a
    /// message larger than the window never stops a compaction. `bare`:
    /// never with the tools offered (see
    /// [`crate::record::Compacting::bare`]).
    pub(crate) fn piece_request(
        &self,
        from: usize,
        upto: usize,
        notes: Option<&str>,
        bare: bool,
    ) -> Request {
        if let Some(request) = self.whole_piece(from, upto, notes, bare) {
            return request;
        }
        let (from, upto) = self.piece_range(from, upto);
        let blocks: Vec<String> = self.messages[from..upto]
            .iter()
            .map(crate::refine::block)
            .collect();
        let window = self.window;
        let fixed = self.transcript_request(&[], upto, notes).body.weight();
        let room = compact::bytes_for(compact::point(window), &self.totals).saturating_sub(fixed);
        // Each block's share, in characters: JSON may double a text's
        // bytes (quotes, line ends), and a character is at least a byte.
        let mut share = room / blocks.len().max(1) / 2;
        loop {
            let cut: Vec<String> = blocks
                .iter()
                .map(|b| {
                    if b.len() <= share || b.chars().nth(share).is_none() {
                        b.clone()
                    } else {
                        crate::tools::cut(b, share * 4 / 5, share / 5, compact::CUT_FOR_SUMMARY)
                    }
                })
                .collect();
            let request = self.transcript_request(&cut, upto, notes);
            let tokens = compact::estimate(request.body.weight(), &self.totals);
            if compact::fits(tokens, window) || share == 0 {
                return request;
            }
            share /= 2;
        }
    }

    /// The piece's request as it is, when it fits the window: the messages
    /// themselves with the tools offered (a prompt cache can serve it, the
    /// turn's requests having the same start), else, when the tool
    /// definitions are what does not fit (small windows), the messages as
    /// one transcript and no tools (always, when `bare`). `None` when
    /// neither fits.
    pub(crate) fn whole_piece(
        &self,
        from: usize,
        upto: usize,
        notes: Option<&str>,
        bare: bool,
    ) -> Option<Request> {
        let (from, upto) = self.piece_range(from, upto);
        let fits = |r: &Request| {
            compact::fits(
                compact::estimate(r.body.weight(), &self.totals),
                self.window,
            )
        };
        if !bare {
            let mut history = self.messages[from..upto].to_vec();
            history.push(Message::user(
                self.piece_at(upto),
                compact::piece_prompt(notes),
            ));
            let request = self.numbered(self.request_of(
                self.system.as_deref(),
                &history,
                &self.shape(self.notes_limit(), true),
            ));
            if fits(&request) {
                return Some(request);
            }
        }
        let blocks: Vec<String> = self.messages[from..upto]
            .iter()
            .map(crate::refine::block)
            .collect();
        Some(self.transcript_request(&blocks, upto, notes)).filter(fits)
    }

    /// A summary request of `blocks` as one transcript message, no tools.
    fn transcript_request(&self, blocks: &[String], upto: usize, notes: Option<&str>) -> Request {
        let text = compact::transcript_prompt(&blocks.concat(), notes);
        self.numbered(self.request_of(
            self.system.as_deref(),
            &[Message::user(self.piece_at(upto), text)],
            &self.shape(self.notes_limit(), false),
        ))
    }

    fn piece_range(&self, from: usize, upto: usize) -> (usize, usize) {
        let upto = upto.min(self.messages.len());
        (from.min(upto), upto)
    }

    /// The time a summary request's prompt carries: its last message's.
    fn piece_at(&self, upto: usize) -> OffsetDateTime {
        self.messages
            .get(upto.saturating_sub(1))
            .map_or(OffsetDateTime::UNIX_EPOCH, |m| m.at)
    }

    fn numbered(&self, request: Request) -> Request {
        Request {
            seq: self.totals.requests.saturating_add(1),
            ..request
        }
    }

    /// The request for the piece a `compacting` record starts, as the
    /// state before it has it.
    pub(crate) fn compacting_request(&self, c: &crate::record::Compacting) -> Request {
        let (from, upto) = c.piece();
        let idx = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        let notes = if c.from == 0 {
            None
        } else {
            self.notes_so_far.as_deref()
        };
        self.piece_request(idx(from), idx(upto), notes, c.bare)
    }

    /// The refinement request a `refining` record logged, numbered `seq`:
    /// its body as sent, one user message to this session's model.
    pub(crate) fn refinement_request(&self, body: &str, seq: u64) -> Request {
        Request {
            model: self.model.clone(),
            wire: Wire::of(&self.provider),
            body: body.into(),
            messages: 1,
            seq,
        }
    }

    /// Whether a record answers the request that is due.
    /// Whether `record` answers the request due now (an assistant message,
    /// a failure, or an interruption after the request went out).
    pub fn answers(&self, record: &Record) -> bool {
        // An overflow during a compaction answers its summary, not the
        // turn's request (which has not gone out).
        if let Record::Overflowed(_) = record {
            return self.awaiting && self.compacting.is_none();
        }
        self.awaiting
            && matches!(
                record,
                Record::Message(Message {
                    role: Role::Assistant,
                    ..
                }) | Record::Failed(_)
                    | Record::Interrupted(crate::record::Interrupted { unsent: false, .. })
            )
    }
}

/// Every model request a session file sent, rebuilt from its records in
/// order: one before each record that answered a due request (an assistant
/// message, a failure or an interruption), the summary request of a
/// compaction at its `compacting` record, and the count of the request
/// due ([`Request::counting`]) at a `counted` record.
pub fn requests<'a>(records: impl IntoIterator<Item = &'a Record>) -> Vec<Request> {
    let mut rebuild = Rebuild::default();
    records
        .into_iter()
        .filter_map(|record| rebuild.push(record))
        .collect()
}

/// [`requests`] one record at a time, so a log of any size is replayed
/// holding only its folded state and the one request being written out.
#[derive(Debug, Default)]
pub struct Rebuild {
    state: State,
}

impl Rebuild {
    /// Folds `record`; the request sent just before it was written, if
    /// any (at most one record answers or starts one).
    pub fn push(&mut self, record: &Record) -> Option<Request> {
        // As the fold will: calls whose results were lost are answered.
        let _ = self.state.repair(record);
        let request = if self.state.answers(record) {
            Some(self.state.request())
        } else if let Record::Compacting(c) = record {
            Some(self.state.compacting_request(c))
        } else if let Record::Counted(_) = record {
            let due = self.state.request();
            due.counting().map(|body| Request { body, ..due })
        } else if let Record::Refining(r) = record {
            let seq = self.state.totals.requests.saturating_add(1);
            Some(self.state.refinement_request(&r.body, seq))
        } else {
            None
        };
        self.state.apply(record);
        request
    }
}
