//! Refining the memory from the session (`/refine`, or on its own when
//! due), driven like a compaction: [`UserInput::Refine`] brings the memory
//! files (and, for `/refine`, the session's whole chain); the core decides
//! the parts, asks about a costly one, sends each part as a
//! [`ModelCommand::Refine`] logged first as `refining` (so `replay --requests`
//! gives it back), judges each answer, and asks for one snapshot and the
//! writes ([`MemoryCommand::Snapshot`]); `refined` ends it, whatever happened.
//!
//! What the user is told is decided here too: a failed, unusable or
//! interrupted single request changes nothing; a failed part of several
//! changes nothing of its own and the others go on.
//!
//! [`UserInput::Refine`]: super::Input::Refine

use std::ops::Range;

use time::OffsetDateTime;

use super::{Command, Input, Outcome, Phase, Reply, Session};
use super::{MemoryCommand, MemoryInput, ModelCommand, ModelInput, UserCommand, UserInput};
use crate::compact;
use crate::guard;
use crate::memory::{MemoryFile, SnapshotMeta};
use crate::record::{ChangedBy, MemoryChanged, Record, Refined, Refining};
use crate::refine::{self, Change};
use crate::request::Wire;
use crate::text as view;

/// A refinement under way.
#[derive(Clone, Debug)]
pub(super) struct Refinement {
    auto: bool,
    /// The memory as it was when the refinement began.
    files: Vec<MemoryFile>,
    /// The memory as the parts answered so far leave it.
    current: Vec<MemoryFile>,
    /// The session text, one block per message (or, on its own, one
    /// block: what the session added since the last refinement).
    blocks: Vec<String>,
    /// The bytes of session text one request carries.
    budget: usize,
    /// The parts: runs of `blocks`.
    parts: Vec<Range<usize>>,
    /// The next part to send: also how many requests were sent.
    next: usize,
    /// On its own: how many of the messages since the last refinement it
    /// reads, of how many.
    read: Option<(usize, usize)>,
    /// The changes of the parts answered so far, in order.
    changes: Vec<Change>,
    /// How many messages the session held (for the snapshot).
    messages: u64,
    /// What the snapshot asked for says of each file.
    meta: Option<SnapshotMeta>,
    stage: Stage,
    /// The token estimate of the part in flight, counted when the server
    /// reports no usage.
    sent_estimate: u64,
}

/// What the refinement waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// The user's answer to [`UserCommand::Confirm`].
    Confirming,
    /// The answer to a [`ModelCommand::Refine`].
    Asking,
    /// The snapshot and the writes ([`MemoryCommand::Snapshot`]).
    Writing,
}

impl Refinement {
    /// Who a snapshot and its `memory_changed` name as having changed the
    /// memory.
    fn by(&self) -> ChangedBy {
        if self.auto {
            ChangedBy::AutoRefine
        } else {
            ChangedBy::Refine
        }
    }

    fn what(&self) -> &'static str {
        if self.auto {
            "automatic refinement"
        } else {
            "refinement"
        }
    }

    fn of(&self) -> usize {
        self.parts.len()
    }
}

impl Session {
    /// Whether a refinement waits for the answer to its request.
    pub(super) fn refine_asking(&self) -> bool {
        self.refining_in(Stage::Asking)
    }

    /// Whether a refinement waits for the user's yes or no.
    pub(super) fn refine_confirming(&self) -> bool {
        self.refining_in(Stage::Confirming)
    }

    /// Whether a refinement waits for its snapshot and writes.
    pub(super) fn refine_writing(&self) -> bool {
        self.refining_in(Stage::Writing)
    }

    fn refining_in(&self, stage: Stage) -> bool {
        self.refinement().is_some_and(|r| r.stage == stage)
    }

    fn refinement(&self) -> Option<&Refinement> {
        match &self.phase {
            Phase::Refining(r) => Some(r),
            _ => None,
        }
    }

    fn refinement_mut(&mut self) -> Option<&mut Refinement> {
        match &mut self.phase {
            Phase::Refining(r) => Some(r),
            _ => None,
        }
    }

