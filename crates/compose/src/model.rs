//! The typed composition: what the decoder makes of the KDL, every value with its source span.
//!
//! Nothing here is serialisable: the model is internal to this crate and its tests. What leaves
//! the crate is the launch plan ([`flysim_types::plan::LaunchPlan`]) or diagnostics.

use std::path::PathBuf;
use std::sync::Arc;

use flysim_types::plan::{AxisRange, ModelKind, RunMode, Transport};
use flysim_types::{Digest, Id};
use miette::SourceSpan;

use crate::diag::Src;

/// Where a value is: a source file (by load rank) and a byte span in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// The source file's rank in load order (0 is the composition itself).
    pub file: usize,
    /// The bytes.
    pub at: SourceSpan,
}

/// A value and where it was written.
#[derive(Debug, Clone, PartialEq)]
pub struct Spanned<T> {
    /// The value.
    pub value: T,
    /// Where.
    pub span: Span,
}

/// One loaded source file.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// The name shown in diagnostics (the root's as given by the caller; includes joined to it).
    pub name: String,
    /// The path relative to the composition's directory, `/`-separated (`""` for the root).
    pub rel: String,
    /// The directory that relative paths in this file are resolved against.
    pub dir: PathBuf,
    /// SHA-256 of the file's bytes.
    pub sha256: Digest,
    /// The text, for diagnostics.
    pub src: Src,
    /// The text itself.
    pub text: Arc<str>,
}

/// A decoded composition, with the files it was loaded from.
#[derive(Debug, Clone, Default)]
pub struct Composition {
    /// The root file, then every include in load order.
    pub sources: Vec<SourceFile>,
    /// The header node.
    pub header: Option<Span>,
    /// `name`.
    pub name: Option<Spanned<String>>,
    /// `description`.
    pub description: Option<Spanned<String>>,
    /// `seed-derivation`.
    pub seed_derivation: Option<Spanned<String>>,
    /// `master-seed`, as written.
    pub master_seed: Option<Spanned<String>>,
    /// `explicit-seeds`.
    pub explicit_seeds: Option<Spanned<bool>>,
    /// `profile` declarations.
    pub profiles: Vec<Profile>,
    /// `environment` declarations.
    pub environments: Vec<Environment>,
    /// `agent` declarations.
    pub agents: Vec<Agent>,
    /// `task`.
    pub task: Option<Spanned<Id>>,
    /// The block of `task "<id>" { … }`, when one was written (a declared memory task).
    pub task_body: Option<TaskBody>,
    /// `executor`.
    pub executor: Option<Spanned<Id>>,
    /// `run`.
    pub run: Option<Run>,
    /// `sweep` (only in the composition itself).
    pub sweep: Option<crate::sweep::Sweep>,
}

/// `profile "<id>" { model ...; parameter ...; asset ... }`.
#[derive(Debug, Clone)]
pub struct Profile {
    /// Its id.
    pub id: Spanned<Id>,
    /// `model`.
    pub model: Spanned<ModelKind>,
    /// `parameter "<name>" <value>`, in order.
    pub parameters: Vec<(Spanned<String>, Spanned<serde_json::Value>)>,
    /// `asset` declarations.
    pub assets: Vec<AssetDecl>,
}

/// An asset: `asset "<id>" path="..." sha256="..." format="..."` (or `content`, same shape).
#[derive(Debug, Clone)]
pub struct AssetDecl {
    /// Its id.
    pub id: Spanned<Id>,
    /// `path=`: relative to the declaring file; absent for a registry asset.
    pub path: Option<Spanned<String>>,
    /// `sha256=`: the pinned digest.
    pub sha256: Option<Spanned<Digest>>,
    /// `format=`.
    pub format: Option<Spanned<Id>>,
}

/// The kinds of backend identity a node can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdentityKind {
    /// `world "<arena world>"`.
    World,
    /// `revision "<40-hex commit>"`.
    Revision,
    /// `version "<release>"`.
    Version,
}

impl IdentityKind {
    /// The node name.
    #[must_use]
    pub fn node(self) -> &'static str {
        match self {
            Self::World => "world",
            Self::Revision => "revision",
            Self::Version => "version",
        }
    }
}

/// `environment "<id>" backend="..." { ... }`.
#[derive(Debug, Clone)]
pub struct Environment {
    /// Its id.
    pub id: Spanned<Id>,
    /// `backend=`, as written.
    pub backend: Spanned<String>,
    /// Identity nodes (`world`, `revision`, `version`); the resolver checks which fits.
    pub identity: Vec<(IdentityKind, Spanned<String>)>,
    /// `content`.
    pub content: Option<AssetDecl>,
    /// `port` declarations.
    pub ports: Vec<Port>,
}

