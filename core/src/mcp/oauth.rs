//! MCP servers behind OAuth: the decisions, as the MCP specification's
//! authorization section (2025-11-25, which revolve asks for) sets them.
//! The `revolve-mcp` crate makes the requests, keeps the tokens and runs
//! the loopback listener; everything here is text in, text out.
//!
//! * **Discovery.** A 401's `WWW-Authenticate: Bearer
//!   resource_metadata="…"` names the protected resource metadata (RFC
//!   9728); without it the well-known URIs are tried, path first
//!   ([`resource_metadata_urls`]). Its `authorization_servers[0]` is the
//!   issuer whose metadata (RFC 8414, else OpenID discovery) is tried in
//!   the specification's order ([`authorization_metadata_urls`]). The
//!   metadata's `resource` must be the server's URL or a prefix of it on
//!   the same origin ([`resource_matches`]), and every endpoint must be
//!   `https` or a loopback address ([`secure`]).
//! * **The flow.** Authorization code with PKCE (S256 only: an
//!   authorization server whose metadata does not list it is refused),
//!   the `resource` parameter (RFC 8707) in the authorization and every
//!   token request, the scope the challenge names, else the metadata's
//!   `scopes_supported` ([`scope`]). The redirect comes back to
//!   `http://127.0.0.1:PORT/callback`; its `state` must be the one sent
//!   ([`callback`]).
//! * **Refresh.** A token that expires within
//!   [`policy::MCP_TOKEN_REFRESH_S`] is refreshed before it is sent
//!   ([`refresh_due`]), and so is one a server refuses with a 401; only
//!   when the refresh fails is the user asked to log in again
//!   ([`login_line`]).

use crate::policy;

/// What a `WWW-Authenticate: Bearer …` challenge says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Challenge {
    /// The protected resource metadata's URL (`resource_metadata`).
    pub resource_metadata: Option<String>,
    /// The scope the server asks for (`scope`).
    pub scope: Option<String>,
    /// The error it names (`invalid_token`, `insufficient_scope`, …).
    pub error: Option<String>,
}

/// The Bearer challenge of a `WWW-Authenticate` header's value (`None`
/// when it holds no Bearer challenge). Parameters are `key=value` or
/// `key="value"` (with `\` escapes), comma-separated.
pub fn challenge(header: &str) -> Option<Challenge> {
    let start = header
        .char_indices()
        .find(|&(i, _)| {
            header[i..]
                .get(..6)
                .is_some_and(|w| w.eq_ignore_ascii_case("bearer"))
                && (i == 0 || header[..i].trim_end().ends_with(','))
        })
        .map(|(i, _)| i + 6)?;
    let mut out = Challenge::default();
    let mut rest = &header[start..];
    loop {
        rest = rest.trim_start_matches([' ', ',', '\t']);
        let Some(eq) = rest.find('=') else { break };
        let key = rest[..eq].trim().to_ascii_lowercase();
        if key.contains(' ') {
            // The next scheme begins (`Basic realm=…`).
            break;
        }
        rest = &rest[eq + 1..];
        let value;
        if let Some(quoted) = rest.strip_prefix('"') {
            let mut v = String::new();
            let mut chars = quoted.char_indices();
            let mut end = quoted.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, n)) = chars.next() {
                            v.push(n);
                        }
                    }
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    c => v.push(c),
                }
            }
            value = v;
            rest = &quoted[end.min(quoted.len())..];
        } else {
            let end = rest.find(',').unwrap_or(rest.len());
            value = rest[..end].trim().to_owned();
            rest = &rest[end..];
        }
        match key.as_str() {
            "resource_metadata" => out.resource_metadata = Some(value),
            "scope" => out.scope = Some(value),
            "error" => out.error = Some(value),
            _ => {}
        }
    }
    Some(out)
}

/// A URL's origin (`scheme://host[:port]`) and its path (`""` or
/// beginning with `/`, without query or fragment); `None` unless http(s).
pub fn split(url: &str) -> Option<(&str, &str)> {
    let after = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))?;
    let scheme = url.len() - after.len();
    let host_end = after.find(['/', '?', '#']).unwrap_or(after.len());
    if host_end == 0 {
        return None;
    }
    let origin = &url[..scheme + host_end];
    let rest = &after[host_end..];
    let path_end = rest.find(['?', '#']).unwrap_or(rest.len());
    Some((origin, &rest[..path_end]))
}

