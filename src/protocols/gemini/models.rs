//! The upstream's model list (OpenAI's `{"data": [{"id"}]}`) in the Gemini API's shape, for
//! `GET /v1beta/models` and `/v1beta/models/{model}`: Gemini CLI and the SDK list and look up
//! models by `name` (`models/{id}`).
//!
//! Pure: the route fetches the list.

use serde_json::{Value, json};

/// What every listed model is said to support: what this front serves.
const METHODS: [&str; 3] = ["generateContent", "streamGenerateContent", "countTokens"];

/// One model in Gemini's shape.
pub fn model(id: &str) -> Value {
    json!({
        "name": format!("models/{id}"),
        "baseModelId": id,
        "version": "001",
        "displayName": id,
        "supportedGenerationMethods": METHODS,
    })
}

/// The ids of an OpenAI model list (`data[].id`); none from a body that is not one.
pub fn ids(list: &[u8]) -> Vec<String> {
    let parsed: Option<Value> = serde_json::from_slice(list).ok();
    parsed
        .as_ref()
        .and_then(|v| v.get("data"))
        .and_then(Value::as_array)
        .map(|data| {
            data.iter()
                .filter_map(|m| m.get("id").and_then(Value::as_str))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// `{"models": [...]}`.
pub fn list(ids: &[String]) -> Value {
    json!({ "models": ids.iter().map(|id| model(id)).collect::<Vec<_>>() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_openai_list_becomes_gemini_models() {
        let ids = ids(br#"{"object":"list","data":[{"id":"gpt-x","object":"model"},{"id":"m2"}]}"#);
        assert_eq!(ids, ["gpt-x", "m2"]);
        let listed = list(&ids);
        assert_eq!(listed["models"][0]["name"], "models/gpt-x");
        assert_eq!(
            listed["models"][1]["supportedGenerationMethods"][1],
            "streamGenerateContent"
        );
        assert!(super::ids(b"not json").is_empty());
    }
}