/// `port "<id>" { controller ...; buttons ...; axis ... }`.
#[derive(Debug, Clone)]
pub struct Port {
    /// Its id.
    pub id: Spanned<Id>,
    /// `controller "<id>" version=N`.
    pub controller: Spanned<Id>,
    /// The controller version.
    pub version: Spanned<u32>,
    /// `buttons ...`.
    pub buttons: Vec<Spanned<Id>>,
    /// `axis` declarations.
    pub axes: Vec<Axis>,
}

/// `axis "<id>" range="bipolar"|"unit" neutral=N`.
#[derive(Debug, Clone)]
pub struct Axis {
    /// Its id.
    pub id: Spanned<Id>,
    /// `range=`.
    pub range: AxisRange,
    /// `neutral=`.
    pub neutral: Spanned<f64>,
}

/// `agent "<id>" { profile ...; port ...; threads N; seed N }`.
#[derive(Debug, Clone)]
pub struct Agent {
    /// Its id.
    pub id: Spanned<Id>,
    /// `profile`.
    pub profile: Spanned<Id>,
    /// `port`.
    pub port: Spanned<Id>,
    /// `threads` (default 1).
    pub threads: Option<Spanned<u32>>,
    /// `seed`.
    pub seed: Option<Spanned<i32>>,
}

/// `run { steps N; mode ...; transport ...; checkpoint every=N; max-threads N }`.
#[derive(Debug, Clone)]
pub struct Run {
    /// The node's name.
    pub span: Span,
    /// `steps`.
    pub steps: Spanned<u64>,
    /// `mode` (default in-process).
    pub mode: Option<Spanned<RunMode>>,
    /// `transport` (default memory).
    pub transport: Option<Spanned<Transport>>,
    /// `checkpoint every=N`.
    pub checkpoint_every: Option<Spanned<u64>>,
    /// `max-threads` (default [`crate::DEFAULT_MAX_THREADS`]).
    pub max_threads: Option<Spanned<u32>>,
}

/// The block of a declared task: `task "memory-v1" { variable …; reward …; done … }`.
#[derive(Debug, Clone)]
pub struct TaskBody {
    /// The block's `task` node name, for a refusal of the whole block.
    pub span: Span,
    /// `variable` declarations, in order.
    pub variables: Vec<VariableDecl>,
    /// `reward` declarations, in order.
    pub rewards: Vec<RewardDecl>,
    /// `done` declarations, in order.
    pub done: Vec<ConditionDecl>,
}

/// `variable "<name>" address=<n> type="<type>" [bytes=<n>] [bit=<n>]`.
#[derive(Debug, Clone)]
pub struct VariableDecl {
    /// Its name.
    pub name: Spanned<Id>,
    /// `address=`.
    pub address: Spanned<u32>,
    /// `type=`.
    pub kind: Spanned<flysim_types::memory::MemoryType>,
    /// `bytes=` (a `bcd` variable's width).
    pub bytes: Option<Spanned<u8>>,
    /// `bit=` (a `bool` variable's bit).
    pub bit: Option<Spanned<u8>>,
    /// `offsets=` (a pointer chain's offsets, in order; the span is the property's).
    pub offsets: Option<Spanned<Vec<u32>>>,
}

/// A condition: `"<variable>" "<op>" <value>`.
#[derive(Debug, Clone)]
pub struct ConditionDecl {
    /// The variable.
    pub variable: Spanned<Id>,
    /// The comparison.
    pub op: Spanned<flysim_types::memory::Comparison>,
    /// The value compared with.
    pub value: Spanned<i64>,
}

/// `reward "<variable>" ["<op>" <value>] weight=<w> [rule="<id>"] [port="<id>"]`.
#[derive(Debug, Clone)]
pub struct RewardDecl {
    /// The variable.
    pub variable: Spanned<Id>,
    /// The condition it pays on, when written.
    pub when: Option<ConditionDecl>,
    /// `weight=`.
    pub weight: Spanned<f64>,
    /// `on=` (pay only rises or only drops).
    pub on: Option<Spanned<flysim_types::memory::Change>>,
    /// `rule=`, or the variable's name.
    pub rule: Option<Spanned<Id>>,
    /// `port=`.
    pub port: Option<Spanned<Id>>,
}
