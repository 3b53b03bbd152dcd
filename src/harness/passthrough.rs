//! `passthrough`: the request body and the response go through byte for byte.

use super::{Harness, HarnessError, HarnessRequest, Prepared};

pub struct Passthrough;

impl Harness for Passthrough {
    fn name(&self) -> &'static str {
        "passthrough"
    }

    fn rewrites(&self) -> bool {
        false
    }

    /// Not called by the proxy (a harness that does not rewrite gets no parsed request); given a
    /// conversation anyway, it sends the request as it was.
    fn prepare(&self, request: HarnessRequest<'_>) -> Result<Prepared, HarnessError> {
        Ok(Prepared::unchanged(&request))
    }
}
