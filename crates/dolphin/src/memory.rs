//! What a Dolphin world lets tasks read of its memory: the words a declared memory task needs,
//! added to the MemoryWatcher's watch list, and published at every boundary as the `memory`
//! inspection artifact in the component API's encoding: one span per run of adjacent watched
//! words (each word big-endian, as the console stores it), so a value across two words reads.
//!
//! A variable behind a pointer chain (`address`, offsets `o1 … on`) is watched as the word(s)
//! holding its first pointer plus one chained watch per link (`address o1`, `address o1 o2`, …,
//! in `Locations.txt`'s notation), shared by chains that start alike. Dolphin reports a link as
//! the word at the previous pointer plus its offset, but stops following at a pointer that is
//! not RAM and reports that pointer instead; so a link's word is published, at the address it
//! was read from, only when every pointer before it lies in MEM1. The task then follows the
//! chain through the published memory as it would through a whole image, and a chain that
//! leads nowhere leaves its variable without a value.
//!
//! It knows watch lists, words and chains. It does not know what a variable means or how Dolphin
//! reports its values (the watcher).

use std::collections::BTreeMap;

use flysim_component::MemoryView;
use flysim_component::memory::encode_span;
use flysim_types::Id;
use flysim_types::memory::{MemoryRegion, MemoryVariable, aligned_words};

use crate::config::{Address, MAX_WATCHES, Watch};
use crate::error::DolphinError;

/// Cached main RAM as the game's own pointers read it: where a pointer may lead.
pub const MEM1: MemoryRegion = MemoryRegion {
    name: "MEM1",
    start: 0x8000_0000,
    end: 0x817f_ffff,
};

/// A pointer's width on the GameCube.
const POINTER: usize = 4;

/// The watches a declared memory task needs, and how their values become its memory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TaskMemory {
    /// Each plain word (address, watch index), in address order.
    words: Vec<(u32, usize)>,
    /// Each chain link's watch index, by (first address, the offsets up to it): a link's parent
    /// (one offset fewer) sorts before it.
    links: BTreeMap<(u32, Vec<u32>), usize>,
}

impl TaskMemory {
    /// Adds to `watches` what `variables` need (a word a plain watch already covers is reused).
    ///
    /// # Errors
    ///
    /// FS0812 (a plan the backend cannot run) when the watch list would pass its limit.
    pub fn watch(
        watches: &mut Vec<Watch>,
        variables: &[MemoryVariable],
    ) -> Result<Self, DolphinError> {
        let reads: Vec<(u32, usize)> = variables
            .iter()
            .map(|v| {
                let width = if v.offsets.is_empty() {
                    v.width()
                } else {
                    POINTER
                };
                (v.address, width)
            })
            .collect();
        let before = watches.len();
        let words = watch_words(watches, &reads)?;
        let mut links = BTreeMap::new();
        for v in variables {
            for n in 1..=v.offsets.len() {
                let key = (v.address, v.offsets[..n].to_vec());
                if links.contains_key(&key) {
                    continue;
                }
                let name = format!(
                    "mem-{:08x}-{}",
                    v.address,
                    key.1
                        .iter()
                        .map(|o| format!("{o:x}"))
                        .collect::<Vec<_>>()
                        .join("-")
                );
                watches.push(Watch {
                    name: Id::parse(&name).map_err(|e| refused(e.to_string()))?,
                    address: Address(v.address),
                    offsets: key.1.iter().map(|o| Address(*o)).collect(),
                });
                links.insert(key, watches.len() - 1);
            }
        }
        if watches.len() > MAX_WATCHES {
            return Err(refused(format!(
                "the task's variables need {} watches beside the content's; Dolphin's watch list holds at most {MAX_WATCHES}",
                watches.len() - before
            )));
        }
        Ok(Self { words, links })
    }

    /// Whether the task reads nothing (no task, or none that reads memory).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// The `memory` artifact of a boundary from the watched `values` (watch order): the plain
    /// words, then each link's word at the address it was read from, where its chain holds.
    #[must_use]
    pub fn artifact(&self, values: &[u32]) -> Vec<u8> {
        let value = |index: usize| {
            values
                .get(index)
                .copied()
                .unwrap_or_else(|| unreachable!("watch {index} is in the list the values follow"))
        };
        let mut out = artifact(&self.words, values);
        if self.links.is_empty() {
            return out;
        }
        let plain = out.clone();
        let Ok(plain) = MemoryView::encoded(&plain) else {
            unreachable!("the plain words are encoded as whole spans")
        };
        for ((address, offsets), &watch) in &self.links {
            let Some(first) = plain
                .read(*address, POINTER)
                .and_then(|b| <[u8; POINTER]>::try_from(b).ok())
                .map(u32::from_be_bytes)
            else {
                continue;
            };
            // The pointers the chain passes through before this link: the first, then the word
            // each earlier link read. Every one must lie in MEM1, or Dolphin stopped before it.
            let mut pointer = first;
            let mut held = MEM1.holds(first, 1);
            for n in 1..offsets.len() {
                let earlier = self
                    .links
                    .get(&(*address, offsets[..n].to_vec()))
                    .unwrap_or_else(|| unreachable!("a link's parent is watched before it"));
                pointer = value(*earlier);
                held &= MEM1.holds(pointer, 1);
            }
            let at = offsets.last().and_then(|last| pointer.checked_add(*last));
            if let Some(at) = at.filter(|&at| held && MEM1.holds(at, POINTER)) {
                encode_span(&mut out, at, &value(watch).to_be_bytes());
            }
        }
        out
    }
}

