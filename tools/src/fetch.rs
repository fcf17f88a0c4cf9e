//! `web_fetch` (issue 44), executed: one page read over http(s) within
//! core's bounds ([`policy::WEB_FETCH_BYTES`], [`policy::WEB_FETCH_TIMEOUT`],
//! [`policy::WEB_FETCH_REDIRECTS`]), redirects followed one at a time, and
//! only on the same host ([`web::same_site`]), so that every hop is checked
//! as the first was: the scheme (core's
//! [`web::checked`]) and every address its host resolves to (core's
//! [`web::private`]; a private one only when the caller's rule names the
//! host). An HTML page becomes Markdown (`htmd`, a turndown.js port over
//! html5ever), other text is kept as it is, anything else is described.
//!
//! The host's addresses are checked before ureq connects and ureq resolves
//! them again, so a name whose answer changes in between (DNS rebinding)
//! could still reach a private address; the check stops the common cases
//! (a link to `localhost`, to `169.254.169.254`, to a LAN name).

use std::io::Read;
use std::net::ToSocketAddrs;
use std::time::{Duration, Instant};

use revolve_core::policy;
use revolve_core::web;

/// A page read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page {
    /// The URL the page came from, after the redirects.
    pub url: String,
    /// The HTTP status of the last answer.
    pub status: u16,
    /// Its `content-type`, as sent (empty: none).
    pub content_type: String,
    /// The body as read, at most [`policy::WEB_FETCH_BYTES`].
    pub bytes: Vec<u8>,
    /// Whether the body went on past the bound (it was not read further).
    pub cut: bool,
    /// How many redirects led to it.
    pub redirects: u32,
}

/// How far a fetch may go: core's policy, smaller in tests.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    /// The most bytes of a body read.
    pub bytes: u64,
    /// The time the whole fetch may take.
    pub time: Duration,
    /// The most redirects followed.
    pub redirects: u32,
}

impl Default for Bounds {
    fn default() -> Bounds {
        Bounds {
            bytes: policy::WEB_FETCH_BYTES,
            time: policy::WEB_FETCH_TIMEOUT,
            redirects: policy::WEB_FETCH_REDIRECTS,
        }
    }
}

/// Fetches `url` within `bounds`. `named(host)` says whether a permission
/// rule names the host, which lets a private address through. The error
/// is the line the model is told (without `error: `).
pub fn fetch(url: &str, bounds: Bounds, named: &dyn Fn(&str) -> bool) -> Result<Page, String> {
    let started = Instant::now();
    let mut url = url.trim().to_owned();
    let mut redirects = 0;
    loop {
        check(&url, named)?;
        let left = bounds
            .time
            .checked_sub(started.elapsed())
            .ok_or_else(|| timed_out(&url, bounds.time))?;
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .timeout_global(Some(left))
            .user_agent(concat!(
                "revolve/",
                env!("CARGO_PKG_VERSION"),
                " (web_fetch)"
            ))
            .build()
            .into();
        let response = agent
            .get(&url)
            .header(
                "accept",
                "text/html, text/markdown, text/plain;q=0.9, */*;q=0.5",
            )
            .call()
            .map_err(|e| match e {
                ureq::Error::Timeout(_) => timed_out(&url, bounds.time),
                e => format!("{url}: {e}"),
            })?;
        let status = response.status().as_u16();
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned()
        };
        if (300..400).contains(&status) && !header("location").is_empty() {
            redirects += 1;
            if redirects > bounds.redirects {
                return Err(format!(
                    "{url}: more than {} redirects; not followed further",
                    bounds.redirects
                ));
            }
            let next = joined(&url, &header("location"));
            if !web::same_site(&url, &next) {
                return Err(format!(
                    "{url} redirects to {next}, on another host: not followed; fetch {next} \
                     to read it (its own permission applies)"
                ));
            }
            url = next;
            continue;
        }
        let content_type = header("content-type");
        let mut bytes = Vec::new();
        response
            .into_body()
            .as_reader()
            .take(bounds.bytes + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::TimedOut => timed_out(&url, bounds.time),
                _ if started.elapsed() >= bounds.time => timed_out(&url, bounds.time),
                _ => format!("{url}: the page broke off: {e}"),
            })?;
        let cut = bytes.len() as u64 > bounds.bytes;
        bytes.truncate(bounds.bytes as usize);
        return Ok(Page {
            url,
            status,
            content_type,
            bytes,
            cut,
            redirects,
        });
    }
}

