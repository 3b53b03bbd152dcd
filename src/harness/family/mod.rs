//! What the reference's chat harnesses share (`pi`, `qwen-code`, `kimi-code`, `kimi-cli`,
//! `deepseek-tui`, `minimal`, `little-coder`; docs/harnesses.md): a tool set (the harness's own
//! definitions, `prompts/<harness>/tools.json`, and the profile that says what each tool does),
//! the request's bridge against it, the client's history with its calls and results in the
//! harness's tools (`translate`), what the client's request says of where it runs (`Context`),
//! the four message builders (`builder_p`, `builder_k`, `builder_m`) and the prepared request.
//! Each harness is then one module: its system text, its builder's options, its body fields.
//!
//! Pure and synchronous, as every harness: nothing here reads the client's disk or the clock.

pub mod body;
pub mod builder_k;
pub mod builder_m;
pub mod builder_p;
pub mod context;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use bytes::Bytes;
use http::HeaderMap;
use serde_json::Value;

use super::opencode::title::TitleRecogniser;
use super::{HarnessError, HarnessRequest, Prepared};
use crate::clients::bridge::{Binding, Bridge, HarnessTools, Unmatched};
use crate::clients::contextual;
use crate::clients::labels::ToolLabels;
use crate::clients::profiles::{Profile, Profiles};
use crate::config::{ExtraTools, ToolsPolicy};
use crate::conversation::mapping::{CallMapper, Reshape, ResponsePlan};
use crate::conversation::{
    CallInput, Content, Conversation, Item, Part, Role, ToolCall, ToolDefinition, ToolResult,
};
use crate::prompts::{Builtin, PromptError, Prompts};

pub use self::body::{Body, Offered};
use self::body::{Definition, Definitions};

/// The reference's marker a runtime puts in front of a tool output it must not cut; a harness
/// that strips it strips this.
pub const NO_TRUNCATE_MARKER: &str = "<open-interpreter-harness-no-truncate>\n";

/// A harness's own tools: their definitions as sent, in the order sent, and what each does.
pub struct ToolSet {
    /// Parsed and serialized once at start-up: a request copies the text of the ones it offers
    /// (DeepSeek-TUI offers 84; see `offered`).
    definitions: Definitions,
    tools: Arc<HarnessTools>,
}

impl ToolSet {
    /// The tools of `file`, described by the profile `dialect` (its data file, `profiles/*.toml`).
    pub fn load(
        prompts: &Prompts,
        file: &Builtin,
        dialect: Arc<Profile>,
    ) -> Result<Self, PromptError> {
        let text = prompts.read(file)?;
        let parsed = text.tools()?;
        let mut definitions = Vec::with_capacity(parsed.len());
        let mut schemas = Vec::with_capacity(parsed.len());
        for tool in parsed {
            let value: Value =
                serde_json::from_str(&tool.json).map_err(|source| PromptError::Tools {
                    path: text.path.clone(),
                    source: crate::prompts::ToolsError::NotJson(source),
                })?;
            schemas.push((
                tool.name.clone(),
                value.pointer("/function/parameters").cloned(),
            ));
            let definition =
                Definition::new(tool.name, value).map_err(|source| PromptError::Tools {
                    path: text.path.clone(),
                    source: crate::prompts::ToolsError::NotJson(source),
                })?;
            definitions.push(definition);
        }
        Ok(Self {
            definitions: Definitions::new(definitions),
            tools: Arc::new(HarnessTools::new(dialect, schemas)),
        })
    }

    /// No tools of its own: the client's are offered as they came (`minimal`'s pass-through).
    pub fn none() -> Self {
        Self {
            definitions: Definitions::default(),
            tools: Arc::new(HarnessTools::new(Arc::new(Profile::none()), Vec::new())),
        }
    }

    pub fn harness_tools(&self) -> &Arc<HarnessTools> {
        &self.tools
    }

    /// The harness's tool names in its tools file's order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.definitions.iter().map(|d| d.name.as_str())
    }

    /// The request's tools upstream: the harness's own, in its order, for what the client can
    /// run (every one of them with the `reference` policy), then the client's tools that have
    /// no counterpart, as the client defined them (as opencode sends MCP tools).
    pub fn offered(
        &self,
        client_tools: &[ToolDefinition],
        bridge: &Bridge,
        policy: ToolsPolicy,
    ) -> Offered<'_> {
        let mut mapped: HashSet<&str> = HashSet::new();
        for tool in &bridge.tools {
            if let Binding::Mapped { harness, .. } = &tool.binding {
                mapped.extend(harness.iter().map(String::as_str));
            }
        }
        let kept = bridge.kept();
        let kept_names: HashSet<&str> = kept.iter().map(String::as_str).collect();
        let own = self.definitions.pick(|d| {
            (policy == ToolsPolicy::Reference || mapped.contains(d.name.as_str()))
                // A kept client tool of the same name is the one the model's calls go to.
                && !kept_names.contains(d.name.as_str())
        });
        let client = client_tools
            .iter()
            .filter(|def| def.name().is_some_and(|n| kept_names.contains(n)))
            .filter_map(super::plain::tool)
            .filter_map(|def| serde_json::value::to_raw_value(&def).ok())
            .collect();
        Offered::new(own, client)
    }
}

