//! The worker crate: the synthetic agent's determinism, mask and mutation counter, the counter
//! arena's frames, and the shell's refusals over a real bus.

use std::path::Path;

use flysim_arena::synthetic::SyntheticAgent;
use flysim_arena::world::{CounterArena, decode_frame};
use flysim_bus::{Client, ClientOptions, Router, RouterConfig};
use flysim_component::model::{AgentModel, ModelSetup, SensedInput};
use flysim_component::schemas::action_context;
use flysim_component::{EnvironmentBackend, EnvironmentSetup};
use flysim_types::plan::{LaunchPlan, ModelKind, PlanProfile};
use flysim_types::workers::{ButtonState, Method, PortControl, WorkerRole};
use flysim_types::{Id, TypedValue};
use flysim_worker::{Compute, WorkerConfig, WorkerShell};
use serde_json::{Value, json};

fn id(s: &str) -> Id {
    Id::parse(s).unwrap()
}

fn plan() -> LaunchPlan {
    let bytes = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/runs/synthetic-3/plan.json"),
    )
    .unwrap();
    flysim_types::parse_payload(&bytes).unwrap()
}

fn profile() -> PlanProfile {
    PlanProfile {
        id: id("p"),
        model: ModelKind::Synthetic,
        parameters: json!({"press-rate": 0.5}).as_object().unwrap().clone(),
        assets: Vec::new(),
    }
}

fn agent(seed: i32, threads: u32) -> SyntheticAgent {
    SyntheticAgent::new(&ModelSetup {
        agent_id: id("fly-a"),
        profile: profile(),
        seed,
        worker_threads: threads,
    })
    .unwrap()
}

fn context(actions: &[&str]) -> TypedValue {
    TypedValue {
        schema: action_context(),
        value: json!({ "availableActions": actions })
            .as_object()
            .unwrap()
            .clone(),
    }
}

fn empty() -> SensedInput {
    SensedInput {
        boundary: 0,
        views: Vec::new(),
        structured: None,
    }
}

fn decisions(model: &mut SyntheticAgent, ctx: &TypedValue, n: usize) -> Vec<String> {
    model.warm_up(&empty(), ctx).unwrap();
    (0..n)
        .map(|_| {
            let d = model.prepare(17, &[], ctx).unwrap();
            model.commit(&empty(), &[], &[]).unwrap();
            d.value["action"].as_str().unwrap().to_owned()
        })
        .collect()
}

#[test]
fn the_synthetic_agent_is_a_function_of_its_seed_not_of_its_threads() {
    let ctx = context(&["idle", "press"]);
    let a = decisions(&mut agent(7, 1), &ctx, 64);
    assert_eq!(a, decisions(&mut agent(7, 2), &ctx, 64));
    assert_ne!(a, decisions(&mut agent(8, 1), &ctx, 64));
    assert!(a.contains(&"press".to_owned()) && a.contains(&"idle".to_owned()));
}

/// One view of `pixels` at `boundary`, as the shell hands it to a model.
fn seen(boundary: u64, pixels: Vec<u8>) -> SensedInput {
    SensedInput {
        boundary,
        views: vec![flysim_component::model::SensedView {
            view_id: id("lcd"),
            produced_step: flysim_types::U64(boundary),
            pixels: Some(pixels),
        }],
        structured: None,
    }
}

#[test]
fn the_synthetic_agent_decides_from_its_rewards_never_its_frames() {
    let ctx = context(&["idle", "up", "down", "left", "right"]);
    // Frames of `shade`, and a reward of `bonus` committed at boundary 3.
    let run = |shade: u8, bonus: f64| {
        let mut model = agent(7, 1);
        model.warm_up(&seen(0, vec![shade; 640]), &ctx).unwrap();
        (1..=48u64)
            .map(|k| {
                let d = model.prepare(17, &[], &ctx).unwrap();
                let reward = flysim_types::workers::Reward {
                    event_id: id("ev-1"),
                    rule_id: id("rule-1"),
                    value: if k == 3 { bonus } else { 0.0 },
                };
                model
                    .commit(&seen(k, vec![shade ^ k as u8; 640]), &[], &[reward])
                    .unwrap();
                d.value["action"].as_str().unwrap().to_owned()
            })
            .collect::<Vec<_>>()
    };
    let base = run(0, 1.0);
    assert_eq!(base, run(0xff, 1.0), "the synthetic agent is blind");
    let rewarded = run(0, 2.5);
    assert_eq!(rewarded[..3], base[..3]);
    assert_ne!(rewarded, base, "a reward changes what the fly does next");
}

