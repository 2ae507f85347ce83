//! The page's state: what the browser is shown of one committed snapshot, built from the
//! snapshot, the descriptor it follows and the session's end, as a JSON object.
//!
//! It copies public numbers only (steps, times, rates, buttons, progress, the run digest). It
//! never copies an artifact reference, an owner token or a store path; it knows nothing of the
//! bus or of how the state reaches the browser.

use flysim_types::publish::{CommittedSnapshot, SessionDescriptor, SnapshotAgent};
use serde_json::{Map, Value, json};

/// How the session ended, as its `ended` event said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ended {
    pub(crate) run_digest: String,
    pub(crate) steps: String,
    pub(crate) outcome: String,
}

impl Ended {
    /// The `ended` event in an events payload, or `None` for any other event.
    pub(crate) fn from_event(payload: &Map<String, Value>) -> Option<Self> {
        if payload.get("type").and_then(Value::as_str) != Some("ended") {
            return None;
        }
        let text = |k: &str| {
            payload
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        Some(Self {
            run_digest: text("runDigest"),
            steps: text("steps"),
            outcome: text("outcome"),
        })
    }
}

/// One encoded frame as the page state lists it (the PNG bytes follow the state).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FrameEntry {
    pub(crate) view_id: String,
    pub(crate) width: u32,
    pub(crate) height: u32,
    pub(crate) produced_step: u64,
    pub(crate) png_bytes: usize,
}

/// What the page is shown of the newest snapshot.
#[derive(Debug, Clone)]
pub(crate) struct PageInput<'a> {
    pub(crate) descriptor: Option<&'a SessionDescriptor>,
    pub(crate) snapshot: Option<&'a CommittedSnapshot>,
    pub(crate) frames: &'a [FrameEntry],
    pub(crate) ended: Option<&'a Ended>,
    /// The gateway's own counter of states built, strictly increasing.
    pub(crate) version: u64,
    /// When the gateway took the snapshot off the bus, ms since the Unix epoch.
    pub(crate) received_ms: f64,
}

/// The page state as a JSON object.
pub(crate) fn page_state(input: &PageInput<'_>) -> Value {
    let snapshot = input.snapshot;
    let progress = snapshot.map(|s| &s.progress.value);
    let agents: Vec<Value> = snapshot
        .map(|s| {
            s.agents
                .iter()
                .map(|a| agent_state(a, input.descriptor, progress))
                .collect()
        })
        .unwrap_or_default();
    let views: Vec<Value> = input
        .frames
        .iter()
        .map(|f| {
            json!({"id": f.view_id, "width": f.width, "height": f.height,
                   "producedStep": f.produced_step, "pngBytes": f.png_bytes})
        })
        .collect();
    json!({
        "version": input.version,
        "receivedMs": input.received_ms,
        "sessionId": input.descriptor.map(|d| d.session_id.to_string()),
        "sequence": snapshot.map(|s| s.sequence.get()),
        "step": snapshot.map(|s| s.scope.step.get()),
        "epoch": snapshot.map(|s| s.scope.epoch.to_string()),
        "worldTimeMs": snapshot.map(|s| ns_to_ms(s.world_time.numerator(), s.world_time.denominator())),
        "stepDurationMs": input.descriptor.map(|d| {
            let step = d.environment.step_duration;
            ns_to_ms(step.numerator(), step.denominator())
        }),
        "agents": agents,
        "progress": progress.map(numbers).unwrap_or_default(),
        "views": views,
        "ended": input.ended.map(|e| json!({
            "runDigest": e.run_digest, "steps": e.steps, "outcome": e.outcome,
        })),
    })
}

/// One agent's rates, buttons and score.
fn agent_state(
    agent: &SnapshotAgent,
    descriptor: Option<&SessionDescriptor>,
    progress: Option<&Map<String, Value>>,
) -> Value {
    let id = agent.agent_id.to_string();
    let port = descriptor
        .and_then(|d| d.agents.iter().find(|a| a.agent_id == agent.agent_id))
        .map(|a| a.port_id.to_string());
    let rates: Vec<Value> = agent
        .telemetry
        .rates
        .iter()
        .map(|r| json!({"role": r.role_id.to_string(), "hz": r.hz}))
        .collect();
    let buttons: Option<Vec<String>> = agent.applied_controls.as_ref().map(|c| {
        c.buttons
            .iter()
            .filter(|b| b.down)
            .map(|b| b.id.to_string())
            .collect()
    });
    // A progress value that holds a number under the agent's id is that agent's score.
    let score = progress.and_then(|p| p.get(&id)).and_then(Value::as_f64);
    json!({
        "id": id,
        "port": port,
        "rates": rates,
        "populationRateHz": agent.telemetry.population_rate_hz,
        "buttons": buttons,
        "score": score,
    })
}

