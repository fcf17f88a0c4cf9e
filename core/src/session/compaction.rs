//! Keeping the session inside its window: measuring the request due now,
//! compaction (pruning, then summarizing into working notes, in pieces when
//! the part to summarize is too big for one request), giving way when even
//! that does not fit, and a server's refusal of a request as too large.

use time::OffsetDateTime;

use super::{Command, Due, Flight, Input, Outcome, Phase, Reply, Session};
use super::{FileCommand, LogCommand, ModelCommand, ModelInput, UserCommand};
use crate::compact;
use crate::record::{
    Compacted, Compacting, Continued, Failed, Header, Message, Noted, Overflowed, Pruned, Record,
    Role, Squeezed, StopReason, Totals,
};
use crate::request::Request;
use crate::state::State;
use crate::text as view;

impl Session {
    /// The request due now and its estimated size. A history whose text
    /// alone is over the window is not built into a body just to be
    /// measured (a resumed 100 MB session compacts first): then no request,
    /// and the text's estimate, a lower bound enough to know it does not fit.
    pub(super) fn measure(&self) -> (Option<Request>, u64) {
        let totals = &self.state.totals;
        let text = compact::estimate(self.state.text_bytes(0..self.state.messages.len()), totals);
        if !compact::fits(text, self.state.window) {
            return (None, text);
        }
        let request = self.state.request();
        let tokens = compact::estimate(request.body.weight(), totals);
        (Some(request), tokens)
    }

    /// The request due now, built whatever its size, and its estimate.
    pub(super) fn built(&self) -> (Request, u64) {
        let request = self.state.request();
        let tokens = compact::estimate(request.body.weight(), &self.state.totals);
        (request, tokens)
    }

    /// The estimated size of the request due now (see [`Session::measure`]).
    fn estimate_now(&self) -> u64 {
        self.measure().1
    }

    /// The request due now does not fit the window, even after this
    /// request's compaction: the history gives way, in this order, until it
    /// fits, each step said on stderr and logged:
    ///
    /// 1. oversized tool results (over `prune-result-chars`) are pruned
    ///    wherever they are, the kept turns too, oldest first;
    /// 2. the compaction keeps fewer turns verbatim (two, then one: the
    ///    turn in flight), summarizing the rest; a cut is always at a turn's
    ///    start, so no call is parted from its result;
    /// 3. tool results and answers of the model (their text and long call
    ///    arguments), newest first, are cut to a short head and tail, the
    ///    whole of each spilled to a file this run may read.
    ///
    /// Step 2 asks for notes and returns with the compaction in flight; the
    /// request comes back here once they are in.
    pub(super) fn give_way(&mut self, due: &mut Due, now: OffsetDateTime) -> Vec<Command> {
        let window = self.state.window;
        let mut cmds = Vec::new();
        // 1. Prune, oldest first, until the estimate fits.
        let body = self.state.request_len();
        let mut saved = 0usize;
        let mut chosen = Vec::new();
        for (i, m) in self.state.messages.iter().enumerate() {
            if compact::fits(
                compact::estimate(body.saturating_sub(saved), &self.state.totals),
                window,
            ) {
                break;
            }
            if m.role == Role::Tool && compact::prunable(&m.content, self.settings.prune_chars) {
                saved += m
                    .content
                    .len()
                    .saturating_sub(compact::prune_to(&m.content, self.settings.prune_chars).len());
                chosen.push(i as u64);
            }
        }
        if !chosen.is_empty() {
            let estimate = compact::estimate(body.saturating_sub(saved), &self.state.totals);
            let n = chosen.len();
            cmds.extend(self.prune(chosen, estimate, now));
            cmds.push(Command::show(format!(
                "window: pruned {n} oversized tool result(s) in the kept turns to fit the {}-token window",
                view::tokens(window)
            )));
            if compact::fits(self.estimate_now(), window) {
                return cmds;
            }
        }
        // 2. Keep fewer turns.
        while due.keep_turns > 1 {
            due.keep_turns -= 1;
            let plan = compact::Plan::keeping(
                &self.state.messages,
                self.settings.prune_chars,
                due.keep_turns,
            );
            if plan.summarizes() {
                let said = Command::show(format!(
                    "window: {} turns do not fit the {}-token window; {} verbatim",
                    compact::KEEP_TURNS,
                    view::tokens(window),
                    self.kept_words(due.keep_turns)
                ));
                if let Some(summary) = self.summarize(plan.cut, due, now) {
                    cmds.push(said);
                    cmds.extend(summary);
                    return cmds;
                }
            }
        }
        // 3. Squeeze results and answers, newest first, keeping as much
        //    of each as lets the request fit.
        let default = compact::SQUEEZE_HEAD + compact::SQUEEZE_TAIL;
        let (keep, squeezed) = compact::SQUEEZE_STEPS
            .iter()
            .map(|&keep| (keep, self.squeezed(keep)))
            .find(|(_, (fits, _))| *fits)
            .map(|(keep, (_, squeezed))| (keep, squeezed))
            .unwrap_or_else(|| (0, self.squeezed(0).1));
        let keep_said = (keep < default).then_some(keep as u64);
        if !squeezed.is_empty() {
            cmds.push(Command::show(format!(
                "window: cut {} tool result(s), newest first, to head and tail to fit the {}-token window; each is whole in a spill file",
                squeezed.len(),
                view::tokens(window)
            )));
        }
        for (i, path, content) in squeezed {
            self.grants.insert(path.clone());
            cmds.push(Command::File(FileCommand::Spill {
                path: path.clone(),
                content,
            }));
            cmds.extend(self.append(vec![Record::Squeezed(Squeezed {
                at: now,
                message: i as u64,
                path,
                keep: keep_said,
            })]));
        }
        // 4. The turn in flight alone is too long: its earlier rounds are
        //    summarized, its message and its latest round kept verbatim.
        if !compact::fits(self.estimate_now(), window) {
            if let Some(cut) = compact::latest_round(&self.state.messages) {
                let said = Command::show(format!(
                    "window: this turn's tool rounds do not fit the {}-token window; its earlier rounds become working notes, your message and its latest round stay verbatim",
                    view::tokens(window)
                ));
                if let Some(summary) = self.summarize(cut, due, now) {
                    cmds.push(said);
                    cmds.extend(summary);
                }
            }
        }
        cmds
    }

