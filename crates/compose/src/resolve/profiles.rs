//! The profiles against their models: every parameter is one the model reads, with a value it
//! takes, and a brain that senses pixels has a retina that fits the first view of the world its
//! agent is bound to.
//!
//! It knows models only through the specs it is handed (`ModelSpec`: the parameters, and the
//! asset format of the document that declares the retina); a model without a spec, or without
//! declared parameters, is not checked. Of a profile document it reads only `retina`'s
//! `width`, `height` and `layout`; a document it cannot read is left to the run, which refuses
//! it with its own diagnostic.

use flysim_types::limits::MAX_AGENTS;
use flysim_types::plan::{ModelKind, PlanAsset};
use flysim_types::spec::{self, BackendSpec, ModelSpec, ViewHeight, ViewSpec};
use serde_json::Value;

use super::Resolver;
use crate::assets::AssetRegistry;
use crate::diag::ComponentProblem;
use crate::model::{Environment, Profile};
use crate::text::suggest;

/// The model's name as compositions spell it.
fn model_name(kind: ModelKind) -> &'static str {
    ModelKind::ALL
        .iter()
        .find(|(_, k)| *k == kind)
        .map_or("?", |(name, _)| name)
}

/// The spec of the model `kind`, when the resolver was handed one.
fn model_spec<'s>(r: &Resolver<'s>, kind: ModelKind) -> Option<&'s ModelSpec> {
    r.specs.models.iter().find(|m| m.kind == kind)
}

/// Refuses every parameter a profile's model does not read, or reads with another kind of value.
pub(super) fn parameters(r: &mut Resolver<'_>) {
    let comp = r.comp;
    for profile in &comp.profiles {
        let Some(declared) = model_spec(r, profile.model.value).and_then(|m| m.parameters) else {
            continue;
        };
        let model = model_name(profile.model.value);
        for (name, value) in &profile.parameters {
            let Some(param) = declared.iter().find(|p| p.name == name.value) else {
                let list = declared
                    .iter()
                    .map(|p| format!("`{}` (default {})", p.name, p.default))
                    .collect::<Vec<_>>()
                    .join(", ");
                let list = if list.is_empty() {
                    format!("the {model} model reads no parameter")
                } else {
                    format!("the {model} model reads {list}")
                };
                let help = match suggest(&name.value, declared.iter().map(|p| p.name)) {
                    Some(s) => format!("did you mean \"{s}\"? {list}"),
                    None => list,
                };
                let problem = ComponentProblem::UnknownParameter {
                    src: r.src(name.span),
                    model: model.to_owned(),
                    name: name.value.clone(),
                    at: name.span.at,
                    help: Some(help),
                };
                r.refuse(name.span, problem);
                continue;
            };
            if !param.kind.accepts(&value.value) {
                let problem = ComponentProblem::ParameterValue {
                    src: r.src(value.span),
                    model: model.to_owned(),
                    name: name.value.clone(),
                    expected: param.kind.describe(),
                    at: value.span.at,
                    help: Some(format!(
                        "without the parameter the model uses {}",
                        param.default
                    )),
                };
                r.refuse(value.span, problem);
            }
        }
    }
}

/// A retina as a profile document declares it: width, height, and whether it reads its port's
/// band of the view.
struct Retina {
    width: u64,
    height: u64,
    port_bands: bool,
}

/// The retina declared by the asset of format `format` among `profile`'s, when it can be read.
fn declared_retina(
    r: &Resolver<'_>,
    profile: &Profile,
    format: &str,
    assets: &[PlanAsset],
    registry: Option<&AssetRegistry>,
) -> Option<Retina> {
    let (decl, asset) = profile.assets.iter().find_map(|decl| {
        let asset = assets.iter().find(|a| a.id == decl.id.value)?;
        (asset.format.as_str() == format).then_some((decl, asset))
    })?;
    let file = match &decl.path {
        Some(path) => r.comp.sources[decl.id.span.file].dir.join(&path.value),
        None => registry?.blob_path(&asset.digest),
    };
    let document: Value = serde_json::from_slice(&std::fs::read(file).ok()?).ok()?;
    let retina = document.get("retina")?;
    Some(Retina {
        width: retina.get("width")?.as_u64()?,
        height: retina.get("height")?.as_u64()?,
        port_bands: retina.get("layout").and_then(Value::as_str) == Some("port-bands"),
    })
}

