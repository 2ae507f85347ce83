//! A document's top level: which nodes a composition or an included file may have, the header,
//! nodes that may appear once across every file, the single-value nodes (`name`, `description`,
//! seeds, `task`, `executor`), and the required nodes none of the files declared.
//!
//! It hands the blocks (`profile`, `environment`, `agent`, `run`, `sweep`) to their own decoders and
//! `include` to the loader; it does not read files.

use kdl::{KdlDocument, KdlNode, KdlValue};
use miette::SourceSpan;

use super::loader::Loader;
use super::node::FileDecoder;
use super::{agent, environment, profile, run, sweep, task};
use crate::diag::{Diag, Problem, Src};

/// Top-level nodes of a composition file.
const ROOT_NODES: &[&str] = &[
    "flysim-composition",
    "name",
    "description",
    "seed-derivation",
    "master-seed",
    "explicit-seeds",
    "include",
    "profile",
    "environment",
    "agent",
    "task",
    "executor",
    "run",
    "sweep",
];
/// Top-level nodes that may appear once.
const ONCE_NODES: &[&str] = &[
    "name",
    "description",
    "seed-derivation",
    "master-seed",
    "explicit-seeds",
    "task",
    "executor",
    "run",
    "sweep",
];
/// Top-level nodes of an included file.
const FRAGMENT_NODES: &[&str] = &[
    "include",
    "profile",
    "environment",
    "agent",
    "task",
    "executor",
];

impl Loader {
    /// Decodes the top-level nodes of file `file`.
    pub(super) fn decode_document(&mut self, file: usize, src: &Src, doc: &KdlDocument) {
        let root = file == 0;
        let mut header_seen = false;
        if root {
            match doc.nodes().first() {
                Some(first) if first.name().value() == "flysim-composition" => {}
                first => {
                    let at = first.map_or(SourceSpan::from((0, 0)), |n| n.name().span());
                    self.diags.push(Diag::new(
                        file,
                        Problem::Header {
                            src: src.clone(),
                            message: "the composition does not start with `flysim-composition 1`"
                                .to_owned(),
                            at,
                        },
                    ));
                }
            }
        }
        for (index, node) in doc.nodes().iter().enumerate() {
            let name = node.name().value();
            let allowed = if root { ROOT_NODES } else { FRAGMENT_NODES };
            if !allowed.contains(&name) {
                let place = if ROOT_NODES.contains(&name) {
                    "in an included file"
                } else {
                    "at the top level"
                };
                FileDecoder::new(file, src, &mut self.diags).unknown(node, place, allowed);
                continue;
            }
            if name == "include" {
                self.include(file, src, node);
                continue;
            }
            if name == "flysim-composition" {
                self.header(file, src, node, index, header_seen);
                header_seen = true;
                continue;
            }
            self.top_level(file, src, node);
        }
    }

    fn header(&mut self, file: usize, src: &Src, node: &KdlNode, index: usize, seen: bool) {
        let mut dec = FileDecoder::new(file, src, &mut self.diags);
        if seen || index != 0 {
            dec.push(Problem::Header {
                src: dec.src(),
                message: "`flysim-composition` must be the first node, and appear once".to_owned(),
                at: node.name().span(),
            });
            return;
        }
        self.comp.header = Some(dec.span(node.name().span()));
        let Some(entry) = dec.one_arg(node, "the format version, `1`") else {
            return;
        };
        match entry.value() {
            KdlValue::Integer(1) => {}
            KdlValue::Integer(n) => dec.push(Problem::Header {
                src: dec.src(),
                message: format!("composition format {n} is not supported"),
                at: entry.span(),
            }),
            _ => dec.wrong_type(entry, "the format version", "an integer", None),
        }
    }

    /// Records the first occurrence of a once-only top-level node; `false` (with a diagnostic)
    /// when it was already seen.
    fn first_time(&mut self, file: usize, src: &Src, name: &'static str, at: SourceSpan) -> bool {
        let mut dec = FileDecoder::new(file, src, &mut self.diags);
        if let Some((_, first)) = self.once.iter().find(|(n, _)| *n == name) {
            dec.push(Problem::Repeated {
                src: dec.src(),
                what: format!("`{name}`"),
                at,
                first: (first.file == file).then_some(first.at),
            });
            return false;
        }
        self.once.push((name, dec.span(at)));
        true
    }

