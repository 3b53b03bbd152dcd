//! The one pipeline every front's route goes through (`serve`): client protocol → conversation
//! model → harness → upstream → answer in the client's protocol. It picks the harness, reads
//! the body, lets `inbound` parse and rebuild it, identifies the conversation, lets the title
//! turn order its title around the request (`turn`), sends it upstream, and answers through
//! `answer` (a Chat Completions client) or `render` (any other protocol).
//!
//! Owns: the order of those steps and what the response says of them (`x-harness`,
//! `x-conversation-id`, `x-title-url`, the access log's facts). Must not: parse or render a
//! protocol, or know one (the route's `Front` says what the pipeline needs of it).

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::http::HeaderValue;
use axum::response::Response;
use bytes::Bytes;

use crate::error::ProxyError;
use crate::harness::Harness;
use crate::memory::identity::{BadConversationId, Caller};
use crate::protocols::Renderer;
use crate::routes::ResponseFacts;
use crate::routes::answer::{Answer, Bounds};
use crate::routes::answer_end::{AnswerFinished, on_end};
use crate::routes::answering::Answering;
use crate::routes::dropped_tools;
use crate::routes::extract::read_body;
use crate::routes::front::{Call, Front};
use crate::routes::inbound::{self, Processed};
use crate::routes::meter::Meter;
use crate::routes::turn::Turn;
use crate::state::AppState;
use crate::titles::AfterAnswer;

/// The harness a request names: header `x-harness` (`harness_header`), else the
/// `/harness/{name}/` path, else `default_harness`.
pub fn pick_harness(state: &AppState, call: &Call) -> Result<Arc<dyn Harness>, ProxyError> {
    let name = call
        .headers
        .get(&state.harness_header)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
        .or_else(|| call.path_harness())
        .unwrap_or_else(|| state.config.default_harness.clone());
    let harness =
        state
            .harnesses
            .get(&name)
            .cloned()
            .ok_or_else(|| ProxyError::UnknownHarness {
                name,
                known: state.harnesses.names(),
            })?;
    let wire = state.config.upstream.wire;
    if !harness.speaks(wire) {
        return Err(ProxyError::InvalidRequest {
            message: format!(
                "harness `{}` cannot address this proxy's upstream (upstream.wire = \"{}\"); harnesses that can: {}",
                harness.name(),
                wire.name(),
                state.harnesses.speaking(wire)
            ),
            param: None,
            code: "harness_wire_unsupported",
        });
    }
    Ok(harness)
}

/// The one pipeline every client protocol goes through: pick the harness, parse the client's
/// protocol into the conversation model and let the harness rebuild it (`routes::inbound`), let
/// the titles service order its title around the turn, send it upstream, and answer in the
/// client's protocol (`respond`).
pub async fn serve(state: AppState, front: Front, call: Call, body: Body) -> Response {
    let harness = match pick_harness(&state, &call) {
        Ok(harness) => harness,
        Err(err) => return (front.error)(err),
    };
    let meter = Meter::start(harness.name(), front.protocol.name());
    let mut exchange = Exchange {
        facts: ResponseFacts {
            harness: Some(harness.name()),
            upstream_status: None,
            protocol: Some(front.protocol.name()),
        },
        conversation_id: None,
        after_answer: None,
    };
    let incoming = Incoming {
        call: &call,
        front,
        meter: &meter,
    };
    // Boxed: rustc lays out an awaited future inline, here twice (12.9 KB for this future, 5.9
    // of them `flow`'s); boxed, a request holds 1.1 KB here and `flow`'s 5.9 once.
    let result = Box::pin(flow(&state, &harness, incoming, body, &mut exchange)).await;
    let mut response = match result {
        Ok(response) => response,
        Err(err) => (front.error)(err),
    };
    if let Some(title) = exchange.after_answer.take() {
        let body = std::mem::take(response.body_mut());
        *response.body_mut() = on_end(body, move || title.start());
    }
    let out = response.headers_mut();
    out.insert("x-harness", HeaderValue::from_static(harness.name()));
    if let Some(conversation) = exchange
        .conversation_id
        .as_deref()
        .and_then(|c| HeaderValue::from_str(c).ok())
    {
        out.insert("x-conversation-id", conversation);
    }
    response.extensions_mut().insert(exchange.facts);
    meter.attach(&mut response);
    response
}

/// What `flow` learns on the way, kept even when it ends in an error.
struct Exchange {
    facts: ResponseFacts,
    conversation_id: Option<String>,
    /// A title to start once the answer's body has ended (or failed, or was abandoned), even
    /// when the answer is an error.
    after_answer: Option<AfterAnswer>,
}

/// What the client sent, as the pipeline sees it.
struct Incoming<'a> {
    call: &'a Call,
    front: Front,
    meter: &'a Meter,
}

