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

/// xorshift64*: deterministic content, no dependency.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// A length between `lo` and `hi`, spread evenly on a log scale (many
    /// short ones, a long tail).
    pub fn log_uniform(&mut self, lo: usize, hi: usize) -> usize {
        let u = (self.next() >> 11) as f64 / (1u64 << 53) as f64;
        let (lo, hi) = ((lo as f64).ln(), (hi as f64).ln());
        (lo + u * (hi - lo)).exp() as usize
    }
}

/// The size factor `REVOLVE_BENCH_SCALE` asks for, and whether this is a
/// smoke run: `cargo bench` passes `--bench`; anything else that runs a
/// bench binary (`cargo test --all-targets`) gets a smoke run (scale 0.001)
/// unless a scale is set.
pub fn scale() -> (f64, bool) {
    let from_env = std::env::var("REVOLVE_BENCH_SCALE")
        .ok()
        .and_then(|s| s.trim().parse::<f64>().ok())
        .filter(|s| *s > 0.0);
    let smoke = from_env.is_none() && !std::env::args().any(|a| a == "--bench");
    (from_env.unwrap_or(if smoke { 0.001 } else { 1.0 }), smoke)
}

/// A duration in milliseconds, with enough digits for sub-millisecond ones.
pub fn ms(d: Duration) -> String {
    let m = d.as_secs_f64() * 1e3;
    if m >= 100.0 {
        format!("{m:.0} ms")
    } else if m >= 1.0 {
        format!("{m:.1} ms")
    } else {
        format!("{m:.4} ms")
    }
}

/// A file's size, 0 when it cannot be read.
pub fn file_size(path: &std::path::Path) -> u64 {
    path.metadata().map(|m| m.len()).unwrap_or(0)
}

/// This process's peak RSS (VmHWM from `/proc/self/status`), in KB.
pub fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The time generated sessions start at.
pub fn base_time() -> time::OffsetDateTime {
    time::macros::datetime!(2026-12-02 10:26:06 UTC)
}
