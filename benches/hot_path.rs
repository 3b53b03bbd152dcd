//! Micro-benchmarks of the proxy's own per-request and per-chunk work (no network):
//! - `harness_rewrite/*`: parse a client request and build a harness's upstream body (opencode at
//!   three sizes, pi and deepseek-tui beside it);
//! - `sse_shaper/*`: per streamed chunk cost of the reshaping path (decode + forward raw bytes);
//! - `fold/*`: folding a 200-chunk stream into one completion;
//! - `answer_tap/*`: the tap every rewritten answer goes through (the reasoning memo's reader),
//!   per chunk of a text answer that has no reasoning (the common case);
//! - `passthrough_end/*`: the passthrough body's watch for the end of a Chat Completions answer
//!   (per forwarded chunk of a text answer, its finish and `[DONE]`);
//! - `translate/*`: a `bash` call streamed in 256 argument pieces, held and sent to a Codex
//!   client as one `shell` call (the per-event cost of call translation).
//!
//! Run: `cargo bench --bench hot_path`. Targets: rewrite well under 100 µs for a typical request,
//! a few µs per chunk at most.

use bytes::Bytes;

// Measure with the allocator the binary ships with.
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use harness_proxy::config::Config;
use harness_proxy::harness::HarnessRequest;
use harness_proxy::memory::answer_witness::{self, Taps};
use harness_proxy::prompts::Prompts;
use harness_proxy::protocols::chat::request::parse_conversation;
use harness_proxy::protocols::chat::{Folder, Shaper};
use http::HeaderMap;
use serde_json::json;

fn request(turns: usize) -> Vec<u8> {
    let mut messages =
        vec![json!({"role": "system", "content": "You are a coding agent. ".repeat(200)})];
    for i in 0..turns {
        messages.push(json!({"role": "user", "content": format!("Step {i}: please look at src/lib.rs and fix the bug\nthanks")}));
        messages.push(json!({"role": "assistant", "content": "Looking.", "tool_calls": [
            {"id": format!("call_{i}"), "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"cat src/lib.rs\",\"description\":\"Show file\"}"}}
        ]}));
        messages.push(json!({"role": "tool", "tool_call_id": format!("call_{i}"), "content": "fn main() {}\n".repeat(40)}));
    }
    let tools: Vec<_> = ["bash", "read", "edit", "write", "glob", "grep"]
        .iter()
        .map(|n| json!({"type": "function", "function": {"name": n, "parameters": {"type": "object", "properties": {}}}}))
        .collect();
    serde_json::to_vec(&json!({"model": "m", "stream": true, "messages": messages, "tools": tools}))
        .expect("json")
}

fn rewrite(c: &mut Criterion) {
    let config = Config::default();
    let prompts = Prompts::load(None).expect("prompts");
    let registry = harness_proxy::state::build_registry(
        &config,
        &prompts,
        &harness_proxy::state::Host::bare(),
    )
    .expect("registry");
    let headers = HeaderMap::new();
    // opencode at three sizes; pi and deepseek-tui (84 tools, the largest set) beside it at 10.
    let cases = [
        ("opencode", 1usize),
        ("opencode", 10),
        ("opencode", 50),
        ("pi", 10),
        ("deepseek-tui", 10),
    ];
    // The socket bench's 32 KB agent turn (Codex's tools), through each of the three.
    let turn = Bytes::from_static(include_bytes!("../bench/fixtures/codex-turn-32k.json"));
    let mut inputs: Vec<(&str, String, Bytes)> = cases
        .iter()
        .map(|&(name, turns)| (name, format!("{turns}_turns"), Bytes::from(request(turns))))
        .collect();
    for name in ["opencode", "pi", "deepseek-tui"] {
        inputs.push((name, "codex_turn_32k".to_owned(), turn.clone()));
    }
    let mut group = c.benchmark_group("harness_rewrite");
    for (name, case, body) in &inputs {
        let harness = registry.get(name).expect("a built-in harness");
        group.throughput(Throughput::Bytes(body.len() as u64));
        group.bench_with_input(BenchmarkId::new(*name, case), body, |b, body| {
            b.iter(|| {
                harness
                    .prepare(HarnessRequest {
                        conversation: parse_conversation(body).expect("parses"),
                        chat_body: Some(body),
                        headers: &headers,
                        now: chrono::Utc::now(),
                    })
                    .expect("prepares")
            });
        });
    }
    group.finish();

    let mut group = c.benchmark_group("opencode_parse_only");
    for turns in [1usize, 10, 50] {
        let body = Bytes::from(request(turns));
        group.throughput(Throughput::Bytes(body.len() as u64));
        group.bench_with_input(
            BenchmarkId::from_parameter(format!("{turns}_turns")),
            &body,
            |b, body| {
                b.iter(|| parse_conversation(body).expect("parses"));
            },
        );
    }
    group.finish();
}

fn chunk(i: usize) -> String {
    format!(
        "data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\"token{i} \"}},\"finish_reason\":null}}]}}\n\n"
    )
}

