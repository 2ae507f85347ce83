//! Artifacts on the client: allocation and the [`ArtifactWriter`] (bounded writes, sealing
//! now or queued), the [`Artifact`] handle (its ref, the root it stands on, open, read, retain,
//! confirming a queued seal), promotion of an in-memory artifact to a sealed copy, and the
//! attachment list a call, reply or publication carries.
//!
//! Files are opened only through location grants resolved under the store root; the roots
//! themselves are `guards`'.

use std::io::{Read as _, Write as _};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use flysim_types::workers::ArtifactRef;
use flysim_types::{DeliveryToken, Digest, HoldToken, Id, OwnerToken};
use serde_json::{Map, Value, json};

use super::connection::{Connection, ReplyReceiver, queue_command, send_command};
use super::guards::{HoldGuard, Owner};
use super::{Client, into_map, str_field};
use crate::error::{BusError, WireError};
use crate::store;
use crate::wire::{Attachment, Dispatch, ErrorCode, spelled, unspell};

impl Client {
    /// Allocates an artifact of exactly `byte_length` bytes and opens its staging file.
    ///
    /// # Errors
    ///
    /// `QUOTA_EXCEEDED`, a store failure, or a refused location.
    pub async fn allocate(
        &self,
        byte_length: u64,
        content_type: &str,
    ) -> Result<ArtifactWriter, BusError> {
        let mut writer = allocate_on(&self.connection, byte_length, content_type).await?;
        writer.client = Some(self.clone());
        Ok(writer)
    }
}

