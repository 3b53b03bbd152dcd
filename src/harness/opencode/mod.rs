//! `opencode`: every request rebuilt in the form opencode sends (docs/wire.md §1): one system
//! message (prefix + identity + `<env>` + skills), converted history, quoted user text, opencode's
//! tools, and the fixed body parameters. Pure: headers, body and the clock in; bytes out.

pub mod body;
pub mod env;
pub mod flavour;
pub mod history;
pub mod identity;
pub mod instructions;
pub mod system;
pub mod title;
pub mod tools;

use std::borrow::Cow;
use std::sync::Arc;

use bytes::Bytes;
use chrono::{DateTime, Utc};
use http::HeaderMap;
use serde_json::value::RawValue;

use self::body::{OutMessage, StreamOptions, UpstreamBody};
use self::env::EnvValues;
use self::flavour::Flavour;
use self::history::HistoryOptions;
use self::title::TitleRecogniser;
use self::tools::{Catalog, HostInfo, SelectRules};
use super::collaboration::{Collaboration, Mode};
use super::shared_runs::Runs;
use super::{Harness, HarnessError, HarnessRequest, Prepared, TitleAsk};
use crate::clients::bridge::{Bridge, Unmatched};
use crate::clients::contextual::context_parts;
use crate::clients::labels::ToolLabels;
use crate::clients::profiles::{Profile, Profiles};
use crate::clients::subagent::{FinishReader, LocalCall};
use crate::config::{ExtraTools, InstructionsMode, OpencodeConfig};
use crate::conversation::action::ActionReader;
use crate::conversation::body_parts::BodyParts;
use crate::conversation::mapping::{CallMapper, Reshape, ResponsePlan};
use crate::conversation::{Conversation, Item, Message, Role, ToolDefinition};
use crate::prompts::Prompts;

/// opencode's fixed output budget.
const MAX_TOKENS: u32 = 32_000;

pub struct Opencode {
    config: OpencodeConfig,
    identity: identity::Identity,
    /// The date line's zone: `opencode.timezone`, else the host's offset from start-up.
    zone: env::DateZone,
    /// The platform when no header, client text or config names one: `opencode.platform`, else
    /// the proxy's own.
    platform: String,
    system_prefix: system::EscapedPrefix,
    search_prefix: system::EscapedPrefix,
    search_prompt: String,
    /// The title system prompt, sent whole in the proxy's own title requests.
    title_prompt: String,
    /// Tells a client's own title request.
    titles: TitleRecogniser,
    skills: crate::template::Pattern,
    catalog: Catalog,
    /// The tool names its bridges count calls under, and the routes count dropped and kept
    /// tools under (`Registry::tool_labels`).
    tool_labels: Arc<ToolLabels>,
    profiles: Profiles,
    collaboration: Collaboration,
}

