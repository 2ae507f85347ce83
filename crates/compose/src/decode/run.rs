//! The `run` block: the step count, mode, transport, checkpoint interval and thread budget.
//!
//! It decodes what is written; whether a mode and a transport go together, and whether the
//! agents fit the budget, are the resolver's to check.

use flysim_types::limits::MAX_WORKER_THREADS;
use flysim_types::plan::{RunMode, Transport};
use kdl::KdlNode;

use super::node::{FileDecoder, NodeSpec, ValueChild, present};
use crate::diag::Problem;
use crate::model::{Run, Spanned};

const RUN: NodeSpec = NodeSpec {
    args: (0, 0),
    arg_desc: "no arguments",
    props: &[],
    children: &["steps", "mode", "transport", "checkpoint", "max-threads"],
};
const STEPS: ValueChild = ValueChild::required("steps", "a step count", "steps 600");
const MODE: ValueChild = ValueChild::optional("mode", "a mode");
const TRANSPORT: ValueChild = ValueChild::optional("transport", "a transport");
const CHECKPOINT: NodeSpec = NodeSpec {
    args: (0, 0),
    arg_desc: "no arguments",
    props: &["every"],
    children: &[],
};
const MAX_THREADS: ValueChild = ValueChild::optional("max-threads", "a thread count");

/// `run { steps <n>; mode "..."; transport "..."; checkpoint every=<n>; max-threads <n> }`.
pub(super) fn decode_run(dec: &mut FileDecoder<'_>, node: &KdlNode) -> Option<Run> {
    let checked = dec.check(node, &RUN);
    let mut ok = checked.shape.is_some();
    let children = &checked.children;
    let steps = dec.value(children, &STEPS, node, |dec, e| {
        dec.int(e, "`steps`", 1, u64::MAX)
    });
    let mode = dec.value(children, &MODE, node, |dec, e| {
        dec.choice(e, "the run mode", &RunMode::ALL)
    });
    let transport = dec.value(children, &TRANSPORT, node, |dec, e| {
        dec.choice(e, "the transport", &Transport::ALL)
    });
    let checkpoint = dec
        .once(children, "checkpoint")
        .map(|n| decode_checkpoint(dec, n));
    let max_threads = dec.value(children, &MAX_THREADS, node, |dec, e| {
        dec.int(e, "`max-threads`", 1, MAX_WORKER_THREADS)
    });
    let run = Run {
        span: dec.span(node.name().span()),
        steps: steps.flatten()?,
        mode: present(&mut ok, mode),
        transport: present(&mut ok, transport),
        checkpoint_every: present(&mut ok, checkpoint),
        max_threads: present(&mut ok, max_threads),
    };
    ok.then_some(run)
}

/// `checkpoint every=<n>`: the interval in steps.
fn decode_checkpoint(dec: &mut FileDecoder<'_>, node: &KdlNode) -> Option<Spanned<u64>> {
    let shape = dec.shape(node, &CHECKPOINT)?;
    match shape.prop("every") {
        Some(e) => dec.int(e, "`every`", 1, u64::MAX),
        None => {
            dec.push(Problem::Missing {
                src: dec.src(),
                what: "property `every`".to_owned(),
                place: "on `checkpoint`".to_owned(),
                at: node.name().span(),
                help: Some("write `checkpoint every=100`".to_owned()),
            });
            None
        }
    }
}
