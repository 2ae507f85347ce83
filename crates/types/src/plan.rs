//! The launch plan: what a resolved composition names, every input by digest.
//!
//! A plan is produced by `flysim-compose` from a composition and written as RFC 8785 canonical
//! JSON. Three digests stamp it:
//!
//! - `planDigest`: SHA-256 of the canonical JSON of the plan *without* the `planDigest` field
//!   ([`LaunchPlan::compute_digest`]); [`LaunchPlan::validate`] refuses a plan whose stamp does
//!   not match its content. A plan is built from its [`PlanBody`] (every other field), whose
//!   canonical JSON is exactly those bytes: [`PlanBody::seal`] hashes the body and only then
//!   builds the plan, so no plan ever holds a digest that is not its own.
//! - `compositionDigest`: SHA-256 of the canonical JSON of `sources`, the list of
//!   `{"path", "sha256"}` of the composition file (path `""`) and every included file (its path
//!   relative to the composition's directory, `/`-separated), in load order
//!   ([`composition_digest`]). No absolute path, file time or file name of the root enters it.
//! - `contractDigest`: [`crate::schema::contract_digest`], the canonical schema set.
//!
//! Nothing in a plan depends on the machine that resolved it: no absolute path, no environment
//! variable, no clock, no core count.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::digest::sha256;
use crate::error::ContractError;
use crate::json;
use crate::limits::{MAX_AGENTS, MAX_ASSETS, MAX_PORTS, MAX_WORKER_THREADS};
use crate::memory::{MEMORY_TASK, MemoryTaskPlan};
use crate::payload::{Nullable, Payload, check, required_nullable};
use crate::rational::RationalNs;
use crate::scalar::{Digest, Id, U64};
pub use crate::workers::{AssetRef, AxisDecl, AxisRange, ControllerSchema};

/// The plan format this build writes and reads.
pub const FORMAT_VERSION: u32 = 1;

/// A resolved composition: everything a launcher needs, every input named by digest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LaunchPlan {
    /// The plan format, [`FORMAT_VERSION`].
    pub format_version: u32,
    /// SHA-256 of the canonical plan without this field.
    pub plan_digest: Digest,
    /// SHA-256 of the canonical `sources` list (the composition and its includes).
    pub composition_digest: Digest,
    /// The contract digest of the build that resolved the plan.
    pub contract_digest: Digest,
    /// The composition's `name`.
    pub name: String,
    /// The composition's `description` (empty when it has none).
    pub description: String,
    /// The composition file (path `""`) and every included file, in load order.
    pub sources: Vec<SourceFile>,
    /// The seed-derivation algorithm, `seed-derivation-v1`.
    pub seed_derivation: Id,
    /// The master seed every derived agent seed comes from.
    pub master_seed: U64,
    /// Whether agents carry hand-selected seeds (workers-v1 §2) instead of derived ones.
    pub explicit_seeds: bool,
    /// Every asset the plan uses, sorted by id.
    pub assets: Vec<PlanAsset>,
    /// Every profile, sorted by id.
    pub profiles: Vec<PlanProfile>,
    /// The one environment (world) of the run.
    pub environment: PlanEnvironment,
    /// The agents, sorted by id.
    pub agents: Vec<PlanAgent>,
    /// The task's identity.
    pub task: Id,
    /// The declared memory task (`memory-v1`): its variables, rewards and end conditions; null
    /// for every other task.
    #[serde(deserialize_with = "required_nullable")]
    #[schemars(with = "Nullable<MemoryTaskPlan>")]
    pub memory_task: Option<MemoryTaskPlan>,
    /// The executor's identity.
    pub executor: Id,
    /// How the run is driven.
    pub run: PlanRun,
}

/// One source file of a composition and the SHA-256 of its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceFile {
    /// `""` for the composition itself, else the path relative to its directory.
    pub path: String,
    /// SHA-256 of the file's bytes (of the composition itself, without the bytes of its `sweep`
    /// block, so every member of a sweep names the same source).
    pub sha256: Digest,
}

