//! MCP servers as tools: the decisions. Which servers a configuration
//! names, how `${VAR}` values expand, what each server tool is called and
//! offered as, how a result reads, and whether a call may run. The clients
//! (stdio and streamable HTTP) are in the `revolve-mcp` crate and decide
//! nothing.
//!
//! * **Configuration.** `mcp_servers` in `config.json` and a repository's
//!   `.mcp.json` (`{"mcpServers": {...}}`, as Claude Code reads it) map a
//!   NAME to `{"command", "args", "env"}` (stdio; `"type": "stdio"` may be
//!   said) or `{"type": "http", "url", "headers"}` (streamable HTTP). A
//!   project file's servers start only once the user approved that file
//!   (its hash is kept under the state root), so a cloned repository
//!   starts no program on its own. Values in `args`, `env`, `url` and
//!   `headers` may name variables: `${GITHUB_TOKEN}`, `${X:-default}`;
//!   the expanded values live in the process only, never in the log.
//! * **Tools.** Server `s`'s tool `t` is offered as `mcp__s__t` (characters
//!   other than letters, digits, `_` and `-` become `_`, cut to
//!   [`policy::MCP_NAME_CHARS`]), with its description (cut to
//!   [`policy::MCP_DESCRIPTION_CHARS`]) and its input schema (offered bare
//!   when over [`policy::MCP_SCHEMA_BYTES`]). Tools are ordered by name,
//!   after revolve's own, so the prefix of every request stays the same
//!   for a prompt cache.
//! * **Replay.** The list offered is a `mcp_tools` record whenever it
//!   changes ([`crate::record::McpTools`]); every request is rebuilt with
//!   the list standing at its time.

pub mod oauth;

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::policy;

/// How revolve reaches a server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transport {
    /// A child process speaking JSON-RPC over its stdin and stdout.
    Stdio {
        /// The program to start.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables set for it, besides those it inherits.
        env: BTreeMap<String, String>,
    },
    /// Streamable HTTP: JSON-RPC POSTed to `url`.
    Http {
        /// The server's endpoint.
        url: String,
        /// Headers sent with every request (a bearer token, say).
        headers: BTreeMap<String, String>,
    },
}

/// Where a server was configured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// `mcp_servers` in `config.json`.
    Config,
    /// A project's `.mcp.json` (its path).
    Project(String),
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Config => f.write_str("config.json"),
            Origin::Project(path) => f.write_str(path),
        }
    }
}

/// A configured server, as written (values not yet expanded).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Server {
    /// The server's name, as the config names it (and the `mcp__NAME__` prefix).
    pub name: String,
    /// How it is reached.
    pub transport: Transport,
    /// Where it was configured, for messages about it.
    pub origin: Origin,
}

/// Reads the map of servers of `mcp_servers` or of `.mcp.json`'s
/// `mcpServers`. The error names the server and what is wrong.
pub fn parse_servers(map: &Value, origin: &Origin) -> Result<Vec<Server>, String> {
    let Some(map) = map.as_object() else {
        return Err(format!("{origin}: the MCP servers are not a JSON object"));
    };
    let mut servers = Vec::new();
    for (name, entry) in map {
        let bad = |why: &str| format!("{origin}: MCP server {name:?}: {why}");
        if !valid_name(name) {
            return Err(bad(
                "a name is letters, digits, '_' and '-', without a double underscore",
            ));
        }
        let strings = |key: &str| -> Result<BTreeMap<String, String>, String> {
            match entry.get(key) {
                None | Some(Value::Null) => Ok(BTreeMap::new()),
                Some(Value::Object(o)) => o
                    .iter()
                    .map(|(k, v)| match v {
                        Value::String(s) => Ok((k.clone(), s.clone())),
                        _ => Err(bad(&format!("{key}.{k} is not a string"))),
                    })
                    .collect(),
                Some(_) => Err(bad(&format!("{key} is not an object"))),
            }
        };
        let kind = entry.get("type").and_then(Value::as_str);
        let url = entry.get("url").and_then(Value::as_str);
        let transport = match (kind, url) {
            (Some("http" | "streamable-http" | "streamableHttp"), Some(url))
            | (None, Some(url)) => Transport::Http {
                url: url.to_owned(),
                headers: strings("headers")?,
            },
            (Some("sse"), _) => {
                return Err(bad(
                    "the old SSE transport is not supported; use \"type\": \"http\"",
                ))
            }
            (None | Some("stdio"), None) => {
                let command = entry
                    .get("command")
                    .and_then(Value::as_str)
                    .filter(|c| !c.is_empty())
                    .ok_or_else(|| bad("give a \"command\" (stdio) or a \"url\" (http)"))?;
                let args = match entry.get("args") {
                    None | Some(Value::Null) => Vec::new(),
                    Some(Value::Array(a)) => a
                        .iter()
                        .map(|v| v.as_str().map(str::to_owned))
                        .collect::<Option<Vec<_>>>()
                        .ok_or_else(|| bad("args are not all strings"))?,
                    Some(_) => return Err(bad("args is not a list")),
                };
                Transport::Stdio {
                    command: command.to_owned(),
                    args,
                    env: strings("env")?,
                }
            }
            (Some(other), _) => {
                return Err(bad(&format!(
                    "unknown type {other:?} (stdio or http), or an http server without a url"
                )))
            }
        };
        servers.push(Server {
            name: name.clone(),
            transport,
            origin: origin.clone(),
        });
    }
    Ok(servers)
}

