//! The gateway's integration tests: a test publisher on an in-memory router, the gateway
//! following it, and clients (raw WebSocket clients, plain HTTP requests, headless Chromium)
//! watching it.

#![allow(
    clippy::disallowed_methods,
    reason = "tests time the publisher and bound their waits with clocks of their own"
)]
#![allow(
    clippy::print_stderr,
    reason = "the measured figures (latencies, bytes held) and the explicit skip message, for the log"
)]
#![allow(
    clippy::cast_possible_truncation,
    clippy::cast_precision_loss,
    clippy::cast_sign_loss,
    reason = "test patterns and percentiles"
)]

mod browser;
mod publisher;
mod serving;
mod spectators;
