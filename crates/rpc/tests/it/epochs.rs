//! The kept window across epochs (checklist "old worker replies after restore"): after a
//! restore moved the worker to a new epoch, a stray retry of the old epoch is handed to the
//! worker (which refuses it with `STALE_EPOCH`, mutation none), and the new epoch's replies
//! stay cached for its own retries.

use std::sync::Arc;

use flysim_rpc::{Admission, Cached, DedupTable, Outcome, Success};
use flysim_types::payload::SessionRpcRequest;
use flysim_types::workers::Method;
use flysim_types::{DomainRequestId, Id, Scope, U64};

fn id(s: &str) -> Id {
    Id::parse(s).unwrap()
}

fn request(serial: u64, epoch: &str, step: u64) -> SessionRpcRequest {
    SessionRpcRequest {
        request_id: DomainRequestId(serial),
        scope: Some(Scope {
            session_id: id("session-1"),
            epoch: id(epoch),
            step: U64(step),
        }),
        params: serde_json::Map::new(),
    }
}

fn done(serial: u64) -> Cached {
    Cached {
        outcome: Outcome::Success(Success {
            request_id: DomainRequestId(serial),
            worker_id: id("fly-a"),
            incarnation_id: id("inc-2"),
            scope: None,
            result: Arc::new(crate::result(Method::AgentPrepare, serial)),
        }),
        artifacts: Vec::new(),
    }
}

fn admit(t: &mut DedupTable, serial: u64, epoch: &str, step: u64) -> Admission {
    t.admit("coord", Method::AgentPrepare, &request(serial, epoch, step))
        .unwrap()
}

fn name(a: &Admission) -> String {
    match a {
        Admission::Execute(_) => "execute".into(),
        Admission::Replay(_) => "replay".into(),
        Admission::Refuse(code, _) => format!("{code:?}"),
    }
}

/// Admits and completes one request, which must run.
fn run(t: &mut DedupTable, serial: u64, epoch: &str, step: u64) {
    let Admission::Execute(ticket) = admit(t, serial, epoch, step) else {
        panic!("req-{serial} at {epoch} step {step} must run")
    };
    t.complete(ticket, done(serial));
}

#[test]
fn a_stray_request_of_an_old_epoch_costs_the_restored_epoch_none_of_its_replies() {
    let mut t = DedupTable::new(id("fly-a"));
    run(&mut t, 1, "epoch-1", 4);
    // The restore's first step operation under epoch-2: while it runs, its retry is in
    // progress, and the old epoch's record is still kept (nothing of epoch-2 completed yet).
    let Admission::Execute(first) = admit(&mut t, 2, "epoch-2", 10) else {
        panic!("the new epoch's first operation must run")
    };
    assert_eq!(name(&admit(&mut t, 2, "epoch-2", 10)), "InProgress");
    assert_eq!(t.step_records(), 2);
    t.complete(first, done(2));
    // Completed: the window is epoch-2's, and epoch-1's reply left it.
    assert_eq!(t.step_records(), 1);
    assert_eq!(t.take_evicted().len(), 1);
    // A stray retry of epoch-1 reaches the worker, which refuses it without mutation.
    let Admission::Execute(stray) = admit(&mut t, 1, "epoch-1", 4) else {
        panic!("a request of another epoch is the worker's to judge")
    };
    t.abandon(stray);
    // The new epoch's retry still replays its reply: nothing runs twice.
    assert_eq!(name(&admit(&mut t, 2, "epoch-2", 10)), "replay");
    assert_eq!(t.step_records(), 1);
    run(&mut t, 3, "epoch-2", 11);
    assert_eq!(t.step_records(), 2);
    assert_eq!(name(&admit(&mut t, 2, "epoch-2", 10)), "replay");
}

#[test]
fn a_refused_restore_keeps_the_old_epochs_replies() {
    let mut t = DedupTable::new(id("fly-a"));
    run(&mut t, 1, "epoch-1", 4);
    // A request of another epoch that the worker refuses (nothing happened) leaves the
    // window where it was.
    let Admission::Execute(refused) = admit(&mut t, 2, "epoch-2", 10) else {
        panic!("a request of another epoch is the worker's to judge")
    };
    t.abandon(refused);
    assert_eq!(name(&admit(&mut t, 1, "epoch-1", 4)), "replay");
    assert_eq!(name(&admit(&mut t, 9, "epoch-1", 1)), "StaleStep");
    assert_eq!(t.step_records(), 1);
}
