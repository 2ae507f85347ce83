//! What a backend, a task and a model declare about themselves, so that the composition resolver
//! can refuse before a run what the run would refuse before its first step, and the binary can
//! list them: a backend's name, the identity it is pinned by and that identity's grammar, its
//! step duration, its content, its controller ports (how many, which controls), its views and
//! its capabilities ([`BackendSpec`]); the backends a task goes with and the content it reads
//! ([`TaskSpec`]); the profile parameters a model reads and the document that declares its retina
//! ([`ModelSpec`]). [`Specs`] is everything a resolver is handed. Each component's crate owns its
//! spec; this module only gives the shape.
//!
//! **Invariant:** no backend, task or model is named here. A spec is plain data: nothing in it
//! runs.

use crate::RationalNs;
use crate::plan::ModelKind;

/// The composition node that pins a backend's identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdentityNode {
    /// `world "<name>"`: a world compiled into the build.
    World,
    /// `revision "<commit>"`: a source revision.
    Revision,
    /// `version "<release>"`: an installed release.
    Version,
}

impl IdentityNode {
    /// The node's name in a composition.
    #[must_use]
    pub fn node(self) -> &'static str {
        match self {
            Self::World => "world",
            Self::Revision => "revision",
            Self::Version => "version",
        }
    }
}

/// The spellings an identity may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdentityGrammar {
    /// One of these names.
    OneOf(&'static [&'static str]),
    /// Exactly this many lowercase hexadecimal digits (a full commit).
    LowerHex(usize),
    /// Digits, dots and dashes, starting with a digit (a release such as `5.0-17995`).
    Release,
}

impl IdentityGrammar {
    /// Whether `value` is spelled as this grammar asks.
    #[must_use]
    pub fn accepts(self, value: &str) -> bool {
        match self {
            Self::OneOf(names) => names.contains(&value),
            Self::LowerHex(len) => {
                value.len() == len
                    && value
                        .bytes()
                        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            }
            Self::Release => {
                value.starts_with(|c: char| c.is_ascii_digit())
                    && value
                        .bytes()
                        .all(|b| b.is_ascii_digit() || b == b'.' || b == b'-')
            }
        }
    }
}

/// How a backend is pinned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdentitySpec {
    /// The node that pins it.
    pub node: IdentityNode,
    /// The spellings the node's value may take.
    pub grammar: IdentityGrammar,
    /// One line saying how to pin it, with an example.
    pub how: &'static str,
}

/// What content a backend runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContentSpec {
    /// None: the world is compiled in.
    None,
    /// A content asset is required.
    Required {
        /// What it is, with its article (`a ROM`, `a disc image`).
        what: &'static str,
    },
}

/// The controls a backend's ports may declare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PortSpec {
    /// The buttons a port may use (`None`: any declared button); in the device's own order.
    pub buttons: Option<&'static [&'static str]>,
    /// The device, for messages (e.g. `the joypad`).
    pub device: &'static str,
    /// Whether a port may declare axes.
    pub axes: bool,
}

/// What a backend can do beyond stepping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// A checkpoint restores the world exactly (`exact-checkpoint`).
    pub exact_checkpoint: bool,
    /// The backend's build is fixed by the pin: the same identity is the same code.
    pub fixed_build: bool,
}

/// Everything a backend declares about itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackendSpec {
    /// The name compositions and plans use (`backend="..."`).
    pub name: &'static str,
    /// One line saying what it is.
    pub summary: &'static str,
    /// How it is pinned.
    pub identity: IdentitySpec,
    /// One environment step, as `numerator / denominator` nanoseconds.
    pub step_ns: (u64, u64),
    /// Its content.
    pub content: ContentSpec,
    /// Its controller ports.
    pub ports: PortSpec,
    /// Its capabilities.
    pub capabilities: Capabilities,
    /// The parameters an environment node may set (none of today's backends takes one).
    pub parameters: &'static [&'static str],
    /// At most this many controller ports (the device's own limit; at most
    /// [`crate::limits::MAX_PORTS`]).
    pub max_ports: usize,
    /// The views every observation carries, in order, when they are known before the world
    /// starts (`None`: not declared, so not checked); a view that names content formats is
    /// carried only by worlds of that content ([`ViewSpec::shown_for`]).
    pub views: Option<&'static [ViewSpec]>,
    /// The addresses a task may read from its worlds (a declared memory task's variables must
    /// lie inside one); empty when its worlds expose no memory to tasks.
    pub memory: &'static [crate::memory::MemoryRegion],
    /// For a backend that watches chosen words rather than publishing its memory whole: at most
    /// this many distinct aligned 4-byte words a task's variables may touch (`None`: no limit).
    pub memory_words: Option<usize>,
    /// The type of a pointer in its memory, which a declared variable's pointer chain is read in
    /// (`None`: tasks follow no pointers there).
    pub memory_pointer: Option<crate::memory::MemoryType>,
}

