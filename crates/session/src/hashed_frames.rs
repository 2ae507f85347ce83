//! The frames the digest thread has hashed, so that each distinct picture is hashed once.
//!
//! A Game Boy game redraws only what moves, and its screen keeps coming back to pictures it
//! showed a while ago: of the 3,601 frames of `gameboy.kdl` with the synthetic agent, 70% are
//! the frame before and only 503 are distinct, but remembering only the last four pictures
//! hashed 788 of them. [`HashedFrames`] remembers every picture it hashed within a memory
//! budget ([`HashedFrames::BUDGET`], at least [`HashedFrames::MIN_KEPT`] pictures), each as a
//! copy of its bytes with its SHA-256. A frame takes a remembered digest only when its bytes are
//! that picture's bytes, so the digest is always the SHA-256 of the frame's own bytes.
//!
//! Finding a frame among them compares a [`fingerprint`] first (every 13th word of the bytes),
//! so that two pictures that differ are almost always told apart by one integer compare; bytes
//! are compared (`memcmp`) only where fingerprints agree. (Ordering the pictures by their bytes
//! cost a dozen `memcmp`s a lookup, each running deep into two screens that share most of their
//! rows; a fingerprint of every byte cost 0.7 ms a frame in the unoptimised builds tests run,
//! ten times the SHA-256.)
//!
//! A picture that is not remembered is rarely new all over: a game redraws what moves, so it
//! shares its first rows with the picture shown before it. Each remembered picture keeps the
//! SHA-256 hasher's state after every [`CHECKPOINT`] bytes, and a new picture is hashed from
//! the last checkpoint it shares with the most recently used picture: its digest is the
//! SHA-256 of all its bytes (the shared ones went into the hasher's state, byte for byte the
//! same), hashing only from its first changed chunk on. Over 3,600 steps of fly-arena played
//! with random buttons (717 distinct pictures), that hashed 30% of their bytes.
//!
//! It keeps copies rather than the frames' shared buffers so that a world that redraws its
//! screen into a buffer nobody holds (the Game Boy world does) gets its buffers back as soon as
//! the row is written; only the last frame is held, shared, so that a frame handed over again as
//! the same buffer (an unchanged screen) is known without reading it. A forgotten picture's
//! copy is rewritten for the next one of its size rather than freed and allocated again.
//!
//! This module knows nothing of threads, rows or worlds: it maps bytes to their SHA-256.

use std::sync::Arc;

use flysim_types::Digest;
use sha2::{Digest as _, Sha256};

/// Bytes of a picture between two kept hasher states: a multiple of SHA-256's 64-byte block, a
/// little over six rows of a Game Boy screen (22 states, about 2.5 KB, a screen).
const CHECKPOINT: usize = 4096;

/// A remembered picture: its bytes, their fingerprint and digest, the hasher's state after each
/// whole [`CHECKPOINT`] of the bytes (in order), and when it was last asked for.
struct Picture {
    fingerprint: u64,
    bytes: Box<[u8]>,
    states: Vec<Sha256>,
    digest: Digest,
    used: u64,
}

/// The pictures hashed so far, within [`HashedFrames::BUDGET`], and the last frame seen.
#[derive(Default)]
pub(crate) struct HashedFrames {
    /// In no particular order (a few dozen at most: a scan of their fingerprints is cheap).
    pictures: Vec<Picture>,
    /// The bytes of `pictures`.
    kept: usize,
    /// Lookups so far (what `Picture::used` counts in).
    lookups: u64,
    /// The last frame seen, as it was handed over, with its digest.
    last: Option<(Arc<Vec<u8>>, Digest)>,
    /// How many frames were hashed.
    #[cfg(test)]
    hashes: usize,
    /// How many bytes went into the hasher.
    #[cfg(test)]
    hashed_bytes: usize,
}

/// Bytes from one sampled word of a [`fingerprint`] to the next: 13 words, 886 samples of a
/// 92,160-byte Game Boy screen. A prime number of words, so that on a screen whose rows are not
/// a multiple of it (a Game Boy row is 80 words, a GameCube row 320) each row's samples sit
/// at other columns than the last row's, and every column is sampled once every 13 rows: a
/// change that spans that many rows is always seen. (Every 25 words left columns that no row
/// sampled: the run's lookups compared bytes six times each.)
const SAMPLE_EVERY: usize = 104;