/// Where a server's protected resource metadata may be, in the order to
/// try: the challenge's URL alone when it named one; else the well-known
/// URI with the server's path, then without it (RFC 9728 §3.1).
pub fn resource_metadata_urls(server_url: &str, challenge: Option<&Challenge>) -> Vec<String> {
    if let Some(url) = challenge.and_then(|c| c.resource_metadata.clone()) {
        return vec![url];
    }
    let Some((origin, path)) = split(server_url) else {
        return Vec::new();
    };
    let path = path.trim_end_matches('/');
    let mut urls = Vec::new();
    if !path.is_empty() {
        urls.push(format!(
            "{origin}/.well-known/oauth-protected-resource{path}"
        ));
    }
    urls.push(format!("{origin}/.well-known/oauth-protected-resource"));
    urls
}

/// Where an authorization server's metadata may be, in the
/// specification's order: OAuth (RFC 8414) then OpenID discovery, the
/// issuer's path inserted after the well-known part, and OpenID's
/// appended form too.
pub fn authorization_metadata_urls(issuer: &str) -> Vec<String> {
    let Some((origin, path)) = split(issuer) else {
        return Vec::new();
    };
    let path = path.trim_end_matches('/');
    if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    }
}

/// Whether the metadata's `resource` stands for the server at
/// `server_url`: the same origin (case aside) and a path that is the
/// server's or a folder above it.
pub fn resource_matches(resource: &str, server_url: &str) -> bool {
    let (Some((ro, rp)), Some((so, sp))) = (split(resource), split(server_url)) else {
        return false;
    };
    if !ro.eq_ignore_ascii_case(so) {
        return false;
    }
    let rp = rp.trim_end_matches('/');
    let sp = sp.trim_end_matches('/');
    sp == rp || sp.starts_with(&format!("{rp}/"))
}

/// Whether `url` may carry a token or a code: `https`, or `http` to a
/// loopback address (RFC 8252's native apps, a test server).
pub fn secure(url: &str) -> bool {
    if url.starts_with("https://") {
        return split(url).is_some();
    }
    let Some((origin, _)) = split(url) else {
        return false;
    };
    let authority = origin.trim_start_matches("http://");
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => authority.split(':').next().unwrap_or(""),
    };
    host.eq_ignore_ascii_case("localhost")
        || host == "::1"
        || host
            .parse::<core::net::Ipv4Addr>()
            .is_ok_and(|a| a.is_loopback())
}

/// The scope to ask for: the challenge's, else the protected resource's
/// `scopes_supported` joined; none when neither says.
pub fn scope(challenge: Option<&str>, supported: &[String]) -> Option<String> {
    match challenge {
        Some(s) if !s.trim().is_empty() => Some(s.trim().to_owned()),
        _ if !supported.is_empty() => Some(supported.join(" ")),
        _ => None,
    }
}

/// What goes into the authorization request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Authorize<'a> {
    /// The authorization server's `authorization_endpoint`.
    pub endpoint: &'a str,
    /// The client's id.
    pub client_id: &'a str,
    /// The loopback redirect URI.
    pub redirect_uri: &'a str,
    /// `BASE64URL(SHA256(verifier))`.
    pub challenge: &'a str,
    /// The value the redirect must bring back.
    pub state: &'a str,
    /// The server's canonical URI (RFC 8707).
    pub resource: &'a str,
    /// The scope asked for, if any.
    pub scope: Option<&'a str>,
}

/// The URL the user's browser opens.
pub fn authorize_url(a: &Authorize<'_>) -> String {
    let mut pairs = vec![
        ("response_type", "code"),
        ("client_id", a.client_id),
        ("redirect_uri", a.redirect_uri),
        ("code_challenge", a.challenge),
        ("code_challenge_method", "S256"),
        ("state", a.state),
        ("resource", a.resource),
    ];
    if let Some(scope) = a.scope {
        pairs.push(("scope", scope));
    }
    let sep = if a.endpoint.contains('?') { '&' } else { '?' };
    format!("{}{sep}{}", a.endpoint, form(&pairs))
}

