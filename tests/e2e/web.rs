//! `web_fetch` end to end (issue 44, item 2), the model scripted by the
//! fake server and the pages served on 127.0.0.1 by the test itself: a
//! page as Markdown with the prompt at its head, a redirect chain, a 20 MB
//! body cut at the bound (the whole in a spill file), a slow server timed
//! out, a private address refused without a rule, a scheme other than
//! http refused, refusals in pipe mode, in plan mode and under
//! `--network=off`, the question at a terminal, the session's cache, and
//! replay of a fetching session with the server gone, byte for byte.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use revolve_testkit::{FakeReply, FakeServer};
use serde_json::{json, Value};

use crate::common::fake::serve;
use crate::common::{records, tool_results, Run, TestEnv};

/// The 20 MB body: twice the bound of `policy::WEB_FETCH_BYTES`.
const BIG: usize = 20 * 1024 * 1024;

/// A small web site on 127.0.0.1, served until dropped; counts the pages
/// it served.
struct Site {
    port: u16,
    stop: Arc<AtomicBool>,
    served: Arc<AtomicUsize>,
}

impl Site {
    fn start() -> Site {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the site");
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let served = Arc::new(AtomicUsize::new(0));
        let (halt, count) = (stop.clone(), served.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if halt.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                count.fetch_add(1, Ordering::SeqCst);
                std::thread::spawn(move || answer(stream, port));
            }
        });
        Site { port, stop, served }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    fn served(&self) -> usize {
        self.served.load(Ordering::SeqCst)
    }
}

impl Drop for Site {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop, which then ends and closes the port.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// One request: its path picks the page.
fn answer(mut stream: TcpStream, port: u16) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let path = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
    loop {
        let mut h = String::new();
        if reader.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
            break;
        }
    }
    let head = |status: &str, extra: &str| {
        format!("HTTP/1.1 {status}\r\n{extra}connection: close\r\n\r\n")
    };
    let page = "<html><head><title>Docs</title></head><body><h1>ureq 3.1</h1>\
                <p>The <b>current</b> version.</p><ul><li>one</li><li>two</li></ul></body></html>";
    let _ = match path.as_str() {
        "/page" => stream.write_all(
            format!(
                "{}{page}",
                head(
                    "200 OK",
                    &format!(
                        "content-type: text/html; charset=utf-8\r\ncontent-length: {}\r\n",
                        page.len()
                    )
                )
            )
            .as_bytes(),
        ),
        "/r1" => {
            stream.write_all(head("302 Found", "location: /r2\r\ncontent-length: 0\r\n").as_bytes())
        }
        "/away" => stream.write_all(
            head(
                "302 Found",
                &format!("location: http://127.0.0.2:{port}/page\r\ncontent-length: 0\r\n"),
            )
            .as_bytes(),
        ),
        "/r2" => stream
            .write_all(head("301 Moved", "location: /page\r\ncontent-length: 0\r\n").as_bytes()),
        "/big" => {
            let _ = stream.write_all(
                head(
                    "200 OK",
                    &format!("content-type: text/plain\r\ncontent-length: {BIG}\r\n"),
                )
                .as_bytes(),
            );
            let chunk = vec![b'x'; 64 * 1024];
            let mut sent = 0;
            while sent < BIG {
                if stream.write_all(&chunk).is_err() {
                    break;
                }
                sent += chunk.len();
            }
            Ok(())
        }
        "/slow" => {
            std::thread::sleep(Duration::from_secs(6));
            stream.write_all(head("200 OK", "content-length: 2\r\n").as_bytes())
        }
        _ => stream.write_all(head("404 Not Found", "content-length: 0\r\n").as_bytes()),
    };
}

fn fetch(id: &str, url: &str, prompt: Option<&str>) -> FakeReply {
    let mut args = json!({ "url": url });
    if let Some(p) = prompt {
        args["prompt"] = json!(p);
    }
    FakeReply::tool_calls("", &[(id, "web_fetch", &args.to_string())])
}

