//! Checks a dependency graph against the layering law and names every breach: a workspace
//! package missing from the rank table, an edge to a package of equal or higher rank that
//! allowed-edges does not list, and a forbidden external crate or feature. It neither reads
//! ARCHITECTURE.md nor runs cargo.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use super::graph::{Edge, Graph};
use super::law::{ForbiddenExternal, Kind, Law};

/// Every breach of `law` in `graph`, one sentence each, in a stable order.
pub(crate) fn violations(graph: &Graph, law: &Law) -> Vec<String> {
    let mut found = Vec::new();
    for node in graph.values().filter(|n| n.workspace) {
        let Some(&rank) = law.ranks.get(&node.name) else {
            found.push(format!(
                "`{}` is a workspace package missing from the rank table of ARCHITECTURE.md",
                node.name
            ));
            continue;
        };
        for edge in &node.edges {
            let to = &graph[&edge.to];
            let Some(&to_rank) = law.ranks.get(&to.name).filter(|_| to.workspace) else {
                continue;
            };
            let allowed = (node.name.clone(), to.name.clone(), edge.kind);
            if to_rank >= rank && !law.allowed_edges.contains(&allowed) {
                found.push(format!(
                    "`{}` (rank {rank}) -> `{}` (rank {to_rank}) is a {} dependency on a \
                     package of equal or higher rank that allowed-edges does not list",
                    node.name, to.name, edge.kind
                ));
            }
        }
    }
    for (id, node) in graph.iter().filter(|(_, n)| n.workspace) {
        for rule in &law.forbidden {
            for kind in [Kind::Normal, Kind::Build, Kind::Dev] {
                if rule.binds(&node.name, kind)
                    && let Some(path) = forbidden_path(graph, id, kind, rule)
                {
                    found.push(format!(
                        "`{}` uses the forbidden external `{}` through a {kind} dependency: {path}",
                        node.name,
                        rule.name()
                    ));
                }
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

/// Whether `edge` reaches what `rule` forbids.
fn hits(graph: &Graph, edge: &Edge, rule: &ForbiddenExternal) -> bool {
    graph[&edge.to].name == rule.krate
        && rule
            .feature
            .as_ref()
            .is_none_or(|feature| edge.features.contains(feature))
}

/// A path `a -> b -> ... -> forbidden` from package `start` that begins with one of its `kind`
/// edges. A normal or build dependency is followed through its own normal and build
/// dependencies (all of them are built into `start`); a dev dependency is looked at alone, since
/// its own dependencies reach only the tests that use it.
fn forbidden_path(
    graph: &Graph,
    start: &str,
    kind: Kind,
    rule: &ForbiddenExternal,
) -> Option<String> {
    let mut came_from: BTreeMap<&str, &str> = BTreeMap::new();
    let mut seen = BTreeSet::from([start]);
    let mut todo = VecDeque::from([start]);
    while let Some(id) = todo.pop_front() {
        let edges = graph[id].edges.iter().filter(|e| {
            if id == start {
                e.kind == kind
            } else {
                e.kind != Kind::Dev
            }
        });
        for edge in edges {
            if hits(graph, edge, rule) {
                let mut chain = vec![format!("`{}`", rule.name())];
                let mut at = id;
                while at != start {
                    chain.push(format!("`{}`", graph[at].name));
                    at = came_from[at];
                }
                chain.push(format!("`{}`", graph[start].name));
                chain.reverse();
                return Some(chain.join(" -> "));
            }
            if kind != Kind::Dev && seen.insert(edge.to.as_str()) {
                came_from.insert(edge.to.as_str(), id);
                todo.push_back(edge.to.as_str());
            }
        }
    }
    None
}