    /// What squeezing newest first, keeping `keep` characters of each
    /// result or answer, cuts until the request fits: whether it then
    /// fits, and each message cut (its index, spill path, whole text).
    fn squeezed(&self, keep: usize) -> (bool, Vec<(usize, String, String)>) {
        let (window, totals) = (self.state.window, &self.state.totals);
        let mut body = self.state.request_len();
        let mut squeezed = Vec::new();
        for (i, m) in self.state.messages.iter().enumerate().rev() {
            if compact::fits(compact::estimate(body, totals), window) {
                break;
            }
            let path = format!(
                "{}/{:04}-squeezed-{i}.txt",
                self.settings.spill_dir.trim_end_matches('/'),
                totals.requests.saturating_add(1),
            );
            if m.role == Role::Tool && compact::squeezable(&m.content, keep) {
                let cut = compact::squeeze(&m.content, &path, keep);
                body = body.saturating_sub(m.content.len().saturating_sub(cut.len()));
                squeezed.push((i, path, m.content.clone()));
            } else if compact::answer_squeezable(m, keep) {
                let whole = compact::answer_whole(m);
                let mut cut = m.clone();
                compact::squeeze_answer(&mut cut, &path, keep);
                let now = compact::answer_whole(&cut).len();
                body = body.saturating_sub(whole.len().saturating_sub(now));
                squeezed.push((i, path, whole));
            }
        }
        (
            compact::fits(compact::estimate(body, totals), window),
            squeezed,
        )
    }

    /// Whether an automatic compaction would change anything now (prune
    /// or summarize): its `PreCompact` hooks run only then.
    pub(super) fn compaction_acts(&self) -> bool {
        let keep = compact::KEEP_TURNS + usize::from(self.state.awaiting);
        let plan = compact::Plan::keeping(&self.state.messages, self.settings.prune_chars, keep);
        !plan.prune.is_empty() || plan.summarizes()
    }