/// Why `retina` does not fit `view` in an environment of `ports` ports, if it does not.
fn retina_mismatch(retina: &Retina, view: &ViewSpec, ports: usize) -> Option<String> {
    let (width, height) = (u64::from(view.width), view.height_for(ports));
    let bands = retina.height * ports as u64;
    if retina.port_bands {
        (retina.width != width || bands != height).then(|| {
            format!(
                "it reads a band of {}x{} for each of the {ports} port(s), a {}x{bands} view; view `{}` is {width}x{height}",
                retina.width, retina.height, retina.width, view.name
            )
        })
    } else {
        (retina.width != width || retina.height != height).then(|| {
            format!(
                "it reads {}x{} frames; view `{}` is {width}x{height}",
                retina.width, retina.height, view.name
            )
        })
    }
}

/// Refuses every agent whose profile's retina does not fit the first view of `backend`'s world
/// (`None` when the environment was already refused), or reads a world that shows no view (for
/// a backend whose views depend on the content: none for the environment's content format).
/// A backend that declares no views (`None`) is not checked.
pub(super) fn retinas(
    r: &mut Resolver<'_>,
    env: &Environment,
    backend: Option<&str>,
    assets: &[PlanAsset],
    registry: Option<&AssetRegistry>,
) {
    let comp = r.comp;
    let Some(backend) = backend.and_then(|b| spec::find(r.specs.backends, b)) else {
        return;
    };
    let Some(views) = backend.views else {
        return;
    };
    let content_format = env
        .content
        .as_ref()
        .and_then(|c| c.format.as_ref())
        .map_or("", |f| f.value.as_str());
    let view = views.iter().find(|v| v.shown_for(content_format));
    let ports = env.ports.len();
    for agent in comp.agents.iter().take(MAX_AGENTS) {
        let Some(profile) = comp
            .profiles
            .iter()
            .find(|p| p.id.value == agent.profile.value)
        else {
            continue;
        };
        let Some(format) = model_spec(r, profile.model.value).and_then(|m| m.retina) else {
            continue;
        };
        let Some(retina) = declared_retina(r, profile, format, assets, registry) else {
            continue;
        };
        let (reason, help) = match view {
            Some(view) => {
                let Some(reason) = retina_mismatch(&retina, view, ports) else {
                    continue;
                };
                let shape = match view.height {
                    ViewHeight::Rows(_) => String::new(),
                    ViewHeight::RowsPerPort(rows) => format!(", {rows} row(s) per port"),
                };
                let help = format!(
                    "the {} backend shows view `{}`, {} pixels wide{shape}: bind a profile whose retina reads it",
                    backend.name, view.name, view.width
                );
                (reason, help)
            }
            None => no_view(backend, &retina, content_format, views),
        };
        let problem = ComponentProblem::RetinaView {
            src: r.src(agent.profile.span),
            agent: agent.id.value.to_string(),
            reason,
            at: agent.profile.span.at,
            help: Some(help),
        };
        r.refuse(agent.profile.span, problem);
    }
}

/// The reason and help for a retina on a world that shows no view.
fn no_view(
    backend: &BackendSpec,
    retina: &Retina,
    format: &str,
    views: &[ViewSpec],
) -> (String, String) {
    let reason = format!(
        "it reads {}x{} frames, and this world shows no view",
        retina.width, retina.height
    );
    let shown: Vec<String> = views
        .iter()
        .filter_map(|v| {
            let formats = v.formats?.join(", ");
            Some(format!("view `{}` for content of format {formats}", v.name))
        })
        .collect();
    let help = if shown.is_empty() {
        format!(
            "the {} backend shows no view: bind a profile without a retina",
            backend.name
        )
    } else {
        format!(
            "the {} backend shows {} (this content's format is `{format}`): bind a profile without a retina, or play content that shows one",
            backend.name,
            shown.join("; ")
        )
    };
    (reason, help)
}