#[test]
fn the_context_masks_actions_and_the_counter_counts_every_mutation() {
    let mut model = agent(7, 1);
    assert!(
        decisions(&mut model, &context(&["idle"]), 20)
            .iter()
            .all(|d| d == "idle")
    );
    let counts = model.counts();
    // 10 warm-up ticks, then 20 prepares of 17 ticks; 4 draws per tick.
    assert_eq!(counts.ticks, 10 + 20 * 17);
    assert_eq!(counts.draws, 4 * counts.ticks);
    assert_eq!((counts.decodes, counts.commits), (20, 20));
    assert_eq!(model.work(), counts.total());
    let mut model = agent(7, 1);
    assert!(
        decisions(&mut model, &context(&["press"]), 20)
            .iter()
            .all(|d| d == "press")
    );
    // An empty mask and stimuli are refused.
    assert!(model.prepare(1, &[], &context(&[])).is_err());
}

#[test]
fn the_arena_carries_its_counters_in_the_pixels_of_a_fresh_frame() {
    let plan = plan();
    let mut arena =
        CounterArena::new(&plan.environment, flysim_types::digest::sha256(b"c")).unwrap();
    arena
        .initialize(&EnvironmentSetup {
            episode_id: id("ep-0"),
            port_bindings: Vec::new(),
        })
        .unwrap();
    let control = |port: &str, down: bool| PortControl {
        port_id: id(port),
        buttons: vec![ButtonState {
            id: id("press"),
            down,
        }],
        axes: Vec::new(),
    };
    for _ in 0..3 {
        arena
            .advance(&[control("p1", true), control("p2", false)])
            .unwrap();
    }
    let frames = arena.frames();
    assert_eq!(frames.len(), 1);
    assert_eq!(
        frames[0].bytes.len() as u64,
        arena.descriptor().views[0].frame_bytes()
    );
    assert_eq!(decode_frame(&frames[0].bytes), [3, -3]);
    assert_eq!(arena.counters(), [3, -3]);
    let inspection = arena.inspection().unwrap();
    assert_eq!(inspection.value["counters"][1]["value"], -3);
    assert_eq!(arena.engine_frame().as_deref(), Some("3"));
}

/// The shell over a real bus: identity is checked at Hello, phases before anything mutates.
#[test]
fn the_shell_refuses_a_wrong_identity_and_an_undeclared_phase() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let bus = TestBus::start();
        let connect = |name: &str| bus.connect(name);
        let plan = plan();
        let shell = WorkerShell::agent(
            WorkerConfig {
                worker_id: id("fly-a"),
                role: WorkerRole::Agent,
                incarnation: 1,
                worker_threads: 1,
                compute: Compute::Inline,
                faults: Default::default(),
            },
            plan.profiles[0].clone(),
            flysim_arena::synthetic::factory(),
        );
        let worker = connect("agent.fly-a").await;
        tokio::spawn(async move { shell.serve(worker).await });
        let client = connect("coordinator").await;
        let call = |method: Method, payload: Value| {
            let client = client.clone();
            async move {
                loop {
                    match client
                        .call("agent.fly-a", method.as_str(), payload.as_object().unwrap().clone(), &[], None, None)
                        .await
                    {
                        Ok(r) => return r.outcome,
                        Err(_) => tokio::time::sleep(std::time::Duration::from_millis(2)).await,
                    }
                }
            }
        };
        let hello = |req: u64, who: &str| {
            json!({"requestId": format!("req-{req}"), "scope": null, "params": {
                "sessionId": "s", "expectedWorkerId": who, "role": "agent", "supportedMajors": [1]}})
        };
        let wrong = call(Method::WorkerHello, hello(1, "fly-b")).await;
        assert_eq!(wrong["error"]["code"], "IDENTITY_MISMATCH");
        let right = call(Method::WorkerHello, hello(2, "fly-a")).await;
        assert_eq!(right["result"]["limits"]["workerThreads"], 1);
        assert_eq!(right["result"]["capabilities"][0], "agent-step-v1");
        let prepare = json!({"requestId": "req-3",
            "scope": {"sessionId": "s", "epoch": "e", "step": "0"},
            "params": {"agentId": "fly-a", "profileDigest": "0".repeat(64),
                "interval": {"numerator": "1000000", "denominator": "1"},
                "decisionContextDigest": "0".repeat(64), "preStepStimulations": []}});
        let early = call(Method::AgentPrepare, prepare).await;
        assert_eq!(early["error"]["code"], "INVALID_PHASE");
        assert_eq!(early["error"]["mutation"], "none");
        let capture = call(Method::StateCapture, json!({"requestId": "req-4",
            "scope": {"sessionId": "s", "epoch": "e", "step": "0"},
            "params": {"checkpointId": "ck-0"}})).await;
        assert_eq!(capture["error"]["code"], "INVALID_PHASE");
    });
}

