//! What a turn costs (issue 29): the prompt cache's counts in the totals,
//! prices, `/cost`, `--max-cost`, `/model` and `--effort`, end to end
//! against the fake server.

use revolve_testkit::{CacheUsage, FakeOptions, FakeProtocol, FakeReply, FakeServer};
use serde_json::Value;

use crate::common::{records, TestEnv};

/// The `totals` records of the only session.
fn totals(env: &TestEnv) -> Vec<Value> {
    records(&env.only_session())
        .into_iter()
        .filter(|r| r["type"] == "totals")
        .collect()
}

/// A streamed answer of `text` with `completion` output tokens (the fake
/// fills in the input counts, from its prompt cache).
fn answer(text: &str, completion: u64) -> FakeReply {
    FakeReply::Stream {
        chunks: vec![text.into()],
        usage: Some((0, completion)),
    }
}

/// An Anthropic fake with its prompt cache, caching prefixes of 256
/// tokens or more (the system prompt and the tools are more).
fn cached_server(replies: Vec<FakeReply>) -> FakeServer {
    let options = FakeOptions {
        prompt_cache: Some(256),
        ..FakeOptions::default()
    };
    FakeServer::start_with_options(FakeProtocol::Anthropic, replies, options).unwrap()
}

/// The cache counts the server reported reach the totals in the log, as
/// the server counted them, and the status and the stream-json totals
/// say them.
#[test]
fn prompt_cache_counts_reach_the_totals() {
    let env = TestEnv::new("cost-cached");
    let server = cached_server(vec![
        answer("One.", 5),
        answer("Two.", 6),
        answer("Three.", 7),
    ]);
    let url = server.url();
    let run = env.run_env(
        &[
            "--provider",
            "anthropic",
            "--base-url",
            &url,
            "--output-format",
            "stream-json",
        ],
        "one\ntwo\nthree\n",
        &[("ANTHROPIC_API_KEY", "sk-ant-test")],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let usage = server.cache_usage();
    assert_eq!(usage.len(), 3, "{usage:?}");
    let sum = usage.iter().fold(CacheUsage::default(), |a, u| CacheUsage {
        input: a.input + u.input,
        read: a.read + u.read,
        written: a.written + u.written,
    });
    assert!(
        sum.read > 0 && sum.written > 0,
        "the cache was used: {sum:?}"
    );
    let last = totals(&env).pop().unwrap();
    assert_eq!(last["tokens_in"], sum.total(), "{last}");
    assert_eq!(last["tokens_cached"], sum.read, "{last}");
    assert_eq!(last["tokens_cache_written"], sum.written, "{last}");
    assert_eq!(last["tokens_out"], 18, "{last}");
    // The turn's totals event says them too.
    let event: Value = run
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .rfind(|e| e["type"] == "totals")
        .unwrap();
    assert_eq!(event["tokens_cached"], sum.read, "{event}");
    assert_eq!(event["tokens_cache_written"], sum.written, "{event}");
    // Replay folds the same totals back.
    let log = env.only_session();
    let check = env.run(&["replay", log.to_str().unwrap(), "--check"], "");
    assert_eq!(check.code, Some(0), "{check:?}");
}

/// Without a prompt cache, the totals hold no cache fields at all, so logs
/// where nothing was cached read as they did before.
#[test]
fn no_cache_fields_where_nothing_was_cached() {
    let env = TestEnv::new("cost-uncached");
    let server = FakeServer::start_anthropic(vec![answer("One.", 5)]).unwrap();
    let url = server.url();
    let run = env.run_env(
        &["--provider", "anthropic", "--base-url", &url],
        "one\n",
        &[("ANTHROPIC_API_KEY", "sk-ant-test")],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let last = totals(&env).pop().unwrap();
    assert!(last.get("tokens_cached").is_none(), "{last}");
    assert!(last.get("tokens_cache_written").is_none(), "{last}");
}

/// Writes the config file.
fn write_config(env: &TestEnv, text: &str) {
    let dir = env.home.join(".config/task-agent");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("config.json"), text).unwrap();
}

/// `config show --json`'s window: its value and where it came from.
fn shown_window(env: &TestEnv, args: &[&str]) -> (Value, String) {
    let mut all = vec!["config", "show", "--json"];
    all.extend_from_slice(args);
    let run = env.run(&all, "");
    assert_eq!(run.code, Some(0), "{run:?}");
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    let w = &doc["settings"]["window"];
    (w["value"].clone(), w["source"].as_str().unwrap().to_owned())
}

/// A known model's window replaces the 128k default, a flag or the config
/// file's `window` still win, and the config file's `models` adds a model
/// or changes a shipped one; a mistyped key in it is an error naming it.
#[test]
fn a_known_models_window_replaces_the_default() {
    let env = TestEnv::new("cost-window");
    let anthropic = ["--provider", "anthropic"];
    assert_eq!(
        shown_window(
            &env,
            &[&anthropic[..], &["--model", "claude-sonnet-4-5"]].concat()
        ),
        (200_000.into(), "table".into())
    );
    assert_eq!(
        shown_window(&env, &["--model", "never-heard-of-it"]),
        (128_000.into(), "default".into())
    );
    assert_eq!(
        shown_window(&env, &["--model", "gpt-4o-mini", "--window", "50000"]),
        (50_000.into(), "flag".into())
    );
    write_config(
        &env,
        r#"{"models": {"my-local": {"window": 65536}, "gpt-4o-mini": {"window": 100000}}}"#,
    );
    assert_eq!(
        shown_window(&env, &["--model", "my-local"]),
        (65_536.into(), "table".into())
    );
    assert_eq!(
        shown_window(&env, &["--model", "gpt-4o-mini"]),
        (100_000.into(), "table".into())
    );
    let run = env.run(&["config", "show"], "");
    assert!(
        run.stdout
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>()
                == ["models", r#"["gpt-4o-mini","my-local"]"#, "config"]),
        "{run:?}"
    );
    // The session's header says the window it ran with.
    let server = FakeServer::start(vec![answer("Hi.", 1)]).unwrap();
    let url = server.url();
    let run = env.run(&["--base-url", &url, "--model", "my-local"], "hello\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(records(&env.only_session())[0]["window"], 65_536);

    write_config(&env, r#"{"models": {"my-local": {"windw": 65536}}}"#);
    let run = env.run(&["config", "show"], "");
    assert_eq!(run.code, Some(2), "{run:?}");
    assert!(
        run.stderr.contains("windw") && run.stderr.contains("config.json"),
        "{run:?}"
    );
}

/// `revolve models` gives the window and prices of the models the table
/// knows, and nothing more for the others.
#[test]
fn models_shows_windows_and_prices() {
    let ids = vec![
        "gpt-5.4-mini".to_owned(),
        "ft:something-of-mine".to_owned(),
        "gpt-4o-mini".to_owned(),
    ];
    let server =
        FakeServer::start(vec![FakeReply::Models(ids.clone()), FakeReply::Models(ids)]).unwrap();
    let env = TestEnv::new("cost-models");
    let url = server.url();
    let vars = [("OPENAI_API_KEY", "sk-test")];
    let run = env.run_env(&["models", "--base-url", &url], "", &vars);
    assert_eq!(run.code, Some(0), "{run:?}");
    insta::assert_snapshot!("models_with_prices", run.stdout);
    let run = env.run_env(&["models", "--json", "--base-url", &url], "", &vars);
    let doc: Value = serde_json::from_str(&run.stdout).unwrap();
    let mini = &doc["models"][0];
    assert_eq!(mini["window"], 272_000, "{doc}");
    assert_eq!(mini["prices"]["cached_input"], 0.075, "{doc}");
    assert_eq!(mini["prices"]["output"], 4.5, "{doc}");
    assert_eq!(
        doc["models"][1],
        serde_json::json!({"id": "ft:something-of-mine"})
    );
}

/// An OpenAI stream of `text` whose usage says `prompt` tokens, `cached` of
/// them read from the prompt cache, and `completion` out.
fn openai_cached(text: &str, prompt: u64, cached: u64, completion: u64) -> FakeReply {
    let chunk = serde_json::json!({"id": "c", "object": "chat.completion.chunk", "choices": [
        {"index": 0, "delta": {"content": text}, "finish_reason": null}]});
    let usage = serde_json::json!({"id": "c", "object": "chat.completion.chunk", "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                  "total_tokens": prompt + completion,
                  "prompt_tokens_details": {"cached_tokens": cached}}});
    FakeReply::Garbage(format!(
        "data: {chunk}\n\ndata: {usage}\n\ndata: [DONE]\n\n"
    ))
}

/// `/cost` says the tokens in, cached and out, and what they cost at the
/// model's prices from the table; the totals keep the cost, and the
/// status row shows it.
#[test]
fn cost_says_tokens_and_money_at_a_known_models_prices() {
    let env = TestEnv::new("cost-slash");
    let server = FakeServer::start(vec![
        openai_cached("One.", 2006, 1920, 300),
        openai_cached("Two.", 2006, 1920, 300),
    ])
    .unwrap();
    let url = server.url();
    let run = env.run_env(
        &[
            "--base-url",
            &url,
            "--model",
            "gpt-5.4-mini",
            "--max-cost",
            "5",
            "--name",
            "spend",
        ],
        "one\ntwo\n/cost\n/status\n",
        &[("OPENAI_API_KEY", "sk-test")],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let shown: String = run
        .stderr_lines()
        .into_iter()
        .filter(|l| {
            ["tokens:", "cost:", "limit:"]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .map(|l| format!("{l}\n"))
        .collect();
    insta::assert_snapshot!("cost_gpt_5_4_mini", shown);
    // Per request: 86 plain input tokens at $0.75/M, 1920 cached at
    // $0.075/M and 300 out at $4.5/M: 1,558,500 nano-dollars.
    let last = totals(&env).pop().unwrap();
    assert_eq!(last["cost"], 2 * 1_558_500, "{last}");
    assert!(
        run.stderr_lines()
            .iter()
            .any(|l| l.starts_with("spend · gpt-5.4-mini · 2 turns") && l.ends_with(" · $0.0031")),
        "{run:?}"
    );
    // `revolve sessions --json` says the same, from the file and then
    // from the listing cache.
    for _ in 0..2 {
        let listed = env.run(&["sessions", "--json"], "");
        assert_eq!(listed.code, Some(0), "{listed:?}");
        let doc: Value = serde_json::from_str(&listed.stdout).unwrap();
        let s = &doc[0];
        assert_eq!(
            (
                &s["name"],
                &s["tokens_in"],
                &s["tokens_cached"],
                &s["tokens_out"],
                &s["cost_nano_usd"]
            ),
            (
                &"spend".into(),
                &4012.into(),
                &3840.into(),
                &600.into(),
                &3_117_000.into()
            ),
            "{doc}"
        );
    }
}

/// `--max-cost` stops a goal run before the request expected to pass it:
/// one line says so, the exit is 1, the stop is logged as its own reason,
/// and the log replays.
#[test]
fn max_cost_stops_a_goal_run_before_the_request_that_would_pass_it() {
    let env = TestEnv::new("cost-max");
    // Input free, output $1000 a million (a tenth of a cent a token): each
    // answer below costs $0.50, and a request is expected to bring an
    // answer of at least 1,024 tokens ($1.024).
    write_config(
        &env,
        r#"{"models": {"pricey": {"window": 100000, "input": 0, "output": 1000}}}"#,
    );
    assert_eq!(env.run(&["goal", "finish the work"], "").code, Some(0));
    let reply = |text: &str| FakeReply::Stream {
        chunks: vec![text.into()],
        usage: Some((100, 500)),
    };
    let server = FakeServer::start(vec![
        reply("Step one."),
        reply("Step two."),
        reply("never sent"),
    ])
    .unwrap();
    let url = server.url();
    let run = env.run_env(
        &[
            "--base-url",
            &url,
            "--model",
            "pricey",
            "--goal-run",
            "--max-turns",
            "5",
            "--max-cost",
            "2",
        ],
        "",
        &[("OPENAI_API_KEY", "sk-test")],
    );
    // $0 + $1.024 and $0.50 + $1.024 fit under $2; $1.00 + $1.024 does not.
    assert_eq!(run.code, Some(1), "{run:?}");
    assert_eq!(server.requests().len(), 2, "{run:?}");
    assert_eq!(run.stdout, "Step one.\nStep two.\n");
    assert!(
        run.stderr_lines().contains(
            &"revolve: stopped before a request: the session has cost $1.0000 and the next \
              request would bring it to about $2.0240, past --max-cost $2.0000 (raise \
              --max-cost, or max_cost in config.json)"
        ),
        "{run:?}"
    );
    let recs = records(&env.only_session());
    let stopped = recs.iter().rfind(|r| r["type"] == "stopped").unwrap();
    assert_eq!(
        (
            &stopped["reason"],
            &stopped["spent"],
            &stopped["expected"],
            &stopped["max"]
        ),
        (
            &"budget".into(),
            &1_000_000_000u64.into(),
            &2_024_000_000u64.into(),
            &2_000_000_000u64.into()
        ),
        "{stopped}"
    );
    assert!(!recs.iter().any(|r| r["type"] == "failed"), "not a failure");
    let log = env.only_session();
    let check = env.run(&["replay", log.to_str().unwrap(), "--check"], "");
    assert_eq!(check.code, Some(0), "{check:?}");
}

/// `/model NAME` between turns: the next request asks that model with the
/// table's window for it (its answer limit follows), the switch is a
/// `model_changed` record, and `replay --requests` rebuilds the bodies the
/// server received, byte for byte, before the switch and after it; a
/// resume keeps the new model.
#[test]
fn model_switches_mid_session_and_replays_exactly() {
    let env = TestEnv::new("cost-model");
    let server = FakeServer::start(vec![
        answer("One.", 1),
        answer("Two.", 1),
        answer("Three.", 1),
    ])
    .unwrap();
    let url = server.url();
    let vars = [("OPENAI_API_KEY", "sk-test")];
    let run = env.run_env(
        &["--base-url", &url],
        "one\n/model gpt-4o-mini\ntwo\n",
        &vars,
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        run.stderr_lines().contains(
            &"model gpt-4o-mini from the next request on; window 128000 tokens (the model table)"
        ),
        "{run:?}"
    );
    let bodies: Vec<Value> = server
        .requests()
        .iter()
        .map(|r| serde_json::from_str(&r.body).unwrap())
        .collect();
    assert_eq!(
        (&bodies[0]["model"], &bodies[0]["max_completion_tokens"]),
        (&"gpt-5.6-terra".into(), &32_000.into())
    );
    assert_eq!(
        (&bodies[1]["model"], &bodies[1]["max_tokens"]),
        (&"gpt-4o-mini".into(), &12_800.into()),
        "the room of gpt-4o-mini's 128k window"
    );
    let recs = records(&env.only_session());
    let changed = recs.iter().find(|r| r["type"] == "model_changed").unwrap();
    assert_eq!(
        (&changed["model"], &changed["window"]),
        (&"gpt-4o-mini".into(), &128_000.into())
    );
    let sent = || -> String {
        server
            .requests()
            .iter()
            .map(|r| format!("{}\n", r.body))
            .collect()
    };
    assert_eq!(env.ok(&["replay", "--requests"]).stdout, sent());
    // A resumed run asks the model the session switched to.
    let run = env.run_env(&["--base-url", &url, "-c"], "three\n", &vars);
    assert_eq!(run.code, Some(0), "{run:?}");
    let third: Value = serde_json::from_str(&server.requests()[2].body).unwrap();
    assert_eq!(third["model"], "gpt-4o-mini");
    assert_eq!(env.ok(&["replay", "--requests"]).stdout, sent());
}

/// `--effort` and `/effort` set OpenAI's `reasoning_effort` from the next
/// request on, logged as `effort` records so replay rebuilds the bodies
/// exactly; config `effort` is the default, `/effort default` drops it.
#[test]
fn effort_sets_reasoning_effort_and_replays_exactly() {
    let env = TestEnv::new("cost-effort");
    let server = FakeServer::start(vec![
        answer("One.", 1),
        answer("Two.", 1),
        answer("Three.", 1),
        answer("Four.", 1),
    ])
    .unwrap();
    let url = server.url();
    let vars = [("OPENAI_API_KEY", "sk-test")];
    let run = env.run_env(
        &["--base-url", &url, "--effort", "high"],
        "one\n/effort low\ntwo\n/effort default\nthree\n/effort extreme\n",
        &vars,
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(
        run.stderr_lines()
            .contains(&"/effort \"extreme\": give low, medium or high"),
        "{run:?}"
    );
    let efforts: Vec<Value> = server
        .requests()
        .iter()
        .map(|r| serde_json::from_str::<Value>(&r.body).unwrap()["reasoning_effort"].clone())
        .collect();
    assert_eq!(efforts, [Value::from("high"), "low".into(), Value::Null]);
    let sent: String = server
        .requests()
        .iter()
        .map(|r| format!("{}\n", r.body))
        .collect();
    assert_eq!(env.ok(&["replay", "--requests"]).stdout, sent);
    // The config file's effort, for a new session.
    write_config(&env, r#"{"effort": "medium"}"#);
    let run = env.run_env(&["--base-url", &url, "-p", "four"], "", &vars);
    assert_eq!(run.code, Some(0), "{run:?}");
    let fourth: Value = serde_json::from_str(&server.requests()[3].body).unwrap();
    assert_eq!(fourth["reasoning_effort"], "medium");
}

/// `--effort high` against Anthropic turns on extended thinking: both
/// requests of the default model (Claude 4.6 or later) think adaptively at
/// effort high, with `max_tokens` raised by the high budget; the
/// thinking the fake streamed (text and signature) is kept in the log,
/// not shown, and sent back unchanged before the tool call (the fake
/// refuses the follow-up otherwise, as the API does); `/effort default`
/// turns it off; `replay --requests` rebuilds every body the fake got.
#[test]
fn effort_thinks_on_anthropic_and_sends_the_thinking_back() {
    let env = TestEnv::new("cost-thinking");
    std::fs::write(env.cwd.join("notes.txt"), "port 5432\n").unwrap();
    let call = [("toolu_1", "read_file", r#"{"path":"notes.txt"}"#)];
    let server = FakeServer::start_anthropic(vec![
        FakeReply::thinks("The notes first.", FakeReply::tool_calls("", &call)),
        FakeReply::thinks(
            "Port 5432, said plainly.",
            FakeReply::text("It says port 5432."),
        ),
        FakeReply::text("You are welcome."),
    ])
    .unwrap();
    let url = server.url();
    let run = env.run_env(
        &[
            "--provider",
            "anthropic",
            "--base-url",
            &url,
            "--effort",
            "high",
        ],
        "what do my notes say?\n/effort default\nthanks\n",
        &[("ANTHROPIC_API_KEY", "sk-ant-test")],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stdout.contains("It says port 5432."), "{run:?}");
    assert!(
        !run.stdout.contains("notes first"),
        "thinking is not shown: {run:?}"
    );
    assert!(
        !run.stderr.contains("notes first"),
        "thinking is not shown: {run:?}"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "{requests:?}");
    let bodies: Vec<Value> = requests
        .iter()
        .map(|r| serde_json::from_str(&r.body).unwrap())
        .collect();
    let budget = revolve_core::models::Effort::High.thinking_budget();
    for body in &bodies[..2] {
        assert_eq!(body["thinking"], serde_json::json!({"type": "adaptive"}));
        assert_eq!(body["output_config"], serde_json::json!({"effort": "high"}));
        assert_eq!(body["max_tokens"], 32_000 + budget, "the room, raised");
        assert!(body.get("temperature").is_none());
    }
    let signature = revolve_testkit::thinking::signature("The notes first.");
    assert_eq!(
        bodies[1]["messages"][1]["content"][0],
        serde_json::json!({"type": "thinking", "thinking": "The notes first.", "signature": signature})
    );
    // Thinking off: no budget, no blocks sent back, the old limit.
    assert!(bodies[2].get("thinking").is_none());
    assert!(bodies[2].get("output_config").is_none());
    assert!(!requests[2].body.contains("\"signature\""));
    assert!(!requests[2].body.contains("notes first"));
    assert_eq!(bodies[2]["max_tokens"], 32_000);
    // The log keeps the blocks with their messages.
    let kept: Vec<Value> = records(&env.only_session())
        .into_iter()
        .filter(|r| r["role"] == "assistant")
        .map(|r| r["thinking"].clone())
        .collect();
    assert_eq!(
        kept,
        [
            serde_json::json!([{"type": "thinking", "thinking": "The notes first.", "signature": signature}]),
            serde_json::json!([{"type": "thinking", "thinking": "Port 5432, said plainly.",
                "signature": revolve_testkit::thinking::signature("Port 5432, said plainly.")}]),
            Value::Null,
        ]
    );
    let sent: String = requests.iter().map(|r| format!("{}\n", r.body)).collect();
    assert_eq!(env.ok(&["replay", "--requests"]).stdout, sent);
    // The follow-up, its system prompt and tools aside.
    let mut second = bodies[1].clone();
    second["system"] = Value::from("[SYSTEM]");
    second["tools"] = Value::from("[TOOLS]");
    let shown = serde_json::to_string_pretty(&second).unwrap();
    insta::with_settings!({filters => env.filters()}, {
        insta::assert_snapshot!("anthropic_thinking_follow_up", shown);
    });
}

/// A model before Claude 4.6 (`--model claude-sonnet-4-5`, a 200k window)
/// thinks on a budget: `--effort medium` asks 8,192 tokens of it, above
/// the 1,024 the API needs and below `max_tokens` (the room, 20,000,
/// raised by it); the follow-up sends the thinking back and is accepted,
/// and replay rebuilds both bodies.
#[test]
fn effort_thinks_on_a_budget_before_claude_4_6() {
    let env = TestEnv::new("cost-thinking-budget");
    std::fs::write(env.cwd.join("notes.txt"), "port 5432\n").unwrap();
    let call = [("toolu_1", "read_file", r#"{"path":"notes.txt"}"#)];
    let server = FakeServer::start_anthropic(vec![
        FakeReply::thinks("The notes first.", FakeReply::tool_calls("", &call)),
        FakeReply::text("It says port 5432."),
    ])
    .unwrap();
    let url = server.url();
    let run = env.run_env(
        &[
            "--provider",
            "anthropic",
            "--base-url",
            &url,
            "--model",
            "claude-sonnet-4-5",
            "--effort",
            "medium",
        ],
        "what do my notes say?\n",
        &[("ANTHROPIC_API_KEY", "sk-ant-test")],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stdout.contains("It says port 5432."), "{run:?}");
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "{requests:?}");
    for r in &requests {
        let body: Value = serde_json::from_str(&r.body).unwrap();
        assert_eq!(
            body["thinking"],
            serde_json::json!({"type": "enabled", "budget_tokens": 8_192})
        );
        assert!(body.get("output_config").is_none());
        assert_eq!(body["max_tokens"], 20_000 + 8_192);
    }
    let second: Value = serde_json::from_str(&requests[1].body).unwrap();
    assert_eq!(second["messages"][1]["content"][0]["type"], "thinking");
    let sent: String = requests.iter().map(|r| format!("{}\n", r.body)).collect();
    assert_eq!(env.ok(&["replay", "--requests"]).stdout, sent);
}
