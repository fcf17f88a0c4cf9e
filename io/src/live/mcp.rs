//! MCP servers in a running session: their tools offered before each
//! turn (the first turn waits for servers still starting, up to a bound),
//! their calls passed on with the core's timeout.

use std::time::Duration;

use revolve_core::{Input, ToolInput};

use super::Live;
use crate::clock;
use crate::front::Front;

impl<F: Front> Live<F> {
    /// The MCP tools the servers offer now, for the core to log when the
    /// list changed (`None`: no server is configured); the user is told of
    /// servers that failed.
    pub(super) fn mcp_offered(&mut self) -> Option<Vec<revolve_core::mcp::McpTool>> {
        if let Some(recorded) = &self.runtime.mcp.recorded {
            let users = self
                .state()
                .messages()
                .iter()
                .filter(|m| m.role == revolve_core::Role::User)
                .count();
            return Some(recorded.list(users));
        }
        let hub = self.runtime.mcp.hub.clone()?;
        let wait = revolve_core::policy::MCP_START_WAIT_MS;
        let first = revolve_core::mcp::start_notice_ms(self.runtime.settings.mcp_timeout_s)
            .map_or(wait, |notice| notice.min(wait));
        if !hub.wait(Duration::from_millis(first)) && first < wait {
            let starting = hub.starting();
            if !starting.is_empty() {
                let left = wait - first;
                self.front
                    .notice(&revolve_core::mcp::waiting_note(&starting, left));
            }
            hub.wait(Duration::from_millis(wait - first));
        }
        let listed = hub.tools(Duration::from_secs(self.runtime.settings.mcp_timeout_s));
        for line in hub.take_failures() {
            self.front.notice(&line);
        }
        let (tools, collisions) = revolve_core::mcp::offered_noting(&listed);
        for line in hub.once(collisions) {
            self.front.notice(&line);
        }
        Some(tools)
    }

    /// Runs the MCP call `id`; its result (or the error the model gets,
    /// with one line for the user) as the input.
    pub(super) fn call_mcp(
        &mut self,
        id: String,
        server: &str,
        tool: &str,
        arguments: &str,
        timeout_s: u64,
    ) -> Input {
        let name = revolve_core::mcp::tool_name(server, tool);
        self.front.notice(&format!(
            "→ {}",
            revolve_core::text::inert(&revolve_core::mcp::question(&name, arguments))
        ));
        // Not marked shown: once its result is logged the front gets the
        // call and its result as one not run through the tools (a
        // `tool_call` and a `tool_result` event in stream-json; nothing
        // more in text, where the line above said it).
        if let Some(recorded) = self.runtime.mcp.recorded.as_mut() {
            return Input::Tool(ToolInput::Done {
                id,
                output: recorded.next_result(),
                grant: None,
                effects: Default::default(),
                parts: None,
                now: clock::now(),
            });
        }
        let (outcome, secrets) = match &self.runtime.mcp.hub {
            Some(hub) => (
                hub.call(server, tool, arguments, Duration::from_secs(timeout_s)),
                hub.secrets(),
            ),
            None => (
                Err("no MCP server runs in this session".to_owned()),
                Vec::new(),
            ),
        };
        let output = match outcome {
            Ok(result) => revolve_core::mcp::result_text(&result),
            Err(why) => {
                let (result, line) = revolve_core::mcp::failed(server, tool, &why);
                self.front.notice(&line);
                result
            }
        };
        // Keys are hidden as in every tool's output: the API keys and the
        // values the servers' configuration took from variables.
        let keys = revolve_core::edit::Keys::new(
            revolve_core::config::API_KEY_VARS
                .iter()
                .filter_map(|name| std::env::var(name).ok())
                .chain(secrets),
        );
        let output = keys.redact(&output).into_owned();
        Input::Tool(ToolInput::Done {
            id,
            output,
            grant: None,
            effects: Default::default(),
            parts: None,
            now: clock::now(),
        })
    }
}