fn refused(reason: String) -> DolphinError {
    DolphinError::PlanRefused {
        field: "memoryTask".into(),
        reason,
    }
}

/// Adds to `watches` every word the `reads` (address, width) need that no plain watch already
/// covers, and returns each needed word with its watch's index, in address order.
///
/// # Errors
///
/// FS0812 (a plan the backend cannot run) when the watch list would pass its limit.
fn watch_words(
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
                let name =
                    Id::parse(&format!("mem-{word:08x}")).map_err(|e| refused(e.to_string()))?;
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
        return Err(refused(format!(
            "the task's variables need {} watched words beside the content's; Dolphin's watch list holds at most {MAX_WATCHES}",
            found.len()
        )));
    }
    Ok(found)
}

/// The plain words of `words` (address order, with their watch index) from the watched
/// `values`, big-endian, one span per run of adjacent words.
fn artifact(words: &[(u32, usize)], values: &[u32]) -> Vec<u8> {
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

    fn variable(name: &str, address: u32, offsets: &[u32]) -> MemoryVariable {
        MemoryVariable {
            name: Id::parse(name).unwrap(),
            address,
            kind: flysim_types::memory::MemoryType::U32be,
            bytes: None,
            bit: None,
            offsets: offsets.to_vec(),
        }
    }

    /// Where `v`'s value lies in `bytes`' memory, as the task finds it, and the value there.
    fn found(bytes: &[u8], v: &MemoryVariable) -> Option<(u32, u32)> {
        let memory = MemoryView::encoded(bytes).unwrap();
        let pointer = Some(flysim_types::memory::MemoryType::U32be);
        let at = flysim_types::memory::follow(v, pointer, |a, w| memory.read(a, w))?;
        let word = memory.read(at, 4)?;
        Some((at, u32::from_be_bytes(word.try_into().unwrap())))
    }

    #[test]
    fn a_chain_is_watched_link_by_link_and_published_only_where_every_pointer_is_ram() {
        let mut watches = vec![plain("magic", 0x8000_1800)];
        // Player 1's action through its entity pointer, and a two-link chain sharing the start.
        let action = variable("action", 0x8045_3130, &[0x70]);
        let deep = variable("deep", 0x8045_3130, &[0x70, 0x8]);
        let memory = TaskMemory::watch(&mut watches, &[action.clone(), deep.clone()]).unwrap();
        let locations: Vec<String> = watches.iter().map(Watch::location).collect();
        assert_eq!(
            locations,
            ["80001800", "80453130", "80453130 70", "80453130 70 8"],
            "the pointer's word, then one watch per link, the shared link once"
        );
        // Values in watch order: magic, entity pointer, the word at entity+0x70 (itself a
        // pointer for the deep chain), the word at that pointer+8.
        let bytes = memory.artifact(&[0x4653_4743, 0x80c0_1000, 0x80c0_2000, 0x14]);
        assert_eq!(found(&bytes, &action), Some((0x80c0_1070, 0x80c0_2000)));
        assert_eq!(found(&bytes, &deep), Some((0x80c0_2008, 0x14)));
        // A null entity pointer: Dolphin reports the pointer itself for both links; nothing of
        // the chain is published and neither variable has a value.
        let null = memory.artifact(&[0x4653_4743, 0, 0, 0]);
        assert_eq!(found(&null, &action), None);
        assert_eq!(found(&null, &deep), None);
        assert_eq!(
            null,
            artifact(&memory.words, &[0x4653_4743, 0]),
            "the plain words only"
        );
        // A second pointer outside MEM1: the first link reads, the second does not.
        let outside = memory.artifact(&[0x4653_4743, 0x80c0_1000, 0x0000_1234, 0x0000_1234]);
        assert_eq!(found(&outside, &action), Some((0x80c0_1070, 0x1234)));
        assert_eq!(found(&outside, &deep), None);
    }
}
