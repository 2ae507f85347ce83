//! The diagnostics of a composition: one variant per code, each pointing into its source file.
//!
//! [`Problem`] is the coded refusal (derived with miette: code, message, labelled spans, help,
//! the named source). [`Diag`] wraps it with its position so a list can be sorted the way a
//! reader meets the problems: the composition file first, then each included file in load
//! order, and by byte offset within a file. The refusals of a composition that does not go with
//! the build's components are [`ComponentProblem`], those of a declared memory task
//! [`MemoryProblem`] (each its own file).

mod component;
mod memory;
mod source;
mod sweep;

pub use component::ComponentProblem;
pub use memory::MemoryProblem;
use miette::{Diagnostic, SourceSpan};
pub use source::Src;
pub use sweep::SweepProblem;
use thiserror::Error;

/// One diagnostic, with its position for sorting.
#[derive(Debug, Error)]
#[error("{problem}")]
pub struct Diag {
    /// Rank of the source file in load order (0 is the composition itself).
    file: usize,
    /// The problem.
    problem: Box<Problem>,
}

impl Diag {
    pub(crate) fn new(file: usize, problem: Problem) -> Self {
        Self {
            file,
            problem: Box::new(problem),
        }
    }

    /// The registered code, `FSnnnn`.
    #[must_use]
    pub fn code(&self) -> String {
        Diagnostic::code(&*self.problem)
            .map(|c| c.to_string())
            .unwrap_or_default()
    }

    /// The rank of its source file in load order (0 is the composition itself).
    pub(crate) fn file(&self) -> usize {
        self.file
    }

    /// The problem itself.
    #[must_use]
    pub fn problem(&self) -> &Problem {
        &self.problem
    }

    /// The sort key: file rank, then the offset of the first label.
    fn key(&self) -> (usize, usize, String) {
        let offset = Diagnostic::labels(&*self.problem)
            .and_then(|mut l| l.next())
            .map_or(0, |l| l.offset());
        (self.file, offset, self.code())
    }
}

impl Diagnostic for Diag {
    fn code<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        Diagnostic::code(&*self.problem)
    }
    fn help<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        Diagnostic::help(&*self.problem)
    }
    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        Diagnostic::labels(&*self.problem)
    }
    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        Diagnostic::source_code(&*self.problem)
    }
}

/// Sorts diagnostics by file rank and offset (stable, so equal positions keep their order).
pub(crate) fn sort(diags: &mut [Diag]) {
    diags.sort_by_cached_key(Diag::key);
}

