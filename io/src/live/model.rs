//! The model family, executed: a request sent on a worker thread, its
//! text streamed as it comes (a turn's) or not (a summary's, a
//! refinement's), Ctrl-C watched, and what came back turned into the
//! core's input; a count asked of the server.

use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

use crate::{clock, interrupt};
use revolve_core::{Input, ModelCommand, ModelInput, Request, UserInput};
use revolve_provider::ProviderError;

use super::Live;
use crate::error::Error;
use crate::front::Front;

impl<F: Front> Live<F> {
    /// Executes one [`ModelCommand`]: the input that answers it.
    pub(super) fn execute_model(&mut self, cmd: ModelCommand) -> Result<Input, Error> {
        Ok(match cmd {
            ModelCommand::Call(request) => self.call(request)?,
            ModelCommand::Summarize(request) => self.summarize(request),
            ModelCommand::Refine(request) => self.refine_request(request),
            ModelCommand::Count(request) => {
                let tokens = self.runtime.provider.count(&request);
                Input::Model(ModelInput::Counted {
                    tokens,
                    now: clock::now(),
                })
            }
        })
    }

    /// Sends a request and turns what came back into the core's input.
    fn call(&mut self, request: Request) -> Result<Input, Error> {
        let now = clock::now;
        Ok(match self.ask(request, true) {
            Asked::Reply(reply) => Input::Model(ModelInput::Reply { reply, now: now() }),
            // An overflow is one whether or not some text streamed
            // before it (that text is dropped: the request is sent again
            // under the lowered window).
            Asked::Failed {
                error,
                overflow: Some(o),
                ..
            } => Input::Model(ModelInput::Overflowed {
                error,
                limit: o.limit,
                asked: o.asked,
                now: now(),
            }),
            Asked::Failed { error, partial, .. } => Input::Model(ModelInput::Failed {
                error,
                partial,
                now: now(),
            }),
            Asked::Interrupted { partial } => Input::User(UserInput::Interrupted {
                partial,
                now: now(),
            }),
        })
    }

    /// Asks for a compaction's working notes (not shown as they come).
    fn summarize(&mut self, request: Request) -> Input {
        let now = clock::now;
        match self.ask(request, false) {
            // The core judges the answer (tool calls or no text: no notes).
            Asked::Reply(reply) => Input::Model(ModelInput::Summarized {
                reply,
                new_id: clock::session_id(now()),
                now: now(),
            }),
            Asked::Failed {
                error,
                overflow: Some(o),
                ..
            } => Input::Model(ModelInput::Overflowed {
                error,
                limit: o.limit,
                asked: o.asked,
                now: now(),
            }),
            Asked::Failed { error, .. } => {
                Input::Model(ModelInput::SummaryFailed { error, now: now() })
            }
            Asked::Interrupted { partial } => Input::User(UserInput::Interrupted {
                partial,
                now: now(),
            }),
        }
    }

    /// Sends a refinement's request (its answer is not shown).
    fn refine_request(&mut self, request: Request) -> Input {
        let now = clock::now;
        match self.ask(request, false) {
            Asked::Reply(reply) => Input::Model(ModelInput::RefineReply { reply, now: now() }),
            Asked::Failed { error, .. } => {
                Input::Model(ModelInput::RefineFailed { error, now: now() })
            }
            Asked::Interrupted { .. } => Input::User(UserInput::Interrupted {
                partial: String::new(),
                now: now(),
            }),
        }
    }

    /// Sends a request on a worker thread, streaming its text to stdout when
    /// `stream`, and watching for Ctrl-C. An interrupted request is
    /// abandoned: its worker finishes on its own and nobody reads its answer.
    fn ask(&mut self, request: Request, stream: bool) -> Asked {
        enum Event {
            Text(String),
            Done(Result<revolve_core::Reply, ProviderError>),
        }
        let (tx, rx) = mpsc::channel();
        let provider = Arc::clone(&self.runtime.provider);
        std::thread::spawn(move || {
            interrupt::watch();
            let text = tx.clone();
            let result = provider.complete(&request, &mut |t| {
                text.send(Event::Text(t.to_owned())).ok();
            });
            // Let go of the history it shares with the state before the
            // state hears of the answer, which it then appends without a
            // copy.
            drop(request);
            tx.send(Event::Done(result)).ok();
        });
        let mut partial = String::new();
        let started = std::time::Instant::now();
        let asked = loop {
            match rx.recv_timeout(Duration::from_millis(25)) {
                Ok(Event::Text(t)) => {
                    partial.push_str(&t);
                    if stream {
                        self.front.text(&t);
                    }
                }
                Ok(Event::Done(Ok(reply))) => break Asked::Reply(reply),
                Ok(Event::Done(Err(e))) => {
                    let overflow = e.overflow();
                    let partial = if e.partial.is_empty() {
                        partial
                    } else {
                        e.partial
                    };
                    if interrupt::take() {
                        // Ctrl-C ended a retry wait: the user interrupted.
                        break Asked::Interrupted { partial };
                    }
                    break Asked::Failed {
                        error: e.message,
                        partial,
                        overflow,
                    };
                }
                Err(RecvTimeoutError::Timeout) if interrupt::take() => {
                    interrupt::abandon();
                    break Asked::Interrupted { partial };
                }
                Err(RecvTimeoutError::Timeout) => {
                    if stream && partial.is_empty() {
                        self.front.waiting(started.elapsed());
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let error = "the model client stopped without an answer".to_owned();
                    break Asked::Failed {
                        error,
                        partial,
                        overflow: None,
                    };
                }
            }
        };
        self.front.stop_waiting();
        let shown = match &asked {
            Asked::Reply(reply) => &reply.text,
            Asked::Failed { partial, .. } | Asked::Interrupted { partial } => partial,
        };
        if stream {
            self.front.answer_end(shown);
        }
        asked
    }
}

/// What came back from a request.
enum Asked {
    Reply(revolve_core::Reply),
    Failed {
        error: String,
        partial: String,
        overflow: Option<revolve_core::overflow::Overflow>,
    },
    Interrupted {
        partial: String,
    },
}
