//! The laws of MCP OAuth's decisions (`revolve_core::mcp::oauth`), on
//! random input: what is encoded decodes back, a redirect is taken only
//! with the state sent, and a token due for refresh stays due.

use quickcheck::{Gen, QuickCheck};
use revolve_core::mcp::oauth::{self, Callback};

/// The seed the laws run with unless `REVOLVE_LAWS_SEED` (read when the
/// tests are built) names another, as in `laws.rs`.
const SEED: u64 = 0x5eed_0a07;

fn laws() -> QuickCheck {
    let seed = option_env!("REVOLVE_LAWS_SEED")
        .and_then(|s| s.parse().ok())
        .unwrap_or(SEED);
    eprintln!(
        "laws: seed {seed} (REVOLVE_LAWS_SEED={seed} cargo test -p revolve-core --test oauth_laws repeats this run)"
    );
    QuickCheck::new().rng(Gen::from_size_and_seed(100, seed))
}

#[test]
fn a_form_decodes_to_the_pairs_it_was_made_of() {
    fn prop(pairs: Vec<(String, String)>) -> bool {
        let borrowed: Vec<(&str, &str)> = pairs
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let text = oauth::form(&borrowed);
        // Only unreserved characters and escapes go on the wire.
        text.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~%=&".contains(&b))
            && oauth::query_pairs(&text) == pairs
    }
    laws().quickcheck(prop as fn(Vec<(String, String)>) -> bool);
}

#[test]
fn a_redirect_is_taken_only_with_the_state_sent() {
    fn prop(sent: String, got: String, code: String, same: bool) -> bool {
        let got = if same { sent.clone() } else { got };
        let target = format!(
            "{}?{}",
            oauth::CALLBACK_PATH,
            oauth::form(&[("code", &code), ("state", &got)])
        );
        match oauth::callback(&target, &sent) {
            Callback::Code(c) => got == sent && c == code,
            Callback::WrongState => got != sent,
            Callback::Refused(_) => got == sent && code.is_empty(),
            Callback::Elsewhere => false,
        }
    }
    laws().quickcheck(prop as fn(String, String, String, bool) -> bool);
}

#[test]
fn a_token_due_for_refresh_stays_due() {
    fn prop(expires_at: Option<u64>, now: u64, later: u32) -> bool {
        !oauth::refresh_due(expires_at, now)
            || oauth::refresh_due(expires_at, now.saturating_add(u64::from(later)))
    }
    laws().quickcheck(prop as fn(Option<u64>, u64, u32) -> bool);
}
