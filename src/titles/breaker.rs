//! The claim's breaker (issue 30 item 6): while the title store does not answer claims (Redis
//! stopped, not down: a down one refuses at once), every first turn waited the whole claim
//! timeout before its answer (or the Redis client's 2 s response timeout). After one claim the
//! store did not answer in time, or could not be reached at all, first turns are not titled and
//! do not wait, for `OPEN_FOR`; then one claim goes to the store to probe it, the
//! others still not waiting, and the first claim the store answers closes the breaker.
//!
//! Owns: when a claim may wait on the store. Must not: claim, or know the store.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// How long first turns go untitled, without waiting, after a claim the store did not answer.
pub const OPEN_FOR: Duration = Duration::from_secs(5);

#[derive(Debug, Default)]
pub struct Breaker {
    state: Mutex<State>,
}

#[derive(Debug, Default, Clone, Copy)]
enum State {
    /// Claims wait on the store.
    #[default]
    Closed,
    /// A claim timed out; none waits until then.
    Open { until: Instant },
    /// One claim is probing the store; the others do not wait.
    Probing,
}

impl Breaker {
    /// Whether a claim may wait on the store now: the breaker is closed, or this claim is the
    /// probe once it has been open `OPEN_FOR`.
    pub fn admit(&self) -> bool {
        let mut state = self.lock();
        match *state {
            State::Closed => true,
            State::Open { until } if Instant::now() >= until => {
                *state = State::Probing;
                true
            }
            State::Open { .. } | State::Probing => false,
        }
    }

    /// The store answered a claim (whatever it said): claims wait on it again.
    pub fn answered(&self) {
        *self.lock() = State::Closed;
    }

    /// The store did not answer a claim in time (or could not be reached): claims do not wait
    /// for `OPEN_FOR`.
    pub fn timed_out(&self) {
        *self.lock() = State::Open {
            until: Instant::now() + OPEN_FOR,
        };
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A poisoned lock only means a claim panicked mid-update; any state is a safe one.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_timed_out_claim_opens_it_then_one_probe_goes_and_an_answer_closes_it() {
        let breaker = Breaker::default();
        assert!(breaker.admit(), "closed");
        breaker.timed_out();
        assert!(!breaker.admit(), "open: no claim waits");
        tokio::time::advance(OPEN_FOR).await;
        assert!(breaker.admit(), "the probe");
        assert!(!breaker.admit(), "only one probe at a time");
        breaker.timed_out();
        assert!(!breaker.admit(), "the probe timed out: open again");
        tokio::time::advance(OPEN_FOR).await;
        assert!(breaker.admit());
        breaker.answered();
        assert!(breaker.admit() && breaker.admit(), "closed again");
    }
}