/// Request ids increase per caller, so two clients of one worker use the same serials: the
/// coordinator's `Worker.Hello` `req-1` and a monitor's `Worker.Status` `req-1` are two
/// queries, each answered (and replayed to its own retry) with its own reply, never a
/// `CONFLICT` or the other caller's reply.
#[test]
fn two_callers_sending_the_same_serial_each_get_their_own_reply() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let bus = TestBus::start();
        let plan = plan();
        let shell = WorkerShell::agent(
            WorkerConfig {
                worker_id: id("fly-a"),
                role: WorkerRole::Agent,
                incarnation: 1,
                worker_threads: 1,
                compute: Compute::Inline,
                faults: Default::default(),
            },
            plan.profiles[0].clone(),
            flysim_arena::synthetic::factory(),
        );
        let worker = bus.connect("agent.fly-a").await;
        tokio::spawn(async move { shell.serve(worker).await });
        let coordinator = bus.connect("coordinator").await;
        let monitor = bus.connect("monitor").await;
        let call = |client: &Client, method: Method, payload: &Value| {
            let (client, payload) = (client.clone(), payload.as_object().unwrap().clone());
            async move {
                loop {
                    match client
                        .call(
                            "agent.fly-a",
                            method.as_str(),
                            payload.clone(),
                            &[],
                            None,
                            None,
                        )
                        .await
                    {
                        Ok(r) => return r.outcome,
                        Err(_) => tokio::time::sleep(std::time::Duration::from_millis(2)).await,
                    }
                }
            }
        };
        let hello = json!({"requestId": "req-1", "scope": null, "params": {
            "sessionId": "s", "expectedWorkerId": "fly-a", "role": "agent",
            "supportedMajors": [1]}});
        let status = json!({"requestId": "req-1", "scope": null, "params": {}});
        for round in ["first", "retry"] {
            let greeted = call(&coordinator, Method::WorkerHello, &hello).await;
            assert_eq!(greeted["requestId"], "req-1", "{round}: {greeted:?}");
            assert_eq!(
                greeted["result"]["workerId"], "fly-a",
                "{round}: {greeted:?}"
            );
            assert_eq!(greeted["result"]["limits"]["workerThreads"], 1, "{round}");
            let seen = call(&monitor, Method::WorkerStatus, &status).await;
            assert_eq!(seen["requestId"], "req-1", "{round}: {seen:?}");
            assert!(seen.get("error").is_none(), "{round}: {seen:?}");
            assert_eq!(
                seen["result"]["state"], "uninitialized",
                "{round}: {seen:?}"
            );
            assert!(seen["result"].get("limits").is_none(), "{round}: {seen:?}");
        }
    });
}

