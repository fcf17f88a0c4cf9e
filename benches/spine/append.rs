use super::*;

pub(crate) fn append(config: &Config, scratch: &Scratch, table: &mut Table) {
    let n = config.count(10_000, 100);
    let n_sync = config.count(1_000, 20);
    let mut rng = Rng(0xa99e_0d00_0000_0003);
    let at = base_time();
    // Typical user messages of about 200 bytes as a line, built beforehand.
    let messages: Vec<Record> = (0..64)
        .map(|_| {
            let len = 110 + rng.below(40) as usize;
            Record::Message(Message::user(at, text(&mut rng, len)))
        })
        .collect();
    let line_len = messages
        .iter()
        .map(|r| r.to_line().len() + 1)
        .sum::<usize>()
        / messages.len();

    let path = scratch.path("append/a.jsonl");
    let mut w = LogWriter::create(&path).expect("creating the log");
    w.append(&Record::Header(header("a", "amber", false, "/w", at)))
        .expect("appending");
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        let r = &messages[i % messages.len()];
        let t = Instant::now();
        w.append(r).expect("appending");
        times.push(t.elapsed());
    }
    let no_sync = median(&mut times);
    let p99 = percentile(&times, 0.99);
    let mean = times.iter().sum::<Duration>() / n as u32;
    println!(
        "\n== 3. append\nappend one ~{line_len} B user message, no fsync: median {} \
         (p99 {}, mean {}, {n} appends timed one by one; target < 0.2 ms)",
        ms(no_sync),
        ms(p99),
        ms(mean)
    );

    let mut times = Vec::with_capacity(n_sync);
    for i in 0..n_sync {
        let r = &messages[i % messages.len()];
        let t = Instant::now();
        w.append(r).expect("appending");
        w.sync().expect("syncing");
        times.push(t.elapsed());
    }
    let synced = median(&mut times);
    println!(
        "append + sync() (fdatasync) each: median {} (p99 {}, {n_sync} appends)",
        ms(synced),
        ms(percentile(&times, 0.99))
    );
    table.row(
        &format!("append ~{line_len} B message, no fsync"),
        ms(no_sync),
        "< 0.2 ms",
        Some(no_sync < Duration::from_micros(200)),
    );
    table.row("append + fsync", ms(synced), "-", None);
}

// --- generated content ----------------------------------------------------
