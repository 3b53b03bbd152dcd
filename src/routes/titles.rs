//! `GET /titles`, `GET /titles/{id}`, `GET /titles/{id}/stream`. A caller sees only the records
//! its own credential created; the admin token sees all. Others get 404, never a hint.

use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures_util::StreamExt;
use serde::Serialize;
use serde_json::json;
use tokio::sync::watch;

use crate::error::{InternalError, ProxyError};
use crate::memory::identity::Caller;
use crate::routes::extract::PathParam;
use crate::sse::json_event;
use crate::state::AppState;
use crate::titles::follow::{self, Event};
use crate::titles::live::{Outcome, Snapshot};
use crate::titles::store::{Cursor, Status, StoreError, TitleRecord};

const DEFAULT_LIMIT: usize = 50;
const MAX_LIMIT: usize = 500;

#[derive(Serialize)]
struct RecordView<'a> {
    id: &'a str,
    title: Option<&'a str>,
    status: Status,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a str>,
    model: &'a str,
    harness: &'a str,
    protocol: &'a str,
    created_at: String,
    updated_at: String,
}

impl<'a> From<&'a TitleRecord> for RecordView<'a> {
    fn from(r: &'a TitleRecord) -> Self {
        let time = |t: chrono::DateTime<chrono::Utc>| {
            t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
        };
        Self {
            id: &r.id,
            title: r.title.as_deref(),
            status: r.status,
            error: r.error.as_deref(),
            model: &r.model,
            harness: &r.harness,
            protocol: &r.protocol,
            created_at: time(r.created_at),
            updated_at: time(r.updated_at),
        }
    }
}

/// The caller, if it may use the titles API.
fn caller(state: &AppState, headers: &HeaderMap) -> Result<Caller, ProxyError> {
    credentialed_caller(
        state,
        headers,
        "the titles API needs the credential the conversation was made with \
         (`Authorization` or `x-api-key`)",
    )
}

/// The caller, if it may read what its requests left behind (titles, inspected requests): one
/// without any credential would share the `anonymous` scope with every other such caller, so it
/// gets 401 (`refusal` says what to send) unless it is the admin.
pub(super) fn credentialed_caller(
    state: &AppState,
    headers: &HeaderMap,
    refusal: &'static str,
) -> Result<Caller, ProxyError> {
    let caller = Caller::from_headers(headers, state.config.auth.admin_token.as_deref());
    if caller.may_read_titles() {
        Ok(caller)
    } else {
        Err(ProxyError::Unauthorized(refusal))
    }
}

fn store_error(state: &AppState, err: StoreError) -> ProxyError {
    match err {
        StoreError::Unavailable(reason) => ProxyError::StoreUnavailable {
            store: state.config.titles.store.to_string(),
            reason,
        },
        StoreError::Refusing { .. } => ProxyError::StoreUnavailable {
            store: state.config.titles.store.to_string(),
            reason: err.to_string(),
        },
        StoreError::Backend(_) => ProxyError::Internal(InternalError::Store(err.into())),
    }
}

fn json_response(value: &impl Serialize) -> Response {
    match serde_json::to_vec(value) {
        Ok(bytes) => ([(header::CONTENT_TYPE, "application/json")], bytes).into_response(),
        Err(e) => ProxyError::internal(e).into_response(),
    }
}

fn invalid_query(message: String, param: &'static str) -> ProxyError {
    ProxyError::InvalidRequest {
        message,
        param: Some(param),
        code: "invalid_query",
    }
}

pub async fn list(
    State(state): State<AppState>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
) -> Response {
    let caller = match caller(&state, &headers) {
        Ok(caller) => caller,
        Err(err) => return err.into_response(),
    };
    let mut limit = DEFAULT_LIMIT;
    let mut before = None;
    for pair in query
        .as_deref()
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
    {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        match key {
            "limit" => match value.parse::<usize>() {
                Ok(n) if (1..=MAX_LIMIT).contains(&n) => limit = n,
                _ => {
                    return invalid_query(
                        format!("`limit` must be a whole number from 1 to {MAX_LIMIT}"),
                        "limit",
                    )
                    .into_response();
                }
            },
            "before" => match Cursor::decode(value) {
                Some(cursor) => before = Some(cursor),
                None => {
                    return invalid_query(
                        "`before` is not a cursor from a previous page".to_owned(),
                        "before",
                    )
                    .into_response();
                }
            },
            _ => {}
        }
    }
    let mut records = match state
        .titles
        .list(caller.scope(), before.as_ref(), limit + 1)
        .await
    {
        Ok(records) => records,
        Err(err) => return store_error(&state, err).into_response(),
    };
    let has_more = records.len() > limit;
    records.truncate(limit);
    let next = if has_more {
        records.last().map(|r| Cursor::of(r).encode())
    } else {
        None
    };
    let data: Vec<RecordView<'_>> = records.iter().map(RecordView::from).collect();
    json_response(
        &json!({"object": "list", "data": data, "has_more": has_more, "next_before": next}),
    )
}

