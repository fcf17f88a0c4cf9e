//! The settings a run goes by, and where each one came from.
//!
//! Every setting is taken from the first place that has it: a flag on the
//! command line, its environment variable, the config file
//! (`<config>/config.json`, read by the shell and parsed by [`File::parse`]),
//! then the default. The window has two more places before its default: a
//! local server that says its context size ([`Source::Server`]), then the
//! model's entry in the table of known models ([`Source::Table`], see
//! [`crate::models`]). [`pick`] makes that choice; the shell reads the four
//! places and passes them in, and shows the result with its [`Source`]
//! (`revolve config show`).
//!
//! A provider [`Preset`] fixes a wire protocol, a base URL, a default model
//! and the environment variables a key is read from.
//!
//! # The config file
//!
//! One JSON object; every key is optional, an unknown key is an error that
//! names it, and API keys have no place in it (they come from the
//! environment only):
//!
//! ```json
//! {
//!   "provider": "ollama",
//!   "base_url": "http://localhost:11434/v1",
//!   "model": "llama3.2",
//!   "window": 32768,
//!   "retries": 2,
//!   "spill_result_chars": 32000,
//!   "prune_result_chars": 16000,
//!   "max_tool_rounds": 100,
//!   "max_calls_per_answer": 64,
//!   "max_repeated_calls": 3,
//!   "allow_shell": false,
//!   "allow_edits": false,
//!   "models": {"llama3.2": {"window": 32768, "input": 0, "output": 0}},
//!   "max_cost": 2.5,
//!   "effort": "high",
//!   "tool_choice": "auto"
//! }
//! ```
//!
//! `models` adds models to the table of known models or changes fields of
//! shipped ones (see [`crate::models`]).

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::request::Wire;

mod window;
pub use window::{replayed, window_ask, window_learned, Takes, WindowAsk};

/// The config file's name under the config root.
pub const FILE_NAME: &str = "config.json";

/// The declared context window, in tokens, of a model nobody knows the
/// window of (not in the table of known models, no server that says).
pub const DEFAULT_WINDOW: u64 = 128_000;

/// The provider of a run nobody chose one for.
pub const DEFAULT_PRESET: Preset = Preset::Openai;

/// Where a setting's value came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// A flag on the command line.
    Flag,
    /// An environment variable.
    Env,
    /// The config file.
    Config,
    /// The model server said (its context size, asked at start).
    Server,
    /// The model's entry in the table of known models.
    Table,
    /// Nobody said: the default.
    Default,
}

impl Source {
    /// `flag`, `env`, `config`, `server`, `table` or `default`.
    pub fn as_str(self) -> &'static str {
        match self {
            Source::Flag => "flag",
            Source::Env => "env",
            Source::Config => "config",
            Source::Server => "server",
            Source::Table => "table",
            Source::Default => "default",
        }
    }
}

