//! The deduplication table's rules, request by request (contracts §4 "Deduplication").

use serde_json::{Value, json};

use flysim_types::workers::{AcknowledgeParams, ShutdownResult};

use super::*;
use crate::outcome::Success;

fn scope(step: u64) -> Scope {
    Scope {
        session_id: Id::parse("s").unwrap(),
        epoch: Id::parse("e1").unwrap(),
        step: U64(step),
    }
}

fn request(id: u64, step: Option<u64>, params: Value) -> SessionRpcRequest {
    SessionRpcRequest {
        request_id: DomainRequestId(id),
        scope: step.map(scope),
        params: params.as_object().unwrap().clone(),
    }
}

fn done() -> Cached {
    Cached {
        outcome: Outcome::Success(Success {
            request_id: DomainRequestId(1),
            worker_id: Id::parse("fly-a").unwrap(),
            incarnation_id: Id::parse("inc-1").unwrap(),
            scope: None,
            result: Arc::new(ShutdownResult { stopping: true }.into()),
        }),
        artifacts: Vec::new(),
    }
}

fn code(a: &Admission) -> String {
    match a {
        Admission::Execute(_) => "execute".into(),
        Admission::Replay(_) => "replay".into(),
        Admission::Refuse(c, _) => format!("{c:?}"),
    }
}

#[test]
fn step_rules_in_order() {
    let mut t = DedupTable::new(Id::parse("fly-a").unwrap());
    let prepare = request(1, Some(0), json!({"x": 1}));
    let Admission::Execute(ticket) = t.admit("coord", Method::AgentPrepare, &prepare).unwrap()
    else {
        panic!()
    };
    assert_eq!(
        code(&t.admit("coord", Method::AgentPrepare, &prepare).unwrap()),
        "InProgress"
    );
    t.complete(ticket, done());
    assert_eq!(
        code(&t.admit("coord", Method::AgentPrepare, &prepare).unwrap()),
        "replay"
    );
    let other_id = request(2, Some(0), json!({"x": 1}));
    assert_eq!(
        code(&t.admit("coord", Method::AgentPrepare, &other_id).unwrap()),
        "Conflict"
    );
    let other_body = request(1, Some(0), json!({"x": 2}));
    assert_eq!(
        code(&t.admit("coord", Method::AgentPrepare, &other_body).unwrap()),
        "Conflict"
    );
    // Steps 1 and 2 move the window; step 0 falls out of it.
    for (id, step) in [(3, 1), (4, 2)] {
        let Admission::Execute(ticket) = t
            .admit(
                "coord",
                Method::AgentPrepare,
                &request(id, Some(step), json!({})),
            )
            .unwrap()
        else {
            panic!()
        };
        t.complete(ticket, done());
    }
    assert_eq!(t.step_records(), 2);
    assert_eq!(
        code(&t.admit("coord", Method::AgentPrepare, &prepare).unwrap()),
        "ResultExpired"
    );
    let fresh_old = request(9, Some(0), json!({}));
    assert_eq!(
        code(&t.admit("coord", Method::AgentCommit, &fresh_old).unwrap()),
        "StaleStep"
    );
    let unscoped = request(10, None, json!({}));
    assert_eq!(
        code(&t.admit("coord", Method::AgentPrepare, &unscoped).unwrap()),
        "InvalidArgument"
    );
}

/// Params as the endpoint admits them from the local lane.
fn deferred(method: Method, step: u64, params: &Arc<Params>) -> Body {
    Body::Deferred {
        method,
        scope: Some(scope(step)),
        params: Arc::clone(params),
    }
}

fn params(x: u64) -> Arc<Params> {
    let request_ids = vec![DomainRequestId(x)];
    Arc::new(AcknowledgeParams { request_ids }.into())
}

