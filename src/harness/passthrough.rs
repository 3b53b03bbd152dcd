//! `passthrough`: the request body and the response go through byte for byte. It poses as no
//! client, so its conversations are titled as another harness asks for a title (`titled_as`:
//! opencode's, wired by `Registry::build`).

use std::sync::Arc;

use bytes::Bytes;
use http::HeaderMap;

use crate::config::Wire;

use super::{Harness, HarnessError, HarnessRequest, Prepared, TitleAsk};

pub struct Passthrough {
    /// The harness whose title request names this one's conversations.
    titled_as: Arc<dyn Harness>,
}

impl Passthrough {
    pub fn titled_as(harness: Arc<dyn Harness>) -> Self {
        Self { titled_as: harness }
    }
}

impl Harness for Passthrough {
    fn name(&self) -> &'static str {
        "passthrough"
    }

    fn rewrites(&self) -> bool {
        false
    }

    /// It forwards the client's bytes, whatever the upstream speaks.
    fn speaks(&self, _wire: Wire) -> bool {
        true
    }

    /// Not called by the proxy (a harness that does not rewrite gets no parsed request); given a
    /// conversation anyway, it sends the request as it was.
    fn prepare(&self, request: HarnessRequest<'_>) -> Result<Prepared, HarnessError> {
        Prepared::unchanged(&request)
    }

    fn title_request(
        &self,
        ask: &TitleAsk<'_>,
        headers: &mut HeaderMap,
    ) -> Result<Bytes, HarnessError> {
        self.titled_as.title_request(ask, headers)
    }
}
