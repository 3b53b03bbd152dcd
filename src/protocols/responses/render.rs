//! Answer events → Responses SSE (`event:` + `data:` lines, growing `sequence_number`) or one
//! `response` object.
//!
//! Stream order, as Codex needs it: `response.created`, `response.in_progress`; per output item
//! `response.output_item.added`, its deltas (text inside `content_part.added`/`done`), its
//! `…done` events and `response.output_item.done` with the whole item (without it Codex shows an
//! empty answer and runs no tool); then `response.completed` (or `response.incomplete`) with the
//! response id, output and usage. A failed answer ends with `response.failed`; a stream this
//! renderer did not make (passthrough's, the upstream's own) with the `error` event
//! (`stream_error`).

use std::sync::Arc;

use bytes::Bytes;
use serde_json::{Value, json};

use super::Stamp;
use super::item::{IN_PROGRESS, Item, Kind};
use crate::api::text::Text;
use crate::conversation::seal::ReasoningSeal;
use crate::protocols::json_body::Slots;
use crate::protocols::{
    AnswerEvent, AnswerFailed, FinishReason, JsonAnswer, NoJson, Renderer, Usage,
};
use crate::sse::json_event;

/// The `error` event that ends a Responses stream which failed after its head, when the stream
/// is not this renderer's (passthrough forwards the upstream's own events): the API's stream
/// error event, `{"type":"error","code","message","param"}`. Its `sequence_number` is left out:
/// the proxy does not read the stream it forwards, so it cannot know the next one.
pub fn stream_error(code: &str, message: &str) -> String {
    let data = json!({"type": "error", "code": code, "message": message, "param": null});
    format!("event: error\ndata: {data}\n\n")
}

/// Where a delta goes: its item, and its part or summary index where the event names one.
#[derive(Clone, Copy)]
struct DeltaAt<'a> {
    index: usize,
    content_index: Option<u32>,
    summary_index: Option<u32>,
    text: &'a str,
}

/// A delta event's payload in the order `emit` writes a `json!` payload: its own fields, then
/// `type` and `sequence_number` (a text delta's `logprobs` is always empty).
#[derive(serde::Serialize)]
struct Delta<'a> {
    item_id: &'a str,
    output_index: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    content_index: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary_index: Option<u32>,
    delta: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    logprobs: Option<[u8; 0]>,
    #[serde(rename = "type")]
    kind: &'a str,
    sequence_number: u64,
}

/// What the request said about its tools, for rendering calls to them.
#[derive(Debug, Default, Clone)]
pub struct ToolKinds {
    /// Custom (freeform) tools: a call is a `custom_tool_call` whose `input` is the string the
    /// chat function got as `{"input": …}`.
    pub custom: Vec<String>,
    /// Functions flattened out of a namespace: (name, namespace).
    pub namespaced: Vec<(String, String)>,
}

pub struct ResponseRenderer {
    stamp: Stamp,
    model: String,
    tools: ToolKinds,
    sequence: u64,
    items: Vec<Item>,
    /// Index in `items` of the open message / reasoning item.
    open_message: Option<usize>,
    open_reasoning: Option<usize>,
    /// Upstream call index → index in `items`.
    calls: Vec<(u32, usize)>,
    end: Option<End>,
    /// Only `into_json` will be read (`holding_whole`): events are not rendered.
    quiet: bool,
    /// The client asked for `reasoning.encrypted_content`.
    wants_encrypted: bool,
    seal: Option<Arc<ReasoningSeal>>,
}

#[derive(Debug)]
enum End {
    Finished {
        reason: FinishReason,
        usage: Option<Usage>,
    },
    Failed(AnswerFailed),
}

impl ResponseRenderer {
    pub fn new(stamp: Stamp, model: String, tools: ToolKinds) -> Self {
        Self {
            stamp,
            model,
            tools,
            sequence: 0,
            items: Vec::new(),
            open_message: None,
            open_reasoning: None,
            calls: Vec::new(),
            end: None,
            quiet: false,
            wants_encrypted: false,
            seal: None,
        }
    }