    /// An answer while refining: each is taken in the stage that waits
    /// for it, and any other falls to the one arm that ignores it.
    pub(super) fn refinement_input(&mut self, input: Input) -> (Vec<Command>, Outcome) {
        match input {
            Input::User(UserInput::Confirmed { yes, now }) if self.refine_confirming() => {
                (self.refine_confirmed(yes, now), Outcome::Going)
            }
            Input::Model(ModelInput::RefineReply { reply, now }) if self.refine_asking() => {
                (self.refine_reply(reply, now), Outcome::Going)
            }
            Input::Model(ModelInput::RefineFailed { error, now }) if self.refine_asking() => {
                (self.refine_failed(&error, now), Outcome::Going)
            }
            Input::User(UserInput::Interrupted { now, .. }) if self.refine_asking() => {
                (self.refine_interrupted(now), Outcome::Interrupted)
            }
            Input::Memory(MemoryInput::Changed { entry, now }) if self.refine_writing() => {
                (self.refine_written(entry, now), Outcome::Going)
            }
            other => self.ignored(&other),
        }
    }

    /// [`super::Input::Refine`]: plans the parts and sends the first, or
    /// asks first when it is costly.
    pub(super) fn refine(
        &mut self,
        auto: bool,
        files: Vec<MemoryFile>,
        chain: Vec<String>,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        let state = &self.state;
        // A session with nothing said yet has nothing to teach: no paid
        // request for it.
        if !auto && state.messages.is_empty() && state.totals.turns == 0 {
            return vec![Command::show(
                "/refine: this session has no turns yet; nothing to refine, nothing sent".into(),
            )];
        }
        let wire = Wire::of(&state.provider);
        let model = state.model.as_str();
        let limit = state.answer_limit();
        // The session text of each request: a piece of `blocks` cut to
        // `budget`. On its own, what the session added since the last
        // refinement (after a compaction, from its notes on) as one block,
        // so one request: the compaction read the old files just now.
        let (blocks, budget, read) = if auto {
            let base = refine::request(wire, model, "", &files, now, limit)
                .body
                .len();
            let budget = refine::budget(state.window, &state.totals, base);
            let unrefined = refine::unrefined(state);
            let read = (refine::auto_range(unrefined, budget).len(), unrefined.len());
            let text = refine::auto_text(unrefined, budget);
            let budget = text.len();
            (vec![text], budget, Some(read))
        } else {
            let base = refine::piece_request(wire, model, "", (1, 2), &files, now, limit)
                .body
                .len();
            let budget = refine::budget(state.window, &state.totals, base);
            (chain, budget, None)
        };
        let parts = refine::pieces(&blocks, budget);
        let of = parts.len();
        let text_bytes: usize = blocks.iter().map(String::len).sum();
        let memory_bytes: usize = files.iter().map(|f| f.content.len()).sum();
        let input = compact::estimate(
            text_bytes + of * (memory_bytes + refine::PROMPT.len()),
            &state.totals,
        );
        let refinement = Refinement {
            auto,
            current: files.clone(),
            files,
            blocks,
            budget,
            parts,
            next: 0,
            read,
            changes: Vec::new(),
            messages: state.messages.len() as u64,
            meta: None,
            stage: Stage::Asking,
            sent_estimate: 0,
        };
        let what = refinement.what();
        self.phase = Phase::Refining(Box::new(refinement));
        let mut cmds = Vec::new();
        if let Some(line) = compact::cost_line(what, of as u64, input) {
            if self.settings.refuses_costly() {
                let said = crate::guard::costly_unasked(what, of as u64, input);
                let mut cmds = vec![Command::show(said)];
                cmds.extend(self.refine_end(None, now));
                return cmds;
            }
            cmds.push(Command::show(line));
            if self.settings.asks_costly() {
                if let Some(r) = self.refinement_mut() {
                    r.stage = Stage::Confirming;
                }
                cmds.push(Command::User(UserCommand::Confirm(format!(
                    "refine now, sending {of} model requests? [y]es, [n]o: "
                ))));
                return cmds;
            }
        }
        cmds.extend(self.refine_begin(now));
        cmds
    }

    /// The user's answer to a costly refinement.
    pub(super) fn refine_confirmed(&mut self, yes: bool, now: OffsetDateTime) -> Vec<Command> {
        let Some(r) = self.refinement_mut() else {
            return Vec::new();
        };
        r.stage = Stage::Asking;
        if !yes {
            let said = format!("{} declined; memory unchanged", r.what());
            let mut cmds = vec![Command::show(said)];
            cmds.extend(self.refine_unmade("declined".into(), now));
            return cmds;
        }
        self.refine_begin(now)
    }

