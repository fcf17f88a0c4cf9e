//! revolve's shell: everything that touches the world. It executes the
//! core's commands and turns their outcomes into inputs; it holds no
//! decisions (no thresholds, no prompts, no "should we").
//!
//! * [`paths`]: state and config roots, the project key and slug.
//! * [`log`]: appending and reading session logs, listing summaries.
//! * [`files`]: making revolve's own files and folders; errors that name them.
//! * [`fsx`]: atomic writes (temp file, fsync, rename) and lock files.
//! * [`regular`]: opening files that must be regular, without blocking.
//! * [`registry`]: which sessions are running (OS file locks).
//! * [`store`]: the sessions of a directory: listing, naming, creating.
//! * [`index`]: the listing cache's file format.
//! * [`clock`]: the clock and session ids.
//! * [`interrupt`]: Ctrl-C as a flag.
//! * [`provider`]: model APIs (OpenAI-compatible, scripted): the
//!   `revolve-provider` crate, re-exported.
//! * [`inbox`]: messages delivered to a running session, on disk until logged.
//! * [`goal`]: the standing goal's file, `goal.json`, read and saved atomically.
//! * [`memory`]: memory directories: locating, loading, seeding, the project
//!   directory, atomic writes for `remember`, snapshots before a rewrite.
//! * [`edit`]: file edits executed: confined opens, the content store,
//!   atomic writes that keep a file's mode, rewind restores.
//! * [`tools`]: the built-in tools, executed (confined reads, grep, shell).
//! * [`track`]: what a `shell` command changed in its git repository.
//! * [`group`]: the process group of a shell command, killed whole.
//!
//! Platforms: unix (Linux, macOS). Signals, process groups, file modes and
//! file identities are unix APIs, each behind `cfg(unix)`; anywhere else the
//! crate refuses to build.

#[cfg(not(unix))]
compile_error!("revolve supports Linux and macOS (unix); Windows is not supported yet");

pub mod clock;
pub mod edit;
pub mod files;
pub mod fsx;
pub mod goal;
#[cfg(unix)]
pub mod group;
pub mod inbox;
pub mod index;
#[cfg(unix)]
pub mod interrupt;
pub mod log;
pub mod memory;
pub mod paths;
pub mod refine;
pub mod registry;
pub mod regular;
pub mod store;
pub mod tools;
pub mod track;

pub use revolve_provider as provider;
