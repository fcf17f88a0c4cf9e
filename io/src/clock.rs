//! The one place that reads the clock and makes ids.
//!
//! `REVOLVE_NOW` (RFC 3339) pins the clock for tests and golden files: it
//! starts there and advances one second per reading, like jj's test clock.
//! `REVOLVE_ID_SEED` (a number) seeds session ids the same way: the six
//! hex digits come from the seed and a counter, so a run makes the same
//! ids every time (two processes given one seed make the same ids: give
//! each run its own).

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
    let seed = std::env::var("REVOLVE_ID_SEED")
        .ok()
        .and_then(|v| v.parse::<u64>().ok());
    format!("{stamp}-{:06x}", suffix(seed) & 0xff_ffff)
}

/// The `REVOLVE_ID_SEED` a child process started for `call` gets when
/// this run's ids are seeded (each run its own seed: see the module doc),
/// derived from this run's seed and the call; `None` unseeded.
pub fn child_seed(call: &str) -> Option<String> {
    let seed = std::env::var("REVOLVE_ID_SEED")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())?;
    let mut hash = seed ^ 0x9e37_79b9_7f4a_7c15; // not policy: a mixing constant
    for b in call.bytes() {
        hash = (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3); // not policy: FNV prime
    }
    Some(hash.to_string())
}

/// The hex digits of an id: from the seed and a counter when seeded, else
/// from a random hasher, the process and the time.
fn suffix(seed: Option<u64>) -> u64 {
    static IDS: AtomicU64 = AtomicU64::new(0);
    if let Some(seed) = seed {
        // splitmix64 of the seed and the id's number.
        let mut z = seed
            .wrapping_add(IDS.fetch_add(1, Ordering::Relaxed).wrapping_add(1))
            .wrapping_mul(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        return z ^ (z >> 31);
    }
    let mut h = RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_i128(OffsetDateTime::now_utc().unix_timestamp_nanos());
    h.write_u64(TICKS.fetch_add(1, Ordering::Relaxed));
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::suffix;

    #[test]
    fn seeded_ids_differ_from_each_other_and_unseeded_ones_from_the_seeded() {
        let a = suffix(Some(7));
        let b = suffix(Some(7));
        assert_ne!(a, b, "the counter moves on");
        assert_ne!(suffix(None), suffix(None));
    }
}
