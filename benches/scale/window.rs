use super::*;

pub(crate) fn window(config: &Config, bin: &Path, scratch: &Scratch, table: &mut Table) {
    use revolve_testkit::{FakeProtocol, FakeReply, FakeServer, Limit, Overflows};
    let env = Env::new(bin, &scratch.path("window"));
    let path = env.sessions_dir().join("20261202-102606-000002.jsonl");
    let target = config.bytes(100 * MB);
    let started = Instant::now();
    let live = write_live_log(&path, target).expect("writing the log");
    let label = format!(
        "{:.0} MB all-live session",
        file_size(&path) as f64 / MB as f64
    );
    println!(
        "\n== the window: {label} (live history {:.1} MB) generated in {} s",
        live as f64 / MB as f64,
        started.elapsed().as_secs()
    );
    let tokens = 128_000;
    let limit = Limit {
        tokens,
        bytes_per_token: 4,
        says: Overflows::OpenAi,
        usage: true,
    };
    let notes =
        "Facts: the service listens on port 5432 on db1; the last turn asked for a summary.";
    let replies = vec![FakeReply::text(notes); 5_000];
    let server =
        FakeServer::start_limited(FakeProtocol::OpenAi, replies, Some(limit)).expect("fake server");
    let url = server.url();
    let p = path.to_string_lossy().into_owned();
    let (took, peak) = env.run(
        &[
            "-r",
            &p,
            "--base-url",
            &url,
            "--window",
            "128000",
            "-p",
            "one more turn",
        ],
        &env.cwd,
    );
    let sent = server.requests();
    let largest = sent.iter().map(|r| r.body.len()).max().unwrap_or(0);
    let refused = sent
        .iter()
        .filter(|r| (r.body.len() as u64).div_ceil(4) > tokens)
        .count();
    println!(
        "resume + one turn: {}, peak RSS {}; {} requests, the largest {} KB (~{} tokens), {refused} refused",
        ms(took),
        mb(peak),
        sent.len(),
        largest / 1024,
        largest / 4
    );
    println!(
        "  peak RSS is {:.1}x the live history",
        (peak * 1024) as f64 / live.max(1) as f64
    );
    table.row(
        &format!(
            "{label}: resume + one turn under 128k ({} requests, {refused} refused)",
            sent.len()
        ),
        ms(took),
        mb(peak),
    );
    std::fs::remove_file(&path).ok();
}

/// Issue 29's figure: a resume of the same all-live 100 MB session with a
/// window it fits whole (`--window 100000000`), one turn against a server
/// with no limit, so the request carries the whole history: wall time and
/// peak RSS against the live history (targets: <= 0.5 s, <= 1.5x).
pub(crate) fn whole(config: &Config, bin: &Path, scratch: &Scratch, table: &mut Table) {
    let env = Env::new(bin, &scratch.path("whole"));
    let path = env.sessions_dir().join("20261202-102606-000003.jsonl");
    let runs = config.repeats(true);
    let (mut times, mut peaks) = (Vec::new(), Vec::new());
    let mut live = 0;
    let mut body = 0;
    for _ in 0..runs {
        live = write_live_log(&path, config.bytes(100 * MB)).expect("writing the log");
        // A server that reads the body into a small buffer and keeps
        // nothing: this process stays small, and so does the child's
        // `ru_maxrss`, which starts from its parent's resident size.
        let (url, server) = discarding_server();
        let p = path.to_string_lossy().into_owned();
        let (took, peak) = env.run(
            &[
                "-r",
                &p,
                "--base-url",
                &url,
                "--window",
                "100000000",
                "-p",
                "one more turn",
            ],
            &env.cwd,
        );
        body = server.join().expect("the server");
        times.push(took);
        peaks.push(peak);
    }
    let took = median(&mut times);
    peaks.sort_unstable();
    let peak = peaks[peaks.len() / 2];
    let label = format!(
        "{:.0} MB all-live session, --window 100000000",
        file_size(&path) as f64 / MB as f64
    );
    println!(
        "\n== the whole history in one request: {label} (live history {:.1} MB, body {:.1} MB)",
        live as f64 / MB as f64,
        body as f64 / MB as f64
    );
    println!(
        "resume + one turn: median {} of {runs}, peak RSS {} ({:.2}x the live history)",
        ms(took),
        mb(peak),
        (peak * 1024) as f64 / live.max(1) as f64
    );
    table.row(
        &format!("{label}: resume + one whole-history request"),
        ms(took),
        mb(peak),
    );
    std::fs::remove_file(&path).ok();
}

/// A one-request model server on a thread: it reads the request's body
/// and throws it away, answers `Noted.` as a Chat Completions JSON, and
/// returns the body's length.
fn discarding_server() -> (String, std::thread::JoinHandle<usize>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a port");
    let url = format!("http://{}/v1", listener.local_addr().expect("its address"));
    let thread = std::thread::spawn(move || {
        let (stream, _) = listener.accept().expect("the request");
        let mut reader = BufReader::new(stream);
        let mut length = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).expect("the head");
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().expect("a length");
                }
            }
        }
        let read = io::copy(&mut (&mut reader).take(length as u64), &mut io::sink())
            .expect("the body") as usize;
        let answer = r#"{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Noted."},"finish_reason":"stop"}]}"#;
        let mut stream = reader.into_inner();
        write!(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
            answer.len()
        )
        .expect("the answer");
        read
    });
    (url, thread)
}

/// A session of plain turns (a question, a long answer), nothing pruned:
/// its whole history is live. Returns the bytes of message text.
pub(crate) fn write_live_log(path: &Path, target: u64) -> io::Result<u64> {
    let mut rng = Rng(0x5eed_0000_0000_0016);
    let words = [
        "the",
        "service",
        "listens",
        "on",
        "port",
        "5432",
        "and",
        "db1",
        "holds",
        "the",
        "schema",
        "migration",
        "ran",
        "in",
        "src/db.rs",
        "tests",
        "pass",
        "after",
        "fix",
    ];
    let mut at = base_time();
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::remove_file(path).ok();
    let mut w = LogWriter::create(path)?;
    w.append(&Record::Header(header(&stem(path), None, at)))?;
    let (mut written, mut live) = (0u64, 0u64);
    let mut turn = 0u64;
    while written < target {
        let question = format!("question {turn}: what changed in src/db.rs?");
        let mut answer = String::with_capacity(24 * 1024);
        while answer.len() < 24 * 1024 {
            answer.push_str(words[rng.below(words.len() as u64) as usize]);
            answer.push(' ');
        }
        for m in [Message::user(at, question), Message::assistant(at, answer)] {
            live += m.content.len() as u64;
            let r = Record::Message(m);
            written += r.to_line().len() as u64 + 1;
            w.append(&r)?;
        }
        at += TimeDelta::seconds(1);
        turn += 1;
    }
    w.append(&Record::Totals(Totals {
        at: Some(at),
        turns: turn,
        requests: turn,
        ..Totals::default()
    }))?;
    w.sync()?;
    Ok(live)
}

// --- running the binary ---------------------------------------------------