impl Source {
    /// Whether the user asked for this value for this run (a flag or a
    /// variable): such a model or window overrides what a resumed session
    /// ran with, while the config file and the defaults only choose for new
    /// sessions.
    pub fn overrides_resumed(self) -> bool {
        matches!(self, Source::Flag | Source::Env)
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A setting's value and where it came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Setting<T> {
    /// The value in effect.
    pub value: T,
    /// Where it came from, for `revolve config` and the status line.
    pub source: Source,
}

impl<T> Setting<T> {
    /// The same source with another value (a default that depends on
    /// another setting keeps that its own source is `default`).
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Setting<U> {
        Setting {
            value: f(self.value),
            source: self.source,
        }
    }
}

/// The first of flag, environment, config file and default that has a
/// value.
pub fn pick<T>(flag: Option<T>, env: Option<T>, file: Option<T>, default: T) -> Setting<T> {
    let (value, source) = match (flag, env, file) {
        (Some(v), _, _) => (v, Source::Flag),
        (None, Some(v), _) => (v, Source::Env),
        (None, None, Some(v)) => (v, Source::Config),
        (None, None, None) => (default, Source::Default),
    };
    Setting { value, source }
}

/// The config file's settings, each optional.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct File {
    /// The model API, a [`Preset`] name.
    pub provider: Option<Preset>,
    /// The API's base URL.
    pub base_url: Option<String>,
    /// The model new sessions ask.
    pub model: Option<String>,
    /// The declared context window of new sessions, in tokens.
    pub window: Option<u64>,
    /// How often a failed request is sent again.
    pub retries: Option<u32>,
    /// Tool results longer than this are spilled to a file.
    pub spill_result_chars: Option<usize>,
    /// Tool results longer than this are pruned when compacting.
    pub prune_result_chars: Option<usize>,
    /// A turn ends after this many tool rounds (see [`crate::guard`]).
    pub max_tool_rounds: Option<u32>,
    /// Only this many tool calls of one answer run (see
    /// [`crate::policy::MAX_CALLS_PER_ANSWER`]).
    pub max_calls_per_answer: Option<u32>,
    /// The same tool call this many times in a row is refused.
    pub max_repeated_calls: Option<u32>,
    /// Whether shell commands run without asking.
    pub allow_shell: Option<bool>,
    /// Whether file edits are made without asking.
    #[serde(default)]
    pub allow_edits: Option<bool>,
    /// Whether a compaction or refinement of more than four requests is
    /// asked about first at a terminal (`--yes` says no).
    #[serde(default)]
    pub confirm_costly: Option<bool>,
    /// The sandbox of shell commands: `read-only`, `workspace-write` or
    /// `off` (see [`crate::sandbox`]).
    #[serde(default)]
    pub sandbox: Option<String>,
    /// Whether sandboxed shell commands may use the network.
    #[serde(default)]
    pub sandbox_network: Option<bool>,
    /// Folders sandboxed shell commands may write besides the tree.
    #[serde(default)]
    pub sandbox_writable: Option<Vec<String>>,
    /// Permission rules (see [`crate::rules`]).
    #[serde(default)]
    pub permissions: Option<Permissions>,
    /// MCP servers: NAME to `{"command", "args", "env"}` or `{"type":
    /// "http", "url", "headers"}` (see [`crate::mcp`]).
    #[serde(default)]
    pub mcp_servers: Option<serde_json::Value>,
    /// Seconds an MCP tool call may take.
    #[serde(default)]
    pub mcp_timeout_s: Option<u64>,
    /// Whether MCP tool calls run without asking.
    #[serde(default)]
    pub allow_mcp: Option<bool>,
    /// Hooks, in Claude Code's shape: EVENT to `[{"matcher", "hooks":
    /// [{"type": "command", "command", "timeout"}]}]` (see
    /// [`crate::hooks`]).
    #[serde(default)]
    pub hooks: Option<serde_json::Value>,
    /// Models added to the table of known models, or fields of shipped
    /// ones changed: NAME to `{"window", "max_output", "input",
    /// "cached_input", "cache_write", "output"}` (see [`crate::models`]).
    #[serde(default)]
    pub models: Option<std::collections::BTreeMap<String, crate::models::Entry>>,
    /// `--max-cost`: US dollars a piped or goal-run session may spend.
    #[serde(default)]
    pub max_cost: Option<serde_json::Number>,
    /// `--effort`: how hard a reasoning model thinks.
    #[serde(default)]
    pub effort: Option<crate::models::Effort>,
    /// `--tool-choice`: whether a turn's first request must call a tool
    /// (see [`crate::request::ToolChoice`]).
    #[serde(default)]
    pub tool_choice: Option<crate::request::ToolChoice>,
}

/// The `permissions` of a config file: rules that allow a call without
/// asking, and rules that deny it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Permissions {
    /// Rules whose calls run without asking.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Rules whose calls are refused without asking (they win over `allow`).
    #[serde(default)]
    pub deny: Vec<String>,
}

/// Why a config file cannot be used: where in the text, and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadFile {
    /// 1-based line (0 when the error has no position, as at end of input).
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What is wrong, without the position.
    pub why: String,
}

impl fmt::Display for BadFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.line, self.column, self.why
        )
    }
}

impl File {
    /// Reads a config file's text. Empty text (or only whitespace) is an
    /// empty config.
    pub fn parse(text: &str) -> Result<File, BadFile> {
        if text.trim().is_empty() {
            return Ok(File::default());
        }
        serde_json::from_str(text).map_err(|e| {
            let full = e.to_string();
            let suffix = format!(" at line {} column {}", e.line(), e.column());
            BadFile {
                line: e.line(),
                column: e.column(),
                why: full.strip_suffix(&suffix).unwrap_or(&full).to_owned(),
            }
        })
    }
}