/// Reads a project's `.mcp.json` (`{"mcpServers": {...}}`).
pub fn parse_project_file(text: &str, path: &str) -> Result<Vec<Server>, String> {
    let origin = Origin::Project(path.to_owned());
    let value: Value =
        serde_json::from_str(text).map_err(|e| format!("{path}: not valid JSON: {e}"))?;
    match value.get("mcpServers") {
        Some(map) => parse_servers(map, &origin),
        None => Ok(Vec::new()),
    }
}

/// The servers of the configuration and of the project file together:
/// a name the configuration gives wins over the project's, and the list
/// is ordered by name.
pub fn merge(config: Vec<Server>, project: Vec<Server>) -> Vec<Server> {
    let mut all: BTreeMap<String, Server> = BTreeMap::new();
    for s in project.into_iter().chain(config) {
        all.insert(s.name.clone(), s);
    }
    all.into_values().collect()
}

/// One line saying how a server is reached, without secrets: the command,
/// its arguments and its `env` (`NAME=value`, each value as written: a
/// `${VAR}` stays that spelling, a literal value of a variable whose name
/// says it is a secret is masked), or the URL (no header values).
pub fn describe(server: &Server) -> String {
    match &server.transport {
        Transport::Stdio { command, args, env } => {
            let mut line = format!("stdio: {command}");
            for a in args {
                line.push(' ');
                line.push_str(a);
            }
            if !env.is_empty() {
                let pairs: Vec<String> = env
                    .iter()
                    .map(|(k, v)| format!("{k}={}", shown_value(k, v)))
                    .collect();
                line.push_str("  env: ");
                line.push_str(&pairs.join(" "));
            }
            line
        }
        Transport::Http { url, .. } => {
            format!("http: {}", crate::config::redact_url_credentials(url))
        }
    }
}

/// A configured value as shown to the user: as written when it names
/// variables or its name is not a secret's, else masked.
fn shown_value(name: &str, value: &str) -> String {
    if value.contains("${") || !secret_name(name) {
        value.to_owned()
    } else {
        "****".to_owned()
    }
}

/// Whether a variable's name says it holds a secret: an API key variable
/// of revolve's, or a name with KEY, TOKEN, SECRET, PASSW, AUTH or
/// CREDENTIAL in it.
pub fn secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    crate::config::API_KEY_VARS.contains(&upper.as_str())
        || ["KEY", "TOKEN", "SECRET", "PASSW", "AUTH", "CREDENTIAL"]
            .iter()
            .any(|w| upper.contains(w))
}

/// What an approval of `server` covers, as written: the command, its
/// arguments and env; for an HTTP server its URL (as the command) and
/// headers (as the env). See [`crate::approval`].
pub fn approval_parts(server: &Server) -> (&str, &[String], &BTreeMap<String, String>) {
    match &server.transport {
        Transport::Stdio { command, args, env } => (command, args, env),
        Transport::Http { url, headers } => (url, &[], headers),
    }
}

