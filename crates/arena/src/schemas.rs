//! The schema references of the counter arena's own payloads: its inspection and the counter
//! task's events.

use std::sync::OnceLock;

use flysim_component::schemas::schema_ref;
use flysim_types::SchemaRef;

/// The counter arena's inspection: `{"step": U64, "counters": [{"portId", "value"}]}`.
#[must_use]
pub fn counter_inspection() -> SchemaRef {
    static REF: OnceLock<SchemaRef> = OnceLock::new();
    REF.get_or_init(|| {
        schema_ref(
            "counter-inspection",
            1,
            &[
                ("step", "U64"),
                ("counters", "array<{portId: Id, value: integer}>"),
            ],
        )
    })
    .clone()
}

/// A counter-task event payload: `{"portId": Id, "counter": integer}`.
#[must_use]
pub fn counter_event() -> SchemaRef {
    static REF: OnceLock<SchemaRef> = OnceLock::new();
    REF.get_or_init(|| {
        schema_ref(
            "counter-event",
            1,
            &[("portId", "Id"), ("counter", "integer")],
        )
    })
    .clone()
}
