//! A chat harness's upstream body, written as bytes with what is the same on every request
//! done once at start-up. DeepSeek-TUI offers 84 tool definitions and sends a 30 KB system text:
//! cloning the definitions as JSON trees, escaping their descriptions and its fixed system
//! sections again, and dropping the trees cost about as much as the rest of its rebuild (issue 31,
//! item 7). So its own definitions are serialized once and copied as text (`Offered`), and a
//! system text is assembled from sections escaped once and only its per-request parts escaped
//! (`JsonText`). Everything else in the body is written by serde_json as before.
//!
//! What is the same on every request is not copied either: a request's definitions are slices of
//! their text joined once (`Definitions`: the definitions next to each other in the tools file
//! are one slice), and a system text's long fixed sections are kept (`JsonText::push_kept`); a long
//! slice or section goes out as a run of its own (`shared_runs::Runs`, `BodyParts`), so an open or
//! waiting request holds only what is its own (issue 36).
//!
//! A body holds a `"tools": null` slot where the tools go (`Offered::slot`), so its key order stays
//! the harness's; `Body` writes the slot with these tools, and the system text, when given, as the
//! first message. Only the harness sets the slot's key, never a client, so it cannot be confused
//! with a client's value.

use bytes::Bytes;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::conversation::body_parts::BodyParts;
use crate::harness::shared_runs::Runs;
use crate::json_escape::{push_escaped, push_string, push_value};
use crate::template::{Pattern, PatternPiece};

/// One of a harness's own tool definitions: its tree (for harnesses that reshape it, and its
/// schema) and its text, serialized once.
#[derive(Debug)]
pub struct Definition {
    pub name: String,
    pub value: Value,
    raw: Box<RawValue>,
}

impl Definition {
    pub fn new(name: String, value: Value) -> Result<Self, serde_json::Error> {
        let raw = serde_json::value::to_raw_value(&value)?;
        Ok(Self { name, value, raw })
    }
}

/// A harness's definitions in its order, and their texts joined by commas once, as the array
/// between its brackets holds them: a run of definitions next to each other is a slice of it.
#[derive(Debug, Default)]
pub struct Definitions {
    list: Vec<Definition>,
    joined: Bytes,
    /// Each definition's text in `joined`.
    spans: Vec<std::ops::Range<usize>>,
}

impl Definitions {
    pub fn new(list: Vec<Definition>) -> Self {
        let mut joined = Vec::new();
        let mut spans = Vec::with_capacity(list.len());
        for (n, definition) in list.iter().enumerate() {
            if n > 0 {
                joined.push(b',');
            }
            let start = joined.len();
            joined.extend_from_slice(definition.raw.get().as_bytes());
            spans.push(start..joined.len());
        }
        Self {
            list,
            joined: crate::harness::sized(joined),
            spans,
        }
    }

    pub fn iter(&self) -> std::slice::Iter<'_, Definition> {
        self.list.iter()
    }

    /// The definitions `offer` picks, in order, with their text as slices of `joined`: one per
    /// run of picked definitions next to each other.
    pub fn pick(&self, offer: impl Fn(&Definition) -> bool) -> (Vec<&Definition>, Vec<Bytes>) {
        let mut picked = Vec::new();
        let mut slices = Vec::new();
        let mut open: Option<std::ops::Range<usize>> = None;
        for (definition, span) in self.list.iter().zip(&self.spans) {
            if offer(definition) {
                picked.push(definition);
                open = Some(open.map_or(span.clone(), |run| run.start..span.end));
            } else if let Some(run) = open.take() {
                slices.push(self.joined.slice(run));
            }
        }
        slices.extend(open.map(|run| self.joined.slice(run)));
        (picked, slices)
    }
}

/// The harness's definitions offered, in its order, then the client's kept tools.
#[derive(Debug, Default)]
pub struct Offered<'a> {
    own: Vec<&'a Definition>,
    client: Vec<Box<RawValue>>,
    /// `own`'s text, as slices of the harness's joined text (`Definitions::pick`).
    own_text: Vec<Bytes>,
}

