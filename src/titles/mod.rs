//! Conversation titles: the title request, sanitizing, storage and the live stream.

pub mod request;
pub mod sanitize;
