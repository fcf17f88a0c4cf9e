//! Timing helpers the benches share.

use std::hint::black_box;
use std::time::{Duration, Instant};

/// Runs `f` `runs` times and returns each run's duration.
pub fn repeat<T>(runs: usize, mut f: impl FnMut() -> T) -> Vec<Duration> {
    (0..runs)
        .map(|_| {
            let t = Instant::now();
            black_box(f());
            t.elapsed()
        })
        .collect()
}

/// The median; leaves `times` sorted.
pub fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    let n = times.len();
    if !n.is_multiple_of(2) {
        times[n / 2]
    } else {
        (times[n / 2 - 1] + times[n / 2]) / 2
    }
}
