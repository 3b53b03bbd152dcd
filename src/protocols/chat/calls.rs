//! Translating the upstream's tool calls back into the client's dialect. Streams keep text deltas
//! byte for byte; a call that must be translated is held until complete (next call index,
//! `finish_reason`, or the end) and then sent as one delta with the translated arguments, keeping
//! its `index`, `id` and the SSE framing. Calls with no mapping pass through unchanged.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Map, Value, json};

use super::call_chunk::CallChunk;
use super::chunk::CallView;
use crate::api::stream::{Chunk, Completion, ToolCallDelta};
use crate::conversation::answer::{Deliverable, deliverable};
use crate::conversation::mapping::{CallMapper, CallRoute, Outcome};
use crate::sse::data_event;

fn count_unmapped(mapper: &dyn CallMapper, name: &str) {
    metrics::counter!("harness_proxy_unmapped_tool_calls_total", "profile" => mapper.profile_label(), "tool" => mapper.tool_label(name))
        .increment(1);
}

/// What became of a call the bridge delivered: `translated`, `as_made` (valid for the client's
/// schema as the model made it) or `invalid` (valid neither way: sent as made, and reported).
fn count_translated(mapper: &dyn CallMapper, name: &str, outcome: Outcome) {
    metrics::counter!("harness_proxy_translated_tool_calls_total", "profile" => mapper.profile_label(), "tool" => mapper.tool_label(name), "outcome" => outcome.label())
        .increment(1);
}

/// `to_client`, counted. A call that fits the client's schema neither translated nor as made
/// still goes to the client (as a JSON object: its own validation shows the model the mistake),
/// but never silently: it is logged and counted `invalid`.
fn to_client(mapper: &dyn CallMapper, name: &str, arguments: &str) -> (String, String) {
    let delivered = mapper.to_client(name, arguments);
    count_translated(mapper, name, delivered.outcome);
    if delivered.outcome == Outcome::Invalid {
        tracing::warn!(tool = %name, client_tool = %delivered.name, profile = %mapper.profile(), "the model's call fits the client's schema neither translated nor as made; sent as made");
    }
    (delivered.name, delivered.arguments)
}

/// A call passed on as the model made it still gets arguments the client can parse.
fn keep_parseable(arguments: &mut String) {
    if let Deliverable::Flagged(flagged) = deliverable(arguments) {
        metrics::counter!("harness_proxy_invalid_tool_arguments_total").increment(1);
        *arguments = flagged;
    }
}

/// Translates the calls of a whole completion (non-streaming answers).
pub fn translate_completion(completion: &mut Completion, mapper: &dyn CallMapper) {
    for choice in &mut completion.choices {
        for call in choice.message.tool_calls.iter_mut().flatten() {
            match mapper.route(&call.function.name) {
                CallRoute::Translate => {
                    let (name, arguments) =
                        to_client(mapper, &call.function.name, &call.function.arguments);
                    call.function.name = name;
                    call.function.arguments = arguments;
                }
                CallRoute::Unmapped => {
                    count_unmapped(mapper, &call.function.name);
                    keep_parseable(&mut call.function.arguments);
                }
                CallRoute::Native => keep_parseable(&mut call.function.arguments),
            }
        }
    }
}

/// Translates the calls of a completion given as JSON, in place: every other field, known or not,
/// stays as it was.
pub fn translate_completion_json(completion: &mut Value, mapper: &dyn CallMapper) {
    let Some(choices) = completion.get_mut("choices").and_then(Value::as_array_mut) else {
        return;
    };
    for choice in choices {
        let Some(calls) = choice
            .pointer_mut("/message/tool_calls")
            .and_then(Value::as_array_mut)
        else {
            continue;
        };
        for call in calls {
            let Some(function) = call.get_mut("function").and_then(Value::as_object_mut) else {
                continue;
            };
            let name = function
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            match mapper.route(&name) {
                CallRoute::Translate => {
                    let arguments = function
                        .get("arguments")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    let (name, arguments) = to_client(mapper, &name, arguments);
                    function.insert("name".into(), Value::String(name));
                    function.insert("arguments".into(), Value::String(arguments));
                }
                CallRoute::Unmapped | CallRoute::Native => {
                    if matches!(mapper.route(&name), CallRoute::Unmapped) {
                        count_unmapped(mapper, &name);
                    }
                    if let Some(Value::String(arguments)) = function.get_mut("arguments") {
                        keep_parseable(arguments);
                    }
                }
            }
        }
    }
}

