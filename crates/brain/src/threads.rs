//! The multi-threaded tick driver both kernels share, and the partition of the neurons into
//! index ranges: the reason results do not depend on the thread count.
//!
//! A kernel splits its state into shards (contiguous index ranges, one per thread) that each
//! implement [`ShardTick`]: `integrate` performs every update of the shard's own neurons for
//! one tick and lists its spikes (ascending); `propagate` delivers the whole tick's spike list
//! (every shard's, concatenated in shard order, which is ascending index order) to the targets
//! inside the shard. With one shard both run on the calling thread; with more, each shard runs
//! on its own scoped thread, spike lists are published into slots double-buffered by tick
//! parity, and one barrier per tick separates integration from propagation. This module knows
//! nothing of neurons' equations.

use std::sync::{Barrier, Mutex};

/// One shard's part of a tick.
pub(crate) trait ShardTick: Send {
    /// Updates the shard's neurons for tick `j` of the batch and pushes its spikes (global
    /// indices, ascending) to `spikes`.
    fn integrate(&mut self, j: u64, spikes: &mut Vec<u32>);
    /// Delivers tick `j`'s whole spike list to the targets in this shard (`whole`: this shard is
    /// the only one, so every target is its own).
    fn propagate(&mut self, j: u64, spikes: &[u32], whole: bool);
}

/// Runs `ticks` ticks over `shards` (one thread each), calling `observe(j, spikes)` on the
/// calling thread once per tick with the whole spike list in ascending order: with one shard
/// between integration and propagation (the brain's observer reads each spike's row bounds,
/// which delivery then finds cached), with more after the tick. `observe` sees no shard's
/// state, so where it runs in the tick changes nothing. Returns the first shard (which ran on
/// the calling thread).
pub(crate) fn run<S: ShardTick>(
    mut shards: Vec<S>,
    ticks: u64,
    observe: &mut dyn FnMut(u64, &[u32]),
) -> Option<S> {
    if shards.len() == 1 {
        let mut shard = shards.pop()?;
        let mut spikes = Vec::new();
        for j in 0..ticks {
            spikes.clear();
            shard.integrate(j, &mut spikes);
            observe(j, &spikes);
            shard.propagate(j, &spikes, true);
        }
        return Some(shard);
    }
    let n = shards.len();
    let barrier = Barrier::new(n);
    let slots: Vec<[Mutex<Vec<u32>>; 2]> = (0..n)
        .map(|_| [Mutex::new(Vec::new()), Mutex::new(Vec::new())])
        .collect();
    let (barrier, slots) = (&barrier, &slots);
    let mut rest = shards.split_off(1);
    let mut first = shards.pop();
    std::thread::scope(|scope| {
        for (i, mut shard) in rest.drain(..).enumerate() {
            let index = i + 1;
            scope.spawn(move || {
                let mut all = Vec::new();
                let mut own = Vec::new();
                for j in 0..ticks {
                    step(&mut shard, index, j, &mut own, &mut all, barrier, slots);
                }
            });
        }
        if let Some(shard) = first.as_mut() {
            let mut all = Vec::new();
            let mut own = Vec::new();
            for j in 0..ticks {
                step(shard, 0, j, &mut own, &mut all, barrier, slots);
                observe(j, &all);
            }
        }
    });
    first
}

/// One tick of one shard in a multi-shard batch: integrate, publish, wait, gather, propagate.
fn step<S: ShardTick>(
    shard: &mut S,
    index: usize,
    j: u64,
    own: &mut Vec<u32>,
    all: &mut Vec<u32>,
    barrier: &Barrier,
    slots: &[[Mutex<Vec<u32>>; 2]],
) {
    let parity = (j % 2) as usize;
    own.clear();
    shard.integrate(j, own);
    {
        let mut slot = slots[index][parity]
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        slot.clear();
        slot.extend_from_slice(own);
    }
    barrier.wait();
    all.clear();
    for s in slots {
        let list = s[parity]
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        all.extend_from_slice(&list);
    }
    shard.propagate(j, all, false);
}

/// Splits `0..n` into at most `parts` contiguous ranges balanced by `1 + in-degree` (the work of
/// sweeping a neuron and of the events it receives), each at least `min_len` neurons long.
pub(crate) fn partition(in_degrees: &[u32], parts: usize, min_len: usize) -> Vec<(u32, u32)> {
    let n = in_degrees.len();
    let parts = parts.clamp(1, (n / min_len.max(1)).max(1));
    let total: u64 = in_degrees.iter().map(|&d| 1 + u64::from(d)).sum();
    let mut bounds = Vec::with_capacity(parts);
    let mut acc = 0u64;
    let mut lo = 0usize;
    let mut k = 1u64;
    for (i, &d) in in_degrees.iter().enumerate() {
        acc += 1 + u64::from(d);
        if (bounds.len() + 1) < parts
            && acc * parts as u64 >= k * total
            && i + 1 - lo >= min_len
            && n - (i + 1) >= min_len
        {
            bounds.push((lo as u32, (i + 1) as u32));
            lo = i + 1;
            k += 1;
        }
    }
    bounds.push((lo as u32, n as u32));
    bounds
}

/// Splits `data` into consecutive pieces of the shards' lengths.
pub(crate) fn split_mut<'a, T>(mut data: &'a mut [T], shards: &[(u32, u32)]) -> Vec<&'a mut [T]> {
    let mut out = Vec::with_capacity(shards.len());
    for &(lo, hi) in shards {
        let (piece, rest) = data.split_at_mut((hi - lo) as usize);
        out.push(piece);
        data = rest;
    }
    out
}
