//! The environment's checks against its backend's spec: the backend is one the resolver was
//! handed, pinned by the node and grammar its spec declares, with content exactly when it runs
//! some, no more ports than its device has and ports whose buttons and axes it has; then each
//! port's controller schema.
//!
//! It knows backends only through the specs it is handed (`BackendSpec`, declared by each
//! backend crate): no backend name, button list or grammar is written here.

use flysim_types::plan::{
    self, AxisDecl, BackendName, ControllerSchema, PlanEnvironment, PlanPort,
};
use flysim_types::spec::{self, BackendSpec, ContentSpec, IdentityGrammar, IdentityNode};
use flysim_types::{Id, SchemaRef};

use super::{Resolver, floating};
use crate::diag::{ComponentProblem, Problem};
use crate::model::{Environment, IdentityKind, Port, Spanned};
use crate::text::suggest;

/// Checks the environment against its backend's spec and builds its plan entry.
pub(super) fn environment(r: &mut Resolver<'_>, env: &Environment) -> Option<PlanEnvironment> {
    let spec = backend_spec(r, env)?;
    let identity = identity(r, env, spec)?;
    content(r, env, spec);
    port_count(r, env, spec);
    let mut ports = Vec::new();
    for port in &env.ports {
        ports.push(port_entry(r, spec, port)?);
    }
    let backend = BackendName::parse(spec.name).ok()?;
    Some(PlanEnvironment {
        id: env.id.value.clone(),
        backend_digest: plan::backend_digest(&backend, &identity.value).ok()?,
        backend,
        identity: identity.value.clone(),
        content: env.content.as_ref().map(|c| c.id.value.clone()),
        step_duration: spec.step_duration().ok()?,
        ports,
    })
}

/// The spec of the backend the environment names, or a refusal naming the known ones.
fn backend_spec<'s>(r: &mut Resolver<'s>, env: &Environment) -> Option<&'s BackendSpec> {
    if let Some(spec) = spec::find(r.specs.backends, &env.backend.value) {
        return Some(spec);
    }
    let names = r.specs.backends.iter().map(|s| s.name);
    let known = names
        .clone()
        .map(|s| format!("\"{s}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let help = match suggest(&env.backend.value, names) {
        Some(s) => format!("did you mean \"{s}\"? this build knows {known}"),
        None => format!("this build knows {known}"),
    };
    let problem = Problem::UnknownBackend {
        src: r.src(env.backend.span),
        found: env.backend.value.clone(),
        at: env.backend.span.at,
        help: Some(help),
    };
    r.push(env.backend.span, problem);
    None
}

/// The composition's node kind for a spec's identity node.
fn node_kind(node: IdentityNode) -> IdentityKind {
    match node {
        IdentityNode::World => IdentityKind::World,
        IdentityNode::Revision => IdentityKind::Revision,
        IdentityNode::Version => IdentityKind::Version,
    }
}

/// The environment's identity, checked against the node and grammar its backend is pinned by.
fn identity<'e>(
    r: &mut Resolver<'_>,
    env: &'e Environment,
    spec: &BackendSpec,
) -> Option<&'e Spanned<String>> {
    let wanted = node_kind(spec.identity.node);
    let name = spec.name;
    let mut identity = None;
    for (kind, value) in &env.identity {
        if *kind == wanted {
            identity = Some(value);
        } else {
            let problem = Problem::BackendMismatch {
                src: r.src(value.span),
                message: format!("the {name} backend has no `{}`", kind.node()),
                at: value.span.at,
                help: Some(format!(
                    "the {name} backend is pinned with `{}`",
                    wanted.node()
                )),
            };
            r.push(value.span, problem);
        }
    }
    let how = spec.identity.how;
    let Some(identity) = identity else {
        let problem = Problem::Unpinned {
            src: r.src(env.backend.span),
            what: format!("the {name} backend"),
            reason: format!("the environment has no `{}`", wanted.node()),
            at: env.backend.span.at,
            help: Some(how.to_owned()),
        };
        r.push(env.backend.span, problem);
        return None;
    };
    let value = identity.value.as_str();
    match spec.identity.grammar {
        _ if floating(value) => unpinned(r, identity, spec),
        IdentityGrammar::OneOf(names) if !names.contains(&value) => {
            let problem = Problem::BackendMismatch {
                src: r.src(identity.span),
                message: format!("the {name} backend has no {} {value:?}", wanted.node()),
                at: identity.span.at,
                help: Some(format!("known: {}", names.join(", "))),
            };
            r.push(identity.span, problem);
        }
        grammar if !grammar.accepts(value) => unpinned(r, identity, spec),
        _ => {}
    }
    Some(identity)
}

/// Refuses an identity that names a moving target or is not spelled as a pin.
fn unpinned(r: &mut Resolver<'_>, identity: &Spanned<String>, spec: &BackendSpec) {
    let problem = Problem::Unpinned {
        src: r.src(identity.span),
        what: format!(
            "the {} backend's `{}`",
            spec.name,
            spec.identity.node.node()
        ),
        reason: format!("{:?} can change meaning over time", identity.value),
        at: identity.span.at,
        help: Some(spec.identity.how.to_owned()),
    };
    r.push(identity.span, problem);
}