impl<'a> Offered<'a> {
    /// `own` and its text as `Definitions::pick` gives them.
    pub fn new(
        (own, own_text): (Vec<&'a Definition>, Vec<Bytes>),
        client: Vec<Box<RawValue>>,
    ) -> Self {
        Self {
            own,
            client,
            own_text,
        }
    }

    /// Whether a run of the text is sent as it is kept (`shared_runs`), not copied.
    fn shares(&self) -> bool {
        self.own_text.iter().any(|text| Runs::shares(text))
    }

    pub fn is_empty(&self) -> bool {
        self.own.is_empty() && self.client.is_empty()
    }

    /// Marks where the tools go in `body` (an object): they are written there by `Body`.
    pub fn slot(&self, body: &mut Value) {
        body["tools"] = Value::Null;
    }

    /// The tools as JSON trees, for a harness that reshapes them (Claude Code's Messages form)
    /// or reads them: the client's are parsed back from their text.
    pub fn into_values(self) -> Vec<Value> {
        let own = self.own.into_iter().map(|d| d.value.clone());
        let client = self
            .client
            .into_iter()
            .filter_map(|raw| serde_json::from_str(raw.get()).ok());
        own.chain(client).collect()
    }
}

impl Offered<'_> {
    /// About how many bytes `write` copies.
    fn copied_len(&self) -> usize {
        let own: usize = self
            .own_text
            .iter()
            .filter(|t| !Runs::shares(t))
            .map(Bytes::len)
            .sum();
        let client: usize = self.client.iter().map(|raw| raw.get().len()).sum();
        own + client + self.own_text.len() + self.client.len() + 2
    }

    fn write(&self, runs: &mut Runs) {
        runs.current().push(b'[');
        let mut first = true;
        for text in &self.own_text {
            if !std::mem::take(&mut first) {
                runs.current().push(b',');
            }
            runs.share(text);
        }
        for raw in &self.client {
            if !std::mem::take(&mut first) {
                runs.current().push(b',');
            }
            runs.current().extend_from_slice(raw.get().as_bytes());
        }
        runs.current().push(b']');
    }
}

/// A JSON string assembled from pieces: those known at start-up escaped once (`escape`), the
/// rest escaped as they are pushed. JSON escaping is per character, so the escape of a
/// concatenation is the concatenation of the escapes.
///
/// Long pieces the harness keeps (escaped once, the same on every request) are not copied in:
/// `push_kept` notes where each goes, and the body sends it as a run of its own.
#[derive(Debug, Default)]
pub struct JsonText {
    /// The escaped contents, without the quotes, but for the kept pieces.
    escaped: Vec<u8>,
    /// The kept pieces, each with the length of `escaped` it follows.
    kept: Vec<(usize, Bytes)>,
}

impl JsonText {
    pub fn with_capacity(bytes: usize) -> Self {
        Self {
            escaped: Vec::with_capacity(bytes),
            kept: Vec::new(),
        }
    }

    /// Appends text escaped by `escape` and kept by the harness (`Bytes` of its own).
    pub fn push_kept(&mut self, escaped: &Bytes) {
        self.kept.push((self.escaped.len(), escaped.clone()));
    }

    /// Appends text already escaped by `escape`.
    pub fn push_escaped(&mut self, escaped: &str) {
        self.escaped.extend_from_slice(escaped.as_bytes());
    }

    /// Appends text, escaping it now.
    pub fn push(&mut self, text: &str) {
        push_escaped(&mut self.escaped, text);
    }

    fn write(&self, runs: &mut Runs) {
        runs.current().push(b'"');
        let mut from = 0;
        for (at, kept) in &self.kept {
            runs.current().extend_from_slice(&self.escaped[from..*at]);
            runs.share(kept);
            from = *at;
        }
        runs.current().extend_from_slice(&self.escaped[from..]);
        runs.current().push(b'"');
    }
}

