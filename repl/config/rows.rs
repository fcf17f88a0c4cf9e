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

/// A setting's value and where it came from.
fn shown<T: Serialize>(setting: &Setting<T>) -> (Value, &'static str) {
    (json!(setting.value), setting.source.as_str())
}

/// Every row, in the order `config show` prints them.
const ROWS: &[Row] = &[
    Row {
        name: "provider",
        read: Read::Own(|s| {
            let value = match &s.replay {
                Some(source) => json!(format!("replay:{source}")),
                None => json!(s.speaks().name()),
            };
            (value, s.provider.source.as_str())
        }),
    },
    Row {
        name: "base_url",
        read: Read::Own(|s| {
            (
                json!(redact_url_credentials(&s.base_url.value)),
                s.base_url.source.as_str(),
            )
        }),
    },
    Row {
        name: "model",
        read: Read::Own(|s| shown(&s.model)),
    },
    Row {
        name: "window",
        read: Read::Own(|s| shown(&s.window)),
    },
    Row {
        name: "models",
        read: Read::Own(|s| {
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
    },
    Row {
        name: "max_cost",
        // A number of dollars, as config.json takes it.
        read: Read::Core(|c| json!(c.max_cost.map(nanos_dollars))),
    },
    Row {
        name: "effort",
        read: Read::Own(|s| {
            (
                json!(s.effort.value.map(|e| e.as_str())),
                s.effort.source.as_str(),
            )
        }),
    },
    Row {
        name: "tool_choice",
        read: Read::Own(|s| {
            (
                json!(s.tool_choice.value.unwrap_or_default().as_str()),
                s.tool_choice.source.as_str(),
            )
        }),
    },
    Row {
        name: "retries",
        read: Read::Own(|s| shown(&s.retries)),
    },
    Row {
        name: "spill_result_chars",
        read: Read::Core(|c| json!(c.spill_chars)),
    },
    Row {
        name: "prune_result_chars",
        read: Read::Core(|c| json!(c.prune_chars)),
    },
    Row {
        name: "max_tool_rounds",
        read: Read::Core(|c| json!(c.max_tool_rounds)),
    },
    Row {
        name: "max_calls_per_answer",
        read: Read::Core(|c| json!(c.max_calls_per_answer)),
    },
    Row {
        name: "max_repeated_calls",
        read: Read::Core(|c| json!(c.repeat_limit)),
    },
    Row {
        name: "allow_shell",
        read: Read::Core(|c| json!(c.allow_shell)),
    },
    Row {
        name: "allow_edits",
        read: Read::Core(|c| json!(c.allow_edits)),
    },
    Row {
        name: "confirm_costly",
        read: Read::Core(|c| json!(c.confirm_costly)),
    },
    Row {
        name: "sandbox",
        read: Read::Own(|s| (json!(s.sandbox.value.as_str()), s.sandbox.source.as_str())),
    },
    Row {
        name: "sandbox_network",
        read: Read::Own(|s| shown(&s.sandbox_network)),
    },
    Row {
        name: "sandbox_writable",
        read: Read::Own(|s| shown(&s.sandbox_writable)),
    },
    Row {
        name: "permissions",
        read: Read::Own(|s| {
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
    },
    Row {
        name: "allow_mcp",
        read: Read::Core(|c| json!(c.allow_mcp)),
    },
    Row {
        name: "mcp_timeout_s",
        read: Read::Core(|c| json!(c.mcp_timeout_s)),
    },
    Row {
        name: "mcp_servers",
        read: Read::Own(|s| {
            let source = if s.mcp_servers.is_empty() {
                "default"
            } else {
                "config"
            };
            (described(&s.mcp_servers), source)
        }),
    },
    Row {
        name: "api_key",
        read: Read::Own(|s| match &s.key {
            Some((var, _)) => (json!(var), "env"),
            None => (Value::Null, "default"),
        }),
    },
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
