//! The window against servers that say no: a fake server that enforces a
//! real context limit and refuses an oversized request with each
//! provider's own error body. Every scenario checks that the requests that
//! went out fit, that what gave way is said on stderr and in the log, and
//! that the log replays byte for byte.

use revolve_testkit::{
    FakeOptions, FakeProtocol, FakeReply, FakeServer, Limit, Overflows, Recorded,
};
use serde_json::{json, Value};

use crate::common::{records, Run, TestEnv};

/// A server with a context of `tokens` at four bytes a token.
fn limited(replies: Vec<FakeReply>, tokens: u64, says: Overflows, usage: bool) -> FakeServer {
    let protocol = match says {
        Overflows::Anthropic => FakeProtocol::Anthropic,
        _ => FakeProtocol::OpenAi,
    };
    let limit = Limit {
        tokens,
        bytes_per_token: 4,
        says,
        usage,
    };
    FakeServer::start_limited(protocol, replies, Some(limit)).expect("start the fake server")
}

/// The model reads `files` one by one, then answers.
fn reads(files: &[&str], answer: &str) -> Vec<FakeReply> {
    let mut replies: Vec<FakeReply> = files
        .iter()
        .enumerate()
        .map(|(i, f)| {
            FakeReply::tool_calls(
                "",
                &[(
                    &format!("r{i}"),
                    "read_file",
                    &json!({ "path": f }).to_string(),
                )],
            )
        })
        .collect();
    replies.push(FakeReply::text(answer));
    replies
}

/// Files of `chars` characters each, lines that say which file and line.
fn write_files(env: &TestEnv, names: &[&str], chars: usize) {
    for name in names {
        let mut text = String::new();
        let mut n = 0;
        while text.len() < chars {
            text.push_str(&format!("{name} line {n}: the quick brown fox jumps\n"));
            n += 1;
        }
        std::fs::write(env.cwd.join(name), text).unwrap();
    }
}