/// An asset (workers-v1 §1 `AssetRef`) and where the launcher finds its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PlanAsset {
    /// The asset's id in the composition.
    pub id: Id,
    /// SHA-256 of its bytes.
    pub digest: Digest,
    /// Its size in bytes.
    pub byte_length: U64,
    /// Its format, e.g. `gb`.
    pub format: Id,
    /// The path as written in the composition (relative to the file that declares it), or null
    /// when the bytes come from the local asset registry by digest.
    #[serde(deserialize_with = "required_nullable")]
    #[schemars(with = "Nullable<String>")]
    pub path: Option<String>,
}

/// A profile: the model an agent runs, its parameters and its assets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanProfile {
    /// The profile's id.
    pub id: Id,
    /// The model kind.
    pub model: ModelKind,
    /// Parameters by name (strings, numbers, booleans).
    pub parameters: Map<String, Value>,
    /// Ids of the assets the profile uses, in declaration order.
    pub assets: Vec<Id>,
}

/// The model kinds a profile may name.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum ModelKind {
    /// The synthetic agent (deterministic, no neurons), for tests and the counter arena.
    Synthetic,
    /// The LIF spiking network.
    Lif,
}

impl ModelKind {
    /// Every kind, with its spelling.
    pub const ALL: [(&'static str, Self); 2] = [("synthetic", Self::Synthetic), ("lif", Self::Lif)];
}

/// The backend names of the launch-plan contract, each with its schema description.
///
/// This is contract vocabulary, not behaviour: a plan may name only these backends, and the
/// list is part of the plan's JSON Schema, so `contractDigest` changes when a backend is added
/// (two builds that know different backends refuse each other's plans). What each backend is
/// and does lives in its own crate's `BackendSpec`; a test in the binary checks that the
/// registered specs are exactly these names.
pub const CONTRACT_BACKENDS: [(&str, &str); 3] = [
    ("arena", "The synthetic counter arena (compiled in)."),
    ("binjgb", "The binjgb Game Boy core."),
    ("dolphin", "A Dolphin GameCube process."),
];

/// The names of [`CONTRACT_BACKENDS`].
const BACKEND_NAMES: [&str; 3] = [
    CONTRACT_BACKENDS[0].0,
    CONTRACT_BACKENDS[1].0,
    CONTRACT_BACKENDS[2].0,
];

/// The name of an environment backend: one of the contract's [`CONTRACT_BACKENDS`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(transparent)]
pub struct BackendName(&'static str);

impl BackendName {
    /// The contract's backend called `name`.
    ///
    /// # Errors
    ///
    /// When the contract names no such backend.
    pub fn parse(name: &str) -> Result<Self, ContractError> {
        CONTRACT_BACKENDS
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(n, _)| Self(n))
            .ok_or_else(|| ContractError::Shape {
                path: String::new(),
                message: format!(
                    "unknown backend {name:?}: the contract knows {}",
                    BACKEND_NAMES.join(", ")
                ),
            })
    }

    /// The spelling used in compositions and plans.
    #[must_use]
    pub fn as_str(&self) -> &'static str {
        self.0
    }
}

impl std::fmt::Display for BackendName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl<'de> Deserialize<'de> for BackendName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Self::parse(&text).map_err(|_| serde::de::Error::unknown_variant(&text, &BACKEND_NAMES))
    }
}

impl JsonSchema for BackendName {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Backend".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let one_of: Vec<serde_json::Value> = CONTRACT_BACKENDS
            .iter()
            .map(|(name, description)| {
                serde_json::json!({"description": description, "type": "string", "const": name})
            })
            .collect();
        schemars::json_schema!({
            "description": "The environment backends flysim knows.",
            "oneOf": one_of,
        })
    }
}

