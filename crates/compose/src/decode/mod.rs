//! From bytes to the typed model: KDL 2.0 parsing, includes, and a hand-written decoder.
//!
//! Every problem is recorded and decoding goes on, so one pass reports all of a file's syntax
//! and shape errors. A node with an error is left out of the model; the resolver runs only on a
//! model decoded without any error, so it never reports a consequence of an earlier mistake.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use flysim_types::plan::{AxisRange, ModelKind, RunMode, Transport};
use flysim_types::{Digest, Id};
use kdl::{KdlDocument, KdlEntry, KdlNode, KdlValue};
use miette::{NamedSource, SourceSpan};

use crate::diag::{Diag, Problem, Src};
use crate::model::{
    Agent, AssetDecl, Axis, Composition, Environment, IdentityKind, Port, Profile, Run, SourceFile,
    Span, Spanned,
};
use crate::text::{join_lexical, suggest};

/// Loads a composition: parses the root, follows includes, decodes every file.
pub(crate) fn load(name: &str, bytes: &[u8], dir: &Path) -> (Composition, Vec<Diag>) {
    let mut loader = Loader {
        comp: Composition::default(),
        diags: Vec::new(),
        root_dir: dir.to_path_buf(),
        root_display: if name == "<stdin>" {
            String::new()
        } else {
            Path::new(name)
                .parent()
                .map(|p| p.to_string_lossy().replace('\\', "/"))
                .unwrap_or_default()
        },
        stack: Vec::new(),
        once: Vec::new(),
        seen: Vec::new(),
    };
    loader.load_file(name.to_owned(), String::new(), dir.to_path_buf(), bytes);
    loader.check_required();
    (loader.comp, loader.diags)
}

struct Loader {
    comp: Composition,
    diags: Vec<Diag>,
    /// The directory includes must stay inside.
    root_dir: PathBuf,
    /// The directory part of the root's display name, for include display names.
    root_display: String,
    /// Relative paths of the files being loaded, outermost first (cycle detection).
    stack: Vec<String>,
    /// First occurrences of nodes that may appear once: (name, span).
    once: Vec<(&'static str, Span)>,
    /// Names of every top-level node met, refused or not.
    seen: Vec<String>,
}

/// The decoding context of one file.
struct Cx<'l> {
    file: usize,
    src: Src,
    diags: &'l mut Vec<Diag>,
}

/// Describes the KDL type of a value for messages.
fn kind_of(value: &KdlValue) -> &'static str {
    match value {
        KdlValue::String(_) => "a string",
        KdlValue::Integer(_) => "an integer",
        KdlValue::Float(_) => "a float",
        KdlValue::Bool(_) => "a boolean",
        KdlValue::Null => "#null",
    }
}

/// The entries of a node once its shape is checked.
struct Shape<'n> {
    args: Vec<&'n KdlEntry>,
    props: Vec<(&'static str, &'n KdlEntry)>,
}

impl<'n> Shape<'n> {
    fn prop(&self, name: &str) -> Option<&'n KdlEntry> {
        self.props.iter().find(|(n, _)| *n == name).map(|(_, e)| *e)
    }
}

/// What a node takes: how many arguments, which properties, whether a children block.
struct Spec<'a> {
    args: (usize, usize),
    /// Description of the arguments, for "missing" messages (e.g. `an id`).
    arg_desc: &'a str,
    props: &'static [&'static str],
    children: bool,
}

