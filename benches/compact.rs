//! Compaction's performance: planning a compaction of a 1,000,000-message
//! history (`revolve_core::compact::Plan::of`, target under 100 ms), and, for
//! scale, folding the file such a compaction leaves behind (every message,
//! then its `pruned`, `compacting` and `continued` records) and the fresh
//! file the session goes on in (`REVOLVE_BENCH_ONLY=plan`). Then what a
//! compaction and the refinement after it send to the model (see
//! `compact/requests.rs`): the compaction of one window's worth of history
//! at 4k, 32k and 128k in process (`REVOLVE_BENCH_ONLY=window`), and the
//! resume of a ~100 MB session under 128k with the release binary against
//! the fake server (`REVOLVE_BENCH_ONLY=resume`; skipped without
//! `cargo build --release`, `REVOLVE_BENCH_BIN` names another binary). The
//! request figures end in one table. Last, the same resume by revolve and
//! by Codex CLI side by side, against the same fake
//! (`REVOLVE_BENCH_ONLY=codex`, see `compact/codex.rs`; skipped without
//! codex).
//!
//! `cargo bench --bench compact` runs at full size. `REVOLVE_BENCH_SCALE=0.1`
//! shrinks the history for a quick run (the target stays that of the full
//! size). Run without `--bench` (as `cargo test --all-targets` does) it is a
//! tiny smoke run. Every figure of the planning part is the median of
//! several runs, on a history built in memory (no file is read: the fold's
//! I/O is measured by the spine bench).

#[path = "compact/codex.rs"]
mod codex;
mod common;
#[path = "compact/requests.rs"]
mod requests;

use std::hint::black_box;
use std::time::{Duration, Instant};

use common::{median, ms, repeat};
use revolve_core::compact::{self, Plan};
use revolve_core::record::{
    Compacted, Compacting, Context, Continued, Header, Message, Pruned, Role, ToolCall, Totals,
};
use revolve_core::tools;
use revolve_core::{Record, State};
use time::macros::datetime;

/// The history the target is set for.
const FULL_MESSAGES: usize = 1_000_000;
/// What planning it may take.
const TARGET: Duration = Duration::from_millis(100);
/// A big tool result: over the default `prune-result-chars`.
const BIG_CHARS: usize = 20_000;
/// One tool result in this many is big.
const BIG_EVERY: usize = 200;

fn main() {
    let config = Config::from_env();
    println!(
        "compact bench: scale {}{}",
        config.scale,
        if config.smoke {
            " (smoke run: no --bench argument)"
        } else {
            ""
        }
    );
    if config.runs("plan") {
        plan(&config);
    }
    let mut rows = Vec::new();
    if config.runs("window") {
        requests::windows(&config, &mut rows);
    }
    if config.runs("resume") {
        requests::resume(&config, &mut rows);
    }
    if config.runs("codex") {
        codex::compare(&config);
    }
    requests::print(&rows);
}