    /// Reasoning items carry `encrypted_content` (the client's `include` asked for it): their
    /// text sealed, which Codex sends back verbatim with the history.
    pub fn with_encrypted_reasoning(mut self, wanted: bool) -> Self {
        self.wants_encrypted = wanted;
        self
    }

    /// A delta event (text, call arguments, reasoning summary), the same bytes `emit` writes for
    /// its payload, without building a map per delta; through `emit` should it not serialise.
    fn emit_delta(&mut self, kind: &'static str, delta: DeltaAt<'_>, out: &mut Vec<Bytes>) {
        if self.quiet {
            return;
        }
        let payload = Delta {
            item_id: &self.items[delta.index].id,
            output_index: delta.index,
            content_index: delta.content_index,
            summary_index: delta.summary_index,
            delta: delta.text,
            logprobs: delta.content_index.map(|_| []),
            kind,
            sequence_number: self.sequence,
        };
        match crate::sse::typed_event(kind, &payload) {
            Ok(event) => {
                self.sequence += 1;
                out.push(event);
            }
            Err(_) => {
                let value = serde_json::to_value(&payload).unwrap_or(Value::Null);
                self.emit(kind, value, out);
            }
        }
    }

    fn emit(&mut self, kind: &str, mut payload: Value, out: &mut Vec<Bytes>) {
        if self.quiet {
            return;
        }
        payload["type"] = json!(kind);
        payload["sequence_number"] = json!(self.sequence);
        self.sequence += 1;
        out.push(json_event(Some(kind), &payload));
    }

    fn item_id(&self, prefix: &str) -> String {
        let tail = self
            .stamp
            .id
            .strip_prefix("resp_")
            .unwrap_or(&self.stamp.id);
        format!("{prefix}_{tail}_{}", self.items.len())
    }

    /// The `response` object as it stands.
    fn response(&self, status: &str) -> Value {
        // An item still open when the answer failed is shown as it stood, `incomplete`: what was
        // streamed is not taken back.
        let output: Vec<Value> = self
            .items
            .iter()
            .map(|i| i.to_json(if i.done { "completed" } else { "incomplete" }))
            .collect();
        self.response_with(status, output)
    }

    /// `response` for the one JSON answer: the items' text moved into it, not copied (a folded
    /// answer can be `limits.max_answer_bytes` of it).
    fn into_response(
        mut self: Box<Self>,
        status: &str,
        slots: &Slots,
        texts: &mut Vec<Text>,
    ) -> Value {
        let output: Vec<Value> = std::mem::take(&mut self.items)
            .into_iter()
            .map(|i| {
                let status = if i.done { "completed" } else { "incomplete" };
                i.into_json(status, slots, texts)
            })
            .collect();
        self.response_with(status, output)
    }

    fn response_with(&self, status: &str, output: Vec<Value>) -> Value {
        let mut response = json!({
            "id": self.stamp.id, "object": "response", "created_at": self.stamp.created_at,
            "status": status, "model": self.model, "output": null, "usage": null,
            "error": null, "incomplete_details": null,
        });
        // Moved in: `json!` would copy the items.
        response["output"] = Value::Array(output);
        match &self.end {
            Some(End::Finished { reason, usage }) => {
                if let Some(usage) = usage {
                    response["usage"] = usage_json(usage);
                }
                if let Some(why) = incomplete_reason(reason) {
                    response["incomplete_details"] = json!({ "reason": why });
                }
            }
            Some(End::Failed(failed)) => {
                response["error"] = json!({"code": failed.code, "message": failed.message});
            }
            None => {}
        }
        response
    }

    fn open(&mut self, prefix: &str, kind: Kind, out: &mut Vec<Bytes>) -> usize {
        let item = Item {
            id: self.item_id(prefix),
            kind,
            text: Text::new(),
            done: false,
            sealed: None,
            server_signature: None,
            server_redacted: Vec::new(),
        };
        let index = self.items.len();
        let added = item.to_json(IN_PROGRESS);
        self.items.push(item);
        self.emit(
            "response.output_item.added",
            json!({"output_index": index, "item": added}),
            out,
        );
        index
    }

