//! The rows `revolve config show` prints, as one table: each row's name
//! and how its value and its source are read from the settled
//! [`Settings`]. A new setting that `config show` names is a new row.

use serde::Serialize;
use serde_json::{json, Value};

use revolve_core::config::{redact_url_credentials, Setting, Source};

use super::{nanos_dollars, Settings};

impl Settings {
    /// The rows `config show` prints: name, value, source, in the order
    /// of [`ROWS`]. The key row names the variable the key came from,
    /// never the key; the base URL shows no password.
    pub(super) fn rows(&self) -> Vec<(&'static str, Value, &'static str)> {
        ROWS.iter()
            .filter_map(|row| {
                let (value, source) = match row.read {
                    Read::Own(read) => read(self),
                    Read::Core(read) => (read(&self.core), self.source(row.name).as_str()),
                    Read::Present(read) => read(self)?,
                };
                Some((row.name, value, source))
            })
            .collect()
    }
}

/// One row of `config show`.
struct Row {
    /// The setting's name, as `config.json` and `--json` spell it.
    name: &'static str,
    /// How its value and source are read.
    read: Read,
}

/// How a row's value and source are read.
enum Read {
    /// A setting settled here: its value and where it came from.
    Own(fn(&Settings) -> (Value, &'static str)),
    /// One of the core's settings: its value; where it came from is
    /// [`Settings::source`] of the row's name.
    Core(fn(&revolve_core::Settings) -> Value),
    /// A row shown only when there is something to show.
    Present(fn(&Settings) -> Option<(Value, &'static str)>),
}

/// A row of a setting settled here.
const fn own(name: &'static str, read: fn(&Settings) -> (Value, &'static str)) -> Row {
    Row {
        name,
        read: Read::Own(read),
    }
}

/// A row of one of the core's settings.
const fn core(name: &'static str, read: fn(&revolve_core::Settings) -> Value) -> Row {
    Row {
        name,
        read: Read::Core(read),
    }
}

/// A setting's value and where it came from.
fn shown<T: Serialize>(setting: &Setting<T>) -> (Value, &'static str) {
    (json!(setting.value), setting.source.as_str())
}

/// Every row, in the order `config show` prints them.
const ROWS: &[Row] = &[
    own("provider", |s| {
        let value = match &s.replay {
            Some(source) => json!(format!("replay:{source}")),
            None => json!(s.speaks().name()),
        };
        (value, s.provider.source.as_str())
    }),
    own("base_url", |s| {
        (
            json!(redact_url_credentials(&s.base_url.value)),
            s.base_url.source.as_str(),
        )
    }),
    own("model", |s| shown(&s.model)),
    own("window", |s| shown(&s.window)),
    own("models", |s| {
        let configured: Vec<&str> = s
            .core
            .models
            .iter()
            .filter(|(_, m)| m.configured)
            .map(|(name, _)| name)
            .collect();
        let source = if configured.is_empty() {
            Source::Default
        } else {
            Source::Config
        };
        (json!(configured), source.as_str())
    }),
    // A number of dollars, as config.json takes it.
    core("max_cost", |c| json!(c.max_cost.map(nanos_dollars))),
    own("effort", |s| {
        (
            json!(s.effort.value.map(|e| e.as_str())),
            s.effort.source.as_str(),
        )
    }),
    own("tool_choice", |s| {
        (
            json!(s.tool_choice.value.unwrap_or_default().as_str()),
            s.tool_choice.source.as_str(),
        )
    }),
    own("retries", |s| shown(&s.retries)),
    core("spill_result_chars", |c| json!(c.spill_chars)),
    core("prune_result_chars", |c| json!(c.prune_chars)),
    core("max_tool_rounds", |c| json!(c.max_tool_rounds)),
    core("max_calls_per_answer", |c| json!(c.max_calls_per_answer)),
    core("max_repeated_calls", |c| json!(c.repeat_limit)),
    core("allow_shell", |c| json!(c.allow_shell)),
    core("allow_edits", |c| json!(c.allow_edits)),
    core("confirm_costly", |c| json!(c.confirm_costly)),
    own("sandbox", |s| {
        (json!(s.sandbox.value.as_str()), s.sandbox.source.as_str())
    }),
    own("sandbox_network", |s| shown(&s.sandbox_network)),
    own("sandbox_writable", |s| shown(&s.sandbox_writable)),
    own("permissions", |s| {
        let (allow, deny) = &s.rule_texts;
        let source = if s.rules_from_flags {
            "flag"
        } else if allow.is_empty() && deny.is_empty() {
            "default"
        } else {
            "config"
        };
        (json!({"allow": allow, "deny": deny}), source)
    }),
    core("allow_mcp", |c| json!(c.allow_mcp)),
    core("mcp_timeout_s", |c| json!(c.mcp_timeout_s)),
    own("mcp_servers", |s| {
        let source = if s.mcp_servers.is_empty() {
            "default"
        } else {
            "config"
        };
        (described(&s.mcp_servers), source)
    }),
    own("api_key", |s| match &s.key {
        Some((var, _)) => (json!(var), "env"),
        None => (Value::Null, "default"),
    }),
    Row {
        name: "mcp_project_servers",
        read: Read::Present(|s| {
            let (file, servers, approved) = s.mcp_project.as_ref()?;
            let value = json!({"file": file, "approved": approved, "servers": described(servers)});
            // A config file too (`--json` says so); the table says whose:
            // the project's.
            Some((value, "config"))
        }),
    },
];

/// MCP servers by name, each as [`revolve_core::mcp::describe`] tells it.
fn described(servers: &[revolve_core::mcp::Server]) -> Value {
    let map: serde_json::Map<_, _> = servers
        .iter()
        .map(|s| (s.name.clone(), json!(revolve_core::mcp::describe(s))))
        .collect();
    Value::Object(map)
}
