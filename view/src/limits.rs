//! The crate's mechanism limits: bounds of how things are shown, which
//! decide nothing about a session (those are core's, in `policy.rs`). The
//! CI policy check accepts numeric constants here.

/// How long a wait goes unshown: a model that answers within this many
/// milliseconds gets no spinner (no flicker on fast replies).
pub(crate) const WAITING_SHOWN_AFTER_MS: u64 = 300;

/// An export's bound on a tool result, a call's arguments or a system
/// prompt, in characters (head and tail kept, the middle left out).
pub(crate) const EXPORT_RESULT_CHARS: usize = 4_000;

/// An HTML export's bound on the same (the page folds them).
pub(crate) const EXPORT_HTML_RESULT_CHARS: usize = 16_000;

/// How many characters of a call's arguments its one line shows.
pub(crate) const EXPORT_BRIEF_CHARS: usize = 120;

/// The most points (and marks) the export's chart draws.
pub(crate) const CHART_POINTS: usize = 1_000;

/// The chart's size in CSS pixels.
pub(crate) const CHART_WIDTH: u32 = 1_000;
/// See [`CHART_WIDTH`].
pub(crate) const CHART_HEIGHT: u32 = 260;

/// How many sessions the `/resume` picker offers (the newest).
pub(crate) const PICKER_ROWS: usize = 20;

/// How many characters of a session's first prompt a picker row shows.
pub(crate) const PICKER_PROMPT_CHARS: usize = 60;
