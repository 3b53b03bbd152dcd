//! The behaviour every backend must show; each backend's tests run it (Redis's against the real
//! server, under its own key prefix).

use std::sync::Arc;

use chrono::{DateTime, TimeZone, Utc};

use super::{Cursor, Status, TitleRecord, TitleStore};

pub fn at(second: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_700_000_000 + second, 0)
        .single()
        .expect("valid time")
}

pub fn record(owner: &str, id: &str, second: i64) -> TitleRecord {
    TitleRecord {
        owner: owner.into(),
        id: id.into(),
        title: None,
        status: Status::Pending,
        error: None,
        model: "m".into(),
        harness: "opencode".into(),
        created_at: at(second),
        updated_at: at(second),
        instance: "proc-a".into(),
        text: String::new(),
        protocol: "chat".into(),
    }
}

fn ids(records: Vec<TitleRecord>) -> Vec<String> {
    records.into_iter().map(|r| r.id).collect()
}

pub async fn run(store: Arc<dyn TitleStore>) {
    claims_are_atomic(store.clone()).await;
    records_read_list_and_page(store.as_ref()).await;
    recovery_respects_leases(store.as_ref()).await;
    withdrawing_takes_back_only_an_own_pending_claim(store.as_ref()).await;
    a_fresh_record_is_written_pending_and_never_over_another(store.as_ref()).await;
    store.ping().await.expect("ping");
}

/// Twenty claims of one conversation at once: exactly one wins.
async fn claims_are_atomic(store: Arc<dyn TitleStore>) {
    let mut tasks = Vec::new();
    for n in 0..20 {
        let store = store.clone();
        tasks.push(tokio::spawn(async move {
            let mut r = record("racer", "same", 0);
            r.instance = format!("proc-{n}");
            store.claim(&r).await.expect("claim")
        }));
    }
    let mut won = 0;
    for task in tasks {
        won += usize::from(task.await.expect("task"));
    }
    assert_eq!(won, 1, "exactly one claim wins");
}

async fn records_read_list_and_page(store: &dyn TitleStore) {
    assert!(store.claim(&record("alice", "c1", 1)).await.expect("claim"));
    assert!(
        !store.claim(&record("alice", "c1", 2)).await.expect("claim"),
        "no duplicate"
    );
    assert!(
        store.claim(&record("bob", "c1", 3)).await.expect("claim"),
        "same id, other owner"
    );
    assert!(store.claim(&record("alice", "c2", 4)).await.expect("claim"));
    assert!(store.claim(&record("alice", "c3", 5)).await.expect("claim"));

    store
        .set_text("alice", "c2", "Half a ti")
        .await
        .expect("set_text");
    let c2 = store.get(Some("alice"), "c2").await.expect("get");
    assert_eq!(c2.map(|r| r.text), Some("Half a ti".to_owned()));

    let mut done = record("alice", "c1", 1);
    done.status = Status::Done;
    done.title = Some("Retry backoff".into());
    done.text = "Retry backoff".into();
    done.updated_at = done.created_at + chrono::Duration::seconds(9);
    store.finish(&done).await.expect("finish");
    assert_eq!(
        store.get(Some("alice"), "c1").await.expect("get"),
        Some(done.clone())
    );
    store
        .set_text("alice", "c1", "late text")
        .await
        .expect("set_text");
    assert_eq!(
        store
            .get(Some("alice"), "c1")
            .await
            .expect("get")
            .map(|r| r.text),
        Some("Retry backoff".to_owned()),
        "a finished record's text is final"
    );
    assert_eq!(
        store.get(Some("carol"), "c1").await.expect("get"),
        None,
        "scoped by owner"
    );
    assert_eq!(
        store.get(None, "c1").await.expect("get").map(|r| r.owner),
        Some("bob".into()),
        "admin: newest"
    );

    // `finish` of a record the store lost (a Redis restart) writes it whole.
    let mut lost = record("dave", "gone", 6);
    lost.status = Status::Done;
    lost.title = Some("Recovered".into());
    store.finish(&lost).await.expect("finish");
    assert_eq!(
        store.get(Some("dave"), "gone").await.expect("get"),
        Some(lost)
    );

    assert_eq!(
        ids(store.list(Some("alice"), None, 10).await.expect("list")),
        ["c3", "c2", "c1"]
    );
    let page = store.list(Some("alice"), None, 2).await.expect("list");
    let cursor = Cursor::of(&page[1]);
    assert_eq!(
        ids(store
            .list(Some("alice"), Some(&cursor), 10)
            .await
            .expect("list")),
        ["c1"]
    );
    assert_eq!(
        ids(store.list(None, None, 10).await.expect("list")),
        ["gone", "c3", "c2", "c1", "c1", "same"]
    );

    // Age: everything before second 4 goes (racer, c1 of alice and bob); count: keep newest 2.
    assert_eq!(store.prune(at(4), 10).await.expect("prune"), 3);
    assert_eq!(store.prune(at(4), 2).await.expect("prune"), 1);
    assert_eq!(
        ids(store.list(None, None, 10).await.expect("list")),
        ["gone", "c3"]
    );
    assert!(
        store.get(Some("alice"), "c2").await.expect("get").is_none(),
        "pruned records are gone"
    );

    // A batch of outcomes: each one written, the pending one updated and the lost one whole.
    assert!(store.claim(&record("frank", "b1", 7)).await.expect("claim"));
    let batch: Vec<TitleRecord> = ["b1", "b2"]
        .into_iter()
        .map(|id| {
            let mut r = record("frank", id, 7);
            r.status = Status::Done;
            r.title = Some(format!("Batch {id}"));
            r
        })
        .collect();
    store.finish_many(&batch).await.expect("finish_many");
    for r in &batch {
        assert_eq!(
            store.get(Some("frank"), &r.id).await.expect("get").as_ref(),
            Some(r)
        );
    }
}

