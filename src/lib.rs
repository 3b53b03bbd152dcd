//! harness-proxy: an OpenAI Chat Completions proxy that runs any coding agent "as if it were
//! opencode" against any model server.
//!
//! # Layout
//! - `cli`, `config`, `telemetry`: start-up (commands, layered config, logging and metrics).
//! - `server`: router, middleware (request id, access log, concurrency limit), graceful `run`.
//! - `routes`: thin handlers — `pipeline::serve` (the pipeline every protocol's route goes through),
//!   `inbound` (client bytes → model → harness), `answer`/`render` (the answer in the client's
//!   protocol), `forward` (other `/v1/*`), `health`, `titles`, `ui`.
//! - `conversation`: the protocol-neutral model every stage reads, and the answer events.
//! - `protocols`: one adapter per client protocol (Chat, Responses, Messages, Gemini): request → model,
//!   answer events → that protocol's stream or JSON; `chat` also reads the upstream's answer
//!   (`chunk`, `end`: the one reader of that wire, which `titles` and passthrough's watch share).
//! - `clients`: client dialects (tool alias profiles, contextual messages, quoting).
//! - `harness`: pure, synchronous request rebuilding behind the `Harness` trait (`passthrough`,
//!   `opencode`): model → upstream Chat Completions body; no I/O, no axum.
//! - `upstream`: the only HTTP client of the model server.
//! - `auth`: credentials of a request, the admin token, inbound keys (hashed, constant time).
//! - `sse`: split-safe SSE codec, no protocol's events. `api`: OpenAI wire types. `error`:
//!   `ProxyError` classified (status, code, kind, level), no axum; rendered once at the edge in
//!   a protocol's error shape (`routes::error_response`, OpenAI's by default).
//! - `prompts`, `template`: embedded prompt files, directory override, strict start-up rendering.
//! - `store`: the store backend `titles.store` names (memory, SQLite, Redis), opened once and
//!   shared by everything kept in it.
//! - `memory`: conversation memory: who a conversation is (`identity`, the `anchors` of id-less
//!   clients), what this process has seen of it (`known`, `recent`, `facts`) and what it must
//!   carry (`reasoning_memo`, fed by `answer_witness`), over the shared `store`.
//! - `titles`: first-turn titles, one consumer of `memory`: claims, title requests, the sanitizer,
//!   records (`titles::store`), live titles.
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
pub mod json_escape;
pub mod memory;
pub mod prompts;
pub mod protocols;
pub mod routes;
pub mod server;
pub mod sse;
pub mod state;
pub mod store;
pub mod telemetry;
pub mod template;
pub mod titles;
pub mod upstream;