/// Whether `name` may name a server: letters, digits, `_`, `-`, and no
/// `__` (which parts a tool name).
pub(crate) fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && !name.contains("__")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// `text` with every `${VAR}` replaced by `lookup(VAR)`, and `${VAR:-x}`
/// by `x` when the variable is unset or empty. An unset variable without
/// a default is an error naming it.
pub(crate) fn expand(
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("an unclosed ${{ in {text:?}"));
        };
        let inner = &after[..end];
        let (var, default) = match inner.split_once(":-") {
            Some((v, d)) => (v, Some(d)),
            None => (inner, None),
        };
        match (lookup(var).filter(|v| !v.is_empty()), default) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => return Err(format!("the variable {var} is not set")),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The server with every value expanded (see [`expand`]); the error names
/// the server.
pub fn expanded(
    server: &Server,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Server, String> {
    let why = |e: String| format!("MCP server {}: {e}", server.name);
    let map = |m: &BTreeMap<String, String>| -> Result<BTreeMap<String, String>, String> {
        m.iter()
            .map(|(k, v)| Ok((k.clone(), expand(v, lookup).map_err(why)?)))
            .collect()
    };
    let transport = match &server.transport {
        Transport::Stdio { command, args, env } => {
            // A secret in the command line would be shown to every user
            // of the machine (`ps`, `/proc/PID/cmdline`): refused, it
            // goes in `env`.
            if let Some(var) = std::iter::once(command)
                .chain(args)
                .flat_map(|t| vars(t))
                .find(|v| secret_name(v))
            {
                return Err(why(format!(
                    "${{{var}}} in its command line would show the secret to every user of this machine (ps); revolve expands secrets only into \"env\": set it there"
                )));
            }
            Transport::Stdio {
                command: expand(command, lookup).map_err(why)?,
                args: args
                    .iter()
                    .map(|a| expand(a, lookup).map_err(why))
                    .collect::<Result<_, _>>()?,
                env: map(env)?,
            }
        }
        Transport::Http { url, headers } => Transport::Http {
            url: expand(url, lookup).map_err(why)?,
            headers: map(headers)?,
        },
    };
    Ok(Server {
        transport,
        ..server.clone()
    })
}

/// The values of the variables the server's configuration names: they
/// are hidden from every result as the API keys are.
pub fn secrets(server: &Server, lookup: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    let mut texts: Vec<&String> = Vec::new();
    match &server.transport {
        Transport::Stdio { command, args, env } => {
            texts.push(command);
            texts.extend(args);
            texts.extend(env.values());
        }
        Transport::Http { url, headers } => {
            texts.push(url);
            texts.extend(headers.values());
        }
    }
    texts
        .into_iter()
        .flat_map(|t| vars(t))
        .filter_map(|var| lookup(var).filter(|v| !v.is_empty()))
        .collect()
}

/// The variables `text` names (`${VAR}`, `${VAR:-default}`), in order.
fn vars(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else { break };
        out.push(after[..end].split(":-").next().unwrap_or(""));
        rest = &after[end + 1..];
    }
    out
}

/// A tool as a server lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listed {
    /// The tool's name on its server.
    pub name: String,
    /// What the server says it does.
    pub description: Option<String>,
    /// The JSON Schema of its arguments, as the server gave it.
    pub input_schema: Value,
}

pub use crate::record::McpTool;

/// How long, in seconds, a server may take to start (spawn or connect,
/// `initialize`, `tools/list`) before it has failed:
/// [`crate::policy::MCP_START_TIMEOUT_S`], or `mcp_timeout_s` when that is
/// sooner (a server that answers nothing within it fails as a call would).
pub fn start_bound_s(mcp_timeout_s: u64) -> u64 {
    crate::policy::MCP_START_TIMEOUT_S.min(mcp_timeout_s)
}

/// After how long, in milliseconds, a request waiting for servers still
/// starting says so ([`waiting_note`]): [`crate::policy::MCP_START_NOTICE_MS`],
/// or `None` when a server's start bound ([`start_bound_s`]) ends by then
/// (a stuck server is said to have failed instead, once).
pub fn start_notice_ms(mcp_timeout_s: u64) -> Option<u64> {
    let notice = crate::policy::MCP_START_NOTICE_MS;
    (start_bound_s(mcp_timeout_s).saturating_mul(1000) > notice).then_some(notice)
}

