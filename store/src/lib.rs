//! revolve's store: every file revolve keeps of its own, and how it is
//! written. Session logs and their listing, which sessions run, the inbox,
//! memory and its snapshots, the standing goal, under the state and config
//! roots. Every writer goes through [`fsx`] (temp file, fsync, rename; lock
//! files). It holds no decisions: what to write and when is core's.
//!
//! * [`error`]: why the store failed, one enum with the line the user reads.
//! * [`paths`]: state and config roots, the project key and slug.
//! * [`log`]: appending and reading session logs, listing summaries.
//! * [`files`]: making revolve's own files and folders; errors that name them.
//! * [`git`]: revolve's own `git`, with the repository's config-driven
//!   execution (fsmonitor, hooks, filters) disabled.
//! * [`fsx`]: atomic writes (temp file, fsync, rename) and lock files.
//! * [`regular`]: opening files that must be regular, without blocking.
//! * [`intree`]: reading a file because it sits in the repository: never
//!   through a link out of it, regular files only, bounded.
//! * [`registry`]: which sessions are running (OS file locks).
//! * [`store`]: the sessions of a directory: listing, naming, finding, creating.
//! * [`index`]: the listing cache's file format.
//! * [`inbox`]: messages delivered to a running session, on disk until logged.
//! * [`goal`]: the standing goal's file, `goal.json`, read and saved atomically.
//! * [`instructions`]: the project's AGENTS.md (or CLAUDE.md) files, read bounded.
//! * [`memory`]: memory directories: locating, loading, seeding, the project
//!   directory, atomic writes for `remember`.
//! * [`resume`]: picking a session up again (`Store::resume`).
//! * [`refine`]: memory snapshots before a rewrite, their history and undo.
//! * [`skills`]: finding skills: folders with a SKILL.md, read bounded.

#![forbid(unsafe_code)]

#[cfg(not(unix))]
compile_error!("revolve supports Linux and macOS (unix); Windows is not supported yet");

pub mod commands;
pub mod error;
pub mod files;
pub mod fsx;
pub mod git;
pub mod goal;
pub mod images;
pub mod inbox;
pub mod index;
pub mod instructions;
pub mod intree;
pub mod log;
pub mod memory;
pub mod paths;
pub mod refine;
pub mod registry;
pub mod regular;
pub mod resume;
pub mod skills;
pub mod store;
pub mod subagents;
