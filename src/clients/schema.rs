//! A tool's declared argument schema, as the bridge reads it: which parameters it declares and
//! requires with which JSON types, whether another tool's arguments fit it (the schema-safe
//! inference of `bridge`), arguments cut down to what it declares, and the final check that a
//! call validates against it (`jsonschema`, draft picked from the schema's `$schema`, as the
//! agents' own validators do).
//!
//! Owns: reading and checking schemas. Must not: know any agent or harness by name, do I/O (no
//! remote `$ref`: the validator is built without resolvers, so a schema that needs one is
//! "cannot judge", never a fetch).

use std::sync::{Arc, LazyLock, Mutex, OnceLock, PoisonError};

use hashlink::LruCache;
use serde_json::{Map, Value};

/// One tool's parameters schema, its validator looked up on first use (most tools of a request
/// are never called) and then kept for the request, however many calls it gets.
#[derive(Debug)]
pub struct ToolSchema {
    schema: Option<Value>,
    validator: OnceLock<Option<Arc<jsonschema::Validator>>>,
    /// Its length as JSON text, measured on first use (`cost`).
    size: OnceLock<usize>,
}

/// What checking a call against a schema found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    Valid,
    Invalid,
    /// No schema, or one the validator cannot build (a remote `$ref`, an unknown draft): the
    /// client's own check decides, as it did before the bridge.
    Unknown,
}

impl ToolSchema {
    pub fn new(schema: Option<Value>) -> Self {
        Self {
            schema,
            validator: OnceLock::new(),
            size: OnceLock::new(),
        }
    }

    /// About what compiling it and checking a call against it cost: its length as JSON text
    /// (bounded by `limits.max_tool_schema_bytes` when it came from a client).
    pub fn cost(&self) -> usize {
        *self.size.get_or_init(|| {
            self.schema
                .as_ref()
                .and_then(|schema| crate::conversation::json_len(schema, usize::MAX))
                .unwrap_or(0)
        })
    }

    pub fn value(&self) -> Option<&Value> {
        self.schema.as_ref()
    }

    fn properties(&self) -> Option<&Map<String, Value>> {
        self.schema.as_ref()?.get("properties")?.as_object()
    }

    /// The declared parameter names, `None` when the schema declares none (an open object).
    pub fn declared(&self) -> Option<Vec<&str>> {
        self.properties()
            .map(|p| p.keys().map(String::as_str).collect())
    }

    /// One declared parameter's schema.
    pub fn property(&self, name: &str) -> Option<&Value> {
        self.properties()?.get(name)
    }

    pub fn declares(&self, name: &str) -> bool {
        self.properties().is_some_and(|p| p.contains_key(name))
    }

    pub fn required(&self) -> Vec<&str> {
        self.schema
            .as_ref()
            .and_then(|s| s.get("required"))
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }

    /// No declared parameters and extra ones not forbidden: any object fits.
    pub fn is_open(&self) -> bool {
        self.properties().is_none_or(Map::is_empty)
            && self
                .schema
                .as_ref()
                .and_then(|s| s.get("additionalProperties"))
                != Some(&Value::Bool(false))
    }

    /// The JSON types a parameter may take; empty when the schema does not say.
    pub fn types(&self, name: &str) -> Vec<&str> {
        let Some(property) = self.properties().and_then(|p| p.get(name)) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        collect_types(property, &mut out);
        out
    }

    /// Whether calls made to `harness` can be delivered to a tool of this schema by keeping the
    /// parameters it declares: every parameter it requires is one `harness` requires too (so
    /// every valid harness call has it), with a type in common, every parameter both declare agrees in type, and at least one parameter `harness`
    /// requires is declared here (a `bash` whose one parameter is `script` is another tool).
    /// A harness tool that declares nothing leaves nothing to compare: its name decides.
    pub fn accepts_calls_of(&self, harness: &ToolSchema) -> bool {
        if self.is_open() || harness.declared().is_none_or(|d| d.is_empty()) {
            return true;
        }
        let Some(declared) = self.declared() else {
            return false;
        };
        let harness_required = harness.required();
        let required_covered = self
            .required()
            .iter()
            .all(|name| harness_required.contains(name));
        let types_agree = declared
            .iter()
            .filter(|name| harness.declares(name))
            .all(|name| types_meet(&self.types(name), &harness.types(name)));
        let shares_a_required = harness
            .required()
            .iter()
            .any(|name| declared.contains(name));
        required_covered && types_agree && shares_a_required
    }