/// A model API revolve knows how to reach.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Preset {
    /// OpenAI's Chat Completions.
    Openai,
    /// OpenAI's Responses API (issue 45): the wire of OpenAI's reasoning
    /// models, and what `openai` becomes for the models the table marks
    /// Responses-first (see [`Preset::settled`]).
    #[serde(rename = "openai-responses")]
    OpenaiResponses,
    /// Anthropic Messages.
    Anthropic,
    /// A local Ollama server (Chat Completions, no key).
    Ollama,
    /// A local llama.cpp server (Chat Completions, no key).
    Llamacpp,
    /// OpenRouter (Chat Completions).
    Openrouter,
    /// Google's Gemini API (issue 45).
    Gemini,
    /// Replies from a file, offline.
    Scripted,
}

impl Preset {
    /// Every preset, in the order help texts list them.
    pub const ALL: [Preset; 8] = [
        Preset::Openai,
        Preset::Anthropic,
        Preset::Ollama,
        Preset::Llamacpp,
        Preset::Openrouter,
        Preset::Gemini,
        Preset::OpenaiResponses,
        Preset::Scripted,
    ];

    /// The name on the command line and in the config file.
    pub const fn name(self) -> &'static str {
        match self {
            Preset::Openai => "openai",
            Preset::OpenaiResponses => "openai-responses",
            Preset::Anthropic => "anthropic",
            Preset::Ollama => "ollama",
            Preset::Llamacpp => "llamacpp",
            Preset::Openrouter => "openrouter",
            Preset::Gemini => "gemini",
            Preset::Scripted => "scripted",
        }
    }

    /// The preset named `name`.
    pub fn named(name: &str) -> Option<Preset> {
        Preset::ALL.into_iter().find(|p| p.name() == name)
    }

    /// One line on what it reaches, for help texts.
    pub const fn summary(self) -> &'static str {
        match self {
            Preset::Openai => "OpenAI (Responses for its reasoning models) or any Chat Completions server (vLLM, …); key OPENAI_API_KEY",
            Preset::OpenaiResponses => "OpenAI's Responses API; key OPENAI_API_KEY",
            Preset::Anthropic => "Anthropic Messages; key ANTHROPIC_API_KEY",
            Preset::Ollama => "A local Ollama server at http://localhost:11434/v1, no key",
            Preset::Llamacpp => "A local llama.cpp server at http://localhost:8080/v1, no key",
            Preset::Openrouter => {
                "OpenRouter at https://openrouter.ai/api/v1; key OPENROUTER_API_KEY"
            }
            Preset::Gemini => "Google's Gemini API; key GEMINI_API_KEY",
            Preset::Scripted => "Answers from a file of replies, offline",
        }
    }

    /// The wire protocol it speaks; `None` for the scripted provider.
    pub const fn wire(self) -> Option<Wire> {
        match self {
            Preset::Anthropic => Some(Wire::Anthropic),
            Preset::Gemini => Some(Wire::Gemini),
            Preset::OpenaiResponses => Some(Wire::Responses),
            Preset::Scripted => None,
            _ => Some(Wire::OpenAi),
        }
    }

    /// Whether the preset's server counts a request's tokens at no cost
    /// to the user: the local servers (an unstreamed request for one
    /// token, served from llama.cpp's prompt cache). A paid API is never
    /// asked to count: that would bill a whole prompt.
    pub const fn counts_free(self) -> bool {
        matches!(self, Preset::Llamacpp | Preset::Ollama)
    }

    /// The base URL used when none is given (the scripted provider has
    /// none, shown as an empty string).
    pub const fn base_url(self) -> &'static str {
        match self {
            Preset::Openai | Preset::OpenaiResponses => "https://api.openai.com/v1",
            Preset::Anthropic => "https://api.anthropic.com/v1",
            Preset::Ollama => "http://localhost:11434/v1",
            Preset::Llamacpp => "http://localhost:8080/v1",
            Preset::Openrouter => "https://openrouter.ai/api/v1",
            Preset::Gemini => "https://generativelanguage.googleapis.com/v1beta",
            Preset::Scripted => "",
        }
    }

    /// The model asked when none is given: for the hosted APIs, current
    /// models of the table of known models ([`crate::models`]).
    pub const fn model(self) -> &'static str {
        match self {
            // The scripted provider's sessions name the same model, so a
            // recorded session replayed offline rebuilds the same requests.
            Preset::Openai | Preset::OpenaiResponses | Preset::Scripted => "gpt-5.6-terra",
            Preset::Anthropic => "claude-sonnet-5",
            Preset::Ollama => "llama3.2",
            // llama.cpp's server answers with the model it loaded, whatever
            // the request names.
            Preset::Llamacpp => "default",
            Preset::Openrouter => "openai/gpt-5.6-terra",
            Preset::Gemini => "gemini-2.5-flash",
        }
    }

    /// The environment variables an API key is read from, first set wins.
    /// Each of them is in [`API_KEY_VARS`].
    pub const fn key_vars(self) -> &'static [&'static str] {
        match self {
            Preset::Openai | Preset::OpenaiResponses => &["REVOLVE_API_KEY", "OPENAI_API_KEY"],
            Preset::Anthropic => &["REVOLVE_API_KEY", "ANTHROPIC_API_KEY"],
            Preset::Openrouter => &["REVOLVE_API_KEY", "OPENROUTER_API_KEY"],
            Preset::Gemini => &["REVOLVE_API_KEY", "GEMINI_API_KEY"],
            Preset::Ollama | Preset::Llamacpp => &["REVOLVE_API_KEY"],
            Preset::Scripted => &[],
        }
    }

    /// The preset a run uses: `openai` at OpenAI's own address becomes
    /// `openai-responses` for a model the table marks Responses-first
    /// (`responses_first`, see [`crate::models::Model::responses`]), the
    /// API OpenAI serves those models best on; at another address (a
    /// proxy, vLLM) it stays on Chat Completions, which every compatible
    /// server speaks. Every other preset stays as it is.
    pub fn settled(self, responses_first: bool, base_url: &str) -> Preset {
        let openai = base_url.trim_end_matches('/') == Preset::Openai.base_url();
        match self {
            Preset::Openai if responses_first && openai => Preset::OpenaiResponses,
            other => other,
        }
    }

    /// Whether a request to `base_url` cannot work without a key: the
    /// hosted APIs at their own address need one; another address (a local
    /// server, a proxy) may not.
    pub fn needs_key(self, base_url: &str) -> bool {
        matches!(
            self,
            Preset::Openai
                | Preset::OpenaiResponses
                | Preset::Anthropic
                | Preset::Openrouter
                | Preset::Gemini
        ) && base_url.trim_end_matches('/') == self.base_url()
    }
}

