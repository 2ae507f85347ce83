//! [`DolphinEnvironment`], the Dolphin world as a session environment: its refusals (without a
//! Dolphin) and its whole life on the committed test program (skipped, saying what is missing,
//! when Dolphin or Xvfb is not installed).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use flysim_component::backend::{BackendError, EnvironmentBackend, EnvironmentSetup};
use flysim_dolphin::environment::{DolphinEnvironment, Tools, backend_error};
use flysim_dolphin::{PINNED_RELEASE, PINNED_VERSION, fieldcount};
use flysim_types::Payload as _;
use flysim_types::plan::{BackendName, PlanEnvironment, PlanPort};
use flysim_types::workers::{
    AxisDecl, AxisRange, AxisValue, ButtonState, ControllerSchema, Determinism,
    EnvironmentDescriptor, PortBinding, PortControl, Recovery,
};
use flysim_types::{Digest, Id, TypedValue};

use crate::{find, scratch};

fn id(text: &str) -> Id {
    Id::parse(text).unwrap()
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixture() -> (PathBuf, Digest) {
    let path = root().join(fieldcount::FIXTURE);
    let digest = flysim_dolphin::file_digest(&path).unwrap();
    (path, digest)
}

/// A plan port `port_id` declaring `buttons` and the bipolar main stick.
fn plan_port(port_id: &str, buttons: &[&str]) -> PlanPort {
    let buttons: Vec<Id> = buttons.iter().map(|b| id(b)).collect();
    let axes = vec![
        AxisDecl {
            id: id("main-x"),
            range: AxisRange::Bipolar,
            neutral: 0.0,
        },
        AxisDecl {
            id: id("main-y"),
            range: AxisRange::Bipolar,
            neutral: 0.0,
        },
    ];
    let digest =
        flysim_types::plan::controller_digest(&id("gamecube-pad"), 1, &buttons, &axes).unwrap();
    PlanPort {
        port_id: id(port_id),
        controls: ControllerSchema {
            schema: flysim_types::SchemaRef {
                id: id("gamecube-pad"),
                version: 1,
                digest,
            },
            buttons,
            axes,
        },
    }
}

/// A plan environment: ports p2 (a, b, start) then p1 (d-up, a), declared out of GameCube order.
fn plan_env() -> PlanEnvironment {
    PlanEnvironment {
        id: id("gamecube"),
        backend: BackendName::parse(flysim_dolphin::SPEC.name).unwrap(),
        identity: PINNED_RELEASE.to_owned(),
        backend_digest: flysim_types::plan::backend_digest(
            &BackendName::parse(flysim_dolphin::SPEC.name).unwrap(),
            PINNED_RELEASE,
        )
        .unwrap(),
        content: Some(id("gc-fieldcount")),
        step_duration: flysim_dolphin::SPEC.step_duration().unwrap(),
        ports: vec![
            plan_port("p2", &["a", "b", "start"]),
            plan_port("p1", &["d-up", "a"]),
        ],
    }
}

fn config_digest() -> Digest {
    flysim_types::digest::sha256(b"the session's configuration digest")
}

fn new(
    env: &PlanEnvironment,
    format: &str,
    tools: &Tools,
    parent: &Path,
) -> Result<DolphinEnvironment, flysim_dolphin::DolphinError> {
    let (path, digest) = fixture();
    let content = flysim_dolphin::environment::ContentFile {
        path: &path,
        digest,
        format,
    };
    DolphinEnvironment::new(env, config_digest(), &content, tools, parent, &[])
}

#[test]
fn a_missing_dolphin_or_xvfb_is_refused_with_fs0811() {
    let dir = scratch();
    let nowhere = dir.path().join("no-such-binary");
    for (tools, missing) in [
        (Tools::default(), "dolphin-emu, Xvfb"),
        (
            Tools {
                dolphin: Some("/bin/true".into()),
                xvfb: None,
            },
            "Xvfb",
        ),
        (
            Tools {
                dolphin: Some(nowhere.clone()),
                xvfb: Some("/bin/true".into()),
            },
            "dolphin-emu (no file at",
        ),
    ] {
        let err = new(&plan_env(), fieldcount::CONTENT_FORMAT, &tools, dir.path()).unwrap_err();
        assert_eq!(err.code_str(), "FS0811", "{err}");
        assert!(err.to_string().contains(missing), "{err}");
        let backend = backend_error(&err);
        assert!(
            matches!(&backend, BackendError::Invalid(message) if message.ends_with("(FS0811)")),
            "{backend:?}"
        );
    }
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing was created"
    );
}

