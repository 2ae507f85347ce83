//! `flysim brain`: import connectomes into the binary format, describe a connectome file, and
//! write the generated profiles. The command only parses and prints; the work is
//! `flysim-brain`'s.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use flysim_brain::import::{self, Binary, Table};
use flysim_brain::{Brain, BrainError, Connectome, Profile, format};

use super::{display_name, read_input};
use crate::error::CliError;

/// Arguments of `flysim brain`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: BrainCommand,
}

/// The source formats of `flysim brain import`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum From {
    /// Shiu et al. 2024: Completeness_783.csv + Connectivity_783.parquet (or it as CSV)
    Flywire,
    /// FlyWire Codex connections.csv (+ classification.csv)
    Codex,
    /// A plain edge list: pre post weight [type], comma, tab or whitespace separated
    Edges,
    /// A dense adjacency matrix: header row of ids, one row per presynaptic neuron
    Matrix,
}

#[derive(Debug, clap::Subcommand)]
enum BrainCommand {
    /// Import source tables into a connectome file (.flycsr)
    Import {
        /// The source format
        #[arg(long, value_enum)]
        from: From,
        /// (edges) the edge list, or `-` for standard input
        #[arg(long, value_name = "FILE|-", required_if_eq("from", "edges"))]
        edges: Option<PathBuf>,
        /// (matrix) the adjacency matrix, or `-` for standard input
        #[arg(long, value_name = "FILE|-", required_if_eq("from", "matrix"))]
        matrix: Option<PathBuf>,
        /// A neuron table of signs, neurotransmitters or inhibitory neurons, applied to unsigned counts
        #[arg(long, value_name = "FILE")]
        signs: Option<PathBuf>,
        /// (edges) an edge type whose rows are added in both directions (repeatable)
        #[arg(long, value_name = "TYPE")]
        symmetric: Vec<String>,
        /// (codex) connections.csv
        #[arg(long, value_name = "FILE|-", required_if_eq("from", "codex"))]
        connections: Option<PathBuf>,
        /// (codex) classification.csv, fixing the neuron set
        #[arg(long, value_name = "FILE")]
        classification: Option<PathBuf>,
        /// (flywire) Completeness_783.csv
        #[arg(long, value_name = "FILE", required_if_eq("from", "flywire"))]
        completeness: Option<PathBuf>,
        /// (flywire) Connectivity_783.parquet (a build with the feature `parquet`), or the table as CSV
        #[arg(long, value_name = "FILE|-", required_if_eq("from", "flywire"))]
        connectivity: Option<PathBuf>,
        /// A metadata entry to record, e.g. `licence=MIT` (repeatable)
        #[arg(long, value_name = "KEY=VALUE", value_parser = key_value)]
        meta: Vec<(String, String)>,
        /// The connectome file to write
        #[arg(short = 'o', long = "out", value_name = "FILE")]
        out: PathBuf,
    },
    /// Describe a connectome file
    Info {
        /// The connectome file
        file: PathBuf,
    },
    /// Check a profile against its connectome (found next to it) and build the brain
    Check {
        /// The profile (JSON)
        profile: PathBuf,
    },
    /// Write a generated profile and its connectome into a directory
    Generate {
        /// The profile to generate
        #[arg(value_parser = ["arena-toy-v1", "counter-toy-v1", "screen-toy-v1"])]
        name: String,
        /// The directory to write into
        #[arg(long = "out", value_name = "DIR")]
        out: PathBuf,
    },
}

/// Parses `KEY=VALUE` (a non-empty key).
fn key_value(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
        _ => Err(format!("expected KEY=VALUE, found {s:?}")),
    }
}

/// What the digests `check` and `generate` print are: one per file, each the file's own SHA-256.
const PIN_NOTE: &str = "(a sha256 here is the file's own SHA-256: what a composition's asset pins with sha256=\"<hex>\")\n";

fn brain(e: BrainError) -> CliError {
    CliError::Brain(Box::new(e))
}

/// What a build without the Parquet reader tells the user who gives it a Parquet table.
const PARQUET_HELP: &str = "build flysim with its Parquet reader: `cargo install --path crates/cli --features parquet`; or convert the table to CSV once (`flysim explain FS0712` shows how)";

