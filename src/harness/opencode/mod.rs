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
pub mod tools;

use bytes::Bytes;
use chrono::{DateTime, Utc};
use http::HeaderMap;

use std::sync::Arc;

use self::body::{OutMessage, StreamOptions, UpstreamBody};
use self::flavour::Flavour;
use self::history::HistoryOptions;
use self::tools::{Catalog, HostInfo, SelectRules};
use super::collaboration::{Collaboration, Mode};
use super::{Harness, HarnessError, HarnessRequest, Prepared};
use crate::clients::bridge::{Bridge, Unmatched};
use crate::clients::contextual::is_contextual;
use crate::clients::profiles::Profiles;
use crate::config::{ExtraTools, InstructionsMode, OpencodeConfig};
use crate::conversation::mapping::{CallMapper, Reshape, ResponsePlan};
use crate::conversation::{Conversation, Item, ResponseFormat, Role};
use crate::prompts::Prompts;

/// How opencode's title prompt opens (whatever prompt this proxy itself is configured with).
const TITLE_PROMPT_OPENING: &str = "You are a title generator.";

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
    /// First line of the configured title prompt, to recognise title requests.
    title_opening: String,
    skills: crate::template::Pattern,
    catalog: Catalog,
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
    Skills(String),
}

/// The upstream request for one client request, plus what the route needs to know about it.
pub struct Built {
    pub body: Bytes,
    pub dropped_tools: Vec<String>,
    /// Client tools sent upstream as the client defined them (`x-harness-passthrough-tools`).
    pub passthrough_tools: Vec<String>,
    pub client_stream: bool,
    pub include_usage: bool,
    /// Translates upstream tool calls back into the client's dialect (non-identity profiles).
    pub calls: Option<Arc<dyn CallMapper>>,
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
        Ok(Self {
            config: config.clone(),
            identity,
            zone,
            system_prefix: system::EscapedPrefix::new(&prompts.system),
            search_prefix: system::EscapedPrefix::new(&prompts.search_agent),
            search_prompt: prompts.search_agent.clone(),
            title_opening: prompts
                .title
                .lines()
                .next()
                .unwrap_or(TITLE_PROMPT_OPENING)
                .trim()
                .to_owned(),
            skills: system::bind_skills(&prompts.skills).map_err(SetupError::Skills)?,
            catalog: Catalog::new(&prompts.tools, &platform, host)?,
            platform,
            profiles,
            collaboration,
        })
    }

    /// A client's own title request: its system prompt is a title prompt (opencode's, or this
    /// proxy's configured one), or it asks for a JSON title with no tools (Codex, Claude Code).
    pub fn is_title_request(&self, conversation: &Conversation) -> bool {
        is_schema_title_request(conversation)
            || conversation.messages().any(|m| {
                m.role == Role::System && {
                    let text = m.content.text();
                    let text = text.trim_start();
                    text.starts_with(TITLE_PROMPT_OPENING) || text.starts_with(&self.title_opening)
                }
            })
    }

    /// Builds the upstream request for a client's conversation.
    pub fn build(
        &self,
        mut conversation: Conversation,
        headers: &HeaderMap,
        now: DateTime<Utc>,
    ) -> Result<Built, HarnessError> {
        let profile =
            self.profiles
                .detect(headers, conversation.client.profile, &conversation.tools)?;
        let unmatched = match self.config.extra_tools {
            ExtraTools::Keep => Unmatched::Keep,
            ExtraTools::Drop => Unmatched::Drop,
        };
        let mut bridge = Bridge::new(
            profile.clone(),
            &conversation.tools,
            self.catalog.harness_tools(),
            unmatched,
        );
        let mode = Mode::from_headers(headers)?;
        if let Some(mode) = mode {
            self.collaboration.apply(mode, &mut conversation);
        }
        // Taken out so the client's history can be freed once converted, before the upstream body
        // is written: a large request then holds two copies at a time, not three.
        let client_items = std::mem::take(&mut conversation.items);
        let conversation = &conversation;
        let messages_of = |role: Role| {
            client_items.iter().filter_map(move |item| match item {
                Item::Message(m) if m.role == role => Some(m),
                _ => None,
            })
        };
        let system_texts: Vec<std::borrow::Cow<'_, str>> = messages_of(Role::System)
            .map(|m| m.content.text())
            .collect();
        let flavour = Flavour::detect(&system_texts, &self.search_prompt);

        // The client's own prompt may say where it runs: system and developer text, and the
        // contextual user messages (Codex's `<environment_context>`), never the user's own words.
        let prompt_texts: Vec<std::borrow::Cow<'_, str>> = client_items
            .iter()
            .filter_map(|item| match item {
                Item::Message(m) => match m.role {
                    Role::System | Role::Developer => Some(m),
                    Role::User => is_contextual(m.content.text_parts()).then_some(m),
                    Role::Assistant => None,
                },
                _ => None,
            })
            .map(|m| m.content.text())
            .collect();
        let env = env::resolve(
            env::Partial::from_headers(headers),
            env::Partial::from_client_texts(prompt_texts.iter().map(AsRef::as_ref)),
            env::Partial::from_config(&self.config),
            env::Defaults {
                now,
                zone: self.zone,
                platform: &self.platform,
            },
        );

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
        let (model_name, model_id) = self.identity.render(&conversation.model);
        let carry = self.config.instructions == InstructionsMode::Carry;
        let (blocks, tail) = if carry {
            // A known agent's own system prompt is its persona, which opencode's replaces (as
            // the reference does); a plain client's is what its user asked for.
            instructions::collect(
                client_items.iter().filter_map(|item| match item {
                    Item::Message(m) => Some(m),
                    _ => None,
                }),
                &[&self.search_prompt, flavour::TASK_AGENT_MARKER],
                profile.is_identity(),
            )
            .render()
        } else {
            (String::new(), String::new())
        };
        let mut suffix = system::suffix(&model_name, &model_id, &env, &blocks, &skills);
        suffix.push_str(&tail);
        let system = prefix.with_suffix(&suffix);

        let mut messages = Vec::with_capacity(client_items.len() + 1);
        messages.push(OutMessage::Raw {
            role: "system",
            content: system,
        });
        messages.extend(history::convert(
            &client_items,
            &HistoryOptions {
                mode: self.config.history,
                quote_user: flavour.quotes_user_text(),
                profile: &profile,
                reasoning: self.config.reasoning,
            },
        ));
        drop(client_items);

        let client_tools = conversation.tools.as_slice();
        // In a collaboration mode `request_user_input` follows the mode, not `extra_tools`.
        let request_user_input = mode.map(|m| self.collaboration.allows_request_user_input(m));
        let rules = SelectRules {
            flavour,
            policy: self.config.tools,
            platform: &env.platform,
            request_user_input,
        };
        let selection = self.catalog.select(client_tools, &mut bridge, &rules);
        let has_tools = !selection.tools.is_empty();
        let body = UpstreamBody {
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
        };
        // Sized up front (1/8 for escapes and tools): a doubling buffer would hold up to twice a
        // large body, and copy it on each growth.
        let approx: usize = body.messages.iter().map(OutMessage::approx_len).sum();
        let mut bytes = Vec::with_capacity(approx + approx / 8 + 64 * 1024);
        // Serializing owned strings and valid raw JSON cannot fail.
        if serde_json::to_writer(&mut bytes, &body).is_err() {
            bytes.clear();
        }
        let dropped_tools = bridge.dropped();
        let passthrough_tools = bridge.kept();
        // Every call goes through the bridge, the identity profile's too: a client's own `bash`
        // may not take opencode's `description`. Calls to tools that take them as they are
        // stream through untouched.
        let calls: Option<Arc<dyn CallMapper>> =
            (!bridge.tools.is_empty()).then(|| Arc::new(bridge) as Arc<dyn CallMapper>);
        Ok(Built {
            body: Bytes::from(bytes),
            dropped_tools,
            passthrough_tools,
            client_stream: conversation.options.stream,
            include_usage: conversation.options.include_usage,
            calls,
        })
    }
}