/// Planning a compaction of a long history, and folding what it leaves.
fn plan(config: &Config) {
    let n = ((FULL_MESSAGES as f64 * config.scale) as usize).max(1_000);
    let started = Instant::now();
    let history = history(n);
    let shape = Shape::of(&history);
    println!(
        "generated {} messages in {} ms: {} turns, {} tool results ({} over {} chars), {:.0} MB of text",
        thousands(history.len()),
        started.elapsed().as_millis(),
        thousands(shape.turns),
        thousands(shape.results),
        thousands(shape.big),
        compact::PRUNE_CHARS,
        shape.bytes as f64 / 1e6
    );

    // Sanity: the plan keeps the last three turns and prunes every big
    // result before them.
    let plan = Plan::of(&history, compact::PRUNE_CHARS);
    let kept_turns = history[plan.cut..]
        .iter()
        .filter(|m| m.role == Role::User)
        .count();
    assert_eq!(kept_turns, compact::KEEP_TURNS, "three turns kept");
    let big_before_cut = history[..plan.cut]
        .iter()
        .filter(|m| m.role == Role::Tool && m.content.len() > compact::PRUNE_CHARS)
        .count();
    assert_eq!(plan.prune.len(), big_before_cut, "every big result pruned");

    // 1. Planning.
    let runs = if config.smoke { 3 } else { 21 };
    black_box(Plan::of(&history, compact::PRUNE_CHARS));
    let mut times = repeat(runs, || Plan::of(&history, compact::PRUNE_CHARS));
    let plan_median = median(&mut times);
    println!(
        "plan {} messages: median {} (target < {} ms){} [min {}, max {}, {runs} runs; cut at {}, {} to prune]",
        thousands(history.len()),
        ms(plan_median),
        TARGET.as_millis(),
        verdict(config, plan_median <= TARGET),
        ms(times[0]),
        ms(times[times.len() - 1]),
        thousands(plan.cut),
        thousands(plan.prune.len()),
    );

    // Where the time goes: the same plan with the byte length checked
    // before characters are counted (a string of at most `limit` bytes has
    // at most `limit` characters), so short results cost nothing.
    // (200: the slack `compact::prunable` allows above head and tail.)
    let limit = compact::PRUNE_CHARS.max(tools::HEAD_CHARS + tools::TAIL_CHARS + 200);
    assert_eq!(quick_plan(&history, limit), plan, "the same plan");
    black_box(quick_plan(&history, limit));
    let mut times = repeat(runs, || quick_plan(&history, limit));
    println!(
        "  for comparison, the same plan checking byte lengths first: median {}",
        ms(median(&mut times))
    );

    // 2. Folding the file the compaction left: the history, then pruned,
    //    compacting and continued.
    let (old, new) = files(history, &plan);
    let runs = if config.smoke { 3 } else { 5 };
    let fold_runs = |records: &[Record], runs: usize| {
        let mut times = Vec::with_capacity(runs);
        for _ in 0..runs {
            let t = Instant::now();
            let state = State::fold(records);
            times.push(t.elapsed());
            // Freeing the state is not part of a fold.
            drop(black_box(state));
        }
        times
    };
    let before_pruned = old.len() - 3;
    let mut head = fold_runs(&old[..before_pruned], runs);
    let mut whole = fold_runs(&old, runs);
    let state = State::fold(&old);
    assert_eq!(state.continued().as_deref(), Some("s2"));
    let pruned_now = state
        .messages()
        .iter()
        .filter(|m| m.content.contains("characters cut by compaction"))
        .count();
    assert_eq!(pruned_now, plan.prune.len(), "the fold repeats the cut");
    drop(state);
    let (head, whole) = (median(&mut head), median(&mut whole));
    println!(
        "fold the compacted file ({} records): median {} [{} of it the pruned record, {} ids]",
        thousands(old.len()),
        ms(whole),
        ms(whole.saturating_sub(head)),
        thousands(plan.prune.len()),
    );

    // 3. Folding the fresh file: notes and three kept turns.
    let mut times = fold_runs(&new, if config.smoke { 3 } else { 101 });
    let state = State::fold(&new);
    assert_eq!(state.messages().len(), 1 + new_kept(&new));
    println!(
        "fold the fresh file ({} records, {} messages): median {}",
        new.len(),
        state.messages().len(),
        ms(median(&mut times))
    );
    if config.scale != 1.0 {
        println!("(scaled run: the target is for {FULL_MESSAGES} messages)");
    }
}

/// Sizes, scaled by `REVOLVE_BENCH_SCALE` (as in the spine bench); the
/// part `REVOLVE_BENCH_ONLY` names (`plan`, `window`, `resume`), else all;
/// the binary the resume runs.
struct Config {
    scale: f64,
    smoke: bool,
    only: Option<String>,
    bin: Option<std::path::PathBuf>,
}

impl Config {
    fn from_env() -> Config {
        let (scale, smoke) = common::scale();
        Config {
            scale,
            smoke,
            only: std::env::var("REVOLVE_BENCH_ONLY").ok(),
            bin: requests::binary(),
        }
    }

    fn runs(&self, part: &str) -> bool {
        self.only.as_deref().is_none_or(|o| o == part)
    }
}

// --- the history -----------------------------------------------------------