/// A print-mode run of `prompt` against a model that sends `replies` in
/// order (its fetches, then its answer), with `flags` after `--base-url`
/// and `vars` in its environment; it must exit 0. Returns the run, the
/// session's records and the model server (with the requests it got).
fn fetching(
    env: &TestEnv,
    replies: Vec<FakeReply>,
    prompt: &str,
    flags: &[&str],
    vars: &[(&str, &str)],
) -> (Run, Vec<Value>, FakeServer) {
    let server = serve(replies);
    let url = server.url();
    let mut args = vec!["-p", prompt, "--base-url", &url];
    args.extend_from_slice(flags);
    let run = env.run_env(&args, "", vars);
    assert_eq!(run.code, Some(0), "{run:?}");
    let log = records(&env.only_session());
    (run, log, server)
}

fn result_of(log: &[Value], id: &str) -> String {
    tool_results(log)
        .into_iter()
        .find(|(i, _)| i == id)
        .map(|(_, r)| r)
        .unwrap_or_else(|| panic!("no result for {id}"))
}

fn fetched(log: &[Value]) -> Vec<&Value> {
    log.iter().filter(|r| r["type"] == "fetched").collect()
}

const RULE: &str = "web_fetch(domain:127.0.0.1)";

#[test]
fn a_page_becomes_markdown_with_the_prompt_at_its_head_and_a_record_with_its_bytes() {
    let site = Site::start();
    let env = TestEnv::new("web-page");
    let (run, log, _) = fetching(
        &env,
        vec![
            fetch("c1", &site.url("/page"), Some("the current version")),
            FakeReply::text("3.1."),
        ],
        "which ureq?",
        &["--allow", RULE],
        &[],
    );
    assert_eq!(run.stdout, "3.1.\n");
    let result = result_of(&log, "c1");
    assert!(
        result.starts_with("asked: the current version\n\n"),
        "{result}"
    );
    assert!(result.contains("# ureq 3.1"), "{result}");
    assert!(result.contains("The **current** version."), "{result}");
    assert!(!result.contains("<p>"), "{result}");
    let pages = fetched(&log);
    assert_eq!(pages.len(), 1, "{log:?}");
    let page = pages[0];
    assert_eq!(page["call"], "c1");
    assert_eq!(page["url"], site.url("/page"));
    assert_eq!(page["final_url"], site.url("/page"));
    assert_eq!(page["status"], 200);
    assert_eq!(page["content_type"], "text/html; charset=utf-8");
    // Its bytes are in the content store, under the hash the record names.
    let hash = page["hash"].as_str().unwrap();
    let hex = hash.strip_prefix("sha256:").unwrap();
    let blob = env.state.join("task-agent/blobs").join(&hex[..2]).join(hex);
    let kept = std::fs::read(&blob).unwrap_or_else(|e| panic!("{}: {e}", blob.display()));
    assert!(String::from_utf8_lossy(&kept).contains("<h1>ureq 3.1</h1>"));
    assert_eq!(page["bytes"], kept.len());
    // The rule that allowed it is logged.
    let approved = log
        .iter()
        .find(|r| r["type"] == "approved" && r["call"] == "c1")
        .expect("an approved record");
    assert_eq!(approved["rule"], RULE);
    assert_eq!(approved["tool"], "web_fetch");
}

#[test]
fn a_redirect_chain_is_followed_and_a_fetch_again_comes_from_the_cache() {
    let site = Site::start();
    let env = TestEnv::new("web-redirects");
    let (_, log, _) = fetching(
        &env,
        vec![
            fetch("c1", &site.url("/r1"), None),
            fetch("c2", &site.url("/r1"), None),
            FakeReply::text("Followed."),
        ],
        "follow",
        &["--allow", RULE],
        &[],
    );
    let first = result_of(&log, "c1");
    assert!(first.contains("(HTTP 200, after 2 redirect(s))"), "{first}");
    assert!(first.contains("# ureq 3.1"), "{first}");
    // Three requests the first time, none the second.
    assert_eq!(site.served(), 3);
    assert_eq!(result_of(&log, "c2"), first);
    let pages = fetched(&log);
    assert_eq!(pages.len(), 2);
    assert_eq!(pages[0]["redirects"], 2);
    assert_eq!(pages[0]["final_url"], site.url("/page"));
    assert!(pages[0].get("cached").is_none());
    assert_eq!(pages[1]["cached"], pages[0]["at"]);
    assert_eq!(pages[1]["hash"], pages[0]["hash"]);
}

