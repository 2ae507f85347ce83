//! The artifact commands: `artifact.allocate` (a reservation in the store and a writer hold),
//! `artifact.seal` (the copy that makes it immutable, outside the routing lock), and
//! `artifact.open`, `artifact.retain` and `artifact.release` on the holds and deliveries a
//! connection owns.
//!
//! The store does the file work; root counting is `ownership`'s. It never reads the bytes
//! beyond what sealing hashes.

use std::sync::Arc;

use flysim_types::workers::ArtifactRef;
use flysim_types::{Digest, Id, OwnerToken, U64};
use serde_json::{Map, Value, json};

use super::command::{CommandRefusal, CommandResult, invalid, refuse};
use super::envelopes::{into_map, u64s};
use super::ownership::{batch_ids, check_owned, drop_roots, new_hold};
use super::state::{ArtifactEntry, ConnId, RouterCore, RouterState};
use crate::limits::Limits;
use crate::store::SealFailure;
use crate::wire::{Attachment, Body, ErrorCode, spelled, unspell};

/// Artifacts up to this size are sealed on the connection's task (see [`seal`]): one read and
/// one write of at most 256 KiB, which costs less than handing the copy to the blocking pool and
/// back (two context switches, and a first thread with its own fresh memory). A Game Boy frame
/// (92,160 bytes) is sealed here, a GameCube frame (1,228,800) on the pool. Measured on
/// `gameboy.kdl` with the synthetic agent, 1,200 steps in process mode, against 64 KiB: 0.67×
/// the context switches (3 rounds), 0.88× the wall time and 0.92× the CPU (medians of 6 paired
/// rounds).
const INLINE_SEAL_BYTES: usize = 256 * 1024;

/// `artifact.allocate`'s body.
pub(super) struct AllocateBody<'a> {
    byte_length: u64,
    content_type: &'a str,
}

impl<'a> AllocateBody<'a> {
    pub(super) fn parse(body: &'a Map<String, Value>) -> Result<Self, CommandRefusal> {
        let b = Body::exact(body, &["byteLength", "contentType"]).map_err(invalid)?;
        let byte_length = b.u64("byteLength").map_err(invalid)?;
        let content_type = b.str("contentType").map_err(invalid)?;
        if content_type.is_empty()
            || content_type.len() > 127
            || !content_type
                .bytes()
                .all(|c| c.is_ascii_graphic() || c == b' ')
        {
            return Err(invalid(
                "`contentType` is 1..=127 printable ASCII characters",
            ));
        }
        Ok(Self {
            byte_length,
            content_type,
        })
    }
}

/// `artifact.seal`'s body.
pub(super) struct SealBody {
    artifact: u64,
    own: u64,
    digest: Option<Digest>,
}

impl SealBody {
    pub(super) fn parse(body: &Map<String, Value>) -> Result<Self, CommandRefusal> {
        let b = Body::exact(body, &["artifactId", "generation", "ownerId", "digest"])
            .map_err(invalid)?;
        let artifact = b
            .str("artifactId")
            .ok()
            .and_then(|s| unspell("a", s))
            .ok_or_else(|| invalid("`artifactId` is a-<n>"))?;
        if b.u64("generation").map_err(invalid)? != 1 {
            return Err(refuse(
                ErrorCode::ArtifactGone,
                "generation is always 1 in v1",
            ));
        }
        let own = b
            .str("ownerId")
            .ok()
            .and_then(|s| unspell("own", s))
            .ok_or_else(|| invalid("`ownerId` is own-<n>"))?;
        let digest = match b.opt_str("digest").map_err(invalid)? {
            None => None,
            Some(d) => Some(Digest::parse(d).map_err(|e| invalid(e.to_string()))?),
        };
        Ok(Self {
            artifact,
            own,
            digest,
        })
    }
}

/// The body of `artifact.open` and `artifact.retain`: a ref and the root it is held through.
pub(super) struct OwnedRefBody {
    attachment: Attachment,
}

impl OwnedRefBody {
    pub(super) fn parse(body: &Map<String, Value>) -> Result<Self, CommandRefusal> {
        let b = Body::exact(body, &["ref", "ownerId"]).map_err(invalid)?;
        let reference: ArtifactRef = flysim_types::payload::from_value(b.value("ref").clone())
            .map_err(|e| invalid(format!("`ref`: {e}")))?;
        let owner = OwnerToken::parse(b.str("ownerId").map_err(invalid)?)
            .map_err(|e| invalid(e.to_string()))?;
        Ok(Self {
            attachment: Attachment {
                name: Id::parse("ref").unwrap_or_else(|_| Id::from_static("router")),
                reference,
                owner_id: owner,
            },
        })
    }
}

