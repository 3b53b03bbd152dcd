//! `TitleService`: decides which turns get a title, runs each title request as a tracked
//! background task (streamed, bounded by `titles.timeout`), publishes its deltas live and writes
//! the outcome to the store. A title never breaks the user's answer: every failure is recorded.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use chrono::Utc;
use futures_util::{FutureExt, StreamExt};
use http::{HeaderMap, HeaderValue, Method};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::anchors::Anchors;
use super::live::{LiveHub, LiveTitle, Outcome};
use super::request::title_body;
use super::sanitize::sanitize_title;
use super::store::{Cursor, Status, StoreError, TitleRecord, TitleStore};
use crate::api::stream::Chunk;
use crate::config::{TitleOrder, TitlesConfig};
use crate::sse::Decoder;
use crate::upstream::{BodyStream, Outbound, Upstream};

/// How much of a non-streamed or error answer is read.
const MAX_ANSWER_BYTES: usize = 64 * 1024;

pub struct TitleService {
    config: TitlesConfig,
    /// The title system prompt, sent whole.
    prompt: String,
    store: Arc<dyn TitleStore>,
    live: LiveHub,
    upstream: Arc<Upstream>,
    tracker: TaskTracker,
    /// Cancelled when the shutdown grace runs out: running titles record that they were cut short.
    cancel: CancellationToken,
    /// Which conversation an id-less client's turn continues.
    anchors: Arc<Anchors>,
}

/// Everything a title task needs from the request that started it.
pub struct TitleJob {
    pub first_user_text: String,
    /// End-to-end headers to send upstream, as for the main request.
    pub headers: HeaderMap,
    pub client_authorization: Option<HeaderValue>,
}

/// Signals from a started title task.
pub struct Started {
    /// Resolves once the title request is on its way (or the task gave up before sending).
    pub dispatched: oneshot::Receiver<()>,
    /// Resolves once the outcome is recorded.
    pub finished: oneshot::Receiver<()>,
}

impl TitleService {
    pub fn new(
        config: TitlesConfig,
        prompt: String,
        store: Arc<dyn TitleStore>,
        upstream: Arc<Upstream>,
    ) -> Self {
        Self {
            config,
            prompt,
            store,
            live: LiveHub::default(),
            upstream,
            tracker: TaskTracker::new(),
            cancel: CancellationToken::new(),
            anchors: Arc::new(Anchors::default()),
        }
    }

    pub fn anchors(&self) -> &Arc<Anchors> {
        &self.anchors
    }

    pub fn order(&self) -> TitleOrder {
        self.config.order
    }

    /// Whether requests through `harness` get titles at all.
    pub fn applies_to(&self, harness: &str) -> bool {
        self.config.order != TitleOrder::Off && self.config.harnesses.iter().any(|h| h == harness)
    }

    /// Claims the title of (owner, id): `Some` when this request is the one to title it, i.e. no
    /// title is running or recorded for it. Store trouble means no title, never an error.
    pub async fn claim(
        &self,
        owner: &str,
        id: &str,
        model: &str,
        harness: &str,
    ) -> Option<Arc<LiveTitle>> {
        let now = Utc::now();
        let record = TitleRecord {
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
            created_at: now,
            updated_at: now,
        };
        let live = self.live.register(record)?;
        match self.store.get(Some(owner), id).await {
            Ok(None) => Some(live),
            Ok(Some(_)) => {
                self.live.remove(owner, id);
                None
            }
            Err(err) => {
                tracing::warn!(error = %err, "title store unavailable; no title for this conversation");
                self.live.remove(owner, id);
                None
            }
        }
    }

    /// Starts the title task for a claimed conversation.
    pub fn start(self: &Arc<Self>, live: Arc<LiveTitle>, job: TitleJob) -> Started {
        let (dispatched_tx, dispatched) = oneshot::channel();
        let (finished_tx, finished) = oneshot::channel();
        let this = self.clone();
        self.tracker.spawn(async move {
            let outcome = caught(this.run(&live, job, dispatched_tx)).await;
            this.settle_surely(&live, outcome).await;
            let _ = finished_tx.send(());
        });
        Started {
            dispatched,
            finished,
        }
    }

