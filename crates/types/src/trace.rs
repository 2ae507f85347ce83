//! The behaviour trace of a run, its run digest, and the run manifest (contracts §5.7).
//!
//! A run writes one [`TransitionTrace`] per committed boundary: boundary 0 after bootstrap, then
//! boundary `k+1` after every transition `k -> k+1`. Each holds two parts that are never mixed:
//!
//! - [`TraceBehaviour`]: what happened, as a function of the plan alone. It carries no epoch, no
//!   session id, no wall time, no bus or domain request id, no artifact identity: a run resumed
//!   under a new epoch, on another transport, in another execution mode or with another dispatch
//!   order has the same behaviour rows.
//! - [`TraceOperational`]: how it happened this time (epoch, request ids, bus call ids, timings),
//!   recorded and never compared.
//!
//! The **run digest** ([`RunDigester`]) is SHA-256 over this byte string:
//!
//! ```text
//! "flysim/run-digest-v2" LF <planDigest, 64 lowercase hex> LF
//! then, for every behaviour row in boundary order: RFC 8785 JSON of the row, LF
//! ```
//!
//! so two runs of one plan that commit the same boundaries have the same run digest, and a run
//! bounded to fewer steps holds a prefix of the other's rows.
//!
//! The [`RunManifest`] names the plan, the run digest, the build, the `--steps` bound and how the
//! run was executed; its timings are operational and never hashed.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use crate::error::ContractError;
use crate::payload::{Nullable, Payload, check, required_nullable as nullable};
use crate::rational::RationalNs;
use crate::scalar::{BusCallId, Digest, DomainRequestId, Id, U64};
use crate::workers::{AgentTelemetry, AxisValue, PortControl, Reward};

/// The domain tag that starts the run-digest material.
///
/// `v2` rows carry each agent's telemetry and the applied controls of every port (`v1` rows held
/// digests of them only).
pub const RUN_DIGEST_DOMAIN: &str = "flysim/run-digest-v2";
/// The run manifest format this build writes and reads.
pub const MANIFEST_FORMAT_VERSION: u32 = 1;

/// One committed boundary: what happened, and, apart, how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TransitionTrace {
    /// Compared between runs and hashed into the run digest.
    pub behaviour: TraceBehaviour,
    /// Recorded, never compared.
    pub operational: TraceOperational,
}

impl Payload for TransitionTrace {
    fn validate(&self) -> Result<(), ContractError> {
        self.behaviour.validate().map_err(|e| e.under("behaviour"))
    }
}

/// Room for a row's canonical behaviour text (a one-agent Game Boy row writes about 1,100
/// bytes), so that writing one does not regrow its text from 256 bytes.
const BEHAVIOUR_ROOM: usize = 2048;

/// Room for a row's canonical operational text (about 450 bytes for one agent).
const OPERATIONAL_ROOM: usize = 1024;

impl TransitionTrace {
    /// The row's canonical text, written once for the run digest and the trace line both.
    ///
    /// # Errors
    ///
    /// When a number in the row cannot be written canonically (never for a validated row).
    pub fn text(&self) -> Result<RowText, ContractError> {
        Ok(RowText {
            behaviour: self.behaviour.canonical_bytes()?,
            operational: crate::payload::to_canonical_sized(&self.operational, OPERATIONAL_ROOM)?,
        })
    }
}

/// A row's canonical parts: the behaviour (what the run digest hashes) and the operational
/// row. The trace line is `{"behaviour":B,"operational":O}`, keys in order, each part canonical
/// on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowText {
    /// The behaviour row's RFC 8785 bytes.
    pub behaviour: Vec<u8>,
    /// The operational row's RFC 8785 text.
    pub operational: String,
}