/// Every variable any preset reads an API key from: the shell strips them
/// from the environment of `shell` commands, and their values are redacted
/// from whatever a tool returns. One list, so a new preset's key cannot be
/// left out of either.
pub const API_KEY_VARS: [&str; 5] = [
    "REVOLVE_API_KEY",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "OPENROUTER_API_KEY",
    "GEMINI_API_KEY",
];

/// Whether a base URL can be used: `scheme://host[:port]/…`, with a port
/// that is a number when a `:` is there (`http://localhost:/v1` is a typo
/// that would otherwise fail later as a connection error). The error says
/// what is wrong.
pub fn check_base_url(url: &str) -> Result<(), String> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(format!(
            "--base-url {url}: give a scheme, as in http://localhost:11434/v1"
        ));
    };
    if scheme != "http" && scheme != "https" {
        return Err(format!(
            "--base-url {url}: the scheme must be http or https"
        ));
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    // An IPv6 host is in brackets; its colons are not a port's.
    let port = match host_port.strip_prefix('[') {
        Some(v6) => v6.split_once(']').map(|(_, after)| after).unwrap_or(""),
        None => host_port,
    }
    .split_once(':')
    .map(|(_, port)| port);
    let host = host_port.split(':').next().unwrap_or("");
    if host.is_empty() {
        return Err(format!("--base-url {url}: the host is empty"));
    }
    match port {
        Some("") => Err(format!("--base-url {url}: the port after ':' is empty")),
        Some(p) if p.parse::<u16>().is_err() => Err(format!(
            "--base-url {url}: the port {p:?} is not a number from 0 to 65535"
        )),
        _ => Ok(()),
    }
}

/// `text` with the credentials of every URL in it hidden: the password of
/// `https://user:pass@host/` becomes `***` (`https://user:***@host/`), and a
/// user part without one, which may be a token, goes whole
/// (`https://***@host/`). A base URL may carry them; no log record, error
/// line or listing shows them. So does an echoed `Basic` credential (see
/// [`redact_basic`]).
pub fn redact_url_credentials(text: &str) -> Cow<'_, str> {
    match redact_basic(text) {
        Cow::Borrowed(text) => redact_userinfo(text),
        Cow::Owned(text) => Cow::Owned(redact_userinfo(&text).into_owned()),
    }
}

