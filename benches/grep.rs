//! `grep` over a generated tree of 100,000 files (`cargo bench --bench
//! grep`): 80,000 source files in 400 folders, and 20,000 generated files
//! under `dist/`, which `.gitignore` lists (ripgrep's users would never have
//! it searched). The tool runs in process, as a session runs it; every
//! figure is the median of five runs on a warm page cache. Sizes scale with
//! `REVOLVE_BENCH_SCALE`; run without `--bench` it is a tiny smoke run.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{median, ms, Scratch};
use revolve_core::tools::Tool;
use revolve_store::memory::MemoryDirs;
use revolve_tools::{self as tools, AgentInfo, Context, FileId};

fn main() {
    let (scale, smoke) = common::scale();
    let scratch = Scratch::new("grep");
    let root = scratch.path("tree");
    let files = if smoke {
        200
    } else {
        (100_000.0 * scale) as usize
    };
    let started = Instant::now();
    write_tree(&root, files);
    println!(
        "grep bench: {files} files ({} under the ignored dist/) written in {} s",
        files / 5,
        started.elapsed().as_secs()
    );
    let root = root.canonicalize().expect("a canonical root");
    let mem = scratch.path("mem");
    let ctx = Context {
        root: root.clone(),
        root_id: FileId::of(&root),
        info: AgentInfo::default(),
        memory: MemoryDirs {
            global: mem.join("g"),
            project: mem.join("p/memory"),
            project_dir: mem.join("p"),
            workspace: None,
        },
        messages: 0,
        now: common::base_time(),
        watch: Default::default(),
        wire: revolve_core::request::Wire::OpenAi,
        sandbox: revolve_core::sandbox::Policy::off(),
    };
    for (what, pattern) in [
        ("a rare literal", "needle_4242"),
        ("a common word", "fn"),
        ("a case-insensitive class", "(?i)todo:[[:space:]]+[a-z]+"),
    ] {
        let tool = Tool::Grep {
            pattern: pattern.into(),
            path: None,
        };
        let runs = if smoke { 1 } else { 5 };
        let mut times: Vec<Duration> = Vec::new();
        let mut lines = 0;
        for _ in 0..runs {
            let t = Instant::now();
            let out = tools::run(&tool, &[], &ctx, &|| false);
            times.push(t.elapsed());
            lines = out.output.lines().count();
        }
        println!(
            "grep {what} ({pattern}): median {} of {runs}, {lines} lines of output",
            ms(median(&mut times))
        );
    }
}

/// `files` files: four fifths in `src/dNNN/`, a fifth in `dist/` (listed in
/// `.gitignore`), each some 30 lines of code-like text; one holds the rare
/// needle.
fn write_tree(root: &Path, files: usize) {
    std::fs::create_dir_all(root).expect("the tree");
    std::fs::write(root.join(".gitignore"), "dist/\n").expect(".gitignore");
    let body = |i: usize| {
        let mut text = String::new();
        for l in 0..30 {
            text.push_str(&format!(
                "fn item_{i}_{l}(x: u32) -> u32 {{ x + {l} }} // TODO: tidy {}\n",
                if (i + l).is_multiple_of(7) {
                    "later"
                } else {
                    ""
                }
            ));
        }
        if i == files / 3 {
            text.push_str("const needle_4242: u32 = 1;\n");
        }
        text
    };
    let sources = files - files / 5;
    for i in 0..files {
        let path: PathBuf = if i < sources {
            root.join(format!("src/d{:03}/f{i}.rs", i % 400))
        } else {
            root.join(format!("dist/d{:03}/gen{i}.js", i % 100))
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("a folder");
        }
        std::fs::write(&path, body(i)).expect("a file");
    }
}
