//! `revolve models`: what the provider's endpoint offers, with the window
//! and prices of the models the table of known models has
//! ([`revolve_core::models`]).

use serde_json::json;

use revolve_core::config::redact_url_credentials;
use revolve_core::models::price_text;
use revolve_core::request::Wire;
use revolve_provider::{Anthropic, Gemini, OpenAi};
use revolve_view as view;

use crate::config::Settings;
use crate::error::{out, Error};

/// Lists the model ids of `GET {base_url}/models`, one a line, or as JSON:
/// `{"provider": …, "base_url": …, "models": [{"id": …}, …]}`. A model the
/// table knows gets its window and prices (dollars per million tokens):
/// after its id on its line, and as `window`, `max_output` and `prices`
/// (`input`, `cached_input`, `cache_write`, `output`) in JSON.
pub(crate) fn list(settings: &Settings, json: bool) -> Result<(), Error> {
    let preset = settings.provider.value;
    let base = &settings.base_url.value;
    let key = settings.needed_key()?;
    let ids = match preset.wire() {
        None => {
            return Err(Error::Usage(format!(
                "the {preset} provider has no model list; choose another --provider"
            )))
        }
        Some(Wire::OpenAi | Wire::Responses) => OpenAi::new(base, key).models(),
        Some(Wire::Anthropic) => Anthropic::new(base, key).models(),
        Some(Wire::Gemini) => Gemini::new(base, key).models(),
    }?;
    let known = |id: &str| settings.core.models.find(preset.name(), id).map(|(_, m)| m);
    if json {
        let models = ids
            .iter()
            .map(|id| {
                let mut entry = json!({"id": id});
                if let Some(m) = known(id) {
                    entry["window"] = json!(m.window);
                    entry["max_output"] = json!(m.max_output);
                    entry["prices"] = json!(m.prices.map(|p| json!({
                        "input": dollars(p.input),
                        "cached_input": dollars(p.cached_input),
                        "cache_write": dollars(p.cache_write),
                        "output": dollars(p.output),
                    })));
                }
                entry
            })
            .collect::<Vec<_>>();
        let doc = json!({
            "provider": preset.name(),
            "base_url": redact_url_credentials(OpenAi::new(base, None).base_url()),
            "models": models,
        });
        let text = serde_json::to_string_pretty(&doc).map_err(Error::encode)?;
        return out(&format!("{text}\n"));
    }
    let width = ids
        .iter()
        .filter(|id| known(id).is_some())
        .map(|id| id.len())
        .max()
        .unwrap_or(0);
    let lines: String = ids
        .iter()
        .map(|id| match known(id).map(|m| line(&m)) {
            Some(about) if !about.is_empty() => format!("{id:width$}  {about}\n"),
            _ => format!("{id}\n"),
        })
        .collect();
    out(&lines)
}

/// What the table says of a model, for its line:
/// `window 272k · max answer 128k · $0.75 in, $0.075 cached, $4.5 out per M`.
fn line(model: &revolve_core::models::Model) -> String {
    let mut parts = Vec::new();
    if let Some(w) = model.window {
        parts.push(format!("window {}", view::tokens(w)));
    }
    if let Some(m) = model.max_output {
        parts.push(format!("max answer {}", view::tokens(m)));
    }
    if let Some(p) = model.prices {
        parts.push(format!(
            "{} in, {} cached, {} out per M",
            price_text(p.input),
            price_text(p.cached_input),
            price_text(p.output)
        ));
    }
    parts.join(" · ")
}

/// Micro-dollars per million tokens as dollars, for JSON.
fn dollars(micros: u64) -> f64 {
    micros as f64 / 1e6
}
