//! `passthrough`: the request body and the response go through byte for byte.

use super::{Harness, HarnessError, HarnessRequest, Prepared};
use crate::protocols::chat::ResponsePlan;

pub struct Passthrough;

impl Harness for Passthrough {
    fn name(&self) -> &'static str {
        "passthrough"
    }

    fn rewrites(&self) -> bool {
        false
    }

    fn prepare(&self, _request: &HarnessRequest<'_>) -> Result<Prepared, HarnessError> {
        Ok(Prepared {
            upstream_body: None,
            response: ResponsePlan::Passthrough,
            response_headers: Vec::new(),
            facts: None,
        })
    }
}
