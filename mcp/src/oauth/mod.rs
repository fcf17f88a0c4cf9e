//! OAuth for HTTP servers (the MCP specification's authorization
//! section): `revolve mcp login NAME` runs the authorization code flow
//! with PKCE through the user's browser and a loopback redirect ([`login`]);
//! a session sends the token kept ([`Auth`]), refreshing it when it is
//! about to expire or the server refuses it, and says when the user must
//! log in again ([`crate::Error::Login`]). The decisions (which URLs,
//! which scope, when to refresh) are `revolve_core::mcp::oauth`'s.
//!
//! Tokens are kept in a `0600` file beside the config
//! ([`tokens::Tokens`]), never in a session log and never in an error
//! line; the OS keyring is not used (it would need a D-Bus secret
//! service on Linux, which a terminal over SSH seldom has).

mod flow;
mod loopback;
pub mod tokens;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use revolve_core::mcp::oauth as rules;
use ureq::Agent;

use self::tokens::{Entry, Tokens};

/// What `revolve mcp login` needs.
pub struct Login<'a> {
    /// The server's name in the configuration.
    pub name: &'a str,
    /// Its URL (variables expanded).
    pub url: &'a str,
    /// The tokens file.
    pub tokens: &'a Tokens,
    /// How long each request to the servers may take.
    pub timeout: Duration,
    /// How long to wait for the browser to come back.
    pub wait: Duration,
}

/// How a login ended.
#[derive(Debug, PartialEq, Eq)]
pub enum LoggedIn {
    /// The server answered without a token: nothing to log in to.
    NotNeeded,
    /// Tokens were kept; the scope granted, if said.
    Kept {
        /// The scope granted.
        scope: Option<String>,
    },
}

/// Runs the flow: discovery, a client (the one kept for this
/// authorization server and port, else a new registration), the
/// authorization URL handed to `open` (which prints it and may open a
/// browser), the code taken on the loopback listener, exchanged and
/// kept. Every error is one line that holds no token.
pub fn login(l: &Login<'_>, open: &mut dyn FnMut(&str)) -> Result<LoggedIn, String> {
    let agent = flow::agent(l.timeout);
    let challenge = match flow::probe(&agent, l.url)? {
        flow::Probe::Open => return Ok(LoggedIn::NotNeeded),
        flow::Probe::Refused(challenge) => challenge,
    };
    let server = flow::discover(&agent, l.url, challenge.as_ref())?;
    let kept = l
        .tokens
        .any(l.name)
        .filter(|e| e.issuer == server.issuer && e.token_endpoint == server.token_endpoint);
    let (listener, redirect_uri) = loopback::listen(
        kept.as_ref()
            .and_then(|e| loopback::port_of(&e.redirect_uri)),
    )?;
    let client = match kept.filter(|e| e.redirect_uri == redirect_uri) {
        Some(e) => flow::Client {
            id: e.client_id,
            secret: e.client_secret,
        },
        None => flow::register(&agent, &server, &redirect_uri)?,
    };
    let secrets = loopback::Secrets::draw()?;
    let url = rules::authorize_url(&rules::Authorize {
        endpoint: &server.authorization_endpoint,
        client_id: &client.id,
        redirect_uri: &redirect_uri,
        challenge: &secrets.challenge,
        state: &secrets.state,
        resource: &server.resource,
        scope: server.scope.as_deref(),
    });
    open(&url);
    let code = loopback::code(&listener, &secrets.state, l.wait)?;
    drop(listener);
    let granted = flow::exchange(
        &agent,
        &server,
        &client,
        &code,
        &redirect_uri,
        &secrets.verifier,
    )?;
    let scope = granted.scope.clone().or(server.scope.clone());
    let entry = Entry {
        url: l.url.to_owned(),
        resource: server.resource,
        issuer: server.issuer,
        token_endpoint: server.token_endpoint,
        client_id: client.id,
        client_secret: client.secret,
        redirect_uri,
        access_token: granted.access_token,
        refresh_token: granted.refresh_token,
        expires_at: granted.expires_in.map(|s| now().saturating_add(s)),
        scope: scope.clone(),
    };
    l.tokens
        .update(l.name, |_| (Some(entry), ()))
        .map_err(|e| format!("cannot write {}: {e}", l.tokens.path().display()))?;
    Ok(LoggedIn::Kept { scope })
}

/// Forgets server `name`'s tokens (and its client); whether there were
/// any. Fails as the tokens file's lock or write does.
pub fn logout(tokens: &Tokens, name: &str) -> std::io::Result<bool> {
    tokens.update(name, |e| (None, e.is_some()))
}

/// A session's side: the token to send to one server, refreshed when due.
#[derive(Debug)]
pub struct Auth {
    name: String,
    url: String,
    tokens: Tokens,
    /// The token last sent (to see whether another process refreshed it).
    sent: Option<String>,
    /// For refreshing, with the start timeout.
    agent: Agent,
}

impl Auth {
    /// Server `name` at `url`, its tokens in `tokens`.
    pub fn new(name: &str, url: &str, tokens: Tokens) -> Auth {
        Auth {
            name: name.to_owned(),
            url: url.to_owned(),
            tokens,
            sent: None,
            agent: flow::agent(Duration::from_secs(
                revolve_core::policy::MCP_START_TIMEOUT_S,
            )),
        }
    }

    /// The server's name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The token to send now (refreshed first when it is about to
    /// expire), or none when no login is kept for this server.
    pub(crate) fn bearer(&mut self) -> Option<String> {
        let entry = self.tokens.get(&self.name, &self.url)?;
        let token = if rules::refresh_due(entry.expires_at, now()) && entry.refresh_token.is_some()
        {
            self.refreshed(Some(&entry.access_token))
                .unwrap_or(entry.access_token)
        } else {
            entry.access_token
        };
        self.sent = Some(token.clone());
        Some(token)
    }

    /// After the server refused the token sent: a new one, from another
    /// process's refresh or one of ours; `None` when the user must log in.
    pub(crate) fn after_refusal(&mut self) -> Option<String> {
        let sent = self.sent.clone();
        let token = self.refreshed(sent.as_deref())?;
        self.sent = Some(token.clone());
        Some(token)
    }

    /// The tokens kept for this server, to be hidden wherever they might
    /// show.
    pub(crate) fn secrets(&self) -> Vec<String> {
        self.tokens
            .get(&self.name, &self.url)
            .map(|e| {
                e.refresh_token
                    .into_iter()
                    .chain([e.access_token])
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Refreshes under the file's lock: a token other than `stale` there
    /// (another session refreshed) is taken as it is.
    fn refreshed(&self, stale: Option<&str>) -> Option<String> {
        let url = self.url.clone();
        self.tokens
            .update(&self.name, |kept| {
                let Some(entry) = kept else {
                    return (None, None);
                };
                if entry.url != url {
                    return (Some(entry), None);
                }
                if stale.is_some_and(|s| s != entry.access_token)
                    && !rules::refresh_due(entry.expires_at, now())
                {
                    let token = entry.access_token.clone();
                    return (Some(entry), Some(token));
                }
                match flow::refresh(&self.agent, &entry) {
                    Ok(granted) => {
                        let token = granted.access_token.clone();
                        let entry = Entry {
                            access_token: granted.access_token,
                            refresh_token: granted.refresh_token.or(entry.refresh_token),
                            expires_at: granted.expires_in.map(|s| now().saturating_add(s)),
                            scope: granted.scope.or(entry.scope),
                            ..entry
                        };
                        (Some(entry), Some(token))
                    }
                    Err(_) => (Some(entry), None),
                }
            })
            .ok()
            .flatten()
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
