//! An edit of a big file and its rewind (`cargo bench --bench edit`): one
//! `edit_file` replacement in the middle of a 10 MB text file, through the
//! pieces a session uses, each timed on its own:
//!
//! 1. **decide**: what core does once the shell opened the file: the
//!    UTF-8 check, [`edit::replace`] and the [`edit::diff`] the user
//!    approves and the `edit` record keeps;
//! 2. **stage**: the content store keeps both contents ([`Blobs::put`],
//!    sha256 and an atomic write each; a fresh store every run, so nothing
//!    is found stored already);
//! 3. **write**: the new content, by temp file, fsync and rename
//!    ([`edit::write_atomic`]);
//! 4. **restore**: the rewind puts the old content back ([`edit::restore`]:
//!    what the file holds is stored first, then the old content is read
//!    from the store, checked and written).
//!
//! For comparison, **decide** for a `write_file` that changes every line
//! of the same file (a change past `edit::DIFF_LINES` lines, shown as one
//! block).
//!
//! Then the peak RSS of one whole edit and rewind (the file read as an
//! edit opens it, then the four steps), in a child process (this bench run
//! again) that reads its own `VmHWM` from `/proc/self/status` at the end;
//! elsewhere than on Linux it is not measured.
//!
//! Every figure is the median of 9 runs on a warm page cache. Sizes scale
//! with `REVOLVE_BENCH_SCALE`; without `--bench` (`cargo test
//! --all-targets`) it is a tiny smoke run. Files go to a folder under the
//! temp dir that is removed afterwards (`REVOLVE_BENCH_KEEP=1` keeps it).

mod common;

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{median, ms, Rng, Scratch};
use revolve_core::edit;
use revolve_core::record::Restore;
use revolve_tools::edit::{self as io_edit, Blobs};

/// The file the figures are for.
const FULL_BYTES: usize = 10 * 1024 * 1024;
const MB: f64 = 1024.0 * 1024.0;
/// Runs per figure.
const RUNS: usize = 9;
/// Set in the child that measures the peak RSS: the folder to work in.
const CHILD: &str = "REVOLVE_BENCH_EDIT_CHILD";

fn main() {
    if let Some(dir) = std::env::var_os(CHILD) {
        child(Path::new(&dir));
        return;
    }
    let (scale, smoke) = common::scale();
    let bytes = ((FULL_BYTES as f64 * scale) as usize).max(4_096);
    let scratch = Scratch::new("edit");
    let file = scratch.path("tree/big.txt");
    let before = text(bytes);
    let (old, new) = change(&before);
    println!(
        "edit bench: one edit_file replacement in a {:.1} MB file of {} lines{}",
        before.len() as f64 / MB,
        before.lines().count(),
        if smoke {
            " (smoke run: no --bench argument)"
        } else {
            ""
        }
    );

    // 1. decide.
    let mut after = String::new();
    let mut diff = String::new();
    let mut decide = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let t = Instant::now();
        let (a, d) = decided(before.as_bytes(), &old, &new);
        decide.push(t.elapsed());
        (after, diff) = (a, d);
    }
    assert_eq!(edit::stat(&diff), (1, 1), "one line changed: {diff}");
    // `before_hash` is what open took of the content before (untimed).
    let (before_hash, after_hash) = (
        io_edit::hash(before.as_bytes()),
        io_edit::hash(after.as_bytes()),
    );

    // 2. stage, 3. write, 4. restore; the file starts as it was each run.
    let mut stage = Vec::with_capacity(RUNS);
    let mut write = Vec::with_capacity(RUNS);
    let mut restore = Vec::with_capacity(RUNS);
    for run in 0..RUNS {
        std::fs::write(&file, &before).expect("writing the file");
        let blobs = Blobs::new(&scratch.path(&format!("state-{run}")));
        let t = Instant::now();
        let staged = io_edit::stage(
            &blobs,
            Some((before.as_bytes(), before_hash.as_str())),
            after.as_bytes(),
        );
        stage.push(t.elapsed());
        assert_eq!(staged.expect("staging"), after_hash);

        let t = Instant::now();
        io_edit::write_atomic(&file, after.as_bytes(), Some(0o644)).expect("writing");
        write.push(t.elapsed());

        let back = [Restore {
            path: file.to_string_lossy().into_owned(),
            from: Some(after_hash.clone()),
            to: Some(before_hash.clone()),
        }];
        let t = Instant::now();
        let errors = io_edit::restore(&blobs, &back);
        restore.push(t.elapsed());
        assert!(errors.is_empty(), "{errors:?}");
    }
    assert_eq!(
        std::fs::read(&file).expect("reading the file back"),
        before.as_bytes(),
        "the rewind gave the exact bytes back"
    );
    let total: Duration = [&mut decide, &mut stage, &mut write, &mut restore]
        .into_iter()
        .map(|t| median(t))
        .sum();
    for (what, times) in [
        ("decide (replace + diff)", &decide),
        ("stage (both blobs)", &stage),
        ("write", &write),
        ("restore", &restore),
    ] {
        println!(
            "{what:24} median {:>9} [min {}, max {}, {RUNS} runs]",
            ms(times[RUNS / 2]),
            ms(times[0]),
            ms(times[RUNS - 1])
        );
    }
    println!("{:24} {:>16}", "edit and rewind, total", ms(total));

    // For comparison: a rewrite of every line.
    let rewritten: String = before.lines().map(|l| format!("{l};\n")).collect();
    let mut rewrite = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let t = Instant::now();
        let content = edit::keep_endings(Some(before.as_bytes()), &rewritten);
        let d = edit::diff("big.txt", Some(&before), &content);
        rewrite.push(t.elapsed());
        black_box(d);
    }
    median(&mut rewrite);
    println!(
        "{:24} median {:>9} [min {}, max {}, {RUNS} runs]",
        "decide, every line",
        ms(rewrite[RUNS / 2]),
        ms(rewrite[0]),
        ms(rewrite[RUNS - 1])
    );

    // The peak RSS of a whole edit and rewind, in a fresh process.
    match peak(&scratch, &before, &old, &new) {
        Some(kb) => println!(
            "peak RSS of one edit and rewind (child process): {:.1} MB ({:.1}x the file)",
            kb as f64 * 1024.0 / MB,
            kb as f64 * 1024.0 / before.len() as f64
        ),
        None => println!("peak RSS of one edit and rewind: not measured"),
    }
    drop(black_box(after));
}

