//! The proof of a calibration: the captured opencode request, turned back into what a chat
//! client would send (its user text unquoted), rewritten by the `opencode` harness with the new
//! prompts, must come out as opencode sent it. Lists every difference left.

use chrono::Utc;
use http::{HeaderMap, HeaderValue};
use serde_json::Value;

use super::report::value_paths;
use crate::clients::profiles::Profiles;
use crate::config::{IdentityPreset, InstructionsMode, OpencodeConfig, ToolsPolicy};
use crate::harness::collaboration::Collaboration;
use crate::harness::opencode::Opencode;
use crate::harness::opencode::tools::HostInfo;
use crate::prompts::Prompts;
use crate::protocols::chat::request::parse_conversation;

const MODEL_ID: &str = ". The exact model ID is ";

/// Differences between the rewrite of `captured` (opencode's main request) and `captured`
/// itself, as JSON pointers with both values; empty when they are equal.
pub fn rewrite_differences(captured: &Value, prompts: &Prompts, host: HostInfo) -> Vec<String> {
    let model = captured["model"].as_str().unwrap_or_default();
    let system = captured
        .pointer("/messages/0/content")
        .and_then(Value::as_str)
        .unwrap_or_default();
    // The provider opencode named (its config's provider key): the identity line says it.
    let provider = system
        .split_once(MODEL_ID)
        .and_then(|(_, rest)| rest.lines().next())
        .and_then(|id| id.strip_suffix(&format!("/{model}")))
        .map(str::to_owned);
    let config = OpencodeConfig {
        identity: IdentityPreset::Model,
        provider,
        instructions: InstructionsMode::Carry,
        tools: ToolsPolicy::Intersect,
        ..OpencodeConfig::default()
    };
    let Ok(profiles) = Profiles::load(&[]) else {
        return vec!["built-in alias profiles do not load".to_owned()];
    };
    let collaboration = Collaboration::from_prompts(prompts, false);
    let harness = match Opencode::new(&config, prompts, host, profiles, collaboration, "") {
        Ok(harness) => harness,
        Err(err) => return vec![format!("the calibrated prompts do not load: {err}")],
    };
    let client = as_client_request(captured);
    let Ok(bytes) = serde_json::to_vec(&client) else {
        return vec!["the captured request does not serialize".to_owned()];
    };
    let request = match parse_conversation(&bytes) {
        Ok(request) => request,
        Err(err) => return vec![format!("the captured request does not parse: {err}")],
    };
    let mut headers = HeaderMap::new();
    headers.insert("user-agent", HeaderValue::from_static("opencode/calibrate"));
    let built = match harness.build(request, &headers, Utc::now()) {
        Ok(built) => built,
        Err(err) => return vec![format!("the rewrite failed: {err}")],
    };
    let Ok(rewritten) = serde_json::from_slice::<Value>(&built.body.to_bytes()) else {
        return vec!["the rewrite is not JSON".to_owned()];
    };
    let mut paths = Vec::new();
    value_paths(Some(&rewritten), Some(captured), String::new(), &mut paths);
    let keys = |v: &Value| -> Vec<String> {
        v.as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default()
    };
    let order = (keys(&rewritten) != keys(captured)).then(|| {
        format!(
            "key order: rewrite {:?} / opencode {:?}",
            keys(&rewritten),
            keys(captured)
        )
    });
    paths
        .into_iter()
        .map(|path| {
            if let (Some(Value::String(ours)), Some(Value::String(theirs))) =
                (rewritten.pointer(&path), captured.pointer(&path))
            {
                return text_difference(&path, ours, theirs);
            }
            let show = |v: &Value| {
                v.pointer(&path).map_or_else(
                    || "absent".to_owned(),
                    |v| {
                        let text = v.to_string();
                        let short: String = text.chars().take(80).collect();
                        if short.len() < text.len() {
                            format!("{short}…")
                        } else {
                            short
                        }
                    },
                )
            };
            format!(
                "{path}: rewrite {} / opencode {}",
                show(&rewritten),
                show(captured)
            )
        })
        .chain(order)
        .collect()
}

/// Where two texts part, with a little of each from there.
fn text_difference(path: &str, ours: &str, theirs: &str) -> String {
    let at = ours
        .char_indices()
        .zip(theirs.chars())
        .find(|((_, a), b)| a != b)
        .map_or_else(|| ours.len().min(theirs.len()), |((i, _), _)| i);
    let at = (0..=at)
        .rev()
        .find(|&i| theirs.is_char_boundary(i))
        .unwrap_or(0);
    let snippet = |text: &str| -> String { text[at..].chars().take(60).collect() };
    format!(
        "{path}: from byte {at}: rewrite {:?} / opencode {:?}",
        snippet(ours),
        snippet(theirs)
    )
}

/// What a chat client would have sent: opencode's user texts are JSON-quoted, the client's are
/// not.
fn as_client_request(captured: &Value) -> Value {
    let mut client = captured.clone();
    for message in client["messages"].as_array_mut().into_iter().flatten() {
        if message["role"] == "user"
            && let Some(text) = message["content"].as_str()
            && let Ok(Value::String(unquoted)) = serde_json::from_str::<Value>(text)
        {
            message["content"] = Value::String(unquoted);
        }
    }
    client
}