/// `e`, with the line that builds a Parquet reader as the help of an `FS0712`.
fn with_build_line(e: BrainError) -> CliError {
    match e {
        BrainError::ParquetUnavailable { source_name, .. } => {
            brain(BrainError::ParquetUnavailable {
                source_name,
                help: PARQUET_HELP.to_owned(),
            })
        }
        other => brain(other),
    }
}

/// `bytes` read from `name` as text; `FS0710` when they are not UTF-8 (or are a Parquet file,
/// which only `--from flywire --connectivity` reads).
fn utf8(name: String, bytes: Vec<u8>) -> Result<(String, String), CliError> {
    let reason = if import::is_parquet(&bytes) {
        "the file is Parquet; only the connectivity table of `--from flywire` is read as Parquet"
    } else {
        "the file is not UTF-8 text"
    };
    let text = String::from_utf8(bytes).map_err(|_| {
        brain(BrainError::ImportSyntax {
            source_name: name.clone(),
            line: 0,
            column: 0,
            reason: reason.to_owned(),
        })
    })?;
    Ok((name, text))
}

fn text(path: &Path) -> Result<(String, String), CliError> {
    utf8(display_name(path), read_input(path)?)
}

/// The Shiu et al. model files: the Completeness table (CSV) and the connectivity table, Parquet
/// when its bytes say so (`FS0712` with the line that builds a reader when this build has
/// none), else CSV.
fn flywire(
    completeness: &Path,
    connectivity: &Path,
    meta: &BTreeMap<String, String>,
) -> Result<Connectome, CliError> {
    let (cn, ct) = text(completeness)?;
    let comp = Table {
        name: &cn,
        text: &ct,
    };
    let (name, bytes) = (display_name(connectivity), read_input(connectivity)?);
    if import::is_parquet(&bytes) {
        let table = Binary {
            name: &name,
            bytes: &bytes,
        };
        return import::flywire_parquet(&comp, &table, meta).map_err(with_build_line);
    }
    let (name, t) = utf8(name, bytes)?;
    import::flywire(
        &comp,
        &Table {
            name: &name,
            text: &t,
        },
        meta,
    )
    .map_err(brain)
}

fn write(path: &Path, bytes: &[u8]) -> Result<(), CliError> {
    std::fs::write(path, bytes).map_err(|error| CliError::WriteOutput {
        path: path.to_owned(),
        error,
    })
}

fn summary(c: &Connectome) -> String {
    let synapses: i64 = c.weights().iter().map(|&w| i64::from(w).abs()).sum();
    let inhibitory = c.weights().iter().filter(|&&w| w < 0).count();
    let max_out = (0..c.neurons()).map(|i| c.row(i).len()).max().unwrap_or(0);
    let mut out = format!(
        "format      flycsr v{}\nneurons     {}\nedges       {}\nsynapses    {synapses}\ninhibitory  {inhibitory} edges\nmax out     {max_out} edges\nnames       {}\ndigest      sha256:{}\n",
        format::VERSION,
        c.neurons(),
        c.edges(),
        if c.names().is_some() { "yes" } else { "no" },
        c.digest(),
    );
    for (k, v) in c.meta() {
        out.push_str(&format!("meta        {k} = {v}\n"));
    }
    out
}

/// The connectome of the adjacency matrix `text`.
fn matrix_of(
    name: &str,
    text: &str,
    meta: &BTreeMap<String, String>,
) -> Result<Connectome, BrainError> {
    import::matrix(&Table { name, text }, meta)
}

/// `c` signed by the neuron table at `signs`, if one is given.
fn signed(c: Connectome, signs: Option<&Path>) -> Result<Connectome, CliError> {
    let Some(path) = signs else {
        return Ok(c);
    };
    let (name, t) = text(path)?;
    let table = import::signs(&Table {
        name: &name,
        text: &t,
    })
    .map_err(brain)?;
    import::apply_signs(&c, &table).map_err(brain)
}

