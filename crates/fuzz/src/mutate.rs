//! The mutator: turns one corpus input into a new input by a few random edits (bit flips, byte
//! and word overwrites, inserts, deletes, splices with another corpus input, truncation,
//! repetition of a slice, syntax tokens). Every choice comes from the [`SplitMix`] it is
//! handed, so the same seed gives the same inputs. It knows nothing about any format or target.

use crate::rng::SplitMix;

/// Byte values that tend to sit on boundaries (signs, ASCII edges, all bits).
const INTERESTING_BYTES: [u8; 10] = [0x00, 0x01, 0x07, 0x1f, 0x20, 0x7f, 0x80, 0xc0, 0xfe, 0xff];

/// Little-endian word values that tend to break length and offset fields.
const INTERESTING_WORDS: [u64; 12] = [
    0,
    1,
    7,
    8,
    0x7f,
    0xff,
    0x1_0000,
    0x1_0001,
    0x7fff_ffff,
    0xffff_ffff,
    0x7fff_ffff_ffff_ffff,
    u64::MAX,
];

/// Fragments of the text formats under test (JSON, KDL) and of their edge cases.
const TOKENS: [&[u8]; 24] = [
    b"{",
    b"}",
    b"[",
    b"]",
    b"\"",
    b"\\",
    b"\\u",
    b"\\ud800",
    b"\\udc00",
    b"1e999",
    b"-0",
    b"9007199254740993",
    b"0.1e-400",
    b"null",
    b"#true",
    b"#nan",
    b"/*",
    b"*/",
    b"//",
    b"r#\"",
    b"\"#",
    b"\n",
    b"=",
    b"\xf0\x9f\xaa\xb0",
];

/// How many edits one mutation stacks, at most.
const MAX_EDITS: usize = 4;

/// A mutator over a fixed corpus.
#[derive(Debug)]
pub struct Mutator<'a> {
    corpus: &'a [Vec<u8>],
    max_len: usize,
}

impl<'a> Mutator<'a> {
    /// A mutator whose inputs never exceed `max_len` bytes, splicing between `corpus` inputs.
    #[must_use]
    pub fn new(corpus: &'a [Vec<u8>], max_len: usize) -> Self {
        Self { corpus, max_len }
    }

    /// A new input: a random corpus input with one to [`MAX_EDITS`] edits.
    #[must_use]
    pub fn next_input(&self, rng: &mut SplitMix) -> Vec<u8> {
        let mut bytes = match self.corpus.len() {
            0 => Vec::new(),
            n => self.corpus[rng.below(n)].clone(),
        };
        for _ in 0..=rng.below(MAX_EDITS) {
            self.edit(&mut bytes, rng);
        }
        bytes.truncate(self.max_len);
        bytes
    }

    /// One random edit, in place.
    fn edit(&self, bytes: &mut Vec<u8>, rng: &mut SplitMix) {
        if bytes.is_empty() {
            insert_random(bytes, rng);
            return;
        }
        match rng.below(11) {
            0 => flip_bit(bytes, rng),
            1 => {
                let at = rng.below(bytes.len());
                bytes[at] = rng.byte();
            }
            2 => {
                let at = rng.below(bytes.len());
                bytes[at] = INTERESTING_BYTES[rng.below(INTERESTING_BYTES.len())];
            }
            3 => overwrite_word(bytes, rng),
            4 => insert_random(bytes, rng),
            5 => delete_range(bytes, rng),
            6 => self.splice(bytes, rng),
            7 => bytes.truncate(rng.below(bytes.len())),
            8 => repeat_slice(bytes, rng),
            9 => copy_within(bytes, rng),
            _ => insert_token(bytes, rng),
        }
    }

    /// Keeps a prefix of `bytes` and appends a suffix of another corpus input.
    fn splice(&self, bytes: &mut Vec<u8>, rng: &mut SplitMix) {
        let Some(other) = self.corpus.get(rng.below(self.corpus.len())) else {
            return;
        };
        bytes.truncate(rng.below(bytes.len() + 1));
        let from = rng.below(other.len() + 1);
        bytes.extend_from_slice(&other[from..]);
    }
}

fn flip_bit(bytes: &mut [u8], rng: &mut SplitMix) {
    let at = rng.below(bytes.len());
    bytes[at] ^= 1 << rng.below(8);
}