/// A summary of `bytes` that equal bytes always share: their length, every [`SAMPLE_EVERY`]th
/// byte's word and the last word. Different bytes may share it too (they differ only between
/// samples); it only decides which pictures are worth comparing byte for byte.
fn fingerprint(bytes: &[u8]) -> u64 {
    const MIX: u64 = 0x9E37_79B9_7F4A_7C15;
    let word = |at: usize| match bytes.get(at..at + 8) {
        Some(&[a, b, c, d, e, f, g, h]) => u64::from_le_bytes([a, b, c, d, e, f, g, h]),
        _ => bytes[at..].iter().fold(0, |w, &b| w << 8 | u64::from(b)),
    };
    let mut h = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    let mut at = 0;
    while at < bytes.len() {
        h = (h ^ word(at)).wrapping_mul(MIX).rotate_left(31);
        at += SAMPLE_EVERY;
    }
    if let Some(last) = bytes.len().checked_sub(8) {
        h = (h ^ word(last)).wrapping_mul(MIX);
    }
    h ^ (h >> 29)
}

impl HashedFrames {
    /// The bytes of remembered pictures: 45 Game Boy screens (160×144 RGBA); pictures over a
    /// quarter of it, [`Self::MIN_KEPT`]. Replaying the view digests of `gameboy.kdl` with the
    /// synthetic agent (3,601 steps), remembering 4 pictures hashes 788 of them, 32 hash 571, 64
    /// hash 537 and all 503 (the distinct ones); this budget hashed 545 in the run itself.
    pub(crate) const BUDGET: usize = 4 << 20;
    /// Pictures remembered whatever their size (a screen larger than the budget is still
    /// found when it comes back soon).
    pub(crate) const MIN_KEPT: usize = 4;

    /// The SHA-256 of `bytes`: the last frame's if this is the same buffer, a remembered
    /// picture's if the bytes are that picture's, otherwise hashed (and then remembered in place
    /// of the least recently used pictures, while over the budget).
    pub(crate) fn digest(&mut self, bytes: &Arc<Vec<u8>>) -> Digest {
        if let Some((last, digest)) = &self.last
            && Arc::ptr_eq(last, bytes)
        {
            return *digest;
        }
        let digest = self.find_or_hash(bytes);
        self.last = Some((Arc::clone(bytes), digest));
        digest
    }

    fn find_or_hash(&mut self, bytes: &[u8]) -> Digest {
        self.lookups += 1;
        let fingerprint = fingerprint(bytes);
        if let Some(found) = self
            .pictures
            .iter_mut()
            .find(|p| p.fingerprint == fingerprint && *p.bytes == *bytes)
        {
            found.used = self.lookups;
            return found.digest;
        }
        let mut states = Vec::new();
        let digest = self.hash(bytes, &mut states);
        #[cfg(test)]
        {
            self.hashes += 1;
        }
        let mut spare = None;
        while self.pictures.len() >= Self::MIN_KEPT && self.kept + bytes.len() > Self::BUDGET {
            let Some(forgotten) = self.forget_least_recently_used() else {
                break;
            };
            if forgotten.bytes.len() == bytes.len() {
                spare = Some(forgotten.bytes);
            }
        }
        let copy = match spare {
            Some(mut copy) => {
                copy.copy_from_slice(bytes);
                copy
            }
            None => bytes.into(),
        };
        self.kept += copy.len();
        self.pictures.push(Picture {
            fingerprint,
            bytes: copy,
            states,
            digest,
            used: self.lookups,
        });
        digest
    }

    /// The SHA-256 of `bytes`, hashed from the last [`CHECKPOINT`] they share with the most
    /// recently used picture (from the start when they share none), and into `states` the
    /// hasher's state after each of their whole checkpoints.
    fn hash(&mut self, bytes: &[u8], states: &mut Vec<Sha256>) -> Digest {
        let mut hasher = Sha256::new();
        let mut at = 0;
        if let Some(recent) = self.pictures.iter().max_by_key(|p| p.used) {
            // Leading chunks of equal bytes that end at a kept state (a partial last chunk
            // has none).
            let shared = recent
                .bytes
                .chunks(CHECKPOINT)
                .zip(bytes.chunks(CHECKPOINT))
                .take_while(|(kept, new)| kept == new)
                .count()
                .min(recent.states.len());
            if let Some(state) = shared.checked_sub(1).map(|last| &recent.states[last]) {
                hasher = state.clone();
                states.extend_from_slice(&recent.states[..shared]);
                at = shared * CHECKPOINT;
            }
        }
        #[cfg(test)]
        {
            self.hashed_bytes += bytes.len() - at;
        }
        for chunk in bytes[at..].chunks(CHECKPOINT) {
            hasher.update(chunk);
            if chunk.len() == CHECKPOINT {
                states.push(hasher.clone());
            }
        }
        Digest::from_bytes(hasher.finalize().into())
    }