/// What core decides once the shell opened the file, as
/// `Session::decide` does it: the new content and its diff.
fn decided(bytes: &[u8], old: &str, new: &str) -> (String, String) {
    let text = std::str::from_utf8(bytes).expect("UTF-8 text");
    let after = edit::replace(text, old, new, false, "big.txt").expect("one match");
    assert!(bytes != after.as_bytes());
    let before = String::from_utf8_lossy(bytes);
    let diff = edit::diff("big.txt", Some(&before), &after);
    (after, diff)
}

/// Source-like text of about `bytes` bytes: numbered lines of varied
/// length, every one different.
fn text(bytes: usize) -> String {
    let words = [
        "let",
        "mut",
        "value",
        "=",
        "self.state",
        "match",
        "Some(x)",
        "=>",
        "{",
        "}",
        "return",
        "Ok(())",
        "// a comment",
        "fn",
        "impl",
        "&str",
        "usize",
    ];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut out = String::with_capacity(bytes + 200);
    let mut n = 0u64;
    while out.len() < bytes {
        n += 1;
        out.push_str(&format!("{n:07} "));
        for _ in 0..rng.below(12) {
            out.push_str(words[rng.below(words.len() as u64) as usize]);
            out.push(' ');
        }
        out.push('\n');
    }
    out
}

/// The replacement: the whole middle line, by a new one.
fn change(text: &str) -> (String, String) {
    let middle = text.len() / 2;
    let start = text[..middle].rfind('\n').map_or(0, |i| i + 1);
    let end = start + text[start..].find('\n').expect("a line end");
    let old = text[start..end].to_owned();
    (old.clone(), format!("{old} // changed by the bench"))
}

/// Runs this bench again as a child that does one edit and rewind of the
/// same file and reports its own peak RSS, in KB.
fn peak(scratch: &Scratch, before: &str, old: &str, new: &str) -> Option<u64> {
    let file = scratch.path("child/big.txt");
    let dir = file.parent()?;
    std::fs::write(&file, before).ok()?;
    std::fs::write(dir.join("old"), old).ok()?;
    std::fs::write(dir.join("new"), new).ok()?;
    let exe = std::env::current_exe().ok()?;
    let out = Command::new(exe).env(CHILD, dir).output().ok()?;
    if !out.status.success() {
        println!(
            "  the child failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        return None;
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM "))
        .and_then(|kb| kb.trim().parse().ok())
}

/// The child: open (read) the file, decide, stage, write, restore; then
/// print `VmHWM <KB>` (Linux) or nothing.
fn child(dir: &Path) {
    let read = |name: &str| std::fs::read(dir.join(name)).expect("a file the parent wrote");
    let file: PathBuf = dir.join("big.txt");
    let old = String::from_utf8(read("old")).expect("UTF-8");
    let new = String::from_utf8(read("new")).expect("UTF-8");
    let blobs = Blobs::new(&dir.join("state"));
    let before = read("big.txt");
    let (after, diff) = decided(&before, &old, &new);
    black_box(&diff);
    // What open does: the content and its hash.
    let before_hash = io_edit::hash(&before);
    let after_hash =
        io_edit::stage(&blobs, Some((&before, &before_hash)), after.as_bytes()).expect("staging");
    io_edit::write_atomic(&file, after.as_bytes(), Some(0o644)).expect("writing");
    let back = [Restore {
        path: file.to_string_lossy().into_owned(),
        from: Some(after_hash),
        to: Some(io_edit::hash(&before)),
    }];
    drop(after);
    let errors = io_edit::restore(&blobs, &back);
    assert!(errors.is_empty(), "{errors:?}");
    #[cfg(target_os = "linux")]
    if let Some(kb) = common::peak_rss() {
        println!("VmHWM {kb}");
    }
}
