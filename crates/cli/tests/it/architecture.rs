//! The layering law of ARCHITECTURE.md holds for the workspace: every workspace package has a
//! rank, every dependency edge (normal, build or dev) goes to a lower rank unless allowed-edges
//! lists it, and no package uses an external crate or feature forbidden to it. The law is read
//! from the marked tables of ARCHITECTURE.md, the graph from `cargo metadata`.

mod check;
mod graph;
mod law;
mod negative;

use crate::root;

#[test]
fn the_workspace_keeps_the_layering_law() {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let law = law::Law::parse(&text).unwrap_or_else(|error| panic!("{error}"));
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let graph = graph::from_cargo(&cargo, &root());
    for package in ["flysim", "flysim-types"] {
        assert!(
            graph.values().any(|n| n.workspace && n.name == package),
            "cargo metadata lists no workspace package `{package}`"
        );
    }
    let found = check::violations(&graph, &law);
    assert!(
        found.is_empty(),
        "the workspace breaks the layering law of ARCHITECTURE.md:\n{}",
        found.join("\n")
    );
}
