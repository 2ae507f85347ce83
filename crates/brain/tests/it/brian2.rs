//! Agreement of `lif-exp-delay-v1` with Brian2 (the Shiu et al. 2024 model's own simulator) on
//! one network and one drive: a 3,000-neuron graph with FlyWire-like statistics (a quarter of
//! the neurons inhibitory, heavy-tailed degrees and synapse counts) plus 20 strongly coupled
//! reciprocal pairs, 150 neurons driven by Poisson input at 150 Hz, 1 s, 10 trials on each
//! side. The mean rates of the driven and of the other neurons must agree within 5 % and the
//! per-neuron rates must correlate at 0.95 or more.
//!
//! The network is built so that both the delay and the refractory freeze show in the rates:
//! input that arrives at a refractory neuron is lost, so without the freeze the network fires
//! more; and a reciprocal pair, started by a driven neuron, reverberates only with the delay
//! (with a one-tick delay the partner's answer arrives while the neuron is still refractory,
//! and is lost).
//!
//! Brian2 (pinned in `tests/brian2/harness.rs`) is installed into a virtual environment under
//! the target directory when it is missing; without Python 3, `venv` or a reachable package
//! index the test says what is missing and passes without comparing.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use flysim_brain::{Brain, Connectome, Profile, generate};

#[path = "../brian2/harness.rs"]
#[allow(
    dead_code,
    reason = "the test runs the Shiu script and measures no time"
)]
mod harness;

use harness::{brian2_config, brian2_python, spike_counts, write_edges};

const NEURONS: u32 = 3_000;
const CONNECTIONS: u64 = 600_000;
const INHIBITORY: f64 = 0.25;
const DRIVEN: usize = 150;
const RATE_HZ: f64 = 150.0;
const TRIALS: usize = 10;
const TICKS: u64 = 10_000;
/// Reciprocal pairs and the synapse count of each of their two connections.
const PAIRS: usize = 20;
const PAIR_COUNT: i64 = 1_000;

/// The test network: the FlyWire-like graph with [`PAIRS`] reciprocal pairs of neurons that
/// are not driven in place of those neurons' own outputs, the first of each pair also excited
/// by one driven neuron, which starts the pair's reverberation early in every trial (counts
/// summed with any existing connection). The pairs project nowhere else, so their activity
/// stays out of the rest of the network.
fn network(driven: &[u32]) -> Connectome {
    let base = generate::shiu_like(NEURONS, CONNECTIONS, INHIBITORY, 3);
    let free: Vec<u32> = generate::pick_neurons(NEURONS, 2 * PAIRS + DRIVEN, "pairs")
        .into_iter()
        .filter(|i| driven.binary_search(i).is_err())
        .take(2 * PAIRS)
        .collect();
    let in_pair = |i: &u32| free.contains(i);
    let mut edges: Vec<(u32, u32, i64)> = (0..NEURONS)
        .filter(|pre| !in_pair(pre))
        .flat_map(|pre| {
            let base = &base;
            base.row(pre)
                .map(move |e| (pre, base.targets()[e], i64::from(base.weights()[e])))
        })
        .collect();
    for (pair, &source) in free.chunks(2).zip(driven) {
        edges.push((source, pair[0], PAIR_COUNT));
        edges.push((pair[0], pair[1], PAIR_COUNT));
        edges.push((pair[1], pair[0], PAIR_COUNT));
    }
    Connectome::from_edges(
        NEURONS,
        edges,
        None,
        base.meta().clone(),
        "brian2-agreement",
    )
    .unwrap()
}

/// The Python of the Brian2 environment under the target directory (or, failing that, the
/// default target directory's), installing Brian2 when missing; `None` (having said why) when
/// that is not possible here.
#[expect(clippy::print_stderr, reason = "the explicit skip message")]
fn python() -> Option<PathBuf> {
    let ours = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .map_or_else(|| PathBuf::from("brian2-venv"), |t| t.join("brian2-venv"));
    let default = crate::root().join("target/brian2-venv");
    brian2_python(&[ours, default])
        .map_err(|what| eprintln!("SKIPPED: the Brian2 comparison needs {what}"))
        .ok()
}

/// Runs the script; the spike counts per trial and neuron, the Brian2 version and wall seconds.
fn run_brian2(
    python: &Path,
    dir: &Path,
    config: &serde_json::Value,
) -> (Vec<Vec<u64>>, String, f64) {
    let v = harness::run_brian2(python, dir, config).unwrap();
    (
        spike_counts(&v),
        v["brian2"].as_str().unwrap().to_owned(),
        v["wallSeconds"].as_f64().unwrap(),
    )
}

