//! The title service's life around requests: start-up recovery, this process's lease, periodic
//! recovery of titles whose process died, pruning (the reasoning memo's store entries too), writing queued outcomes, readiness and the
//! shutdown drain.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use serde::Serialize;

use super::service::{TitleService, store_error};
use super::store::{Status, StoreError};
use crate::config::StoreUrl;

/// How often queued outcomes are retried while the store is unreachable.
const OUTBOX_RETRY: Duration = Duration::from_secs(1);
/// How often old records are pruned.
const PRUNE_EVERY: Duration = Duration::from_secs(3600);
/// How many of the newest records the stranded-title check reads each lease tick.
const ORPHAN_SCAN: usize = 200;

/// What `/readyz` says about the title store.
#[derive(Debug, Clone, Serialize)]
pub struct StoreHealth {
    /// The store URL, password hidden.
    pub store: String,
    /// `ok`; `unreachable`, or, for a store that answers but refuses writes, `full` (Redis
    /// `-OOM`) or `read_only` (`-READONLY`, `-MISCONF`); with the reason.
    pub state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Outcomes waiting for the store.
    pub queued: usize,
    /// Whether the process should take traffic: an embedded store this process cannot write is
    /// a fault of this replica; a shared Redis that is down is everyone's, and chat still works
    /// (outcomes queue), so it does not take the replicas out of rotation.
    #[serde(skip)]
    pub ready: bool,
}

impl TitleService {
    /// Before serving: this process's lease is taken, titles left pending by an earlier run of
    /// this instance or by a process whose lease expired are failed, old ones pruned.
    pub async fn recover(&self) {
        self.renew_lease().await;
        match self
            .store
            .fail_stale_pending(
                Some(&self.instance),
                "the proxy restarted before the title finished",
                Utc::now(),
            )
            .await
        {
            Ok(0) => {}
            Ok(n) => tracing::info!(
                count = n,
                "marked titles interrupted by a restart as failed"
            ),
            Err(err) => {
                store_error("recover");
                tracing::warn!(error = %err, "cannot recover pending titles");
            }
        }
        self.prune().await;
    }

    async fn renew_lease(&self) {
        let lease = chrono::Duration::from_std(self.config.lease).unwrap_or(chrono::Duration::MAX);
        let until = Utc::now().checked_add_signed(lease).unwrap_or_default();
        if let Err(err) = self.store.renew_lease(&self.instance, until).await {
            store_error("renew_lease");
            tracing::warn!(error = %err, "cannot renew this process's title lease");
        }
    }

    /// Fails titles whose process stopped renewing its lease (it crashed or lost the store).
    async fn fail_abandoned(&self) {
        match self
            .store
            .fail_stale_pending(None, "the proxy running the title stopped", Utc::now())
            .await
        {
            Ok(0) => {}
            Ok(n) => tracing::info!(count = n, "marked titles of a stopped process as failed"),
            Err(err) => {
                store_error("recover");
                tracing::debug!(error = %err, "cannot check for abandoned titles");
            }
        }
    }

    /// Fails this process's own pending titles that no task here runs and that are older than
    /// `titles.timeout` plus a lease: a title task ends within `titles.timeout`, and one waiting
    /// for its answer (`after`) is registered live, so such a record is stranded (a claim the
    /// store wrote after this process stopped waiting for it). Reads the newest page of records
    /// only: what strands is recent.
    async fn fail_own_orphans(&self) {
        let slack = chrono::Duration::from_std(self.config.timeout + self.config.lease)
            .unwrap_or(chrono::Duration::MAX);
        let cutoff = Utc::now().checked_sub_signed(slack).unwrap_or_default();
        let records = match self.store.list(None, None, ORPHAN_SCAN).await {
            Ok(records) => records,
            Err(err) => {
                store_error("orphans");
                tracing::debug!(error = %err, "cannot look for stranded titles");
                return;
            }
        };
        let stranded = records.into_iter().filter(|r| {
            r.status == Status::Pending
                && r.instance == self.instance
                && r.created_at < cutoff
                && self.live.find(Some(&r.owner), &r.id).is_none()
        });
        for record in stranded {
            let reason = "no task of this process ran the title (it outlived titles.timeout)";
            if let Ok(true) = self.store.withdraw(&record, reason).await {
                tracing::info!(conversation = %record.id, "a stranded pending title is recorded failed");
                self.bus.publish(&record.owner, &record.id).await;
            }
        }
    }

