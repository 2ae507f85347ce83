//! The errors a command can end with, each with a registered code or a contract refusal.

use std::path::PathBuf;

use flysim_types::ContractError;
use miette::{Diagnostic, NamedSource};
use thiserror::Error;

use crate::exit;

/// Why a command failed.
#[derive(Debug, Error, Diagnostic)]
pub(crate) enum CliError {
    /// A contract refusal of a value given on the command line.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Contract(#[from] ContractError),
    /// A contract refusal of a document, with its source for a labelled span.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Document(Box<DocumentError>),
    /// An environment backend refused.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Backend(Box<flysim_binjgb::BinjgbError>),
    /// The brain crate refused a connectome, table or profile.
    #[error(transparent)]
    #[diagnostic(transparent)]
    Brain(Box<flysim_brain::BrainError>),
    #[error("cannot read {path}: {source}")]
    #[diagnostic(
        code("FS0901"),
        help("check the path and its permissions; `-` reads standard input")
    )]
    ReadInput {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no diagnostic code {requested:?} is registered")]
    #[diagnostic(
        code("FS0902"),
        help("`flysim explain --list` shows every registered code")
    )]
    UnknownCode { requested: String },
    #[error("cannot write {path}: {source}")]
    #[diagnostic(code("FS0903"), help("choose a writable location"))]
    WriteOutput {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no contract type is named {name:?}")]
    #[diagnostic(code("FS0904"), help("`flysim schema --list` shows every name"))]
    UnknownKind { name: String },
}

impl CliError {
    /// The process exit code for this failure.
    pub(crate) fn exit_code(&self) -> u8 {
        match self {
            Self::Contract(_)
            | Self::Document(_)
            | Self::UnknownCode { .. }
            | Self::UnknownKind { .. }
            | Self::Brain(_) => exit::INPUT_REFUSED,
            Self::Backend(e) => match **e {
                flysim_binjgb::BinjgbError::Absent { .. } => exit::UNAVAILABLE,
                _ => exit::INPUT_REFUSED,
            },
            Self::ReadInput { .. } | Self::WriteOutput { .. } => exit::IO_FAILURE,
        }
    }

    /// A document refusal that can point into `text`.
    pub(crate) fn document(error: ContractError, name: &str, bytes: &[u8]) -> Self {
        let text = String::from_utf8_lossy(bytes).into_owned();
        Self::Document(Box::new(DocumentError {
            error,
            source_code: NamedSource::new(name, text),
        }))
    }
}

/// A refusal of a document, rendered with the document's text so its span shows.
#[derive(Debug, Error)]
#[error("{error}")]
pub(crate) struct DocumentError {
    error: ContractError,
    source_code: NamedSource<String>,
}

impl Diagnostic for DocumentError {
    fn code<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        Diagnostic::code(&self.error)
    }
    fn help<'a>(&'a self) -> Option<Box<dyn std::fmt::Display + 'a>> {
        Diagnostic::help(&self.error)
    }
    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        Diagnostic::labels(&self.error)
    }
    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        Some(&self.source_code)
    }
}