    /// `args` with only the parameters this schema declares (all of them for an open schema),
    /// less a `null` where the parameter is optional and its type says nothing of null: a model's
    /// "not set" (opencode's `webfetch` takes `format: null`), which such a schema would refuse.
    pub fn fit(&self, args: Map<String, Value>) -> Map<String, Value> {
        let required = self.required();
        let unset = |key: &str, value: &Value| {
            value.is_null() && !required.contains(&key) && {
                let types = self.types(key);
                !types.is_empty() && !types.contains(&"null")
            }
        };
        match self.properties() {
            Some(properties) if !properties.is_empty() => args
                .into_iter()
                .filter(|(key, value)| properties.contains_key(key) && !unset(key, value))
                .collect(),
            _ => args,
        }
    }

    pub fn check(&self, args: &Value) -> Check {
        let validator = self
            .validator
            .get_or_init(|| self.schema.as_ref().and_then(compiled));
        match validator {
            Some(validator) if validator.is_valid(args) => Check::Valid,
            Some(_) => Check::Invalid,
            None => Check::Unknown,
        }
    }
}

/// Validators compiled lately, by their schema's JSON text: an agent declares the same tools
/// turn after turn, and compiling one (tens of thousands of instructions for Codex's `shell`)
/// was most of checking a call. Bounded in entries and in the text a key may hold; a larger
/// schema is compiled for its request alone, as before.
const RECENT_VALIDATORS: usize = 64;
const MAX_CACHED_SCHEMA_BYTES: usize = 16 * 1024;

/// A schema the validator cannot build is remembered as such (`None`): it stays "cannot judge".
type Compiled = Option<Arc<jsonschema::Validator>>;

static RECENT: LazyLock<Mutex<LruCache<String, Compiled>>> =
    LazyLock::new(|| Mutex::new(LruCache::new(RECENT_VALIDATORS)));

/// The validator for `schema`, compiled once for as long as it stays among the recent ones.
fn compiled(schema: &Value) -> Compiled {
    let compile = || jsonschema::validator_for(schema).ok().map(Arc::new);
    let key = match serde_json::to_string(schema) {
        Ok(key) if key.len() <= MAX_CACHED_SCHEMA_BYTES => key,
        _ => return compile(),
    };
    // A panic elsewhere while holding the lock leaves a cache still whole: keep using it.
    let recent = || RECENT.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(found) = recent().get(&key) {
        return found.clone();
    }
    // Compiled outside the lock: two requests compiling the same schema at once both get a
    // working validator, and the second insert replaces the first.
    let built = compile();
    recent().insert(key, built.clone());
    built
}

/// `type` of a schema, also through `anyOf` / `oneOf` branches (opencode's `webfetch.format`).
fn collect_types<'a>(schema: &'a Value, out: &mut Vec<&'a str>) {
    match schema.get("type") {
        Some(Value::String(t)) => out.push(t),
        Some(Value::Array(ts)) => out.extend(ts.iter().filter_map(Value::as_str)),
        _ => {}
    }
    for key in ["anyOf", "oneOf"] {
        for branch in schema
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            collect_types(branch, out);
        }
    }
}

