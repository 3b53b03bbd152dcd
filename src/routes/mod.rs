//! Thin handlers: extract → call → map. Shared plumbing for proxied requests lives in `proxy`.

pub mod chat;
pub mod forward;
pub mod health;
pub mod proxy;
pub mod titles;
