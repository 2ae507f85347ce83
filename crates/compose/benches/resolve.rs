#![expect(
    missing_docs,
    reason = "criterion's macros generate undocumented functions"
)]
//! Resolves a four-agent composition (with an include) from its bytes to a sealed launch plan.
//! Goal: under 5 ms. Run with `cargo bench -p flysim-compose --bench resolve`.

use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use flysim_compose::{Input, plan};

fn resolve_four_agents(c: &mut Criterion) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/compositions/ok");
    let bytes = std::fs::read(dir.join("four-flies.kdl")).expect("the fixture exists");
    let input = Input {
        name: "four-flies.kdl",
        bytes: &bytes,
        dir: &dir,
    };
    assert!(
        plan(input, None, &[flysim_arena::SPEC]).is_ok(),
        "the fixture resolves"
    );
    c.bench_function("resolve four-flies.kdl", |b| {
        b.iter(|| plan(std::hint::black_box(input), None, &[flysim_arena::SPEC]));
    });
}

criterion_group!(benches, resolve_four_agents);
criterion_main!(benches);