/// A pattern bound at start-up whose literal runs are escaped once and kept: filled into a
/// `JsonText`, only its holes' values are escaped and copied then (and its runs too short to be
/// worth a run of their own, `shared_runs`).
#[derive(Debug)]
pub struct KeptPattern {
    pieces: Vec<KeptPiece>,
}

#[derive(Debug)]
enum KeptPiece {
    /// Escaped.
    Text(Bytes),
    Hole(usize),
}

impl KeptPattern {
    pub fn new(pattern: &Pattern) -> Self {
        let pieces = pattern
            .segments()
            .map(|segment| match segment {
                PatternPiece::Text(text) => KeptPiece::Text(kept(text)),
                PatternPiece::Hole(index) => KeptPiece::Hole(index),
            })
            .collect();
        Self { pieces }
    }

    /// Appends the pattern with hole `i` filled with `holes[i]` (an absent value leaves it empty),
    /// as `Pattern::fill` would.
    pub fn fill_into(&self, out: &mut JsonText, holes: &[&str]) {
        for piece in &self.pieces {
            match piece {
                KeptPiece::Text(text) => out.push_kept(text),
                KeptPiece::Hole(index) => out.push(holes.get(*index).copied().unwrap_or_default()),
            }
        }
    }
}

/// `text` JSON-escaped, as bytes kept for every request (`JsonText::push_kept`).
pub fn kept(text: &str) -> Bytes {
    Bytes::copy_from_slice(escape(text).as_bytes())
}

/// `text` as it stands between the quotes of a JSON string.
pub fn escape(text: &str) -> String {
    let mut json = JsonText::default();
    json.push(text);
    String::from_utf8(json.escaped).unwrap_or_default()
}

/// A harness's body: its fields, the `tools` slot written from `tools`, and `system`, when given,
/// written as the first message (`{"role":"system","content":…}`) before the fields' messages.
#[derive(Clone, Copy)]
pub struct Body<'a> {
    fields: &'a Value,
    tools: &'a Offered<'a>,
    system: Option<&'a JsonText>,
}

/// No tools: what a body without a slot is written with.
static NO_TOOLS: Offered<'static> = Offered {
    own: Vec::new(),
    client: Vec::new(),
    own_text: Vec::new(),
};

impl<'a> Body<'a> {
    pub fn new(fields: &'a Value, tools: &'a Offered<'a>) -> Self {
        Self {
            fields,
            tools,
            system: None,
        }
    }

    /// A body whose fields carry no tools slot.
    pub fn plain(fields: &'a Value) -> Self {
        Self::new(fields, &NO_TOOLS)
    }

    pub fn with_system(mut self, system: &'a JsonText) -> Self {
        self.system = Some(system);
        self
    }

    /// The body's bytes, as runs: the kept tool set and system sections not copied.
    pub fn to_parts(&self) -> BodyParts {
        let system = self.system.map_or(0, |s| s.escaped.len());
        let kept = self.tools.shares() || self.system.is_some_and(|s| !s.kept.is_empty());
        let mut runs = Runs::new(system + self.tools.copied_len() + 4096, kept);
        let Value::Object(fields) = self.fields else {
            push_value(runs.current(), self.fields);
            return runs.finish();
        };
        runs.current().push(b'{');
        for (n, (key, value)) in fields.iter().enumerate() {
            if n > 0 {
                runs.current().push(b',');
            }
            push_string(runs.current(), key);
            runs.current().push(b':');
            match (key.as_str(), value, self.system) {
                ("tools", Value::Null, _) => self.tools.write(&mut runs),
                ("messages", Value::Array(messages), Some(system)) => {
                    write_messages(system, messages, &mut runs);
                }
                _ => push_value(runs.current(), value),
            }
        }
        runs.current().push(b'}');
        runs.finish()
    }
}

