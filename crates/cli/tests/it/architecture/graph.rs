//! The resolved dependency graph the law is checked against: every package cargo resolved
//! (workspace and external), each with its edges, their kinds and the features each edge turns
//! on. It is read from `cargo metadata`; it knows nothing of ranks or rules.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use super::law::Kind;

/// One dependency edge.
#[derive(Debug)]
pub(crate) struct Edge {
    /// The id of the package depended on.
    pub(crate) to: String,
    /// How it is depended on.
    pub(crate) kind: Kind,
    /// The features of `to` this edge turns on, closed under `to`'s feature table.
    pub(crate) features: BTreeSet<String>,
}

/// One resolved package.
#[derive(Debug)]
pub(crate) struct Node {
    /// The package name.
    pub(crate) name: String,
    /// Whether it is a member of the workspace.
    pub(crate) workspace: bool,
    /// Its resolved dependencies (dev edges only for workspace members: cargo resolves no
    /// others).
    pub(crate) edges: Vec<Edge>,
}

/// Package id -> package.
pub(crate) type Graph = BTreeMap<String, Node>;

/// Runs `cargo metadata` for the host platform in `root` and reads its resolve.
pub(crate) fn from_cargo(cargo: &str, root: &Path) -> Graph {
    let run = |args: &[&str]| {
        let out = Command::new(cargo)
            .args(args)
            .current_dir(root)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "`cargo {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    let version = String::from_utf8(run(&["-vV"])).unwrap();
    let host = version
        .lines()
        .find_map(|line| line.strip_prefix("host: "))
        .expect("`cargo -vV` names the host platform");
    let metadata = run(&[
        "metadata",
        "--format-version",
        "1",
        "--offline",
        "--filter-platform",
        host,
    ]);
    from_metadata(&serde_json::from_slice(&metadata).unwrap())
}

/// Builds the graph from `cargo metadata --format-version 1` output.
pub(crate) fn from_metadata(metadata: &Value) -> Graph {
    let packages: BTreeMap<&str, &Value> = metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p))
        .collect();
    let members: BTreeSet<&str> = metadata["workspace_members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|id| id.as_str().unwrap())
        .collect();
    let mut graph = Graph::new();
    for node in metadata["resolve"]["nodes"].as_array().unwrap() {
        let id = node["id"].as_str().unwrap();
        let package = packages[id];
        let mut edges = Vec::new();
        for dep in node["deps"].as_array().unwrap() {
            let to = dep["pkg"].as_str().unwrap();
            let target = packages[to];
            for dep_kind in dep["dep_kinds"].as_array().unwrap() {
                let kind = match dep_kind["kind"].as_str() {
                    None => Kind::Normal,
                    Some("build") => Kind::Build,
                    Some("dev") => Kind::Dev,
                    Some(other) => panic!("cargo metadata names an unknown kind `{other}`"),
                };
                edges.push(Edge {
                    to: to.to_owned(),
                    kind,
                    features: declared_features(package, target, kind),
                });
            }
        }
        graph.insert(
            id.to_owned(),
            Node {
                name: package["name"].as_str().unwrap().to_owned(),
                workspace: members.contains(id),
                edges,
            },
        );
    }
    graph
}

/// The features of `target` that `package`'s declarations of it as a `kind` dependency turn
/// on (their `features`, and `default` unless they opt out), closed under `target`'s table.
fn declared_features(package: &Value, target: &Value, kind: Kind) -> BTreeSet<String> {
    let target_name = target["name"].as_str().unwrap();
    let mut wanted = Vec::new();
    for declared in package["dependencies"].as_array().unwrap() {
        let declared_kind = match declared["kind"].as_str() {
            None => Kind::Normal,
            Some("build") => Kind::Build,
            Some(_) => Kind::Dev,
        };
        if declared["name"] != target_name || declared_kind != kind {
            continue;
        }
        if declared["uses_default_features"] != false {
            wanted.push("default".to_owned());
        }
        for feature in declared["features"].as_array().unwrap() {
            wanted.push(feature.as_str().unwrap().to_owned());
        }
    }
    let table: BTreeMap<String, Vec<String>> =
        serde_json::from_value(target["features"].clone()).unwrap();
    feature_closure(&table, wanted)
}

/// `wanted` and every feature of the same crate they turn on through `table` (entries such as
/// `dep:x` and `x/feature` reach other crates and are not followed).
pub(crate) fn feature_closure(
    table: &BTreeMap<String, Vec<String>>,
    wanted: Vec<String>,
) -> BTreeSet<String> {
    let mut on = BTreeSet::new();
    let mut todo = wanted;
    while let Some(feature) = todo.pop() {
        if feature.contains(':') || feature.contains('/') || !on.insert(feature.clone()) {
            continue;
        }
        todo.extend(table.get(&feature).into_iter().flatten().cloned());
    }
    on
}