/// `application/x-www-form-urlencoded` of `pairs` (RFC 3986's unreserved
/// characters kept, every other byte `%XX`).
pub fn form(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A query string's pairs, decoded (`+` is a space; a broken `%` escape
/// is kept as written).
pub fn query_pairs(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => match text
                .get(i + 1..i + 3)
                .filter(|h| h.bytes().all(|c| c.is_ascii_hexdigit()))
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                Some(b) => {
                    out.push(b);
                    i += 2;
                }
                None => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// What the browser brought back to the loopback listener.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Callback {
    /// The code, its state the one sent.
    Code(String),
    /// The authorization server said no (`error`, `error_description`).
    Refused(String),
    /// The state is not the one sent: a request revolve did not start.
    WrongState,
    /// Not the callback path (a browser asking for `/favicon.ico`).
    Elsewhere,
}

/// The path the redirect URI names on the loopback listener.
pub const CALLBACK_PATH: &str = "/callback";

/// What a request for `target` (the request line's path and query) on
/// the loopback listener means, `state` being the one sent.
pub fn callback(target: &str, state: &str) -> Callback {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    if path != CALLBACK_PATH {
        return Callback::Elsewhere;
    }
    let pairs = query_pairs(query);
    let get = |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    if get("state").as_deref() != Some(state) {
        return Callback::WrongState;
    }
    if let Some(error) = get("error") {
        let more = get("error_description")
            .map(|d| format!(": {d}"))
            .unwrap_or_default();
        return Callback::Refused(format!("{error}{more}"));
    }
    match get("code") {
        Some(code) if !code.is_empty() => Callback::Code(code),
        _ => Callback::Refused("the redirect held no code".to_owned()),
    }
}

/// Whether a token that expires at `expires_at` (Unix seconds; `None`:
/// the server did not say) is refreshed before it is sent at `now`.
pub fn refresh_due(expires_at: Option<u64>, now: u64) -> bool {
    expires_at.is_some_and(|at| at <= now.saturating_add(policy::MCP_TOKEN_REFRESH_S))
}

/// Whether a login is tried for an HTTP server with these configured
/// headers: not when the user gives an `Authorization` of their own.
pub fn wanted(headers: &std::collections::BTreeMap<String, String>) -> bool {
    !headers
        .keys()
        .any(|k| k.eq_ignore_ascii_case("authorization"))
}

/// The line a session says of a server that needs the user to log in.
pub fn login_line(name: &str) -> String {
    format!(
        "revolve: MCP server {name} needs you to log in: run `revolve mcp login {name}`; its tools are not offered this session"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_are_read_with_quotes_escapes_and_other_schemes() {
        let c = challenge(
            r#"Bearer resource_metadata="http://a/.well-known/oauth-protected-resource/mcp", scope="read write", error=invalid_token"#,
        )
        .unwrap();
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("http://a/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(c.scope.as_deref(), Some("read write"));
        assert_eq!(c.error.as_deref(), Some("invalid_token"));
        let c = challenge(r#"Basic realm="x", Bearer scope="a\"b""#).unwrap();
        assert_eq!(c.scope.as_deref(), Some("a\"b"));
        assert_eq!(c.resource_metadata, None);
        assert_eq!(challenge("Bearer"), Some(Challenge::default()));
        assert_eq!(challenge(r#"Basic realm="bearer""#), None);
    }

    #[test]
    fn well_known_urls_follow_the_specifications_order() {
        assert_eq!(
            resource_metadata_urls("https://h.example:8443/public/mcp?x=1", None),
            [
                "https://h.example:8443/.well-known/oauth-protected-resource/public/mcp",
                "https://h.example:8443/.well-known/oauth-protected-resource"
            ]
        );
        assert_eq!(
            resource_metadata_urls("https://h.example", None),
            ["https://h.example/.well-known/oauth-protected-resource"]
        );
        let named = Challenge {
            resource_metadata: Some("https://m/x".into()),
            ..Challenge::default()
        };
        assert_eq!(
            resource_metadata_urls("https://h/mcp", Some(&named)),
            ["https://m/x"]
        );
        assert_eq!(
            authorization_metadata_urls("https://auth.example/tenant1"),
            [
                "https://auth.example/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example/.well-known/openid-configuration/tenant1",
                "https://auth.example/tenant1/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            authorization_metadata_urls("https://auth.example/"),
            [
                "https://auth.example/.well-known/oauth-authorization-server",
                "https://auth.example/.well-known/openid-configuration"
            ]
        );
    }

    #[test]
    fn a_resource_stands_for_its_own_url_and_what_is_under_it() {
        assert!(resource_matches("https://h/mcp", "https://h/mcp"));
        assert!(resource_matches("https://H/", "https://h/mcp"));
        assert!(resource_matches("https://h", "https://h/a/mcp"));
        assert!(!resource_matches("https://h/mcp", "https://h/mcpx"));
        assert!(!resource_matches("https://h/mcp", "https://other/mcp"));
        assert!(!resource_matches("http://h/mcp", "https://h/mcp"));
    }

    #[test]
    fn only_https_or_loopback_carries_a_token() {
        assert!(secure("https://auth.example/token"));
        assert!(secure("http://127.0.0.1:8080/token"));
        assert!(secure("http://localhost/token"));
        assert!(secure("http://[::1]:9/token"));
        assert!(!secure("http://auth.example/token"));
        assert!(!secure("http://127.0.0.1.evil.example/token"));
        assert!(!secure("ftp://127.0.0.1/"));
    }

    #[test]
    fn the_authorization_url_carries_pkce_state_and_resource() {
        let url = authorize_url(&Authorize {
            endpoint: "https://a/authorize",
            client_id: "c 1",
            redirect_uri: "http://127.0.0.1:5/callback",
            challenge: "abc-_",
            state: "s",
            resource: "https://h/mcp",
            scope: Some("read write"),
        });
        assert_eq!(
            url,
            "https://a/authorize?response_type=code&client_id=c%201&redirect_uri=http%3A%2F%2F127.0.0.1%3A5%2Fcallback&code_challenge=abc-_&code_challenge_method=S256&state=s&resource=https%3A%2F%2Fh%2Fmcp&scope=read%20write"
        );
        let (_, query) = url.split_once('?').unwrap();
        let pairs = query_pairs(query);
        assert_eq!(
            pairs[2],
            ("redirect_uri".into(), "http://127.0.0.1:5/callback".into())
        );
        assert_eq!(pairs[7], ("scope".into(), "read write".into()));
    }

    #[test]
    fn the_callback_is_taken_only_with_its_state() {
        assert_eq!(
            callback("/callback?code=a%2Bb&state=s1", "s1"),
            Callback::Code("a+b".into())
        );
        assert_eq!(
            callback("/callback?code=a&state=s2", "s1"),
            Callback::WrongState
        );
        assert_eq!(callback("/callback?code=a", "s1"), Callback::WrongState);
        assert_eq!(
            callback(
                "/callback?error=access_denied&error_description=no+thanks&state=s1",
                "s1"
            ),
            Callback::Refused("access_denied: no thanks".into())
        );
        assert_eq!(callback("/favicon.ico", "s1"), Callback::Elsewhere);
        assert_eq!(
            query_pairs("a=%zz&b=%4"),
            [("a".into(), "%zz".into()), ("b".into(), "%4".into())]
        );
    }

    #[test]
    fn a_token_is_refreshed_shortly_before_it_expires() {
        let m = policy::MCP_TOKEN_REFRESH_S;
        assert!(!refresh_due(None, 1000));
        assert!(!refresh_due(Some(1000 + m + 1), 1000));
        assert!(refresh_due(Some(1000 + m), 1000));
        assert!(refresh_due(Some(10), 1000));
    }

    #[test]
    fn the_scope_is_the_challenges_else_the_resources() {
        assert_eq!(scope(Some("a"), &["b".into()]).as_deref(), Some("a"));
        assert_eq!(
            scope(None, &["b".into(), "c".into()]).as_deref(),
            Some("b c")
        );
        assert_eq!(scope(Some(" "), &[]), None);
    }
}
