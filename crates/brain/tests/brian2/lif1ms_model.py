"""flysim's `lif-1ms-v1` kernel written in Brian2, so that both simulators can be run on the
same network and the same noise and give the same spikes, tick for tick.

Used by flysim-brain's kernel benchmark (`FLYSIM_BENCH_BRIAN2`). Usage:
lif1ms_model.py CONFIG.json OUT.json

CONFIG names raw little-endian files written by the benchmark: the connectome in CSR form
(`indptr` u32, `targets` u32, `weights` i16 signed synapse counts), the per-neuron baselines
(`baseline`, f32), the noise kicks (`kicks`, u32, `ticks` rows of `kicksPerTick` neuron indices
in draw order) and where to write the spikes (`spikes`: i32 pairs `tick, neuron`). It gives the
constants as flysim holds them in single precision (`decay`, `threshold`, `scale`, `floor`,
`kick`, each a double equal to its f32 value), `refractoryTicks`, `neurons`, `ticks`, the
`cpp_standalone` project directory `buildDir`, and `fastMath` (false: GCC without
`-ffast-math` and without contraction, which the spikes to be identical need).

The kernel's tick (docs/brain.md): the noise kicks and drives are added to the membrane; the
sweep decays it (`decayed = f32(v * decay)`), adds the baseline to a resting neuron and fires
it when that reaches the threshold (membrane 0, refractory counter `R`), a refractory neuron
keeps `decayed` and counts down; then every spike, ascending, adds `f32(count) * scale` to each
target in row order, clamped below at the floor. In Brian2, per 1 ms step:

- `run_regularly` in the `start` slot does the sweep. Every operation whose operands are f32 is
  done in single precision: `decayed` is stored as f32 (C++ computes `v * decay` in double,
  exact for two f32 factors, and rounds it once on the store, which is the f32 product), and
  `decayed + b` adds two floats. The reset happens here, before the synapses, as in flysim
  (Brian2's own reset runs after them and would drop the input a neuron gets in the tick it
  fires); the threshold only reports `fired`.
- The recurrent synapses (`order=0`) are created in CSR order, so Brian2 delivers each spike's
  row in flysim's order; their weights are the f32 products `f32(count) * scale`.
- The noise: flysim's kicks of tick `t + 1` arrive as spikes of a SpikeGeneratorGroup at step
  `t`, through synapses of `order=1` (after the recurrent delivery, as flysim adds them at the
  start of the next tick). A generator cannot fire twice in one step, so a neuron kicked `k`
  times in one tick is reached through `k` generator layers (`n` generator neurons each); all
  kicks carry the same value, so their order does not matter. Tick 0's kicks are the initial
  membrane.

OUT receives the Brian2 version and the timings: Python model building (`modelSeconds`),
compilation (`compileSeconds`, Brian2's `make` timer), the binary (`binarySeconds`) and the
simulation loop alone (`runSeconds`, `device._last_run_time`: `std::clock`, i.e. CPU time,
without OpenMP).
"""

import json
import sys
import time

import numpy as np
import brian2 as b2
from brian2 import ms


def layered_kicks(kicks, n):
    """Generator indices and steps for the kicks of ticks 1.. (tick t + 1 at step t)."""
    indices, steps = [], []
    for tick in range(1, kicks.shape[0]):
        seen = {}
        for neuron in kicks[tick]:
            layer = seen.get(neuron, 0)
            seen[neuron] = layer + 1
            indices.append(int(neuron) + n * layer)
            steps.append(tick - 1)
    return np.asarray(indices, dtype=np.int64), np.asarray(steps, dtype=np.int64)


def build_and_run(cfg):
    n = cfg["neurons"]
    ticks = cfg["ticks"]
    b2.set_device("cpp_standalone", directory=cfg["buildDir"], build_on_run=True)
    b2.prefs.devices.cpp_standalone.openmp_threads = 0
    flags = ["-w", "-O3", "-march=native", "-std=c++11"]
    if cfg["fastMath"]:
        flags += ["-ffast-math", "-fno-finite-math-only"]
    else:
        flags += ["-ffp-contract=off"]
    b2.prefs.codegen.cpp.extra_compile_args_gcc = flags
    b2.defaultclock.dt = 1 * ms
    timings = {}

    start = time.perf_counter()
    indptr = np.fromfile(cfg["indptr"], dtype="<u4").astype(np.int64)
    targets = np.fromfile(cfg["targets"], dtype="<u4").astype(np.int64)
    weights = np.fromfile(cfg["weights"], dtype="<i2")
    baseline = np.fromfile(cfg["baseline"], dtype="<f4")
    kicks = np.fromfile(cfg["kicks"], dtype="<u4").reshape(ticks, cfg["kicksPerTick"])
    pre = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))

    constants = {
        "decay": cfg["decay"],
        "v_threshold": cfg["threshold"],
        "v_floor": cfg["floor"],
        "kick": cfg["kick"],
        "refractory": cfg["refractoryTicks"],
    }
    model = """
    v : 1
    decayed : 1
    b : 1 (constant)
    r : integer
    fired : integer
    """
    group = b2.NeuronGroup(
        n,
        model,
        threshold="fired == 1",
        namespace=constants,
        dtype={"v": np.float32, "decayed": np.float32, "b": np.float32},
    )
    group.run_regularly(
        """
        decayed = v * decay
        v_new = decayed + b
        fired = int(r == 0 and v_new >= v_threshold)
        v = int(r == 0) * (1 - fired) * v_new + int(r > 0) * decayed
        r = fired * refractory + (1 - fired) * (r - int(r > 0))
        """,
        when="start",
    )
    group.b = baseline
    initial = np.zeros(n, dtype=np.float32)
    kick = np.float32(cfg["kick"])
    for neuron in kicks[0]:
        initial[neuron] = initial[neuron] + kick
    group.v = initial

    synapses = b2.Synapses(
        group,
        group,
        "w : 1",
        on_pre="v_post = clip(v_post + w, v_floor, inf)",
        namespace=constants,
        dtype={"w": np.float32},
        order=0,
    )
    synapses.connect(i=pre, j=targets)
    synapses.w = weights.astype(np.float32) * np.float32(cfg["scale"])

    indices, steps = layered_kicks(kicks, n)
    layers = int(indices.max() // n + 1) if len(indices) else 1
    generator = b2.SpikeGeneratorGroup(n * layers, indices, steps * ms)
    noise = b2.Synapses(
        generator, group, on_pre="v_post = v_post + kick", namespace=constants, order=1
    )
    every = np.arange(n * layers, dtype=np.int64)
    noise.connect(i=every, j=every % n)

    monitor = b2.SpikeMonitor(group)
    network = b2.Network(group, synapses, generator, noise, monitor)
    timings["modelSeconds"] = time.perf_counter() - start
    network.run(ticks * ms)
    device = b2.get_device()
    timings["compileSeconds"] = device.timers["compile"]["make"]
    timings["binarySeconds"] = device.timers["run_binary"]
    timings["runSeconds"] = device._last_run_time
    spikes = np.empty((len(monitor.i), 2), dtype="<i4")
    spikes[:, 0] = np.rint(np.asarray(monitor.t / ms)).astype(np.int64)
    spikes[:, 1] = np.asarray(monitor.i)
    spikes.tofile(cfg["spikes"])
    return timings


def main():
    with open(sys.argv[1]) as f:
        cfg = json.load(f)
    timings = build_and_run(cfg)
    with open(sys.argv[2], "w") as f:
        json.dump({"brian2": b2.__version__, "timings": timings}, f)


if __name__ == "__main__":
    main()