fn write_messages(system: &JsonText, messages: &[Value], runs: &mut Runs) {
    runs.current()
        .extend_from_slice(br#"[{"role":"system","content":"#);
    system.write(runs);
    runs.current().push(b'}');
    for message in messages {
        runs.current().push(b',');
        push_value(runs.current(), message);
    }
    runs.current().push(b']');
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_slot_is_written_in_the_body_s_key_order() {
        let own = Definition::new(
            "a".into(),
            json!({"function": {"name": "a", "description": "say \"hi\"\n"}}),
        )
        .expect("definition");
        let client =
            serde_json::value::to_raw_value(&json!({"function": {"name": "b"}})).expect("raw");
        let own = Definitions::new(vec![own]);
        let tools = Offered::new(own.pick(|_| true), vec![client]);
        let mut body = json!({"model": "m"});
        tools.slot(&mut body);
        body["after"] = json!(1);
        let text = Body::new(&body, &tools).to_parts().to_bytes();
        assert_eq!(
            String::from_utf8(text.to_vec()).expect("utf-8"),
            r#"{"model":"m","tools":[{"function":{"name":"a","description":"say \"hi\"\n"}},{"function":{"name":"b"}}],"after":1}"#
        );
        assert_eq!(tools.into_values().len(), 2);
    }

    fn definition(name: &str, description_len: usize) -> Definition {
        let description = "d".repeat(description_len);
        Definition::new(
            name.into(),
            json!({"type": "function", "function": {"name": name, "description": description}}),
        )
        .expect("definition")
    }

    #[test]
    fn picked_definitions_next_to_each_other_are_one_slice_and_a_long_one_is_not_copied() {
        let definitions = Definitions::new(vec![
            definition("a", 1500),
            definition("b", 1500),
            definition("c", 10),
            definition("d", 10),
            definition("e", 10),
        ]);
        let (picked, slices) = definitions.pick(|d| d.name != "c");
        let names: Vec<&str> = picked.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "d", "e"]);
        assert_eq!(slices.len(), 2, "a and b, then d and e");
        let tools = Offered::new((picked, slices), Vec::new());
        let mut body = json!({"model": "m"});
        tools.slot(&mut body);
        let written = Body::new(&body, &tools).to_parts();
        let expected = json!({"model": "m", "tools": [
            definitions.list[0].value, definitions.list[1].value,
            definitions.list[3].value, definitions.list[4].value]});
        assert_eq!(
            written.to_bytes(),
            serde_json::to_vec(&expected).expect("json")
        );
        let shared = written
            .parts()
            .iter()
            .filter(|run| definitions.joined.as_ptr_range().contains(&run.as_ptr()))
            .count();
        assert_eq!(
            shared, 1,
            "a and b (over 2 KiB) are the harness's own bytes; d and e copied"
        );
    }

    #[test]
    fn a_body_without_a_slot_is_written_as_serde_json_writes_it() {
        let body = json!({"model": "m", "tools": [1], "messages": [{"role": "user", "content": "é\u{1}\"\\"}]});
        let text = Body::plain(&body).to_parts().to_bytes();
        assert_eq!(text, serde_json::to_vec(&body).expect("json"));
    }

    #[test]
    fn the_system_text_from_escaped_kept_and_raw_pieces_is_the_first_message() {
        let fixed = escape("Line \"one\"\n\t");
        let long = "A long fixed section, \"quoted\".\n".repeat(100);
        let kept = Bytes::from(escape(&long));
        let mut system = JsonText::default();
        system.push_escaped(&fixed);
        system.push_kept(&kept);
        system.push("cwd: C:\\w\u{7f}\u{2028}é");
        let body =
            json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": true});
        let written = Body::plain(&body).with_system(&system).to_parts();
        assert_eq!(written.parts().len(), 3, "before, the kept section, after");
        assert_eq!(written.parts()[1].as_ptr(), kept.as_ptr(), "not copied");
        let text = written.to_bytes();
        let expected = json!({"model": "m", "messages": [
            {"role": "system", "content": format!("Line \"one\"\n\t{long}cwd: C:\\w\u{7f}\u{2028}é")},
            {"role": "user", "content": "hi"}], "stream": true});
        assert_eq!(text, serde_json::to_vec(&expected).expect("json"));
    }
}
