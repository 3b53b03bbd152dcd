use super::*;
use crate::conversation::{CallInput, Message, Reasoning, Role, ToolCall};

fn call(id: &str) -> Item {
    Item::ToolCall(ToolCall {
        id: Some(id.to_owned()),
        name: "bash".to_owned(),
        input: CallInput::Arguments("{}".to_owned()),
    })
}

fn reasoning_of(items: &[Item]) -> Vec<(usize, String)> {
    items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| match item {
            Item::Reasoning(r) => Some((i, r.text.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn satisfies_the_memo_contract_in_memory() {
    super::contract::run(|_| None, None).await;
}

#[test]
fn a_turn_without_reasoning_gets_what_its_answer_had_before_its_text() {
    let memo = ReasoningMemo::default();
    memo.remember("a", &["call_1".into(), "call_2".into()], "I will run ls.");
    let mut items = vec![
        Item::Message(Message::text(Role::User, "list")),
        Item::Message(Message::text(Role::Assistant, "Listing.")),
        call("call_1"),
        call("call_2"),
    ];
    memo.recover("a", &mut items, Echoed::Sign);
    assert_eq!(reasoning_of(&items), [(1, "I will run ls.".to_owned())]);
    assert_eq!(items.len(), 5);
}

#[test]
fn an_echoed_text_without_its_signature_gets_the_signature_the_server_gave_it() {
    let memo = ReasoningMemo::default();
    let signed = Thought {
        text: "I will run ls.".into(),
        signature: Some("c2lnbmVk".into()),
        redacted: vec!["cmVkYWN0ZWQ=".into()],
    };
    memo.remember("a", &["call_1".into()], signed.clone());
    memo.remember("a", &["call_2".into()], signed);
    let echo = |text: &str, id: &str| {
        vec![
            Item::Reasoning(Reasoning {
                text: text.into(),
                ..Reasoning::default()
            }),
            call(id),
        ]
    };
    let mut same = echo("I will run ls.", "call_1");
    memo.recover("a", &mut same, Echoed::Sign);
    let Item::Reasoning(r) = &same[0] else {
        panic!("the reasoning stays first: {same:?}")
    };
    assert_eq!(r.signature.as_deref(), Some("c2lnbmVk"));
    assert_eq!(r.redacted, ["cmVkYWN0ZWQ="]);
    assert_eq!(same.len(), 2, "completed in place, not added");
    // For a Chat upstream, which checks no signature, the echo goes as it came.
    let mut over_chat = echo("I will run ls.", "call_1");
    memo.recover("a", &mut over_chat, Echoed::Leave);
    let Item::Reasoning(r) = &over_chat[0] else {
        panic!("the reasoning stays first: {over_chat:?}")
    };
    assert_eq!((r.signature.as_deref(), r.redacted.len()), (None, 0));
    // Text the server did not sign gets no signature (it would no longer match).
    let mut edited = echo("I will run ls -la.", "call_2");
    memo.recover("a", &mut edited, Echoed::Sign);
    let Item::Reasoning(r) = &edited[0] else {
        panic!("the reasoning stays first: {edited:?}")
    };
    assert_eq!((r.signature.as_deref(), r.redacted.len()), (None, 0));
    // Another caller's echo of the same call id finds nothing.
    let mut theirs = echo("I will run ls.", "call_1");
    memo.recover("b", &mut theirs, Echoed::Sign);
    let Item::Reasoning(r) = &theirs[0] else {
        panic!("the reasoning stays first: {theirs:?}")
    };
    assert_eq!(r.signature, None);
}

#[test]
fn echoed_reasoning_wins_and_another_caller_finds_nothing() {
    let memo = ReasoningMemo::default();
    memo.remember("a", &["call_1".into()], "remembered");
    let echoed = vec![
        Item::Reasoning(Reasoning {
            text: "echoed".into(),
            ..Reasoning::default()
        }),
        call("call_1"),
    ];
    let mut items = echoed.clone();
    memo.recover("a", &mut items, Echoed::Sign);
    assert_eq!(items, echoed);
    let mut theirs = vec![call("call_1")];
    memo.recover("b", &mut theirs, Echoed::Sign);
    assert_eq!(reasoning_of(&theirs), []);
}

#[test]
fn the_oldest_reasoning_goes_first_past_the_byte_bound() {
    let room = Usage::of_answer(10, 1);
    let bounds = Bounds {
        caller: room,
        total: room,
    };
    let memo = ReasoningMemo::with_bounds(bounds, None);
    memo.remember("a", &["one".into()], "123456");
    memo.remember("a", &["two".into()], "abcdef");
    let mut items = vec![call("one"), Item::ToolResult(result("one")), call("two")];
    memo.recover("a", &mut items, Echoed::Sign);
    assert_eq!(reasoning_of(&items), [(2, "abcdef".to_owned())]);
}

/// A full memo drops its oldest and says so, by the bound that was full. (A recorder of
/// this test's own, on this thread.)
#[test]
fn what_a_full_memo_drops_is_counted() {
    let answer = Usage::of_answer(2, 1);
    let bounds = Bounds {
        caller: answer,
        total: Usage {
            bytes: 2 * answer.bytes,
            rows: 2 * answer.rows,
        },
    };
    let recorder = metrics_exporter_prometheus::PrometheusBuilder::new().build_recorder();
    let handle = recorder.handle();
    metrics::with_local_recorder(&recorder, || {
        let memo = ReasoningMemo::with_bounds(bounds, None);
        memo.remember("alice", &["a1".into()], "a1");
        memo.remember("alice", &["a2".into()], "a2");
        memo.remember("bob", &["b1".into()], "b1");
        memo.remember("carol", &["c1".into()], "c1");
    });
    let text = handle.render();
    for (bound, count) in [("caller", 1), ("total", 1)] {
        let series = format!(
            "harness_proxy_reasoning_memo_evicted_total{{memo=\"local\",bound=\"{bound}\"}} {count}"
        );
        assert!(text.contains(&series), "{series}\n{text}");
    }
}

/// A store that fails every write and never answers a read.
struct Broken;

#[async_trait::async_trait]
impl SharedMemo for Broken {
    async fn put(&self, _: Entry<'_>, _: Duration) -> Result<Evicted, StoreError> {
        Err(StoreError::Unavailable("down".into()))
    }
    async fn get(&self, _: &str, _: &[String]) -> Result<Vec<Option<Thought>>, StoreError> {
        std::future::pending().await
    }
    async fn prune(&self) -> Result<u64, StoreError> {
        Err(StoreError::Unavailable("down".into()))
    }
}

#[tokio::test(start_paused = true)]
async fn a_failing_or_silent_store_means_nothing_found_after_the_read_timeout() {
    let memo = ReasoningMemo::new(Some(Arc::new(Broken)));
    memo.remember("a", &["mine".into()], "kept here");
    memo.settled().await;
    let mut items = vec![
        call("mine"),
        Item::ToolResult(result("mine")),
        call("theirs"),
    ];
    let misses = memo.recover("a", &mut items, Echoed::Sign);
    assert_eq!(reasoning_of(&items), [(0, "kept here".to_owned())]);
    let asked = tokio::time::Instant::now();
    memo.recover_shared("a", &mut items, misses).await;
    assert_eq!(asked.elapsed(), READ_TIMEOUT);
    assert_eq!(reasoning_of(&items), [(0, "kept here".to_owned())]);
    assert!(memo.prune().await.is_err(), "upkeep logs it; nothing else");
}

fn result(id: &str) -> crate::conversation::ToolResult {
    crate::conversation::ToolResult {
        call_id: Some(id.to_owned()),
        content: crate::conversation::Content::Text("ok".to_owned()),
        is_error: false,
    }
}
