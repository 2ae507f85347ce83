//! The crate map of ARCHITECTURE.md is the law: every workspace crate is in it, and no crate
//! depends on a workspace crate the map does not allow.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use crate::root;

/// Parses the `| crate | owns | depends on |` table of ARCHITECTURE.md into package -> allowed deps.
fn allowed_edges() -> BTreeMap<String, BTreeSet<String>> {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let table = text
        .split("<!-- crate-map -->")
        .nth(1)
        .and_then(|rest| rest.split("<!-- /crate-map -->").next())
        .expect("ARCHITECTURE.md has a table between <!-- crate-map --> and <!-- /crate-map -->");
    let mut map = BTreeMap::new();
    for row in table.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let package = cells[1].trim_matches('`').to_owned();
        let deps = cells[3]
            .split(',')
            .map(|d| d.trim().trim_matches('`').to_owned())
            .filter(|d| !d.is_empty() && d != "—")
            .collect();
        map.insert(package, deps);
    }
    assert!(!map.is_empty(), "the crate map table is empty");
    map
}

/// Package -> workspace packages it depends on (normal and build dependencies), from cargo metadata.
fn actual_edges() -> BTreeMap<String, BTreeSet<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let packages = meta["packages"].as_array().unwrap();
    let members: BTreeSet<String> = packages
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_owned())
        .collect();
    packages
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["kind"].is_null() || d["kind"] == "build")
                .map(|d| d["name"].as_str().unwrap().to_owned())
                .filter(|d| members.contains(d))
                .collect();
            (p["name"].as_str().unwrap().to_owned(), deps)
        })
        .collect()
}

#[test]
fn every_dependency_edge_is_allowed_by_the_map() {
    let allowed = allowed_edges();
    for (package, deps) in actual_edges() {
        let Some(ok) = allowed.get(&package) else {
            panic!("{package} is a workspace crate missing from the ARCHITECTURE.md crate map");
        };
        for dep in deps {
            assert!(
                ok.contains(&dep),
                "{package} depends on {dep}, which the ARCHITECTURE.md crate map does not allow"
            );
        }
    }
}

#[test]
fn every_mapped_crate_exists() {
    let actual = actual_edges();
    for package in allowed_edges().keys() {
        assert!(
            actual.contains_key(package),
            "ARCHITECTURE.md maps {package}, which is not a workspace crate"
        );
    }
}
