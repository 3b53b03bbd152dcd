//! `opencode`: every request rebuilt in the form opencode sends (opencode-wire §1): one system
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
use http::{HeaderMap, HeaderName, HeaderValue};

use std::sync::Arc;

use self::body::{OutMessage, StreamOptions, UpstreamBody};
use self::flavour::Flavour;
use self::history::HistoryOptions;
use self::tools::{Catalog, HostInfo, SelectRules};
use super::collaboration::{Collaboration, Mode};
use super::{ConversationFacts, Harness, HarnessError, HarnessRequest, Prepared};
use crate::api::chat::{ChatRequest, Role};
use crate::clients::contextual::is_contextual;
use crate::clients::profiles::{Profiles, RequestCalls};
use crate::config::{InstructionsMode, OpencodeConfig};
use crate::prompts::Prompts;
use crate::protocols::chat::{CallMapper, Reshape, ResponsePlan};

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
    pub facts: ConversationFacts,
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

    /// A client's own title request (its system prompt is the title prompt): facts naming the
    /// text being titled, its last user message.
    pub fn title_request(&self, request: &ChatRequest) -> Option<ConversationFacts> {
        let is_title = is_schema_title_request(request)
            || request.messages.iter().any(|m| {
                m.role == Role::System && {
                    let text = m.text();
                    let text = text.trim_start();
                    text.starts_with(TITLE_PROMPT_OPENING) || text.starts_with(&self.title_opening)
                }
            });
        is_title.then(|| ConversationFacts {
            model: request.model.clone(),
            initial_turn: false,
            first_user_text: request
                .messages
                .iter()
                .rev()
                .find(|m| m.role == Role::User)
                .map(|m| m.text().into_owned())
                .unwrap_or_default(),
            title_request: true,
            last_user_text: String::new(),
            exchanges: Vec::new(),
        })
    }

    /// Builds the upstream request for an already parsed client request.
    pub fn build(
        &self,
        mut request: ChatRequest,
        headers: &HeaderMap,
        now: DateTime<Utc>,
    ) -> Result<Built, HarnessError> {
        let profile = self.profiles.detect(headers)?;
        let mode = Mode::from_headers(headers)?;
        let facts = ConversationFacts::from_request(&request);
        if let Some(mode) = mode {
            self.collaboration.apply(mode, &mut request);
        }
        // Taken out so the client's history can be freed once converted, before the upstream body
        // is written: a large request then holds two copies at a time, not three.
        let client_messages = std::mem::take(&mut request.messages);
        let request = &request;
        let system_texts: Vec<std::borrow::Cow<'_, str>> = client_messages
            .iter()
            .filter(|m| m.role == Role::System)
            .map(crate::api::chat::Message::text)
            .collect();
        let flavour = Flavour::detect(&system_texts, &self.search_prompt);

        // The client's own prompt may say where it runs: system and developer text, and the
        // contextual user messages (Codex's `<environment_context>`), never the user's own words.
        let prompt_texts: Vec<std::borrow::Cow<'_, str>> = client_messages
            .iter()
            .filter(|m| match m.role {
                Role::System | Role::Developer => true,
                Role::User => is_contextual(m.text_parts()),
                _ => false,
            })
            .map(crate::api::chat::Message::text)
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
        let (model_name, model_id) = self.identity.render(&request.model);
        let carry = self.config.instructions == InstructionsMode::Carry;
        let (blocks, tail) = if carry {
            // A known agent's own system prompt is its persona, which opencode's replaces (as
            // the reference does); a plain client's is what its user asked for.
            instructions::collect(
                &client_messages,
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

        let mut messages = Vec::with_capacity(client_messages.len() + 1);
        messages.push(OutMessage::Raw {
            role: "system",
            content: system,
        });
        messages.extend(history::convert(
            &client_messages,
            &HistoryOptions {
                mode: self.config.history,
                quote_user: flavour.quotes_user_text(),
                profile: &profile,
            },
        ));
        drop(client_messages);

        let client_tools = request.tools.as_deref().unwrap_or_default();
        // In a collaboration mode `request_user_input` follows the mode, not `extra_tools`.
        let request_user_input = mode.map(|m| self.collaboration.allows_request_user_input(m));
        let rules = SelectRules {
            flavour,
            policy: self.config.tools,
            extra: self.config.extra_tools,
            profile: &profile,
            platform: &env.platform,
            request_user_input,
        };
        let selection = self.catalog.select(client_tools, &rules);
        let has_tools = !selection.tools.is_empty();
        let body = UpstreamBody {
            model: &request.model,
            max_tokens: MAX_TOKENS,
            stream: true,
            stream_options: StreamOptions {
                include_usage: true,
            },
            tool_choice: has_tools.then_some("auto"),
            messages,
            tools: has_tools.then_some(selection.tools),
            temperature: flavour.has_temperature().then_some(1),
            reasoning_effort: request.reasoning_effort.as_deref(),
        };
        // Sized up front (1/8 for escapes and tools): a doubling buffer would hold up to twice a
        // large body, and copy it on each growth.
        let approx: usize = body.messages.iter().map(OutMessage::approx_len).sum();
        let mut bytes = Vec::with_capacity(approx + approx / 8 + 64 * 1024);
        // Serializing owned strings and valid raw JSON cannot fail.
        if serde_json::to_writer(&mut bytes, &body).is_err() {
            bytes.clear();
        }
        let calls: Option<Arc<dyn CallMapper>> = (!profile.is_identity()).then(|| {
            let client_tools = client_tools
                .iter()
                .filter_map(|t| t.name().map(str::to_owned))
                .collect();
            Arc::new(RequestCalls {
                profile: profile.clone(),
                client_tools,
            }) as Arc<dyn CallMapper>
        });
        Ok(Built {
            body: Bytes::from(bytes),
            dropped_tools: selection.dropped,
            facts,
            client_stream: request.wants_stream(),
            include_usage: request.wants_usage(),
            calls,
        })
    }
}

/// A client's own title request asking for a JSON answer, as the fronts translate it: no tools
/// and a JSON-schema answer format that is Codex's (`codex_output_schema`, agents-wire.md) or
/// holds one property, `title` (Claude Code's `output_config.format` `{title}`).
fn is_schema_title_request(request: &ChatRequest) -> bool {
    if !request.tools.as_ref().is_none_or(Vec::is_empty) {
        return false;
    }
    let Some(schema) = request
        .extra
        .get("response_format")
        .and_then(|f| f.get("json_schema"))
    else {
        return false;
    };
    let named_codex =
        schema.get("name").and_then(serde_json::Value::as_str) == Some(CODEX_TITLE_SCHEMA);
    let only_a_title = schema
        .pointer("/schema/properties")
        .and_then(serde_json::Value::as_object)
        .is_some_and(|p| p.len() == 1 && p.contains_key("title"));
    named_codex || only_a_title
}

const CODEX_TITLE_SCHEMA: &str = "codex_output_schema";

/// Parses a Chat Completions body, saying where it is broken.
pub fn parse_request(body: &[u8]) -> Result<ChatRequest, HarnessError> {
    // Path tracking costs on every element, so only a failed parse is repeated with it.
    serde_json::from_slice(body).map_err(|_| describe_parse_error(body))
}

fn describe_parse_error(body: &[u8]) -> HarnessError {
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let result: Result<ChatRequest, _> = serde_path_to_error::deserialize(&mut deserializer);
    let Err(err) = result else {
        let trailing = deserializer
            .end()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        return HarnessError::InvalidJson(format!("request body is not valid JSON: {trailing}"));
    };
    let path = err.path().to_string();
    let inner = err.into_inner();
    // serde_json reports some type mismatches as syntax (`{"role":1}` where an enum is expected
    // says "expected value"), so only a body that is not JSON at all is `invalid_json`.
    let is_json = serde_json::from_slice::<serde::de::IgnoredAny>(body).is_ok();
    if (inner.is_syntax() || inner.is_eof()) && !is_json {
        HarnessError::InvalidJson(format!("request body is not valid JSON: {inner}"))
    } else {
        HarnessError::Invalid {
            message: format!("invalid chat completions request at `{path}`: {inner}"),
            param: None,
            code: "invalid_request",
        }
    }
}

impl Harness for Opencode {
    fn name(&self) -> &'static str {
        "opencode"
    }

    fn prepare(&self, request: &HarnessRequest<'_>) -> Result<Prepared, HarnessError> {
        let parsed = parse_request(request.body)?;
        if let Some(facts) = self.title_request(&parsed) {
            // Already in opencode's form: forwarded untouched, observed for the title record.
            return Ok(Prepared {
                upstream_body: None,
                response: ResponsePlan::Passthrough,
                response_headers: Vec::new(),
                facts: Some(facts),
            });
        }
        let built = self.build(parsed, request.headers, request.now)?;
        let mut response_headers = Vec::new();
        if !built.dropped_tools.is_empty()
            && let Ok(value) = HeaderValue::from_str(&built.dropped_tools.join(","))
        {
            response_headers.push((HeaderName::from_static("x-harness-dropped-tools"), value));
        }
        Ok(Prepared {
            upstream_body: Some(built.body),
            response: ResponsePlan::Reshape(Reshape {
                client_stream: built.client_stream,
                include_usage: built.include_usage,
                calls: built.calls,
            }),
            response_headers,
            facts: Some(built.facts),
        })
    }
}
