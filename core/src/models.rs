//! The models revolve knows: each one's context window, its longest answer
//! and its prices, as data.
//!
//! The table ships in `core/models/models.json` (read into the binary with
//! `include_str!`), written by `core/models/update.py` from the model table
//! of the PyPI package `litellm`; its `source` field says which version and
//! when. A config file's `models` map adds entries or overrides fields of
//! shipped ones ([`Table::with`]); each entry is
//!
//! ```json
//! {"window": 200000, "max_output": 64000, "input": 3, "cached_input": 0.3, "cache_write": 3.75, "output": 15}
//! ```
//!
//! every field optional, prices in US dollars per million tokens. A model
//! is priced when its `input` and `output` prices are known; a missing
//! `cached_input` or `cache_write` price is the `input` one.
//!
//! Money is integers here: a price is micro-dollars per million tokens
//! (that is, pico-dollars per token), an amount nano-dollars ([`Nanos`]).
//! Only reading the JSON's decimal prices goes through a float, rounded to
//! the micro-dollar at once.
//!
//! A model is found ([`Table::find`]) by its name as given, then as the
//! preset's (`ollama/NAME` for the `ollama` preset), then without a
//! `vendor/` prefix (OpenRouter's `openai/gpt-5.6-terra` is
//! `gpt-5.6-terra`).

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};

/// How hard a reasoning model thinks before it answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Effort {
    /// The least reasoning: the fastest answers.
    Low,
    /// The provider's middle setting.
    Medium,
    /// The most reasoning: the slowest and costliest answers.
    High,
}

impl Effort {
    /// Every level, lowest first.
    pub const ALL: [Effort; 3] = [Effort::Low, Effort::Medium, Effort::High];

    /// `low`, `medium` or `high`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
        }
    }

    /// Anthropic's extended-thinking budget at this effort, in tokens
    /// ([`crate::policy::THINKING_BUDGETS`]).
    pub const fn thinking_budget(self) -> u64 {
        let [low, medium, high] = crate::policy::THINKING_BUDGETS;
        match self {
            Effort::Low => low,
            Effort::Medium => medium,
            Effort::High => high,
        }
    }

    /// The effort named `text`; the error says which names there are.
    pub fn parse(text: &str) -> Result<Effort, String> {
        match text.trim() {
            "low" => Ok(Effort::Low),
            "medium" => Ok(Effort::Medium),
            "high" => Ok(Effort::High),
            other => Err(format!("effort {other:?}: give low, medium or high")),
        }
    }
}

/// The shipped table, as JSON.
const SHIPPED: &str = include_str!("../models/models.json");

/// An amount of money in nano-dollars (10^-9 US dollars).
pub(crate) type Nanos = u64;

/// What one model is known by.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Model {
    /// The context window, in tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window: Option<u64>,
    /// The longest answer, in tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_output: Option<u64>,
    /// Its prices, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prices: Option<Prices>,
    /// Whether the config file added or changed it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub configured: bool,
    /// Whether it reads images (issue 44); `None` when the table does not
    /// say (such a model is sent them, see [`crate::images::blind`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vision: Option<bool>,
    /// Whether OpenAI serves it first on its Responses API (issue 45):
    /// the `openai` preset then speaks that wire to OpenAI (see
    /// [`crate::config::Preset::settled`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub responses: Option<bool>,
}

/// A model's prices, each in micro-dollars per million tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Prices {
    /// An input token neither read from nor written to a prompt cache.
    pub input: u64,
    /// An input token read from the prompt cache.
    pub cached_input: u64,
    /// An input token written to the prompt cache.
    pub cache_write: u64,
    /// An output token.
    pub output: u64,
}

/// The token counts of a request, for its cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tokens {
    /// Every input token, the cached ones included.
    pub input: u64,
    /// Of `input`, read from the prompt cache.
    pub cached: u64,
    /// Of `input`, written to the prompt cache.
    pub written: u64,
    /// The answer's tokens.
    pub output: u64,
}

impl Prices {
    /// What `tokens` cost at these prices, in nano-dollars, rounded to the
    /// nearest.
    pub fn cost(&self, tokens: Tokens) -> Nanos {
        let cached = tokens.cached.min(tokens.input);
        let written = tokens.written.min(tokens.input - cached);
        let plain = tokens.input - cached - written;
        // Pico-dollars: micro-dollars per million tokens is pico per token.
        let pico = [
            (plain, self.input),
            (cached, self.cached_input),
            (written, self.cache_write),
            (tokens.output, self.output),
        ]
        .iter()
        .fold(0u128, |sum, &(n, price)| {
            sum.saturating_add(u128::from(n) * u128::from(price))
        });
        u64::try_from(pico.saturating_add(500) / 1000).unwrap_or(u64::MAX)
    }
}

