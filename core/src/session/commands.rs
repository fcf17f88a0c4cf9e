//! What the user asks between turns that is not a turn: `/name`, an
//! address for an unnamed session, `/model`, `/effort`, `/plan`,
//! `/max-cost`, and the MCP tools a line brings.

use std::collections::BTreeSet;

use time::OffsetDateTime;

use super::{Command, Session};
use crate::names;
use crate::record::{Record, Renamed};

impl Session {
    /// `/max-cost`: the session's cost limit from now on.
    pub(super) fn set_max_cost(&mut self, max: Option<u64>) -> Vec<Command> {
        self.settings.max_cost = max;
        vec![Command::show(match max {
            Some(max) => format!(
                "max cost: {} for this session from now on (spent {})",
                crate::models::dollars_text(max),
                crate::models::dollars_text(self.state.totals.cost)
            ),
            None => "max cost: none for this session from now on".to_owned(),
        })]
    }

    /// `/name`: the name, when no other session of this directory uses
    /// it.
    pub(super) fn rename(
        &mut self,
        name: String,
        used: &BTreeSet<String>,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        match names::validate(&name, used) {
            Ok(()) => {
                let renamed = Record::Renamed(Renamed {
                    at: now,
                    name: name.clone(),
                    generated: false,
                });
                let mut cmds = self.append(vec![renamed]);
                cmds.push(Command::show(format!("this session is now named '{name}'")));
                cmds
            }
            Err(why) => vec![Command::show(format!(
                "cannot name this session '{name}': {why}"
            ))],
        }
    }

    /// An unnamed session gets a generated name, for `revolve send` and
    /// `attach`.
    pub(super) fn address(&mut self, used: &BTreeSet<String>, now: OffsetDateTime) -> Vec<Command> {
        if self.state().name.is_some() {
            return Vec::new();
        }
        let name = names::allocate(used);
        let renamed = Record::Renamed(Renamed {
            at: now,
            name: name.clone(),
            generated: true,
        });
        let mut cmds = self.append(vec![renamed]);
        cmds.push(Command::show(format!(
            "this session has no name: it is '{name}' now, for revolve send and attach"
        )));
        cmds
    }

    /// The MCP tools offered now, logged when the list changed; between
    /// turns only: a request in flight was sent with the list standing,
    /// and replay rebuilds it with that one.
    pub(super) fn mcp_tools(
        &mut self,
        tools: Vec<crate::mcp::McpTool>,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        if tools == self.state.mcp_tools || self.busy() {
            return Vec::new();
        }
        self.append(vec![Record::McpTools(crate::record::McpTools {
            at: now,
            tools,
        })])
    }

    /// `/model NAME` between turns: logged as a `model_changed` record, so
    /// the requests after it (live and rebuilt) ask that model, with the
    /// table's window for it, else the window the session had.
    pub(super) fn switch_model(&mut self, model: String, now: OffsetDateTime) -> Vec<Command> {
        let model = model.trim().to_owned();
        if self.busy() {
            return vec![Command::show(
                "/model waits for the turn in flight to end".into(),
            )];
        }
        if model.is_empty() || model.chars().any(char::is_whitespace) {
            return vec![Command::show(format!(
                "/model takes one model name; the session asks {}",
                self.state.model
            ))];
        }
        if model == self.state.model {
            return vec![Command::show(format!("already asking {model}"))];
        }
        let entry = self.settings.models.find(&self.state.provider, &model);
        // A budget is kept only at known prices: a switch to a model
        // without them would end it without a word, so it is refused.
        let priced = entry.as_ref().is_some_and(|(_, m)| m.prices.is_some());
        if self.settings.max_cost.is_some() && self.prices().is_some() && !priced {
            return vec![Command::show(format!(
                "/model: the prices of {model} are not known, so --max-cost could not be kept; \
                 the session stays with {} (add its prices under \"models\" in config.json)",
                self.state.model
            ))];
        }
        let known = entry.and_then(|(_, m)| m.window);
        let window = known.unwrap_or(self.state.window);
        let mut cmds = self.append(vec![Record::ModelChanged(crate::record::ModelChanged {
            at: now,
            model: model.clone(),
            window,
        })]);
        let from = if known.is_some() {
            "the model table"
        } else {
            "the session's, as the model table does not know it"
        };
        cmds.push(Command::show(format!(
            "model {model} from the next request on; window {window} tokens ({from})"
        )));
        cmds
    }

    /// The reasoning effort from the next request on: logged as an
    /// `effort` record when it changes, so replay rebuilds the requests.
    pub(super) fn set_effort(
        &mut self,
        effort: Option<crate::models::Effort>,
        now: OffsetDateTime,
    ) -> Vec<Command> {
        let named = effort.map_or("the model's default", |e| e.as_str());
        if self.state.effort == effort {
            return vec![Command::show(format!("effort: {named}"))];
        }
        if self.busy() {
            return vec![Command::show(
                "/effort waits for the turn in flight to end".into(),
            )];
        }
        let mut cmds = self.append(vec![Record::Effort(crate::record::EffortChanged {
            at: now,
            effort,
        })]);
        cmds.push(Command::show(format!(
            "effort: {named} from the next request on"
        )));
        cmds
    }

    /// Plan mode turned on or off: logged when it changes, and told.
    pub(super) fn plan(&mut self, on: bool, now: OffsetDateTime) -> Vec<Command> {
        if self.state.planning == on {
            return vec![Command::show(
                if on {
                    "already planning (/plan off ends it)"
                } else {
                    "not planning"
                }
                .to_owned(),
            )];
        }
        let mut cmds = self.append(vec![Record::Planning(crate::record::Planning {
            at: now,
            on,
        })]);
        cmds.push(Command::show(
            if on {
                "planning: the model may read, search and run commands read-only; edits and \
                 writes are refused (/plan off ends it)"
            } else {
                "planning ended: edits and commands are as before"
            }
            .to_owned(),
        ));
        cmds
    }
}