/// A client's types take a harness's values: either says nothing, or every harness type is one
/// the client accepts (a harness `integer` is a client `number`, not the other way round).
fn types_meet(client: &[&str], harness: &[&str]) -> bool {
    client.is_empty()
        || harness.is_empty()
        || harness.iter().all(|h| {
            client
                .iter()
                .any(|c| c == h || (*h == "integer" && *c == "number"))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema(value: Value) -> ToolSchema {
        ToolSchema::new(Some(value))
    }

    fn opencode_bash() -> ToolSchema {
        schema(
            json!({"type": "object", "properties": {"command": {"type": "string"},
            "timeout": {"type": "integer"}, "workdir": {"type": "string"},
            "description": {"type": "string"}}, "required": ["command", "description"]}),
        )
    }

    #[test]
    fn a_command_only_bash_takes_opencode_calls_and_a_script_bash_does_not() {
        let llm = schema(
            json!({"type": "object", "properties": {"command": {"type": "string"}},
            "required": ["command"]}),
        );
        assert!(llm.accepts_calls_of(&opencode_bash()));
        let script = schema(
            json!({"type": "object", "properties": {"script": {"type": "string"}},
            "required": ["script"]}),
        );
        assert!(!script.accepts_calls_of(&opencode_bash()));
        let argv = schema(json!({"type": "object", "properties": {"command": {"type": "array"}}}));
        assert!(!argv.accepts_calls_of(&opencode_bash()), "types differ");
        assert!(schema(json!({"type": "object"})).accepts_calls_of(&opencode_bash()));
    }

    #[test]
    fn fit_keeps_only_what_the_client_declares_and_check_says_whether_it_validates() {
        let strict = schema(
            json!({"type": "object", "properties": {"command": {"type": "string"}},
            "required": ["command"], "additionalProperties": false}),
        );
        let args = json!({"command": "ls", "description": "Lists"});
        let Value::Object(args) = args else {
            unreachable!()
        };
        assert_eq!(strict.check(&Value::Object(args.clone())), Check::Invalid);
        let fitted = Value::Object(strict.fit(args));
        assert_eq!(fitted, json!({"command": "ls"}));
        assert_eq!(strict.check(&fitted), Check::Valid);
        assert_eq!(ToolSchema::new(None).check(&fitted), Check::Unknown);
    }

    #[test]
    fn a_schema_seen_before_reuses_its_compiled_validator_and_the_cache_stays_bounded() {
        let declared = || {
            schema(
                json!({"type": "object", "properties": {"cached-test": {"type": "string"}},
            "required": ["cached-test"]}),
            )
        };
        let (first, second) = (declared(), declared());
        assert_eq!(first.check(&json!({"cached-test": "x"})), Check::Valid);
        assert_eq!(second.check(&json!({"cached-test": 1})), Check::Invalid);
        let validator = |s: &ToolSchema| s.validator.get().cloned().flatten().expect("compiled");
        assert!(Arc::ptr_eq(&validator(&first), &validator(&second)));

        // A schema the validator cannot build stays "cannot judge", cached or not.
        let unknown_draft = json!({"$schema": "https://example.com/not-a-draft", "type": "object"});
        for _ in 0..2 {
            assert_eq!(
                schema(unknown_draft.clone()).check(&json!({})),
                Check::Unknown
            );
        }
        // Many distinct schemas keep the cache at its bound.
        for i in 0..RECENT_VALIDATORS + 8 {
            let tool = schema(
                json!({"type": "object", "properties": {format!("p{i}"): {"type": "string"}}}),
            );
            assert_eq!(tool.check(&json!({})), Check::Valid);
        }
        assert!(RECENT.lock().expect("not poisoned").len() <= RECENT_VALIDATORS);
        // A schema past the key bound is compiled and judged all the same.
        let long = "d".repeat(MAX_CACHED_SCHEMA_BYTES);
        let large = schema(json!({"type": "object", "description": long,
            "properties": {"command": {"type": "string"}}, "required": ["command"]}));
        assert_eq!(large.check(&json!({"command": "ls"})), Check::Valid);
        assert_eq!(large.check(&json!({})), Check::Invalid);
    }

    #[test]
    fn a_null_is_not_set_only_where_the_parameter_is_optional_and_takes_no_null() {
        let fetch = schema(
            json!({"type": "object", "required": ["url"], "properties": {
            "url": {"type": "string"}, "format": {"type": "string"},
            "timeout": {"type": ["number", "null"]}, "note": {}}}),
        );
        let args = json!({"url": null, "format": null, "timeout": null, "note": null});
        let Value::Object(args) = args else {
            unreachable!()
        };
        // The required `url` stays, to be refused and reported, never dropped silently.
        assert_eq!(
            Value::Object(fetch.fit(args)),
            json!({"url": null, "timeout": null, "note": null})
        );
    }
}