    /// Decodes a top-level node other than the header and `include` into the composition.
    fn top_level(&mut self, file: usize, src: &Src, node: &KdlNode) {
        self.seen.push(node.name().value().to_owned());
        let once = ONCE_NODES.iter().find(|n| **n == node.name().value());
        if let Some(name) = once
            && !self.first_time(file, src, name, node.name().span())
        {
            return;
        }
        let mut dec = FileDecoder::new(file, src, &mut self.diags);
        let comp = &mut self.comp;
        match node.name().value() {
            "name" => {
                let entry = dec.one_arg(node, "a name string");
                comp.name = entry.and_then(|e| dec.string(e, "`name`"));
            }
            "description" => {
                let entry = dec.one_arg(node, "a description string");
                comp.description = entry.and_then(|e| dec.string(e, "`description`"));
            }
            "seed-derivation" => {
                let entry = dec.one_arg(node, "the algorithm id, \"seed-derivation-v1\"");
                comp.seed_derivation = entry.and_then(|e| dec.string(e, "`seed-derivation`"));
            }
            "master-seed" => {
                if let Some(entry) = dec.one_arg(node, "a U64 string, e.g. \"42\"") {
                    if let KdlValue::Integer(n) = entry.value() {
                        dec.wrong_type(
                            entry,
                            "`master-seed`",
                            "a string",
                            Some(format!(
                                "write the master seed as a canonical U64 string: `master-seed \"{n}\"`"
                            )),
                        );
                    } else {
                        comp.master_seed = dec.string(entry, "`master-seed`");
                    }
                }
            }
            "explicit-seeds" => {
                let entry = dec.one_arg(node, "`#true` or `#false`");
                comp.explicit_seeds = entry.and_then(|e| dec.boolean(e, "`explicit-seeds`"));
            }
            "task" => {
                let (task, body) = task::decode_task(&mut dec, node);
                comp.task = task;
                comp.task_body = body;
            }
            "executor" => {
                let entry = dec.one_arg(node, "the executor's id");
                comp.executor = entry.and_then(|e| dec.id(e, "the executor id"));
            }
            "run" => comp.run = run::decode_run(&mut dec, node),
            "profile" => comp
                .profiles
                .extend(profile::decode_profile(&mut dec, node)),
            "environment" => {
                let decoded = environment::decode_environment(&mut dec, node);
                comp.environments.extend(decoded);
            }
            "agent" => comp.agents.extend(agent::decode_agent(&mut dec, node)),
            "sweep" => comp.sweep = sweep::decode_sweep(&mut dec, node),
            _ => {}
        }
    }

    /// Reports every required top-level node the loaded files did not declare.
    pub(super) fn check_required(&mut self) {
        // A file that was not parsed (invalid KDL, too deep, too many nodes, a disallowed code
        // point in a comment) has no nodes to miss.
        let unparsed =
            |d: &Diag| matches!(d.code().as_str(), "FS0201" | "FS0230" | "FS0231" | "FS0244");
        if self.comp.sources.is_empty() || self.diags.iter().any(unparsed) {
            return;
        }
        let src = self.comp.sources[0].src.clone();
        let at = self.comp.header.map_or(SourceSpan::from((0, 0)), |h| h.at);
        let c = &self.comp;
        // `task` may be left out: a composition without one runs with nothing scored
        // (`flysim_types::spec::NO_TASK`).
        let missing: [(&str, bool, &str); 7] = [
            ("name", c.name.is_none(), "name \"my-run\""),
            (
                "seed-derivation",
                c.seed_derivation.is_none(),
                "seed-derivation \"seed-derivation-v1\"",
            ),
            ("master-seed", c.master_seed.is_none(), "master-seed \"42\""),
            (
                "environment",
                c.environments.is_empty(),
                "environment \"world\" backend=\"arena\" { ... }",
            ),
            ("agent", c.agents.is_empty(), "agent \"fly-a\" { ... }"),
            ("executor", c.executor.is_none(), "executor \"direct-v1\""),
            ("run", c.run.is_none(), "run { steps 600 }"),
        ];
        let mut found = Vec::new();
        for (name, absent, example) in missing {
            // A node that was written but refused is not also reported missing.
            if absent && !self.seen.iter().any(|n| n == name) {
                found.push(Diag::new(
                    0,
                    Problem::Missing {
                        src: src.clone(),
                        what: format!("`{name}`"),
                        place: "in the composition".to_owned(),
                        at,
                        help: Some(format!("add `{example}`")),
                    },
                ));
            }
        }
        self.diags.extend(found);
    }
}
