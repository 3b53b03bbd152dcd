//! Conversation titles (PRODUCT §4): which turn gets one (`identity`, `service`), the title request
//! (`request`), the sanitizer (`sanitize`), records (`store`) and titles in progress (`live`).

pub mod identity;
pub mod live;
pub mod observe;
pub mod request;
pub mod sanitize;
pub mod service;
pub mod store;

pub use service::{Started, TitleJob, TitleService};
