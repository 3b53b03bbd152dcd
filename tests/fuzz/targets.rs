//! The four targets and what each must hold for every input: the SSE decoder gives the same
//! events however its input is split; the opencode rewrite never panics and answers valid JSON or
//! an error; tool-argument reserialisation keeps JSON valid; the title sanitizer keeps its clamp.

use harness_proxy::clients::args::reserialize_arguments;
use harness_proxy::clients::profiles::Profiles;
use harness_proxy::config::OpencodeConfig;
use harness_proxy::harness::collaboration::Collaboration;
use harness_proxy::harness::opencode::Opencode;
use harness_proxy::harness::opencode::tools::HostInfo;
use harness_proxy::harness::{Harness, HarnessRequest};
use harness_proxy::prompts::Prompts;
use harness_proxy::protocols::chat::request::parse_conversation;
use harness_proxy::sse::{Decoder, Event};
use harness_proxy::titles::sanitize::sanitize_title;
use proptest::prelude::*;
use proptest::sample::Index;

use crate::strategies;
use crate::{corpus, fuzz};

fn decode(chunks: &[&[u8]]) -> Vec<Event> {
    let mut decoder = Decoder::new();
    let mut events = Vec::new();
    for chunk in chunks {
        decoder.push(chunk);
        while let Some(event) = decoder
            .next_event()
            .expect("fuzz inputs stay far below the default event limit")
        {
            events.push(event);
        }
    }
    events.extend(decoder.finish());
    events
}

fn split<'a>(bytes: &'a [u8], cuts: &[Index]) -> Vec<&'a [u8]> {
    let mut at: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
    at.sort_unstable();
    let mut chunks = Vec::new();
    let mut start = 0;
    for cut in at {
        chunks.push(&bytes[start..cut]);
        start = cut;
    }
    chunks.push(&bytes[start..]);
    chunks
}

pub fn sse() {
    let seeds = corpus("sse");
    let inputs = prop_oneof![strategies::sse_bytes(), strategies::mutated(seeds.clone()),];
    let cases: Vec<(Vec<u8>, Vec<Index>)> = seeds.iter().map(|s| (s.clone(), Vec::new())).collect();
    fuzz(
        "sse",
        &cases,
        (inputs, strategies::splits()),
        |(bytes, cuts)| {
            let whole = decode(&[bytes]);
            let pieces = decode(&split(bytes, cuts));
            assert_eq!(whole, pieces, "the split changed the events");
            // Every byte is in exactly one event's raw bytes.
            let raw: usize = whole.iter().map(|e| e.raw.len()).sum();
            assert!(raw <= bytes.len());
        },
    );
}

fn opencode_harness() -> Opencode {
    let config = OpencodeConfig {
        platform: Some("linux".to_owned()),
        timezone: Some("UTC".to_owned()),
        ..OpencodeConfig::default()
    };
    let prompts = Prompts::load(None).unwrap();
    let collaboration = Collaboration::from_prompts(&prompts, false);
    let host = HostInfo {
        shell: None,
        temp_dir: "/tmp".to_owned(),
        utc_offset: chrono::FixedOffset::east_opt(0).unwrap(),
    };
    Opencode::new(
        &config,
        &prompts,
        host,
        Profiles::load(&[]).unwrap(),
        collaboration,
        "https://api.openai.com/v1",
    )
    .unwrap()
}

pub fn opencode() {
    let harness = opencode_harness();
    let seeds = corpus("opencode");
    let bodies = prop_oneof![
        3 => strategies::chat_request(),
        1 => strategies::mutated(seeds.clone()),
        1 => strategies::any_json().prop_map(|v| serde_json::to_vec(&v).unwrap()),
    ];
    let cases: Vec<_> = seeds.iter().map(|s| (s.clone(), Vec::new())).collect();
    let now = chrono::DateTime::from_timestamp(1_764_417_600, 0).unwrap();
    fuzz(
        "opencode",
        &cases,
        (bodies, strategies::headers()),
        |(body, headers)| {
            let mut map = http::HeaderMap::new();
            for (name, value) in headers {
                if let Ok(value) = http::HeaderValue::from_str(value) {
                    map.append(*name, value);
                }
            }
            let body = bytes::Bytes::from(body.clone());
            let Ok(conversation) = parse_conversation(&body) else {
                return;
            };
            let request = HarnessRequest {
                conversation,
                chat_body: Some(&body),
                headers: &map,
                now,
            };
            if let Ok(prepared) = harness.prepare(request) {
                let parsed: serde_json::Value =
                    serde_json::from_slice(&prepared.upstream_body.to_bytes())
                        .expect("the upstream body is JSON");
                assert!(parsed["messages"].is_array(), "{parsed}");
            }
        },
    );
}

