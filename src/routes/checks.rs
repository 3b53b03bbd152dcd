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
        // A closed semaphore is never closed here; without a slot the work still runs, off the
        // runtime.
        let _slot = self.slots.acquire().await.ok();
        match tokio::task::spawn_blocking(decide).await {
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
