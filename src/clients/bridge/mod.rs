//! The tool bridge of one request: how each tool the client offered stands to the harness's tool
//! set, how the model's calls come back so that the client can run them, and how the client's
//! history reads in the harness's tools. Client and harness are both profiles: a client tool and
//! a harness tool meet through the capability they stand for (`clients::capability`), so any
//! client meets any harness with no pair written by hand.
//!
//! A client tool is *mapped* to a harness tool through its profile's alias, through an inference
//! from its name and schema (`clients::infer`), or, for a harness tool no capability describes,
//! by the same name with a schema that takes its calls (`ToolSchema::accepts_calls_of`); else it
//! is *kept* (sent upstream as the client defined it, beside the harness's tools, as opencode
//! sends MCP tools) or *dropped* (its profile says it means nothing upstream, or the operator
//! asked for `drop`). Every call the bridge delivers was checked against the client's own schema:
//! converted, cut to what the schema declares with nothing that matters cut away; else as the
//! model made it if that validates; else reported (`Outcome::Invalid`), never a silent wrong call.
//!
//! Every lookup goes through an index, so a request's cost is linear in the tools it offers.
//!
//! Owns: bindings (here), call delivery (`delivery`), the history's calls and results in the
//! harness's tools (`history`). Must not: know a harness's flavours or wire forms, do I/O.

mod delivery;
mod history;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::{Map, Value};

use super::capability::Capability;
use super::infer;
use super::labels::ToolLabels;
use super::profiles::{Alias, Profile};
use super::schema::ToolSchema;
use super::verdicts::Verdicts;
use crate::conversation::ToolDefinition;

/// One tool of a harness's set.
#[derive(Debug)]
pub struct HarnessTool {
    pub name: String,
    pub schema: ToolSchema,
    /// What it does, by the harness's profile; `None` for a tool no capability describes (it
    /// meets only a client tool of its own name).
    pub capability: Option<Capability>,
}

/// A harness's own tools, with their argument schemas and the profile that says what each does:
/// what client tools map onto. Built once, when the harness is.
#[derive(Debug)]
pub struct HarnessTools {
    profile: Arc<Profile>,
    tools: Vec<HarnessTool>,
    by_name: HashMap<String, usize>,
    /// The first tool of each capability: the one the capability's calls go to.
    by_capability: HashMap<Capability, usize>,
}

impl HarnessTools {
    pub fn new(
        profile: Arc<Profile>,
        tools: impl IntoIterator<Item = (String, Option<Value>)>,
    ) -> Self {
        let tools: Vec<HarnessTool> = tools
            .into_iter()
            .map(|(name, schema)| {
                let capability = profile.capabilities(&name).next();
                HarnessTool {
                    capability,
                    schema: ToolSchema::new(schema),
                    name,
                }
            })
            .collect();
        let mut by_name = HashMap::new();
        let mut by_capability = HashMap::new();
        for (i, tool) in tools.iter().enumerate() {
            by_name.entry(tool.name.clone()).or_insert(i);
            if let Some(capability) = tool.capability {
                by_capability.entry(capability).or_insert(i);
            }
        }
        Self {
            profile,
            tools,
            by_name,
            by_capability,
        }
    }

    pub fn get(&self, name: &str) -> Option<&HarnessTool> {
        self.by_name.get(name).map(|&i| &self.tools[i])
    }

    pub fn for_capability(&self, capability: Capability) -> Option<&HarnessTool> {
        self.by_capability.get(&capability).map(|&i| &self.tools[i])
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(|t| t.name.as_str())
    }

