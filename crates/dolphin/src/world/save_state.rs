//! Capture and restore through save-state slot 1: a capture taps Save, waits for Dolphin's
//! finished state file and reads it with a digest of main memory; a restore writes the file back,
//! taps Load and waits until main memory matches the checkpoint's digest. Neither lets a field
//! run.
//!
//! It knows Dolphin's `StateSaves` directory and its file names; it does not know the
//! checkpoint's byte format (the `checkpoint` module).

use std::path::Path;
use std::time::{Duration, Instant};

use super::{DolphinWorld, Observation};
use crate::checkpoint::Checkpoint;
use crate::config::Hotkey;
use crate::error::DolphinError;

/// How long a save or load may show no effect before it is tapped again.
const STATE_RETRY: Duration = Duration::from_secs(2);
/// Taps tried per save or load.
const STATE_TAPS: u32 = 3;
/// How long a save or load state may take.
const STATE_TIMEOUT: Duration = Duration::from_secs(15);

impl DolphinWorld {
    /// Captures the world at its current boundary through save-state slot 1.
    ///
    /// # Errors
    ///
    /// FS0810 in nogui mode; FS0805/FS0806 (and the world fails) if the save does not complete
    /// or a field runs meanwhile.
    #[expect(
        clippy::disallowed_methods,
        reason = "bounded waits on the save, and when to press its hotkey again; the checkpoint is the saved file, whatever the timing"
    )]
    pub fn capture(&mut self) -> Result<Checkpoint, DolphinError> {
        self.usable()?;
        self.qt_only("capture a checkpoint")?;
        self.guard(|w| {
            w.expect_still()?;
            let states = w.layout.user.join("StateSaves");
            clear_slot_files(&states)?;
            w.tap(Hotkey::SaveSlot1)?;
            let deadline = Instant::now() + STATE_TIMEOUT;
            let (mut taps, mut retry) = (1, Instant::now() + STATE_RETRY);
            let name = loop {
                if let Some(name) = slot_file(&states)? {
                    break name;
                }
                if Instant::now() >= deadline {
                    return Err(DolphinError::helper(
                        "the save state did not appear in time",
                    ));
                }
                // Nothing written at all: the hotkey poll missed the tap; saving the stopped
                // world again writes the same state.
                if Instant::now() >= retry && taps < STATE_TAPS && no_slot_file(&states)? {
                    w.tap(Hotkey::SaveSlot1)?;
                    (taps, retry) = (taps + 1, Instant::now() + STATE_RETRY);
                }
                std::thread::sleep(Duration::from_millis(2));
            };
            let state = std::fs::read(states.join(&name))
                .map_err(|e| DolphinError::helper(format!("cannot read the save state: {e}")))?;
            let ram = w.ram()?.digest()?;
            w.expect_still()?;
            w.slot_file = Some(name.clone());
            Ok(Checkpoint {
                configuration: w.config.digest(),
                slot_file: name,
                boundary: w.boundary,
                fields: w.fields,
                values: w.observed.clone(),
                ram,
                state,
            })
        })
    }

    /// Restores a checkpoint of this configuration: the world is then at the checkpoint's
    /// boundary, and its observation is the captured one. No field runs.
    ///
    /// # Errors
    ///
    /// FS0808 for a checkpoint of another configuration (the world stays usable); FS0810 in
    /// nogui mode; FS0805/FS0806 (and the world fails) if the load does not complete.
    #[expect(
        clippy::disallowed_methods,
        reason = "bounded waits on the load, and when to press its hotkey again; the restored boundary is checked, whatever the timing"
    )]
    pub fn restore(&mut self, checkpoint: &Checkpoint) -> Result<Observation, DolphinError> {
        self.usable()?;
        self.qt_only("restore a checkpoint")?;
        checkpoint.check_for(&self.config)?;
        self.guard(|w| {
            w.expect_still()?;
            let states = w.layout.user.join("StateSaves");
            clear_slot_files(&states)?;
            let path = states.join(&checkpoint.slot_file);
            let partial = states.join("incoming.part");
            std::fs::write(&partial, &checkpoint.state)
                .and_then(|()| std::fs::rename(&partial, &path))
                .map_err(|e| DolphinError::helper(format!("cannot write the save state: {e}")))?;
            w.tap(Hotkey::LoadSlot1)?;
            let deadline = Instant::now() + STATE_TIMEOUT;
            let (mut taps, mut retry) = (1, Instant::now() + STATE_RETRY);
            while w.ram()?.digest()? != checkpoint.ram {
                if Instant::now() >= deadline {
                    return Err(DolphinError::helper(
                        "the loaded state did not reach the checkpoint's memory in time",
                    ));
                }
                // The hotkey poll may have missed the tap; loading the same file again is
                // harmless.
                if Instant::now() >= retry && taps < STATE_TAPS {
                    w.tap(Hotkey::LoadSlot1)?;
                    (taps, retry) = (taps + 1, Instant::now() + STATE_RETRY);
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            w.expect_still()?;
            w.slot_file = Some(checkpoint.slot_file.clone());
            w.boundary = checkpoint.boundary;
            w.fields = checkpoint.fields;
            w.observed = checkpoint.values.clone();
            Ok(Observation {
                boundary: checkpoint.boundary,
                fields: checkpoint.fields,
                values: checkpoint.values.clone(),
            })
        })
    }
}

/// Whether `states` holds no slot-1 file, finished or being written.
fn no_slot_file(states: &Path) -> Result<bool, DolphinError> {
    let entries = std::fs::read_dir(states)
        .map_err(|e| DolphinError::helper(format!("cannot list StateSaves: {e}")))?;
    Ok(!entries
        .flatten()
        .any(|e| e.file_name().to_string_lossy().contains(".s01")))
}

/// Removes every slot-1 state file (and Dolphin's temporary files) from `states`.
fn clear_slot_files(states: &Path) -> Result<(), DolphinError> {
    let entries = std::fs::read_dir(states)
        .map_err(|e| DolphinError::helper(format!("cannot list StateSaves: {e}")))?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.ends_with(".s01") || name.contains(".s01") {
            std::fs::remove_file(entry.path())
                .map_err(|e| DolphinError::helper(format!("cannot remove {name}: {e}")))?;
        }
    }
    Ok(())
}

/// The complete slot-1 state file in `states`, if Dolphin has finished writing one (it writes
/// `<id>.s01<n>.tmp` and renames it).
fn slot_file(states: &Path) -> Result<Option<String>, DolphinError> {
    let entries = std::fs::read_dir(states)
        .map_err(|e| DolphinError::helper(format!("cannot list StateSaves: {e}")))?;
    let mut found = None;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".tmp") {
            return Ok(None);
        }
        if name.ends_with(".s01") {
            found = Some(name);
        }
    }
    Ok(found)
}