impl Cx<'_> {
    fn span(&self, at: SourceSpan) -> Span {
        Span {
            file: self.file,
            at,
        }
    }

    fn spanned<T>(&self, value: T, at: SourceSpan) -> Spanned<T> {
        Spanned {
            value,
            span: self.span(at),
        }
    }

    fn push(&mut self, problem: Problem) {
        self.diags.push(Diag::new(self.file, problem));
    }

    fn src(&self) -> Src {
        self.src.clone()
    }

    /// Checks a node's entries and children against `spec`; `None` when anything is off.
    fn shape<'n>(&mut self, node: &'n KdlNode, spec: &Spec<'_>) -> Option<Shape<'n>> {
        let name = node.name().value().to_owned();
        let mut ok = true;
        if let Some(ty) = node.ty() {
            self.push(Problem::Unexpected {
                src: self.src(),
                what: format!("the type annotation `({})`", ty.value()),
                node: name.clone(),
                at: ty.span(),
                help: Some("compositions do not use KDL type annotations".to_owned()),
            });
            ok = false;
        }
        let mut shape = Shape {
            args: Vec::new(),
            props: Vec::new(),
        };
        for entry in node.entries() {
            if let Some(ty) = entry.ty() {
                self.push(Problem::Unexpected {
                    src: self.src(),
                    what: format!("the type annotation `({})`", ty.value()),
                    node: name.clone(),
                    at: entry.span(),
                    help: Some("compositions do not use KDL type annotations".to_owned()),
                });
                ok = false;
                continue;
            }
            match entry.name() {
                Some(key) => {
                    let key = key.value();
                    if let Some(known) = spec.props.iter().find(|p| **p == key) {
                        if let Some((_, first)) = shape.props.iter().find(|(n, _)| *n == key) {
                            self.push(Problem::Repeated {
                                src: self.src(),
                                what: format!("property `{key}`"),
                                at: entry.span(),
                                first: Some(first.span()),
                            });
                            ok = false;
                        } else {
                            shape.props.push((known, entry));
                        }
                    } else {
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
                            node: name.clone(),
                            at: entry.span(),
                            help: Some(help),
                        });
                        ok = false;
                    }
                }
                None => {
                    if shape.args.len() >= spec.args.1 {
                        let help = if spec.args.1 == 0 {
                            format!("`{name}` takes no arguments")
                        } else {
                            format!("`{name}` takes {}", spec.arg_desc)
                        };
                        self.push(Problem::Unexpected {
                            src: self.src(),
                            what: format!("argument {}", shape.args.len() + 1),
                            node: name.clone(),
                            at: entry.span(),
                            help: Some(help),
                        });
                        ok = false;
                    }
                    shape.args.push(entry);
                }
            }
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
            && !spec.children
        {
            self.push(Problem::Unexpected {
                src: self.src(),
                what: "a children block".to_owned(),
                node: name,
                at: children.span(),
                help: None,
            });
            ok = false;
        }
        ok.then_some(shape)
    }

    fn wrong_type(
        &mut self,
        entry: &KdlEntry,
        what: &str,
        expected: &'static str,
        help: Option<String>,
    ) {
        self.push(Problem::WrongType {
            src: self.src(),
            what: what.to_owned(),
            expected,
            found: kind_of(entry.value()),
            at: entry.span(),
            help,
        });
    }

    fn bad_value(&mut self, entry: &KdlEntry, what: &str, reason: String, help: Option<String>) {
        self.push(Problem::BadValue {
            src: self.src(),
            what: what.to_owned(),
            reason,
            at: entry.span(),
            help,
        });
    }

    fn string(&mut self, entry: &KdlEntry, what: &str) -> Option<Spanned<String>> {
        match entry.value() {
            KdlValue::String(s) => Some(self.spanned(s.clone(), entry.span())),
            _ => {
                self.wrong_type(entry, what, "a string", None);
                None
            }
        }
    }

    fn id(&mut self, entry: &KdlEntry, what: &str) -> Option<Spanned<Id>> {
        let text = self.string(entry, what)?;
        match Id::parse(&text.value) {
            Ok(id) => Some(Spanned {
                value: id,
                span: text.span,
            }),
            Err(e) => {
                self.bad_value(
                    entry,
                    what,
                    e.to_string(),
                    Some("an id is 1 to 64 characters of a-z, 0-9, `.`, `_`, `-`, starting with a letter or digit".to_owned()),
                );
                None
            }
        }
    }

    fn digest(&mut self, entry: &KdlEntry, what: &str) -> Option<Spanned<Digest>> {
        let text = self.string(entry, what)?;
        match Digest::parse(&text.value) {
            Ok(d) => Some(Spanned {
                value: d,
                span: text.span,
            }),
            Err(e) => {
                self.bad_value(
                    entry,
                    what,
                    e.to_string(),
                    Some("a sha256 is 64 lowercase hexadecimal characters, e.g. the output of `sha256sum FILE`".to_owned()),
                );
                None
            }
        }
    }

    fn int(&mut self, entry: &KdlEntry, what: &str, min: i128, max: i128) -> Option<Spanned<i128>> {
        match entry.value() {
            KdlValue::Integer(n) if (min..=max).contains(n) => Some(self.spanned(*n, entry.span())),
            KdlValue::Integer(n) => {
                self.bad_value(entry, what, format!("{n} is outside {min}..={max}"), None);
                None
            }
            _ => {
                self.wrong_type(entry, what, "an integer", None);
                None
            }
        }
    }

    fn float(&mut self, entry: &KdlEntry, what: &str) -> Option<Spanned<f64>> {
        let value = match entry.value() {
            KdlValue::Float(f) => *f,
            #[expect(
                clippy::cast_precision_loss,
                reason = "checked below: only integers a double holds exactly are accepted"
            )]
            KdlValue::Integer(n) if n.unsigned_abs() <= 1 << 53 => *n as f64,
            KdlValue::Integer(n) => {
                self.bad_value(entry, what, format!("{n} is not exact as a double"), None);
                return None;
            }
            _ => {
                self.wrong_type(entry, what, "a number", None);
                return None;
            }
        };
        if value.is_finite() {
            Some(self.spanned(value, entry.span()))
        } else {
            self.bad_value(entry, what, "the number is not finite".to_owned(), None);
            None
        }
    }

    fn boolean(&mut self, entry: &KdlEntry, what: &str) -> Option<Spanned<bool>> {
        match entry.value() {
            KdlValue::Bool(b) => Some(self.spanned(*b, entry.span())),
            _ => {
                self.wrong_type(
                    entry,
                    what,
                    "a boolean",
                    Some("KDL 2 spells booleans `#true` and `#false`".to_owned()),
                );
                None
            }
        }
    }

    fn choice<T: Copy>(
        &mut self,
        entry: &KdlEntry,
        what: &str,
        choices: &[(&'static str, T)],
    ) -> Option<Spanned<T>> {
        let text = self.string(entry, what)?;
        if let Some((_, v)) = choices.iter().find(|(s, _)| *s == text.value) {
            return Some(Spanned {
                value: *v,
                span: text.span,
            });
        }
        let names = choices.iter().map(|(s, _)| *s);
        let help = suggest(&text.value, names.clone()).map(|s| format!("did you mean \"{s}\"?"));
        self.push(Problem::NotAChoice {
            src: self.src(),
            what: what.to_owned(),
            found: text.value,
            choices: names
                .map(|s| format!("\"{s}\""))
                .collect::<Vec<_>>()
                .join(", "),
            at: entry.span(),
            help,
        });
        None
    }

    /// The single argument of a node that takes exactly one value and nothing else.
    fn one_arg<'n>(&mut self, node: &'n KdlNode, desc: &str) -> Option<&'n KdlEntry> {
        let shape = self.shape(
            node,
            &Spec {
                args: (1, 1),
                arg_desc: desc,
                props: &[],
                children: false,
            },
        )?;
        shape.args.first().copied()
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

    fn unknown(&mut self, node: &KdlNode, place: &str, allowed: &[&str]) {
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
    fn once<'n>(&mut self, nodes: &[&'n KdlNode], name: &str) -> Option<&'n KdlNode> {
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
    fn required<'n>(
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
    /// Adds a source file and decodes it (following its includes).
    fn load_file(&mut self, name: String, rel: String, path_dir: PathBuf, bytes: &[u8]) {
        let file = self.comp.sources.len();
        let text: Arc<str> = Arc::from(String::from_utf8_lossy(bytes).as_ref());
        let src = NamedSource::new(&name, Arc::clone(&text)).with_language("kdl");
        self.comp.sources.push(SourceFile {
            name,
            rel: rel.clone(),
            dir: path_dir,
            sha256: flysim_types::digest::sha256(bytes),
            src: src.clone(),
            text: Arc::clone(&text),
        });
        if let Err(e) = std::str::from_utf8(bytes) {
            self.diags.push(Diag::new(
                file,
                Problem::Syntax {
                    src,
                    message: "the file is not UTF-8 text".to_owned(),
                    at: SourceSpan::from((e.valid_up_to(), 1)),
                    label: "not UTF-8".to_owned(),
                    help: Some("KDL documents are UTF-8; re-encode the file".to_owned()),
                },
            ));
            return;
        }
        let doc = match KdlDocument::parse_v2(&text) {
            Ok(doc) => doc,
            Err(err) => {
                for d in err.diagnostics {
                    let problem = crate::syntax::convert(&src, &text, &d);
                    self.diags.push(Diag::new(file, problem));
                }
                return;
            }
        };
        // The root is on the stack under its file name, so an include of it is a cycle.
        let key = if file == 0 {
            Path::new(&self.comp.sources[0].name)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .filter(|_| self.comp.sources[0].name != "<stdin>")
                .unwrap_or_default()
        } else {
            rel
        };
        self.stack.push(key);
        self.decode_document(file, &src, &doc);
        self.stack.pop();
    }

    fn decode_document(&mut self, file: usize, src: &Src, doc: &KdlDocument) {
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
                let mut cx = Cx {
                    file,
                    src: src.clone(),
                    diags: &mut self.diags,
                };
                let place = if ROOT_NODES.contains(&name) {
                    "in an included file"
                } else {
                    "at the top level"
                };
                cx.unknown(node, place, allowed);
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
        let mut cx = Cx {
            file,
            src: src.clone(),
            diags: &mut self.diags,
        };
        if seen || index != 0 {
            cx.push(Problem::Header {
                src: cx.src(),
                message: "`flysim-composition` must be the first node, and appear once".to_owned(),
                at: node.name().span(),
            });
            return;
        }
        self.comp.header = Some(cx.span(node.name().span()));
        let Some(entry) = cx.one_arg(node, "the format version, `1`") else {
            return;
        };
        match entry.value() {
            KdlValue::Integer(1) => {}
            KdlValue::Integer(n) => cx.push(Problem::Header {
                src: cx.src(),
                message: format!("composition format {n} is not supported"),
                at: entry.span(),
            }),
            _ => cx.wrong_type(entry, "the format version", "an integer", None),
        }
    }

    /// Records the first occurrence of a once-only top-level node; `false` (with a diagnostic)
    /// when it was already seen.
    fn first_time(&mut self, cx: &mut Cx<'_>, name: &'static str, at: SourceSpan) -> bool {
        if let Some((_, first)) = self.once.iter().find(|(n, _)| *n == name) {
            cx.push(Problem::Repeated {
                src: cx.src(),
                what: format!("`{name}`"),
                at,
                first: (first.file == cx.file).then_some(first.at),
            });
            return false;
        }
        self.once.push((name, cx.span(at)));
        true
    }

    fn top_level(&mut self, file: usize, src: &Src, node: &KdlNode) {
        self.seen.push(node.name().value().to_owned());
        let mut diags = std::mem::take(&mut self.diags);
        let mut cx = Cx {
            file,
            src: src.clone(),
            diags: &mut diags,
        };
        let name_span = node.name().span();
        let once = ONCE_NODES.iter().find(|n| **n == node.name().value());
        if let Some(name) = once
            && !self.first_time(&mut cx, name, name_span)
        {
            self.diags = diags;
            return;
        }
        match node.name().value() {
            "name" => {
                let entry = cx.one_arg(node, "a name string");
                self.comp.name = entry.and_then(|e| cx.string(e, "`name`"));
            }
            "description" => {
                let entry = cx.one_arg(node, "a description string");
                self.comp.description = entry.and_then(|e| cx.string(e, "`description`"));
            }
            "seed-derivation" => {
                let entry = cx.one_arg(node, "the algorithm id, \"seed-derivation-v1\"");
                self.comp.seed_derivation = entry.and_then(|e| cx.string(e, "`seed-derivation`"));
            }
            "master-seed" => {
                if let Some(entry) = cx.one_arg(node, "a U64 string, e.g. \"42\"") {
                    if let KdlValue::Integer(n) = entry.value() {
                        cx.wrong_type(
                            entry,
                            "`master-seed`",
                            "a string",
                            Some(format!(
                                "write the master seed as a canonical U64 string: `master-seed \"{n}\"`"
                            )),
                        );
                    } else {
                        self.comp.master_seed = cx.string(entry, "`master-seed`");
                    }
                }
            }
            "explicit-seeds" => {
                let entry = cx.one_arg(node, "`#true` or `#false`");
                self.comp.explicit_seeds = entry.and_then(|e| cx.boolean(e, "`explicit-seeds`"));
            }
            "task" => {
                let entry = cx.one_arg(node, "the task's id");
                self.comp.task = entry.and_then(|e| cx.id(e, "the task id"));
            }
            "executor" => {
                let entry = cx.one_arg(node, "the executor's id");
                self.comp.executor = entry.and_then(|e| cx.id(e, "the executor id"));
            }
            "run" => {
                self.comp.run = decode_run(&mut cx, node);
            }
            "profile" => {
                if let Some(p) = decode_profile(&mut cx, node) {
                    self.comp.profiles.push(p);
                }
            }
            "environment" => {
                if let Some(e) = decode_environment(&mut cx, node) {
                    self.comp.environments.push(e);
                }
            }
            "agent" => {
                if let Some(a) = decode_agent(&mut cx, node) {
                    self.comp.agents.push(a);
                }
            }
            _ => {}
        }
        self.diags = diags;
    }

    fn include(&mut self, file: usize, src: &Src, node: &KdlNode) {
        let mut diags = std::mem::take(&mut self.diags);
        let mut cx = Cx {
            file,
            src: src.clone(),
            diags: &mut diags,
        };
        let target = cx
            .one_arg(node, "a relative path")
            .and_then(|e| cx.string(e, "the include path").map(|s| (s, e.span())));
        self.diags = diags;
        let Some((path, at)) = target else {
            return;
        };
        let path = path.value;
        let parent_rel = self.comp.sources[file].rel.clone();
        let parent_dir = parent_rel
            .rsplit_once('/')
            .map_or("", |(d, _)| d)
            .to_owned();
        let (rel, escapes) = join_lexical(&parent_dir, &path);
        if path.starts_with('/') || path.contains('\\') || escapes || rel.is_empty() {
            self.diags.push(Diag::new(
                file,
                Problem::IncludeEscapes {
                    src: src.clone(),
                    path,
                    at,
                },
            ));
            return;
        }
        if self.stack.contains(&rel) {
            let mut chain: Vec<String> = self
                .stack
                .iter()
                .map(|r| {
                    if r.is_empty() {
                        "<composition>".to_owned()
                    } else {
                        r.clone()
                    }
                })
                .collect();
            chain.push(if rel.is_empty() {
                "<composition>".to_owned()
            } else {
                rel
            });
            self.diags.push(Diag::new(
                file,
                Problem::IncludeCycle {
                    src: src.clone(),
                    chain: chain.join(" -> "),
                    at,
                },
            ));
            return;
        }
        let fs_path = self.root_dir.join(&rel);
        let unreadable = |reason: String| Problem::IncludeUnreadable {
            src: src.clone(),
            path: path.clone(),
            reason,
            at,
        };
        // Symbolic links must not lead out of the tree either.
        let inside = match (fs_path.canonicalize(), self.root_dir.canonicalize()) {
            (Ok(target), Ok(root)) => target.starts_with(root),
            (Err(e), _) | (_, Err(e)) => {
                self.diags.push(Diag::new(file, unreadable(e.to_string())));
                return;
            }
        };
        if !inside {
            self.diags.push(Diag::new(
                file,
                Problem::IncludeEscapes {
                    src: src.clone(),
                    path,
                    at,
                },
            ));
            return;
        }
        match std::fs::read(&fs_path) {
            Ok(bytes) => {
                let name = if self.root_display.is_empty() {
                    rel.clone()
                } else {
                    format!("{}/{rel}", self.root_display)
                };
                let dir = fs_path
                    .parent()
                    .map_or_else(|| self.root_dir.clone(), Path::to_path_buf);
                self.load_file(name, rel, dir, &bytes);
            }
            Err(e) => self.diags.push(Diag::new(file, unreadable(e.to_string()))),
        }
    }

    /// Reports every required top-level node the loaded files did not declare.
    fn check_required(&mut self) {
        if self.comp.sources.is_empty() || self.diags.iter().any(|d| d.code() == "FS0201") {
            return;
        }
        let src = self.comp.sources[0].src.clone();
        let at = self.comp.header.map_or(SourceSpan::from((0, 0)), |h| h.at);
        let c = &self.comp;
        let missing: [(&str, bool, &str); 8] = [
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
            ("task", c.task.is_none(), "task \"counter-v1\""),
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

fn decode_profile(cx: &mut Cx<'_>, node: &KdlNode) -> Option<Profile> {
    let shape = cx.shape(
        node,
        &Spec {
            args: (1, 1),
            arg_desc: "the profile's id",
            props: &[],
            children: true,
        },
    );
    let id = shape.and_then(|s| s.args.first().and_then(|e| cx.id(e, "the profile id")));
    let children = cx.children(node, &["model", "parameter", "asset"]);
    let model = cx
        .required(&children, "model", node, "model \"synthetic\"")
        .and_then(|m| cx.one_arg(m, "the model kind"))
        .and_then(|e| cx.choice(e, "the model", &ModelKind::ALL));
    let mut parameters = Vec::new();
    let mut assets = Vec::new();
    let mut ok = true;
    for child in &children {
        match child.name().value() {
            "parameter" => {
                let Some(shape) = cx.shape(
                    child,
                    &Spec {
                        args: (2, 2),
                        arg_desc: "a name and a value",
                        props: &[],
                        children: false,
                    },
                ) else {
                    ok = false;
                    continue;
                };
                let name = cx.string(shape.args[0], "the parameter name");
                let value = parameter_value(cx, shape.args[1]);
                match (name, value) {
                    (Some(n), Some(v)) => parameters.push((n, v)),
                    _ => ok = false,
                }
            }
            "asset" => match decode_asset(cx, child) {
                Some(a) => assets.push(a),
                None => ok = false,
            },
            _ => {}
        }
    }
    Some(Profile {
        id: id?,
        model: model?,
        parameters,
        assets,
    })
    .filter(|_| ok)
}

fn parameter_value(cx: &mut Cx<'_>, entry: &KdlEntry) -> Option<Spanned<serde_json::Value>> {
    let value = match entry.value() {
        KdlValue::String(s) => serde_json::Value::from(s.clone()),
        KdlValue::Bool(b) => serde_json::Value::from(*b),
        KdlValue::Integer(n) => {
            let safe = i128::from(flysim_types::limits::MAX_SAFE_INTEGER);
            match i64::try_from(*n) {
                Ok(v) if (-safe..=safe).contains(n) => serde_json::Value::from(v),
                _ => {
                    cx.bad_value(
                        entry,
                        "the parameter value",
                        format!("{n} is outside the exact double range"),
                        Some("write large values as strings".to_owned()),
                    );
                    return None;
                }
            }
        }
        KdlValue::Float(_) => {
            serde_json::Value::from(cx.float(entry, "the parameter value")?.value)
        }
        KdlValue::Null => {
            cx.wrong_type(
                entry,
                "the parameter value",
                "a string, number or boolean",
                Some("leave the parameter out instead of writing #null".to_owned()),
            );
            return None;
        }
    };
    Some(cx.spanned(value, entry.span()))
}

fn decode_asset(cx: &mut Cx<'_>, node: &KdlNode) -> Option<AssetDecl> {
    let shape = cx.shape(
        node,
        &Spec {
            args: (1, 1),
            arg_desc: "the asset's id",
            props: &["path", "sha256", "format"],
            children: false,
        },
    )?;
    let id = cx.id(shape.args[0], "the asset id");
    let path = shape.prop("path").map(|e| cx.string(e, "`path`"));
    let sha256 = shape.prop("sha256").map(|e| cx.digest(e, "`sha256`"));
    let format = shape.prop("format").map(|e| cx.id(e, "`format`"));
    let ok = path.as_ref().is_none_or(Option::is_some)
        && sha256.as_ref().is_none_or(Option::is_some)
        && format.as_ref().is_none_or(Option::is_some);
    Some(AssetDecl {
        id: id?,
        path: path.flatten(),
        sha256: sha256.flatten(),
        format: format.flatten(),
    })
    .filter(|_| ok)
}

fn decode_environment(cx: &mut Cx<'_>, node: &KdlNode) -> Option<Environment> {
    let shape = cx.shape(
        node,
        &Spec {
            args: (1, 1),
            arg_desc: "the environment's id",
            props: &["backend"],
            children: true,
        },
    );
    let mut ok = shape.is_some();
    let id = shape
        .as_ref()
        .and_then(|s| s.args.first().and_then(|e| cx.id(e, "the environment id")));
    let backend = match shape.as_ref().map(|s| s.prop("backend")) {
        Some(Some(e)) => cx.string(e, "`backend`"),
        Some(None) => {
            cx.push(Problem::Missing {
                src: cx.src(),
                what: "property `backend`".to_owned(),
                place: "on `environment`".to_owned(),
                at: node.name().span(),
                help: Some(
                    "name the backend: backend=\"arena\", \"binjgb\" or \"dolphin\"".to_owned(),
                ),
            });
            None
        }
        None => None,
    };
    let children = cx.children(node, &["world", "revision", "version", "content", "port"]);
    let mut identity = Vec::new();
    for kind in [
        IdentityKind::World,
        IdentityKind::Revision,
        IdentityKind::Version,
    ] {
        if let Some(n) = cx.once(&children, kind.node()) {
            let what = format!("`{}`", kind.node());
            match cx
                .one_arg(n, "the pinned identity string")
                .and_then(|e| cx.string(e, &what))
            {
                Some(v) => identity.push((kind, v)),
                None => ok = false,
            }
        }
    }
    let content = match cx.once(&children, "content") {
        Some(n) => {
            let decoded = decode_asset(cx, n);
            ok &= decoded.is_some();
            decoded
        }
        None => None,
    };
    let mut ports = Vec::new();
    for child in children.iter().filter(|c| c.name().value() == "port") {
        match decode_port(cx, child) {
            Some(p) => ports.push(p),
            None => ok = false,
        }
    }
    Some(Environment {
        id: id?,
        backend: backend?,
        identity,
        content,
        ports,
    })
    .filter(|_| ok)
}

fn decode_port(cx: &mut Cx<'_>, node: &KdlNode) -> Option<Port> {
    let shape = cx.shape(
        node,
        &Spec {
            args: (1, 1),
            arg_desc: "the port's id",
            props: &[],
            children: true,
        },
    );
    let id = shape.and_then(|s| s.args.first().and_then(|e| cx.id(e, "the port id")));
    let children = cx.children(node, &["controller", "buttons", "axis"]);
    let mut ok = true;
    let controller = cx
        .required(
            &children,
            "controller",
            node,
            "controller \"pad\" version=1",
        )
        .and_then(|c| {
            let shape = cx.shape(
                c,
                &Spec {
                    args: (1, 1),
                    arg_desc: "the controller schema's id",
                    props: &["version"],
                    children: false,
                },
            )?;
            let id = cx.id(shape.args[0], "the controller id");
            let version = match shape.prop("version") {
                Some(e) => cx
                    .int(e, "the controller version", 1, 65_535)
                    .map(|v| cx.spanned(u32::try_from(v.value).unwrap_or(1), e.span())),
                None => Some(cx.spanned(1, c.name().span())),
            };
            Some((id?, version?))
        });
    let mut buttons = Vec::new();
    if let Some(b) = cx.once(&children, "buttons") {
        match cx.shape(
            b,
            &Spec {
                args: (0, usize::MAX),
                arg_desc: "button ids",
                props: &[],
                children: false,
            },
        ) {
            Some(shape) => {
                for e in shape.args {
                    match cx.id(e, "a button id") {
                        Some(id) => buttons.push(id),
                        None => ok = false,
                    }
                }
            }
            None => ok = false,
        }
    }
    let mut axes = Vec::new();
    for a in children.iter().filter(|c| c.name().value() == "axis") {
        let decoded = cx
            .shape(
                a,
                &Spec {
                    args: (1, 1),
                    arg_desc: "the axis id",
                    props: &["range", "neutral"],
                    children: false,
                },
            )
            .and_then(|shape| {
                let id = cx.id(shape.args[0], "the axis id");
                let range = match shape.prop("range") {
                    Some(e) => cx.choice(
                        e,
                        "the axis range",
                        &[("bipolar", AxisRange::Bipolar), ("unit", AxisRange::Unit)],
                    ),
                    None => {
                        cx.push(Problem::Missing {
                            src: cx.src(),
                            what: "property `range`".to_owned(),
                            place: "on `axis`".to_owned(),
                            at: a.name().span(),
                            help: Some("add range=\"bipolar\" or range=\"unit\"".to_owned()),
                        });
                        None
                    }
                };
                let neutral = match shape.prop("neutral") {
                    Some(e) => cx.float(e, "the axis neutral value"),
                    None => Some(cx.spanned(0.0, a.name().span())),
                };
                Some(Axis {
                    id: id?,
                    range: range?.value,
                    neutral: neutral?,
                })
            });
        match decoded {
            Some(axis) => axes.push(axis),
            None => ok = false,
        }
    }
    let (controller, version) = controller?;
    Some(Port {
        id: id?,
        controller,
        version,
        buttons,
        axes,
    })
    .filter(|_| ok)
}

fn decode_agent(cx: &mut Cx<'_>, node: &KdlNode) -> Option<Agent> {
    let shape = cx.shape(
        node,
        &Spec {
            args: (1, 1),
            arg_desc: "the agent's id",
            props: &[],
            children: true,
        },
    );
    let id = shape.and_then(|s| s.args.first().and_then(|e| cx.id(e, "the agent id")));
    let children = cx.children(node, &["profile", "port", "threads", "seed"]);
    let profile = cx
        .required(&children, "profile", node, "profile \"<profile id>\"")
        .and_then(|n| cx.one_arg(n, "the profile's id"))
        .and_then(|e| cx.id(e, "the profile id"));
    let port = cx
        .required(&children, "port", node, "port \"<port id>\"")
        .and_then(|n| cx.one_arg(n, "the port's id"))
        .and_then(|e| cx.id(e, "the port id"));
    let mut ok = true;
    let threads = cx.once(&children, "threads").map(|n| {
        cx.one_arg(n, "a thread count")
            .and_then(|e| {
                cx.int(
                    e,
                    "`threads`",
                    1,
                    i128::from(flysim_types::limits::MAX_WORKER_THREADS),
                )
            })
            .map(|v| Spanned {
                value: u32::try_from(v.value).unwrap_or(1),
                span: v.span,
            })
    });
    let seed = cx.once(&children, "seed").map(|n| {
        cx.one_arg(n, "a 32-bit signed integer")
            .and_then(|e| cx.int(e, "`seed`", i128::from(i32::MIN), i128::from(i32::MAX)))
            .map(|v| Spanned {
                value: i32::try_from(v.value).unwrap_or(0),
                span: v.span,
            })
    });
    ok &= threads.as_ref().is_none_or(Option::is_some) && seed.as_ref().is_none_or(Option::is_some);
    Some(Agent {
        id: id?,
        profile: profile?,
        port: port?,
        threads: threads.flatten(),
        seed: seed.flatten(),
    })
    .filter(|_| ok)
}

fn decode_run(cx: &mut Cx<'_>, node: &KdlNode) -> Option<Run> {
    let shape = cx.shape(
        node,
        &Spec {
            args: (0, 0),
            arg_desc: "no arguments",
            props: &[],
            children: true,
        },
    );
    let mut ok = shape.is_some();
    let children = cx.children(
        node,
        &["steps", "mode", "transport", "checkpoint", "max-threads"],
    );
    let steps = cx
        .required(&children, "steps", node, "steps 600")
        .and_then(|n| cx.one_arg(n, "a step count"))
        .and_then(|e| cx.int(e, "`steps`", 1, i128::from(u64::MAX)))
        .map(|v| Spanned {
            value: u64::try_from(v.value).unwrap_or(1),
            span: v.span,
        });
    let mode = cx.once(&children, "mode").map(|n| {
        cx.one_arg(n, "a mode")
            .and_then(|e| cx.choice(e, "the run mode", &RunMode::ALL))
    });
    let transport = cx.once(&children, "transport").map(|n| {
        cx.one_arg(n, "a transport")
            .and_then(|e| cx.choice(e, "the transport", &Transport::ALL))
    });
    let checkpoint = cx.once(&children, "checkpoint").map(|n| {
        let shape = cx.shape(
            n,
            &Spec {
                args: (0, 0),
                arg_desc: "no arguments",
                props: &["every"],
                children: false,
            },
        )?;
        match shape.prop("every") {
            Some(e) => cx
                .int(e, "`every`", 1, i128::from(u64::MAX))
                .map(|v| Spanned {
                    value: u64::try_from(v.value).unwrap_or(1),
                    span: v.span,
                }),
            None => {
                cx.push(Problem::Missing {
                    src: cx.src(),
                    what: "property `every`".to_owned(),
                    place: "on `checkpoint`".to_owned(),
                    at: n.name().span(),
                    help: Some("write `checkpoint every=100`".to_owned()),
                });
                None
            }
        }
    });
    let max_threads = cx.once(&children, "max-threads").map(|n| {
        cx.one_arg(n, "a thread count")
            .and_then(|e| {
                cx.int(
                    e,
                    "`max-threads`",
                    1,
                    i128::from(flysim_types::limits::MAX_WORKER_THREADS),
                )
            })
            .map(|v| Spanned {
                value: u32::try_from(v.value).unwrap_or(1),
                span: v.span,
            })
    });
    ok &= mode.as_ref().is_none_or(Option::is_some)
        && transport.as_ref().is_none_or(Option::is_some)
        && checkpoint.as_ref().is_none_or(Option::is_some)
        && max_threads.as_ref().is_none_or(Option::is_some);
    Some(Run {
        span: cx.span(node.name().span()),
        steps: steps?,
        mode: mode.flatten(),
        transport: transport.flatten(),
        checkpoint_every: checkpoint.flatten(),
        max_threads: max_threads.flatten(),
    })
    .filter(|_| ok)
}