    pub fn profile(&self) -> &Profile {
        &self.profile
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
    /// it is (the same tool on both sides), so its calls stream through untouched.
    Mapped {
        harness: Vec<String>,
        exact: bool,
    },
    Kept,
    Dropped,
}

/// How a mapped client tool converts.
#[derive(Debug)]
enum Via {
    /// Its profile's aliases.
    Profile,
    /// An alias inferred from its name and schema.
    Inferred(Alias),
    /// The harness tool of its own name, no capability between.
    SameName,
}

#[derive(Debug)]
pub struct ClientTool {
    pub name: String,
    pub schema: ToolSchema,
    pub binding: Binding,
    via: Via,
}

/// One request's bridge; the `CallMapper` of its answer.
pub struct Bridge {
    pub profile: Arc<Profile>,
    pub tools: Vec<ClientTool>,
    harness: Arc<HarnessTools>,
    /// The first offered tool of each name.
    by_name: HashMap<String, usize>,
    /// The offered tool each harness tool's calls go to.
    by_harness: HashMap<String, usize>,
    /// The tool names its calls are counted under (`with_labels`); without them, every call's
    /// tool is `other`.
    labels: Option<Arc<ToolLabels>>,
    /// Each complete call's delivery, decided once (`to_client` is asked more than once).
    verdicts: Verdicts,
}

impl Bridge {
    pub fn new(
        profile: Arc<Profile>,
        offered: &[ToolDefinition],
        harness: Arc<HarnessTools>,
        unmatched: Unmatched,
    ) -> Self {
        let names: HashSet<&str> = offered.iter().filter_map(ToolDefinition::name).collect();
        let offered_here = |client: &str| names.contains(client);
        let mut by_name = HashMap::with_capacity(offered.len());
        let mut by_harness: HashMap<String, usize> = HashMap::new();
        let mut tools: Vec<ClientTool> = offered
            .iter()
            .filter_map(|def| {
                let name = def.name()?;
                Some(ClientTool {
                    name: name.to_owned(),
                    schema: ToolSchema::new(parameters(def)),
                    binding: Binding::Kept,
                    via: Via::SameName,
                })
            })
            .collect();
        // The profile's aliases first, so a tool it names keeps its harness tool whatever an
        // inference says of another.
        for (i, tool) in tools.iter_mut().enumerate() {
            by_name.entry(tool.name.clone()).or_insert(i);
            if !profile.has_alias_for(&tool.name) {
                continue;
            }
            let targets: Vec<String> = profile
                .capabilities(&tool.name)
                .filter(|c| {
                    // Two offered tools for one capability (Codex's `shell` and `shell_command`):
                    // the profile's preferred one takes it.
                    profile
                        .preferred_client(*c, &offered_here)
                        .is_some_and(|a| a.client == tool.name)
                })
                .filter_map(|c| harness.for_capability(c))
                .map(|h| h.name.clone())
                .filter(|h| !by_harness.contains_key(h))
                .collect();
            for target in &targets {
                by_harness.insert(target.clone(), i);
            }
            tool.binding = mapped(targets, false);
            tool.via = Via::Profile;
        }
        let names: Vec<String> = tools.iter().map(|t| t.name.clone()).collect();
        for (i, tool) in tools.iter_mut().enumerate() {
            if !profile.has_alias_for(&tool.name) {
                // A harness tool another name took; a client sending one name twice gets both
                // bound.
                let taken = |harness_tool: &str| {
                    by_harness
                        .get(harness_tool)
                        .is_some_and(|&j| names[j] != tool.name)
                };
                let (binding, via) = bind_unknown(&tool.name, &tool.schema, &harness, &taken);
                if let Binding::Mapped {
                    harness: targets, ..
                } = &binding
                {
                    for target in targets {
                        by_harness.entry(target.clone()).or_insert(i);
                    }
                }
                tool.binding = binding;
                tool.via = via;
            }
            // The tool a client's sub-agent must end with stays whatever `extra_tools` says:
            // without it the sub-agent's answer never reaches its main thread.
            let must_keep = profile.subagent.keep.contains(&tool.name);
            if tool.binding == Binding::Kept
                && !must_keep
                && (unmatched == Unmatched::Drop || profile.drops(&tool.name))
            {
                tool.binding = Binding::Dropped;
            }
        }
        let mut bridge = Self {
            profile,
            tools,
            harness,
            by_name,
            by_harness,
            labels: None,
            verdicts: Verdicts::default(),
        };
        bridge.mark_exact();
        bridge
    }

    /// Counts its calls' tools under `labels`' names.
    #[must_use]
    pub fn with_labels(mut self, labels: Arc<ToolLabels>) -> Self {
        self.labels = Some(labels);
        self
    }