/// `text` with the token after every `Basic ` (any case) hidden as `***`
/// when it looks like a credential in base64: eight or more base64
/// characters, a multiple of four, holding a digit, `+`, `/` or `=` (so
/// that "Basic usage" stays). A server that echoes the `Authorization`
/// header of a base URL with a password shows it so. The exact forms of
/// the base URL's own credential are scrubbed by the provider besides.
pub(crate) fn redact_basic(text: &str) -> Cow<'_, str> {
    let mut out = String::new();
    let mut copied = 0;
    let lower = text.to_ascii_lowercase();
    let mut from = 0;
    while let Some(found) = lower[from..].find("basic ") {
        let start = from + found + "basic ".len();
        let token_len = text[start..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || "+/=".contains(c)))
            .unwrap_or(text.len() - start);
        let token = &text[start..start + token_len];
        from = start + token_len;
        let looks = token.len() >= 8
            && token.len().is_multiple_of(4)
            && token.contains(|c: char| c.is_ascii_digit() || "+/=".contains(c));
        if looks {
            out.push_str(&text[copied..start]);
            out.push_str("***");
            copied = from;
        }
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// [`redact_url_credentials`] for URLs only.
fn redact_userinfo(text: &str) -> Cow<'_, str> {
    let mut out = String::new();
    // How much of `text` is in `out` already.
    let mut copied = 0;
    let mut from = 0;
    while let Some(found) = text[from..].find("://") {
        let start = from + found + "://".len();
        let authority = &text[start..];
        let end = authority
            .find(|c: char| "/?#\"'<>`".contains(c) || c.is_whitespace())
            .unwrap_or(authority.len());
        from = start + end;
        let Some(at) = authority[..end].rfind('@') else {
            continue;
        };
        let hidden = match authority[..at].split_once(':') {
            Some((user, _)) => format!("{user}:***"),
            None => "***".to_owned(),
        };
        if at == 0 || authority[..at] == *hidden {
            continue;
        }
        out.push_str(&text[copied..start]);
        out.push_str(&hidden);
        copied = start + at;
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

/// The `user:password` of `url`'s credentials, as an HTTP client sends
/// them in `Authorization: Basic` (base64 of this text): the userinfo
/// before the last `@` of the authority, with a `:` added when it holds
/// none. `None` when the URL has no credentials.
pub fn url_userinfo(url: &str) -> Option<String> {
    let start = url.find("://")? + "://".len();
    let authority = &url[start..];
    let end = authority
        .find(|c: char| "/?#".contains(c))
        .unwrap_or(authority.len());
    let userinfo = &authority[..authority[..end].rfind('@')?];
    Some(match userinfo.contains(':') {
        true => userinfo.to_owned(),
        false => format!("{userinfo}:"),
    })
}

/// Where a preset's server tells its context window, when it does: the
/// request to make and how to read the answer ([`window_from`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowProbe {
    /// llama.cpp's `GET /props`: `default_generation_settings.n_ctx`.
    LlamacppProps,
    /// Ollama's `POST /api/show {"model": …}`: `num_ctx` among its
    /// parameters (a Modelfile's). Its `model_info.<arch>.context_length`
    /// is the most the model was trained for, not what Ollama runs it at,
    /// so it is not read.
    OllamaShow,
    /// Ollama's `GET /api/ps`: the `context_length` a loaded model runs
    /// with.
    OllamaPs,
    /// `GET {base}/models`: the model's `context_length` (OpenRouter) or
    /// `max_model_len` (vLLM).
    ModelList,
}

impl Preset {
    /// How this preset's server is asked for its window, when the user
    /// gave none. The hosted OpenAI and Anthropic APIs do not say.
    pub fn window_probe(self) -> Option<WindowProbe> {
        match self {
            Preset::Llamacpp => Some(WindowProbe::LlamacppProps),
            Preset::Ollama => Some(WindowProbe::OllamaShow),
            Preset::Openrouter => Some(WindowProbe::ModelList),
            Preset::Openai
            | Preset::OpenaiResponses
            | Preset::Anthropic
            | Preset::Gemini
            | Preset::Scripted => None,
        }
    }
}