/// What a request is expected to cost before it goes out, for
/// `--max-cost`: its `input` tokens (the estimate of its body) at the full
/// input price, as if none were read from a prompt cache, and an answer as
/// long as the session's `mean_answer` so far, at least
/// [`crate::policy::EXPECTED_ANSWER_TOKENS`] and at most the request's
/// `limit`, at the output price. Not the whole answer limit: that would
/// weigh every request at up to 32,000 output tokens, far more than
/// answers run, and stop a budget long before it is spent; a cached
/// prefix makes the real input cheaper, so the input errs high instead.
pub(crate) fn expected_cost(
    prices: &Prices,
    input: u64,
    mean_answer: u64,
    limit: Option<u64>,
) -> Nanos {
    let answer = mean_answer.max(crate::policy::EXPECTED_ANSWER_TOKENS);
    let answer = limit.map_or(answer, |l| answer.min(l));
    prices.cost(Tokens {
        input,
        output: answer,
        ..Tokens::default()
    })
}

/// An entry as the JSON writes it (the shipped table and a config file's
/// `models` map): every field optional, prices in dollars per million
/// tokens.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// The context window, in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<u64>,
    /// The most tokens one answer may have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output: Option<u64>,
    /// The price of an input token.
    #[serde(
        default,
        deserialize_with = "dollars",
        skip_serializing_if = "Option::is_none"
    )]
    pub input: Option<Micros>,
    /// The price of an input token read from the prompt cache.
    #[serde(
        default,
        deserialize_with = "dollars",
        skip_serializing_if = "Option::is_none"
    )]
    pub cached_input: Option<Micros>,
    /// The price of an input token written to the prompt cache.
    #[serde(
        default,
        deserialize_with = "dollars",
        skip_serializing_if = "Option::is_none"
    )]
    pub cache_write: Option<Micros>,
    /// The price of an output token.
    #[serde(
        default,
        deserialize_with = "dollars",
        skip_serializing_if = "Option::is_none"
    )]
    pub output: Option<Micros>,
    /// Whether the model reads images: litellm's `supports_vision`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vision: Option<bool>,
    /// Whether OpenAI serves it first on the Responses API: OpenAI's
    /// reasoning families (`gpt-5*`, `o3*`, `o4*`, `codex-*`), marked by
    /// `core/models/update.py`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub responses: Option<bool>,
}

/// A price read from dollars per million tokens, kept in micro-dollars
/// (and written as dollars again).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Micros(pub u64);

impl Serialize for Micros {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // Dollars, as written: 2500000 micro-dollars is 2.5.
        s.serialize_f64(self.0 as f64 / 1e6)
    }
}

/// Reads a price in dollars (a number, at least 0) as micro-dollars.
fn dollars<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Micros>, D::Error> {
    let dollars = f64::deserialize(d)?;
    if !(0.0..=1e9).contains(&dollars) {
        return Err(serde::de::Error::custom(format!(
            "a price is US dollars per million tokens, from 0 up, not {dollars}"
        )));
    }
    // Within u64, checked just above.
    Ok(Some(Micros((dollars * 1e6).round() as u64)))
}

impl Entry {
    /// This entry's fields over `base`'s.
    fn over(&self, base: Option<&Entry>) -> Entry {
        let base = base.cloned().unwrap_or_default();
        Entry {
            window: self.window.or(base.window),
            max_output: self.max_output.or(base.max_output),
            input: self.input.or(base.input),
            cached_input: self.cached_input.or(base.cached_input),
            cache_write: self.cache_write.or(base.cache_write),
            output: self.output.or(base.output),
            vision: self.vision.or(base.vision),
            responses: self.responses.or(base.responses),
        }
    }

    fn model(&self, configured: bool) -> Model {
        let prices = match (self.input, self.output) {
            (Some(input), Some(output)) => Some(Prices {
                input: input.0,
                cached_input: self.cached_input.unwrap_or(input).0,
                cache_write: self.cache_write.unwrap_or(input).0,
                output: output.0,
            }),
            _ => None,
        };
        Model {
            window: self.window.filter(|&w| w > 0),
            max_output: self.max_output.filter(|&m| m > 0),
            prices,
            configured,
            vision: self.vision,
            responses: self.responses,
        }
    }
}

/// The shipped file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Shipped {
    source: String,
    models: BTreeMap<String, Entry>,
}

