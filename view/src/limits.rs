//! The crate's mechanism limits: bounds of how things are shown, which
//! decide nothing about a session (those are core's, in `policy.rs`). The
//! CI policy check accepts numeric constants here.

/// How long a wait goes unshown: a model that answers within this many
/// milliseconds gets no spinner (no flicker on fast replies).
pub(crate) const WAITING_SHOWN_AFTER_MS: u64 = 300;