impl RowText {
    /// The trace line, newline included.
    #[must_use]
    pub fn line(&self) -> Vec<u8> {
        let mut line = Vec::with_capacity(self.behaviour.len() + self.operational.len() + 32);
        line.extend_from_slice(br#"{"behaviour":"#);
        line.extend_from_slice(&self.behaviour);
        line.extend_from_slice(br#","operational":"#);
        line.extend_from_slice(self.operational.as_bytes());
        line.extend_from_slice(b"}\n");
        line
    }
}

/// The behaviour of one committed boundary.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TraceBehaviour {
    /// The committed boundary: 0 after bootstrap, `k+1` after transition `k -> k+1`.
    pub boundary: U64,
    /// The episode (stable across epochs; never the epoch).
    pub episode: Id,
    /// The world time of the boundary (logical, since the episode started).
    pub world_time: RationalNs,
    /// The batch of the transition, derived from the episode and step; null at boundary 0.
    #[serde(deserialize_with = "nullable")]
    #[schemars(with = "Nullable<Id>")]
    pub batch_id: Option<Id>,
    /// The environment's `appliedControlsDigest`; null at boundary 0.
    #[serde(deserialize_with = "nullable")]
    #[schemars(with = "Nullable<Digest>")]
    pub control_digest: Option<Digest>,
    /// The controls the batch applied, one entry per port in descriptor port order; null at
    /// boundary 0.
    #[serde(deserialize_with = "nullable")]
    #[schemars(with = "Nullable<Vec<TraceControl>>")]
    pub controls: Option<Vec<TraceControl>>,
    /// Every agent, sorted by id.
    pub agents: Vec<TraceAgent>,
    /// The observation at this boundary.
    pub observation: TraceObservation,
    /// Task events in task order (bootstrap events at boundary 0).
    pub events: Vec<TraceEvent>,
    /// The task's episode request, if it made one at this boundary.
    #[serde(deserialize_with = "nullable")]
    #[schemars(with = "Nullable<TraceEpisodeRequest>")]
    pub episode_request: Option<TraceEpisodeRequest>,
    /// The task's declared variables at this boundary, by name (a memory task records every
    /// variable that has a value there: integers exactly, floats as the single they are); null
    /// for a task that declares none.
    #[serde(deserialize_with = "nullable")]
    #[schemars(with = "Nullable<crate::memory::Variables>")]
    pub variables: Option<crate::memory::Variables>,
}

serialize_in_key_order!(TraceBehaviour {
    "agents" => agents,
    "batchId" => batch_id,
    "boundary" => boundary,
    "controlDigest" => control_digest,
    "controls" => controls,
    "episode" => episode,
    "episodeRequest" => episode_request,
    "events" => events,
    "observation" => observation,
    "variables" => variables,
    "worldTime" => world_time,
});

impl TraceBehaviour {
    /// The canonical JSON bytes of this row: what the run digest hashes.
    ///
    /// # Errors
    ///
    /// When a number in the row cannot be written canonically (never for a validated row).
    pub fn canonical_bytes(&self) -> Result<Vec<u8>, ContractError> {
        crate::payload::to_canonical_sized(self, BEHAVIOUR_ROOM).map(String::into_bytes)
    }
}

impl Payload for TraceBehaviour {
    fn validate(&self) -> Result<(), ContractError> {
        let first = self.boundary.get() == 0;
        if first != self.batch_id.is_none()
            || first != self.control_digest.is_none()
            || first != self.controls.is_none()
        {
            return Err(ContractError::rule(
                "batchId",
                "batchId, controlDigest and controls are null exactly at boundary 0",
            ));
        }
        for pair in self.agents.windows(2) {
            if pair[0].agent_id >= pair[1].agent_id {
                return Err(ContractError::rule(
                    "agents",
                    "agents are sorted by agentId, each once",
                ));
            }
        }
        check::each(&self.agents, "agents", |a| {
            check::each(&a.rewards, "rewards", Reward::validate)?;
            if first != a.decision_digest.is_none() {
                return Err(ContractError::rule(
                    "decisionDigest",
                    "an agent has a decision digest exactly after a transition",
                ));
            }
            if a.committed_step != self.boundary {
                return Err(ContractError::rule(
                    "committedStep",
                    "every agent is committed at the row's boundary",
                ));
            }
            a.telemetry.validate().map_err(|e| e.under("telemetry"))
        })?;
        for pair in self.observation.views.windows(2) {
            if pair[0].view_id >= pair[1].view_id {
                return Err(ContractError::rule(
                    "observation.views",
                    "views are sorted by viewId, each once",
                ));
            }
        }
        check::unique_by(&self.events, |e| &e.id, "events", "event id")
    }
}

/// One agent at one committed boundary.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TraceAgent {
    /// The agent.
    pub agent_id: Id,
    /// Its profile.
    pub profile_digest: Digest,
    /// Ticks of the Prepare of this transition (warm-up ticks at boundary 0).
    pub ticks_advanced: U64,
    /// Ticks since initialisation, warm-up included.
    pub brain_ticks: U64,
    /// The tick remainder carried to the next Prepare.
    pub remainder: RationalNs,
    /// Digest of the canonical decision of this transition; null at boundary 0.
    #[serde(deserialize_with = "nullable")]
    #[schemars(with = "Nullable<Digest>")]
    pub decision_digest: Option<Digest>,
    /// The rewards committed with this boundary, in event order.
    pub rewards: Vec<Reward>,
    /// Ids of the task stimulations committed with this boundary, in order.
    pub stimuli: Vec<Id>,
    /// Digest of the decision context retained for the next Prepare.
    pub decision_context_digest: Digest,
    /// The agent's committed step, equal to the boundary.
    pub committed_step: U64,
    /// What the agent reported when it reached this boundary (its warm-up telemetry at 0):
    /// rates in profile role order, population rate, learning counters, stimulation left.
    pub telemetry: AgentTelemetry,
}

