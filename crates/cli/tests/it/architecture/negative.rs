//! The checker on hand-made graphs: a copy of the law's tables, a graph shaped like the
//! workspace that keeps it, and one breach at a time, each of which must be named.

use std::collections::BTreeMap;

use super::check::violations;
use super::graph::{Edge, Graph, Node, feature_closure};
use super::law::{Kind, Law};

/// The three tables exactly as ARCHITECTURE.md states them.
const LAW: &str = "
<!-- ranks -->
| rank | packages |
| --- | --- |
| 0 | `flysim-codes`, `flysim-types`, `flysim-sm83` |
| 1 | `flysim-bus`, `flysim-store`, `flysim-compose` |
| 2 | `flysim-rpc`, `flysim-component`, `flysim-testkit` |
| 3 | `flysim-arena`, `flysim-binjgb`, `flysim-dolphin`, `flysim-brain` |
| 4 | `flysim-worker` |
| 5 | `flysim-session` |
| 6 | `flysim-run` |
| 7 | `flysim` |
<!-- /ranks -->

<!-- allowed-edges -->
| from | to | kind | reason |
| --- | --- | --- | --- |
| `flysim-brain` | `flysim-arena` | dev | the brain's integration test plays the counter arena |
<!-- /allowed-edges -->

<!-- forbidden-externals -->
| external | forbidden in | except | reason |
| --- | --- | --- | --- |
| `tokio` | rank 0, `flysim-store`, `flysim-compose`, `flysim-component`, rank 3 | — | the async runtime belongs to the transports (`flysim-bus`, `flysim-rpc`, `flysim-testkit`) and the layers above them |
| `clap` | every package | `flysim` | parsing arguments is the binary's |
| `miette/fancy-base` | every package | `flysim`, `flysim-compose` (dev) | rendering diagnostics is the binary's (`fancy-base` is under every `fancy*` feature); compose's tests render its diagnostics |
<!-- /forbidden-externals -->
";

/// An edge of a hand-made graph: from, to, kind, the features it turns on.
type Spec = (&'static str, &'static str, Kind, &'static [&'static str]);

/// A graph shaped like the workspace, with no breach.
const CLEAN: &[Spec] = &[
    (
        "flysim-types",
        "miette",
        Kind::Normal,
        &["default", "derive"],
    ),
    ("flysim-bus", "flysim-types", Kind::Normal, &[]),
    ("flysim-bus", "tokio", Kind::Normal, &["rt"]),
    ("flysim-store", "flysim-types", Kind::Normal, &[]),
    ("flysim-compose", "flysim-types", Kind::Normal, &[]),
    ("flysim-compose", "flysim-codes", Kind::Dev, &[]),
    (
        "flysim-compose",
        "miette",
        Kind::Dev,
        &["fancy-base", "fancy-no-syscall"],
    ),
    ("flysim-compose", "criterion", Kind::Dev, &[]),
    ("criterion", "clap", Kind::Normal, &["std"]),
    ("flysim-rpc", "flysim-bus", Kind::Normal, &[]),
    ("flysim-rpc", "tokio", Kind::Normal, &["rt"]),
    ("flysim-component", "flysim-types", Kind::Normal, &[]),
    ("flysim-arena", "flysim-component", Kind::Normal, &[]),
    ("flysim-binjgb", "flysim-component", Kind::Normal, &[]),
    ("flysim-binjgb", "cc", Kind::Build, &[]),
    ("flysim-binjgb", "flysim-compose", Kind::Dev, &[]),
    ("flysim-dolphin", "flysim-component", Kind::Normal, &[]),
    ("flysim-brain", "flysim-component", Kind::Normal, &[]),
    ("flysim-brain", "flysim-arena", Kind::Dev, &[]),
    ("flysim-worker", "flysim-rpc", Kind::Normal, &[]),
    ("flysim-worker", "flysim-component", Kind::Normal, &[]),
    ("flysim-worker", "tokio", Kind::Normal, &["rt"]),
    ("flysim-session", "flysim-worker", Kind::Normal, &[]),
    ("flysim-session", "flysim-store", Kind::Normal, &[]),
    ("flysim-session", "flysim-arena", Kind::Dev, &[]),
    ("flysim", "flysim-session", Kind::Normal, &[]),
    ("flysim", "flysim-sm83", Kind::Normal, &[]),
    ("flysim", "clap", Kind::Normal, &["derive"]),
    ("flysim", "miette", Kind::Normal, &["fancy", "fancy-base"]),
];

/// The graph of `specs`; a name starting `flysim` is a workspace package, any other external.
fn graph(specs: &[Spec]) -> Graph {
    let mut graph = Graph::new();
    for &(from, to, kind, features) in specs {
        for name in [from, to] {
            graph.entry(name.to_owned()).or_insert_with(|| Node {
                name: name.to_owned(),
                workspace: name.starts_with("flysim"),
                edges: Vec::new(),
            });
        }
        graph.get_mut(from).unwrap().edges.push(Edge {
            to: to.to_owned(),
            kind,
            features: features.iter().map(|&f| f.to_owned()).collect(),
        });
    }
    graph
}

/// The breaches of the clean graph with `extra` added.
fn breaches(extra: &[Spec]) -> Vec<String> {
    let law = Law::parse(LAW).unwrap();
    violations(&graph(&[CLEAN, extra].concat()), &law)
}

/// Asserts there is exactly one breach and that it says `needle`.
fn one_breach_saying(extra: &[Spec], needle: &str) {
    let found = breaches(extra);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(
        found[0].contains(needle),
        "{:?} does not say {needle:?}",
        found[0]
    );
}

