//! MCP servers as tools (issue 30), end to end: a tiny stdio server of our
//! own (`mcp/fake_server.py`) for the faults (an error result, a server
//! killed mid-call, a slow call hitting the timeout, a server that does
//! not start), and the real servers nobody here wrote, installed by
//! `.ci/mcp-servers`: npm's reference `@modelcontextprotocol/server-everything`
//! (stdio and streamable HTTP) and a FastMCP server of PyPI `mcp`
//! (streamable HTTP). Without `REVOLVE_MCP_EVERYTHING` and
//! `REVOLVE_MCP_PYTHON` the real-server tests say how to run them and
//! return.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{records, repo, tool_results, wait_until, Run, TestEnv};
use revolve_testkit::{FakeReply, FakeServer};

/// The fake server's path.
fn fake() -> PathBuf {
    repo().join("tests/e2e/mcp/fake_server.py")
}

/// Panics unless python3 runs here (the fake MCP server needs it).
fn python() -> bool {
    crate::common::require("python3");
    true
}

/// Writes the config file with `servers` as `mcp_servers`, and `extra`
/// settings.
fn configure(env: &TestEnv, servers: Value, extra: Value) {
    let dir = env.home.join(".config/task-agent");
    std::fs::create_dir_all(&dir).unwrap();
    let mut config = json!({"mcp_servers": servers});
    if let (Some(c), Some(e)) = (config.as_object_mut(), extra.as_object()) {
        c.extend(e.clone());
    }
    std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
}

fn fake_server(args: &[&str]) -> Value {
    let mut all = vec![fake().to_string_lossy().into_owned()];
    all.extend(args.iter().map(|a| a.to_string()));
    json!({"command": "python3", "args": all, "env": {"SECRET": "${MCP_TEST_TOKEN:-unset}"}})
}

/// Runs revolve (scripted) making `calls` one a round, then "Done.", as
/// the only session (earlier ones removed, so the results read are its).
fn run(env: &TestEnv, calls: &[(&str, Value)], extra: &[&str], vars: &[(&str, &str)]) -> Run {
    for old in env.session_files() {
        std::fs::remove_file(old).unwrap();
    }
    let mut replies: Vec<Value> = calls
        .iter()
        .map(|(name, args)| json!({"text": "", "tool_calls": [{"name": name, "arguments": args}]}))
        .collect();
    replies.push(json!({"text": "Done."}));
    let script = env.root.join("script.jsonl");
    let text: String = replies.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(&script, text).unwrap();
    let mut args = vec![
        "--provider",
        "scripted",
        "--script",
        script.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["-p", "go"]);
    env.run_env(&args, "", vars)
}

/// The tool results of the latest session, in order.
fn results(env: &TestEnv) -> Vec<String> {
    tool_results(&records(&env.only_session()))
        .into_iter()
        .map(|(_, content)| content)
        .collect()
}

