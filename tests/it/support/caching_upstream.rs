//! A fake model server that both enforces DeepSeek V4's thinking-mode rule and keeps a prefix
//! cache the way Anthropic accounts for it: the cached prompt tokens of a request are those of the
//! prefix (tools, then messages from the first) it shares with the previous request of the same
//! conversation (its `session-id` thread header). One token is four bytes of a message's or the
//! tools' compact JSON, a stable unit the tests can recompute (`prompt_units`).
//!
//! Its model makes two tool turns: a conversation whose latest user words have fewer than two
//! tool results after them gets reasoning then one `bash` call (`call_ds_1`, `call_ds_2`), the
//! next gets reasoning then `Done.`. Title requests get `Listing files`.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::{Value, json};

use super::fake_upstream::DEEPSEEK_THINKING_400;
use super::{FakeUpstream, Recorded, Reply, Step};

/// How the server names its cached prompt tokens in `usage`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheWords {
    /// `prompt_tokens_details.cached_tokens` (OpenAI, OpenRouter, vLLM).
    OpenAi,
    /// `prompt_cache_hit_tokens` and `prompt_cache_miss_tokens` only (DeepSeek).
    DeepSeek,
}

/// The reasoning tokens every answer reports (`completion_tokens_details.reasoning_tokens`).
pub const REASONING_TOKENS: u64 = 12;

/// A unit of the cache: four bytes of compact JSON.
fn units(value: &Value) -> u64 {
    (value.to_string().len() / 4) as u64
}

/// The prompt's tokens as this server counts them: the tools, then every message.
pub fn prompt_units(body: &Value) -> u64 {
    let messages = body["messages"].as_array().into_iter().flatten();
    units(&body["tools"]) + messages.map(units).sum::<u64>()
}

/// The tokens of `body`'s prefix shared with `before`: nothing unless everything but the
/// messages is the same (tools, options, the cache key), then the tools and each leading message
/// the two have byte for byte in common.
pub fn cached_units(before: &Value, body: &Value) -> u64 {
    let rest = |body: &Value| {
        let mut body = body.clone();
        body.as_object_mut().map(|b| b.remove("messages"));
        body
    };
    if rest(before) != rest(body) {
        return 0;
    }
    let (old, new) = (
        before["messages"].as_array().cloned().unwrap_or_default(),
        body["messages"].as_array().cloned().unwrap_or_default(),
    );
    let common = old
        .iter()
        .zip(&new)
        .take_while(|(a, b)| a.to_string() == b.to_string())
        .map(|(a, _)| units(a))
        .sum::<u64>();
    if common == 0 {
        0
    } else {
        units(&body["tools"]) + common
    }
}

fn chunk(delta: &Value, finish: Option<&str>) -> String {
    let chunk = json!({"id": "ds-c", "object": "chat.completion.chunk", "created": 1,
        "model": "deepseek-v4", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    format!("data: {chunk}\n\n")
}

fn usage_chunk(words: CacheWords, prompt: u64, cached: u64) -> String {
    let mut usage = json!({"prompt_tokens": prompt, "completion_tokens": 20,
        "total_tokens": prompt + 20,
        "completion_tokens_details": {"reasoning_tokens": REASONING_TOKENS}});
    match words {
        CacheWords::OpenAi => usage["prompt_tokens_details"] = json!({"cached_tokens": cached}),
        CacheWords::DeepSeek => {
            usage["prompt_cache_hit_tokens"] = json!(cached);
            usage["prompt_cache_miss_tokens"] = json!(prompt - cached);
        }
    }
    let chunk = json!({"id": "ds-c", "object": "chat.completion.chunk", "created": 1,
        "model": "deepseek-v4", "choices": [], "usage": usage});
    format!("data: {chunk}\n\n")
}

/// The answer of the two-tool-turn model to `messages`.
fn answer(messages: &[Value]) -> Vec<String> {
    let results = messages
        .iter()
        .rev()
        .take_while(|m| m["role"] != "user")
        .filter(|m| m["role"] == "tool")
        .count();
    if results >= 2 {
        return vec![
            chunk(
                &json!({"role": "assistant", "reasoning_content": "Both listings are in."}),
                None,
            ),
            chunk(&json!({"content": "Done."}), Some("stop")),
        ];
    }
    let n = results + 1;
    let call = json!({"index": 0, "id": format!("call_ds_{n}"), "type": "function",
        "function": {"name": "bash", "arguments": format!("{{\"command\":\"ls dir{n}\"}}")}});
    vec![
        chunk(
            &json!({"role": "assistant", "reasoning_content": format!("Listing dir{n}.")}),
            None,
        ),
        chunk(&json!({"tool_calls": [call]}), None),
        chunk(&json!({}), Some("tool_calls")),
    ]
}

impl FakeUpstream {
    /// The DeepSeek-rule, prefix-caching server (module docs), naming cached tokens in `words`.
    pub async fn deepseek_caching(words: CacheWords) -> Self {
        let previous: Mutex<HashMap<String, Value>> = Mutex::new(HashMap::new());
        Self::start(move |r: &Recorded, _| {
            let body = r.json();
            let messages = body["messages"].as_array().cloned().unwrap_or_default();
            let unreasoned = messages.iter().any(|m| {
                m["role"] == "assistant"
                    && m["tool_calls"].as_array().is_some_and(|c| !c.is_empty())
                    && !m["reasoning_content"].is_string()
            });
            if unreasoned {
                return Reply::json(400, DEEPSEEK_THINKING_400);
            }
            let (mut stream, cached) = if r.is_title() {
                // A side request: the conversation's cache entry stays its main request's.
                let title = chunk(&json!({"content": "Listing files"}), Some("stop"));
                (vec![title], 0)
            } else {
                let conversation = r.header("session-id").unwrap_or_default().to_owned();
                let before = previous
                    .lock()
                    .expect("lock")
                    .insert(conversation, body.clone());
                let cached = before.map_or(0, |before| cached_units(&before, &body));
                (answer(&messages), cached)
            };
            stream.push(usage_chunk(words, prompt_units(&body), cached));
            stream.push("data: [DONE]\n\n".to_owned());
            Reply::steps(
                stream
                    .into_iter()
                    .map(|c| Step::Send(c.into_bytes()))
                    .collect(),
            )
        })
        .await
    }
}
