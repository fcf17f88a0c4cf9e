use super::*;
use crate::logs::write_pruned_log;
use crate::window::write_live_log;

/// 6. **Export** (issue 44): `revolve export` of a 100 MB session as
///    Markdown and as HTML (to /dev/null), beside `replay --check` of the
///    same file, on both big single files: the pruned one (its live
///    history a few percent) and the all-live one (`replay --check` holds
///    all of it). The bound: an export takes at most twice the time and
///    twice the peak memory of `replay --check`.
pub(crate) fn export(config: &Config, bin: &Path, scratch: &Scratch, table: &mut Table) {
    let env = Env::new(bin, &scratch.path("export"));
    let dir = env.sessions_dir();
    let target = config.bytes(100 * MB);
    for (kind, pruned) in [("pruned", true), ("all live", false)] {
        let path = dir.join("20261202-102606-000044.jsonl");
        let started = Instant::now();
        if pruned {
            write_pruned_log(&path, target).expect("writing the log");
        } else {
            write_live_log(&path, target).expect("writing the log");
        }
        let size = file_size(&path);
        let label = format!("{:.0} MB file, {kind}", size as f64 / MB as f64);
        println!(
            "\n== export: {label}, generated in {} s",
            started.elapsed().as_secs()
        );
        let p = path.to_string_lossy().into_owned();
        let mut rows = Vec::new();
        for (what, args) in [
            ("replay --check", vec!["replay", "--check", p.as_str()]),
            (
                "export --format md",
                vec!["export", p.as_str(), "--format", "md"],
            ),
            (
                "export --format html",
                vec!["export", p.as_str(), "--format", "html"],
            ),
        ] {
            rows.push(measure(config, &env, table, &label, what, &args));
        }
        let (check_t, check_rss) = rows[0];
        for ((t, rss), what) in rows[1..].iter().zip(["md", "html"]) {
            println!(
                "  {what}: {:.2}x the time of replay --check, {:.2}x its peak RSS (bound: 2x, 2x)",
                t.as_secs_f64() / check_t.as_secs_f64(),
                *rss as f64 / check_rss as f64
            );
        }
        std::fs::remove_file(&path).ok();
    }
}

/// [`measure_log`]'s runs, giving back the median time and peak RSS too.
fn measure(
    config: &Config,
    env: &Env,
    table: &mut Table,
    label: &str,
    what: &str,
    args: &[&str],
) -> (Duration, u64) {
    env.run(args, &env.cwd);
    let mut times = Vec::new();
    let mut peaks = Vec::new();
    for _ in 0..config.repeats(true) {
        let (took, peak) = env.run(args, &env.cwd);
        times.push(took);
        peaks.push(peak);
    }
    let t = median(&mut times);
    peaks.sort_unstable();
    let peak = peaks[peaks.len() / 2];
    println!(
        "{what}: median {} of {}, peak RSS {}",
        ms(t),
        times.len(),
        mb(peak)
    );
    table.row(&format!("{what}, {label}"), ms(t), mb(peak));
    (t, peak)
}