/// Runs a `web_fetch` call: the page from the content store when the
/// session's cache holds it (`cached`), else from the network within
/// [`Bounds::from_env`]; its bytes put in the store under `state_root`,
/// and a `fetched` record of it among the effects. The result is the
/// prompt's head ([`web::asked`]) and the page's [`text`].
pub(crate) fn run(
    call: Call<'_>,
    state_root: &std::path::Path,
    now: time::OffsetDateTime,
) -> crate::Outcome {
    let blobs = crate::edit::Blobs::new(state_root);
    let from_cache = call.cached.and_then(|f| {
        let bytes = blobs.get(&f.hash).ok()?;
        let page = Page {
            url: f.final_url.clone(),
            status: f.status,
            content_type: f.content_type.clone(),
            bytes,
            cut: f.cut,
            redirects: f.redirects,
        };
        Some((page, f.at))
    });
    let (page, cached) = match from_cache {
        Some((page, at)) => (page, Some(at)),
        None => {
            let named = |host: &str| call.access.names(host);
            match fetch(call.url, Bounds::from_env(), &named) {
                Ok(page) => (page, None),
                Err(e) => return crate::Outcome::text(format!("error: web_fetch: {e}")),
            }
        }
    };
    let hash = match blobs.put(&page.bytes) {
        Ok(hash) => hash,
        Err(e) => {
            return crate::Outcome::text(format!(
                "error: web_fetch: the page was read but could not be kept: {e}"
            ))
        }
    };
    let mut outcome = crate::Outcome::text(format!("{}{}", web::asked(call.prompt), text(&page)));
    outcome.effects.fetched = Some(Box::new(revolve_core::record::Fetched {
        at: now,
        call: String::new(),
        url: call.url.to_owned(),
        final_url: page.url.clone(),
        status: page.status,
        content_type: page.content_type.clone(),
        hash,
        bytes: page.bytes.len() as u64,
        cut: page.cut,
        redirects: page.redirects,
        cached,
    }));
    outcome
}

/// A `web_fetch` call as the session allowed it.
pub(crate) struct Call<'a> {
    /// The URL asked for.
    pub(crate) url: &'a str,
    /// What the model wants from the page.
    pub(crate) prompt: Option<&'a str>,
    /// The hosts it may reach at a private address.
    pub(crate) access: &'a web::Access,
    /// The session's fresh fetch of the same URL.
    pub(crate) cached: Option<&'a revolve_core::record::Fetched>,
}

impl Bounds {
    /// Core's bounds, with the time bound from `REVOLVE_WEB_FETCH_TIMEOUT_S`
    /// when set (the tests' slow server; whole seconds, at least one).
    pub fn from_env() -> Bounds {
        let mut bounds = Bounds::default();
        if let Some(s) = std::env::var("REVOLVE_WEB_FETCH_TIMEOUT_S")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
        {
            bounds.time = Duration::from_secs(s.max(1));
        }
        bounds
    }
}

/// The page as the model reads it: a line saying what it is, then its
/// text (HTML as Markdown), and a line when it was cut.
pub fn text(page: &Page) -> String {
    let kind = page
        .content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let body = String::from_utf8_lossy(&page.bytes);
    let html = kind == "text/html"
        || kind == "application/xhtml+xml"
        || (kind.is_empty() && body.trim_start().starts_with('<'));
    let text = if html {
        htmd::convert(&body).unwrap_or_else(|_| body.clone().into_owned())
    } else if kind.starts_with("text/") || kind.contains("json") || kind.contains("xml") {
        body.into_owned()
    } else {
        format!(
            "(a {} body of {} bytes: not text, not shown)",
            if kind.is_empty() { "typeless" } else { &kind },
            page.bytes.len()
        )
    };
    let mut out = format!("{} (HTTP {}", page.url, page.status);
    if page.redirects > 0 {
        out.push_str(&format!(", after {} redirect(s)", page.redirects));
    }
    out.push_str(")\n\n");
    out.push_str(text.trim());
    out.push('\n');
    if page.cut {
        out.push_str(&format!(
            "\n[the page goes on past {} bytes; not read further]\n",
            page.bytes.len()
        ));
    }
    out
}

/// Refuses a URL that is not http(s), or whose host resolves to a private
/// address no rule names.
fn check(url: &str, named: &dyn Fn(&str) -> bool) -> Result<(), String> {
    let (scheme, host) = web::checked(url)?;
    if named(host) {
        return Ok(());
    }
    let port = if scheme.eq_ignore_ascii_case("https") {
        443
    } else {
        80
    };
    let addrs = (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("{host}: cannot be resolved: {e}"))?;
    for addr in addrs {
        if let Some(why) = web::private(addr.ip()) {
            return Err(format!(
                "{host} resolves to {} ({why}): refused; a permission rule naming it lets it \
                 through (--allow 'web_fetch(domain:{host})')",
                addr.ip()
            ));
        }
    }
    Ok(())
}

fn timed_out(url: &str, limit: Duration) -> String {
    format!(
        "{url}: no whole page within {} s; given up",
        limit.as_secs()
    )
}

/// A redirect's `location` made absolute against the URL it came from.
fn joined(base: &str, location: &str) -> String {
    if location.contains("://") {
        return location.to_owned();
    }
    let (scheme, rest) = base.split_once("://").unwrap_or(("http", base));
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if let Some(net) = location.strip_prefix("//") {
        return format!("{scheme}://{net}");
    }
    if location.starts_with('/') {
        return format!("{scheme}://{authority}{location}");
    }
    let path = &rest[authority.len()..];
    let path = path.split(['?', '#']).next().unwrap_or("");
    let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
    format!("{scheme}://{authority}{dir}/{location}")
}

#[cfg(test)]
mod tests;
