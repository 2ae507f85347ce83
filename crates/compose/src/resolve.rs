//! The resolver: checks what a decoded composition means and builds its launch plan.
//!
//! Every check runs and every refusal is collected; the plan is built only when there is none.
//! The resolver reads asset files (a path pinned by sha256, or the registry) and nothing else:
//! no environment variable, clock or machine property reaches the plan.

use flysim_types::plan::{
    self, AxisDecl, Backend, ControllerSchema, LaunchPlan, PlanAgent, PlanAsset, PlanEnvironment,
    PlanPort, PlanProfile, PlanRun, RunMode, SeedSource, SourceFile, Transport,
};
use flysim_types::{Digest, Id, SchemaRef, U64, seed};
use miette::SourceSpan;

use crate::DEFAULT_MAX_THREADS;
use crate::assets::{AssetRegistry, hash_file};
use crate::diag::{Diag, Problem, Src};
use crate::model::{AssetDecl, Composition, Environment, IdentityKind, Span, Spanned};
use crate::text::{join_lexical, suggest};

/// The arena worlds this build knows.
pub const ARENA_WORLDS: &[&str] = &["counter-v1"];
/// The Game Boy joypad's buttons; a binjgb port may use any of them, and no axis.
pub const GAME_BOY_BUTTONS: &[&str] = &["right", "left", "up", "down", "a", "b", "select", "start"];
/// Words that name a moving target rather than a pin.
const FLOATING: &[&str] = &[
    "latest", "stable", "nightly", "beta", "head", "main", "master", "dev", "current", "newest",
    "trunk", "*",
];

/// Whether a value names a moving target (`latest`, a branch name, ...).
fn floating(value: &str) -> bool {
    FLOATING.contains(&value.to_ascii_lowercase().as_str())
}

struct Resolver<'c> {
    comp: &'c Composition,
    diags: Vec<Diag>,
}

impl Resolver<'_> {
    fn src(&self, span: Span) -> Src {
        self.comp.sources[span.file].src.clone()
    }

    fn push(&mut self, span: Span, problem: Problem) {
        self.diags.push(Diag::new(span.file, problem));
    }

    /// `first`'s bytes when it is in the same file as `at` (a label can only point into one file).
    fn first(first: Span, at: Span) -> Option<SourceSpan> {
        (first.file == at.file).then_some(first.at)
    }

    /// Refuses repeated ids among `items`, reporting each repetition.
    fn unique<'a>(&mut self, kind: &'static str, items: impl Iterator<Item = &'a Spanned<Id>>) {
        let mut seen: Vec<&Spanned<Id>> = Vec::new();
        for item in items {
            if let Some(first) = seen.iter().find(|s| s.value == item.value) {
                let problem = Problem::Duplicate {
                    src: self.src(item.span),
                    kind,
                    id: item.value.to_string(),
                    at: item.span.at,
                    first: Self::first(first.span, item.span),
                };
                self.push(item.span, problem);
            } else {
                seen.push(item);
            }
        }
    }
}

/// Resolves a decoded composition (decoded without any error) into a sealed launch plan.
pub(crate) fn resolve(
    comp: &Composition,
    registry: Option<&AssetRegistry>,
) -> Result<LaunchPlan, Vec<Diag>> {
    let mut r = Resolver {
        comp,
        diags: Vec::new(),
    };
    let built = build(&mut r, registry);
    let mut diags = r.diags;
    match built {
        Some(plan) if diags.is_empty() => Ok(plan),
        _ => {
            crate::diag::sort(&mut diags);
            Err(diags)
        }
    }
}

