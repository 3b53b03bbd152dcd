//! Titles being generated right now: their text deltas so far and, at the end, the outcome. A
//! subscriber arriving late gets everything already streamed, then the rest.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use super::store::{Status, TitleRecord};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Done(String),
    Failed(String),
}

#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    pub deltas: Vec<String>,
    pub outcome: Option<Outcome>,
}

/// One title in progress.
pub struct LiveTitle {
    /// The record as it is while pending (what `/titles/{id}` shows before the store has it).
    pub record: TitleRecord,
    state: watch::Sender<Snapshot>,
    /// The finished record while its batch waits for the store (`titles::writer`).
    settled: std::sync::OnceLock<TitleRecord>,
}

impl LiveTitle {
    pub fn push_delta(&self, text: &str) {
        if !text.is_empty() {
            self.state.send_modify(|s| s.deltas.push(text.to_owned()));
        }
    }

    pub fn finish(&self, outcome: Outcome) {
        self.state.send_modify(|s| s.outcome = Some(outcome));
    }

    pub fn subscribe(&self) -> watch::Receiver<Snapshot> {
        self.state.subscribe()
    }

    /// The record as it stands: pending, with the text streamed so far.
    pub fn pending_record(&self) -> TitleRecord {
        let mut record = self.record.clone();
        record.status = Status::Pending;
        record.text = self.state.borrow().deltas.concat();
        record
    }

    /// Ends the title with its finished record (kept until the store has it) and its outcome.
    pub fn settle(&self, record: TitleRecord, outcome: Outcome) {
        let _ = self.settled.set(record);
        self.finish(outcome);
    }

    /// Whether the title has its finished record (it is only waiting for the store).
    pub fn is_settled(&self) -> bool {
        self.settled.get().is_some()
    }

    /// What readers see: the finished record once there is one, else the pending one.
    pub fn current_record(&self) -> TitleRecord {
        self.settled
            .get()
            .cloned()
            .unwrap_or_else(|| self.pending_record())
    }
}

type Key = (String, String);

#[derive(Default)]
pub struct LiveHub {
    titles: Mutex<HashMap<Key, Arc<LiveTitle>>>,
}

impl LiveHub {
    /// Registers a title for (owner, id); `None` when one is already in progress.
    pub fn register(&self, record: TitleRecord) -> Option<Arc<LiveTitle>> {
        let mut titles = self.titles.lock().ok()?;
        let key = (record.owner.clone(), record.id.clone());
        if titles.contains_key(&key) {
            return None;
        }
        let live = Arc::new(LiveTitle {
            record,
            state: watch::Sender::new(Snapshot::default()),
            settled: std::sync::OnceLock::new(),
        });
        titles.insert(key, live.clone());
        Some(live)
    }

    pub fn remove(&self, owner: &str, id: &str) {
        if let Ok(mut titles) = self.titles.lock() {
            titles.remove(&(owner.to_owned(), id.to_owned()));
        }
    }

    /// The title in progress for `id`, scoped to `owner` (`None`: any owner, for admins).
    pub fn find(&self, owner: Option<&str>, id: &str) -> Option<Arc<LiveTitle>> {
        let titles = self.titles.lock().ok()?;
        match owner {
            Some(owner) => titles.get(&(owner.to_owned(), id.to_owned())).cloned(),
            None => titles
                .iter()
                .filter(|((_, i), _)| i == id)
                .map(|(_, t)| t.clone())
                .max_by_key(|t| t.record.created_at),
        }
    }
}