/// A deterministic history of about `n` messages: turns of a user message
/// and a final answer, most with tool rounds in between (one to three calls
/// a round, up to three rounds), results of a few hundred characters and
/// one in [`BIG_EVERY`] of [`BIG_CHARS`]. It ends with whole turns.
fn history(n: usize) -> Vec<Message> {
    let at = datetime!(2026-12-02 10:00 UTC);
    let mut rng = Lcg(0x2545_f491_4f6c_dd1d);
    let mut out = Vec::with_capacity(n + 16);
    let mut results = 0usize;
    let mut turn = 0usize;
    while out.len() < n {
        turn += 1;
        out.push(Message::user(
            at,
            format!(
                "turn {turn}: please look at src/module_{}.rs",
                rng.below(500)
            ),
        ));
        let rounds = [0, 1, 1, 2, 3][rng.below(5)];
        for round in 0..rounds {
            let calls: Vec<ToolCall> = (0..1 + rng.below(3))
                .map(|k| ToolCall {
                    id: format!("call_{turn}_{round}_{k}"),
                    name: "read_file".into(),
                    arguments: format!(r#"{{"path":"src/module_{}.rs"}}"#, rng.below(500)),
                })
                .collect();
            out.push(Message {
                tool_calls: calls.clone(),
                ..Message::assistant(at, "")
            });
            for call in calls {
                results += 1;
                let chars = if results.is_multiple_of(BIG_EVERY) {
                    BIG_CHARS
                } else {
                    80 + rng.below(400)
                };
                out.push(Message::tool(at, call.id, text(chars, &mut rng)));
            }
        }
        out.push(Message::assistant(at, text(60 + rng.below(200), &mut rng)));
    }
    out
}

/// `chars` characters of code-like ASCII text in lines.
fn text(chars: usize, rng: &mut Lcg) -> String {
    const WORDS: [&str; 8] = ["fn", "let", "match", "self", "value", "=>", "Ok(())", "{"];
    let mut s = String::with_capacity(chars + 8);
    while s.len() < chars {
        s.push_str(WORDS[rng.below(WORDS.len())]);
        s.push(if rng.below(8) == 0 { '\n' } else { ' ' });
    }
    s.truncate(chars);
    s
}

/// What a history holds.
struct Shape {
    turns: usize,
    results: usize,
    big: usize,
    bytes: usize,
}

impl Shape {
    fn of(history: &[Message]) -> Shape {
        Shape {
            turns: history.iter().filter(|m| m.role == Role::User).count(),
            results: history.iter().filter(|m| m.role == Role::Tool).count(),
            big: history
                .iter()
                .filter(|m| m.role == Role::Tool && m.content.len() > compact::PRUNE_CHARS)
                .count(),
            bytes: history.iter().map(|m| m.content.len()).sum(),
        }
    }
}

/// [`Plan::of`] with a fast path: a result of at most `limit` bytes is never
/// longer than `limit` characters.
fn quick_plan(history: &[Message], limit: usize) -> Plan {
    let cut = history
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, m)| m.role == Role::User)
        .nth(compact::KEEP_TURNS - 1)
        .map_or(0, |(i, _)| i);
    let prune = history[..cut]
        .iter()
        .enumerate()
        .filter(|(_, m)| {
            m.role == Role::Tool
                && m.content.len() > limit
                && m.content.chars().nth(limit).is_some()
        })
        .map(|(i, _)| i)
        .collect();
    Plan { cut, prune }
}

/// The records of the file a compaction of `history` ends (its messages,
/// then `pruned`, `compacting`, `continued`) and of the file it starts.
fn files(history: Vec<Message>, plan: &Plan) -> (Vec<Record>, Vec<Record>) {
    let at = datetime!(2026-12-02 12:00 UTC);
    let header = |id: &str, continues: Option<&str>| Header {
        version: 1,
        id: id.into(),
        name: Some("amber".into()),
        named: false,
        cwd: "/w".into(),
        project: "/w".into(),
        started: at,
        model: "m".into(),
        window: 128_000,
        provider: "openai".into(),
        continues: continues.map(str::to_owned),
        tool_choice: None,
    };
    let pruned = plan.prune.iter().map(|&i| i as u64).collect();
    let kept: Vec<Message> = history[plan.cut..].to_vec();
    let mut old = Vec::with_capacity(history.len() + 5);
    old.push(Record::Header(header("s1", None)));
    old.push(Record::Context(Context {
        at,
        system: "You are revolve.".into(),
        subagents: Vec::new(),
    }));
    old.extend(history.into_iter().map(Record::Message));
    old.push(Record::Pruned(Pruned {
        at,
        messages: pruned,
        estimate: 100_000,
        keep: 0,
    }));
    old.push(Record::Compacting(Compacting {
        at,
        cut: plan.cut as u64,
        from: 0,
        upto: 0,
        bare: false,
    }));
    old.push(Record::Continued(Continued {
        at,
        next: "s2".into(),
    }));
    let new = vec![
        Record::Header(header("s2", Some("s1"))),
        Record::Compacted(Compacted {
            at,
            from: "s1".into(),
            summarized: plan.cut as u64,
            notes: text(4_000, &mut Lcg(7)),
            kept,
            totals: Totals::default(),
            pending: false,
            refined_at: None,
            turns_at_refine: 0,
            turn_rounds: 0,
            start_context: Vec::new(),
        }),
    ];
    (old, new)
}

fn new_kept(new: &[Record]) -> usize {
    match &new[1] {
        Record::Compacted(c) => c.kept.len(),
        _ => 0,
    }
}

/// A small deterministic generator (Knuth's MMIX constants).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

// --- measuring and reporting -----------------------------------------------

/// `1000000` as `1,000,000`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn verdict(config: &Config, pass: bool) -> &'static str {
    match (config.scale == 1.0, pass) {
        (false, _) => "",
        (true, true) => " PASS",
        (true, false) => " FAIL",
    }
}
