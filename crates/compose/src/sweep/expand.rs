//! A sweep's grid: its size, the values of member `i` (the axes as digits of a mixed-radix
//! number, the last axis fastest), the checks of the block against the composition (a varied
//! profile exists, no target varied twice, not too many members), and one member's
//! composition put together and resolved.
//!
//! It does not know the sweep digest or how a family is presented.

use flysim_types::spec::Specs;

use super::{Axis, MAX_MEMBERS, Member, Sweep, Target, Value};
use crate::assets::AssetRegistry;
use crate::diag::{Diag, Problem, SweepProblem};
use crate::model::{Composition, Spanned};
use crate::resolve;

/// How many members the sweep has (checked against [`MAX_MEMBERS`] before anything expands).
pub(super) fn count(sweep: &Sweep) -> usize {
    sweep.axes.iter().map(|a| a.values.len()).product()
}

/// The product of the axes' sizes, saturating.
fn product(sweep: &Sweep) -> u128 {
    sweep
        .axes
        .iter()
        .fold(1u128, |n, a| n.saturating_mul(a.values.len() as u128))
}

/// The value each axis gives member `index`, in axis order.
pub(super) fn values(sweep: &Sweep, index: usize) -> Vec<(&Axis, &Spanned<Value>)> {
    let mut rest = index;
    let mut picked: Vec<(&Axis, &Spanned<Value>)> = Vec::with_capacity(sweep.axes.len());
    for axis in sweep.axes.iter().rev() {
        let n = axis.values.len();
        picked.push((axis, &axis.values[rest % n]));
        rest /= n;
    }
    picked.reverse();
    picked
}

/// The block's problems against the composition: an undeclared profile, a target varied
/// twice, too many members.
pub(super) fn check(comp: &Composition, sweep: &Sweep) -> Vec<Diag> {
    let src = |file: usize| comp.sources[file].src.clone();
    let mut diags = Vec::new();
    for (i, axis) in sweep.axes.iter().enumerate() {
        let target = &axis.target;
        if let Target::Parameter { profile, .. } = &target.value
            && !comp.profiles.iter().any(|p| &p.id.value == profile)
        {
            let declared: Vec<String> = comp
                .profiles
                .iter()
                .map(|p| format!("`{}`", p.id.value))
                .collect();
            let problem = SweepProblem::UnknownTarget {
                src: src(target.span.file),
                target: target.value.label(),
                reason: format!("the composition declares no profile `{profile}`"),
                at: target.span.at,
                help: Some(format!("the profiles declared: {}", declared.join(", "))),
            };
            diags.push(Diag::new(target.span.file, Problem::Sweep(problem)));
        }
        if let Some(first) = sweep.axes[..i]
            .iter()
            .find(|a| a.target.value == target.value)
        {
            let problem = SweepProblem::RepeatedTarget {
                src: src(axis.span.file),
                target: target.value.label(),
                at: axis.span.at,
                first: first.span.at,
            };
            diags.push(Diag::new(axis.span.file, Problem::Sweep(problem)));
        }
    }
    let members = product(sweep);
    if members > MAX_MEMBERS as u128 {
        let problem = SweepProblem::TooManyMembers {
            src: src(sweep.span.file),
            members,
            limit: MAX_MEMBERS,
            at: sweep.span.at,
        };
        diags.push(Diag::new(sweep.span.file, Problem::Sweep(problem)));
    }
    diags
}

/// Puts `value` in place of what the composition says of `target`.
fn apply(comp: &mut Composition, target: &Target, value: &Spanned<Value>) {
    let span = value.span;
    match (target, &value.value) {
        (Target::MasterSeed, Value::Seed(seed)) => {
            comp.master_seed = Some(Spanned {
                value: seed.clone(),
                span,
            });
        }
        (Target::RunSteps, Value::Steps(steps)) => {
            if let Some(run) = comp.run.as_mut() {
                run.steps = Spanned {
                    value: *steps,
                    span,
                };
            }
        }
        (Target::Parameter { profile, name }, Value::Parameter(v)) => {
            let Some(p) = comp.profiles.iter_mut().find(|p| &p.id.value == profile) else {
                return;
            };
            let v = Spanned {
                value: v.clone(),
                span,
            };
            match p.parameters.iter_mut().find(|(n, _)| &n.value == name) {
                Some((_, old)) => *old = v,
                None => p.parameters.push((
                    Spanned {
                        value: name.clone(),
                        span,
                    },
                    v,
                )),
            }
        }
        // The decoder gives each target values of its own kind only.
        _ => {}
    }
}

/// Member `index`'s composition, resolved.
pub(super) fn member(
    comp: &Composition,
    sweep: &Sweep,
    index: usize,
    registry: Option<&AssetRegistry>,
    specs: Specs<'_>,
) -> Result<Member, Vec<Diag>> {
    let mut one = comp.clone();
    let picked = values(sweep, index);
    for (axis, value) in &picked {
        apply(&mut one, &axis.target.value, value);
    }
    let plan = resolve::resolve(&one, registry, specs)?;
    Ok(Member {
        index,
        values: picked
            .iter()
            .map(|(axis, value)| (axis.target.value.label(), value.value.to_json()))
            .collect(),
        plan,
    })
}

/// Adds `found` to `diags`, leaving out a problem already there (same code, file and place):
/// members that share a refused value report it once.
pub(super) fn merge(diags: &mut Vec<Diag>, found: Vec<Diag>) {
    let place = |d: &Diag| {
        let offset = miette::Diagnostic::labels(d.problem())
            .and_then(|mut l| l.next())
            .map(|l| l.offset());
        (d.code(), d.file(), offset, d.to_string())
    };
    for diag in found {
        let key = place(&diag);
        if !diags.iter().any(|d| place(d) == key) {
            diags.push(diag);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Span;

    fn axis(n: usize) -> Axis {
        let span = Span {
            file: 0,
            at: (0, 0).into(),
        };
        Axis {
            span,
            target: Spanned {
                value: Target::RunSteps,
                span,
            },
            values: (1..=n as u64)
                .map(|s| Spanned {
                    value: Value::Steps(s),
                    span,
                })
                .collect(),
        }
    }

    #[test]
    fn the_last_axis_runs_fastest() {
        let sweep = Sweep {
            span: axis(1).span,
            block: (0, 0).into(),
            axes: vec![axis(3), axis(2)],
        };
        assert_eq!(count(&sweep), 6);
        let digits = |i| -> Vec<Value> {
            values(&sweep, i)
                .iter()
                .map(|(_, v)| v.value.clone())
                .collect()
        };
        assert_eq!(digits(0), [Value::Steps(1), Value::Steps(1)]);
        assert_eq!(digits(1), [Value::Steps(1), Value::Steps(2)]);
        assert_eq!(digits(2), [Value::Steps(2), Value::Steps(1)]);
        assert_eq!(digits(5), [Value::Steps(3), Value::Steps(2)]);
    }
}
