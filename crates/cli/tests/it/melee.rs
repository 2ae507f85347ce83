//! The Melee task (`compositions/melee/task.kdl`) in a real Dolphin, on the project's stand-in:
//! the GameCube test program writes a made-up match at Melee NTSC 1.02's addresses, a pure
//! function of its field counter (`roms/gc-fieldcount/README.md`, "Melee stand-in"). The test
//! computes that schedule itself and checks, row by row, every variable (floats exactly, the
//! action state behind the entity pointer, no value while the pointer is null), every reward of
//! each fly (damage dealt on rises only, stocks taken on drops), and that the run ends where
//! player 2's last stock goes, with the scores the rewards add up to. Without Dolphin and Xvfb
//! it says so and returns.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::dolphin::{run_bounded, skipped_without_dolphin, work_copy};
use crate::{behaviour_rows as rows, root};

/// Fields after which player 2 loses a stock; after four the match is over.
const STOCK_FIELDS: u64 = 64;

/// Every variable of the task at field `f`, by the stand-in's schedule; `None` where the task
/// must record no value (player 2's entity pointer is null).
fn schedule(f: u64) -> BTreeMap<&'static str, Option<f64>> {
    let q = |x: f64| Some(x);
    let lost = f / STOCK_FIELDS;
    let t = f % STOCK_FIELDS;
    let playing = lost < 4;
    BTreeMap::from([
        ("frame", q(f as f64)),
        ("p1-x", q(-20.0 + 0.25 * (f % 160) as f64)),
        ("p1-y", q(0.0)),
        ("p1-percent", q((f / 16) as f64)),
        ("p1-stocks", q(4.0)),
        ("p1-action", q((0x0e + (f / 4) % 8) as f64)),
        ("p2-x", q(if playing { 30.5 - 0.5 * t as f64 } else { 0.0 })),
        (
            "p2-y",
            q(if playing {
                10.0 * ((f / 8) % 2) as f64
            } else {
                0.0
            }),
        ),
        (
            "p2-percent",
            q(if playing { (9 * (t / 8)) as f64 } else { 0.0 }),
        ),
        (
            "p2-stocks",
            q(if playing { (4 - lost) as f64 } else { 0.0 }),
        ),
        (
            "p2-action",
            (playing && t >= 8).then(|| (0x14 + (f / 2) % 16) as f64),
        ),
    ])
}

/// The rewards (rule, value) each fly is owed for the transition from field `f - 1` to `f`, in
/// the task's rule order.
fn owed(f: u64) -> BTreeMap<&'static str, Vec<(&'static str, f64)>> {
    let (old, new) = (schedule(f - 1), schedule(f));
    let change = |name: &str| (old[name].unwrap(), new[name].unwrap());
    let mut a = Vec::new();
    let mut b = Vec::new();
    let (from, to) = change("p2-percent");
    if to > from {
        a.push(("p1-damage-dealt", 0.01 * (to - from)));
    }
    let (from, to) = change("p1-percent");
    if to > from {
        b.push(("p2-damage-dealt", 0.01 * (to - from)));
    }
    let (from, to) = change("p2-stocks");
    if to < from {
        a.push(("p1-stock-taken", 1.0 * (from - to)));
    }
    BTreeMap::from([("fly-a", a), ("fly-b", b)])
}

/// The recorded variables of a row (numbers; a missing key is a variable without a value).
fn variables(row: &Value) -> BTreeMap<String, f64> {
    row["variables"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_f64().unwrap()))
        .collect()
}

/// Each fly's rewards in a row, (rule, value).
fn rewards(row: &Value) -> BTreeMap<String, Vec<(String, f64)>> {
    row["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|agent| {
            let paid = agent["rewards"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| {
                    (
                        r["ruleId"].as_str().unwrap().to_owned(),
                        r["value"].as_f64().unwrap(),
                    )
                })
                .collect();
            (agent["agentId"].as_str().unwrap().to_owned(), paid)
        })
        .collect()
}

#[test]
fn the_melee_task_reads_scores_and_ends_the_match_the_stand_in_plays() {
    if skipped_without_dolphin() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(root().join("compositions/melee.kdl")).unwrap();
    let (work, scratch) = work_copy(tmp.path(), "melee.kdl", &text);
    std::fs::create_dir(work.join("compositions/melee")).unwrap();
    std::fs::copy(
        root().join("compositions/melee/task.kdl"),
        work.join("compositions/melee/task.kdl"),
    )
    .unwrap();
    let state = tmp.path().join("state");
    let args = [
        "run",
        "compositions/melee.kdl",
        "--json",
        "--state-dir",
        state.to_str().unwrap(),
    ];
    let out = run_bounded(&work, &scratch, &[], &args);
    assert_eq!(out.status, 0, "{}", out.stderr);
    // The contract's reader parses numbers exactly (serde_json's default may miss the last bit).
    let summary = flysim_types::json::parse_document(out.stdout.trim().as_bytes()).unwrap();
    let rows = rows(Path::new(summary["runDir"].as_str().unwrap()));

    // Boundary 0 lies at some field of the program's (the backend's boot decides which); from
    // there one field per step.
    let first = variables(&rows[0])["frame"] as u64;
    assert!(
        first > 0 && first < STOCK_FIELDS,
        "boundary 0 at field {first}"
    );
    let mut total: BTreeMap<String, f64> = BTreeMap::new();
    let mut null_rows = 0;
    for (k, row) in rows.iter().enumerate() {
        let f = first + k as u64;
        let expected: BTreeMap<String, f64> = schedule(f)
            .into_iter()
            .filter_map(|(name, v)| Some((name.to_owned(), v?)))
            .collect();
        assert_eq!(
            variables(row),
            expected,
            "variables at boundary {k} (field {f})"
        );
        null_rows += usize::from(!expected.contains_key("p2-action"));
        if k == 0 {
            continue;
        }
        let paid = rewards(row);
        let owed: BTreeMap<String, Vec<(String, f64)>> = owed(f)
            .into_iter()
            .map(|(agent, r)| {
                let r = r
                    .into_iter()
                    .map(|(rule, v)| (rule.to_owned(), v))
                    .collect();
                (agent.to_owned(), r)
            })
            .collect();
        assert_eq!(paid, owed, "rewards at boundary {k} (field {f})");
        for (agent, r) in paid {
            for (_, value) in r {
                *total.entry(agent.clone()).or_default() += value;
            }
        }
    }
    assert!(null_rows >= 8, "rows without p2's action: {null_rows}");

    // The match ends where player 2's fourth stock goes: field 256, a terminal `done`.
    let last = rows.len() - 1;
    assert_eq!(first + last as u64, 4 * STOCK_FIELDS);
    assert_eq!(rows[last]["episodeRequest"]["kind"], "terminal");
    assert_eq!(rows[last]["episodeRequest"]["reason"], "done");
    assert_eq!(summary["steps"], last);
    // The reported scores are the rewards' sums: four stocks and the damage dealt.
    let scores = summary["scores"].as_object().unwrap();
    assert_eq!(scores.len(), 2);
    for (id, score) in scores {
        assert_eq!(score.as_f64().unwrap(), total[id], "{id}'s score");
    }
    assert!(total["fly-a"] > 4.0 && total["fly-b"] > 0.0, "{total:?}");
}
