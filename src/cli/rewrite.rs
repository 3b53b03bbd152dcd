//! `rewrite`: the upstream request the server would send for one client request read from
//! stdin, in any client protocol, through the serving path's own inbound half (`routes::inbound`)
//! and the harness's own title request — nothing re-implemented here.

use std::io::Read;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Args;
use http::{HeaderMap, HeaderName, HeaderValue};

use super::{CliError, CommonArgs, load_config, process_host};
use crate::config::Config;
use crate::error::ProxyError;
use crate::harness::{Harness, TitleAsk};
use crate::prompts::Prompts;
use crate::routes::RequestId;
use crate::routes::front::Call;
use crate::routes::inbound::{self, Processed};
use crate::state::build_registry;

#[derive(Debug, Args)]
pub struct RewriteArgs {
    /// Harness to rewrite with.
    #[arg(long)]
    pub harness: String,
    /// Request header `K:V`, as the client would send it (repeatable).
    #[arg(long = "header", value_name = "K:V")]
    pub headers: Vec<String>,
    /// The client protocol the request (on stdin) is in.
    #[arg(long, default_value = "chat", value_parser = protocol_names())]
    pub protocol: String,
    /// `--protocol gemini`: the model, which Gemini names in the request's path.
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// Print the title request instead of the main request.
    #[arg(long)]
    pub title: bool,
}

/// `--protocol`'s values: the served fronts' names.
fn protocol_names() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(
        crate::routes::FRONTS
            .iter()
            .map(|front| front.protocol.name()),
    )
}

pub(super) fn run(common: &CommonArgs, args: &RewriteArgs) -> Result<ExitCode, CliError> {
    let config = load_config(common)?;
    let prompts = Prompts::load(config.prompts_dir.as_deref())?;
    let registry = build_registry(&config, &prompts, &process_host())?;
    let harness = registry
        .get(&args.harness)
        .ok_or_else(|| CliError::UnknownHarness {
            name: args.harness.clone(),
            known: registry.names(),
        })?;
    let headers = parse_headers(&args.headers)?;
    let mut body = Vec::new();
    std::io::stdin()
        .read_to_end(&mut body)
        .map_err(CliError::Stdin)?;
    let out = rewritten(&config, harness, args, headers, &bytes::Bytes::from(body))?;
    let mut text = String::from_utf8_lossy(&out).into_owned();
    text.push('\n');
    print!("{text}");
    Ok(ExitCode::SUCCESS)
}

/// The upstream body (or with `--title` the title request's) the server would send for this
/// request: the same inbound half (`routes::inbound`: the protocol's adapter, the title facts, the
/// harness) and the same title request (`Harness::title_request`) as `serve`.
fn rewritten(
    config: &Config,
    harness: &Arc<dyn Harness>,
    args: &RewriteArgs,
    headers: HeaderMap,
    body: &bytes::Bytes,
) -> Result<Vec<u8>, CliError> {
    let front =
        crate::routes::front_named(&args.protocol).ok_or_else(|| CliError::UnknownProtocol {
            name: args.protocol.clone(),
        })?;
    let protocol = front.protocol;
    let mut params = Vec::new();
    if protocol == crate::protocols::gemini::PROTOCOL {
        // Gemini names the model and the call in the path: a streamed turn, as Gemini CLI sends.
        let model = args.model.clone().ok_or(CliError::GeminiModel)?;
        params.push(("model".to_owned(), model));
        params.push((
            "action".to_owned(),
            crate::protocols::gemini::STREAM.to_owned(),
        ));
    }
    let call = Call {
        id: RequestId("rewrite".to_owned()),
        method: http::Method::POST,
        path: String::new(),
        params,
        query: None,
        headers,
    };
    // The prompt-cache scope `serve` stamps: the conversation the client names, for its caller.
    let caller = crate::memory::identity::Caller::from_headers(
        &call.headers,
        config.auth.admin_token.as_deref(),
    );
    let call = crate::routes::cache_scope::stamped(&call, &caller.owner);
    let processed = if harness.rewrites() {
        let context = inbound::Context {
            seal: crate::state::reasoning_seal(config)?,
            memo: None,
            echoed: Default::default(),
            max_image_bytes: config.limits.max_image_bytes,
            max_tools: config.limits.max_tools,
            max_tool_schema_bytes: config.limits.max_tool_schema_bytes,
        };
        inbound::process_offline(
            harness.as_ref(),
            front,
            &call.request(body),
            chrono::Utc::now(),
            context,
        )
    } else {
        Ok(Processed::passthrough(body, &call.headers, protocol, true))
    }?;
    if !args.title {
        return Ok(processed.prepared.upstream_body.to_bytes().to_vec());
    }
    let facts = processed.facts.ok_or(CliError::NothingToTitle)?;
    let ask = TitleAsk {
        model: config.titles.model.as_deref().unwrap_or(&facts.model),
        words: crate::harness::TitleWords::FirstUser(&facts.first_user_text),
        conversation: "",
    };
    let body = harness
        .title_request(&ask, &mut HeaderMap::new())
        .map_err(ProxyError::from)?;
    Ok(body.to_vec())
}

fn parse_headers(raw_headers: &[String]) -> Result<HeaderMap, CliError> {
    let mut headers = HeaderMap::new();
    for raw in raw_headers {
        let bad = |problem| CliError::Header {
            raw: raw.clone(),
            problem,
        };
        let (name, value) = raw.split_once(':').ok_or_else(|| bad("expected K:V"))?;
        let name: HeaderName = name.trim().parse().map_err(|_| bad("bad header name"))?;
        let value: HeaderValue = value.trim().parse().map_err(|_| bad("bad header value"))?;
        headers.append(name, value);
    }
    Ok(headers)
}