/// The known models: the shipped table with the config file's entries.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Table {
    /// Where the shipped table came from (empty for an empty table).
    pub source: String,
    entries: BTreeMap<String, Entry>,
    configured: BTreeMap<String, bool>,
}

impl Table {
    /// The table shipped in the binary.
    pub fn shipped() -> Table {
        // The file is part of the build and a test reads it: it parses.
        let shipped: Shipped = match serde_json::from_str(SHIPPED) {
            Ok(s) => s,
            Err(_) => return Table::default(),
        };
        Table {
            source: shipped.source,
            entries: shipped.models,
            configured: BTreeMap::new(),
        }
    }

    /// This table with `entries` (a config file's `models`) added, each
    /// field given overriding the shipped one.
    pub fn with(mut self, entries: &BTreeMap<String, Entry>) -> Table {
        for (name, entry) in entries {
            let merged = entry.over(self.entries.get(name));
            self.entries.insert(name.clone(), merged);
            self.configured.insert(name.clone(), true);
        }
        self
    }

    /// The model `name` as the `preset` provider serves it, with the name
    /// it is known by in the table.
    pub fn find(&self, preset: &str, name: &str) -> Option<(&str, Model)> {
        let prefixed = format!("{preset}/{name}");
        let bare = name.split_once('/').map(|(_, bare)| bare);
        let (known, entry) = [Some(name), Some(prefixed.as_str()), bare]
            .into_iter()
            .flatten()
            .find_map(|n| self.entries.get_key_value(n))?;
        Some((
            known.as_str(),
            entry.model(self.configured.contains_key(known)),
        ))
    }

    /// Every model, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Model)> + '_ {
        self.entries
            .iter()
            .map(|(n, e)| (n.as_str(), e.model(self.configured.contains_key(n))))
    }

    /// How many models it holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Dollars written as a decimal number (`0.5`, `12`, `$3.25`) as
