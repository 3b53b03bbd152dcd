//! Conversation titles (docs/titles.md), one consumer of conversation memory (`memory`: who a
//! conversation is, what was seen of it, the anchors of id-less clients): which turn gets one
//! (`service`) and when,
//! relative to its answer (`turn`: a chat turn's claims and the order policy); what a title is
//! made from (`input`) and the work order a claim gives its task (`job`; the title request itself
//! is the turn's harness's, `Harness::title_request`); its answer (`answer`), the sanitizer
//! (`sanitize`), records (`store`), titles in progress (`live` here, `follow` elsewhere, `bus`
//! between processes), outcomes waiting for the store (`outbox`) or batched on their way to it
//! (`writer`), clients that title themselves on a thread of their own (`threads`) and the
//! service's life around requests (`upkeep`). Also `breaker` (first turns stop waiting on a store
//! that left a claim unanswered) and `observe` (a client's own title stream, teed). An exchange
//! title gets its answer from `memory::answer_witness`. Must not: block or fail the chat answer.

mod answer;
mod breaker;
pub mod bus;
pub mod follow;
pub mod input;
pub mod job;
pub mod live;
pub mod observe;
pub mod outbox;
pub mod sanitize;
pub mod service;
mod slots;
pub mod store;
pub mod threads;
pub mod turn;
pub mod upkeep;
pub mod writer;

pub use job::{JobRequest, TitleJob, TitleRequest, TitleWriter};
pub use service::{Started, TitleService};
pub use turn::{AfterAnswer, TitleTurn, TurnInfo};
