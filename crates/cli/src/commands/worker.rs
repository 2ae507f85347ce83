//! `flysim worker agent|environment ...`: one worker process of a process-mode run (hidden;
//! the launcher starts it with a cleared environment).

use std::path::PathBuf;

use flysim_session::launcher::{WorkerProcess, parse_stall, serve_worker_process};
use flysim_types::Id;
use flysim_types::workers::WorkerRole;
use flysim_worker::WorkerFaults;
use flysim_worker::faults::FaultPoint;

use crate::error::CliError;

/// The role of the worker process.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum Role {
    /// An agent worker.
    Agent,
    /// The environment worker.
    Environment,
}

/// Arguments of `flysim worker`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The worker's role
    #[arg(value_enum)]
    role: Role,
    /// The plan file the launcher wrote
    #[arg(long)]
    plan: PathBuf,
    /// The worker's id in the plan
    #[arg(long, value_parser = |s: &str| Id::parse(s).map_err(|e| e.to_string()))]
    worker_id: Id,
    /// The router's Unix socket
    #[arg(long)]
    socket: PathBuf,
    /// The artifact store root shared with the router
    #[arg(long)]
    store_root: PathBuf,
    /// The bus client incarnation
    #[arg(long)]
    incarnation: u64,
    /// The thread allocation
    #[arg(long, default_value_t = 1)]
    threads: u32,
    /// Test fault: METHOD@STEP:MILLIS, sleep before executing it
    #[arg(long, value_parser = parse_stall)]
    stall: Option<(FaultPoint, std::time::Duration)>,
    /// Test fault: METHOD@STEP, answer it with INTERNAL
    #[arg(long, value_parser = FaultPoint::parse)]
    fail: Option<FaultPoint>,
    /// Test fault: METHOD@STEP, restart with a new incarnation after it
    #[arg(long, value_parser = FaultPoint::parse)]
    restart_after: Option<FaultPoint>,
}

pub(crate) fn run(args: &Args) -> Result<String, CliError> {
    let process = WorkerProcess {
        role: match args.role {
            Role::Agent => WorkerRole::Agent,
            Role::Environment => WorkerRole::Environment,
        },
        plan: args.plan.clone(),
        worker_id: args.worker_id.clone(),
        socket: args.socket.clone(),
        store_root: args.store_root.clone(),
        incarnation: args.incarnation,
        threads: args.threads,
        faults: WorkerFaults {
            stall: args.stall.clone(),
            fail: args.fail.clone(),
            restart_after: args.restart_after.clone(),
            ..WorkerFaults::default()
        },
    };
    // A worker process has a cleared environment and no composition directory: its content
    // (ROMs, brain profiles, connectomes) is what the launcher wrote beside its plan, by digest.
    let plan_text = super::read_input(&args.plan)?;
    let registry =
        match flysim_types::payload::parse_payload::<flysim_types::plan::LaunchPlan>(&plan_text) {
            Ok(plan) => flysim_run::components::registry(
                &plan,
                &flysim_run::ContentSource::beside_plan(&args.plan),
                &crate::host::host(),
            ),
            Err(_) => flysim_run::components::arena_registry(),
        };
    serve_worker_process(&process, &registry).map_err(CliError::session)?;
    Ok(String::new())
}
