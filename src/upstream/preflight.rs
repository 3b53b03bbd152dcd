//! Claude Code's connection check: before the first Messages request of a client, a
//! `HEAD {base_url}` with Bun's user agent (docs/harnesses.md, "claude-code"). Sent once per
//! `Upstream` (the proxy's one client of the model server), for the harnesses that ask for it.
//!
//! The check carries no credential and none of the client's headers: the reference's `HEAD`
//! carries only its user agent, and the server's answer to it is never read. Its outcome,
//! whatever it is, is ignored, and it is bounded (`TIMEOUT`, at most the first-byte timeout), so
//! it delays the request it precedes by that much at worst and never fails it.

use std::sync::atomic::Ordering;
use std::time::Duration;

use http::{HeaderValue, Method, header};

use super::Upstream;
use crate::config::Wire;

/// The user agent of Claude Code's runtime, which sends the check.
pub const USER_AGENT: &str = "Bun/1.3.14";

/// The longest the check may hold the request it precedes: long enough for a fresh TLS
/// connection (which the request then reuses), short next to a model's answer.
pub const TIMEOUT: Duration = Duration::from_secs(2);

impl Upstream {
    /// Sends the check if this upstream speaks Messages and has not sent it yet. Concurrent
    /// first requests do not wait for each other: one of them sends it.
    pub async fn preflight(&self) {
        if self.wire != Wire::Messages || self.preflighted.swap(true, Ordering::AcqRel) {
            return;
        }
        let Some(uri) = self.target.root() else {
            return;
        };
        let mut request = http::Request::new(super::client::OutBody::new(Default::default(), None));
        *request.method_mut() = Method::HEAD;
        *request.uri_mut() = uri;
        let headers = request.headers_mut();
        headers.insert(header::USER_AGENT, HeaderValue::from_static(USER_AGENT));
        // As every request of the reqwest client this one replaced carried it.
        headers.insert(header::ACCEPT, HeaderValue::from_static("*/*"));
        let bound = TIMEOUT.min(self.first_byte_timeout);
        match tokio::time::timeout(bound, self.client.send(request)).await {
            Ok(Ok(response)) => {
                tracing::debug!(status = response.status().as_u16(), "upstream preflight");
            }
            Ok(Err(err)) => {
                tracing::debug!(error = %super::describe(&err), "upstream preflight failed");
            }
            Err(_) => tracing::debug!(?bound, "upstream preflight timed out"),
        }
    }
}
