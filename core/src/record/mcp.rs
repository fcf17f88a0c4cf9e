//! The record of the MCP tools offered from a point of the session on.

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

/// `mcp_tools`: the MCP server tools offered from now on (an empty list:
/// none any more). Written when the list differs from the last one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpTools {
    /// When it happened, by the shell's clock: the log's only time.
    #[serde(with = "time::serde::rfc3339")]
    pub at: OffsetDateTime,
    /// The tools, in the order they are offered after the built-in ones.
    pub tools: Vec<McpTool>,
}

/// A server tool as it is offered to the model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpTool {
    /// The name the model calls: `mcp__SERVER__TOOL`.
    pub name: String,
    /// The server's name.
    pub server: String,
    /// The tool's name on its server.
    pub tool: String,
    /// What the server says the tool does, as the model reads it (bounded).
    pub description: String,
    /// The input schema offered (see [`crate::policy::MCP_SCHEMA_BYTES`]).
    pub input_schema: serde_json::Value,
}
