//! The decisions of `web_fetch` (issue 44) that need no network: which
//! addresses a fetch may reach, and which URLs it takes at all. The shell
//! (`revolve-tools`' `fetch`) resolves the host and asks here about each
//! address before it connects, and again at every redirect.
//!
//! Besides: which hosts a fetch may reach at a private address
//! ([`Access`]: those a permission rule, the user's "always" or the
//! user's yes to this call names), the permission rule's subject
//! ([`subject`]), the session's page cache ([`cached`]: a page read in
//! the last [`crate::policy::WEB_FETCH_CACHE_S`] seconds by this session
//! is not read again) and the head of the result ([`asked`]).

use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::collections::BTreeMap;

use time::OffsetDateTime;

use crate::record::Fetched;
use crate::rules::Rules;

/// The tool's name, as the model calls it and a permission rule names it.
pub const TOOL: &str = "web_fetch";

/// The web search a session offers its model (issue 44): at most
/// [`crate::policy::WEB_SEARCH_MAX_USES`] searches an answer when an
/// allow rule names `web_search` (and no deny rule does) and the wire has
/// a search tool of its own (`searchable`: Anthropic's, the Responses
/// API's); none otherwise: the Chat Completions wire has no such tool.
pub fn search_uses(rules: &Rules, searchable: bool) -> Option<u32> {
    (searchable && rules.web_search()).then_some(crate::policy::WEB_SEARCH_MAX_USES)
}

/// What a permission rule about `web_fetch` matches: `domain:HOST`, so
/// `web_fetch(domain:docs.rs)` takes a fetch from `docs.rs` (and
/// `web_fetch(domain:*.rust-lang.org)` any of its subdomains).
pub fn subject(host: &str) -> String {
    format!("domain:{}", host.to_ascii_lowercase())
}

/// The hosts a fetch may reach at a private address: those an allow rule
/// names as they are (`web_fetch(domain:127.0.0.1)`; a pattern with `*`
/// names no host, so `web_fetch(domain:*)` opens the web, not the
/// machine or its network), those the user answered "always" for, and
/// the host the user said yes to for this call.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Access {
    hosts: Vec<String>,
}

impl Access {
    /// The access of a call: the session's `rules` and the `hosts` the
    /// user allowed.
    pub fn new(rules: &Rules, hosts: impl IntoIterator<Item = String>) -> Access {
        let named = rules.allow.iter().filter_map(|r| {
            let inner = r.text.strip_prefix(TOOL)?.trim_start();
            let host = inner.strip_prefix('(')?.strip_suffix(')')?.trim();
            let host = host.strip_prefix("domain:")?;
            let plain = !host.is_empty() && !host.contains(['*', '?', '[', '{', '\\']);
            plain.then(|| host.to_ascii_lowercase())
        });
        Access {
            hosts: hosts
                .into_iter()
                .map(|h| h.to_ascii_lowercase())
                .chain(named)
                .collect(),
        }
    }

    /// Whether a rule or the user names `host` (so a private address of
    /// it is reached).
    pub fn names(&self, host: &str) -> bool {
        self.hosts.iter().any(|h| h.eq_ignore_ascii_case(host))
    }
}

/// The page this session read from `url` in the last
/// [`crate::policy::WEB_FETCH_CACHE_S`] seconds before `now`, if any: the
/// fetch takes its bytes from the content store instead of the network.
pub fn cached<'a>(
    fetched: &'a BTreeMap<String, Fetched>,
    url: &str,
    now: OffsetDateTime,
) -> Option<&'a Fetched> {
    let page = fetched.get(url.trim())?;
    let age = now - page.at;
    let fresh = age >= time::Duration::ZERO
        && age < time::Duration::seconds(crate::policy::WEB_FETCH_CACHE_S as i64);
    // A page that did not come whole (an error status) is read again.
    (fresh && (200..300).contains(&page.status)).then_some(page)
}

/// The head of a `web_fetch` result: what the model wanted from the page,
/// so its answer is read with the question beside it.
pub fn asked(prompt: Option<&str>) -> String {
    match prompt.map(str::trim).filter(|p| !p.is_empty()) {
        Some(p) => format!("asked: {p}\n\n"),
        None => String::new(),
    }
}

