//! One integration binary: the real server on 127.0.0.1:0 against a recording fake upstream.

#![allow(clippy::unwrap_used)]

mod support;

mod bridge;
mod calibrate;
mod conversations;
mod errors;
mod golden;
mod opencode;
mod passthrough;
mod routing;
mod secrets;
mod shutdown;
mod startup;
mod titles;
