//! What a named converter is: a pair of plain functions, client arguments → neutral calls and a
//! neutral call → client arguments (`Named`), and a result reader (`ResultReader`). The agents'
//! modules write them, `converters` lists them by name, `profiles` holds the one an alias names;
//! all three import this file and it imports none of them.
//!
//! Owns: the converters' shapes and `one`. Must not: convert anything itself, list converters.

use serde_json::{Map, Value};

use super::capability::Capability;

/// A client tool's arguments as neutral calls: one, or several when the tool does several things
/// at once (pi's `edits[]`); `None` when they do not convert. The capability given is the one the
/// profile's alias names; a converter may say another (a patch that only adds a file is a write).
pub type ToNeutral = fn(Capability, &Map<String, Value>) -> Option<Vec<(Capability, Value)>>;
/// A neutral call of a capability as the client tool's arguments; `None` when it cannot be
/// expressed for this tool.
pub type FromNeutral = fn(Capability, &Map<String, Value>) -> Option<Value>;

#[derive(Debug)]
pub struct Named {
    pub name: &'static str,
    pub to_neutral: ToNeutral,
    pub from_neutral: FromNeutral,
}

/// A structured result text → the neutral words; `None` leaves the text as it is.
pub type ResultReader = fn(&str) -> Option<String>;

/// One call of the alias's own capability.
pub fn one(capability: Capability, value: Option<Value>) -> Option<Vec<(Capability, Value)>> {
    value.map(|v| vec![(capability, v)])
}