/// `chunks` read as a stream to their end: through the byte tap, its witness feeding what `taps`
/// makes, or untapped (`None`, the baseline).
fn tapped(b: &mut criterion::Bencher<'_>, chunks: &[Bytes], taps: impl Fn() -> Option<Taps>) {
    use futures_util::StreamExt;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    b.iter(|| {
        let items = futures_util::stream::iter(
            chunks
                .iter()
                .cloned()
                .map(Ok::<_, std::convert::Infallible>),
        );
        match taps() {
            Some(taps) => {
                let witness = answer_witness::AnswerWitness::new(taps, true);
                runtime.block_on(witness.tap(items, true).count())
            }
            None => runtime.block_on(items.count()),
        }
    });
}

fn shaper(c: &mut Criterion) {
    let chunks: Vec<Bytes> = (0..200).map(|i| Bytes::from(chunk(i))).collect();
    let mut group = c.benchmark_group("sse_shaper");
    group.throughput(Throughput::Elements(chunks.len() as u64));
    group.bench_function("200_text_chunks", |b| {
        b.iter(|| {
            let mut shaper = Shaper::new(false);
            let mut out = Vec::with_capacity(4);
            for chunk in &chunks {
                shaper.push(chunk, &mut out).expect("small events");
                out.clear();
            }
        });
    });
    group.finish();

    let mut group = c.benchmark_group("answer_tap");
    group.throughput(Throughput::Elements(chunks.len() as u64));
    group.bench_function("200_text_chunks_untapped", |b| tapped(b, &chunks, || None));
    group.bench_function("200_text_chunks_memo_only", |b| {
        let memo =
            std::sync::Arc::new(harness_proxy::memory::reasoning_memo::ReasoningMemo::default());
        tapped(b, &chunks, || {
            Some(Taps {
                anchor: None,
                memo: Some(answer_witness::MemoSink {
                    memo: memo.clone(),
                    owner: "owner".to_owned(),
                }),
                answer: None,
            })
        });
    });
    // An id-less turn: the anchor reads every event's text (the exchange's digest).
    group.bench_function("200_text_chunks_anchored", |b| {
        let anchors = std::sync::Arc::new(harness_proxy::memory::anchors::Anchors::new(1024));
        tapped(b, &chunks, || {
            Some(Taps {
                anchor: Some(answer_witness::Anchor {
                    anchors: anchors.clone(),
                    owner: "owner".to_owned(),
                    conversation: "conversation".to_owned(),
                    user_text: "fix the bug".to_owned(),
                }),
                memo: None,
                answer: None,
            })
        });
    });
    group.finish();

    let mut ended: Vec<Bytes> = chunks.clone();
    ended.push(Bytes::from_static(
        b"data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
    ));
    ended.push(Bytes::from_static(b"data: [DONE]\n\n"));
    let mut group = c.benchmark_group("passthrough_end");
    group.throughput(Throughput::Elements(ended.len() as u64));
    group.bench_function("200_text_chunks", |b| {
        b.iter(|| {
            let mut watch = harness_proxy::protocols::chat::EndWatch::new(
                harness_proxy::sse::DEFAULT_MAX_EVENT_BYTES,
            );
            let mut seen = false;
            for chunk in &ended {
                seen |= watch.observe(chunk);
            }
            assert!(seen && watch.finish());
        });
    });
    group.finish();

    let mut group = c.benchmark_group("fold");
    group.throughput(Throughput::Elements(chunks.len() as u64));
    group.bench_function("200_text_chunks", |b| {
        b.iter(|| {
            let mut folder = Folder::new();
            for chunk in &chunks {
                folder.push(chunk).expect("valid");
            }
            // A stream without its end does not fold (`FoldError::Unfinished`).
            folder.push(b"data: [DONE]\n\n").expect("valid");
            folder.finish("m").expect("folds")
        });
    });
    group.finish();
}

fn call_piece(head: bool, args: &str) -> String {
    let mut call = json!({"index": 0, "function": {"arguments": args}});
    if head {
        call["id"] = json!("call_1");
        call["type"] = json!("function");
        call["function"]["name"] = json!("bash");
    }
    format!(
        "data: {}\n\n",
        json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "m", "choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": null}]})
    )
}

fn translate(c: &mut Criterion) {
    use harness_proxy::clients::bridge::Bridge;
    use harness_proxy::clients::profiles::Profiles;
    use std::sync::Arc;
    let mut events = vec![Bytes::from(call_piece(true, ""))];
    events.push(Bytes::from(call_piece(false, "{\"command\":\"")));
    events.extend((0..254).map(|i| Bytes::from(call_piece(false, &format!("echo {i} ")))));
    events.push(Bytes::from(call_piece(false, "\"}")));
    events.push(Bytes::from(
        "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
    ));
    events.push(Bytes::from_static(b"data: [DONE]\n\n"));
    let mapper: Arc<dyn harness_proxy::protocols::chat::CallMapper> = Arc::new(Bridge::open(
        Profiles::built_in("codex"),
        &["shell", "update_plan"],
    ));
    let mut group = c.benchmark_group("translate");
    group.throughput(Throughput::Elements(events.len() as u64));
    group.bench_function("bash_call_256_pieces", |b| {
        b.iter(|| {
            let mut shaper = Shaper::new(false).with_calls(mapper.clone());
            let mut out = Vec::with_capacity(4);
            for event in &events {
                shaper.push(event, &mut out).expect("small events");
            }
            shaper.finish(&mut out);
            assert_eq!(out.len(), 3, "one call, the finish, [DONE]");
        });
    });
    group.finish();
}

criterion_group!(benches, rewrite, shaper, translate);
criterion_main!(benches);
