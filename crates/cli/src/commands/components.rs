//! `flysim components-doc` (hidden): the Markdown section of `docs/compositions.md` that lists
//! this build's backends and worlds, tasks, executors and models with their parameters, and
//! which go together, rendered from the registered specs so that the page cannot drift from
//! the build. A test regenerates it and compares.
//!
//! It owns the rendering and the section's markers; it does not know what the specs mean beyond
//! the fields it prints.

use std::fmt::Write as _;
use std::path::PathBuf;

use flysim_run::components::{EXECUTORS, MODELS, SPECS, TASKS};
use flysim_types::spec::{BackendSpec, ContentSpec, IdentityGrammar, ModelSpec, Specs};

use crate::error::CliError;

/// The line that opens the generated section.
pub(crate) const BEGIN: &str = "<!-- generated: components -->";
/// The line that closes it.
pub(crate) const END: &str = "<!-- /generated -->";

/// Arguments of `flysim components-doc`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Rewrite the section between the markers in this Markdown file instead of printing it
    #[arg(long, value_name = "FILE")]
    update: Option<PathBuf>,
}

pub(crate) fn run(args: &Args) -> Result<String, CliError> {
    let section = render();
    let Some(path) = &args.update else {
        return Ok(section);
    };
    let text = String::from_utf8_lossy(&super::read_input(path)?).into_owned();
    let (Some(begin), Some(end)) = (text.find(BEGIN), text.find(END)) else {
        return Err(CliError::WriteOutput {
            path: path.clone(),
            error: std::io::Error::other(format!("it has no `{BEGIN}` … `{END}` section")),
        });
    };
    let updated = format!(
        "{}{}{}",
        &text[..begin],
        section.trim_end(),
        &text[end + END.len()..]
    );
    std::fs::write(path, updated).map_err(|error| CliError::WriteOutput {
        path: path.clone(),
        error,
    })?;
    Ok(format!("updated {}\n", path.display()))
}

/// The section, markers included.
pub(crate) fn render() -> String {
    let specs = flysim_run::components::ALL;
    let mut out = format!(
        "{BEGIN}\n\n<!-- Rendered from this build's registered specs; refresh with `flysim components-doc --update docs/compositions.md`. -->\n\n"
    );
    out.push_str(&backends());
    out.push_str(&tasks());
    out.push_str(&executors());
    out.push_str(&models());
    out.push_str(&together(&specs));
    out.push_str(END);
    out.push('\n');
    out
}

/// `a`, `b` and `c` in code spans, or `none`.
fn listed<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    let names: Vec<String> = names.into_iter().map(|n| format!("`{n}`")).collect();
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}

fn backends() -> String {
    let mut out = String::from(
        "### Backends and worlds\n\n| backend | what it is | pinned by | content | step (ns) | ports | controls |\n| --- | --- | --- | --- | --- | --- | --- |\n",
    );
    for spec in &SPECS {
        let pin = match spec.identity.grammar {
            IdentityGrammar::OneOf(worlds) => {
                format!(
                    "`{}`: one of {}",
                    spec.identity.node.node(),
                    listed(worlds.iter().copied())
                )
            }
            IdentityGrammar::LowerHex(n) => {
                format!("`{}`: {n} lowercase hex digits", spec.identity.node.node())
            }
            IdentityGrammar::Release => format!("`{}`: a release", spec.identity.node.node()),
        };
        let content = match spec.content {
            ContentSpec::None => "none (compiled in)".to_owned(),
            ContentSpec::Required { what } => format!("{what} (`content`)"),
        };
        let _ = writeln!(
            out,
            "| `{}` | {} | {pin} | {content} | `{}/{}` | at most {} | {} |",
            spec.name,
            spec.summary,
            spec.step_ns.0,
            spec.step_ns.1,
            spec.max_ports,
            controls(spec)
        );
    }
    out.push('\n');
    out
}

/// The controls a backend's ports may declare, in words.
fn controls(spec: &BackendSpec) -> String {
    let buttons = match spec.ports.buttons {
        Some(buttons) => format!("buttons {}", listed(buttons.iter().copied())),
        None => "any buttons".to_owned(),
    };
    if spec.ports.axes {
        format!("{buttons}; axes")
    } else {
        format!("{buttons}; no axes")
    }
}

fn tasks() -> String {
    let mut out = String::from(
        "### Tasks\n\n| task | what it scores | backends | content |\n| --- | --- | --- | --- |\n",
    );
    for task in &TASKS {
        let content = match task.content {
            None => "any".to_owned(),
            Some(digests) => digests
                .iter()
                .map(|d| format!("sha256 `{}…`", d.get(..12).unwrap_or(d)))
                .collect::<Vec<_>>()
                .join(", "),
        };
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {content} |",
            task.name,
            task.summary,
            listed(SPECS.iter().filter(|b| task.goes_with(b)).map(|b| b.name))
        );
    }
    out.push('\n');
    out
}

fn executors() -> String {
    let mut out = String::from("### Executors\n\n| executor | backends |\n| --- | --- |\n");
    for executor in &EXECUTORS {
        let _ = writeln!(out, "| `{executor}` | every backend |");
    }
    out.push('\n');
    out
}

/// A model's name as a profile's `model` node spells it.
fn model_name(model: &ModelSpec) -> &'static str {
    flysim_types::plan::ModelKind::ALL
        .iter()
        .find(|(_, kind)| *kind == model.kind)
        .map_or("?", |(name, _)| name)
}

fn models() -> String {
    let mut out = String::from(
        "### Models and their parameters\n\n| model | parameter | values | default |\n| --- | --- | --- | --- |\n",
    );
    for model in &MODELS {
        let name = model_name(model);
        match model.parameters {
            Some([]) => {
                let _ = writeln!(out, "| `{name}` | none: every `parameter` is refused | | |");
            }
            None => {
                let _ = writeln!(out, "| `{name}` | not declared, so not checked | | |");
            }
            Some(parameters) => {
                for p in parameters {
                    let _ = writeln!(
                        out,
                        "| `{name}` | `{}` | {} | `{}` |",
                        p.name,
                        p.kind.describe(),
                        p.default
                    );
                }
            }
        }
    }
    out.push_str("\nA model whose spec names a profile document reads its retina from it: ");
    let retinas: Vec<String> = MODELS
        .iter()
        .filter_map(|m| {
            Some(format!(
                "`{}` from its `{}` asset",
                model_name(m),
                m.retina?
            ))
        })
        .collect();
    out.push_str(&if retinas.is_empty() {
        "none does.".to_owned()
    } else {
        format!(
            "{}; that retina must fit the world's view.\n\n",
            retinas.join(", ")
        )
    });
    out
}

fn together(specs: &Specs<'static>) -> String {
    let mut out = String::from(
        "### Which go together\n\n| backend | tasks | executors | models |\n| --- | --- | --- | --- |\n",
    );
    for spec in &SPECS {
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} |",
            spec.name,
            listed(specs.tasks_for(spec.name).map(|t| t.name)),
            listed(EXECUTORS.iter().copied()),
            listed(MODELS.iter().map(model_name)),
        );
    }
    out.push('\n');
    out
}
