//! The fields in which two JSON values differ, by path (`agents[0].rewards`,
//! `controls[0].pressed`, `masterSeed`), each with both values. Objects are compared key by key;
//! arrays of objects of one length element by element; any other array, and arrays of different
//! lengths, as a whole. It knows JSON only, not what a plan or a row is.

use serde_json::Value;

/// One field that differs: its path and its value on each side (`None`: absent there).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FieldDifference {
    /// `a.b[2].c`; empty for the values themselves.
    pub(crate) path: String,
    /// The first value's field.
    pub(crate) a: Option<Value>,
    /// The second value's field.
    pub(crate) b: Option<Value>,
}

impl FieldDifference {
    /// `path: A -> B`, each value as canonical JSON (`(absent)` for a missing field).
    pub(crate) fn line(&self) -> String {
        let shown = |v: &Option<Value>| {
            v.as_ref().map_or_else(
                || "(absent)".to_owned(),
                |v| flysim_types::json::to_canonical(v).unwrap_or_else(|_| v.to_string()),
            )
        };
        format!("{}: {} -> {}", self.path, shown(&self.a), shown(&self.b))
    }
}

/// Every field in which `a` and `b` differ, in key order (keys sorted), depth first.
pub(crate) fn differences(a: &Value, b: &Value) -> Vec<FieldDifference> {
    let mut out = Vec::new();
    walk(String::new(), a, b, &mut out);
    out
}

fn walk(path: String, a: &Value, b: &Value, out: &mut Vec<FieldDifference>) {
    if a == b {
        return;
    }
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let inner = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                match (x.get(key), y.get(key)) {
                    (Some(p), Some(q)) => walk(inner, p, q, out),
                    (p, q) => out.push(FieldDifference {
                        path: inner,
                        a: p.cloned(),
                        b: q.cloned(),
                    }),
                }
            }
        }
        (Value::Array(x), Value::Array(y))
            if x.len() == y.len() && x.iter().chain(y).any(Value::is_object) =>
        {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                walk(format!("{path}[{i}]"), p, q, out);
            }
        }
        _ => out.push(FieldDifference {
            path,
            a: Some(a.clone()),
            b: Some(b.clone()),
        }),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::differences;

    fn lines(a: &serde_json::Value, b: &serde_json::Value) -> Vec<String> {
        differences(a, b)
            .iter()
            .map(super::FieldDifference::line)
            .collect()
    }

    #[test]
    fn nested_fields_are_named_by_path_with_both_values() {
        let a = json!({
            "masterSeed": "7",
            "agents": [{"rewards": [], "telemetry": {"populationRateHz": 4.93}}],
            "controls": [{"pressed": ["up"], "portId": "p1"}],
            "same": {"x": 1},
        });
        let b = json!({
            "masterSeed": "8",
            "agents": [{"rewards": [{"eventId": "e", "value": 1}], "telemetry": {"populationRateHz": 5.1}}],
            "controls": [{"pressed": ["left"], "portId": "p1"}],
            "same": {"x": 1},
            "extra": null,
        });
        assert_eq!(
            lines(&a, &b),
            [
                r#"agents[0].rewards: [] -> [{"eventId":"e","value":1}]"#,
                "agents[0].telemetry.populationRateHz: 4.93 -> 5.1",
                r#"controls[0].pressed: ["up"] -> ["left"]"#,
                "extra: (absent) -> null",
                r#"masterSeed: "7" -> "8""#,
            ]
        );
    }

    #[test]
    fn equal_values_have_no_difference_and_arrays_of_other_lengths_differ_whole() {
        let a = json!({"a": [{"x": 1}], "b": [1, 2], "c": 0.5});
        assert!(differences(&a, &a).is_empty());
        let b = json!({"a": [{"x": 1}, {"x": 2}], "b": [1, 3], "c": 0.0});
        assert_eq!(
            lines(&a, &b),
            [
                r#"a: [{"x":1}] -> [{"x":1},{"x":2}]"#,
                "b: [1,2] -> [1,3]",
                "c: 0.5 -> 0",
            ]
        );
    }
}
