//! Data-driven tests of the worker payloads: every valid fixture reads and round-trips through
//! canonical JSON, every invalid case is refused with exactly its code and field path, and the
//! `validate_against` rules refuse what a payload alone cannot.

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde::Deserialize;
use serde_json::{Value, json};

use super::*;
use crate::error::ContractError;
use crate::json::{parse_document, to_canonical};
use crate::payload::{Payload, PayloadKind, parse_payload};
use crate::rational::RationalNs;
use crate::scalar::{Id, Scope, U64};

const INVALID: &str = include_str!("../../../../fixtures/payloads/invalid.json");

/// One refusal pinned by `fixtures/payloads/invalid.json`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    kind: String,
    why: String,
    document: Value,
    code: String,
    path: String,
}

fn valid_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/payloads/valid")
}

fn kind(name: &str) -> PayloadKind {
    kinds()
        .into_iter()
        .find(|k| k.name == name)
        .unwrap_or_else(|| panic!("no payload kind `{name}`"))
}

fn valid_text(name: &str) -> String {
    let path = valid_dir().join(format!("{name}.json"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The typed value of a valid fixture.
fn valid<T: Payload>(name: &str) -> T {
    parse_payload(valid_text(name).as_bytes()).unwrap_or_else(|e| panic!("valid/{name}.json: {e}"))
}

/// The code and path of a refusal, for comparison.
fn refusal(e: &ContractError) -> (String, String) {
    let path = match e {
        ContractError::InvalidId { path, .. }
        | ContractError::InvalidU64 { path, .. }
        | ContractError::InvalidDigest { path, .. }
        | ContractError::InvalidRational { path, .. }
        | ContractError::InvalidIdSpelling { path, .. }
        | ContractError::TypedValueTooLarge { path, .. }
        | ContractError::UnknownField { path, .. }
        | ContractError::Shape { path, .. }
        | ContractError::Rule { path, .. } => path.clone(),
        _ => String::new(),
    };
    (e.code_str(), path)
}

fn pretty(value: &Value) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}

#[test]
fn kind_names_are_unique_kebab_case_and_sorted() {
    let names: Vec<&str> = kinds().iter().map(|k| k.name).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(names, sorted, "kinds are sorted and unique");
    for name in names {
        assert!(
            name.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
            "{name}"
        );
    }
}

#[test]
fn every_kind_has_a_valid_fixture_and_every_fixture_a_kind() {
    let names: BTreeSet<String> = kinds().iter().map(|k| k.name.to_owned()).collect();
    let mut files = BTreeSet::new();
    for entry in std::fs::read_dir(valid_dir()).expect("fixtures/payloads/valid exists") {
        let name = entry
            .expect("readable entry")
            .file_name()
            .to_string_lossy()
            .into_owned();
        files.insert(name.strip_suffix(".json").unwrap_or(&name).to_owned());
    }
    let missing: Vec<_> = names.difference(&files).collect();
    let stray: Vec<_> = files.difference(&names).collect();
    assert!(
        missing.is_empty(),
        "kinds without a valid fixture: {missing:?}"
    );
    assert!(stray.is_empty(), "fixtures that name no kind: {stray:?}");
}

#[test]
fn every_kind_writes_its_canonical_form_straight_from_the_typed_value() {
    // The direct writer against the reference path (a `serde_json::Value`, then RFC 8785), on
    // the valid fixture of every payload kind: plans, trace rows, manifests and every message.
    let mut failures = Vec::new();
    for kind in kinds() {
        let text = valid_text(kind.name);
        let reference = (kind.check)(text.as_bytes()).map(|v| to_canonical(&v).expect("canonical"));
        let direct = (kind.canonical)(text.as_bytes());
        match (reference, direct) {
            (Ok(reference), Ok(direct)) if reference == direct => {}
            (reference, direct) => failures.push(format!(
                "{}:\n  reference {reference:?}\n  direct    {direct:?}",
                kind.name
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn valid_fixtures_read_and_round_trip_through_canonical_json() {
    let mut failures = Vec::new();
    for kind in kinds() {
        let text = valid_text(kind.name);
        let checked = match (kind.check)(text.as_bytes()) {
            Ok(v) => v,
            Err(e) => {
                failures.push(format!("{}: refused: {} {e}", kind.name, e.code_str()));
                continue;
            }
        };
        let canonical = to_canonical(&checked).expect("a checked value is canonicalisable");
        // Nothing is dropped, renamed or reformatted by reading: same canonical bytes as the file.
        let original = to_canonical(&parse_document(text.as_bytes()).expect("strict JSON"))
            .expect("canonical");
        if canonical != original {
            failures.push(format!(
                "{}: canonical form differs from the fixture's\n  {canonical}\n  {original}",
                kind.name
            ));
        }
        match (kind.check)(canonical.as_bytes()) {
            Ok(again) if again == checked => {}
            Ok(_) => failures.push(format!(
                "{}: canonical form re-reads to a different value",
                kind.name
            )),
            Err(e) => failures.push(format!("{}: canonical form refused: {e}", kind.name)),
        }
        let value: Value = serde_json::from_str(&text).expect("JSON");
        if pretty(&value) != text {
            failures.push(format!(
                "{}: the file is not 2-space pretty JSON with sorted keys",
                kind.name
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn invalid_cases_are_refused_with_their_code_and_path() {
    let cases: Vec<Case> =
        serde_json::from_str(INVALID).expect("invalid.json is an array of cases");
    assert!(
        cases.len() >= 60,
        "at least 60 invalid cases, found {}",
        cases.len()
    );
    let names: BTreeSet<&str> = kinds().iter().map(|k| k.name).collect();
    let mut failures = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        assert!(
            names.contains(case.kind.as_str()),
            "case {i} names an unknown kind `{}`",
            case.kind
        );
        assert!(!case.why.is_empty(), "case {i} says why");
        let bytes = serde_json::to_vec(&case.document).expect("a JSON value serialises");
        match (kind(&case.kind).check)(&bytes) {
            Ok(_) => failures.push(format!("[{i}] {} ({}): accepted", case.kind, case.why)),
            Err(e) => {
                let (code, path) = refusal(&e);
                if (code.as_str(), path.as_str()) != (case.code.as_str(), case.path.as_str()) {
                    failures.push(format!(
                        "[{i}] {} ({}): expected {} at `{}`, got {code} at `{path}`: {e}",
                        case.kind, case.why, case.code, case.path
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    let value: Value = serde_json::from_str(INVALID).expect("JSON");
    assert_eq!(
        pretty(&value),
        INVALID,
        "invalid.json is 2-space pretty JSON with sorted keys"
    );
}

#[test]
fn every_kind_has_an_invalid_case() {
    let cases: Vec<Case> = serde_json::from_str(INVALID).expect("invalid.json");
    let covered: BTreeSet<&str> = cases.iter().map(|c| c.kind.as_str()).collect();
    let uncovered: Vec<&str> = kinds()
        .iter()
        .map(|k| k.name)
        .filter(|n| !covered.contains(n))
        .collect();
    assert!(
        uncovered.is_empty(),
        "kinds without an invalid case: {uncovered:?}"
    );
}

#[test]
fn required_nullable_fields_read_null_and_are_required_in_the_schema() {
    let mut telemetry: Value = serde_json::from_str(&valid_text("agent-telemetry")).expect("JSON");
    telemetry["stimulusRemainingMs"] = Value::Null;
    let read: AgentTelemetry = crate::payload::from_value(telemetry).expect("null is accepted");
    assert_eq!(read.stimulus_remaining_ms, None);

    for (name, field) in [
        ("agent-telemetry", "stimulusRemainingMs"),
        ("artifact-ref", "digest"),
        ("sensory-input", "structured"),
        ("world-observation", "engineFrame"),
        ("status-result", "currentScope"),
        ("session-rpc-success", "scope"),
        ("session-rpc-failure", "scope"),
    ] {
        let schema = serde_json::to_value((kind(name).schema)()).expect("schema JSON");
        let required = schema["required"].as_array().cloned().unwrap_or_default();
        assert!(
            required.contains(&json!(field)),
            "{name}.{field} is required in the schema: {schema}"
        );
        let text = schema["properties"][field].to_string();
        assert!(
            text.contains("null"),
            "{name}.{field} admits null in the schema: {text}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// validate_against

fn rule_path(result: Result<(), ContractError>) -> String {
    match result {
        Err(ContractError::Rule { path, .. }) => path,
        other => panic!("expected a rule refusal, got {other:?}"),
    }
}

#[test]
fn a_complete_control_in_range_matches_its_schema() {
    let schema: ControllerSchema = valid("controller-schema");
    let control: PortControl = valid("port-control");
    control
        .validate_against(&schema)
        .expect("the valid fixtures agree");
}

#[test]
fn axis_bounds_are_inclusive() {
    let schema: ControllerSchema = valid("controller-schema");
    let mut control: PortControl = valid("port-control");
    for (x, throttle) in [(-1.0, 0.0), (1.0, 1.0), (0.0, 0.5)] {
        control.axes[0].value = x;
        control.axes[1].value = throttle;
        control
            .validate_against(&schema)
            .unwrap_or_else(|e| panic!("{x}, {throttle}: {e}"));
    }
}

#[test]
fn out_of_range_axis_values_are_refused_never_clamped() {
    let schema: ControllerSchema = valid("controller-schema");
    let control: PortControl = valid("port-control");
    for (axis, value) in [
        (0, -1.000_000_000_000_000_2),
        (0, 1.5),
        (1, 1.5),
        (1, -0.1),
        (1, 1.000_000_000_000_000_2),
    ] {
        let mut c = control.clone();
        c.axes[axis].value = value;
        assert_eq!(
            rule_path(c.validate_against(&schema)),
            format!("axes[{axis}].value"),
            "{value}"
        );
        assert_eq!(
            c.axes[axis].value.to_bits(),
            f64::to_bits(value),
            "the value is left untouched"
        );
    }
}

#[test]
fn non_finite_axis_values_are_refused_alone_and_against_the_schema() {
    let schema: ControllerSchema = valid("controller-schema");
    let mut control: PortControl = valid("port-control");
    control.axes[0].value = f64::NAN;
    assert_eq!(rule_path(control.validate()), "axes[0].value");
    assert_eq!(
        rule_path(control.validate_against(&schema)),
        "axes[0].value"
    );
}

#[test]
fn controls_name_every_declared_button_and_axis_in_order() {
    let schema: ControllerSchema = valid("controller-schema");
    let control: PortControl = valid("port-control");

    let mut missing = control.clone();
    missing.buttons.pop();
    assert_eq!(rule_path(missing.validate_against(&schema)), "buttons");

    let mut extra = control.clone();
    extra.buttons.push(ButtonState {
        id: Id::parse("select").expect("id"),
        down: false,
    });
    assert_eq!(rule_path(extra.validate_against(&schema)), "buttons[3].id");

    let mut swapped = control.clone();
    swapped.buttons.swap(0, 1);
    assert_eq!(
        rule_path(swapped.validate_against(&schema)),
        "buttons[0].id"
    );

    let mut renamed = control.clone();
    renamed.axes[1].id = Id::parse("brake").expect("id");
    assert_eq!(rule_path(renamed.validate_against(&schema)), "axes[1].id");

    let mut no_axes = control.clone();
    no_axes.axes.clear();
    assert_eq!(rule_path(no_axes.validate_against(&schema)), "axes");

    let mut duplicate = control;
    duplicate.buttons[1].id = duplicate.buttons[0].id.clone();
    assert_eq!(rule_path(duplicate.validate_against(&schema)), "buttons[1]");
}

fn two_port_descriptor() -> EnvironmentDescriptor {
    let mut descriptor: EnvironmentDescriptor = valid("environment-descriptor");
    let mut second = descriptor.ports[0].clone();
    second.port_id = Id::parse("p2").expect("id");
    descriptor.ports.push(second);
    descriptor.validate().expect("still a valid descriptor");
    descriptor
}

#[test]
fn a_batch_holds_one_control_per_declared_port_in_order() {
    let descriptor = two_port_descriptor();
    let single: AdvanceParams = valid("advance-params");
    let mut second = single.controls[0].clone();
    second.port_id = Id::parse("p2").expect("id");

    let mut batch = single.clone();
    std::sync::Arc::make_mut(&mut batch.controls)
        .get_mut()
        .push(second.clone());
    batch
        .validate_against(&descriptor)
        .expect("both ports, in order");

    assert_eq!(rule_path(single.validate_against(&descriptor)), "controls");

    let mut reversed = batch.clone();
    std::sync::Arc::make_mut(&mut reversed.controls)
        .get_mut()
        .reverse();
    assert_eq!(
        rule_path(reversed.validate_against(&descriptor)),
        "controls[0].portId"
    );

    let mut extra = batch.clone();
    let mut third = second;
    third.port_id = Id::parse("p3").expect("id");
    std::sync::Arc::make_mut(&mut extra.controls)
        .get_mut()
        .push(third);
    assert_eq!(
        rule_path(extra.validate_against(&descriptor)),
        "controls[2].portId"
    );

    let mut out_of_range = batch;
    std::sync::Arc::make_mut(&mut out_of_range.controls).get_mut()[1].axes[1].value = 1.5;
    assert_eq!(
        rule_path(out_of_range.validate_against(&descriptor)),
        "controls[1].axes[1].value"
    );
}

#[test]
fn a_batch_control_is_checked_against_its_own_port() {
    let descriptor: EnvironmentDescriptor = valid("environment-descriptor");
    let mut batch: AdvanceParams = valid("advance-params");
    batch
        .validate_against(&descriptor)
        .expect("the valid fixtures agree");
    std::sync::Arc::make_mut(&mut batch.controls).get_mut()[0].axes[1].value =
        -1.000_000_000_000_000_2;
    assert_eq!(
        rule_path(batch.validate_against(&descriptor)),
        "controls[0].axes[1].value"
    );
}

#[test]
fn a_step_result_advances_world_time_by_exactly_one_step() {
    let descriptor: EnvironmentDescriptor = valid("environment-descriptor");
    let previous: WorldObservation = valid("world-observation");
    let result: StepResult = valid("step-result");
    result
        .validate_against(&descriptor, &previous)
        .expect("the valid fixtures agree");

    let mut two_steps = result.clone();
    std::sync::Arc::make_mut(&mut two_steps.observation).world_time = previous
        .world_time
        .checked_add(descriptor.step_duration.checked_mul_int(2).expect("fits"))
        .expect("fits");
    assert_eq!(
        rule_path(two_steps.validate_against(&descriptor, &previous)),
        "observation.worldTime"
    );

    let mut elsewhere = result;
    elsewhere.applied_from_step = U64(11);
    elsewhere.next_step = U64(12);
    std::sync::Arc::make_mut(&mut elsewhere.observation).boundary = U64(12);
    std::sync::Arc::make_mut(&mut elsewhere.observation).sensory_views[0].produced_step = U64(12);
    assert_eq!(
        rule_path(elsewhere.validate_against(&descriptor, &previous)),
        "appliedFromStep"
    );
}

#[test]
fn a_delayed_sensory_view_is_produced_exactly_delay_steps_earlier() {
    let mut descriptor: ViewDescriptor = valid("view-descriptor");
    descriptor.observation_delay_steps = 2;
    let mut view: ViewRef = valid("view-ref");
    view.produced_step = U64(10);
    view.validate_against(&descriptor, Some(12))
        .expect("12 - 2");
    assert_eq!(
        rule_path(view.validate_against(&descriptor, Some(11))),
        "producedStep"
    );
    // The bootstrap window repeats O[0].
    view.produced_step = U64(0);
    view.validate_against(&descriptor, Some(1))
        .expect("max(0, 1 - 2)");
    // A broadcast view is not held to the delay.
    view.validate_against(&descriptor, None)
        .expect("no boundary rule");
}

#[test]
fn a_world_observation_names_only_declared_streams() {
    let descriptor: EnvironmentDescriptor = valid("environment-descriptor");
    let mut observation: WorldObservation = valid("world-observation");
    observation
        .validate_against(&descriptor)
        .expect("the valid fixtures agree");
    observation.audio[0].stream_id = Id::parse("speaker").expect("id");
    assert_eq!(
        rule_path(observation.validate_against(&descriptor)),
        "audio[0].streamId"
    );
}

#[test]
fn a_remainder_lies_below_one_tick() {
    let decision: PreparedDecision = valid("prepared-decision");
    let tick: RationalNs = valid::<AgentInitializeResult>("agent-initialize-result").tick_duration;
    decision
        .validate_against(tick)
        .expect("the valid fixtures agree");
    let mut whole = decision;
    whole.remainder = tick;
    assert_eq!(rule_path(whole.validate_against(tick)), "remainder");
    assert_eq!(
        whole
            .validate_against(RationalNs::ZERO)
            .map_err(|e| e.code_str()),
        Err("FS0104".to_owned())
    );
}

#[test]
fn a_commit_carries_the_input_of_the_next_boundary() {
    let commit: CommitParams = valid("agent-commit-params");
    let mut scope: Scope =
        serde_json::from_str(r#"{"sessionId":"session-1","epoch":"epoch-0","step":"12"}"#)
            .expect("scope");
    commit
        .validate_against(&scope)
        .expect("step 12 commits boundary 13");
    scope.step = U64(13);
    assert_eq!(
        rule_path(commit.validate_against(&scope)),
        "nextInput.boundary"
    );
    scope.step = U64(u64::MAX);
    assert_eq!(
        rule_path(commit.validate_against(&scope)),
        "nextInput.boundary"
    );
    // What a worker checks of params it has validated: the same rule, without the rest.
    assert_eq!(
        rule_path(commit.matches_scope(&scope)),
        "nextInput.boundary"
    );
    scope.step = U64(12);
    commit
        .matches_scope(&scope)
        .expect("step 12 commits boundary 13");
}

#[test]
fn schemas_carry_the_named_limits() {
    let schema = |name: &str| serde_json::to_value((kind(name).schema)()).expect("schema JSON");
    let view = schema("view-descriptor");
    assert_eq!(view["properties"]["width"]["minimum"], json!(1));
    assert_eq!(
        view["properties"]["width"]["maximum"],
        json!(crate::limits::MAX_VIEW_DIMENSION)
    );
    let hello = schema("hello-params");
    let majors = &hello["properties"]["supportedMajors"];
    assert_eq!(majors["minItems"], json!(1));
    assert_eq!(
        majors["maxItems"],
        json!(crate::limits::MAX_SUPPORTED_MAJORS)
    );
    assert_eq!(majors["items"]["maximum"], json!(65_535));
    let failure = schema("session-rpc-failure");
    let message = &failure["$defs"]["DomainError"]["properties"]["message"];
    assert_eq!(
        message["maxLength"],
        json!(crate::limits::MAX_MESSAGE_CODE_POINTS)
    );
}
