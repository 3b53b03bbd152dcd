//! harness-proxy: an OpenAI Chat Completions proxy that runs any coding agent "as if it were
//! opencode" against any model server.
//!
//! # Layout
//! - `cli`, `config`, `telemetry`: start-up (commands, layered config, logging and metrics).
//! - `server`: router, middleware (request id, access log, concurrency limit), graceful `run`.
//! - `routes`: thin handlers — `chat` (the proxied call), `forward` (other `/v1/*`), `health`.
//! - `harness`: pure, synchronous request rewriting behind the `Harness` trait (`passthrough`,
//!   `opencode`); no I/O, no axum.
//! - `protocols`: client protocols (Chat, Responses, Messages) → Chat Completions and the answer
//!   events back into each protocol's stream.
//! - `response`: pure response shaping for rewritten requests (stream filter, fold, synthetic SSE).
//! - `upstream`: the only HTTP client of the model server.
//! - `auth`: credentials of a request, the admin token, inbound keys (hashed, constant time).
//! - `sse`: split-safe SSE codec. `api`: OpenAI wire types. `error`: `ProxyError` → OpenAI error.
//! - `prompts`, `template`: embedded prompt files, directory override, strict start-up rendering.
//! - `titles`: title sanitizing (and, with the title service, first-turn titles).
//! - `state`: `AppState`, everything handlers share.
//! - `calibrate`: the `calibrate opencode` capture endpoint and the prompt files it writes.
//! - `inspect`: the console's in-memory ring of recent requests (client and upstream bodies).

pub mod api;
pub mod auth;
pub mod calibrate;
pub mod cli;
pub mod clients;
pub mod config;
pub mod conversation;
pub mod error;
pub mod harness;
pub mod inspect;
pub mod prompts;
pub mod protocols;
pub mod routes;
pub mod server;
pub mod sse;
pub mod state;
pub mod telemetry;
pub mod template;
pub mod titles;
pub mod upstream;