serialize_in_key_order!(TraceAgent {
    "agentId" => agent_id,
    "brainTicks" => brain_ticks,
    "committedStep" => committed_step,
    "decisionContextDigest" => decision_context_digest,
    "decisionDigest" => decision_digest,
    "profileDigest" => profile_digest,
    "remainder" => remainder,
    "rewards" => rewards,
    "stimuli" => stimuli,
    "telemetry" => telemetry,
    "ticksAdvanced" => ticks_advanced,
});

/// The controls one port received in a transition: the buttons held down, by id in the
/// controller's declared order, and every axis value.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TraceControl {
    /// The port.
    pub port_id: Id,
    /// The buttons held down.
    pub pressed: Vec<Id>,
    /// Every axis of the port.
    pub axes: Vec<AxisValue>,
}

serialize_in_key_order!(TraceControl {
    "axes" => axes,
    "portId" => port_id,
    "pressed" => pressed,
});

impl TraceControl {
    /// The row's form of one port's controls.
    #[must_use]
    pub fn of(control: &PortControl) -> Self {
        Self {
            port_id: control.port_id.clone(),
            pressed: control
                .buttons
                .iter()
                .filter(|b| b.down)
                .map(|b| b.id.clone())
                .collect(),
            axes: control.axes.clone(),
        }
    }
}

/// The observation at a committed boundary, by digest.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TraceObservation {
    /// Digest of the canonical inspection value.
    pub inspection_digest: Digest,
    /// The backend's frame counter, if it has one.
    #[serde(deserialize_with = "nullable")]
    #[schemars(with = "Nullable<String>")]
    pub engine_frame: Option<String>,
    /// Sensory views, sorted by view id.
    pub views: Vec<TraceView>,
}

serialize_in_key_order!(TraceObservation {
    "engineFrame" => engine_frame,
    "inspectionDigest" => inspection_digest,
    "views" => views,
});

/// One sensory view of an observation.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TraceView {
    /// The view.
    pub view_id: Id,
    /// The boundary that produced the frame.
    pub produced_step: U64,
    /// SHA-256 of the frame's bytes.
    pub digest: Digest,
}

serialize_in_key_order!(TraceView {
    "digest" => digest,
    "producedStep" => produced_step,
    "viewId" => view_id,
});

/// A task event, by id and payload digest.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TraceEvent {
    /// The event id, derived from episode, source step, rule and ordinal.
    pub id: Id,
    /// The event kind.
    pub kind_id: Id,
    /// The boundary the event belongs to.
    pub source_step: U64,
    /// The agent it concerns, or null.
    #[serde(deserialize_with = "nullable")]
    #[schemars(with = "Nullable<Id>")]
    pub agent_id: Option<Id>,
    /// Digest of the canonical payload.
    pub payload_digest: Digest,
}

serialize_in_key_order!(TraceEvent {
    "agentId" => agent_id,
    "id" => id,
    "kindId" => kind_id,
    "payloadDigest" => payload_digest,
    "sourceStep" => source_step,
});

/// What an episode request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum EpisodeRequestKind {
    /// End the episode: pause at the boundary, then the declared episode policy.
    Terminal,
    /// Roll back (only under a composition that declares a rollback policy).
    Rollback,
}

/// An episode request, as traced.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TraceEpisodeRequest {
    /// The kind.
    pub kind: EpisodeRequestKind,
    /// Why.
    pub reason: Id,
    /// Digest of the canonical outcome value.
    pub outcome_digest: Digest,
}