/// The flow of ARCHITECTURE.md "One request, end to end": the body read, the inbound half
/// (`routes::inbound`), the conversation identified, the title turn begun and ordered, the
/// request sent upstream, the answer in the client's protocol.
async fn flow(
    state: &AppState,
    harness: &Arc<dyn Harness>,
    incoming: Incoming<'_>,
    body: Body,
    exchange: &mut Exchange,
) -> Result<Response, ProxyError> {
    let Incoming { call, front, meter } = incoming;
    let body = read_client_body(state, call, body, meter).await?;
    let caller = Caller::from_headers(&call.headers, state.config.auth.admin_token.as_deref());
    // A rewriting harness sees the turn's prompt-cache scope (`routes::cache_scope`).
    let scoped = if harness.rewrites() {
        std::borrow::Cow::Owned(crate::routes::cache_scope::stamped(call, &caller.owner))
    } else {
        std::borrow::Cow::Borrowed(call)
    };
    let memo_scope = caller.memo_scope();
    let processed = inbound::process(state, harness, front, &scoped, &body, memo_scope).await?;
    // The stamped copy of the client's headers (about 1 KB) is not kept while the upstream's
    // head is awaited: under a burst of streams most of them wait at once.
    drop(scoped);
    let (turn, started) = identified(state, harness, (call, front), &caller.owner, &processed)?;
    exchange.conversation_id = Some(turn.conversation.clone());
    turn.preflight(&processed.prepared).await;
    // A client's sub-agent is never titled: its facts serve only to identify its conversation.
    let facts = processed.facts.as_ref();
    let mut title = turn
        .begin_title(facts, started, processed.prepared.subagent)
        .await;
    exchange.after_answer = title.before_upstream().await;

    let model = processed.facts.as_ref().map(|f| f.model.clone());
    let Processed {
        prepared,
        renderer,
        client_stream,
        dropped_tools: mut dropped,
        ..
    } = processed;
    let outbound = turn.outbound(&body, prepared.upstream_body, prepared.rewritten);
    let tools = (prepared.dropped_tools, prepared.passthrough_tools);
    turn.inspect(&body, &outbound, (&tools.0, &tools.1));
    let bounds = Bounds {
        max_event: state.config.limits.max_sse_event_bytes,
        max_answer: state.config.limits.max_answer_bytes,
    };
    let mut answering = Answering::of(state, &prepared.response, &outbound, bounds);
    let sent = match &prepared.local {
        // Answered on the client's side (Codex's wait for its sub-agent): nothing goes upstream.
        Some(local) => Ok(crate::routes::local::answer(
            local,
            model.as_deref().unwrap_or("harness-proxy"),
        )),
        None => turn.send(outbound, meter).await,
    };
    let mut upstream = match sent {
        Ok(upstream) => upstream,
        Err(err) => {
            title.upstream_failed(&err);
            return Err(err.into());
        }
    };
    exchange.facts.upstream_status = Some(upstream.status.as_u16());
    // A text-protocol harness's answer becomes the client's before anything reads it.
    let heartbeat = renderer.is_none() && client_stream;
    answering.act(&mut upstream, heartbeat);
    let witness = title.watch_answer(&mut upstream, turn.memo(prepared.rewritten, memo_scope));
    answering.correct(&mut upstream);
    let render = renderer.map(|renderer| (renderer, client_stream));
    let answer = Answer {
        upstream,
        plan: prepared.response,
        witness,
    };
    let mut response = respond(answer, render, bounds, &front).await?;
    let (mut dropped_tools, passthrough_tools) = tools;
    dropped_tools.append(&mut dropped);
    let out = response.headers_mut();
    let labels = state.harnesses.tool_labels();
    dropped_tools::report(harness.name(), labels, &dropped_tools, out);
    dropped_tools::report_passthrough(harness.name(), labels, &passthrough_tools, out);
    if let Some(url) = title.url().and_then(|u| HeaderValue::from_str(u).ok()) {
        out.insert("x-title-url", url);
    }
    Ok(response)
}

/// The client's body, whole and within `limits.max_body_bytes`; the wait for it is not the
/// proxy's own time.
async fn read_client_body(
    state: &AppState,
    call: &Call,
    body: Body,
    meter: &Meter,
) -> Result<Bytes, ProxyError> {
    let reading = Instant::now();
    let body = read_body(&call.headers, body, state.config.limits.max_body_bytes).await;
    meter.waited(reading.elapsed());
    body
}

/// The turn once its conversation is known, and whether it starts that conversation.
fn identified<'a>(
    state: &'a AppState,
    harness: &'a Arc<dyn Harness>,
    (call, front): (&'a Call, Front),
    owner: &'a str,
    processed: &Processed,
) -> Result<(Turn<'a>, bool), ProxyError> {
    let (conversation, started) = state
        .memory
        .identify(
            &call.headers,
            processed.conversation_key.as_deref(),
            owner,
            processed.facts.as_ref(),
            processed.prepared.rewritten,
        )
        .map_err(|bad| invalid_conversation_id(&bad))?;
    let turn = Turn {
        state,
        harness,
        call,
        front,
        owner,
        conversation,
        // A rewritten request is always Chat Completions; passthrough keeps the client's protocol.
        translated: harness.rewrites() && front.protocol != crate::protocols::chat::PROTOCOL,
    };
    Ok((turn, started))
}

fn invalid_conversation_id(bad: &BadConversationId) -> ProxyError {
    ProxyError::InvalidRequest {
        message: bad.to_string(),
        param: Some(bad.header),
        code: "invalid_conversation_id",
    }
}

/// The upstream's answer in the client's protocol: a Chat Completions client's through `answer`
/// (passthrough, shaped, folded), any other's through its renderer (`render`); the answer's end
/// watched for the access log (`AnswerFinished`).
async fn respond(
    answer: Answer,
    render: Option<(Box<dyn Renderer>, bool)>,
    bounds: Bounds,
    front: &Front,
) -> Result<Response, ProxyError> {
    let finished = AnswerFinished::default();
    let mut response = match render {
        Some((renderer, client_stream)) => {
            crate::routes::render::render(
                answer,
                renderer,
                client_stream,
                &finished,
                (bounds, front.upstream_error),
            )
            .await?
        }
        None => crate::routes::answer::answer(answer, &finished, bounds, front).await?,
    };
    response.extensions_mut().insert(finished);
    Ok(response)
}
