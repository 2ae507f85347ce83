//! What a world shows at a boundary: the [`Observation`] (boundary, field count, watched
//! values), its inspection value and the inspection schema of a configuration.
//!
//! It knows the watch list's order and the inspection's JSON form; it does not know how the
//! values arrived (the `receive` module) or how a boundary is reached.

use flysim_types::{SchemaRef, TypedValue};
use serde_json::json;

use super::DolphinWorld;
use crate::config::{BackendConfig, Mode};
use crate::error::DolphinError;
use crate::schema::{INSPECTION_SCHEMA_ID, schema_ref};

/// What the world shows at a boundary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Observation {
    /// The committed boundary (0 after start, +1 per advance).
    pub boundary: u64,
    /// MemoryWatcher fields since Dolphin started (the engine's frame counter).
    pub fields: u64,
    /// The watched values, in watch order, as of the end of the boundary's field.
    pub values: Vec<u32>,
}

impl Observation {
    /// The value of the watch named `name` in `config`.
    #[must_use]
    pub fn value(&self, config: &BackendConfig, name: &str) -> Option<u32> {
        let i = config
            .watches
            .iter()
            .position(|w| w.name.as_str() == name)?;
        self.values.get(i).copied()
    }

    /// The inspection value: `{"fields": U64, "values": {name: number, ...}}`.
    #[must_use]
    pub fn inspection(&self, config: &BackendConfig) -> TypedValue {
        let values: serde_json::Map<String, serde_json::Value> = config
            .watches
            .iter()
            .zip(&self.values)
            .map(|(w, v)| (w.name.to_string(), json!(v)))
            .collect();
        let mut value = serde_json::Map::new();
        value.insert("fields".into(), json!(self.fields.to_string()));
        value.insert("values".into(), serde_json::Value::Object(values));
        TypedValue {
            schema: inspection_schema(config),
            value,
        }
    }
}

/// The inspection schema of a configuration: its watch list.
#[must_use]
pub fn inspection_schema(config: &BackendConfig) -> SchemaRef {
    schema_ref(
        INSPECTION_SCHEMA_ID,
        1,
        json!({ "fields": "U64", "values": config.watches }),
    )
}

impl DolphinWorld {
    /// The world at its current boundary (in nogui mode: the newest field received).
    ///
    /// # Errors
    ///
    /// FS0807 after an earlier failure; in nogui mode FS0805 if reading datagrams fails.
    pub fn observation(&mut self) -> Result<Observation, DolphinError> {
        self.usable()?;
        if self.config.mode == Mode::Nogui {
            self.guard(|w| w.drain().map(|_| ()))?;
            self.observed = self.mirror.values();
        }
        Ok(self.current())
    }

    /// The observation of the current boundary, as the world holds it.
    pub(super) fn current(&self) -> Observation {
        Observation {
            boundary: self.boundary,
            fields: self.fields,
            values: self.observed.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::fieldcount;

    fn config() -> BackendConfig {
        fieldcount::config(
            Path::new("/usr/games/dolphin-emu"),
            crate::config::PINNED_VERSION,
            Some(Path::new("/usr/bin/Xvfb")),
            Path::new("/tmp/fieldcount.elf"),
            flysim_types::digest::sha256(b"elf"),
            vec![1, 2],
            Mode::Qt,
        )
    }

    #[test]
    fn the_inspection_names_every_watch_and_fits_its_schema() {
        let cfg = config();
        let observation = Observation {
            boundary: 3,
            fields: 41,
            values: (0..12).collect(),
        };
        let inspection = observation.inspection(&cfg);
        inspection.validate().unwrap();
        assert_eq!(inspection.schema, inspection_schema(&cfg));
        assert_eq!(inspection.schema.id.as_str(), "dolphin-watch-v1");
        assert_eq!(inspection.value["fields"], "41");
        assert_eq!(inspection.value["values"]["magic"], 0);
        assert_eq!(inspection.value["values"]["pad4-lo"], 11);
        assert_eq!(observation.value(&cfg, "loops"), Some(2));
        let mut other = cfg.clone();
        other.watches.pop();
        assert_ne!(inspection_schema(&other), inspection.schema);
    }
}