/// One call as it streams in.
struct Tracked {
    index: u32,
    id: Option<String>,
    name: String,
    arguments: String,
    /// Held back for translation (else its deltas pass through).
    held: bool,
    /// Already sent to the client (held calls are sent once, complete).
    sent: bool,
}

/// Searchers built once: `wants` runs on every event of a translated stream.
static TOOL_CALLS_KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"tool_calls\""));
static FINISH_REASON_KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"finish_reason"));

/// Per-stream state of call translation.
pub struct StreamCalls {
    mapper: Arc<dyn CallMapper>,
    /// Calls per choice index, in arrival order.
    choices: BTreeMap<u32, Vec<Tracked>>,
    /// `id`, `object`, `created`, `model` of the latest chunk, for the chunks we emit.
    head: Map<String, Value>,
    /// Per call delta of the chunk being read: forwarded (else held). Reused across chunks.
    kept: Vec<bool>,
}

impl StreamCalls {
    pub fn new(mapper: Arc<dyn CallMapper>) -> Self {
        Self {
            mapper,
            choices: BTreeMap::new(),
            head: Map::new(),
            kept: Vec::new(),
        }
    }

    fn has_held_pending(&self) -> bool {
        self.choices.values().flatten().any(|c| c.held && !c.sent)
    }

    /// Whether a data payload needs a look: it has calls, or ends held ones.
    pub fn wants(&self, data: &[u8]) -> bool {
        TOOL_CALLS_KEY.find(data).is_some()
            || (self.has_held_pending() && FINISH_REASON_KEY.find(data).is_some())
    }