/// The line a request waiting for the servers `names` (still starting)
/// shows, at most `left_ms` more.
pub fn waiting_note(names: &[String], left_ms: u64) -> String {
    let (servers, them) = match names {
        [one] => (format!("MCP server {one}"), "its tools join"),
        _ => (
            format!("MCP servers {}", names.join(", ")),
            "their tools join",
        ),
    };
    format!(
        "revolve: waiting for {servers} to start, at most {} s more ({them} a later request if not up by then)",
        left_ms.div_ceil(1000)
    )
}

/// The name a server's tool is offered as: `mcp__SERVER__TOOL`, other
/// characters than letters, digits, `_` and `-` turned into `_`, cut to
/// [`policy::MCP_NAME_CHARS`].
pub fn tool_name(server: &str, tool: &str) -> String {
    format!("mcp__{server}__{tool}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(policy::MCP_NAME_CHARS)
        .collect()
}

/// Whether the model's call names an MCP tool (offered or not).
pub(crate) fn is_mcp(name: &str) -> bool {
    name.starts_with("mcp__")
}

/// The tools offered from what the servers listed (see [`offered_noting`]).
pub fn offered(servers: &[(String, Vec<Listed>)]) -> Vec<McpTool> {
    offered_noting(servers).0
}

/// The tools offered from what the servers listed: ordered by name,
/// descriptions and schemas cut to their bounds, and a line for the user
/// for each name two tools share once sanitised and cut (`a.b` and `a_b`
/// are both `mcp__s__a_b`). Both are kept: the first, by server then
/// tool name, keeps the name; the other is offered with the first free
/// suffix `_2`, `_3`, … (cut to fit [`policy::MCP_NAME_CHARS`]) that no
/// tool's own name takes. A tool a server lists twice is offered once.
pub fn offered_noting(servers: &[(String, Vec<Listed>)]) -> (Vec<McpTool>, Vec<String>) {
    let mut all: Vec<(String, &str, &Listed)> = servers
        .iter()
        .flat_map(|(server, tools)| {
            tools
                .iter()
                .map(move |t| (tool_name(server, &t.name), server.as_str(), t))
        })
        .collect();
    all.sort_by(|a, b| (&a.0, a.1, &a.2.name).cmp(&(&b.0, b.1, &b.2.name)));
    all.dedup_by(|b, a| a.1 == b.1 && a.2.name == b.2.name);
    let own: std::collections::BTreeSet<String> = all.iter().map(|(n, _, _)| n.clone()).collect();
    let mut out: BTreeMap<String, McpTool> = BTreeMap::new();
    let mut notes = Vec::new();
    for (base, server, t) in all {
        let name = match out.get(&base) {
            None => base,
            Some(first) => {
                let free = (2..)
                    .map(|k: usize| {
                        let suffix = format!("_{k}");
                        let room = policy::MCP_NAME_CHARS.saturating_sub(suffix.len());
                        base.chars().take(room).collect::<String>() + &suffix
                    })
                    .find(|n| !own.contains(n) && !out.contains_key(n))
                    .unwrap_or_default(); // not reached: the suffixes never run out
                notes.push(format!(
                    "revolve: the MCP tools {}/{} and {server}/{} are both named {base} once sanitised; the second is offered as {free}",
                    first.server, first.tool, t.name
                ));
                free
            }
        };
        let mut description = t.description.clone().unwrap_or_default();
        if description.chars().count() > policy::MCP_DESCRIPTION_CHARS {
            description = description
                .chars()
                .take(policy::MCP_DESCRIPTION_CHARS)
                .collect::<String>()
                + "…";
        }
        let mut schema = if t.input_schema.is_object() {
            t.input_schema.clone()
        } else {
            json!({"type": "object"})
        };
        let size = schema.to_string().len();
        if size > policy::MCP_SCHEMA_BYTES {
            schema = json!({"type": "object"});
            description.push_str(&format!(
                " (its input schema, {size} bytes, is over revolve's {} and is left out)",
                policy::MCP_SCHEMA_BYTES
            ));
        }
        out.insert(
            name.clone(),
            McpTool {
                name,
                server: server.to_owned(),
                tool: t.name.clone(),
                description,
                input_schema: schema,
            },
        );
    }
    (out.into_values().collect(), notes)
}

/// What a recorded session's MCP servers gave, for a re-run with
/// `--provider replay:NAME` and no server running: the tool lists offered,
/// each with the number of user messages before it, and the result of
/// every MCP call, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Recorded {
    /// The tool lists offered, each with how many user messages came before it.
    pub lists: Vec<(usize, Vec<McpTool>)>,
    /// The result of every MCP call, in order.
    pub results: Vec<String>,
    /// How many results were given back already.
    pub given: usize,
}

