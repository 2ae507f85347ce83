//! The refusals of a composition that is well formed but does not go with the components it
//! is resolved against: more ports than its backend has, a task or executor the build lacks or
//! that reads another world, a profile parameter its model does not read or refuses, a retina
//! that does not fit the world's view. Each is what a run would refuse before its first step.
//!
//! It knows the diagnostics' shape only; the checks that raise them are the resolver's.

use miette::{Diagnostic, SourceSpan};
use thiserror::Error;

use super::Src;

/// A composition that does not go with the build's components, with its code.
#[derive(Debug, Error, Diagnostic)]
#[non_exhaustive]
pub enum ComponentProblem {
    /// More ports than the environment's backend has.
    #[error("the {backend} backend has at most {limit} port(s); this is port number {count}")]
    #[diagnostic(code("FS0236"))]
    PortsOverBackend {
        /// The source.
        #[source_code]
        src: Src,
        /// The backend.
        backend: String,
        /// This port's number (1-based).
        count: usize,
        /// The backend's limit.
        limit: usize,
        /// The port over the limit.
        #[label("port {count}")]
        at: SourceSpan,
        /// What the device has.
        #[help]
        help: Option<String>,
    },
    /// A task this build does not have.
    #[error("unknown task {found:?}")]
    #[diagnostic(code("FS0237"))]
    UnknownTask {
        /// The source.
        #[source_code]
        src: Src,
        /// The task named.
        found: String,
        /// It.
        #[label("not a task of this build")]
        at: SourceSpan,
        /// A suggestion and the known tasks.
        #[help]
        help: Option<String>,
    },
    /// A task that reads another backend's worlds.
    #[error("task `{task}` does not go with the {backend} backend")]
    #[diagnostic(code("FS0238"))]
    TaskBackend {
        /// The source.
        #[source_code]
        src: Src,
        /// The task.
        task: String,
        /// The environment's backend.
        backend: String,
        /// The task.
        #[label("reads other worlds")]
        at: SourceSpan,
        /// The backends it goes with, and the tasks of this one.
        #[help]
        help: Option<String>,
    },
    /// A task written for other content than the environment's.
    #[error("task `{task}` does not read content `{content}`")]
    #[diagnostic(code("FS0239"))]
    TaskContent {
        /// The source.
        #[source_code]
        src: Src,
        /// The task.
        task: String,
        /// The content's id.
        content: String,
        /// The content's declaration.
        #[label("content sha256 {digest}")]
        at: SourceSpan,
        /// The content's digest.
        digest: String,
        /// The content it reads.
        #[help]
        help: Option<String>,
    },
    /// An executor this build does not have.
    #[error("unknown executor {found:?}")]
    #[diagnostic(code("FS0240"))]
    UnknownExecutor {
        /// The source.
        #[source_code]
        src: Src,
        /// The executor named.
        found: String,
        /// It.
        #[label("not an executor of this build")]
        at: SourceSpan,
        /// A suggestion and the known executors.
        #[help]
        help: Option<String>,
    },
    /// A profile parameter its model does not read.
    #[error("the {model} model has no parameter {name:?}")]
    #[diagnostic(code("FS0241"))]
    UnknownParameter {
        /// The source.
        #[source_code]
        src: Src,
        /// The model.
        model: String,
        /// The parameter named.
        name: String,
        /// It.
        #[label("not read by the model")]
        at: SourceSpan,
        /// A suggestion and the model's parameters.
        #[help]
        help: Option<String>,
    },
    /// A profile parameter whose value its model refuses.
    #[error("parameter {name:?} of the {model} model is {expected}")]
    #[diagnostic(code("FS0242"))]
    ParameterValue {
        /// The source.
        #[source_code]
        src: Src,
        /// The model.
        model: String,
        /// The parameter.
        name: String,
        /// What its values are.
        expected: String,
        /// The value.
        #[label("out of range")]
        at: SourceSpan,
        /// Its default.
        #[help]
        help: Option<String>,
    },
    /// A brain whose retina does not fit the view of the world it is bound to.
    #[error("agent `{agent}`'s retina does not fit the world's view: {reason}")]
    #[diagnostic(code("FS0243"))]
    RetinaView {
        /// The source.
        #[source_code]
        src: Src,
        /// The agent.
        agent: String,
        /// What does not fit.
        reason: String,
        /// The agent's profile.
        #[label("this brain")]
        at: SourceSpan,
        /// What the world shows.
        #[help]
        help: Option<String>,
    },
}
