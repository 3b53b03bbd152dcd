//! What the harnesses' unit tests share: the registry built from the built-in prompts, a Chat
//! Completions body prepared by one harness, and its answer rules.

use std::sync::Arc;

use bytes::Bytes;
use chrono::TimeZone;
use http::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;

use super::{HarnessRequest, Prepared, Registry, Setup};
use crate::clients::profiles::Profiles;
use crate::config::Config;
use crate::conversation::action::ActionReader;
use crate::conversation::mapping::ResponsePlan;
use crate::prompts::Prompts;

/// Every built-in harness, as the proxy builds them from its own prompts.
pub fn registry() -> Registry {
    let mut config = Config::default();
    config.opencode.platform = Some("linux".into());
    config.opencode.timezone = Some("UTC".into());
    let prompts = Prompts::load(None).expect("built-in prompts");
    Registry::build(&Setup {
        config: &config,
        prompts: &prompts,
        host: super::opencode::tools::HostInfo {
            shell: None,
            temp_dir: "/tmp".into(),
            utc_offset: chrono::FixedOffset::east_opt(0).expect("UTC"),
        },
        profiles: Profiles::load(&[]).expect("profiles"),
    })
    .expect("every harness builds")
}

fn run(harness: &str, request: &Value, headers: &[(&str, &str)]) -> Result<Prepared, String> {
    run_in(&registry(), harness, request, headers)
}

fn run_in(
    registry: &Registry,
    harness: &str,
    request: &Value,
    headers: &[(&str, &str)],
) -> Result<Prepared, String> {
    let body = Bytes::from(serde_json::to_vec(request).expect("request"));
    let conversation =
        crate::protocols::chat::request::parse_conversation(&body).expect("request parses");
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        map.insert(
            HeaderName::from_bytes(name.as_bytes()).expect("name"),
            HeaderValue::from_str(value).expect("value"),
        );
    }
    let now = chrono::Utc
        .with_ymd_and_hms(2025, 11, 29, 12, 0, 0)
        .single()
        .expect("date");
    registry
        .get(harness)
        .expect("harness")
        .prepare(HarnessRequest {
            conversation,
            chat_body: Some(&body),
            headers: &map,
            now,
        })
        .map_err(|e| e.to_string())
}

/// The request as `harness` prepares it.
pub fn prepare(harness: &str, request: &Value, headers: &[(&str, &str)]) -> Prepared {
    run(harness, request, headers).expect("prepared")
}

/// The request as `harness` of `registry` prepares it: what the harness keeps for every request
/// stays shared while `registry` lives.
pub fn prepare_in(registry: &Registry, harness: &str, request: &Value) -> Prepared {
    run_in(registry, harness, request, &[]).expect("prepared")
}

/// Why `harness` refuses the request.
pub fn refused(harness: &str, request: &Value) -> String {
    match run(harness, request, &[]) {
        Ok(_) => panic!("{harness} took the request"),
        Err(err) => err,
    }
}

/// The prepared request's answer rules.
pub fn reader(prepared: &Prepared) -> Arc<dyn ActionReader> {
    match &prepared.response {
        ResponsePlan::Reshape(reshape) => reshape.actions.clone().expect("answer rules"),
        ResponsePlan::Passthrough => panic!("not rewritten"),
    }
}

/// The upstream body.
pub fn body(prepared: &Prepared) -> Value {
    serde_json::from_slice(&prepared.upstream_body.to_bytes()).expect("JSON")
}

/// Every built-in harness's name.
pub fn names() -> Vec<&'static str> {
    registry().harnesses.keys().copied().collect()
}