    /// Processes one chunk. Returns `None` to forward the raw event unchanged, or the events to
    /// send instead (possibly none); an error when the chunk, its held calls taken out, cannot be
    /// written again.
    pub fn chunk(&mut self, data: &[u8]) -> Result<Option<Vec<Bytes>>, serde_json::Error> {
        let Ok(view) = crate::protocols::chat::chunk::parse_event::<CallChunk<'_>>(data) else {
            return Ok(None);
        };
        self.note_head(&view);
        let mut before = Vec::new();
        // Whether each call delta is forwarded, in order, for a chunk that must be re-emitted.
        self.kept.clear();
        // Whether the chunk, its held calls taken out, still has something for the client.
        let mut rest = view.usage.is_some();
        for choice in view.choices {
            let mut kept_here = false;
            for delta in choice.delta.tool_calls.into_iter().flatten() {
                let kept = self.call_delta(choice.index, delta, &mut before);
                kept_here |= kept;
                self.kept.push(kept);
            }
            rest |= kept_here || choice.delta.has_more || choice.finish_reason.is_some();
            if choice.finish_reason.is_some() {
                before.extend(self.complete(choice.index));
            }
        }
        let changed = self.kept.contains(&false);
        if before.is_empty() && !changed {
            return Ok(None);
        }
        let mut out = before;
        if !changed {
            out.push(data_event(data));
        } else if rest {
            out.push(self.without_held(data)?);
        }
        Ok(Some(out))
    }

    /// The chunk re-emitted without its held call deltas, every other field kept.
    fn without_held(&self, data: &[u8]) -> Result<Bytes, serde_json::Error> {
        // The view read the same fields with the same types, so this parse does not fail.
        let Ok(mut chunk) = crate::protocols::chat::chunk::parse_event::<Chunk>(data) else {
            return Ok(data_event(data));
        };
        let mut kept = self.kept.iter();
        for choice in &mut chunk.choices {
            if let Some(deltas) = choice.delta.tool_calls.take() {
                let deltas: Vec<ToolCallDelta> = deltas
                    .into_iter()
                    .filter(|_| kept.next().copied().unwrap_or(true))
                    .collect();
                if !deltas.is_empty() {
                    choice.delta.tool_calls = Some(deltas);
                }
            }
        }
        chunk
            .choices
            .retain(|c| c.finish_reason.is_some() || !delta_is_empty(&c.delta));
        Ok(data_event(&serde_json::to_vec(&chunk)?))
    }

    /// Keeps `id`, `object`, `created`, `model` of the latest chunk for the chunks we emit,
    /// allocating only when one changes (it seldom does within a stream).
    fn note_head(&mut self, view: &CallChunk<'_>) {
        // In this order: a key keeps the place of its first insertion in the emitted chunks.
        self.note_text("id", view.id.as_deref());
        self.note_text("object", view.object.as_deref());
        if let Some(created) = view.created
            && self.head.get("created").and_then(Value::as_i64) != Some(created)
        {
            self.head.insert("created".to_owned(), Value::from(created));
        }
        self.note_text("model", view.model.as_deref());
    }

    fn note_text(&mut self, key: &str, text: Option<&str>) {
        if let Some(text) = text
            && self.head.get(key).and_then(Value::as_str) != Some(text)
        {
            self.head
                .insert(key.to_owned(), Value::String(text.to_owned()));
        }
    }

    /// Registers one call delta; returns whether it is forwarded as it is.
    fn call_delta(&mut self, choice: u32, delta: CallView<'_>, before: &mut Vec<Bytes>) -> bool {
        let calls = self.choices.entry(choice).or_default();
        let position = match delta.index {
            Some(index) => calls.iter().position(|c| c.index == index),
            None => calls.len().checked_sub(1),
        };
        let function = delta.function.unwrap_or_default();
        let position = match position {
            Some(p) => p,
            None => {
                // A new call completes the held ones before it.
                before.extend(self.complete(choice));
                let name = function.name.as_deref().unwrap_or_default();
                let route = self.mapper.route(name);
                if route == CallRoute::Unmapped {
                    count_unmapped(self.mapper.as_ref(), name);
                }
                let calls = self.choices.entry(choice).or_default();
                calls.push(Tracked {
                    index: delta
                        .index
                        .unwrap_or(u32::try_from(calls.len()).unwrap_or(u32::MAX)),
                    id: None,
                    name: String::new(),
                    arguments: String::new(),
                    held: route == CallRoute::Translate,
                    sent: false,
                });
                calls.len() - 1
            }
        };
        let calls = self.choices.entry(choice).or_default();
        let call = &mut calls[position];
        if call.id.is_none() {
            call.id = delta.id.map(Cow::into_owned);
        }
        if let Some(name) = &function.name {
            call.name.push_str(name);
        }
        if let Some(arguments) = &function.arguments {
            call.arguments.push_str(arguments);
        }
        !call.held
    }

    /// Sends every held, unsent call of `choice` as one complete, translated delta each.
    fn complete(&mut self, choice: u32) -> Vec<Bytes> {
        let mut out = Vec::new();
        let Some(calls) = self.choices.get_mut(&choice) else {
            return out;
        };
        for call in calls.iter_mut().filter(|c| c.held && !c.sent) {
            call.sent = true;
            let (name, arguments) = to_client(self.mapper.as_ref(), &call.name, &call.arguments);
            // OpenAI's field order: index, id, type, function.
            let mut delta_call = Map::new();
            delta_call.insert("index".into(), json!(call.index));
            if let Some(id) = &call.id {
                delta_call.insert("id".into(), Value::String(id.clone()));
            }
            delta_call.insert("type".into(), json!("function"));
            delta_call.insert(
                "function".into(),
                json!({"name": name, "arguments": arguments}),
            );
            let mut chunk = self.head.clone();
            chunk.insert(
                "choices".into(),
                json!([{"index": choice, "delta": {"tool_calls": [Value::Object(delta_call)]}, "finish_reason": null}]),
            );
            out.push(crate::sse::json_event(None, &Value::Object(chunk)));
        }
        out
    }

    /// At the `DONE` sentinel or the end of the body: whatever is still held goes out.
    pub fn flush(&mut self) -> Vec<Bytes> {
        let choices: Vec<u32> = self.choices.keys().copied().collect();
        choices.into_iter().flat_map(|c| self.complete(c)).collect()
    }
}

