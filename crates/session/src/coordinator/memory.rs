//! The world's memory for a task that reads it ([`flysim_component::Task::reads_memory`]): the
//! bytes of the boundary's `memory` inspection artifact, kept with the committed observation so
//! that each boundary's image is read once (a local artifact without a copy; a bus artifact
//! read from its file once, then shared as the next transition's old memory).
//!
//! A task that does not read memory costs nothing here: no artifact is looked up or read. It
//! knows the artifact's name; what the bytes mean is the task's.

use std::sync::Arc;

use flysim_bus::Artifact;
use flysim_component::MemoryView;
use flysim_types::Id;
use flysim_types::memory::MEMORY_ARTIFACT;

use super::Coordinator;
use crate::error::SessionError;

/// One boundary's memory artifact (spans in the component API's encoding, checked when read).
#[derive(Clone)]
pub(super) enum MemoryImage {
    /// An in-memory artifact of the local lane: its bytes, shared.
    Local(Artifact),
    /// A bus artifact, read once.
    Read(Arc<Vec<u8>>),
}

impl MemoryImage {
    fn bytes(&self) -> &[u8] {
        match self {
            Self::Local(artifact) => artifact
                .local_bytes()
                .unwrap_or_else(|| unreachable!("a local image is an in-memory artifact")),
            Self::Read(bytes) => bytes.as_slice(),
        }
    }

    /// The memory as a task reads it.
    pub(super) fn view(&self) -> MemoryView<'_> {
        MemoryView::encoded(self.bytes()).unwrap_or_else(|reason| {
            unreachable!("a memory image is checked when it is read: {reason}")
        })
    }
}

impl Coordinator {
    /// The memory image of boundary `boundary` among its `attachments`, when the task reads
    /// memory (`None` otherwise, at no cost).
    ///
    /// # Errors
    ///
    /// A contract failure when the world attached no memory artifact, or it cannot be read.
    pub(super) async fn memory_of(
        &self,
        boundary: u64,
        attachments: &[(Id, Artifact)],
    ) -> Result<Option<MemoryImage>, SessionError> {
        if !self.task.reads_memory() {
            return Ok(None);
        }
        let env_id = self.plan.environment.id.as_str();
        let artifact = attachments
            .iter()
            .find(|(name, _)| name.as_str() == MEMORY_ARTIFACT)
            .map(|(_, a)| a)
            .ok_or_else(|| {
                self.contract(
                    env_id,
                    boundary,
                    format!(
                        "task `{}` reads the world's memory, but the world attached no `{MEMORY_ARTIFACT}` artifact",
                        self.plan.task
                    ),
                )
            })?;
        let image = if artifact.local_bytes().is_some() {
            MemoryImage::Local(artifact.clone())
        } else {
            let bytes = artifact.read().await.map_err(|e| {
                self.contract(
                    env_id,
                    boundary,
                    format!("the world's `{MEMORY_ARTIFACT}` artifact could not be read: {e}"),
                )
            })?;
            MemoryImage::Read(Arc::new(bytes))
        };
        MemoryView::encoded(image.bytes())
            .map_err(|reason| self.contract(env_id, boundary, reason))?;
        Ok(Some(image))
    }

    /// The committed boundary `k`'s memory image: the one kept when it was committed, or,
    /// after a restore (which keeps none), read from its attachments now.
    ///
    /// # Errors
    ///
    /// As [`Coordinator::memory_of`].
    pub(super) async fn committed_memory(
        &mut self,
        k: u64,
    ) -> Result<Option<MemoryImage>, SessionError> {
        if !self.task.reads_memory() {
            return Ok(None);
        }
        let Some(committed) = self.committed.as_ref() else {
            return Ok(None);
        };
        if let Some(image) = &committed.memory {
            return Ok(Some(image.clone()));
        }
        let frames = committed.frames.clone();
        self.memory_of(k, &frames).await
    }
}