#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    #[error(transparent)]
    Tools(#[from] tools::CatalogError),
    #[error(transparent)]
    Identity(#[from] identity::IdentityError),
    #[error("opencode/skills.md: {0}")]
    Skills(#[source] crate::template::BindError),
}

/// The upstream request for one client request, plus what the route needs to know about it.
pub struct Built {
    pub body: BodyParts,
    pub dropped_tools: Vec<String>,
    /// Client tools sent upstream as the client defined them (`x-harness-passthrough-tools`).
    pub passthrough_tools: Vec<String>,
    pub client_stream: bool,
    pub include_usage: bool,
    /// Translates upstream tool calls back into the client's dialect (non-identity profiles).
    pub calls: Option<Arc<dyn CallMapper>>,
    /// Rebuilt as opencode's search agent because the client's sub-agent sent it.
    pub subagent: bool,
    /// Answered on the client's side, not sent upstream (`Prepared::local`).
    pub local: Option<LocalCall>,
    /// The rule of a client's sub-agent's answers (`clients::subagent::FinishReader`).
    pub actions: Option<Arc<dyn ActionReader>>,
}

impl Opencode {
    pub fn new(
        config: &OpencodeConfig,
        prompts: &Prompts,
        host: HostInfo,
        profiles: Profiles,
        collaboration: Collaboration,
        upstream_base_url: &str,
    ) -> Result<Self, SetupError> {
        let identity = identity::Identity::new(config, upstream_base_url)?;
        let platform = config
            .platform
            .clone()
            .unwrap_or_else(|| env::process_platform().to_owned());
        // `config` has checked the zone name; an unparsable one could only come from a config
        // built in code, and falls back to the host's offset.
        let zone = config
            .timezone
            .as_deref()
            .and_then(|tz| tz.parse().ok())
            .map_or(env::DateZone::Fixed(host.utc_offset), env::DateZone::Named);
        let catalog = Catalog::new(&prompts.tools, profiles.opencode(), &platform, host)?;
        let tool_labels = Arc::new(ToolLabels::new(&profiles, catalog.harness_tools().names()));
        Ok(Self {
            config: config.clone(),
            identity,
            zone,
            system_prefix: system::EscapedPrefix::new(&prompts.system),
            search_prefix: system::EscapedPrefix::new(&prompts.search_agent),
            search_prompt: prompts.search_agent.clone(),
            title_prompt: prompts.title.clone(),
            titles: TitleRecogniser::new(&prompts.title),
            skills: system::bind_skills(&prompts.skills).map_err(SetupError::Skills)?,
            catalog,
            tool_labels,
            platform,
            profiles,
            collaboration,
        })
    }

    /// As the registry builds it: collaboration modes from the prompts and
    /// `collaboration.default_request_user_input`.
    pub fn from_setup(setup: &super::Setup<'_>) -> Result<Self, SetupError> {
        let config = setup.config;
        let collaboration = Collaboration::from_prompts(
            setup.prompts,
            config.collaboration.default_request_user_input,
        );
        Self::new(
            &config.opencode,
            setup.prompts,
            setup.host.clone(),
            setup.profiles.clone(),
            collaboration,
            &config.upstream.base_url,
        )
    }

    /// A client's own title request (`title::TitleRecogniser`).
    pub fn is_title_request(&self, conversation: &Conversation) -> bool {
        self.titles.is_title_request(conversation)
    }

    /// Builds the upstream request for a client's conversation, in the order of the flow: the
    /// client's profile and tool bridge, its collaboration mode, the one system message, the
    /// converted history, the selected tools, the body.
    pub fn build(
        &self,
        mut conversation: Conversation,
        headers: &HeaderMap,
        now: DateTime<Utc>,
    ) -> Result<Built, HarnessError> {
        let profile =
            self.profiles
                .detect(headers, conversation.client.profile, &conversation.tools)?;
        // A client whose sub-agent is two calls (Codex): its collecting call is made here, and
        // each pair reads as the one call it stands for.
        if let Some(collector) = crate::clients::converters::collector_of(&profile.subagent) {
            if let Some(call) = (collector.pending)(&conversation.items) {
                return Ok(Built::local(call, &conversation));
            }
            conversation.items = (collector.fold)(std::mem::take(&mut conversation.items));
        }
        let mut bridge = self.bridge(profile.clone(), &conversation.tools);
        let mode = Mode::from_headers(headers)?;
        if let Some(mode) = mode {
            self.collaboration.apply(mode, &mut conversation);
        }
        // Taken out so the client's history can be freed once converted, before the upstream body
        // is written: a large request then holds two copies at a time, not three.
        let client_items = std::mem::take(&mut conversation.items);
        let conversation = &conversation;
        let offered: Vec<&str> = conversation.tools.iter().filter_map(|t| t.name()).collect();
        let (flavour, subagent) = self.flavour(&client_items, &profile, (headers, &offered));
        let env = self.env(&client_items, headers, now);
        let system =
            self.system_message(&client_items, &conversation.model, flavour, &env, &profile);
        let messages = self.messages(system, &client_items, flavour, &bridge);
        drop(client_items);
        // In a collaboration mode `request_user_input` follows the mode, not `extra_tools`.
        let rules = SelectRules {
            flavour,
            policy: self.config.tools,
            platform: &env.platform,
            request_user_input: mode.map(|m| self.collaboration.allows_request_user_input(m)),
        };
        let selection = self
            .catalog
            .select(&conversation.tools, &mut bridge, &rules);
        let has_tools = !selection.tools.is_empty();
        let body = write_body(&UpstreamBody {
            model: &conversation.model,
            max_tokens: MAX_TOKENS,
            stream: true,
            stream_options: StreamOptions {
                include_usage: true,
            },
            tool_choice: has_tools.then_some("auto"),
            messages,
            tools: has_tools.then_some(selection.tools),
            temperature: flavour.has_temperature().then_some(1),
            reasoning_effort: conversation.options.reasoning_effort.as_deref(),
            prompt_cache_key: self.prompt_cache_key(conversation, headers),
        });
        let finish = profile.subagent.finish.clone().filter(|_| subagent);
        let mut built = Built::of(body, bridge, conversation);
        built.subagent = subagent;
        built.actions = finish.map(|finish| {
            Arc::new(FinishReader {
                harness: "opencode",
                finish,
            }) as Arc<dyn ActionReader>
        });
        Ok(built)
    }

    /// The system message, then the client's history converted.
    fn messages(
        &self,
        system: Arc<RawValue>,
        client_items: &[Item],
        flavour: Flavour,
        bridge: &Bridge,
    ) -> Vec<OutMessage> {
        let mut messages = Vec::with_capacity(client_items.len() + 1);
        messages.push(OutMessage::Raw {
            role: "system",
            content: body::SharedRaw(system),
        });
        messages.extend(history::convert(
            client_items,
            &HistoryOptions {
                mode: self.config.history,
                quote_user: flavour.quotes_user_text(),
                bridge,
                reasoning: self.config.reasoning,
            },
        ));
        messages
    }

    /// The request's tool bridge: the client's tools against opencode's, by its profile.
    fn bridge(&self, profile: Arc<Profile>, client_tools: &[ToolDefinition]) -> Bridge {
        let unmatched = match self.config.extra_tools {
            ExtraTools::Keep => Unmatched::Keep,
            ExtraTools::Drop => Unmatched::Drop,
        };
        Bridge::new(
            profile,
            client_tools,
            self.catalog.harness_tools().clone(),
            unmatched,
        )
        .with_labels(self.tool_labels.clone())
    }

    /// The tool names that are metric labels: the profiles' and opencode's own.
    pub fn tool_labels(&self) -> &Arc<ToolLabels> {
        &self.tool_labels
    }

    /// Which of opencode's agents the request is: its system text's (the search agent, the task
    /// agent, or the main one), else the search agent for a client's own sub-agent, told by the
    /// markers of its profile (`clients::subagent`); and whether it was told that way.
    fn flavour(
        &self,
        client_items: &[Item],
        profile: &Profile,
        (headers, offered): (&HeaderMap, &[&str]),
    ) -> (Flavour, bool) {
        let system_texts: Vec<Cow<'_, str>> = messages(client_items)
            .filter(|m| m.role == Role::System)
            .map(|m| m.content.text())
            .collect();
        match Flavour::detect(&system_texts, &self.search_prompt) {
            Flavour::Main if !profile.subagent.is_empty() => {
                let texts: Vec<&str> = system_texts.iter().map(AsRef::as_ref).collect();
                let subagent = profile.subagent.matches(headers, &texts, offered);
                let flavour = if subagent {
                    Flavour::SearchAgent
                } else {
                    Flavour::Main
                };
                (flavour, subagent)
            }
            flavour => (flavour, false),
        }
    }

    /// The `<env>` values: the proxy's headers, else what the client's own prompt says of where it
    /// runs (system and developer text, and the contextual user messages such as Codex's
    /// `<environment_context>`, never the user's own words), else config, else the defaults.
    fn env(&self, client_items: &[Item], headers: &HeaderMap, now: DateTime<Utc>) -> EnvValues {
        let mut prompt_texts: Vec<Cow<'_, str>> = Vec::new();
        for message in messages(client_items) {
            match message.role {
                Role::System | Role::Developer => prompt_texts.push(message.content.text()),
                // Per part: Gemini CLI's `<session_context>` shares its message with the prompt.
                Role::User => prompt_texts
                    .extend(context_parts(message.content.text_parts()).map(Cow::Borrowed)),
                Role::Assistant => {}
            }
        }
        env::resolve(
            env::Partial::from_headers(headers),
            env::Partial::from_client_texts(prompt_texts.iter().map(AsRef::as_ref)),
            env::Partial::from_config(&self.config),
            env::Defaults {
                now,
                zone: self.zone,
                platform: &self.platform,
            },
        )
    }

    /// The one system message: the flavour's prefix, identity line, `<env>`, carried project
    /// instructions, skills.
    fn system_message(
        &self,
        client_items: &[Item],
        model: &str,
        flavour: Flavour,
        env: &EnvValues,
        profile: &Profile,
    ) -> Arc<RawValue> {
        let prefix = if flavour == Flavour::SearchAgent {
            &self.search_prefix
        } else {
            &self.system_prefix
        };
        let skills = if flavour.has_skills() {
            system::skills_block(&self.skills, &env.cwd)
        } else {
            String::new()
        };
        let (model_name, model_id) = self.identity.render(model);
        let (blocks, tail) = if self.config.instructions == InstructionsMode::Carry {
            // A known agent's own system prompt is its persona, which opencode's replaces (as
            // the reference does); a plain client's is what its user asked for.
            instructions::collect(
                messages(client_items),
                &[&self.search_prompt, flavour::TASK_AGENT_MARKER],
                !profile.is_known_agent(),
            )
            .render()
        } else {
            (String::new(), String::new())
        };
        let mut suffix = system::suffix(&model_name, &model_id, env, &blocks, &skills);
        suffix.push_str(&tail);
        prefix.with_suffix(suffix)
    }
}

impl Built {
    /// What the route needs of a body written and the bridge that chose its tools.
    fn of(body: BodyParts, bridge: Bridge, conversation: &Conversation) -> Self {
        let dropped_tools = bridge.dropped();
        let passthrough_tools = bridge.kept();
        // Every call goes through the bridge, the identity profile's too: a client's own `bash`
        // may not take opencode's `description`. Calls to tools that take them as they are
        // stream through untouched.
        let calls: Option<Arc<dyn CallMapper>> =
            (!bridge.tools.is_empty()).then(|| Arc::new(bridge) as Arc<dyn CallMapper>);
        Self {
            body,
            dropped_tools,
            passthrough_tools,
            client_stream: conversation.options.stream,
            include_usage: conversation.options.include_usage,
            calls,
            subagent: false,
            local: None,
            actions: None,
        }
    }

    /// A turn answered on the client's side with `call`: no body, the call as the client's own.
    fn local(call: LocalCall, conversation: &Conversation) -> Self {
        Self {
            body: BodyParts::default(),
            dropped_tools: Vec::new(),
            passthrough_tools: Vec::new(),
            client_stream: conversation.options.stream,
            include_usage: conversation.options.include_usage,
            calls: None,
            subagent: false,
            local: Some(call),
            actions: None,
        }
    }
}

impl Opencode {
    /// The body's `prompt_cache_key` (`harness::cache_key`), as `opencode.prompt_cache_key` says.
    fn prompt_cache_key<'a>(
        &self,
        conversation: &'a Conversation,
        headers: &'a HeaderMap,
    ) -> Option<std::borrow::Cow<'a, str>> {
        super::cache_key::for_request(self.config.prompt_cache_key, conversation, headers)
    }
}

