//! The GameCube controller schema and the inspection schema of a watch list, each with a
//! `SchemaRef` whose digest is the SHA-256 of its canonical declaration.
//!
//! A declaration is the JSON object `{registry, id, version, source, fields}` with registry
//! `fly-session-payload-schema-v1` (contracts §2.4); its digest is taken over the RFC 8785 bytes,
//! so it is a function of the declaration alone.

use flysim_types::workers::{AxisDecl, AxisRange, ControllerSchema};
use flysim_types::{Id, SchemaRef};
use serde_json::{Value, json};

use crate::canonical;

/// The registry every payload schema declaration names.
pub const SCHEMA_REGISTRY: &str = "fly-session-payload-schema-v1";
/// Who declares the schemas of this crate.
pub const SCHEMA_SOURCE: &str = "flysim-dolphin";
/// The id of the GameCube controller schema.
pub const GAMECUBE_PAD_SCHEMA_ID: &str = "gamecube-pad-v1";
/// The id of the inspection schema of a watch list.
pub const INSPECTION_SCHEMA_ID: &str = "dolphin-watch-v1";

/// The twelve digital buttons, in schema order, with the pipe token Dolphin's `Pipe` device
/// knows each by.
pub const BUTTONS: [(&str, &str); 12] = [
    ("a", "A"),
    ("b", "B"),
    ("x", "X"),
    ("y", "Y"),
    ("z", "Z"),
    ("start", "START"),
    ("l", "L"),
    ("r", "R"),
    ("d-up", "D_UP"),
    ("d-down", "D_DOWN"),
    ("d-left", "D_LEFT"),
    ("d-right", "D_RIGHT"),
];

/// The six axes in schema order: the two sticks (bipolar, up and right positive) and the two
/// analog triggers (unit, 0 released).
pub const AXES: [(&str, AxisRange); 6] = [
    ("main-x", AxisRange::Bipolar),
    ("main-y", AxisRange::Bipolar),
    ("c-x", AxisRange::Bipolar),
    ("c-y", AxisRange::Bipolar),
    ("l-analog", AxisRange::Unit),
    ("r-analog", AxisRange::Unit),
];

/// The fields of the GameCube controller declaration: its buttons and axes.
fn pad_fields() -> Value {
    json!({
        "buttons": BUTTONS.iter().map(|(b, _)| *b).collect::<Vec<_>>(),
        "axes": AXES
            .iter()
            .map(|(a, range)| json!({"id": a, "range": range, "neutral": 0}))
            .collect::<Vec<_>>(),
    })
}

/// The canonical declaration of a schema.
#[must_use]
pub fn declaration(schema_id: &str, version: u32, fields: Value) -> Value {
    json!({
        "registry": SCHEMA_REGISTRY,
        "id": schema_id,
        "version": version,
        "source": SCHEMA_SOURCE,
        "fields": fields,
    })
}

/// The `SchemaRef` of a declaration: its id (one of this crate's constants), version and
/// canonical digest.
#[must_use]
pub fn schema_ref(schema_id: &'static str, version: u32, fields: Value) -> SchemaRef {
    let digest = canonical::digest(&declaration(schema_id, version, fields));
    SchemaRef {
        id: Id::from_static(schema_id),
        version,
        digest,
    }
}

/// The GameCube standard controller: 12 buttons, two bipolar sticks (4 axes) and two unit
/// triggers, every neutral 0.
#[must_use]
pub fn gamecube_pad() -> ControllerSchema {
    ControllerSchema {
        schema: schema_ref(GAMECUBE_PAD_SCHEMA_ID, 1, pad_fields()),
        buttons: BUTTONS.iter().map(|(b, _)| Id::from_static(b)).collect(),
        axes: AXES
            .iter()
            .map(|(a, range)| AxisDecl {
                id: Id::from_static(a),
                range: *range,
                neutral: 0.0,
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use flysim_types::Payload as _;

    use super::*;

    #[test]
    fn the_pad_schema_is_valid_and_has_twelve_buttons_and_six_axes() {
        let pad = gamecube_pad();
        pad.validate().unwrap();
        assert_eq!(pad.buttons.len(), 12);
        assert_eq!(pad.axes.len(), 6);
        assert_eq!(
            pad.axes
                .iter()
                .filter(|a| a.range == AxisRange::Bipolar)
                .count(),
            4
        );
        assert_eq!(pad.schema.id.as_str(), "gamecube-pad-v1");
    }

    #[test]
    fn the_pad_schema_digest_is_the_digest_of_its_canonical_declaration() {
        let text =
            flysim_types::json::to_canonical(&declaration(GAMECUBE_PAD_SCHEMA_ID, 1, pad_fields()))
                .unwrap();
        assert_eq!(
            text,
            concat!(
                r#"{"fields":{"axes":[{"id":"main-x","neutral":0,"range":"bipolar"},"#,
                r#"{"id":"main-y","neutral":0,"range":"bipolar"},{"id":"c-x","neutral":0,"range":"bipolar"},"#,
                r#"{"id":"c-y","neutral":0,"range":"bipolar"},{"id":"l-analog","neutral":0,"range":"unit"},"#,
                r#"{"id":"r-analog","neutral":0,"range":"unit"}],"#,
                r#""buttons":["a","b","x","y","z","start","l","r","d-up","d-down","d-left","d-right"]},"#,
                r#""id":"gamecube-pad-v1","registry":"fly-session-payload-schema-v1","#,
                r#""source":"flysim-dolphin","version":1}"#
            )
        );
        assert_eq!(
            gamecube_pad().schema.digest,
            flysim_types::digest::sha256(text.as_bytes())
        );
    }
}
