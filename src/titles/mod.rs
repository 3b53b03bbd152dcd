//! Conversation titles (PRODUCT §4): which turn gets one (`identity`, `service`), the title request
//! (`request`), the sanitizer (`sanitize`), records (`store`) and titles in progress (`live`);
//! conversations of clients that send no id (`anchors`, fed by `answer_tap`).

pub mod anchors;
pub mod answer_tap;
pub mod identity;
pub mod live;
pub mod observe;
pub mod request;
pub mod sanitize;
pub mod service;
pub mod store;

pub use service::{Started, TitleJob, TitleService};
