//! The user's words always reach the model and the title (issue 29, item 1), as a property: for
//! every front (Chat, Responses, Messages, Gemini) and every client profile, a user message whose
//! text parts are an agent's context block and the typed words, in either order, reaches the
//! upstream through `opencode` with the words (quoted, as opencode quotes them) and without the
//! block, and the words are the title's input.

use bytes::Bytes;
use chrono::TimeZone;
use http::{HeaderMap, HeaderValue, Method};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};

use harness_proxy::clients::profiles::Profiles;
use harness_proxy::memory::facts::ConversationFacts;
use harness_proxy::protocols::{self, Inbound, Request};

use crate::gemini_golden::harness;

/// Context blocks real agents put in the user role beside the words (wire.md §1).
const CONTEXT: [&str; 4] = [
    "<session_context>\nThis is the Gemini CLI.\nMy operating system is: linux\n</session_context>",
    "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>",
    "<system-reminder>\nThe todo list is empty.\n</system-reminder>",
    "# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>\nBe terse.\n</INSTRUCTIONS>",
];

#[derive(Debug, Clone, Copy)]
enum Front {
    Chat,
    Responses,
    Messages,
    Gemini,
}

/// One user message of two text parts, `first` then `second`, in the front's own wire form.
fn request(front: Front, first: &str, second: &str) -> Value {
    match front {
        Front::Chat => json!({"model": "m", "stream": true, "messages": [{"role": "user",
            "content": [{"type": "text", "text": first}, {"type": "text", "text": second}]}]}),
        Front::Responses => json!({"model": "m", "stream": true, "input": [{"type": "message",
            "role": "user", "content": [{"type": "input_text", "text": first},
                {"type": "input_text", "text": second}]}]}),
        Front::Messages => json!({"model": "m", "max_tokens": 100, "stream": true,
            "messages": [{"role": "user", "content": [{"type": "text", "text": first},
                {"type": "text", "text": second}]}]}),
        Front::Gemini => json!({"contents": [{"role": "user",
            "parts": [{"text": first}, {"text": second}]}]}),
    }
}

fn parse(front: Front, body: &Value, headers: &HeaderMap) -> Inbound {
    let bytes = Bytes::from(serde_json::to_vec(body).unwrap());
    match front {
        Front::Chat => protocols::chat::request::parse(&bytes, headers),
        Front::Responses => protocols::responses::parse(&bytes, headers),
        Front::Messages => protocols::messages::parse(&bytes, headers),
        Front::Gemini => {
            let params = vec![
                ("model".to_owned(), "m".to_owned()),
                ("action".to_owned(), "streamGenerateContent".to_owned()),
            ];
            protocols::gemini::parse(&Request {
                method: &Method::POST,
                params: &params,
                query: Some("alt=sse"),
                headers,
                body: &bytes,
            })
        }
    }
    .expect("the request parses")
}

#[test]
fn every_front_and_profile_sends_the_user_s_words_and_titles_from_them() {
    let harness = harness();
    let profiles = Profiles::load(&[]).expect("built-in profiles");
    let names: Vec<String> = profiles.names().split(", ").map(str::to_owned).collect();
    let now = chrono::Utc
        .with_ymd_and_hms(2025, 11, 29, 12, 0, 0)
        .single()
        .unwrap();
    let cases = (
        "[a-z]{1,8}( [a-z]{1,8}){0,4}",
        0..CONTEXT.len(),
        any::<bool>(),
        proptest::sample::select(vec![
            Front::Chat,
            Front::Responses,
            Front::Messages,
            Front::Gemini,
        ]),
        proptest::sample::select(names),
    );
    TestRunner::new(Config::with_cases(256))
        .run(&cases, |(words, context, words_first, front, profile)| {
            let block = CONTEXT[context];
            let (first, second) = if words_first {
                (words.as_str(), block)
            } else {
                (block, words.as_str())
            };
            let mut headers = HeaderMap::new();
            headers.insert("x-harness-client", HeaderValue::from_str(&profile).unwrap());
            let inbound = parse(front, &request(front, first, second), &headers);
            let facts = ConversationFacts::from_conversation(&inbound.conversation);
            prop_assert_eq!(&facts.first_user_text, &words, "the title's input");
            let built = harness
                .build(inbound.conversation, &headers, now)
                .expect("the harness builds");
            let upstream: Value = serde_json::from_slice(&built.body.to_bytes()).unwrap();
            let users: Vec<&Value> = upstream["messages"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|m| m["role"] == "user")
                .collect();
            let quoted = json!(format!("\"{words}\""));
            prop_assert_eq!(users.len(), 1, "one user message: {:?}", users);
            prop_assert_eq!(&users[0]["content"], &quoted, "the words, quoted");
            prop_assert!(
                !upstream.to_string().contains(block.lines().next().unwrap()),
                "the context block is not user text upstream: {}",
                upstream
            );
            Ok(())
        })
        .unwrap();
}
