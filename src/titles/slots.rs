//! How many title requests run at once (`titles.max_in_flight`). A title is background work: when
//! a burst of first turns (a team starting work, a batch of agents) starts more titles than there
//! are slots, the rest wait their turn, and their main requests do not wait behind them (a
//! `parallel` title holds its main request only while it is being sent). A title that finds no slot
//! within `SLOT_WAIT` fails, counted, so a queue never grows without bound in time.
//!
//! Owns the slots and the wait; must not know what a title request is.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};

/// Longest wait for a slot: with every slot held by a title bounded by `titles.timeout`, a queued
/// title waits only while a burst drains.
pub const SLOT_WAIT: Duration = Duration::from_secs(30);

/// Why a title got no slot.
#[derive(Debug, thiserror::Error)]
#[error(
    "the proxy was busy: {slots} title requests were running and no slot freed within {}",
    humantime::format_duration(*wait)
)]
pub struct Busy {
    slots: usize,
    wait: Duration,
}

pub struct TitleSlots {
    slots: Arc<Semaphore>,
    size: usize,
    wait: Duration,
}

/// A title's slot, held while its request runs, and the signal its main request may wait on
/// (`None`: it waited for its slot, so its main request went without it).
pub struct Slot {
    _permit: OwnedSemaphorePermit,
    pub dispatched: Option<oneshot::Sender<()>>,
}

impl TitleSlots {
    pub fn new(size: usize) -> Self {
        Self::waiting(size, SLOT_WAIT)
    }

    fn waiting(size: usize, wait: Duration) -> Self {
        Self {
            slots: Arc::new(Semaphore::new(size)),
            size,
            wait,
        }
    }

    /// A slot at once, else (after letting the main request go) the first one freed, within
    /// the wait.
    pub async fn take(&self, dispatched: oneshot::Sender<()>) -> Result<Slot, Busy> {
        if let Ok(permit) = self.slots.clone().try_acquire_owned() {
            return Ok(Slot {
                _permit: permit,
                dispatched: Some(dispatched),
            });
        }
        drop(dispatched);
        metrics::counter!("harness_proxy_title_slot_waits_total").increment(1);
        match tokio::time::timeout(self.wait, self.slots.clone().acquire_owned()).await {
            Ok(Ok(permit)) => Ok(Slot {
                _permit: permit,
                dispatched: None,
            }),
            _ => Err(Busy {
                slots: self.size,
                wait: self.wait,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_title_past_the_slots_lets_its_main_request_go_and_runs_when_one_frees() {
        let slots = TitleSlots::waiting(1, Duration::from_secs(30));
        let (first_tx, mut first_rx) = oneshot::channel();
        let first = slots.take(first_tx).await.expect("a free slot");
        assert!(
            first.dispatched.is_some(),
            "the first one holds its main request"
        );
        assert!(first_rx.try_recv().is_err(), "not yet signalled");

        let (second_tx, second_rx) = oneshot::channel::<()>();
        let second = tokio::spawn({
            let slots = Arc::new(slots);
            async move {
                slots
                    .take(second_tx)
                    .await
                    .map(|slot| slot.dispatched.is_some())
            }
        });
        assert!(
            second_rx.await.is_err(),
            "the queued title's main request is let go at once"
        );
        drop(first);
        assert!(!second.await.expect("join").expect("a slot once freed"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_title_that_finds_no_slot_in_time_fails_busy() {
        let slots = TitleSlots::waiting(1, Duration::from_secs(30));
        let (tx, _rx) = oneshot::channel();
        let _held = slots.take(tx).await.expect("a free slot");
        let (tx, _rx) = oneshot::channel();
        let err = slots.take(tx).await.err().expect("busy");
        assert_eq!(
            err.to_string(),
            "the proxy was busy: 1 title requests were running and no slot freed within 30s"
        );
    }
}
