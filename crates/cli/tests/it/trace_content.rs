//! What a trace shows without replaying it: the buttons each port received, the rewards each
//! fly was paid and each fly's telemetry, per row (`docs/runs.md`, format v2). The expected
//! values are `compositions/gameboy.kdl`'s behaviour, pinned like its golden digest.

use crate::gameboy::{binjgb_missing, run_composition};

/// The behaviour rows of a run directory's trace.
fn rows(run_dir: &str) -> Vec<serde_json::Value> {
    crate::behaviour_rows(std::path::Path::new(run_dir))
}

#[test]
fn the_gameboy_trace_shows_the_buttons_the_rewards_and_the_telemetry() {
    if binjgb_missing() {
        return;
    }
    let state = tempfile::tempdir().unwrap();
    let out = run_composition(
        "compositions/gameboy.kdl",
        state.path(),
        "700",
        "in-process",
        "memory",
    );
    assert_eq!(out.status, 0, "{}", out.stderr);
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let rows = rows(doc["runDir"].as_str().unwrap());
    assert_eq!(rows.len(), 701);

    // Boundary 0: no batch, so no controls; the warm-up telemetry, rates in role order.
    assert!(rows[0]["controls"].is_null());
    let roles: Vec<&str> = rows[0]["agents"][0]["telemetry"]["rates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["roleId"].as_str().unwrap())
        .collect();
    let mut expected: Vec<String> = (0..8).map(|i| format!("command_{i}")).collect();
    expected.extend(["food_x", "fly_x", "kenyon", "mbon", "reward_pam"].map(String::from));
    assert_eq!(roles, expected);

    // Every later row: one port, the buttons held down; the fly presses only the D-pad.
    let mut presses = std::collections::BTreeMap::<String, u32>::new();
    for row in &rows[1..] {
        let controls = row["controls"].as_array().unwrap();
        assert_eq!(controls.len(), 1);
        assert_eq!(controls[0]["portId"], "p1");
        for button in controls[0]["pressed"].as_array().unwrap() {
            *presses
                .entry(button.as_str().unwrap().to_owned())
                .or_default() += 1;
        }
    }
    assert_eq!(rows[1]["controls"][0]["pressed"], serde_json::json!(["up"]));
    assert!(
        presses
            .keys()
            .all(|b| ["up", "down", "left", "right"].contains(&b.as_str())),
        "{presses:?}"
    );

    // The score is the sum of the rewards: three foods by step 700, paid with boundaries 127, 492 and 639.
    let paid: Vec<(u64, f64)> = rows
        .iter()
        .flat_map(|row| {
            let boundary: u64 = row["boundary"].as_str().unwrap().parse().unwrap();
            row["agents"][0]["rewards"]
                .as_array()
                .unwrap()
                .iter()
                .map(move |r| (boundary, r["value"].as_f64().unwrap()))
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(paid, [(127, 1.0), (492, 1.0), (639, 1.0)]);

    // Telemetry moves: the population rate is not the same on every row.
    let rates: std::collections::BTreeSet<String> = rows
        .iter()
        .map(|r| r["agents"][0]["telemetry"]["populationRateHz"].to_string())
        .collect();
    assert!(
        rates.len() > 100,
        "{} distinct population rates",
        rates.len()
    );
}
