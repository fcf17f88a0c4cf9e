//! Rendering an answer's Markdown as it streams (`cargo bench --bench
//! render`): 1 MB of Markdown (headings, emphasis, lists, a table, code
//! fences in Rust and Python, plain paragraphs) fed to
//! [`revolve::render::Markdown`] in pieces of 1 to 16 bytes, as a model's
//! tokens arrive, with the colours of a terminal. The figure is the median
//! of 9 runs and the throughput it makes; a model streams a few kilobytes a
//! second, so anything over a megabyte a second keeps up. Without
//! `--bench` (`cargo test --all-targets`) it is a tiny smoke run. Two
//! figures, side by side: every code line coloured (what rendering did
//! before colour had a budget, see `repl/highlight.rs`), and as rendered
//! (target: 1 MB in ≤ 0.15 s); then how long the first line of a fence
//! waits. Re-run on a quiet machine: `cargo bench --bench render`.

mod common;

use std::hint::black_box;
use std::time::{Duration, Instant};

use common::{median, ms};
use revolve::render::Markdown;

/// One answer of the mix, about 700 bytes.
const ANSWER: &str = "## Where the time goes\n\n\
Most of it is in **the listing** and in `read_dir`; *a few* callers wait on it.\n\n\
- the cache is read once\n- each file is stat'ed only when ~~changed~~ claimed\n  1. nested step\n\n\
> A quote with a [link](https://example.com/x) in it.\n\n\
| file | lines | share |\n|------|------:|:-----:|\n| store.rs | 512 | 40% |\n| log.rs | 300 | 23% |\n\n\
```rust\nfn list(dir: &Path) -> io::Result<Vec<Summary>> {\n    // A comment that says why.\n    let names = std::fs::read_dir(dir)?;\n    Ok(names.filter_map(|e| e.ok()).map(summary).collect())\n}\n```\n\n\
```python\ndef main():\n    print(\"hello\", 42)\n```\n\n\
A plain paragraph line that goes on for a while, as answers do, with nothing to render in it at all.\n\n";

fn main() {
    let smoke = !std::env::args().any(|a| a == "--bench");
    let size = if smoke { 20_000 } else { 1_000_000 };
    let mut text = String::with_capacity(size + ANSWER.len());
    while text.len() < size {
        text.push_str(ANSWER);
    }
    // Pieces of 1 to 16 bytes, on character boundaries, fixed by a seed.
    let mut pieces = Vec::new();
    let mut at = 0;
    let mut seed = 0x9e37_79b9_u32;
    while at < text.len() {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        let mut end = (at + 1 + (seed % 16) as usize).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        pieces.push(&text[at..end]);
        at = end;
    }
    let runs = if smoke { 1 } else { 9 };
    // Side by side: every code line coloured (as before colour had a
    // budget), then as answers are rendered now.
    for (label, every) in [("every line coloured", true), ("as rendered", false)] {
        let mut times: Vec<Duration> = Vec::new();
        let mut bytes_out = 0;
        let mut coloured = 0;
        for _ in 0..runs {
            let started = Instant::now();
            let mut markdown = Markdown::default();
            if every {
                markdown = markdown.colour_every_line();
            }
            let mut out = 0;
            let mut lines = 0;
            for piece in &pieces {
                let done = black_box(markdown.push(piece));
                out += done.len();
                lines += done.matches("\x1b[38;2;").count();
            }
            out += markdown.finish().len();
            times.push(started.elapsed());
            bytes_out = out;
            coloured = lines;
        }
        let t = median(&mut times);
        let mb_s = text.len() as f64 / 1e6 / t.as_secs_f64();
        println!(
            "render ({label}): {} bytes of Markdown in {} pieces -> {bytes_out} bytes \
             ({coloured} coloured spans): median {} ({mb_s:.1} MB/s)",
            text.len(),
            pieces.len(),
            ms(t)
        );
    }
    first_lines();
}

/// How long the first line of a fence waits, from the piece that ends it
/// to its output, and whether it came coloured: a fence in a language the
/// runs above compiled, then another, then one in a language not seen
/// before (compiled on a thread of its own while its lines show plain;
/// an interactive run starts that thread for the common languages at its
/// start, see `repl/highlight.rs`).
fn first_lines() {
    let mut markdown = Markdown::default();
    for (what, lang) in [
        ("a first fence (rust, compiled by the runs above)", "rust"),
        ("a fence in a language seen before (rust)", "rust"),
        ("a fence in a language not seen before (ruby)", "ruby"),
    ] {
        markdown.push(&format!("Some text.\n```{lang}\n"));
        markdown.push("def x = 1");
        let t = Instant::now();
        let shown = markdown.push(" # a comment\n");
        let took = t.elapsed();
        assert!(shown.contains("comment"), "the line is shown: {shown:?}");
        markdown.push("```\n");
        let how = if shown.contains("\x1b[38;2;") {
            "coloured"
        } else {
            "plain: its language was compiling"
        };
        println!(
            "first code line of {what}: shown after {} ({how})",
            ms(took)
        );
    }
}
