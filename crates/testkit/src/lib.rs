//! Test support shared by the integration suites of the bus and the crates above it.
//!
//! A suite starts a [`Bus`] (a router on a private scratch directory) for one [`Transport`],
//! connects clients through it, records what a scenario observes as a [`Trace`], and declares
//! the scenario with [`both!`], which runs it on every transport and requires identical traces.
//!
//! - `bus`: the transports and the router-plus-scratch-root harness with its client builders.
//! - `scratch`: a private directory removed when dropped.
//! - `trickle`: a stream wrapper that moves one byte per read and write.
//! - `settle`: bounded waiting on the router's stats.
//! - `browser`: a small WebDriver client that drives headless Chromium, for page tests.
//! - [`websocket`]: a raw WebSocket client of the watch gateway that can misbehave on purpose.
//!
//! It knows the bus's public API and the WebDriver protocol only: no session RPC, no payload meaning. It is a
//! dev-dependency, never linked into a shipped binary, so a failed setup step panics with the
//! step's name instead of returning an error.

mod browser;
mod bus;
mod scratch;
mod settle;
mod trickle;
pub mod websocket;

pub use browser::{
    Browser, BrowserError, CHROMEDRIVER, CHROMIUM, WATCH_NOT_BLANK, WATCH_STEP_AND_DIGEST,
};
pub use bus::{Bus, Transport};
pub use scratch::ScratchDir;
pub use settle::settle;
pub use trickle::{Stream, Trickle};

/// The behaviour trace of a scenario: what it observed, in program order.
pub type Trace = Vec<String>;

/// A current-thread runtime with time and I/O enabled, for tests that drive one by hand.
///
/// # Panics
///
/// If the runtime cannot be built.
#[must_use]
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("build a current-thread runtime")
}

/// Declares a `#[tokio::test]` named `$name` that runs the scenario `$scenario` (an
/// `async fn(Transport) -> Trace`) on every transport in [`Transport::ALL`] and requires the
/// traces to be non-empty and identical.
#[macro_export]
macro_rules! both {
    ($name:ident, $scenario:path) => {
        #[tokio::test]
        async fn $name() {
            let memory = $scenario($crate::Transport::Memory).await;
            let link = $scenario($crate::Transport::Link).await;
            let unix = $scenario($crate::Transport::Unix).await;
            assert!(!memory.is_empty(), "the scenario recorded no trace");
            assert_eq!(
                memory, link,
                "the behaviour traces differ between the byte pipe and the link"
            );
            assert_eq!(
                memory, unix,
                "the behaviour traces differ between transports"
            );
        }
    };
}