/// Checks that the environment has content exactly when its backend runs some.
fn content(r: &mut Resolver<'_>, env: &Environment, spec: &BackendSpec) {
    match (&env.content, spec.content) {
        (Some(content), ContentSpec::None) => {
            let problem = Problem::BackendMismatch {
                src: r.src(content.id.span),
                message: format!("the {} backend takes no content", spec.name),
                at: content.id.span.at,
                help: Some("remove `content`; its world is compiled in".to_owned()),
            };
            r.push(content.id.span, problem);
        }
        (None, ContentSpec::Required { what }) => {
            let problem = Problem::Missing {
                src: r.src(env.id.span),
                what: "`content`".to_owned(),
                place: "in `environment`".to_owned(),
                at: env.id.span.at,
                help: Some(format!(
                    "the {} backend runs {what}: `content \"<id>\" path=\"...\" sha256=\"...\"`",
                    spec.name
                )),
            };
            r.push(env.id.span, problem);
        }
        _ => {}
    }
}

/// Refuses the ports over what the backend's device has (those over the environment limit are
/// already refused).
fn port_count(r: &mut Resolver<'_>, env: &Environment, spec: &BackendSpec) {
    let limit = spec.max_ports;
    for (i, port) in env
        .ports
        .iter()
        .enumerate()
        .take(flysim_types::limits::MAX_PORTS)
        .skip(limit)
    {
        let problem = ComponentProblem::PortsOverBackend {
            src: r.src(port.id.span),
            backend: spec.name.to_owned(),
            count: i + 1,
            limit,
            at: port.id.span.at,
            help: Some(format!(
                "{} has {limit} port(s): bind one agent to each, and run more flies as separate compositions",
                spec.ports.device
            )),
        };
        r.refuse(port.id.span, problem);
    }
}

/// Checks a port's buttons and axes against what its backend's device has.
fn device_controls(r: &mut Resolver<'_>, spec: &BackendSpec, port: &Port) {
    if let Some(buttons) = spec.ports.buttons {
        for b in &port.buttons {
            if !buttons.contains(&b.value.as_str()) {
                let problem = Problem::BackendMismatch {
                    src: r.src(b.span),
                    message: format!("{} has no button `{}`", spec.ports.device, b.value),
                    at: b.span.at,
                    help: Some(format!("its buttons are {}", buttons.join(", "))),
                };
                r.push(b.span, problem);
            }
        }
    }
    if !spec.ports.axes {
        for a in &port.axes {
            let problem = Problem::BackendMismatch {
                src: r.src(a.id.span),
                message: format!("{} has no axes", spec.ports.device),
                at: a.id.span.at,
                help: None,
            };
            r.push(a.id.span, problem);
        }
    }
}

/// Checks a port against the environment's backend and builds its plan entry.
fn port_entry(r: &mut Resolver<'_>, spec: &BackendSpec, port: &Port) -> Option<PlanPort> {
    device_controls(r, spec, port);
    r.unique("button", port.buttons.iter());
    r.unique("axis", port.axes.iter().map(|a| &a.id));
    for (list, limit, what) in [
        (
            port.buttons.len(),
            flysim_types::limits::MAX_BUTTONS,
            "buttons",
        ),
        (port.axes.len(), flysim_types::limits::MAX_AXES, "axes"),
    ] {
        if list > limit {
            let problem = Problem::BadValue {
                src: r.src(port.id.span),
                what: format!("port `{}`", port.id.value),
                reason: format!("it has {list} {what}, at most {limit} are allowed"),
                at: port.id.span.at,
                help: None,
            };
            r.push(port.id.span, problem);
        }
    }
    for a in &port.axes {
        if !a.range.contains(a.neutral.value) {
            let problem = Problem::BadValue {
                src: r.src(a.neutral.span),
                what: format!("axis `{}`", a.id.value),
                reason: format!("neutral {} lies outside its range", a.neutral.value),
                at: a.neutral.span.at,
                help: Some("a bipolar axis spans -1 to 1, a unit axis 0 to 1".to_owned()),
            };
            r.push(a.neutral.span, problem);
        }
    }
    let buttons: Vec<Id> = port.buttons.iter().map(|b| b.value.clone()).collect();
    let axes: Vec<AxisDecl> = port
        .axes
        .iter()
        .map(|a| AxisDecl {
            id: a.id.value.clone(),
            range: a.range,
            neutral: a.neutral.value,
        })
        .collect();
    let digest =
        plan::controller_digest(&port.controller.value, port.version.value, &buttons, &axes)
            .ok()?;
    Some(PlanPort {
        port_id: port.id.value.clone(),
        controls: ControllerSchema {
            schema: SchemaRef {
                id: port.controller.value.clone(),
                version: port.version.value,
                digest,
            },
            buttons,
            axes,
        },
    })
}