/// The world of the run: its backend, pinned identity, content and controller ports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PlanEnvironment {
    /// The environment's id.
    pub id: Id,
    /// The backend.
    pub backend: BackendName,
    /// The backend's pinned identity: the arena world (`counter-v1`), the binjgb source
    /// revision (a 40-hex commit) or the Dolphin version string.
    pub identity: String,
    /// SHA-256 of the canonical `{"backend", "identity"}`.
    pub backend_digest: Digest,
    /// The content asset's id (ROM or disc image), or null for the arena.
    #[serde(deserialize_with = "required_nullable")]
    #[schemars(with = "Nullable<Id>")]
    pub content: Option<Id>,
    /// One environment step.
    pub step_duration: RationalNs,
    /// The controller ports, in declaration order (the descriptor port order).
    pub ports: Vec<PlanPort>,
}

impl PlanEnvironment {
    /// The digest of the environment's effective configuration: SHA-256 of its canonical plan
    /// entry (what an environment worker is built for, and checks its descriptor against).
    ///
    /// # Errors
    ///
    /// When the entry cannot be written canonically (never for a validated plan).
    pub fn config_digest(&self) -> Result<Digest, ContractError> {
        Ok(sha256(crate::payload::to_canonical(self)?.as_bytes()))
    }
}

/// One controller port and its schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PlanPort {
    /// The port's id.
    pub port_id: Id,
    /// Its controller schema.
    pub controls: ControllerSchema,
}

/// Where an agent's seed comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SeedSource {
    /// Derived by the plan's seed-derivation algorithm from the master seed and agent id.
    Derived,
    /// Hand-selected in the composition (`explicit-seeds #true`).
    Explicit,
}

/// One agent: its profile, port binding, thread allocation and seed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PlanAgent {
    /// The agent's id.
    pub agent_id: Id,
    /// The profile it runs.
    pub profile: Id,
    /// The controller port it drives.
    pub port: Id,
    /// Worker threads allocated to it.
    #[schemars(range(min = 1, max = 4096))]
    pub threads: u32,
    /// The seed handed to `Agent.Initialize`.
    pub seed: i32,
    /// Whether the seed was derived or hand-selected.
    pub seed_source: SeedSource,
    /// The derivation material (null for an explicit seed).
    #[serde(deserialize_with = "required_nullable")]
    #[schemars(with = "Nullable<String>")]
    pub material: Option<String>,
    /// SHA-256 of the material (null for an explicit seed).
    #[serde(deserialize_with = "required_nullable")]
    #[schemars(with = "Nullable<Digest>")]
    pub material_digest: Option<Digest>,
}

/// How the run is driven.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PlanRun {
    /// Environment steps to run.
    pub steps: U64,
    /// Where the workers run.
    pub mode: RunMode,
    /// How they talk.
    pub transport: Transport,
    /// Checkpoint every N committed steps, or null for none.
    #[serde(deserialize_with = "required_nullable")]
    #[schemars(with = "Nullable<U64>")]
    pub checkpoint_every: Option<U64>,
    /// The thread budget: the agents' threads add up to at most this.
    #[schemars(range(min = 1, max = 4096))]
    pub max_threads: u32,
}

/// Where workers run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RunMode {
    /// Every worker in the coordinator's thread.
    InProcess,
    /// One thread per worker.
    Thread,
    /// One process per worker.
    Process,
}

impl RunMode {
    /// Every mode, with its spelling.
    pub const ALL: [(&'static str, Self); 3] = [
        ("in-process", Self::InProcess),
        ("thread", Self::Thread),
        ("process", Self::Process),
    ];
}

/// How workers talk over Flybus.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Transport {
    /// In-memory queues (one process only).
    Memory,
    /// Unix-domain sockets.
    Unix,
}

