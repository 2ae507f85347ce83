//! The local lane (contracts §3.11): session RPC to a worker in this process without a bus round
//! trip.
//!
//! Whoever runs a worker in this process may offer a [`LocalService`] for its service name on
//! the caller's bus client ([`offer`]). An [`RpcCaller`](crate::RpcCaller) built on that client
//! for that name then sends its requests through the lane: the already-validated request, typed,
//! straight to the worker's [`RpcEndpoint`](crate::RpcEndpoint), which admits, deduplicates,
//! orders and executes it exactly as it would a bus request, and answers with the same outcome.
//! Params and results stay typed values where both sides have them ([`crate::object`]): no JSON
//! tree is built for a call that never leaves the process. Nothing else changes: the caller's
//! deadlines, retries, reply matching and incarnation pinning, the worker's phases and dedup,
//! and every digest are those of the bus path.
//!
//! Artifacts on the lane are in-memory ([`flysim_bus::Client::local_artifact`]): no store file
//! and no seal copy. A bus call or reply that carries one promotes it to a sealed copy first and
//! names the copy's ref wherever the payload named the in-memory one ([`rewrite_refs`]).
//!
//! A lane lives as long as its caller's bus connection: a call on a closed connection fails with
//! `ROUTER_LOST` just as a bus call does, so a lost router still ends the epoch.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use flysim_bus::client::Peer;
use flysim_bus::{Artifact, BusError, Client};
use flysim_types::workers::ArtifactRef;
use flysim_types::{DomainRequestId, Id, Scope};
use serde_json::{Map, Value};

use crate::object::{Object, Outcome};

/// One request on the lane.
#[derive(Debug)]
pub struct LocalRequest {
    /// The caller, as the router would stamp it.
    pub caller: Peer,
    /// The method.
    pub method: String,
    /// The service incarnation the caller pinned (`None`: whoever serves the name now).
    pub expected_incarnation: Option<String>,
    /// The domain request id.
    pub request_id: DomainRequestId,
    /// The scope, or `None` for scope-free methods.
    pub scope: Option<Scope>,
    /// The params, already checked for bus identities; typed where the caller had the value.
    pub params: Object,
    /// Its artifacts.
    pub attachments: Vec<(Id, Artifact)>,
}

/// A terminal outcome from the lane.
#[derive(Debug)]
pub struct LocalReply {
    /// The outcome (a success's result typed where the worker had the value).
    pub outcome: Outcome,
    /// The reply's artifacts.
    pub attachments: Vec<(Id, Artifact)>,
    /// The service incarnation that answered.
    pub service_incarnation: String,
    /// Who answered (the worker's bus identity).
    pub responder: Peer,
}

/// What a lane's call resolves to: the reply, or the bus-equivalent refusal (`NO_SERVICE`,
/// `TARGET_CHANGED`, a lost worker).
pub type LocalFuture = Pin<Box<dyn Future<Output = Result<LocalReply, BusError>> + Send>>;

/// A worker served in this process.
pub trait LocalService: Send + Sync {
    /// Starts serving `request`; the work proceeds even if the returned future is dropped (a
    /// caller's deadline passing leaves the outcome uncertain, as on the bus).
    fn call(&self, request: LocalRequest) -> LocalFuture;
}

/// The handle stored on a bus client for one service name.
struct Entry(Arc<dyn LocalService>);

/// Offers `service` as the local lane to the service `name` on `client` (and its clones).
pub fn offer(client: &Client, name: &str, service: Arc<dyn LocalService>) {
    client.offer_local(name, Arc::new(Entry(service)));
}

/// The local lane to `name` offered on `client`, if any.
#[must_use]
pub fn lookup(client: &Client, name: &str) -> Option<Arc<dyn LocalService>> {
    let handle = client.local(name)?;
    handle.downcast::<Entry>().ok().map(|e| Arc::clone(&e.0))
}

/// Replaces, anywhere in `value`, an object that is exactly one of the `from` refs by the
/// matching `to` ref (a promoted artifact's ref where the payload named the in-memory one).
pub fn rewrite_refs(value: &mut Value, pairs: &[(ArtifactRef, ArtifactRef)]) {
    match value {
        Value::Object(map) => {
            if map.len() == 6 && map.contains_key("artifactId") && map.contains_key("storeId") {
                let found = serde_json::from_value::<ArtifactRef>(Value::Object(map.clone()))
                    .ok()
                    .and_then(|r| pairs.iter().find(|(from, _)| *from == r));
                if let Some((_, to)) = found {
                    if let Ok(Value::Object(to)) = serde_json::to_value(to) {
                        *map = to;
                    }
                    return;
                }
            }
            for item in map.values_mut() {
                rewrite_refs(item, pairs);
            }
        }
        Value::Array(items) => {
            for item in items {
                rewrite_refs(item, pairs);
            }
        }
        _ => {}
    }
}

/// Promotes every in-memory artifact of `attachments` with `promote`, and rewrites their refs in
/// `payload`. Returns the attachments to send (promoted where needed).
///
/// # Errors
///
/// The first promotion that fails.
pub(crate) async fn promote_all<F, Fut>(
    attachments: &[(&str, &Artifact)],
    payload: &mut Map<String, Value>,
    promote: F,
) -> Result<Vec<(String, Artifact)>, BusError>
where
    F: Fn(Artifact) -> Fut,
    Fut: Future<Output = Result<Artifact, BusError>>,
{
    let mut out = Vec::with_capacity(attachments.len());
    let mut pairs = Vec::new();
    for (name, artifact) in attachments {
        if artifact.is_local() {
            let sealed = promote((*artifact).clone()).await?;
            pairs.push((artifact.reference().clone(), sealed.reference().clone()));
            out.push(((*name).to_owned(), sealed));
        } else {
            out.push(((*name).to_owned(), (*artifact).clone()));
        }
    }
    if !pairs.is_empty() {
        let mut value = Value::Object(std::mem::take(payload));
        rewrite_refs(&mut value, &pairs);
        if let Value::Object(map) = value {
            *payload = map;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn r(store: &str, id: &str) -> ArtifactRef {
        ArtifactRef {
            store_id: Id::parse(store).unwrap(),
            artifact_id: Id::parse(id).unwrap(),
            generation: flysim_types::U64(1),
            byte_length: flysim_types::U64(4),
            content_type: "image/x-rgba8".into(),
            digest: None,
        }
    }

    #[test]
    fn refs_are_rewritten_wherever_they_appear_and_nothing_else_is() {
        let (from, to, other) = (
            r("local-x-1", "a-1"),
            r("store-x", "a-9"),
            r("local-x-1", "a-2"),
        );
        let mut value = json!({
            "views": [{"viewId": "v", "pixels": from}, {"viewId": "w", "pixels": other}],
            "nested": {"deep": [from]},
            "near": {"artifactId": "a-1", "storeId": "local-x-1"},
        });
        rewrite_refs(&mut value, &[(from.clone(), to.clone())]);
        let to = serde_json::to_value(&to).unwrap();
        assert_eq!(value["views"][0]["pixels"], to);
        assert_eq!(value["nested"]["deep"][0], to);
        assert_eq!(
            value["views"][1]["pixels"],
            serde_json::to_value(&other).unwrap()
        );
        assert_eq!(
            value["near"],
            json!({"artifactId": "a-1", "storeId": "local-x-1"})
        );
    }
}
