//! The `profile` block (a brain model, its parameters and assets) and the asset declaration it
//! shares with an environment's `content`.
//!
//! It decodes what is written; whether an asset's bytes exist or match their pin is the
//! resolver's to check.

use flysim_types::plan::ModelKind;
use kdl::{KdlEntry, KdlNode, KdlValue};

use super::node::{FileDecoder, NodeSpec, ValueChild, present};
use crate::model::{AssetDecl, Profile, Spanned};

const PROFILE: NodeSpec =
    NodeSpec::named_block("the profile's id", &["model", "parameter", "asset"]);
const MODEL: ValueChild = ValueChild::required("model", "the model kind", "model \"synthetic\"");
const PARAMETER: NodeSpec = NodeSpec {
    args: (2, 2),
    arg_desc: "a name and a value",
    props: &[],
    children: &[],
};
const ASSET: NodeSpec = NodeSpec {
    args: (1, 1),
    arg_desc: "the asset's id",
    props: &["path", "sha256", "format"],
    children: &[],
};

/// `profile "<id>" { model "..."; parameter "<name>" <value>; asset ... }`.
pub(super) fn decode_profile(dec: &mut FileDecoder<'_>, node: &KdlNode) -> Option<Profile> {
    let checked = dec.check(node, &PROFILE);
    let id = dec.named_id(&checked, "the profile id");
    let model = dec
        .value(&checked.children, &MODEL, node, |dec, e| {
            dec.choice(e, "the model", &ModelKind::ALL)
        })
        .flatten();
    let mut parameters = Vec::new();
    let mut assets = Vec::new();
    let mut ok = true;
    for child in &checked.children {
        match child.name().value() {
            "parameter" => match decode_parameter(dec, child) {
                Some(p) => parameters.push(p),
                None => ok = false,
            },
            "asset" => match decode_asset(dec, child) {
                Some(a) => assets.push(a),
                None => ok = false,
            },
            _ => {}
        }
    }
    let profile = Profile {
        id: id?,
        model: model?,
        parameters,
        assets,
    };
    ok.then_some(profile)
}

/// `parameter "<name>" <value>`.
fn decode_parameter(
    dec: &mut FileDecoder<'_>,
    node: &KdlNode,
) -> Option<(Spanned<String>, Spanned<serde_json::Value>)> {
    let shape = dec.shape(node, &PARAMETER)?;
    let name = dec.string(shape.args[0], "the parameter name");
    let value = parameter_value(dec, shape.args[1]);
    Some((name?, value?))
}

pub(super) fn parameter_value(
    dec: &mut FileDecoder<'_>,
    entry: &KdlEntry,
) -> Option<Spanned<serde_json::Value>> {
    let value = match entry.value() {
        KdlValue::String(s) => serde_json::Value::from(s.clone()),
        KdlValue::Bool(b) => serde_json::Value::from(*b),
        KdlValue::Integer(n) => {
            let safe = i128::from(flysim_types::limits::MAX_SAFE_INTEGER);
            match i64::try_from(*n) {
                Ok(v) if (-safe..=safe).contains(n) => serde_json::Value::from(v),
                _ => {
                    dec.bad_value(
                        entry,
                        "the parameter value",
                        format!("{n} is outside the exact double range"),
                        Some("write large values as strings".to_owned()),
                    );
                    return None;
                }
            }
        }
        KdlValue::Float(_) => {
            serde_json::Value::from(dec.float(entry, "the parameter value")?.value)
        }
        KdlValue::Null => {
            dec.wrong_type(
                entry,
                "the parameter value",
                "a string, number or boolean",
                Some("leave the parameter out instead of writing #null".to_owned()),
            );
            return None;
        }
    };
    Some(dec.spanned(value, entry.span()))
}

/// `asset "<id>" path="..." sha256="..." format="..."` (also an environment's `content`).
pub(super) fn decode_asset(dec: &mut FileDecoder<'_>, node: &KdlNode) -> Option<AssetDecl> {
    let shape = dec.shape(node, &ASSET)?;
    let id = dec.id(shape.args[0], "the asset id");
    let mut ok = true;
    let path = present(&mut ok, shape.prop("path").map(|e| dec.string(e, "`path`")));
    let sha256 = present(
        &mut ok,
        shape.prop("sha256").map(|e| dec.digest(e, "`sha256`")),
    );
    let format = present(&mut ok, shape.prop("format").map(|e| dec.id(e, "`format`")));
    let asset = AssetDecl {
        id: id?,
        path,
        sha256,
        format,
    };
    ok.then_some(asset)
}
