//! Why a gateway could not start. It knows the gateway's own resources (its address, its
//! thread and runtime), not the session it would have shown.

use std::net::SocketAddr;

/// Why [`crate::Gateway::start`] refused.
#[derive(Debug, thiserror::Error, miette::Diagnostic)]
pub enum GatewayError {
    /// The listening address could not be bound.
    #[error("the presentation gateway could not listen on {addr}: {source}")]
    #[diagnostic(
        code("FS0460"),
        help(
            "pick another address or port (port 0 lets the system choose a free one), or stop the program that holds it"
        )
    )]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// Its thread or its async runtime could not be started.
    #[error("the presentation gateway could not start its {what}: {source}")]
    #[diagnostic(
        code("FS0461"),
        help(
            "the system refused a thread or a file descriptor: check the process limits (threads, open files) and the free memory"
        )
    )]
    Start {
        /// `thread` or `runtime`.
        what: &'static str,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
}
