//! A body written compactly by hand, its large JSON texts that outlive the request (a harness's
//! system prompt, its tool definitions, made once and kept) left out of the copy: each goes as a
//! run of its own that points at the kept text (`BodyParts`). The body's bytes are the same as a
//! copy's; only the memory behind them differs. `Runs` is the builder: opencode's body
//! (`opencode::body`) and the family harnesses' (`family::body`) write into it.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::value::RawValue;

use crate::conversation::body_parts::BodyParts;

/// A shorter token is copied: a run of its own costs a part and an entry in the vectored write,
/// more than copying a few hundred bytes.
const MIN_SHARED: usize = 2048;

/// At most this many runs a body: hyper queues up to 16 buffers (the head among them) for one
/// vectored write and flushes before taking more, so a body of more runs would cost more writes.
/// A kept text past the limit is copied.
const MAX_RUNS: usize = 12;

/// The first run's room when a kept token may split the body: what comes before one is a few
/// fields (opencode's, before its system prompt: about 160 bytes). The whole estimate there would
/// be allocated twice, for this run and again for the next, a long history's size each time.
const HEAD_CAPACITY: usize = 512;

/// A body being written as runs: what is written is copied into the current run, and a kept
/// text of at least `MIN_SHARED` bytes (`share`) closes it and goes as a run of its own.
pub(crate) struct Runs {
    current: Vec<u8>,
    /// About how much more will be copied: the next run's starting capacity.
    left: usize,
    done: Vec<Bytes>,
}

impl Runs {
    /// `capacity`: about how much will be copied. `may_split`: whether a kept text may be
    /// shared, so the first run may end early (`HEAD_CAPACITY`).
    pub(crate) fn new(capacity: usize, may_split: bool) -> Self {
        let first = if may_split {
            capacity.min(HEAD_CAPACITY)
        } else {
            capacity
        };
        Self {
            current: Vec::with_capacity(first),
            left: capacity,
            done: Vec::new(),
        }
    }

    /// The run being written, to write into.
    pub(crate) fn current(&mut self) -> &mut Vec<u8> {
        &mut self.current
    }

    /// Whether `kept` is long enough for `share` to make it a run of its own.
    pub(crate) fn shares(kept: &[u8]) -> bool {
        kept.len() >= MIN_SHARED
    }

    /// `kept` as the body's next bytes: a run of its own (not copied) when it is long enough.
    pub(crate) fn share(&mut self, kept: &Bytes) {
        // This run, the kept one and the one after it.
        if !Self::shares(kept) || self.done.len() + 3 > MAX_RUNS {
            self.current.extend_from_slice(kept);
            return;
        }
        self.close_current();
        self.done.push(kept.clone());
    }

    /// A kept JSON token (opencode's system prompt) as the body's next bytes: `share`.
    pub(crate) fn share_token(&mut self, token: &Arc<RawValue>) {
        self.share(&Bytes::from_owner(KeptToken(Arc::clone(token))));
    }

    /// The body's runs, the last one's slack given back.
    pub(crate) fn finish(mut self) -> BodyParts {
        self.done.push(super::sized(self.current));
        BodyParts::from_parts(self.done)
    }

    fn close_current(&mut self) {
        self.left = self.left.saturating_sub(self.current.len());
        let next = Vec::with_capacity(self.left);
        let written = std::mem::replace(&mut self.current, next);
        self.done.push(super::sized(written));
    }
}

/// A kept token's text as the bytes of a run.
struct KeptToken(Arc<RawValue>);

impl AsRef<[u8]> for KeptToken {
    fn as_ref(&self) -> &[u8] {
        self.0.get().as_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(text: &str) -> Arc<RawValue> {
        Arc::from(serde_json::value::to_raw_value(text).expect("a string"))
    }

    #[test]
    fn a_long_kept_token_is_its_own_run_and_a_short_one_is_copied() {
        let prompt = token(&"You are opencode. \"Quoted\"\n".repeat(100));
        let short = token("short");
        let mut runs = Runs::new(64, true);
        runs.current().extend_from_slice(b"[");
        runs.share_token(&prompt);
        runs.current().push(b',');
        runs.share_token(&short);
        runs.current().push(b']');
        let written = runs.finish();
        let want = format!("[{},{}]", prompt.get(), short.get());
        assert_eq!(written.to_bytes(), want.as_bytes());
        let parts = written.parts();
        assert_eq!(parts.len(), 3, "before the prompt, the prompt, after it");
        assert_eq!(
            parts[1].as_ptr(),
            prompt.get().as_ptr(),
            "the prompt is not copied"
        );
        assert!(
            parts[2].windows(5).any(|w| w == b"short"),
            "a short token is copied"
        );
    }

    #[test]
    fn past_the_run_limit_a_kept_text_is_copied() {
        let prompt = token(&"p".repeat(4096));
        let mut runs = Runs::new(16, true);
        for _ in 0..MAX_RUNS {
            runs.share_token(&prompt);
        }
        let written = runs.finish();
        assert!(written.parts().len() <= MAX_RUNS);
        assert_eq!(written.to_bytes(), prompt.get().repeat(MAX_RUNS).as_bytes());
    }
}
