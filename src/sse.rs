//! Server-Sent Events codec: bytes ⇄ events, safe against any chunk boundary.
//!
//! Knows nothing about OpenAI (a Chat Completions stream's end is `protocols::chat::end`'s).
//! Events keep their exact raw bytes so a rewriter can forward an event it does not change without
//! re-encoding it. Passthrough forwards its bytes itself and decodes only to watch for an answer's
//! end (`protocols::chat::EndWatch`).

use bytes::{BufMut, Bytes, BytesMut};

/// The default cap on one event's bytes (`limits.max_sse_event_bytes`).
pub const DEFAULT_MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;

/// One event as it arrived: its raw bytes (terminating blank line included) and its data payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub raw: Bytes,
    /// The `data:` lines joined by `\n`; `None` for comments and data-less events.
    pub data: Option<Bytes>,
}

/// An event grew past the decoder's limit before its blank line arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("an SSE event exceeds the limit of {limit} bytes")]
pub struct EventTooLarge {
    pub limit: usize,
}

/// Incremental decoder: `push` bytes as they come, `next_event` while it yields. Each byte is
/// scanned once (a long line costs linear time, whatever the chunking), and one event may hold at
/// most `max_event` bytes: past that `next_event` fails and the caller stops.
#[derive(Debug)]
pub struct Decoder {
    buf: BytesMut,
    /// Start of the first line not yet examined, relative to `buf`.
    line_start: usize,
    /// Where the search for the next line break resumes: the bytes from `line_start` to here
    /// hold none (at most a trailing `\r` that may start a `\r\n`, which is re-examined).
    scanned: usize,
    /// Data lines seen so far in the current event: (start, end) within `buf`.
    data_lines: Vec<(usize, usize)>,
    max_event: usize,
}

impl Default for Decoder {
    fn default() -> Self {
        Self::with_limit(DEFAULT_MAX_EVENT_BYTES)
    }
}

