//! The allocator's promises, checked through its `GlobalAlloc` methods: every layout gets a
//! block as large and as aligned as asked, a small size class keeps its own blocks after its
//! first page fills, zeroed blocks are zero, and a resized block keeps its bytes.

#![expect(
    unsafe_code,
    reason = "the tests call the allocator's unsafe methods with the layouts they allocated"
)]

use std::alloc::{GlobalAlloc, Layout};

use super::Allocator;

unsafe extern "C" {
    /// mimalloc's size of a live block (`libmimalloc-sys` binds it only with its `extended`
    /// feature, which the allocator itself does not need).
    fn mi_usable_size(p: *const std::ffi::c_void) -> usize;
}

/// The bytes mimalloc can hand out at `ptr` (at least the size asked).
fn usable(ptr: *mut u8) -> usize {
    // SAFETY: every caller passes a live block of this allocator, so of mimalloc.
    unsafe { mi_usable_size(ptr.cast()) }
}

/// Allocates `layout`, checks the block and writes every byte of it.
fn block(layout: Layout) -> *mut u8 {
    // SAFETY: `layout` has a non-zero size (every caller's).
    let ptr = unsafe { Allocator.alloc(layout) };
    assert!(!ptr.is_null(), "no block for {layout:?}");
    assert_eq!(ptr as usize % layout.align(), 0, "{layout:?} at {ptr:p}");
    assert!(
        usable(ptr) >= layout.size(),
        "{layout:?}: {} usable",
        usable(ptr)
    );
    // SAFETY: the block holds `layout.size()` bytes.
    unsafe { ptr.write_bytes(0xA5, layout.size()) };
    ptr
}

#[test]
fn every_layout_gets_a_block_as_large_and_as_aligned_as_asked() {
    let sizes = (1..=1100).chain([2047, 4095, 4096, 4097, 65_535, 65_536, (1 << 20) + 3]);
    for size in sizes {
        for align in [1, 2, 4, 8, 16, 32, 64, 4096] {
            let layout = Layout::from_size_align(size, align).expect("a valid layout");
            let ptr = block(layout);
            // SAFETY: `ptr` was allocated with `layout` just above.
            unsafe { Allocator.dealloc(ptr, layout) };
        }
    }
}

#[test]
fn a_size_class_keeps_its_own_blocks_after_its_first_page_fills() {
    // Sizes whose class is not a power of two, aligned to a word: mimalloc's aligned call
    // serves them from the next class up once the first page of their own is full (48 from
    // 64, 96 from 112, 384 and 768 from 448 and 896 only), a plain request from their own.
    for size in [48, 80, 96, 160, 384, 768] {
        let layout = Layout::from_size_align(size, 8).expect("a valid layout");
        for round in 0..2 {
            let blocks: Vec<*mut u8> = (0..20_000).map(|_| block(layout)).collect();
            let other = blocks.iter().filter(|&&p| usable(p) != size).count();
            assert_eq!(
                other, 0,
                "{size} bytes, round {round}: {other} of 20,000 blocks from another class"
            );
            for ptr in blocks {
                // SAFETY: allocated with `layout` above.
                unsafe { Allocator.dealloc(ptr, layout) };
            }
        }
    }
}

#[test]
fn zeroed_blocks_are_zero_where_freed_blocks_were_written() {
    for (size, align) in [(64, 8), (24, 8), (200, 64), (5000, 4096)] {
        let layout = Layout::from_size_align(size, align).expect("a valid layout");
        for _ in 0..1000 {
            let dirty = block(layout);
            // SAFETY: allocated with `layout` just above.
            unsafe { Allocator.dealloc(dirty, layout) };
            // SAFETY: a non-zero size.
            let ptr = unsafe { Allocator.alloc_zeroed(layout) };
            assert!(!ptr.is_null());
            assert_eq!(ptr as usize % align, 0);
            // SAFETY: the block holds `size` bytes.
            let bytes = unsafe { std::slice::from_raw_parts(ptr, size) };
            assert!(
                bytes.iter().all(|&b| b == 0),
                "{layout:?}: a zeroed block is not zero"
            );
            // SAFETY: allocated with `layout` just above.
            unsafe { Allocator.dealloc(ptr, layout) };
        }
    }
}

#[test]
fn a_resized_block_keeps_its_bytes_and_its_alignment() {
    for align in [1, 8, 16, 64, 4096] {
        let mut layout = Layout::from_size_align(3, align).expect("a valid layout");
        // SAFETY: a non-zero size.
        let mut ptr = unsafe { Allocator.alloc(layout) };
        let fill = |ptr: *mut u8, from: usize, to: usize| {
            for i in from..to {
                // SAFETY: the block holds at least `to` bytes.
                unsafe { ptr.add(i).write((i % 251) as u8) };
            }
        };
        fill(ptr, 0, 3);
        let mut size = 3;
        // Grows to a mebibyte and shrinks back, one size class jump after another.
        let steps = [17, 100, 1000, 70_000, 1 << 20, 50_000, 40, 5];
        for new in steps {
            // SAFETY: `ptr` is a live block of `layout`; `new` is non-zero.
            ptr = unsafe { Allocator.realloc(ptr, layout, new) };
            assert!(!ptr.is_null());
            assert_eq!(ptr as usize % align, 0, "{new} bytes aligned to {align}");
            let kept = size.min(new);
            for i in 0..kept {
                // SAFETY: the block holds at least `kept` bytes.
                let byte = unsafe { ptr.add(i).read() };
                assert_eq!(
                    byte,
                    (i % 251) as u8,
                    "byte {i} after resizing {size} -> {new}"
                );
            }
            fill(ptr, kept, new);
            size = new;
            layout = Layout::from_size_align(new, align).expect("a valid layout");
        }
        // SAFETY: `ptr` is a live block of `layout`.
        unsafe { Allocator.dealloc(ptr, layout) };
    }
}
