//! Timing helpers and a scratch folder the benches share.

// Each bench uses its part of this module.
#![allow(dead_code)]

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

/// A folder under the temp dir, removed when dropped (also on a panic),
/// unless `REVOLVE_BENCH_KEEP` is set.
pub struct Scratch {
    dir: std::path::PathBuf,
}

impl Scratch {
    /// `revolve-bench-NAME-PID` under the temp dir, empty.
    pub fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("revolve-bench-{name}-{}", std::process::id()));
        std::fs::remove_dir_all(&dir).ok();
        std::fs::create_dir_all(&dir).expect("creating the scratch dir");
        Scratch { dir }
    }

    /// A path inside, its parent folders created.
    pub fn path(&self, rel: &str) -> std::path::PathBuf {
        let p = self.dir.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).ok();
        }
        p
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::env::var_os("REVOLVE_BENCH_KEEP").is_some() {
            println!("kept {}", self.dir.display());
        } else {
            std::fs::remove_dir_all(&self.dir).ok();
        }
    }
}
