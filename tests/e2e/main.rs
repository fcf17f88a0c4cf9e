//! The end-to-end tests, one binary: each former `tests/*.rs` is a module,
//! so the binary under test and the harness are linked once rather than
//! once per file. The harness is `tests/common` (its pty helper also serves
//! the benches).

#[path = "../common/mod.rs"]
mod common;

mod adversarial;
mod audit;
mod audit_edits;
mod audit_numbers;
mod audit_provider;
mod audit_reads;
mod audit_rewind;
mod audit_shell;
mod audit_write;
mod boundaries;
mod cli;
mod commands;
mod compaction;
mod completions;
mod config;
mod cost;
mod docs;
mod edit_kills;
mod edits;
mod export;
mod faults;
mod gemini;
mod goals;
mod guards;
mod habits;
mod help;
mod hints;
mod hooks;
mod images;
mod instructions;
mod json_schemas;
mod mcp;
mod mcp_bounds;
mod mcp_oauth;
mod memory;
mod messages;
mod models;
mod permissions;
mod plan;
mod real_server;
mod real_tools;
mod recorded;
mod refine;
mod replay;
mod responses;
mod sandbox;
mod scripting;
mod sessions;
mod sessions_found;
mod shells;
mod skills;
mod stream_json;
mod subagents;
mod terminal;
mod tools;
mod trust;
mod turns;
mod web;
mod web_search;
mod window;