async fn recovery_respects_leases(store: &dyn TitleStore) {
    let running = |instance: &str, id: &str| {
        let mut r = record("erin", id, 100);
        r.instance = instance.into();
        r
    };
    for (instance, id) in [
        ("live", "l1"),
        ("expired", "x1"),
        ("unknown", "u1"),
        ("me", "m1"),
    ] {
        assert!(store.claim(&running(instance, id)).await.expect("claim"));
    }
    // Records left pending above belong to "proc-a": alive too.
    store
        .renew_lease("proc-a", at(200))
        .await
        .expect("lease proc-a");
    store
        .renew_lease("live", at(200))
        .await
        .expect("lease live");
    store
        .renew_lease("expired", at(50))
        .await
        .expect("lease expired");
    store.renew_lease("me", at(200)).await.expect("lease me");
    let status = |id: &'static str| async move {
        store
            .get(Some("erin"), id)
            .await
            .expect("get")
            .map(|r| (r.status, r.error))
    };

    // Periodic recovery: only expired or unknown leases.
    let failed = store
        .fail_stale_pending(None, "abandoned", at(150))
        .await
        .expect("recover");
    assert_eq!(failed, 2);
    assert_eq!(
        status("x1").await,
        Some((Status::Failed, Some("abandoned".into())))
    );
    assert_eq!(
        status("u1").await,
        Some((Status::Failed, Some("abandoned".into())))
    );
    assert_eq!(status("l1").await, Some((Status::Pending, None)));
    assert_eq!(status("m1").await, Some((Status::Pending, None)));

    // Start-up of "me": its own leftovers go too, another live process's stay.
    let failed = store
        .fail_stale_pending(Some("me"), "restarted", at(150))
        .await
        .expect("recover");
    assert_eq!(failed, 1);
    assert_eq!(
        status("m1").await,
        Some((Status::Failed, Some("restarted".into())))
    );
    assert_eq!(status("l1").await, Some((Status::Pending, None)));
}

/// `withdraw` fails the record only while it is pending and owned by the withdrawing instance.
async fn withdrawing_takes_back_only_an_own_pending_claim(store: &dyn TitleStore) {
    let mut mine = record("wendy", "w1", 300);
    mine.instance = "me".into();
    assert!(
        !store.withdraw(&mine, "late").await.expect("withdraw"),
        "nothing to take back before the claim"
    );
    assert!(store.claim(&mine).await.expect("claim"));
    let mut theirs = mine.clone();
    theirs.instance = "other".into();
    assert!(!store.withdraw(&theirs, "late").await.expect("withdraw"));
    assert!(store.withdraw(&mine, "late").await.expect("withdraw"));
    let got = store
        .get(Some("wendy"), "w1")
        .await
        .expect("get")
        .expect("kept");
    assert_eq!(
        (got.status, got.error.as_deref()),
        (Status::Failed, Some("late"))
    );
    assert!(
        !store.withdraw(&mine, "again").await.expect("withdraw"),
        "a finished record stays as it is"
    );
}

/// A fresh conversation's pending record (written in the background where a backend can) reads
/// back pending, and never replaces a record already there, nor its later outcome.
async fn a_fresh_record_is_written_pending_and_never_over_another(store: &dyn TitleStore) {
    let fresh = record("fay", "conv_fresh", 10);
    store.insert_fresh(&fresh).await.expect("insert_fresh");
    let read = store.get(Some("fay"), "conv_fresh").await.expect("get");
    assert_eq!(read.map(|r| r.status), Some(Status::Pending));

    let mut done = fresh.clone();
    done.status = Status::Done;
    done.title = Some("Fresh".into());
    store.finish(&done).await.expect("finish");
    store
        .insert_fresh(&fresh)
        .await
        .expect("insert_fresh again");
    let read = store.get(Some("fay"), "conv_fresh").await.expect("get");
    assert_eq!(
        read.and_then(|r| r.title),
        Some("Fresh".to_owned()),
        "the outcome stays"
    );
}
