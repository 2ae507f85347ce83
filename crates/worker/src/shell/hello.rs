//! Who the worker is and whom it serves: `Worker.Hello` (identity, role, contract, limits; the
//! first binds the session), `Worker.Status`, and the session and epoch every mutation's scope is
//! checked against.
//!
//! It knows the worker's identity and the bound session; the step a scope names is checked
//! against the phase in `machine`.

use std::sync::atomic::Ordering;

use flysim_rpc::RpcRequest;
use flysim_types::workers::{
    CONTRACT_MAJOR, CONTRACT_MINOR, DomainError, DomainErrorCode, HelloParams, HelloResult,
    Results, StatusResult, WorkerLimits,
};
use flysim_types::{Scope, U64};

use super::dispatch::Worker;
use super::errors::refuse;
use super::lock;
use super::params;
use crate::identity::{build_digest, capabilities};

impl Worker {
    /// `Worker.Status`: the status, its progress counter moved by completed mutations and work.
    pub(super) fn status_now(&self) -> StatusResult {
        let mut status = lock(&self.status).clone();
        status.progress_counter =
            U64(self.completed.load(Ordering::SeqCst) + self.work.load(Ordering::SeqCst));
        status
    }

    /// `Worker.Hello`: checks identity, role and contract major, binds the session.
    pub(super) fn hello(&self, r: &RpcRequest) -> Result<Results, DomainError> {
        let params = params::of::<HelloParams>(&r.params)?;
        if params.expected_worker_id != self.config.worker_id {
            return Err(refuse(
                DomainErrorCode::IdentityMismatch,
                format!(
                    "this is worker `{}`, not `{}`",
                    self.config.worker_id, params.expected_worker_id
                ),
            ));
        }
        if params.role != self.config.role {
            return Err(refuse(
                DomainErrorCode::IdentityMismatch,
                format!("this worker's role is {:?}", self.config.role),
            ));
        }
        if !params.supported_majors.contains(&CONTRACT_MAJOR) {
            return Err(refuse(
                DomainErrorCode::Unsupported,
                format!("no common contract major; this worker speaks {CONTRACT_MAJOR}"),
            ));
        }
        {
            let mut session = lock(&self.session);
            match &*session {
                Some(s) if *s != params.session_id => {
                    return Err(refuse(
                        DomainErrorCode::IdentityMismatch,
                        format!("this worker serves session `{s}`"),
                    ));
                }
                _ => *session = Some(params.session_id.clone()),
            }
        }
        Ok(Results::from(HelloResult {
            selected_major: CONTRACT_MAJOR,
            selected_minor: CONTRACT_MINOR,
            worker_id: self.config.worker_id.clone(),
            incarnation_id: self.incarnation_id(),
            role: self.config.role,
            build_digest: build_digest(),
            contract_digest: flysim_types::schema::contract_digest(),
            capabilities: capabilities(self.config.role),
            limits: WorkerLimits {
                max_agents: 1,
                max_ports: 4,
                worker_threads: self.config.worker_threads,
            },
        }))
    }

    /// Checks the scope's session and epoch against the worker's.
    pub(super) fn check_scope(
        &self,
        scope: Option<&Scope>,
        initialize: bool,
    ) -> Result<Scope, DomainError> {
        let scope = scope
            .cloned()
            .ok_or_else(|| refuse(DomainErrorCode::InvalidArgument, "a scope is required"))?;
        {
            let mut session = lock(&self.session);
            match &*session {
                Some(s) if *s != scope.session_id => {
                    return Err(refuse(
                        DomainErrorCode::IdentityMismatch,
                        format!("this worker serves session `{s}`"),
                    ));
                }
                _ => *session = Some(scope.session_id.clone()),
            }
        }
        if !initialize {
            let machine = lock(&self.machine);
            if let Some(epoch) = &machine.epoch
                && *epoch != scope.epoch
            {
                return Err(refuse(
                    DomainErrorCode::StaleEpoch,
                    format!(
                        "epoch `{}` is not the worker's epoch `{epoch}`",
                        scope.epoch
                    ),
                ));
            }
        }
        Ok(scope)
    }
}