/// `artifact.allocate` on a connection, with the staging file opened for writing.
pub(super) async fn allocate_on(
    connection: &Arc<Connection>,
    byte_length: u64,
    content_type: &str,
) -> Result<ArtifactWriter, BusError> {
    let body = json!({"byteLength": byte_length.to_string(), "contentType": content_type});
    let v = send_command(connection, "artifact.allocate", into_map(body), Vec::new()).await?;
    let own = v
        .get("ownerId")
        .and_then(Value::as_str)
        .and_then(|s| unspell("own", s))
        .unwrap_or(0);
    let guard = Arc::new(HoldGuard {
        own,
        connection: Arc::clone(connection),
    });
    let location = v.get("writeLocation");
    let rel = location
        .and_then(|l| l.get("relativePath"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let store_id = location
        .and_then(|l| l.get("storeId"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let file = store::open_write(&connection.store_root, rel)?;
    Ok(ArtifactWriter {
        client: None,
        connection: Arc::clone(connection),
        artifact_id: str_field(&v, "artifactId"),
        store_id,
        guard,
        byte_length,
        content_type: content_type.to_owned(),
        file: Some(file),
        offset: 0,
    })
}

/// The sealed copy of an in-memory artifact on the connection `connection` (made once, then reused).
pub(super) async fn promote_on(
    artifact: &Artifact,
    connection: &Arc<Connection>,
) -> Result<Artifact, BusError> {
    let Owner::Local(local) = &artifact.owner else {
        return Ok(artifact.clone());
    };
    let key = Arc::as_ptr(connection) as usize;
    let done = local
        .promoted
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .as_ref()
        .filter(|(k, _)| *k == key)
        .map(|(_, a)| a.clone());
    if let Some(done) = done {
        return Ok(done);
    }
    let reference = &artifact.reference;
    let mut writer = allocate_on(
        connection,
        local.bytes.len() as u64,
        &reference.content_type,
    )
    .await?;
    writer.write(&local.bytes)?;
    let sealed = writer.seal(reference.digest).await?;
    *local
        .promoted
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some((key, sealed.clone()));
    Ok(sealed)
}

/// An owned artifact: a ref plus a live root on this connection (a hold or a delivery).
#[derive(Clone)]
pub struct Artifact {
    pub(super) reference: ArtifactRef,
    pub(super) owner: Owner,
    /// A seal queued but not yet confirmed by the router ([`ArtifactWriter::seal_queued`]).
    pub(super) seal: Option<Arc<PendingSeal>>,
}

/// The router's answer to a queued seal, awaited at most once and remembered.
pub(super) struct PendingSeal {
    pub(super) rx: Mutex<Option<ReplyReceiver>>,
    pub(super) outcome: tokio::sync::OnceCell<Result<(), (ErrorCode, String)>>,
}

impl std::fmt::Debug for Artifact {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Artifact")
            .field("ref", &self.reference.artifact_id)
            .field("owner", &self.owner_token().to_string())
            .finish()
    }
}

impl Artifact {
    /// The artifact's ref.
    #[must_use]
    pub fn reference(&self) -> &ArtifactRef {
        &self.reference
    }

    /// The root this handle stands on. An in-memory artifact (see [`Artifact::is_local`])
    /// stands on none and reports `own-0`, a token the router never issues.
    #[must_use]
    pub fn owner_token(&self) -> OwnerToken {
        match &self.owner {
            Owner::Hold(h) => OwnerToken::Hold(HoldToken(h.own)),
            Owner::Delivery(d) => OwnerToken::Delivery(DeliveryToken(d.dlv)),
            Owner::Local(_) => OwnerToken::Hold(HoldToken(0)),
        }
    }

    /// Whether this is an in-memory artifact ([`Client::local_artifact`]).
    #[must_use]
    pub fn is_local(&self) -> bool {
        matches!(self.owner, Owner::Local(_))
    }

    /// The bytes of an in-memory artifact, borrowed without a copy; `None` for a bus artifact
    /// (read those with [`Artifact::read`]).
    #[must_use]
    pub fn local_bytes(&self) -> Option<&[u8]> {
        self.local_shared().map(|bytes| bytes.as_slice())
    }

    /// The buffer of an in-memory artifact itself, shared with its producer (two artifacts of
    /// the same buffer are the same bytes); `None` for a store artifact.
    #[must_use]
    pub fn local_shared(&self) -> Option<&Arc<Vec<u8>>> {
        match &self.owner {
            Owner::Local(local) => Some(&local.bytes),
            Owner::Hold(_) | Owner::Delivery(_) => None,
        }
    }

    /// Waits for the router's answer to a queued seal ([`ArtifactWriter::seal_queued`]) and
    /// checks that it sealed exactly this ref; immediate for any other artifact.
    ///
    /// # Errors
    ///
    /// The seal's refusal (`ARTIFACT_MISMATCH`, `QUOTA_EXCEEDED`, a store failure, ...), a
    /// sealed ref other than this one, or [`BusError::RouterLost`].
    pub async fn confirm(&self) -> Result<(), BusError> {
        let Some(pending) = &self.seal else {
            return Ok(());
        };
        let outcome = pending
            .outcome
            .get_or_init(|| async {
                let rx = pending
                    .rx
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .take();
                let Some(rx) = rx else {
                    return Err((ErrorCode::RouterLost, "the seal was never sent".to_owned()));
                };
                match rx.await {
                    Ok(Ok(v)) => {
                        let sealed: Option<ArtifactRef> = v
                            .get("ref")
                            .cloned()
                            .and_then(|r| flysim_types::payload::from_value(r).ok());
                        if sealed.as_ref() == Some(&self.reference) {
                            Ok(())
                        } else {
                            Err((
                                ErrorCode::ArtifactMismatch,
                                format!("the router sealed {sealed:?}, not {:?}", self.reference),
                            ))
                        }
                    }
                    Ok(Err(e)) => Err((
                        e.bus_code().unwrap_or(ErrorCode::StoreFailure),
                        e.to_string(),
                    )),
                    Err(_) => Err((ErrorCode::RouterLost, "the connection is closed".to_owned())),
                }
            })
            .await;
        outcome
            .clone()
            .map_err(|(code, message)| BusError::Refused {
                op: "artifact.seal".into(),
                code,
                message,
                dispatch: Dispatch::Dispatched,
            })
    }

    fn connection(&self) -> Result<&Arc<Connection>, BusError> {
        match &self.owner {
            Owner::Hold(h) => Ok(&h.connection),
            Owner::Delivery(d) => Ok(&d.connection),
            Owner::Local(_) => Err(BusError::LocationRefused {
                path: self.reference.artifact_id.to_string(),
                reason: "an in-memory artifact has no store file",
            }),
        }
    }

    /// A sealed copy of an in-memory artifact under a hold of `client`'s connection (the same
    /// copy for every later call on that connection); any other artifact is returned as is.
    ///
    /// # Errors
    ///
    /// As [`Client::allocate`] and [`ArtifactWriter::seal`].
    pub async fn promote(&self, client: &Client) -> Result<Self, BusError> {
        promote_on(self, &client.connection).await
    }

    /// Opens the sealed bytes for reading. The file stays readable after every owner is gone.
    ///
    /// # Errors
    ///
    /// `ARTIFACT_GONE`/`OWNER_INVALID` from the router, or a refused location.
    pub async fn open(&self) -> Result<std::fs::File, BusError> {
        let connection = Arc::clone(self.connection()?);
        let body = json!({"ref": self.reference, "ownerId": self.owner_token().to_string()});
        let v = send_command(&connection, "artifact.open", into_map(body), Vec::new()).await?;
        let location = v
            .get("readLocation")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let store_id = location
            .get("storeId")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let rel = location
            .get("relativePath")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if store_id != self.reference.store_id.as_str() {
            return Err(BusError::LocationRefused {
                path: rel.to_owned(),
                reason: "the grant names another store",
            });
        }
        store::open_read(&connection.store_root, rel)
    }

    /// Reads all the bytes.
    ///
    /// # Errors
    ///
    /// As [`Artifact::open`], or a read failure.
    pub async fn read(&self) -> Result<Vec<u8>, BusError> {
        if let Owner::Local(local) = &self.owner {
            return Ok(Vec::clone(&local.bytes));
        }
        let mut file = self.open().await?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).map_err(|e| {
            BusError::store(
                "read artifact",
                PathBuf::from(self.reference.artifact_id.as_str()),
                e,
            )
        })?;
        Ok(bytes)
    }

    /// Takes an independent explicit hold on the same bytes.
    ///
    /// # Errors
    ///
    /// As [`Artifact::open`].
    pub async fn retain(&self) -> Result<Self, BusError> {
        if self.is_local() {
            // In-memory bytes are shared, never collected while a handle lives.
            return Ok(self.clone());
        }
        let connection = Arc::clone(self.connection()?);
        let body = json!({"ref": self.reference, "ownerId": self.owner_token().to_string()});
        let v = send_command(&connection, "artifact.retain", into_map(body), Vec::new()).await?;
        let own = v
            .get("ownerId")
            .and_then(Value::as_str)
            .and_then(|s| unspell("own", s))
            .unwrap_or(0);
        Ok(Self {
            reference: self.reference.clone(),
            owner: Owner::Hold(Arc::new(HoldGuard { own, connection })),
            seal: None,
        })
    }
}

/// A staging artifact being written; [`ArtifactWriter::seal`] makes it immutable. Dropping it
/// unsealed releases it (the router collects the staging file).
pub struct ArtifactWriter {
    /// Keeps the connection open while the writer lives (when allocated through a [`Client`]).
    pub(super) client: Option<Client>,
    pub(super) connection: Arc<Connection>,
    pub(super) artifact_id: String,
    pub(super) store_id: String,
    pub(super) guard: Arc<HoldGuard>,
    pub(super) byte_length: u64,
    pub(super) content_type: String,
    pub(super) file: Option<std::fs::File>,
    pub(super) offset: u64,
}

impl std::fmt::Debug for ArtifactWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArtifactWriter")
            .field("artifact_id", &self.artifact_id)
            .field("offset", &self.offset)
            .finish_non_exhaustive()
    }
}

