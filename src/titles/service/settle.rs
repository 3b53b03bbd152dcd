//! A title's outcome, settled: shown to its live followers at once, then written to the store in
//! batches by the writer thread (`titles::writer`), or queued for the next batch when the store is
//! away; an observed title (a client's own title stream) recorded the same way. An outcome is
//! always stored or queued, never neither.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use chrono::Utc;
use futures_util::FutureExt;

use super::{TitleFailure, TitleService, caught, json_title, store_error};
use crate::titles::live::{LiveTitle, Outcome};
use crate::titles::sanitize::sanitize_title;
use crate::titles::store::{Status, TitleRecord};
use crate::titles::writer;

impl TitleService {
    /// `settle`, and if even that panics (a broken store), still end the live title so that its
    /// `/stream` subscribers are not left waiting.
    pub(super) async fn settle_surely(self: &Arc<Self>, live: &LiveTitle, outcome: Outcome) {
        if AssertUnwindSafe(self.settle(live, outcome))
            .catch_unwind()
            .await
            .is_err()
        {
            tracing::warn!(conversation = %live.record.id, "recording a title outcome panicked");
            live.finish(Outcome::Failed(
                "the title could not be recorded".to_owned(),
            ));
            self.live.remove(&live.record.owner, &live.record.id);
        }
    }

    /// Ends a title with its outcome: readers see it at once (the live entry keeps the finished
    /// record), the store gets it with the next batch (`titles::writer`).
    async fn settle(self: &Arc<Self>, live: &LiveTitle, outcome: Outcome) {
        let mut record = live.pending_record();
        record.updated_at = Utc::now();
        match &outcome {
            Outcome::Done(title) => {
                record.status = Status::Done;
                record.title = Some(title.clone());
                tracing::debug!(conversation = %record.id, title = %title, "title done");
            }
            Outcome::Failed(reason) => {
                record.status = Status::Failed;
                record.error = Some(reason.clone());
                tracing::info!(conversation = %record.id, reason = %reason, "title failed");
            }
        }
        metrics::counter!("harness_proxy_titles_total", "status" => record.status.as_str())
            .increment(1);
        let took = (record.updated_at - record.created_at)
            .to_std()
            .unwrap_or_default();
        metrics::histogram!("harness_proxy_title_duration_seconds", "status" => record.status.as_str())
            .record(took.as_secs_f64());
        live.settle(record.clone(), outcome);
        match self.outcomes.push(record) {
            writer::Pushed::Queued => {}
            writer::Pushed::StartDrain => {
                let this = self.clone();
                self.tracker
                    .spawn(async move { this.drain_outcomes().await });
            }
            writer::Pushed::WriteNow(record) => self.write_outcomes(vec![*record]).await,
        }
    }

    /// The drain task: while outcomes keep coming, lets each batch gather for `LINGER` (less
    /// once shutdown has begun), then writes it.
    async fn drain_outcomes(&self) {
        loop {
            tokio::select! {
                () = tokio::time::sleep(writer::LINGER) => {}
                () = self.cancel.cancelled() => {}
            }
            let batch = self.outcomes.take(true);
            if batch.is_empty() {
                return;
            }
            self.write_outcomes(batch).await;
        }
    }

    /// Writes what is queued now (before a listing, at shutdown).
    pub(in crate::titles) async fn write_queued_outcomes(&self) {
        let batch = self.outcomes.take(false);
        if !batch.is_empty() {
            self.write_outcomes(batch).await;
        }
    }

    /// Writes finished records (or queues them in the outbox while the store is unreachable),
    /// then tells followers and retires their live entries: a reader finds each either live or
    /// stored (or queued), never neither.
    async fn write_outcomes(&self, batch: Vec<TitleRecord>) {
        match self.store.finish_many(&batch).await {
            Ok(()) => {
                for record in &batch {
                    self.bus.publish(&record.owner, &record.id).await;
                }
            }
            Err(err) => {
                store_error("finish");
                tracing::warn!(error = %err, count = batch.len(), "cannot record title outcomes; queued until the store is back");
                for record in &batch {
                    self.outbox.push(record.clone());
                }
            }
        }
        for record in &batch {
            self.live.remove(&record.owner, &record.id);
        }
    }

    /// Records a title the client generated itself (its own title request, observed on the way
    /// through): `raw` is the streamed text, or why there is none — already the failed record's
    /// words (the turn and the observer word their reasons, the record keeps text).
    pub fn record_observed(self: &Arc<Self>, live: Arc<LiveTitle>, raw: Result<String, String>) {
        let this = self.clone();
        self.tracker.spawn(async move {
            let outcome = caught(async {
                match raw.and_then(|text| {
                    // Codex's title thread answers `{"title": "…"}` (its JSON schema).
                    let text = json_title(&text).unwrap_or(text);
                    sanitize_title(&text, this.config.max_chars)
                        .ok_or_else(|| TitleFailure::NoText.to_string())
                }) {
                    Ok(title) => Outcome::Done(title),
                    Err(reason) => Outcome::Failed(reason),
                }
            })
            .await;
            this.settle_surely(&live, outcome).await;
        });
    }
}