/// The local lane (contracts §3.11) reaches the same endpoint as the bus: a reply made on the
/// lane carries in-memory frames; the same request replayed over the bus gets sealed copies of
/// the same bytes, named by their own refs in the outcome, and the world does not move again; a
/// lane call pinned to another incarnation is `TARGET_CHANGED`, as on the bus.
#[test]
fn the_local_lane_and_the_bus_share_one_endpoint() {
    use flysim_rpc::{Outcome, RpcCaller};
    use flysim_types::workers::{
        EnvironmentInitializeResult, ResultOf, StatusParams, StatusResult,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let bus = TestBus::start();
        let plan = plan();
        let digest = flysim_types::digest::sha256(b"arena config");
        let arena = local_arena(&bus, &plan, digest).await;
        let LocalArena {
            coordinator,
            caller,
            ..
        } = &arena;
        assert!(caller.is_local());
        let request = initialize_request(caller, digest);
        let reply = caller.call(&request, &[], None).await.unwrap();
        assert!(reply.call.local);
        let Outcome::Success(success) = &reply.outcome else {
            panic!("{:?}", reply.outcome)
        };
        // The worker's own value: the lane carries it, no JSON in between.
        let result: EnvironmentInitializeResult = EnvironmentInitializeResult::of(&success.result)
            .expect("the result of Environment.Initialize")
            .clone();
        let view = &result.observation.sensory_views[0].pixels;
        let (_, frame) = &reply.attachments[0];
        assert!(frame.is_local());
        assert_eq!(frame.reference(), view);
        assert!(view.store_id.as_str().starts_with("local-"));
        let bytes = frame.read().await.unwrap();
        // The arena's view is small, so the environment seals it with its digest (a large one,
        // a Game Boy frame, goes without: the coordinator hashes it off the critical path).
        assert!(bytes.len() <= flysim_worker::shell::INLINE_DIGEST_BYTES);
        assert_eq!(view.digest, Some(flysim_types::digest::sha256(&bytes)));

        // The same request over the bus: a replay, with the frame promoted to a sealed copy.
        let replay = arena.replay(&request).await;
        assert_eq!(replay.outcome["type"], "result", "{:?}", replay.outcome);
        let replayed: EnvironmentInitializeResult =
            serde_json::from_value(replay.outcome["result"].clone()).unwrap();
        let sealed_view = &replayed.observation.sensory_views[0].pixels;
        let (_, sealed) = &replay.attachments[0];
        assert!(!sealed.is_local());
        assert_eq!(sealed.reference(), sealed_view);
        assert_ne!(sealed_view, view);
        assert_eq!(sealed_view.digest, view.digest);
        assert_eq!(sealed.read().await.unwrap(), bytes);
        let mut replayed_again = replayed.clone();
        replayed_again.observation.sensory_views[0].pixels = view.clone();
        assert_eq!(replayed_again, result, "only the ref differs");

        // Nothing ran twice: the lane's Status shows one completed mutation.
        let status = caller.prepare(None, StatusParams {}).unwrap();
        let Outcome::Success(s) = caller.call(&status, &[], None).await.unwrap().outcome else {
            panic!()
        };
        let status = StatusResult::of(&s.result).expect("a status");
        assert_eq!(status.progress_counter, flysim_types::U64(1), "{status:?}");

        let stale = RpcCaller::new(
            coordinator.clone(),
            &arena.service,
            Some("svc-0-1".into()),
            plan.environment.id.clone(),
            id("inc-1"),
            100,
        );
        let status = stale.prepare(None, StatusParams {}).unwrap();
        let e = stale.call(&status, &[], None).await.unwrap_err();
        assert!(
            matches!(&e, flysim_rpc::RpcError::Bus(b)
                if b.bus_code() == Some(flysim_bus::ErrorCode::TargetChanged)),
            "{e}"
        );
    });
}

/// `Environment.Advance` on the local lane answers with the very controls it applied (no digest
/// computed for it), written over the bus as their digest; controls canonical JSON cannot hold
/// are never sent.
#[test]
fn the_world_answers_an_advance_with_the_controls_it_applied() {
    use std::sync::Arc;

    use flysim_rpc::Outcome;
    use flysim_types::hashed::Hashed;
    use flysim_types::workers::{AdvanceParams, AppliedControls, AxisValue, ResultOf, StepResult};
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let bus = TestBus::start();
        let digest = flysim_types::digest::sha256(b"arena config");
        let arena = local_arena(&bus, &plan(), digest).await;
        let caller = &arena.caller;
        let reply = caller
            .call(&initialize_request(caller, digest), &[], None)
            .await
            .unwrap();
        assert!(matches!(reply.outcome, Outcome::Success(_)));
        let scope = flysim_types::Scope {
            session_id: id("s"),
            epoch: id("e"),
            step: flysim_types::U64(0),
        };
        let batch = |axes: Vec<AxisValue>| AdvanceParams {
            batch_id: id("batch-0"),
            controls: Arc::new(Hashed::new(
                ["p1", "p2"]
                    .iter()
                    .map(|port| PortControl {
                        port_id: id(port),
                        buttons: vec![ButtonState {
                            id: id("press"),
                            down: *port == "p1",
                        }],
                        axes: axes.clone(),
                    })
                    .collect(),
            )),
        };

        // An axis of 1e16 is finite (the params' own check) but an integer past 2^53, which
        // canonical JSON cannot hold: the caller refuses to send such controls.
        let refused = caller.prepare(
            Some(scope.clone()),
            batch(vec![AxisValue {
                id: id("x"),
                value: 1e16,
            }]),
        );
        assert!(
            matches!(&refused, Err(flysim_rpc::RpcError::Contract(e)) if e.to_string().contains("10000000000000000")),
            "{refused:?}"
        );

        let params = batch(Vec::new());
        let controls = Arc::clone(&params.controls);
        let request = caller.prepare(Some(scope), params).unwrap();
        let reply = caller.call(&request, &[], None).await.unwrap();
        assert!(reply.call.local);
        let Outcome::Success(success) = &reply.outcome else {
            panic!("{:?}", reply.outcome)
        };
        let result = StepResult::of(&success.result).expect("a step result");
        assert!(
            matches!(&result.applied_controls_digest, AppliedControls::Shared(c) if Arc::ptr_eq(c, &controls)),
            "{:?}",
            result.applied_controls_digest
        );
        assert!(result.applied_controls_digest.are(&controls).unwrap());
        // Over the bus the same reply carries the digest of the controls' canonical form.
        let expected = flysim_types::digest::payload_digest(&*controls).unwrap();
        let replay = arena.replay(&request).await;
        assert_eq!(replay.outcome["type"], "result", "{:?}", replay.outcome);
        assert_eq!(
            replay.outcome["result"]["appliedControlsDigest"],
            expected.to_string()
        );
    });
}