impl Transport {
    /// Every transport, with its spelling.
    pub const ALL: [(&'static str, Self); 2] = [("memory", Self::Memory), ("unix", Self::Unix)];
}

/// The composition digest: SHA-256 of the canonical JSON of `sources` (see the module docs).
///
/// # Errors
///
/// Never in practice (the list holds only strings); the signature keeps canonicalisation typed.
pub fn composition_digest(sources: &[SourceFile]) -> Result<Digest, ContractError> {
    Ok(sha256(crate::payload::to_canonical(sources)?.as_bytes()))
}

/// The backend digest: SHA-256 of the canonical `{"backend", "identity"}`.
///
/// # Errors
///
/// Never in practice.
pub fn backend_digest(backend: &BackendName, identity: &str) -> Result<Digest, ContractError> {
    let value = serde_json::json!({ "backend": backend, "identity": identity });
    Ok(sha256(&json::to_canonical_bytes(&value)?))
}

/// The digest of a controller declaration: SHA-256 of the canonical
/// `{"id", "version", "buttons", "axes"}`.
///
/// # Errors
///
/// When an axis' neutral value is not finite.
pub fn controller_digest(
    id: &Id,
    version: u32,
    buttons: &[Id],
    axes: &[AxisDecl],
) -> Result<Digest, ContractError> {
    let value = serde_json::json!({
        "id": id, "version": version, "buttons": buttons, "axes": axes,
    });
    Ok(sha256(&json::to_canonical_bytes(&value)?))
}

fn shape(e: serde_json::Error) -> ContractError {
    ContractError::Shape {
        path: String::new(),
        message: e.to_string(),
    }
}

/// A launch plan before it is sealed: every field of [`LaunchPlan`] but `planDigest`, the same
/// names and values. Its canonical JSON is the plan's canonical JSON without `planDigest`, the
/// bytes that digest hashes; [`PlanBody::seal`] computes it and builds the plan around it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanBody {
    /// The plan format, [`FORMAT_VERSION`].
    pub format_version: u32,
    /// SHA-256 of the canonical `sources` list (the composition and its includes).
    pub composition_digest: Digest,
    /// The contract digest of the build that resolved the plan.
    pub contract_digest: Digest,
    /// The composition's `name`.
    pub name: String,
    /// The composition's `description` (empty when it has none).
    pub description: String,
    /// The composition file (path `""`) and every included file, in load order.
    pub sources: Vec<SourceFile>,
    /// The seed-derivation algorithm, `seed-derivation-v1`.
    pub seed_derivation: Id,
    /// The master seed every derived agent seed comes from.
    pub master_seed: U64,
    /// Whether agents carry hand-selected seeds (workers-v1 §2) instead of derived ones.
    pub explicit_seeds: bool,
    /// Every asset the plan uses, sorted by id.
    pub assets: Vec<PlanAsset>,
    /// Every profile, sorted by id.
    pub profiles: Vec<PlanProfile>,
    /// The one environment (world) of the run.
    pub environment: PlanEnvironment,
    /// The agents, sorted by id.
    pub agents: Vec<PlanAgent>,
    /// The task's identity.
    pub task: Id,
    /// The declared memory task; `None` for every other task.
    pub memory_task: Option<MemoryTaskPlan>,
    /// The executor's identity.
    pub executor: Id,
    /// How the run is driven.
    pub run: PlanRun,
}

/// SHA-256 of the canonical JSON of a plan's fields other than `planDigest`, as a JSON object.
fn body_digest(body: &Value) -> Result<Digest, ContractError> {
    Ok(sha256(&json::to_canonical_bytes(body)?))
}

impl PlanBody {
    /// The plan: this body stamped with its `planDigest`, the SHA-256 of its canonical JSON.
    ///
    /// # Errors
    ///
    /// When the body holds a value canonical JSON cannot represent (a non-finite parameter).
    pub fn seal(self) -> Result<LaunchPlan, ContractError> {
        let plan_digest = body_digest(&serde_json::to_value(&self).map_err(shape)?)?;
        // Every field named: a field added to one type and not the other does not compile.
        let Self {
            format_version,
            composition_digest,
            contract_digest,
            name,
            description,
            sources,
            seed_derivation,
            master_seed,
            explicit_seeds,
            assets,
            profiles,
            environment,
            agents,
            task,
            memory_task,
            executor,
            run,
        } = self;
        Ok(LaunchPlan {
            format_version,
            plan_digest,
            composition_digest,
            contract_digest,
            name,
            description,
            sources,
            seed_derivation,
            master_seed,
            explicit_seeds,
            assets,
            profiles,
            environment,
            agents,
            task,
            memory_task,
            executor,
            run,
        })
    }
}

impl LaunchPlan {
    /// The plan without its `planDigest`: to change a plan, change its body and seal it again.
    #[must_use]
    pub fn into_body(self) -> PlanBody {
        let Self {
            format_version,
            plan_digest: _,
            composition_digest,
            contract_digest,
            name,
            description,
            sources,
            seed_derivation,
            master_seed,
            explicit_seeds,
            assets,
            profiles,
            environment,
            agents,
            task,
            memory_task,
            executor,
            run,
        } = self;
        PlanBody {
            format_version,
            composition_digest,
            contract_digest,
            name,
            description,
            sources,
            seed_derivation,
            master_seed,
            explicit_seeds,
            assets,
            profiles,
            environment,
            agents,
            task,
            memory_task,
            executor,
            run,
        }
    }