#[expect(
    clippy::too_many_lines,
    reason = "one linear pass over the checks, in the order a reader meets them"
)]
fn build(r: &mut Resolver<'_>, registry: Option<&AssetRegistry>) -> Option<LaunchPlan> {
    let comp = r.comp;

    // Seed derivation and master seed.
    let derivation = comp.seed_derivation.as_ref()?;
    if floating(&derivation.value) {
        let problem = Problem::Unpinned {
            src: r.src(derivation.span),
            what: "`seed-derivation`".to_owned(),
            reason: format!("{:?} names no algorithm", derivation.value),
            at: derivation.span.at,
            help: Some("write `seed-derivation \"seed-derivation-v1\"`".to_owned()),
        };
        r.push(derivation.span, problem);
    } else if derivation.value != seed::ALGORITHM {
        let problem = Problem::UnknownSeedDerivation {
            src: r.src(derivation.span),
            found: derivation.value.clone(),
            at: derivation.span.at,
        };
        r.push(derivation.span, problem);
    }
    let master = comp.master_seed.as_ref()?;
    let master_seed = match U64::parse(&master.value) {
        Ok(v) => Some(v),
        Err(e) => {
            let problem = Problem::BadValue {
                src: r.src(master.span),
                what: "`master-seed`".to_owned(),
                reason: e.to_string(),
                at: master.span.at,
                help: Some(
                    "the master seed is hashed as written, so it has one spelling: decimal digits, no sign, no leading zero, at most 18446744073709551615"
                        .to_owned(),
                ),
            };
            r.push(master.span, problem);
            None
        }
    };
    let explicit = comp.explicit_seeds.as_ref().is_some_and(|e| e.value);

    // Declarations: unique ids.
    r.unique("profile", comp.profiles.iter().map(|p| &p.id));
    let mut asset_decls: Vec<&AssetDecl> = comp.profiles.iter().flat_map(|p| &p.assets).collect();
    let env = comp.environments.first()?;
    for extra in comp.environments.iter().skip(1) {
        let problem = Problem::SecondEnvironment {
            src: r.src(extra.id.span),
            id: extra.id.value.to_string(),
            at: extra.id.span.at,
            first: Resolver::first(env.id.span, extra.id.span),
        };
        r.push(extra.id.span, problem);
    }
    asset_decls.extend(env.content.iter());
    r.unique("asset", asset_decls.iter().map(|a| &a.id));
    r.unique("port", env.ports.iter().map(|p| &p.id));

    // Agents: unique ids (FS0130), count, references, bindings, seeds, threads.
    let mut agent_ids: Vec<&Spanned<Id>> = Vec::new();
    for agent in &comp.agents {
        if let Some(first) = agent_ids.iter().find(|a| a.value == agent.id.value) {
            let problem = Problem::RepeatedAgent {
                src: r.src(agent.id.span),
                id: agent.id.value.to_string(),
                at: agent.id.span.at,
                first: Resolver::first(first.span, agent.id.span),
            };
            r.push(agent.id.span, problem);
        } else {
            agent_ids.push(&agent.id);
        }
    }
    for (i, agent) in comp
        .agents
        .iter()
        .enumerate()
        .skip(flysim_types::limits::MAX_AGENTS)
    {
        let problem = Problem::TooManyAgents {
            src: r.src(agent.id.span),
            count: i + 1,
            limit: flysim_types::limits::MAX_AGENTS,
            at: agent.id.span.at,
        };
        r.push(agent.id.span, problem);
    }
    for (i, port) in env
        .ports
        .iter()
        .enumerate()
        .skip(flysim_types::limits::MAX_PORTS)
    {
        let problem = Problem::TooManyPorts {
            src: r.src(port.id.span),
            count: i + 1,
            limit: flysim_types::limits::MAX_PORTS,
            at: port.id.span.at,
        };
        r.push(port.id.span, problem);
    }
    let profile_ids: Vec<&str> = comp.profiles.iter().map(|p| p.id.value.as_str()).collect();
    let port_ids: Vec<&str> = env.ports.iter().map(|p| p.id.value.as_str()).collect();
    let mut bound: Vec<(&Spanned<Id>, &Spanned<Id>)> = Vec::new();
    // Agents over the limit are already refused; their bindings are not checked further.
    for agent in comp.agents.iter().take(flysim_types::limits::MAX_AGENTS) {
        for (kind, reference, declared) in [
            ("profile", &agent.profile, &profile_ids),
            ("port", &agent.port, &port_ids),
        ] {
            if !declared.contains(&reference.value.as_str()) {
                let list = if declared.is_empty() {
                    format!("no {kind} is declared")
                } else {
                    format!(
                        "declared: {}",
                        declared
                            .iter()
                            .map(|d| format!("`{d}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                };
                let help = match suggest(reference.value.as_str(), declared.iter().copied()) {
                    Some(s) => format!("did you mean `{s}`? {list}"),
                    None => list,
                };
                let problem = Problem::UnknownReference {
                    src: r.src(reference.span),
                    kind,
                    id: reference.value.to_string(),
                    at: reference.span.at,
                    help: Some(help),
                };
                r.push(reference.span, problem);
            }
        }
        if let Some((first, _)) = bound.iter().find(|(p, _)| p.value == agent.port.value) {
            let problem = Problem::PortBoundTwice {
                src: r.src(agent.port.span),
                port: agent.port.value.to_string(),
                agent: agent.id.value.to_string(),
                at: agent.port.span.at,
                first: Resolver::first(first.span, agent.port.span),
            };
            r.push(agent.port.span, problem);
        } else {
            bound.push((&agent.port, &agent.id));
        }
        match (&agent.seed, explicit) {
            (Some(seed), false) => {
                let problem = Problem::SeedWithoutOptIn {
                    src: r.src(seed.span),
                    agent: agent.id.value.to_string(),
                    at: seed.span.at,
                };
                r.push(seed.span, problem);
            }
            (None, true) => {
                let problem = Problem::SeedMissing {
                    src: r.src(agent.id.span),
                    agent: agent.id.value.to_string(),
                    at: agent.id.span.at,
                };
                r.push(agent.id.span, problem);
            }
            _ => {}
        }
    }
    for port in env.ports.iter().take(flysim_types::limits::MAX_PORTS) {
        if !bound.iter().any(|(p, _)| p.value == port.id.value) {
            let problem = Problem::PortUnbound {
                src: r.src(port.id.span),
                port: port.id.value.to_string(),
                at: port.id.span.at,
            };
            r.push(port.id.span, problem);
        }
    }
    let run = comp.run.as_ref()?;
    let budget = run
        .max_threads
        .as_ref()
        .map_or(DEFAULT_MAX_THREADS, |m| m.value);
    let mut total: u64 = 0;
    let mut over = false;
    for agent in &comp.agents {
        let threads = agent.threads.as_ref().map_or(1, |t| t.value);
        total += u64::from(threads);
        if total > u64::from(budget) && !over {
            over = true;
            let at = agent.threads.as_ref().map_or(agent.id.span, |t| t.span);
            let whence = if run.max_threads.is_some() {
                "the run's `max-threads`"
            } else {
                "the default budget (no `max-threads` in `run`)"
            };
            let problem = Problem::ThreadBudget {
                src: r.src(at),
                total: comp
                    .agents
                    .iter()
                    .map(|a| u64::from(a.threads.as_ref().map_or(1, |t| t.value)))
                    .sum(),
                budget,
                at: at.at,
                help: Some(format!(
                    "the agents' threads add up to at most {budget}, {whence}; lower `threads` or raise `max-threads` in `run` (the budget is part of the plan, never read from the machine)"
                )),
            };
            r.push(at, problem);
        }
    }

    // The run's mode and transport.
    if let (Some(mode), Some(transport)) = (&run.mode, &run.transport)
        && mode.value == RunMode::Process
        && transport.value == Transport::Memory
        && mode.span.file == transport.span.file
    {
        let problem = Problem::ModeTransport {
            src: r.src(transport.span),
            at: transport.span.at,
            mode: mode.span.at,
        };
        r.push(transport.span, problem);
    }

    // The environment: backend, identity, content, ports.
    let environment = environment(r, env);

    // Task and executor must be pins.
    for (what, value) in [("the task", &comp.task), ("the executor", &comp.executor)] {
        if let Some(v) = value
            && floating(v.value.as_str())
        {
            let problem = Problem::Unpinned {
                src: r.src(v.span),
                what: what.to_owned(),
                reason: format!("`{}` names a moving target", v.value),
                at: v.span.at,
                help: Some("name a versioned identity, e.g. `counter-v1`".to_owned()),
            };
            r.push(v.span, problem);
        }
    }

    // Assets.
    let mut assets = Vec::new();
    for decl in &asset_decls {
        if let Some(a) = asset(r, decl, registry) {
            assets.push(a);
        }
    }
    assets.sort_by(|a, b| a.id.cmp(&b.id));

    // Seeds.
    let master_seed = master_seed?;
    let mut agents = Vec::new();
    for agent in &comp.agents {
        let (seed, source, material, material_digest) = match &agent.seed {
            Some(s) => (s.value, SeedSource::Explicit, None, None),
            None => match seed::derive(master_seed, &agent.id.value) {
                Ok(d) => (
                    d.seed,
                    SeedSource::Derived,
                    Some(d.material),
                    Some(d.material_digest),
                ),
                Err(_) => {
                    let problem = Problem::SeedExhausted {
                        src: r.src(agent.id.span),
                        agent: agent.id.value.to_string(),
                        at: agent.id.span.at,
                    };
                    r.push(agent.id.span, problem);
                    continue;
                }
            },
        };
        agents.push(PlanAgent {
            agent_id: agent.id.value.clone(),
            profile: agent.profile.value.clone(),
            port: agent.port.value.clone(),
            threads: agent.threads.as_ref().map_or(1, |t| t.value),
            seed,
            seed_source: source,
            material,
            material_digest,
        });
    }
    if !r.diags.is_empty() {
        return None;
    }
    // seed-derivation-v1 refuses repeated ids itself; the check above has already named them.
    let ids: Vec<Id> = agents.iter().map(|a| a.agent_id.clone()).collect();
    seed::derive_all(master_seed, &ids).ok()?;
    agents.sort_by(|a, b| a.agent_id.cmp(&b.agent_id));

    let mut profiles: Vec<PlanProfile> = comp
        .profiles
        .iter()
        .map(|p| PlanProfile {
            id: p.id.value.clone(),
            model: p.model.value,
            parameters: p
                .parameters
                .iter()
                .map(|(k, v)| (k.value.clone(), v.value.clone()))
                .collect(),
            assets: p.assets.iter().map(|a| a.id.value.clone()).collect(),
        })
        .collect();
    profiles.sort_by(|a, b| a.id.cmp(&b.id));
    let sources: Vec<SourceFile> = comp
        .sources
        .iter()
        .map(|s| SourceFile {
            path: s.rel.clone(),
            sha256: s.sha256,
        })
        .collect();
    let seal = |e: flysim_types::ContractError| e.to_string();
    let plan = LaunchPlan {
        format_version: plan::FORMAT_VERSION,
        plan_digest: Digest::from_bytes([0; 32]),
        composition_digest: plan::composition_digest(&sources).ok()?,
        contract_digest: flysim_types::schema::contract_digest(),
        name: comp.name.as_ref()?.value.clone(),
        description: comp
            .description
            .as_ref()
            .map(|d| d.value.clone())
            .unwrap_or_default(),
        sources,
        seed_derivation: Id::parse(seed::ALGORITHM).ok()?,
        master_seed,
        explicit_seeds: explicit,
        assets,
        profiles,
        environment: environment?,
        agents,
        task: comp.task.as_ref()?.value.clone(),
        executor: comp.executor.as_ref()?.value.clone(),
        run: PlanRun {
            steps: U64(run.steps.value),
            mode: run.mode.as_ref().map_or(RunMode::InProcess, |m| m.value),
            transport: run
                .transport
                .as_ref()
                .map_or(Transport::Memory, |t| t.value),
            checkpoint_every: run.checkpoint_every.as_ref().map(|c| U64(c.value)),
            max_threads: budget,
        },
    };
    plan.seal().map_err(seal).ok()
}

/// Checks the environment against its backend and builds its plan entry.
fn environment(r: &mut Resolver<'_>, env: &Environment) -> Option<PlanEnvironment> {
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
        ports.push(PlanPort {
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
        });
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

/// Finds an asset's bytes (at its pinned path, or in the registry) and checks its digest.
fn asset(
    r: &mut Resolver<'_>,
    decl: &AssetDecl,
    registry: Option<&AssetRegistry>,
) -> Option<PlanAsset> {
    let id = &decl.id;
    let source = &r.comp.sources[id.span.file];
    let missing = |reason: String, help: &str| Problem::MissingAsset {
        src: source.src.clone(),
        id: id.value.to_string(),
        reason,
        at: id.span.at,
        help: Some(help.to_owned()),
    };
    let (digest, len, format, path) = if let Some(path) = &decl.path {
        if path.value.starts_with('/') || std::path::Path::new(&path.value).is_absolute() {
            let problem = Problem::AbsoluteAssetPath {
                src: r.src(path.span),
                path: path.value.clone(),
                at: path.span.at,
            };
            r.push(path.span, problem);
            return None;
        }
        let file = source.dir.join(&path.value);
        let (digest, len) = match hash_file(&file) {
            Ok(v) => v,
            Err(e) => {
                let problem = missing(
                    format!("cannot read {:?}: {e}", path.value),
                    "the path is relative to the file that declares the asset; put the file there, or add it to the registry with `flysim assets add` and drop `path`",
                );
                r.push(id.span, problem);
                return None;
            }
        };
        let Some(pin) = &decl.sha256 else {
            let problem = Problem::Unpinned {
                src: r.src(path.span),
                what: format!("asset `{}`", id.value),
                reason: "a path without `sha256` names whatever bytes are there".to_owned(),
                at: path.span.at,
                help: Some(format!("pin the bytes found there: sha256=\"{digest}\"")),
            };
            r.push(path.span, problem);
            return None;
        };
        let (rel, _) = join_lexical(
            source.rel.rsplit_once('/').map_or("", |(d, _)| d),
            &path.value,
        );
        (check_pin(r, decl, pin, digest)?, len, None, Some(rel))
    } else {
        let Some(registry) = registry else {
            let problem = missing(
                "no asset registry is available".to_owned(),
                "name the file with path=\"...\" sha256=\"...\", or set FLYSIM_HOME (or HOME) so flysim can find its registry",
            );
            r.push(id.span, problem);
            return None;
        };
        let record = match registry.get(&id.value) {
            Ok(Some(record)) => record,
            Ok(None) => {
                let problem = missing(
                    "the registry has no asset with this id".to_owned(),
                    "add it with `flysim assets add FILE --id <id>` (nothing is ever downloaded), or name it with path=\"...\" sha256=\"...\"",
                );
                r.push(id.span, problem);
                return None;
            }
            Err(e) => {
                let problem = missing(e.to_string(), "run `flysim assets verify`");
                r.push(id.span, problem);
                return None;
            }
        };
        let blob_ok = std::fs::metadata(registry.blob_path(&record.digest))
            .is_ok_and(|m| m.len() == record.byte_length.get());
        if !blob_ok {
            let problem = missing(
                "the registry names it but its bytes are gone".to_owned(),
                "run `flysim assets verify`, then add the file again",
            );
            r.push(id.span, problem);
            return None;
        }
        let digest = match &decl.sha256 {
            Some(pin) => check_pin(r, decl, pin, record.digest)?,
            None => record.digest,
        };
        (digest, record.byte_length.get(), Some(record.format), None)
    };
    let format = decl
        .format
        .as_ref()
        .map(|f| f.value.clone())
        .or(format)
        .or_else(|| Id::parse("bin").ok())?;
    Some(PlanAsset {
        id: id.value.clone(),
        digest,
        byte_length: U64(len),
        format,
        path,
    })
}

fn check_pin(
    r: &mut Resolver<'_>,
    decl: &AssetDecl,
    pin: &Spanned<Digest>,
    actual: Digest,
) -> Option<Digest> {
    if pin.value == actual {
        return Some(actual);
    }
    let problem = Problem::DigestMismatch {
        src: r.src(pin.span),
        id: decl.id.value.to_string(),
        actual: actual.hex(),
        at: pin.span.at,
    };
    r.push(pin.span, problem);
    None
}