pub fn args() {
    let seeds: Vec<(String, String)> = corpus("args")
        .iter()
        .map(|seed| {
            let text = String::from_utf8_lossy(seed).into_owned();
            let (tool, arguments) = text.split_once('\n').unwrap_or((&text, ""));
            (tool.to_owned(), arguments.to_owned())
        })
        .collect();
    let tools = prop_oneof![
        Just("bash".to_owned()),
        Just("read".to_owned()),
        Just("edit".to_owned()),
        Just("write".to_owned()),
        Just("todowrite".to_owned()),
        Just("grep".to_owned()),
        Just("glob".to_owned()),
        Just("task".to_owned()),
        "[a-z]{0,6}",
    ];
    fuzz(
        "args",
        &seeds,
        (tools, strategies::arguments()),
        |(tool, arguments)| {
            let out = reserialize_arguments(tool, arguments);
            if serde_json::from_str::<serde_json::Value>(arguments).is_ok() {
                assert!(
                    serde_json::from_str::<serde_json::Value>(&out).is_ok(),
                    "JSON in, not JSON out: {out}"
                );
            } else {
                assert_eq!(
                    &out, arguments,
                    "text that is not JSON is replayed verbatim"
                );
            }
        },
    );
}

pub fn title() {
    let seeds: Vec<(String, usize)> = corpus("title")
        .iter()
        .flat_map(|seed| {
            let text = String::from_utf8_lossy(seed).into_owned();
            [(text.clone(), 50), (text.clone(), 5), (text, 0)]
        })
        .collect();
    let raw = prop_oneof![
        strategies::text(),
        any::<String>(),
        proptest::collection::vec(strategies::text(), 0..5).prop_map(|parts| parts.join("\n")),
    ];
    fuzz("title", &seeds, (raw, 0usize..80), |(raw, max)| {
        if let Some(title) = sanitize_title(raw, *max) {
            assert!(!title.is_empty());
            assert!(title.chars().count() <= *max, "{title:?} over {max}");
            assert!(!title.contains(['\n', '\r']), "{title:?}");
        }
    });
}

/// The answer rules of the three text-protocol harnesses (swe-agent's extraction and editor
/// lines, terminus-2's JSON and keystrokes, mini-swe-agent's rule): for any answer, no panic, and
/// every action's candidate calls carry a JSON object.
pub fn text_actions() {
    use harness_proxy::conversation::action::{Answer, Attempts, Verdict};
    use harness_proxy::conversation::mapping::ResponsePlan;
    let prompts = Prompts::load(None).unwrap();
    let config = harness_proxy::config::Config::default();
    let registry = harness_proxy::harness::Registry::build(&harness_proxy::harness::Setup {
        config: &config,
        prompts: &prompts,
        host: HostInfo {
            shell: None,
            temp_dir: "/tmp".to_owned(),
            utc_offset: chrono::FixedOffset::east_opt(0).unwrap(),
        },
        profiles: Profiles::load(&[]).unwrap(),
    })
    .unwrap();
    let body = bytes::Bytes::from_static(br#"{"model":"m","messages":[{"role":"system","content":"Working directory: /w"},{"role":"user","content":"fix"}],"tools":[{"type":"function","function":{"name":"bash","parameters":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}}},{"type":"function","function":{"name":"read","parameters":{"type":"object","properties":{"filePath":{"type":"string"}},"required":["filePath"]}}}]}"#);
    let now = chrono::DateTime::from_timestamp(1_764_417_600, 0).unwrap();
    let readers: Vec<_> = ["swe-agent", "terminus-2", "mini-swe-agent"]
        .iter()
        .map(|name| {
            let prepared = registry
                .get(name)
                .unwrap()
                .prepare(HarnessRequest {
                    conversation: parse_conversation(&body).unwrap(),
                    chat_body: Some(&body),
                    headers: &http::HeaderMap::new(),
                    now,
                })
                .unwrap();
            match prepared.response {
                ResponsePlan::Reshape(reshape) => reshape.actions.unwrap(),
                ResponsePlan::Passthrough => unreachable!("a text harness rewrites"),
            }
        })
        .collect();
    let seeds: Vec<String> = corpus("text_actions")
        .iter()
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect();
    let inputs = prop_oneof![
        3 => strategies::action_text(),
        1 => strategies::mutated(corpus("text_actions"))
            .prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
    ];
    fuzz("text_actions", &seeds, inputs, |text| {
        for reader in &readers {
            for attempts in [
                Attempts::default(),
                Attempts {
                    corrections: 3,
                    confirmations: 1,
                },
            ] {
                let verdict = reader.read(&Answer { text, calls: &[] }, attempts);
                if let Verdict::Act(calls) = verdict {
                    assert!(!calls.is_empty(), "an action with no call");
                    for call in calls {
                        let args: serde_json::Value =
                            serde_json::from_str(&call.arguments).expect("JSON arguments");
                        assert!(args.is_object(), "{args}");
                    }
                }
            }
        }
    });
}
