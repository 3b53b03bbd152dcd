//! `count_tokens`: a local ESTIMATE of a Messages request's input tokens. The upstream speaks
//! Chat Completions and has no counting endpoint, and its model's tokenizer is unknown here, so
//! the text is counted with OpenAI's `o200k_base` encoding (embedded by `tiktoken-rs`) plus a
//! small fixed overhead per message, tool and image. Close enough for Claude Code's `/context`
//! view and its compaction threshold; never billing-exact.
//!
//! Linear in the text for any input: the text is cut into runs of one character class
//! (whitespace, letters and digits, anything else); a run longer than `MAX_ENCODED_RUN` bytes is
//! estimated as one token per `BYTES_PER_TOKEN` bytes and never encoded, and the short runs are
//! encoded together in chunks of at most `MAX_ENCODED_CHUNK` bytes, cut where whitespace starts
//! (where the encoding would split anyway). Memory stays that of one chunk.

use serde_json::Value;

use super::request::{Block, BlockKind, MessagesRequest, Text};

/// Fixed cost of a message's role and framing.
pub const PER_MESSAGE: usize = 4;
/// Fixed cost of a tool definition's framing.
pub const PER_TOOL: usize = 8;
/// What an image is counted as (Anthropic bills ~1,600 tokens for a 1,092×1,092 image).
pub const PER_IMAGE: usize = 1_600;
/// A run of one character class longer than this many bytes is not encoded but estimated by
/// its length: BPE time grows faster than a piece's length (a 30 MiB run of one letter took 20 s
/// of CPU and 1.7 GB), and such runs (base64, hashes, minified code, padding) are rare in prose.
const MAX_ENCODED_RUN: usize = 256;
/// Bytes per token for an estimated run: o200k averages about 4 bytes of English text per token.
const BYTES_PER_TOKEN: usize = 4;
/// Short runs are handed to the encoder together, in chunks of at most this many bytes.
const MAX_ENCODED_CHUNK: usize = 8 * 1024;

/// The request's estimated input tokens.
pub fn estimate(request: &MessagesRequest) -> usize {
    let bpe = tiktoken_rs::o200k_base_singleton();
    let count = |text: &str| count_text(text, &mut |piece| bpe.encode_ordinary(piece).len());
    let mut total = request
        .system
        .as_ref()
        .map_or(0, |s| text_tokens(s, &count));
    for message in &request.messages {
        total += PER_MESSAGE
            + message
                .content
                .as_ref()
                .map_or(0, |c| text_tokens(c, &count));
    }
    for tool in request.tools.iter().flatten() {
        total += PER_TOOL;
        for key in ["name", "description"] {
            total += tool.get(key).and_then(Value::as_str).map_or(0, count);
        }
        total += tool
            .get("input_schema")
            .map_or(0, |schema| count(&schema.to_string()));
    }
    total
}

/// The estimated tokens of one text, as `estimate` counts each: for another protocol's count
/// (Gemini's `:countTokens`), so every front estimates alike.
pub fn count(text: &str) -> usize {
    let bpe = tiktoken_rs::o200k_base_singleton();
    count_text(text, &mut |piece| bpe.encode_ordinary(piece).len())
}

/// The tokens of `text`, with `encode` the BPE encoder: long runs estimated by their length,
/// the rest encoded in bounded chunks (see the module's doc).
fn count_text(text: &str, encode: &mut dyn FnMut(&str) -> usize) -> usize {
    let mut total = 0;
    // Start of the short runs not encoded yet.
    let mut pending = 0;
    let mut runs = Runs::new(text);
    while let Some((start, end, class)) = runs.next_run() {
        let len = end - start;
        if len > MAX_ENCODED_RUN {
            if pending < start {
                total += encode(&text[pending..start]);
            }
            total += len.div_ceil(BYTES_PER_TOKEN);
            pending = end;
        } else if end - pending > MAX_ENCODED_CHUNK
            || (class == Class::Space && start - pending >= MAX_ENCODED_CHUNK / 2)
        {
            // `start - pending` is within the bound: the check passed for the run before.
            total += encode(&text[pending..start]);
            pending = start;
        }
    }
    if pending < text.len() {
        total += encode(&text[pending..]);
    }
    total
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Space,
    Word,
    Other,
}

fn class_of(c: char) -> Class {
    if c.is_whitespace() {
        Class::Space
    } else if c.is_alphanumeric() {
        Class::Word
    } else {
        Class::Other
    }
}

/// The maximal runs of one `Class` in a text, as byte ranges.
struct Runs<'a> {
    chars: std::iter::Peekable<std::str::CharIndices<'a>>,
    len: usize,
}

impl<'a> Runs<'a> {
    fn new(text: &'a str) -> Self {
        Self {
            chars: text.char_indices().peekable(),
            len: text.len(),
        }
    }