/// The messages among the client's items.
fn messages(items: &[Item]) -> impl Iterator<Item = &Message> {
    items.iter().filter_map(|item| match item {
        Item::Message(m) => Some(m),
        _ => None,
    })
}

/// The body, compact, its system prompt's token not copied but a run of its own
/// (`harness::shared_runs`: the token is kept for the conversation's next turns). What is copied is
/// sized up front from the messages and tools (an eighth more for escapes, 1 KiB for the fields
/// around them): a doubling buffer would copy a large body on each growth. The slack is given
/// back once written (`harness::sized`); a buffer of the body's size class, not a large one, keeps
/// that step a small copy.
fn write_body(body: &UpstreamBody<'_>) -> BodyParts {
    let kept: usize = body
        .messages
        .iter()
        .filter_map(OutMessage::kept_token)
        .filter(|token| Runs::shares(token.get().as_bytes()))
        .map(|token| token.get().len())
        .sum();
    let messages: usize = body
        .messages
        .iter()
        .map(OutMessage::approx_len)
        .sum::<usize>()
        .saturating_sub(kept);
    // The tools are JSON already (the catalog's texts, a client's own definitions).
    let tools: usize = body
        .tools
        .iter()
        .flatten()
        .map(|tool| tool.get().len() + 1)
        .sum();
    let approx = messages + tools;
    let mut runs = Runs::new(approx + approx / 8 + 1024, kept > 0);
    body.write(&mut runs);
    runs.finish()
}