impl ArtifactWriter {
    /// Appends bytes; a write past the allocation fails and writes nothing.
    ///
    /// # Errors
    ///
    /// [`BusError::WritePastAllocation`] or a store failure.
    pub fn write(&mut self, bytes: &[u8]) -> Result<(), BusError> {
        let attempted = bytes.len() as u64;
        if self.offset + attempted > self.byte_length {
            return Err(BusError::WritePastAllocation {
                offset: self.offset,
                attempted,
                allocated: self.byte_length,
            });
        }
        if let Some(file) = self.file.as_mut() {
            file.write_all(bytes).map_err(|e| {
                BusError::store("write artifact", PathBuf::from(&self.artifact_id), e)
            })?;
        }
        self.offset += attempted;
        Ok(())
    }

    /// Closes the staging file and seals it; the router checks the length and, if given, the
    /// digest. Returns the artifact under the writer's hold.
    ///
    /// # Errors
    ///
    /// `ARTIFACT_MISMATCH` for a wrong digest, or a store failure.
    pub async fn seal(mut self, digest: Option<Digest>) -> Result<Artifact, BusError> {
        drop(self.file.take());
        let body = json!({
            "artifactId": self.artifact_id,
            "generation": "1",
            "ownerId": spelled("own", self.guard.own),
            "digest": digest.map(|d| d.hex()),
        });
        let v = send_command(
            &self.connection,
            "artifact.seal",
            into_map(body),
            Vec::new(),
        )
        .await?;
        let reference: ArtifactRef = v
            .get("ref")
            .cloned()
            .and_then(|r| flysim_types::payload::from_value(r).ok())
            .ok_or_else(|| BusError::from(WireError::invalid("seal reply without a valid ref")))?;
        let _ = (&self.content_type, &self.client);
        Ok(Artifact {
            reference,
            owner: Owner::Hold(Arc::clone(&self.guard)),
            seal: None,
        })
    }

