//! No call the client cannot run reaches it (issue 29, item 3). The upstream's answer is read as
//! it streams; text and reasoning go on at once, but a tool call, the finish and the end are held
//! until the answer is complete. If every call can reach the client (`CallMapper::deliverable`:
//! a tool it has, arguments that validate against its schema), the held events follow. If one
//! cannot, the proxy answers that call upstream itself: the same request, plus the model's turn
//! and, for each of its calls, a tool result saying what was wrong and what the tool takes
//! (`CallMapper::explain`); the new answer's events continue the client's one answer. At most
//! `MAX_CORRECTIONS` times per client turn; past that the answer ends there, as text: the model's
//! words reach the client as its final answer and no call does. Each correction is logged and
//! counted (`harness_proxy_call_corrections_total{outcome}`).
//!
//! Owns: holding an answer's calls, the correction request. Must not: translate a call (the
//! shaper and renderers do), hold text, or read more than an answer's bound.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::{Value, json};

use crate::conversation::mapping::CallMapper;
use crate::protocols::chat::chunk::AnswerChunkView;
use crate::protocols::chat::end::{done_event, is_done};
use crate::protocols::chat::layout::CallPieces;
use crate::routes::checks::{Calls, Checks};
use crate::sse::{Decoder, json_event};
use crate::upstream::{BodyStream, Outbound, Upstream, UpstreamError, UpstreamResponse};

/// Corrections per client turn before the model's text is the answer.
pub const MAX_CORRECTIONS: usize = 3;

/// What a correction request is made from: the request first sent, and where to send it.
pub(crate) struct Corrector {
    pub(crate) upstream: Arc<Upstream>,
    pub(crate) outbound: Resend,
    pub(crate) mapper: Arc<dyn CallMapper>,
    /// Where a large answer's calls are checked (`routes::checks`): the large rewrites' slots.
    pub(crate) slots: Arc<tokio::sync::Semaphore>,
    /// `limits.max_sse_event_bytes`.
    pub(crate) max_event: usize,
    /// `limits.max_answer_bytes`: the most held or remembered of one answer; past it the answer
    /// goes on as it is.
    pub(crate) max_answer: usize,
}

/// The parts of an upstream request needed to send it again with another body.
pub(crate) struct Resend {
    pub(crate) path: String,
    pub(crate) headers: http::HeaderMap,
    pub(crate) client_authorization: Option<http::HeaderValue>,
    pub(crate) body: crate::conversation::body_parts::BodyParts,
    /// A Messages request to a Messages upstream (`Outbound::messages`).
    pub(crate) messages: bool,
}

impl Resend {
    pub(crate) fn of(outbound: &Outbound) -> Self {
        Self {
            path: outbound.path.clone(),
            headers: outbound.headers.clone(),
            client_authorization: outbound.client_authorization.clone(),
            body: outbound.body.clone(),
            messages: outbound.messages,
        }
    }

    /// The same request with another body (the first one's, grown by the answered turn: its
    /// strings written by `json_escape`, the whole history again).
    pub(crate) fn with_body(&self, body: &Value) -> Outbound {
        let mut written = Vec::with_capacity(self.body.len() + self.body.len() / 8 + 1024);
        crate::json_escape::push_value(&mut written, body);
        Outbound {
            method: http::Method::POST,
            path: self.path.clone(),
            headers: self.headers.clone(),
            body: crate::harness::sized(written).into(),
            client_authorization: self.client_authorization.clone(),
            dispatched: None,
            messages: self.messages,
        }
    }
}

/// One call of an answer the proxy answers upstream itself.
pub(crate) struct HeldCall<'a> {
    pub(crate) id: &'a str,
    pub(crate) name: &'a str,
    pub(crate) arguments: &'a str,
    /// The client cannot run it (else it was not run because another call of its turn cannot).
    pub(crate) bad: bool,
}

/// The model's turn with its calls, and a tool result for each: what was wrong with a call the
/// client cannot run and what the tool takes (`CallMapper::explain`), or that a valid one was
/// not run.
pub(crate) fn answered_calls(
    text: &str,
    reasoning: &str,
    calls: &[HeldCall<'_>],
    mapper: &dyn CallMapper,
) -> Vec<Value> {
    let listed: Vec<Value> = calls
        .iter()
        .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
        .collect();
    let mut turn = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }, "tool_calls": listed});
    if !reasoning.is_empty() {
        turn["reasoning_content"] = json!(reasoning);
    }
    let mut out = vec![turn];
    for call in calls {
        let content = result_text(call, mapper);
        out.push(json!({"role": "tool", "tool_call_id": call.id, "content": content}));
    }
    out
}

