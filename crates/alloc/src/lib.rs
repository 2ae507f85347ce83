//! The allocator every flysim process runs with (`flysim` and the benches that measure it):
//! mimalloc, asked for a plain block whenever a plain block is aligned enough.
//!
//! It owns one [`GlobalAlloc`], [`Allocator`]. It knows nothing of sessions, payloads or any other
//! flysim crate; allocation addresses never reach a digest.
//!
//! Why not `mimalloc::MiMalloc`: that type hands every request to `mi_malloc_aligned`, even
//! those whose alignment every block has. In mimalloc 3 that call takes a block from its size
//! class's page only while the page's free list has one; when the list is empty it does not
//! collect the blocks freed since (the ordinary `mi_malloc` path does) but falls to a generic
//! path that, for a size whose class is not a power of two (48, 80, 96, 112, 160 bytes and so on),
//! allocates `size + alignment - 1`: a block of the next class up. Until an ordinary allocation
//! of that size collects the page's freed blocks, which none makes, every such request takes
//! that path: about 170 instructions instead of 20, and a larger block. A step makes a few hundred
//! small allocations; asking `mi_malloc` for them took an in-process step of two counter flies
//! from 145,001 to 139,574 instructions and a Game Boy step's work outside the frame from
//! 106,169 to 103,252 (callgrind, run digests unchanged).
//!
//! A request whose alignment is at most a machine word goes to `mi_malloc` (every mimalloc
//! block is a whole number of words from a word-aligned start); a larger alignment still goes
//! to the aligned calls. Frees go to `mi_free`, which takes both.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys as mi;

/// The alignment every mimalloc block has: its blocks are whole words, from word-aligned starts.
const PLAIN_ALIGN: usize = std::mem::size_of::<usize>();

/// mimalloc as flysim's global allocator (`#[global_allocator] static A: Allocator = Allocator;`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Allocator;

/// Whether `layout` can be served by an ordinary block.
const fn plain(layout: &Layout) -> bool {
    layout.align() <= PLAIN_ALIGN
}

/// A new block for `layout`: from `ordinary` when an ordinary block is aligned enough, else
/// from `aligned` (mimalloc's pair of calls: plain or zeroed).
///
/// # Safety
///
/// `ordinary` and `aligned` are mimalloc's allocation calls, which accept any size and a
/// power-of-two alignment (`Layout` guarantees one).
#[inline(always)]
#[expect(unsafe_code, reason = "calls mimalloc's C allocation functions")]
unsafe fn block(
    layout: &Layout,
    ordinary: unsafe extern "C" fn(usize) -> *mut c_void,
    aligned: unsafe extern "C" fn(usize, usize) -> *mut c_void,
) -> *mut u8 {
    // SAFETY: the caller's promise above.
    unsafe {
        if plain(layout) {
            ordinary(layout.size()).cast()
        } else {
            aligned(layout.size(), layout.align()).cast()
        }
    }
}

// SAFETY (for the impl): each method forwards to the mimalloc call with the same contract as
// `GlobalAlloc`'s (a null on failure, a block of at least the size asked, aligned as asked: by
// the word alignment of every block in the plain case, by the aligned call otherwise); every
// block, however made, is freed and resized by mimalloc, which takes blocks from either call.
#[expect(
    unsafe_code,
    reason = "a global allocator is an unsafe trait, its body calls into mimalloc's C library"
)]
unsafe impl GlobalAlloc for Allocator {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: mimalloc's allocation calls, as `block` needs.
        unsafe { block(&layout, mi::mi_malloc, mi::mi_malloc_aligned) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: mimalloc's zeroing allocation calls, as `block` needs.
        unsafe { block(&layout, mi::mi_zalloc, mi::mi_zalloc_aligned) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from this allocator (the caller's promise), so from mimalloc.
        unsafe { mi::mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from this allocator with `layout` (the caller's promise); the new
        // block keeps `layout`'s alignment, as `alloc` would give it.
        unsafe {
            if plain(&layout) {
                mi::mi_realloc(ptr.cast(), new_size).cast()
            } else {
                mi::mi_realloc_aligned(ptr.cast(), new_size, layout.align()).cast()
            }
        }
    }
}

#[cfg(test)]
mod tests;