    /// The title task's work; its outcome is settled by the caller, panic or not.
    async fn run(
        &self,
        live: &LiveTitle,
        job: TitleJob,
        dispatched: oneshot::Sender<()>,
    ) -> Outcome {
        if let Err(err) = self.store.insert_pending(&live.record).await {
            tracing::warn!(error = %err, "cannot record a pending title");
        }
        tokio::select! {
            result = tokio::time::timeout(self.config.timeout, self.generate(live, &job, dispatched)) => match result {
                Ok(Ok(title)) => Outcome::Done(title),
                Ok(Err(reason)) => Outcome::Failed(reason),
                Err(_) => Outcome::Failed(format!(
                    "title request timed out after {}",
                    humantime::format_duration(self.config.timeout)
                )),
            },
            () = self.cancel.cancelled() => Outcome::Failed("the proxy shut down before the title finished".to_owned()),
        }
    }

    /// `settle`, and if even that panics (a broken store), still end the live title so that its
    /// `/stream` subscribers are not left waiting.
    async fn settle_surely(&self, live: &LiveTitle, outcome: Outcome) {
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

    /// Writes a title's outcome, then publishes it and retires the live entry.
    async fn settle(&self, live: &LiveTitle, outcome: Outcome) {
        let mut record = live.record.clone();
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
        if let Err(err) = self.store.finish(&record).await {
            tracing::warn!(error = %err, "cannot record a title outcome");
        }
        // Publish after the store has the outcome, so a reader never finds neither.
        live.finish(outcome);
        self.live.remove(&record.owner, &record.id);
    }

    /// Records a title the client generated itself (its own title request, observed on the way
    /// through): `raw` is the streamed text, or why there is none.
    pub fn record_observed(self: &Arc<Self>, live: Arc<LiveTitle>, raw: Result<String, String>) {
        let this = self.clone();
        self.tracker.spawn(async move {
            let outcome = caught(async {
                if let Err(err) = this.store.insert_pending(&live.record).await {
                    tracing::warn!(error = %err, "cannot record a pending title");
                }
                match raw.and_then(|text| {
                    sanitize_title(&text, this.config.max_chars)
                        .ok_or_else(|| "titler produced no text".to_owned())
                }) {
                    Ok(title) => Outcome::Done(title),
                    Err(reason) => Outcome::Failed(reason),
                }
            })
            .await;
            this.settle_surely(&live, outcome).await;
        });
    }

    async fn generate(
        &self,
        live: &LiveTitle,
        job: &TitleJob,
        dispatched: oneshot::Sender<()>,
    ) -> Result<String, String> {
        if job.first_user_text.trim().is_empty() {
            return Err("no input to title from".to_owned());
        }
        let body = title_body(&live.record.model, &self.prompt, &job.first_user_text);
        let response = self
            .upstream
            .send(Outbound {
                method: Method::POST,
                path: "/chat/completions".to_owned(),
                headers: job.headers.clone(),
                body: Bytes::from(body),
                client_authorization: job.client_authorization.clone(),
                dispatched: Some(dispatched),
            })
            .await
            .map_err(|e| e.to_string())?;
        if !response.status.is_success() {
            let text = read_limited(response.body).await;
            return Err(format!(
                "upstream answered {}: {}",
                response.status.as_u16(),
                error_message(&text)
            ));
        }
        let raw = if crate::upstream::is_event_stream(&response.headers) {
            stream_text(response.body, live).await?
        } else {
            let text = read_limited(response.body).await;
            let completion: serde_json::Value =
                serde_json::from_str(&text).map_err(|e| format!("unreadable title answer: {e}"))?;
            let content = completion
                .pointer("/choices/0/message/content")
                .and_then(|c| c.as_str())
                .unwrap_or_default();
            live.push_delta(content);
            content.to_owned()
        };
        sanitize_title(&raw, self.config.max_chars)
            .ok_or_else(|| "titler produced no text".to_owned())
    }

    /// A record as callers see it: the live one while pending, else the stored one.
    pub async fn get(
        &self,
        scope: Option<&str>,
        id: &str,
    ) -> Result<Option<TitleRecord>, StoreError> {
        if let Some(live) = self.live.find(scope, id) {
            return Ok(Some(live.pending_record()));
        }
        self.store.get(scope, id).await
    }

    pub async fn list(
        &self,
        scope: Option<&str>,
        before: Option<&Cursor>,
        limit: usize,
    ) -> Result<Vec<TitleRecord>, StoreError> {
        self.store.list(scope, before, limit).await
    }

    pub fn live(&self, scope: Option<&str>, id: &str) -> Option<Arc<LiveTitle>> {
        self.live.find(scope, id)
    }

    pub async fn ready(&self) -> bool {
        self.store.ping().await.is_ok()
    }

    /// Before serving: titles left pending by an earlier process are failed, old ones pruned.
    pub async fn recover(&self) {
        match self
            .store
            .fail_stale_pending("the proxy restarted before the title finished", Utc::now())
            .await
        {
            Ok(0) => {}
            Ok(n) => tracing::info!(
                count = n,
                "marked titles interrupted by a restart as failed"
            ),
            Err(err) => tracing::warn!(error = %err, "cannot recover pending titles"),
        }
        self.prune().await;
    }

    async fn prune(&self) {
        let retention =
            chrono::Duration::from_std(self.config.retention).unwrap_or(chrono::Duration::MAX);
        let cutoff = Utc::now().checked_sub_signed(retention).unwrap_or_default();
        match self.store.prune(cutoff, self.config.max_records).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(count = n, "pruned old titles"),
            Err(err) => tracing::warn!(error = %err, "cannot prune titles"),
        }
    }