impl Opencode {
    /// The body's `prompt_cache_key` (`harness::cache_key`), as `opencode.prompt_cache_key` says.
    fn prompt_cache_key<'a>(
        &self,
        conversation: &'a Conversation,
        headers: &'a HeaderMap,
    ) -> Option<&'a str> {
        super::cache_key::for_request(self.config.prompt_cache_key, conversation, headers)
    }
}

/// A client's own title request asking for a JSON answer, as the fronts translate it: no tools
/// and a JSON-schema answer format that is Codex's (`codex_output_schema`, README "Codex CLI (0.95
/// and later)") or holds one property, `title` (Claude Code's `output_config.format` `{title}`).
fn is_schema_title_request(conversation: &Conversation) -> bool {
    let Some(ResponseFormat::JsonSchema { name, schema, .. }) =
        &conversation.options.response_format
    else {
        return false;
    };
    let only_a_title = schema
        .as_ref()
        .and_then(|s| s.pointer("/properties"))
        .and_then(serde_json::Value::as_object)
        .is_some_and(|p| p.len() == 1 && p.contains_key("title"));
    // Codex's TUI offers its `apply_patch` even on its title thread: its schema says enough.
    let codex = name == CODEX_TITLE_SCHEMA;
    (conversation.tools.is_empty() && (codex || only_a_title)) || (codex && only_a_title)
}

const CODEX_TITLE_SCHEMA: &str = "codex_output_schema";

impl Harness for Opencode {
    fn name(&self) -> &'static str {
        "opencode"
    }

    fn is_client_title_request(&self, conversation: &Conversation) -> bool {
        self.is_title_request(conversation)
    }

    fn prepare(&self, request: HarnessRequest<'_>) -> Result<Prepared, HarnessError> {
        if self.is_title_request(&request.conversation) {
            // Already in the client's title form: forwarded as it is, observed for the record.
            return Ok(Prepared::unchanged(&request));
        }
        let built = self.build(request.conversation, request.headers, request.now)?;
        Ok(Prepared {
            upstream_body: built.body,
            rewritten: true,
            response: ResponsePlan::Reshape(Reshape {
                client_stream: built.client_stream,
                include_usage: built.include_usage,
                calls: built.calls,
            }),
            dropped_tools: built.dropped_tools,
            passthrough_tools: built.passthrough_tools,
        })
    }
}