#[test]
fn a_20_mb_body_is_cut_at_the_bound_and_spilled() {
    let site = Site::start();
    let env = TestEnv::new("web-big");
    let (_, log, _) = fetching(
        &env,
        vec![
            fetch("c1", &site.url("/big"), None),
            FakeReply::text("Big."),
        ],
        "read it",
        &["--allow", RULE],
        &[],
    );
    let page = fetched(&log)[0];
    let bound = 10 * 1024 * 1024;
    assert_eq!(page["bytes"], bound);
    assert_eq!(page["cut"], true);
    let result = result_of(&log, "c1");
    // The model sees a head and a tail and where the whole is.
    assert!(result.len() < 64 * 1024, "{}", result.len());
    let spill = result
        .split("the whole output is in ")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .unwrap_or_else(|| panic!("no spill path: {}", &result[result.len() - 400..]));
    let whole = std::fs::read_to_string(spill).unwrap();
    assert!(whole.ends_with(&format!(
        "[the page goes on past {bound} bytes; not read further]\n"
    )));
}

#[test]
fn a_slow_server_times_out() {
    let site = Site::start();
    let env = TestEnv::new("web-slow");
    let started = std::time::Instant::now();
    let (_, log, _) = fetching(
        &env,
        vec![
            fetch("c1", &site.url("/slow"), None),
            FakeReply::text("Slow."),
        ],
        "read it",
        &["--allow", RULE],
        &[("REVOLVE_WEB_FETCH_TIMEOUT_S", "1")],
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let result = result_of(&log, "c1");
    assert!(result.starts_with("error: web_fetch: "), "{result}");
    assert!(
        result.contains("no whole page within 1 s; given up"),
        "{result}"
    );
    assert!(fetched(&log).is_empty());
}

#[test]
fn private_addresses_no_rule_names_and_other_schemes_are_refused_at_every_hop() {
    let site = Site::start();
    let env = TestEnv::new("web-private");
    let (_, log, _) = fetching(
        &env,
        vec![
            // Another loopback address: a rule opening every host names none.
            fetch("c1", &format!("http://127.0.0.2:{}/page", site.port), None),
            // A named host whose page sends the fetch to that address.
            fetch("c2", &site.url("/away"), None),
            fetch("c3", "file:///etc/passwd", None),
            FakeReply::text("Refused."),
        ],
        "read",
        &["--allow", "web_fetch(domain:*)", "--allow", RULE],
        &[],
    );
    let result = result_of(&log, "c1");
    assert!(
        result.contains("127.0.0.2 resolves to 127.0.0.2 (loopback): refused"),
        "c1: {result}"
    );
    // A redirect to another host is not followed at all: the model is told
    // the new URL, whose fetch is ruled on by its own host.
    let result = result_of(&log, "c2");
    assert!(
        result.contains("on another host: not followed"),
        "c2: {result}"
    );
    let scheme = result_of(&log, "c3");
    assert!(scheme.contains("only http and https"), "{scheme}");
    // Only the named host's redirect was served.
    assert_eq!(site.served(), 1);
    assert!(fetched(&log).is_empty());
}

#[test]
fn without_a_rule_or_a_terminal_a_fetch_is_refused_with_a_reason() {
    let site = Site::start();
    let env = TestEnv::new("web-no-rule");
    let (run, log, _) = fetching(
        &env,
        vec![
            fetch("c1", &site.url("/page"), None),
            FakeReply::text("Refused."),
        ],
        "read",
        &[],
        &[],
    );
    assert_eq!(
        result_of(&log, "c1"),
        "error: the user did not allow fetching this page"
    );
    assert!(
        run.stderr
            .contains(&format!("revolve: refused to fetch {}", site.url("/page")))
            && run.stderr.contains("--allow 'web_fetch(domain:127.0.0.1)'"),
        "{}",
        run.stderr
    );
    assert_eq!(site.served(), 0);
}

#[test]
fn plan_mode_and_the_network_off_refuse_it() {
    let site = Site::start();
    for (name, flags, expected) in [
        (
            "web-plan",
            vec!["--plan"],
            "error: not run: this session is planning",
        ),
        (
            "web-off",
            vec!["--network=off", "--allow", RULE],
            "error: not run: the user turned the network off",
        ),
    ] {
        let env = TestEnv::new(name);
        let (_, log, _) = fetching(
            &env,
            vec![
                fetch("c1", &site.url("/page"), None),
                FakeReply::text("No."),
            ],
            "read",
            &flags,
            &[],
        );
        let result = result_of(&log, "c1");
        assert!(result.starts_with(expected), "{name}: {result}");
    }
    assert_eq!(site.served(), 0);
}

#[test]
fn the_repl_asks_and_always_covers_the_host() {
    let site = Site::start();
    let env = TestEnv::new("web-ask");
    let server = FakeServer::start(vec![
        fetch("c1", &site.url("/page"), None),
        FakeReply::text("Read once."),
        fetch("c2", &site.url("/r1"), None),
        FakeReply::text("Read twice."),
    ])
    .unwrap();
    let url = server.url();
    let mut term = env.terminal(&["--base-url", &url], 100, &[]);
    term.wait_for("› ", Duration::from_secs(10));
    term.type_keys("read the page\r");
    let question = format!(
        "fetch {}? [y]es, [a]lways from 127.0.0.1 this session, [n]o",
        site.url("/page")
    );
    term.wait_for(&question, Duration::from_secs(10));
    term.type_keys("a\r");
    term.wait_for("Read once.", Duration::from_secs(10));
    term.wait_for_next("› ", Duration::from_secs(10));
    term.type_keys("again\r");
    term.wait_for("Read twice.", Duration::from_secs(10));
    term.wait_for_next("› ", Duration::from_secs(10));
    let (exited, screen) = term.finish(Duration::from_secs(10));
    assert!(exited, "{screen}");
    // Asked once: "always" covers the host's other pages.
    assert_eq!(
        screen.matches("[a]lways from 127.0.0.1").count(),
        1,
        "{screen}"
    );
    let log = records(&env.only_session());
    assert!(result_of(&log, "c2").contains("# ureq 3.1"));
    let approved = log
        .iter()
        .find(|r| r["type"] == "approved" && r["call"] == "c1")
        .unwrap();
    assert_eq!(approved["answer"], "always");
    assert_eq!(approved["path"], "127.0.0.1");
}

#[test]
fn replay_rebuilds_a_fetching_session_without_the_network() {
    let site = Site::start();
    let env = TestEnv::new("web-replay");
    let (_, _, server) = fetching(
        &env,
        vec![
            fetch("c1", &site.url("/r1"), Some("what version")),
            fetch("c2", &site.url("/big"), None),
            FakeReply::text("Done."),
        ],
        "read",
        &["--allow", RULE],
        &[],
    );
    let served = site.served();
    drop(site);
    let expected: String = server
        .requests()
        .iter()
        .map(|r| format!("{}\n", r.body))
        .collect();
    assert_eq!(env.ok(&["replay", "--requests"]).stdout, expected);
    let check = env.run(&["replay", "--check"], "");
    assert_eq!(check.code, Some(0), "{check:?}");
    assert_eq!(served, 4);
    // The transcript shows each fetch.
    let shown = env.ok(&["replay"]).stdout;
    assert!(shown.contains("── fetched http://127.0.0.1:"), "{shown}");
    assert!(
        shown.contains("(HTTP 200, text/plain, 10485760 bytes, cut)"),
        "{shown}"
    );
}

#[test]
fn a_rule_in_the_config_file_allows_a_host() {
    let site = Site::start();
    let env = TestEnv::new("web-config");
    let config = env.home.join(".config/task-agent");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("config.json"),
        json!({"permissions": {"allow": [RULE]}}).to_string(),
    )
    .unwrap();
    let (_, log, _) = fetching(
        &env,
        vec![
            fetch("c1", &site.url("/page"), None),
            FakeReply::text("Read."),
        ],
        "read",
        &[],
        &[],
    );
    assert!(result_of(&log, "c1").contains("# ureq 3.1"));
    assert_eq!(site.served(), 1);
}