/// The top-level numeric fields of a progress value, in key order.
fn numbers(progress: &Map<String, Value>) -> Value {
    let mut keys: Vec<&String> = progress.keys().collect();
    keys.sort();
    keys.into_iter()
        .filter_map(|k| progress[k].as_f64().map(|v| json!({"name": k, "value": v})))
        .collect()
}

/// A rational number of nanoseconds in milliseconds (for display only).
#[expect(
    clippy::cast_precision_loss,
    reason = "a displayed time; the exact value stays the session's"
)]
fn ns_to_ms(numerator: u64, denominator: u64) -> f64 {
    numerator as f64 / denominator.max(1) as f64 / 1.0e6
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ended_event_is_read_and_other_events_are_not() {
        let ended = json!({"type": "ended", "runDigest": "sha256:ab", "steps": "12", "outcome": "complete"});
        let Value::Object(map) = ended else {
            unreachable!()
        };
        let e = Ended::from_event(&map).expect("an ended event");
        assert_eq!(e.run_digest, "sha256:ab");
        assert_eq!(e.steps, "12");
        assert_eq!(e.outcome, "complete");
        let Value::Object(other) = json!({"type": "paused"}) else {
            unreachable!()
        };
        assert_eq!(Ended::from_event(&other), None);
    }

    #[test]
    fn progress_numbers_are_listed_by_name_and_others_skipped() {
        let Value::Object(p) = json!({"score": 7, "presses": 2.5, "label": "x"}) else {
            unreachable!()
        };
        assert_eq!(
            numbers(&p),
            json!([{"name": "presses", "value": 2.5}, {"name": "score", "value": 7.0}])
        );
    }

    #[test]
    fn a_number_under_an_agent_id_is_that_agents_score() {
        let d = "0".repeat(64);
        let schema = json!({"id": "task-v1", "version": 1, "digest": d});
        let snapshot: CommittedSnapshot = flysim_types::payload::from_value(json!({
            "descriptorRevision": "1", "publisherIncarnation": "pub-1",
            "scope": {"sessionId": "demo", "epoch": "epoch-0", "step": "3"},
            "episodeId": "episode-0", "sequence": "4",
            "worldTime": {"numerator": "3000000", "denominator": "1"},
            "agents": [{"agentId": "fly-0", "selectedDecision": null, "appliedControls": null,
                "telemetry": {"brainTicks": "0", "populationRateHz": 1.5, "rates": [],
                    "learning": {"enabled": false, "updates": "0", "changed": "0", "signal": 0.0},
                    "stimulusRemainingMs": null}}],
            "progress": {"schema": schema, "value": {"fly-0": 3, "score": 7}},
            "media": {"views": [], "audio": []}, "eventIds": [],
        }))
        .expect("a snapshot");
        let state = page_state(&PageInput {
            descriptor: None,
            snapshot: Some(&snapshot),
            frames: &[],
            ended: None,
            version: 1,
            received_ms: 0.0,
        });
        assert_eq!(state["step"], 3);
        assert_eq!(state["worldTimeMs"], 3.0);
        assert_eq!(state["agents"][0]["score"], 3.0);
        assert_eq!(state["agents"][0]["buttons"], Value::Null);
        assert_eq!(state["agents"][0]["port"], Value::Null);
        assert_eq!(
            state["progress"],
            json!([{"name": "fly-0", "value": 3.0}, {"name": "score", "value": 7.0}])
        );
    }

    #[test]
    fn world_time_is_shown_in_milliseconds() {
        assert!((ns_to_ms(8_572_265_625, 512) - 16.742_706_298_828_125).abs() < 1e-12);
    }
}