#[test]
fn a_graph_that_keeps_the_law_passes_though_listed_packages_are_missing() {
    // `flysim-testkit` and `flysim-run` are ranked but absent: that is no breach.
    assert_eq!(breaches(&[]), Vec::<String>::new());
}

#[test]
fn an_edge_to_a_higher_rank_is_named() {
    one_breach_saying(
        &[("flysim-codes", "flysim-compose", Kind::Normal, &[])],
        "`flysim-codes` (rank 0) -> `flysim-compose` (rank 1) is a normal dependency",
    );
}

#[test]
fn an_edge_within_a_rank_is_named() {
    one_breach_saying(
        &[("flysim-bus", "flysim-store", Kind::Build, &[])],
        "`flysim-bus` (rank 1) -> `flysim-store` (rank 1) is a build dependency",
    );
}

#[test]
fn a_dev_edge_upwards_is_named() {
    one_breach_saying(
        &[("flysim-compose", "flysim-session", Kind::Dev, &[])],
        "`flysim-compose` (rank 1) -> `flysim-session` (rank 5) is a dev dependency",
    );
}

#[test]
fn an_allowed_edge_is_allowed_for_its_kind_only() {
    one_breach_saying(
        &[("flysim-brain", "flysim-arena", Kind::Normal, &[])],
        "`flysim-brain` (rank 3) -> `flysim-arena` (rank 3) is a normal dependency",
    );
}

#[test]
fn a_workspace_package_without_a_rank_is_named() {
    one_breach_saying(
        &[("flysim-extra", "flysim-types", Kind::Normal, &[])],
        "`flysim-extra` is a workspace package missing from the rank table",
    );
}

#[test]
fn a_forbidden_external_is_named_with_its_edge() {
    one_breach_saying(
        &[("flysim-compose", "tokio", Kind::Normal, &["rt"])],
        "`flysim-compose` uses the forbidden external `tokio` through a normal dependency: \
         `flysim-compose` -> `tokio`",
    );
}

#[test]
fn a_forbidden_external_reached_through_a_workspace_package_is_named_with_its_path() {
    // The edge itself is downwards and allowed; the runtime it brings is not.
    one_breach_saying(
        &[("flysim-dolphin", "flysim-bus", Kind::Normal, &[])],
        "`flysim-dolphin` -> `flysim-bus` -> `tokio`",
    );
}

#[test]
fn a_forbidden_external_as_a_dev_dependency_is_named() {
    one_breach_saying(
        &[("flysim-bus", "clap", Kind::Dev, &["derive"])],
        "`flysim-bus` uses the forbidden external `clap` through a dev dependency: \
         `flysim-bus` -> `clap`",
    );
}

#[test]
fn a_forbidden_external_is_named_in_every_package_that_builds_it() {
    // `flysim-session` builds `flysim-store` into itself, and with it what `flysim-store` uses.
    let found = breaches(&[("flysim-store", "miette", Kind::Normal, &["fancy-base"])]);
    assert_eq!(found.len(), 2, "{found:#?}");
    assert!(found[0].ends_with("`flysim-session` -> `flysim-store` -> `miette/fancy-base`"));
    assert!(found[1].ends_with("`flysim-store` -> `miette/fancy-base`"));
}

#[test]
fn a_forbidden_feature_is_named_and_its_exception_holds_for_its_kind_only() {
    one_breach_saying(
        &[("flysim-dolphin", "miette", Kind::Normal, &["fancy-base"])],
        "`flysim-dolphin` uses the forbidden external `miette/fancy-base` through a normal \
         dependency: `flysim-dolphin` -> `miette/fancy-base`",
    );
    one_breach_saying(
        &[("flysim-compose", "miette", Kind::Normal, &["fancy-base"])],
        "`flysim-compose` uses the forbidden external `miette/fancy-base` through a normal",
    );
}

#[test]
fn missing_markers_are_a_clear_error() {
    let error = Law::parse("# no tables here").unwrap_err();
    assert!(
        error.contains("`<!-- ranks -->` and `<!-- /ranks -->`"),
        "{error}"
    );
    let without_allowed = LAW.replace("<!-- /allowed-edges -->", "");
    let error = Law::parse(&without_allowed).unwrap_err();
    assert!(error.contains("`<!-- /allowed-edges -->`"), "{error}");
}

#[test]
fn a_package_ranked_twice_is_an_error() {
    let twice = LAW.replace(
        "| 4 | `flysim-worker` |",
        "| 4 | `flysim-worker`, `flysim-bus` |",
    );
    let error = Law::parse(&twice).unwrap_err();
    assert!(
        error.contains("`flysim-bus` is in the rank table twice"),
        "{error}"
    );
}

#[test]
fn features_close_over_the_crate_table() {
    let table: BTreeMap<String, Vec<String>> = serde_json::from_str(
        r#"{"default": ["derive"], "derive": ["dep:miette-derive"],
            "fancy": ["fancy-no-backtrace", "dep:backtrace"],
            "fancy-no-backtrace": ["fancy-base", "dep:terminal_size"],
            "fancy-base": ["dep:owo-colors"], "fancy-no-syscall": ["fancy-base"]}"#,
    )
    .unwrap();
    let on = feature_closure(&table, vec!["fancy".to_owned()]);
    assert!(
        on.contains("fancy-base") && !on.contains("derive"),
        "{on:?}"
    );
    let on = feature_closure(&table, vec!["default".to_owned()]);
    assert!(
        on.contains("derive") && !on.contains("fancy-base"),
        "{on:?}"
    );
}