impl Recorded {
    /// Reads them from a session's records (its whole chain).
    pub fn of<'a>(records: impl IntoIterator<Item = &'a crate::record::Record>) -> Recorded {
        use crate::record::{Record, Role};
        let mut out = Recorded::default();
        let mut users = 0;
        let mut calls: BTreeMap<String, String> = BTreeMap::new();
        for record in records {
            match record {
                Record::McpTools(t) => out.lists.push((users, t.tools.clone())),
                Record::Message(m) if m.role == Role::User => users += 1,
                Record::Message(m) if m.role == Role::Assistant => {
                    for c in &m.tool_calls {
                        calls.insert(c.id.clone(), c.name.clone());
                    }
                }
                Record::Message(m) if m.role == Role::Tool => {
                    let name = m.tool_call_id.as_ref().and_then(|id| calls.get(id));
                    if name.is_some_and(|n| is_mcp(n)) {
                        out.results.push(m.content.clone());
                    }
                }
                _ => {}
            }
        }
        out
    }

    /// The list offered before the turn that follows `users` user
    /// messages.
    pub fn list(&self, users: usize) -> Vec<McpTool> {
        self.lists
            .iter()
            .rev()
            .find(|(before, _)| *before <= users)
            .map(|(_, list)| list.clone())
            .unwrap_or_default()
    }

    /// The next recorded result, or an error result when the recording
    /// holds no more.
    pub fn next_result(&mut self) -> String {
        self.given += 1;
        self.results
            .get(self.given - 1)
            .cloned()
            .unwrap_or_else(|| {
                "error: the recorded session holds no result for this MCP call".to_owned()
            })
    }
}

/// The text the model gets from a `tools/call` result: each text item, a
/// line for each image, audio or resource, the structured content when
/// there is nothing else; `error:` first when the server says the call
/// failed.
pub fn result_text(result: &Value) -> String {
    let mut parts: Vec<String> = Vec::new();
    for item in result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let s = |k: &str| item.get(k).and_then(Value::as_str).unwrap_or("");
        match s("type") {
            "text" => parts.push(s("text").to_owned()),
            kind @ ("image" | "audio") => parts.push(format!(
                "[{kind}: {}, {} bytes of base64 not shown]",
                s("mimeType"),
                s("data").len()
            )),
            "resource" => {
                let r = item.get("resource").cloned().unwrap_or_default();
                let uri = r.get("uri").and_then(Value::as_str).unwrap_or("");
                match r.get("text").and_then(Value::as_str) {
                    Some(text) => parts.push(format!("[resource: {uri}]\n{text}")),
                    None => parts.push(format!("[resource: {uri}, binary, not shown]")),
                }
            }
            "resource_link" => parts.push(format!("[resource link: {} {}]", s("uri"), s("name"))),
            other => parts.push(format!("[{other} content not shown]")),
        }
    }
    if parts.is_empty() {
        if let Some(structured) = result.get("structuredContent") {
            parts.push(structured.to_string());
        }
    }
    let text = parts.join("\n");
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        format!("error: {text}")
    } else {
        text
    }
}

/// The result of a call that did not get an answer from its server, and
/// the one line the user is told.
pub fn failed(server: &str, tool: &str, why: &str) -> (String, String) {
    (
        format!("error: the MCP server {server} did not answer the call of {tool}: {why}"),
        format!("revolve: MCP server {server}: {why}"),
    )
}