/// `artifact.release`'s body: the holds to release.
pub(super) struct ReleaseBody {
    ids: Vec<u64>,
}

impl ReleaseBody {
    pub(super) fn parse(
        body: &Map<String, Value>,
        limits: &Limits,
    ) -> Result<Self, CommandRefusal> {
        let b = Body::exact(body, &["ownerIds"]).map_err(invalid)?;
        Ok(Self {
            ids: batch_ids(limits, &b, "ownerIds", "own")?,
        })
    }
}

/// `artifact.allocate`: reserves the bytes, issues the writer hold and creates the staging file.
pub(super) async fn allocate(
    core: &Arc<RouterCore>,
    conn: ConnId,
    body: &AllocateBody<'_>,
) -> CommandResult {
    let len = body.byte_length;
    let (n, own) = reserve(core, conn, body)?;
    // Creating a sparse staging file is two system calls whatever its length: done here,
    // outside the routing lock, rather than paying a blocking-pool hop for it.
    let created = core.store.create_staging(n, len);
    if created.is_err() {
        let mut garbage = Vec::new();
        {
            let mut st = core.lock();
            if let Some(c) = st.conns.get_mut(&conn) {
                c.holds.remove(&own);
            }
            drop_roots(&mut st, &[n], &mut garbage);
        }
        core.unlink_all(garbage);
        return Err(refuse(
            ErrorCode::StoreFailure,
            "cannot create the staging file",
        ));
    }
    Ok(into_map(json!({
        "artifactId": spelled("a", n),
        "generation": "1",
        "ownerId": spelled("own", own),
        "writeLocation": {"storeId": core.store_id.as_str(), "relativePath": core.store.staging_rel(n)},
    })))
}

/// Registers the new artifact and its writer hold within the store's limits; returns the
/// artifact number and the hold.
fn reserve(
    core: &RouterCore,
    conn: ConnId,
    body: &AllocateBody<'_>,
) -> Result<(u64, u64), CommandRefusal> {
    let len = body.byte_length;
    let mut st = core.lock();
    if len > core.limits.max_artifact_bytes {
        return Err(refuse(
            ErrorCode::QuotaExceeded,
            format!(
                "{len} bytes exceed the artifact limit of {}",
                core.limits.max_artifact_bytes
            ),
        ));
    }
    if st.store_bytes + len > core.limits.max_store_bytes {
        return Err(refuse(ErrorCode::QuotaExceeded, "the store is full"));
    }
    st.next_artifact += 1;
    let n = st.next_artifact;
    st.artifacts.insert(
        n,
        ArtifactEntry {
            sealed: false,
            byte_length: len,
            content_type: body.content_type.to_owned(),
            digest: None,
            roots: 0,
            reserved: len,
        },
    );
    st.store_bytes += len;
    st.peak_store_bytes = st.peak_store_bytes.max(st.store_bytes);
    match new_hold(core, &mut st, conn, n, true) {
        Ok(own) => Ok((n, own)),
        Err(r) => {
            st.artifacts.remove(&n);
            st.store_bytes -= len;
            Err(r)
        }
    }
}

/// `artifact.seal`: the writer's staging file becomes the sealed artifact.
pub(super) async fn seal(core: &Arc<RouterCore>, conn: ConnId, body: SealBody) -> CommandResult {
    let SealBody {
        artifact: n,
        own,
        digest,
    } = body;
    let len = reserve_seal_copy(core, conn, &body)?;
    // The copy runs outside the routing lock: on the blocking pool, except for an artifact of
    // at most `INLINE_SEAL_BYTES`, whose copy costs less than the hop to another thread.
    let sealed = if usize::try_from(len).is_ok_and(|l| l <= INLINE_SEAL_BYTES) {
        Ok(core.store.seal(n, len, digest))
    } else {
        let store = Arc::clone(core);
        tokio::task::spawn_blocking(move || store.store.seal(n, len, digest)).await
    };
    let mut st = core.lock();
    st.store_bytes -= len;
    let result = match sealed {
        Ok(Ok(())) => Ok(()),
        Ok(Err(SealFailure::Mismatch(why))) => Err(refuse(ErrorCode::ArtifactMismatch, why)),
        Ok(Err(SealFailure::Io(e))) => Err(refuse(ErrorCode::StoreFailure, e.to_string())),
        Err(_) => Err(refuse(ErrorCode::StoreFailure, "the seal task failed")),
    };
    result?;
    if let Some(h) = st.conns.get_mut(&conn).and_then(|c| c.holds.get_mut(&own)) {
        h.writer = false;
    }
    let Some(e) = st.artifacts.get_mut(&n) else {
        drop(st);
        core.store.unlink(&core.store.sealed_rel(n));
        return Err(refuse(
            ErrorCode::ArtifactGone,
            format!("a-{n} was released while sealing"),
        ));
    };
    e.sealed = true;
    e.digest = digest;
    let reference = ArtifactRef {
        store_id: core.store_id.clone(),
        artifact_id: Id::parse(&spelled("a", n)).unwrap_or_else(|_| Id::from_static("router")),
        generation: U64(1),
        byte_length: U64(len),
        content_type: e.content_type.as_str().into(),
        digest,
    };
    Ok(into_map(
        json!({"ref": reference, "ownerId": spelled("own", own)}),
    ))
}

