//! `flysim plan`: resolve a composition into its canonical launch plan (`--master-seed N`: with
//! another master seed), or every member of its sweep (`--sweep`).

use std::path::{Path, PathBuf};

use super::resolve_with;
use super::sweep::{SeedOverride, family, resolve_sweep};
use crate::error::CliError;

/// Arguments of `flysim plan`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The composition (.kdl), or `-` for standard input
    #[arg(value_name = "FILE|-")]
    input: PathBuf,
    /// Write the plan here instead of standard output
    #[arg(short = 'o', long = "out", value_name = "OUT")]
    out: Option<PathBuf>,
    #[command(flatten)]
    seed: SeedOverride,
    /// Resolve every member of the composition's `sweep` block: one JSON document with the
    /// sweep digest and each member's values and plan (`sweepDigest=sha256:<hex>` on stderr)
    #[arg(long, conflicts_with = "master_seed")]
    sweep: bool,
}

/// The plan (on stdout, or nothing when written to OUT) and `planDigest=sha256:<hex>` for stderr.
pub(crate) fn run(args: &Args) -> Result<(String, String), CliError> {
    if let Some(out) = &args.out {
        refuse_own_input(&args.input, out)?;
    }
    let (text, note) = if args.sweep {
        let sweep = resolve_sweep(&args.input)?;
        (family::document(&sweep)?, family::note(&sweep))
    } else {
        let plan = resolve_with(&args.input, &args.seed.overrides())?;
        let note = format!("planDigest=sha256:{}\n", plan.plan_digest);
        (plan.to_canonical()?, note)
    };
    match &args.out {
        Some(path) => {
            write_atomically(path, format!("{text}\n").as_bytes()).map_err(|error| {
                CliError::WriteOutput {
                    path: path.clone(),
                    error,
                }
            })?;
            Ok((String::new(), note))
        }
        None => Ok((format!("{text}\n"), note)),
    }
}

/// Refuses an output that is the composition being read (the same file, by any name).
fn refuse_own_input(input: &Path, out: &Path) -> Result<(), CliError> {
    use std::os::unix::fs::MetadataExt as _;
    if input == Path::new("-") {
        return Ok(());
    }
    let (Ok(a), Ok(b)) = (std::fs::metadata(input), std::fs::metadata(out)) else {
        return Ok(());
    };
    if a.dev() == b.dev() && a.ino() == b.ino() {
        return Err(CliError::OverwritesInput {
            path: out.to_owned(),
        });
    }
    Ok(())
}

/// Writes `bytes` to `path` so that a reader sees the old file or the whole new one: a
/// temporary file beside it, flushed to disk, then renamed over it.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "no file name"))?;
    let mut temp_name = std::ffi::OsString::from(".");
    temp_name.push(name);
    temp_name.push(format!(".{}.tmp", std::process::id()));
    let temp = dir.join(temp_name);
    let written = std::fs::File::create_new(&temp).and_then(|mut file| {
        file.write_all(bytes)?;
        file.sync_all()
    });
    let renamed = written.and_then(|()| std::fs::rename(&temp, path));
    if renamed.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    renamed
}
