//! The bench's Brian2 side-by-side mode (`FLYSIM_BENCH_BRIAN2=<ticks>`): the bench's graph,
//! profile and noise run in flysim and in Brian2's `cpp_standalone` target (one thread, no
//! OpenMP, GCC without `-ffast-math`), from the same fresh state for the same ticks, in
//! alternating rounds; each round reports both times, the ratio and whether every tick's spikes
//! are the same neurons in both.
//!
//! Brian2 runs `tests/brian2/lif1ms_model.py`, which writes the kernel's tick in Brian2's
//! equations (see its header). It is given what a fresh brain of agent seed [`SEED`] holds:
//! the connectome in CSR form, the per-neuron baselines and every tick's noise kicks, drawn
//! here from the streams `docs/brain.md` names (`baseline`, then `noise`: `kicks` draws per
//! tick, `u32 mod n`), and the kernel's constants in single precision. Nothing is taken from
//! flysim's run, so a wrong draw rule or a wrong constant shows as different spikes.
//!
//! Times: flysim's is the wall and CPU time of `Brain::run_recording` over the ticks (recording
//! every spike); Brian2's is its own time of the simulation loop (`device._last_run_time`, CPU
//! time without OpenMP), recording every spike in a `SpikeMonitor`. The files go under
//! `<target>/tmp/brian2-lif-1ms/`; Brian2's Python is found or installed as the agreement test
//! does (`$FLYSIM_BRIAN2_VENV` first).

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use flysim_brain::rng::{self, XorShift32};
use flysim_brain::{Brain, Connectome, Profile};

use crate::harness;

/// The agent seed of both runs.
const SEED: i32 = 1;
/// Alternating rounds of flysim and Brian2.
const ROUNDS: usize = 3;

/// One simulator's spikes: `(tick, neuron)`, in tick order, each tick's neurons ascending.
type Spikes = Vec<(u32, u32)>;

/// Runs the mode over `ticks` ticks; `Err` says what failed or is missing.
pub(crate) fn side_by_side(
    profile: &Profile,
    conn: &Arc<Connectome>,
    ticks: u64,
) -> Result<(), String> {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let target = tmp.parent().unwrap_or(tmp);
    let python = harness::brian2_python(&harness::venvs(target))
        .map_err(|what| format!("the Brian2 comparison needs {what}"))?;
    let dir = tmp.join("brian2-lif-1ms");
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let config = write_inputs(profile, conn, ticks, &dir)?;
    let mut ratios = Vec::new();
    for round in 1..=ROUNDS {
        let (ours, wall_ms, cpu_ms) = run_flysim(profile, conn, ticks);
        let build = dir.join("build");
        if build.exists() {
            std::fs::remove_dir_all(&build).map_err(|e| format!("{}: {e}", build.display()))?;
        }
        let out = harness::run_script(&python, &harness::lif1ms_script(), &dir, &config)?;
        let run_ms = out["timings"]["runSeconds"]
            .as_f64()
            .ok_or("the script's output has no timings.runSeconds")?
            * 1e3;
        let theirs = read_spikes(&dir.join("spikes.bin"))?;
        let flysim_ms = cpu_ms.unwrap_or(wall_ms);
        ratios.push(run_ms / flysim_ms);
        println!(
            "round {round}: flysim {wall_ms:.0} ms wall, {} CPU ({:.2}x real time); Brian2 {} {run_ms:.0} ms CPU in its loop; Brian2 / flysim {:.2}",
            cpu_ms.map_or_else(|| "?".to_owned(), |c| format!("{c:.0} ms")),
            ticks as f64 / wall_ms,
            out["brian2"].as_str().unwrap_or("?"),
            run_ms / flysim_ms,
        );
        println!("  {}", compare(&ours, &theirs, ticks)?);
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "Brian2 / flysim (CPU time, one thread), median of {ROUNDS} rounds: {:.2}",
        ratios[ratios.len() / 2]
    );
    Ok(())
}

