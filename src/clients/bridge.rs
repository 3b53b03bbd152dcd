//! The tool bridge of one request: how each tool the client offered stands to the harness's tool
//! set (the pivot: opencode's tools for the `opencode` harness, whatever set another harness
//! brings), and how the model's calls come back so that the client can run them.
//!
//! A client tool is *mapped* to harness tools only through an alias of its profile, or by an
//! inference that checks the schemas (`ToolSchema::accepts_calls_of`), never by its name alone;
//! else it is *kept* (sent upstream as the client defined it, beside the harness's tools, as
//! opencode sends MCP tools) or *dropped* (its profile says it means nothing upstream, or the
//! operator asked for `drop`). Every call the bridge delivers was checked against the client's
//! own schema: translated and cut to what the schema declares; else as the model made it if
//! that validates; else reported (`Outcome::Invalid`) — never a silent wrong call.
//!
//! Owns: bindings, call delivery. Must not: know a harness's flavours or wire forms, do I/O.

use std::sync::Arc;

use serde_json::Value;

use super::profiles::Profile;
use super::schema::{Check, ToolSchema};
use crate::conversation::ToolDefinition;
use crate::conversation::answer::deliverable;
use crate::conversation::mapping::{CallMapper, CallRoute, Delivered, Outcome};

/// A harness's own tools, by name, with their argument schemas: what client tools map onto.
#[derive(Debug, Default)]
pub struct HarnessTools {
    tools: Vec<(String, ToolSchema)>,
}

impl HarnessTools {
    pub fn new(tools: impl IntoIterator<Item = (String, Option<Value>)>) -> Self {
        Self {
            tools: tools
                .into_iter()
                .map(|(name, schema)| (name, ToolSchema::new(schema)))
                .collect(),
        }
    }

    pub fn get(&self, name: &str) -> Option<&ToolSchema> {
        self.tools.iter().find(|(n, _)| n == name).map(|(_, s)| s)
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(|(n, _)| n.as_str())
    }
}

/// What happens to a client tool with no harness counterpart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unmatched {
    /// Sent upstream with the client's own definition (the default).
    Keep,
    /// Not sent (the reference's strict filtering).
    Drop,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Binding {
    /// Stands for these harness tools. `exact`: the client's schema takes every harness call as
    /// it is (opencode's own tools), so its calls stream through untouched.
    Mapped {
        harness: Vec<String>,
        exact: bool,
    },
    Kept,
    Dropped,
}

#[derive(Debug)]
pub struct ClientTool {
    pub name: String,
    pub schema: ToolSchema,
    pub binding: Binding,
}

/// One request's bridge; the `CallMapper` of its answer.
pub struct Bridge {
    pub profile: Arc<Profile>,
    pub tools: Vec<ClientTool>,
}

impl Bridge {
    pub fn new(
        profile: Arc<Profile>,
        offered: &[ToolDefinition],
        harness: &HarnessTools,
        unmatched: Unmatched,
    ) -> Self {
        let names: Vec<String> = offered
            .iter()
            .filter_map(|t| t.name().map(str::to_owned))
            .collect();
        let mut tools: Vec<ClientTool> = offered
            .iter()
            .filter_map(|def| {
                let name = def.name()?.to_owned();
                let binding = alias_binding(&profile, &name, &names, harness);
                Some(ClientTool {
                    schema: ToolSchema::new(parameters(def)),
                    name,
                    binding: binding.unwrap_or(Binding::Kept),
                })
            })
            .collect();
        // Inference second, so an alias of an offered tool keeps its harness tool.
        for i in 0..tools.len() {
            if tools[i].binding != Binding::Kept || profile.has_alias_for(&tools[i].name) {
                continue;
            }
            let name = tools[i].name.clone();
            // Another tool's alias took it (a client sending one name twice gets both bound).
            let claimed = tools.iter().any(|t| t.name != name && t.stands_for(&name));
            if let Some(harness_schema) = harness.get(&name)
                && !claimed
                && tools[i].schema.accepts_calls_of(harness_schema)
            {
                let exact = takes_as_is(&tools[i].schema, harness_schema);
                tools[i].binding = Binding::Mapped {
                    harness: vec![name],
                    exact,
                };
            }
        }
        for tool in &mut tools {
            if tool.binding == Binding::Kept
                && (unmatched == Unmatched::Drop || profile.drops(&tool.name))
            {
                tool.binding = Binding::Dropped;
            }
        }
        Self { profile, tools }
    }