pub(crate) fn run(args: &Args) -> Result<String, CliError> {
    match &args.command {
        BrainCommand::Import {
            from,
            edges,
            matrix,
            signs,
            symmetric,
            connections,
            classification,
            completeness,
            connectivity,
            meta,
            out,
        } => {
            let map: BTreeMap<String, String> = meta.iter().cloned().collect();
            let need = |p: &Option<PathBuf>| p.clone().unwrap_or_default();
            let c = match from {
                From::Matrix => {
                    let (name, t) = text(&need(matrix))?;
                    matrix_of(&name, &t, &map).map_err(brain)?
                }
                From::Edges => {
                    let (name, t) = text(&need(edges))?;
                    import::edges(
                        &Table {
                            name: &name,
                            text: &t,
                        },
                        symmetric,
                        &map,
                    )
                    .map_err(brain)?
                }
                From::Codex => {
                    let (name, t) = text(&need(connections))?;
                    let class = classification.as_deref().map(text).transpose()?;
                    let class_table = class.as_ref().map(|(n, t)| Table { name: n, text: t });
                    import::codex(
                        &Table {
                            name: &name,
                            text: &t,
                        },
                        class_table.as_ref(),
                        &map,
                    )
                    .map_err(brain)?
                }
                From::Flywire => flywire(&need(completeness), &need(connectivity), &map)?,
            };
            let c = signed(c, signs.as_deref())?;
            write(out, &format::encode(&c))?;
            Ok(format!("wrote {}\n{}", out.display(), summary(&c)))
        }
        BrainCommand::Info { file } => {
            let bytes = read_input(file)?;
            let c = format::decode(&bytes).map_err(brain)?;
            Ok(summary(&c))
        }
        BrainCommand::Check { profile } => {
            let bytes = read_input(profile)?;
            let p = Profile::parse(&bytes).map_err(|e| match e {
                BrainError::Contract(c) => CliError::document(c, &display_name(profile), &bytes),
                other => brain(other),
            })?;
            let dir = profile.parent().unwrap_or(Path::new("."));
            let c = format::decode(&read_input(&dir.join(&p.connectome.file))?).map_err(brain)?;
            let digest = flysim_types::digest::sha256(&bytes);
            let id = p.id.to_string();
            let b = Brain::new(p, Arc::new(c), 0, 1).map_err(brain)?;
            Ok(format!(
                "profile     {id}\nsha256      sha256:{digest}\nneurons     {}\nedges       {}\nplastic     {} edges\nroles       {}\n{PIN_NOTE}",
                b.connectome().neurons(),
                b.connectome().edges(),
                b.plastic_gains().len(),
                b.profile().roles.len(),
            ))
        }
        BrainCommand::Generate { name, out } => {
            let (c, p) = match name.as_str() {
                "counter-toy-v1" => flysim_brain::generate::counter_toy_v1(),
                "screen-toy-v1" => flysim_brain::generate::screen_toy_v1(),
                _ => flysim_brain::generate::arena_toy_v1(),
            };
            std::fs::create_dir_all(out).map_err(|error| CliError::WriteOutput {
                path: out.clone(),
                error,
            })?;
            let json = out.join(format!("{}.json", p.id));
            let csr = out.join(&p.connectome.file);
            let profile_bytes = p.to_canonical().into_bytes();
            let connectome_bytes = format::encode(&c);
            write(&json, &profile_bytes)?;
            write(&csr, &connectome_bytes)?;
            Ok(format!(
                "wrote {}\nwrote {}\nprofile     sha256:{}\nconnectome  sha256:{}\n{PIN_NOTE}",
                json.display(),
                csr.display(),
                flysim_types::digest::sha256(&profile_bytes),
                flysim_types::digest::sha256(&connectome_bytes),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A workspace build of the tests has the Parquet reader (flysim-brain's own tests turn it
    /// on), so the binary's suite may never see `FS0712`; its help is checked here.
    #[test]
    fn a_build_without_the_parquet_reader_names_the_line_that_builds_one() {
        let e = with_build_line(BrainError::ParquetUnavailable {
            source_name: "Connectivity_783.parquet".to_owned(),
            help: "the library's own".to_owned(),
        });
        assert_eq!(
            miette::Diagnostic::code(&e)
                .map(|c| c.to_string())
                .as_deref(),
            Some("FS0712")
        );
        let help = miette::Diagnostic::help(&e).map(|h| h.to_string());
        assert!(
            help.as_deref()
                .is_some_and(|h| h.contains("`cargo install --path crates/cli --features parquet`")),
            "{help:?}"
        );
        assert_eq!(
            e.to_string(),
            "Connectivity_783.parquet is a Parquet file, and this build has no Parquet reader"
        );
    }
}
