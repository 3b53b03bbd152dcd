//! `POST /v1/chat/completions` and `POST /harness/{name}/v1/chat/completions`, and `handle`, the
//! pipeline every client protocol's route goes through: client protocol → conversation model →
//! harness → upstream → answer in the client's protocol.

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method};
use axum::response::Response;

use crate::config::ReasoningMode;
use crate::error::ProxyError;
use crate::harness::Prepared;
use crate::protocols::ClientProtocol;
use crate::protocols::chat::UPSTREAM_PATH;
use crate::routes::ResponseFacts;
use crate::routes::answer::respond;
use crate::routes::dropped_tools;
use crate::routes::front::{Call, Front};
use crate::routes::inbound::{self, Processed};
use crate::routes::meter::Meter;
use crate::routes::proxy::{
    add_thread_headers, client_authorization, on_end, read_body, upstream_headers,
};
use crate::state::AppState;
use crate::titles::anchors::fresh_id;
use crate::titles::answer_tap::MemoSink;
use crate::titles::facts::ConversationFacts;
use crate::titles::identity::{
    BadConversationId, Caller, client_conversation_id, conversation_id_with_key,
};
use crate::titles::{AfterAnswer, TurnInfo};
use crate::upstream::Outbound;

pub async fn default_route(State(state): State<AppState>, call: Call, body: Body) -> Response {
    handle(state, FRONT, call, body).await
}

/// Chat Completions: the client's body is the model's source, its upstream path the same.
const FRONT: Front = Front::openai(
    ClientProtocol::Chat,
    |request| crate::protocols::chat::request::parse(request.body, request.headers),
    |_| UPSTREAM_PATH.to_owned(),
);

/// The harness a request names: header `x-harness` (`harness_header`), else the
/// `/harness/{name}/` path, else `default_harness`.
pub fn pick_harness(
    state: &AppState,
    call: &Call,
) -> Result<std::sync::Arc<dyn crate::harness::Harness>, ProxyError> {
    let name = call
        .headers
        .get(&state.harness_header)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
        .or_else(|| call.path_harness())
        .unwrap_or_else(|| state.config.default_harness.clone());
    state
        .harnesses
        .get(&name)
        .cloned()
        .ok_or_else(|| ProxyError::UnknownHarness {
            name,
            known: state.harnesses.names(),
        })
}

