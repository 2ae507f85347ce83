//! Who a worker is: the build identity it proves in `Worker.Hello`, the capabilities of each
//! role, and the bus names of worker services and clients.

use flysim_types::digest::sha256;
use flysim_types::trace::BuildIdentity;
use flysim_types::workers::WorkerRole;
use flysim_types::{Digest, Id};

/// The flysim version of this build.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The capability every agent worker advertises.
pub const AGENT_STEP: &str = "agent-step-v1";
/// The capability every environment worker advertises.
pub const WORLD_STEP: &str = "world-step-v1";
/// The capability of a worker whose views are pixels.
pub const PIXEL_OBSERVATION: &str = "pixel-observation-v1";

/// The build digest: SHA-256 of `flysim/build-v1` LF version LF session contract digest LF bus
/// contract digest LF. Two builds that disagree on a contract or a version refuse each other at
/// Hello; it names no path, time or machine.
#[must_use]
pub fn build_digest() -> Digest {
    let material = format!(
        "flysim/build-v1\n{VERSION}\n{}\n{}\n",
        flysim_types::schema::contract_digest().hex(),
        flysim_bus::wire::contract_digest().hex()
    );
    sha256(material.as_bytes())
}

/// The build identity recorded in run manifests.
#[must_use]
pub fn build_identity() -> BuildIdentity {
    BuildIdentity {
        version: VERSION.to_owned(),
        build_digest: build_digest(),
    }
}

/// The capabilities a worker of `role` advertises.
#[must_use]
pub fn capabilities(role: WorkerRole) -> Vec<Id> {
    let names: &[&str] = match role {
        WorkerRole::Agent => &[AGENT_STEP],
        WorkerRole::Environment => &[WORLD_STEP, PIXEL_OBSERVATION],
        WorkerRole::Coordinator => &[],
    };
    names.iter().filter_map(|n| Id::parse(n).ok()).collect()
}

/// The bus service (and client id) of a worker: `agent.<id>` or `environment.<id>`.
#[must_use]
pub fn service_name(role: WorkerRole, worker_id: &Id) -> String {
    let prefix = match role {
        WorkerRole::Agent => "agent",
        WorkerRole::Environment => "environment",
        WorkerRole::Coordinator => "coordinator",
    };
    format!("{prefix}.{worker_id}")
}
