//! `revolve models`: what the provider's endpoint offers.

use serde_json::json;

use revolve_core::config::redact_url_credentials;
use revolve_core::request::Wire;
use revolve_io::provider::{Anthropic, OpenAi};

use crate::config::Settings;
use crate::error::{out, Error};

/// Lists the model ids of `GET {base_url}/models`, one a line, or as JSON:
/// `{"provider": …, "base_url": …, "models": [{"id": …}, …]}`.
pub fn list(settings: &Settings, json: bool) -> Result<(), Error> {
    let preset = settings.provider.value;
    let base = &settings.base_url.value;
    let key = settings.needed_key()?;
    let ids = match preset.wire() {
        None => {
            return Err(Error::Usage(format!(
                "the {preset} provider has no model list; choose another --provider"
            )))
        }
        Some(Wire::OpenAi) => OpenAi::new(base, key).models(),
        Some(Wire::Anthropic) => Anthropic::new(base, key).models(),
    }
    .map_err(|e| Error::Runtime(e.message))?;
    if json {
        let doc = json!({
            "provider": preset.name(),
            "base_url": redact_url_credentials(OpenAi::new(base, None).base_url()),
            "models": ids.iter().map(|id| json!({"id": id})).collect::<Vec<_>>(),
        });
        let text = serde_json::to_string_pretty(&doc).map_err(|e| Error::Runtime(e.to_string()))?;
        return out(&format!("{text}\n"));
    }
    out(&ids.iter().map(|id| format!("{id}\n")).collect::<String>())
}
