//! The local lane (contracts §3.11): opaque in-process shortcuts to services, offered and
//! looked up by exact name, and in-memory artifacts whose bytes stay in this process under a
//! ref of the connection's local store.
//!
//! The bus stores the shortcuts and never calls them; using them is the layer above's choice.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use flysim_types::workers::ArtifactRef;
use flysim_types::{Digest, Id};

use super::Client;
use super::artifacts::Artifact;
use super::connection::Connection;
use super::guards::Owner;
use crate::error::{BusError, WireError};
use crate::wire::spelled;

/// An opaque in-process shortcut to a service (contracts §3.11), offered by whoever runs the
/// service in this process and used, if at all, by the layer above the bus.
pub type LocalHandle = Arc<dyn std::any::Any + Send + Sync>;

/// The connection's in-process shortcuts, by service name.
fn lock_local(connection: &Connection) -> MutexGuard<'_, BTreeMap<String, LocalHandle>> {
    connection
        .local
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Client {
    /// Offers an in-process shortcut to the service `name` (contracts §3.11, the local lane):
    /// an opaque handle that a layer above the bus may use instead of a bus call when the
    /// service runs in this process. The bus stores it, by exact name, and never calls it; every
    /// clone of this client sees it.
    pub fn offer_local(&self, name: &str, handle: LocalHandle) {
        lock_local(&self.connection).insert(name.to_owned(), handle);
    }

    /// The in-process shortcut offered for `name`, if any.
    #[must_use]
    pub fn local(&self, name: &str) -> Option<LocalHandle> {
        lock_local(&self.connection).get(name).cloned()
    }

    /// An in-memory artifact (contracts §3.11): the bytes stay in this process, with no store
    /// file and no seal copy, under a ref of this connection's local store. It can be read and
    /// passed to in-process services; a bus call or publication needs it
    /// [promoted](Artifact::promote) to a sealed copy first.
    ///
    /// The bytes are shared, never copied: a producer that keeps its own clone of `bytes` can
    /// refill that buffer in place once every handle on the artifact is gone (`Arc::get_mut`
    /// succeeds only then), so a per-step artifact need not be a fresh allocation every step.
    ///
    /// # Errors
    ///
    /// [`WireError`] for a content type that is not 1..=127 printable ASCII characters.
    pub fn local_artifact(
        &self,
        bytes: impl Into<Arc<Vec<u8>>>,
        content_type: &str,
        digest: Option<Digest>,
    ) -> Result<Artifact, BusError> {
        let bytes: Arc<Vec<u8>> = bytes.into();
        if content_type.is_empty()
            || content_type.len() > 127
            || !content_type
                .bytes()
                .all(|c| c.is_ascii_graphic() || c == b' ')
        {
            return Err(
                WireError::invalid("`contentType` is 1..=127 printable ASCII characters").into(),
            );
        }
        let n = {
            let mut st = self.connection.lock();
            st.next_local += 1;
            st.next_local
        };
        let store_id = self
            .local_store
            .get_or_init(|| {
                let tag = self.hello.router_id.strip_prefix("router-");
                let conn = self.hello.connection_id.strip_prefix("conn-");
                let text = format!(
                    "local-{}-{}",
                    tag.unwrap_or_default(),
                    conn.unwrap_or_default()
                );
                Id::parse(&text).ok()
            })
            .clone()
            .ok_or_else(|| {
                WireError::invalid(format!(
                    "router `{}` and connection `{}` make no local store id",
                    self.hello.router_id, self.hello.connection_id
                ))
            })?;
        let id = |text: String| {
            Id::parse(&text).map_err(|e| BusError::from(WireError::invalid(e.to_string())))
        };
        let reference = ArtifactRef {
            store_id,
            artifact_id: id(spelled("a", n))?,
            generation: flysim_types::U64(1),
            byte_length: flysim_types::U64(bytes.len() as u64),
            content_type: content_type.into(),
            digest,
        };
        Ok(Artifact {
            reference,
            owner: Owner::Local(Arc::new(LocalArtifact {
                bytes,
                promoted: Mutex::new(None),
            })),
            seal: None,
        })
    }
}

/// The bytes of an in-memory artifact, and its sealed copy once promoted (per connection).
pub(super) struct LocalArtifact {
    /// Shared with the producer, which may reuse the buffer once this is dropped.
    pub(super) bytes: Arc<Vec<u8>>,
    pub(super) promoted: Mutex<Option<(usize, Artifact)>>,
}
