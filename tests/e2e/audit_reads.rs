//! What the second adversarial audit (issue 27) broke in reading: a range
//! of a huge file costs about the range (item 19), and revolve's own files
//! swapped for a FIFO or a link to `/dev/zero` never hang a start (item
//! 20). Each hung or took seconds before its fix; each runs under a
//! deadline.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{records, tool_results, Run, TestEnv};

/// Runs revolve (scripted) answering with `replies` then "Done.", with
/// `extra` arguments; a run that takes longer than `within` fails.
fn run_script(env: &TestEnv, replies: &[Value], extra: &[&str], within: Duration) -> Run {
    let mut replies = replies.to_vec();
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
    env.spawn_env(&args, "", &[]).finish(within)
}

fn call(name: &str, arguments: Value) -> Value {
    json!({"text": "", "tool_calls": [{"name": name, "arguments": arguments}]})
}

/// The tool results of the session, in order.
fn results(env: &TestEnv) -> Vec<String> {
    tool_results(&records(&env.only_session()))
        .into_iter()
        .map(|(_, content)| content)
        .collect()
}

/// Item 19: `read_file` with `limit: 1` of a 3 GB file reads about one
/// line: it neither hashes the whole file for its `seen` record nor counts
/// the lines after the range. (It took 12.7 s and 3.15 GB before.)
#[test]
fn a_range_of_a_3_gb_file_costs_about_the_range() {
    let env = TestEnv::new("read-huge");
    let path = env.cwd.join("huge.log");
    {
        // Text up front, then sparse: it costs no disk, only the time of
        // reading it.
        let file = std::fs::File::create(&path).unwrap();
        let line = "a line of the log\n".repeat(4096);
        std::io::Write::write_all(&mut &file, line.as_bytes()).unwrap();
        file.set_len(3 << 30).unwrap();
    }
    let started = Instant::now();
    let run = run_script(
        &env,
        &[
            call("read_file", json!({"path": "huge.log", "limit": 1})),
            call(
                "read_file",
                json!({"path": "huge.log", "offset": 4000, "limit": 2}),
            ),
        ],
        &[],
        Duration::from_secs(60),
    );
    let took = started.elapsed();
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        took < Duration::from_secs(5),
        "two one-line reads of a 3 GB file took {took:?}"
    );
    let results = results(&env);
    assert_eq!(results[0], "a line of the log\n", "{results:?}");
    assert_eq!(
        results[1], "a line of the log\na line of the log\n",
        "{results:?}"
    );
    // Too big to edit, so not logged as seen.
    let seen = records(&env.only_session())
        .into_iter()
        .filter(|r| r["type"] == "seen")
        .count();
    assert_eq!(seen, 0);
}

/// Item 19, the other side: a range of a file that may be edited is still
/// seen whole (hashed as it is read), so it can be edited after reading
/// only its first line; a change on disk since is still caught.
#[test]
fn a_range_read_still_lets_the_file_be_edited() {
    let env = TestEnv::new("read-range-edit");
    let text: String = (1..=5000).map(|i| format!("line {i}\n")).collect();
    std::fs::write(env.cwd.join("a.txt"), &text).unwrap();
    let run = run_script(
        &env,
        &[
            call("read_file", json!({"path": "a.txt", "limit": 1})),
            call(
                "edit_file",
                json!({"path": "a.txt", "old_string": "line 4999\n", "new_string": "line four nine nine nine\n"}),
            ),
        ],
        &["--allow-edits"],
        Duration::from_secs(60),
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let results = results(&env);
    assert_eq!(results[0], "line 1\n", "{results:?}");
    let now = std::fs::read_to_string(env.cwd.join("a.txt")).unwrap();
    assert_eq!(
        now,
        text.replace("line 4999\n", "line four nine nine nine\n")
    );
}

/// Item 20: a `config.json` or `goal.json` that is a FIFO, or a link to
/// `/dev/zero`, is named in one line at once, not waited on nor read
/// without end: a bad config ends the start (exit 1); a bad goal file is
/// told and the run goes on without a goal, as with one that is not JSON.
#[cfg(unix)]
#[test]
fn own_files_that_are_fifos_or_devices_never_hang_a_start() {
    let project = |env: &TestEnv| {
        env.home
            .join(".config/task-agent/projects")
            .join(env.cwd.to_string_lossy().replace('/', "-"))
    };
    let config = |env: &TestEnv| env.home.join(".config/task-agent");
    let fifo = |path: &std::path::Path| {
        let made = std::process::Command::new("mkfifo").arg(path).status();
        assert!(
            made.is_ok_and(|s| s.success()),
            "mkfifo (a host tool this test needs)"
        );
    };
    let zero = |path: &std::path::Path| std::os::unix::fs::symlink("/dev/zero", path).unwrap();
    type Make = Box<dyn Fn(&TestEnv)>;
    let cases: Vec<(&str, Make, &str, i32)> = vec![
        (
            "config-fifo",
            Box::new(move |env| {
                std::fs::create_dir_all(config(env)).unwrap();
                fifo(&config(env).join("config.json"));
            }),
            "config.json",
            1,
        ),
        (
            "config-zero",
            Box::new(move |env| {
                std::fs::create_dir_all(config(env)).unwrap();
                zero(&config(env).join("config.json"));
            }),
            "config.json",
            1,
        ),
        (
            "goal-fifo",
            Box::new(move |env| {
                std::fs::create_dir_all(project(env)).unwrap();
                fifo(&project(env).join("goal.json"));
            }),
            "goal.json",
            0,
        ),
        (
            "goal-zero",
            Box::new(move |env| {
                std::fs::create_dir_all(project(env)).unwrap();
                zero(&project(env).join("goal.json"));
            }),
            "goal.json",
            0,
        ),
    ];
    for (name, make, file, code) in cases {
        let env = TestEnv::new(name);
        make(&env);
        let script = env.root.join("script.jsonl");
        std::fs::write(&script, "{\"text\": \"Hello.\"}\n").unwrap();
        let args = [
            "--provider",
            "scripted",
            "--script",
            script.to_str().unwrap(),
            "-p",
            "hi",
        ];
        let run = env
            .spawn_env(&args, "", &[])
            .finish(Duration::from_secs(20));
        assert_eq!(run.code, Some(code), "{name}: {run:?}");
        let lines: Vec<&str> = run
            .stderr
            .lines()
            .filter(|l| !l.starts_with("seeded "))
            .collect();
        assert_eq!(lines.len(), 1, "{name}: one line: {}", run.stderr);
        assert!(
            lines[0].contains(file) && lines[0].contains("not a regular file"),
            "{name}: {}",
            run.stderr
        );
    }
}
