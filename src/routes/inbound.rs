//! The inbound half of the pipeline: the client's bytes → its protocol's adapter → the
//! conversation model (echoed reasoning recovered: from its seal, else from the reasoning memo,
//! this process's, then the shared store's for what it missed) → the title facts read from it →
//! the harness's upstream request. Large bodies are parsed and rebuilt on the blocking pool. A harness that does not rewrite gets the
//! bytes unparsed (only a Chat Completions body is peeked at, for the title facts).

use bytes::Bytes;
use http::HeaderMap;

use crate::config::{ReasoningMode, Wire};
use crate::conversation::seal::ReasoningSeal;
use crate::error::ProxyError;
use crate::harness::{Harness, HarnessRequest, Prepared};
use crate::memory::facts::ConversationFacts;
use crate::memory::reasoning_memo::{Echoed, Misses, ReasoningMemo};
use crate::protocols::chat::ResponsePlan;
use crate::protocols::chat::peek::Peek;
use crate::protocols::{ClientProtocol, Inbound, Renderer, Request};
use crate::routes::front::{Call, Front};
use crate::state::AppState;

/// Bodies from this size are parsed and rewritten on the blocking pool, one per core at a time:
/// parsing and rebuilding a large body takes long enough to stall every connection served by the
/// same worker thread, and each rewrite in progress holds about two more copies of its body.
const BLOCKING_PREPARE_BYTES: usize = 256 * 1024;

/// What the pipeline made of the client's request before it goes upstream.
pub(crate) struct Processed {
    pub(crate) prepared: Prepared,
    /// What the title service needs; `None` when nothing read the body.
    pub(crate) facts: Option<ConversationFacts>,
    /// The client's protocol renderer; `None` for Chat Completions clients.
    pub(crate) renderer: Option<Box<dyn Renderer>>,
    pub(crate) client_stream: bool,
    pub(crate) dropped_tools: Vec<String>,
    /// A conversation id the body carries.
    pub(crate) conversation_key: Option<String>,
}

impl Processed {
    /// A harness that does not rewrite: the client's bytes go as they are. Only a Chat Completions
    /// body is peeked at, and only when an id must be derived or a title may be due.
    pub(crate) fn passthrough(
        body: &Bytes,
        headers: &HeaderMap,
        protocol: ClientProtocol,
        titled: bool,
    ) -> Self {
        let facts = (protocol == crate::protocols::chat::PROTOCOL
            && (titled || !crate::memory::identity::has_conversation_header(headers)))
        .then(|| Peek::parse(body))
        .flatten()
        .map(|peek| ConversationFacts::from_views(peek.model(), peek.views()));
        Self {
            prepared: Prepared {
                upstream_body: body.clone().into(),
                rewritten: false,
                response: ResponsePlan::Passthrough,
                dropped_tools: Vec::new(),
                passthrough_tools: Vec::new(),
                subagent: false,
                local: None,
            },
            facts,
            renderer: None,
            client_stream: false,
            dropped_tools: Vec::new(),
            conversation_key: None,
        }
    }
}

/// Parses the client's protocol into the model, reads the title facts from it, and lets the
/// harness rebuild it (large bodies on the blocking pool). A turn whose calls' reasoning this
/// process does not know is looked up in the shared store between the two, in `memo_scope`
/// (`Caller::memo_scope`): without one, only the request's own seal gives reasoning back. A
/// harness that does not rewrite gets the client's bytes, unparsed.
pub(crate) async fn process(
    state: &AppState,
    harness: &std::sync::Arc<dyn Harness>,
    front: Front,
    call: &Call,
    body: &Bytes,
    memo_scope: Option<&str>,
) -> Result<Processed, ProxyError> {
    if !harness.rewrites() {
        let titled = state.titles.applies_to(harness.name());
        return Ok(Processed::passthrough(
            body,
            &call.headers,
            front.protocol,
            titled,
        ));
    }
    let now = chrono::Utc::now();
    let memo = memo_scope
        .filter(|_| state.config.opencode.reasoning == ReasoningMode::Return)
        .map(|owner| (state.memory.reasoning.clone(), owner.to_owned()));
    let context = Context {
        seal: state.reasoning_seal.clone(),
        memo: memo.clone(),
        echoed: match state.config.upstream.wire {
            Wire::Messages => Echoed::Sign,
            Wire::Chat => Echoed::Leave,
        },
        max_image_bytes: state.config.limits.max_image_bytes,
        max_tools: state.config.limits.max_tools,
        max_tool_schema_bytes: state.config.limits.max_tool_schema_bytes,
    };
    if body.len() < BLOCKING_PREPARE_BYTES {
        let request = call.request(body);
        let mut parsed = match process_now(harness.as_ref(), front, &request, now, context)? {
            Stage::Done(processed) => return Ok(processed),
            Stage::Lookup(parsed) => parsed,
        };
        look_up(memo.as_ref(), &mut parsed).await;
        return prepare_now(harness.as_ref(), front, &request, now, parsed);
    }
    let _turn = state
        .large_rewrites
        .acquire()
        .await
        .map_err(ProxyError::internal)?;
    let (harness, body, call) = (harness.clone(), body.clone(), call.clone());
    let (h, b, c) = (harness.clone(), body.clone(), call.clone());
    let first = blocking(move || process_now(h.as_ref(), front, &c.request(&b), now, context));
    let mut parsed = match first.await? {
        Stage::Done(processed) => return Ok(processed),
        Stage::Lookup(parsed) => parsed,
    };
    look_up(memo.as_ref(), &mut parsed).await;
    blocking(move || prepare_now(harness.as_ref(), front, &call.request(&body), now, parsed)).await
}

