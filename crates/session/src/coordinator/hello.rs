//! Hello and the identity checks: each worker is greeted (waiting for its service to register),
//! must be the worker, role, build and contract the session expects, and must be fresh; the
//! environment's descriptor must be the plan's.
//!
//! It knows nothing of initialisation or steps: it answers only whether a worker may take part.

use flysim_types::workers::{
    EnvironmentDescriptor, HelloParams, HelloResult, Method, Params, SessionRpcSuccess,
    StatusParams, StatusResult, WorkerRole, WorkerState,
};
use std::time::Duration;

use flysim_bus::{CallResult, ErrorCode};
use flysim_rpc::RpcCaller;
use flysim_types::payload::{SessionRpcRequest, from_value};
use flysim_types::{DomainRequestId, Id, Payload};
use flysim_worker::identity::{build_digest, service_name};
use serde_json::Value;
use tokio::time::Instant;

use super::call::Reply;
use super::{Coordinator, Participant};
use crate::error::SessionError;

/// How long to wait before asking again for a service not registered yet.
const HELLO_RETRY: Duration = Duration::from_millis(2);

impl Coordinator {
    /// Says Hello to a worker's service, waiting for it to register, and checks its identity
    /// and health (`Worker.Status` must say `uninitialized`).
    pub(super) async fn hello(
        &self,
        role: WorkerRole,
        id: &Id,
    ) -> Result<Participant, SessionError> {
        let service = service_name(role, id);
        let result = self.await_hello(&service, role, id).await?;
        let identity = |reason: String| SessionError::Identity {
            participant: id.to_string(),
            reason,
        };
        let success: SessionRpcSuccess = match result.outcome.get("type").and_then(Value::as_str) {
            Some("result") => from_value(Value::Object(result.outcome.clone()))
                .map_err(|e| identity(e.to_string()))?,
            _ => {
                return Err(identity(format!(
                    "Hello was refused: {}",
                    Value::Object(result.outcome.clone())
                )));
            }
        };
        let hello: HelloResult =
            from_value(Value::Object(success.result)).map_err(|e| identity(e.to_string()))?;
        let replier = (&success.worker_id, &success.incarnation_id);
        if let Some(reason) = self.identity_mismatch(role, id, &hello, replier) {
            return Err(identity(reason));
        }
        let participant = Participant {
            id: id.clone(),
            caller: RpcCaller::new(
                self.client.clone(),
                &service,
                Some(result.service_incarnation.clone()),
                id.clone(),
                hello.incarnation_id,
                1,
            ),
            poll: self.poll.clone(),
        };
        let status: Reply<StatusResult> =
            self.call(&participant, None, StatusParams {}, &[]).await?;
        if status.result.state != WorkerState::Uninitialized {
            return Err(identity(format!(
                "its Status says {:?}, a fresh worker is uninitialized",
                status.result.state
            )));
        }
        Ok(participant)
    }

    /// Sends `Worker.Hello` to `service` until it answers, within the start deadline: a service
    /// not registered yet is asked again, unless its process has already ended.
    #[expect(
        clippy::disallowed_methods,
        reason = "bounds a wait: a deadline decides when to stop waiting, never what is recorded"
    )]
    async fn await_hello(
        &self,
        service: &str,
        role: WorkerRole,
        id: &Id,
    ) -> Result<CallResult, SessionError> {
        let params = HelloParams {
            session_id: self.session_id.clone(),
            expected_worker_id: id.clone(),
            role,
            supported_majors: vec![flysim_types::workers::CONTRACT_MAJOR],
        };
        // Before any caller exists (the incarnation to pin comes from this answer): the
        // request as the bus carries it, under the first request id.
        let payload = SessionRpcRequest {
            request_id: DomainRequestId(1),
            scope: None,
            params: Params::from(params)
                .to_map()
                .map_err(|e| self.contract(id.as_str(), 0, e.to_string()))?,
        }
        .to_map();
        let until = Instant::now() + self.deadlines.start;
        let launch = |reason: String| SessionError::Launch {
            participant: id.to_string(),
            reason,
        };
        loop {
            let attempt = (Instant::now() + self.deadlines.attempt).min(until);
            match self
                .client
                .call(
                    service,
                    Method::WorkerHello.as_str(),
                    payload.clone(),
                    &[],
                    None,
                    Some(attempt),
                )
                .await
            {
                Ok(r) => return Ok(r),
                Err(e) if e.bus_code() == Some(ErrorCode::NoService) && Instant::now() < until => {
                    if let Some(status) = self.exits.exited(id) {
                        return Err(launch(format!(
                            "its process ended ({status}) before it answered Worker.Hello; \
                             what it reported is above"
                        )));
                    }
                    tokio::time::sleep(HELLO_RETRY).await;
                }
                Err(e) => return Err(launch(format!("no answer to Worker.Hello: {e}"))),
            }
        }
    }

    /// Why a worker that answered Hello is not the one the session expects, if it is not: its
    /// id, role, build, contract, incarnation, and (an agent) the threads it was started with.
    /// `replier` is the worker and incarnation the reply's envelope names.
    fn identity_mismatch(
        &self,
        role: WorkerRole,
        id: &Id,
        hello: &HelloResult,
        (replying_worker, replying_incarnation): (&Id, &Id),
    ) -> Option<String> {
        if hello.worker_id != *id || *replying_worker != *id {
            Some(format!("it is worker `{}`", hello.worker_id))
        } else if hello.role != role {
            Some(format!("its role is {:?}", hello.role))
        } else if hello.build_digest != build_digest() {
            Some(format!(
                "its build sha256:{} is not this build sha256:{}",
                hello.build_digest,
                build_digest()
            ))
        } else if hello.contract_digest != flysim_types::schema::contract_digest() {
            Some("it implements another session contract".to_owned())
        } else if hello.incarnation_id != *replying_incarnation {
            Some("its reply names another incarnation".to_owned())
        } else if role == WorkerRole::Agent
            && hello.limits.worker_threads < self.worker_threads_of(id)
        {
            Some(format!(
                "it was started within {} threads, the session asks {}",
                hello.limits.worker_threads,
                self.worker_threads_of(id)
            ))
        } else {
            None
        }
    }

    /// Checks the environment's descriptor against the plan: its backend, step duration and
    /// ports in the plan's order, and its own validity.
    pub(super) fn check_descriptor(&self, d: &EnvironmentDescriptor) -> Result<(), SessionError> {
        let env = &self.plan.environment;
        let ports: Vec<&Id> = d.ports.iter().map(|p| &p.port_id).collect();
        let planned: Vec<&Id> = env.ports.iter().map(|p| &p.port_id).collect();
        let reason = if d.backend_digest != env.backend_digest {
            Some("its backend digest is not the plan's".to_owned())
        } else if d.step_duration != env.step_duration {
            Some(format!(
                "its step duration {} is not the plan's {}",
                d.step_duration, env.step_duration
            ))
        } else if ports != planned {
            Some("its ports are not the plan's, in the plan's order".to_owned())
        } else {
            d.validate().err().map(|e| e.to_string())
        };
        match reason {
            Some(reason) => Err(SessionError::Identity {
                participant: env.id.to_string(),
                reason: format!("the environment descriptor differs from the plan: {reason}"),
            }),
            None => Ok(()),
        }
    }
}