/// How tall a view is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ViewHeight {
    /// This many rows, whatever the ports.
    Rows(u32),
    /// This many rows for each declared port (a band per port, in the environment's port order).
    RowsPerPort(u32),
}

/// One view a backend's observations carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ViewSpec {
    /// Its id (`lcd`).
    pub name: &'static str,
    /// Its width in pixels.
    pub width: u32,
    /// Its height.
    pub height: ViewHeight,
    /// The content formats whose worlds show it (`None`: every world of the backend). A world
    /// shows the views whose formats include its content's, in declaration order.
    pub formats: Option<&'static [&'static str]>,
}

impl ViewSpec {
    /// Whether a world whose content has format `format` shows this view.
    #[must_use]
    pub fn shown_for(&self, format: &str) -> bool {
        self.formats.is_none_or(|f| f.contains(&format))
    }

    /// Its height in pixels for an environment of `ports` ports.
    #[must_use]
    pub fn height_for(&self, ports: usize) -> u64 {
        match self.height {
            ViewHeight::Rows(rows) => u64::from(rows),
            ViewHeight::RowsPerPort(rows) => u64::from(rows) * ports as u64,
        }
    }
}

/// The task of a composition that declares none: nothing is scored (its implementation is the
/// component API's `no_reward` task, which every build links).
pub const NO_TASK: &str = "none-v1";

/// What a task declares: the backends whose worlds it reads, and the content it was written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskSpec {
    /// The name compositions and plans use (`task "..."`).
    pub name: &'static str,
    /// One line saying what it scores.
    pub summary: &'static str,
    /// The backends it goes with (it reads their inspections).
    pub backends: &'static [&'static str],
    /// The content it reads, as lowercase hex SHA-256 digests (`None`: any content).
    pub content: Option<&'static [&'static str]>,
    /// Whether it reads the world's memory: it then also goes with every backend that lets
    /// tasks read memory ([`BackendSpec::memory`] not empty).
    pub reads_memory: bool,
}

impl TaskSpec {
    /// Whether it reads the worlds of `backend`.
    #[must_use]
    pub fn goes_with(&self, backend: &BackendSpec) -> bool {
        self.backends.contains(&backend.name) || (self.reads_memory && !backend.memory.is_empty())
    }
}

/// The kind of value a model parameter takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ParameterKind {
    /// A number in `[min, max]`.
    Number {
        /// The least value.
        min: f64,
        /// The greatest value.
        max: f64,
    },
    /// A non-negative integer.
    Count,
    /// A positive duration in nanoseconds, written as an `N/D` string.
    Duration,
}

impl ParameterKind {
    /// Whether `value` is one of this kind.
    #[must_use]
    pub fn accepts(self, value: &serde_json::Value) -> bool {
        match self {
            Self::Number { min, max } => value.as_f64().is_some_and(|v| (min..=max).contains(&v)),
            Self::Count => value.as_u64().is_some(),
            Self::Duration => value
                .as_str()
                .and_then(|s| s.parse::<RationalNs>().ok())
                .is_some_and(|r| r.positive().is_ok()),
        }
    }

    /// What a value of this kind is, for messages (`a number in [0, 1]`).
    #[must_use]
    pub fn describe(self) -> String {
        match self {
            Self::Number { min, max } => format!("a number in [{min}, {max}]"),
            Self::Count => "a non-negative integer".to_owned(),
            Self::Duration => "a positive duration string `N/D` (nanoseconds)".to_owned(),
        }
    }
}

/// One profile parameter a model reads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ParameterSpec {
    /// Its name (`parameter "<name>" ...`).
    pub name: &'static str,
    /// The values it takes.
    pub kind: ParameterKind,
    /// Its default when absent, as written in a composition.
    pub default: &'static str,
}

/// What an agent model declares about the profiles that run it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ModelSpec {
    /// The model.
    pub kind: ModelKind,
    /// The profile parameters it reads (`None`: not declared, so not checked).
    pub parameters: Option<&'static [ParameterSpec]>,
    /// The asset format of the profile document whose `retina` (`width`, `height`, `layout`)
    /// the model reads its agent's view with, when it senses pixels.
    pub retina: Option<&'static str>,
}

