//! The requests of a login: the server asked without a token, its
//! protected resource metadata, its authorization server's metadata, the
//! client registered, the code exchanged, a token refreshed. What to ask
//! and which answer to take is `revolve_core::mcp::oauth`'s.

use std::time::Duration;

use revolve_core::mcp::oauth::{self as rules, Challenge};
use serde_json::{json, Value};
use ureq::Agent;

use crate::limits::OAUTH_BODY_BYTES;
use crate::oauth::tokens::Entry;

/// An agent that hands every status back (a 401 is an answer here).
pub(crate) fn agent(timeout: Duration) -> Agent {
    let config = Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(timeout))
        .build();
    Agent::new_with_config(config)
}

/// What a server said when asked without a token.
pub(crate) enum Probe {
    /// It answered: it needs no login.
    Open,
    /// It refused, with the challenge of its `WWW-Authenticate` if any.
    Refused(Option<Challenge>),
}

/// POSTs an `initialize` to `url` without a token.
pub(crate) fn probe(agent: &Agent, url: &str) -> Result<Probe, String> {
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": crate::VERSIONS[0], "capabilities": {},
        "clientInfo": {"name": "revolve", "version": env!("CARGO_PKG_VERSION")}}});
    let response = agent
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .send(body.to_string())
        .map_err(|e| format!("{url}: {e}"))?;
    let status = response.status().as_u16();
    if (200..300).contains(&status) {
        return Ok(Probe::Open);
    }
    let challenge = response
        .headers()
        .get_all("www-authenticate")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(rules::challenge);
    Ok(Probe::Refused(challenge))
}

/// The authorization server's endpoints, as its metadata gives them.
#[derive(Clone, Debug)]
pub(crate) struct Server {
    pub issuer: String,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub registration_endpoint: Option<String>,
    /// The resource (RFC 8707) the tokens are for.
    pub resource: String,
    /// The scope to ask for.
    pub scope: Option<String>,
}

/// Finds the authorization server of the MCP server at `url`.
pub(crate) fn discover(
    agent: &Agent,
    url: &str,
    challenge: Option<&Challenge>,
) -> Result<Server, String> {
    let mut resource = url.to_owned();
    let mut issuer = None;
    let mut supported = Vec::new();
    for candidate in rules::resource_metadata_urls(url, challenge) {
        let Some(meta) = get_json(agent, &candidate)? else {
            continue;
        };
        if let Some(r) = meta.get("resource").and_then(Value::as_str) {
            if !rules::resource_matches(r, url) {
                return Err(format!(
                    "the protected resource metadata at {candidate} is for {r}, not for {url}: not used"
                ));
            }
            r.clone_into(&mut resource);
        }
        issuer = meta
            .get("authorization_servers")
            .and_then(Value::as_array)
            .and_then(|a| a.first())
            .and_then(Value::as_str)
            .map(str::to_owned);
        supported = strings(&meta, "scopes_supported");
        if issuer.is_none() {
            return Err(format!(
                "the protected resource metadata at {candidate} names no authorization server"
            ));
        }
        break;
    }
    // No metadata: the server's origin is its own authorization server
    // (the 2025-03-26 specification's fallback).
    let issuer = match issuer {
        Some(i) => i,
        None => rules::split(url)
            .map(|(origin, _)| origin.to_owned())
            .ok_or_else(|| format!("{url} is not an http(s) URL"))?,
    };
    let scope = rules::scope(challenge.and_then(|c| c.scope.as_deref()), &supported);
    let mut found = None;
    for candidate in rules::authorization_metadata_urls(&issuer) {
        if let Some(meta) = get_json(agent, &candidate)? {
            found = Some(meta);
            break;
        }
    }
    let server = match found {
        Some(meta) => {
            let methods = strings(&meta, "code_challenge_methods_supported");
            if !methods.iter().any(|m| m == "S256") {
                return Err(format!(
                    "the authorization server {issuer} does not say it supports PKCE with S256 (code_challenge_methods_supported): revolve will not log in there"
                ));
            }
            let field = |k: &str| meta.get(k).and_then(Value::as_str).map(str::to_owned);
            Server {
                authorization_endpoint: field("authorization_endpoint")
                    .ok_or_else(|| format!("{issuer}'s metadata has no authorization_endpoint"))?,
                token_endpoint: field("token_endpoint")
                    .ok_or_else(|| format!("{issuer}'s metadata has no token_endpoint"))?,
                registration_endpoint: field("registration_endpoint"),
                issuer,
                resource,
                scope,
            }
        }
        None => {
            let origin = rules::split(&issuer).map_or(issuer.as_str(), |(o, _)| o);
            Server {
                authorization_endpoint: format!("{origin}/authorize"),
                token_endpoint: format!("{origin}/token"),
                registration_endpoint: Some(format!("{origin}/register")),
                issuer: issuer.clone(),
                resource,
                scope,
            }
        }
    };
    for endpoint in [&server.authorization_endpoint, &server.token_endpoint]
        .into_iter()
        .chain(server.registration_endpoint.as_ref())
    {
        if !rules::secure(endpoint) {
            return Err(format!(
                "the authorization server's endpoint {endpoint} is neither https nor on this machine: revolve sends no code or token there"
            ));
        }
    }
    Ok(server)
}

/// A client registered (RFC 7591).
pub(crate) struct Client {
    pub id: String,
    pub secret: Option<String>,
}

