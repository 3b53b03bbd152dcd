//! `TitleService`: decides which turns get a title, runs each title request as a tracked
//! background task (streamed, bounded by `titles.timeout`), publishes its deltas live and writes
//! the outcome to the store. A title never breaks the user's answer: every failure is recorded.
//!
//! Which process titles a conversation is decided by the store's atomic claim, so replicas that
//! share a store title each conversation once. A chat turn's claims and when its title goes
//! (`titles.order`): `turn`. Start-up, leases and periodic work: `upkeep`. Here, in their own
//! files: the claim (`claim`) and an outcome settled and written (`settle`).

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use http::Method;
use tokio::sync::{broadcast, oneshot};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::answer::{error_message, read_limited, stream_text};
use super::breaker::Breaker;
use super::bus::{Bus, Notice};
use super::job::TitleJob;
use super::live::{LiveHub, LiveTitle, Outcome};
use super::outbox::Outbox;
use super::sanitize::sanitize_title;
use super::slots::{SLOT_WAIT, TitleSlots};
use super::store::{Cursor, StoreError, TitleRecord, TitleStore};
use super::threads::TitleThreads;
use super::writer::OutcomeQueue;
use crate::config::{TitleOrder, TitlesConfig};
use crate::memory::ConversationMemory;
use crate::memory::recent::Source;
use crate::store::Backend;
use crate::upstream::{Outbound, Upstream};

mod claim;
mod settle;

