//! A chat harness's upstream body, written as bytes with what is the same on every request
//! done once at start-up. DeepSeek-TUI offers 84 tool definitions and sends a 30 KB system text:
//! cloning the definitions as JSON trees, escaping their descriptions and its fixed system
//! sections again, and dropping the trees cost about as much as the rest of its rebuild (issue 31,
//! item 7). So its own definitions are serialized once and copied as text (`Offered`), and a
//! system text is assembled from sections escaped once and only its per-request parts escaped
//! (`JsonText`). Everything else in the body is written by serde_json as before.
//!
//! A body holds a `"tools": null` slot where the tools go (`Offered::slot`), so its key order stays
//! the harness's; `Body` writes the slot with these tools, and the system text, when given, as the
//! first message. Only the harness sets the slot's key, never a client, so it cannot be confused
//! with a client's value.

use serde_json::Value;
use serde_json::value::RawValue;

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

/// The harness's definitions offered, in its order, then the client's kept tools.
#[derive(Debug, Default)]
pub struct Offered<'a> {
    own: Vec<&'a Definition>,
    client: Vec<Box<RawValue>>,
}

impl<'a> Offered<'a> {
    pub fn new(own: Vec<&'a Definition>, client: Vec<Box<RawValue>>) -> Self {
        Self { own, client }
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
    fn text_len(&self) -> usize {
        let own: usize = self.own.iter().map(|d| d.raw.get().len()).sum();
        let client: usize = self.client.iter().map(|raw| raw.get().len()).sum();
        own + client + self.own.len() + self.client.len() + 2
    }

    fn write(&self, out: &mut Vec<u8>) {
        out.push(b'[');
        let texts = self.own.iter().map(|d| d.raw.get());
        let texts = texts.chain(self.client.iter().map(|raw| raw.get()));
        for (n, text) in texts.enumerate() {
            if n > 0 {
                out.push(b',');
            }
            out.extend_from_slice(text.as_bytes());
        }
        out.push(b']');
    }
}

/// A JSON string assembled from pieces: those known at start-up escaped once (`escape`), the
/// rest escaped as they are pushed. JSON escaping is per character, so the escape of a
/// concatenation is the concatenation of the escapes.
#[derive(Debug, Default)]
pub struct JsonText {
    /// The escaped contents, without the quotes.
    escaped: Vec<u8>,
}

impl JsonText {
    pub fn with_capacity(bytes: usize) -> Self {
        Self {
            escaped: Vec::with_capacity(bytes),
        }
    }

    /// Appends text already escaped by `escape`.
    pub fn push_escaped(&mut self, escaped: &str) {
        self.escaped.extend_from_slice(escaped.as_bytes());
    }

    /// Appends text, escaping it now.
    pub fn push(&mut self, text: &str) {
        let start = self.escaped.len();
        // Writing a string into a Vec cannot fail; it writes `"…"`, whose quotes are dropped.
        let _ = serde_json::to_writer(&mut self.escaped, text);
        self.escaped.pop();
        self.escaped.remove(start);
    }

    fn write(&self, out: &mut Vec<u8>) {
        out.push(b'"');
        out.extend_from_slice(&self.escaped);
        out.push(b'"');
    }
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

    pub fn to_vec(&self) -> Result<Vec<u8>, serde_json::Error> {
        let system = self.system.map_or(0, |s| s.escaped.len());
        let mut out = Vec::with_capacity(system + self.tools.text_len() + 4096);
        let Value::Object(fields) = self.fields else {
            serde_json::to_writer(&mut out, self.fields)?;
            return Ok(out);
        };
        out.push(b'{');
        for (n, (key, value)) in fields.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            serde_json::to_writer(&mut out, key)?;
            out.push(b':');
            match (key.as_str(), value, self.system) {
                ("tools", Value::Null, _) => self.tools.write(&mut out),
                ("messages", Value::Array(messages), Some(system)) => {
                    write_messages(system, messages, &mut out)?;
                }
                _ => serde_json::to_writer(&mut out, value)?,
            }
        }
        out.push(b'}');
        Ok(out)
    }
}

fn write_messages(
    system: &JsonText,
    messages: &[Value],
    out: &mut Vec<u8>,
) -> Result<(), serde_json::Error> {
    out.extend_from_slice(br#"[{"role":"system","content":"#);
    system.write(out);
    out.push(b'}');
    for message in messages {
        out.push(b',');
        serde_json::to_writer(&mut *out, message)?;
    }
    out.push(b']');
    Ok(())
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
        let tools = Offered::new(vec![&own], vec![client]);
        let mut body = json!({"model": "m"});
        tools.slot(&mut body);
        body["after"] = json!(1);
        let text = Body::new(&body, &tools).to_vec().expect("a body");
        assert_eq!(
            String::from_utf8(text).expect("utf-8"),
            r#"{"model":"m","tools":[{"function":{"name":"a","description":"say \"hi\"\n"}},{"function":{"name":"b"}}],"after":1}"#
        );
        assert_eq!(tools.into_values().len(), 2);
    }

    #[test]
    fn a_body_without_a_slot_is_written_as_serde_json_writes_it() {
        let body = json!({"model": "m", "tools": [1], "messages": [{"role": "user", "content": "é\u{1}\"\\"}]});
        let text = Body::plain(&body).to_vec().expect("a body");
        assert_eq!(text, serde_json::to_vec(&body).expect("json"));
    }

    #[test]
    fn the_system_text_from_escaped_and_raw_pieces_is_the_first_message() {
        let fixed = escape("Line \"one\"\n\t");
        let mut system = JsonText::default();
        system.push_escaped(&fixed);
        system.push("cwd: C:\\w\u{7f}\u{2028}é");
        let body =
            json!({"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": true});
        let text = Body::plain(&body)
            .with_system(&system)
            .to_vec()
            .expect("a body");
        let expected = json!({"model": "m", "messages": [
            {"role": "system", "content": "Line \"one\"\n\tcwd: C:\\w\u{7f}\u{2028}é"},
            {"role": "user", "content": "hi"}], "stream": true});
        assert_eq!(text, serde_json::to_vec(&expected).expect("json"));
    }
}
