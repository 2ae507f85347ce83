//! The `environment` block and its parts: the backend, its pinned identity (`world`,
//! `revision`, `version`), `content`, and each `port` with its `controller`, `buttons` and
//! `axis` nodes.
//!
//! It decodes what is written; which backends exist, which identity each is pinned by and which
//! buttons its controller has are the resolver's to check.

use flysim_types::Id;
use flysim_types::plan::AxisRange;
use kdl::KdlNode;

use super::node::{FileDecoder, NodeSpec, ValueChild, present};
use super::profile::decode_asset;
use crate::diag::Problem;
use crate::model::{Axis, Environment, IdentityKind, Port, Spanned};

const ENVIRONMENT: NodeSpec = NodeSpec {
    args: (1, 1),
    arg_desc: "the environment's id",
    props: &["backend"],
    children: &["world", "revision", "version", "content", "port"],
};
const PORT: NodeSpec = NodeSpec::named_block("the port's id", &["controller", "buttons", "axis"]);
const CONTROLLER: NodeSpec = NodeSpec {
    args: (1, 1),
    arg_desc: "the controller schema's id",
    props: &["version"],
    children: &[],
};
const BUTTONS: NodeSpec = NodeSpec {
    args: (0, usize::MAX),
    arg_desc: "button ids",
    props: &[],
    children: &[],
};
const AXIS: NodeSpec = NodeSpec {
    args: (1, 1),
    arg_desc: "the axis id",
    props: &["range", "neutral"],
    children: &[],
};

/// `environment "<id>" backend="..." { <identity> "..."; content ...; port ... }`.
pub(super) fn decode_environment(dec: &mut FileDecoder<'_>, node: &KdlNode) -> Option<Environment> {
    let checked = dec.check(node, &ENVIRONMENT);
    let mut ok = checked.shape.is_some();
    let id = dec.named_id(&checked, "the environment id");
    let backend = match checked.shape.as_ref().map(|s| s.prop("backend")) {
        Some(Some(e)) => dec.string(e, "`backend`"),
        Some(None) => {
            dec.push(Problem::Missing {
                src: dec.src(),
                what: "property `backend`".to_owned(),
                place: "on `environment`".to_owned(),
                at: node.name().span(),
                help: Some(
                    "name the backend: backend=\"arena\", \"binjgb\" or \"dolphin\"".to_owned(),
                ),
            });
            None
        }
        None => None,
    };
    let mut identity = Vec::new();
    for kind in [
        IdentityKind::World,
        IdentityKind::Revision,
        IdentityKind::Version,
    ] {
        let child = ValueChild::optional(kind.node(), "the pinned identity string");
        let what = format!("`{}`", kind.node());
        let value = dec.value(&checked.children, &child, node, |dec, e| {
            dec.string(e, &what)
        });
        if let Some(v) = present(&mut ok, value) {
            identity.push((kind, v));
        }
    }
    let content = dec
        .once(&checked.children, "content")
        .map(|n| decode_asset(dec, n));
    let content = present(&mut ok, content);
    let ports = dec.each(&mut ok, checked.named("port"), decode_port);
    let environment = Environment {
        id: id?,
        backend: backend?,
        identity,
        content,
        ports,
    };
    ok.then_some(environment)
}

/// `port "<id>" { controller "<id>" version=<n>; buttons "<id>"...; axis "<id>" ... }`.
fn decode_port(dec: &mut FileDecoder<'_>, node: &KdlNode) -> Option<Port> {
    let checked = dec.check(node, &PORT);
    let id = dec.named_id(&checked, "the port id");
    let mut ok = true;
    let controller = dec
        .required(
            &checked.children,
            "controller",
            node,
            "controller \"pad\" version=1",
        )
        .and_then(|c| decode_controller(dec, c));
    let buttons = dec
        .once(&checked.children, "buttons")
        .map(|b| decode_buttons(dec, b));
    let buttons = present(&mut ok, buttons).unwrap_or_default();
    let axes = dec.each(&mut ok, checked.named("axis"), decode_axis);
    let (controller, version) = controller?;
    let port = Port {
        id: id?,
        controller,
        version,
        buttons,
        axes,
    };
    ok.then_some(port)
}

/// `controller "<schema id>" version=<n>`: the schema's id and version (1 when not written).
fn decode_controller(
    dec: &mut FileDecoder<'_>,
    node: &KdlNode,
) -> Option<(Spanned<Id>, Spanned<u32>)> {
    let shape = dec.shape(node, &CONTROLLER)?;
    let id = dec.id(shape.args[0], "the controller id");
    let version = match shape.prop("version") {
        Some(e) => dec.int(e, "the controller version", 1, 65_535),
        None => Some(dec.spanned(1, node.name().span())),
    };
    Some((id?, version?))
}

/// `buttons "<id>"...`: every button id, or `None` when any is refused.
fn decode_buttons(dec: &mut FileDecoder<'_>, node: &KdlNode) -> Option<Vec<Spanned<Id>>> {
    let shape = dec.shape(node, &BUTTONS)?;
    let mut ok = true;
    let mut buttons = Vec::new();
    for e in shape.args {
        match dec.id(e, "a button id") {
            Some(id) => buttons.push(id),
            None => ok = false,
        }
    }
    ok.then_some(buttons)
}

/// `axis "<id>" range="bipolar"|"unit" neutral=<number>` (neutral 0 when not written).
fn decode_axis(dec: &mut FileDecoder<'_>, node: &KdlNode) -> Option<Axis> {
    let shape = dec.shape(node, &AXIS)?;
    let id = dec.id(shape.args[0], "the axis id");
    let range = match shape.prop("range") {
        Some(e) => dec.choice(
            e,
            "the axis range",
            &[("bipolar", AxisRange::Bipolar), ("unit", AxisRange::Unit)],
        ),
        None => {
            dec.push(Problem::Missing {
                src: dec.src(),
                what: "property `range`".to_owned(),
                place: "on `axis`".to_owned(),
                at: node.name().span(),
                help: Some("add range=\"bipolar\" or range=\"unit\"".to_owned()),
            });
            None
        }
    };
    let neutral = match shape.prop("neutral") {
        Some(e) => dec.float(e, "the axis neutral value"),
        None => Some(dec.spanned(0.0, node.name().span())),
    };
    Some(Axis {
        id: id?,
        range: range?.value,
        neutral: neutral?,
    })
}
