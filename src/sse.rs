//! Server-Sent Events codec: bytes ⇄ events, safe against any chunk boundary.
//!
//! Knows nothing about OpenAI. Events keep their exact raw bytes so a rewriter can forward an event
//! it does not change without re-encoding it. Passthrough never uses this module.

use bytes::{BufMut, Bytes, BytesMut};

/// One event as it arrived: its raw bytes (terminating blank line included) and its data payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub raw: Bytes,
    /// The `data:` lines joined by `\n`; `None` for comments and data-less events.
    pub data: Option<Bytes>,
}

impl Event {
    /// Whether this is the OpenAI end-of-stream marker `data: [DONE]`.
    pub fn is_done(&self) -> bool {
        self.data
            .as_deref()
            .is_some_and(|d| d.trim_ascii() == b"[DONE]")
    }
}

/// Incremental decoder: `push` bytes as they come, `next_event` while it yields.
#[derive(Debug, Default)]
pub struct Decoder {
    buf: BytesMut,
    /// Start of the first line not yet examined, relative to `buf`.
    line_start: usize,
    /// Data lines seen so far in the current event: (start, end) within `buf`.
    data_lines: Vec<(usize, usize)>,
}

impl Decoder {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, chunk: &[u8]) {
        self.buf.extend_from_slice(chunk);
    }

    /// The next complete event, if the buffered bytes hold one.
    pub fn next_event(&mut self) -> Option<Event> {
        loop {
            let rest = &self.buf[self.line_start..];
            let pos = memchr::memchr2(b'\n', b'\r', rest)?;
            let line_end = self.line_start + pos;
            let term_len = if rest[pos] == b'\r' {
                match rest.get(pos + 1) {
                    Some(b'\n') => 2,
                    Some(_) => 1,
                    // A lone `\r` at the end may be the first half of `\r\n`: wait for more.
                    None => return None,
                }
            } else {
                1
            };
            let next_line = line_end + term_len;
            if line_end == self.line_start {
                // Blank line: the event ends here.
                return Some(self.take_event(next_line));
            }
            self.note_line(self.line_start, line_end);
            self.line_start = next_line;
        }
    }

    /// At end of input: a trailing event that lacks its blank line, if any.
    pub fn finish(&mut self) -> Option<Event> {
        if self.buf.is_empty() {
            return None;
        }
        if self.line_start < self.buf.len() {
            let end = self.buf.len();
            let line_end = if self.buf[end - 1] == b'\r' {
                end - 1
            } else {
                end
            };
            self.note_line(self.line_start, line_end);
            self.line_start = end;
        }
        let len = self.buf.len();
        let event = self.take_event(len);
        (event.data.is_some() || !event.raw.trim_ascii().is_empty()).then_some(event)
    }

    fn note_line(&mut self, start: usize, end: usize) {
        let line = &self.buf[start..end];
        if let Some(value) = line.strip_prefix(b"data") {
            match value.first() {
                None => self.data_lines.push((end, end)),
                Some(b':') => {
                    let skip = if value.get(1) == Some(&b' ') { 6 } else { 5 };
                    self.data_lines.push((start + skip, end));
                }
                Some(_) => {}
            }
        }
    }

    fn take_event(&mut self, end: usize) -> Event {
        let raw = self.buf.split_to(end).freeze();
        let data = match self.data_lines.as_slice() {
            [] => None,
            [(s, e)] => Some(raw.slice(*s..*e)),
            lines => {
                let mut joined = BytesMut::new();
                for (i, (s, e)) in lines.iter().enumerate() {
                    if i > 0 {
                        joined.put_u8(b'\n');
                    }
                    joined.extend_from_slice(&raw[*s..*e]);
                }
                Some(joined.freeze())
            }
        };
        self.data_lines.clear();
        self.line_start = 0;
        Event { raw, data }
    }
}

