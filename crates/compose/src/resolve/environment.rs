//! The environment's backend checks: which backends this build knows, the identity each is
//! pinned by and its grammar, the arena's worlds, the Game Boy joypad's buttons, the content
//! rules, and each port's controller schema.
//!
//! It knows backends only through `Backend::ALL` and the rules written here; it does not find
//! assets or check agents. These rules are kept together so they can be replaced whole.

use flysim_types::plan::{self, AxisDecl, Backend, ControllerSchema, PlanEnvironment, PlanPort};
use flysim_types::{Id, SchemaRef};

use super::{Resolver, floating};
use crate::diag::Problem;
use crate::model::{Environment, IdentityKind, Port};
use crate::text::suggest;

/// The arena worlds this build knows.
pub const ARENA_WORLDS: &[&str] = &["counter-v1"];
/// The Game Boy joypad's buttons; a binjgb port may use any of them, and no axis.
pub const GAME_BOY_BUTTONS: &[&str] = &["right", "left", "up", "down", "a", "b", "select", "start"];

/// Checks the environment against its backend and builds its plan entry.
#[expect(
    clippy::too_many_lines,
    reason = "the backend checks stay whole until backend specs replace them"
)]
pub(super) fn environment(r: &mut Resolver<'_>, env: &Environment) -> Option<PlanEnvironment> {
    let backend = match Backend::ALL.iter().find(|(s, _)| *s == env.backend.value) {
        Some((_, b)) => Some(*b),
        None => {
            let names = Backend::ALL.iter().map(|(s, _)| *s);
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
    };
    let backend = backend?;
    let wanted = match backend {
        Backend::Arena => IdentityKind::World,
        Backend::Binjgb => IdentityKind::Revision,
        Backend::Dolphin => IdentityKind::Version,
    };
    let mut identity = None;
    for (kind, value) in &env.identity {
        if *kind == wanted {
            identity = Some(value);
        } else {
            let problem = Problem::BackendMismatch {
                src: r.src(value.span),
                message: format!("the {} backend has no `{}`", backend.as_str(), kind.node()),
                at: value.span.at,
                help: Some(format!(
                    "the {} backend is pinned with `{}`",
                    backend.as_str(),
                    wanted.node()
                )),
            };
            r.push(value.span, problem);
        }
    }
    let how = match backend {
        Backend::Arena => "name the arena world: `world \"counter-v1\"`",
        Backend::Binjgb => {
            "pin the binjgb source revision, a full 40-hex commit: `revision \"66d69e90b4c79ccc35a9a1976bca16093c44632e\"`"
        }
        Backend::Dolphin => "pin the Dolphin release: `version \"2503\"` (digits, dots and dashes)",
    };
    let Some(identity) = identity else {
        let problem = Problem::Unpinned {
            src: r.src(env.backend.span),
            what: format!("the {} backend", backend.as_str()),
            reason: format!("the environment has no `{}`", wanted.node()),
            at: env.backend.span.at,
            help: Some(how.to_owned()),
        };
        r.push(env.backend.span, problem);
        return None;
    };
    let value = identity.value.as_str();
    let pinned = !floating(value)
        && match backend {
            Backend::Arena => true,
            Backend::Binjgb => {
                value.len() == 40
                    && value
                        .bytes()
                        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            }
            Backend::Dolphin => {
                value.starts_with(|c: char| c.is_ascii_digit())
                    && value
                        .bytes()
                        .all(|b| b.is_ascii_digit() || b == b'.' || b == b'-')
            }
        };
    if !pinned {
        let problem = Problem::Unpinned {
            src: r.src(identity.span),
            what: format!("the {} backend's `{}`", backend.as_str(), wanted.node()),
            reason: format!("{value:?} can change meaning over time"),
            at: identity.span.at,
            help: Some(how.to_owned()),
        };
        r.push(identity.span, problem);
    } else if backend == Backend::Arena && !ARENA_WORLDS.contains(&value) {
        let problem = Problem::BackendMismatch {
            src: r.src(identity.span),
            message: format!("the arena has no world {value:?}"),
            at: identity.span.at,
            help: Some(format!("known worlds: {}", ARENA_WORLDS.join(", "))),
        };
        r.push(identity.span, problem);
    }
    match (&env.content, backend) {
        (Some(content), Backend::Arena) => {
            let problem = Problem::BackendMismatch {
                src: r.src(content.id.span),
                message: "the arena takes no content".to_owned(),
                at: content.id.span.at,
                help: Some("remove `content`; the arena's world is compiled in".to_owned()),
            };
            r.push(content.id.span, problem);
        }
        (None, Backend::Binjgb | Backend::Dolphin) => {
            let what = if backend == Backend::Binjgb {
                "a ROM"
            } else {
                "a disc image"
            };
            let problem = Problem::Missing {
                src: r.src(env.id.span),
                what: "`content`".to_owned(),
                place: "in `environment`".to_owned(),
                at: env.id.span.at,
                help: Some(format!(
                    "the {} backend runs {what}: `content \"<id>\" path=\"...\" sha256=\"...\"`",
                    backend.as_str()
                )),
            };
            r.push(env.id.span, problem);
        }
        _ => {}
    }
    let mut ports = Vec::new();
    for port in &env.ports {
        ports.push(port_entry(r, backend, port)?);
    }
    Some(PlanEnvironment {
        id: env.id.value.clone(),
        backend,
        identity: identity.value.clone(),
        backend_digest: plan::backend_digest(backend, &identity.value).ok()?,
        content: env.content.as_ref().map(|c| c.id.value.clone()),
        step_duration: backend.step_duration(),
        ports,
    })
}

/// Checks a port against the environment's backend and builds its plan entry.
fn port_entry(r: &mut Resolver<'_>, backend: Backend, port: &Port) -> Option<PlanPort> {
    if backend == Backend::Binjgb {
        for b in &port.buttons {
            if !GAME_BOY_BUTTONS.contains(&b.value.as_str()) {
                let problem = Problem::BackendMismatch {
                    src: r.src(b.span),
                    message: format!("the Game Boy joypad has no button `{}`", b.value),
                    at: b.span.at,
                    help: Some(format!("its buttons are {}", GAME_BOY_BUTTONS.join(", "))),
                };
                r.push(b.span, problem);
            }
        }
        for a in &port.axes {
            let problem = Problem::BackendMismatch {
                src: r.src(a.id.span),
                message: "the Game Boy joypad has no axes".to_owned(),
                at: a.id.span.at,
                help: None,
            };
            r.push(a.id.span, problem);
        }
    }
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
