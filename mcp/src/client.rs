//! The protocol over a transport: `initialize`, `tools/list`,
//! `tools/call`.

use std::fmt;
use std::time::Duration;

use revolve_core::mcp::Listed;
use serde_json::{json, Value};

use crate::VERSIONS;

/// Why a server did not answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// It could not be started or reached.
    Start(String),
    /// The process exited or the connection closed (the server is gone).
    Gone(String),
    /// No answer within the time allowed (the server may still be there).
    Timeout(Duration),
    /// It answered with a JSON-RPC error.
    Rpc {
        /// The JSON-RPC error code.
        code: i64,
        /// The server's message.
        message: String,
    },
    /// It answered something this client cannot read.
    Protocol(String),
    /// Its message was larger than revolve reads (the bound, in bytes):
    /// the rest was not kept.
    TooBig(usize),
    /// It needs the user to log in (OAuth), and no token it takes is
    /// kept: the server's name.
    Login(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Start(why) => write!(f, "cannot start: {why}"),
            Error::Gone(why) => write!(f, "{why}"),
            Error::Timeout(d) => write!(f, "no answer within {} s", d.as_secs()),
            Error::Rpc { code, message } => write!(f, "error {code}: {message}"),
            Error::Protocol(why) => write!(f, "{why}"),
            Error::TooBig(bound) => write!(
                f,
                "its answer is over revolve's bound of {bound} bytes (MCP_MESSAGE_BYTES); the rest was not read"
            ),
            Error::Login(name) => write!(
                f,
                "it needs you to log in: run `revolve mcp login {name}`"
            ),
        }
    }
}

/// How a request and its answer travel.
pub(crate) trait Transport: Send {
    /// Sends the request `message` (whose id is `id`) and returns the
    /// response object (with `result` or `error`), waiting at most
    /// `timeout`; messages from the server meanwhile are handled.
    fn request(&mut self, message: &Value, id: u64, timeout: Duration) -> Result<Value, Error>;
    /// Sends a notification.
    fn notify(&mut self, message: &Value) -> Result<(), Error>;
    /// Whether the server said its tools changed since the last call.
    fn take_list_changed(&mut self) -> bool;
    /// After `initialize`: the version agreed, which HTTP sends as a
    /// header.
    fn agreed(&mut self, _version: &str) {}
    /// Values that must not show anywhere (an OAuth token).
    fn secrets(&self) -> Vec<String> {
        Vec::new()
    }
}

/// A connected, initialized server.
pub struct Client {
    transport: Box<dyn Transport>,
    next_id: u64,
    /// The protocol version agreed.
    pub version: String,
    /// The server's name and version, as it says.
    pub server_info: String,
}

impl Client {
    /// Initializes the server over `transport`.
    pub(crate) fn connect(
        transport: Box<dyn Transport>,
        timeout: Duration,
    ) -> Result<Client, Error> {
        let mut client = Client {
            transport,
            next_id: 0,
            version: String::new(),
            server_info: String::new(),
        };
        let result = client.rpc(
            "initialize",
            json!({
                "protocolVersion": VERSIONS[0],
                "capabilities": {},
                "clientInfo": {"name": "revolve", "version": env!("CARGO_PKG_VERSION")},
            }),
            timeout,
        )?;
        let version = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !VERSIONS.contains(&version) {
            return Err(Error::Protocol(format!(
                "the server speaks protocol version {version:?}; revolve speaks {}",
                VERSIONS.join(", ")
            )));
        }
        client.version = version.to_owned();
        let info = &result["serverInfo"];
        client.server_info = format!(
            "{} {}",
            info["name"].as_str().unwrap_or("?"),
            info["version"].as_str().unwrap_or("")
        )
        .trim()
        .to_owned();
        client.transport.agreed(version);
        client
            .transport
            .notify(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        Ok(client)
    }

    /// Every tool the server lists, page after page (at most
    /// [`revolve_core::policy::MCP_LIST_PAGES`]).
    pub(crate) fn list_tools(&mut self, timeout: Duration) -> Result<Vec<Listed>, Error> {
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..revolve_core::policy::MCP_LIST_PAGES {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let page = self.rpc("tools/list", params, timeout)?;
            for t in page
                .get("tools")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let Some(name) = t.get("name").and_then(Value::as_str) else {
                    continue;
                };
                tools.push(Listed {
                    name: name.to_owned(),
                    description: t
                        .get("description")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    input_schema: t.get("inputSchema").cloned().unwrap_or(Value::Null),
                });
            }
            cursor = page
                .get("nextCursor")
                .and_then(Value::as_str)
                .map(str::to_owned);
            if cursor.is_none() {
                break;
            }
        }
        Ok(tools)
    }

    /// Calls `tool` with `arguments` (a JSON object); the result object.
    pub fn call(
        &mut self,
        tool: &str,
        arguments: Value,
        timeout: Duration,
    ) -> Result<Value, Error> {
        self.rpc(
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
            timeout,
        )
    }

    /// The tokens this client sends, to be hidden wherever they might
    /// show.
    pub(crate) fn secrets(&self) -> Vec<String> {
        self.transport.secrets()
    }

    /// Whether the server said its tools changed.
    pub(crate) fn list_changed(&mut self) -> bool {
        self.transport.take_list_changed()
    }

    fn rpc(&mut self, method: &str, params: Value, timeout: Duration) -> Result<Value, Error> {
        self.next_id += 1;
        let id = self.next_id;
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let answer = self.transport.request(&message, id, timeout)?;
        if let Some(error) = answer.get("error") {
            return Err(Error::Rpc {
                code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
                message: error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
            });
        }
        Ok(answer.get("result").cloned().unwrap_or(Value::Null))
    }
}

/// What a client does with a message the server sent on its own: the
/// answer to send back to a request (`ping` answered, anything else
/// refused), and whether it said the tools changed.
pub(crate) fn from_server(message: &Value) -> (Option<Value>, bool) {
    let method = message.get("method").and_then(Value::as_str).unwrap_or("");
    let changed = method == "notifications/tools/list_changed";
    let reply = message.get("id").filter(|_| !method.is_empty()).map(|id| {
        if method == "ping" {
            json!({"jsonrpc": "2.0", "id": id, "result": {}})
        } else {
            json!({"jsonrpc": "2.0", "id": id,
                   "error": {"code": -32601, "message": format!("revolve does not offer {method}")}})
        }
    });
    (reply, changed)
}

/// Whether `message` is the response to request `id`.
pub(crate) fn answers(message: &Value, id: u64) -> bool {
    message.get("id").and_then(Value::as_u64) == Some(id)
        && (message.get("result").is_some() || message.get("error").is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_messages_are_answered_or_noted() {
        let (reply, changed) = from_server(&json!({"jsonrpc": "2.0", "id": 7, "method": "ping"}));
        assert_eq!(reply.unwrap()["result"], json!({}));
        assert!(!changed);
        let (reply, changed) =
            from_server(&json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}));
        assert!(reply.is_none() && changed);
        let (reply, _) = from_server(&json!({"jsonrpc": "2.0", "id": 8, "method": "roots/list"}));
        assert_eq!(reply.unwrap()["error"]["code"], -32601);
        assert!(answers(&json!({"id": 3, "result": {}}), 3));
        assert!(!answers(&json!({"id": 3, "method": "ping"}), 3));
    }
}
