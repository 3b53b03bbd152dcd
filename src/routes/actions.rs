//! The answer of a text-protocol harness (issue 33; `conversation::action`): the upstream's
//! answer is read whole (its JSON, or its stream folded; within `limits.max_answer_bytes`), the
//! harness's `ActionReader` says what it becomes, and the client gets one ordinary answer in Chat
//! Completions events — the model's text with the one call of the harness's tool that the
//! client can run (the bridge then writes it as the client's own tool, as for any harness), the
//! model's own calls (mini-swe-agent), or the text alone, the turn's end. An answer the harness's
//! rules reject gets the harness's own turn, sent upstream by the proxy: the request first sent,
//! the retry turns of this client turn after it. At most `MAX_CORRECTIONS` corrections per client
//! turn (terminus-2's one confirmation aside); past that the model's text is the final answer.
//! The client sees none of the rejected answers, so the next request the client sends holds none
//! of the retry pairs. Each is logged and counted
//! (`harness_proxy_harness_corrections_total{harness,outcome}`).
//!
//! The work runs inside the answer's body: a client that hangs up drops it with the request in
//! flight. A Chat Completions client that streams gets an SSE comment every `KEEPALIVE_EVERY`
//! while it runs; a Messages client gets its renderer's `ping` the same way.
//!
//! Owns: reading a text harness's answer whole and its correction turns. Must not: translate a
//! call (the shaper and renderers do, through the bridge), read an answer past its bound.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use http::HeaderValue;
use serde_json::{Value, json};

use crate::conversation::action::{
    ActionReader, Answer, AnswerCall, Attempts, Retry, RetryKind, Verdict,
};
use crate::conversation::mapping::CallMapper;
use crate::protocols::chat::Folder;
use crate::routes::answer::{Bounds, bounded};
use crate::routes::checks::Checks;
use crate::routes::correct::{HeldCall, MAX_CORRECTIONS, Resend, answered_calls, send};
use crate::routes::render::KEEPALIVE_EVERY;
use crate::sse::json_event;
use crate::upstream::is_event_stream;
use crate::upstream::{BodyStream, Upstream, UpstreamError, UpstreamResponse};

/// What the answer of one text-harness request is worked out with.
pub(crate) struct Acting {
    pub(crate) upstream: Arc<Upstream>,
    pub(crate) outbound: Resend,
    pub(crate) reader: Arc<dyn ActionReader>,
    pub(crate) mapper: Arc<dyn CallMapper>,
    /// Where a large answer's calls are checked (`routes::checks`): the large rewrites' slots.
    pub(crate) slots: Arc<tokio::sync::Semaphore>,
    pub(crate) bounds: Bounds,
    /// SSE comments while the proxy works: a Chat Completions client that streams.
    pub(crate) heartbeat: bool,
}

/// Replaces a successful upstream answer by the client's: Chat Completions events, worked out
/// when the body is first read.
pub(crate) fn acting(upstream: &mut UpstreamResponse, acting: Acting) {
    let first = std::mem::replace(&mut upstream.body, Box::pin(futures_util::stream::empty()));
    let sse = is_event_stream(&upstream.headers);
    upstream.headers.insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    upstream.headers.remove(http::header::CONTENT_LENGTH);
    upstream.headers.remove(http::header::CONTENT_ENCODING);
    let heartbeat = acting.heartbeat;
    upstream.body = Box::pin(Deciding {
        work: Some(Box::pin(decide(first, sse, acting))),
        timer: heartbeat.then(|| Box::pin(tokio::time::sleep(KEEPALIVE_EVERY))),
    });
}

type Work = Pin<Box<dyn Future<Output = Result<Bytes, UpstreamError>> + Send>>;

/// The work, and a comment whenever it has been quiet for `KEEPALIVE_EVERY`.
struct Deciding {
    work: Option<Work>,
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl Stream for Deciding {
    type Item = Result<Bytes, UpstreamError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        let Some(work) = this.work.as_mut() else {
            return Poll::Ready(None);
        };
        if let Poll::Ready(answer) = work.as_mut().poll(cx) {
            this.work = None;
            return Poll::Ready(Some(answer));
        }
        if let Some(timer) = this.timer.as_mut()
            && timer.as_mut().poll(cx).is_ready()
        {
            timer
                .as_mut()
                .reset(tokio::time::Instant::now() + KEEPALIVE_EVERY);
            return Poll::Ready(Some(Ok(Bytes::from_static(b": keep-alive\n\n"))));
        }
        Poll::Pending
    }
}