/// The names each `mcp_tools` record of the latest session offered.
fn offered(env: &TestEnv) -> Vec<Vec<String>> {
    records(&env.only_session())
        .into_iter()
        .filter(|r| r["type"] == "mcp_tools")
        .map(|r| {
            r["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .collect()
}

const TOKEN: &str = "mcp-secret-token-1234567";

#[test]
fn a_call_an_error_result_and_a_secret_that_never_reaches_the_log() {
    if !python() {
        return;
    }
    let env = TestEnv::new("mcp-call");
    configure(&env, json!({"fake": fake_server(&[])}), json!({}));
    let run = run(
        &env,
        &[
            ("mcp__fake__echo", json!({"text": "hi"})),
            ("mcp__fake__fail", json!({})),
            ("mcp__fake__env", json!({"name": "SECRET"})),
            ("mcp__fake__big", json!({"n": 100000})),
        ],
        &["--allow-mcp"],
        &[("MCP_TEST_TOKEN", TOKEN)],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Done.\n");
    let results = results(&env);
    assert_eq!(results[0], "echo: hi");
    assert_eq!(results[1], "error: it failed on purpose");
    // The server got the expanded value; the model and the log do not.
    assert_eq!(results[2], "[key]");
    // A big result is spilled like any other.
    assert!(
        results[3].contains("characters cut"),
        "{}",
        &results[3][..200]
    );
    let log = std::fs::read_to_string(env.only_session()).unwrap();
    assert!(!log.contains(TOKEN));
    // Offered once, ordered by name, from both pages of tools/list.
    assert_eq!(
        offered(&env),
        [[
            "mcp__fake__big",
            "mcp__fake__crash",
            "mcp__fake__echo",
            "mcp__fake__env",
            "mcp__fake__fail",
            "mcp__fake__grow",
            "mcp__fake__slow"
        ]]
    );
    assert!(
        run.stderr.contains("→ mcp__fake__echo {\"text\":\"hi\"}"),
        "{run:?}"
    );
}

#[test]
fn pipe_mode_refuses_a_call_unless_allowed_by_the_flag_or_a_rule() {
    if !python() {
        return;
    }
    let env = TestEnv::new("mcp-refused");
    configure(&env, json!({"fake": fake_server(&[])}), json!({}));
    let call = [("mcp__fake__echo", json!({"text": "hi"}))];
    let refused = run(&env, &call, &[], &[]);
    assert_eq!(refused.code, Some(0), "{refused:?}");
    assert!(refused.stderr.contains("pass --allow-mcp"), "{refused:?}");
    assert_eq!(results(&env), [revolve_core::mcp::REFUSED]);

    let ruled = run(&env, &call, &["--allow", "mcp__fake__*"], &[]);
    assert_eq!(ruled.code, Some(0), "{ruled:?}");
    assert_eq!(results(&env), ["echo: hi"]);
    let denied = run(
        &env,
        &call,
        &["--allow-mcp", "--deny", "mcp__fake__echo"],
        &[],
    );
    assert_eq!(denied.code, Some(0), "{denied:?}");
    assert!(results(&env)[0].contains("permission rule mcp__fake__echo denies"));
}

#[test]
fn a_server_killed_mid_call_gives_an_error_and_the_session_goes_on() {
    if !python() {
        return;
    }
    let env = TestEnv::new("mcp-crash");
    configure(&env, json!({"fake": fake_server(&[])}), json!({}));
    let run = run(
        &env,
        &[
            ("mcp__fake__crash", json!({})),
            ("mcp__fake__echo", json!({"text": "after"})),
        ],
        &["--allow-mcp"],
        &[],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Done.\n");
    let results = results(&env);
    assert!(
        results[0].starts_with(
            "error: the MCP server fake did not answer the call of crash: the server exited"
        ),
        "{results:?}"
    );
    assert!(results[1].contains("it is not running"), "{results:?}");
    let lines: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("revolve: MCP server fake"))
        .collect();
    assert_eq!(lines.len(), 2, "{run:?}");
    // Its stderr is kept.
    let log = env
        .state
        .join("task-agent/projects")
        .read_dir()
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
        .join("mcp/fake.stderr.log");
    let kept = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(kept.contains("crashing as asked"), "{kept:?}");
}

#[test]
fn a_slow_call_hits_the_timeout_and_the_session_goes_on() {
    if !python() {
        return;
    }
    let env = TestEnv::new("mcp-slow");
    configure(
        &env,
        json!({"fake": fake_server(&[])}),
        json!({"mcp_timeout_s": 1}),
    );
    let started = Instant::now();
    let run = run(
        &env,
        &[("mcp__fake__slow", json!({"seconds": 30}))],
        &["--allow-mcp"],
        &[],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(started.elapsed() < Duration::from_secs(15), "{run:?}");
    assert_eq!(
        results(&env),
        ["error: the MCP server fake did not answer the call of slow: no answer within 1 s"]
    );
    assert!(
        run.stderr
            .contains("revolve: MCP server fake: no answer within 1 s"),
        "{run:?}"
    );
}

/// A server slow to start holds the first request (up to a bound), and
/// the user is told which server it waits for, once; its tools are then
/// offered and called.
#[test]
fn a_server_slow_to_start_is_named_while_the_first_request_waits_for_it() {
    if !python() {
        return;
    }
    let env = TestEnv::new("mcp-slow-start");
    configure(
        &env,
        json!({"late": fake_server(&["--start-delay", "1.5"])}),
        json!({}),
    );
    let run = run(
        &env,
        &[("mcp__late__echo", json!({"text": "here"}))],
        &["--allow-mcp"],
        &[],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let waiting: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.contains("waiting for MCP server"))
        .collect();
    assert_eq!(
        waiting,
        [
            "revolve: waiting for MCP server late to start, at most 9 s more \
          (its tools join a later request if not up by then)"
        ],
        "{run:?}"
    );
    assert_eq!(results(&env), ["echo: here"]);
    assert!(offered(&env)[0].contains(&"mcp__late__echo".to_owned()));
}

#[test]
fn a_server_that_does_not_start_is_one_line_and_offers_nothing() {
    if !python() {
        return;
    }
    let env = TestEnv::new("mcp-nostart");
    configure(
        &env,
        json!({
            "gone": fake_server(&["--exit-at-start"]),
            "old": fake_server(&["--bad-version"]),
            "fake": fake_server(&[]),
        }),
        json!({}),
    );
    let run = run(
        &env,
        &[("mcp__gone__echo", json!({"text": "x"}))],
        &["--allow-mcp"],
        &[],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let said: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("revolve: MCP server"))
        .collect();
    assert_eq!(said.len(), 2, "{run:?}");
    assert!(
        said.iter()
            .any(|l| l.contains("gone") && l.contains("exited")),
        "{said:?}"
    );
    assert!(
        said.iter()
            .any(|l| l.contains("old") && l.contains("1999-01-01")),
        "{said:?}"
    );
    assert!(results(&env)[0].contains("no tool named \"mcp__gone__echo\""));
    assert!(offered(&env)[0]
        .iter()
        .all(|n| n.starts_with("mcp__fake__")));
}

#[test]
fn a_project_mcp_json_starts_nothing_until_approved_and_again_when_changed() {
    if !python() {
        return;
    }
    let env = TestEnv::new("mcp-project");
    let file = env.cwd.join(".mcp.json");
    let write = |args: &[&str]| {
        std::fs::write(
            &file,
            json!({"mcpServers": {"proj": fake_server(args)}}).to_string(),
        )
        .unwrap()
    };
    write(&[]);
    let call = [("mcp__proj__echo", json!({"text": "p"}))];
    let refused = run(&env, &call, &["--allow-mcp"], &[]);
    assert!(refused.stderr.contains("not approved"), "{refused:?}");
    assert!(
        refused.stderr.contains("revolve mcp approve"),
        "{refused:?}"
    );
    assert!(results(&env)[0].contains("no MCP server is connected"));
    let list = env.ok(&["mcp", "list"]);
    assert!(
        list.stdout.contains("proj") && list.stdout.contains("not approved"),
        "{list:?}"
    );

    let shown = |env: &TestEnv| -> Value {
        let show = env.ok(&["config", "show", "--json"]);
        serde_json::from_str::<Value>(&show.stdout).unwrap()["settings"]["mcp_project_servers"]
            .clone()
    };
    let before = shown(&env);
    assert_eq!(before["source"], "config");
    assert_eq!(before["value"]["approved"], false);
    assert!(before["value"]["servers"]["proj"]
        .as_str()
        .unwrap()
        .starts_with("stdio: python3 "));

    let approved = env.ok(&["mcp", "approve"]);
    assert_eq!(shown(&env)["value"]["approved"], true);
    assert!(approved.stdout.starts_with("approved "), "{approved:?}");
    let ran = run(&env, &call, &["--allow-mcp"], &[]);
    assert!(!ran.stderr.contains("not approved"), "{ran:?}");
    assert_eq!(results(&env), ["echo: p"]);

    // A changed file is a new file: asked about again.
    write(&["--changed"]);
    let again = run(&env, &call, &["--allow-mcp"], &[]);
    assert!(again.stderr.contains("not approved"), "{again:?}");
}

#[test]
fn mcp_list_and_config_show_name_each_server() {
    if !python() {
        return;
    }
    let env = TestEnv::new("mcp-list");
    configure(
        &env,
        json!({"fake": fake_server(&[]), "web": {"type": "http", "url": "http://127.0.0.1:9/mcp",
               "headers": {"Authorization": "Bearer ${MCP_TEST_TOKEN}"}}}),
        json!({}),
    );
    let list = env.run_env(&["mcp", "list", "--json"], "", &[("MCP_TEST_TOKEN", TOKEN)]);
    assert_eq!(list.code, Some(0), "{list:?}");
    let servers: Value = serde_json::from_str(&list.stdout).unwrap();
    assert_eq!(servers[0]["name"], "fake");
    assert_eq!(servers[0]["origin"], "config.json");
    assert!(servers[0]["state"].as_str().unwrap().starts_with("ready"));
    assert_eq!(servers[0]["tools"].as_array().unwrap().len(), 7);
    assert_eq!(servers[1]["name"], "web");
    assert!(
        servers[1]["state"].as_str().unwrap().starts_with("failed"),
        "{servers}"
    );
    let show = env.ok(&["config", "show"]);
    assert!(show.stdout.contains("mcp_servers"), "{show:?}");
    assert!(
        show.stdout.contains("http: http://127.0.0.1:9/mcp"),
        "{show:?}"
    );
    assert!(!show.stdout.contains(TOKEN) && !list.stdout.contains(TOKEN));
}

/// The offered tools are in the request, `replay --requests` rebuilds every
/// body sent byte for byte, and `--provider replay:NAME` runs the session
/// again with no server configured, from its recorded results.
#[test]
fn replay_rebuilds_the_requests_and_reruns_offline() {
    if !python() {
        return;
    }
    let env = TestEnv::new("mcp-replay");
    configure(&env, json!({"fake": fake_server(&[])}), json!({}));
    let server = FakeServer::start(vec![
        FakeReply::tool_calls("", &[("c1", "mcp__fake__echo", r#"{"text":"one"}"#)]),
        FakeReply::text("First."),
        FakeReply::text("Second."),
    ])
    .unwrap();
    let run = env.run(
        &["--base-url", &server.url(), "--allow-mcp", "--name", "rec"],
        "one\ntwo\n",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let sent: Vec<String> = server.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(sent.len(), 3);
    assert!(sent[0].contains(r#""name":"mcp__fake__echo""#));
    let replayed = env.ok(&["replay", "rec", "--requests"]).stdout;
    let replayed: Vec<&str> = replayed.lines().collect();
    let offers = |b: &str| b.contains(r#""description":"Much text.""#);
    for (i, (r, s)) in replayed.iter().zip(&sent).enumerate() {
        assert!(
            *r == s.as_str(),
            "request {i} differs: rebuilt {} bytes (offers MCP tools: {}), sent {} bytes ({})",
            r.len(),
            offers(r),
            s.len(),
            offers(s)
        );
    }
    assert_eq!(replayed.len(), sent.len());
    let check = env.ok(&["replay", "rec", "--check"]);
    assert!(check.stdout.contains("0 inconsistencies"), "{check:?}");

    // Offline: no server configured, no model; the same answers and
    // results.
    configure(&env, json!({}), json!({}));
    let again = env.run(&["--provider", "replay:rec", "--allow-mcp"], "one\ntwo\n");
    assert_eq!(again.code, Some(0), "{again:?}");
    assert_eq!(again.stdout, "First.\nSecond.\n");
    let files = env.session_files();
    let newest = files
        .iter()
        .max_by_key(|f| std::fs::metadata(f).unwrap().modified().unwrap())
        .unwrap();
    let results = tool_results(&records(newest));
    assert_eq!(results[0].1, "echo: one");
}

/// A server that says its tools changed is listed again before the next
/// turn, and the new list is logged.
#[test]
fn a_changed_tool_list_is_offered_from_the_next_turn() {
    if !python() {
        return;
    }
    let env = TestEnv::new("mcp-changed");
    configure(&env, json!({"fake": fake_server(&[])}), json!({}));
    let script = env.root.join("script.jsonl");
    let replies = [
        json!({"text": "", "tool_calls": [{"name": "mcp__fake__grow", "arguments": {}}]}),
        json!({"text": "First."}),
        json!({"text": "", "tool_calls": [{"name": "mcp__fake__extra", "arguments": {}}]}),
        json!({"text": "Second."}),
    ];
    let text: String = replies.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(&script, text).unwrap();
    let run = env.run(
        &[
            "--provider",
            "scripted",
            "--script",
            script.to_str().unwrap(),
            "--allow-mcp",
        ],
        "one\ntwo\n",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "First.\nSecond.\n");
    let lists = offered(&env);
    assert_eq!(lists.len(), 2, "{lists:?}");
    assert!(!lists[0].contains(&"mcp__fake__extra".to_owned()));
    assert!(lists[1].contains(&"mcp__fake__extra".to_owned()));
    let results = results(&env);
    assert_eq!(results[0], "grown");
    // Offered and called: the fake does not know it and refuses, which
    // the model reads as an error result (and the user is not told).
    assert_eq!(
        results[1],
        "error: the server refused the call (-32602): no such tool"
    );
    assert!(!run.stderr.contains("revolve: MCP server"), "{run:?}");
}

/// At a terminal the project file is asked about (and remembered), and so
/// is each call, as a shell command is.
#[test]
fn at_a_terminal_the_project_file_and_each_call_are_asked_about() {
    if !python() {
        return;
    }
    let env = TestEnv::new("mcp-terminal");
    std::fs::write(
        env.cwd.join(".mcp.json"),
        json!({"mcpServers": {"proj": fake_server(&[])}}).to_string(),
    )
    .unwrap();
    let script = env.root.join("script.jsonl");
    let replies = [
        json!({"text": "", "tool_calls": [{"name": "mcp__proj__echo", "arguments": {"text": "tty"}}]}),
        json!({"text": "Done."}),
    ];
    let text: String = replies.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(&script, text).unwrap();
    let args = [
        "--provider",
        "scripted",
        "--script",
        script.to_str().unwrap(),
        "-p",
        "go",
    ];
    let mut term = env.terminal(&args, 100, &[]);
    term.wait_for_next("start them", Duration::from_secs(20));
    term.type_keys("y\n");
    term.wait_for_next("run `mcp__proj__echo", Duration::from_secs(20));
    term.type_keys("y\n");
    let (ok, shown) = term.finish(Duration::from_secs(30));
    assert!(ok, "{shown:?}");
    assert!(shown.contains("Done."), "{shown:?}");
    assert_eq!(results(&env), ["echo: tty"]);
    // Remembered: a piped run starts the server without asking.
    let piped = run(
        &env,
        &[("mcp__proj__echo", json!({"text": "pipe"}))],
        &["--allow-mcp"],
        &[],
    );
    assert!(!piped.stderr.contains("not approved"), "{piped:?}");
    assert_eq!(results(&env), ["echo: pipe"]);
}

/// Streamable HTTP against a server of our own: JSON and SSE answers, the
/// session id and protocol version sent back, and a forgotten session
/// (404) initialized again.
#[test]
fn http_answers_in_json_and_sse_and_a_lost_session_is_begun_again() {
    if !python() {
        return;
    }
    let env = TestEnv::new("mcp-http");
    let port = free_port();
    let log = env.root.join("http.log");
    let _server = Server(
        Command::new("python3")
            .arg(repo().join("tests/e2e/mcp/fake_http.py"))
            .arg(port.to_string())
            .arg(&log)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_port(port);
    configure(
        &env,
        json!({"web": {"type": "http", "url": format!("http://127.0.0.1:{port}/mcp"),
               "headers": {"Authorization": "Bearer ${MCP_TEST_TOKEN}"}}}),
        json!({}),
    );
    let run = run(
        &env,
        &[("mcp__web__hello", json!({"who": "http"}))],
        &["--allow-mcp"],
        &[("MCP_TEST_TOKEN", TOKEN)],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(results(&env), ["hello, http"]);
    let seen = std::fs::read_to_string(&log).unwrap();
    let seen: Vec<&str> = seen.lines().collect();
    let version = revolve_mcp_version();
    assert_eq!(
        seen,
        [
            "initialize None None".to_owned(),
            format!("notifications/initialized s1 {version}"),
            format!("tools/list s1 {version}"),
            format!("tools/call s1 {version}"),
            "initialize None None".to_owned(),
            format!("notifications/initialized s2 {version}"),
            format!("tools/call s2 {version}"),
        ]
    );
}

/// The protocol version revolve asks for (the fake servers agree to it).
fn revolve_mcp_version() -> &'static str {
    revolve_mcp::VERSIONS[0]
}

// ---------------------------------------------------------------------------
// The real servers (.ci/mcp-servers installs them)

/// The reference server's command and a python with the SDK. The tests
/// that use them are `#[ignore]`d: `.ci/run` installs the servers and runs
/// them by name (`-- --ignored`); one asked for without them fails, so ok
/// means ran.
fn real() -> (String, String) {
    match (
        std::env::var("REVOLVE_MCP_EVERYTHING"),
        std::env::var("REVOLVE_MCP_PYTHON"),
    ) {
        (Ok(e), Ok(p)) if !e.is_empty() && !p.is_empty() => (e, p),
        _ => panic!(
            "needs REVOLVE_MCP_EVERYTHING and REVOLVE_MCP_PYTHON: run `eval \"$(.ci/mcp-servers | sed 's/^/export /')\"` first (.ci/run does)"
        ),
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A server process killed when the test ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn wait_port(port: u16) {
    let up = wait_until(Duration::from_secs(30), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    assert!(up, "the server on port {port} did not come up");
}

#[test]
#[ignore = "needs REVOLVE_MCP_EVERYTHING and REVOLVE_MCP_PYTHON (.ci/mcp-servers; .ci/run runs it by name)"]
fn real_everything_over_stdio() {
    let (everything, _) = real();
    let env = TestEnv::new("mcp-real-stdio");
    configure(
        &env,
        json!({"everything": {"command": everything, "args": ["stdio"]}}),
        json!({}),
    );
    let list = env.ok(&["mcp", "list", "--json"]);
    let servers: Value = serde_json::from_str(&list.stdout).unwrap();
    let names: Vec<&str> = servers[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"mcp__everything__echo"), "{names:?}");
    let run = run(
        &env,
        &[
            ("mcp__everything__echo", json!({"message": "hi there"})),
            ("mcp__everything__get-sum", json!({"a": 2, "b": 3})),
            ("mcp__everything__get-tiny-image", json!({})),
            ("mcp__everything__echo", json!({})),
        ],
        &["--allow-mcp"],
        &[],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let results = results(&env);
    assert!(results[0].contains("hi there"), "{results:?}");
    assert!(results[1].contains('5'), "{results:?}");
    assert!(results[2].contains("[image: image/png"), "{results:?}");
    // Bad arguments: the server's error, as an error result.
    assert!(results[3].starts_with("error:"), "{results:?}");
}

#[test]
#[ignore = "needs REVOLVE_MCP_EVERYTHING and REVOLVE_MCP_PYTHON (.ci/mcp-servers; .ci/run runs it by name)"]
fn real_everything_over_streamable_http() {
    let (everything, _) = real();
    let env = TestEnv::new("mcp-real-http");
    let port = free_port();
    let _server = Server(
        Command::new(&everything)
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_port(port);
    configure(
        &env,
        json!({"ev": {"type": "http", "url": format!("http://127.0.0.1:{port}/mcp")}}),
        json!({}),
    );
    let run = run(
        &env,
        &[("mcp__ev__echo", json!({"message": "over http"}))],
        &["--allow-mcp"],
        &[],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(results(&env)[0].contains("over http"), "{run:?}");
}

const FASTMCP: &str = r#"
import sys
from mcp.server.fastmcp import FastMCP

mcp = FastMCP("adder", host="127.0.0.1", port=int(sys.argv[1]))

@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b

@mcp.tool()
def boom() -> str:
    """Always raises."""
    raise ValueError("boom on purpose")

mcp.run(transport="streamable-http")
"#;

#[test]
#[ignore = "needs REVOLVE_MCP_EVERYTHING and REVOLVE_MCP_PYTHON (.ci/mcp-servers; .ci/run runs it by name)"]
fn real_fastmcp_over_streamable_http() {
    let (_, python) = real();
    let env = TestEnv::new("mcp-real-fastmcp");
    let script = env.root.join("adder.py");
    std::fs::write(&script, FASTMCP).unwrap();
    let port = free_port();
    let _server = Server(
        Command::new(&python)
            .arg(&script)
            .arg(port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_port(port);
    configure(
        &env,
        json!({"adder": {"type": "http", "url": format!("http://127.0.0.1:{port}/mcp")}}),
        json!({}),
    );
    let run = run(
        &env,
        &[
            ("mcp__adder__add", json!({"a": 20, "b": 22})),
            ("mcp__adder__boom", json!({})),
        ],
        &["--allow-mcp"],
        &[],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let results = results(&env);
    assert_eq!(results[0], "42", "{results:?}");
    assert!(
        results[1].starts_with("error:") && results[1].contains("boom on purpose"),
        "{results:?}"
    );
}

/// Issue 42, item 6: a planning session runs no MCP tool, not even one a
/// flag and a rule allow: what a server does is its own.
#[test]
fn planning_runs_no_mcp_tool() {
    if !python() {
        return;
    }
    let env = TestEnv::new("mcp-plan");
    configure(&env, json!({"fake": fake_server(&[])}), json!({}));
    let call = [("mcp__fake__echo", json!({"text": "hi"}))];
    let run = run(
        &env,
        &call,
        &["--plan", "--allow-mcp", "--allow", "mcp__fake__*"],
        &[],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let results = results(&env);
    assert!(
        results[0].starts_with("error: not run: this session is planning"),
        "{results:?}"
    );
}

/// Issue 47, item 22: a "no" to a project's MCP servers is remembered as
/// a yes is: the next start does not ask again, and says how to start
/// them; a changed file is asked about again.
#[test]
fn a_no_to_a_project_mcp_json_is_not_asked_again_until_it_changes() {
    python();
    let env = TestEnv::new("mcp-declined");
    let file = env.cwd.join(".mcp.json");
    let write = |args: &[&str]| {
        std::fs::write(
            &file,
            json!({"mcpServers": {"proj": fake_server(args)}}).to_string(),
        )
        .unwrap()
    };
    let within = std::time::Duration::from_secs(20);
    let server = FakeServer::start(vec![]).unwrap();
    let url = server.url();
    let args = ["--allow-mcp", "--base-url", url.as_str()];
    let question = "start them (remembered until any of this changes)? [y]es, [n]o: ";
    write(&[]);
    let mut term = env.terminal(&args, 120, &[]);
    term.wait_for(question, within);
    term.type_keys("n\r");
    term.wait_for("not asked again until the file changes", within);
    term.wait_for("› ", within);
    term.type_keys("\x04");
    let (ok, screen) = term.finish(within);
    assert!(ok, "{screen}");

    let mut term = env.terminal(&args, 120, &[]);
    term.wait_for("› ", within);
    term.type_keys("\x04");
    let (ok, screen) = term.finish(within);
    assert!(ok, "{screen}");
    assert!(!screen.contains("[y]es, [n]o"), "{screen}");
    assert!(screen.contains("you said no to them"), "{screen}");

    write(&["--changed"]);
    let mut term = env.terminal(&args, 120, &[]);
    term.wait_for(question, within);
    term.type_keys("y\r");
    term.wait_for("› ", within);
    term.type_keys("\x04");
    let (ok, screen) = term.finish(within);
    assert!(ok, "{screen}");
    let list = env.ok(&["mcp", "list"]);
    assert!(!list.stdout.contains("not approved"), "{list:?}");
}
