//! What the memo must do over every backend (memory, SQLite, Redis): two memos over one
//! backend are two replicas. Over a shared store the second finds what the first remembered,
//! per caller; over `memory` it finds nothing and asks nothing.

use std::sync::Arc;

use super::{MAX_ENTRY_BYTES, ReasoningMemo, SHARED_TTL, SharedMemo};
use crate::conversation::{CallInput, Item, Message, Role, ToolCall};

fn turn(call_id: &str) -> Vec<Item> {
    vec![
        Item::Message(Message::text(Role::User, "list")),
        Item::ToolCall(ToolCall {
            id: Some(call_id.to_owned()),
            name: "bash".to_owned(),
            input: CallInput::Arguments("{}".to_owned()),
        }),
    ]
}

fn reasoning(items: &[Item]) -> Option<String> {
    items.iter().find_map(|item| match item {
        Item::Reasoning(r) => Some(r.text.clone()),
        _ => None,
    })
}

/// What replica `memo` makes of a turn echoing `call_id` without reasoning, store included.
async fn recovered(memo: &ReasoningMemo, owner: &str, call_id: &str) -> (bool, Option<String>) {
    let mut items = turn(call_id);
    let misses = memo.recover(owner, &mut items);
    let asked = !misses.is_empty();
    memo.recover_shared(owner, &mut items, misses).await;
    (asked, reasoning(&items))
}

pub async fn run(backend: impl Fn() -> Option<Arc<dyn SharedMemo>>) {
    let shared = backend().is_some();
    let (one, two) = (ReasoningMemo::new(backend()), ReasoningMemo::new(backend()));
    one.remember(
        "alice",
        &["call_1".into(), "call_2".into()],
        "I will run ls.",
    );
    one.remember(
        "alice",
        &["call_big".into()],
        &"x".repeat(MAX_ENTRY_BYTES + 1),
    );
    one.remember("alice", &["call_plain".into()], "");
    one.settled().await;
    let ls = Some("I will run ls.".to_owned());

    assert_eq!(
        recovered(&one, "alice", "call_1").await,
        (false, ls.clone())
    );
    assert_eq!(
        recovered(&one, "alice", "call_plain").await,
        (false, None),
        "an answer without reasoning is known to have none"
    );
    let other_replica = if shared { ls.clone() } else { None };
    assert_eq!(
        recovered(&two, "alice", "call_2").await,
        (shared, other_replica.clone())
    );
    assert_eq!(
        recovered(&two, "alice", "call_2").await,
        (false, other_replica),
        "once found, the other replica keeps it: no second round trip"
    );
    assert_eq!(
        recovered(&two, "bob", "call_1").await,
        (shared, None),
        "scoped per caller"
    );
    assert_eq!(
        recovered(&two, "alice", "call_big").await.1,
        None,
        "too large"
    );

    let Some(store) = backend() else {
        return;
    };
    let keys = ["k-shared".to_owned(), "k-none".to_owned()];
    store
        .put(&keys[..1], "first", SHARED_TTL)
        .await
        .expect("put");
    store
        .put(&keys[..1], "shared", SHARED_TTL)
        .await
        .expect("put replaces");
    assert_eq!(
        store.get(&keys).await.expect("get"),
        [Some("shared".to_owned()), None]
    );
    store.prune().await.expect("prune");
}
