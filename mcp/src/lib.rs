//! MCP clients: JSON-RPC 2.0 to Model Context Protocol servers over stdio
//! (a child process) and streamable HTTP (POST, answered with JSON or an
//! SSE stream, with the `Mcp-Session-Id` header). No decisions: which
//! servers run, what is offered and whether a call may run are core's
//! (`revolve_core::mcp`).
//!
//! The client is our own and synchronous: revolve has no async runtime,
//! and the official Rust SDK (`rmcp`) needs tokio. It speaks the few
//! messages revolve needs (`initialize` with the version negotiated,
//! `notifications/initialized`, `tools/list` with pagination, `tools/call`,
//! `notifications/tools/list_changed`, `ping` from the server,
//! `notifications/cancelled` on a timeout) over `serde_json::Value`;
//! `rust-mcp-schema`'s typed structs are one set per protocol version,
//! which a client negotiating among four versions would have to convert
//! between for the handful of fields it reads.
//!
//! [`Hub`] runs the configured servers: each starts on a thread of its
//! own at once, so they start in parallel with the user's first prompt,
//! and the session waits for them only when it needs their tools.

#![deny(unsafe_code)]

mod client;
mod http;
mod hub;
mod limits;
pub mod oauth;
mod stdio;

pub use client::{Client, Error};
pub use hub::{Hub, Spec, Status};

/// The protocol versions this client speaks, newest first; it asks for
/// the first.
pub const VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];