/// One whole answer.
struct Whole {
    /// The completion as the upstream gave it (its stream folded).
    completion: Value,
    text: String,
    reasoning: String,
    calls: Vec<(String, String, String)>,
}

impl Whole {
    fn read(completion: Value) -> Self {
        let message = completion.pointer("/choices/0/message");
        let string = |key: &str| {
            message
                .and_then(|m| m.get(key))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let text = match message.and_then(|m| m.get("content")) {
            Some(Value::Array(parts)) => parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
            _ => string("content"),
        };
        let reasoning = match string("reasoning_content") {
            r if r.is_empty() => string("reasoning"),
            r => r,
        };
        let calls = message
            .and_then(|m| m.get("tool_calls"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|c| {
                let field = |pointer: &str| {
                    c.pointer(pointer)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned()
                };
                (
                    field("/id"),
                    field("/function/name"),
                    field("/function/arguments"),
                )
            })
            .collect();
        Self {
            completion,
            text,
            reasoning,
            calls,
        }
    }

    /// The answer the client gets: the model's text (and reasoning), and the call if any.
    fn answer(&self, text: &str, call: Option<(&str, &str)>) -> Bytes {
        let mut message = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
        if !self.reasoning.is_empty() {
            message["reasoning_content"] = json!(self.reasoning);
        }
        if let Some((name, arguments)) = call {
            let id = format!("call_{}", uuid::Uuid::new_v4().simple());
            message["tool_calls"] = json!([{"id": id, "type": "function",
                "function": {"name": name, "arguments": arguments}}]);
        }
        let finish = if call.is_some() { "tool_calls" } else { "stop" };
        let meta = |key: &str| self.completion.get(key).cloned().unwrap_or(Value::Null);
        let mut completion = json!({"id": meta("id"), "object": "chat.completion",
            "created": meta("created"), "model": meta("model"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}]});
        if let Some(usage) = self.completion.get("usage").filter(|u| !u.is_null()) {
            completion["usage"] = usage.clone();
        }
        events(&completion)
    }
}

/// A whole completion as the events of a stream, in a stream's order: its text and reasoning,
/// each call, the finish, the usage, the end.
fn events(completion: &Value) -> Bytes {
    let meta = |key: &str| completion.get(key).cloned().unwrap_or(Value::Null);
    let chunk = |choices: Value| {
        json!({"id": meta("id"), "object": "chat.completion.chunk", "created": meta("created"),
            "model": meta("model"), "choices": choices})
    };
    let mut out = Vec::new();
    let mut push = |value: &Value| out.extend_from_slice(&json_event(None, value));
    let message = completion
        .pointer("/choices/0/message")
        .cloned()
        .unwrap_or_else(|| json!({}));
    let mut delta = json!({"role": "assistant"});
    for key in ["reasoning_content", "content"] {
        if let Some(text) = message
            .get(key)
            .filter(|v| v.as_str().is_some_and(|t| !t.is_empty()))
        {
            delta[key] = text.clone();
        }
    }
    push(&chunk(
        json!([{"index": 0, "delta": delta, "finish_reason": null}]),
    ));
    for (i, call) in message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let mut call = call.clone();
        call["index"] = json!(i);
        push(&chunk(
            json!([{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": null}]),
        ));
    }
    let finish = completion
        .pointer("/choices/0/finish_reason")
        .cloned()
        .filter(|f| !f.is_null())
        .unwrap_or_else(|| json!("stop"));
    push(&chunk(
        json!([{"index": 0, "delta": {}, "finish_reason": finish}]),
    ));
    if let Some(usage) = completion.get("usage").filter(|u| !u.is_null()) {
        let mut usage_chunk = chunk(json!([]));
        usage_chunk["usage"] = usage.clone();
        push(&usage_chunk);
    }
    out.extend_from_slice(b"data: [DONE]\n\n");
    Bytes::from(out)
}

/// Reads the whole answer: a JSON completion, or a stream folded into one.
async fn whole(body: BodyStream, sse: bool, bounds: Bounds) -> Result<Value, UpstreamError> {
    let mut body = bounded(body, bounds);
    let mut bytes = Vec::new();
    let mut folder = sse.then(|| Folder::new().with_max_event(bounds.max_event));
    while let Some(chunk) = body.next().await {
        let chunk = chunk?;
        match folder.as_mut() {
            Some(folder) => folder.push(&chunk).map_err(folding)?,
            None => bytes.extend_from_slice(&chunk),
        }
    }
    match folder {
        Some(folder) => {
            let completion = folder.finish("").map_err(folding)?;
            (completion.into_value()).map_err(|e| UpstreamError::InvalidEvent(e.to_string()))
        }
        None => serde_json::from_slice(&bytes).map_err(|e| {
            UpstreamError::InvalidEvent(format!("the answer is not a JSON completion: {e}"))
        }),
    }
}

fn folding(err: crate::protocols::chat::FoldError) -> UpstreamError {
    use crate::protocols::chat::FoldError;
    match err {
        FoldError::BadChunk(message) => UpstreamError::InvalidEvent(message),
        FoldError::TooLarge(too_large) => UpstreamError::EventTooLarge(too_large.limit),
        FoldError::Unfinished => {
            UpstreamError::Interrupted(crate::upstream::Interruption::Unfinished)
        }
        FoldError::Upstream(error) => UpstreamError::Reported {
            code: "upstream_error",
            message: error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("the upstream reported an error")
                .to_owned(),
        },
    }
}

fn count(harness: &'static str, outcome: &'static str) {
    metrics::counter!("harness_proxy_harness_corrections_total", "harness" => harness, "outcome" => outcome)
        .increment(1);
}

/// Works out the client's answer: reads each answer, asks the harness, retries as it says.
async fn decide(first: BodyStream, sse: bool, acting: Acting) -> Result<Bytes, UpstreamError> {
    let Acting {
        upstream,
        outbound,
        reader,
        mapper,
        slots,
        bounds,
        ..
    } = acting;
    let checks = Checks {
        mapper: mapper.clone(),
        slots,
    };
    let harness = reader.harness();
    let base: Option<Value> = serde_json::from_slice(&outbound.body.to_bytes()).ok();
    let mut appended: Vec<Value> = Vec::new();
    let mut attempts = Attempts::default();
    let (mut body, mut sse) = (first, sse);
    loop {
        let completion = whole(body, sse, bounds).await?;
        if completion.get("error").is_some_and(|e| !e.is_null()) {
            // The upstream's own error object: the client gets it as the answer's one error.
            let mut out = json_event(None, &completion).to_vec();
            out.extend_from_slice(b"data: [DONE]\n\n");
            return Ok(Bytes::from(out));
        }
        let answer = Whole::read(completion);
        let calls: Vec<AnswerCall<'_>> = answer
            .calls
            .iter()
            .map(|(_, name, arguments)| AnswerCall { name, arguments })
            .collect();
        let verdict = reader.read(
            &Answer {
                text: &answer.text,
                calls: &calls,
            },
            attempts,
        );
        // The calls asked about below, decided first (off the runtime when large); the asks
        // below are then look-ups.
        let asked: Vec<(String, String)> = match &verdict {
            Verdict::Act(candidates) => candidates
                .iter()
                .map(|c| (c.name.clone(), c.arguments.clone()))
                .collect(),
            Verdict::Calls => answer
                .calls
                .iter()
                .map(|(_, name, arguments)| (name.to_string(), arguments.to_string()))
                .collect(),
            Verdict::Final | Verdict::Retry(_) => Vec::new(),
        };
        checks.undeliverable(asked).await;
        let retry: Retry = match verdict {
            Verdict::Final => return Ok(answer.answer(&reader.final_text(&answer.text), None)),
            Verdict::Act(candidates) => {
                match candidates
                    .iter()
                    .find(|c| mapper.deliverable(&c.name, &c.arguments))
                {
                    Some(call) => {
                        return Ok(answer.answer(&answer.text, Some((&call.name, &call.arguments))));
                    }
                    None => match candidates.first() {
                        Some(first) => reader.cannot_run(first),
                        None => return Ok(answer.answer(&answer.text, None)),
                    },
                }
            }
            Verdict::Calls => {
                let bad: Vec<bool> = answer
                    .calls
                    .iter()
                    .map(|(_, name, arguments)| !mapper.deliverable(name, arguments))
                    .collect();
                if !bad.contains(&true) {
                    return Ok(events(&answer.completion));
                }
                if attempts.corrections >= MAX_CORRECTIONS {
                    tracing::warn!(
                        harness,
                        "the model's calls still cannot reach the client after the corrections; its text is the answer"
                    );
                    metrics::counter!("harness_proxy_call_corrections_total", "outcome" => "gave_up").increment(1);
                    return Ok(answer.answer(&answer.text, None));
                }
                tracing::info!(
                    harness,
                    "a call the client cannot run: answered upstream by the proxy"
                );
                metrics::counter!("harness_proxy_call_corrections_total", "outcome" => "corrected")
                    .increment(1);
                attempts.corrections += 1;
                let held: Vec<HeldCall<'_>> = answer
                    .calls
                    .iter()
                    .zip(&bad)
                    .map(|((id, name, arguments), bad)| HeldCall {
                        id,
                        name,
                        arguments,
                        bad: *bad,
                    })
                    .collect();
                appended.extend(answered_calls(
                    &answer.text,
                    &answer.reasoning,
                    &held,
                    mapper.as_ref(),
                ));
                match resend(&upstream, &outbound, base.as_ref(), &appended).await {
                    Some(next) => {
                        sse = is_event_stream(&next.headers);
                        body = next.body;
                        continue;
                    }
                    None => return Ok(answer.answer(&answer.text, None)),
                }
            }
            Verdict::Retry(retry) => retry,
        };
        match retry.kind {
            RetryKind::Correction if attempts.corrections >= MAX_CORRECTIONS => {
                tracing::warn!(
                    harness,
                    "the model's answers still break the harness's rules after the corrections; its text is the answer"
                );
                count(harness, "gave_up");
                return Ok(answer.answer(&reader.final_text(&answer.text), None));
            }
            RetryKind::Correction => {
                tracing::info!(
                    harness,
                    "an answer the harness's rules reject: its correction turn sent upstream by the proxy"
                );
                count(harness, "corrected");
                attempts.corrections += 1;
            }
            RetryKind::Confirmation => {
                tracing::info!(
                    harness,
                    "the model says the task is complete: the harness asks it to confirm"
                );
                count(harness, "confirmation");
                attempts.confirmations += 1;
            }
        }
        if retry.replaces_earlier {
            appended.clear();
        }
        if retry.keep_answer {
            appended.push(json!({"role": "assistant", "content": answer.text}));
        }
        appended.push(json!({"role": "user", "content": retry.turn}));
        match resend(&upstream, &outbound, base.as_ref(), &appended).await {
            Some(next) => {
                sse = is_event_stream(&next.headers);
                body = next.body;
            }
            None => {
                count(harness, "failed");
                return Ok(answer.answer(&reader.final_text(&answer.text), None));
            }
        }
    }
}

/// The request first sent with this turn's retry messages after its own.
async fn resend(
    upstream: &Upstream,
    outbound: &Resend,
    base: Option<&Value>,
    appended: &[Value],
) -> Option<UpstreamResponse> {
    let request = base.and_then(|base| {
        let mut body = base.clone();
        body.get_mut("messages")?
            .as_array_mut()?
            .extend(appended.iter().cloned());
        Some(outbound.with_body(&body))
    });
    send(upstream, request).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_client_waiting_on_the_work_gets_a_comment_every_ten_seconds_then_the_answer() {
        let (tx, rx) = tokio::sync::oneshot::channel::<Bytes>();
        let work: Work = Box::pin(async move { Ok(rx.await.unwrap_or_default()) });
        let mut body = Deciding {
            work: Some(work),
            timer: Some(Box::pin(tokio::time::sleep(KEEPALIVE_EVERY))),
        };
        let t0 = tokio::time::Instant::now();
        let first = body.next().await.expect("a comment").expect("bytes");
        assert_eq!(&first[..], b": keep-alive\n\n");
        assert_eq!(t0.elapsed(), KEEPALIVE_EVERY);
        let second = body.next().await.expect("a comment").expect("bytes");
        assert_eq!(&second[..], b": keep-alive\n\n");
        tx.send(Bytes::from_static(b"data: [DONE]\n\n"))
            .expect("send");
        let answer = body.next().await.expect("the answer").expect("bytes");
        assert_eq!(&answer[..], b"data: [DONE]\n\n");
        assert!(body.next().await.is_none());
    }

    #[test]
    fn a_whole_answer_becomes_a_stream_in_a_stream_s_order() {
        let completion = json!({"id": "c", "created": 1, "model": "m", "choices": [{"index": 0,
            "message": {"role": "assistant", "content": "Hi", "tool_calls": [{"id": "x", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
            "finish_reason": "tool_calls"}], "usage": {"total_tokens": 2}});
        let text = String::from_utf8(events(&completion).to_vec()).expect("utf-8");
        let datas: Vec<&str> = text
            .split("\n\n")
            .filter_map(|e| e.strip_prefix("data: "))
            .collect();
        assert_eq!(datas.len(), 5, "{text}");
        assert!(datas[0].contains("\"content\":\"Hi\"") && !datas[0].contains("tool_calls"));
        assert!(datas[1].contains("\"tool_calls\":[{") && datas[1].contains("\"index\":0"));
        assert!(datas[2].contains("\"finish_reason\":\"tool_calls\""));
        assert!(datas[3].contains("\"usage\""));
        assert_eq!(datas[4], "[DONE]");
    }
}
