//! `flysim assets`: the local content-addressed asset registry.

use std::path::PathBuf;

use flysim_compose::AssetRegistry;
use flysim_compose::assets::Added;
use flysim_types::Id;

use super::registry_root;
use crate::error::CliError;

/// The registry subcommands.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum Command {
    /// Copy a file into the registry under an id (idempotent; an id never changes its bytes)
    Add {
        /// The file
        file: PathBuf,
        /// The asset id (default: the file name, if it is a valid id)
        #[arg(long, value_name = "ID")]
        id: Option<String>,
        /// The format id (default: the file's extension, else `bin`)
        #[arg(long, value_name = "F")]
        format: Option<String>,
    },
    /// List every asset: id, sha256, size, format
    List,
    /// Remove an asset: its id, and its stored file when no other id names it
    Remove {
        /// The asset id
        id: String,
    },
    /// Re-hash every stored file and name the corrupt entries
    Verify,
}

fn registry() -> Result<AssetRegistry, CliError> {
    registry_root()
        .map(AssetRegistry::at)
        .ok_or(CliError::NoRegistry)
}

pub(crate) fn run(command: &Command) -> Result<String, CliError> {
    let registry = registry()?;
    match command {
        Command::Add { file, id, format } => {
            let id = match id {
                Some(id) => Id::parse(id)?,
                None => Id::parse(
                    &file
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default(),
                )?,
            };
            let format = match format {
                Some(f) => Id::parse(f)?,
                None => file
                    .extension()
                    .and_then(|e| Id::parse(&e.to_string_lossy()).ok())
                    .map_or_else(|| Id::parse("bin"), Ok)?,
            };
            let (record, added) = registry.add(file, &id, &format)?;
            let what = match added {
                Added::New => "added",
                Added::AlreadyPresent => "already present",
            };
            Ok(format!(
                "{what}: {}  sha256:{}  {} bytes  {}\n",
                record.id, record.digest, record.byte_length, record.format
            ))
        }
        Command::List => {
            let records = registry.list()?;
            if records.is_empty() {
                return Ok(format!(
                    "the asset registry {} is empty\n",
                    registry.root().display()
                ));
            }
            Ok(records
                .iter()
                .map(|r| {
                    format!(
                        "{}  sha256:{}  {} bytes  {}\n",
                        r.id, r.digest, r.byte_length, r.format
                    )
                })
                .collect())
        }
        Command::Remove { id } => {
            let removed = registry.remove(&Id::parse(id)?)?;
            Ok(match removed.record {
                Some(r) if removed.blob_removed => format!(
                    "removed: {}  sha256:{}  {} bytes  {} (and its stored file)\n",
                    r.id, r.digest, r.byte_length, r.format
                ),
                Some(r) => format!(
                    "removed: {}  sha256:{} (its stored file stays: another id names it)\n",
                    r.id, r.digest
                ),
                None => format!("removed: {id} (its record was damaged)\n"),
            })
        }
        Command::Verify => {
            let corrupt = registry.verify()?;
            if corrupt.is_empty() {
                Ok(format!(
                    "{}: every entry is sound\n",
                    registry.root().display()
                ))
            } else {
                Err(CliError::Corrupt { corrupt })
            }
        }
    }
}
