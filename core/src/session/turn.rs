//! The session's side of a turn: the user's line and its context, the
//! request (the system prompt logged when it changed, a count or a
//! compaction first when the window is near), the model's answer, and the
//! ways a turn ends (done, stopped, cut short), with the totals each
//! appends.

use time::OffsetDateTime;

use super::phase::{Due, Flight};
use super::PLANNING_PROMPT;
use super::{Command, Delivery, ModelCommand, Phase, Reply, Session, TurnContext, Usage};
use crate::compact;
use crate::guard::{self, StopReason};
use crate::prompt;
use crate::record::{
    Context, Counted, Failed, Interrupted, Message, Origin, Record, Role, Stopped, ToolCall,
    Totals, WentOn,
};
use crate::text as view;

impl Session {
    /// The user's line ([`UserInput::Line`]): its context first (the
    /// prompt's parts; the MCP tools, logged when they changed; the inbox's
    /// new messages, logged and synced), then the message and its request.
    pub(super) fn line(
        &mut self,
        text: String,
        context: TurnContext,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        let TurnContext {
            parts,
            mcp_tools,
            inbox,
            images,
        } = context;
        self.parts = parts;
        if self.busy() {
            // A line with nothing in it asks nothing.
            if text.trim().is_empty() && images.is_empty() {
                return Vec::new();
            }
            return vec![Command::show(
                "a turn is still running; wait for it or press Ctrl-C".into(),
            )];
        }
        if !images.is_empty() && self.blind() {
            // Refused before anything is logged or sent.
            let what = match images.as_slice() {
                [one] => format!("image {}", view::inert(&one.source)),
                many => format!("{} images", many.len()),
            };
            let model = self.state.model().clone();
            return vec![Command::show(crate::images::refusal(&model, &what))];
        }
        let mut cmds = match mcp_tools {
            Some(tools) => self.mcp_tools(tools, now),
            None => Vec::new(),
        };
        let taken = self.take_inbox(inbox, now);
        let took = !taken.is_empty();
        cmds.extend(taken);
        if text.trim().is_empty() && images.is_empty() {
            // Messages just taken go out without a line of the user's.
            if took {
                cmds.extend(self.request(Due::default(), now));
            }
            return cmds;
        }
        self.stop_rounds = 0;
        let about = crate::hooks::About::UserPromptSubmit {
            prompt: text.clone(),
        };
        match self.hooks_for(
            about,
            None,
            super::hooking::Resume::Line {
                text: text.clone(),
                images: images.clone(),
            },
        ) {
            Some(run) => cmds.extend(run),
            None => cmds.extend(self.send_line(text, images, now)),
        }
        cmds
    }

    /// The user's line (with what `UserPromptSubmit` hooks added) logged,
    /// and its request.
    pub(super) fn send_line(
        &mut self,
        text: String,
        images: Vec<crate::record::Image>,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        let message = Message {
            images,
            ..Message::user(now, text)
        };
        let mut cmds = self.append(vec![Record::Message(message)]);
        cmds.extend(self.request(Due::default(), now));
        cmds
    }

    /// Whether the model asked is known to read no images (see
    /// [`crate::images::blind`]).
    pub(super) fn blind(&self) -> bool {
        crate::images::blind(
            &self.settings.models,
            self.state.provider(),
            self.state.model(),
        )
    }

    /// Messages that arrived at an idle REPL ([`UserInput::Inbox`]):
    /// taken, and the model asked at once.
    pub(super) fn inbox(&mut self, messages: Vec<Delivery>, now: OffsetDateTime) -> Vec<Command> {
        if self.busy() {
            return Vec::new();
        }
        let mut cmds = self.take_inbox(messages, now);
        if !cmds.is_empty() {
            cmds.extend(self.request(Due::default(), now));
        }
        cmds
    }

    /// Takes the inbox's new messages (see [`TurnContext::inbox`]): each
    /// shown and logged as a user message marked with its origin, then the
    /// log synced; nothing when none is new.
    pub(super) fn take_inbox(
        &mut self,
        mut messages: Vec<Delivery>,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        messages.sort_by_key(|m| m.seq);
        messages.dedup_by_key(|m| m.seq);
        let mut cmds = Vec::new();
        for m in messages {
            if m.seq <= self.state.totals.delivered {
                continue;
            }
            cmds.push(Command::show(format!(
                "── message from {}: {}",
                view::inert(&m.from),
                view::inert(&m.text)
            )));
            let message = Message {
                origin: Some(Origin {
                    from: m.from,
                    seq: m.seq,
                }),
                ..Message::user(now, m.text)
            };
            cmds.extend(self.append(vec![Record::Message(message)]));
        }
        if cmds.is_empty() {
            return cmds;
        }
        // Taken for good before the inbox forgets them.
        cmds.push(Command::sync());
        cmds
    }

