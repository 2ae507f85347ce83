//! The `task` node: the task's id and, for a declared task, its block of `variable`, `reward`
//! and `done` nodes:
//!
//! ```kdl
//! task "memory-v1" {
//!     variable "score" address=0xc0a0 type="u16le"
//!     variable "lives" address=0xc0a2 type="u8"
//!     variable "action" address=0xc0b0 offsets="0x70" type="u8"
//!     reward "score" weight=1
//!     reward "score" weight=1 on="rise" rule="gains"
//!     reward "lives" "<" 3 weight=-5 rule="lost-life"
//!     done "lives" "==" 0
//! }
//! ```
//!
//! It decodes what is written (types and comparisons by name, integers in range); whether a
//! task takes a block, whether an address is readable and whether a name is declared are the
//! resolver's to check.

use flysim_types::Id;
use flysim_types::memory::{Change, Comparison, MAX_CONDITION_VALUE, MAX_OFFSETS, MemoryType};
use kdl::{KdlEntry, KdlNode};

use super::node::{FileDecoder, NodeSpec};
use crate::model::{ConditionDecl, RewardDecl, Spanned, TaskBody, VariableDecl};

const TASK: NodeSpec = NodeSpec::named_block("the task's id", &["variable", "reward", "done"]);
const VARIABLE: NodeSpec = NodeSpec {
    args: (1, 1),
    arg_desc: "the variable's name",
    props: &["address", "type", "bytes", "bit", "offsets"],
    children: &[],
};
const REWARD: NodeSpec = NodeSpec {
    args: (1, 3),
    arg_desc: "the variable, and optionally a comparison and a value",
    props: &["weight", "rule", "port", "on"],
    children: &[],
};
const DONE: NodeSpec = NodeSpec {
    args: (3, 3),
    arg_desc: "a variable, a comparison and a value",
    props: &[],
    children: &[],
};

/// `task "<id>"`, with its block when one is written: the id, and the block (`None` when there
/// is none or it was refused, which is reported).
pub(super) fn decode_task(
    dec: &mut FileDecoder<'_>,
    node: &KdlNode,
) -> (Option<Spanned<Id>>, Option<TaskBody>) {
    let checked = dec.check(node, &TASK);
    let id = dec.named_id(&checked, "the task id");
    if node.children().is_none() {
        return (id, None);
    }
    let mut ok = checked.shape.is_some();
    let variables = dec.each(&mut ok, checked.named("variable"), decode_variable);
    let rewards = dec.each(&mut ok, checked.named("reward"), decode_reward);
    let done = dec.each(&mut ok, checked.named("done"), decode_done);
    let body = TaskBody {
        span: dec.span(node.name().span()),
        variables,
        rewards,
        done,
    };
    (id, ok.then_some(body))
}

/// A property that must be written, or a missing-property diagnostic.
fn required_prop<'n>(
    dec: &mut FileDecoder<'_>,
    node: &KdlNode,
    entry: Option<&'n KdlEntry>,
    name: &str,
    example: &str,
) -> Option<&'n KdlEntry> {
    if entry.is_none() {
        dec.push(crate::diag::Problem::Missing {
            src: dec.src(),
            what: format!("property `{name}`"),
            place: format!("on `{}`", node.name().value()),
            at: node.name().span(),
            help: Some(format!("write `{example}`")),
        });
    }
    entry
}

/// `offsets="0x70 0x8"`: a pointer chain's offsets, each an integer as KDL writes one (`0x70`,
/// `112`), separated by spaces; one to [`MAX_OFFSETS`].
fn decode_offsets(dec: &mut FileDecoder<'_>, entry: &KdlEntry) -> Option<Spanned<Vec<u32>>> {
    let text = dec.string(entry, "`offsets` (a pointer chain's offsets)")?;
    let parse = |word: &str| match word.strip_prefix("0x") {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => word.parse::<u32>().ok(),
    };
    let words: Vec<&str> = text.value.split_whitespace().collect();
    let offsets: Option<Vec<u32>> = words.iter().map(|w| parse(w)).collect();
    let reason = match &offsets {
        None => Some(format!("{:?} is not a list of offsets", text.value)),
        Some(o) if o.is_empty() || o.len() > MAX_OFFSETS => Some(format!(
            "a pointer chain has 1 to {MAX_OFFSETS} offsets, not {}",
            o.len()
        )),
        Some(_) => None,
    };
    if let Some(reason) = reason {
        dec.bad_value(
            entry,
            "`offsets`",
            reason,
            Some("write the offsets as integers separated by spaces: `offsets=\"0x70\"` or `offsets=\"0x10 0x8\"`".to_owned()),
        );
        return None;
    }
    Some(Spanned {
        value: offsets?,
        span: text.span,
    })
}