/// A counter arena that records the thread each initialization runs on.
struct Watched {
    inner: CounterArena,
    quick: bool,
    threads: std::sync::Arc<std::sync::Mutex<Vec<std::thread::ThreadId>>>,
}

impl EnvironmentBackend for Watched {
    fn descriptor(&self) -> &flysim_types::workers::EnvironmentDescriptor {
        self.inner.descriptor()
    }
    fn initialize(
        &mut self,
        setup: &EnvironmentSetup,
    ) -> Result<(), flysim_component::backend::BackendError> {
        self.threads
            .lock()
            .unwrap()
            .push(std::thread::current().id());
        self.inner.initialize(setup)
    }
    fn advance(&mut self, controls: &[PortControl]) -> Result<(), flysim_component::BackendError> {
        self.inner.advance(controls)
    }
    fn frames(&self) -> Vec<flysim_component::Frame> {
        self.inner.frames()
    }
    fn inspection(&self) -> Result<TypedValue, flysim_component::BackendError> {
        self.inner.inspection()
    }
    fn quick(&self) -> bool {
        self.quick
    }
}

/// A worker that computes on the blocking pool still computes a quick backend on the task that
/// serves the request (no hand-off to another thread and back), and a slow one off it.
#[test]
fn a_quick_backend_computes_on_the_serving_thread_and_a_slow_one_off_it() {
    use std::sync::{Arc, Mutex};

    use flysim_rpc::Outcome;
    for quick in [true, false] {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let threads = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&threads);
        runtime.block_on(async move {
            let bus = TestBus::start();
            let connect = |name: &str| bus.connect(name);
            let plan = plan();
            let digest = flysim_types::digest::sha256(b"arena config");
            let arena = Watched {
                inner: CounterArena::new(&plan.environment, digest).unwrap(),
                quick,
                threads: seen,
            };
            let shell = environment_shell(&plan, Box::new(arena), digest, Compute::Blocking);
            let service = format!("environment.{}", plan.environment.id);
            let coordinator = connect("coordinator").await;
            let worker = connect(&service).await;
            tokio::spawn(async move { shell.serve(worker).await });
            let (_, caller) = environment_caller(&coordinator, &service, &plan).await;
            assert!(!caller.is_local(), "over the bus");
            let request = initialize_request(&caller, digest);
            let reply = caller.call(&request, &[], None).await.unwrap();
            assert!(
                matches!(reply.outcome, Outcome::Success(_)),
                "{:?}",
                reply.outcome
            );
        });
        let here = std::thread::current().id();
        let threads = threads.lock().unwrap();
        assert_eq!(threads.len(), 1, "initialized once");
        assert_eq!(
            threads[0] == here,
            quick,
            "quick={quick}: ran on {:?}",
            threads[0]
        );
    }
}

/// A router on a private store, with in-memory clients.
struct TestBus {
    tmp: tempfile::TempDir,
    router: Router,
}

impl TestBus {
    fn start() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let router = Router::start(RouterConfig::new(tmp.path().join("store"))).unwrap();
        Self { tmp, router }
    }

    /// Connects a client named `name`.
    fn connect(&self, name: &str) -> impl std::future::Future<Output = Client> + use<> {
        let stream = self.router.connect_in_memory(64 * 1024);
        let options = ClientOptions {
            client_id: id(name),
            incarnation: 1,
            store_root: self.tmp.path().join("store"),
        };
        async move { Client::connect(stream, options).await.unwrap() }
    }
}