/// A refusal of a composition, with its code. Every variant points into a source file.
#[derive(Debug, Error, Diagnostic)]
#[non_exhaustive]
pub enum Problem {
    /// Text that is not KDL 2.0.
    #[error("invalid KDL: {message}")]
    #[diagnostic(code("FS0201"))]
    Syntax {
        /// The source.
        #[source_code]
        src: Src,
        /// What the parser says.
        message: String,
        /// Where.
        #[label("{label}")]
        at: SourceSpan,
        /// The label text.
        label: String,
        /// How to fix it, KDL 1 hints included.
        #[help]
        help: Option<String>,
    },
    /// A node the composition language does not have here.
    #[error("unknown node `{name}` {place}")]
    #[diagnostic(code("FS0202"))]
    UnknownNode {
        /// The source.
        #[source_code]
        src: Src,
        /// The node's name.
        name: String,
        /// Where it was found, e.g. `in agent`.
        place: String,
        /// The node name.
        #[label("not allowed here")]
        at: SourceSpan,
        /// A suggestion and the allowed nodes.
        #[help]
        help: Option<String>,
    },
    /// A value of the wrong KDL type.
    #[error("{what} must be {expected}, found {found}")]
    #[diagnostic(code("FS0203"))]
    WrongType {
        /// The source.
        #[source_code]
        src: Src,
        /// Which value.
        what: String,
        /// The type expected.
        expected: &'static str,
        /// The type found.
        found: &'static str,
        /// The value.
        #[label("{found}")]
        at: SourceSpan,
        /// How to write it.
        #[help]
        help: Option<String>,
    },
    /// A required node, argument or property is absent.
    #[error("{what} is missing {place}")]
    #[diagnostic(code("FS0204"))]
    Missing {
        /// The source.
        #[source_code]
        src: Src,
        /// What is missing.
        what: String,
        /// Where it was expected.
        place: String,
        /// The node that should hold it.
        #[label("needs {what}")]
        at: SourceSpan,
        /// How to write it.
        #[help]
        help: Option<String>,
    },
    /// A node or property that may appear once appears again.
    #[error("{what} appears more than once")]
    #[diagnostic(
        code("FS0205"),
        help("write it once; flysim does not let a later value silently win")
    )]
    Repeated {
        /// The source.
        #[source_code]
        src: Src,
        /// What is repeated.
        what: String,
        /// The repetition.
        #[label("again here")]
        at: SourceSpan,
        /// The first occurrence, when in the same file.
        #[label("first here")]
        first: Option<SourceSpan>,
    },
    /// An argument, property, children block or type annotation the node does not take.
    #[error("{what} is not allowed on `{node}`")]
    #[diagnostic(code("FS0206"))]
    Unexpected {
        /// The source.
        #[source_code]
        src: Src,
        /// What was found.
        what: String,
        /// The node.
        node: String,
        /// It.
        #[label("unexpected")]
        at: SourceSpan,
        /// What the node takes.
        #[help]
        help: Option<String>,
    },
    /// The header `flysim-composition 1` is missing, misplaced or names another version.
    #[error("{message}")]
    #[diagnostic(
        code("FS0207"),
        help("a composition starts with `flysim-composition 1`; this build reads version 1")
    )]
    Header {
        /// The source.
        #[source_code]
        src: Src,
        /// What is wrong.
        message: String,
        /// Where.
        #[label("here")]
        at: SourceSpan,
    },
    /// A value outside its range, or not a valid Id, U64 or digest.
    #[error("{what}: {reason}")]
    #[diagnostic(code("FS0208"))]
    BadValue {
        /// The source.
        #[source_code]
        src: Src,
        /// Which value.
        what: String,
        /// The rule it breaks.
        reason: String,
        /// The value.
        #[label("invalid")]
        at: SourceSpan,
        /// How to write it.
        #[help]
        help: Option<String>,
    },
    /// A value that is not one of the allowed choices.
    #[error("{what} is {found:?}, which is not one of {choices}")]
    #[diagnostic(code("FS0209"))]
    NotAChoice {
        /// The source.
        #[source_code]
        src: Src,
        /// Which value.
        what: String,
        /// The value found.
        found: String,
        /// The allowed values.
        choices: String,
        /// The value.
        #[label("not a choice")]
        at: SourceSpan,
        /// A suggestion.
        #[help]
        help: Option<String>,
    },
    /// Two agents share an id, so they would share a derived seed.
    #[error("agent id `{id}` appears more than once")]
    #[diagnostic(
        code("FS0130"),
        help("give every agent its own id; equal ids would silently share one derived seed")
    )]
    RepeatedAgent {
        /// The source.
        #[source_code]
        src: Src,
        /// The id.
        id: String,
        /// The repetition.
        #[label("declared again here")]
        at: SourceSpan,
        /// The first declaration, when in the same file.
        #[label("first declared here")]
        first: Option<SourceSpan>,
    },
    /// Two declarations of one kind share an id.
    #[error("{kind} `{id}` is declared more than once")]
    #[diagnostic(code("FS0210"), help("ids of one kind are unique in a composition"))]
    Duplicate {
        /// The source.
        #[source_code]
        src: Src,
        /// The kind (profile, port, asset, ...).
        kind: &'static str,
        /// The id.
        id: String,
        /// The repetition.
        #[label("declared again here")]
        at: SourceSpan,
        /// The first declaration, when in the same file.
        #[label("first declared here")]
        first: Option<SourceSpan>,
    },
    /// A reference to an id nothing declares.
    #[error("{kind} `{id}` is not declared")]
    #[diagnostic(code("FS0211"))]
    UnknownReference {
        /// The source.
        #[source_code]
        src: Src,
        /// The kind referred to.
        kind: &'static str,
        /// The id.
        id: String,
        /// The reference.
        #[label("no {kind} has this id")]
        at: SourceSpan,
        /// A suggestion and the declared ids.
        #[help]
        help: Option<String>,
    },
    /// A port no agent binds.
    #[error("port `{port}` is not bound to any agent")]
    #[diagnostic(
        code("FS0212"),
        help(
            "every declared port is driven by exactly one agent: add `port \"{port}\"` to an agent, or remove the port"
        )
    )]
    PortUnbound {
        /// The source.
        #[source_code]
        src: Src,
        /// The port.
        port: String,
        /// Its declaration.
        #[label("declared here, bound by no agent")]
        at: SourceSpan,
    },
    /// A port bound by two agents.
    #[error("port `{port}` is bound by more than one agent")]
    #[diagnostic(
        code("FS0213"),
        help(
            "one agent drives one port: give agent `{agent}` a port of its own (declare another in the environment)"
        )
    )]
    PortBoundTwice {
        /// The source.
        #[source_code]
        src: Src,
        /// The port.
        port: String,
        /// The second agent.
        agent: String,
        /// The second binding.
        #[label("bound again here")]
        at: SourceSpan,
        /// The first binding, when in the same file.
        #[label("first bound here")]
        first: Option<SourceSpan>,
    },
    /// More agents than a session has room for.
    #[error("a composition has at most {limit} agents; this is agent number {count}")]
    #[diagnostic(
        code("FS0214"),
        help("one world has at most four flies; run more flies as separate compositions")
    )]
    TooManyAgents {
        /// The source.
        #[source_code]
        src: Src,
        /// This agent's number (1-based).
        count: usize,
        /// The limit.
        limit: usize,
        /// The agent over the limit.
        #[label("agent {count}")]
        at: SourceSpan,
    },
    /// More ports than an environment has room for.
    #[error("an environment has at most {limit} ports; this is port number {count}")]
    #[diagnostic(
        code("FS0215"),
        help("an environment exposes at most four controller ports")
    )]
    TooManyPorts {
        /// The source.
        #[source_code]
        src: Src,
        /// This port's number (1-based).
        count: usize,
        /// The limit.
        limit: usize,
        /// The port over the limit.
        #[label("port {count}")]
        at: SourceSpan,
    },
    /// The agents ask for more threads than the run's budget.
    #[error("the agents ask for {total} threads, over the budget of {budget}")]
    #[diagnostic(code("FS0216"))]
    ThreadBudget {
        /// The source.
        #[source_code]
        src: Src,
        /// The sum of the agents' threads.
        total: u64,
        /// The budget.
        budget: u32,
        /// The agent whose threads go over.
        #[label("this agent's threads go over the budget")]
        at: SourceSpan,
        /// How to fix it.
        #[help]
        help: Option<String>,
    },
    /// A backend flysim does not know.
    #[error("unknown backend {found:?}")]
    #[diagnostic(code("FS0217"))]
    UnknownBackend {
        /// The source.
        #[source_code]
        src: Src,
        /// The backend named.
        found: String,
        /// It.
        #[label("not a backend")]
        at: SourceSpan,
        /// The known backends and a suggestion.
        #[help]
        help: Option<String>,
    },
    /// A value that must be pinned is missing or floating (`latest`, a branch, ...).
    #[error("{what} is not pinned: {reason}")]
    #[diagnostic(code("FS0218"))]
    Unpinned {
        /// The source.
        #[source_code]
        src: Src,
        /// Which value.
        what: String,
        /// Why it is not a pin.
        reason: String,
        /// The value, or the node that lacks it.
        #[label("not pinned")]
        at: SourceSpan,
        /// How to pin it.
        #[help]
        help: Option<String>,
    },
    /// A seed-derivation id this build does not implement.
    #[error("unknown seed derivation {found:?}")]
    #[diagnostic(
        code("FS0219"),
        help("this build implements `seed-derivation \"seed-derivation-v1\"`")
    )]
    UnknownSeedDerivation {
        /// The source.
        #[source_code]
        src: Src,
        /// The id named.
        found: String,
        /// It.
        #[label("not implemented by this build")]
        at: SourceSpan,
    },
    /// An agent carries a hand-selected seed but the composition did not opt in.
    #[error(
        "agent `{agent}` has an explicit seed, but the composition does not declare `explicit-seeds #true`"
    )]
    #[diagnostic(
        code("FS0220"),
        help(
            "seeds are derived from the master seed unless the composition says `explicit-seeds #true` (workers-v1 §2); add that line, or remove the seed"
        )
    )]
    SeedWithoutOptIn {
        /// The source.
        #[source_code]
        src: Src,
        /// The agent.
        agent: String,
        /// The seed.
        #[label("explicit seed")]
        at: SourceSpan,
    },
    /// The composition opted into explicit seeds but an agent has none.
    #[error("agent `{agent}` has no seed, but the composition declares `explicit-seeds #true`")]
    #[diagnostic(
        code("FS0221"),
        help(
            "with explicit seeds every agent names its own: add `seed N` (a 32-bit signed integer) to the agent"
        )
    )]
    SeedMissing {
        /// The source.
        #[source_code]
        src: Src,
        /// The agent.
        agent: String,
        /// The agent's id.
        #[label("no seed")]
        at: SourceSpan,
    },
    /// An include that leads back to a file being included.
    #[error("include cycle: {chain}")]
    #[diagnostic(
        code("FS0222"),
        help("an included file may not include, directly or not, a file that includes it")
    )]
    IncludeCycle {
        /// The source.
        #[source_code]
        src: Src,
        /// The chain of paths, `a.kdl -> b.kdl -> a.kdl`.
        chain: String,
        /// The include that closes the cycle.
        #[label("closes the cycle")]
        at: SourceSpan,
    },
    /// An include outside the composition's directory tree.
    #[error("include {path:?} leaves the composition's directory")]
    #[diagnostic(
        code("FS0223"),
        help(
            "includes are relative paths inside the directory of the composition file (for standard input, the current directory), with no `..` that climbs out of it"
        )
    )]
    IncludeEscapes {
        /// The source.
        #[source_code]
        src: Src,
        /// The path as written.
        path: String,
        /// It.
        #[label("outside the composition's tree")]
        at: SourceSpan,
    },
    /// An include that cannot be read.
    #[error("cannot read include {path:?}: {reason}")]
    #[diagnostic(
        code("FS0224"),
        help("the path is relative to the file that includes it")
    )]
    IncludeUnreadable {
        /// The source.
        #[source_code]
        src: Src,
        /// The path as written.
        path: String,
        /// The error.
        reason: String,
        /// It.
        #[label("cannot be read")]
        at: SourceSpan,
    },
    /// A second environment.
    #[error("a composition has one environment; `{id}` is a second")]
    #[diagnostic(
        code("FS0225"),
        help("one composition runs one world; run another world as another composition")
    )]
    SecondEnvironment {
        /// The source.
        #[source_code]
        src: Src,
        /// The second environment's id.
        id: String,
        /// It.
        #[label("second environment")]
        at: SourceSpan,
        /// The first, when in the same file.
        #[label("first environment")]
        first: Option<SourceSpan>,
    },
    /// An environment declaration that does not fit its backend.
    #[error("{message}")]
    #[diagnostic(code("FS0226"))]
    BackendMismatch {
        /// The source.
        #[source_code]
        src: Src,
        /// What does not fit.
        message: String,
        /// Where.
        #[label("does not fit the backend")]
        at: SourceSpan,
        /// What the backend takes.
        #[help]
        help: Option<String>,
    },
    /// Process mode with the in-memory transport (without a transport, process mode takes the
    /// Unix-socket one).
    #[error("mode \"process\" cannot use transport \"memory\"")]
    #[diagnostic(
        code("FS0227"),
        help(
            "workers in separate processes share no memory: use `transport \"unix\"`, or mode \"in-process\" or \"thread\""
        )
    )]
    ModeTransport {
        /// The source.
        #[source_code]
        src: Src,
        /// The transport.
        #[label("memory transport")]
        at: SourceSpan,
        /// The mode.
        #[label("process mode")]
        mode: SourceSpan,
    },
    /// A composition that does not go with the backends, tasks, executors and models it was
    /// resolved against.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Component(#[from] ComponentProblem),
    /// A declared memory task that does not go with its world, or names what it did not declare.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Memory(#[from] MemoryProblem),
    /// A `sweep` block that does not describe a family of plans.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Sweep(#[from] SweepProblem),
    /// Seed derivation gave up (no known input does this).
    #[error("seed derivation exhausted its four rounds for agent `{agent}`")]
    #[diagnostic(
        code("FS0131"),
        help("no known input does this; report the master seed and agent id")
    )]
    SeedExhausted {
        /// The source.
        #[source_code]
        src: Src,
        /// The agent.
        agent: String,
        /// Its id.
        #[label("this agent")]
        at: SourceSpan,
    },
    /// An include or asset path that names a directory, FIFO, device or socket.
    #[error("cannot read {path:?}: it is {kind}, not a regular file")]
    #[diagnostic(
        code("FS0228"),
        help("includes and asset paths name regular files; a FIFO or a device is never read")
    )]
    NotAFile {
        /// The source.
        #[source_code]
        src: Src,
        /// The path as written.
        path: String,
        /// What it is instead.
        kind: &'static str,
        /// The path.
        #[label("not a regular file")]
        at: SourceSpan,
    },
    /// An included file over the size limit.
    #[error("include {path:?} is larger than the limit of {limit} bytes")]
    #[diagnostic(
        code("FS0229"),
        help(
            "a composition is a few kilobytes of text; check that the path names the file you meant"
        )
    )]
    FileTooLarge {
        /// The source.
        #[source_code]
        src: Src,
        /// The path as written.
        path: String,
        /// The limit in bytes.
        limit: u64,
        /// The path.
        #[label("too large")]
        at: SourceSpan,
    },
    /// Children blocks and block comments nested too deep to parse.
    #[error("blocks and comments nest more than {limit} deep")]
    #[diagnostic(
        code("FS0230"),
        help("a composition nests a few levels; flatten the nesting or remove the comments")
    )]
    TooDeep {
        /// The source.
        #[source_code]
        src: Src,
        /// The deepest nesting allowed.
        limit: usize,
        /// The first opening past the limit.
        #[label("one level too deep")]
        at: SourceSpan,
    },
    /// More nodes, with the included files, than a composition may have: counted before
    /// parsing, since the parser holds every node in memory.
    #[error("the composition has more than {limit} nodes, with its included files")]
    #[diagnostic(
        code("FS0244"),
        help(
            "a composition needs a few dozen nodes (at most four agents and four ports); the nodes from here on were not read"
        )
    )]
    TooManyNodes {
        /// The source.
        #[source_code]
        src: Src,
        /// The most nodes allowed.
        limit: usize,
        /// The first node past the limit.
        #[label("node {} begins here", limit + 1)]
        at: SourceSpan,
    },
    /// A comment holding a code point KDL 2 disallows anywhere in a document.
    #[error("a comment holds {code_point}, which KDL 2 does not allow in a document")]
    #[diagnostic(
        code("FS0231"),
        help("control characters and bidirectional overrides can hide or reorder text; delete it")
    )]
    DisallowedInComment {
        /// The code point, `U+XXXX`.
        code_point: String,
        /// The source.
        #[source_code]
        src: Src,
        /// It.
        #[label("here")]
        at: SourceSpan,
    },
    /// An asset that is neither at its path nor in the registry.
    #[error("asset `{id}` is missing: {reason}")]
    #[diagnostic(code("FS0250"))]
    MissingAsset {
        /// The source.
        #[source_code]
        src: Src,
        /// The asset's id.
        id: String,
        /// Where it was looked for.
        reason: String,
        /// The declaration.
        #[label("not found")]
        at: SourceSpan,
        /// How to provide it.
        #[help]
        help: Option<String>,
    },
    /// An asset whose bytes do not hash to the declared digest.
    #[error("asset `{id}` does not match its pinned digest")]
    #[diagnostic(code("FS0251"))]
    DigestMismatch {
        /// The source.
        #[source_code]
        src: Src,
        /// The asset's id.
        id: String,
        /// The digest of the bytes found; `None` for a file outside the composition's folder,
        /// whose digest is not shown (a composition must not learn foreign files' digests).
        actual: Option<String>,
        /// The pinned digest.
        #[label("pinned here")]
        at: SourceSpan,
        /// How to fix it: the digest found, when it may be shown.
        #[help]
        help: String,
    },
    /// An asset path that is absolute.
    #[error("asset path {path:?} is absolute")]
    #[diagnostic(
        code("FS0252"),
        help(
            "asset paths are relative to the file that declares them, so a composition means the same thing wherever it is copied; or add the file to the asset registry and refer to it by id"
        )
    )]
    AbsoluteAssetPath {
        /// The source.
        #[source_code]
        src: Src,
        /// The path.
        path: String,
        /// It.
        #[label("absolute")]
        at: SourceSpan,
    },
}