fn delta_is_empty(delta: &crate::api::stream::Delta) -> bool {
    delta.role.is_none()
        && delta.content.is_none()
        && delta.reasoning_content.is_none()
        && delta.tool_calls.is_none()
        && delta.extra.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clients::bridge::Bridge;
    use crate::clients::profiles::Profiles;
    use crate::protocols::chat::Shaper;

    fn codex(client_tools: &[&str]) -> Arc<dyn CallMapper> {
        Arc::new(Bridge::open(Profiles::built_in("codex"), client_tools))
    }

    fn run(shaper: Shaper, events: &[String]) -> Vec<String> {
        let mut shaper = shaper;
        let mut out = Vec::new();
        // One byte at a time: translation must not depend on chunk boundaries.
        for event in events {
            for byte in event.as_bytes() {
                shaper
                    .push(std::slice::from_ref(byte), &mut out)
                    .expect("small events");
            }
        }
        shaper.finish(&mut out);
        out.iter()
            .map(|b| String::from_utf8(b.to_vec()).expect("utf8"))
            .collect()
    }

    fn call_chunk(index: u32, id: Option<&str>, name: Option<&str>, args: &str) -> String {
        let mut call = json!({"index": index, "function": {"arguments": args}});
        if let Some(id) = id {
            call["id"] = json!(id);
            call["type"] = json!("function");
        }
        if let Some(name) = name {
            call["function"]["name"] = json!(name);
        }
        format!(
            "data: {}\n\n",
            json!({"id": "c1", "object": "chat.completion.chunk", "created": 7, "model": "m", "choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": null}]})
        )
    }

    fn text(content: &str) -> String {
        format!(
            "data: {}\n\n",
            json!({"id": "c1", "object": "chat.completion.chunk", "created": 7, "model": "m", "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": null}]})
        )
    }

    fn finish(reason: &str) -> String {
        format!(
            "data: {}\n\n",
            json!({"id": "c1", "object": "chat.completion.chunk", "created": 7, "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
        )
    }

    fn emitted_call(index: u32, id: &str, name: &str, args: &str) -> String {
        format!(
            "data: {}\n\n",
            json!({"id": "c1", "object": "chat.completion.chunk", "created": 7, "model": "m", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": index, "id": id, "type": "function", "function": {"name": name, "arguments": args}}]}, "finish_reason": null}]})
        )
    }

    #[test]
    fn a_bash_call_split_across_many_chunks_reaches_codex_as_one_shell_delta() {
        let events = vec![
            text("Running it."),
            call_chunk(0, Some("call_1"), Some("bash"), ""),
            call_chunk(0, None, None, "{\"comm"),
            call_chunk(0, None, None, "and\":\"ls -la\",\"desc"),
            call_chunk(0, None, None, "ription\":\"List files\",\"timeout\":9000}"),
            finish("tool_calls"),
            "data: [DONE]\n\n".to_owned(),
        ];
        let out = run(
            Shaper::new(true).with_calls(codex(&["shell", "update_plan"])),
            &events,
        );
        assert_eq!(
            out,
            vec![
                text("Running it."),
                emitted_call(
                    0,
                    "call_1",
                    "shell",
                    r#"{"command":["bash","-lc","ls -la"],"timeout_ms":9000}"#
                ),
                finish("tool_calls"),
                "data: [DONE]\n\n".to_owned(),
            ]
        );
    }

    #[test]
    fn two_parallel_calls_are_each_completed_when_the_next_one_starts() {
        let events = vec![
            call_chunk(0, Some("call_a"), Some("bash"), "{\"command\":"),
            call_chunk(0, None, None, "\"pwd\"}"),
            call_chunk(
                1,
                Some("call_b"),
                Some("todowrite"),
                "{\"todos\":[{\"content\":\"x\",",
            ),
            call_chunk(
                1,
                None,
                None,
                "\"status\":\"cancelled\",\"priority\":\"low\"}]}",
            ),
            finish("tool_calls"),
            "data: [DONE]\n\n".to_owned(),
        ];
        let out = run(
            Shaper::new(false).with_calls(codex(&["shell", "update_plan"])),
            &events,
        );
        assert_eq!(
            out,
            vec![
                emitted_call(0, "call_a", "shell", r#"{"command":["bash","-lc","pwd"]}"#),
                emitted_call(
                    1,
                    "call_b",
                    "update_plan",
                    r#"{"plan":[{"step":"x","status":"completed"}]}"#
                ),
                finish("tool_calls"),
                "data: [DONE]\n\n".to_owned(),
            ]
        );
    }

    #[test]
    fn calls_without_a_mapping_pass_through_byte_for_byte() {
        let events = vec![
            call_chunk(0, Some("call_r"), Some("read"), "{\"filePath\":"),
            call_chunk(0, None, None, "\"/a\"}"),
            call_chunk(1, Some("call_s"), Some("bash"), "{\"command\":\"ls\"}"),
            "data: [DONE]\n\n".to_owned(),
        ];
        let out = run(Shaper::new(false).with_calls(codex(&["shell"])), &events);
        assert_eq!(
            out,
            vec![
                events[0].clone(),
                events[1].clone(),
                emitted_call(1, "call_s", "shell", r#"{"command":["bash","-lc","ls"]}"#),
                "data: [DONE]\n\n".to_owned(),
            ]
        );
    }

    #[test]
    fn a_stream_that_ends_without_done_still_delivers_the_held_call() {
        // (The route then adds an `upstream_interrupted` event: `Shaper::finish` says so.)
        let events = vec![call_chunk(
            0,
            Some("call_1"),
            Some("bash"),
            "{\"command\":\"make\"}",
        )];
        let out = run(Shaper::new(false).with_calls(codex(&["shell"])), &events);
        assert_eq!(
            out,
            vec![emitted_call(
                0,
                "call_1",
                "shell",
                r#"{"command":["bash","-lc","make"]}"#
            )]
        );
    }

    #[test]
    fn truncated_arguments_go_out_under_the_client_s_name_flagged_rather_than_lost() {
        let events = vec![
            call_chunk(0, Some("call_1"), Some("bash"), "{\"command\":\"ma"),
            finish("length"),
        ];
        let out = run(Shaper::new(false).with_calls(codex(&["shell"])), &events);
        assert_eq!(
            out,
            vec![
                emitted_call(
                    0,
                    "call_1",
                    "shell",
                    "{\"_invalid_arguments\":\"{\\\"command\\\":\\\"ma\"}"
                ),
                finish("length")
            ]
        );
    }

    #[test]
    fn a_completion_is_translated_in_place() {
        let mut completion = json!({"id": "x", "choices": [{"index": 0, "logprobs": null, "message": {"role": "assistant", "content": null, "refusal": null, "tool_calls": [
            {"id": "c", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}},
            {"id": "d", "type": "function", "function": {"name": "read", "arguments": "{}"}}
        ]}, "finish_reason": "tool_calls"}]});
        translate_completion_json(&mut completion, codex(&["shell"]).as_ref());
        assert_eq!(
            completion,
            json!({"id": "x", "choices": [{"index": 0, "logprobs": null, "message": {"role": "assistant", "content": null, "refusal": null, "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "shell", "arguments": "{\"command\":[\"bash\",\"-lc\",\"ls\"]}"}},
                {"id": "d", "type": "function", "function": {"name": "read", "arguments": "{}"}}
            ]}, "finish_reason": "tool_calls"}]})
        );
    }
}
