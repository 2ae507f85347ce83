//! `flysim schema`: print the JSON Schema of a contract type, list the names, or write them all.

use std::path::PathBuf;

use flysim_types::schema;

use crate::error::CliError;

/// Arguments of `flysim schema`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The contract type, e.g. agent-prepare-params (without a name: the list of names)
    name: Option<String>,
    /// List every name
    #[arg(long, conflicts_with = "name")]
    list: bool,
    /// Write every schema as `<name>.schema.json` into the directory given with --out
    #[arg(long, requires = "out", conflicts_with_all = ["name", "list"])]
    all: bool,
    /// The directory for --all (created if missing)
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

pub(crate) fn run(args: &Args) -> Result<String, CliError> {
    if args.list || (args.name.is_none() && !args.all) {
        return Ok(schema::kinds()
            .iter()
            .map(|k| format!("{}\n", k.name))
            .collect());
    }
    if args.all {
        let dir = args.out.clone().unwrap_or_default();
        let write_err = |path: PathBuf| move |error| CliError::WriteOutput { path, error };
        std::fs::create_dir_all(&dir).map_err(write_err(dir.clone()))?;
        let kinds = schema::kinds();
        for kind in &kinds {
            let path = dir.join(schema::file_name(kind));
            std::fs::write(&path, schema::render(kind)).map_err(write_err(path.clone()))?;
        }
        return Ok(format!(
            "wrote {} schemas to {}\n",
            kinds.len(),
            dir.display()
        ));
    }
    let name = args.name.clone().unwrap_or_default();
    Ok(schema::render(&kind(&name)?))
}

/// The contract type named `name`; `plan` is the short name of the launch plan.
pub(crate) fn kind(name: &str) -> Result<flysim_types::payload::PayloadKind, CliError> {
    let wanted = if name == "plan" { "launch-plan" } else { name };
    schema::kind(wanted).ok_or_else(|| CliError::UnknownKind {
        name: name.to_owned(),
    })
}