pub async fn get_one(
    State(state): State<AppState>,
    PathParam(id): PathParam<String>,
    headers: HeaderMap,
) -> Response {
    let caller = match caller(&state, &headers) {
        Ok(caller) => caller,
        Err(err) => return err.into_response(),
    };
    match state.titles.get(caller.scope(), &id).await {
        Ok(Some(record)) => json_response(&RecordView::from(&record)),
        Ok(None) => not_found(&id).into_response(),
        Err(err) => store_error(&state, err).into_response(),
    }
}

fn not_found(id: &str) -> ProxyError {
    ProxyError::ResourceNotFound {
        what: format!("title `{id}`"),
    }
}

fn sse_response(body: Body) -> Response {
    let mut response = Response::new(body);
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

fn final_event(outcome: &Outcome) -> Bytes {
    match outcome {
        Outcome::Done(title) => json_event(Some("done"), &json!({"title": title})),
        Outcome::Failed(error) => json_event(Some("error"), &json!({"error": error})),
    }
}

pub async fn stream(
    State(state): State<AppState>,
    PathParam(id): PathParam<String>,
    headers: HeaderMap,
) -> Response {
    let caller = match caller(&state, &headers) {
        Ok(caller) => caller,
        Err(err) => return err.into_response(),
    };
    // A settled title (its record only waiting for its batched write) is read like a stored one.
    if let Some(live) = state
        .titles
        .live(caller.scope(), &id)
        .filter(|live| !live.is_settled())
    {
        // Each live subscriber holds a task and a watch receiver until the title ends: bounded.
        let Ok(seat) = state.title_subscribers.clone().try_acquire_owned() else {
            return ProxyError::Busy("live title subscribers").into_response();
        };
        return sse_response(Body::from_stream(follow(live.subscribe(), seat)));
    }
    // Subscribed before the read, so no change falls between the two.
    let notices = state.titles.notices();
    let record = match state.titles.get(caller.scope(), &id).await {
        Ok(Some(record)) => record,
        Ok(None) => return not_found(&id).into_response(),
        Err(err) => return store_error(&state, err).into_response(),
    };
    let outcome = match record.status {
        Status::Done => Outcome::Done(record.title.unwrap_or_default()),
        Status::Failed => Outcome::Failed(record.error.unwrap_or_default()),
        // Running on another process (or just finished): follow the record.
        Status::Pending => {
            let events = follow::remote(state.titles.clone(), notices, record);
            let bytes = events.map(|event| {
                Ok::<_, std::convert::Infallible>(match event {
                    Event::Delta(text) => delta_event(&text),
                    Event::End(outcome) => final_event(&outcome),
                })
            });
            return sse_response(Body::from_stream(bytes));
        }
    };
    sse_response(Body::from(final_event(&outcome)))
}

fn delta_event(text: &str) -> Bytes {
    json_event(Some("delta"), &json!({"text": text}))
}

/// Everything streamed so far, then each new delta, then the outcome. `seat` is held until the
/// subscriber is gone.
fn follow(
    rx: watch::Receiver<Snapshot>,
    seat: tokio::sync::OwnedSemaphorePermit,
) -> impl futures_util::Stream<Item = Result<Bytes, std::convert::Infallible>> {
    let state = (rx, 0usize, false, seat);
    futures_util::stream::unfold(state, |(mut rx, mut sent, done, seat)| async move {
        if done {
            return None;
        }
        loop {
            let (fresh, outcome) = {
                let snapshot = rx.borrow_and_update();
                (
                    snapshot.deltas[sent.min(snapshot.deltas.len())..].to_vec(),
                    snapshot.outcome.clone(),
                )
            };
            if !fresh.is_empty() || outcome.is_some() {
                let mut out = Vec::new();
                for delta in &fresh {
                    out.extend_from_slice(&delta_event(delta));
                }
                sent += fresh.len();
                let finished = outcome.is_some();
                if let Some(outcome) = outcome {
                    out.extend_from_slice(&final_event(&outcome));
                }
                return Some((Ok(Bytes::from(out)), (rx, sent, finished, seat)));
            }
            if rx.changed().await.is_err() {
                let lost = final_event(&Outcome::Failed(
                    "the title stream ended unexpectedly".to_owned(),
                ));
                return Some((Ok(lost), (rx, sent, true, seat)));
            }
        }
    })
}