    /// Prunes every hour until shutdown.
    pub fn spawn_maintenance(self: &Arc<Self>) {
        let this = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_secs(3600)) => this.prune().await,
                    () = this.cancel.cancelled() => return,
                }
            }
        });
    }

    /// Waits up to `within` for running titles; then cuts them short, letting them record so.
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
    }
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

/// Folds a title stream, publishing each text delta. Reasoning deltas are not title text.
async fn stream_text(mut body: BodyStream, live: &LiveTitle) -> Result<String, String> {
    let mut decoder = Decoder::new();
    let mut raw = String::new();
    let handle = |data: Option<&[u8]>, raw: &mut String| -> Result<(), String> {
        let Some(data) = data else { return Ok(()) };
        let data = data.trim_ascii();
        if data.is_empty() || data == b"[DONE]" {
            return Ok(());
        }
        let chunk: Chunk = serde_json::from_slice(data)
            .map_err(|e| format!("failed to parse title chunk: {e}"))?;
        if let Some(error) = chunk.error {
            return Err(error_message(&error.to_string()));
        }
        if let Some(text) = chunk
            .choices
            .iter()
            .find(|c| c.index == 0)
            .and_then(|c| c.delta.text())
        {
            raw.push_str(&text);
            live.push_delta(&text);
        }
        Ok(())
    };
    while let Some(chunk) = body.next().await {
        let chunk = chunk.map_err(|e| format!("title stream failed: {e}"))?;
        decoder.push(&chunk);
        while let Some(event) = decoder
            .next_event()
            .map_err(|e| format!("title stream failed: {e}"))?
        {
            handle(event.data.as_deref(), &mut raw)?;
        }
    }
    if let Some(event) = decoder.finish() {
        handle(event.data.as_deref(), &mut raw)?;
    }
    Ok(raw)
}

async fn read_limited(mut body: BodyStream) -> String {
    let mut out = Vec::new();
    while let Some(Ok(chunk)) = body.next().await {
        out.extend_from_slice(&chunk);
        if out.len() >= MAX_ANSWER_BYTES {
            out.truncate(MAX_ANSWER_BYTES);
            break;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `error.message` of an OpenAI error body, else the text itself (shortened).
fn error_message(text: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(text).ok();
    let message = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("message"))
            .and_then(|m| m.as_str())
            .map(str::to_owned)
    });
    let mut message = message.unwrap_or_else(|| text.trim().to_owned());
    if message.chars().count() > 300 {
        message = message.chars().take(300).collect::<String>() + "…";
    }
    message
}

#[cfg(test)]
mod tests {
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
