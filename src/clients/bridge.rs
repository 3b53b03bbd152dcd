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

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::Value;

use super::labels::ToolLabels;
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
///
/// Every lookup goes through an index, so a request's cost is linear in the tools it offers
/// (issue 30: per-tool scans made 40,000 tools cost minutes of CPU).
pub struct Bridge {
    pub profile: Arc<Profile>,
    pub tools: Vec<ClientTool>,
    /// The first offered tool of each name.
    by_name: HashMap<String, usize>,
    /// The offered tool each harness tool's calls go to (its alias, else its inference).
    by_harness: HashMap<String, usize>,
    /// The tool names its calls are counted under (`with_labels`); without them, every call's
    /// tool is `other`.
    labels: Option<Arc<ToolLabels>>,
}

impl Bridge {
    pub fn new(
        profile: Arc<Profile>,
        offered: &[ToolDefinition],
        harness: &HarnessTools,
        unmatched: Unmatched,
    ) -> Self {
        let names: HashSet<&str> = offered.iter().filter_map(ToolDefinition::name).collect();
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
        let mut by_name = HashMap::with_capacity(tools.len());
        let mut by_harness = HashMap::new();
        for (i, tool) in tools.iter().enumerate() {
            by_name.entry(tool.name.clone()).or_insert(i);
            if let Binding::Mapped { harness, .. } = &tool.binding {
                for h in harness {
                    by_harness.entry(h.clone()).or_insert(i);
                }
            }
        }
        // Inference second, so an alias of an offered tool keeps its harness tool (a client
        // sending one name twice gets both bound).
        for (i, tool) in tools.iter_mut().enumerate() {
            if tool.binding != Binding::Kept || profile.has_alias_for(&tool.name) {
                continue;
            }
            let claimed = by_harness.get(&tool.name).is_some_and(|&j| j != i);
            if let Some(harness_schema) = harness.get(&tool.name)
                && !claimed
                && tool.schema.accepts_calls_of(harness_schema)
            {
                let exact = takes_as_is(&tool.schema, harness_schema);
                tool.binding = Binding::Mapped {
                    harness: vec![tool.name.clone()],
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
        let mut bridge = Self {
            profile,
            tools,
            by_name,
            by_harness: HashMap::new(),
            labels: None,
        };
        bridge.index_harness();
        bridge
    }

    /// Counts its calls' tools under `labels`' names.
    #[must_use]
    pub fn with_labels(mut self, labels: Arc<ToolLabels>) -> Self {
        self.labels = Some(labels);
        self
    }

    /// Rebuilds `by_harness` from the bindings (after a binding changed).
    fn index_harness(&mut self) {
        self.by_harness.clear();
        for (i, tool) in self.tools.iter().enumerate() {
            if let Binding::Mapped { harness, .. } = &tool.binding {
                for h in harness {
                    self.by_harness.entry(h.clone()).or_insert(i);
                }
            }
        }
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
        self.by_name.get(name).map(|&i| &self.tools[i].binding)
    }

    /// A tool a collaboration mode keeps whatever the operator's `drop` says.
    pub fn keep_tool(&mut self, name: &str) {
        if let Some(&i) = self.by_name.get(name)
            && self.tools[i].binding == Binding::Dropped
        {
            self.tools[i].binding = Binding::Kept;
        }
    }

    /// Tools the harness did not send after all (its flavour or mode has no place for them).
    pub fn drop_tools<'n>(&mut self, names: impl IntoIterator<Item = &'n str>) {
        let mut changed = false;
        for name in names {
            if let Some(&i) = self.by_name.get(name) {
                changed |= matches!(self.tools[i].binding, Binding::Mapped { .. });
                self.tools[i].binding = Binding::Dropped;
            }
        }
        if changed {
            self.index_harness();
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

    /// The client tool a harness call goes to: the mapped one, else a kept one of that name.
    fn target(&self, name: &str) -> Option<&ClientTool> {
        self.by_harness
            .get(name)
            .or_else(|| {
                self.by_name
                    .get(name)
                    .filter(|&&i| self.tools[i].binding == Binding::Kept)
            })
            .map(|&i| &self.tools[i])
    }

    /// The converter's arguments, cut to the client's schema.
    fn translate(&self, tool: &ClientTool, name: &str, arguments: &str) -> Option<Value> {
        let args = match &tool.binding {
            Binding::Mapped { .. } if self.profile.has_alias_for(&tool.name) => {
                let offered = |client: &str| self.by_name.contains_key(client);
                let (_, text) = self.profile.call_to_client_if(name, arguments, &offered)?;
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

/// The binding an alias of the profile gives an offered tool: the harness tools its aliases
/// name that the harness has.
fn alias_binding(
    profile: &Profile,
    name: &str,
    offered: &HashSet<&str>,
    harness: &HarnessTools,
) -> Option<Binding> {
    let targets: Vec<String> = profile
        .harness_names(name)
        .into_iter()
        .filter(|h| harness.get(h).is_some())
        // Two offered tools for one harness tool (Codex's `shell` and `shell_command`): the
        // profile's preferred one takes it.
        .filter(|h| profile.preferred_client(h, &|client| offered.contains(client)) == Some(name))
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

    fn profile_label(&self) -> String {
        super::labels::clip(&self.profile.name)
    }

    fn tool_label(&self, name: &str) -> String {
        self.labels.as_ref().map_or_else(
            || super::labels::OTHER.to_owned(),
            |labels| labels.label(name),
        )
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
