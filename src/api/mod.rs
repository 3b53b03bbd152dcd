//! OpenAI wire types (serde only): the Chat Completions request, stream chunks and the error body.
//! No behaviour lives here; harnesses and routes give the types meaning. `Text` is the one string
//! type of their own: an answer's text held in pieces as it is folded.

pub mod chat;
pub mod error;
pub(crate) mod extra;
pub mod stream;
pub mod text;