    /// Says what the model reads, and sends the first part.
    fn refine_begin(&mut self, now: OffsetDateTime) -> Vec<Command> {
        let Some(r) = self.refinement() else {
            return Vec::new();
        };
        let (what, of) = (r.what(), r.of());
        let said = match r.read {
            Some((read, new)) if read < new => format!(
                "{what}: the model reads the newest {read} of the {new} messages since the last \
                 refinement (the rest do not fit one request) and the memory files…"
            ),
            Some(_) => format!(
                "{what}: the model reads what the session added since the last refinement and \
                 the memory files…"
            ),
            None if of > 1 => format!(
                "{what}: the session is larger than the window; the model reads it in {of} parts"
            ),
            None => format!("{what}: the model reads the session and the memory files…"),
        };
        let mut cmds = vec![Command::show(said)];
        cmds.extend(self.refine_next(now));
        cmds
    }

    /// Sends the next part, logged first; or, after the last, asks for the
    /// writes.
    fn refine_next(&mut self, now: OffsetDateTime) -> Vec<Command> {
        let Some(r) = self.refinement() else {
            return Vec::new();
        };
        if r.next >= r.of() {
            return self.refine_conclude(now);
        }
        let (k, of) = (r.next, r.of());
        let text = refine::piece_text(&r.blocks[r.parts[k].clone()], r.budget);
        let wire = Wire::of(&self.state.provider);
        let limit = self.state.answer_limit();
        let request = refine::piece_request(
            wire,
            &self.state.model,
            &text,
            (k + 1, of),
            &r.current,
            now,
            limit,
        );
        // A refinement's requests count toward --max-cost too.
        let tokens = compact::estimate(request.body.weight(), &self.state.totals);
        if let Some(reason) = self.over_budget(tokens) {
            let said = format!(
                "{}: {}; memory unchanged",
                r.what(),
                guard::describe(&reason)
            );
            let mut cmds = vec![Command::show(said)];
            cmds.extend(self.refine_unmade(guard::describe(&reason), now));
            return cmds;
        }
        let auto = r.auto;
        if let Some(r) = self.refinement_mut() {
            r.next += 1;
            r.stage = Stage::Asking;
            r.sent_estimate = tokens;
        }
        let body = request.body.text();
        // Logged before it goes out, numbered like every request of the
        // session: the record counts it.
        let mut cmds = self.append(vec![Record::Refining(Refining {
            at: now,
            auto,
            part: (k + 1) as u64,
            of: of as u64,
            body: body.clone(),
        })]);
        let seq = self.state.totals.requests;
        cmds.push(Command::Model(ModelCommand::Refine(
            self.state.refinement_request(&body, seq),
        )));
        cmds
    }

    /// The answer to a part: its spend counted, its changes kept when
    /// usable; then the next part.
    pub(super) fn refine_reply(&mut self, reply: Reply, now: OffsetDateTime) -> Vec<Command> {
        if !self.refine_asking() {
            return Vec::new();
        }
        let mut cmds = Vec::new();
        // What the refinement spent counts in the session's totals:
        // estimated when the server reports no usage.
        if reply.usage != Some(super::Usage::default()) {
            let estimate = self.refinement_mut().map_or(0, |r| r.sent_estimate);
            cmds.extend(self.spent_aside_of(&reply, estimate, now));
        }
        let Some(r) = self.refinement_mut() else {
            return cmds;
        };
        let (what, of, k) = (r.what(), r.of(), r.next);
        match refine::parse_reply(&reply.text, &r.current) {
            Ok(changes) => {
                r.current = refine::applied(&r.current, &changes);
                r.changes.extend(changes);
            }
            Err(why) if of == 1 => {
                cmds.push(Command::show(format!(
                    "{what}: the answer was not usable ({}); memory unchanged",
                    view::inert(&why)
                )));
                let unmade = format!("the answer was not usable ({})", view::inert(&why));
                cmds.extend(self.refine_unmade(unmade, now));
                return cmds;
            }
            Err(why) => cmds.push(Command::show(format!(
                "{what} (part {k} of {of}): the answer was not usable ({}); that part changes \
                 nothing",
                view::inert(&why)
            ))),
        }
        cmds.extend(self.refine_next(now));
        cmds
    }