    fn text(&mut self, delta: &str, out: &mut Vec<Bytes>) {
        self.close_reasoning(out);
        let index = match self.open_message {
            Some(index) => index,
            None => {
                let index = self.open("msg", Kind::Message, out);
                let id = self.items[index].id.clone();
                self.emit(
                    "response.content_part.added",
                    json!({"item_id": id, "output_index": index, "content_index": 0,
                        "part": {"type": "output_text", "text": "", "annotations": []}}),
                    out,
                );
                self.open_message = Some(index);
                index
            }
        };
        self.items[index].text.push_str(delta);
        let at = DeltaAt {
            index,
            content_index: Some(0),
            summary_index: None,
            text: delta,
        };
        self.emit_delta("response.output_text.delta", at, out);
    }

    /// The open reasoning item, opened now if there is none.
    fn reasoning_item(&mut self, out: &mut Vec<Bytes>) -> usize {
        self.close_message(out);
        if let Some(index) = self.open_reasoning {
            return index;
        }
        let index = self.open("rs", Kind::Reasoning, out);
        let id = self.items[index].id.clone();
        self.emit(
            "response.reasoning_summary_part.added",
            json!({"item_id": id, "output_index": index, "summary_index": 0,
                "part": {"type": "summary_text", "text": ""}}),
            out,
        );
        self.open_reasoning = Some(index);
        index
    }

    /// Kept for the item's seal (a signature with no text is a reasoning item of its own).
    fn reasoning_signature(&mut self, signature: &str, out: &mut Vec<Bytes>) {
        let index = self.reasoning_item(out);
        self.items[index]
            .server_signature
            .get_or_insert_with(String::new)
            .push_str(signature);
    }

    /// Kept for the item's seal, like the signature.
    fn redacted_reasoning(&mut self, data: String, out: &mut Vec<Bytes>) {
        let index = self.reasoning_item(out);
        self.items[index].server_redacted.push(data);
    }

    fn reasoning(&mut self, delta: &str, out: &mut Vec<Bytes>) {
        let index = self.reasoning_item(out);
        self.items[index].text.push_str(delta);
        let at = DeltaAt {
            index,
            content_index: None,
            summary_index: Some(0),
            text: delta,
        };
        self.emit_delta("response.reasoning_summary_text.delta", at, out);
    }

    fn close_message(&mut self, out: &mut Vec<Bytes>) {
        let Some(index) = self.open_message.take() else {
            return;
        };
        if self.quiet {
            self.items[index].done = true;
            return;
        }
        let (id, text) = (self.items[index].id.clone(), self.items[index].text.clone());
        self.emit(
            "response.output_text.done",
            json!({"item_id": id, "output_index": index, "content_index": 0, "text": text, "logprobs": []}),
            out,
        );
        self.emit(
            "response.content_part.done",
            json!({"item_id": id, "output_index": index, "content_index": 0,
                "part": {"type": "output_text", "text": text, "annotations": []}}),
            out,
        );
        self.item_done(index, out);
    }

    fn close_reasoning(&mut self, out: &mut Vec<Bytes>) {
        let Some(index) = self.open_reasoning.take() else {
            return;
        };
        if self.wants_encrypted
            && let Some(seal) = &self.seal
        {
            let item = &self.items[index];
            let signature = item.server_signature.as_deref();
            let sealed =
                seal.seal_with_server(&item.text.as_str(), signature, &item.server_redacted);
            self.items[index].sealed = Some(sealed);
        }
        if self.quiet {
            self.items[index].done = true;
            return;
        }
        let (id, text) = (self.items[index].id.clone(), self.items[index].text.clone());
        self.emit(
            "response.reasoning_summary_text.done",
            json!({"item_id": id, "output_index": index, "summary_index": 0, "text": text}),
            out,
        );
        self.emit(
            "response.reasoning_summary_part.done",
            json!({"item_id": id, "output_index": index, "summary_index": 0,
                "part": {"type": "summary_text", "text": text}}),
            out,
        );
        self.item_done(index, out);
    }