    /// Forgets the least recently used picture and returns it.
    fn forget_least_recently_used(&mut self) -> Option<Picture> {
        let oldest = (0..self.pictures.len()).min_by_key(|&i| self.pictures[i].used)?;
        let forgotten = self.pictures.swap_remove(oldest);
        self.kept -= forgotten.bytes.len();
        Some(forgotten)
    }

    /// How many pictures are remembered.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.pictures.len()
    }

    /// Whether `bytes` are a remembered picture's.
    #[cfg(test)]
    fn remembers(&self, bytes: &[u8]) -> bool {
        self.pictures.iter().any(|p| *p.bytes == *bytes)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use flysim_types::digest::sha256;

    use super::{CHECKPOINT, HashedFrames, SAMPLE_EVERY, fingerprint};

    const SCREEN: usize = 160 * 144 * 4;

    /// A 160×144 RGBA frame, all `fill` but its last byte, `last`.
    fn frame(fill: u8, last: u8) -> Vec<u8> {
        let mut bytes = vec![fill; SCREEN];
        if let Some(b) = bytes.last_mut() {
            *b = last;
        }
        bytes
    }

    /// `frame(fill, fill)` with byte `at` changed.
    fn between(fill: u8, at: usize) -> Vec<u8> {
        let mut bytes = frame(fill, fill);
        bytes[at] ^= 0x80;
        bytes
    }

    /// The frames the tests hand over: repeats, frames that differ only in their last byte or
    /// only between the fingerprint's samples, other lengths (one a prefix of another), empty
    /// frames, more screens than the budget holds, and a frame let go coming back.
    fn frames() -> Vec<Arc<Vec<u8>>> {
        let mut frames = vec![
            frame(1, 1),
            frame(1, 1),
            frame(1, 2),
            frame(1, 1),
            vec![1; 16],
            vec![1; 17],
            frame(2, 0),
            Vec::new(),
            Vec::new(),
        ];
        frames.extend([between(1, 100), between(1, 300), between(1, 100)]);
        frames.extend((0..60).map(|i| frame(3, i)));
        frames.push(frame(1, 2));
        frames.into_iter().map(Arc::new).collect()
    }

    #[test]
    fn every_frame_gets_its_own_sha256_whether_remembered_or_hashed() {
        let mut hashed = HashedFrames::default();
        let frames = frames();
        for (i, bytes) in frames.iter().enumerate() {
            let distinct = frames[..=i]
                .iter()
                .enumerate()
                .filter(|(j, f)| !frames[..*j].contains(f))
                .count();
            let expected = sha256(bytes);
            assert_eq!(hashed.digest(bytes), expected, "frame {i}, shared");
            assert_eq!(hashed.digest(bytes), expected, "frame {i}, the same buffer");
            let copy = Arc::new(bytes.to_vec());
            assert_eq!(hashed.digest(&copy), expected, "frame {i}, a copy");
            assert!(hashed.len() >= HashedFrames::MIN_KEPT.min(distinct));
            assert!(hashed.len() <= distinct);
            assert!(hashed.kept <= HashedFrames::BUDGET || hashed.len() <= HashedFrames::MIN_KEPT);
        }
    }

    #[test]
    fn pictures_that_share_a_fingerprint_keep_their_own_digests() {
        let (a, b, c) = (frame(1, 1), between(1, 100), between(1, 300));
        assert_eq!(fingerprint(&a), fingerprint(&b), "byte 100 is not sampled");
        assert_eq!(fingerprint(&a), fingerprint(&c), "byte 300 is not sampled");
        assert_ne!(
            fingerprint(&a),
            fingerprint(&between(1, 2 * SAMPLE_EVERY + 3)),
            "a byte of a sampled word is"
        );
        assert_ne!(
            fingerprint(&a),
            fingerprint(&frame(1, 2)),
            "the last byte is"
        );
        let mut hashed = HashedFrames::default();
        for bytes in [&a, &b, &c, &b, &a, &c] {
            assert_eq!(hashed.digest(&Arc::new(bytes.clone())), sha256(bytes));
        }
        assert_eq!((hashed.len(), hashed.hashes), (3, 3));
    }

    /// A Game Boy screen: 144 rows of 640 bytes.
    const ROW: usize = 640;

    #[test]
    fn no_column_of_a_screen_is_blind_to_the_fingerprint() {
        let base = frame(1, 1);
        let reference = fingerprint(&base);
        for top in [0, 1, 7, 60, 144 - 13] {
            for column in 0..ROW {
                let mut bytes = base.clone();
                for row in top..top + 13 {
                    bytes[row * ROW + column] ^= 0x40;
                }
                assert_ne!(
                    fingerprint(&bytes),
                    reference,
                    "column {column} changed in rows {top} to {}",
                    top + 12
                );
            }
        }
    }

    #[test]
    fn a_picture_is_hashed_once_while_it_is_remembered() {
        let mut hashed = HashedFrames::default();
        let budget = HashedFrames::BUDGET / SCREEN;
        let pictures: Vec<_> = (0..budget + 5)
            .map(|i| Arc::new(frame(9, u8::try_from(i).unwrap_or(0))))
            .collect();
        for p in &pictures[..budget] {
            hashed.digest(p);
        }
        assert_eq!((hashed.len(), hashed.hashes), (budget, budget));
        // Each comes back as a new buffer: found, none hashed again, nothing more kept.
        for p in &pictures[..budget] {
            assert_eq!(hashed.digest(&Arc::new(p.to_vec())), sha256(p));
        }
        assert_eq!((hashed.len(), hashed.hashes), (budget, budget));
        // Past the budget the least recently used picture goes: the first one, seen again
        // least recently, is hashed again when it comes back.
        hashed.digest(&pictures[budget]);
        assert_eq!(hashed.len(), budget);
        assert!(hashed.kept <= HashedFrames::BUDGET);
        assert!(!hashed.remembers(&pictures[0]));
        assert!(hashed.remembers(&pictures[1]));
        hashed.digest(&Arc::new(pictures[0].to_vec()));
        assert_eq!(hashed.hashes, budget + 2);
        hashed.digest(&Arc::new(pictures[2].to_vec()));
        assert_eq!(hashed.hashes, budget + 2);
    }

    #[test]
    fn large_pictures_are_remembered_four_at_a_time() {
        let mut hashed = HashedFrames::default();
        let large = HashedFrames::BUDGET / 2 + 1;
        for i in 0..6u8 {
            let mut bytes = vec![i; large];
            bytes[0] = 0xFF;
            assert_eq!(hashed.digest(&Arc::new(bytes.clone())), sha256(&bytes));
            assert_eq!(hashed.len(), usize::from(i + 1).min(HashedFrames::MIN_KEPT));
        }
    }

    #[test]
    fn a_new_picture_is_hashed_from_the_last_checkpoint_it_shares() {
        let mut hashed = HashedFrames::default();
        let base = frame(4, 4);
        assert_eq!(hashed.digest(&Arc::new(base.clone())), sha256(&base));
        assert_eq!(
            hashed.hashed_bytes, SCREEN,
            "the first picture is hashed whole"
        );
        // Changed at the edges of checkpoints, in the middle of one, at the start and the end;
        // each against the picture before it (the most recently used).
        let mut previous = base;
        for at in [
            SCREEN - 1,
            CHECKPOINT - 1,
            CHECKPOINT,
            CHECKPOINT + 1,
            7 * CHECKPOINT + 100,
            0,
            SCREEN / CHECKPOINT * CHECKPOINT,
            SCREEN / CHECKPOINT * CHECKPOINT - 1,
        ] {
            let mut bytes = previous.clone();
            bytes[at] ^= 0x21;
            let before = hashed.hashed_bytes;
            assert_eq!(
                hashed.digest(&Arc::new(bytes.clone())),
                sha256(&bytes),
                "changed at byte {at}"
            );
            assert_eq!(
                hashed.hashed_bytes - before,
                SCREEN - at / CHECKPOINT * CHECKPOINT,
                "changed at byte {at}: hashed from the checkpoint before it"
            );
            previous = bytes;
        }
        // Another length shares what it can: a prefix of the last picture, two checkpoints and
        // a bit, is hashed from its second checkpoint; one longer, from the last.
        let before = hashed.hashed_bytes;
        let short = previous[..2 * CHECKPOINT + 10].to_vec();
        assert_eq!(hashed.digest(&Arc::new(short.clone())), sha256(&short));
        assert_eq!(hashed.hashed_bytes - before, 10);
        let mut long = previous.clone();
        long.extend_from_slice(&[9; 100]);
        let before = hashed.hashed_bytes;
        assert_eq!(hashed.digest(&Arc::new(long.clone())), sha256(&long));
        assert_eq!(
            hashed.hashed_bytes - before,
            long.len() - 2 * CHECKPOINT,
            "the short picture was the most recent: two checkpoints shared"
        );
    }

    #[test]
    fn a_frame_kept_shared_is_only_the_last() {
        let mut hashed = HashedFrames::default();
        let (a, b) = (Arc::new(frame(5, 0)), Arc::new(frame(5, 1)));
        hashed.digest(&a);
        hashed.digest(&b);
        assert_eq!(
            Arc::strong_count(&a),
            1,
            "a copy is remembered, not the buffer"
        );
        assert_eq!(Arc::strong_count(&b), 2, "the last frame is held");
    }
}