    fn next_run(&mut self) -> Option<(usize, usize, Class)> {
        let (start, first) = self.chars.next()?;
        let class = class_of(first);
        while let Some(&(at, c)) = self.chars.peek() {
            if class_of(c) != class {
                return Some((start, at, class));
            }
            self.chars.next();
        }
        Some((start, self.len, class))
    }
}

fn text_tokens(text: &Text, count: &dyn Fn(&str) -> usize) -> usize {
    match text {
        Text::Plain(text) => count(text),
        Text::Blocks(blocks) => blocks.iter().map(|b| block_tokens(b, count)).sum(),
    }
}

fn block_tokens(block: &Block, count: &dyn Fn(&str) -> usize) -> usize {
    match block.kind {
        BlockKind::Image => PER_IMAGE,
        BlockKind::ToolUse => {
            block.name.as_deref().map_or(0, count)
                + block.input.as_ref().map_or(0, |i| count(&i.to_string()))
        }
        BlockKind::ToolResult => block.content.as_ref().map_or(0, |c| text_tokens(c, count)),
        // Thinking blocks cost nothing in this estimate, though opencode may send their reasoning
        // back as `reasoning_content` (`opencode.reasoning`): it is not part of the prompt text.
        BlockKind::Thinking | BlockKind::RedactedThinking => 0,
        // Blocks of kinds this front does not read count by their text, if any.
        BlockKind::Text | BlockKind::Other => block.text.as_deref().map_or(0, count),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn estimate_of(body: serde_json::Value) -> usize {
        estimate(&serde_json::from_value(body).expect("messages request"))
    }

    /// Every piece handed to the BPE encoder, by length.
    fn encoded_pieces(text: &str) -> (usize, Vec<usize>) {
        let mut seen = Vec::new();
        let total = count_text(text, &mut |piece| {
            seen.push(piece.len());
            piece.len() / 4
        });
        (total, seen)
    }

    #[test]
    fn a_30_mib_run_never_reaches_the_encoder_and_is_estimated_by_length() {
        let run = "a".repeat(30 * 1024 * 1024);
        let (total, seen) = encoded_pieces(&run);
        assert!(
            seen.is_empty(),
            "encoded pieces: {:?}",
            &seen[..seen.len().min(4)]
        );
        assert_eq!(total, run.len().div_ceil(BYTES_PER_TOKEN));
        // Long whitespace runs and long runs between ordinary words: same rule.
        let mixed = format!(
            "hello {} world{}end",
            "b".repeat(10_000),
            " ".repeat(10_000)
        );
        let (_, seen) = encoded_pieces(&mixed);
        assert!(
            seen.iter().all(|&n| n <= MAX_ENCODED_CHUNK),
            "chunks: {seen:?}"
        );
    }

    #[test]
    fn ordinary_text_is_encoded_in_bounded_chunks_with_the_same_count() {
        // 270 KB of prose: encoded, never in one piece, and counted as the whole text is.
        let prose = "The quick brown fox jumps over the lazy dog. ".repeat(6_000);
        let (_, seen) = encoded_pieces(&prose);
        assert!(seen.len() > 1, "{} chunks", seen.len());
        assert!(
            seen.iter().all(|&n| n <= MAX_ENCODED_CHUNK),
            "chunks over the bound"
        );
        let bpe = tiktoken_rs::o200k_base_singleton();
        let whole = bpe.encode_ordinary(&prose).len();
        let chunked = count_text(&prose, &mut |piece| bpe.encode_ordinary(piece).len());
        assert_eq!(chunked, whole, "{} chunks", seen.len());
    }

    #[test]
    fn counts_text_with_the_o200k_encoding() {
        // "hello world" is two o200k tokens, plus the message overhead.
        let n = estimate_of(
            serde_json::json!({"model": "m", "messages": [{"role": "user", "content": "hello world"}]}),
        );
        assert_eq!(n, 2 + PER_MESSAGE);
    }

    #[test]
    fn tools_images_and_results_add_up_thinking_does_not() {
        let base =
            serde_json::json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
        let with_more = serde_json::json!({
            "model": "m",
            "messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [{"type": "thinking", "thinking": "long thoughts here", "signature": "s"}]},
                {"role": "user", "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}]}
            ],
            "tools": [{"name": "Bash", "description": "Run", "input_schema": {"type": "object"}}]
        });
        let grown = estimate_of(with_more) - estimate_of(base);
        assert!(grown > 2 * PER_MESSAGE + PER_IMAGE + PER_TOOL, "{grown}");
        assert!(
            grown < 2 * PER_MESSAGE + PER_IMAGE + PER_TOOL + 20,
            "{grown}"
        );
    }
}