/// Everything a resolver is handed: the backends, tasks, executors and models of a build.
#[derive(Debug, Clone, Copy)]
pub struct Specs<'a> {
    /// The backends an environment may name.
    pub backends: &'a [BackendSpec],
    /// The tasks a composition may name (`None`: not declared, so any task is accepted).
    pub tasks: Option<&'a [TaskSpec]>,
    /// The executors a composition may name (`None`: not declared, so any is accepted); each
    /// goes with every backend.
    pub executors: Option<&'a [&'a str]>,
    /// The models whose profiles are checked (a model without a spec is not).
    pub models: &'a [ModelSpec],
}

impl<'a> Specs<'a> {
    /// Only backends: tasks, executors and models are not checked.
    #[must_use]
    pub const fn backends(backends: &'a [BackendSpec]) -> Self {
        Self {
            backends,
            tasks: None,
            executors: None,
            models: &[],
        }
    }

    /// The tasks that go with backend `name` (one these specs declare; none for another).
    pub fn tasks_for(&self, name: &'a str) -> impl Iterator<Item = &'a TaskSpec> + 'a {
        let backend = self.backends.iter().find(|b| b.name == name);
        self.tasks
            .unwrap_or(&[])
            .iter()
            .filter(move |t| backend.is_some_and(|b| t.goes_with(b)))
    }
}

impl<'a> From<&'a [BackendSpec]> for Specs<'a> {
    fn from(backends: &'a [BackendSpec]) -> Self {
        Self::backends(backends)
    }
}

impl<'a, const N: usize> From<&'a [BackendSpec; N]> for Specs<'a> {
    fn from(backends: &'a [BackendSpec; N]) -> Self {
        Self::backends(backends)
    }
}

impl<'a> From<&Specs<'a>> for Specs<'a> {
    fn from(specs: &Specs<'a>) -> Self {
        *specs
    }
}

impl BackendSpec {
    /// The duration of one environment step.
    ///
    /// # Errors
    ///
    /// When the declared fraction is not a positive reduced one (a backend's own bug).
    pub fn step_duration(&self) -> Result<RationalNs, crate::ContractError> {
        RationalNs::new(self.step_ns.0, self.step_ns.1)
    }
}

/// The spec named `name` among `specs`.
#[must_use]
pub fn find<'a>(specs: &'a [BackendSpec], name: &str) -> Option<&'a BackendSpec> {
    specs.iter().find(|s| s.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grammars_accept_their_spellings_and_nothing_else() {
        assert!(IdentityGrammar::LowerHex(4).accepts("09af"));
        assert!(!IdentityGrammar::LowerHex(4).accepts("09AF"));
        assert!(!IdentityGrammar::LowerHex(4).accepts("09a"));
        assert!(IdentityGrammar::Release.accepts("5.0-17995"));
        assert!(!IdentityGrammar::Release.accepts("v5.0"));
        assert!(IdentityGrammar::OneOf(&["counter-v1"]).accepts("counter-v1"));
        assert!(!IdentityGrammar::OneOf(&["counter-v1"]).accepts("counter-v2"));
    }

    #[test]
    fn parameter_kinds_accept_their_values_and_nothing_else() {
        let unit = ParameterKind::Number { min: 0.0, max: 1.0 };
        assert!(unit.accepts(&serde_json::json!(0.5)));
        assert!(!unit.accepts(&serde_json::json!(7)));
        assert!(!unit.accepts(&serde_json::json!("0.5")));
        assert!(ParameterKind::Count.accepts(&serde_json::json!(10)));
        assert!(!ParameterKind::Count.accepts(&serde_json::json!(-1)));
        assert!(ParameterKind::Duration.accepts(&serde_json::json!("1000000/1")));
        assert!(!ParameterKind::Duration.accepts(&serde_json::json!("0/1")));
    }

    #[test]
    fn a_view_per_port_grows_with_the_ports() {
        let view = ViewSpec {
            name: "v",
            width: 8,
            height: ViewHeight::RowsPerPort(1),
            formats: None,
        };
        assert_eq!(view.height_for(3), 3);
        assert!(view.shown_for("gb"));
    }

    #[test]
    fn a_view_of_some_content_formats_is_shown_only_for_them() {
        let view = ViewSpec {
            name: "v",
            width: 8,
            height: ViewHeight::Rows(2),
            formats: Some(&["program"]),
        };
        assert!(view.shown_for("program"));
        assert!(!view.shown_for("iso"));
    }
}
