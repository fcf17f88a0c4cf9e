//! Who allows a `web_fetch`, and what the allowed call carries. Under
//! `--network=off` it is refused. Then a permission rule about its host
//! (`web_fetch(domain:HOST)`) decides, a deny one first; while planning
//! only an allow rule lets it run. Otherwise the user's "always" for the
//! host (an `approved` record of `web_fetch` whose `path` is the host, so
//! a resumed session remembers it) or the user's answer at a terminal
//! (y, a, n); without a terminal it is refused, and the user told which
//! rule allows it. Every decision is an `approved` record with the rule
//! that made it.
//!
//! The call then carries the hosts it may reach at a private address
//! ([`crate::web::Access`]) and the session's own fetch of the same URL
//! within the cache's time ([`crate::web::cached`]).

use time::OffsetDateTime;

use super::approval::Gate;
use super::{Command, Session};
use crate::edit::Answer;
use crate::record::{Approved, Asked, Message, Record};
use crate::rules::Verdict;
use crate::tools::Tool;
use crate::web;

/// The result of a fetch the user did not allow.
pub(super) const REFUSED: &str = "error: the user did not allow fetching this page";

/// The result of a fetch under `--network=off`.
pub(super) const NETWORK_OFF: &str =
    "error: not run: the user turned the network off for this session (--network=off)";

/// The result of a fetch while planning that no rule allows.
pub(super) const PLANNING: &str = "error: not run: this session is planning (the user's /plan), \
and no permission rule allows fetching from this site; say in your plan what you would read";

impl Session {
    /// Whether the `web_fetch` call `id` may read `url` now.
    pub(super) fn web_gate(
        &mut self,
        id: &str,
        url: &str,
        allowed: Option<&str>,
        now: OffsetDateTime,
    ) -> Gate {
        let host = host(url);
        let approved = |answer: Answer, rule: String| {
            Record::Approved(Approved {
                at: now,
                call: id.to_owned(),
                path: host.clone(),
                answer,
                tool: Asked::Tool(web::TOOL.to_owned()),
                rule: Some(rule),
            })
        };
        if self.settings.network_off {
            return Gate::Refused(self.refused(id, NETWORK_OFF.to_owned(), now));
        }
        match self.settings.rules.decide(web::TOOL, &web::subject(&host)) {
            Verdict::Deny(rule) => {
                let mut cmds = self.append(vec![approved(Answer::No, rule.clone())]);
                cmds.extend(self.refused(id, crate::rules::denied(&rule), now));
                return Gate::Refused(cmds);
            }
            Verdict::Allow(rule) => {
                return Gate::Run(self.append(vec![approved(Answer::Yes, rule)]))
            }
            Verdict::Silent | Verdict::Unclear(_) => {}
        }
        if self.state.planning {
            return Gate::Refused(self.refused(id, PLANNING.to_owned(), now));
        }
        if self.state.web_always.contains(&host) || allowed == Some(id) {
            return Gate::Run(Vec::new());
        }
        if self.settings.interactive {
            return Gate::Ask;
        }
        let mut cmds = vec![Command::show(format!(
            "revolve: refused to fetch {url} (allow the site without a terminal with \
             --allow 'web_fetch(domain:{host})', or permissions.allow in config.json)"
        ))];
        cmds.extend(self.refused(id, REFUSED.to_owned(), now));
        Gate::Refused(cmds)
    }

    /// The allowed call `id` to fetch `url`, with what it may reach and
    /// the page the session's cache holds for it.
    pub(super) fn web_fetch(
        &self,
        id: &str,
        url: String,
        prompt: Option<String>,
        allowed: Option<&str>,
        now: OffsetDateTime,
    ) -> Tool {
        let mut hosts: Vec<String> = self.state.web_always.iter().cloned().collect();
        if allowed == Some(id) {
            // The user saw the URL and said yes: its host is named.
            hosts.push(host(&url));
        }
        Tool::WebFetch {
            cached: web::cached(&self.state.fetched, &url, now)
                .cloned()
                .map(Box::new),
            access: web::Access::new(&self.settings.rules, hosts),
            url,
            prompt,
        }
    }

    fn refused(&mut self, id: &str, text: String, now: OffsetDateTime) -> Vec<Command> {
        self.append(vec![Record::Message(Message::tool(
            now,
            id.to_owned(),
            text,
        ))])
    }
}

/// The host of a URL the call's parse checked, lower case.
pub(super) fn host(url: &str) -> String {
    web::checked(url)
        .map(|(_, h)| h.to_ascii_lowercase())
        .unwrap_or_default()
}
