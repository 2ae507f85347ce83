//! The `sweep` block: its axes as written (`master-seed from=A to=B`, `master-seed "S" ...`,
//! `vary "<target>" <value> ...`), each value decoded by the kind its target takes.
//!
//! It decodes shape and values; whether a varied profile exists, whether two axes vary one
//! target and how large the family is are the sweep's own checks (`crate::sweep`). It does not
//! know what a member plan is.

use flysim_types::{Id, U64};
use kdl::{KdlEntry, KdlNode};

use super::node::{FileDecoder, NodeSpec};
use crate::diag::{Problem, SweepProblem};
use crate::model::Spanned;
use crate::sweep::{Axis, MAX_MEMBERS, Sweep, Target, Value};

const SWEEP: NodeSpec = NodeSpec {
    args: (0, 0),
    arg_desc: "no arguments",
    props: &[],
    children: &["master-seed", "vary"],
};
const MASTER_SEED: NodeSpec = NodeSpec {
    args: (0, usize::MAX),
    arg_desc: "master seeds, or `from=` and `to=`",
    props: &["from", "to"],
    children: &[],
};
const VARY: NodeSpec = NodeSpec {
    args: (1, usize::MAX),
    arg_desc: "a target and its values",
    props: &[],
    children: &[],
};

/// The targets a sweep can vary, for help texts.
const TARGETS: &str = "`master-seed`, `run.steps`, `profile.<id>.parameter.<name>`";

/// `sweep { master-seed ...; vary "<target>" ... }`.
pub(super) fn decode_sweep(dec: &mut FileDecoder<'_>, node: &KdlNode) -> Option<Sweep> {
    let checked = dec.check(node, &SWEEP);
    let mut ok = checked.shape.is_some();
    let mut axes = Vec::new();
    for child in &checked.children {
        let axis = match child.name().value() {
            "master-seed" => master_seed_axis(dec, child),
            _ => vary_axis(dec, child),
        };
        match axis {
            Some(a) => axes.push(a),
            None => ok = false,
        }
    }
    if axes.is_empty() && ok {
        dec.push(Problem::Missing {
            src: dec.src(),
            what: "an axis".to_owned(),
            place: "in `sweep`".to_owned(),
            at: node.name().span(),
            help: Some("add `master-seed from=0 to=9` or `vary \"run.steps\" 300 600`".to_owned()),
        });
        ok = false;
    }
    let sweep = Sweep {
        span: dec.span(node.name().span()),
        block: node.span(),
        axes,
    };
    ok.then_some(sweep)
}

/// `master-seed from=A to=B` (every seed from A to B, both included) or `master-seed "S" ...`.
fn master_seed_axis(dec: &mut FileDecoder<'_>, node: &KdlNode) -> Option<Axis> {
    let shape = dec.shape(node, &MASTER_SEED)?;
    let target = dec.spanned(Target::MasterSeed, node.name().span());
    let span = target.span;
    let (from, to) = (shape.prop("from"), shape.prop("to"));
    if from.is_none() && to.is_none() {
        let values = seed_values(dec, &shape.args)?;
        return non_empty(dec, node, target, values);
    }
    if !shape.args.is_empty() {
        dec.push(Problem::Unexpected {
            src: dec.src(),
            what: "arguments".to_owned(),
            node: "master-seed".to_owned(),
            at: shape.args[0].span(),
            help: Some("write either a range, `master-seed from=0 to=9`, or a list of seeds, `master-seed \"1\" \"7\"`".to_owned()),
        });
        return None;
    }
    let (Some(from), Some(to)) = (from, to) else {
        dec.push(Problem::Missing {
            src: dec.src(),
            what: if from.is_none() {
                "property `from`"
            } else {
                "property `to`"
            }
            .to_owned(),
            place: "on `master-seed`".to_owned(),
            at: node.name().span(),
            help: Some("a range names both ends: `master-seed from=0 to=9`".to_owned()),
        });
        return None;
    };
    let low = dec.int(from, "`from`", 0, u64::MAX);
    let high = dec.int(to, "`to`", 0, u64::MAX);
    let (low, high) = (low?.value, high?.value);
    if low > high {
        dec.push(Problem::Sweep(SweepProblem::EmptyAxis {
            src: dec.src(),
            target: Target::MasterSeed.label(),
            reason: format!("the range from {low} to {high} runs backwards"),
            at: node.span(),
            help: Some(format!("write `master-seed from={high} to={low}`")),
        }));
        return None;
    }
    let count = u128::from(high - low) + 1;
    if count > MAX_MEMBERS as u128 {
        dec.push(Problem::Sweep(SweepProblem::TooManyMembers {
            src: dec.src(),
            members: count,
            limit: MAX_MEMBERS,
            at: node.span(),
        }));
        return None;
    }
    let at = node.span();
    let values = (low..=high)
        .map(|seed| dec.spanned(Value::Seed(seed.to_string()), at))
        .collect();
    Some(Axis {
        span,
        target,
        values,
    })
}

