#![expect(
    missing_docs,
    reason = "criterion's macros generate undocumented functions"
)]
//! What the `screen` view costs a field outside Dolphin: converting the test program's 640 x 480
//! YUV 4:2:2 framebuffer to RGBA, and the SHA-256 the session then takes of the RGBA frame.
//!
//! `cargo bench -p flysim-dolphin --bench view`. (Reading the framebuffer out of Dolphin's
//! memory is one `pread` of 600 KiB; the note on the any-game issue gives its cost in a run.)

use criterion::{Criterion, criterion_group, criterion_main};
use flysim_dolphin::fieldcount::XFB;
use flysim_dolphin::xfb::to_rgba;

/// A framebuffer as the program draws it: a 16-line band over dark lines.
fn framebuffer() -> Vec<u8> {
    let mut bytes = Vec::with_capacity(XFB.bytes());
    for line in 0..XFB.height {
        let luma = if line < 16 { 0x42 } else { 0x10 };
        for _ in 0..XFB.width / 2 {
            bytes.extend_from_slice(&[luma, 0x80, luma, 0x80]);
        }
    }
    bytes
}

fn view(c: &mut Criterion) {
    let yuyv = framebuffer();
    let mut rgba = Vec::new();
    let mut group = c.benchmark_group("screen-view-per-field");
    group.bench_function("yuyv-to-rgba", |b| b.iter(|| to_rgba(&yuyv, &mut rgba)));
    to_rgba(&yuyv, &mut rgba);
    group.bench_function("sha256-of-rgba", |b| {
        b.iter(|| flysim_types::digest::sha256(&rgba))
    });
    group.finish();
}

criterion_group!(benches, view);
criterion_main!(benches);
