//! What the sandbox costs a `shell` command (`cargo bench --bench
//! sandbox`): `true` run through the tool as a session runs it, unsandboxed
//! and under `workspace-write` with the network closed (Landlock rules
//! built, a `$TMPDIR` made and removed, the child restricting itself before
//! exec). Medians of 101 runs each, interleaved; the bound is 5 ms
//! more. Run without `--bench` it is a smoke run of 5.

mod common;

use std::time::{Duration, Instant};

use common::{median, ms, Scratch};
use revolve_core::sandbox::{self, Mode, Policy};
use revolve_core::tools::Tool;
use revolve_store::memory::MemoryDirs;
use revolve_tools::{self as tools, AgentInfo, Context, FileId};

fn main() {
    let (_, smoke) = common::scale();
    let scratch = Scratch::new("sandbox");
    let root = scratch.path("tree");
    std::fs::create_dir_all(&root).expect("the tree");
    let root = root.canonicalize().expect("a canonical root");
    let support = tools::sandbox::probe();
    println!(
        "sandbox bench: Landlock file rules {}, network rules {}",
        if support.files {
            "enforced"
        } else {
            "NOT available"
        },
        if support.network {
            "enforced"
        } else {
            "NOT available"
        },
    );
    let (sandboxed, _) = sandbox::policy(Mode::WorkspaceWrite, false, Vec::new(), support, false);
    let mem = scratch.path("mem");
    let ctx = |policy: Policy| Context {
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
        sandbox: policy,
    };
    let plain = ctx(Policy::off());
    let confined = ctx(sandboxed);
    let tool = Tool::Shell {
        command: "true".into(),
        timeout_s: 60,
        background: false,
    };
    let runs = if smoke { 5 } else { 101 };
    let (mut off, mut on): (Vec<Duration>, Vec<Duration>) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        for (ctx, times) in [(&plain, &mut off), (&confined, &mut on)] {
            let t = Instant::now();
            let out = tools::run(&tool, &[], ctx, &|| false);
            times.push(t.elapsed());
            assert!(out.output.starts_with("exit status: 0"), "{}", out.output);
        }
    }
    let (off, on) = (median(&mut off), median(&mut on));
    println!(
        "shell `true`: median {} unsandboxed, {} sandboxed ({} more) over {runs} runs",
        ms(off),
        ms(on),
        ms(on.saturating_sub(off))
    );
}