    /// The next request, once it is due: the system prompt is written when
    /// it changed, and a session near its window compacts first.
    pub(super) fn request(&mut self, mut due: Due, now: OffsetDateTime) -> Vec<Command> {
        let mut cmds = self.context_due(now);
        let window = self.state.window;
        let (mut request, estimate) = self.measure();
        let near = compact::due(self.state.totals.last_context, window)
            || !compact::fits(estimate, window);
        // Before compacting on an estimate no count stands behind, ask
        // the server to count, where that is free.
        if near && !due.compacted && !due.counted && self.settings.counts {
            if let Some(request) = request.as_ref().filter(|r| {
                compact::count_helps(&self.state.totals, r.body.weight(), estimate, window)
            }) {
                due.counted = true;
                let bytes = request.body.weight();
                self.phase = Phase::Counting { bytes, due };
                cmds.push(Command::Model(ModelCommand::Count(request.clone())));
                return cmds;
            }
        }
        if near && !due.compacted {
            if let Some(run) = self.told_before_compacting(&mut due) {
                cmds.extend(run);
                return cmds;
            }
            due.compacted = true;
            let done = self.compact(false, &mut due, now);
            if self.waits_for_notes() {
                // The request goes out once the notes are in.
                cmds.extend(done);
                return cmds;
            }
            if !done.is_empty() {
                request = None;
            }
            cmds.extend(done);
        }
        let (mut request, mut estimate) = match request {
            Some(r) => {
                let tokens = compact::estimate(r.body.weight(), &self.state.totals);
                (r, tokens)
            }
            None => self.built(),
        };
        if !compact::fits(estimate, window) {
            cmds.extend(self.give_way(&mut due, now));
            if self.waits_for_notes() || due.stopped {
                return cmds;
            }
            (request, estimate) = self.built();
        }
        // Before stopping on an estimate, the server's count of the very
        // request, where that is free: it may fit after all.
        if !compact::fits(estimate, window)
            && self.settings.counts
            && !due.stop_counted
            && request.body.weight() as u64 != self.state.totals.cal_bytes
        {
            due.stop_counted = true;
            let bytes = request.body.weight();
            self.phase = Phase::Counting { bytes, due };
            cmds.push(Command::Model(ModelCommand::Count(request)));
            return cmds;
        }
        if !compact::answerable(estimate, window) {
            // When the part no compaction shrinks is what does not fit,
            // name its largest piece and what to do about it.
            // With too little left beside it for the work of a turn (a
            // quarter of the answer's room), it is what is too big too.
            let fixed = self.fixed_tokens() + compact::room(window) / 4;
            let largest = (!compact::fits(fixed, window))
                .then(|| self.fixed_parts().into_iter().max_by_key(|p| p.tokens))
                .flatten()
                .map(|p| (p.what, p.tokens));
            let reason = StopReason::TooLarge {
                tokens: estimate,
                window,
                largest,
            };
            cmds.extend(self.stop(reason, now));
            return cmds;
        }
        if let Some(reason) = self.over_budget(estimate) {
            cmds.extend(self.stop(reason, now));
            return cmds;
        }
        self.phase = Phase::Requesting {
            flight: Flight {
                estimate,
                bytes: request.body.weight(),
            },
            retried: due.retried,
        };
        cmds.push(Command::Model(ModelCommand::Call(request)));
        cmds
    }

    /// The `PreCompact` hooks (`trigger` `auto`) of the automatic
    /// compaction the request due is about to make, once: their round's
    /// commands, when one started (the request is decided again after).
    fn told_before_compacting(&mut self, due: &mut Due) -> Option<Vec<Command>> {
        if due.told || !self.compaction_acts() {
            return None;
        }
        due.told = true;
        let about = crate::hooks::About::PreCompact {
            trigger: "auto".into(),
        };
        self.hooks_for(about, None, super::hooking::Resume::Request { due: *due })
    }

