//! From bytes to the typed model: KDL 2.0 parsing, includes, and a hand-written decoder.
//!
//! Every problem is recorded and decoding goes on, so one pass reports all of a file's syntax
//! and shape errors. A node with an error is left out of the model; the resolver runs only on a
//! model decoded without any error, so it never reports a consequence of an earlier mistake.
//!
//! The parts: the [`loader`] (files, digests, syntax, includes), the document's [`top_level`],
//! the shared [`node`] machinery (each node kind's declarative spec and the decoder that checks
//! a node against it) with its [`values`], and one file per group of node kinds ([`profile`],
//! [`environment`], [`agent`], [`run`], [`task`]). Before the parser, [`scan`] bounds nesting and checks
//! comments; [`bounded`] reads the files a composition names. It checks shape, never meaning.

mod agent;
pub(crate) mod bounded;
mod environment;
mod loader;
mod node;
mod profile;
mod run;
mod scan;
mod sweep;
mod task;
mod top_level;
mod values;

pub(crate) use loader::load;
