//! The service's claims against a store that counts them: known and fresh conversations cost
//! no store round trip on the chat path.

use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use super::*;
use crate::config::{Config, StoreUrl};
use crate::titles::store::Status;
use crate::titles::store::memory::MemoryStore;

/// The memory store, counting its claims.
struct Counting {
    inner: MemoryStore,
    claims: AtomicUsize,
    /// Claims never answer while set (a Redis that is stopped, not down).
    hang: std::sync::atomic::AtomicBool,
    /// Claims fail after 2 s while set, as the Redis client's response timeout does against a
    /// stopped Redis: an error, before the claim's own timeout.
    time_out: std::sync::atomic::AtomicBool,
    /// Calls of `finish_many` (batches of outcomes).
    batches: AtomicUsize,
}

#[async_trait]
impl TitleStore for Counting {
    async fn claim(&self, record: &TitleRecord) -> Result<bool, StoreError> {
        self.claims.fetch_add(1, Ordering::SeqCst);
        if self.hang.load(Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
        if self.time_out.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_secs(2)).await;
            return Err(StoreError::Unavailable("timed out".into()));
        }
        self.inner.claim(record).await
    }
    async fn set_text(&self, owner: &str, id: &str, text: &str) -> Result<(), StoreError> {
        self.inner.set_text(owner, id, text).await
    }
    async fn finish(&self, record: &TitleRecord) -> Result<(), StoreError> {
        self.inner.finish(record).await
    }
    async fn finish_many(&self, records: &[TitleRecord]) -> Result<(), StoreError> {
        self.batches.fetch_add(1, Ordering::SeqCst);
        self.inner.finish_many(records).await
    }
    async fn get(&self, owner: Option<&str>, id: &str) -> Result<Option<TitleRecord>, StoreError> {
        self.inner.get(owner, id).await
    }
    async fn list(
        &self,
        owner: Option<&str>,
        before: Option<&Cursor>,
        limit: usize,
    ) -> Result<Vec<TitleRecord>, StoreError> {
        self.inner.list(owner, before, limit).await
    }
    async fn prune(&self, older_than: DateTime<Utc>, keep: usize) -> Result<u64, StoreError> {
        self.inner.prune(older_than, keep).await
    }
    async fn renew_lease(&self, instance: &str, until: DateTime<Utc>) -> Result<(), StoreError> {
        self.inner.renew_lease(instance, until).await
    }
    async fn fail_stale_pending(
        &self,
        own: Option<&str>,
        reason: &str,
        now: DateTime<Utc>,
    ) -> Result<u64, StoreError> {
        self.inner.fail_stale_pending(own, reason, now).await
    }
    async fn withdraw(&self, record: &TitleRecord, reason: &str) -> Result<bool, StoreError> {
        self.inner.withdraw(record, reason).await
    }
    async fn ping(&self) -> Result<(), StoreError> {
        self.inner.ping().await
    }
    fn shared(&self) -> bool {
        false
    }
}

/// A service over the memory store, counting its claims.
fn counted_service() -> (Arc<TitleService>, Arc<Counting>) {
    let config = Config::default();
    let mut titles = config.titles.clone();
    titles.store = StoreUrl::Memory;
    let upstream =
        Arc::new(Upstream::new(&config.upstream, Arc::new(|_: &str| None)).expect("upstream"));
    let store = Arc::new(Counting {
        inner: MemoryStore::new(1_000),
        claims: AtomicUsize::new(0),
        hang: std::sync::atomic::AtomicBool::new(false),
        time_out: std::sync::atomic::AtomicBool::new(false),
        batches: AtomicUsize::new(0),
    });
    let service = Arc::new(TitleService::new(titles, store.clone(), upstream).expect("service"));
    (service, store)
}

#[tokio::test]
async fn a_fresh_conversation_is_claimed_without_waiting_on_the_store() {
    let (service, store) = counted_service();
    let live = service
        .claim_fresh("o", "conv_fresh", "m", "opencode", "chat")
        .expect("a fresh id is always ours");
    assert_eq!(store.claims.load(Ordering::SeqCst), 0, "no store call yet");
    let pending = service.get(Some("o"), "conv_fresh").await.expect("get");
    assert_eq!(
        pending.map(|r| r.status),
        Some(Status::Pending),
        "found live"
    );
    assert!(
        service
            .claim("o", "conv_fresh", "m", "opencode", "chat")
            .await
            .is_none(),
        "known: not claimed again"
    );
    service.record_observed(live, Ok("Fresh title".into()));
    service.tracker.close();
    service.tracker.wait().await;
    let record = store.inner.get(Some("o"), "conv_fresh").await.expect("get");
    assert_eq!(record.and_then(|r| r.title).as_deref(), Some("Fresh title"));
}

#[tokio::test]
async fn a_conversation_known_to_have_a_record_is_not_claimed_again() {
    let (service, store) = counted_service();
    let claim = |id: &'static str| {
        let service = service.clone();
        async move { service.claim("o", id, "m", "opencode", "chat").await }
    };
    let won = claim("a").await.expect("the first claim wins");
    service.live.remove(&won.record.owner, &won.record.id);
    assert!(claim("a").await.is_none(), "claimed here before");
    assert_eq!(
        store.claims.load(Ordering::SeqCst),
        1,
        "no second round trip"
    );

    // Found by a claim (another process made it): remembered the same way.
    let mut theirs = won.record.clone();
    theirs.id = "b".into();
    theirs.instance = "other".into();
    assert!(store.inner.claim(&theirs).await.expect("claim"));
    assert!(claim("b").await.is_none());
    assert!(claim("b").await.is_none());
    assert_eq!(
        store.claims.load(Ordering::SeqCst),
        2,
        "one round trip for b"
    );
}

