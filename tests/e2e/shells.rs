//! Background shell commands end to end (issue 43, item 4): `shell` with
//! `background: true` starts a server that a later tool call reaches, its
//! output is read with `shell_output`, and it is gone once the session
//! ends; a long read spills to its file; the log has a record of each
//! start, read and end, and replay rebuilds the requests without running
//! anything.

use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use revolve_testkit::{FakeReply, FakeServer};
use serde_json::{json, Value};

use crate::common::{records, require, tool_results, wait_until, TestEnv};

/// A port nothing listens on now.
fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    listener.local_addr().expect("its address").port()
}

fn reachable(port: u16) -> bool {
    TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_millis(200)).is_ok()
}

fn call(id: &str, name: &str, args: Value) -> FakeReply {
    FakeReply::tool_calls("", &[(id, name, &args.to_string())])
}

/// The `background` records of a log, as `(id, event)`.
fn background(records: &[Value]) -> Vec<(String, String)> {
    records
        .iter()
        .filter(|r| r["type"] == "background")
        .map(|r| {
            (
                r["id"].as_str().unwrap_or_default().to_owned(),
                r["event"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

#[test]
fn a_background_server_answers_a_later_call_and_is_gone_after_the_session() {
    require("python3");
    let env = TestEnv::new("bg-server");
    std::fs::write(env.cwd.join("index.html"), "hello from the background\n").unwrap();
    let port = free_port();
    let fetch = format!(
        "python3 -c \"import time, urllib.request\nfor _ in range(100):\n    try:\n        \
         print(urllib.request.urlopen('http://127.0.0.1:{port}/index.html').read().decode()); \
         break\n    except OSError:\n        time.sleep(0.1)\""
    );
    let server = FakeServer::start(vec![
        call(
            "c1",
            "shell",
            json!({"command": format!("python3 -m http.server {port} --bind 127.0.0.1"), "background": true}),
        ),
        call("c2", "shell", json!({"command": fetch})),
        call("c3", "shell_output", json!({"id": "bg1"})),
        FakeReply::text("Served."),
    ])
    .unwrap();
    let url = server.url();
    let run = env.run(
        &[
            "-p",
            "serve it",
            "--base-url",
            &url,
            "--allow-shell",
            "--network",
        ],
        "",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout, "Served.\n");
    // Gone with the session: nothing listens on its port any more.
    assert!(
        wait_until(Duration::from_secs(5), || !reachable(port)),
        "the background server outlived its session"
    );

    let log = records(&env.only_session());
    let results = tool_results(&log);
    assert!(
        results[0].1.starts_with("started bg1 in the background"),
        "{results:?}"
    );
    assert!(
        results[1].1.contains("hello from the background"),
        "{results:?}"
    );
    // http.server logs each request on stderr: read back since the start.
    assert!(results[2].1.starts_with("bg1 is running;"), "{results:?}");
    assert!(results[2].1.contains("GET /index.html"), "{results:?}");
    assert_eq!(
        background(&log),
        [
            ("bg1".to_owned(), "started".to_owned()),
            ("bg1".to_owned(), "read".to_owned()),
            ("bg1".to_owned(), "ended".to_owned()),
        ]
    );
    let ended = log.iter().rfind(|r| r["type"] == "background").unwrap();
    assert_eq!(ended["status"], "killed at the session's end");

    // Replay rebuilds every request from the log, running nothing.
    let expected: String = server
        .requests()
        .iter()
        .map(|r| format!("{}\n", r.body))
        .collect();
    assert_eq!(env.ok(&["replay", "--requests"]).stdout, expected);
}

#[test]
fn a_long_background_read_spills_to_its_file_and_a_kill_ends_it() {
    let env = TestEnv::new("bg-spill");
    let server = FakeServer::start(vec![
        call(
            "c1",
            "shell",
            json!({"command": "head -c 100000 /dev/zero | tr '\\0' y; echo; echo done; sleep 60", "background": true}),
        ),
        call("c2", "shell", json!({"command": "sleep 1"})),
        call("c3", "shell_output", json!({"id": "bg1"})),
        call("c4", "shell_kill", json!({"id": "bg1"})),
        call("c5", "shell_output", json!({"id": "bg9"})),
        FakeReply::text("Read."),
    ])
    .unwrap();
    let url = server.url();
    let run = env.run(&["-p", "go", "--base-url", &url, "--allow-shell"], "");
    assert_eq!(run.code, Some(0), "{run:?}");
    let log = records(&env.only_session());
    let results = tool_results(&log);
    let read = &results[2].1;
    assert!(
        read.starts_with("bg1 is running; 100006 new bytes:"),
        "{}",
        &read[..100]
    );
    assert!(
        read.contains("the whole of bytes 0..100006 is in "),
        "{}",
        read.len()
    );
    assert!(read.len() < 30_000, "{}", read.len());
    assert!(read.ends_with("done\n"), "the tail is kept");
    let file = read
        .split("is in ")
        .nth(1)
        .and_then(|rest| rest.split(':').next())
        .unwrap();
    assert_eq!(std::fs::metadata(file).unwrap().len(), 100_006);
    assert_eq!(results[3].1, "killed bg1 and everything it started");
    assert!(results[4]
        .1
        .starts_with("error: there is no background command \"bg9\""));
    let spilled: Vec<&Value> = log
        .iter()
        .filter(|r| r["type"] == "background" && r["event"] == "read")
        .collect();
    assert_eq!(spilled[0]["spilled"], true);
    // shell_output and shell_kill are offered while bg1 runs (from the
    // request after its start to the one before its kill's result), task
    // never: there are no subagent definitions.
    let offered: Vec<bool> = server
        .requests()
        .iter()
        .map(|r| {
            let body: Value = serde_json::from_str(&r.body).unwrap();
            let names: Vec<&str> = body["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap())
                .collect();
            assert!(!names.contains(&"task"), "{names:?}");
            names.contains(&"shell_output") && names.contains(&"shell_kill")
        })
        .collect();
    assert_eq!(offered, [false, true, true, true, false, false]);
}

#[test]
fn slash_shells_lists_them_and_kills_one() {
    let env = TestEnv::new("bg-slash");
    let server = FakeServer::start(vec![
        call(
            "c1",
            "shell",
            json!({"command": "sleep 60", "background": true}),
        ),
        FakeReply::text("Started."),
    ])
    .unwrap();
    let url = server.url();
    let run = env.run(
        &["--base-url", &url, "--allow-shell"],
        "start it\n/shells\n/shells kill bg1\n/shells\n/shells kill bg7\n",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let err = &run.stderr;
    let listed = err.find("bg1   running").expect(err);
    let killed = err.find("bg1: killed by the user").expect(err);
    let after = err.find("bg1   killed by the user").expect(err);
    assert!(listed < killed && killed < after, "{err}");
    assert!(err.contains("there is no background command bg7"), "{err}");
    let log = records(&env.only_session());
    assert_eq!(
        background(&log),
        [
            ("bg1".to_owned(), "started".to_owned()),
            ("bg1".to_owned(), "ended".to_owned()),
        ],
        "killed by the user once, not again at the session's end"
    );
}
