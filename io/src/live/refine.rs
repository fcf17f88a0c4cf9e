//! `/refine`, run: the model reads the whole session (in parts when it is
//! larger than the window), or on its own what the session added since the
//! last refinement (one request; see `revolve_core::refine::auto_range`),
//! and the memory files, and its usable changes are snapshotted and written
//! through the core.

use revolve_core::record::Record;
use revolve_core::refine;
use revolve_core::view;
use revolve_core::{Input, Request, State};
use revolve_store::{log, memory};

use crate::clock;

use super::ask::Asked;
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
        let (entry, pieces) = self.refined_entry(auto)?;
        self.drive(Input::Refined {
            auto,
            entry,
            pieces,
            now: clock::now(),
        })
    }

    /// Asks, validates and writes: the snapshot entry written, if any, and
    /// how many requests the refinement sent.
    fn refined_entry(&mut self, auto: bool) -> Result<(Option<String>, u64), Error> {
        let what = if auto {
            "automatic refinement"
        } else {
            "refinement"
        };
        let files = memory::load(&self.runtime.memory)
            .map_err(|e| Error::Runtime(format!("cannot read the memory files: {e}")))?;
        let state = self.state();
        let wire = revolve_core::request::Wire::of(&state.provider);
        let (model, first_seq) = (state.model.clone(), state.totals.requests);
        let session = state.name.clone().unwrap_or_else(|| state.id().to_owned());
        let messages = state.messages.len() as u64;
        // The session text of each request: a piece of `blocks` cut to
        // `budget`. On its own, what the session added since the last
        // refinement (after a compaction, from its notes on) as one block,
        // so one request: the compaction read the old files just now.
        let (blocks, budget, read) = if auto {
            let budget = refine::budget(
                state.window,
                &state.totals,
                refine::request(wire, &model, "", &files, clock::now())
                    .body
                    .len(),
            );
            let unrefined = refine::unrefined(state);
            let read = (refine::auto_range(unrefined, budget).len(), unrefined.len());
            let text = refine::auto_text(unrefined, budget);
            let budget = text.len();
            (vec![text], budget, Some(read))
        } else {
            let budget = refine::budget(
                state.window,
                &state.totals,
                refine::piece_request(wire, &model, "", (1, 2), &files, clock::now())
                    .body
                    .len(),
            );
            (self.chain_blocks()?, budget, None)
        };
        let pieces = refine::pieces(&blocks, budget);
        let of = pieces.len();
        let text_bytes: usize = blocks.iter().map(String::len).sum();
        let memory_bytes: usize = files.iter().map(|f| f.content.len()).sum();
        let input = revolve_core::compact::estimate(
            text_bytes + of * (memory_bytes + refine::PROMPT.len()),
            &state.totals,
        );
        if let Some(line) = revolve_core::compact::cost_line(what, of as u64, input) {
            self.front.notice(&line);
            let ask = self.runtime.confirm_costly && self.front.interactive();
            if ask
                && !self.front.confirm(&format!(
                    "refine now, sending {of} model requests? [y]es, [n]o: "
                ))
            {
                self.front
                    .notice(&format!("{what} declined; memory unchanged"));
                return Ok((None, 0));
            }
        }
        self.front.notice(&match read {
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
        });
        let mut current = files.clone();
        let mut all = Vec::new();
        let mut sent = 0u64;
        for (k, range) in pieces.into_iter().enumerate() {
            let part = if of > 1 {
                format!(" (part {} of {of})", k + 1)
            } else {
                String::new()
            };
            let text = refine::piece_text(&blocks[range], budget);
            let request =
                refine::piece_request(wire, &model, &text, (k + 1, of), &current, clock::now());
            // A refinement's requests count toward --max-cost too: the
            // core decides whether this one may go out.
            let tokens =
                revolve_core::compact::estimate(request.body.len(), &self.session.state().totals);
            if let Some(reason) = self.session.over_budget(tokens) {
                self.front.notice(&format!(
                    "{what}: {}; memory unchanged",
                    revolve_core::guard::describe(&reason)
                ));
                return Ok((None, sent));
            }
            // Numbered like every request of the session (the `refined`
            // record counts them).
            sent += 1;
            let request = Request {
                seq: first_seq.saturating_add(sent),
                ..request
            };
            let text = match self.ask(request, false) {
                Asked::Reply(reply) => reply.text,
                Asked::Failed { error, .. } if of == 1 => {
                    self.front.notice(&format!(
                        "{what} failed ({}); memory unchanged",
                        view::inert(&error)
                    ));
                    return Ok((None, sent));
                }
                Asked::Failed { error, .. } => {
                    self.front.notice(&format!(
                        "{what}{part} failed ({}); that part changes nothing",
                        view::inert(&error)
                    ));
                    continue;
                }
                Asked::Interrupted { .. } => {
                    self.front
                        .notice(&format!("{what} interrupted; memory unchanged"));
                    return Ok((None, sent));
                }
            };
            match refine::parse_reply(&text, &current) {
                Ok(changes) => {
                    current = refine::applied(&current, &changes);
                    all.extend(changes);
                }
                Err(why) if of == 1 => {
                    self.front.notice(&format!(
                        "{what}: the answer was not usable ({}); memory unchanged",
                        view::inert(&why)
                    ));
                    return Ok((None, sent));
                }
                Err(why) => self.front.notice(&format!(
                    "{what}{part}: the answer was not usable ({}); that part changes nothing",
                    view::inert(&why)
                )),
            }
        }
        let changes = refine::combined(&files, all);
        if changes.is_empty() {
            self.front.notice(&format!("{what}: nothing to change"));
            return Ok((None, sent));
        }
        let meta = refine::meta(&session, messages, auto, &changes, &files);
        // The core asks for the snapshot and the writes, then logs them.
        self.last_entry = None;
        self.drive(Input::ChangeMemory {
            entry: refine::stamp(clock::now()),
            by: if auto { "auto-refine" } else { "refine" }.into(),
            changes,
            meta: meta.clone(),
        })?;
        let Some(stamp) = self.last_entry.take() else {
            return Ok((None, sent));
        };
        self.front.notice(&format!(
            "{what}: memory changed (/refine undo takes it back)"
        ));
        for (file, change) in &meta.files {
            self.front.notice(&format!("    {file} — {change}"));
        }
        Ok((Some(stamp), sent))
    }

    /// The session's real content, every file of its chain folded (so
    /// pruned results stay pruned), the turns a compaction carried into the
    /// next file read once: what `/refine` asked for reads.
    fn chain_blocks(&self) -> Result<Vec<String>, Error> {
        let mut blocks = Vec::new();
        for (n, file) in self.store.chain(self.writer.path()).into_iter().enumerate() {
            let mut folded = State::default();
            let mut carried = 0;
            log::each_record(
                &file,
                |_, r| {
                    if let Record::Compacted(c) = &r {
                        if n > 0 {
                            carried = 1 + c.kept.len();
                        }
                    }
                    folded.apply(&r);
                },
                |_| {},
            )
            .map_err(|e| Error::at(&file, "cannot read", e))?;
            blocks.extend(folded.messages.iter().skip(carried).map(refine::block));
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