    fn item_done(&mut self, index: usize, out: &mut Vec<Bytes>) {
        self.items[index].done = true;
        if self.quiet {
            return;
        }
        let item = self.items[index].to_json("completed");
        self.emit(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
            out,
        );
    }

    fn call_start(&mut self, call: u32, call_id: String, name: String, out: &mut Vec<Bytes>) {
        self.close_message(out);
        self.close_reasoning(out);
        let index = if self.tools.custom.contains(&name) {
            self.open("ctc", Kind::Custom { call_id, name }, out)
        } else {
            let namespace = self
                .tools
                .namespaced
                .iter()
                .find(|(function, _)| *function == name)
                .map(|(_, namespace)| namespace.clone());
            self.open(
                "fc",
                Kind::Function {
                    call_id,
                    name,
                    namespace,
                },
                out,
            )
        };
        self.calls.push((call, index));
    }

    fn call_index(&self, call: u32) -> Option<usize> {
        self.calls.iter().find(|(c, _)| *c == call).map(|(_, i)| *i)
    }

    fn call_arguments(&mut self, call: u32, delta: &str, out: &mut Vec<Bytes>) {
        let Some(index) = self.call_index(call) else {
            return;
        };
        self.items[index].text.push_str(delta);
        // A custom call's input is only known once its `{"input": …}` JSON is complete.
        if matches!(self.items[index].kind, Kind::Function { .. }) {
            let at = DeltaAt {
                index,
                content_index: None,
                summary_index: None,
                text: delta,
            };
            self.emit_delta("response.function_call_arguments.delta", at, out);
        }
    }

    fn call_end(&mut self, call: u32, out: &mut Vec<Bytes>) {
        let Some(index) = self.call_index(call) else {
            return;
        };
        if self.items[index].done {
            return;
        }
        if self.quiet {
            self.items[index].done = true;
            return;
        }
        let id = self.items[index].id.clone();
        if matches!(self.items[index].kind, Kind::Function { .. }) {
            let arguments = self.items[index].text.clone();
            self.emit(
                "response.function_call_arguments.done",
                json!({"item_id": id, "output_index": index, "arguments": arguments}),
                out,
            );
        } else {
            let input = self.items[index].custom_input();
            self.emit(
                "response.custom_tool_call_input.delta",
                json!({"item_id": id, "output_index": index, "delta": input}),
                out,
            );
            self.emit(
                "response.custom_tool_call_input.done",
                json!({"item_id": id, "output_index": index, "input": input}),
                out,
            );
        }
        self.item_done(index, out);
    }

    fn finish(&mut self, reason: FinishReason, usage: Option<Usage>, out: &mut Vec<Bytes>) {
        self.close_message(out);
        self.close_reasoning(out);
        let open: Vec<u32> = self
            .calls
            .iter()
            .filter(|(_, i)| !self.items[*i].done)
            .map(|(c, _)| *c)
            .collect();
        for call in open {
            self.call_end(call, out);
        }
        let incomplete = incomplete_reason(&reason).is_some();
        self.end = Some(End::Finished { reason, usage });
        let (kind, status) = if incomplete {
            ("response.incomplete", "incomplete")
        } else {
            ("response.completed", "completed")
        };
        if !self.quiet {
            let response = self.response(status);
            self.emit(kind, json!({ "response": response }), out);
        }
    }
}

fn incomplete_reason(reason: &FinishReason) -> Option<&'static str> {
    match reason {
        FinishReason::Length => Some("max_output_tokens"),
        FinishReason::ContentFilter => Some("content_filter"),
        FinishReason::Stop | FinishReason::ToolCalls | FinishReason::Other(_) => None,
    }
}

fn usage_json(usage: &Usage) -> Value {
    json!({
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": usage.cached_input_tokens},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.input_tokens + usage.output_tokens,
    })
}

impl Renderer for ResponseRenderer {
    fn holding_whole(&mut self) {
        self.quiet = true;
    }

    fn seal_reasoning(&mut self, seal: Arc<ReasoningSeal>) {
        self.seal = Some(seal);
    }

