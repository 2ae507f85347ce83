//! The frames the digest thread has hashed, so that each distinct picture is hashed once.
//!
//! A Game Boy game redraws only what moves, and its screen keeps coming back to pictures it
//! showed a while ago: of the 3,601 frames of `gameboy.kdl` with the synthetic agent, 70% are
//! the frame before and only 503 are distinct, but remembering only the last four pictures
//! hashed 788 of them. [`HashedFrames`] remembers every picture it hashed within a memory
//! budget ([`HashedFrames::BUDGET`], at least [`HashedFrames::MIN_KEPT`] pictures), each as a
//! copy of its bytes with its SHA-256, in a map ordered by the bytes: finding a frame there is
//! a few comparisons of bytes (`memcmp`, each stopping at the first byte that differs), and a
//! frame takes a remembered digest only when its bytes are that picture's bytes, so the digest
//! is always the SHA-256 of the frame's own bytes. (A fingerprint of the bytes instead, tried
//! first, cost 0.7 ms a frame in the unoptimised builds tests run, ten times the SHA-256.)
//!
//! It keeps copies rather than the frames' shared buffers so that a world that redraws its
//! screen into a buffer nobody holds (the Game Boy world does) gets its buffers back as soon as
//! the row is written; only the last frame is held, shared, so that a frame handed over again as
//! the same buffer (an unchanged screen) is known without reading it.
//!
//! This module knows nothing of threads, rows or worlds: it maps bytes to their SHA-256.

use std::collections::BTreeMap;
use std::sync::Arc;

use flysim_types::Digest;
use flysim_types::digest::sha256;

/// A remembered picture's digest, and when it was last asked for.
struct Remembered {
    digest: Digest,
    used: u64,
}

/// The pictures hashed so far, within [`HashedFrames::BUDGET`], and the last frame seen.
#[derive(Default)]
pub(crate) struct HashedFrames {
    /// By their bytes.
    pictures: BTreeMap<Box<[u8]>, Remembered>,
    /// The bytes of `pictures`.
    kept: usize,
    /// Lookups so far (what `Remembered::used` counts in).
    lookups: u64,
    /// The last frame seen, as it was handed over, with its digest.
    last: Option<(Arc<Vec<u8>>, Digest)>,
    /// How many frames were hashed.
    #[cfg(test)]
    hashes: usize,
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
        if let Some(found) = self.pictures.get_mut(bytes) {
            found.used = self.lookups;
            return found.digest;
        }
        let digest = sha256(bytes);
        #[cfg(test)]
        {
            self.hashes += 1;
        }
        self.pictures.insert(
            bytes.into(),
            Remembered {
                digest,
                used: self.lookups,
            },
        );
        self.kept += bytes.len();
        while self.pictures.len() > Self::MIN_KEPT && self.kept > Self::BUDGET {
            self.forget_least_recently_used();
        }
        digest
    }

    fn forget_least_recently_used(&mut self) {
        let Some(oldest) = self.pictures.values().map(|r| r.used).min() else {
            return;
        };
        let kept = &mut self.kept;
        self.pictures.retain(|bytes, r| {
            let keep = r.used != oldest;
            if !keep {
                *kept -= bytes.len();
            }
            keep
        });
    }

    /// How many pictures are remembered.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.pictures.len()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use flysim_types::digest::sha256;

    use super::HashedFrames;

    const SCREEN: usize = 160 * 144 * 4;

    /// A 160×144 RGBA frame, all `fill` but its last byte, `last`.
    fn frame(fill: u8, last: u8) -> Vec<u8> {
        let mut bytes = vec![fill; SCREEN];
        if let Some(b) = bytes.last_mut() {
            *b = last;
        }
        bytes
    }

    /// The frames the tests hand over: repeats, a frame that differs only in its last byte,
    /// other lengths (one a prefix of another), empty frames, more screens than the budget
    /// holds, and a frame let go coming back.
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
        assert!(!hashed.pictures.contains_key(&pictures[0][..]));
        assert!(hashed.pictures.contains_key(&pictures[1][..]));
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