/// The result of a call of an MCP tool the session does not offer now.
pub fn unknown(name: &str, offered: &[McpTool]) -> String {
    let names: Vec<&str> = offered.iter().map(|t| t.name.as_str()).collect();
    if names.is_empty() {
        format!("error: there is no tool named {name:?}: no MCP server is connected")
    } else {
        format!(
            "error: there is no tool named {name:?}; the MCP tools are {}",
            names.join(", ")
        )
    }
}

/// The result of an MCP call the user did not allow.
pub const REFUSED: &str = "error: the user did not allow this MCP tool call";

/// What stderr says when an MCP call is refused for want of a terminal.
pub(crate) const NO_TERMINAL: &str = "revolve: refused an MCP tool call (pass --allow-mcp, or a permission rule such as --allow 'mcp__SERVER__*', to allow them without a terminal)";

/// What the user is asked about a call: the tool and its arguments.
pub fn question(name: &str, arguments: &str) -> String {
    let args = arguments.trim();
    if args.is_empty() || args == "{}" {
        name.to_owned()
    } else {
        format!("{name} {args}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::{Request, Wire};

    fn env(var: &str) -> Option<String> {
        match var {
            "TOKEN" => Some("t0k".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn a_server_starts_within_the_start_bound_or_mcp_timeout_s_if_sooner() {
        assert_eq!(start_bound_s(1), 1);
        assert_eq!(start_bound_s(60), crate::policy::MCP_START_TIMEOUT_S);
    }

    #[test]
    fn a_wait_for_starting_servers_is_said_unless_their_start_bound_ends_first() {
        let notice = crate::policy::MCP_START_NOTICE_MS;
        assert_eq!(start_notice_ms(1), None, "a 1 s start bound ends by then");
        assert_eq!(start_notice_ms(2), Some(notice));
        assert_eq!(start_notice_ms(60), Some(notice));
        assert_eq!(
            waiting_note(&["docs".into()], 9_000),
            "revolve: waiting for MCP server docs to start, at most 9 s more \
             (its tools join a later request if not up by then)"
        );
        assert_eq!(
            waiting_note(&["a".into(), "b".into()], 8_500),
            "revolve: waiting for MCP servers a, b to start, at most 9 s more \
             (their tools join a later request if not up by then)"
        );
    }

    #[test]
    fn reads_both_formats_and_says_what_is_wrong() {
        let text = r#"{"mcpServers": {
            "git": {"command": "uvx", "args": ["mcp-server-git"], "env": {"A": "${TOKEN}"}},
            "docs": {"type": "http", "url": "http://h/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
        }}"#;
        let servers = parse_project_file(text, "/r/.mcp.json").unwrap();
        assert_eq!(servers.len(), 2);
        assert_eq!(servers[0].name, "docs");
        assert!(
            matches!(&servers[0].transport, Transport::Http { url, .. } if url == "http://h/mcp")
        );
        assert!(
            matches!(&servers[1].transport, Transport::Stdio { command, args, .. } if command == "uvx" && args == &["mcp-server-git"])
        );
        assert_eq!(servers[1].origin, Origin::Project("/r/.mcp.json".into()));
        let e = parse_servers(&json!({"a__b": {"command": "x"}}), &Origin::Config).unwrap_err();
        assert!(e.contains("double underscore"), "{e}");
        let e = parse_servers(&json!({"a": {"args": []}}), &Origin::Config).unwrap_err();
        assert!(
            e.starts_with("config.json: MCP server \"a\": give a \"command\""),
            "{e}"
        );
        let e =
            parse_servers(&json!({"a": {"type": "sse", "url": "u"}}), &Origin::Config).unwrap_err();
        assert!(e.contains("SSE"), "{e}");
        assert!(parse_project_file("{}", "p").unwrap().is_empty());
        assert!(parse_project_file("{", "p").is_err());
    }

    #[test]
    fn config_wins_over_the_project_file() {
        let c = parse_servers(&json!({"a": {"command": "mine"}}), &Origin::Config).unwrap();
        let p = parse_servers(
            &json!({"a": {"command": "theirs"}, "b": {"command": "b"}}),
            &Origin::Project("p".into()),
        )
        .unwrap();
        let all = merge(c, p);
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].origin, Origin::Config);
        assert_eq!(all[1].name, "b");
    }

    #[test]
    fn variables_expand_and_a_missing_one_is_named() {
        assert_eq!(expand("Bearer ${TOKEN}!", &env).unwrap(), "Bearer t0k!");
        assert_eq!(expand("${NOPE:-d}/${EMPTY:-e}", &env).unwrap(), "d/e");
        assert_eq!(expand("no vars $HOME", &env).unwrap(), "no vars $HOME");
        assert_eq!(
            expand("${NOPE}", &env).unwrap_err(),
            "the variable NOPE is not set"
        );
        assert!(expand("${TOKEN", &env).is_err());
        let s = parse_servers(
            &json!({"a": {"command": "x", "env": {"T": "${TOKEN}", "U": "${NOPE:-u}"}}}),
            &Origin::Config,
        )
        .unwrap();
        assert_eq!(secrets(&s[0], &env), ["t0k"]);
    }

    #[test]
    fn a_secret_expands_into_env_never_into_the_command_line() {
        let keys = |var: &str| (var == "OPENAI_API_KEY").then(|| "sk-x".to_owned());
        let s = parse_servers(
            &json!({"a": {"command": "x", "args": ["--key=${OPENAI_API_KEY}"]}}),
            &Origin::Project("p".into()),
        )
        .unwrap();
        let e = expanded(&s[0], &keys).unwrap_err();
        assert!(
            e.starts_with("MCP server a: ${OPENAI_API_KEY} in its command line")
                && e.contains("\"env\""),
            "{e}"
        );
        let s = parse_servers(
            &json!({"a": {"command": "x", "args": ["${HOME}"], "env": {"OPENAI_API_KEY": "${OPENAI_API_KEY}"}}}),
            &Origin::Project("p".into()),
        )
        .unwrap();
        let lookup = |var: &str| keys(var).or_else(|| (var == "HOME").then(|| "/h".to_owned()));
        let ok = expanded(&s[0], &lookup).unwrap();
        assert!(
            matches!(&ok.transport, Transport::Stdio { args, env, .. } if args == &["/h"] && env["OPENAI_API_KEY"] == "sk-x")
        );
    }

    #[test]
    fn the_description_shows_env_with_literal_secrets_masked() {
        let s = parse_servers(
            &json!({"a": {"command": "node", "args": ["s.js"], "env": {
                "NODE_OPTIONS": "--require ./x.js", "GITHUB_TOKEN": "ghp_literal", "API": "${API_TOKEN}"}}}),
            &Origin::Config,
        )
        .unwrap();
        assert_eq!(
            describe(&s[0]),
            "stdio: node s.js  env: API=${API_TOKEN} GITHUB_TOKEN=**** NODE_OPTIONS=--require ./x.js"
        );
    }

    #[test]
    fn names_that_collide_once_sanitised_are_both_kept_and_said() {
        let listed = |name: &str| Listed {
            name: name.into(),
            description: None,
            input_schema: json!({"type": "object"}),
        };
        let long = "x".repeat(100);
        let (tools, notes) = offered_noting(&[
            (
                "s".into(),
                vec![
                    listed("a_b"),
                    listed("a.b"),
                    listed("a b"),
                    listed("a_b_2"),
                    listed("a_b"),
                ],
            ),
            (
                "t".into(),
                vec![listed(&format!("{long}1")), listed(&format!("{long}2"))],
            ),
        ]);
        let names: Vec<(&str, &str)> = tools
            .iter()
            .map(|t| (t.name.as_str(), t.tool.as_str()))
            .collect();
        assert_eq!(
            &names[..4],
            [
                ("mcp__s__a_b", "a b"),
                ("mcp__s__a_b_2", "a_b_2"),
                ("mcp__s__a_b_3", "a.b"),
                ("mcp__s__a_b_4", "a_b"),
            ]
        );
        assert_eq!(tools.len(), 6);
        assert!(tools.iter().all(|t| t.name.len() <= policy::MCP_NAME_CHARS));
        assert_eq!(notes.len(), 3, "{notes:?}");
        assert_eq!(
            notes[0],
            "revolve: the MCP tools s/a b and s/a.b are both named mcp__s__a_b once sanitised; the second is offered as mcp__s__a_b_3"
        );
        assert!(
            notes[2].starts_with("revolve: the MCP tools t/x"),
            "{notes:?}"
        );
    }

    #[test]
    fn names_are_safe_and_bounded() {
        assert_eq!(tool_name("git", "log"), "mcp__git__log");
        assert_eq!(tool_name("s", "a.b/c d"), "mcp__s__a_b_c_d");
        assert_eq!(
            tool_name("s", &"x".repeat(200)).len(),
            policy::MCP_NAME_CHARS
        );
    }

    #[test]
    fn offered_tools_are_ordered_and_cut() {
        let listed = |name: &str, schema: Value| Listed {
            name: name.into(),
            description: Some("d".repeat(2000)),
            input_schema: schema,
        };
        let big = json!({"type": "object", "description": "x".repeat(policy::MCP_SCHEMA_BYTES)});
        let tools = offered(&[
            ("b".into(), vec![listed("z", json!({"type": "object"}))]),
            ("a".into(), vec![listed("y", big), listed("x", json!(null))]),
        ]);
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["mcp__a__x", "mcp__a__y", "mcp__b__z"]);
        assert_eq!(tools[1].input_schema, json!({"type": "object"}));
        assert!(tools[1].description.contains("is left out"));
        assert_eq!(tools[0].input_schema, json!({"type": "object"}));
        assert_eq!(
            tools[2].description.chars().count(),
            policy::MCP_DESCRIPTION_CHARS + 1
        );
    }

    #[test]
    fn the_shape_offers_them_after_the_own_tools_in_both_wires() {
        let tools = offered(&[(
            "s".into(),
            vec![Listed {
                name: "echo".into(),
                description: None,
                input_schema: json!({"type": "object"}),
            }],
        )]);
        let msgs = [crate::record::Message::user(
            time::macros::datetime!(2026-12-05 10:00 UTC),
            "hi",
        )];
        for wire in [Wire::OpenAi, Wire::Anthropic] {
            let shape = crate::request::Shape {
                mcp: tools.clone(),
                ..crate::request::Shape::limited(None)
            };
            let with = Request::shaped(wire, "m", None, &msgs, &shape);
            let v: Value = serde_json::from_str(&with.body.text()).unwrap();
            let last = v["tools"].as_array().unwrap().last().unwrap().to_string();
            assert!(last.contains("mcp__s__echo"), "{last}");
            let toolless = crate::request::Shape {
                tools: false,
                ..shape
            };
            let without = Request::shaped(wire, "m", None, &msgs, &toolless);
            assert!(!without.body.text().contains("mcp__"));
        }
    }

    #[test]
    fn the_record_reads_back_as_written() {
        let tools = offered(&[(
            "s".into(),
            vec![Listed {
                name: "t".into(),
                description: Some("d".into()),
                input_schema: json!({"type": "object", "properties": {"a": {"type": "string"}}}),
            }],
        )]);
        let record = crate::record::Record::McpTools(crate::record::McpTools {
            at: time::macros::datetime!(2026-12-05 10:00 UTC),
            tools,
        });
        let line = serde_json::to_string(&record).unwrap();
        assert!(line.starts_with(r#"{"type":"mcp_tools","#), "{line}");
        assert_eq!(crate::record::Record::parse_line(&line).unwrap(), record);
    }

    #[test]
    fn results_read_as_text_with_a_line_per_image_or_resource() {
        let r = json!({"content": [
            {"type": "text", "text": "hello"},
            {"type": "image", "mimeType": "image/png", "data": "AAAA"},
            {"type": "resource", "resource": {"uri": "file:///a", "text": "body"}},
        ]});
        assert_eq!(
            result_text(&r),
            "hello\n[image: image/png, 4 bytes of base64 not shown]\n[resource: file:///a]\nbody"
        );
        let e = json!({"content": [{"type": "text", "text": "bad"}], "isError": true});
        assert_eq!(result_text(&e), "error: bad");
        assert_eq!(
            result_text(&json!({"structuredContent": {"a": 1}})),
            r#"{"a":1}"#
        );
    }
}
