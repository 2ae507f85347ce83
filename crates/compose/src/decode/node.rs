//! The shared node machinery: a node kind's declarative spec, and the decoder of one file that
//! checks a node against it (type annotations, arguments, properties, children, once-only and
//! required children) and records every problem it finds.
//!
//! It knows KDL nodes and the diagnostics of their shape. It does not know which node kinds the
//! language has (their specs are in the files beside it), what a value means (the value
//! decoders are in `values`), or how files are found and included (the loader).

use flysim_types::Id;
use kdl::{KdlEntry, KdlNode};
use miette::SourceSpan;

use crate::diag::{Diag, Problem, Src};
use crate::model::{Span, Spanned};
use crate::text::suggest;

/// Decodes the nodes of one source file, recording each problem as a diagnostic of that file.
pub(super) struct FileDecoder<'d> {
    /// The file's rank in load order.
    pub(super) file: usize,
    /// The file's text, for diagnostics.
    src: Src,
    /// Where the problems go.
    diags: &'d mut Vec<Diag>,
}

/// What a node kind takes: how many arguments, which properties, which children.
pub(super) struct NodeSpec {
    /// At least and at most this many arguments.
    pub(super) args: (usize, usize),
    /// Description of the arguments, for "missing" messages (e.g. `an id`).
    pub(super) arg_desc: &'static str,
    /// The properties it takes.
    pub(super) props: &'static [&'static str],
    /// The child nodes it allows; empty when it takes no children block.
    pub(super) children: &'static [&'static str],
}

impl NodeSpec {
    /// A node of exactly one argument and nothing else.
    pub(super) const fn one_arg(arg_desc: &'static str) -> Self {
        Self {
            args: (1, 1),
            arg_desc,
            props: &[],
            children: &[],
        }
    }

    /// A block named by one argument (its id), with the children it allows.
    pub(super) const fn named_block(
        arg_desc: &'static str,
        children: &'static [&'static str],
    ) -> Self {
        Self {
            args: (1, 1),
            arg_desc,
            props: &[],
            children,
        }
    }
}

/// A child node that may appear once and takes a single value.
pub(super) struct ValueChild {
    /// The child's node name.
    pub(super) name: &'static str,
    /// Description of its argument, for "missing" messages.
    pub(super) arg_desc: &'static str,
    /// When the child is required, the example the missing-node help suggests.
    pub(super) required: Option<&'static str>,
}

impl ValueChild {
    /// A child that may be left out.
    pub(super) const fn optional(name: &'static str, arg_desc: &'static str) -> Self {
        Self {
            name,
            arg_desc,
            required: None,
        }
    }

    /// A child that must be written; `example` is what the help suggests adding.
    pub(super) const fn required(
        name: &'static str,
        arg_desc: &'static str,
        example: &'static str,
    ) -> Self {
        Self {
            name,
            arg_desc,
            required: Some(example),
        }
    }
}

/// The entries of a node once its shape is checked.
pub(super) struct Shape<'n> {
    /// The arguments, in order.
    pub(super) args: Vec<&'n KdlEntry>,
    /// The known properties, each once.
    props: Vec<(&'static str, &'n KdlEntry)>,
}

impl<'n> Shape<'n> {
    /// The property `name`, if written.
    pub(super) fn prop(&self, name: &str) -> Option<&'n KdlEntry> {
        self.props.iter().find(|(n, _)| *n == name).map(|(_, e)| *e)
    }
}

/// A node checked against its spec.
pub(super) struct Checked<'n> {
    /// Its entries, or `None` when their shape is off (already reported).
    pub(super) shape: Option<Shape<'n>>,
    /// Its children of an allowed kind (the others are reported).
    pub(super) children: Vec<&'n KdlNode>,
}

impl<'n> Checked<'n> {
    /// The known children named `name`, in order.
    pub(super) fn named(&self, name: &'static str) -> impl Iterator<Item = &'n KdlNode> + '_ {
        self.children
            .iter()
            .copied()
            .filter(move |c| c.name().value() == name)
    }
}

/// Flattens an optional part of a node: `None` when absent or refused, and a refused part (one
/// present but decoded to nothing) clears `ok`.
pub(super) fn present<T>(ok: &mut bool, part: Option<Option<T>>) -> Option<T> {
    if matches!(part, Some(None)) {
        *ok = false;
    }
    part.flatten()
}

impl<'d> FileDecoder<'d> {
    /// A decoder of file `file` (rank in load order) whose problems go to `diags`.
    pub(super) fn new(file: usize, src: &Src, diags: &'d mut Vec<Diag>) -> Self {
        Self {
            file,
            src: src.clone(),
            diags,
        }
    }