/// The context window a server's answer to `probe` names for `model`.
pub fn window_from(probe: WindowProbe, answer: &serde_json::Value, model: &str) -> Option<u64> {
    let n = |v: &serde_json::Value| v.as_u64().filter(|&n| n > 0);
    match probe {
        WindowProbe::LlamacppProps => answer
            .pointer("/default_generation_settings/n_ctx")
            .and_then(n)
            .or_else(|| answer.get("n_ctx").and_then(n)),
        WindowProbe::OllamaShow => answer
            .get("parameters")
            .and_then(|p| p.as_str())
            .and_then(|p| {
                p.lines().find_map(|l| {
                    let mut words = l.split_whitespace();
                    (words.next() == Some("num_ctx"))
                        .then(|| words.next()?.parse::<u64>().ok())
                        .flatten()
                })
            })
            .filter(|&n| n > 0),
        WindowProbe::OllamaPs => {
            let latest = format!("{model}:latest");
            let named = |m: &&serde_json::Value| {
                ["name", "model"].iter().any(|k| {
                    m.get(*k)
                        .and_then(|v| v.as_str())
                        .is_some_and(|v| v == model || v == latest)
                })
            };
            answer
                .get("models")?
                .as_array()?
                .iter()
                .find(named)
                .and_then(|m| m.get("context_length").and_then(n))
        }
        WindowProbe::ModelList => answer
            .get("data")?
            .as_array()?
            .iter()
            .find(|m| m.get("id").and_then(|i| i.as_str()) == Some(model))
            .and_then(|m| {
                m.get("context_length")
                    .and_then(n)
                    .or_else(|| m.get("max_model_len").and_then(n))
            }),
    }
}

/// The context Ollama runs a model at when nothing says otherwise (no
/// `num_ctx` in its Modelfile, no `OLLAMA_CONTEXT_LENGTH` on the server):
/// 4,096 tokens on machines with less than 24 GiB of VRAM, the least of
/// its documented defaults.
pub(crate) const OLLAMA_DEFAULT_CONTEXT: u64 = 4_096;

/// The window a session runs with against Ollama, which cuts a prompt
/// longer than its context silently (from the front) instead of refusing
/// it: what Ollama runs the model at, learned before the first request
/// (`running`), when no window was `given` (else its default context), or
/// when it is below the one given. `None` keeps the window given.
pub fn ollama_window(given: Option<u64>, running: Option<u64>) -> Option<u64> {
    match given {
        None => Some(running.unwrap_or(OLLAMA_DEFAULT_CONTEXT)),
        Some(given) => running.filter(|&r| r < given),
    }
}

/// What `--provider` names: a preset, or a recorded session whose answers
/// are given again (`replay:FILE|NAME`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProviderChoice {
    /// A provider revolve knows by name (`openai`, `anthropic`, `ollama`, …).
    Preset(Preset),
    /// `replay:FILE|NAME`: answers from a session log.
    Replay(String),
}

impl ProviderChoice {
    /// Parses a `--provider` value (a preset's name in any case, or
    /// `replay:` and a session); the error says what is accepted.
    pub fn parse(text: &str) -> Result<ProviderChoice, String> {
        if let Some(source) = text.strip_prefix("replay:") {
            if source.is_empty() {
                return Err("replay: needs a session file or name, e.g. replay:amber".into());
            }
            return Ok(ProviderChoice::Replay(source.to_owned()));
        }
        Preset::named(&text.to_ascii_lowercase())
            .map(ProviderChoice::Preset)
            .ok_or_else(|| {
                let names: Vec<&str> = Preset::ALL.iter().map(|p| p.name()).collect();
                format!(
                    "unknown provider '{text}' (one of: {}, replay:FILE|NAME)",
                    names.join(", ")
                )
            })
    }

    /// The preset whose defaults apply: a recorded session answers offline,
    /// like the scripted provider.
    pub fn preset(&self) -> Preset {
        match self {
            ProviderChoice::Preset(p) => *p,
            ProviderChoice::Replay(_) => Preset::Scripted,
        }
    }
}