serialize_in_key_order!(TraceEpisodeRequest {
    "kind" => kind,
    "outcomeDigest" => outcome_digest,
    "reason" => reason,
});

/// The operational record of one committed boundary: never compared, never hashed.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TraceOperational {
    /// The session.
    pub session_id: Id,
    /// The epoch the boundary was committed in.
    pub epoch: Id,
    /// The step the transition departed from (the boundary itself for boundary 0).
    pub step: U64,
    /// The Prepare (or Initialize, at boundary 0) request of each agent.
    pub prepare_request_ids: Vec<AgentRequest>,
    /// The Commit request of each agent (empty at boundary 0).
    pub commit_request_ids: Vec<AgentRequest>,
    /// The Advance request (the Initialize request at boundary 0).
    #[serde(deserialize_with = "nullable")]
    #[schemars(with = "Nullable<DomainRequestId>")]
    pub advance_request_id: Option<DomainRequestId>,
    /// Bus call ids of every call of the transition, in the order they were issued.
    pub bus_call_ids: Vec<BusCallId>,
    /// Nanoseconds from the start of the invocation to this commit.
    pub wall_time_ns: U64,
    /// Nanoseconds per phase of the transition.
    pub phase_ns: PhaseTimings,
}

serialize_in_key_order!(TraceOperational {
    "advanceRequestId" => advance_request_id,
    "busCallIds" => bus_call_ids,
    "commitRequestIds" => commit_request_ids,
    "epoch" => epoch,
    "phaseNs" => phase_ns,
    "prepareRequestIds" => prepare_request_ids,
    "sessionId" => session_id,
    "step" => step,
    "wallTimeNs" => wall_time_ns,
});

/// One agent's request id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AgentRequest {
    /// The agent.
    pub agent_id: Id,
    /// The domain request id.
    pub request_id: DomainRequestId,
}

/// Wall time spent in each phase of one transition, in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PhaseTimings {
    /// Every Prepare (the whole of bootstrap at boundary 0).
    pub prepare: U64,
    /// Executors and the batch.
    pub apply: U64,
    /// The Advance.
    pub advance: U64,
    /// The task's evaluation.
    pub evaluate: U64,
    /// Every Commit.
    pub commit: U64,
    /// The whole transition.
    pub total: U64,
}

serialize_in_key_order!(PhaseTimings {
    "advance" => advance,
    "apply" => apply,
    "commit" => commit,
    "evaluate" => evaluate,
    "prepare" => prepare,
    "total" => total,
});

/// Feeds behaviour rows into the run digest (see the module docs for the exact bytes).
#[derive(Debug, Clone)]
pub struct RunDigester {
    hasher: Sha256,
    rows: u64,
}

impl RunDigester {
    /// Starts the digest of a run of the plan with digest `plan_digest`.
    #[must_use]
    pub fn new(plan_digest: &Digest) -> Self {
        let mut hasher = Sha256::new();
        hasher.update(RUN_DIGEST_DOMAIN.as_bytes());
        hasher.update(b"\n");
        hasher.update(plan_digest.hex().as_bytes());
        hasher.update(b"\n");
        Self { hasher, rows: 0 }
    }

    /// Adds the next row.
    ///
    /// # Errors
    ///
    /// As [`TraceBehaviour::canonical_bytes`].
    pub fn push(&mut self, row: &TraceBehaviour) -> Result<(), ContractError> {
        self.push_canonical(row).map(drop)
    }

    /// [`push`](Self::push), returning the row's canonical bytes (what was hashed), for a
    /// caller that writes them too.
    ///
    /// # Errors
    ///
    /// As [`TraceBehaviour::canonical_bytes`].
    pub fn push_canonical(&mut self, row: &TraceBehaviour) -> Result<Vec<u8>, ContractError> {
        let bytes = row.canonical_bytes()?;
        self.push_bytes(&bytes);
        Ok(bytes)
    }

    /// Adds the next row from its canonical bytes ([`TraceBehaviour::canonical_bytes`],
    /// [`RowText::behaviour`]).
    pub fn push_bytes(&mut self, canonical: &[u8]) {
        self.hasher.update(canonical);
        self.hasher.update(b"\n");
        self.rows += 1;
    }

    /// Rows added so far.
    #[must_use]
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// The digest of the rows added so far.
    #[must_use]
    pub fn digest(&self) -> Digest {
        Digest::from_bytes(self.hasher.clone().finalize().into())
    }
}

