//! Admission of a proxied request: its body is read first — bounded in size (413), in time (408:
//! `limits.request_read_timeout` in all, `limits.request_idle_timeout` of silence) and in memory
//! across requests (`limits.max_inflight_body_bytes`, 503) — and only then does it take one of the
//! `limits.max_concurrent_requests` slots. A client that trickles its body holds no slot.

use std::future::Future;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::http::request::Parts;
use axum::http::{HeaderMap, header};
use axum::response::Response;
use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use crate::config::LimitsConfig;
use crate::error::ProxyError;
use crate::routes::error_response::ErrorShape;
use crate::state::AppState;

use super::access_log::{InFlight, PermitSlot};

/// Reads the body of `parts`' request within bounds, takes a slot, and only then runs `route` with
/// it; a refusal is rendered in `shape`. The slot goes with the answer's body (`PermitSlot`).
pub(super) async fn admit<F>(
    state: &AppState,
    shape: ErrorShape,
    parts: Parts,
    body: Body,
    route: impl FnOnce(Request) -> F,
) -> Response
where
    F: Future<Output = Response>,
{
    let limits = &state.config.limits;
    let (body, reserved) = match read(&parts.headers, body, limits, &state.body_budget).await {
        Ok(read) => read,
        Err(err) => return shape.render(err),
    };
    let Ok(permit) = state.limiter.clone().try_acquire_owned() else {
        return shape.render(ProxyError::Overloaded);
    };
    let in_flight = InFlight::new(permit);
    let mut response = route(Request::from_parts(parts, Body::from(body))).await;
    // The body has gone upstream (or was refused) once the answer's head is here; the handler
    // dropped its copies, so its bytes no longer count.
    drop(reserved);
    response
        .extensions_mut()
        .insert(PermitSlot(Some(Arc::new(in_flight))));
    response
}

/// Reads the whole body, reserving its bytes in `budget` as they arrive.
async fn read(
    headers: &HeaderMap,
    mut body: Body,
    limits: &LimitsConfig,
    budget: &Arc<Semaphore>,
) -> Result<(Bytes, Option<OwnedSemaphorePermit>), ProxyError> {
    let limit = limits.max_body_bytes;
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > limit as u64) {
        return Err(ProxyError::BodyTooLarge { limit });
    }
    // Bounded by `limit` just above, so the cast is exact.
    let declared = declared.map_or(0, |len| len as usize);
    let mut reserved = None;
    let mut reserved_bytes = 0;
    reserve(budget, &mut reserved, &mut reserved_bytes, declared)?;
    let mut buf = BytesMut::new();
    // A body that arrives in one frame (the common case) is kept as is, never copied.
    let mut whole: Option<Bytes> = None;
    let deadline = Instant::now() + limits.request_read_timeout;
    loop {
        let quiet = Instant::now() + limits.request_idle_timeout;
        let frame = match tokio::time::timeout_at(deadline.min(quiet), body.frame()).await {
            Ok(Some(frame)) => frame.map_err(|e| ProxyError::BodyRead(e.into()))?,
            Ok(None) => break,
            Err(_) if Instant::now() >= deadline => {
                return Err(ProxyError::RequestTimeout(
                    "the body took longer than `limits.request_read_timeout`",
                ));
            }
            Err(_) => {
                return Err(ProxyError::RequestTimeout(
                    "no body bytes arrived for `limits.request_idle_timeout`",
                ));
            }
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        let held = whole.as_ref().map_or(buf.len(), Bytes::len);
        let total = held + data.len();
        if total > limit {
            return Err(ProxyError::BodyTooLarge { limit });
        }
        // No (or a wrong) Content-Length: reserve as the bytes come.
        let more = total.saturating_sub(reserved_bytes);
        reserve(budget, &mut reserved, &mut reserved_bytes, more)?;
        if held == 0 && whole.is_none() {
            whole = Some(data);
            continue;
        }
        if let Some(first) = whole.take() {
            buf.reserve(declared.max(total));
            buf.extend_from_slice(&first);
        }
        buf.extend_from_slice(&data);
    }
    Ok((whole.unwrap_or_else(|| buf.freeze()), reserved))
}

fn reserve(
    budget: &Arc<Semaphore>,
    reserved: &mut Option<OwnedSemaphorePermit>,
    reserved_bytes: &mut usize,
    bytes: usize,
) -> Result<(), ProxyError> {
    if bytes == 0 {
        return Ok(());
    }
    *reserved_bytes += bytes;
    let busy = || ProxyError::Busy("request bodies held in memory");
    let n = u32::try_from(bytes).map_err(|_| busy())?;
    let permit = budget
        .clone()
        .try_acquire_many_owned(n)
        .map_err(|_| busy())?;
    match reserved {
        Some(held) => held.merge(permit),
        None => *reserved = Some(permit),
    }
    Ok(())
}
