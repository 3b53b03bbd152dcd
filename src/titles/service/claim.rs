//! A chat turn's claim of its conversation's title: the store's insert-if-absent of this
//! process's pending record, bounded by `CLAIM_TIMEOUT` and skipped while the store is not
//! answering (`breaker`), and a claim the chat path gave up on taken back. Which process titles a
//! conversation is decided here, once, even across replicas sharing a store.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use tokio::sync::oneshot;

use super::{CLAIM_TIMEOUT, TitleService, store_error};
use crate::titles::live::{LiveTitle, MAX_LIVE, NotRegistered};
use crate::titles::store::{Status, StoreError, TitleRecord};

impl TitleService {
    /// Claims the title of (owner, id): `Some` when this request is the one to title it, i.e. the
    /// store's insert-if-absent took this process's pending record. Store trouble means no title,
    /// never an error.
    pub async fn claim(
        self: &Arc<Self>,
        owner: &str,
        id: &str,
        model: &str,
        harness: &str,
        protocol: &str,
    ) -> Option<Arc<LiveTitle>> {
        // Known to have a record already (claimed here, or found by a claim): no store round trip.
        if self.memory.known.contains(owner, id) {
            return None;
        }
        let record = self.pending_record(owner, id, model, harness, protocol);
        // Running here already: no store round trip needed.
        let live = self.registered(record)?;
        // A store that did not answer the last claim is not waited on again for a while: the
        // turn goes untitled at once (`breaker`).
        if !self.breaker.admit() {
            store_error("claim_skipped");
            tracing::debug!(
                "the title store did not answer a claim lately; no title for this conversation"
            );
            self.live.remove(owner, id);
            return None;
        }
        let claimed = self.claim_in_time(&live).await;
        // A store that could not be reached did not answer either, however it said so: the Redis
        // client's own response timeout ends a claim to a stopped Redis with an error before the
        // claim's timeout does.
        match &claimed {
            None | Some(Err(StoreError::Unavailable(_))) => self.breaker.timed_out(),
            Some(_) => self.breaker.answered(),
        }
        match claimed {
            Some(Ok(true)) => {
                self.memory.known.insert(owner, id);
                self.mirror(&live);
                return Some(live);
            }
            Some(Ok(false)) => self.memory.known.insert(owner, id),
            Some(Err(err)) => {
                store_error("claim");
                tracing::warn!(error = %err, "title store unavailable; no title for this conversation");
            }
            None => {
                store_error("claim");
                tracing::warn!(
                    "title store too slow; no title for this conversation (claims do not wait on it for the next {})",
                    humantime::format_duration(crate::titles::breaker::OPEN_FOR)
                );
            }
        }
        self.live.remove(owner, id);
        None
    }

    /// Claims the title of a conversation this process has just named (a fresh random id): no
    /// other process can hold it, so nothing waits on the store here; the title task writes the
    /// pending record beside its title request (`TitleJob::fresh`).
    pub fn claim_fresh(
        self: &Arc<Self>,
        owner: &str,
        id: &str,
        model: &str,
        harness: &str,
        protocol: &str,
    ) -> Option<Arc<LiveTitle>> {
        let live = self.registered(self.pending_record(owner, id, model, harness, protocol))?;
        self.memory.known.insert(owner, id);
        self.mirror(&live);
        Some(live)
    }

    /// `record` registered live, or `None`: a title in progress for it already, or the most
    /// titles in progress (`live::MAX_LIVE`), which leaves this conversation untitled (counted,
    /// and said once until a title finds room again).
    fn registered(&self, record: TitleRecord) -> Option<Arc<LiveTitle>> {
        match self.live.register(record) {
            Ok(live) => Some(live),
            Err(NotRegistered::Running) => None,
            Err(NotRegistered::Full { first }) => {
                store_error("behind");
                if first {
                    tracing::warn!(
                        max = MAX_LIVE,
                        "{MAX_LIVE} titles are waiting to be recorded; new conversations go untitled until the store catches up"
                    );
                }
                None
            }
        }
    }

    fn pending_record(
        &self,
        owner: &str,
        id: &str,
        model: &str,
        harness: &str,
        protocol: &str,
    ) -> TitleRecord {
        let now = Utc::now();
        TitleRecord {
            owner: owner.to_owned(),
            id: id.to_owned(),
            title: None,
            status: Status::Pending,
            error: None,
            model: self
                .config
                .model
                .clone()
                .unwrap_or_else(|| model.to_owned()),
            harness: harness.to_owned(),
            protocol: protocol.to_owned(),
            created_at: now,
            updated_at: now,
            instance: self.instance.clone(),
            text: String::new(),
        }
    }

    /// The store's answer to the claim of `live`, or `None` past `CLAIM_TIMEOUT`. A claim given up
    /// on is not cancelled by giving up: a hung store (Redis stopped, not down) still runs the
    /// queued command once it wakes, and writes a pending record that no task here will finish.
    /// So the claim runs on a task of its own, and whenever its outcome is not what the chat path
    /// acted on (it answered "claimed" too late, or failed in a way that may have written it),
    /// the claim is taken back (`withdraw`: failed, if still pending and ours), retried while the
    /// store is away, and its followers are told.
    async fn claim_in_time(self: &Arc<Self>, live: &LiveTitle) -> Option<Result<bool, StoreError>> {
        let (answer, mut answered) = oneshot::channel();
        let this = self.clone();
        let record = live.record.clone();
        self.tracker.spawn(async move {
            let claimed = this.store.claim(&record).await;
            let unknown = matches!(claimed, Err(StoreError::Unavailable(_)));
            let given_up = match answer.send(claimed) {
                Err(Ok(true)) => true,
                Err(_) | Ok(()) => false,
            };
            if given_up || unknown {
                this.take_back(record).await;
            }
        });
        match tokio::time::timeout(CLAIM_TIMEOUT, &mut answered).await {
            Ok(Ok(claimed)) => Some(claimed),
            Ok(Err(_)) => Some(Err(StoreError::Backend("the claim task ended".into()))),
            Err(_) => {
                // Closed first, so the answer is either taken here or left to the task, not lost.
                answered.close();
                answered.try_recv().ok()
            }
        }
    }

    /// Takes back a claim the chat path did not act on, retrying (once a second, for up to a
    /// lease) while the store does not answer, and tells followers when it did.
    async fn take_back(&self, record: TitleRecord) {
        let reason = format!(
            "the title store did not answer the claim within {}; the conversation was not titled",
            humantime::format_duration(CLAIM_TIMEOUT)
        );
        let deadline = tokio::time::Instant::now() + self.config.lease;
        loop {
            match self.store.withdraw(&record, &reason).await {
                Ok(true) => {
                    tracing::info!(conversation = %record.id, "a title claim the chat path gave up on is recorded failed");
                    self.bus.publish(&record.owner, &record.id).await;
                    return;
                }
                Ok(false) => return,
                Err(err) if tokio::time::Instant::now() >= deadline => {
                    store_error("withdraw");
                    tracing::warn!(error = %err, "cannot take back a title claim; the lease will");
                    return;
                }
                Err(_) => {}
            }
            tokio::select! {
                () = tokio::time::sleep(Duration::from_secs(1)) => {}
                () = self.cancel.cancelled() => return,
            }
        }
    }
}