/// What every chat harness is built from: the client profiles, the harness options shared with
/// opencode (`opencode.tools`, `extra_tools`, `history`, `reasoning`, the `<env>` defaults).
#[derive(Clone)]
pub struct Common {
    pub profiles: Profiles,
    pub config: crate::config::OpencodeConfig,
    pub context: context::Defaults,
    /// The one title prompt the proxy has, for a harness whose agent asks for no title.
    title_prompt: String,
    /// Tells a client's own title request, which goes as it came.
    titles: TitleRecogniser,
    /// The tool names its bridges count calls under: every profile's.
    labels: Arc<ToolLabels>,
}

impl Common {
    pub fn from_setup(setup: &super::Setup<'_>) -> Self {
        Self {
            profiles: setup.profiles.clone(),
            config: setup.config.opencode.clone(),
            context: context::Defaults::new(&setup.config.opencode, &setup.host),
            title_prompt: setup.prompts.title.clone(),
            titles: TitleRecogniser::new(&setup.prompts.title),
            labels: Arc::new(ToolLabels::new(&setup.profiles, std::iter::empty())),
        }
    }

    /// A client's own title request (opencode's, Kilo's): forwarded as it came.
    pub fn is_title_request(&self, conversation: &Conversation) -> bool {
        self.titles.is_title_request(conversation)
    }

    /// The proxy's title request, when the operator titles this harness's conversations: plain.
    pub fn title_request(&self, ask: &super::TitleAsk<'_>) -> Result<Bytes, HarnessError> {
        super::plain_chat::title_body(&self.title_prompt, ask)
    }

    /// `title_request` as a Messages request (a harness on a Messages upstream).
    pub fn title_request_messages(&self, ask: &super::TitleAsk<'_>) -> Result<Bytes, HarnessError> {
        super::plain_chat::title_body_messages(&self.title_prompt, ask)
    }

