//! The MCP clients' own mechanism limits: how much of an answer is read,
//! how often a listener looks. Decisions (timeouts, when to refresh) are
//! core's (`revolve_core::policy`).

/// The most of an authorization server's answer read, in bytes
/// (metadata, a registration, a token): a hostile one cannot fill memory.
pub(crate) const OAUTH_BODY_BYTES: u64 = 1024 * 1024;

/// The longest request line (and header block) the loopback listener
/// reads from the browser, in bytes.
pub(crate) const CALLBACK_REQUEST_BYTES: u64 = 16 * 1024;

/// How often the loopback listener looks for the browser, in
/// milliseconds.
pub(crate) const CALLBACK_POLL_MS: u64 = 50;

/// How long one browser connection to the listener may take to send its
/// request, in seconds.
pub(crate) const CALLBACK_READ_S: u64 = 10;