/// Registers revolve as a public client redirecting to `redirect_uri`.
pub(crate) fn register(
    agent: &Agent,
    server: &Server,
    redirect_uri: &str,
) -> Result<Client, String> {
    let Some(endpoint) = &server.registration_endpoint else {
        return Err(format!(
            "the authorization server {} does not register clients (no registration_endpoint), and revolve has no client id for it",
            server.issuer
        ));
    };
    let mut body = json!({
        "client_name": "revolve",
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    });
    if let Some(scope) = &server.scope {
        body["scope"] = json!(scope);
    }
    let response = agent
        .post(endpoint)
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .send(body.to_string())
        .map_err(|e| format!("registering at {endpoint}: {e}"))?;
    let answer = answer_json(response, &format!("registering at {endpoint}"))?;
    let id = answer
        .get("client_id")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("registering at {endpoint}: the answer holds no client_id"))?;
    Ok(Client {
        id: id.to_owned(),
        secret: answer
            .get("client_secret")
            .and_then(Value::as_str)
            .map(str::to_owned),
    })
}

/// The tokens a token endpoint gave.
pub(crate) struct Granted {
    pub access_token: String,
    pub refresh_token: Option<String>,
    pub expires_in: Option<u64>,
    pub scope: Option<String>,
}

/// Exchanges `code` (RFC 6749 §4.1.3, with the PKCE verifier and the
/// resource).
pub(crate) fn exchange(
    agent: &Agent,
    server: &Server,
    client: &Client,
    code: &str,
    redirect_uri: &str,
    verifier: &str,
) -> Result<Granted, String> {
    let mut form = vec![
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", redirect_uri),
        ("client_id", client.id.as_str()),
        ("code_verifier", verifier),
        ("resource", server.resource.as_str()),
    ];
    if let Some(secret) = &client.secret {
        form.push(("client_secret", secret));
    }
    token_request(agent, &server.token_endpoint, &form)
}

/// Refreshes `entry`'s token (RFC 6749 §6, with the resource).
pub(crate) fn refresh(agent: &Agent, entry: &Entry) -> Result<Granted, String> {
    let Some(refresh_token) = &entry.refresh_token else {
        return Err("no refresh token".to_owned());
    };
    let mut form = vec![
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh_token.as_str()),
        ("client_id", entry.client_id.as_str()),
        ("resource", entry.resource.as_str()),
    ];
    if let Some(secret) = &entry.client_secret {
        form.push(("client_secret", secret));
    }
    token_request(agent, &entry.token_endpoint, &form)
}

fn token_request(agent: &Agent, endpoint: &str, form: &[(&str, &str)]) -> Result<Granted, String> {
    if !rules::secure(endpoint) {
        return Err(format!("{endpoint} is neither https nor on this machine"));
    }
    let response = agent
        .post(endpoint)
        .header("accept", "application/json")
        .send_form(form.iter().copied())
        .map_err(|e| format!("asking {endpoint} for a token: {e}"))?;
    let answer = answer_json(response, &format!("asking {endpoint} for a token"))?;
    let access_token = answer
        .get("access_token")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| format!("{endpoint} gave no access_token"))?;
    let kind = answer
        .get("token_type")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !kind.eq_ignore_ascii_case("bearer") {
        return Err(format!(
            "{endpoint} gave a token of type {kind:?}; revolve sends Bearer tokens only"
        ));
    }
    Ok(Granted {
        access_token: access_token.to_owned(),
        refresh_token: answer
            .get("refresh_token")
            .and_then(Value::as_str)
            .map(str::to_owned),
        expires_in: answer.get("expires_in").and_then(Value::as_u64),
        scope: answer
            .get("scope")
            .and_then(Value::as_str)
            .map(str::to_owned),
    })
}

/// GETs `url`'s JSON: `None` for a 404 (or any 4xx) or an answer that is
/// no JSON object, so the next candidate is tried.
fn get_json(agent: &Agent, url: &str) -> Result<Option<Value>, String> {
    let response = agent
        .get(url)
        .header("accept", "application/json")
        .header("mcp-protocol-version", crate::VERSIONS[0])
        .call()
        .map_err(|e| format!("{url}: {e}"))?;
    let status = response.status().as_u16();
    if !(200..300).contains(&status) {
        return Ok(None);
    }
    let text = response
        .into_body()
        .with_config()
        .limit(OAUTH_BODY_BYTES)
        .read_to_string()
        .map_err(|e| format!("{url}: {e}"))?;
    Ok(serde_json::from_str::<Value>(&text)
        .ok()
        .filter(Value::is_object))
}

/// A JSON answer, or an error line naming the server's `error` and
/// `error_description` (never the rest of its body: it may echo a token).
fn answer_json(response: ureq::http::Response<ureq::Body>, doing: &str) -> Result<Value, String> {
    let status = response.status().as_u16();
    let text = response
        .into_body()
        .with_config()
        .limit(OAUTH_BODY_BYTES)
        .read_to_string()
        .map_err(|e| format!("{doing}: {e}"))?;
    let value = serde_json::from_str::<Value>(&text).unwrap_or(Value::Null);
    if !(200..300).contains(&status) {
        let error = value.get("error").and_then(Value::as_str).unwrap_or("");
        let more = value
            .get("error_description")
            .and_then(Value::as_str)
            .map(|d| format!(": {d}"))
            .unwrap_or_default();
        return Err(format!(
            "{doing}: HTTP {status} {}{more}",
            revolve_core::text::inert(error)
        ));
    }
    if !value.is_object() {
        return Err(format!("{doing}: the answer is not a JSON object"));
    }
    Ok(value)
}

fn strings(meta: &Value, key: &str) -> Vec<String> {
    meta.get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}
