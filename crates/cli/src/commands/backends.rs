//! `flysim backends`: the environment backends this build registers (their specs, in
//! registration order) and whether each can run on this machine, with its pinned identity.

use flysim_binjgb::Availability;
use serde_json::json;

use crate::error::CliError;

/// Arguments of `flysim backends`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Print one JSON object instead of text
    #[arg(long)]
    json: bool,
}

/// The Dolphin row: whether the installed `dolphin-emu` is the pinned build and Xvfb is there,
/// which a Dolphin world needs.
fn dolphin_row() -> (&'static str, &'static str, String) {
    let pinned = flysim_dolphin::PINNED_VERSION;
    let tools = crate::host::dolphin_tools();
    let Some(binary) = tools.dolphin.filter(|p| p.is_file()) else {
        return (
            "dolphin",
            "absent",
            format!("no dolphin-emu installed (the backend pins {pinned})"),
        );
    };
    match flysim_dolphin::version_of(&binary, &std::env::temp_dir()) {
        Ok(version) if version == pinned => match tools.xvfb.filter(|p| p.is_file()) {
            Some(xvfb) => (
                "dolphin",
                "available",
                format!(
                    "{version} at {}, Xvfb at {} (compositions pin version \"{}\")",
                    binary.display(),
                    xvfb.display(),
                    flysim_dolphin::PINNED_RELEASE
                ),
            ),
            None => (
                "dolphin",
                "absent",
                format!(
                    "{version} at {}, but no Xvfb installed (a Dolphin world runs under its own Xvfb)",
                    binary.display()
                ),
            ),
        },
        Ok(version) => (
            "dolphin",
            "unpinned",
            format!(
                "{} is {version:?}; the backend pins {pinned:?}",
                binary.display()
            ),
        ),
        Err(e) => ("dolphin", "absent", e.to_string()),
    }
}

/// A backend's row: its availability on this machine (probed for the backends that need
/// something installed or built in), else its spec's summary.
fn row(spec: &flysim_types::spec::BackendSpec) -> (&'static str, &'static str, String) {
    if spec.name == flysim_binjgb::SPEC.name {
        return match flysim_binjgb::availability() {
            Availability::Available { revision } => (
                spec.name,
                "available",
                format!("binjgb revision {revision}"),
            ),
            Availability::Absent { reason } => (spec.name, "absent", reason.to_owned()),
        };
    }
    if spec.name == flysim_dolphin::SPEC.name {
        return dolphin_row();
    }
    if spec.name == flysim_arena::SPEC.name {
        return (
            spec.name,
            "available",
            format!(
                "the counter arena (world {}), built in",
                flysim_arena::WORLDS.join(", ")
            ),
        );
    }
    (spec.name, "available", spec.summary.to_owned())
}

pub(crate) fn run(args: &Args) -> Result<String, CliError> {
    let rows: Vec<_> = flysim_run::components::SPECS.iter().map(row).collect();
    if args.json {
        let backends: Vec<_> = rows.iter().map(|(name, status, detail)| json!({"backend": name, "status": status, "detail": detail})).collect();
        let doc = json!({ "backends": backends });
        return Ok(format!(
            "{}\n",
            flysim_types::json::to_canonical(&doc).map_err(flysim_types::ContractError::from)?
        ));
    }
    Ok(rows
        .iter()
        .map(|(name, status, detail)| format!("{name:<8} {status:<16} {detail}\n"))
        .collect())
}