/// nano-dollars, exactly; more than nine decimals, a sign or anything else
/// is an error that says what is expected.
pub fn parse_dollars(text: &str) -> Result<Nanos, String> {
    let bad = || format!("{text:?} is not an amount of US dollars (e.g. 0.50)");
    let digits = text.trim().trim_start_matches('$');
    let (whole, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if (whole.is_empty() && frac.is_empty())
        || !all_digits(whole)
        || !all_digits(frac)
        || frac.len() > 9
    {
        return Err(bad());
    }
    let whole: u64 = if whole.is_empty() {
        0
    } else {
        whole.parse().map_err(|_| bad())?
    };
    let frac: u64 = format!("{frac:0<9}").parse().map_err(|_| bad())?;
    whole
        .checked_mul(1_000_000_000)
        .and_then(|n| n.checked_add(frac))
        .ok_or_else(bad)
}

/// An amount as dollars for people: `$0.0123` below ten dollars, `$12.34`
/// from there, and `<$0.0001` for an amount that would round to nothing.
pub fn dollars_text(nanos: Nanos) -> String {
    if nanos > 0 && nanos < 50_000 {
        "<$0.0001".to_owned()
    } else if nanos < 10_000_000_000 {
        // Tenths of a thousandth of a dollar, rounded.
        let units = nanos.saturating_add(50_000) / 100_000;
        format!("${}.{:04}", units / 10_000, units % 10_000)
    } else {
        let cents = nanos.saturating_add(5_000_000) / 10_000_000;
        format!("${}.{:02}", cents / 100, cents % 100)
    }
}

/// A price for people: dollars per million tokens, as few decimals as it
/// needs (`$2.5`, `$0.075`).
pub fn price_text(micros: u64) -> String {
    let whole = micros / 1_000_000;
    let frac = micros % 1_000_000;
    if frac == 0 {
        format!("${whole}")
    } else {
        let digits = format!("{frac:06}");
        format!("${whole}.{}", digits.trim_end_matches('0'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_table_reads_and_says_its_source() {
        let table = Table::shipped();
        assert!(table.len() >= 50, "{}", table.len());
        assert!(table.source.starts_with("litellm "), "{}", table.source);
        let (name, sonnet) = table.find("anthropic", "claude-sonnet-4-5").unwrap();
        assert_eq!(name, "claude-sonnet-4-5");
        assert_eq!(sonnet.window, Some(200_000));
        assert_eq!(sonnet.max_output, Some(64_000));
        assert_eq!(
            sonnet.prices,
            Some(Prices {
                input: 3_000_000,
                cached_input: 300_000,
                cache_write: 3_750_000,
                output: 15_000_000,
            })
        );
        // Every preset's default model is in it.
        for model in ["gpt-5.6-terra", "claude-sonnet-5"] {
            assert!(table.find("", model).is_some(), "{model}");
        }
    }

    #[test]
    fn names_are_found_as_given_as_the_presets_and_without_a_vendor() {
        let table = Table::shipped();
        assert_eq!(
            table.find("openrouter", "openai/gpt-5.4-mini").unwrap().0,
            "gpt-5.4-mini"
        );
        assert_eq!(
            table.find("ollama", "llama3.1").unwrap().0,
            "ollama/llama3.1"
        );
        assert_eq!(table.find("openai", "no-such-model"), None);
    }

    #[test]
    fn config_entries_add_models_and_override_fields() {
        let entries: BTreeMap<String, Entry> = serde_json::from_str(
            r#"{"mine": {"window": 65536, "input": 0.5, "output": 1.5},
                "gpt-4o-mini": {"window": 100000},
                "half": {"input": 1}}"#,
        )
        .unwrap();
        let table = Table::shipped().with(&entries);
        let mine = table.find("openai", "mine").unwrap().1;
        assert_eq!(mine.window, Some(65_536));
        assert!(mine.configured);
        assert_eq!(
            mine.prices,
            Some(Prices {
                input: 500_000,
                cached_input: 500_000,
                cache_write: 500_000,
                output: 1_500_000,
            })
        );
        let mini = table.find("openai", "gpt-4o-mini").unwrap().1;
        assert_eq!(mini.window, Some(100_000));
        assert_eq!(
            mini.prices.unwrap().output,
            600_000,
            "the shipped price stays"
        );
        assert_eq!(table.find("openai", "half").unwrap().1.prices, None);
        for bad in [
            r#"{"m": {"windoww": 1}}"#,
            r#"{"m": {"input": -1}}"#,
            r#"{"m": {"input": "cheap"}}"#,
        ] {
            assert!(
                serde_json::from_str::<BTreeMap<String, Entry>>(bad).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn costs_are_integers_and_count_the_cache_at_its_prices() {
        let prices = Prices {
            input: 3_000_000,
            cached_input: 300_000,
            cache_write: 3_750_000,
            output: 15_000_000,
        };
        // 1M plain input tokens at $3, 1M output at $15.
        let plain = Tokens {
            input: 1_000_000,
            output: 1_000_000,
            ..Tokens::default()
        };
        assert_eq!(prices.cost(plain), 18_000_000_000);
        // 1000 input of which 800 read and 100 written, 10 out, in
        // pico-dollars: 100 × 3e6 + 800 × 3e5 + 100 × 3.75e6 + 10 × 1.5e7.
        let cached = Tokens {
            input: 1000,
            cached: 800,
            written: 100,
            output: 10,
        };
        assert_eq!(prices.cost(cached), 1_065_000);
        // Counts that make no sense never pass the input.
        let odd = Tokens {
            input: 10,
            cached: 50,
            written: 50,
            output: 0,
        };
        assert_eq!(prices.cost(odd), 3_000, "10 read tokens");
        assert_eq!(
            prices.cost(Tokens {
                input: u64::MAX,
                output: u64::MAX,
                ..Tokens::default()
            }),
            u64::MAX
        );
    }

    #[test]
    fn dollars_parse_exactly() {
        assert_eq!(parse_dollars("0.50"), Ok(500_000_000));
        assert_eq!(parse_dollars("$12"), Ok(12_000_000_000));
        assert_eq!(parse_dollars(".000000001"), Ok(1));
        for bad in [
            "",
            ".",
            "-1",
            "1e3",
            "0.0000000001",
            "abc",
            "99999999999999",
        ] {
            assert!(parse_dollars(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn money_and_prices_read_as_dollars() {
        assert_eq!(dollars_text(0), "$0.0000");
        assert_eq!(dollars_text(1_065), "<$0.0001");
        assert_eq!(dollars_text(50_000), "$0.0001");
        assert_eq!(dollars_text(12_340_000), "$0.0123");
        assert_eq!(dollars_text(9_999_990_000), "$10.0000");
        assert_eq!(dollars_text(18_000_000_000), "$18.00");
        assert_eq!(
            dollars_text(u64::MAX),
            "$18446744073.70",
            "saturated, no overflow"
        );
        assert_eq!(price_text(2_500_000), "$2.5");
        assert_eq!(price_text(75_000), "$0.075");
        assert_eq!(price_text(15_000_000), "$15");
    }
}
