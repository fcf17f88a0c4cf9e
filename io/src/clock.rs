//! The one place that reads the clock and makes ids.
//!
//! `REVOLVE_NOW` (RFC 3339) pins the clock for tests and golden files: it
//! starts there and advances one second per reading, like jj's test clock.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

use time::format_description::well_known::Rfc3339;
use time::macros::format_description;
use time::OffsetDateTime;

static TICKS: AtomicU64 = AtomicU64::new(0);

/// Now, in UTC, to the second.
pub fn now() -> OffsetDateTime {
    if let Some(pinned) = std::env::var("REVOLVE_NOW")
        .ok()
        .and_then(|v| OffsetDateTime::parse(&v, &Rfc3339).ok())
    {
        let tick = TICKS.fetch_add(1, Ordering::Relaxed);
        return pinned + time::Duration::seconds(tick as i64);
    }
    let now = OffsetDateTime::now_utc();
    now.replace_nanosecond(0).unwrap_or(now)
}

/// A new session id: the start time, then six random hex digits, so ids sort
/// by age and never collide in practice (`20261202-102606-1a2b3c`).
pub fn session_id(now: OffsetDateTime) -> String {
    let stamp = now
        .format(format_description!(
            "[year][month][day]-[hour][minute][second]"
        ))
        .unwrap_or_default();
    let mut h = RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_i128(OffsetDateTime::now_utc().unix_timestamp_nanos());
    h.write_u64(TICKS.fetch_add(1, Ordering::Relaxed));
    format!("{stamp}-{:06x}", h.finish() & 0xff_ffff)
}