/// The one pipeline every client protocol goes through: pick the harness, parse the client's
/// protocol into the conversation model and let the harness rebuild it (`routes::inbound`), let
/// the titles service order its title around the turn, send it upstream, and answer in the
/// client's protocol (`routes::answer`).
pub async fn handle(state: AppState, front: Front, call: Call, body: Body) -> Response {
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
    let result = serve(&state, &harness, incoming, body, &mut exchange).await;
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

/// What `serve` learns on the way, kept even when it ends in an error.
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

async fn serve(
    state: &AppState,
    harness: &std::sync::Arc<dyn crate::harness::Harness>,
    incoming: Incoming<'_>,
    body: Body,
    exchange: &mut Exchange,
) -> Result<Response, ProxyError> {
    let Incoming { call, front, meter } = incoming;
    let (id, headers) = (&call.id, &call.headers);
    let reading = std::time::Instant::now();
    let body = read_body(headers, body, state.config.limits.max_body_bytes).await;
    meter.waited(reading.elapsed());
    let body = body?;
    let client_body = body.clone();
    // A rewriting harness gets the client's request in the model, whatever its protocol;
    // passthrough gets the bytes, unparsed.
    let titled = state.titles.applies_to(harness.name());
    let caller = Caller::from_headers(headers, state.config.auth.admin_token.as_deref());
    let processed = if harness.rewrites() {
        let call = crate::routes::cache_scope::stamped(call, &caller.owner);
        inbound::process(state, harness, front, &call, &body, &caller.owner).await?
    } else {
        Processed::passthrough(&body, headers, front.protocol, titled)
    };
    let Processed {
        prepared:
            Prepared {
                upstream_body,
                rewritten,
                response: plan,
                dropped_tools: harness_dropped,
                passthrough_tools,
            },
        facts,
        renderer,
        client_stream,
        dropped_tools: dropped,
        conversation_key,
    } = processed;
    let body_key = conversation_key.as_deref();
    // A rewritten request is always Chat Completions; passthrough keeps the client's protocol.
    // A translated request's query belongs to the client's protocol (Claude Code's `?beta=true`),
    // not to Chat Completions: it is not forwarded.
    let translated = harness.rewrites() && front.protocol != ClientProtocol::Chat;
    let (conversation, started) = identify(
        state,
        headers,
        body_key,
        &caller.owner,
        facts.as_ref(),
        rewritten,
    )
    .map_err(|bad| ProxyError::InvalidRequest {
        message: bad.to_string(),
        param: Some(bad.header),
        code: "invalid_conversation_id",
    })?;
    exchange.conversation_id = Some(conversation.clone());
    // A translated request is a Chat Completions body the proxy wrote, even when the harness left
    // it as the client meant it (a title or helper call): fresh content headers, no client key
    // in its protocol's own header.
    let mut forwarded = upstream_headers(
        headers,
        &state.harness_header,
        rewritten || translated,
        &id.0,
    );
    if rewritten {
        add_thread_headers(&mut forwarded, &conversation);
    }

    let mut title = state
        .titles
        .begin(TurnInfo {
            owner: &caller.owner,
            conversation: &conversation,
            facts: facts.as_ref(),
            started,
            harness: harness.name(),
            protocol: front.protocol.name(),
            title_headers: &|| {
                let mut title_headers =
                    upstream_headers(headers, &state.harness_header, true, &id.0);
                add_thread_headers(&mut title_headers, &conversation);
                title_headers
            },
            client_authorization: client_authorization(headers, translated),
            titles_itself: crate::titles::threads::titles_itself(headers),
            title_thread: crate::titles::threads::is_title_thread(headers),
        })
        .await;
    exchange.after_answer = title.before_upstream().await;

    let upstream_path = if translated {
        UPSTREAM_PATH.to_owned()
    } else {
        (front.upstream_path)(&call.request(&body))
    };
    if !translated && let Some(name) = front.passthrough_key {
        rename_key(&mut forwarded, name);
    }
    let path = match call.query.as_deref().filter(|_| !translated) {
        Some(q) => format!("{upstream_path}?{q}"),
        None => upstream_path.to_owned(),
    };
    let outbound = Outbound {
        method: Method::POST,
        path,
        headers: forwarded,
        body: upstream_body,
        client_authorization: client_authorization(headers, translated),
        dispatched: None,
    };
    if let Some(inspector) = &state.inspect {
        inspector.record(&crate::inspect::Exchange {
            id: &id.0,
            owner: &caller.owner,
            conversation_id: &conversation,
            harness: harness.name(),
            protocol: front.protocol.name(),
            client: (&call.path, headers, &client_body),
            upstream: (&outbound.path, &outbound.headers, &outbound.body),
            tools: (&harness_dropped, &passthrough_tools),
        });
    }
    let sending = std::time::Instant::now();
    let sent = state.upstream.send(outbound).await;
    let mut upstream = match sent {
        Ok(upstream) => {
            meter.upstream_head(sending.elapsed());
            upstream
        }
        Err(err) => {
            meter.waited(sending.elapsed());
            title.upstream_failed(&err);
            return Err(err.into());
        }
    };
    exchange.facts.upstream_status = Some(upstream.status.as_u16());
    upstream.body = meter.watch_upstream(std::mem::replace(
        &mut upstream.body,
        Box::pin(futures_util::stream::empty()),
    ));
    // The reasoning of a rewritten answer, for the next turn of a client that echoes none.
    let memo =
        (rewritten && state.config.opencode.reasoning == ReasoningMode::Return).then(|| MemoSink {
            memo: state.reasoning_memo.clone(),
            owner: caller.owner.clone(),
        });
    title.watch_answer(&mut upstream, memo);
    let render = renderer.map(|renderer| (renderer, client_stream));
    let bounds = crate::routes::answer::Bounds {
        max_event: state.config.limits.max_sse_event_bytes,
        max_answer: state.config.limits.max_answer_bytes,
    };
    let mut response = respond(upstream, plan, render, bounds, &front).await?;
    let mut dropped_tools = harness_dropped;
    dropped_tools.extend(dropped);
    dropped_tools::report(harness.name(), &dropped_tools, response.headers_mut());
    dropped_tools::report_passthrough(harness.name(), &passthrough_tools, response.headers_mut());
    if let Some(url) = title.url().and_then(|u| HeaderValue::from_str(u).ok()) {
        response.headers_mut().insert("x-title-url", url);
    }
    Ok(response)
}

/// `passthrough` of a protocol whose key goes in its own header: the client's key (`x-api-key`
/// since `Front::adopt`) under that name.
fn rename_key(headers: &mut HeaderMap, name: &'static str) {
    if let Some(mut key) = headers.remove("x-api-key") {
        key.set_sensitive(true);
        headers.insert(name, key);
    }
}

/// Which conversation this turn belongs to, and whether it starts one. A client id wins; a
/// rewritten request without one continues the conversation whose first answered exchange its
/// history holds (`titles::anchors`), else starts a new one; passthrough, which never reads the
/// answer, keeps the id derived from the first user text.
fn identify(
    state: &AppState,
    headers: &HeaderMap,
    body_key: Option<&str>,
    owner: &str,
    facts: Option<&ConversationFacts>,
    rewritten: bool,
) -> Result<(String, bool), BadConversationId> {
    if let Some(id) = client_conversation_id(headers, body_key)? {
        // Kilo asks for its title under `title-<its session id>`: that session's title.
        let id = match id.strip_prefix("title-") {
            Some(session) if facts.is_some_and(|f| f.title_request) && !session.is_empty() => {
                session.to_owned()
            }
            _ => id,
        };
        return Ok((id, false));
    }
    Ok(match facts {
        Some(facts) if rewritten && !facts.title_request => {
            match state.titles.anchors().find(owner, &facts.exchanges) {
                Some(id) => (id, false),
                None => (fresh_id(), true),
            }
        }
        _ => {
            let first_user_text = facts.map_or("", |f| f.first_user_text.as_str());
            (
                conversation_id_with_key(headers, body_key, owner, first_user_text)?,
                false,
            )
        }
    })
}