/// Master seeds written as canonical U64 strings.
fn seed_values(dec: &mut FileDecoder<'_>, entries: &[&KdlEntry]) -> Option<Vec<Spanned<Value>>> {
    let mut ok = true;
    let mut values = Vec::new();
    for entry in entries {
        let Some(text) = dec.string(entry, "a master seed") else {
            ok = false;
            continue;
        };
        match U64::parse(&text.value) {
            Ok(_) => values.push(dec.spanned(Value::Seed(text.value), entry.span())),
            Err(e) => {
                dec.bad_value(
                    entry,
                    "a master seed",
                    e.to_string(),
                    Some(
                        "a master seed is a U64 string in its one spelling, e.g. \"42\"".to_owned(),
                    ),
                );
                ok = false;
            }
        }
    }
    ok.then_some(values)
}

/// `vary "<target>" <value> ...`.
fn vary_axis(dec: &mut FileDecoder<'_>, node: &KdlNode) -> Option<Axis> {
    let shape = dec.shape(node, &VARY)?;
    let written = dec.string(shape.args[0], "the sweep target")?;
    let Some(target) = parse_target(&written.value) else {
        dec.push(Problem::Sweep(SweepProblem::UnknownTarget {
            src: dec.src(),
            target: written.value.clone(),
            reason: "it is not a path a sweep knows".to_owned(),
            at: shape.args[0].span(),
            help: Some(format!("a sweep varies {TARGETS}")),
        }));
        return None;
    };
    let target = Spanned {
        value: target,
        span: written.span,
    };
    let entries = &shape.args[1..];
    let values = match &target.value {
        Target::MasterSeed => seed_values(dec, entries)?,
        Target::RunSteps => {
            let mut ok = true;
            let values = dec.each_entry(&mut ok, entries, |dec, e| {
                let steps = dec.int(e, "`run.steps`", 1, u64::MAX)?;
                Some(dec.spanned(Value::Steps(steps.value), e.span()))
            });
            ok.then_some(values)?
        }
        Target::Parameter { .. } => {
            let mut ok = true;
            let values = dec.each_entry(&mut ok, entries, |dec, e| {
                let value = super::profile::parameter_value(dec, e)?;
                Some(dec.spanned(Value::Parameter(value.value), e.span()))
            });
            ok.then_some(values)?
        }
    };
    non_empty(dec, node, target, values)
}

/// The axis, unless it has no value (then refused).
fn non_empty(
    dec: &mut FileDecoder<'_>,
    node: &KdlNode,
    target: Spanned<Target>,
    values: Vec<Spanned<Value>>,
) -> Option<Axis> {
    if values.is_empty() {
        let example = match target.value {
            Target::MasterSeed => "master-seed from=0 to=9".to_owned(),
            Target::RunSteps => "vary \"run.steps\" 300 600".to_owned(),
            Target::Parameter { .. } => format!("vary \"{}\" 0.25 0.5", target.value.label()),
        };
        dec.push(Problem::Sweep(SweepProblem::EmptyAxis {
            src: dec.src(),
            target: target.value.label(),
            reason: "the axis lists none".to_owned(),
            at: node.span(),
            help: Some(format!("list its values: `{example}`")),
        }));
        return None;
    }
    Some(Axis {
        span: dec.span(node.name().span()),
        target,
        values,
    })
}

/// A target as written: `master-seed`, `run.steps`, `profile.<id>.parameter.<name>`.
fn parse_target(text: &str) -> Option<Target> {
    match text {
        "master-seed" => return Some(Target::MasterSeed),
        "run.steps" => return Some(Target::RunSteps),
        _ => {}
    }
    let rest = text.strip_prefix("profile.")?;
    let (profile, name) = rest.rsplit_once(".parameter.")?;
    let profile = Id::parse(profile).ok()?;
    (!name.is_empty()).then(|| Target::Parameter {
        profile,
        name: name.to_owned(),
    })
}

impl FileDecoder<'_> {
    /// Decodes each entry with `decode`, keeping those it accepts; a refused one clears `ok`.
    fn each_entry<'n, T>(
        &mut self,
        ok: &mut bool,
        entries: &[&'n KdlEntry],
        mut decode: impl FnMut(&mut Self, &'n KdlEntry) -> Option<T>,
    ) -> Vec<T> {
        let mut decoded = Vec::new();
        for entry in entries {
            match decode(self, entry) {
                Some(v) => decoded.push(v),
                None => *ok = false,
            }
        }
        decoded
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_as_written_and_others_do_not() {
        assert_eq!(parse_target("master-seed"), Some(Target::MasterSeed));
        assert_eq!(parse_target("run.steps"), Some(Target::RunSteps));
        assert_eq!(
            parse_target("profile.counter.fly.parameter.press-rate"),
            Some(Target::Parameter {
                profile: Id::parse("counter.fly").unwrap(),
                name: "press-rate".to_owned()
            })
        );
        assert_eq!(parse_target("profile.counter-fly.parameter."), None);
        assert_eq!(parse_target("agent.fly-a.profile.gain"), None);
        assert_eq!(parse_target("run.mode"), None);
    }
}
