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
