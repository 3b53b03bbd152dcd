//! What became of each complete call of one request's answer, kept once decided: the same call
//! is asked about more than once (whether it can reach the client, before any of the answer is
//! released, then its delivery by the shaper or a renderer), and checking it against a large
//! client schema is the expensive part. Deciding first, off the async runtime when it is large
//! (`routes::checks`), leaves the later asks a look-up.
//!
//! Owns: the decided calls of one request. Must not: decide one itself (the bridge does).

use std::collections::HashMap;
use std::sync::Mutex;

use crate::conversation::mapping::Delivered;

/// The request's decided calls, by (tool name, arguments as the model made them). Bounded by
/// the answer: only complete calls of it are asked about, and the answer is bounded
/// (`limits.max_answer_bytes` while calls are held).
#[derive(Debug, Default)]
pub struct Verdicts {
    decided: Mutex<HashMap<(String, String), Delivered>>,
}

impl Verdicts {
    /// The call's delivery, decided by `decide` the first time it is asked about.
    pub fn get_or(
        &self,
        name: &str,
        arguments: &str,
        decide: impl FnOnce() -> Delivered,
    ) -> Delivered {
        let key = (name.to_owned(), arguments.to_owned());
        if let Some(known) = self.lock().get(&key) {
            return known.clone();
        }
        // Decided outside the lock: a check can take long, and two asks of one call at once
        // only decide it twice, alike.
        let delivered = decide();
        self.lock().insert(key, delivered.clone());
        delivered
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), Delivered>> {
        // A poisoned lock only means a check panicked; what was decided before stays true.
        self.decided
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::mapping::Outcome;

    #[test]
    fn a_call_is_decided_once() {
        let verdicts = Verdicts::default();
        let mut asked = 0;
        for _ in 0..3 {
            let delivered = verdicts.get_or("bash", "{}", || {
                asked += 1;
                Delivered {
                    name: "bash".into(),
                    arguments: "{}".into(),
                    outcome: Outcome::AsMade,
                }
            });
            assert_eq!(delivered.outcome, Outcome::AsMade);
        }
        assert_eq!(asked, 1);
        let other = verdicts.get_or("bash", r#"{"a":1}"#, || Delivered {
            name: "bash".into(),
            arguments: "{}".into(),
            outcome: Outcome::Invalid,
        });
        assert_eq!(other.outcome, Outcome::Invalid);
    }
}