/// `answered_calls` in Anthropic's Messages form, for a Messages upstream: the model's turn as
/// its blocks (its thinking only with the server's signature, which the server checks; text; a
/// `tool_use` per call, arguments that are not a JSON object as `{}`), then one user turn of
/// `tool_result` blocks.
pub(crate) fn answered_calls_messages(
    turn: &TurnText,
    calls: &[HeldCall<'_>],
    mapper: &dyn CallMapper,
) -> Vec<Value> {
    let mut blocks = Vec::with_capacity(calls.len() + 2);
    if !turn.reasoning.is_empty() && !turn.signature.is_empty() {
        blocks.push(
            json!({"type": "thinking", "thinking": turn.reasoning, "signature": turn.signature}),
        );
    }
    if !turn.text.is_empty() {
        blocks.push(json!({"type": "text", "text": turn.text}));
    }
    let mut results = Vec::with_capacity(calls.len());
    for call in calls {
        let input = serde_json::from_str::<Value>(call.arguments)
            .ok()
            .filter(Value::is_object)
            .unwrap_or_else(|| json!({}));
        blocks.push(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}));
        results.push(json!({"type": "tool_result", "tool_use_id": call.id,
            "content": result_text(call, mapper), "is_error": true}));
    }
    vec![
        json!({"role": "assistant", "content": blocks}),
        json!({"role": "user", "content": results}),
    ]
}

/// The tool result the proxy writes for a call it answers itself.
fn result_text(call: &HeldCall<'_>, mapper: &dyn CallMapper) -> String {
    if call.bad {
        format!("Error: {}.", mapper.explain(call.name, call.arguments))
    } else {
        "Not run: another call of the same turn could not be run. Call it again if it is still needed.".to_owned()
    }
}

/// The text, reasoning and the server's reasoning signature of the answer passed on so far.
#[derive(Debug, Default)]
pub(crate) struct TurnText {
    pub(crate) text: String,
    pub(crate) reasoning: String,
    pub(crate) signature: String,
}

/// One call of the answer as it streams in.
#[derive(Default)]
struct Call {
    id: String,
    name: String,
    arguments: String,
}

impl Calls for BTreeMap<u32, Call> {
    fn each(&self) -> impl Iterator<Item = (&str, &str)> {
        self.values()
            .map(|call| (call.name.as_str(), call.arguments.as_str()))
    }
}

struct State {
    corrector: Corrector,
    body: BodyStream,
    decoder: Decoder,
    /// Events ready for the client.
    out: VecDeque<Result<Bytes, UpstreamError>>,
    /// Events held until the answer is decided: its calls, its finish, its end.
    held: Vec<Bytes>,
    /// The data of the events already passed on (text, reasoning), for the model's turn in a
    /// correction request.
    passed: Vec<Bytes>,
    remembered: usize,
    calls: BTreeMap<u32, Call>,
    /// The answer's call pieces, read (a chunk laid out as the last one by its arguments alone).
    call_pieces: CallPieces,
    corrections: usize,
    ended: bool,
}

/// The upstream's answer, its undeliverable calls answered upstream before any reaches the client.
pub(crate) fn correcting(body: BodyStream, corrector: Corrector) -> BodyStream {
    let decoder = Decoder::with_limit(corrector.max_event);
    let state = State {
        corrector,
        body,
        decoder,
        out: VecDeque::new(),
        held: Vec::new(),
        passed: Vec::new(),
        remembered: 0,
        calls: BTreeMap::new(),
        call_pieces: CallPieces::default(),
        corrections: 0,
        ended: false,
    };
    Box::pin(futures_util::stream::unfold(
        state,
        |mut state| async move {
            loop {
                if let Some(item) = state.out.pop_front() {
                    return Some((item, state));
                }
                if state.ended {
                    return None;
                }
                match state.body.next().await {
                    Some(Ok(bytes)) => state.read(&bytes),
                    Some(Err(err)) => {
                        // The answer failed: what was held goes, then the failure.
                        state.release();
                        state.out.push_back(Err(err));
                        state.ended = true;
                    }
                    None => state.decide().await,
                }
            }
        },
    ))
}