    /// Compaction, step one then, only if needed, step two. Automatic
    /// compaction (`manual` false) stops after pruning when the history then
    /// fits; `/compact` always summarizes what lies before the kept turns.
    pub(super) fn compact(
        &mut self,
        manual: bool,
        due: &mut Due,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        // Three finished turns stay, as `/compact` between turns keeps
        // them, and the turn in flight with them.
        due.keep_turns = compact::KEEP_TURNS + usize::from(self.state.awaiting);
        let plan = compact::Plan::keeping(
            &self.state.messages,
            self.settings.prune_chars,
            due.keep_turns,
        );
        let mut cmds = Vec::new();
        if !plan.prune.is_empty() {
            let messages = &self.state.messages;
            let saved: u64 = plan
                .prune
                .iter()
                .map(|&i| {
                    compact::saved_tokens(
                        &messages[i].content,
                        &compact::prune_to(&messages[i].content, self.settings.prune_chars),
                    )
                })
                .sum();
            let indices = plan.prune.iter().map(|&i| i as u64).collect();
            let estimate = self.state.totals.last_context.saturating_sub(saved);
            cmds.extend(self.prune(indices, estimate, now));
            cmds.push(Command::show(format!(
                "compaction: pruned {} oversized tool result(s), about {} tokens",
                plan.prune.len(),
                view::tokens(saved)
            )));
            if !manual
                && !compact::due(estimate, self.state.window)
                && compact::fits(self.estimate_now(), self.state.window)
            {
                return cmds;
            }
        }
        if !plan.summarizes() {
            if manual && plan.prune.is_empty() {
                cmds.push(Command::show(format!(
                    "nothing to compact: the session has at most {} turns, which are kept verbatim",
                    compact::KEEP_TURNS
                )));
            }
            return cmds;
        }
        match self.summarize(plan.cut, due, now) {
            Some(summary) => cmds.extend(summary),
            None => cmds.push(Command::show(format!(
                "compaction: the {} messages to summarize do not fit one request to the {}-token window; the session goes on uncompacted",
                plan.cut,
                view::tokens(self.state.window)
            ))),
        }
        cmds
    }