/// Runs a step of a large rewrite on the blocking pool.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ProxyError> + Send + 'static,
) -> Result<T, ProxyError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(ProxyError::internal)?
}

/// What `process_now` needs of the app's state (`cli rewrite` fills it without a server).
pub(crate) struct Context {
    pub(crate) seal: std::sync::Arc<ReasoningSeal>,
    /// The memo of answers' reasoning and whose turn this is, when reasoning goes back.
    pub(crate) memo: Option<(std::sync::Arc<ReasoningMemo>, String)>,
    /// What the memo does with a turn that echoed its reasoning's text without the signature:
    /// signs it only for a Messages upstream (a Chat upstream has no signatures to check).
    pub(crate) echoed: Echoed,
    pub(crate) max_image_bytes: usize,
    pub(crate) max_tools: usize,
    pub(crate) max_tool_schema_bytes: usize,
}

/// The client's request in the model, before the harness rebuilds it.
struct Parsed {
    inbound: Inbound,
    /// Turns whose reasoning the local memo did not know: for the shared store.
    misses: Misses,
}

/// How far `process_now` got: all the way, or up to a look-up in the shared store.
enum Stage {
    Done(Processed),
    Lookup(Parsed),
}

/// Asks the shared store for what the local memo missed; never fails the request.
async fn look_up(memo: Option<&(std::sync::Arc<ReasoningMemo>, String)>, parsed: &mut Parsed) {
    if let Some((memo, owner)) = memo {
        let misses = std::mem::take(&mut parsed.misses);
        memo.recover_shared(owner, &mut parsed.inbound.conversation.items, misses)
            .await;
    }
}

/// The inbound half for a harness that rewrites, with no shared store to look in (`cli rewrite`
/// prints what it makes).
pub(crate) fn process_offline(
    harness: &dyn Harness,
    front: Front,
    request: &Request<'_>,
    now: chrono::DateTime<chrono::Utc>,
    context: Context,
) -> Result<Processed, ProxyError> {
    match process_now(harness, front, request, now, context)? {
        Stage::Done(processed) => Ok(processed),
        Stage::Lookup(parsed) => prepare_now(harness, front, request, now, parsed),
    }
}

/// The inbound half for a harness that rewrites, here and now: `process` without the blocking
/// pool, up to a look-up in the shared store when the local memo missed a turn.
fn process_now(
    harness: &dyn Harness,
    front: Front,
    request: &Request<'_>,
    now: chrono::DateTime<chrono::Utc>,
    context: Context,
) -> Result<Stage, ProxyError> {
    let parsed = parse_now(front, request, context)?;
    if parsed.misses.is_empty() {
        return prepare_now(harness, front, request, now, parsed).map(Stage::Done);
    }
    Ok(Stage::Lookup(parsed))
}

fn parse_now(front: Front, request: &Request<'_>, context: Context) -> Result<Parsed, ProxyError> {
    let Context {
        seal,
        memo,
        echoed,
        max_image_bytes,
        max_tools,
        max_tool_schema_bytes,
    } = context;
    let mut inbound = (front.parse)(request)?;
    let tools = &inbound.conversation.tools;
    if tools.len() > max_tools {
        return Err(ProxyError::TooManyTools {
            count: tools.len(),
            limit: max_tools,
        });
    }
    // Before the bridge compiles or checks any of them: a schema's size bounds what that costs.
    if let Some(tool) = tools
        .iter()
        .find(|tool| tool.schema_exceeds(max_tool_schema_bytes))
    {
        return Err(ProxyError::ToolSchemaTooLarge {
            tool: crate::clients::labels::clip(tool.name().unwrap_or("(unnamed)")),
            limit: max_tool_schema_bytes,
        });
    }
    let size = inbound.conversation.image_bytes();
    if size > max_image_bytes {
        return Err(ProxyError::ImagesTooLarge {
            size,
            limit: max_image_bytes,
        });
    }
    let items = &mut inbound.conversation.items;
    // The reasoning a client echoed inside our seal (Claude Code's thinking shown empty).
    crate::conversation::seal::recover(items, &seal);
    // What a client that echoes no reasoning dropped, from the answer that made its calls.
    let misses = match &memo {
        Some((memo, owner)) => memo.recover(owner, items, echoed),
        None => Misses::default(),
    };
    if let Some(renderer) = inbound.renderer.as_mut() {
        renderer.seal_reasoning(seal);
    }
    Ok(Parsed { inbound, misses })
}

fn prepare_now(
    harness: &dyn Harness,
    front: Front,
    request: &Request<'_>,
    now: chrono::DateTime<chrono::Utc>,
    parsed: Parsed,
) -> Result<Processed, ProxyError> {
    let Inbound {
        conversation,
        renderer,
        dropped_tools,
    } = parsed.inbound;
    let (body, headers) = (request.body, request.headers);
    // A helper call beside the conversation has no facts: nothing to title, nothing to claim.
    let aside = conversation.client.aside;
    let facts = if aside {
        None
    } else if harness.is_client_title_request(&conversation) {
        Some(ConversationFacts::of_title_request(&conversation))
    } else {
        Some(ConversationFacts::from_conversation(&conversation))
    };
    let conversation_key = conversation.client.conversation_key.clone();
    let client_stream = conversation.options.stream;
    let request = HarnessRequest {
        conversation,
        chat_body: (front.protocol == crate::protocols::chat::PROTOCOL).then_some(body),
        headers,
        now,
    };
    // ... and is forwarded as the client asked, whatever the harness.
    let prepared = if aside {
        Prepared::unchanged(&request)?
    } else {
        harness.prepare(request)?
    };
    Ok(Processed {
        prepared,
        facts,
        renderer,
        client_stream,
        dropped_tools,
        conversation_key,
    })
}
