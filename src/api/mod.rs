//! OpenAI wire types (serde only): the Chat Completions request, stream chunks and the error body.
//! No behaviour lives here; harnesses and routes give the types meaning.

pub mod chat;
pub mod error;
pub(crate) mod extra;
pub mod stream;
