//! The loader: source files (their bytes, digest, UTF-8 and KDL 2.0 syntax), and includes (a
//! relative path that stays inside the composition's tree, no cycle, readable).
//!
//! It owns the composition being filled and the diagnostics of every file. What a document's
//! top-level nodes mean is decoded by `top_level`; it does not know any node kind but `include`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use kdl::{KdlDocument, KdlNode};
use miette::SourceSpan;

use super::bounded::{self, Refusal};
use super::node::FileDecoder;
use crate::diag::{Diag, Problem, Src};
use crate::model::{Composition, SourceFile, Span};
use crate::text::join_lexical;

/// The state of one load: the composition so far and the diagnostics of every file.
pub(super) struct Loader {
    /// The composition being filled.
    pub(super) comp: Composition,
    /// The diagnostics so far, of every file.
    pub(super) diags: Vec<Diag>,
    /// The directory includes must stay inside.
    root_dir: PathBuf,
    /// The directory part of the root's display name, for include display names.
    root_display: String,
    /// Relative paths of the files being loaded, outermost first (cycle detection).
    stack: Vec<String>,
    /// First occurrences of nodes that may appear once: (name, span).
    pub(super) once: Vec<(&'static str, Span)>,
    /// Names of every top-level node met, refused or not.
    pub(super) seen: Vec<String>,
    /// How many more nodes the files still to be read may have.
    nodes_left: usize,
}

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
        nodes_left: super::scan::NODE_LIMIT,
    };
    loader.load_file(name.to_owned(), String::new(), dir.to_path_buf(), bytes);
    loader.check_required();
    (loader.comp, loader.diags)
}

impl Loader {
    /// Adds a source file and decodes it (following its includes).
    fn load_file(&mut self, name: String, rel: String, path_dir: PathBuf, bytes: &[u8]) {
        let file = self.comp.sources.len();
        let text: Arc<str> = Arc::from(String::from_utf8_lossy(bytes).as_ref());
        let src = Src::new(&name, Arc::clone(&text));
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
        let found = match super::scan::scan(&text, self.nodes_left) {
            Ok(nodes) => {
                self.nodes_left -= nodes;
                None
            }
            Err(found) => Some(found),
        };
        if let Some(found) = found {
            let problem = match found {
                super::scan::Finding::TooDeep { at } => Problem::TooDeep {
                    src,
                    limit: super::scan::DEPTH_LIMIT,
                    at: SourceSpan::from((at, 1)),
                },
                super::scan::Finding::TooManyNodes { at } => Problem::TooManyNodes {
                    src,
                    limit: super::scan::NODE_LIMIT,
                    at: SourceSpan::from((at, 1)),
                },
                super::scan::Finding::Disallowed { at, ch } => Problem::DisallowedInComment {
                    code_point: format!("U+{:04X}", u32::from(ch)),
                    src,
                    at: SourceSpan::from((at, ch.len_utf8())),
                },
            };
            self.diags.push(Diag::new(file, problem));
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

    /// Follows an `include` node of file `file`: checks its path and loads the file it names.
    pub(super) fn include(&mut self, file: usize, src: &Src, node: &KdlNode) {
        let mut dec = FileDecoder::new(file, src, &mut self.diags);
        let target = dec
            .one_arg(node, "a relative path")
            .and_then(|e| dec.string(e, "the include path").map(|s| (s, e.span())));
        let Some((path, at)) = target else {
            return;
        };
        let path = path.value;
        let parent_rel = &self.comp.sources[file].rel;
        let parent_dir = parent_rel.rsplit_once('/').map_or("", |(d, _)| d);
        let (rel, escapes) = join_lexical(parent_dir, &path);
        let escapes_tree = Problem::IncludeEscapes {
            src: src.clone(),
            path: path.clone(),
            at,
        };
        if path.starts_with('/') || path.contains('\\') || escapes || rel.is_empty() {
            self.diags.push(Diag::new(file, escapes_tree));
            return;
        }
        if self.stack.contains(&rel) {
            let problem = self.cycle(src, rel, at);
            self.diags.push(Diag::new(file, problem));
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
            self.diags.push(Diag::new(file, escapes_tree));
            return;
        }
        let bytes = match bounded::read(&fs_path, bounded::INCLUDE_LIMIT) {
            Ok(bytes) => bytes,
            Err(Refusal::Io(e)) => {
                self.diags.push(Diag::new(file, unreadable(e.to_string())));
                return;
            }
            Err(Refusal::NotAFile(kind)) => {
                let problem = Problem::NotAFile {
                    src: src.clone(),
                    path,
                    kind,
                    at,
                };
                self.diags.push(Diag::new(file, problem));
                return;
            }
            Err(Refusal::TooLarge(limit)) => {
                let problem = Problem::FileTooLarge {
                    src: src.clone(),
                    path,
                    limit,
                    at,
                };
                self.diags.push(Diag::new(file, problem));
                return;
            }
        };
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

    /// The include cycle closed by including `rel` again, from the outermost file.
    fn cycle(&self, src: &Src, rel: String, at: SourceSpan) -> Problem {
        let shown = |r: &String| {
            if r.is_empty() {
                "<composition>".to_owned()
            } else {
                r.clone()
            }
        };
        let mut chain: Vec<String> = self.stack.iter().map(shown).collect();
        chain.push(shown(&rel));
        Problem::IncludeCycle {
            src: src.clone(),
            chain: chain.join(" -> "),
            at,
        }
    }
}
