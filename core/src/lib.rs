//! revolve's core: the session log's records, the fold that turns them into
//! state, and the turn state machine that decides what happens next.
//!
//! Nothing here touches files, the network, processes, the environment,
//! threads, randomness or a clock. Time and ids arrive as inputs; everything
//! that must happen in the world leaves as a [`Command`]. The shell
//! (`revolve-io`) executes commands and feeds their outcomes back; see
//! [`session`] for the order in which it must do so.
//!
//! * [`record`]: the log format, one [`Record`] per line.
//! * [`state`]: the fold, [`State::apply`], and [`state::requests`], which
//!   rebuilds every model request from a log.
//! * [`session`]: the live state machine, [`Session::handle`].
//! * [`request`]: the exact request bodies, for both wire protocols.
//! * [`tools`]: tool definitions, argument checking, head-and-tail cuts.
//! * [`guard`]: the repeat guard and the tool-round cap.
//! * [`hooks`]: hook configuration, matching and decisions.
//! * [`plan`]: the `update_plan` checklist.
//! * [`policy`]: every bound and limit the shell enforces.
//! * [`overflow`]: the servers' answers that a request did not fit.
//! * [`retry`]: when a failed request is sent again.
//! * [`piped`]: what PROMPT and piped stdin make of a run without the REPL.
//! * [`names`]: generated session names.
//! * [`config`]: where each setting comes from, provider presets, the
//!   config file.
//! * [`models`]: the known models' windows and prices, as data.
//! * [`summary`]: what a listing knows of a session.
//! * [`text`]: times, token counts, text made safe for a terminal.

#![forbid(unsafe_code)]

pub mod agents;
pub mod approval;
pub mod commands;
pub mod compact;
pub mod config;
pub mod edit;
pub mod fixture;
pub mod goal;
pub mod guard;
pub mod hooks;
pub mod images;
pub mod init;
pub mod instructions;
pub mod mcp;
pub mod memory;
pub mod models;
pub mod names;
pub mod overflow;
pub mod piped;
pub mod plan;
pub mod policy;
pub mod prompt;
pub mod record;
pub mod refine;
pub mod request;
pub mod retry;
pub mod rules;
pub mod sandbox;
pub mod session;
pub mod skills;
pub mod state;
pub mod subagents;
pub mod summary;
pub mod text;
pub mod tools;
pub mod web;

pub use record::{Header, Message, Record, Role, ToolCall, Totals};
pub use request::Request;
pub use session::{
    Command, Delivery, FileCommand, FileInput, Input, LogCommand, MemoryCommand, MemoryInput,
    ModelCommand, ModelInput, Outcome, Reply, Session, Settings, Step, ToolCommand, ToolInput,
    TurnContext, Usage, UserCommand, UserInput,
};
pub use state::State;
