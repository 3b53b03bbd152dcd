//! One proxied request once its conversation is known (`pipeline::serve` has read it, let the
//! harness rebuild it and identified its conversation): its title turn with the title request the
//! harness writes, its upstream request (the harness's body and headers, the path), its inspector
//! record, its send, and the memo its answer feeds.

use std::sync::Arc;
use std::time::Instant;

use axum::http::{HeaderMap, Method};
use bytes::Bytes;

use crate::config::{ReasoningMode, Wire};
use crate::conversation::body_parts::BodyParts;
use crate::harness::{Harness, Prepared, TitleAsk};
use crate::memory::answer_witness::MemoSink;
use crate::memory::facts::ConversationFacts;
use crate::protocols::chat::UPSTREAM_PATH;
use crate::routes::front::{Call, Front};
use crate::routes::headers::{API_KEY, client_authorization, upstream_headers};
use crate::routes::meter::Meter;
use crate::routes::upstream_path::forwardable_query;
use crate::state::AppState;
use crate::titles::{TitleRequest, TitleTurn, TitleWriter, TurnInfo};
use crate::upstream::{Outbound, UpstreamError, UpstreamResponse};

/// One request once its conversation is known: what its upstream request, its title turn and
/// its inspector record are made from.
pub(crate) struct Turn<'a> {
    pub(crate) state: &'a AppState,
    pub(crate) harness: &'a Arc<dyn Harness>,
    pub(crate) call: &'a Call,
    pub(crate) front: Front,
    pub(crate) owner: &'a str,
    pub(crate) conversation: String,
    /// The client's protocol is not Chat Completions and the harness rebuilt it as one: its
    /// query and its protocol's own key header belong to the client's protocol, not the upstream's.
    pub(crate) translated: bool,
}