/// The plan's counter arena served on `bus`, offered on the coordinator's local lane, and a
/// caller pinned to it.
struct LocalArena {
    coordinator: Client,
    service: String,
    incarnation: String,
    caller: flysim_rpc::RpcCaller,
}

/// Serves the plan's counter arena (configurations named by `digest`) and says Hello to it over
/// the bus, which gives the incarnation to pin.
async fn local_arena(bus: &TestBus, plan: &LaunchPlan, digest: flysim_types::Digest) -> LocalArena {
    let arena = CounterArena::new(&plan.environment, digest).unwrap();
    let shell = environment_shell(plan, Box::new(arena), digest, Compute::Inline);
    let service = format!("environment.{}", plan.environment.id);
    let coordinator = bus.connect("coordinator").await;
    flysim_rpc::local::offer(
        &coordinator,
        &service,
        std::sync::Arc::new(shell.local_lane()),
    );
    let worker = bus.connect(&service).await;
    tokio::spawn(async move { shell.serve(worker).await });
    let (incarnation, caller) = environment_caller(&coordinator, &service, plan).await;
    LocalArena {
        coordinator,
        service,
        incarnation,
        caller,
    }
}

impl LocalArena {
    /// `request` sent again over the bus, not the lane: a replay of the same request.
    async fn replay(&self, request: &flysim_rpc::PreparedRequest) -> flysim_bus::CallResult {
        self.coordinator
            .call(
                &self.service,
                request.method().as_str(),
                request.body().unwrap().to_map(),
                &[],
                Some(&self.incarnation),
                None,
            )
            .await
            .unwrap()
    }
}

/// The shell of the plan's environment around `backend`.
fn environment_shell(
    plan: &LaunchPlan,
    backend: Box<dyn EnvironmentBackend>,
    digest: flysim_types::Digest,
    compute: Compute,
) -> WorkerShell {
    WorkerShell::environment(
        WorkerConfig {
            worker_id: plan.environment.id.clone(),
            role: WorkerRole::Environment,
            incarnation: 1,
            worker_threads: 1,
            compute,
            faults: Default::default(),
        },
        backend,
        digest,
    )
}

/// A caller of the environment's service pinned to the incarnation its Hello returned, and that
/// incarnation.
async fn environment_caller(
    coordinator: &Client,
    service: &str,
    plan: &LaunchPlan,
) -> (String, flysim_rpc::RpcCaller) {
    let incarnation = hello_environment(coordinator, service, plan).await;
    let caller = flysim_rpc::RpcCaller::new(
        coordinator.clone(),
        service,
        Some(incarnation.clone()),
        plan.environment.id.clone(),
        id("inc-1"),
        1,
    );
    (incarnation, caller)
}

/// `Worker.Hello` to the environment over the bus, retried until its service is up; returns the
/// service incarnation to pin.
async fn hello_environment(coordinator: &Client, service: &str, plan: &LaunchPlan) -> String {
    let hello = json!({"requestId": "req-1", "scope": null, "params": {
        "sessionId": "s", "expectedWorkerId": plan.environment.id, "role": "environment",
        "supportedMajors": [1]}});
    loop {
        let params = hello.as_object().unwrap().clone();
        match coordinator
            .call(
                service,
                Method::WorkerHello.as_str(),
                params,
                &[],
                None,
                None,
            )
            .await
        {
            Ok(r) => return r.service_incarnation,
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(2)).await,
        }
    }
}

/// `Environment.Initialize` at step 0 with both configurations named by `digest` and port `p1`
/// bound to `fly-a`.
fn initialize_request(
    caller: &flysim_rpc::RpcCaller,
    digest: flysim_types::Digest,
) -> flysim_rpc::PreparedRequest {
    use flysim_types::workers::{AssetRef, EnvironmentInitializeParams, PortBinding};
    let asset = |d| AssetRef {
        id: id("cfg"),
        digest: d,
        byte_length: flysim_types::U64(1),
        format: id("json"),
    };
    let params = EnvironmentInitializeParams {
        backend_config: asset(digest),
        task_config: asset(digest),
        episode_id: id("ep-0"),
        port_bindings: vec![PortBinding {
            port_id: id("p1"),
            agent_id: id("fly-a"),
        }],
    };
    let scope = flysim_types::Scope {
        session_id: id("s"),
        epoch: id("e"),
        step: flysim_types::U64(0),
    };
    caller.prepare(Some(scope), params).unwrap()
}
