//! The memo contract's part for a Messages upstream's reasoning (issue 34), over every backend:
//! what a Chat or Gemini client cannot echo — the server's signature of the thinking and its
//! redacted thinking — comes back with the text, on this replica and on another, scoped per
//! caller; every byte of it counts against the bounds; an answer whose only reasoning is
//! redacted is remembered, not noted as "nothing".

use std::sync::Arc;

use super::contract::{replica, turn};
use super::{
    Bounds, Echoed, LOCAL_BOUNDS, ReasoningMemo, STORE_BOUNDS, SharedMemo, Thought, Usage,
};
use crate::conversation::{Item, Reasoning};

fn signed(text: &str) -> Thought {
    Thought {
        text: text.to_owned(),
        signature: Some(format!("EqQB{text}sig==")),
        redacted: vec![format!("EnC{text}1"), format!("EnC{text}2")],
    }
}

/// The reasoning item a turn echoing `call_id` bare gets from `memo`, store included.
async fn recovered(memo: &ReasoningMemo, owner: &str, call_id: &str) -> Option<Reasoning> {
    let mut items = turn(call_id);
    let misses = memo.recover(owner, &mut items, Echoed::Sign);
    memo.recover_shared(owner, &mut items, misses).await;
    items.into_iter().find_map(|item| match item {
        Item::Reasoning(r) => Some(r),
        _ => None,
    })
}

pub async fn run(backend: &impl Fn(Bounds) -> Option<Arc<dyn SharedMemo>>) {
    signature_and_redacted_thinking_come_back(backend).await;
    their_bytes_count_against_the_bounds(backend).await;
}

async fn signature_and_redacted_thinking_come_back(
    backend: &impl Fn(Bounds) -> Option<Arc<dyn SharedMemo>>,
) {
    let shared = backend(STORE_BOUNDS).is_some();
    let (one, two) = (
        replica(LOCAL_BOUNDS, backend(STORE_BOUNDS)),
        replica(LOCAL_BOUNDS, backend(STORE_BOUNDS)),
    );
    let thought = signed("Need ls.");
    let redacted_only = Thought {
        redacted: vec!["EnCrYpTeDoNlY".to_owned()],
        ..Thought::default()
    };
    one.remember("fay", &["sig_1".into()], thought.clone());
    one.remember("fay", &["red_1".into()], redacted_only.clone());
    one.settled().await;

    let expected = |t: &Thought| Some(t.to_reasoning());
    assert_eq!(recovered(&one, "fay", "sig_1").await, expected(&thought));
    assert_eq!(
        recovered(&one, "fay", "red_1").await,
        expected(&redacted_only),
        "redacted thinking alone is reasoning to give back"
    );
    let there = |t: &Thought| if shared { expected(t) } else { None };
    assert_eq!(recovered(&two, "fay", "sig_1").await, there(&thought));
    assert_eq!(recovered(&two, "fay", "red_1").await, there(&redacted_only));
    assert_eq!(recovered(&two, "gus", "sig_1").await, None, "per caller");
    if let Some(store) = backend(STORE_BOUNDS) {
        let keys = [super::key("fay", "sig_1"), super::key("fay", "red_1")];
        assert_eq!(
            store.get("fay", &keys).await.expect("get"),
            [Some(thought), Some(redacted_only)]
        );
    }
}

/// A bound with room for two answers' text but not for their signatures and redacted thinking
/// keeps only the newest answer: the memo counts all it holds, here and in the store.
async fn their_bytes_count_against_the_bounds(
    backend: &impl Fn(Bounds) -> Option<Arc<dyn SharedMemo>>,
) {
    let (first, second) = (signed("one"), signed("two"));
    let room = Usage {
        bytes: Usage::of_answer(first.bytes(), 1).bytes + Usage::of_answer(3, 1).bytes,
        rows: 1_000,
    };
    let bounds = Bounds {
        caller: room,
        total: room,
    };
    let memo = replica(bounds, backend(bounds));
    // Settled one by one: writes in flight at once reach the store in any order.
    memo.remember("hal", &["b1".into()], first);
    memo.settled().await;
    memo.remember("hal", &["b2".into()], second.clone());
    memo.settled().await;
    assert_eq!(
        memo.local_usage(),
        Usage::of_answer(second.bytes(), 1),
        "the first went: its signature and redacted thinking were counted"
    );
    assert_eq!(recovered(&memo, "hal", "b1").await, None);
    if let Some(store) = backend(bounds) {
        let keys = [super::key("hal", "b1"), super::key("hal", "b2")];
        assert_eq!(
            store.get("hal", &keys).await.expect("get"),
            [None, Some(second)],
            "in the store too"
        );
    }
}