    /// The `context` record of the system prompt (and the definitions a
    /// `task` call may name), when either changed.
    fn context_due(&mut self, now: OffsetDateTime) -> Vec<Command> {
        let mut system = prompt::system(
            self.state.header.as_ref().map_or("", |h| &h.cwd),
            &self.parts,
            self.state.window,
        );
        if self.state.planning {
            system.push_str("\n\n");
            system.push_str(PLANNING_PROMPT);
        }
        self.hook_and_plan_blocks(&mut system);
        // The definitions a `task` call may name: `task` is offered only
        // while there are some.
        let subagents: Vec<String> = self
            .parts
            .subagents
            .iter()
            .map(|d| d.name.clone())
            .collect();
        if self.state.system.as_deref() != Some(system.as_str())
            || self.state.agents().subagents != subagents
        {
            let context = Context {
                at: now,
                system,
                subagents,
            };
            return self.append(vec![Record::Context(context)]);
        }
        Vec::new()
    }

    /// Whether the request due waits for working notes, or for the user's
    /// yes to writing them.
    pub(super) fn waits_for_notes(&self) -> bool {
        matches!(
            self.phase,
            Phase::Summarizing { .. } | Phase::Confirming { .. }
        )
    }

    /// The prices of the model this session asks, when the table knows
    /// them; none for the offline providers (scripted, replay), whose
    /// answers cost nothing.
    pub fn prices(&self) -> Option<crate::models::Prices> {
        if self.offline() {
            return None;
        }
        self.settings
            .models
            .find(&self.state.provider, &self.state.model)
            .and_then(|(_, m)| m.prices)
    }

    /// Why a request of about `input` tokens may not go out: with
    /// `--max-cost` and known prices, when it is expected to bring the
    /// session's cost past the limit (see [`crate::models::expected_cost`]).
    /// The shell asks it before each request it sends itself (a
    /// refinement's).
    pub(crate) fn over_budget(&self, input: u64) -> Option<StopReason> {
        let max = self.settings.max_cost?;
        let prices = self.prices()?;
        let t = &self.state.totals;
        let mean = t.tokens_out.checked_div(t.requests).unwrap_or(0);
        let limit = self.state.answer_limit().map(|l| l.tokens);
        let expected = t
            .cost
            .saturating_add(crate::models::expected_cost(&prices, input, mean, limit));
        (expected > max).then_some(StopReason::Budget {
            spent: t.cost,
            expected,
            max,
        })
    }

    /// The user answered whether a costly compaction may run: yes runs it
    /// (the request due, or `/compact`, decided again); no leaves the
    /// history as it is, and the turn goes on as far as it fits.
    pub(super) fn confirmed(
        &mut self,
        mut due: Due,
        yes: bool,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        due.costly = Some(yes);
        due.compacted = false;
        due.keep_turns = compact::KEEP_TURNS;
        let mut cmds = Vec::new();
        if !yes {
            cmds.push(Command::show(
                "compaction declined: the history stays as it is".into(),
            ));
        }
        if self.state.awaiting {
            cmds.extend(self.request(due, now));
        } else if yes {
            cmds.extend(self.compact(true, &mut due, now));
            // The yes was for this compaction only.
            if let Phase::Summarizing { due, .. } = &mut self.phase {
                due.costly = None;
            }
        }
        cmds
    }

    /// The server counted the request due ([`ModelCommand::Count`]): the count
    /// is logged (it calibrates every later estimate) and the request is
    /// decided again.
    pub(super) fn counted(
        &mut self,
        bytes: usize,
        due: Due,
        tokens: Option<u64>,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        if bytes == 0 || !self.state.awaiting {
            return Vec::new();
        }
        // Logged even without a count (tokens 0), so replay rebuilds
        // every request sent, this one too.
        let mut cmds = self.append(vec![Record::Counted(Counted {
            at: now,
            bytes: bytes as u64,
            tokens: tokens.unwrap_or(0),
        })]);
        cmds.extend(self.request(due, now));
        cmds
    }