/// Why a fetch may not reach `addr` unless a permission rule names its
/// host: it is this machine, its link or a private network. `None`: a
/// public address.
pub fn private(addr: IpAddr) -> Option<&'static str> {
    match addr {
        IpAddr::V4(v4) => private_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => private_v4(v4),
            None => private_v6(v6),
        },
    }
}

fn private_v4(a: Ipv4Addr) -> Option<&'static str> {
    let [first, second, ..] = a.octets();
    if a.is_loopback() {
        Some("loopback")
    } else if a.is_unspecified() || first == 0 {
        Some("this host")
    } else if a.is_link_local() {
        Some("link-local")
    } else if a.is_private() || (first == 100 && (64..128).contains(&second)) {
        Some("private")
    } else if a.is_broadcast() || a.is_multicast() || first >= 240 {
        Some("not unicast")
    } else {
        None
    }
}

fn private_v6(a: Ipv6Addr) -> Option<&'static str> {
    let first = a.segments()[0];
    if a.is_loopback() {
        Some("loopback")
    } else if a.is_unspecified() {
        Some("this host")
    } else if first & 0xffc0 == 0xfe80 {
        Some("link-local")
    } else if first & 0xfe00 == 0xfc00 {
        Some("private")
    } else if a.is_multicast() {
        Some("not unicast")
    } else {
        None
    }
}

/// A URL `web_fetch` takes: `http` or `https`, with a host; the error is
/// what the model is told.
pub fn checked(url: &str) -> Result<(&str, &str), String> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| format!("{url:?} is not an http(s) URL"))?;
    let scheme_ok = scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https");
    if !scheme_ok {
        return Err(format!(
            "{scheme}: URLs are not fetched; only http and https"
        ));
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = match host_port.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host_port.split(':').next().unwrap_or(""),
    };
    if host.is_empty() {
        return Err(format!("{url:?} has no host"));
    }
    Ok((scheme, host))
}

