//! A resolved sweep as `flysim plan --sweep` prints it: one canonical JSON document with the
//! sweep digest and every member (its index, its values, its plan digest, its plan).
//!
//! It renders; it does not resolve.

use flysim_compose::SweepPlan;

use crate::error::CliError;

/// Each member's values as a list of `{"target", "value"}`, in axis order.
pub(crate) fn values_json(values: &[(String, serde_json::Value)]) -> serde_json::Value {
    values
        .iter()
        .map(|(target, value)| serde_json::json!({ "target": target, "value": value }))
        .collect()
}

/// The document: `{"name","sweepDigest","axes","members":[{"index","values","planDigest","plan"}]}`.
pub(crate) fn document(sweep: &SweepPlan) -> Result<String, CliError> {
    let members: Vec<Member<'_>> = sweep
        .members
        .iter()
        .map(|m| Member {
            index: m.index,
            values: values_json(&m.values),
            plan_digest: format!("sha256:{}", m.plan.plan_digest),
            plan: &m.plan,
        })
        .collect();
    let doc = Document {
        name: &sweep.name,
        sweep_digest: format!("sha256:{}", sweep.digest),
        axes: &sweep.axes,
        members,
    };
    Ok(flysim_types::payload::to_canonical(&doc)?)
}

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Document<'a> {
    name: &'a str,
    sweep_digest: String,
    axes: &'a [String],
    members: Vec<Member<'a>>,
}

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Member<'a> {
    index: usize,
    values: serde_json::Value,
    plan_digest: String,
    plan: &'a flysim_types::plan::LaunchPlan,
}

/// The stderr note: `sweepDigest=sha256:<hex> members=N`.
pub(crate) fn note(sweep: &SweepPlan) -> String {
    format!(
        "sweepDigest=sha256:{} members={}\n",
        sweep.digest,
        sweep.members.len()
    )
}
