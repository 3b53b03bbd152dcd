//! Conversation titles (docs/titles.md): which turn gets one (`identity`, `service`) and when,
//! relative to its answer (`turn`: a chat turn's claims and the order policy); what a title is
//! made from (`input`) and the work order a claim gives its task (`job`; the title request itself
//! is the turn's harness's, `Harness::title_request`); its answer (`answer`), the sanitizer
//! (`sanitize`), records (`store`), titles in progress (`live` here, `follow` elsewhere, `bus`
//! between processes), outcomes waiting for the store (`outbox`) or batched on their way to it
//! (`writer`), titles reused for the same words (`recent`), clients that title themselves on a
//! thread of their own (`threads`) and the service's life around requests (`upkeep`);
//! conversations of clients that send no id (`anchors`, fed by `answer_tap`, which also hands an
//! exchange title its answer). Also `facts` (what a turn tells the service), `known`
//! (conversations known to have a record), `breaker` (first turns stop waiting on a store that
//! left a claim unanswered) and `observe` (a client's own title stream, teed). Must not: block or
//! fail the chat answer.

pub mod anchors;
mod answer;
pub mod answer_tap;
mod breaker;
pub mod bus;
pub mod facts;
pub mod follow;
pub mod identity;
pub mod input;
pub mod job;
pub mod known;
pub mod live;
pub mod observe;
pub mod outbox;
pub mod recent;
pub mod sanitize;
pub mod service;
pub mod store;
pub mod threads;
pub mod turn;
pub mod upkeep;
pub mod writer;

pub use job::{JobRequest, TitleJob, TitleRequest, TitleWriter};
pub use service::{Started, TitleService};
pub use turn::{AfterAnswer, TitleTurn, TurnInfo};