/// Writes the script's inputs under `dir`; its configuration.
fn write_inputs(
    profile: &Profile,
    conn: &Connectome,
    ticks: u64,
    dir: &Path,
) -> Result<serde_json::Value, String> {
    let k = profile
        .kernel
        .lif_1ms()
        .ok_or("the bench's kernel is lif-1ms-v1")?;
    let n = conn.neurons();
    let mut baseline = XorShift32::stream(SEED, rng::BASELINE);
    let baselines: Vec<f32> = (0..n)
        .map(|_| (baseline.next_f64() * k.baseline_max) as f32)
        .collect();
    let mut noise = XorShift32::stream(SEED, rng::NOISE);
    let kicks: Vec<u32> = (0..ticks * u64::from(k.noise_kicks))
        .map(|_| noise.below(n))
        .collect();
    let file = |name: &str, bytes: Vec<u8>| {
        let path = dir.join(name);
        std::fs::write(&path, bytes)
            .map(|()| path)
            .map_err(|e| format!("{}: {e}", dir.join(name).display()))
    };
    let le = |values: &[u32]| values.iter().flat_map(|v| v.to_le_bytes()).collect();
    Ok(serde_json::json!({
        "neurons": n,
        "ticks": ticks,
        "indptr": file("indptr.bin", le(conn.indptr()))?,
        "targets": file("targets.bin", le(conn.targets()))?,
        "weights": file("weights.bin", conn.weights().iter().flat_map(|w| w.to_le_bytes()).collect())?,
        "baseline": file("baseline.bin", baselines.iter().flat_map(|b| b.to_le_bytes()).collect())?,
        "kicks": file("kicks.bin", le(&kicks))?,
        "kicksPerTick": k.noise_kicks,
        "decay": f64::from(libm::exp(-1.0 / k.tau_ms) as f32),
        "threshold": f64::from(k.threshold as f32),
        "refractoryTicks": k.refractory_ticks,
        "scale": f64::from(k.synapse_scale as f32),
        "floor": f64::from(k.membrane_floor as f32),
        "kick": f64::from(k.noise_amount as f32),
        "buildDir": dir.join("build"),
        "fastMath": false,
        "spikes": dir.join("spikes.bin"),
    }))
}

/// A fresh brain's spikes over `ticks` ticks, the wall and (where `/proc` has it) CPU ms.
fn run_flysim(profile: &Profile, conn: &Arc<Connectome>, ticks: u64) -> (Spikes, f64, Option<f64>) {
    let mut brain = Brain::new(profile.clone(), conn.clone(), SEED, 1).expect("a valid profile");
    let mut spikes = Vec::new();
    let mut tick = 0u32;
    let cpu = harness::cpu_seconds();
    let start = Instant::now();
    brain.run_recording(ticks, &mut |fired| {
        spikes.extend(fired.iter().map(|&i| (tick, i)));
        tick += 1;
    });
    let wall_ms = start.elapsed().as_secs_f64() * 1e3;
    let cpu_ms = cpu
        .zip(harness::cpu_seconds())
        .map(|(before, after)| (after - before) * 1e3);
    (spikes, wall_ms, cpu_ms)
}

/// The script's spikes (`i32` pairs `tick, neuron`), sorted.
fn read_spikes(path: &Path) -> Result<Spikes, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let word = |c: &[u8]| u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
    let mut spikes: Spikes = bytes
        .chunks_exact(8)
        .map(|p| (word(&p[..4]), word(&p[4..])))
        .collect();
    spikes.sort_unstable();
    Ok(spikes)
}

/// Whether both simulators fired the same neurons in every tick, in words; `Err` when not.
fn compare(ours: &Spikes, theirs: &Spikes, ticks: u64) -> Result<String, String> {
    if ours == theirs {
        return Ok(format!(
            "identical spikes: {} in {ticks} ticks, the same neurons in every tick ({:.0} a tick)",
            ours.len(),
            ours.len() as f64 / ticks as f64
        ));
    }
    let count = |s: &Spikes, t: u32| s.iter().filter(|&&(k, _)| k == t).count();
    // The first spike that differs, or the first one past the shorter list.
    let common = ours.len().min(theirs.len());
    let tick = match ours.iter().zip(theirs).position(|(a, b)| a != b) {
        Some(i) => ours[i].0.min(theirs[i].0),
        None => ours.get(common).or(theirs.get(common)).map_or(0, |s| s.0),
    };
    Err(format!(
        "the spikes differ: flysim {} spikes, Brian2 {}; first in tick {tick} (flysim {} spikes in it, Brian2 {})",
        ours.len(),
        theirs.len(),
        count(ours, tick),
        count(theirs, tick),
    ))
}