    /// A bridge for client tools given by name only, every schema open (any object fits): what
    /// tests and benchmarks of call streaming need, where schemas are not the point.
    pub fn open(profile: Arc<Profile>, client_tools: &[&str]) -> Self {
        let harness = HarnessTools::new(
            profile
                .aliases
                .iter()
                .map(|a| (a.opencode.clone(), None))
                .collect::<Vec<_>>(),
        );
        let offered: Vec<ToolDefinition> = client_tools
            .iter()
            .map(|name| {
                ToolDefinition::Function(crate::conversation::FunctionTool {
                    name: (*name).to_owned(),
                    ..Default::default()
                })
            })
            .collect();
        Self::new(profile, &offered, &harness, Unmatched::Keep)
    }

    pub fn binding(&self, name: &str) -> Option<&Binding> {
        self.tools
            .iter()
            .find(|t| t.name == name)
            .map(|t| &t.binding)
    }

    /// A tool a collaboration mode keeps whatever the operator's `drop` says.
    pub fn keep_tool(&mut self, name: &str) {
        if let Some(tool) = self.tools.iter_mut().find(|t| t.name == name) {
            if tool.binding == Binding::Dropped {
                tool.binding = Binding::Kept;
            }
        }
    }

    /// A tool the harness did not send after all (its flavour or mode has no place for it).
    pub fn drop_tool(&mut self, name: &str) {
        if let Some(tool) = self.tools.iter_mut().find(|t| t.name == name) {
            tool.binding = Binding::Dropped;
        }
    }

    /// Kept tools, by name, in the client's order: `x-harness-passthrough-tools`.
    pub fn kept(&self) -> Vec<String> {
        self.named(|b| *b == Binding::Kept)
    }

    pub fn dropped(&self) -> Vec<String> {
        self.named(|b| *b == Binding::Dropped)
    }

    fn named(&self, which: impl Fn(&Binding) -> bool) -> Vec<String> {
        self.tools
            .iter()
            .filter(|t| which(&t.binding))
            .map(|t| t.name.clone())
            .collect()
    }

    fn offered_names(&self) -> Vec<String> {
        self.tools.iter().map(|t| t.name.clone()).collect()
    }

    /// The client tool a harness call goes to: the mapped one, else a kept one of that name.
    fn target(&self, name: &str) -> Option<&ClientTool> {
        self.tools.iter().find(|t| t.stands_for(name)).or_else(|| {
            self.tools
                .iter()
                .find(|t| t.name == name && t.binding == Binding::Kept)
        })
    }

    /// The converter's arguments, cut to the client's schema.
    fn translate(&self, tool: &ClientTool, name: &str, arguments: &str) -> Option<Value> {
        let args = match &tool.binding {
            Binding::Mapped { .. } if self.profile.has_alias_for(&tool.name) => {
                let (_, text) =
                    self.profile
                        .call_to_client(name, arguments, &self.offered_names())?;
                text
            }
            _ => arguments.to_owned(),
        };
        match serde_json::from_str(&args) {
            Ok(Value::Object(args)) => Some(Value::Object(tool.schema.fit(args))),
            _ => None,
        }
    }
}

impl ClientTool {
    fn stands_for(&self, harness_tool: &str) -> bool {
        matches!(&self.binding, Binding::Mapped { harness, .. } if harness.iter().any(|h| h == harness_tool))
    }
}