    pub(super) fn reply(
        &mut self,
        flight: Flight,
        reply: Reply,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        // Without the provider's count, the estimate: the request's, and
        // the answer's text and calls as the same bytes per token.
        let usage = self.counted_or_estimated(&reply, flight.estimate);
        let last_context = usage.prompt_tokens.saturating_add(usage.completion_tokens);
        let counted = reply.usage.is_some();
        let ends_turn = reply.tool_calls.is_empty();
        let answer = Message {
            tool_calls: reply.tool_calls,
            truncated: reply.truncated,
            thinking: reply.thinking,
            ..Message::assistant(now, reply.text)
        };
        // The totals after the answer, which counts as a request.
        let mut cmds = self.append(vec![Record::Message(answer)]);
        if reply.truncated {
            cmds.push(Command::show(format!(
                "the answer was cut at its {}-token limit (the room the {}-token window keeps for it)",
                view::tokens(compact::room(self.state.window)),
                view::tokens(self.state.window)
            )));
        }
        let mut totals = self.totals(Some(usage), last_context, !counted, ends_turn, now);
        if let Record::Totals(t) = &mut totals {
            t.in_out_estimated |= !counted;
            if counted && usage.prompt_tokens > 0 && flight.bytes > 0 {
                t.cal_bytes = flight.bytes as u64;
                t.cal_tokens = usage.prompt_tokens;
            }
        }
        cmds.extend(self.append(vec![totals]));
        if ends_turn {
            cmds.extend(self.turn_ends());
        } else {
            cmds.extend(self.next_tool(now));
        }
        cmds
    }

    /// Ends the turn on core's own account: every open call gets a result
    /// saying it was not run, then the `stopped` record and the totals.
    /// The shell tells the user, from the record.
    pub(super) fn stop(&mut self, reason: StopReason, now: OffsetDateTime) -> Vec<Command> {
        let text = guard::stopped_result(&reason);
        let mut records: Vec<Record> = self
            .state
            .open_calls
            .iter()
            .map(|c| Record::Message(Message::tool(now, c.id.clone(), text.clone())))
            .collect();
        // A message the budget refused before any request went out is
        // not a turn: nothing was asked, nothing answered.
        let unasked = matches!(reason, StopReason::Budget { .. })
            && self
                .state
                .messages
                .last()
                .is_some_and(|m| m.role == Role::User);
        records.push(Record::Stopped(Stopped { at: now, reason }));
        if unasked {
            let mut cmds = self.append(records);
            let before = &self.state.totals;
            let totals = self.totals(None, before.last_context, before.estimated, false, now);
            cmds.extend(self.append(vec![totals]));
            cmds.push(Command::sync());
            return cmds;
        }
        self.close_turn(records, now)
    }

    /// `GoOn`: a turn stopped after its last tool results sends its request
    /// after all, with a fresh count of tool rounds.
    pub(super) fn go_on(&mut self, now: OffsetDateTime) -> Vec<Command> {
        let after_results = self
            .state
            .messages
            .last()
            .is_some_and(|m| m.role == Role::Tool);
        if self.busy() || !after_results {
            return vec![Command::show(
                "nothing to go on with: no turn stopped after its tool results".into(),
            )];
        }
        let mut cmds = self.append(vec![Record::WentOn(WentOn { at: now })]);
        cmds.extend(self.request(Due::default(), now));
        cmds
    }

    /// Ctrl-C (or a crash found on resume): ends what is in flight.
    pub(super) fn interrupt(&mut self, partial: String, now: OffsetDateTime) -> Vec<Command> {
        if self.state.compacting.is_some() && !self.state.awaiting {
            // A /compact cut short: nothing changed.
            let failed = Record::CompactionFailed(Failed {
                at: now,
                error: "interrupted".into(),
            });
            let mut cmds = self.append(vec![failed]);
            cmds.push(Command::show(
                "compaction interrupted; nothing changed".into(),
            ));
            return cmds;
        }
        // Cut while tools ran or notes were written, the turn's request
        // never went out.
        let unsent = !self.state.open_calls.is_empty() || self.state.compacting.is_some();
        // Only a request that went out can have streamed anything.
        let partial = if unsent { String::new() } else { partial };
        self.cut_short(
            partial,
            Record::Interrupted(Interrupted { at: now, unsent }),
            now,
        )
    }

    /// Ends a turn in flight: open tool calls get results saying they were
    /// cut, or what streamed is kept as a partial answer; then `end`.
    pub(super) fn cut_short(
        &mut self,
        partial: String,
        end: Record,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        let mut records = interrupted_results(&self.state.open_calls, now);
        if !partial.is_empty() && records.is_empty() {
            records.push(Record::Message(Message {
                partial: true,
                ..Message::assistant(now, partial)
            }));
        }
        records.push(end);
        self.close_turn(records, now)
    }

