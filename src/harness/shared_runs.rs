//! A body serialized compactly, its large JSON tokens that outlive the request (a harness's system
//! prompt, its tool definitions, made once and kept) left out of the copy: each goes as a run of
//! its own that points at the kept text (`BodyParts`). The body's bytes are the same as a copy's;
//! only the memory behind them differs. `write` does it for a serde value whose kept tokens are
//! raw values (opencode); `Runs` is the builder under it, for a body written by hand
//! (`family::body`).

use std::cell::RefCell;
use std::io;
use std::sync::Arc;

use bytes::Bytes;
use serde::Serialize;
use serde_json::ser::Formatter;
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

/// `value` as compact JSON; each of `shared` (at least `MIN_SHARED` long) that `value` writes
/// as a raw token is a run of its own. `capacity`: about what is copied (the body without the
/// shared tokens), so the buffer written into grows seldom; what is left over is given back
/// (`harness::sized`).
pub(crate) fn write<T: Serialize + ?Sized>(
    value: &T,
    shared: &[Arc<RawValue>],
    capacity: usize,
) -> Result<BodyParts, serde_json::Error> {
    let shared: Vec<&Arc<RawValue>> = shared
        .iter()
        .filter(|token| token.get().len() >= MIN_SHARED)
        .collect();
    let runs = RefCell::new(Runs::new(capacity, !shared.is_empty()));
    let splitter = Splitter {
        runs: &runs,
        shared: &shared,
    };
    let mut serializer = serde_json::Serializer::with_formatter(Writer(&runs), splitter);
    value.serialize(&mut serializer)?;
    Ok(runs.into_inner().finish())
}

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

/// Appends to the run being written.
struct Writer<'a>(&'a RefCell<Runs>);

impl io::Write for Writer<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.borrow_mut().current.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.0.borrow_mut().current.extend_from_slice(buf);
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// serde_json's compact formatting (every method's default), but a raw token that is one of
/// `shared` (the same memory, not equal text) closes the run being written and goes as its own.
struct Splitter<'a> {
    runs: &'a RefCell<Runs>,
    shared: &'a [&'a Arc<RawValue>],
}

impl Formatter for Splitter<'_> {
    fn write_raw_fragment<W: ?Sized + io::Write>(
        &mut self,
        writer: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let token = self
            .shared
            .iter()
            .find(|token| std::ptr::eq(token.get(), fragment));
        match token {
            Some(token) => {
                let kept = Bytes::from_owner(KeptToken(Arc::clone(token)));
                self.runs.borrow_mut().share(&kept);
                Ok(())
            }
            None => writer.write_all(fragment.as_bytes()),
        }
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

    #[derive(Serialize)]
    struct Body<'a> {
        model: &'a str,
        messages: Vec<Message<'a>>,
    }

    #[derive(Serialize)]
    struct Message<'a> {
        role: &'a str,
        content: &'a RawValue,
    }

    fn token(text: &str) -> Arc<RawValue> {
        Arc::from(serde_json::value::to_raw_value(text).expect("a string"))
    }

    #[test]
    fn a_long_shared_token_is_its_own_run_and_the_bytes_are_serde_jsons() {
        let prompt = token(&"You are opencode. \"Quoted\"\n".repeat(100));
        let short = token("short");
        let kept = [prompt.clone(), short.clone()];
        let body = Body {
            model: "m",
            messages: vec![
                Message {
                    role: "system",
                    content: &prompt,
                },
                Message {
                    role: "user",
                    content: &short,
                },
            ],
        };
        let written = write(&body, &kept, 64).expect("JSON");
        assert_eq!(
            written.to_bytes(),
            serde_json::to_vec(&body).expect("JSON"),
            "the same bytes as serde_json's"
        );
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
    fn an_equal_token_elsewhere_in_memory_is_copied() {
        let prompt = token(&"p".repeat(4096));
        let copy = token(&"p".repeat(4096));
        let body = Body {
            model: "m",
            messages: vec![Message {
                role: "system",
                content: &copy,
            }],
        };
        let written = write(&body, &[prompt], 16).expect("JSON");
        assert_eq!(written.parts().len(), 1);
        assert_eq!(written.to_bytes(), serde_json::to_vec(&body).expect("JSON"));
    }
}