/// Finishes `count` fresh conversations `c0…` with a title each, and waits until every one is
/// finished as its readers see it.
async fn finish_fresh(service: &Arc<TitleService>, count: usize) {
    let mut watches = Vec::new();
    for i in 0..count {
        let live = service
            .claim_fresh("o", &format!("c{i}"), "m", "opencode", "chat")
            .expect("fresh");
        watches.push(live.subscribe());
        service.record_observed(live, Ok(format!("Title {i}")));
    }
    for mut watch in watches {
        watch
            .wait_for(|s| s.outcome.is_some())
            .await
            .expect("finished");
    }
}

#[tokio::test(start_paused = true)]
async fn finished_titles_are_seen_at_once_and_reach_the_store_in_one_batch() {
    let (service, store) = counted_service();
    finish_fresh(&service, 20).await;
    assert_eq!(store.batches.load(Ordering::SeqCst), 0, "still gathering");
    let seen = service
        .get(Some("o"), "c7")
        .await
        .expect("get")
        .expect("live");
    assert_eq!(
        (seen.status, seen.title.as_deref()),
        (Status::Done, Some("Title 7"))
    );
    assert_eq!(store.inner.get(Some("o"), "c7").await.expect("get"), None);

    service.tracker.close();
    service.tracker.wait().await; // the drain task lingers, writes, and ends
    assert_eq!(
        store.batches.load(Ordering::SeqCst),
        1,
        "one write for twenty"
    );
    for i in 0..20 {
        let stored = store
            .inner
            .get(Some("o"), &format!("c{i}"))
            .await
            .expect("get");
        assert_eq!(stored.map(|r| r.status), Some(Status::Done));
    }
    assert!(
        service.live(Some("o"), "c7").is_none(),
        "retired once stored"
    );
}

#[tokio::test(start_paused = true)]
async fn a_listing_writes_what_is_gathering_first() {
    let (service, store) = counted_service();
    finish_fresh(&service, 3).await;
    let listed = service.list(Some("o"), None, 10).await.expect("list");
    assert_eq!(listed.len(), 3);
    assert!(listed.iter().all(|r| r.status == Status::Done));
    assert_eq!(store.batches.load(Ordering::SeqCst), 1);
}

/// Issue 30 item 6: while the store hangs, every first turn waited the whole claim timeout. After
/// one claim the store did not answer, first turns neither wait nor reach the store; after a
/// while one claim probes it, and an answer closes the breaker. On tokio's paused clock: "no
/// wait" is no time passing at all, not a wall-clock margin.
#[tokio::test(start_paused = true)]
async fn while_the_store_hangs_first_turns_do_not_wait_on_their_claims() {
    let (service, store) = counted_service();
    let claim = |id: &'static str| {
        let service = service.clone();
        async move { service.claim("o", id, "m", "opencode", "chat").await }
    };
    store.hang.store(true, Ordering::SeqCst);
    let started = tokio::time::Instant::now();
    assert!(claim("conv_1").await.is_none());
    assert!(
        started.elapsed() >= CLAIM_TIMEOUT,
        "the first waits the claim timeout"
    );
    let at = tokio::time::Instant::now();
    assert!(claim("conv_2").await.is_none());
    assert_eq!(
        at.elapsed(),
        Duration::ZERO,
        "the next does not wait at all"
    );
    assert_eq!(
        store.claims.load(Ordering::SeqCst),
        1,
        "nor reach the store"
    );
    // Later, one claim probes the store, which answers now: claims wait on it again.
    store.hang.store(false, Ordering::SeqCst);
    tokio::time::advance(crate::titles::breaker::OPEN_FOR).await;
    assert!(claim("conv_3").await.is_some(), "the probe claims");
    assert!(claim("conv_4").await.is_some(), "closed again");
    assert_eq!(store.claims.load(Ordering::SeqCst), 3);
}

/// The probe of issue 30, from outside: against a stopped Redis every first turn still waited,
/// 2 s each, since the Redis client's own response timeout answered the claim with an error
/// before the claim's timeout, and an error counted as an answer. A store that cannot be reached
/// has not answered: it opens the breaker too.
#[tokio::test(start_paused = true)]
async fn a_claim_the_store_could_not_reach_opens_the_breaker_too() {
    let (service, store) = counted_service();
    let claim = |id: &'static str| {
        let service = service.clone();
        async move { service.claim("o", id, "m", "opencode", "chat").await }
    };
    store.time_out.store(true, Ordering::SeqCst);
    assert!(claim("conv_1").await.is_none());
    let at = tokio::time::Instant::now();
    assert!(claim("conv_2").await.is_none());
    assert_eq!(at.elapsed(), Duration::ZERO, "the next does not wait");
    assert_eq!(
        store.claims.load(Ordering::SeqCst),
        1,
        "nor reach the store"
    );
    store.time_out.store(false, Ordering::SeqCst);
    tokio::time::advance(crate::titles::breaker::OPEN_FOR).await;
    assert!(claim("conv_3").await.is_some(), "the probe claims");
}