/// Overwrites a 1-, 2-, 4- or 8-byte little-endian word with an interesting value (or that
/// value plus or minus one).
fn overwrite_word(bytes: &mut [u8], rng: &mut SplitMix) {
    let width = [1, 2, 4, 8][rng.below(4)].min(bytes.len());
    let at = rng.below(bytes.len() - width + 1);
    let value = INTERESTING_WORDS[rng.below(INTERESTING_WORDS.len())];
    let value = match rng.below(3) {
        0 => value.wrapping_add(1),
        1 => value.wrapping_sub(1),
        _ => value,
    };
    bytes[at..at + width].copy_from_slice(&value.to_le_bytes()[..width]);
}

fn insert_random(bytes: &mut Vec<u8>, rng: &mut SplitMix) {
    let at = rng.below(bytes.len() + 1);
    let count = 1 + rng.below(16);
    let fresh: Vec<u8> = (0..count).map(|_| rng.byte()).collect();
    bytes.splice(at..at, fresh);
}

fn delete_range(bytes: &mut Vec<u8>, rng: &mut SplitMix) {
    let at = rng.below(bytes.len());
    let count = 1 + rng.below((bytes.len() - at).min(64));
    bytes.drain(at..at + count);
}

/// Inserts a slice of the input after itself, one to eight times.
fn repeat_slice(bytes: &mut Vec<u8>, rng: &mut SplitMix) {
    let at = rng.below(bytes.len());
    let len = 1 + rng.below((bytes.len() - at).min(256));
    let slice = bytes[at..at + len].to_vec();
    let times = 1 + rng.below(8);
    let end = at + len;
    bytes.splice(end..end, slice.iter().copied().cycle().take(len * times));
}

/// Overwrites one range of the input with another range of itself.
fn copy_within(bytes: &mut [u8], rng: &mut SplitMix) {
    let from = rng.below(bytes.len());
    let to = rng.below(bytes.len());
    let len = 1 + rng.below((bytes.len() - from.max(to)).min(64));
    bytes.copy_within(from..from + len, to);
}

fn insert_token(bytes: &mut Vec<u8>, rng: &mut SplitMix) {
    let at = rng.below(bytes.len() + 1);
    let token = TOKENS[rng.below(TOKENS.len())];
    bytes.splice(at..at, token.iter().copied());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corpus() -> Vec<Vec<u8>> {
        vec![
            b"{\"a\": [1, 2, 3]}".to_vec(),
            b"node 1 2 { child; }".to_vec(),
        ]
    }

    #[test]
    fn the_same_seed_gives_the_same_inputs() {
        let corpus = corpus();
        let mutator = Mutator::new(&corpus, 1024);
        let run = |seed| {
            let mut rng = SplitMix::new(seed);
            (0..200)
                .map(|_| mutator.next_input(&mut rng))
                .collect::<Vec<_>>()
        };
        assert_eq!(run(1), run(1));
        assert_ne!(run(1), run(2));
    }

    #[test]
    fn inputs_change_and_respect_the_length_cap() {
        let corpus = corpus();
        let mutator = Mutator::new(&corpus, 24);
        let mut rng = SplitMix::new(3);
        let inputs: Vec<Vec<u8>> = (0..2000).map(|_| mutator.next_input(&mut rng)).collect();
        assert!(inputs.iter().all(|i| i.len() <= 24));
        let changed = inputs.iter().filter(|i| !corpus.contains(i)).count();
        assert!(
            changed > 1900,
            "only {changed} of 2000 inputs differ from the corpus"
        );
        // Every edit kind leaves its mark somewhere: some inputs shrink, some grow.
        assert!(inputs.iter().any(|i| i.len() < 16));
        assert!(inputs.iter().any(|i| i.len() > 19));
    }

    #[test]
    fn an_empty_corpus_still_gives_inputs() {
        let mutator = Mutator::new(&[], 64);
        let mut rng = SplitMix::new(9);
        assert!((0..50).any(|_| !mutator.next_input(&mut rng).is_empty()));
    }

    #[test]
    fn splices_join_two_corpus_inputs() {
        let corpus = vec![b"aaaaaaaa".to_vec(), b"bbbbbbbb".to_vec()];
        let mutator = Mutator::new(&corpus, 64);
        let mut rng = SplitMix::new(5);
        let mixed = (0..2000)
            .map(|_| mutator.next_input(&mut rng))
            .filter(|i| i.contains(&b'a') && i.contains(&b'b'))
            .count();
        assert!(mixed > 0, "no input mixed the two corpus files");
    }
}
