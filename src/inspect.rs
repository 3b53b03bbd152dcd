//! The request inspector behind the console (`inspect.enabled`): a bounded ring of the latest
//! proxied requests — what the client sent and what went upstream, side by side — held in memory
//! only, never written anywhere. Secrets never enter it: credential headers are redacted on the
//! way in. Entries are owned by the caller hash, like titles, and read back scoped the same way.

use std::collections::VecDeque;
use std::sync::Mutex;

use bytes::Bytes;
use chrono::Utc;
use http::HeaderMap;
use serde::Serialize;

use crate::config::InspectConfig;

/// Shown instead of a credential's value.
pub const REDACTED: &str = "<redacted>";

pub struct Inspector {
    capacity: usize,
    max_body_bytes: usize,
    entries: Mutex<VecDeque<Entry>>,
}

/// One proxied request as the inspector keeps it.
#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    /// The request id (`x-request-id`).
    pub id: String,
    #[serde(skip)]
    pub owner: String,
    /// RFC 3339, milliseconds, UTC.
    pub at: String,
    pub conversation_id: String,
    pub harness: &'static str,
    pub protocol: &'static str,
    pub client: Side,
    pub upstream: Side,
    /// Client tools the harness did not send, and those it sent as the client defined them
    /// (`x-harness-dropped-tools`, `x-harness-passthrough-tools`), at most `MAX_TOOL_NAMES` each.
    pub dropped_tools: Vec<String>,
    pub passthrough_tools: Vec<String>,
}

/// Names kept per list: enough to read, bounded like the rest of an entry.
const MAX_TOOL_NAMES: usize = 256;

/// One side of the exchange: where it went, its headers (credentials redacted) and its body.
#[derive(Debug, Clone, Serialize)]
pub struct Side {
    pub path: String,
    pub headers: Vec<(String, String)>,
    /// The body as text (lossy UTF-8), at most `inspect.max_body_bytes`.
    pub body: String,
    /// The body was longer and was cut.
    pub truncated: bool,
}

