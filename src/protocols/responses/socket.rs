//! Responses over WebSocket, its wire part (OpenAI's WebSocket mode, what Codex 0.171 speaks when
//! `supports_websockets` is on): a client message read (`read`: a `response.create`, whose fields
//! are a Responses request body, or Codex's `response.processed` acknowledgement), the
//! connection's chain (`Chain`: the last response's whole input and output, so that a
//! `previous_response_id` naming it is expanded into the whole input the HTTP front takes), the
//! answer to a `generate: false` warm-up (`prewarmed`), the end of an answer as its events tell it
//! (`finished`), and the error event (`error_event`).
//!
//! Pure: no I/O, no clock (the warm-up's `Stamp` is the caller's). Fields this front does not act
//! on are carried as the client sent them, raw; an input item is never parsed here (the HTTP
//! front's parse reads the expanded body).

use std::collections::BTreeMap;

use bytes::Bytes;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::Stamp;
use super::render::{ResponseRenderer, ToolKinds};
use crate::error::ProxyError;
use crate::protocols::{AnswerEvent, FinishReason, Renderer};

/// A message's fields, each as the client wrote it.
type Fields = BTreeMap<String, Box<RawValue>>;

/// One client message.
#[derive(Debug)]
pub enum Frame {
    Create(Create),
    /// `response.processed`: Codex saying it has read a response; nothing to answer.
    Processed,
}

/// A `response.create`: the body of a Responses request, told apart from what only the socket
/// means (`previous_response_id`, `generate`).
#[derive(Debug)]
pub struct Create {
    /// The request's fields other than `input`, `stream` and the socket's own, carried raw.
    fields: Fields,
    /// The new input items, raw (a text input becomes one user message).
    input: Vec<Box<RawValue>>,
    previous_response_id: Option<String>,
    /// `false`: a warm-up, answered with an empty response and sent nowhere.
    pub generate: bool,
}

/// Reads one text message. A bad one is a 400 naming what to fix; the connection stays usable.
pub fn read(text: &str) -> Result<Frame, ProxyError> {
    let mut fields: Fields =
        serde_json::from_str(text).map_err(|source| ProxyError::InvalidJson {
            context: "a WebSocket message must be one JSON object, `{\"type\":\"response.create\", …}`",
            source,
        })?;
    let kind: Option<String> = take(&mut fields, "type")?;
    match kind.as_deref() {
        Some("response.create") => {}
        Some("response.processed") => return Ok(Frame::Processed),
        other => {
            return Err(invalid(
                format!(
                    "unknown message type {}: this socket takes `response.create` (and `response.processed`)",
                    other.map_or_else(|| "(none)".to_owned(), |t| format!("`{t}`"))
                ),
                Some("type"),
                "invalid_message_type",
            ));
        }
    }
    let previous_response_id =
        take::<String>(&mut fields, "previous_response_id")?.filter(|id| !id.is_empty());
    let generate = take::<bool>(&mut fields, "generate")?.unwrap_or(true);
    // The socket is the stream: every answer is streamed, whatever the message says.
    fields.remove("stream");
    let input = match fields.remove("input") {
        None => Vec::new(),
        Some(raw) if raw.get().starts_with('"') => {
            let text: String = parse(&raw, "input")?;
            let message = serde_json::json!({"type": "message", "role": "user", "content": text});
            vec![to_raw(&message.to_string())]
        }
        Some(raw) => parse(&raw, "input")?,
    };
    Ok(Frame::Create(Create {
        fields,
        input,
        previous_response_id,
        generate,
    }))
}

fn take<T: serde::de::DeserializeOwned>(
    fields: &mut Fields,
    key: &'static str,
) -> Result<Option<T>, ProxyError> {
    fields
        .remove(key)
        .map(|raw| parse::<Option<T>>(&raw, key))
        .transpose()
        .map(Option::flatten)
}

fn parse<T: serde::de::DeserializeOwned>(
    raw: &RawValue,
    key: &'static str,
) -> Result<T, ProxyError> {
    serde_json::from_str(raw.get()).map_err(|e| {
        invalid(
            format!("invalid `{key}`: {e}"),
            Some(key),
            "invalid_request",
        )
    })
}

fn invalid(message: String, param: Option<&'static str>, code: &'static str) -> ProxyError {
    ProxyError::InvalidRequest {
        message,
        param,
        code,
    }
}

/// Only ever given JSON this module wrote (from values it read as JSON), so never `null`.
fn to_raw(json: &str) -> Box<RawValue> {
    RawValue::from_string(json.to_owned()).unwrap_or_default()
}

/// The connection's memory: the whole input of its last response and that response's output
/// items, under the response's id, while they fit the bounds (else nothing: a message naming it
/// gets `previous_response_not_found`, and Codex sends the whole input again). Dropped with the
/// connection.
#[derive(Debug)]
pub struct Chain {
    last: Option<Kept>,
    max_bytes: usize,
    max_items: usize,
}

#[derive(Debug)]
struct Kept {
    response_id: String,
    /// The items, raw JSON joined by commas (an array's inside).
    items: String,
    count: usize,
}

/// A `response.create` made whole: the request body for the HTTP front, and its whole input,
/// kept for the chain once the answer has ended.
#[derive(Debug)]
pub struct Turn {
    pub body: Bytes,
    pub generate: bool,
    /// The new items continue the last response (`previous_response_id`).
    pub continued: bool,
    /// The model asked for (what the warm-up's empty response names).
    pub model: String,
    items: String,
    count: usize,
}

