//! Titles being generated right now: their text deltas so far and, at the end, the outcome. A
//! subscriber arriving late gets everything already streamed, then the rest.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

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

/// Titles in progress at most, from the claim until the store has the outcome. Each holds about
/// 4 KB (its record, its live entry, its task) and the writes it waits for. On a core that is
/// never idle the store's writer (`SCHED_IDLE`, `store::background`) barely runs, and without a
/// bound the titles waiting for it grew without end: the bench's c=32 phases of id-less first
/// turns held some 45,000 and took the proxy from 28 to 174 MiB. Past the bound a new
/// conversation goes untitled, as when the store does not answer (`breaker`); a burst of first
/// turns waiting for a title slot (`titles.max_in_flight`) is far below it.
pub const MAX_LIVE: usize = 4096;

/// Why a title was not registered.
#[derive(Debug, PartialEq, Eq)]
pub enum NotRegistered {
    /// One is in progress for the conversation already.
    Running,
    /// `MAX_LIVE` titles are in progress; `first` for the first refusal since the hub was last
    /// under half full (so that a caller says so once, not once per turn or per retired batch).
    Full { first: bool },
}

#[derive(Default)]
pub struct LiveHub {
    titles: Mutex<HashMap<Key, Arc<LiveTitle>>>,
    /// Whether the hub refused a title since it was last under half full.
    full: std::sync::atomic::AtomicBool,
}

impl LiveHub {
    /// Registers a title for (owner, id), unless one is in progress for it already or `MAX_LIVE`
    /// are in progress.
    pub fn register(&self, record: TitleRecord) -> Result<Arc<LiveTitle>, NotRegistered> {
        self.register_within(record, MAX_LIVE)
    }

    fn register_within(
        &self,
        record: TitleRecord,
        max: usize,
    ) -> Result<Arc<LiveTitle>, NotRegistered> {
        use std::sync::atomic::Ordering::Relaxed;
        let mut titles = self.titles.lock().unwrap_or_else(PoisonError::into_inner);
        let key = (record.owner.clone(), record.id.clone());
        if titles.contains_key(&key) {
            return Err(NotRegistered::Running);
        }
        if titles.len() >= max {
            return Err(NotRegistered::Full {
                first: !self.full.swap(true, Relaxed),
            });
        }
        if titles.len() < max / 2 {
            self.full.store(false, Relaxed);
        }
        let live = Arc::new(LiveTitle {
            record,
            state: watch::Sender::new(Snapshot::default()),
            settled: std::sync::OnceLock::new(),
        });
        titles.insert(key, live.clone());
        Ok(live)
    }

    pub fn remove(&self, owner: &str, id: &str) {
        self.titles
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&(owner.to_owned(), id.to_owned()));
    }

    /// The title in progress for `id`, scoped to `owner` (`None`: any owner, for admins).
    pub fn find(&self, owner: Option<&str>, id: &str) -> Option<Arc<LiveTitle>> {
        let titles = self.titles.lock().unwrap_or_else(PoisonError::into_inner);
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

#[cfg(test)]
mod tests {
    use super::{LiveHub, NotRegistered};
    use crate::titles::store::contract::record;

    #[test]
    fn past_its_bound_the_hub_registers_nothing_and_says_so_once_until_under_half_full() {
        let hub = LiveHub::default();
        let register = |id: &str| hub.register_within(record("o", id, 0), 4);
        for id in ["a", "b", "c", "d"] {
            register(id).expect("room");
        }

        assert_eq!(
            register("a").err(),
            Some(NotRegistered::Running),
            "a conversation in progress is running, full or not"
        );
        assert_eq!(
            register("e").err(),
            Some(NotRegistered::Full { first: true })
        );
        assert_eq!(
            register("f").err(),
            Some(NotRegistered::Full { first: false })
        );
        assert!(
            hub.find(Some("o"), "e").is_none(),
            "nothing registered past the bound"
        );

        // Room for one: taken, and full again without saying it again.
        hub.remove("o", "a");
        register("e").expect("room again once a title is retired");
        assert_eq!(
            register("g").err(),
            Some(NotRegistered::Full { first: false })
        );

        // Under half full: said again the next time it fills.
        for id in ["b", "c", "d"] {
            hub.remove("o", id);
        }
        for id in ["h", "i", "j"] {
            register(id).expect("room");
        }
        assert_eq!(
            register("k").err(),
            Some(NotRegistered::Full { first: true })
        );
    }

    #[test]
    fn a_panic_while_the_hub_was_held_does_not_end_titles() {
        let hub = LiveHub::default();
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _held = hub.titles.lock().expect("not poisoned yet");
            panic!("a panic while the hub is held");
        }));
        assert!(panicked.is_err() && hub.titles.is_poisoned());

        hub.register(record("o", "a", 0))
            .expect("a title registered after the panic");
        assert!(hub.find(Some("o"), "a").is_some(), "and found");
        hub.remove("o", "a");
        assert!(hub.find(Some("o"), "a").is_none(), "and retired");
    }
}