/// Sends a correction request; `None` when there is none to send or the upstream refuses it.
pub(crate) async fn send(
    upstream: &Upstream,
    request: Option<Outbound>,
) -> Option<UpstreamResponse> {
    match upstream.send(request?).await {
        Ok(upstream) if upstream.status.is_success() => Some(upstream),
        Ok(upstream) => {
            tracing::warn!(
                status = upstream.status.as_u16(),
                "the correction request was refused"
            );
            None
        }
        Err(err) => {
            tracing::warn!(error = %err, "the correction request failed");
            None
        }
    }
}

/// Built once: `memmem::find` builds a searcher per call, and this looks at every event twice.
static CALLS_KEY: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
    std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"\"tool_calls\""));

/// A cheap look before parsing: only events that may carry a call or a finish are parsed. A
/// finish is a `finish_reason` with a string value: every OpenAI chunk names the key, with
/// `null` until the last, and the key alone had every event of a text answer parsed here.
fn may_hold(data: &[u8]) -> bool {
    CALLS_KEY.find(data).is_some() || crate::protocols::chat::names_a_finish(data)
}

impl State {
    fn read(&mut self, bytes: &[u8]) {
        self.decoder.push(bytes);
        loop {
            let event = match self.decoder.next_event() {
                Ok(Some(event)) => event,
                Ok(None) => return,
                Err(too_large) => {
                    // Too large to look at, and to pass on: the decoder holds its start, so the
                    // shaper downstream would never see it. What was held goes, then the error
                    // that ends the answer (dropping the upstream request with it).
                    self.release();
                    self.out
                        .push_back(Err(UpstreamError::EventTooLarge(too_large.limit)));
                    self.ended = true;
                    return;
                }
            };
            // Once something is held, everything after it is too: the events keep their order.
            if !self.held.is_empty() {
                if let Some(data) = &event.data {
                    self.note_calls(data);
                }
                self.hold(event.raw);
                continue;
            }
            let Some(data) = event.data.clone() else {
                self.pass(event.raw, None);
                continue;
            };
            if is_done(&data) {
                self.hold(event.raw);
                continue;
            }
            if may_hold(&data) && self.note_calls(&data) {
                self.hold(event.raw);
            } else {
                self.pass(event.raw, Some(data));
            }
        }
    }

    /// Records the call pieces of one event; whether it must be held (a call or a finish).
    fn note_calls(&mut self, data: &[u8]) -> bool {
        if !may_hold(data) {
            return false;
        }
        let calls = &mut self.calls;
        self.call_pieces.read(data, |piece| {
            let entry = calls.entry(piece.index.unwrap_or(0)).or_default();
            if let Some(id) = &piece.id {
                entry.id = id.to_string();
            }
            if let Some(name) = &piece.name {
                entry.name.push_str(name);
            }
            if let Some(arguments) = &piece.arguments {
                entry.arguments.push_str(arguments);
            }
        })
    }

    fn pass(&mut self, raw: Bytes, data: Option<Bytes>) {
        if let Some(data) = data
            && self.remembered + data.len() <= self.corrector.max_answer
        {
            self.remembered += data.len();
            self.passed.push(data);
        }
        self.out.push_back(Ok(raw));
    }

    fn hold(&mut self, raw: Bytes) {
        self.remembered += raw.len();
        self.held.push(raw);
        if self.remembered > self.corrector.max_answer {
            // Too much to hold: the answer goes on as it is (the shaper still checks each call).
            self.release();
            self.give_up_holding();
        }
    }

    /// Stops looking at this answer: everything from now on is passed on as it comes.
    fn give_up_holding(&mut self) {
        self.calls.clear();
        self.corrections = MAX_CORRECTIONS;
        self.corrector.max_answer = 0;
    }

    fn release(&mut self) {
        self.out.extend(self.held.drain(..).map(Ok));
    }

