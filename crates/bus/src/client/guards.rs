//! The guards behind artifact ownership on the client (contracts §3.8): a [`Delivered`]
//! guard per delivery and a hold guard per explicit hold, each queueing its release
//! (`delivery.consumed`, `artifact.release`) when its last clone is dropped, and the
//! `Owner` an artifact handle stands on.
//!
//! They queue releases and know nothing of what the artifacts hold.

use std::sync::Arc;

use flysim_types::DeliveryToken;

use super::connection::{Connection, OutgoingCommand};
use super::local::LocalArtifact;
use crate::outbox::Lane;

/// The consumption guard of one delivery, shared by the message and every artifact taken from
/// it. The last clone dropped queues `delivery.consumed`.
#[derive(Clone)]
pub struct Delivered(pub(super) Arc<DeliveryGuard>);

impl std::fmt::Debug for Delivered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Delivered(dlv-{})", self.0.dlv)
    }
}

impl Delivered {
    /// The delivery's owner token (`dlv-<n>` of this connection).
    #[must_use]
    pub fn token(&self) -> DeliveryToken {
        DeliveryToken(self.0.dlv)
    }
}

/// The root of one delivery (`dlv-<n>`); its drop queues `delivery.consumed`.
pub(super) struct DeliveryGuard {
    pub(super) dlv: u64,
    pub(super) connection: Arc<Connection>,
}

impl Drop for DeliveryGuard {
    fn drop(&mut self) {
        self.connection
            .outbox
            .push(Lane::Control, OutgoingCommand::Consumed(self.dlv));
    }
}

/// An explicit hold (`own-<n>`); its drop queues `artifact.release`.
pub(super) struct HoldGuard {
    pub(super) own: u64,
    pub(super) connection: Arc<Connection>,
}

impl Drop for HoldGuard {
    fn drop(&mut self) {
        self.connection
            .outbox
            .push(Lane::Control, OutgoingCommand::Release(self.own));
    }
}

/// The root an artifact handle stands on.
#[derive(Clone)]
pub(super) enum Owner {
    Hold(Arc<HoldGuard>),
    Delivery(Arc<DeliveryGuard>),
    /// In memory, in this process: no bus root at all.
    Local(Arc<LocalArtifact>),
}