/// Whether a redirect from `from` to `to` stays on the host the fetch was
/// allowed for: the same host, but for case and a leading `www.`. A fetch
/// does not follow one that leaves it: the model is told the new URL, and
/// fetching that is asked or ruled on by its own host (as Claude Code's
/// WebFetch does), so a rule naming one site never reaches another.
pub fn same_site(from: &str, to: &str) -> bool {
    let host = |url| {
        checked(url).map(|(_, h)| {
            let h = h.to_ascii_lowercase();
            h.strip_prefix("www.").map(str::to_owned).unwrap_or(h)
        })
    };
    matches!((host(from), host(to)), (Ok(a), Ok(b)) if a == b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redirect_stays_on_its_site_only_to_the_same_host() {
        assert!(same_site("https://docs.rs/a", "https://docs.rs/b"));
        assert!(same_site("https://docs.rs/a", "https://www.docs.rs/b"));
        assert!(same_site("https://WWW.Docs.rs/a", "http://docs.rs:8080/b"));
        assert!(!same_site("https://docs.rs/a", "https://evil.example/b"));
        assert!(!same_site(
            "https://docs.rs/a",
            "https://docs.rs.evil.example/"
        ));
        assert!(!same_site("http://127.0.0.1:9/a", "http://127.0.0.2:9/a"));
        assert!(!same_site("https://docs.rs/a", "file:///etc/passwd"));
    }

    #[test]
    fn private_addresses_are_named() {
        let p = |s: &str| private(s.parse().unwrap());
        assert_eq!(p("127.0.0.1"), Some("loopback"));
        assert_eq!(p("10.1.2.3"), Some("private"));
        assert_eq!(p("172.16.0.1"), Some("private"));
        assert_eq!(p("192.168.1.1"), Some("private"));
        assert_eq!(p("100.64.0.1"), Some("private"));
        assert_eq!(p("169.254.169.254"), Some("link-local"));
        assert_eq!(p("0.0.0.0"), Some("this host"));
        assert_eq!(p("::1"), Some("loopback"));
        assert_eq!(p("fe80::1"), Some("link-local"));
        assert_eq!(p("fd00::1"), Some("private"));
        assert_eq!(p("::ffff:127.0.0.1"), Some("loopback"));
        assert_eq!(p("93.184.215.14"), None);
        assert_eq!(p("2606:4700::1111"), None);
    }

    fn page(at: OffsetDateTime, status: u16) -> Fetched {
        Fetched {
            at,
            call: "c1".into(),
            url: "https://docs.rs/".into(),
            final_url: "https://docs.rs/".into(),
            status,
            content_type: "text/html".into(),
            hash: "sha256:00".into(),
            bytes: 1,
            cut: false,
            redirects: 0,
            cached: None,
        }
    }

    #[test]
    fn a_page_is_cached_for_fifteen_minutes_when_it_came_whole() {
        let at = time::macros::datetime!(2026-01-01 10:00 UTC);
        let mut fetched = BTreeMap::new();
        fetched.insert("https://docs.rs/".to_owned(), page(at, 200));
        let later = |s: i64| at + time::Duration::seconds(s);
        assert!(cached(&fetched, "https://docs.rs/", later(0)).is_some());
        assert!(cached(&fetched, " https://docs.rs/ ", later(899)).is_some());
        assert!(cached(&fetched, "https://docs.rs/", later(900)).is_none());
        assert!(cached(&fetched, "https://docs.rs/", later(-1)).is_none());
        assert!(cached(&fetched, "https://docs.rs/x", later(1)).is_none());
        fetched.insert("https://docs.rs/".to_owned(), page(at, 404));
        assert!(cached(&fetched, "https://docs.rs/", later(1)).is_none());
    }

    #[test]
    fn rules_and_the_user_name_hosts() {
        let rules = Rules::parse(
            &[
                "web_fetch(domain:*.rust-lang.org)".into(),
                "web_fetch(domain:*)".into(),
                "web_fetch(domain:Intranet.lan)".into(),
            ],
            &[],
        )
        .unwrap();
        let access = Access::new(&rules, ["127.0.0.1".to_owned()]);
        // A pattern names no host: it opens the web, not the network.
        assert!(!access.names("doc.rust-lang.org"));
        assert!(!access.names("10.0.0.1"));
        assert!(access.names("intranet.LAN"));
        assert!(access.names("127.0.0.1"));
        assert!(!access.names("localhost"));
        assert!(!Access::default().names("127.0.0.1"));
        assert_eq!(asked(Some(" the version ")), "asked: the version\n\n");
        assert_eq!(asked(Some("")), "");
        assert_eq!(asked(None), "");
    }

    #[test]
    fn only_http_and_https_urls_with_a_host() {
        assert_eq!(checked("https://docs.rs/ureq"), Ok(("https", "docs.rs")));
        assert_eq!(
            checked("http://u:p@127.0.0.1:8080/x"),
            Ok(("http", "127.0.0.1"))
        );
        assert_eq!(checked("http://[::1]:80/"), Ok(("http", "::1")));
        assert!(checked("file:///etc/passwd")
            .unwrap_err()
            .contains("only http and https"));
        assert!(checked("docs.rs").is_err());
        assert!(checked("http:///x").is_err());
    }

    #[test]
    fn web_search_is_offered_by_its_rule_on_the_wires_that_have_it() {
        let rules = |allow: &[&str], deny: &[&str]| {
            let own = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
            Rules::parse(&own(allow), &own(deny)).unwrap()
        };
        let allowed = rules(&["web_search"], &[]);
        assert_eq!(search_uses(&allowed, true), Some(5));
        assert_eq!(search_uses(&allowed, false), None);
        assert_eq!(search_uses(&rules(&[], &[]), true), None);
        let denied = rules(&["web_search"], &["web_search"]);
        assert_eq!(search_uses(&denied, true), None);
        assert!(Rules::parse(&["web_search(x)".to_owned()], &[])
            .unwrap_err()
            .contains("takes no pattern"));
    }
}
