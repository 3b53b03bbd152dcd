//! `count_tokens`: a local ESTIMATE of a Messages request's input tokens. The upstream speaks
//! Chat Completions and has no counting endpoint, and its model's tokenizer is unknown here, so
//! the text is counted with OpenAI's `o200k_base` encoding (embedded by `tiktoken-rs`) plus a
//! small fixed overhead per message, tool and image. Close enough for Claude Code's `/context`
//! view and its compaction threshold; never billing-exact.

use serde_json::Value;

use super::request::{Block, MessagesRequest, Text};

/// Fixed cost of a message's role and framing.
const PER_MESSAGE: usize = 4;
/// Fixed cost of a tool definition's framing.
const PER_TOOL: usize = 8;
/// What an image is counted as (Anthropic bills ~1,600 tokens for a 1,092×1,092 image).
const PER_IMAGE: usize = 1_600;

/// The request's estimated input tokens.
pub fn estimate(request: &MessagesRequest) -> usize {
    let bpe = tiktoken_rs::o200k_base_singleton();
    let count = |text: &str| bpe.encode_ordinary(text).len();
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

fn text_tokens(text: &Text, count: &dyn Fn(&str) -> usize) -> usize {
    match text {
        Text::Plain(text) => count(text),
        Text::Blocks(blocks) => blocks.iter().map(|b| block_tokens(b, count)).sum(),
    }
}

fn block_tokens(block: &Block, count: &dyn Fn(&str) -> usize) -> usize {
    match block.kind.as_str() {
        "image" => PER_IMAGE,
        "tool_use" => {
            block.name.as_deref().map_or(0, count)
                + block.input.as_ref().map_or(0, |i| count(&i.to_string()))
        }
        "tool_result" => block.content.as_ref().map_or(0, |c| text_tokens(c, count)),
        // Thinking blocks echoed back are never sent upstream, so they cost nothing.
        "thinking" | "redacted_thinking" => 0,
        _ => block.text.as_deref().map_or(0, count),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn estimate_of(body: serde_json::Value) -> usize {
        estimate(&serde_json::from_value(body).expect("messages request"))
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
