//! revolve's shell: everything that touches the world. It executes the
//! core's commands and turns their outcomes into inputs; it holds no
//! decisions (no thresholds, no prompts, no "should we").
//!
//! This crate is the shell proper, the one that runs a session: [`live`]
//! feeds the core's state machine and executes the commands it returns,
//! showing and asking through a [`front::Front`] (the binary's terminal or
//! JSON stream, a test's recorder). The rest of the shell lives in crates
//! of their own, one job each, that the binary names itself (nothing is
//! re-exported here, so the dependency graph says what `repl` uses):
//!
//! * [`live`]: a running session, the command executor (one executor per
//!   command family: `live/{log,model,tool,file,memory,user}.rs`).
//! * [`front`]: what the executor shows and asks, as a trait.
//! * [`error`]: why a run stopped, and its exit code.
//! * [`clock`]: the clock and session ids.
//! * [`interrupt`]: Ctrl-C and termination signals as flags.
//! * `revolve-store`: revolve's own files, written atomically.
//! * `revolve-provider`: the model APIs.
//! * `revolve-tools`: the tools, executed.
//! * `revolve-mcp`: the MCP clients.
//! * `revolve-view`: what the user reads (status, transcripts, listings).
//! * The fake model server for tests is `revolve-testkit`, a
//!   dev-dependency only: the shipped binary carries no test server.
//!
//! Platforms: unix (Linux, macOS). Signals, process groups, file modes and
//! file identities are unix APIs, each behind `cfg(unix)`; anywhere else the
//! crate refuses to build.

// Unsafe only at the sites that say `#[allow(unsafe_code)]`, each with a
// `SAFETY:` comment.
#![deny(unsafe_code)]

#[cfg(not(unix))]
compile_error!("revolve supports Linux and macOS (unix); Windows is not supported yet");

pub mod approval;
pub mod clock;
pub mod error;
pub mod front;
#[cfg(unix)]
pub mod interrupt;
#[cfg(unix)]
pub mod live;
#[cfg(unix)]
pub mod task;