#[test]
fn an_environment_the_backend_cannot_run_is_refused_with_fs0812() {
    let dir = scratch();
    // Stand-ins: the plan is refused before any binary runs.
    let tools = Tools {
        dolphin: Some("/bin/false".into()),
        xvfb: Some("/bin/false".into()),
    };
    type Edit = fn(&mut PlanEnvironment);
    let cases: [(&str, Edit); 7] = [
        ("version", |e| e.identity = "2503".into()),
        ("ports[0].portId", |e| e.ports[0].port_id = id("pad1")),
        ("ports[1].portId", |e| e.ports[1].port_id = id("p2")),
        ("ports[1].controls.buttons[0]", |e| {
            e.ports[1].controls.buttons[0] = id("c");
        }),
        ("ports[0].controls.axes[1].range", |e| {
            e.ports[0].controls.axes[1].range = AxisRange::Unit;
        }),
        ("ports[0].controls.axes[0]", |e| {
            e.ports[0].controls.axes[0].id = id("tilt");
        }),
        ("ports", |e| e.ports.clear()),
    ];
    for (field, edit) in cases {
        let mut env = plan_env();
        edit(&mut env);
        let err = new(&env, fieldcount::CONTENT_FORMAT, &tools, dir.path()).unwrap_err();
        assert_eq!(err.code_str(), "FS0812", "{field}: {err}");
        assert!(
            matches!(&err, flysim_dolphin::DolphinError::PlanRefused { field: f, .. } if f == field),
            "{field}: {err}"
        );
        assert!(matches!(backend_error(&err), BackendError::Invalid(_)));
    }
    let err = new(&plan_env(), "zip", &tools, dir.path()).unwrap_err();
    assert_eq!(err.code_str(), "FS0812", "{err}");
    assert!(err.to_string().contains("content.format"), "{err}");
    // A known format gets past the plan checks to the binary, which is not Dolphin.
    let err = new(&plan_env(), "iso", &tools, dir.path()).unwrap_err();
    assert_eq!(err.code_str(), "FS0801", "{err}");
}