    /// Where `at` is in this file.
    pub(super) fn span(&self, at: SourceSpan) -> Span {
        Span {
            file: self.file,
            at,
        }
    }

    /// `value`, written at `at` in this file.
    pub(super) fn spanned<T>(&self, value: T, at: SourceSpan) -> Spanned<T> {
        Spanned {
            value,
            span: self.span(at),
        }
    }

    /// Records a problem of this file.
    pub(super) fn push(&mut self, problem: Problem) {
        self.diags.push(Diag::new(self.file, problem));
    }

    /// The file's text, for a problem.
    pub(super) fn src(&self) -> Src {
        self.src.clone()
    }

    /// Checks a node against its kind's spec: its entries, then its children.
    pub(super) fn check<'n>(&mut self, node: &'n KdlNode, spec: &NodeSpec) -> Checked<'n> {
        let shape = self.shape(node, spec);
        let children = if spec.children.is_empty() {
            Vec::new()
        } else {
            self.children(node, spec.children)
        };
        Checked { shape, children }
    }

    /// The id a checked block is named by (its one argument), decoded as `what`.
    pub(super) fn named_id(&mut self, checked: &Checked<'_>, what: &str) -> Option<Spanned<Id>> {
        let entry = checked.shape.as_ref()?.args.first()?;
        self.id(entry, what)
    }

    /// Checks a node's entries and children block against `spec`; `None` when anything is off.
    pub(super) fn shape<'n>(&mut self, node: &'n KdlNode, spec: &NodeSpec) -> Option<Shape<'n>> {
        let name = node.name().value();
        let mut ok = true;
        if let Some(ty) = node.ty() {
            self.type_annotation(name, ty.value(), ty.span());
            ok = false;
        }
        let mut shape = Shape {
            args: Vec::new(),
            props: Vec::new(),
        };
        for entry in node.entries() {
            if let Some(ty) = entry.ty() {
                self.type_annotation(name, ty.value(), entry.span());
                ok = false;
                continue;
            }
            ok &= match entry.name() {
                Some(key) => self.property(&mut shape, name, key.value(), entry, spec),
                None => self.argument(&mut shape, name, entry, spec),
            };
        }
        if shape.args.len() < spec.args.0 {
            self.push(Problem::Missing {
                src: self.src(),
                what: spec.arg_desc.to_owned(),
                place: format!("on `{name}`"),
                at: node.name().span(),
                help: None,
            });
            ok = false;
        }
        if let Some(children) = node.children()
            && spec.children.is_empty()
        {
            self.push(Problem::Unexpected {
                src: self.src(),
                what: "a children block".to_owned(),
                node: name.to_owned(),
                at: children.span(),
                help: None,
            });
            ok = false;
        }
        ok.then_some(shape)
    }

    fn type_annotation(&mut self, node: &str, ty: &str, at: SourceSpan) {
        self.push(Problem::Unexpected {
            src: self.src(),
            what: format!("the type annotation `({ty})`"),
            node: node.to_owned(),
            at,
            help: Some("compositions do not use KDL type annotations".to_owned()),
        });
    }

    /// Takes property `key` of node `name` into `shape`; `false` when unknown or repeated.
    fn property<'n>(
        &mut self,
        shape: &mut Shape<'n>,
        name: &str,
        key: &str,
        entry: &'n KdlEntry,
        spec: &NodeSpec,
    ) -> bool {
        let Some(known) = spec.props.iter().find(|p| **p == key) else {
            let help = if spec.props.is_empty() {
                format!("`{name}` takes no properties")
            } else {
                let list = spec
                    .props
                    .iter()
                    .map(|p| format!("`{p}`"))
                    .collect::<Vec<_>>()
                    .join(", ");
                match suggest(key, spec.props.iter().copied()) {
                    Some(s) => format!("did you mean `{s}`? `{name}` takes {list}"),
                    None => format!("`{name}` takes {list}"),
                }
            };
            self.push(Problem::Unexpected {
                src: self.src(),
                what: format!("property `{key}`"),
                node: name.to_owned(),
                at: entry.span(),
                help: Some(help),
            });
            return false;
        };
        if let Some((_, first)) = shape.props.iter().find(|(n, _)| *n == key) {
            self.push(Problem::Repeated {
                src: self.src(),
                what: format!("property `{key}`"),
                at: entry.span(),
                first: Some(first.span()),
            });
            return false;
        }
        shape.props.push((known, entry));
        true
    }

    /// Takes an argument of node `name` into `shape`; `false` when it is one too many.
    fn argument<'n>(
        &mut self,
        shape: &mut Shape<'n>,
        name: &str,
        entry: &'n KdlEntry,
        spec: &NodeSpec,
    ) -> bool {
        let mut ok = true;
        if shape.args.len() >= spec.args.1 {
            let help = if let (0, [prop]) = (spec.args.1, spec.props) {
                // `checkpoint 300` meant `checkpoint every=300`: its one property.
                format!(
                    "`{name}` takes no arguments; did you mean `{name} {prop}={}`?",
                    entry.value()
                )
            } else if spec.args.1 == 0 {
                format!("`{name}` takes no arguments")
            } else {
                format!("`{name}` takes {}", spec.arg_desc)
            };
            self.push(Problem::Unexpected {
                src: self.src(),
                what: format!("argument {}", shape.args.len() + 1),
                node: name.to_owned(),
                at: entry.span(),
                help: Some(help),
            });
            ok = false;
        }
        shape.args.push(entry);
        ok
    }

    /// The single argument of a node that takes exactly one value and nothing else.
    pub(super) fn one_arg<'n>(
        &mut self,
        node: &'n KdlNode,
        arg_desc: &'static str,
    ) -> Option<&'n KdlEntry> {
        let shape = self.shape(node, &NodeSpec::one_arg(arg_desc))?;
        shape.args.first().copied()
    }

    /// The value of a once-only child with one argument, decoded by `decode`: `None` when the
    /// child is absent (reported when it is required), `Some(None)` when it was refused.
    pub(super) fn value<'n, T>(
        &mut self,
        children: &[&'n KdlNode],
        spec: &ValueChild,
        parent: &KdlNode,
        decode: impl FnOnce(&mut Self, &'n KdlEntry) -> Option<T>,
    ) -> Option<Option<T>> {
        let found = match spec.required {
            Some(example) => self.required(children, spec.name, parent, example),
            None => self.once(children, spec.name),
        };
        found.map(|n| self.one_arg(n, spec.arg_desc).and_then(|e| decode(self, e)))
    }

    /// Decodes each of `nodes` with `decode`, keeping those it accepts; a refused one clears `ok`.
    pub(super) fn each<'n, T>(
        &mut self,
        ok: &mut bool,
        nodes: impl IntoIterator<Item = &'n KdlNode>,
        mut decode: impl FnMut(&mut Self, &'n KdlNode) -> Option<T>,
    ) -> Vec<T> {
        let mut decoded = Vec::new();
        for node in nodes {
            match decode(self, node) {
                Some(value) => decoded.push(value),
                None => *ok = false,
            }
        }
        decoded
    }

    /// Refuses children other than `allowed`; returns the known ones.
    fn children<'n>(&mut self, node: &'n KdlNode, allowed: &[&str]) -> Vec<&'n KdlNode> {
        let parent = node.name().value();
        let mut known = Vec::new();
        for child in node.iter_children() {
            let name = child.name().value();
            if allowed.contains(&name) {
                known.push(child);
            } else {
                self.unknown(child, &format!("in `{parent}`"), allowed);
            }
        }
        known
    }

    /// Reports a node the language does not have at `place`, with the ones it does.
    pub(super) fn unknown(&mut self, node: &KdlNode, place: &str, allowed: &[&str]) {
        let name = node.name().value();
        let list = allowed
            .iter()
            .map(|a| format!("`{a}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let help = match suggest(name, allowed.iter().copied()) {
            Some(s) => format!("did you mean `{s}`? allowed here: {list}"),
            None => format!("allowed here: {list}"),
        };
        self.push(Problem::UnknownNode {
            src: self.src(),
            name: name.to_owned(),
            place: place.to_owned(),
            at: node.name().span(),
            help: Some(help),
        });
    }

    /// Keeps the first of each named child that may appear once, refusing repeats.
    pub(super) fn once<'n>(&mut self, nodes: &[&'n KdlNode], name: &str) -> Option<&'n KdlNode> {
        let mut found: Option<&'n KdlNode> = None;
        for node in nodes.iter().filter(|n| n.name().value() == name) {
            match found {
                Some(first) => self.push(Problem::Repeated {
                    src: self.src(),
                    what: format!("`{name}`"),
                    at: node.name().span(),
                    first: Some(first.name().span()),
                }),
                None => found = Some(node),
            }
        }
        found
    }

    /// `once`, and a missing-node error at `parent` when absent.
    pub(super) fn required<'n>(
        &mut self,
        nodes: &[&'n KdlNode],
        name: &str,
        parent: &KdlNode,
        example: &str,
    ) -> Option<&'n KdlNode> {
        let found = self.once(nodes, name);
        if found.is_none() {
            self.push(Problem::Missing {
                src: self.src(),
                what: format!("`{name}`"),
                place: format!("in `{}`", parent.name().value()),
                at: parent.name().span(),
                help: Some(format!("add `{example}` to the block")),
            });
        }
        found
    }
}