impl Turn<'_> {
    /// The title service's part in this turn: its claim, and the title request the harness writes
    /// when it claims a job.
    pub(crate) async fn begin_title(
        &self,
        facts: Option<&ConversationFacts>,
        started: bool,
        subagent: bool,
    ) -> TitleTurn {
        let headers = &self.call.headers;
        // Owns what it needs: an exchange title is written when the answer has ended.
        let title_request = |model: &str| -> TitleWriter {
            let mut title_headers =
                upstream_headers(headers, &self.state.harness_header, true, &self.call.id.0);
            let harness = self.harness.clone();
            let model = model.to_owned();
            let conversation = self.conversation.clone();
            Box::new(move |words| {
                let ask = TitleAsk {
                    model: &model,
                    words,
                    conversation: &conversation,
                };
                let body = harness.title_request(&ask, &mut title_headers)?;
                let path = harness.title_path();
                Ok(TitleRequest {
                    body,
                    headers: title_headers,
                    path: path.unwrap_or(UPSTREAM_PATH),
                    messages: path.is_some(),
                })
            })
        };
        self.state
            .titles
            .begin(TurnInfo {
                owner: self.owner,
                conversation: &self.conversation,
                facts,
                started,
                subagent,
                harness: self.harness.name(),
                protocol: self.front.protocol.name(),
                title_request: &title_request,
                client_authorization: client_authorization(headers, self.translated),
                titles_itself: crate::titles::threads::titles_itself(headers),
                title_thread: crate::titles::threads::is_title_thread(headers),
            })
            .await
    }

    /// The upstream request: the harness's body, the client's end-to-end headers with the
    /// harness's own, the path of Chat Completions (or of the client's protocol, passthrough).
    pub(crate) fn outbound(
        &self,
        client_body: &Bytes,
        upstream_body: BodyParts,
        rewritten: bool,
    ) -> Outbound {
        let (call, translated) = (self.call, self.translated);
        // A translated request is a Chat Completions body the proxy wrote, even when the harness
        // left it as the client meant it (a title or helper call): fresh content headers, no
        // client key in its protocol's own header.
        let mut headers = upstream_headers(
            &call.headers,
            &self.state.harness_header,
            rewritten || translated,
            &call.id.0,
        );
        if rewritten {
            self.harness
                .add_upstream_headers(&mut headers, &self.conversation);
        }
        let messages = self.state.config.upstream.wire == Wire::Messages;
        // A translated request's query belongs to the client's protocol (Claude Code's
        // `?beta=true`), not to Chat Completions, and a rebuilt one is the proxy's own (what the
        // upstream needs of a query is in `upstream.base_url`): neither is forwarded. What goes
        // as the client sent it keeps its parameters, never one named like a credential.
        let path = if messages && rewritten {
            self.harness.upstream_path().to_owned()
        } else if translated {
            UPSTREAM_PATH.to_owned()
        } else {
            if let Some(name) = self.front.passthrough_key {
                rename_key(&mut headers, name);
            }
            let path = (self.front.upstream_path)(&call.request(client_body));
            // A Messages upstream's base URL is its root; the fronts' paths are under `/v1`.
            let path = if messages { format!("/v1{path}") } else { path };
            let query = call.query.as_deref().filter(|_| !rewritten);
            match query.and_then(forwardable_query) {
                Some(q) => format!("{path}?{q}"),
                None => path,
            }
        };
        Outbound {
            method: Method::POST,
            path,
            headers,
            body: upstream_body,
            client_authorization: client_authorization(&call.headers, translated),
            dispatched: None,
            messages: messages && rewritten,
        }
    }

    /// The console's inspector, when on: the client's request beside the upstream's.
    pub(crate) fn inspect(
        &self,
        client_body: &Bytes,
        outbound: &Outbound,
        tools: (&[String], &[String]),
    ) {
        let Some(inspector) = &self.state.inspect else {
            return;
        };
        inspector.record(&crate::inspect::Exchange {
            id: &self.call.id.0,
            owner: self.owner,
            conversation_id: &self.conversation,
            harness: self.harness.name(),
            protocol: self.front.protocol.name(),
            client: (&self.call.path, &self.call.headers, client_body),
            upstream: (&outbound.path, &outbound.headers, &outbound.body.to_bytes()),
            tools,
        });
    }

    /// The client's connection check before its first request (Claude Code's `HEAD`), when this
    /// turn's request goes upstream rebuilt by a harness that asks for it. Bounded and never
    /// failing (`upstream::preflight`); run before the title request, which must follow it.
    pub(crate) async fn preflight(&self, prepared: &Prepared) {
        if self.harness.preflight() && prepared.rewritten && prepared.local.is_none() {
            self.state.upstream.preflight().await;
        }
    }

    /// Sends the request and waits for the answer's head; its body is metered from then on.
    pub(crate) async fn send(
        &self,
        outbound: Outbound,
        meter: &Meter,
    ) -> Result<UpstreamResponse, UpstreamError> {
        let sending = Instant::now();
        let mut upstream = match self.state.upstream.send(outbound).await {
            Ok(upstream) => upstream,
            Err(err) => {
                meter.waited(sending.elapsed());
                return Err(err);
            }
        };
        meter.upstream_head(sending.elapsed());
        upstream.body = meter.watch_upstream(std::mem::replace(
            &mut upstream.body,
            Box::pin(futures_util::stream::empty()),
        ));
        Ok(upstream)
    }

    /// The reasoning of a rewritten answer, for the next turn of a client that echoes none:
    /// kept in `scope` (`Caller::memo_scope`), none without one (no later turn may read it).
    pub(crate) fn memo(&self, rewritten: bool, scope: Option<&str>) -> Option<MemoSink> {
        let scope = scope.filter(|_| {
            rewritten && self.state.config.opencode.reasoning == ReasoningMode::Return
        })?;
        Some(MemoSink {
            memo: self.state.memory.reasoning.clone(),
            owner: scope.to_owned(),
        })
    }
}

/// `passthrough` of a protocol whose key goes in its own header: the client's key (`x-api-key`
/// since `Front::adopt`) under that name.
fn rename_key(headers: &mut HeaderMap, name: &'static str) {
    if let Some(mut key) = headers.remove(&API_KEY) {
        key.set_sensitive(true);
        headers.insert(name, key);
    }
}