    /// The parts of the request due now that no compaction shrinks, each
    /// estimated in tokens: the system prompt (base prompt, memory files,
    /// goal), the tool definitions, and the newest message of the user.
    /// The estimate of the least request that could go out now: the
    /// system prompt, the tools and the newest message of the user alone.
    pub(super) fn fixed_tokens(&self) -> u64 {
        let state = &self.state;
        let newest: Vec<Message> = state
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::User && !compact::is_notes(m))
            .cloned()
            .into_iter()
            .collect();
        let least = state.request_of(
            state.system.as_deref(),
            &newest,
            &state.shape(state.answer_limit(), true),
        );
        compact::estimate(least.body.weight(), &state.totals)
    }

    pub(super) fn fixed_parts(&self) -> [FixedPart; 3] {
        let state = &self.state;
        let totals = &state.totals;
        let empty = state.request_of(None, &[], &state.shape(state.answer_limit(), true));
        let user = state
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::User && !compact::is_notes(m))
            .map_or(0, |m| m.model_text().len());
        [
            FixedPart {
                what: FixedKind::System,
                tokens: compact::estimate(state.system.as_deref().map_or(0, str::len), totals),
            },
            FixedPart {
                what: FixedKind::Tools,
                tokens: compact::estimate(empty.body.weight(), totals),
            },
            FixedPart {
                what: FixedKind::Message,
                tokens: compact::estimate(user, totals),
            },
        ]
    }

    /// What a compaction keeps verbatim, in words: `the last 3 turns`, or
    /// `the last 2 turns and the one in flight`.
    fn kept_words(&self, keep_turns: usize) -> String {
        let finished = keep_turns - usize::from(self.state.awaiting);
        let turns = |n: usize| if n == 1 { "turn" } else { "turns" };
        match (finished, self.state.awaiting) {
            (0, _) => "the turn in flight stays".to_owned(),
            (n, true) => format!("the last {n} {} and the one in flight stay", turns(n)),
            (n, false) => format!("the last {n} {} stay", turns(n)),
        }
    }

    /// Prunes the tool results at `messages` to `prune-result-chars` (the
    /// record names the limit, so the fold cuts the same).
    fn prune(&mut self, messages: Vec<u64>, estimate: u64, now: OffsetDateTime) -> Vec<Command> {
        let keep = self.settings.prune_chars as u64;
        self.append(vec![Record::Pruned(Pruned {
            at: now,
            messages,
            estimate,
            keep,
        })])
    }

    /// Step two of a compaction: asks for working notes on the first `cut`
    /// messages, in one request when it fits the window, else in pieces
    /// (see [`Session::next_piece`]); `None` when not even a first piece
    /// fits.
    fn summarize(
        &mut self,
        cut: usize,
        due: &mut Due,
        now: OffsetDateTime,
    ) -> Option<Vec<Command>> {
        let mut cmds = Vec::new();
        let text = compact::estimate(self.state.text_bytes(0..cut), &self.state.totals);
        // The summary's requests count toward --max-cost like any other.
        if let Some(reason) = self.over_budget(text) {
            return Some(self.stop(reason, now));
        }
        let whole = compact::fits(text, self.state.window)
            .then(|| self.state.whole_piece(0, cut, None, false))
            .flatten();
        if let Some(summary) = whole {
            let compacting = Compacting {
                at: now,
                cut: cut as u64,
                from: 0,
                upto: 0,
                bare: false,
            };
            let line = format!(
                "compaction: summarizing {cut} messages into working notes; {} verbatim",
                self.kept_words(due.keep_turns)
            );
            return Some(self.ask_piece(compacting, line, summary, *due));
        }
        let system = self.fixed_parts()[0].tokens;
        let prompt = compact::estimate(compact::SUMMARY_PROMPT.len(), &self.state.totals);
        let (requests, input) =
            compact::summary_cost(text, cut as u64, system + prompt, self.state.window);
        if let Some(line) = compact::cost_line("compaction", requests, input) {
            match due.costly {
                // Declined: not summarized.
                Some(false) => return None,
                Some(true) => {}
                None if self.settings.asks_costly() => {
                    self.phase = Phase::Confirming { due: *due };
                    return Some(vec![
                        Command::show(line),
                        Command::User(UserCommand::Confirm(format!(
                            "compact now, sending about {requests} model requests? [y]es, [n]o: "
                        ))),
                    ]);
                }
                None if self.settings.refuses_costly() => {
                    let reason = StopReason::Costly {
                        what: "compaction".to_owned(),
                        requests,
                        tokens: input,
                    };
                    due.stopped = true;
                    return Some(self.stop(reason, now));
                }
                None => cmds.push(Command::show(line)),
            }
        }
        due.pieces = (0, requests);
        let first = self.next_piece(cut, 0, due, now)?;
        cmds.push(Command::show(format!(
            "compaction: the {cut} messages to summarize do not fit one request to the {}-token window; summarizing them in pieces, each carrying the notes so far",
            view::tokens(self.state.window)
        )));
        cmds.extend(first);
        Some(cmds)
    }

    /// The request for the piece of a summary that starts at `from`: as
    /// far as fits the window, cut at a turn start (see
    /// [`compact::piece_end`]), carrying the notes so far. When not even
    /// one message fits, one step ([`compact::first_step`]) with what is
    /// too large cut to head and tail for the request
    /// ([`State::piece_request`]). `None` only when the request cannot fit
    /// at all (the system prompt and the notes alone fill the window).
    fn next_piece(
        &mut self,
        cut: usize,
        from: usize,
        due: &mut Due,
        now: OffsetDateTime,
    ) -> Option<Vec<Command>> {
        let notes = if from == 0 {
            None
        } else {
            self.state.notes_so_far.clone()
        };
        let (state, window) = (&self.state, self.state.window);
        let upto = compact::piece_end(&state.messages, from, cut, |end| {
            // Measured by its text first: most ends tried are far too big.
            let text = state.text_bytes(from..end) + notes.as_ref().map_or(0, String::len);
            compact::fits(compact::estimate(text, &state.totals), window)
                && state
                    .whole_piece(from, end, notes.as_deref(), false)
                    .is_some()
        })
        .unwrap_or_else(|| compact::first_step(&state.messages, from, cut));
        let request = self
            .state
            .piece_request(from, upto, notes.as_deref(), false);
        if !compact::fits(
            compact::estimate(request.body.weight(), &self.state.totals),
            window,
        ) {
            return None;
        }
        let compacting = Compacting {
            at: now,
            cut: cut as u64,
            from: from as u64,
            upto: if upto == cut { 0 } else { upto as u64 },
            bare: false,
        };
        due.pieces.0 += 1;
        let (k, n) = (due.pieces.0, due.pieces.1.max(due.pieces.0));
        let line = format!(
            "compaction: piece {k} of about {n}: summarizing messages {}..{upto} of {cut}",
            from + 1
        );
        Some(self.ask_piece(compacting, line, request, *due))
    }

    /// Sends the summary request of the piece `compacting` starts: its
    /// record, the line saying so, and the phase waiting on the notes.
    fn ask_piece(
        &mut self,
        compacting: Compacting,
        line: String,
        request: Request,
        due: Due,
    ) -> Vec<Command> {
        let bare = compacting.bare;
        let mut cmds = self.append(vec![Record::Compacting(compacting)]);
        cmds.push(Command::show(line));
        self.phase = Phase::Summarizing {
            flight: Flight {
                estimate: compact::estimate(request.body.weight(), &self.state.totals),
                bytes: request.body.weight(),
            },
            due,
            bare,
        };
        cmds.push(Command::Model(ModelCommand::Summarize(request)));
        cmds
    }

    /// The answer to the summary request in flight.
    pub(super) fn summary_answered(
        &mut self,
        flight: Flight,
        due: Due,
        bare: bool,
        input: ModelInput,
    ) -> (Vec<Command>, Outcome) {
        match input {
            ModelInput::Summarized { reply, new_id, now } => {
                let cmds = self.summarized(due, (flight.estimate, bare), reply, new_id, now);
                (cmds, Outcome::Going)
            }
            ModelInput::SummaryFailed { error, now } => (
                self.summary_failed(due, error.clone(), now),
                Outcome::Failed(error),
            ),
            ModelInput::Overflowed {
                error,
                limit,
                asked,
                now,
            } => {
                let overflow = crate::overflow::Overflow { limit, asked };
                let cmds = self.summary_overflowed(flight, due, error, overflow, now);
                (cmds, Outcome::Going)
            }
            other => self.ignored(&Input::Model(other)),
        }
    }

    /// The notes are in: the old file ends pointing forward, and the session
    /// goes on in a new file holding the notes and the kept turns.
    fn summarized(
        &mut self,
        due: Due,
        (estimate, bare): (u64, bool),
        reply: Reply,
        new_id: String,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        let (Some(cut), Some(old)) = (self.state.compacting, self.state.header.clone()) else {
            return Vec::new();
        };
        if !reply.tool_calls.is_empty() && !bare {
            return self.ask_bare(cut, due, now);
        }
        let error = if !reply.tool_calls.is_empty() {
            "the model called a tool instead of writing notes"
        } else if reply.text.trim().is_empty() {
            "the model wrote no notes"
        } else {
            ""
        };
        if !error.is_empty() {
            return self.summary_failed(due, error.to_owned(), now);
        }
        let (_, upto) = self.state.piece;
        if upto < cut {
            return self.noted_piece(due, cut, upto, (reply, estimate), now);
        }
        self.continue_in(due, cut, (reply, estimate), new_id, old, now)
    }

    /// The model called a tool instead of writing notes on a piece asked
    /// with the tools offered (a small model held to a server's tool
    /// grammar does): the same piece once more, as one transcript with no
    /// tools, which the `bare` of its `compacting` record tells replay.
    fn ask_bare(&mut self, cut: u64, due: Due, now: OffsetDateTime) -> Vec<Command> {
        let (from, upto) = self.state.piece;
        let notes = (from > 0)
            .then(|| self.state.notes_so_far.clone())
            .flatten();
        let idx = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        let request = self
            .state
            .piece_request(idx(from), idx(upto), notes.as_deref(), true);
        let compacting = Compacting {
            at: now,
            cut,
            from,
            upto: if upto == cut { 0 } else { upto },
            bare: true,
        };
        let line = "compaction: the model called a tool instead of writing notes; asking again with the messages as one transcript and no tools";
        self.ask_piece(compacting, line.to_owned(), request, due)
    }

    /// The notes of a piece before the last are in: they carry on into
    /// the next piece's request.
    fn noted_piece(
        &mut self,
        mut due: Due,
        cut: u64,
        upto: u64,
        (reply, estimate): (Reply, u64),
        now: OffsetDateTime,
    ) -> Vec<Command> {
        let noted = Record::Noted(Noted {
            at: now,
            upto,
            notes: reply.text.clone(),
        });
        let mut cmds = self.append(vec![noted]);
        cmds.extend(self.spent_aside_of(&reply, estimate, now));
        let idx = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        match self.next_piece(idx(cut), idx(upto), &mut due, now) {
            Some(next) => cmds.extend(next),
            None => cmds.extend(self.summary_failed(
                due,
                "a piece of the part to summarize does not fit the window".into(),
                now,
            )),
        }
        cmds
    }

    /// The last notes are in: the old file (`old` its header) ends
    /// pointing forward to the file `new_id`, which holds the notes and the
    /// kept turns; the request waiting for them goes out.
    fn continue_in(
        &mut self,
        due: Due,
        cut: u64,
        (reply, estimate): (Reply, u64),
        new_id: String,
        old: Header,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        // Without the server's count, estimated, as a turn's answer is.
        let usage = self.counted_or_estimated(&reply, estimate);
        let counted = reply.usage.is_some();
        let notes = reply.text;
        let cut = usize::try_from(cut)
            .unwrap_or(usize::MAX)
            .min(self.state.messages.len());
        let kept = self.kept_from(cut);
        let mut totals = self.totals_with_notes(&notes, &kept, usage, now);
        totals.in_out_estimated |= !counted;
        let header = Header {
            id: new_id.clone(),
            name: self.state.name.clone(),
            named: self.state.named,
            started: now,
            model: self.state.model.clone(),
            window: self.state.window,
            provider: self.state.provider.clone(),
            continues: Some(old.id.clone()),
            // The new file is this build's: its requests are this build's.
            version: crate::record::FORMAT_VERSION,
            ..old
        };
        let pending = self.state.awaiting;
        let (refined_at, turns_at_refine) = (self.state.refined_at, self.state.turns_at_refine);
        let turn_rounds = self.state.turn_rounds;
        // The plan goes on in the new file, as the goal does beside it.
        let plan = self.state.plan.clone();
        let start_context = self.state.start_context.clone();
        let mut cmds = self.append(vec![Record::Continued(Continued {
            at: now,
            next: new_id,
        })]);
        cmds.push(Command::sync());
        cmds.push(Command::Log(LogCommand::StartFile(header.clone())));
        self.state = State::default();
        self.state.apply(&Record::Header(header));
        let compacted = Compacted {
            at: now,
            from: old.id,
            summarized: cut as u64,
            notes,
            kept,
            totals,
            pending,
            refined_at,
            turns_at_refine,
            turn_rounds,
            start_context,
        };
        cmds.extend(self.append(vec![Record::Compacted(compacted)]));
        if !plan.is_empty() {
            cmds.extend(self.append(vec![Record::Plan(crate::record::PlanSet {
                at: now,
                call: None,
                steps: plan,
            })]));
        }
        cmds.push(Command::show(format!(
            "compaction: {cut} messages became working notes; the session goes on in a new file"
        )));
        // The session goes on: its `SessionStart` hooks run (`source`
        // `compact`), in the new file, before anything more is sent.
        let about = crate::hooks::About::SessionStart {
            source: "compact".into(),
        };
        if pending {
            let resume = super::hooking::Resume::Request { due };
            match self.hooks_for(about, None, resume) {
                Some(run) => cmds.extend(run),
                None => cmds.extend(self.request(due, now)),
            }
        } else {
            // A file must end with its totals: listings read them there.
            let totals = self.state.totals.clone();
            cmds.extend(self.append(vec![Record::Totals(totals)]));
            cmds.push(Command::sync());
            cmds.extend(
                self.hooks_for(about, None, super::hooking::Resume::Idle)
                    .unwrap_or_default(),
            );
        }
        cmds
    }

    /// The messages a compaction cutting at `cut` keeps verbatim: a cut
    /// inside a turn keeps that turn's message of the user too.
    fn kept_from(&self, cut: usize) -> Vec<Message> {
        let mut kept = Vec::new();
        if self
            .state
            .messages
            .get(cut)
            .is_some_and(|m| m.role != Role::User)
        {
            kept.extend(
                self.state.messages[..cut]
                    .iter()
                    .rev()
                    .find(|m| m.role == Role::User && !compact::is_notes(m))
                    .cloned(),
            );
        }
        kept.extend(self.state.messages[cut..].iter().cloned());
        kept
    }

    /// The totals the new file starts with: what the notes cost, and the
    /// new context as the next request will carry it (the system prompt
    /// and the tools too, not only the notes and the kept turns).
    fn totals_with_notes(
        &self,
        notes: &str,
        kept: &[Message],
        usage: super::Usage,
        now: OffsetDateTime,
    ) -> Totals {
        let before = &self.state.totals;
        let estimate = {
            let mut history = vec![Message::user(now, compact::notes_message(notes))];
            history.extend(kept.iter().cloned());
            let next = self.state.request_of(
                self.state.system.as_deref(),
                &history,
                &self.state.shape(self.state.answer_limit(), true),
            );
            compact::estimate(next.body.weight(), &self.state.totals)
        };
        let (cost, unpriced) = self.cost_after(Some(usage));
        Totals {
            cost,
            unpriced,
            at: Some(now),
            tokens_in: before.tokens_in.saturating_add(usage.prompt_tokens),
            tokens_out: before.tokens_out.saturating_add(usage.completion_tokens),
            tokens_cached: before.tokens_cached.saturating_add(usage.cache_read_tokens),
            tokens_cache_written: before
                .tokens_cache_written
                .saturating_add(usage.cache_write_tokens),
            last_context: estimate,
            estimated: true,
            ..before.clone()
        }
    }

    /// The server refused the request as larger than its context. The first
    /// time for a request: the window is lowered (to the limit named, or
    /// below the size that failed), logged, and the request compacted to it
    /// and sent again. A second refusal fails the turn.
    pub(super) fn overflowed(
        &mut self,
        flight: Flight,
        retried: bool,
        error: String,
        overflow: crate::overflow::Overflow,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        if retried {
            let end = Record::Failed(Failed { at: now, error });
            return self.cut_short(String::new(), end, now);
        }
        let (lowered, before, window) = self.lowered(flight, error, overflow, now);
        let mut cmds = self.append(vec![lowered]);
        cmds.push(Command::show(format!(
            "window: the request is larger than the server's context; the window goes from {} to {} tokens, and the request is compacted and sent once more",
            view::tokens(before),
            view::tokens(window)
        )));
        cmds.extend(self.request(Due::retried(), now));
        cmds
    }

    /// The `overflowed` record for the request in flight: the window it
    /// lowers to (see [`crate::overflow::lowered_window`]) and the server's
    /// count for the calibration; with the window before and after.
    fn lowered(
        &self,
        flight: Flight,
        error: String,
        overflow: crate::overflow::Overflow,
        now: OffsetDateTime,
    ) -> (Record, u64, u64) {
        let before = self.state.window;
        let fixed = self.fixed_tokens();
        let window = crate::overflow::lowered_window(before, flight.estimate, overflow, fixed);
        let record = Record::Overflowed(Overflowed {
            at: now,
            error,
            window,
            asked: overflow.asked.unwrap_or(0),
            bytes: flight.bytes as u64,
        });
        (record, before, window)
    }

    /// A summary request (or a piece of one) was refused as larger than the
    /// server's context: the window is lowered, this compaction fails, and
    /// it starts again under the lowered window, once.
    fn summary_overflowed(
        &mut self,
        flight: Flight,
        mut due: Due,
        error: String,
        overflow: crate::overflow::Overflow,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        let retry = !due.retried;
        due.retried = true;
        let failed = Record::CompactionFailed(Failed {
            at: now,
            error: error.clone(),
        });
        let (lowered, before, window) = self.lowered(flight, error, overflow, now);
        let mut cmds = self.append(vec![lowered, failed]);
        cmds.push(Command::show(format!(
            "window: the summary request is larger than the server's context; the window goes from {} to {} tokens{}",
            view::tokens(before),
            view::tokens(window),
            if retry { ", and the compaction starts again" } else { "" }
        )));
        if !retry {
            if self.state.awaiting {
                cmds.extend(self.request(due, now));
            }
            return cmds;
        }
        due.keep_turns = compact::KEEP_TURNS;
        if self.state.awaiting {
            due.compacted = false;
            cmds.extend(self.request(due, now));
        } else {
            cmds.extend(self.compact(true, &mut due, now));
        }
        cmds
    }
}

/// One part of a request that no compaction shrinks (see
/// [`Session::fixed_parts`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct FixedPart {
    pub what: FixedKind,
    /// Its size, estimated in tokens.
    pub tokens: u64,
}

pub(super) use crate::record::FixedKind;

impl Session {
    /// A compaction's summary failed: the session goes on uncompacted (the
    /// turn's request goes out when one waits).
    pub(super) fn summary_failed(
        &mut self,
        due: Due,
        error: String,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        let failed = Record::CompactionFailed(Failed {
            at: now,
            error: error.clone(),
        });
        let mut cmds = self.append(vec![failed]);
        cmds.push(Command::show(format!(
            "compaction failed ({error}); the session goes on uncompacted"
        )));
        if self.state.awaiting {
            cmds.extend(self.request(due, now));
        }
        cmds
    }
}
