//! temp
use flysim_brain::{Brain, generate};
use std::sync::Arc;
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let n: u32 = a[1].parse().unwrap();
    let conns: u64 = a[2].parse().unwrap();
    let inh: f64 = a[3].parse().unwrap();
    let k: usize = a[4].parse().unwrap();
    let delay: f64 = a[5].parse().unwrap();
    let c0 = generate::shiu_like(n, conns, inh, 3);
    let driven = generate::pick_neurons(n, k, "driven");
    let ff = a.get(7).is_some_and(|m| m == "ff");
    let mut edges = Vec::new();
    let mut text = String::from("pre,post,count\n");
    for pre in 0..n {
        if ff && driven.binary_search(&pre).is_err() {
            continue;
        }
        for e in c0.row(pre) {
            let (t, w) = (c0.targets()[e], c0.weights()[e]);
            if ff && driven.binary_search(&t).is_ok() {
                continue;
            }
            edges.push((pre, t, i64::from(w)));
            text.push_str(&format!("{pre},{t},{w}\n"));
        }
    }
    std::fs::write("/tmp/exp/edges.csv", text).unwrap();
    let c = Arc::new(
        flysim_brain::Connectome::from_edges(n, edges, None, Default::default(), "x").unwrap(),
    );
    let mut p = generate::shiu_profile(&c, "t", driven.clone(), 150.0);
    let kk = p.kernel.exp_delay_mut().unwrap();
    kk.neurons.delay_ms = delay;
    kk.overrides[0].params.delay_ms = delay;
    let mut counts = vec![0u64; n as usize];
    let t0 = std::time::Instant::now();
    let trials: i32 = a[6].parse().unwrap();
    for seed in 1..=trials {
        let mut b = Brain::new(p.clone(), c.clone(), seed, 1).unwrap();
        let mut down = 0u64;
        b.run_recording(10_000, &mut |s| {
            for &i in s {
                counts[i as usize] += 1;
                if driven.binary_search(&i).is_err() {
                    down += 1
                }
            }
        });
        print!("{:.2} ", down as f64 / (n as usize - k) as f64);
    }
    println!();
    let r: Vec<f64> = counts.iter().map(|&x| x as f64 / trials as f64).collect();
    std::fs::write("/tmp/exp/flysim_rates.json", format!("{:?}", r)).unwrap();
    let dr: f64 = driven.iter().map(|&i| r[i as usize]).sum::<f64>() / k as f64;
    let down: Vec<f64> = (0..n as usize)
        .filter(|i| driven.binary_search(&(*i as u32)).is_err())
        .map(|i| r[i])
        .collect();
    let dm = down.iter().sum::<f64>() / down.len() as f64;
    let active = down.iter().filter(|&&x| x > 0.5).count();
    let mx = down.iter().cloned().fold(0.0, f64::max);
    println!(
        "edges {} driven {dr:.1} down mean {dm:.2} active {active} max {mx:.1} ({:?})",
        c.edges(),
        t0.elapsed()
    );
}