/// What the route hands over; the inspector copies only what it keeps.
pub struct Exchange<'a> {
    pub id: &'a str,
    pub owner: &'a str,
    pub conversation_id: &'a str,
    pub harness: &'static str,
    pub protocol: &'static str,
    pub client: (&'a str, &'a HeaderMap, &'a Bytes),
    pub upstream: (&'a str, &'a HeaderMap, &'a Bytes),
    /// (dropped, passed through) client tools.
    pub tools: (&'a [String], &'a [String]),
}

impl Inspector {
    /// `None` when the inspector is off.
    pub fn from_config(config: &InspectConfig) -> Option<Self> {
        config.enabled.then(|| Self {
            capacity: config.capacity.max(1),
            max_body_bytes: config.max_body_bytes,
            entries: Mutex::new(VecDeque::with_capacity(config.capacity.clamp(1, 1024))),
        })
    }

    pub fn record(&self, exchange: &Exchange<'_>) {
        let side = |(path, headers, body): (&str, &HeaderMap, &Bytes)| {
            let kept = &body[..body.len().min(self.max_body_bytes)];
            Side {
                path: path.to_owned(),
                headers: redacted(headers),
                body: String::from_utf8_lossy(kept).into_owned(),
                truncated: kept.len() < body.len(),
            }
        };
        let entry = Entry {
            id: exchange.id.to_owned(),
            owner: exchange.owner.to_owned(),
            at: Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            conversation_id: exchange.conversation_id.to_owned(),
            harness: exchange.harness,
            protocol: exchange.protocol,
            client: side(exchange.client),
            upstream: side(exchange.upstream),
            dropped_tools: exchange
                .tools
                .0
                .iter()
                .take(MAX_TOOL_NAMES)
                .cloned()
                .collect(),
            passthrough_tools: exchange
                .tools
                .1
                .iter()
                .take(MAX_TOOL_NAMES)
                .cloned()
                .collect(),
        };
        // A poisoned lock only means another request panicked mid-push; the ring is still whole.
        let mut entries = self
            .entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if entries.len() == self.capacity {
            entries.pop_front();
        }
        entries.push_back(entry);
    }

    /// Newest first; `scope: None` (admin) sees every caller's entries.
    pub fn list(&self, scope: Option<&str>) -> Vec<Entry> {
        let entries = self
            .entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        entries
            .iter()
            .rev()
            .filter(|e| scope.is_none_or(|owner| e.owner == owner))
            .cloned()
            .collect()
    }
}

/// Whether a header may carry a credential: known names, and any name that says so.
fn is_secret(name: &str) -> bool {
    const NAMES: [&str; 4] = [
        "authorization",
        "proxy-authorization",
        "cookie",
        "set-cookie",
    ];
    const WORDS: [&str; 6] = ["key", "token", "secret", "auth", "password", "cookie"];
    NAMES.contains(&name) || WORDS.iter().any(|w| name.contains(w))
}

fn redacted(headers: &HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(name, value)| {
            let shown = if is_secret(name.as_str()) {
                REDACTED.to_owned()
            } else {
                String::from_utf8_lossy(value.as_bytes()).into_owned()
            };
            (name.as_str().to_owned(), shown)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inspector(capacity: usize, max_body_bytes: usize) -> Inspector {
        Inspector::from_config(&InspectConfig {
            enabled: true,
            capacity,
            max_body_bytes,
        })
        .expect("enabled")
    }

    fn push(inspector: &Inspector, id: &str, owner: &str, body: &'static [u8]) {
        let mut headers = HeaderMap::new();
        headers.insert(
            "authorization",
            "Bearer sk-live-123".parse().expect("value"),
        );
        headers.insert("x-api-key", "sk-ant-456".parse().expect("value"));
        headers.insert("cookie", "session=789".parse().expect("value"));
        headers.insert("x-goog-api-key", "g-000".parse().expect("value"));
        headers.insert("user-agent", "codex_exec/0.94.0".parse().expect("value"));
        let body = Bytes::from_static(body);
        inspector.record(&Exchange {
            id,
            owner,
            conversation_id: "conv",
            harness: "opencode",
            protocol: "chat",
            client: ("/v1/chat/completions", &headers, &body),
            upstream: ("/chat/completions", &headers, &body),
            tools: (&[], &[]),
        });
    }

    #[test]
    fn is_off_unless_enabled() {
        assert!(Inspector::from_config(&InspectConfig::default()).is_none());
    }

    #[test]
    fn keeps_the_latest_n_newest_first_scoped_by_owner() {
        let inspector = inspector(2, 1024);
        push(&inspector, "r1", "alice", b"{}");
        push(&inspector, "r2", "bob", b"{}");
        push(&inspector, "r3", "alice", b"{}");
        let ids = |entries: Vec<Entry>| entries.into_iter().map(|e| e.id).collect::<Vec<_>>();
        assert_eq!(ids(inspector.list(None)), ["r3", "r2"], "r1 fell out");
        assert_eq!(ids(inspector.list(Some("alice"))), ["r3"]);
        assert_eq!(ids(inspector.list(Some("carol"))), Vec::<String>::new());
    }

    #[test]
    fn credentials_never_enter_and_long_bodies_are_cut() {
        let inspector = inspector(4, 5);
        push(&inspector, "r1", "alice", b"0123456789");
        let entry = &inspector.list(None)[0];
        let text = serde_json::to_string(entry).expect("json");
        for secret in ["sk-live-123", "sk-ant-456", "session=789", "g-000"] {
            assert!(!text.contains(secret), "{secret} leaked: {text}");
        }
        assert!(text.contains("codex_exec/0.94.0"));
        assert!(!text.contains("alice"), "the owner hash is not shown");
        assert_eq!(
            (entry.client.body.as_str(), entry.client.truncated),
            ("01234", true)
        );
    }
}
