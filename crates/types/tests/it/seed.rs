//! The project's seed-vector table (fixtures/seed-vectors.json, written by an independent Python
//! implementation in fixtures/gen/seed_vectors.py) reproduced by the Rust derivation.

use flysim_types::seed::{ALGORITHM, derive, derive_all};
use flysim_types::{ContractError, Id, U64};
use serde_json::Value;

fn table() -> Value {
    let text = std::fs::read_to_string(crate::fixtures().join("seed-vectors.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn every_vector_reproduces_with_material_and_digest() {
    let table = table();
    assert_eq!(table["algorithm"], ALGORITHM);
    let rows = table["vectors"].as_array().unwrap();
    assert_eq!(rows.len(), 20, "five master seeds by four agents");
    for row in rows {
        let master = U64::parse(row["masterSeed"].as_str().unwrap()).unwrap();
        let agent = Id::parse(row["agentId"].as_str().unwrap()).unwrap();
        let d = derive(master, &agent).unwrap();
        assert_eq!(d.material, row["material"].as_str().unwrap());
        assert_eq!(
            d.material_digest.hex(),
            row["materialDigest"].as_str().unwrap()
        );
        assert_eq!(
            i64::from(d.seed),
            row["seed"].as_i64().unwrap(),
            "{master} {agent}"
        );
    }
    let masters: Vec<&str> = rows
        .iter()
        .map(|r| r["masterSeed"].as_str().unwrap())
        .collect();
    for m in [
        "0",
        "1",
        "42",
        "9223372036854775808",
        "18446744073709551615",
    ] {
        assert!(masters.contains(&m), "{m} missing from the table");
    }
}

#[test]
fn composition_vector_reproduces() {
    let table = table();
    let c = &table["composition"];
    let master = U64::parse(c["masterSeed"].as_str().unwrap()).unwrap();
    let ids: Vec<Id> = c["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| Id::parse(a.as_str().unwrap()).unwrap())
        .collect();
    let seeds: Vec<i64> = derive_all(master, &ids)
        .unwrap()
        .iter()
        .map(|d| i64::from(d.seed))
        .collect();
    let want: Vec<i64> = c["seeds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_i64().unwrap())
        .collect();
    assert_eq!(seeds, want);
}

fn derive_inputs(master: &str, agents: &[&str]) -> Result<(), ContractError> {
    let master = U64::parse(master)?;
    let ids = agents
        .iter()
        .map(|a| Id::parse(a))
        .collect::<Result<Vec<_>, _>>()?;
    derive_all(master, &ids).map(|_| ())
}

#[test]
fn refused_inputs_have_distinct_codes() {
    let table = table();
    let mut codes = std::collections::BTreeSet::new();
    for case in table["refused"].as_array().unwrap() {
        let agents: Vec<&str> = case["agents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        let err = derive_inputs(case["masterSeed"].as_str().unwrap(), &agents).unwrap_err();
        assert_eq!(
            err.code_str(),
            case["code"].as_str().unwrap(),
            "{}",
            case["why"]
        );
        codes.insert(err.code_str());
    }
    assert_eq!(
        codes.len(),
        3,
        "bad agent id, bad master seed and repeated agent are three codes"
    );
}

#[test]
fn seeds_do_not_depend_on_agent_order() {
    let ids = |names: &[&str]| {
        names
            .iter()
            .map(|n| Id::parse(n).unwrap())
            .collect::<Vec<_>>()
    };
    let forward = derive_all(U64(5), &ids(&["fly-a", "fly-b"])).unwrap();
    let backward = derive_all(U64(5), &ids(&["fly-b", "fly-a"])).unwrap();
    assert_eq!(forward[0], backward[1]);
    assert_eq!(forward[1], backward[0]);
}