/// The binding an alias of the profile gives an offered tool: the harness tools its aliases
/// name that the harness has.
fn alias_binding(
    profile: &Profile,
    name: &str,
    offered: &[String],
    harness: &HarnessTools,
) -> Option<Binding> {
    let targets: Vec<String> = profile
        .harness_names(name)
        .into_iter()
        .filter(|h| harness.get(h).is_some())
        // Two offered tools for one harness tool (Codex's `shell` and `shell_command`): the
        // profile's preferred one takes it.
        .filter(|h| profile.preferred_client(h, offered) == Some(name))
        .map(str::to_owned)
        .collect();
    (!targets.is_empty()).then_some(Binding::Mapped {
        harness: targets,
        exact: false,
    })
}

/// The client's schema takes any harness call unchanged, so its calls need no check: it is open,
/// or declares every harness parameter with the same schema (descriptions aside), and it
/// requires nothing the harness does not.
fn takes_as_is(client: &ToolSchema, harness: &ToolSchema) -> bool {
    let declares_all = client.is_open()
        || harness.declared().unwrap_or_default().iter().all(|name| {
            let (c, h) = (client.property(name), harness.property(name));
            c.is_some() && c.map(without_description) == h.map(without_description)
        });
    let harness_required = harness.required();
    declares_all
        && client
            .required()
            .iter()
            .all(|name| harness_required.contains(name))
}

fn without_description(schema: &Value) -> Value {
    let mut schema = schema.clone();
    if let Some(object) = schema.as_object_mut() {
        object.remove("description");
    }
    schema
}

fn parameters(def: &ToolDefinition) -> Option<Value> {
    match def {
        ToolDefinition::Function(f) => f.parameters.clone(),
        // A freeform tool takes `{input}` over Chat Completions.
        ToolDefinition::Freeform(_) => Some(serde_json::json!({"type": "object",
            "properties": {"input": {"type": "string"}}, "required": ["input"]})),
        ToolDefinition::Other { raw, .. } => raw.pointer("/function/parameters").cloned(),
    }
}

impl CallMapper for Bridge {
    fn route(&self, name: &str) -> CallRoute {
        match self.target(name).map(|t| &t.binding) {
            Some(Binding::Mapped { exact: true, .. }) => CallRoute::Native,
            Some(Binding::Mapped { .. } | Binding::Kept) => CallRoute::Translate,
            Some(Binding::Dropped) | None => CallRoute::Unmapped,
        }
    }

    fn to_client(&self, name: &str, arguments: &str) -> Delivered {
        let Some(tool) = self.target(name) else {
            return as_made(name, arguments, Outcome::Invalid);
        };
        let translated = self.translate(tool, name, arguments);
        if let Some(args) = translated.filter(|a| tool.schema.check(a) != Check::Invalid) {
            let text = args.to_string();
            let outcome = if tool.name == name && text == arguments {
                Outcome::AsMade
            } else {
                Outcome::Translated
            };
            return Delivered {
                name: tool.name.clone(),
                arguments: text,
                outcome,
            };
        }
        let raw_fits = serde_json::from_str::<Value>(arguments)
            .is_ok_and(|raw| raw.is_object() && tool.schema.check(&raw) != Check::Invalid);
        let outcome = if raw_fits {
            Outcome::AsMade
        } else {
            Outcome::Invalid
        };
        as_made(&tool.name, arguments, outcome)
    }

    fn profile(&self) -> &str {
        &self.profile.name
    }
}

/// The model's arguments under `name`, still parseable as an object
/// (`conversation::answer::deliverable`).
fn as_made(name: &str, arguments: &str, outcome: Outcome) -> Delivered {
    let arguments = deliverable(arguments).into_string();
    Delivered {
        name: name.to_owned(),
        arguments,
        outcome,
    }
}