    /// What every chat harness does before its own rebuild (`body`): a title request goes as it
    /// came; a client whose sub-agent takes two calls (Codex) gets its collecting call from here,
    /// and its history folded; and a request the client's markers call a sub-agent's is marked so
    /// (never titled). A sub-agent's request is otherwise rebuilt as the harness's agent: the
    /// reference's harnesses other than opencode have no search agent of their own here.
    pub fn prepare(
        &self,
        request: HarnessRequest<'_>,
        body: impl FnOnce(HarnessRequest<'_>) -> Result<Prepared, HarnessError>,
    ) -> Result<Prepared, HarnessError> {
        if self.is_title_request(&request.conversation) {
            return Prepared::unchanged(&request);
        }
        self.prepare_sub_agents(request, |request, _| body(request))
    }

    /// `prepare` but for the title check, for a harness that decides that itself (one with a
    /// Messages form sends a client's title request rebuilt on that wire). `body` is told whether
    /// the request is a sub-agent's before it builds anything: a harness with a child form of
    /// its own (claude-code) builds that form instead of its main one.
    pub fn prepare_sub_agents(
        &self,
        mut request: HarnessRequest<'_>,
        body: impl FnOnce(HarnessRequest<'_>, bool) -> Result<Prepared, HarnessError>,
    ) -> Result<Prepared, HarnessError> {
        let conversation = &mut request.conversation;
        let profile = self.profiles.detect(
            request.headers,
            conversation.client.profile,
            &conversation.tools,
        )?;
        if let Some(collector) = crate::clients::converters::collector_of(&profile.subagent) {
            if let Some(call) = (collector.pending)(&conversation.items) {
                return Ok(Prepared::local(call, conversation));
            }
            conversation.items = (collector.fold)(std::mem::take(&mut conversation.items));
        }
        let subagent = !profile.subagent.is_empty() && {
            let systems: Vec<String> = conversation
                .items
                .iter()
                .filter_map(|item| match item {
                    Item::Message(m) if m.role == Role::System => {
                        Some(m.content.text().into_owned())
                    }
                    _ => None,
                })
                .collect();
            let systems: Vec<&str> = systems.iter().map(String::as_str).collect();
            let offered: Vec<&str> = conversation.tools.iter().filter_map(|t| t.name()).collect();
            profile
                .subagent
                .matches(request.headers, &systems, &offered)
        };
        let mut prepared = body(request, subagent)?;
        prepared.subagent = subagent;
        Ok(prepared)
    }

    /// The request's bridge: the client's tools (its profile from its headers and tools) against
    /// the harness's.
    pub fn bridge(
        &self,
        conversation: &Conversation,
        headers: &HeaderMap,
        tools: &ToolSet,
    ) -> Result<Bridge, HarnessError> {
        let profile =
            self.profiles
                .detect(headers, conversation.client.profile, &conversation.tools)?;
        let unmatched = match self.config.extra_tools {
            ExtraTools::Keep => Unmatched::Keep,
            ExtraTools::Drop => Unmatched::Drop,
        };
        Ok(Bridge::new(
            profile,
            &conversation.tools,
            tools.harness_tools().clone(),
            unmatched,
        )
        .with_labels(self.labels.clone()))
    }

    /// Whether the history keeps what the reference's builder loses (plain answers, the
    /// reasoning of a text turn): `opencode.history = "keep"`, the default.
    pub fn keeps(&self) -> bool {
        self.config.history == crate::config::HistoryMode::Keep
    }
}

/// The client's items with every call and result in the harness's tools: a call the client's
/// tool made becomes the harness tool's (several when it did several things at once, their ids
/// `<id>`, `<id>_2`, …), and its result the neutral words, given to each.
pub fn translate(items: &[Item], bridge: &Bridge) -> Vec<Item> {
    let mut out = Vec::with_capacity(items.len());
    // Client call id → (client tool, the ids it became).
    let mut calls: HashMap<String, (String, Vec<String>)> = HashMap::new();
    for item in items {
        match item {
            Item::ToolCall(call) => {
                let converted = bridge.history_calls(&call.name, &call.input.as_arguments());
                let same = matches!(converted.as_slice(), [(name, _)] if *name == call.name);
                let mut ids = Vec::with_capacity(converted.len());
                for (n, (name, arguments)) in converted.into_iter().enumerate() {
                    let id = call.id.as_ref().map(|id| {
                        if n == 0 {
                            id.clone()
                        } else {
                            format!("{id}_{}", n + 1)
                        }
                    });
                    ids.extend(id.clone());
                    // A freeform call the harness takes as it is keeps its form.
                    let input = match (&call.input, same) {
                        (CallInput::Freeform(text), true) => CallInput::Freeform(text.clone()),
                        _ => CallInput::Arguments(arguments),
                    };
                    out.push(Item::ToolCall(ToolCall { id, name, input }));
                }
                if let Some(id) = &call.id {
                    calls.insert(id.clone(), (call.name.clone(), ids));
                }
            }
            Item::ToolResult(result) => {
                let Some((tool, ids)) = result.call_id.as_ref().and_then(|id| calls.get(id)) else {
                    out.push(item.clone());
                    continue;
                };
                let text = result.text();
                let worded = bridge.history_output(tool, result.call_id.as_deref(), &text);
                let content = if worded == text {
                    result.content.clone()
                } else {
                    Content::Text(worded)
                };
                for id in ids {
                    out.push(Item::ToolResult(ToolResult {
                        call_id: Some(id.clone()),
                        content: content.clone(),
                        is_error: result.is_error,
                    }));
                }
            }
            Item::Message(_) | Item::Reasoning(_) => out.push(item.clone()),
        }
    }
    out
}

/// The parts of a user message that are the user's (its text and images, context parts left
/// out); `None` for a message of context only.
pub fn user_parts(content: &Content) -> Option<Vec<Part>> {
    match content {
        Content::Text(text) => {
            contextual::words_of(content).map(|_| vec![Part::Text(text.clone())])
        }
        Content::Parts(parts) => {
            contextual::words_of(content)?;
            Some(
                parts
                    .iter()
                    .filter(
                        |part| !matches!(part, Part::Text(t) if contextual::is_contextual_text(t)),
                    )
                    .cloned()
                    .collect(),
            )
        }
    }
}

/// The text of parts, concatenated.
pub fn text_of(parts: &[Part]) -> String {
    parts.iter().filter_map(Part::as_text).collect()
}

/// The prepared request: the body, its answer reshaped for the client with the calls through
/// the bridge, and the tools the bridge kept and dropped named to the client.
pub fn prepared(
    body: Body<'_>,
    bridge: Bridge,
    conversation: &Conversation,
) -> Result<Prepared, HarnessError> {
    let dropped_tools = bridge.dropped();
    let passthrough_tools = bridge.kept();
    let calls: Option<Arc<dyn CallMapper>> =
        (!bridge.tools.is_empty()).then(|| Arc::new(bridge) as Arc<dyn CallMapper>);
    Ok(Prepared {
        upstream_body: body.to_parts(),
        rewritten: true,
        response: ResponsePlan::Reshape(Reshape {
            client_stream: conversation.options.stream,
            include_usage: conversation.options.include_usage,
            calls,
            actions: None,
        }),
        dropped_tools,
        passthrough_tools,
        subagent: false,
        local: None,
    })
}

/// A tool output's text as the reference's builders read it: the neutral "(no output)" is the
/// blank output it stands for, and what an agent appended to it for the model (Claude Code's
/// `<system-reminder>` blocks) follows: (output, appended).
pub fn output_text(result: &ToolResult) -> (String, String) {
    const APPENDED: &str = "\n\n<system-reminder>";
    let text = result.text();
    let no_output = crate::clients::capability::NO_OUTPUT;
    match text.strip_prefix(no_output) {
        Some("") => (String::new(), String::new()),
        Some(rest) if rest.starts_with(APPENDED) => (String::new(), rest.to_owned()),
        _ => (text, String::new()),
    }
}
