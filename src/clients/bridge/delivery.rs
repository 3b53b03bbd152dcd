//! A model's call delivered to the client: the harness call in neutral terms, then in the
//! client's tool, cut to what its schema declares and checked against it (`CallMapper` for
//! `Bridge`); else as made when that validates; else reported. And what the model is told when a
//! call cannot be run (`explain`).

use serde_json::Value;

use super::{Binding, Bridge, ClientTool, Via, parse_object};
use crate::clients::capability::Capability;
use crate::clients::schema::Check;
use crate::conversation::answer::deliverable;
use crate::conversation::mapping::{CallMapper, CallRoute, Delivered, Outcome};

impl Bridge {
    /// A harness call's arguments in neutral terms: its capability's one call; `None` when the
    /// tool has no capability or the call is several (a pi `edit` of two replacements).
    fn harness_to_neutral(&self, name: &str, arguments: &str) -> Option<(Capability, Value)> {
        let capability = self.harness.get(name)?.capability?;
        let Some(alias) = self.harness.profile().alias(name, capability) else {
            return parse_object(arguments).map(|args| (capability, Value::Object(args)));
        };
        match alias.to_neutral(parse_object(arguments)?)?.as_slice() {
            [(capability, args)] => Some((*capability, args.clone())),
            _ => None,
        }
    }

    /// A neutral call as a client tool's arguments, by how that tool is bound.
    fn neutral_to_client(
        &self,
        tool: &ClientTool,
        capability: Capability,
        args: Value,
    ) -> Option<Value> {
        let Value::Object(args) = args else {
            return None;
        };
        match &tool.via {
            Via::Profile => self
                .profile
                .alias(&tool.name, capability)?
                .from_neutral(args),
            Via::Inferred(alias) if alias.capability == capability => alias.from_neutral(args),
            Via::Inferred(_) | Via::SameName => None,
        }
    }

    /// The call's arguments in the client's terms, cut to what its schema declares; `None` when
    /// they do not convert or the cut would take away something that matters.
    fn translate(&self, tool: &ClientTool, name: &str, arguments: &str) -> Option<Value> {
        let converted = match &tool.via {
            Via::SameName => Value::Object(parse_object(arguments)?),
            Via::Profile | Via::Inferred(_) if matches!(tool.binding, Binding::Kept) => {
                Value::Object(parse_object(arguments)?)
            }
            Via::Profile | Via::Inferred(_) => {
                let (capability, neutral) = self.harness_to_neutral(name, arguments)?;
                self.neutral_to_client(tool, capability, neutral)?
            }
        };
        let Value::Object(args) = converted else {
            return None;
        };
        let capability = self.harness.get(name).and_then(|h| h.capability);
        let cut: Vec<(String, Value)> = args
            .iter()
            .filter(|(key, _)| !tool.schema.declares(key) && !tool.schema.is_open())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let harmless = cut.iter().all(|(key, value)| {
            matches!(value, Value::Null | Value::Bool(false))
                || capability.is_some_and(|c| c.informational(key))
                // What the harness's own schema would not take either was never the call's.
                || self
                    .harness
                    .get(name)
                    .is_none_or(|h| h.schema.declared().is_some_and(|d| !d.contains(&key.as_str())))
        });
        harmless.then(|| Value::Object(tool.schema.fit(args)))
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
        self.verdicts
            .get_or(name, arguments, || self.decide(name, arguments))
    }

    fn check_cost(&self, name: &str, arguments: &str) -> usize {
        self.target(name).map_or(0, |tool| tool.schema.cost()) + arguments.len()
    }

    fn profile(&self) -> &str {
        &self.profile.name
    }

    fn profile_label(&self) -> String {
        crate::clients::labels::clip(&self.profile.name)
    }

    fn tool_label(&self, name: &str) -> String {
        self.labels.as_ref().map_or_else(
            || crate::clients::labels::OTHER.to_owned(),
            |labels| labels.label(name),
        )
    }

    fn explain(&self, name: &str, arguments: &str) -> String {
        let callable = || {
            let mut names: Vec<&str> = Vec::new();
            for tool in &self.tools {
                match &tool.binding {
                    Binding::Mapped { harness, .. } => {
                        names.extend(harness.iter().map(String::as_str));
                    }
                    Binding::Kept => names.push(&tool.name),
                    Binding::Dropped => {}
                }
            }
            names.join(", ")
        };
        let Some(tool) = self.target(name) else {
            return format!(
                "there is no `{name}` tool here; the tools are: {}",
                callable()
            );
        };
        let Some(args) = parse_object(arguments) else {
            return format!("the arguments of `{name}` are not a JSON object");
        };
        let takes = self
            .harness
            .get(name)
            .and_then(|h| h.schema.declared())
            .or_else(|| tool.schema.declared())
            .unwrap_or_default();
        let given: Vec<&str> = args.keys().map(String::as_str).collect();
        let required: Vec<&str> = self
            .harness
            .get(name)
            .map(|h| h.schema.required())
            .unwrap_or_default();
        let missing: Vec<&&str> = required.iter().filter(|r| !given.contains(r)).collect();
        let mut why = format!(
            "this `{name}` call cannot be run as given (arguments: {})",
            if given.is_empty() {
                "none".to_owned()
            } else {
                given.join(", ")
            }
        );
        if !missing.is_empty() {
            let missing: Vec<&str> = missing.into_iter().copied().collect();
            why.push_str(&format!("; it requires {}", missing.join(", ")));
        } else {
            why.push_str(
                "; some of them cannot be carried out here, send only what the task needs",
            );
        }
        if !takes.is_empty() {
            why.push_str(&format!(". `{name}` takes: {}", takes.join(", ")));
        }
        why
    }
}

impl Bridge {
    /// A complete call as the client gets it: converted and checked against the client's
    /// schema, else as made if that validates, else reported (`CallMapper::to_client`, which
    /// keeps what this decides).
    fn decide(&self, name: &str, arguments: &str) -> Delivered {
        let Some(tool) = self.target(name) else {
            return as_made(name, arguments, Outcome::Invalid);
        };
        let translated = self.translate(tool, name, arguments);
        if let Some(args) = translated.filter(|a| tool.schema.check(a) != Check::Invalid) {
            let text = crate::conversation::json_text(&args);
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
        // As made only when the client declares every argument the model gave (or declares none
        // at all): a call never reaches a client with fields it did not declare.
        let raw_fits = parse_object(arguments).is_some_and(|raw| {
            (tool.schema.is_open() || raw.keys().all(|key| tool.schema.declares(key)))
                && tool.schema.check(&Value::Object(raw)) != Check::Invalid
        });
        let outcome = if raw_fits {
            Outcome::AsMade
        } else {
            Outcome::Invalid
        };
        as_made(&tool.name, arguments, outcome)
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