    /// Queues the seal without waiting for the router and returns the artifact at once, under
    /// the writer's hold, with the ref the router will confirm (this store, the allocated id,
    /// generation 1, the allocated length and content type, `digest`). The router handles this
    /// connection's commands in order, so a later call, reply or publication that attaches the
    /// artifact finds it sealed; [`Artifact::confirm`] waits for the router's answer.
    ///
    /// # Errors
    ///
    /// [`BusError::RouterLost`], or an allocation whose ids the router did not spell as ids.
    pub fn seal_queued(mut self, digest: Option<Digest>) -> Result<Artifact, BusError> {
        drop(self.file.take());
        let id = |text: &str| {
            Id::parse(text).map_err(|e| BusError::from(WireError::invalid(e.to_string())))
        };
        let reference = ArtifactRef {
            store_id: id(&self.store_id)?,
            artifact_id: id(&self.artifact_id)?,
            generation: flysim_types::U64(1),
            byte_length: flysim_types::U64(self.byte_length),
            content_type: self.content_type.as_str().into(),
            digest,
        };
        let mut body = Map::new();
        body.insert("artifactId".into(), Value::String(self.artifact_id.clone()));
        body.insert("generation".into(), Value::String("1".into()));
        body.insert(
            "ownerId".into(),
            Value::String(spelled("own", self.guard.own)),
        );
        body.insert(
            "digest".into(),
            digest.map_or(Value::Null, |d| Value::String(d.hex())),
        );
        let rx = queue_command(&self.connection, "artifact.seal", body, Vec::new())?;
        let _ = &self.client;
        Ok(Artifact {
            reference,
            owner: Owner::Hold(Arc::clone(&self.guard)),
            seal: Some(Arc::new(PendingSeal {
                rx: Mutex::new(Some(rx)),
                outcome: tokio::sync::OnceCell::new(),
            })),
        })
    }
}

/// The attachment list of a call, reply or publication; an in-memory artifact is refused.
pub(super) fn attach(items: &[(&str, &Artifact)]) -> Result<Vec<Attachment>, BusError> {
    items
        .iter()
        .map(|(name, a)| {
            if a.is_local() {
                return Err(BusError::Unpromoted {
                    attachment: (*name).to_owned(),
                });
            }
            Ok(Attachment {
                name: Id::parse(name)
                    .map_err(|e| WireError::invalid(format!("attachment name: {e}")))?,
                reference: a.reference.clone(),
                owner_id: a.owner_token(),
            })
        })
        .collect()
}