impl Harness for Opencode {
    fn name(&self) -> &'static str {
        "opencode"
    }

    fn is_client_title_request(&self, conversation: &Conversation) -> bool {
        self.is_title_request(conversation)
    }

    fn add_upstream_headers(&self, headers: &mut HeaderMap, conversation: &str) {
        title::add_thread_headers(headers, conversation);
    }

    fn title_request(
        &self,
        ask: &TitleAsk<'_>,
        headers: &mut HeaderMap,
    ) -> Result<Bytes, HarnessError> {
        title::add_thread_headers(headers, ask.conversation);
        title::title_body(ask.model, &self.title_prompt, ask.words).map(Bytes::from)
    }

    fn prepare(&self, request: HarnessRequest<'_>) -> Result<Prepared, HarnessError> {
        if self.is_title_request(&request.conversation) {
            // Already in the client's title form: forwarded as it is, observed for the record.
            return Prepared::unchanged(&request);
        }
        let built = self.build(request.conversation, request.headers, request.now)?;
        Ok(Prepared {
            upstream_body: built.body,
            rewritten: true,
            response: ResponsePlan::Reshape(Reshape {
                client_stream: built.client_stream,
                include_usage: built.include_usage,
                calls: built.calls,
                actions: built.actions,
            }),
            dropped_tools: built.dropped_tools,
            passthrough_tools: built.passthrough_tools,
            subagent: built.subagent,
            local: built.local,
        })
    }
}