/// Dolphin and Xvfb, or `None` after saying which are missing.
fn tools() -> Option<Tools> {
    let dolphin = find("dolphin-emu");
    let xvfb = find("Xvfb");
    if dolphin.is_none() || xvfb.is_none() {
        #[expect(clippy::print_stderr, reason = "the explicit skip message")]
        {
            eprintln!(
                "skipped: not installed: {} (apt-get install dolphin-emu xvfb)",
                [("dolphin-emu", &dolphin), ("Xvfb", &xvfb)]
                    .iter()
                    .filter(|(_, p)| p.is_none())
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        return None;
    }
    let version = flysim_dolphin::version_of(dolphin.as_ref()?, scratch().path()).ok()?;
    if version != PINNED_VERSION {
        #[expect(clippy::print_stderr, reason = "the explicit skip message")]
        {
            eprintln!(
                "skipped: the installed Dolphin is {version:?}, the backend pins {PINNED_VERSION:?}"
            );
        }
        return None;
    }
    Some(Tools { dolphin, xvfb })
}

/// The plan control of a port: the named buttons down, the main stick at `x`.
fn control(port: &PlanPort, down: &[&str], x: f64) -> PortControl {
    PortControl {
        port_id: port.port_id.clone(),
        buttons: port
            .controls
            .buttons
            .iter()
            .map(|b| ButtonState {
                id: b.clone(),
                down: down.contains(&b.as_str()),
            })
            .collect(),
        axes: port
            .controls
            .axes
            .iter()
            .map(|a| AxisValue {
                id: a.id.clone(),
                value: if a.id.as_str() == "main-x" { x } else { 0.0 },
            })
            .collect(),
    }
}

fn pad_hi(inspection: &TypedValue, n: u8) -> u64 {
    inspection.value["values"][format!("pad{n}-hi").as_str()]
        .as_u64()
        .unwrap()
}

fn gone(pids: &[u32]) -> bool {
    pids.iter()
        .all(|pid| !Path::new(&format!("/proc/{pid}")).exists())
}

/// The descriptor of the test program's environment before Initialize: the plan's digests and
/// port order, NTSC fields, the program's picture as view `screen`, `exact-checkpoint`,
/// `unverified` (the replay check has not run).
fn check_plan_descriptor(descriptor: &EnvironmentDescriptor, env: &PlanEnvironment) {
    descriptor.validate().unwrap();
    assert_eq!(descriptor.backend_digest, env.backend_digest);
    assert_eq!(descriptor.configuration_digest, config_digest());
    assert_eq!(descriptor.step_duration, env.step_duration);
    assert_eq!(
        descriptor
            .ports
            .iter()
            .map(|p| p.port_id.as_str())
            .collect::<Vec<_>>(),
        ["p2", "p1"],
        "the plan's port order"
    );
    assert_eq!(
        descriptor.views,
        [fieldcount::XFB.descriptor()],
        "the program's picture as view `screen`"
    );
    assert_eq!(descriptor.recovery, Recovery::ExactCheckpoint);
    assert_eq!(descriptor.determinism, Determinism::Unverified);
}

#[test]
fn the_environment_initializes_steps_captures_restores_and_tears_down() {
    let Some(tools) = tools() else { return };
    let parent = scratch();
    let env = plan_env();
    let mut world = new(&env, fieldcount::CONTENT_FORMAT, &tools, parent.path()).unwrap();
    let dir = world.scratch().to_owned();
    assert!(dir.starts_with(parent.path()));
    let booted = &world.config().content.path;
    assert_eq!(
        booted,
        &dir.join("content.elf"),
        "Dolphin boots a link named .elf"
    );
    assert_eq!(
        std::fs::canonicalize(booted).unwrap(),
        std::fs::canonicalize(fixture().0).unwrap(),
        "to the content itself, not a copy"
    );
    check_plan_descriptor(world.descriptor(), &env);
    assert!(
        world.inspection().is_err() && world.processes().is_empty(),
        "nothing runs before Initialize"
    );

    let setup = EnvironmentSetup {
        episode_id: id("ep-0"),
        port_bindings: vec![PortBinding {
            port_id: id("p1"),
            agent_id: id("fly-a"),
        }],
    };
    world.initialize(&setup).unwrap();
    assert_eq!(
        world.descriptor().determinism,
        Determinism::FixedBuild,
        "the replay check passed on the pinned build"
    );
    let i0 = world.inspection().unwrap();
    i0.validate().unwrap();
    assert_eq!(i0.schema, world.descriptor().inspection_schema);
    assert_eq!(
        world.engine_frame().as_deref(),
        Some("40"),
        "boundary 0 is the end of field 40"
    );
    assert_eq!(i0.value["values"]["magic"], fieldcount::MAGIC);
    let frames0 = world.frames();
    assert_eq!(frames0.len(), 1);
    assert_eq!(frames0[0].view_id.as_str(), "screen");
    assert_eq!(frames0[0].bytes.len(), 640 * 480 * 4);

    // p2 (plan index 0) holds A and Start with the stick right; p1 holds D-up, stick left.
    let p2 = &env.ports[0];
    let p1 = &env.ports[1];
    world
        .advance(&[
            control(p2, &["a", "start"], 1.0),
            control(p1, &["d-up"], -1.0),
        ])
        .unwrap();
    let i1 = world.inspection().unwrap();
    assert_eq!(pad_hi(&i1, 2), 0x1180_ff80, "port 2: A, Start, stick right");
    assert_eq!(pad_hi(&i1, 1), 0x0088_0180, "port 1: D-up, stick left");
    assert_eq!(world.engine_frame().as_deref(), Some("41"));
    let frames1 = world.frames();
    assert_ne!(frames1, frames0, "a new picture every field");
    assert!(matches!(
        world.advance(&[control(p2, &[], 0.0)]),
        Err(BackendError::Invalid(_))
    ));

    // Capture at boundary 1, run on, restore, and the world is back.
    let captured = world.capture().unwrap();
    world
        .advance(&[control(p2, &["b"], 0.0), control(p1, &["a"], 0.0)])
        .unwrap();
    assert_ne!(world.inspection().unwrap(), i1);
    assert!(matches!(
        world.stage_restore(b"not a checkpoint"),
        Err(BackendError::Incompatible(_))
    ));
    assert_eq!(
        world.engine_frame().as_deref(),
        Some("42"),
        "a refused stage changed nothing"
    );
    world.stage_restore(&captured).unwrap();
    assert_eq!(
        world.engine_frame().as_deref(),
        Some("42"),
        "staging installs nothing"
    );
    assert_ne!(world.frames(), frames1);
    world.activate_restore().unwrap();
    assert_eq!(world.inspection().unwrap(), i1);
    assert_eq!(world.frames(), frames1, "the restored boundary's picture");
    assert_eq!(world.engine_frame().as_deref(), Some("41"));
    assert!(matches!(
        world.activate_restore(),
        Err(BackendError::Invalid(_))
    ));

    // A second episode starts a fresh world at the same boundary 0.
    let first = world.processes();
    world.initialize(&setup).unwrap();
    assert!(gone(&first), "the first world's Dolphin and Xvfb are gone");
    assert_eq!(world.inspection().unwrap(), i0);
    assert_eq!(world.frames(), frames0);

    let pids = world.processes();
    assert_eq!(pids.len(), 2, "Dolphin and Xvfb");
    let started = Instant::now();
    drop(world);
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "bounded teardown"
    );
    assert!(gone(&pids), "no process is left");
    assert!(!dir.exists(), "the private directory is removed");
    assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 0);
}