/// Why a title task made no title; its message is the failed record's reason.
#[derive(Debug, thiserror::Error)]
enum TitleFailure {
    #[error("no input to title from")]
    NoInput,
    #[error("the title request could not be written")]
    Unwritable,
    #[error(transparent)]
    Write(#[from] crate::harness::HarnessError),
    #[error(transparent)]
    Send(#[from] crate::upstream::UpstreamError),
    #[error("upstream answered {status}: {message}")]
    Refused { status: u16, message: String },
    #[error(transparent)]
    Stream(#[from] super::answer::StreamError),
    #[error("unreadable title answer: {0}")]
    Unreadable(#[source] serde_json::Error),
    #[error("titler produced no text")]
    NoText,
}

/// Longest wait for the claim on the chat path: beyond it the turn is simply not titled.
const CLAIM_TIMEOUT: Duration = Duration::from_secs(3);

/// How often a running title's text is copied to a shared store at most: followers on other
/// processes see it grow ten times a second.
const MIRROR_EVERY: Duration = Duration::from_millis(100);

pub struct TitleService {
    pub(super) config: TitlesConfig,
    pub(super) store: Arc<dyn TitleStore>,
    /// This process's name in the store (`titles.instance_id` or a fresh UUID).
    pub(super) instance: String,
    pub(super) live: LiveHub,
    /// Change notices for followers of titles running on any process.
    pub(super) bus: Bus,
    /// Outcomes waiting for the store to come back.
    pub(super) outbox: Outbox,
    /// Outcomes gathering for their batched write.
    pub(super) outcomes: OutcomeQueue,
    upstream: Arc<Upstream>,
    pub(super) tracker: TaskTracker,
    /// Cancelled when the shutdown grace runs out: running titles record that they were cut short.
    pub(super) cancel: CancellationToken,
    /// What the proxy knows of conversations (ids of id-less clients, known records, recent
    /// titles), shared with the routes.
    pub(super) memory: Arc<ConversationMemory>,
    /// Whether a claim may wait on the store (not while it hangs).
    breaker: Breaker,
    /// First turns' claims waiting for their client's own title request.
    pub(super) threads: TitleThreads,
    /// Title requests running at once (`titles.max_in_flight`).
    slots: TitleSlots,
}

/// Signals from a started title task.
pub struct Started {
    /// Resolves once the title request is on its way (or the task gave up before sending).
    pub dispatched: oneshot::Receiver<()>,
    /// Resolves once the outcome is recorded.
    pub finished: oneshot::Receiver<()>,
}

impl TitleService {
    /// A service with a memory and a backend of its own, opened from `config.store` (tests; the
    /// proxy shares both, `with_memory`).
    pub fn new(
        config: TitlesConfig,
        store: Arc<dyn TitleStore>,
        upstream: Arc<Upstream>,
    ) -> Result<Self, StoreError> {
        let backend = Backend::open(&config.store, &config.redis_prefix)?;
        let memory = Arc::new(ConversationMemory::open(
            &backend,
            config.memo_read_timeout,
        )?);
        Ok(Self::with_memory(config, store, &backend, memory, upstream))
    }

    /// The service over the records in `store`, with its notices on the shared `backend`, as
    /// one consumer of the conversation `memory`.
    pub fn with_memory(
        config: TitlesConfig,
        store: Arc<dyn TitleStore>,
        backend: &Backend,
        memory: Arc<ConversationMemory>,
        upstream: Arc<Upstream>,
    ) -> Self {
        let instance = config
            .instance_id
            .clone()
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let slots = TitleSlots::new(config.max_in_flight);
        Self {
            config,
            store,
            instance,
            live: LiveHub::default(),
            bus: Bus::new(backend),
            outbox: Outbox::default(),
            outcomes: OutcomeQueue::default(),
            upstream,
            tracker: TaskTracker::new(),
            cancel: CancellationToken::new(),
            memory,
            breaker: Breaker::default(),
            threads: TitleThreads::default(),
            slots,
        }
    }

    /// The conversation memory this service reads (and the routes share).
    pub fn memory(&self) -> &Arc<ConversationMemory> {
        &self.memory
    }

    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// Whether requests through `harness` get titles at all.
    pub fn applies_to(&self, harness: &str) -> bool {
        self.config.order != TitleOrder::Off && self.config.harnesses.iter().any(|h| h == harness)
    }

    /// The title this caller's `words` got lately with `record`'s model, if any (`recent`).
    pub(super) fn recent_title(&self, record: &TitleRecord, words: &str) -> Option<String> {
        self.memory.recent.get(Source {
            owner: &record.owner,
            model: &record.model,
            text: words,
        })
    }

    /// Ends a fresh conversation's claim with a title `recent` already holds: shown live at once,
    /// recorded on a task of its own (the caller does not wait for it).
    pub(super) fn settle_recent(self: &Arc<Self>, live: Arc<LiveTitle>, title: String) {
        live.push_delta(&title);
        let this = self.clone();
        self.tracker.spawn(async move {
            this.settle_surely(&live, Outcome::Done(title)).await;
        });
    }

    /// Starts the title task for a claimed conversation.
    pub fn start(self: &Arc<Self>, live: Arc<LiveTitle>, job: TitleJob) -> Started {
        let (dispatched_tx, dispatched) = oneshot::channel();
        let (finished_tx, finished) = oneshot::channel();
        let this = self.clone();
        self.tracker.spawn(async move {
            let outcome = this.title_of(&live, job, dispatched_tx).await;
            this.settle_surely(&live, outcome).await;
            let _ = finished_tx.send(());
        });
        Started {
            dispatched,
            finished,
        }
    }

    /// For stores other processes read: copies the text so far onto the record as it grows and
    /// tells their followers, at most once per `MIRROR_EVERY` (the latest text then). Ends with
    /// the title (the outcome is written by `settle`).
    fn mirror(self: &Arc<Self>, live: &Arc<LiveTitle>) {
        if !self.store.shared() {
            return;
        }
        let this = self.clone();
        let mut rx = live.subscribe();
        let (owner, id) = (live.record.owner.clone(), live.record.id.clone());
        self.tracker.spawn(async move {
            while rx.changed().await.is_ok() {
                let (text, finished) = {
                    let snapshot = rx.borrow_and_update();
                    (snapshot.deltas.concat(), snapshot.outcome.is_some())
                };
                if finished {
                    return;
                }
                if let Err(err) = this.store.set_text(&owner, &id, &text).await {
                    store_error("set_text");
                    tracing::debug!(error = %err, "cannot mirror a running title");
                    continue;
                }
                this.bus.publish(&owner, &id).await;
                // The deltas that come meanwhile are one write, not one each: a burst of titles
                // streaming at once must not be a store write per token.
                tokio::time::sleep(MIRROR_EVERY).await;
            }
        });
    }

    /// A title job's outcome: a fresh conversation opened with words this caller titled since
    /// its claim takes that title (no request; the dropped `dispatched` lets the main request
    /// go; words titled before the claim were taken there, `settle_recent`); a fresh
    /// one otherwise writes its pending record while its title request runs; any other just runs.
    async fn title_of(
        &self,
        live: &LiveTitle,
        job: TitleJob,
        dispatched: oneshot::Sender<()>,
    ) -> Outcome {
        let text = job.first_user_text.clone();
        let source = Source {
            owner: &live.record.owner,
            model: &live.record.model,
            text: &text,
        };
        if job.fresh
            && let Some(title) = self.memory.recent.get(source)
        {
            live.push_delta(&title);
            return Outcome::Done(title);
        }
        // The run is boxed: as a part of this future it would be laid out more than once, and a
        // task waiting for its slot holds this future whole (BENCHMARKS.md, "Titles waiting for
        // a slot").
        let outcome = if job.fresh {
            // Bounded like any claim: a hung store must not hold the outcome (upkeep fails a
            // pending record that a late write leaves behind).
            let (written, outcome) = tokio::join!(
                tokio::time::timeout(CLAIM_TIMEOUT, self.store.insert_fresh(&live.record)),
                caught(Box::pin(self.run(live, job, dispatched)))
            );
            if !matches!(written, Ok(Ok(_))) {
                store_error("claim");
                tracing::debug!("cannot write a fresh conversation's pending title");
            }
            outcome
        } else {
            caught(Box::pin(self.run(live, job, dispatched))).await
        };
        if let Outcome::Done(title) = &outcome {
            self.memory.recent.remember(source, title);
        }
        outcome
    }

    /// The title task's work; its outcome is settled by the caller, panic or not.
    async fn run(
        &self,
        live: &LiveTitle,
        job: TitleJob,
        dispatched: oneshot::Sender<()>,
    ) -> Outcome {
        tokio::select! {
            outcome = self.in_slot(live, job, dispatched) => outcome,
            () = self.cancel.cancelled() => Outcome::Failed("the proxy shut down before the title finished".to_owned()),
        }
    }

    /// The title request, in one of the slots, bounded by `titles.timeout` once it has one.
    async fn in_slot(
        &self,
        live: &LiveTitle,
        job: TitleJob,
        dispatched: oneshot::Sender<()>,
    ) -> Outcome {
        let slot = match self.slots.take(dispatched).await {
            Ok(slot) => slot,
            Err(busy) => return Outcome::Failed(busy.to_string()),
        };
        // Boxed: a task waiting for its slot holds a pointer, not the request's whole state.
        let generated = Box::pin(self.generate(live, job, slot.dispatched));
        match tokio::time::timeout(self.config.timeout, generated).await {
            Ok(Ok(title)) => Outcome::Done(title),
            Ok(Err(failure)) => Outcome::Failed(failure.to_string()),
            Err(_) => Outcome::Failed(format!(
                "title request timed out after {}",
                humantime::format_duration(self.config.timeout)
            )),
        }
    }

    async fn generate(
        &self,
        live: &LiveTitle,
        job: TitleJob,
        dispatched: Option<oneshot::Sender<()>>,
    ) -> Result<String, TitleFailure> {
        let TitleJob {
            first_user_text: words,
            request,
            client_authorization,
            ..
        } = job;
        // Written here, once the task has its slot, not on the path of the main request that
        // claimed it; a harness that panics writing it fails the title, never the task unsettled.
        let written = std::panic::catch_unwind(AssertUnwindSafe(|| request.written(&words)))
            .map_err(|_| TitleFailure::Unwritable)?;
        let request = written?.ok_or(TitleFailure::NoInput)?;
        let response = self
            .upstream
            .send(Outbound {
                method: Method::POST,
                path: request.path.to_owned(),
                headers: request.headers.clone(),
                body: request.body.clone().into(),
                client_authorization,
                dispatched,
                messages: request.messages,
            })
            .await?;
        if !response.status.is_success() {
            let text = read_limited(response.body).await;
            return Err(TitleFailure::Refused {
                status: response.status.as_u16(),
                message: error_message(&text),
            });
        }
        let raw = if crate::upstream::is_event_stream(&response.headers) {
            stream_text(response.body, live).await?
        } else {
            let text = read_limited(response.body).await;
            let completion: serde_json::Value =
                serde_json::from_str(&text).map_err(TitleFailure::Unreadable)?;
            let content = completion
                .pointer("/choices/0/message/content")
                .and_then(|c| c.as_str())
                .unwrap_or_default();
            live.push_delta(content);
            content.to_owned()
        };
        let raw = if request.messages {
            json_title(&raw).unwrap_or(raw)
        } else {
            raw
        };
        sanitize_title(&raw, self.config.max_chars).ok_or(TitleFailure::NoText)
    }

    /// A record as callers see it: the live one while pending (or batching) here, else the stored
    /// one.
    pub async fn get(
        &self,
        scope: Option<&str>,
        id: &str,
    ) -> Result<Option<TitleRecord>, StoreError> {
        if let Some(live) = self.live.find(scope, id) {
            return Ok(Some(live.current_record()));
        }
        self.store.get(scope, id).await
    }

    /// Newest first, finished titles still gathering for their batch included (written first).
    pub async fn list(
        &self,
        scope: Option<&str>,
        before: Option<&Cursor>,
        limit: usize,
    ) -> Result<Vec<TitleRecord>, StoreError> {
        if !self.outcomes.is_empty() {
            self.write_queued_outcomes().await;
        }
        self.store.list(scope, before, limit).await
    }

    pub fn live(&self, scope: Option<&str>, id: &str) -> Option<Arc<LiveTitle>> {
        self.live.find(scope, id)
    }

    /// Notices of changed records, for following a title running on another process. Subscribe
    /// before reading the record, so no change falls between the two.
    pub fn notices(&self) -> broadcast::Receiver<Notice> {
        self.bus.subscribe()
    }

    /// How long a follower waits for a title running elsewhere: its wait for a slot and its
    /// timeout, plus time for its owner's lease to run out and another process to fail it if that
    /// owner died.
    pub fn follow_deadline(&self) -> Duration {
        SLOT_WAIT + self.config.timeout + self.config.lease * 2
    }
}

/// The title of an answer that is a JSON object with a string `title` (a client's title request
/// with a JSON schema for its answer).
fn json_title(text: &str) -> Option<String> {
    let text = text.trim();
    if !text.starts_with('{') {
        return None;
    }
    serde_json::from_str::<serde_json::Value>(text)
        .ok()?
        .get("title")?
        .as_str()
        .map(str::to_owned)
}

/// A title store operation failed (the request it served went on without it).
pub(super) fn store_error(operation: &'static str) {
    metrics::counter!("harness_proxy_title_store_errors_total", "operation" => operation)
        .increment(1);
}

/// Runs a title task's work; a panic inside it becomes a `Failed` outcome naming the panic, so a
/// title is recorded whatever happens and its live stream ends.
async fn caught(work: impl Future<Output = Outcome>) -> Outcome {
    AssertUnwindSafe(work)
        .catch_unwind()
        .await
        .unwrap_or_else(|panic| {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".to_owned());
            tracing::warn!(panic = %what, "a title task panicked");
            Outcome::Failed(format!("the title task failed: {what}"))
        })
}

#[cfg(test)]
mod panic_tests {
    use super::*;

    #[tokio::test]
    async fn a_panicking_title_task_becomes_a_failed_outcome() {
        fn explode() -> Outcome {
            panic!("boom in the title task")
        }
        let outcome = caught(async { explode() }).await;
        assert_eq!(
            outcome,
            Outcome::Failed("the title task failed: boom in the title task".to_owned())
        );
        let fine = caught(async { Outcome::Done("Title".to_owned()) }).await;
        assert_eq!(fine, Outcome::Done("Title".to_owned()));
    }
}

#[cfg(test)]
#[path = "service_tests.rs"]
mod tests;