    async fn prune(&self) {
        let retention =
            chrono::Duration::from_std(self.config.retention).unwrap_or(chrono::Duration::MAX);
        let cutoff = Utc::now().checked_sub_signed(retention).unwrap_or_default();
        match self.store.prune(cutoff, self.config.max_records).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(count = n, "pruned old titles"),
            Err(err) => {
                store_error("prune");
                tracing::warn!(error = %err, "cannot prune titles");
            }
        }
    }

    async fn flush_outbox(&self) {
        for record in self.outbox.flush(self.store.as_ref()).await {
            self.bus.publish(&record.owner, &record.id).await;
        }
    }

    /// Until shutdown: renews the lease (every third of it) and fails abandoned titles, retries
    /// queued outcomes every second, prunes every hour, and listens for other replicas' notices.
    pub fn spawn_maintenance(self: &Arc<Self>) {
        self.bus.spawn_listener(self.cancel.clone());
        let this = self.clone();
        tokio::spawn(async move {
            let mut lease = tokio::time::interval(this.config.lease / 3);
            let mut outbox = tokio::time::interval(OUTBOX_RETRY);
            let mut prune = tokio::time::interval(PRUNE_EVERY);
            for timer in [&mut lease, &mut outbox, &mut prune] {
                timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                timer.tick().await; // the first tick is immediate; start-up already did each
            }
            loop {
                tokio::select! {
                    _ = lease.tick() => {
                        this.renew_lease().await;
                        this.fail_abandoned().await;
                        this.fail_own_orphans().await;
                    }
                    _ = outbox.tick(), if !this.outbox.is_empty() => this.flush_outbox().await,
                    _ = prune.tick() => this.prune().await,
                    () = this.cancel.cancelled() => return,
                }
            }
        });
    }

    /// Readiness of the title store: it can be written right now.
    pub async fn store_health(&self) -> StoreHealth {
        let probe = tokio::time::timeout(Duration::from_secs(2), self.store.ping()).await;
        if !matches!(probe, Ok(Ok(()))) {
            store_error("ping");
        }
        let (state, error) = match probe {
            Ok(Ok(())) => ("ok", None),
            Ok(Err(StoreError::Unavailable(e) | StoreError::Backend(e))) => {
                ("unreachable", Some(e))
            }
            Ok(Err(StoreError::Refusing { refusal, reason })) => (refusal.state(), Some(reason)),
            Err(_) => ("unreachable", Some("no answer within 2s".to_owned())),
        };
        let shared = matches!(self.config.store, StoreUrl::Redis(_));
        StoreHealth {
            store: self.config.store.to_string(),
            state,
            ready: error.is_none() || shared,
            error,
            queued: self.outbox.len(),
        }
    }

    /// Waits up to `within` for running titles; then cuts them short, letting them record so,
    /// and makes a last attempt at writing queued outcomes.
    pub async fn shutdown(&self, within: Duration) {
        self.tracker.close();
        if tokio::time::timeout(within, self.tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                "titles still running at the end of the grace period; recording them as failed"
            );
        }
        self.cancel.cancel();
        let _ = tokio::time::timeout(Duration::from_secs(2), self.tracker.wait()).await;
        let _ = tokio::time::timeout(Duration::from_secs(1), self.write_queued_outcomes()).await;
        if !self.outbox.is_empty() {
            let _ = tokio::time::timeout(Duration::from_secs(1), self.flush_outbox()).await;
            let lost = self.outbox.len();
            if lost > 0 {
                tracing::warn!(count = lost, "title outcomes never reached the store");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use chrono::Utc;

    use super::TitleService;
    use crate::config::{Config, StoreUrl};
    use crate::titles::store::contract::record;
    use crate::titles::store::memory::MemoryStore;
    use crate::titles::store::{Status, TitleRecord, TitleStore};
    use crate::upstream::Upstream;

    /// A pending record of `instance`, made `minutes_ago`.
    fn pending(id: &str, instance: &str, minutes_ago: i64) -> TitleRecord {
        let at = Utc::now() - chrono::Duration::minutes(minutes_ago);
        TitleRecord {
            owner: "o".into(),
            instance: instance.into(),
            created_at: at,
            updated_at: at,
            ..record("o", id, 0)
        }
    }

    #[tokio::test]
    async fn only_own_old_pending_titles_nobody_runs_here_are_failed() {
        let config = Config::default();
        let mut titles = config.titles.clone();
        titles.store = StoreUrl::Memory;
        titles.instance_id = Some("me".into());
        let upstream =
            Arc::new(Upstream::new(&config.upstream, Arc::new(|_: &str| None)).expect("upstream"));
        let store = Arc::new(MemoryStore::new(100));
        let service = TitleService::new(titles, store.clone(), upstream).expect("service");
        for record in [
            pending("stranded", "me", 60),
            pending("running", "me", 60),
            pending("young", "me", 0),
            pending("theirs", "other", 60),
        ] {
            assert!(store.claim(&record).await.expect("claim"));
        }
        let _live = service
            .live
            .register(pending("running", "me", 60))
            .expect("registered");

        service.fail_own_orphans().await;

        let status = |id: &'static str| {
            let store = store.clone();
            async move {
                store
                    .get(Some("o"), id)
                    .await
                    .expect("get")
                    .expect("kept")
                    .status
            }
        };
        assert_eq!(status("stranded").await, Status::Failed);
        assert_eq!(status("running").await, Status::Pending);
        assert_eq!(status("young").await, Status::Pending);
        assert_eq!(status("theirs").await, Status::Pending);
    }
}