/// `data: {payload}\n\n`.
pub fn data_event(payload: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(payload.len() + 8);
    out.extend_from_slice(b"data: ");
    out.extend_from_slice(payload);
    out.extend_from_slice(b"\n\n");
    out.freeze()
}

/// `event: {name}\ndata: {payload}\n\n` (payload must hold no newline, e.g. compact JSON).
pub fn named_event(name: &str, payload: &str) -> Bytes {
    Bytes::from(format!("event: {name}\ndata: {payload}\n\n"))
}

pub const DONE: &[u8] = b"data: [DONE]\n\n";

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn decode_all(chunks: &[&[u8]]) -> Vec<Event> {
        let mut decoder = Decoder::new();
        let mut events = Vec::new();
        for chunk in chunks {
            decoder.push(chunk);
            while let Some(e) = decoder.next_event() {
                events.push(e);
            }
        }
        events.extend(decoder.finish());
        events
    }

    #[test]
    fn decodes_data_and_keeps_raw_bytes() {
        let events = decode_all(&[b"data: {\"a\":1}\n\n: keep-alive\n\ndata: [DONE]\n\n"]);
        assert_eq!(events.len(), 3);
        assert_eq!(events[0].raw.as_ref(), b"data: {\"a\":1}\n\n");
        assert_eq!(events[0].data.as_deref(), Some(&b"{\"a\":1}"[..]));
        assert_eq!(events[1].data, None);
        assert!(events[2].is_done());
    }

    #[test]
    fn handles_crlf_cr_and_multiline_data() {
        let events = decode_all(&[b"data:a\r\ndata: b\r\n\r\ndata: c\r\rdata: d\n"]);
        assert_eq!(events[0].data.as_deref(), Some(&b"a\nb"[..]));
        assert_eq!(events[1].data.as_deref(), Some(&b"c"[..]));
        // Trailing event without its blank line is still delivered at the end.
        assert_eq!(events[2].data.as_deref(), Some(&b"d"[..]));
        assert_eq!(events.len(), 3);
    }

    #[test]
    fn cr_at_chunk_end_waits_for_possible_lf() {
        let events = decode_all(&[b"data: x\r", b"\n\r", b"\ndata: y\n\n"]);
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].raw.as_ref(), b"data: x\r\n\r\n");
    }

    #[test]
    fn fields_other_than_data_are_ignored_but_kept_raw() {
        let events = decode_all(&[b"event: delta\nid: 7\ndata: z\n\n"]);
        assert_eq!(events[0].data.as_deref(), Some(&b"z"[..]));
        assert_eq!(events[0].raw.as_ref(), b"event: delta\nid: 7\ndata: z\n\n");
    }

    proptest! {
        // Any split of a valid stream yields the same events, and their raw bytes rebuild the input.
        #[test]
        fn any_chunking_yields_the_same_events(
            payloads in proptest::collection::vec("[a-z{}\":, ]{0,20}", 1..8),
            cuts in proptest::collection::vec(0usize..400, 0..12),
            crlf in any::<bool>(),
        ) {
            let nl = if crlf { "\r\n" } else { "\n" };
            let text: String = payloads.iter().map(|p| format!("data: {p}{nl}{nl}")).collect();
            let bytes = text.as_bytes();
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (bytes.len() + 1)).collect();
            cuts.sort_unstable();
            let mut chunks = Vec::new();
            let mut prev = 0;
            for c in cuts { chunks.push(&bytes[prev..c]); prev = c; }
            chunks.push(&bytes[prev..]);
            let events = decode_all(&chunks);
            prop_assert_eq!(events.len(), payloads.len());
            let mut rebuilt = Vec::new();
            for (event, payload) in events.iter().zip(&payloads) {
                prop_assert_eq!(event.data.as_deref(), Some(payload.as_bytes()));
                rebuilt.extend_from_slice(&event.raw);
            }
            prop_assert_eq!(rebuilt, bytes.to_vec());
        }
    }
}