impl Chain {
    /// A chain kept while its items take at most `max_bytes` bytes and number at most `max_items`.
    pub fn new(max_bytes: usize, max_items: usize) -> Self {
        Self {
            last: None,
            max_bytes,
            max_items,
        }
    }

    /// The message's whole input (the chain's, then the new items, when it names the last
    /// response), as the body of a streamed Responses request.
    pub fn expand(&self, create: Create) -> Result<Turn, ProxyError> {
        let Create {
            mut fields,
            input,
            previous_response_id,
            generate,
        } = create;
        let mut items = String::new();
        let mut count = 0;
        let continued = previous_response_id.is_some();
        if let Some(id) = previous_response_id {
            let Some(kept) = self.last.as_ref().filter(|kept| kept.response_id == id) else {
                return Err(invalid(
                    format!(
                        "previous response `{id}` not found: this connection keeps only its last response; send the whole input without `previous_response_id`"
                    ),
                    Some("previous_response_id"),
                    "previous_response_not_found",
                ));
            };
            items.push_str(&kept.items);
            count = kept.count;
        }
        append(&mut items, &mut count, &input);
        let model = fields
            .get("model")
            .and_then(|raw| serde_json::from_str::<String>(raw.get()).ok())
            .unwrap_or_default();
        fields.insert("input".to_owned(), to_raw(&format!("[{items}]")));
        fields.insert("stream".to_owned(), to_raw("true"));
        let body = serde_json::to_vec(&fields).map_err(|e| {
            invalid(
                format!("the message cannot be made a request: {e}"),
                None,
                "invalid_request",
            )
        })?;
        Ok(Turn {
            body: Bytes::from(body),
            generate,
            continued,
            model,
            items,
            count,
        })
    }

    /// Keeps `turn`'s input and its answer's output under the answer's id, in place of the last
    /// response, and says how many bytes that holds; forgets all (`None`) when they do not fit the
    /// bounds.
    pub fn keep(&mut self, turn: Turn, finished: Finished) -> Option<usize> {
        let Turn {
            mut items,
            mut count,
            ..
        } = turn;
        append(&mut items, &mut count, &finished.output);
        self.last = (items.len() <= self.max_bytes && count <= self.max_items).then_some(Kept {
            response_id: finished.response_id,
            items,
            count,
        });
        self.last.as_ref().map(|kept| kept.items.len())
    }

    /// Forgets the last response (its bytes could not be held).
    pub fn forget(&mut self) {
        self.last = None;
    }
}

fn append(items: &mut String, count: &mut usize, more: &[Box<RawValue>]) {
    for item in more {
        if *count > 0 {
            items.push(',');
        }
        items.push_str(item.get());
        *count += 1;
    }
}

/// A response's end as its last event says it: `response.completed` or `response.incomplete`
/// (a failed response ends no chain).
#[derive(Debug)]
pub struct Finished {
    pub response_id: String,
    pub output: Vec<Box<RawValue>>,
}

/// The answer's end, if `data` (one event's JSON) is it.
pub fn finished(data: &[u8]) -> Option<Finished> {
    #[derive(Deserialize)]
    struct Event {
        #[serde(rename = "type")]
        kind: String,
        response: Response,
    }
    #[derive(Deserialize)]
    struct Response {
        id: String,
        #[serde(default)]
        output: Vec<Box<RawValue>>,
    }
    let ends = |kind: &[u8]| memchr::memmem::find(data, kind).is_some();
    if !ends(b"response.completed") && !ends(b"response.incomplete") {
        return None;
    }
    let event: Event = serde_json::from_slice(data).ok()?;
    matches!(
        event.kind.as_str(),
        "response.completed" | "response.incomplete"
    )
    .then_some(Finished {
        response_id: event.response.id,
        output: event.response.output,
    })
}

/// The answer to a warm-up (`generate: false`): the events of an empty response, as the
/// front's renderer streams them (`response.created`, `response.in_progress`,
/// `response.completed`), SSE-framed like every answer.
pub fn prewarmed(turn: &Turn, stamp: Stamp) -> Vec<Bytes> {
    let mut renderer = ResponseRenderer::new(stamp, turn.model.clone(), ToolKinds::default());
    let mut out = Vec::new();
    renderer.start(&mut out);
    renderer.event(
        AnswerEvent::Finish {
            reason: FinishReason::Stop,
            usage: None,
        },
        &mut out,
    );
    out
}

/// An error answer (`status`, its body) as the socket's `error` event: `{"type":"error","status":
/// …,"error":{…}}`, the error object of an OpenAI-shaped body carried as it is (Codex reads
/// `status` and `error`), any other body's text as the message.
pub fn error_event(status: u16, body: &[u8]) -> String {
    #[derive(Deserialize)]
    struct Shaped {
        error: Box<RawValue>,
    }
    match serde_json::from_slice::<Shaped>(body) {
        Ok(shaped) if shaped.error.get().starts_with('{') => {
            format!(
                r#"{{"type":"error","status":{status},"error":{}}}"#,
                shaped.error.get()
            )
        }
        _ => {
            let text = String::from_utf8_lossy(body);
            let message: String = text.chars().take(2048).collect();
            serde_json::json!({"type": "error", "status": status, "error": {
                "type": if status >= 500 { "server_error" } else { "invalid_request_error" },
                "code": "upstream_error", "message": message, "param": null}})
            .to_string()
        }
    }
}

#[cfg(test)]
#[path = "socket_tests.rs"]
mod tests;
