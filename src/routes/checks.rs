//! Where an answer's complete calls are decided (issue 30, item 5): whether each can reach the
//! client is a check against the client's own schema (compiled the first time), which a large
//! client schema makes long enough to stall every connection served by the same worker thread.
//! A large decision runs on the blocking pool, in the large rewrites' slots (one per core), so a
//! flood of them queues there instead of taking the runtime; a small one runs where it is. The
//! mapper keeps each decision (`clients::verdicts`), so delivering the same calls afterwards, on
//! the runtime, is a look-up.
//!
//! Owns: where a decision runs. Must not: decide anything itself (the `CallMapper` does).

use std::sync::Arc;

use tokio::sync::Semaphore;

use crate::conversation::mapping::CallMapper;

/// Decisions estimated at this many bytes of schemas and arguments (`CallMapper::check_cost`)
/// go to the blocking pool: a real agent's turn (schemas of a few KiB, a few calls) stays well
/// under it and pays no hand-over.
pub(crate) const BLOCKING_CHECK_BYTES: usize = 128 * 1024;

/// What an answer's calls are decided with.
#[derive(Clone)]
pub(crate) struct Checks {
    pub(crate) mapper: Arc<dyn CallMapper>,
    /// The large rewrites' slots (`AppState::large_rewrites`).
    pub(crate) slots: Arc<Semaphore>,
}

impl Checks {
    /// Whether each call (name, arguments) cannot reach the client (`CallMapper::deliverable`),
    /// decided off the runtime when the calls are large to check; `calls` come back with the
    /// answer.
    pub(crate) async fn undeliverable<C>(&self, calls: C) -> (C, Vec<bool>)
    where
        C: Calls + Send + 'static,
    {
        let mapper = self.mapper.clone();
        let cost: usize = calls
            .each()
            .map(|(name, arguments)| mapper.check_cost(name, arguments))
            .fold(0, usize::saturating_add);
        let decide = move || {
            let bad = calls
                .each()
                .map(|(name, arguments)| !mapper.deliverable(name, arguments))
                .collect();
            (calls, bad)
        };
        if cost < BLOCKING_CHECK_BYTES {
            return decide();
        }
        // The slot goes with the work, not with this future: a client that hangs up drops the
        // wait for the answer, but the work runs on to its end, and the slot stays taken until
        // then, so hang-ups cannot pile up checks beyond one per core. (The slots are never
        // closed; were they, the work would still run, off the runtime.)
        let slot = self.slots.clone().acquire_owned().await.ok();
        let work = move || {
            let decided = decide();
            drop(slot);
            decided
        };
        match tokio::task::spawn_blocking(work).await {
            Ok(decided) => decided,
            // The check panicked: the same panic as if it had run here.
            Err(failed) => std::panic::resume_unwind(
                failed
                    .try_into_panic()
                    .unwrap_or_else(|_| Box::new("a call check was cancelled")),
            ),
        }
    }
}

/// A list of complete calls, each read as (name, arguments).
pub(crate) trait Calls {
    fn each(&self) -> impl Iterator<Item = (&str, &str)>;
}

impl Calls for Vec<(String, String)> {
    fn each(&self) -> impl Iterator<Item = (&str, &str)> {
        self.iter()
            .map(|(name, arguments)| (name.as_str(), arguments.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::sync::mpsc::{Receiver, Sender, channel};

    use super::*;
    use crate::conversation::mapping::{CallRoute, Delivered, Outcome};

    /// A mapper whose every check is heavy and waits for the test's go.
    struct Held {
        started: Mutex<Sender<()>>,
        go: Mutex<Receiver<()>>,
    }

    impl CallMapper for Held {
        fn route(&self, _: &str) -> CallRoute {
            CallRoute::Translate
        }
        fn to_client(&self, name: &str, arguments: &str) -> Delivered {
            let _ = self.started.lock().map(|s| s.send(()));
            let _ = self.go.lock().map(|g| g.recv());
            Delivered {
                name: name.to_owned(),
                arguments: arguments.to_owned(),
                outcome: Outcome::AsMade,
            }
        }
        fn check_cost(&self, _: &str, _: &str) -> usize {
            BLOCKING_CHECK_BYTES
        }
        fn profile(&self) -> &str {
            "held"
        }
        fn profile_label(&self) -> String {
            "held".into()
        }
        fn tool_label(&self, _: &str) -> String {
            "other".into()
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_check_whose_client_hung_up_keeps_its_slot_until_it_ends() {
        let (started_tx, started) = channel();
        let (go, go_rx) = channel();
        let checks = Checks {
            mapper: Arc::new(Held {
                started: Mutex::new(started_tx),
                go: Mutex::new(go_rx),
            }),
            slots: Arc::new(Semaphore::new(1)),
        };
        let calls = vec![("bash".to_owned(), "{}".to_owned())];
        let waiting = tokio::spawn({
            let checks = checks.clone();
            async move { checks.undeliverable(calls).await }
        });
        // The signal: the check runs, on the blocking pool, in the one slot.
        tokio::task::spawn_blocking(move || started.recv())
            .await
            .expect("joined")
            .expect("the check started");
        // The client hangs up: the wait is dropped, the work is not, nor its slot.
        waiting.abort();
        assert!(waiting.await.is_err_and(|e| e.is_cancelled()));
        assert_eq!(checks.slots.available_permits(), 0);
        go.send(()).expect("the check waits");
        let slot = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            checks.slots.clone().acquire_owned(),
        )
        .await;
        assert!(slot.is_ok(), "the slot comes back once the check ends");
    }
}