#[test]
fn a_program_of_a_generic_format_boots_at_field_120_but_never_claims_fixed_build() {
    let Some(tools) = tools() else { return };
    let parent = scratch();
    let env = plan_env();
    let mut world = new(&env, "elf", &tools, parent.path()).unwrap();
    assert!(world.config().content.path.ends_with("content.elf"));
    let setup = EnvironmentSetup {
        episode_id: id("ep-0"),
        port_bindings: Vec::new(),
    };
    world.initialize(&setup).unwrap();
    assert_eq!(world.engine_frame().as_deref(), Some("120"));
    let inspection = world.inspection().unwrap();
    let values = inspection.value["values"].as_object().unwrap();
    assert_eq!(
        values.keys().map(String::as_str).collect::<Vec<_>>(),
        ["disc-word", "game-code"],
        "the generic watch list"
    );
    assert_eq!(
        world.descriptor().determinism,
        Determinism::Unverified,
        "content that may read the console clock is never fixed-build"
    );
    assert!(
        world.descriptor().views.is_empty() && world.frames().is_empty(),
        "a disc or program draws nothing into memory the Null renderer shows"
    );
    world
        .advance(&[
            control(&env.ports[0], &[], 0.0),
            control(&env.ports[1], &[], 0.0),
        ])
        .unwrap();
    assert_eq!(world.engine_frame().as_deref(), Some("121"));
    let pids = world.processes();
    drop(world);
    assert!(gone(&pids));
}
