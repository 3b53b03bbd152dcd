//! Conversation memory: what the proxy knows of a conversation across its turns, whatever the
//! harness and whether or not it is titled. Who a conversation is: its caller and id
//! (`identity`), and for clients that send no id, the exchange that anchors it (`anchors`). What
//! this process has seen of it: the request's facts (`facts`), conversations known to have a
//! record (`known`), titles made lately from the same words (`recent`). What it must carry: the
//! reasoning of answers that made tool calls (`reasoning_memo`), for clients that echo none. An
//! answer's witness (`answer_witness`) learns all of it from the one parse of the answer.
//!
//! Kept in this process, and for the reasoning memo also in the shared store backend (`store`,
//! opened once by the state). Titles are one consumer (`titles` reads `known`, `recent` and the
//! anchors through `ConversationMemory`); the route is another (ids, the memo's scope).
//!
//! Owns: the in-process maps and their bounds, the memo's upkeep (hourly prune, drain at
//! shutdown). Must not: import `titles` or `routes` (it sits below both).

pub mod anchors;
pub mod answer_tap;
pub mod answer_witness;
pub mod facts;
pub mod identity;
pub mod known;
pub mod reasoning_memo;
pub mod recent;

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use http::HeaderMap;

use crate::store::{Backend, StoreError};
use anchors::Anchors;
use anchors::fresh_id;
use facts::ConversationFacts;
use identity::{BadConversationId, client_conversation_id, derived_conversation_id};
use known::Known;
use reasoning_memo::ReasoningMemo;
use recent::RecentTitles;

/// How often the memo's store entries past their TTL are pruned.
const PRUNE_EVERY: Duration = Duration::from_secs(3600);

/// One process's conversation memory; `AppState` holds it, titles and routes share it.
#[derive(Default)]
pub struct ConversationMemory {
    /// Which conversation an id-less client's turn continues (this process's answers).
    pub anchors: Arc<Anchors>,
    /// Conversations known to have a title record already: not claimed again.
    pub known: Known,
    /// Titles generated lately, by what they were generated from.
    pub recent: RecentTitles,
    /// The reasoning of answers that made tool calls, in this process and in the shared backend.
    pub reasoning: Arc<ReasoningMemo>,
}

impl ConversationMemory {
    /// The memory over the shared backend (only the reasoning memo keeps entries there, read
    /// within `memo_read_timeout`).
    pub fn open(backend: &Backend, memo_read_timeout: Duration) -> Result<Self, StoreError> {
        Ok(Self {
            reasoning: Arc::new(ReasoningMemo::open(backend, memo_read_timeout)?),
            ..Self::default()
        })
    }

    /// Which conversation this turn belongs to, and whether it starts one. A client id wins; a
    /// rewritten request without one continues the conversation whose first answered exchange its
    /// history holds (`memory::anchors`), else starts a new one; passthrough, which never reads the
    /// answer, keeps the id derived from the first user text.
    pub fn identify(
        &self,
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
                match self.anchors.find(owner, &facts.exchanges) {
                    Some(id) => (id, false),
                    None => (fresh_id(), true),
                }
            }
            // The client named it nowhere (checked above).
            _ => {
                let first_user_text = facts.map_or("", |f| f.first_user_text.as_str());
                (derived_conversation_id(owner, first_user_text), false)
            }
        })
    }

    /// Prunes the memo's store entries every `PRUNE_EVERY` until `cancel`.
    pub fn spawn_maintenance(self: &Arc<Self>, cancel: CancellationToken) {
        let this = self.clone();
        tokio::spawn(async move {
            let mut prune = tokio::time::interval(PRUNE_EVERY);
            prune.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = prune.tick() => this.prune().await,
                    () = cancel.cancelled() => return,
                }
            }
        });
    }

    async fn prune(&self) {
        match self.reasoning.prune().await {
            Ok(0) => {}
            Ok(n) => tracing::debug!(count = n, "pruned remembered reasoning"),
            Err(err) => {
                // The same series as the title records' prune: one store, one count of its failures.
                metrics::counter!("harness_proxy_title_store_errors_total", "operation" => "prune")
                    .increment(1);
                tracing::warn!(error = %err, "cannot prune the reasoning memo");
            }
        }
    }

    /// At shutdown: the memo's store writes still on their way get up to `within`.
    pub async fn shutdown(&self, within: Duration) {
        self.reasoning.drain(within).await;
    }
}
