//! The decisions of `web_fetch` (issue 44) that need no network: which
//! addresses a fetch may reach, and which URLs it takes at all. The shell
//! (`revolve-tools`' `fetch`) resolves the host and asks here about each
//! address before it connects, and again at every redirect.

use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
