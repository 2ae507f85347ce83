//! What a Dolphin world lets tasks read of its memory: the words a declared memory task needs,
//! added to the MemoryWatcher's watch list, and published at every boundary as the `memory`
//! inspection artifact in the component API's encoding: one span per run of adjacent watched
//! words (each word big-endian, as the console stores it), so a value across two words reads.
//!
//! It knows watch lists and words. It does not know what a variable means or how Dolphin reports
//! its values (the watcher).

use flysim_component::memory::encode_span;
use flysim_types::Id;
use flysim_types::memory::aligned_words;

use crate::config::{Address, MAX_WATCHES, Watch};
use crate::error::DolphinError;

/// Adds to `watches` every word the `reads` (address, width) need that no plain watch already
/// covers, and returns each needed word with its watch's index, in address order.
///
/// # Errors
///
/// FS0812 (a plan the backend cannot run) when the watch list would pass its limit.
pub fn watch_words(
    watches: &mut Vec<Watch>,
    reads: &[(u32, usize)],
) -> Result<Vec<(u32, usize)>, DolphinError> {
    let mut needed: Vec<u32> = reads
        .iter()
        .flat_map(|&(a, w)| aligned_words(a, w))
        .collect();
    needed.sort_unstable();
    needed.dedup();
    let mut found = Vec::with_capacity(needed.len());
    for word in needed {
        let existing = watches
            .iter()
            .position(|w| w.offsets.is_empty() && w.address.0 == word);
        let index = match existing {
            Some(i) => i,
            None => {
                let name = Id::parse(&format!("mem-{word:08x}")).map_err(|e| {
                    DolphinError::PlanRefused {
                        field: "memoryTask".into(),
                        reason: e.to_string(),
                    }
                })?;
                watches.push(Watch {
                    name,
                    address: Address(word),
                    offsets: Vec::new(),
                });
                watches.len() - 1
            }
        };
        found.push((word, index));
    }
    if watches.len() > MAX_WATCHES {
        return Err(DolphinError::PlanRefused {
            field: "memoryTask".into(),
            reason: format!(
                "the task's variables need {} watched words beside the content's; Dolphin's watch list holds at most {MAX_WATCHES}",
                found.len()
            ),
        });
    }
    Ok(found)
}

/// The `memory` artifact of a boundary: the words of `words` (address order, with their watch
/// index) from the watched `values`, big-endian, one span per run of adjacent words.
#[must_use]
pub fn artifact(words: &[(u32, usize)], values: &[u32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(words.len() * 12);
    let mut run: Option<(u32, Vec<u8>)> = None;
    for &(address, index) in words {
        let value = values
            .get(index)
            .copied()
            .unwrap_or_else(|| unreachable!("watch {index} is in the list the values follow"));
        match &mut run {
            Some((start, bytes))
                if u32::try_from(bytes.len())
                    .ok()
                    .and_then(|n| start.checked_add(n))
                    == Some(address) =>
            {
                bytes.extend_from_slice(&value.to_be_bytes());
            }
            _ => {
                if let Some((start, bytes)) = run.take() {
                    encode_span(&mut out, start, &bytes);
                }
                run = Some((address, value.to_be_bytes().to_vec()));
            }
        }
    }
    if let Some((start, bytes)) = run {
        encode_span(&mut out, start, &bytes);
    }
    out
}

#[cfg(test)]
mod tests {
    use flysim_component::MemoryView;

    use super::*;

    fn plain(name: &'static str, address: u32) -> Watch {
        Watch {
            name: Id::from_static(name),
            address: Address(address),
            offsets: Vec::new(),
        }
    }

    #[test]
    fn the_words_a_read_needs_are_watched_once_and_read_back_big_endian() {
        let mut watches = vec![plain("magic", 0x8000_1800), plain("fields", 0x8000_1804)];
        // A u32 on a word, a u16 inside one, a u32 across two.
        let reads = [(0x8000_1804, 4), (0x8000_1806, 2), (0x8000_180a, 4)];
        let words = watch_words(&mut watches, &reads).unwrap();
        assert_eq!(
            words,
            [(0x8000_1804, 1), (0x8000_1808, 2), (0x8000_180c, 3)],
            "the fields watch is reused; two words added"
        );
        assert_eq!(watches[2].name.as_str(), "mem-80001808");
        let bytes = artifact(
            &words,
            &[0x4653_4743, 0x0000_1234, 0xaabb_ccdd, 0x1122_3344],
        );
        let memory = MemoryView::encoded(&bytes).unwrap();
        assert_eq!(memory.read(0x8000_1806, 2), Some(&[0x12u8, 0x34][..]));
        assert_eq!(
            memory.read(0x8000_1808, 4),
            Some(&[0xaau8, 0xbb, 0xcc, 0xdd][..])
        );
        // Adjacent words are one span: a value across two of them reads.
        assert_eq!(
            memory.read(0x8000_180a, 4),
            Some(&[0xccu8, 0xdd, 0x11, 0x22][..])
        );
        assert_eq!(bytes.len(), 8 + 12, "one span of three words");
        // A word apart starts another span.
        let apart = artifact(&[(0x8000_1800, 0), (0x8000_1810, 1)], &[1, 2]);
        assert_eq!(apart.len(), 2 * (8 + 4));
    }

    #[test]
    fn a_watch_list_past_its_limit_is_refused() {
        let mut watches = vec![plain("magic", 0x8000_1800)];
        let reads: Vec<(u32, usize)> = (0..64).map(|i| (0x8000_2000 + 4 * i, 4)).collect();
        assert!(watch_words(&mut watches, &reads).is_err());
    }
}