/// What revolve said about the window and compaction.
fn gave_way(run: &Run) -> String {
    run.stderr
        .lines()
        .filter(|l| l.starts_with("window:") || l.starts_with("compaction:"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The log replays: `--check` finds nothing wrong, and `--requests`
/// rebuilds every request the server received, refused ones too.
fn replays(env: &TestEnv, server: &FakeServer) {
    let check = env.run(&["replay", "--check"], "");
    assert_eq!(check.code, Some(0), "{check:?}");
    assert!(check.stdout.contains(" 0 inconsistencies"), "{check:?}");
    let sent: String = server
        .requests()
        .iter()
        .map(|r| format!("{}\n", r.body))
        .collect();
    let rebuilt = env.run(&["replay", "--requests"], "");
    assert!(
        rebuilt.stdout == sent,
        "replay --requests differs from what was sent"
    );
}

/// How many of the server's requests it refused as too large.
fn refused(server: &FakeServer, tokens: u64) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| (r.body.len() as u64).div_ceil(4) > tokens)
        .count()
}

/// One turn that reads five 20k-character files under a 24k window: the
/// request after the last read would be about 10% over, so the oldest
/// results in the turn are pruned first, and no request is refused.
#[test]
fn one_turn_that_reads_a_few_files_fits() {
    let env = TestEnv::new("reads");
    let files = ["a.txt", "b.txt", "c.txt", "d.txt", "e.txt"];
    write_files(&env, &files, 20_000);
    let server = limited(
        reads(&files, "Read them all."),
        24_000,
        Overflows::OpenAi,
        true,
    );
    let url = server.url();
    let run = env.run(
        &[
            "--base-url",
            &url,
            "--window",
            "24000",
            "-p",
            "read all five",
        ],
        "",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout.trim(), "Read them all.");
    assert_eq!(refused(&server, 24_000), 0, "a request went over the limit");
    assert_eq!(server.requests().len(), 6);
    insta::with_settings!({filters => env.filters()}, {
        insta::assert_snapshot!("reads_gave_way", gave_way(&run));
    });
    let log = records(&env.only_session());
    assert!(
        log.iter().any(|r| r["type"] == "pruned"),
        "the pruning is logged"
    );
    replays(&env, &server);
}

/// The same reads against servers whose real context (8,000 tokens) is far
/// below the declared window (the default 128k), each answering with its
/// own words: the overflow is recognised, the window lowered and logged,
/// the request compacted to it and sent once more, and the turn completes.
/// A 500 from Ollama is not retried as a server failure.
#[test]
fn a_server_below_the_declared_window_lowers_it() {
    for says in [
        Overflows::OpenAi,
        Overflows::Vllm,
        Overflows::Anthropic,
        Overflows::LlamaCpp,
        Overflows::Ollama,
    ] {
        let env = TestEnv::new("lowered");
        let files = ["a.txt", "b.txt", "c.txt"];
        write_files(&env, &files, 9_000);
        let server = limited(reads(&files, "Done."), 8_000, says, true);
        let url = server.url();
        let mut args = vec!["--base-url", url.as_str(), "-p", "read all three"];
        if says == Overflows::Anthropic {
            args.extend(["--provider", "anthropic"]);
        }
        let run = env.run_env(
            &args,
            "",
            &[
                ("REVOLVE_RETRIES", "3"),
                ("ANTHROPIC_API_KEY", "sk-ant-test0"),
            ],
        );
        assert_eq!(run.code, Some(0), "{says:?}: {run:?}");
        assert_eq!(run.stdout.trim(), "Done.", "{says:?}");
        assert_eq!(
            refused(&server, 8_000),
            1,
            "{says:?}: refused once, never retried as such"
        );
        let log = records(&env.only_session());
        let lowered: Vec<&Value> = log.iter().filter(|r| r["type"] == "overflowed").collect();
        assert_eq!(lowered.len(), 1, "{says:?}");
        let window = lowered[0]["window"].as_u64().unwrap();
        match says {
            // These name the limit.
            Overflows::OpenAi
            | Overflows::Vllm
            | Overflows::Anthropic
            | Overflows::LlamaCpp
            | Overflows::Gemini => {
                assert_eq!(window, 8_000, "{says:?}")
            }
            // Ollama does not: below the size that failed.
            Overflows::Ollama => assert!(window < 128_000 && window > 0, "{window}"),
            // Not in this loop: see the tests below.
            Overflows::LlamaCppPython | Overflows::Truncates | Overflows::Responses => {
                unreachable!("{says:?}")
            }
        }
        assert!(
            run.stderr
                .lines()
                .any(|l| l.starts_with("window: the request is larger than the server's context")),
            "{says:?}: {run:?}"
        );
        replays(&env, &server);
    }
}

/// A server that sends no usage in its streams: the totals are estimated,
/// marked so, and not stuck at zero.
#[test]
fn streams_without_usage_are_estimated() {
    let env = TestEnv::new("no-usage");
    let server = limited(
        vec![FakeReply::text("One."), FakeReply::text("Two.")],
        100_000,
        Overflows::LlamaCpp,
        false,
    );
    let url = server.url();
    let run = env.run(&["--base-url", &url], "first\nsecond\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    let log = records(&env.only_session());
    let totals: Vec<&Value> = log.iter().filter(|r| r["type"] == "totals").collect();
    let last = totals.last().unwrap();
    assert!(last["tokens_in"].as_u64().unwrap() > 1_000, "{last}");
    assert!(last["tokens_out"].as_u64().unwrap() > 0, "{last}");
    assert_eq!(last["estimated"], true);
    assert_eq!(last["in_out_estimated"], true);
}

/// Forty turns with 3.5 KB answers (about 35k tokens in all), under the
/// default window, against a server that counts truthfully.
fn grow_long_session(env: &TestEnv) {
    let long = |i: usize| {
        format!(
            "answer {i}: {}",
            "the port is 5432 and the host is db1. ".repeat(90)
        )
    };
    let grow = limited(
        (0..40).map(|i| FakeReply::text(&long(i))).collect(),
        1_000_000,
        Overflows::OpenAi,
        true,
    );
    let lines: String = (0..40).map(|i| format!("question {i}\n")).collect();
    let url = grow.url();
    let run = env.run(&["--base-url", &url], &lines);
    assert_eq!(run.code, Some(0), "{run:?}");
}

/// A session grown under a 128k window, resumed under 24k: the part before
/// the kept turns no longer fits one summary request, so it is summarized
/// in pieces, each under the server's limit, and the turn goes on from the
/// last piece's notes in a fresh file.
#[test]
fn a_session_grown_large_resumed_small_is_summarized_in_pieces() {
    let env = TestEnv::new("pieces");
    grow_long_session(&env);

    let notes = "Facts: the port is 5432, the host is db1.";
    let server = limited(
        (0..20).map(|_| FakeReply::text(notes)).collect(),
        24_000,
        Overflows::OpenAi,
        true,
    );
    let url = server.url();
    let run = env.run(
        &[
            "--base-url",
            &url,
            "--window",
            "24000",
            "--continue",
            "-p",
            "and now?",
        ],
        "",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(refused(&server, 24_000), 0, "a request went over the limit");
    assert!(
        run.stderr
            .contains("summarizing them in pieces, each carrying the notes so far"),
        "{run:?}"
    );
    let files = env.session_files();
    assert_eq!(files.len(), 2, "the session went on in a fresh file");
    let old = files
        .iter()
        .map(|f| records(f))
        .find(|r| r.iter().any(|x| x["type"] == "noted"))
        .expect("the pieces' notes are logged");
    let pieces = old.iter().filter(|r| r["type"] == "compacting").count();
    assert!(pieces >= 2, "{pieces} pieces");
    // Each said on stderr as "piece k of about n" (issue 32).
    assert!(
        run.stderr.contains("compaction: piece 2 of about "),
        "{run:?}"
    );
    // Each later piece's request carries the notes so far.
    let summaries: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.body.clone())
        .filter(|b| b.contains("Write those working notes now"))
        .collect();
    assert_eq!(summaries.len(), pieces);
    assert!(summaries[1..]
        .iter()
        .all(|b| b.contains("[Your notes so far]")));
    for file in &files {
        let check = env.run(&["replay", "--check", file.to_str().unwrap()], "");
        assert_eq!(check.code, Some(0), "{check:?}");
    }
}

/// The project memory directory of `env` (no workspace: under the config
/// root, by the working directory's slug).
fn project_memory(env: &TestEnv) -> std::path::PathBuf {
    let slug = env.cwd.to_str().unwrap().replace('/', "-");
    env.home
        .join(".config/task-agent/projects")
        .join(slug)
        .join("memory")
}

/// `/refine` reads what the session really holds: a tool result whole, not
/// its first line.
#[test]
fn a_refinement_reads_tool_results_whole() {
    let env = TestEnv::new("refine-real");
    let mut text = String::from("# settings\n");
    for i in 0..50 {
        text.push_str(&format!("key{i} = value{i}\n"));
    }
    text.push_str("DB_PORT = 6543\n");
    std::fs::write(env.cwd.join("settings.toml"), text).unwrap();
    let server = FakeServer::start(vec![
        FakeReply::tool_calls("", &[("r1", "read_file", r#"{"path":"settings.toml"}"#)]),
        FakeReply::text("Read it."),
        FakeReply::text(r#"{"files": []}"#),
    ])
    .unwrap();
    let url = server.url();
    let run = env.run(&["--base-url", &url], "read settings.toml\n/refine\n");
    assert_eq!(run.code, Some(0), "{run:?}");
    let refine = &server.requests()[2].body;
    assert!(
        refine.contains("DB_PORT = 6543"),
        "the refinement did not read the result"
    );
    assert!(refine.contains(r#"[tool call r1 read_file] {\"path\":\"settings.toml\"}"#));
}

/// A session larger than the window is refined in pieces, each under the
/// server's limit; a malformed answer to one piece changes nothing and says
/// so, the others' changes are written as one snapshot entry.
#[test]
fn a_refinement_larger_than_the_window_is_read_in_pieces() {
    let env = TestEnv::new("refine-pieces");
    grow_long_session(&env);

    let good = r#"{"files": [{"file": "project/db.md", "content": "The database listens on 5432 on db1.\n", "change": "where the database is"}]}"#;
    let mut replies = vec![FakeReply::text("not JSON at all")];
    replies.extend((0..10).map(|_| FakeReply::text(good)));
    let server = limited(replies, 24_000, Overflows::OpenAi, true);
    let url = server.url();
    let run = env.run(
        &["--base-url", &url, "--window", "24000", "--continue"],
        "/refine\n",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(refused(&server, 24_000), 0, "a piece went over the limit");
    let parts = server.requests().len();
    assert!(parts >= 2, "{parts} requests");
    assert!(
        run.stderr
            .contains(&format!("the model reads it in {parts} parts")),
        "{run:?}"
    );
    assert!(
        run.stderr.contains(&format!(
            "refinement (part 1 of {parts}): the answer was not usable (the answer holds no JSON object); that part changes nothing"
        )),
        "{run:?}"
    );
    let written = std::fs::read_to_string(project_memory(&env).join("db.md")).unwrap();
    assert_eq!(written, "The database listens on 5432 on db1.\n");
    // The log counts every piece as a request.
    let log = records(&env.only_session());
    let refined = log.iter().find(|r| r["type"] == "refined").unwrap();
    assert_eq!(refined["pieces"], parts as u64);
    let check = env.run(&["replay", "--check"], "");
    assert_eq!(check.code, Some(0), "{check:?}");
}

/// With no window given, a new session asks the server for its context:
/// llama.cpp's `/props`, Ollama's `/api/show`, OpenRouter's model list.
/// `config show` says it came from the server; `--window` overrides it.
#[test]
fn the_window_is_learned_from_the_server() {
    let json = |v: Value| FakeReply::Status {
        code: 200,
        body: v.to_string(),
        retry_after: None,
    };
    let cases = [
        (
            "llamacpp",
            json(json!({"default_generation_settings": {"n_ctx": 8192}, "total_slots": 1})),
            "/props",
            8192,
        ),
        (
            "ollama",
            json(
                json!({"parameters": "num_ctx 16384", "model_info": {"llama.context_length": 131072}}),
            ),
            "/api/show",
            16384,
        ),
        (
            "openrouter",
            json(json!({"data": [{"id": "openai/gpt-5.6-terra", "context_length": 64000}]})),
            "/v1/models",
            64000,
        ),
    ];
    for (preset, answer, path, window) in cases {
        let env = TestEnv::new("learn");
        let server =
            FakeServer::start(vec![answer.clone(), FakeReply::text("Hi."), answer]).unwrap();
        let url = server.url();
        let vars = [("OPENROUTER_API_KEY", "sk-or-test")];
        let run = env.run_env(
            &["--provider", preset, "--base-url", &url, "-p", "hello"],
            "",
            &vars,
        );
        assert_eq!(run.code, Some(0), "{preset}: {run:?}");
        assert_eq!(server.requests()[0].path, path, "{preset}");
        let header = &records(&env.only_session())[0];
        assert_eq!(header["window"], window, "{preset}");
        let shown = env.run_env(
            &[
                "config",
                "show",
                "--json",
                "--provider",
                preset,
                "--base-url",
                &url,
            ],
            "",
            &vars,
        );
        let doc: Value = serde_json::from_str(&shown.stdout).expect("config show --json");
        assert_eq!(
            doc["settings"]["window"],
            json!({"value": window, "source": "server"}),
            "{preset}"
        );
        // A window given wins, and nothing is asked (Ollama, which cuts
        // an overlong prompt silently, is asked all the same: see
        // `ollamas_running_context_is_learned_before_the_first_request`).
        if preset == "ollama" {
            continue;
        }
        let server = FakeServer::start(vec![FakeReply::text("Hi.")]).unwrap();
        let url = server.url();
        let env = TestEnv::new("learn-given");
        let run = env.run_env(
            &[
                "--provider",
                preset,
                "--base-url",
                &url,
                "--window",
                "5000",
                "-p",
                "hello",
            ],
            "",
            &vars,
        );
        assert_eq!(run.code, Some(0), "{preset}: {run:?}");
        assert_eq!(server.requests().len(), 1);
        assert_eq!(records(&env.only_session())[0]["window"], 5000);
    }
}

/// Ollama runs a model at its own context (4,096 tokens by default,
/// whatever the model was trained for) and cuts a longer prompt silently,
/// so its running context is learned before the first request: the
/// Modelfile's `num_ctx`, else `/api/ps` of the loaded model, loading it
/// first when it is not; a window given that is larger is lowered to it,
/// said on stderr; with nothing said, Ollama's default is the window.
#[test]
fn ollamas_running_context_is_learned_before_the_first_request() {
    let json = |v: Value| FakeReply::Status {
        code: 200,
        body: v.to_string(),
        retry_after: None,
    };
    let show = json(json!({"model_info": {"llama.context_length": 131072}}));
    let none_loaded = json(json!({"models": []}));
    let loaded = |n: u64| {
        json(
            json!({"models": [{"name": "llama3.2:latest", "model": "llama3.2:latest",
            "context_length": n}]}),
        )
    };
    let generated = json(json!({"model": "llama3.2", "response": "", "done": true}));
    let not_found = FakeReply::Status {
        code: 404,
        body: "404 page not found".into(),
        retry_after: None,
    };
    let cases = [
        // Loaded already: its context, though a window was given.
        (
            vec![show.clone(), loaded(8192), FakeReply::text("Hi.")],
            Some("32768"),
            vec!["/api/show", "/api/ps", "/v1/chat/completions"],
            8192,
        ),
        // Not loaded: loaded first, then asked.
        (
            vec![
                show.clone(),
                none_loaded.clone(),
                generated,
                loaded(6144),
                FakeReply::text("Hi."),
            ],
            None,
            vec![
                "/api/show",
                "/api/ps",
                "/api/generate",
                "/api/ps",
                "/v1/chat/completions",
            ],
            6144,
        ),
        // Nothing says: Ollama's default, not the trained 131,072.
        (
            vec![show, none_loaded, not_found, FakeReply::text("Hi.")],
            None,
            vec![
                "/api/show",
                "/api/ps",
                "/api/generate",
                "/v1/chat/completions",
            ],
            4096,
        ),
    ];
    for (replies, given, paths, window) in cases {
        let env = TestEnv::new("ollama-ctx");
        let server = FakeServer::start(replies).unwrap();
        let url = server.url();
        let mut args = vec![
            "--provider",
            "ollama",
            "--base-url",
            &url,
            "--model",
            "llama3.2",
        ];
        if let Some(w) = given {
            args.extend(["--window", w]);
        }
        args.extend(["-p", "hello"]);
        let run = env.run(&args, "");
        assert_eq!(run.code, Some(0), "{paths:?}: {run:?}");
        let sent: Vec<String> = server.requests().iter().map(|r| r.path.clone()).collect();
        assert_eq!(sent, paths, "{run:?}");
        let header = &records(&env.only_session())[0];
        assert_eq!(header["window"], window, "{paths:?}");
        assert_eq!(
            run.stderr.contains(&format!(
                "window: Ollama runs llama3.2 with a {window}-token context, below the"
            )),
            given.is_some(),
            "{run:?}"
        );
    }
}

/// `--prune-result-chars` below the head and tail is honoured: a
/// 3,000-character result is cut to at most 1,000 characters, in the summary
/// request the way replay rebuilds it.
#[test]
fn a_small_prune_limit_is_honoured() {
    let env = TestEnv::new("prune-small");
    std::fs::write(env.cwd.join("log.txt"), "0123456789".repeat(300)).unwrap();
    let server = FakeServer::start(vec![
        FakeReply::tool_calls("", &[("r1", "read_file", r#"{"path":"log.txt"}"#)]),
        FakeReply::text("One."),
        FakeReply::text("Two."),
        FakeReply::text("Three."),
        FakeReply::text("Four."),
        FakeReply::text("Notes: log.txt holds digits."),
    ])
    .unwrap();
    let url = server.url();
    let run = env.run(
        &["--base-url", &url, "--prune-result-chars", "1000"],
        "one\ntwo\nthree\nfour\n/compact\n",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let files = env.session_files();
    let old = files
        .iter()
        .map(|f| records(f))
        .find(|r| r.iter().any(|x| x["type"] == "pruned"))
        .expect("a pruned record");
    let pruned = old.iter().find(|r| r["type"] == "pruned").unwrap();
    assert_eq!(pruned["keep"], 1000);
    let summary = &server.requests()[5].body;
    let body: Value = serde_json::from_str(summary).unwrap();
    let result = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("the result in the summary request");
    let text = result["content"].as_str().unwrap();
    assert!(
        text.chars().count() <= 1000,
        "{} characters",
        text.chars().count()
    );
    assert!(text.contains("characters cut by compaction"), "{text}");
    replays(&env, &server);
}

/// Whether `request` asked for a stream.
fn streamed(request: &Recorded) -> bool {
    let body: Value = serde_json::from_str(&request.body).unwrap_or_default();
    body["stream"] == true
}

/// llama.cpp's server from llama-cpp-python, kept alive as uvicorn does,
/// with no window given (the preset's `/props` question gets that server's
/// 404): the streamed
/// request over its 8,000-token context gets `200` and an empty stream,
/// which revolve asks again unstreamed, once, and gets the `400` that names
/// the context. The window is lowered to it, the request compacted and
/// sent again, and the turn is answered; nothing is retried blind.
#[test]
fn an_empty_stream_from_llama_cpp_python_is_an_overflow() {
    let env = TestEnv::new("llama-cpp-python");
    let files = ["a.txt", "b.txt", "c.txt"];
    write_files(&env, &files, 9_000);
    let mut replies = vec![FakeReply::Status {
        code: 404,
        body: r#"{"detail":"Not Found"}"#.into(),
        retry_after: None,
    }];
    replies.extend(reads(&files, "Done."));
    // Kept alive, as uvicorn serves it.
    let options = FakeOptions {
        limit: Some(Limit {
            tokens: 8_000,
            bytes_per_token: 4,
            says: Overflows::LlamaCppPython,
            usage: false,
        }),
        keep_alive: true,
        ..FakeOptions::default()
    };
    let server = FakeServer::start_with_options(FakeProtocol::OpenAi, replies, options)
        .expect("start the fake server");
    let url = server.url();
    let run = env.run_env(
        &[
            "--provider",
            "llamacpp",
            "--base-url",
            &url,
            "-p",
            "read all three",
        ],
        "",
        &[("REVOLVE_RETRIES", "3")],
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(run.stdout.trim(), "Done.");
    assert!(!run.stderr.contains("retrying"), "{run:?}");
    assert!(
        run.stderr
            .lines()
            .any(|l| l.starts_with("window: the request is larger than the server's context")),
        "{run:?}"
    );

    let sent = server.requests();
    assert_eq!(sent[0].path, "/props");
    let posts = &sent[1..];
    // One streamed request was too large, and it alone was asked again
    // unstreamed, right after it: two requests for it, not five.
    assert_eq!(refused(&server, 8_000), 2, "{} requests", sent.len());
    let again: Vec<usize> = (0..posts.len()).filter(|&i| !streamed(&posts[i])).collect();
    assert_eq!(again.len(), 1, "sent again unstreamed once");
    let (first, second) = (&posts[again[0] - 1], &posts[again[0]]);
    assert!(streamed(first) && (first.body.len() as u64).div_ceil(4) > 8_000);
    let (a, b): (Value, Value) = (
        serde_json::from_str(&first.body).unwrap(),
        serde_json::from_str(&second.body).unwrap(),
    );
    assert_eq!(a["messages"], b["messages"]);
    assert!(b.get("stream_options").is_none());
    // The request after the overflow fits.
    assert!((posts[again[0] + 1].body.len() as u64).div_ceil(4) <= 8_000);

    let log = records(&env.only_session());
    let lowered: Vec<&Value> = log.iter().filter(|r| r["type"] == "overflowed").collect();
    assert_eq!(lowered.len(), 1, "{log:?}");
    assert_eq!(lowered[0]["window"], 8_000);
    assert!(!log.iter().any(|r| r["type"] == "failed"), "{log:?}");

    // The log rebuilds every request core made (the unstreamed one is the
    // provider's own).
    let check = env.run(&["replay", "--check"], "");
    assert_eq!(check.code, Some(0), "{check:?}");
    let made: String = posts
        .iter()
        .filter(|r| streamed(r))
        .map(|r| format!("{}\n", r.body))
        .collect();
    let rebuilt = env.run(&["replay", "--requests"], "");
    assert!(
        rebuilt.stdout == made,
        "replay --requests differs from what was sent"
    );
}

/// One provider serves a whole session over one kept-alive connection:
/// turns, the summary of `/compact` and the request of `/refine`.
#[test]
fn a_session_keeps_one_connection() {
    let env = TestEnv::new("keep-alive");
    let options = FakeOptions {
        keep_alive: true,
        ..FakeOptions::default()
    };
    let server = FakeServer::start_with_options(
        FakeProtocol::OpenAi,
        vec![
            FakeReply::text("One."),
            FakeReply::text("Two."),
            FakeReply::Json {
                text: "Three.".into(),
                usage: Some((30, 1)),
            },
            FakeReply::text("Four."),
            FakeReply::text("Notes: four turns, nothing else."),
            FakeReply::text(r#"{"files": []}"#),
        ],
        options,
    )
    .expect("start the fake server");
    let url = server.url();
    let run = env.run(
        &["--base-url", &url],
        "one\ntwo\nthree\nfour\n/compact\n/refine\n",
    );
    assert_eq!(run.code, Some(0), "{run:?}");
    let sent = server.requests();
    assert_eq!(sent.len(), 6, "{run:?}");
    assert!(sent[4].body.contains("Write those working notes now"));
    assert_eq!(server.connections(), 1, "{run:?}");
}

/// A model that does not stop, on a server that cuts it when its context
/// is full (`finish_reason: "length"`): the answer is kept whole as it
/// came, marked truncated in the log, and the turn says it was cut.
#[test]
fn an_answer_cut_at_the_length_limit_is_kept_and_said() {
    let env = TestEnv::new("rambles");
    let server = limited(
        vec![FakeReply::Rambles {
            piece: " blah".into(),
        }],
        4_000,
        Overflows::LlamaCppPython,
        false,
    );
    let url = server.url();
    let run = env.run(&["--base-url", &url, "-p", "tell me everything"], "");
    assert_eq!(run.code, Some(0), "{run:?}");
    let prompt = (server.requests()[0].body.len() as u64).div_ceil(4);
    let words = run.stdout.matches("blah").count() as u64;
    assert_eq!(
        words,
        (4_000 - prompt) * 4 / 5,
        "the context's rest, in 5-byte pieces"
    );
    assert!(run.stderr.contains("the answer was cut at its"), "{run:?}");
    let log = records(&env.only_session());
    let answer = log
        .iter()
        .find(|r| r["type"] == "message" && r["role"] == "assistant")
        .expect("the answer is logged");
    assert_eq!(answer["truncated"], true);
    assert_eq!(
        answer["content"].as_str().unwrap().matches("blah").count() as u64,
        words
    );
}

/// Without a terminal and with `confirm_costly` on (the default), a
/// compaction that would send more than a few requests is not sent: one
/// line says what it would send and how to allow it, the exit is 1, the
/// server gets nothing, and the stop is logged. `--yes` lets it run.
#[test]
fn a_costly_compaction_without_a_terminal_stops_and_says_how_to_allow_it() {
    let env = TestEnv::new("costly-piped");
    grow_long_session(&env);
    let before = records(&env.only_session()).len();
    let notes = "Facts: the port is 5432, the host is db1.";
    let server = limited(
        (0..60).map(|_| FakeReply::text(notes)).collect(),
        6_000,
        Overflows::OpenAi,
        true,
    );
    let url = server.url();
    let args = [
        "--base-url",
        &url,
        "--window",
        "6000",
        "--continue",
        "-p",
        "and now?",
    ];
    let run = env.run(&args, "");
    assert_eq!(run.code, Some(1), "{run:?}");
    assert_eq!(server.requests().len(), 0, "nothing is sent: {run:?}");
    let line = run
        .stderr_lines()
        .into_iter()
        .find(|l| l.contains("stopped before a costly compaction"))
        .unwrap_or_else(|| panic!("no line says it stopped: {run:?}"));
    assert!(
        line.contains("model requests")
            && line.contains("input tokens")
            && line.contains("--yes")
            && line.contains("\"confirm_costly\": false"),
        "{line}"
    );
    let log = records(&env.only_session());
    assert!(log.len() > before, "the stop is logged");
    let stopped = log.iter().rfind(|r| r["type"] == "stopped").unwrap();
    assert_eq!(stopped["reason"], "costly");
    assert_eq!(stopped["what"], "compaction");
    let check = env.run(&["replay", "--check"], "");
    assert_eq!(check.code, Some(0), "{check:?}");

    // With --yes it is sent, in pieces, and the turn is answered.
    let mut yes = args.to_vec();
    yes.push("--yes");
    let run = env.run(&yes, "");
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(server.requests().len() > 4, "{run:?}");
}