    /// The answer ended: its calls go to the client, or are answered upstream, or are dropped.
    async fn decide(&mut self) {
        if let Some(event) = self.decoder.finish() {
            self.out.push_back(Ok(event.raw));
        }
        let mapper = self.corrector.mapper.clone();
        let checks = Checks {
            mapper: mapper.clone(),
            slots: self.corrector.slots.clone(),
        };
        let (calls, undeliverable) = checks.undeliverable(std::mem::take(&mut self.calls)).await;
        self.calls = calls;
        let bad: Vec<u32> = self
            .calls
            .keys()
            .zip(undeliverable)
            .filter_map(|(index, bad)| bad.then_some(*index))
            .collect();
        if bad.is_empty() {
            self.release();
            self.ended = true;
            return;
        }
        let names: Vec<&str> = bad
            .iter()
            .filter_map(|i| self.calls.get(i))
            .map(|c| c.name.as_str())
            .collect();
        if self.corrections >= MAX_CORRECTIONS {
            tracing::warn!(tools = ?names, profile = %mapper.profile(), "the model's calls still cannot reach the client after the corrections; its text is the answer");
            metrics::counter!("harness_proxy_call_corrections_total", "outcome" => "gave_up")
                .increment(1);
            self.finish_as_text();
            return;
        }
        tracing::info!(tools = ?names, profile = %mapper.profile(), "a call the client cannot run: answered upstream by the proxy");
        metrics::counter!("harness_proxy_call_corrections_total", "outcome" => "corrected")
            .increment(1);
        self.corrections += 1;
        let request = self.correction_request(&bad);
        let upstream = self.corrector.upstream.clone();
        match send(&upstream, request).await {
            Some(upstream) => {
                self.body = upstream.body;
                self.decoder = Decoder::with_limit(self.corrector.max_event);
                self.held.clear();
                self.passed.clear();
                self.remembered = 0;
                self.calls.clear();
            }
            None => self.finish_as_text(),
        }
    }

    /// Ends the answer with what the client already has: no call, a `stop`.
    fn finish_as_text(&mut self) {
        self.held.clear();
        let stop = json!({"id": "chatcmpl-proxy", "object": "chat.completion.chunk", "created": 0,
            "model": "", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
        self.out.push_back(Ok(json_event(None, &stop)));
        self.out.push_back(Ok(done_event()));
        self.ended = true;
    }

    /// The request first sent, with the model's turn and a result for each of its calls.
    fn correction_request(&self, bad: &[u32]) -> Option<Outbound> {
        let mut body: Value =
            serde_json::from_slice(&self.corrector.outbound.body.to_bytes()).ok()?;
        let messages = body.get_mut("messages")?.as_array_mut()?;
        let turn = self.turn_text();
        let calls: Vec<HeldCall<'_>> = self
            .calls
            .iter()
            .map(|(index, c)| HeldCall {
                id: &c.id,
                name: &c.name,
                arguments: &c.arguments,
                bad: bad.contains(index),
            })
            .collect();
        let mapper = self.corrector.mapper.as_ref();
        if self.corrector.outbound.messages {
            messages.extend(answered_calls_messages(&turn, &calls, mapper));
        } else {
            messages.extend(answered_calls(&turn.text, &turn.reasoning, &calls, mapper));
        }
        Some(self.corrector.outbound.with_body(&body))
    }

    /// The text, reasoning and reasoning signature of the answer passed on so far.
    fn turn_text(&self) -> TurnText {
        let mut turn = TurnText::default();
        for data in &self.passed {
            let Ok(chunk) = crate::protocols::chat::chunk::parse_event::<AnswerChunkView<'_>>(data)
            else {
                continue;
            };
            if let Some(mut choice) = chunk.answer {
                if let Some(t) = choice.delta.text() {
                    turn.text.push_str(&t);
                }
                if let Some(r) = choice.delta.reasoning_text() {
                    turn.reasoning.push_str(&r);
                }
                if let Some(signature) = choice.delta.reasoning_signature.take() {
                    turn.signature.push_str(&signature);
                }
            }
        }
        turn
    }
}

#[cfg(test)]
mod tests {
    use super::may_hold;

    #[test]
    fn only_an_event_with_a_call_or_a_finish_is_parsed_for_calls() {
        let text = br#"{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}"#;
        assert!(
            !may_hold(text),
            "every chunk names the key, null until the end"
        );
        let quoted = br#"{"choices":[{"index":0,"delta":{"content":"{\"finish_reason\":\"stop\"}"},"finish_reason":null}]}"#;
        assert!(!may_hold(quoted), "the model's own words are escaped");
        for held in [
            &br#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#[..],
            br#"{"choices":[{"index":0,"delta":{},"finish_reason" : "tool_calls"}]}"#,
            br#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]},"finish_reason":null}]}"#,
        ] {
            assert!(may_hold(held), "{}", String::from_utf8_lossy(held));
        }
    }
}