#[test]
fn a_typed_body_is_compared_by_its_digest_only_when_a_key_meets_it_again() {
    let method = Method::AgentPrepare;
    let mut t = DedupTable::new(Id::parse("fly-a").unwrap());
    let admit = |t: &mut DedupTable, id: u64, body: Body| {
        t.admit_body("c", method, DomainRequestId(id), Some(&scope(3)), body)
    };
    let typed = params(1);
    let Admission::Execute(ticket) = admit(&mut t, 1, deferred(method, 3, &typed)) else {
        panic!("the first request runs")
    };
    // A retry sharing the value is the same body; so is the JSON of an equal value (the
    // deferred digest is computed now, and is the bus digest).
    assert_eq!(
        code(&admit(&mut t, 1, deferred(method, 3, &typed))),
        "InProgress"
    );
    let json = json!({"requestIds": ["req-1"]});
    let bus = body_digest(method.as_str(), Some(&scope(3)), json.as_object().unwrap()).unwrap();
    assert_eq!(code(&admit(&mut t, 1, Body::Digest(bus))), "InProgress");
    let equal = params(1);
    assert_eq!(
        code(&admit(&mut t, 1, deferred(method, 3, &equal))),
        "InProgress"
    );
    // Another value, or the same value under another method, is another body.
    let other = params(2);
    assert_eq!(
        code(&admit(&mut t, 1, deferred(method, 3, &other))),
        "Conflict"
    );
    let moved = deferred(Method::AgentCommit, 3, &typed);
    assert_eq!(code(&admit(&mut t, 1, moved)), "Conflict");
    t.complete(ticket, done());
    assert_eq!(
        code(&admit(&mut t, 1, deferred(method, 3, &equal))),
        "replay"
    );
    assert_eq!(
        code(&admit(&mut t, 2, deferred(method, 3, &typed))),
        "Conflict"
    );
}

#[test]
fn lifecycle_replies_wait_for_acknowledge() {
    let mut t = DedupTable::new(Id::parse("fly-a").unwrap());
    for id in 1..=16 {
        let Admission::Execute(ticket) = t
            .admit(
                "coord",
                Method::AgentInitialize,
                &request(id, None, json!({})),
            )
            .unwrap()
        else {
            panic!()
        };
        t.complete(ticket, done());
    }
    let extra = request(17, None, json!({}));
    assert_eq!(
        code(&t.admit("coord", Method::AgentInitialize, &extra).unwrap()),
        "Busy"
    );
    assert!(t.acknowledge("other", &[DomainRequestId(1)]).is_empty());
    let released = t.acknowledge("coord", &[DomainRequestId(1), DomainRequestId(99)]);
    assert_eq!(released, vec![DomainRequestId(1)]);
    assert_eq!(
        code(&t.admit("coord", Method::AgentInitialize, &extra).unwrap()),
        "execute"
    );
    let again = request(1, None, json!({}));
    assert_eq!(
        code(&t.admit("coord", Method::AgentInitialize, &again).unwrap()),
        "ResultExpired"
    );
}

#[test]
fn queries_keep_their_last_sixteen() {
    let mut t = DedupTable::new(Id::parse("fly-a").unwrap());
    for id in 1..=17 {
        let Admission::Execute(ticket) = t
            .admit("coord", Method::WorkerStatus, &request(id, None, json!({})))
            .unwrap()
        else {
            panic!()
        };
        t.complete(ticket, done());
    }
    let last = request(17, None, json!({}));
    assert_eq!(
        code(&t.admit("coord", Method::WorkerStatus, &last).unwrap()),
        "replay"
    );
    let first = request(1, None, json!({}));
    assert_eq!(
        code(&t.admit("coord", Method::WorkerStatus, &first).unwrap()),
        "execute"
    );
}

#[test]
fn operation_keys_digest_like_the_contract() {
    let key = OperationKey::new(
        Method::AgentPrepare,
        &scope(3),
        &Id::parse("fly-a").unwrap(),
    );
    let direct = operation_key_digest(
        Method::AgentPrepare.as_str(),
        &scope(3),
        &Id::parse("fly-a").unwrap(),
    )
    .unwrap();
    assert_eq!(key.digest().unwrap(), direct);
}
