//! The headers that cross the proxy, both ways: the client's end-to-end headers sent upstream
//! (the proxy's own dialect and hop-by-hop headers left out; a rewritten body's content headers
//! fresh), the client's credential for the upstream, and the upstream's end-to-end response
//! headers sent back.
//!
//! Must not: choose the upstream's key (`upstream` does, from this credential and its config).

use axum::http::{HeaderMap, HeaderName, HeaderValue, header};

use crate::upstream::is_hop_by_hop;

/// Headers of the proxy's own dialect, never sent upstream.
fn is_control_header(name: &HeaderName, harness_header: &HeaderName) -> bool {
    name == harness_header
        || name.as_str().starts_with("x-harness-")
        || name.as_str() == "x-collaboration-mode"
}

/// The client's end-to-end headers to send upstream. `rewritten` bodies get fresh content headers.
pub fn upstream_headers(
    client: &HeaderMap,
    harness_header: &HeaderName,
    rewritten: bool,
    request_id: &str,
) -> HeaderMap {
    let mut out = HeaderMap::with_capacity(client.len() + 2);
    for (name, value) in client {
        if is_hop_by_hop(name)
            || is_control_header(name, harness_header)
            || matches!(
                *name,
                header::HOST | header::CONTENT_LENGTH | header::AUTHORIZATION | header::EXPECT
            )
            || name.as_str() == "x-request-id"
        {
            continue;
        }
        // `x-api-key` (Anthropic's key header) reaches a Chat Completions upstream as Bearer only.
        if rewritten
            && (matches!(
                *name,
                header::ACCEPT_ENCODING | header::ACCEPT | header::CONTENT_TYPE
            ) || *name == API_KEY)
        {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    if rewritten {
        out.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        out.insert(
            header::ACCEPT,
            HeaderValue::from_static("text/event-stream"),
        );
        // The response is parsed, so it must not arrive compressed.
        out.insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_static("identity"),
        );
    }
    if let Ok(value) = HeaderValue::from_str(request_id) {
        out.insert("x-request-id", value);
    }
    out
}

/// Anthropic's key header (Claude Code's `ANTHROPIC_API_KEY`), made once: a lookup by text
/// parses the name on every request.
pub(crate) static API_KEY: HeaderName = HeaderName::from_static("x-api-key");

/// The client's credential for the upstream: its `Authorization`, else — for a request translated
/// into Chat Completions — its `x-api-key` as a Bearer token (the same secret in Chat's header).
pub fn client_authorization(client: &HeaderMap, translated: bool) -> Option<HeaderValue> {
    if let Some(value) = client.get(header::AUTHORIZATION) {
        return Some(value.clone());
    }
    let key = client
        .get(&API_KEY)
        .filter(|_| translated)?
        .to_str()
        .ok()?
        .trim();
    let mut value = HeaderValue::from_str(&format!("Bearer {key}")).ok()?;
    value.set_sensitive(true);
    Some(value)
}

/// The upstream's end-to-end response headers. `reshaped` drops length and type, which change,
/// and what names the model server (`Server`, `X-Powered-By`): the answer is the proxy's.
pub fn client_headers(upstream: &HeaderMap, reshaped: bool) -> HeaderMap {
    let mut out = HeaderMap::with_capacity(upstream.len());
    for (name, value) in upstream {
        if is_hop_by_hop(name) || name.as_str() == "x-request-id" {
            continue;
        }
        if reshaped
            && (matches!(
                *name,
                header::CONTENT_LENGTH
                    | header::CONTENT_TYPE
                    | header::CONTENT_ENCODING
                    | header::SERVER
            ) || name.as_str() == "x-powered-by")
        {
            continue;
        }
        out.append(name.clone(), value.clone());
    }
    out
}