    /// Calls stream through untouched where client and harness have the same tool: the same
    /// name, converted as it is on both sides, and a client schema that takes the harness's
    /// calls unchanged.
    fn mark_exact(&mut self) {
        for tool in &mut self.tools {
            let Binding::Mapped { harness, exact } = &mut tool.binding else {
                continue;
            };
            let [target] = harness.as_slice() else {
                continue;
            };
            let Some(harness_tool) = self.harness.get(target) else {
                continue;
            };
            let identity_both = |profile: &Profile, name: &str| {
                profile
                    .aliases
                    .iter()
                    .filter(|a| a.client == name)
                    .all(|a| matches!(a.conversion, super::profiles::Conversion::Identity))
            };
            let same_tool = tool.name == *target
                && match &tool.via {
                    Via::SameName => true,
                    Via::Profile => {
                        identity_both(&self.profile, &tool.name)
                            && identity_both(self.harness.profile(), target)
                    }
                    Via::Inferred(_) => false,
                };
            *exact = same_tool && takes_as_is(&tool.schema, &harness_tool.schema);
        }
    }

    /// A bridge against opencode's tools for client tools given by name only, every schema open
    /// (any object fits): what tests and benchmarks of call streaming need, where schemas are
    /// not the point.
    pub fn open(profile: Arc<Profile>, client_tools: &[&str]) -> Self {
        let opencode = super::profiles::Profiles::built_in("opencode");
        let names: Vec<(String, Option<Value>)> = opencode
            .aliases
            .iter()
            .map(|a| (a.client.clone(), None))
            .collect();
        let harness = Arc::new(HarnessTools::new(opencode, names));
        let offered: Vec<ToolDefinition> = client_tools
            .iter()
            .map(|name| {
                ToolDefinition::Function(crate::conversation::FunctionTool {
                    name: (*name).to_owned(),
                    ..Default::default()
                })
            })
            .collect();
        Self::new(profile, &offered, harness, Unmatched::Keep)
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
            self.by_harness.clear();
            for (i, tool) in self.tools.iter().enumerate() {
                if let Binding::Mapped { harness, .. } = &tool.binding {
                    for h in harness {
                        self.by_harness.entry(h.clone()).or_insert(i);
                    }
                }
            }
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
}

fn mapped(targets: Vec<String>, exact: bool) -> Binding {
    if targets.is_empty() {
        Binding::Kept
    } else {
        Binding::Mapped {
            harness: targets,
            exact,
        }
    }
}

/// A client tool no profile alias describes: the harness tool of its own name when that one has
/// no capability and its calls fit; else what its name and schema say it does, when the harness
/// has a tool for that and no earlier client tool took it; else kept.
fn bind_unknown(
    name: &str,
    schema: &ToolSchema,
    harness: &HarnessTools,
    taken: &dyn Fn(&str) -> bool,
) -> (Binding, Via) {
    if let Some(same) = harness.get(name)
        && !taken(name)
        && schema.accepts_calls_of(&same.schema)
    {
        let binding = mapped(vec![same.name.clone()], false);
        match (same.capability, infer::infer(name, schema)) {
            (Some(_), Some(_)) => {}
            (Some(capability), None) if !takes_as_is(schema, &same.schema) => {
                // The harness's tool under its own name, with a schema of its own: its calls are
                // converted by the parameters the two share, so what has no slot is folded or
                // reported, never cut away.
                if let Some(alias) = shared_names(name, capability, schema) {
                    return (binding, Via::Inferred(alias));
                }
                return (binding, Via::SameName);
            }
            (None, _) | (Some(_), None) => return (binding, Via::SameName),
        }
    }
    if let Some(alias) = infer::infer(name, schema)
        && let Some(target) = harness.for_capability(alias.capability)
        && !taken(&target.name)
    {
        return (
            mapped(vec![target.name.clone()], false),
            Via::Inferred(alias),
        );
    }
    (Binding::Kept, Via::SameName)
}

/// An alias taking the neutral parameters a client tool declares under their own names.
fn shared_names(name: &str, capability: Capability, schema: &ToolSchema) -> Option<Alias> {
    let declared = schema.declared()?;
    let fields: std::collections::BTreeMap<String, String> = capability
        .parameters()
        .iter()
        .filter(|p| declared.contains(&p.name))
        .map(|p| (p.name.to_owned(), p.name.to_owned()))
        .collect();
    if fields.is_empty() {
        return None;
    }
    let mut alias = Alias::new(name, capability, super::profiles::Conversion::Only);
    alias.fields = fields;
    Some(alias)
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

fn parse_object(text: &str) -> Option<Map<String, Value>> {
    match serde_json::from_str(text) {
        Ok(Value::Object(map)) => Some(map),
        _ => None,
    }
}
