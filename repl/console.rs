//! The binary's [`Front`]: output through a [`Sink`] (text or JSON
//! events), questions through [`Approvals`] (the terminal, or the flags
//! without one).

use std::time::Duration;

use revolve_core::edit::Answer;
use revolve_core::record::ToolCall;
use revolve_core::tools::Tool;
use revolve_core::Totals;
use revolve_io::front::Front;

use crate::approve::Approvals;
use crate::error::Error;
use crate::output::{Format, Sink};

/// A session as this binary runs it.
pub type Live = revolve_io::live::Live<Console>;

/// This process's stdout and stderr, and its user.
pub struct Console {
    pub sink: Sink,
    pub approvals: Approvals,
    /// Where the session's window came from, for `/status` (`flag`,
    /// `server`, `the session's`, …; empty when not told).
    pub window_source: String,
    /// Notices are dropped while set: the settings a run starts with
    /// (`--effort`) are not news from the next request on.
    pub hushed: bool,
}

impl Console {
    /// Output in `format`; questions by `approvals`.
    pub fn new(format: Format, approvals: Approvals) -> Console {
        Console {
            sink: Sink::new(format),
            approvals,
            window_source: String::new(),
            hushed: false,
        }
    }
}

/// Starts the run's output: an `init` event in stream-json.
pub fn begin(live: &mut Live) {
    let state = live.state();
    let (id, name, model) = (
        state.id().to_owned(),
        state.name().clone(),
        state.model().clone(),
    );
    let cwd = live.store().cwd.to_string_lossy().into_owned();
    live.front_mut()
        .sink
        .init(&id, name.as_deref(), &model, &cwd);
}

/// Ends the run's output: a `done` or `error` event in stream-json.
pub fn end(live: &mut Live, result: &Result<(), Error>) {
    let state = live.state();
    let id = state.id().to_owned();
    let name = state.name().clone();
    let log = live.path().to_string_lossy().into_owned();
    live.front_mut()
        .sink
        .end(result, &id, name.as_deref(), &log);
}

impl Front for Console {
    fn interactive(&self) -> bool {
        self.approvals.interactive
    }

    fn notice(&mut self, text: &str) {
        if self.hushed {
            return;
        }
        self.sink.notice(text);
    }

    fn text(&mut self, text: &str) {
        self.sink.text(text);
    }

    fn answer_end(&mut self, shown: &str) {
        self.sink.answer_end(shown);
    }

    fn waiting(&mut self, elapsed: Duration) {
        self.sink.waiting(elapsed);
    }

    fn stop_waiting(&mut self) {
        self.sink.stop_waiting();
    }

    fn watch(&self) -> revolve_tools::Watch {
        if self.sink.live_view() {
            crate::progress::command_view(crate::progress::columns())
        } else {
            revolve_tools::Watch::default()
        }
    }

    fn tool_call(&mut self, id: &str, tool: &Tool, arguments: &str) {
        self.sink.tool_call(id, tool, arguments);
    }

    fn tool_result(&mut self, id: &str, tool: &Tool, output: &str, interrupted: bool) {
        self.sink.tool_result(id, tool, output, interrupted);
    }

    fn logged(&mut self, id: &str) {
        self.sink.logged(id);
    }

    fn not_run(&mut self, call: &ToolCall, output: &str) {
        self.sink.not_run(call, output);
    }

    fn settled(&mut self) {
        self.sink.release();
    }

    fn totals(&mut self, totals: &Totals) {
        self.sink.totals(totals);
    }

    fn plan(&mut self, plan: &revolve_core::plan::Plan) {
        self.sink.plan(plan);
    }

    fn closed(&self) -> bool {
        self.sink.closed()
    }

    fn ask_shell(&mut self, command: &str) -> Answer {
        self.approvals.ask_shell(command)
    }

    fn ask_fetch(&mut self, url: &str, host: &str) -> Answer {
        self.approvals.ask_fetch(url, host)
    }

    fn ask_edit(&mut self, path: &str, diff: &str, once: bool) -> Answer {
        self.approvals.ask_edit(path, diff, once)
    }

    fn ask_grant(&mut self, path: &str, reason: Option<&str>) -> bool {
        self.approvals.ask_grant(path, reason)
    }

    fn confirm(&mut self, question: &str) -> bool {
        self.approvals.confirm(question)
    }
}
