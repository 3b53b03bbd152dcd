//! Property tests of the Responses renderer: the upstream's bytes may arrive in any split, and the
//! client must get the same events, with sequence numbers 0, 1, 2, … and every item closed.

use bytes::Bytes;
use http::HeaderMap;
use proptest::prelude::*;
use serde_json::Value;

use super::{Stamp, parse_with};
use crate::protocols::ChatAnswerReader;

const REQUEST: &str = r#"{"model":"m","input":"go","stream":true,"tools":[{"type":"function","name":"exec_command"},{"type":"custom","name":"apply_patch"}]}"#;

const STREAM: &str = concat!(
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"reasoning_content\":\"think \"}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"more\"}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Héllo \"}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"wörld\"}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"exec_command\",\"arguments\":\"{\\\"cmd\\\":\"}}]}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"ls\\\"}\"}}]}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"id\":\"c2\",\"function\":{\"name\":\"apply_patch\",\"arguments\":\"{\\\"input\\\":\\\"*** Begin Patch\\\\n\"}}]}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":1,\"function\":{\"arguments\":\"*** End Patch\\\"}\"}}]}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4}}\n\n",
    "data: [DONE]\n\n",
);

fn render(pieces: &[&[u8]]) -> Vec<Bytes> {
    let stamp = Stamp {
        id: "resp_p".into(),
        created_at: 1,
    };
    let inbound = parse_with(REQUEST.as_bytes(), &HeaderMap::new(), stamp).expect("parses");
    let mut renderer = inbound.renderer.expect("the Responses front renders");
    let mut out = Vec::new();
    renderer.start(&mut out);
    let mut reader = ChatAnswerReader::new();
    let mut events = Vec::new();
    for piece in pieces {
        reader.push(piece, &mut events);
        for event in events.drain(..) {
            renderer.event(event, &mut out);
        }
    }
    reader.finish(&mut events);
    for event in events {
        renderer.event(event, &mut out);
    }
    out
}

#[test]
fn the_whole_stream_renders_every_item_closed_and_numbered() {
    let frames = render(&[STREAM.as_bytes()]);
    let mut added = 0;
    let mut done = 0;
    for (i, frame) in frames.iter().enumerate() {
        let text = std::str::from_utf8(frame).expect("utf8");
        let data = text
            .lines()
            .find_map(|l| l.strip_prefix("data: "))
            .expect("data line");
        let data: Value = serde_json::from_str(data).expect("JSON");
        assert_eq!(data["sequence_number"], Value::from(i));
        added += usize::from(data["type"] == "response.output_item.added");
        done += usize::from(data["type"] == "response.output_item.done");
    }
    assert_eq!(
        (added, done),
        (4, 4),
        "reasoning, message, function, custom"
    );
    let last = std::str::from_utf8(frames.last().expect("frames")).expect("utf8");
    assert!(last.starts_with("event: response.completed\n"), "{last}");
}

proptest! {
    #[test]
    fn any_split_of_the_upstream_bytes_renders_the_same(cuts in proptest::collection::vec(0..STREAM.len(), 0..12)) {
        let bytes = STREAM.as_bytes();
        let pieces = crate::protocols::split_at(bytes, cuts);
        prop_assert_eq!(render(&pieces), render(&[bytes]));
    }
}

/// The reasoning item of `response.completed` for `request`, rendered with a seal key.
fn completed_reasoning(request: &str) -> Value {
    use crate::conversation::seal::ReasoningSeal;
    let stamp = Stamp {
        id: "resp_s".into(),
        created_at: 1,
    };
    let inbound = parse_with(request.as_bytes(), &HeaderMap::new(), stamp).expect("parses");
    let mut renderer = inbound.renderer.expect("the Responses front renders");
    renderer.seal_reasoning(std::sync::Arc::new(ReasoningSeal::from_secret("k")));
    let mut out = Vec::new();
    renderer.start(&mut out);
    let mut reader = ChatAnswerReader::new();
    let mut events = Vec::new();
    reader.push(STREAM.as_bytes(), &mut events);
    reader.finish(&mut events);
    for event in events {
        renderer.event(event, &mut out);
    }
    let last = std::str::from_utf8(out.last().expect("frames")).expect("utf8");
    let data: Value = serde_json::from_str(
        last.lines()
            .find_map(|l| l.strip_prefix("data: "))
            .expect("data line"),
    )
    .expect("JSON");
    data["response"]["output"][0].clone()
}

#[test]
fn encrypted_content_is_the_sealed_reasoning_only_when_included() {
    use crate::conversation::seal::ReasoningSeal;
    let asked = REQUEST.replacen('{', r#"{"include":["reasoning.encrypted_content"],"#, 1);
    let item = completed_reasoning(&asked);
    assert_eq!(item["type"], "reasoning");
    let sealed = item["encrypted_content"]
        .as_str()
        .expect("encrypted_content");
    assert_eq!(
        ReasoningSeal::from_secret("k").open(sealed).as_deref(),
        Some("think more")
    );
    assert!(
        completed_reasoning(REQUEST)
            .get("encrypted_content")
            .is_none()
    );
}