impl Decoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// A decoder whose events may hold at most `max_event` bytes.
    pub fn with_limit(max_event: usize) -> Self {
        Self {
            buf: BytesMut::new(),
            line_start: 0,
            scanned: 0,
            data_lines: Vec::new(),
            max_event,
        }
    }

    /// Whether nothing is held: the bytes pushed so far ended at an event boundary.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    pub fn push(&mut self, chunk: &[u8]) {
        self.buf.extend_from_slice(chunk);
    }

    /// The next complete event, if the buffered bytes hold one. After an error the decoder is
    /// spent: the caller ends the stream.
    pub fn next_event(&mut self) -> Result<Option<Event>, EventTooLarge> {
        loop {
            let from = self.scanned.max(self.line_start);
            let Some(pos) = memchr::memchr2(b'\n', b'\r', &self.buf[from..]) else {
                self.scanned = self.buf.len();
                return self.within_limit(self.buf.len()).map(|()| None);
            };
            let line_end = from + pos;
            let term_len = if self.buf[line_end] == b'\r' {
                match self.buf.get(line_end + 1) {
                    Some(b'\n') => 2,
                    Some(_) => 1,
                    // A lone `\r` at the end may be the first half of `\r\n`: wait for more.
                    None => {
                        self.scanned = line_end;
                        return self.within_limit(self.buf.len()).map(|()| None);
                    }
                }
            } else {
                1
            };
            let next_line = line_end + term_len;
            self.within_limit(next_line)?;
            if line_end == self.line_start {
                // Blank line: the event ends here.
                return Ok(Some(self.take_event(next_line)));
            }
            self.note_line(self.line_start, line_end);
            self.line_start = next_line;
            self.scanned = next_line;
        }
    }

    /// `buf` only ever holds the event being read (earlier ones are split off), so its length so
    /// far is the event's size.
    fn within_limit(&self, event_bytes: usize) -> Result<(), EventTooLarge> {
        if event_bytes > self.max_event {
            Err(EventTooLarge {
                limit: self.max_event,
            })
        } else {
            Ok(())
        }
    }

    /// At end of input: a trailing event that lacks its blank line, if any.
    pub fn finish(&mut self) -> Option<Event> {
        if self.buf.is_empty() || self.buf.len() > self.max_event {
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
        self.scanned = 0;
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

/// `[event: {name}\n]data: {value as compact JSON}\n\n`, serialised straight into the event's
/// buffer: a renderer's events went through `Display` into a `String`, then through `format!`,
/// both by `fmt::Write` piece by piece.
pub fn json_event(name: Option<&str>, value: &serde_json::Value) -> Bytes {
    write_json_event(name, value, b"\n")
}

/// `data: {value as compact JSON}\r\n\r\n`: Gemini's line ends.
pub fn json_event_crlf(value: &serde_json::Value) -> Bytes {
    write_json_event(None, value, b"\r\n")
}

fn write_json_event(name: Option<&str>, value: &serde_json::Value, eol: &[u8]) -> Bytes {
    // A `Value` always serialises (its keys are strings); were it ever to fail, `Display`
    // writes the same text its own way.
    serialized_event(name, value, eol).unwrap_or_else(|_| {
        let eol = String::from_utf8_lossy(eol);
        let named = name.map(|n| format!("event: {n}{eol}")).unwrap_or_default();
        Bytes::from(format!("{named}data: {value}{eol}{eol}"))
    })
}

/// `event: {name}\ndata: {value as compact JSON}\n\n` for a typed payload (a renderer's
/// per-delta event, written without building a map); an error only if `value` cannot be JSON.
pub fn typed_event<T: serde::Serialize + ?Sized>(
    name: &str,
    value: &T,
) -> serde_json::Result<Bytes> {
    serialized_event(Some(name), value, b"\n")
}

/// `data: {value as compact JSON}\r\n\r\n` for a typed payload (Gemini's line ends).
pub fn typed_event_crlf<T: serde::Serialize + ?Sized>(value: &T) -> serde_json::Result<Bytes> {
    serialized_event(None, value, b"\r\n")
}

fn serialized_event<T: serde::Serialize + ?Sized>(
    name: Option<&str>,
    value: &T,
    eol: &[u8],
) -> serde_json::Result<Bytes> {
    let mut out = Vec::with_capacity(256);
    if let Some(name) = name {
        out.extend_from_slice(b"event: ");
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(eol);
    }
    out.extend_from_slice(b"data: ");
    serde_json::to_writer(&mut out, value)?;
    out.extend_from_slice(eol);
    out.extend_from_slice(eol);
    Ok(Bytes::from(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn decode_all(chunks: &[&[u8]]) -> Vec<Event> {
        let mut decoder = Decoder::new();
        let mut events = Vec::new();
        for chunk in chunks {
            decoder.push(chunk);
            while let Some(e) = decoder.next_event().expect("within the limit") {
                events.push(e);
            }
        }
        events.extend(decoder.finish());
        events
    }

    #[test]
    fn a_json_event_is_the_values_display_text_in_the_event_it_names() {
        let value =
            serde_json::json!({"type": "delta", "text": "line\n\"q\" é", "n": [1, 2.5, null]});
        assert_eq!(
            json_event(Some("delta"), &value).as_ref(),
            format!("event: delta\ndata: {value}\n\n").as_bytes()
        );
        assert_eq!(
            json_event(None, &value).as_ref(),
            format!("data: {value}\n\n").as_bytes()
        );
        assert_eq!(
            json_event_crlf(&value).as_ref(),
            format!("data: {value}\r\n\r\n").as_bytes()
        );
    }

    #[test]
    fn decodes_data_and_keeps_raw_bytes() {
        let events = decode_all(&[b"data: {\"a\":1}\n\n: keep-alive\n\ndata: [DONE]\n\n"]);
        assert_eq!(events.len(), 3);
        assert_eq!(events[0].raw.as_ref(), b"data: {\"a\":1}\n\n");
        assert_eq!(events[0].data.as_deref(), Some(&b"{\"a\":1}"[..]));
        assert_eq!(events[1].data, None);
        assert_eq!(events[2].data.as_deref(), Some(&b"[DONE]"[..]));
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

    /// Pushes `total` bytes of one line in `piece`-byte chunks; returns the first error, if any.
    fn push_long_line(
        decoder: &mut Decoder,
        total: usize,
        piece: usize,
    ) -> Result<usize, EventTooLarge> {
        decoder.push(b"data: ");
        let chunk = vec![b'x'; piece];
        let mut pushed = 0;
        while pushed < total {
            decoder.push(&chunk);
            pushed += piece;
            assert_eq!(decoder.next_event()?, None);
        }
        Ok(pushed)
    }

    #[test]
    fn a_40_mb_line_is_scanned_once_and_decoded() {
        // Linear by design: each `next_event` resumes where the last one stopped scanning, so 40 MB
        // in 16 KiB chunks is 40 MB of scanning, not 2,560 rescans of a growing line.
        let total = 40 * 1024 * 1024;
        let mut decoder = Decoder::with_limit(64 * 1024 * 1024);
        push_long_line(&mut decoder, total, 16 * 1024).expect("under the limit");
        decoder.push(b"\n\n");
        let event = decoder.next_event().expect("within").expect("an event");
        assert_eq!(event.data.map(|d| d.len()), Some(total));
    }

    #[test]
    fn an_event_past_the_limit_is_an_error_not_a_bigger_buffer() {
        let mut decoder = Decoder::new();
        let err = push_long_line(&mut decoder, 40 * 1024 * 1024, 64 * 1024)
            .expect_err("the default 16 MiB cap triggers");
        assert_eq!(err.limit, DEFAULT_MAX_EVENT_BYTES);
        assert!(decoder.buf.len() <= DEFAULT_MAX_EVENT_BYTES + 64 * 1024);
        // Many short lines count too: it is the event that is capped, not the line.
        let mut decoder = Decoder::with_limit(100);
        for _ in 0..9 {
            decoder.push(b"data: 0123456789\n");
        }
        assert_eq!(decoder.next_event(), Err(EventTooLarge { limit: 100 }));
        // A complete event larger than the limit in one chunk is refused as well.
        let mut decoder = Decoder::with_limit(10);
        decoder.push(b"data: 0123456789\n\n");
        assert_eq!(decoder.next_event(), Err(EventTooLarge { limit: 10 }));
    }

    proptest! {
        // Any split of any byte stream (SSE-ish bytes: fields, `\r`, `\n`, `:`) yields the same
        // events as decoding it in one piece, and the events' raw bytes are the input's prefix.
        #[test]
        fn any_split_of_any_bytes_yields_the_same_events(
            parts in proptest::collection::vec(
                prop_oneof![
                    Just(&b"data:"[..]), Just(&b"data: "[..]), Just(&b"event: x"[..]),
                    Just(&b": c"[..]), Just(&b"\n"[..]), Just(&b"\r"[..]), Just(&b"\r\n"[..]),
                    Just(&b"{\"a\":1}"[..]), Just(&b"[DONE]"[..]), Just(&b"x"[..]),
                ],
                0..60,
            ),
            cuts in proptest::collection::vec(0usize..400, 0..20),
        ) {
            let bytes: Vec<u8> = parts.concat();
            let whole = decode_all(&[&bytes]);
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (bytes.len() + 1)).collect();
            cuts.sort_unstable();
            let mut chunks = Vec::new();
            let mut prev = 0;
            for c in cuts { chunks.push(&bytes[prev..c]); prev = c; }
            chunks.push(&bytes[prev..]);
            let split = decode_all(&chunks);
            prop_assert_eq!(&split, &whole);
            let raw: Vec<u8> = split.iter().flat_map(|e| e.raw.to_vec()).collect();
            prop_assert!(bytes.starts_with(&raw));
        }
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
