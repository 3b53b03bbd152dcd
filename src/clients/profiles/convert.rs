//! One alias's argument conversion, both ways: the rename tables or the named converter, then
//! the data tables (`scale`, `shift`, `defaults`). Toward the client, a neutral argument the tool
//! has no slot for is folded where its meaning survives (a shell's `workdir` into its command as
//! `cd DIR && …`), dropped only when it changes nothing (`Capability::informational`, or a value
//! that means "not set": `null`, `false`), and otherwise the call cannot be expressed for the tool
//! (`None`): never dropped silently. Pure.
//!
//! Owns: one alias's conversion. Must not: pick the alias (`Profile` does).

use serde_json::{Map, Value};

use super::{Alias, Conversion};
use crate::clients::capability::{Capability, NO_OUTPUT};

/// One client call's arguments → neutral calls, by the alias's conversion and tables.
pub(super) fn to_neutral(
    alias: &Alias,
    args: Map<String, Value>,
) -> Option<Vec<(Capability, Value)>> {
    let args = units(args, alias, true);
    let capability = alias.capability;
    match alias.conversion {
        Conversion::Identity => Some(vec![(capability, Value::Object(args))]),
        Conversion::Fields => Some(vec![(
            capability,
            rename_fields(args, &alias.renames(true)),
        )]),
        Conversion::Only => Some(vec![(capability, keep_fields(&args, &alias.renames(true)))]),
        Conversion::Named(named) => (named.to_neutral)(capability, &args),
    }
}

/// A neutral call's arguments → the client tool's, by the alias's conversion and tables.
pub(super) fn from_neutral(alias: &Alias, args: Map<String, Value>) -> Option<Value> {
    let converted = match alias.conversion {
        Conversion::Identity => Value::Object(args),
        Conversion::Fields => rename_fields(args, &alias.renames(false)),
        Conversion::Only => Value::Object(only_expressible(alias, args)?),
        Conversion::Named(named) => (named.from_neutral)(alias.capability, &args)?,
    };
    let Value::Object(mut out) = converted else {
        return Some(converted);
    };
    for (field, value) in &alias.defaults {
        out.entry(field.clone()).or_insert_with(|| value.clone());
    }
    Some(Value::Object(units(out, alias, false)))
}

/// The neutral arguments an `only` alias has fields for, renamed; a shell's `workdir` with no
/// field folded into the command; `None` when an argument that matters has no slot.
fn only_expressible(alias: &Alias, mut args: Map<String, Value>) -> Option<Map<String, Value>> {
    let has_slot = |neutral: &str| alias.fields.values().any(|n| n == neutral);
    if alias.capability == Capability::Shell && !has_slot("workdir") {
        fold_workdir(&mut args)?;
    }
    let mut out = Map::new();
    for (key, value) in args {
        match alias.fields.iter().find(|(_, neutral)| **neutral == key) {
            Some((client, _)) => {
                out.insert(client.clone(), value);
            }
            None if droppable(alias.capability, &key, &value) => {}
            None => return None,
        }
    }
    Some(out)
}

/// A neutral argument a tool may go without: it changes nothing the tool does, or it says "not
/// set".
fn droppable(capability: Capability, key: &str, value: &Value) -> bool {
    capability.informational(key) || matches!(value, Value::Null | Value::Bool(false))
}

/// A shell call's `workdir` as `cd DIR && command`, for a shell with no working directory of its
/// own; `None` when the directory cannot be quoted for the shell.
pub(crate) fn fold_workdir(args: &mut Map<String, Value>) -> Option<()> {
    let Some(workdir) = args.remove("workdir") else {
        return Some(());
    };
    let dir = match &workdir {
        Value::String(dir) if !dir.is_empty() => dir,
        Value::String(_) | Value::Null => return Some(()),
        _ => return None,
    };
    let command = args.get("command")?.as_str()?;
    let folded = format!("cd {} && {command}", shlex::try_quote(dir).ok()?);
    args.insert("command".into(), Value::String(folded));
    Some(())
}

/// Numbers of the `scale` and `shift` fields (client names) put in the neutral units, or back; a
/// whole result stays an integer.
fn units(mut args: Map<String, Value>, alias: &Alias, to_neutral: bool) -> Map<String, Value> {
    if alias.scale.is_empty() && alias.shift.is_empty() {
        return args;
    }
    let fields = alias.scale.keys().chain(alias.shift.keys());
    let fields: std::collections::BTreeSet<&String> = fields.collect();
    for field in fields {
        // Toward the neutral form the client's name is still there; back, the field was renamed
        // to it already.
        let Some(number) = args.get(field.as_str()).and_then(Value::as_f64) else {
            continue;
        };
        let factor = alias.scale.get(field).copied().unwrap_or(1.0);
        let shift = alias.shift.get(field).copied().unwrap_or(0.0);
        let converted = if to_neutral {
            number * factor + shift
        } else {
            (number - shift) / factor
        };
        #[allow(clippy::cast_possible_truncation)]
        let value = if converted.fract() == 0.0 && converted.abs() < 9.0e15 {
            Value::from(converted as i64)
        } else {
            serde_json::Number::from_f64(converted).map_or(Value::Null, Value::Number)
        };
        args.insert(field.clone(), value);
    }
    args
}

/// What a shell answers for a command that printed nothing, in the neutral words.
pub fn plain_output(output: String) -> String {
    if output.is_empty() {
        NO_OUTPUT.to_owned()
    } else {
        output
    }
}

/// The `output` string of a JSON object that wraps one (Codex's `{"output": …, "metadata": …}`).
/// The rest of the object is read as JSON but not built: a tool result can be a whole file, and
/// building its object was most of converting it. `None` for anything else (not an object, no
/// `output` string, a repeated `output`): the caller keeps the text as it came.
pub(super) fn wrapped_output(text: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Wrapped {
        output: Option<String>,
    }
    // A derived struct also reads a JSON array; only an object wraps an output.
    if !text.trim_start().starts_with('{') {
        return None;
    }
    serde_json::from_str::<Wrapped>(text).ok()?.output
}

pub(super) fn parse_object(text: &str) -> Option<Map<String, Value>> {
    match serde_json::from_str(text) {
        Ok(Value::Object(map)) => Some(map),
        _ => None,
    }
}

/// Renames top-level fields by `renames` (from → to); others keep their names and order.
fn rename_fields(args: Map<String, Value>, renames: &[(&str, &str)]) -> Value {
    let mut out = Map::new();
    for (key, value) in args {
        let renamed = renames
            .iter()
            .find(|(from, _)| *from == key)
            .map_or(key, |(_, to)| (*to).to_owned());
        out.insert(renamed, value);
    }
    Value::Object(out)
}

/// The fields named in `renames` (from → to), renamed, in the order they came; others dropped
/// (toward the neutral form: a client's extras have no neutral meaning).
fn keep_fields(args: &Map<String, Value>, renames: &[(&str, &str)]) -> Value {
    let mut out = Map::new();
    for (key, value) in args {
        if let Some((_, to)) = renames.iter().find(|(from, _)| from == key) {
            out.insert((*to).to_owned(), value.clone());
        }
    }
    Value::Object(out)
}