impl fmt::Display for Preset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn url_credentials_are_hidden_wherever_a_url_is() {
        use super::{redact_url_credentials, Cow};
        let cases = [
            ("https://user:pass@host/v1", "https://user:***@host/v1"),
            ("https://tok3n@host", "https://***@host"),
            (
                "HTTP 500 from http://u:p@127.0.0.1:9/v1/chat: boom; see http://a:b@c?x",
                "HTTP 500 from http://u:***@127.0.0.1:9/v1/chat: boom; see http://a:***@c?x",
            ),
            ("http://u:p:q@w@host/a@b", "http://u:***@host/a@b"),
            (
                "http://host/a@b and mailto:x@y",
                "http://host/a@b and mailto:x@y",
            ),
            ("\"http://u:p@h\"", "\"http://u:***@h\""),
            ("no url at all", "no url at all"),
            ("://@host", "://@host"),
        ];
        for (text, hidden) in cases {
            assert_eq!(redact_url_credentials(text), hidden, "{text}");
        }
        assert!(matches!(
            redact_url_credentials("https://user:***@host"),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn basic_credentials_are_hidden_and_words_stay() {
        use super::{redact_url_credentials, url_userinfo};
        let echoed = "HTTP 401 from http://alice:***@h/v1: bad Authorization: Basic YWxpY2U6aHVudGVyMg== (basic YWxpY2U6aHVudGVy)";
        assert_eq!(
            redact_url_credentials(echoed),
            "HTTP 401 from http://alice:***@h/v1: bad Authorization: Basic *** (basic ***)"
        );
        for kept in ["Basic usage of the API", "basic auth failed", "Basic abc"] {
            assert_eq!(redact_url_credentials(kept), kept);
        }
        assert_eq!(
            url_userinfo("http://alice:hunter2@h:1/v1").as_deref(),
            Some("alice:hunter2")
        );
        assert_eq!(url_userinfo("https://tok@h/v1").as_deref(), Some("tok:"));
        assert_eq!(url_userinfo("https://h/v1?a=b@c"), None);
        assert_eq!(url_userinfo("no url"), None);
    }

    #[test]
    fn a_provider_is_a_preset_in_any_case_or_a_recording() {
        assert_eq!(
            ProviderChoice::parse("Ollama"),
            Ok(ProviderChoice::Preset(Preset::Ollama))
        );
        let replay = ProviderChoice::parse("replay:amber").unwrap();
        assert_eq!(replay, ProviderChoice::Replay("amber".into()));
        assert_eq!(replay.preset(), Preset::Scripted);
        assert!(ProviderChoice::parse("replay:").is_err());
        assert!(ProviderChoice::parse("gpt")
            .unwrap_err()
            .starts_with("unknown provider 'gpt' (one of: openai, anthropic"));
    }

    use super::*;

    #[test]
    fn a_base_url_with_an_empty_port_is_refused() {
        for good in [
            "http://localhost:11434/v1",
            "https://api.openai.com/v1",
            "http://user:pass@host:8080",
            "http://[::1]:8080/v1",
            "http://host",
        ] {
            assert_eq!(check_base_url(good), Ok(()), "{good}");
        }
        for (bad, why) in [
            ("http://localhost:/v1", "the port after ':' is empty"),
            ("http://localhost:80x/v1", "is not a number"),
            ("localhost:11434", "give a scheme"),
            ("ftp://host", "http or https"),
            ("http:///v1", "the host is empty"),
        ] {
            let err = check_base_url(bad).unwrap_err();
            assert!(err.contains(why), "{bad}: {err}");
        }
    }

    #[test]
    fn the_first_place_with_a_value_wins() {
        let s = pick(Some(1), Some(2), Some(3), 4);
        assert_eq!((s.value, s.source), (1, Source::Flag));
        let s = pick(None, Some(2), Some(3), 4);
        assert_eq!((s.value, s.source), (2, Source::Env));
        let s = pick(None, None, Some(3), 4);
        assert_eq!((s.value, s.source), (3, Source::Config));
        let s = pick(None, None, None, 4);
        assert_eq!((s.value, s.source), (4, Source::Default));
    }

    #[test]
    fn a_config_file_reads_every_key() {
        let file = File::parse(
            r#"{"provider": "ollama", "base_url": "http://h/v1", "model": "m",
                "window": 1000, "retries": 1, "spill_result_chars": 5,
                "prune_result_chars": 6, "allow_shell": true}"#,
        )
        .unwrap();
        assert_eq!(file.provider, Some(Preset::Ollama));
        assert_eq!(file.window, Some(1000));
        assert_eq!(file.allow_shell, Some(true));
        assert_eq!(File::parse("  \n").unwrap(), File::default());
        assert_eq!(File::parse("{}").unwrap(), File::default());
    }

    #[test]
    fn a_bad_file_says_where() {
        let bad = File::parse("{\n  \"model\": \"m\",\n  \"window\": x\n}").unwrap_err();
        assert_eq!((bad.line, bad.column), (3, 13));
        assert_eq!(bad.why, "expected value");
        let unknown = File::parse("{\"modle\": \"m\"}").unwrap_err();
        assert!(
            unknown.why.starts_with("unknown field `modle`"),
            "{unknown}"
        );
        assert_eq!(
            unknown.to_string(),
            format!("line 1, column 8: {}", unknown.why)
        );
        let provider = File::parse("{\"provider\": \"nope\"}").unwrap_err();
        assert!(
            provider.why.contains("unknown variant `nope`"),
            "{provider}"
        );
        let key = File::parse("{\"api_key\": \"sk-secret\"}").unwrap_err();
        assert!(!key.to_string().contains("sk-secret"), "{key}");
    }

    #[test]
    fn every_preset_key_variable_is_stripped_and_redacted() {
        for p in Preset::ALL {
            for var in p.key_vars() {
                assert!(API_KEY_VARS.contains(var), "{var} of {}", p.name());
            }
        }
    }

    #[test]
    fn servers_tell_their_window() {
        let props =
            serde_json::json!({"default_generation_settings": {"n_ctx": 4096}, "total_slots": 1});
        assert_eq!(
            window_from(WindowProbe::LlamacppProps, &props, "x"),
            Some(4096)
        );
        let show = serde_json::json!({
            "parameters": "stop \"<|eot_id|>\"\nnum_ctx 8192",
            "model_info": {"llama.context_length": 131072}
        });
        assert_eq!(
            window_from(WindowProbe::OllamaShow, &show, "llama3.2"),
            Some(8192)
        );
        // The trained length is not what Ollama runs a model at.
        let bare = serde_json::json!({"model_info": {"qwen2.context_length": 32768}});
        assert_eq!(window_from(WindowProbe::OllamaShow, &bare, "qwen"), None);
        let ps = serde_json::json!({"models": [
            {"name": "qwen2.5:0.5b", "model": "qwen2.5:0.5b", "context_length": 2048},
            {"name": "llama3.2:latest", "model": "llama3.2:latest", "context_length": 8192}
        ]});
        assert_eq!(
            window_from(WindowProbe::OllamaPs, &ps, "llama3.2"),
            Some(8192)
        );
        assert_eq!(
            window_from(WindowProbe::OllamaPs, &ps, "qwen2.5:0.5b"),
            Some(2048)
        );
        assert_eq!(window_from(WindowProbe::OllamaPs, &ps, "qwen"), None);
        // No window given: Ollama's running context, else its default;
        // a window given is lowered to a smaller running context only.
        assert_eq!(ollama_window(None, Some(8192)), Some(8192));
        assert_eq!(ollama_window(None, None), Some(OLLAMA_DEFAULT_CONTEXT));
        assert_eq!(ollama_window(Some(32768), Some(8192)), Some(8192));
        assert_eq!(ollama_window(Some(4096), Some(8192)), None);
        assert_eq!(ollama_window(Some(32768), None), None);
        let list = serde_json::json!({"data": [
            {"id": "a/b", "context_length": 200000},
            {"id": "openai/gpt-4o-mini", "context_length": 128000},
            {"id": "v", "max_model_len": 4096}
        ]});
        assert_eq!(
            window_from(WindowProbe::ModelList, &list, "openai/gpt-4o-mini"),
            Some(128_000)
        );
        assert_eq!(window_from(WindowProbe::ModelList, &list, "v"), Some(4096));
        assert_eq!(window_from(WindowProbe::ModelList, &list, "nope"), None);
        assert_eq!(Preset::Openai.window_probe(), None);
    }

    #[test]
    fn presets_name_themselves() {
        for p in Preset::ALL {
            assert_eq!(Preset::named(p.name()), Some(p));
        }
        assert!(Preset::Openai.needs_key("https://api.openai.com/v1/"));
        assert!(!Preset::Openai.needs_key("http://localhost:8000/v1"));
        assert!(!Preset::Ollama.needs_key(Preset::Ollama.base_url()));
        assert_eq!(Preset::Llamacpp.wire(), Some(Wire::OpenAi));
        assert_eq!(Preset::Scripted.wire(), None);
    }
}
