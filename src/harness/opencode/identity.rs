//! The identity line (`You are powered by the model named … The exact model ID is …`): which
//! templates, which provider, bound once at start-up so a request only fills in its model.
//!
//! Real opencode names the model it talks to (`{model}` and `{provider}/{model}`, the provider
//! being its models.dev id); the reference prints a fixed `deepseek-chat` / `deepseek/{model}`.
//! `opencode.identity` picks one; `model_name`, `model_id` and `provider` override parts of it.

use crate::config::{IdentityPreset, OpencodeConfig};
use crate::template::{Pattern, Template};

/// Provider name when the upstream host is not a known provider's.
pub const GENERIC_PROVIDER: &str = "openai-compatible";

/// The two identity templates, with the provider already in and the model left open.
#[derive(Debug, Clone)]
pub struct Identity {
    name: Pattern,
    id: Pattern,
}

#[derive(Debug, thiserror::Error)]
#[error("config key `opencode.{key}`: {message} in `{value}`")]
pub struct IdentityError {
    key: &'static str,
    value: String,
    message: String,
}

impl Identity {
    /// Binds the configured (or preset) templates. `upstream_base_url` names the provider when
    /// the config does not.
    pub fn new(config: &OpencodeConfig, upstream_base_url: &str) -> Result<Self, IdentityError> {
        let (name, id, provider) = match config.identity {
            IdentityPreset::Model => (
                "{{model}}",
                "{{provider}}/{{model}}",
                provider_for_base_url(upstream_base_url),
            ),
            IdentityPreset::Reference => ("deepseek-chat", "deepseek/{{model}}", "deepseek"),
        };
        let provider = config.provider.as_deref().unwrap_or(provider);
        let bind = |key: &'static str, template: &str| {
            let error = |message: String| IdentityError {
                key,
                value: template.to_owned(),
                message,
            };
            let pattern = Template::parse(template)
                .and_then(|t| t.bind(&[("provider", provider)], &["model"]))
                .map_err(|e| {
                    error(format!(
                        "{e}; the identity templates know `{{{{model}}}}` and `{{{{provider}}}}`"
                    ))
                })?;
            // `{model}` was this key's syntax before it moved to the one template syntax: a
            // literal `{model}` in the line is almost surely an old config, not a wish.
            if let Some(old) = ["{model}", "{provider}"]
                .into_iter()
                .find(|old| pattern.texts().any(|text| text.contains(old)))
            {
                let new = old.replace('{', "{{").replace('}', "}}");
                return Err(error(format!(
                    "`{old}` is not a placeholder; write `{new}`"
                )));
            }
            Ok(pattern)
        };
        Ok(Self {
            name: bind("model_name", config.model_name.as_deref().unwrap_or(name))?,
            id: bind("model_id", config.model_id.as_deref().unwrap_or(id))?,
        })
    }

    /// The model name and the model id shown for a request to `model`.
    pub fn render(&self, model: &str) -> (String, String) {
        (self.name.fill(&[model]), self.id.fill(&[model]))
    }
}

/// Known providers by the domain of their API host, named as opencode (models.dev) names them.
const PROVIDERS: [(&str, &str); 15] = [
    ("openai.com", "openai"),
    ("openrouter.ai", "openrouter"),
    ("deepseek.com", "deepseek"),
    ("anthropic.com", "anthropic"),
    ("groq.com", "groq"),
    ("together.xyz", "togetherai"),
    ("together.ai", "togetherai"),
    ("mistral.ai", "mistral"),
    ("fireworks.ai", "fireworks-ai"),
    ("x.ai", "xai"),
    ("generativelanguage.googleapis.com", "google"),
    ("cerebras.ai", "cerebras"),
    ("deepinfra.com", "deepinfra"),
    ("moonshot.ai", "moonshotai"),
    ("moonshot.cn", "moonshotai-cn"),
];

/// The provider an upstream base URL belongs to; `openai-compatible` for any other host.
pub fn provider_for_base_url(base_url: &str) -> &'static str {
    let Some(host) = base_url
        .parse::<http::Uri>()
        .ok()
        .and_then(|uri| uri.host().map(str::to_ascii_lowercase))
    else {
        return GENERIC_PROVIDER;
    };
    let host = host.trim_end_matches('.');
    PROVIDERS
        .iter()
        .find(|(domain, _)| {
            host == *domain
                || host
                    .strip_suffix(domain)
                    .is_some_and(|rest| rest.ends_with('.'))
        })
        .map_or(GENERIC_PROVIDER, |(_, provider)| provider)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(identity: IdentityPreset) -> OpencodeConfig {
        OpencodeConfig {
            identity,
            ..OpencodeConfig::default()
        }
    }

    #[test]
    fn providers_by_host() {
        let cases = [
            ("https://api.openai.com/v1", "openai"),
            ("https://openrouter.ai/api/v1", "openrouter"),
            ("https://api.deepseek.com/v1", "deepseek"),
            ("https://api.anthropic.com/v1", "anthropic"),
            ("https://api.groq.com/openai/v1", "groq"),
            ("https://api.together.xyz/v1", "togetherai"),
            ("https://api.mistral.ai/v1", "mistral"),
            ("https://api.fireworks.ai/inference/v1", "fireworks-ai"),
            ("https://API.OpenAI.com:443/v1", "openai"),
            ("http://127.0.0.1:8000/v1", GENERIC_PROVIDER),
            ("http://localhost:11434/v1", GENERIC_PROVIDER),
            // A look-alike domain is not the provider.
            ("https://notopenai.com/v1", GENERIC_PROVIDER),
            ("https://openai.com.example.org/v1", GENERIC_PROVIDER),
            ("not a url", GENERIC_PROVIDER),
        ];
        for (url, want) in cases {
            assert_eq!(provider_for_base_url(url), want, "{url}");
        }
    }

    #[test]
    fn model_preset_names_the_request_model_and_the_upstream_provider() {
        let identity = Identity::new(
            &config(IdentityPreset::Model),
            "https://openrouter.ai/api/v1",
        )
        .expect("valid");
        assert_eq!(
            identity.render("qwen/qwen3-coder"),
            (
                "qwen/qwen3-coder".to_owned(),
                "openrouter/qwen/qwen3-coder".to_owned()
            )
        );
    }

    #[test]
    fn reference_preset_is_the_fixed_text() {
        let identity = Identity::new(
            &config(IdentityPreset::Reference),
            "https://api.openai.com/v1",
        )
        .expect("valid");
        assert_eq!(
            identity.render("m"),
            ("deepseek-chat".to_owned(), "deepseek/m".to_owned())
        );
    }

    #[test]
    fn overrides_and_errors_name_the_key() {
        let mut config = config(IdentityPreset::Model);
        config.provider = Some("lab".into());
        config.model_name = Some("{{ model }} (lab)".into());
        let identity = Identity::new(&config, "http://127.0.0.1/v1").expect("valid");
        assert_eq!(
            identity.render("m"),
            ("m (lab)".to_owned(), "lab/m".to_owned())
        );

        config.model_id = Some("{model}".into());
        let text = Identity::new(&config, "x")
            .expect_err("old syntax")
            .to_string();
        assert!(
            text.contains("`opencode.model_id`") && text.contains("write `{{model}}`"),
            "{text}"
        );
        config.model_id = Some("{{vendor}}/{{model}}".into());
        let text = Identity::new(&config, "x")
            .expect_err("unknown")
            .to_string();
        assert!(
            text.contains("`opencode.model_id`") && text.contains("`vendor`"),
            "{text}"
        );
    }
}