/// `variable "<name>" address=<n> type="<type>" [bytes=<n>] [bit=<n>] [offsets="<n> ..."]`.
fn decode_variable(dec: &mut FileDecoder<'_>, node: &KdlNode) -> Option<VariableDecl> {
    let checked = dec.check(node, &VARIABLE);
    let name = dec.named_id(&checked, "the variable name");
    let shape = checked.shape?;
    let example = "variable \"lives\" address=0xc0a2 type=\"u8\"";
    let address = required_prop(dec, node, shape.prop("address"), "address", example)
        .and_then(|e| dec.int(e, "`address`", 0, u32::MAX));
    let kind = required_prop(dec, node, shape.prop("type"), "type", example)
        .and_then(|e| dec.choice(e, "the variable's type", &MemoryType::ALL));
    let bytes = shape
        .prop("bytes")
        .map(|e| dec.int(e, "`bytes` (a bcd variable's width)", 1u8, 4));
    let bit = shape
        .prop("bit")
        .map(|e| dec.int(e, "`bit` (a bool variable's bit)", 0u8, 7));
    let offsets = shape.prop("offsets").map(|e| decode_offsets(dec, e));
    let mut ok = true;
    let bytes = super::node::present(&mut ok, bytes);
    let bit = super::node::present(&mut ok, bit);
    let offsets = super::node::present(&mut ok, offsets);
    let variable = VariableDecl {
        name: name?,
        address: address?,
        kind: kind?,
        bytes,
        bit,
        offsets,
    };
    ok.then_some(variable)
}

/// The comparison and value of a condition, from its two entries.
fn condition(
    dec: &mut FileDecoder<'_>,
    variable: &Spanned<Id>,
    op: &KdlEntry,
    value: &KdlEntry,
) -> Option<ConditionDecl> {
    let op = dec.choice(op, "the comparison", &Comparison::ALL);
    let value = dec.int(
        value,
        "the value compared with",
        -MAX_CONDITION_VALUE,
        MAX_CONDITION_VALUE,
    );
    Some(ConditionDecl {
        variable: variable.clone(),
        op: op?,
        value: value?,
    })
}

/// `reward "<variable>" ["<op>" <value>] weight=<w> [on="rise"|"fall"] [rule="<id>"] [port="<id>"]`.
fn decode_reward(dec: &mut FileDecoder<'_>, node: &KdlNode) -> Option<RewardDecl> {
    let shape = dec.shape(node, &REWARD)?;
    let variable = dec.id(shape.args[0], "the rewarded variable")?;
    let when = match shape.args[1..] {
        [] => None,
        [op, value] => Some(condition(dec, &variable, op, value)?),
        [extra] => {
            dec.bad_value(
                extra,
                "the reward's condition",
                "a condition is a comparison and a value".to_owned(),
                Some("write `reward \"lives\" \"<\" 3 weight=-5`, or only the variable to pay its change".to_owned()),
            );
            return None;
        }
        _ => return None,
    };
    let weight = required_prop(
        dec,
        node,
        shape.prop("weight"),
        "weight",
        "reward \"score\" weight=1",
    )
    .and_then(|e| {
        let weight = dec.float(e, "`weight`")?;
        if weight.value == 0.0 {
            dec.bad_value(e, "`weight`", "a weight of 0 pays nothing".to_owned(), None);
            return None;
        }
        Some(weight)
    });
    let rule = shape.prop("rule").map(|e| dec.id(e, "the rule id"));
    let port = shape.prop("port").map(|e| dec.id(e, "the port id"));
    let on = shape
        .prop("on")
        .map(|e| dec.choice(e, "`on` (which changes pay)", &Change::ALL));
    let mut ok = true;
    let rule = super::node::present(&mut ok, rule);
    let port = super::node::present(&mut ok, port);
    let on = super::node::present(&mut ok, on);
    let reward = RewardDecl {
        variable,
        when,
        weight: weight?,
        on,
        rule,
        port,
    };
    ok.then_some(reward)
}

/// `done "<variable>" "<op>" <value>`.
fn decode_done(dec: &mut FileDecoder<'_>, node: &KdlNode) -> Option<ConditionDecl> {
    let shape = dec.shape(node, &DONE)?;
    let variable = dec.id(shape.args[0], "the variable")?;
    condition(dec, &variable, shape.args[1], shape.args[2])
}