    /// A part's request failed: one alone ends the refinement; one of
    /// several changes nothing and the others go on.
    pub(super) fn refine_failed(&mut self, error: &str, now: OffsetDateTime) -> Vec<Command> {
        let Some(r) = self.refinement().filter(|_| self.refine_asking()) else {
            return Vec::new();
        };
        let (what, of, k) = (r.what(), r.of(), r.next);
        if of == 1 {
            let mut cmds = vec![Command::show(format!(
                "{what} failed ({}); memory unchanged",
                view::inert(error)
            ))];
            cmds.extend(self.refine_unmade(format!("failed ({})", view::inert(error)), now));
            return cmds;
        }
        let mut cmds = vec![Command::show(format!(
            "{what} (part {k} of {of}) failed ({}); that part changes nothing",
            view::inert(error)
        ))];
        cmds.extend(self.refine_next(now));
        cmds
    }

    /// The user interrupted a part's request: nothing changes.
    pub(super) fn refine_interrupted(&mut self, now: OffsetDateTime) -> Vec<Command> {
        let Some(r) = self.refinement() else {
            return Vec::new();
        };
        let mut cmds = vec![Command::show(format!(
            "{} interrupted; memory unchanged",
            r.what()
        ))];
        cmds.extend(self.refine_unmade("interrupted".into(), now));
        cmds
    }

    /// Every part answered: the changes of all, as one, are snapshotted
    /// and written; none, and the refinement ends.
    fn refine_conclude(&mut self, now: OffsetDateTime) -> Vec<Command> {
        let session = (self.state.name.clone()).unwrap_or_else(|| self.state.id().to_owned());
        let Some(r) = self.refinement_mut() else {
            return Vec::new();
        };
        let changes = refine::combined(&r.files, std::mem::take(&mut r.changes));
        if changes.is_empty() {
            let said = format!("{}: nothing to change", r.what());
            let mut cmds = vec![Command::show(said)];
            cmds.extend(self.refine_end(None, now));
            return cmds;
        }
        r.stage = Stage::Writing;
        let meta = refine::meta(&session, r.messages, r.auto, &changes, &r.files);
        r.meta = Some(meta.clone());
        vec![Command::Memory(MemoryCommand::Snapshot {
            entry: refine::stamp(now),
            by: r.by(),
            changes,
            meta,
        })]
    }

    /// The snapshot was taken and the files written: logged, said, and the
    /// refinement ends with its entry.
    pub(super) fn refine_written(&mut self, entry: String, now: OffsetDateTime) -> Vec<Command> {
        let what = self.refinement().map_or("refinement", Refinement::what);
        let by = self.refinement().map_or(ChangedBy::Refine, Refinement::by);
        let meta = self.refinement_mut().and_then(|r| r.meta.take());
        // What the record says of each file, as the snapshot's meta does.
        let files = meta
            .iter()
            .flat_map(|m| &m.files)
            .map(|(f, c)| format!("{f}: {c}"))
            .collect();
        let mut cmds = self.append(vec![Record::MemoryChanged(MemoryChanged {
            at: now,
            entry: entry.clone(),
            by,
            files,
        })]);
        cmds.push(Command::show(format!(
            "{what}: memory changed (/refine undo takes it back)"
        )));
        for (file, change) in meta.iter().flat_map(|m| &m.files) {
            cmds.push(Command::show(format!("    {file} — {change}")));
        }
        cmds.extend(self.refine_end(Some(entry), now));
        cmds
    }

    /// The refinement ends, logged with its entry (if any) and how many
    /// requests it sent, whatever happened: the automatic trigger knows.
    fn refine_end(&mut self, entry: Option<String>, now: OffsetDateTime) -> Vec<Command> {
        self.refine_close(entry, None, now)
    }

    /// The refinement ends before it ran to its end (`unmade` says why:
    /// declined, failed, interrupted, over budget), the memory unchanged.
    fn refine_unmade(&mut self, unmade: String, now: OffsetDateTime) -> Vec<Command> {
        self.refine_close(None, Some(unmade), now)
    }

    fn refine_close(
        &mut self,
        entry: Option<String>,
        unmade: Option<String>,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        let r = match std::mem::take(&mut self.phase) {
            Phase::Refining(r) => r,
            other => {
                self.phase = other;
                return Vec::new();
            }
        };
        let mut cmds = self.append(vec![Record::Refined(Refined {
            at: now,
            auto: r.auto,
            entry,
            pieces: r.next as u64,
            unmade,
        })]);
        cmds.push(Command::sync());
        cmds
    }
}

#[cfg(test)]
mod tests;
