//! [`AppliedBatches`]: the batch ids an environment worker has applied in its epoch (contracts:
//! a batch id is unique within an epoch; reusing one for another request is `CONFLICT`).
//!
//! Every `Environment.Advance` asks it once and adds to it once, and an epoch lasts as long as
//! the run, so it must stay small and quick for millions of steps. The session names the batch
//! of transition `k` `<episode>.batch-<k>`: ids of that shape, a stem, a hyphen and a decimal
//! number, are kept as ranges of numbers per stem, so an episode's batches take one range
//! however many steps it has. Any other id is kept whole. Membership is exact either way.
//!
//! It knows nothing of who names the batches or what applying one does.

use std::collections::{BTreeMap, BTreeSet};

use flysim_types::Id;

/// The batch ids applied in one epoch.
#[derive(Debug, Default)]
pub(super) struct AppliedBatches {
    /// Ids `<stem>-<n>`, `n` written in decimal without leading zeros: per stem, the numbers
    /// as disjoint, non-adjacent ranges, `start → end` (both included).
    numbered: BTreeMap<Box<str>, BTreeMap<u64, u64>>,
    /// Every other id.
    other: BTreeSet<Id>,
}

impl AppliedBatches {
    /// Whether `id` was applied in this epoch.
    pub(super) fn contains(&self, id: &Id) -> bool {
        match numbered(id.as_str()) {
            Some((stem, n)) => self
                .numbered
                .get(stem)
                .and_then(|ranges| ranges.range(..=n).next_back())
                .is_some_and(|(_, end)| n <= *end),
            None => self.other.contains(id),
        }
    }

    /// Records `id` as applied.
    pub(super) fn insert(&mut self, id: &Id) {
        let Some((stem, n)) = numbered(id.as_str()) else {
            self.other.insert(id.clone());
            return;
        };
        let ranges = match self.numbered.get_mut(stem) {
            Some(ranges) => ranges,
            None => self.numbered.entry(stem.into()).or_default(),
        };
        insert_number(ranges, n);
    }

    /// Forgets every id (a new epoch).
    pub(super) fn clear(&mut self) {
        self.numbered.clear();
        self.other.clear();
    }
}

/// `text` as `(stem, n)` when it is `<stem>-<n>` with `n` a `u64` in decimal without leading
/// zeros (so that exactly one text gives each pair).
fn numbered(text: &str) -> Option<(&str, u64)> {
    let (stem, digits) = text.rsplit_once('-')?;
    let canonical = !digits.is_empty()
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    if !canonical {
        return None;
    }
    digits.parse().ok().map(|n| (stem, n))
}

/// Adds `n` to `ranges`, merging it with a range that ends just before it or starts just after.
fn insert_number(ranges: &mut BTreeMap<u64, u64>, n: u64) {
    let before = ranges.range(..=n).next_back().map(|(s, e)| (*s, *e));
    if let Some((_, end)) = before
        && n <= end
    {
        return;
    }
    let after = n
        .checked_add(1)
        .and_then(|next| ranges.get(&next).map(|end| (next, *end)));
    match (before, after) {
        (Some((start, end)), Some((next, last))) if end.checked_add(1) == Some(n) => {
            ranges.remove(&next);
            ranges.insert(start, last);
        }
        (Some((start, end)), _) if end.checked_add(1) == Some(n) => {
            ranges.insert(start, n);
        }
        (_, Some((next, last))) => {
            ranges.remove(&next);
            ranges.insert(n, last);
        }
        _ => {
            ranges.insert(n, n);
        }
    }
}

#[cfg(test)]
#[path = "batches_tests.rs"]
mod tests;