    /// Appends what ends a turn (results for the calls still open, the
    /// record saying why), then the totals counting the turn, and syncs.
    pub(super) fn close_turn(&mut self, records: Vec<Record>, now: OffsetDateTime) -> Vec<Command> {
        // Whatever was asked or staged is about a call that ends here.
        self.phase = Phase::Idle;
        let mut cmds = self.append(records);
        let before = &self.state.totals;
        let totals = self.totals(None, before.last_context, before.estimated, true, now);
        cmds.extend(self.append(vec![totals]));
        cmds.push(Command::sync());
        cmds
    }

    /// What a request beside the turn (a summary, a refinement) spent,
    /// appended as totals (the context the turn last measured stays as it
    /// was): the server's count, else the estimate of the request
    /// (`estimate` tokens) and of the answer, marked estimated, so a
    /// server that reports no usage still
    /// shows what these requests took (issue 47 item 14).
    pub(super) fn spent_aside_of(
        &mut self,
        reply: &Reply,
        estimate: u64,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        let usage = self.counted_or_estimated(reply, estimate);
        let before = &self.state.totals;
        let mut totals = self.totals(
            Some(usage),
            before.last_context,
            before.estimated,
            false,
            now,
        );
        if let Record::Totals(t) = &mut totals {
            t.in_out_estimated |= reply.usage.is_none();
        }
        self.append(vec![totals])
    }

    /// The usage of an answer: the server's count, else the request's
    /// estimate (`estimate` tokens) and the answer's text and calls as the
    /// same bytes per token.
    pub(super) fn counted_or_estimated(&self, reply: &Reply, estimate: u64) -> Usage {
        let answer_bytes = reply.text.len()
            + reply
                .tool_calls
                .iter()
                .map(|c| c.name.len() + c.arguments.len())
                .sum::<usize>();
        reply.usage.unwrap_or(Usage {
            prompt_tokens: estimate,
            completion_tokens: compact::estimate(answer_bytes, &self.state.totals),
            ..Usage::default()
        })
    }

    /// The totals after one model answer (or a turn cut short).
    pub(super) fn totals(
        &self,
        usage: Option<Usage>,
        last_context: u64,
        estimated: bool,
        ends_turn: bool,
        now: OffsetDateTime,
    ) -> Record {
        let before = &self.state.totals;
        let (cost, unpriced) = self.cost_after(usage);
        let usage = usage.unwrap_or_default();
        Record::Totals(Totals {
            cost,
            unpriced,
            at: Some(now),
            tokens_in: before.tokens_in.saturating_add(usage.prompt_tokens),
            tokens_out: before.tokens_out.saturating_add(usage.completion_tokens),
            tokens_cached: before.tokens_cached.saturating_add(usage.cache_read_tokens),
            tokens_cache_written: before
                .tokens_cache_written
                .saturating_add(usage.cache_write_tokens),
            turns: before.turns.saturating_add(u64::from(ends_turn)),
            last_context,
            estimated,
            name: self.state.name.clone(),
            named: self.state.named,
            requests: before.requests,
            delivered: before.delivered,
            cal_bytes: before.cal_bytes,
            cal_tokens: before.cal_tokens,
            in_out_estimated: before.in_out_estimated,
        })
    }

    /// The session's cost and whether some request was unpriced, once an
    /// answer with `usage` (none: estimated, or nothing counted) is in.
    pub(super) fn cost_after(&self, usage: Option<Usage>) -> (u64, bool) {
        let before = &self.state.totals;
        let Some(u) = usage.filter(|u| *u != Usage::default()) else {
            return (before.cost, before.unpriced);
        };
        match self.prices() {
            Some(prices) => {
                let tokens = crate::models::Tokens {
                    input: u.prompt_tokens,
                    cached: u.cache_read_tokens,
                    written: u.cache_write_tokens,
                    output: u.completion_tokens,
                };
                (
                    before.cost.saturating_add(prices.cost(tokens)),
                    before.unpriced,
                )
            }
            None => (before.cost, before.unpriced || !self.offline()),
        }
    }

    /// Whether answers come from a file, offline (no price to know).
    pub(super) fn offline(&self) -> bool {
        matches!(self.state.provider.as_str(), "scripted" | "replay")
    }
}

/// A result for each call that will never get one now.
fn interrupted_results(open: &[ToolCall], now: OffsetDateTime) -> Vec<Record> {
    open.iter()
        .map(|c| {
            let text = format!(
                "error: interrupted before {} finished; it may or may not have run",
                c.name
            );
            Record::Message(Message::tool(now, c.id.clone(), text))
        })
        .collect()
}
