//! temp
use flysim_brain::{Brain, generate};
use std::sync::Arc;
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let text = std::fs::read_to_string(&a[1]).unwrap();
    let n: u32 = a[2].parse().unwrap();
    let nd: u32 = a[3].parse().unwrap();
    let trials: i32 = a[4].parse().unwrap();
    let edges: Vec<(u32, u32, i64)> = text
        .lines()
        .skip(1)
        .map(|l| {
            let v: Vec<i64> = l.split(',').map(|x| x.parse().unwrap()).collect();
            (v[0] as u32, v[1] as u32, v[2])
        })
        .collect();
    let c = Arc::new(
        flysim_brain::Connectome::from_edges(n, edges, None, Default::default(), "x").unwrap(),
    );
    let driven: Vec<u32> = (0..nd).collect();
    let p = generate::shiu_profile(&c, "t", driven.clone(), 150.0);
    let mut counts = vec![0u64; n as usize];
    for seed in 1..=trials {
        let mut b = Brain::new(p.clone(), c.clone(), seed, 1).unwrap();
        b.run_recording(10_000, &mut |s| {
            for &i in s {
                counts[i as usize] += 1;
            }
        });
    }
    let r: Vec<f64> = counts.iter().map(|&x| x as f64 / trials as f64).collect();
    std::fs::write("/tmp/exp/pairs_flysim.json", format!("{:?}", r)).unwrap();
}