/// Checks the seal comes from the artifact's writer and reserves room for the sealed copy
/// (a second instance until the staging file is unlinked); returns the artifact's length.
fn reserve_seal_copy(
    core: &RouterCore,
    conn: ConnId,
    body: &SealBody,
) -> Result<u64, CommandRefusal> {
    let (n, own) = (body.artifact, body.own);
    let mut st = core.lock();
    let writer = st
        .conns
        .get(&conn)
        .and_then(|c| c.holds.get(&own))
        .is_some_and(|h| h.writer && h.artifact == n);
    if !writer {
        return Err(refuse(
            ErrorCode::OwnerInvalid,
            format!("own-{own} is not the writer of a-{n}"),
        ));
    }
    let Some(e) = st.artifacts.get(&n) else {
        return Err(refuse(ErrorCode::ArtifactGone, format!("a-{n} is gone")));
    };
    let len = e.byte_length;
    if st.store_bytes + len > core.limits.max_store_bytes {
        return Err(refuse(
            ErrorCode::QuotaExceeded,
            "the store has no room for the sealed copy",
        ));
    }
    st.store_bytes += len;
    st.peak_store_bytes = st.peak_store_bytes.max(st.store_bytes);
    Ok(len)
}

/// Resolves `{ref, ownerId}` to an artifact this connection holds a root on.
fn owned_artifact<'s>(
    core: &RouterCore,
    st: &'s RouterState,
    conn: ConnId,
    body: &OwnedRefBody,
) -> Result<(u64, &'s ArtifactEntry), CommandRefusal> {
    let n = check_owned(core, st, conn, &body.attachment)?;
    let entry = st
        .artifacts
        .get(&n)
        .ok_or_else(|| refuse(ErrorCode::ArtifactGone, "gone"))?;
    Ok((n, entry))
}

/// `artifact.open`: the read location of a sealed artifact this connection owns.
pub(super) fn open(
    core: &RouterCore,
    st: &RouterState,
    conn: ConnId,
    body: &OwnedRefBody,
) -> CommandResult {
    let (n, entry) = owned_artifact(core, st, conn, body)?;
    let rel = if entry.sealed {
        core.store.sealed_rel(n)
    } else {
        return Err(refuse(
            ErrorCode::ArtifactUnsealed,
            format!("a-{n} is not sealed"),
        ));
    };
    Ok(into_map(
        json!({"readLocation": {"storeId": core.store_id.as_str(), "relativePath": rel}}),
    ))
}

/// `artifact.retain`: a new, independent hold on a sealed artifact this connection owns.
pub(super) fn retain(
    core: &RouterCore,
    st: &mut RouterState,
    conn: ConnId,
    body: &OwnedRefBody,
) -> CommandResult {
    let (n, entry) = owned_artifact(core, st, conn, body)?;
    if !entry.sealed {
        return Err(refuse(
            ErrorCode::ArtifactUnsealed,
            format!("a-{n} is not sealed"),
        ));
    }
    let own = new_hold(core, st, conn, n, false)?;
    Ok(into_map(json!({"ownerId": spelled("own", own)})))
}

/// `artifact.release`: drops holds of this connection (unknown ones are already released and
/// not counted).
pub(super) fn release(
    st: &mut RouterState,
    conn: ConnId,
    body: &ReleaseBody,
    garbage: &mut Vec<String>,
) -> CommandResult {
    let c = st
        .conns
        .get_mut(&conn)
        .ok_or_else(|| invalid("connection gone"))?;
    if let Some(bad) = body.ids.iter().find(|n| **n > c.next_own) {
        return Err(refuse(
            ErrorCode::OwnerInvalid,
            format!("own-{bad} was never issued"),
        ));
    }
    let mut arts = Vec::new();
    for n in &body.ids {
        if let Some(h) = c.holds.remove(n) {
            arts.push(h.artifact);
        }
    }
    let released = arts.len() as u64;
    drop_roots(st, &arts, garbage);
    Ok(into_map(json!({"released": u64s(released)})))
}
