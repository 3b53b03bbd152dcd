//! Token counts answered locally, for the fronts whose clients ask for them (Anthropic's
//! `POST /v1/messages/count_tokens`, Gemini's `:countTokens`): the count is of the request as its
//! harness sends it upstream — a rewriting harness replaces the client's system prompt and tools
//! with its own (Claude Code's ~20k-token prompt, Gemini CLI's long one, become opencode's), so
//! the count is of the rebuilt body as it goes upstream (Chat Completions, or Messages on a
//! Messages upstream); passthrough counts the client's request as it is. Counting is CPU-bound (linear in the body): off the async workers, at most
//! `limits.max_token_counts` at once; beyond that the client is told to retry.
//!
//! Owns: the bound, the body read, the harness's rebuild. Must not: know a client protocol's wire
//! (each front hands its own `Counting`; the upstream's two wires are the upstream's estimators)
//! or answer in a protocol's shape.

use axum::body::Body;
use bytes::Bytes;

use crate::config::Wire;
use crate::conversation::Conversation;
use crate::error::ProxyError;
use crate::harness::{Harness, HarnessRequest};
use crate::protocols::messages;
use crate::routes::extract::read_body;
use crate::routes::front::Call;
use crate::routes::pipeline::pick_harness;
use crate::state::AppState;

/// What a front's protocol tells the count.
#[derive(Clone, Copy)]
pub struct Counting {
    /// The client's request as it is (what passthrough sends): its estimate.
    pub as_sent: fn(&Bytes) -> Result<usize, ProxyError>,
    /// The client's request as the conversation a rewriting harness rebuilds.
    pub conversation: fn(&Call, &Bytes) -> Result<Conversation, ProxyError>,
}

/// The request's input tokens as its harness sends it upstream.
pub async fn count(
    state: &AppState,
    call: Call,
    body: Body,
    counting: Counting,
) -> Result<usize, ProxyError> {
    let body = read_body(&call.headers, body, state.config.limits.max_body_bytes).await?;
    let harness = pick_harness(state, &call)?;
    let wire = state.config.upstream.wire;
    let Some(permit) = state.token_count_slot().await else {
        return Err(ProxyError::Busy("token counts running at once"));
    };
    tokio::task::spawn_blocking(move || {
        let tokens = rebuilt_tokens(harness.as_ref(), &call, &body, (counting, wire));
        drop(permit);
        tokens
    })
    .await
    .map_err(ProxyError::internal)?
}

fn rebuilt_tokens(
    harness: &dyn Harness,
    call: &Call,
    body: &Bytes,
    (counting, wire): (Counting, Wire),
) -> Result<usize, ProxyError> {
    if !harness.rewrites() {
        return (counting.as_sent)(body);
    }
    let prepared = harness.prepare(HarnessRequest {
        conversation: (counting.conversation)(call, body)?,
        chat_body: None,
        headers: &call.headers,
        now: chrono::Utc::now(),
    })?;
    // The body as it goes: a Messages one on a Messages upstream (claude-code's).
    Ok(match wire {
        Wire::Chat => crate::protocols::chat::tokens::estimate(&prepared.upstream_body.to_bytes()),
        Wire::Messages => {
            messages::tokens::estimate(&messages::read(&prepared.upstream_body.to_bytes())?)
        }
    })
}