    fn start(&mut self, out: &mut Vec<Bytes>) {
        let response = self.response("in_progress");
        self.emit("response.created", json!({ "response": &response }), out);
        self.emit("response.in_progress", json!({ "response": response }), out);
    }

    fn event(&mut self, event: AnswerEvent, out: &mut Vec<Bytes>) {
        if self.end.is_some() {
            return;
        }
        match event {
            AnswerEvent::Text(delta) => self.text(&delta, out),
            AnswerEvent::Reasoning(delta) => self.reasoning(&delta, out),
            AnswerEvent::ReasoningSignature(signature) => {
                self.reasoning_signature(&signature, out);
            }
            AnswerEvent::RedactedReasoning(data) => self.redacted_reasoning(data, out),
            AnswerEvent::ToolCallStart { index, id, name } => self.call_start(index, id, name, out),
            AnswerEvent::ToolCallArguments { index, delta } => {
                self.call_arguments(index, &delta, out);
            }
            AnswerEvent::ToolCallEnd { index } => self.call_end(index, out),
            AnswerEvent::Finish { reason, usage } => self.finish(reason, usage, out),
            AnswerEvent::Error { message, code } => {
                self.end = Some(End::Failed(AnswerFailed { message, code }));
                let response = self.response("failed");
                self.emit("response.failed", json!({ "response": response }), out);
            }
        }
    }

    fn into_json(self: Box<Self>) -> Result<JsonAnswer, NoJson> {
        let status = match &self.end {
            Some(End::Failed(failed)) => return Err(failed.clone().into()),
            None => {
                return Err(NoJson::Failed(AnswerFailed {
                    message: "the upstream answer ended before it finished".into(),
                    code: "upstream_interrupted".into(),
                }));
            }
            Some(End::Finished { reason, .. }) if incomplete_reason(reason).is_some() => {
                "incomplete"
            }
            Some(End::Finished { .. }) => "completed",
        };
        let text_bytes = self.items.iter().map(|i| i.text.len()).sum();
        let (slots, mut texts) = (Slots::new(), Vec::new());
        let response = self.into_response(status, &slots, &mut texts);
        Ok(JsonAnswer::of_placed(response, &slots, texts, text_bytes)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn renderer() -> ResponseRenderer {
        let stamp = Stamp {
            id: "resp_0123456789abcdef".to_owned(),
            created_at: 7,
        };
        ResponseRenderer::new(stamp, "m".to_owned(), ToolKinds::default())
    }

    #[test]
    fn a_delta_event_is_byte_for_byte_what_the_generic_emit_writes() {
        let text = "line\n\t\"quoted\" \\ é \u{1}";
        let mut typed = renderer();
        let mut generic = renderer();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let index = typed.open("msg", Kind::Message, &mut a);
        generic.open("msg", Kind::Message, &mut b);
        let id = typed.items[index].id.clone();
        let cases = [
            (
                Some(0),
                None,
                "response.output_text.delta",
                json!({"item_id": id, "output_index": index, "content_index": 0, "delta": text, "logprobs": []}),
            ),
            (
                None,
                Some(0),
                "response.reasoning_summary_text.delta",
                json!({"item_id": id, "output_index": index, "summary_index": 0, "delta": text}),
            ),
            (
                None,
                None,
                "response.function_call_arguments.delta",
                json!({"item_id": id, "output_index": index, "delta": text}),
            ),
        ];
        for (content_index, summary_index, kind, payload) in cases {
            let at = DeltaAt {
                index,
                content_index,
                summary_index,
                text,
            };
            typed.emit_delta(kind, at, &mut a);
            generic.emit(kind, payload, &mut b);
        }
        assert_eq!(a, b);
        assert_eq!(typed.sequence, generic.sequence);
        let last = String::from_utf8_lossy(&a[a.len() - 1]).into_owned();
        assert!(
            last.ends_with(
                r#""type":"response.function_call_arguments.delta","sequence_number":3}

"#
            ),
            "{last}"
        );
    }
}
