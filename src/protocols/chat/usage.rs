//! The usage a Chat Completions client reads, in OpenAI's words: an upstream that names its cached
//! prompt tokens otherwise (DeepSeek's `prompt_cache_hit_tokens`, Moonshot's `cached_tokens`,
//! `Usage::cached_tokens_of`) also gets `prompt_tokens_details.cached_tokens`, which the
//! client's SDK reads. Its own fields stay. Used on the rewritten path only (`Shaper`, `Folder`):
//! passthrough forwards the upstream's bytes untouched.

use bytes::Bytes;
use serde_json::Value;

use crate::conversation::answer::Usage;
use crate::sse::Event;

/// Adds `prompt_tokens_details.cached_tokens` when it is missing and the upstream named the
/// count otherwise; whether it changed anything.
pub fn normalize(usage: &mut Value) -> bool {
    if usage
        .pointer("/prompt_tokens_details/cached_tokens")
        .is_some()
    {
        return false;
    }
    let Some(cached) = Usage::cached_tokens_of(usage) else {
        return false;
    };
    let Some(usage) = usage.as_object_mut() else {
        return false;
    };
    let details = usage
        .entry("prompt_tokens_details")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    match details.as_object_mut() {
        Some(details) => {
            details.insert("cached_tokens".into(), cached.into());
            true
        }
        None => false,
    }
}

/// Searchers built once; only an event holding one of the other names is parsed. With its quotes
/// a name can only be a key of the chunk (inside the model's text the quotes are escaped).
static OTHER_NAMES: std::sync::LazyLock<[memchr::memmem::Finder<'static>; 2]> =
    std::sync::LazyLock::new(|| {
        [
            memchr::memmem::Finder::new(b"\"prompt_cache_hit_tokens\""),
            memchr::memmem::Finder::new(b"\"cached_tokens\""),
        ]
    });

/// The event with its chunk's `usage` normalized, `None` when it has nothing to change (the
/// event then goes as it came, byte for byte).
pub fn normalized_event(event: &Event) -> Option<Event> {
    let data = event.data.as_deref()?;
    if !OTHER_NAMES.iter().any(|name| name.find(data).is_some()) {
        return None;
    }
    let mut chunk: Value = serde_json::from_slice(data).ok()?;
    if !normalize(chunk.get_mut("usage")?) {
        return None;
    }
    let data = Bytes::from(serde_json::to_vec(&chunk).ok()?);
    let mut raw = Vec::with_capacity(data.len() + 8);
    raw.extend_from_slice(b"data: ");
    raw.extend_from_slice(&data);
    raw.extend_from_slice(b"\n\n");
    Some(Event {
        raw: Bytes::from(raw),
        data: Some(data),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(data: &str) -> Event {
        Event {
            raw: Bytes::from(format!("data: {data}\n\n")),
            data: Some(Bytes::from(data.to_owned())),
        }
    }

    #[test]
    fn deepseek_s_cache_hits_are_said_in_openai_s_words_too() {
        let chunk = r#"{"id":"c","choices":[],"usage":{"prompt_tokens":90,"completion_tokens":5,"total_tokens":95,"prompt_cache_hit_tokens":80,"prompt_cache_miss_tokens":10}}"#;
        let out = normalized_event(&event(chunk)).expect("changed");
        let expected = r#"{"id":"c","choices":[],"usage":{"prompt_tokens":90,"completion_tokens":5,"total_tokens":95,"prompt_cache_hit_tokens":80,"prompt_cache_miss_tokens":10,"prompt_tokens_details":{"cached_tokens":80}}}"#;
        assert_eq!(out.data.as_deref(), Some(expected.as_bytes()));
        assert_eq!(out.raw, format!("data: {expected}\n\n"));
    }

    #[test]
    fn openai_s_own_words_and_other_chunks_go_as_they_came() {
        for chunk in [
            r#"{"choices":[],"usage":{"prompt_tokens":9,"prompt_tokens_details":{"cached_tokens":8},"prompt_cache_hit_tokens":8}}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":9}}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"say \"cached_tokens\""}}]}"#,
            r#"{"choices":[],"usage":null,"cached_tokens":3}"#,
        ] {
            assert!(normalized_event(&event(chunk)).is_none(), "{chunk}");
        }
    }

    #[test]
    fn details_of_their_own_keep_their_fields() {
        let mut usage = serde_json::json!({"cached_tokens": 7,
            "prompt_tokens_details": {"audio_tokens": 0}});
        assert!(normalize(&mut usage));
        assert_eq!(
            usage["prompt_tokens_details"],
            serde_json::json!({"audio_tokens": 0, "cached_tokens": 7})
        );
    }
}