    /// SHA-256 of the canonical JSON of this plan without its `planDigest` field.
    ///
    /// # Errors
    ///
    /// When the plan holds a value canonical JSON cannot represent (a non-finite parameter).
    pub fn compute_digest(&self) -> Result<Digest, ContractError> {
        let mut value = serde_json::to_value(self).map_err(shape)?;
        if let Value::Object(map) = &mut value {
            map.remove("planDigest");
        }
        body_digest(&value)
    }

    /// The plan's canonical JSON text (what `flysim plan` prints).
    ///
    /// # Errors
    ///
    /// As [`Self::compute_digest`].
    pub fn to_canonical(&self) -> Result<String, ContractError> {
        crate::payload::to_canonical(self)
    }
}

impl Payload for LaunchPlan {
    fn validate(&self) -> Result<(), ContractError> {
        if self.format_version != FORMAT_VERSION {
            return Err(ContractError::rule(
                "formatVersion",
                format!("this build reads launch plans of format {FORMAT_VERSION}"),
            ));
        }
        check::at_most(&self.agents, MAX_AGENTS, "agents", "agents")?;
        check::unique_by(&self.agents, |a| &a.agent_id, "agents", "agent id")?;
        check::at_most(&self.assets, MAX_ASSETS, "assets", "assets")?;
        check::unique_by(&self.assets, |a| &a.id, "assets", "asset id")?;
        check::unique_by(&self.profiles, |p| &p.id, "profiles", "profile id")?;
        let ports = &self.environment.ports;
        check::at_most(ports, MAX_PORTS, "environment.ports", "ports")?;
        check::unique_by(ports, |p| &p.port_id, "environment.ports", "port id")?;
        check::each(ports, "environment.ports", |p| {
            p.controls.validate().map_err(|e| e.under("controls"))
        })?;
        check::unique_by(&self.agents, |a| &a.port, "agents", "port binding")?;
        match (&self.memory_task, self.task.as_str() == MEMORY_TASK) {
            (Some(memory), true) => memory.validate().map_err(|e| e.under("memoryTask"))?,
            (None, false) => {}
            _ => {
                return Err(ContractError::rule(
                    "memoryTask",
                    format!("a plan declares a memory task exactly when its task is {MEMORY_TASK}"),
                ));
            }
        }
        let mut threads: u64 = 0;
        for (i, agent) in self.agents.iter().enumerate() {
            if agent.threads == 0 || agent.threads > MAX_WORKER_THREADS {
                return Err(ContractError::rule(
                    format!("agents[{i}].threads"),
                    "an agent has 1 to 4096 threads",
                ));
            }
            threads += u64::from(agent.threads);
        }
        if threads > u64::from(self.run.max_threads) {
            return Err(ContractError::rule(
                "run.maxThreads",
                format!("the agents' threads ({threads}) exceed the budget"),
            ));
        }
        let sources = composition_digest(&self.sources)?;
        if sources != self.composition_digest {
            return Err(ContractError::rule(
                "compositionDigest",
                "the composition digest is the SHA-256 of the canonical sources list",
            ));
        }
        if self.compute_digest()? != self.plan_digest {
            return Err(ContractError::rule(
                "planDigest",
                "the plan digest is the SHA-256 of the canonical plan without planDigest",
            ));
        }
        Ok(())
    }
}
