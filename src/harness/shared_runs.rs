//! A body serialized compactly, its large JSON tokens that outlive the request (a harness's system
//! prompt, made once and kept) left out of the copy: each goes as a run of its own that points at
//! the kept token (`BodyParts`). The body's bytes are the same as `serde_json::to_vec`'s; only the
//! memory behind them differs.

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
    let first = if shared.is_empty() {
        capacity
    } else {
        capacity.min(HEAD_CAPACITY)
    };
    let runs = RefCell::new(Runs {
        current: Vec::with_capacity(first),
        left: capacity,
        done: Vec::new(),
    });
    let splitter = Splitter {
        runs: &runs,
        shared: &shared,
    };
    let mut serializer = serde_json::Serializer::with_formatter(Writer(&runs), splitter);
    value.serialize(&mut serializer)?;
    let Runs {
        current, mut done, ..
    } = runs.into_inner();
    done.push(super::sized(current));
    Ok(BodyParts::from_parts(done))
}

/// The runs written so far and the one being written.
struct Runs {
    current: Vec<u8>,
    /// About how much more will be copied: the next run's starting capacity.
    left: usize,
    done: Vec<Bytes>,
}

impl Runs {
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
                let mut runs = self.runs.borrow_mut();
                runs.close_current();
                runs.done
                    .push(Bytes::from_owner(KeptToken(Arc::clone(token))));
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