/// The run digest of `rows` under `plan_digest`.
///
/// # Errors
///
/// As [`RunDigester::push`].
pub fn run_digest<'a>(
    plan_digest: &Digest,
    rows: impl IntoIterator<Item = &'a TraceBehaviour>,
) -> Result<Digest, ContractError> {
    let mut digester = RunDigester::new(plan_digest);
    for row in rows {
        digester.push(row)?;
    }
    Ok(digester.digest())
}

/// The manifest of a run directory: identities, the run digest, how it ran, and timings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RunManifest {
    /// [`MANIFEST_FORMAT_VERSION`].
    pub format_version: u32,
    /// The run.
    pub run_id: Id,
    /// The plan's digest (the plan is `plan.json` beside the manifest).
    pub plan_digest: Digest,
    /// The contract digest of the build that ran it.
    pub contract_digest: Digest,
    /// The build that ran it.
    pub build: BuildIdentity,
    /// Where the run stands.
    pub status: RunStatus,
    /// The `--steps` bound of the invocation, or null when it ran the plan's steps.
    #[serde(deserialize_with = "nullable")]
    #[schemars(with = "Nullable<U64>")]
    pub steps_bound: Option<U64>,
    /// Transitions committed (behaviour rows minus the boundary-0 row).
    pub steps: U64,
    /// The run digest over every row of `trace.ndjson`.
    pub run_digest: Digest,
    /// Why the run stopped early, or null.
    #[serde(deserialize_with = "nullable")]
    #[schemars(with = "Nullable<RunFailure>")]
    pub failure: Option<RunFailure>,
    /// How the run was executed (never behaviour).
    pub execution: ExecutionRecord,
    /// Timings (never behaviour).
    pub timings: RunTimings,
}

impl Payload for RunManifest {
    fn validate(&self) -> Result<(), ContractError> {
        if self.format_version != MANIFEST_FORMAT_VERSION {
            return Err(ContractError::rule(
                "formatVersion",
                format!("this build reads run manifests of format {MANIFEST_FORMAT_VERSION}"),
            ));
        }
        if (self.status == RunStatus::Failed) != self.failure.is_some() {
            return Err(ContractError::rule(
                "failure",
                "a failure is recorded exactly when the status is failed",
            ));
        }
        Ok(())
    }
}

/// The build that ran a run, or that a worker reports in Hello.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BuildIdentity {
    /// The flysim version.
    pub version: String,
    /// SHA-256 of the build-identity material (see `flysim_worker::identity`).
    pub build_digest: Digest,
}

/// Where a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RunStatus {
    /// Steps are being committed.
    Running,
    /// Every step of the bound was committed.
    Complete,
    /// The session paused at a committed boundary (e.g. a terminal episode request).
    Paused,
    /// The epoch failed; the rows up to the last committed boundary stand.
    Failed,
}

/// Why a run failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RunFailure {
    /// The diagnostic code (`FSnnnn`).
    pub code: String,
    /// The message.
    pub message: String,
}

/// How a run was executed: none of it may change behaviour.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExecutionRecord {
    /// `in-process`, `thread` or `process`.
    pub mode: crate::plan::RunMode,
    /// `memory` or `unix`.
    pub transport: crate::plan::Transport,
    /// The order Prepare and Commit calls were dispatched in.
    pub dispatch: DispatchOrder,
    /// Threads allocated to each agent worker.
    #[schemars(range(min = 1, max = 4096))]
    pub worker_threads: u32,
}

/// The order concurrent agent calls are issued in (never behaviour).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum DispatchOrder {
    /// One after another, in sorted agent-id order.
    Sequential,
    /// All at once.
    Concurrent,
    /// One after another, in reversed agent-id order.
    Reversed,
}

impl DispatchOrder {
    /// Every order, with its spelling.
    pub const ALL: [(&'static str, Self); 3] = [
        ("sequential", Self::Sequential),
        ("concurrent", Self::Concurrent),
        ("reversed", Self::Reversed),
    ];
}

/// Wall-clock facts of one invocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RunTimings {
    /// Milliseconds since the Unix epoch when the invocation started.
    pub started_unix_ms: U64,
    /// Nanoseconds the invocation took, launch and reaping included.
    pub wall_time_ns: U64,
    /// Nanoseconds of the committed transitions alone.
    pub steps_ns: U64,
}