/// Spike counts per neuron of `trials` flysim runs (agent seeds 1..=trials) of `ticks` ticks,
/// on two threads of trials.
fn run_flysim(profile: &Profile, conn: &Arc<Connectome>, trials: usize) -> Vec<Vec<u64>> {
    let run = |seed: usize| {
        let mut b = Brain::new(profile.clone(), conn.clone(), seed as i32, 1).unwrap();
        let mut counts = vec![0u64; conn.neurons() as usize];
        b.run_recording(TICKS, &mut |spikes| {
            spikes.iter().for_each(|&s| counts[s as usize] += 1);
        });
        counts
    };
    std::thread::scope(|s| {
        let odd = s.spawn(|| (1..=trials).step_by(2).map(run).collect::<Vec<_>>());
        let even: Vec<_> = (2..=trials).step_by(2).map(run).collect();
        let odd = odd.join().unwrap();
        let mut all = Vec::new();
        for (i, o) in odd.into_iter().enumerate() {
            all.push(o);
            if let Some(e) = even.get(i) {
                all.push(e.clone());
            }
        }
        all
    })
}

/// Per-neuron mean rate in Hz over trials of 1 s.
fn mean_rates(counts: &[Vec<u64>]) -> Vec<f64> {
    let n = counts[0].len();
    (0..n)
        .map(|i| counts.iter().map(|t| t[i] as f64).sum::<f64>() / counts.len() as f64)
        .collect()
}

fn mean(v: impl Iterator<Item = f64>) -> f64 {
    let (s, n) = v.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
    s / n.max(1) as f64
}

fn correlation(a: &[f64], b: &[f64]) -> f64 {
    let (ma, mb) = (mean(a.iter().copied()), mean(b.iter().copied()));
    let cov: f64 = a.iter().zip(b).map(|(x, y)| (x - ma) * (y - mb)).sum();
    let va: f64 = a.iter().map(|x| (x - ma) * (x - ma)).sum();
    let vb: f64 = b.iter().map(|y| (y - mb) * (y - mb)).sum();
    cov / (va * vb).sqrt()
}

#[test]
#[expect(
    clippy::print_stdout,
    reason = "the figures the comparison is quoted with"
)]
fn lif_exp_delay_agrees_with_brian2() {
    let Some(python) = python() else {
        return;
    };
    let driven = generate::pick_neurons(NEURONS, DRIVEN, "driven");
    let conn = Arc::new(network(&driven));
    let profile = generate::shiu_profile(&conn, "brian2-agreement", driven.clone(), RATE_HZ);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("brian2-agreement");
    std::fs::create_dir_all(&dir).unwrap();
    let edges = dir.join("edges.csv");
    write_edges(&conn, &edges).unwrap();
    let config = brian2_config(&profile, &edges, &driven, TRIALS, "numpy");
    let started = std::time::Instant::now();
    let (theirs, version, wall) = run_brian2(&python, &dir, &config);
    let brian2_seconds = started.elapsed().as_secs_f64();
    let started = std::time::Instant::now();
    let ours = run_flysim(&profile, &conn, TRIALS);
    let flysim_seconds = started.elapsed().as_secs_f64();
    let (ours, theirs) = (mean_rates(&ours), mean_rates(&theirs));
    let is_driven = |i: usize| driven.binary_search(&(i as u32)).is_ok();
    let population = |r: &[f64], want: bool| {
        mean(
            r.iter()
                .enumerate()
                .filter(|(i, _)| is_driven(*i) == want)
                .map(|(_, &x)| x),
        )
    };
    let (ours_driven, theirs_driven) = (population(&ours, true), population(&theirs, true));
    let (ours_down, theirs_down) = (population(&ours, false), population(&theirs, false));
    let r_all = correlation(&ours, &theirs);
    let (o_down, t_down): (Vec<f64>, Vec<f64>) = (0..ours.len())
        .filter(|&i| !is_driven(i))
        .map(|i| (ours[i], theirs[i]))
        .unzip();
    let r_down = correlation(&o_down, &t_down);
    let off = |a: f64, b: f64| (a - b).abs() / b;
    println!(
        "Brian2 {version} (numpy target, {wall:.1} s simulating, {brian2_seconds:.1} s in all) vs \
         flysim lif-exp-delay-v1 ({flysim_seconds:.1} s), {} neurons, {} edges, {TRIALS} trials of 1 s:\n  \
         driven mean rate {ours_driven:.2} Hz vs {theirs_driven:.2} Hz ({:+.2} %)\n  \
         downstream mean rate {ours_down:.3} Hz vs {theirs_down:.3} Hz ({:+.2} %)\n  \
         per-neuron rate correlation {r_all:.4} (downstream only {r_down:.4})",
        conn.neurons(),
        conn.edges(),
        (ours_driven / theirs_driven - 1.0) * 100.0,
        (ours_down / theirs_down - 1.0) * 100.0,
    );
    assert!(
        off(ours_driven, theirs_driven) <= 0.05,
        "driven rates differ"
    );
    assert!(
        off(ours_down, theirs_down) <= 0.05,
        "downstream rates differ"
    );
    assert!(r_all >= 0.95, "per-neuron rates correlate at {r_all}");
}
