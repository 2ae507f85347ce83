"""The Shiu et al. 2024 whole-brain LIF model in Brian2, on a network given as an edge list.

Used by flysim-brain's agreement test and its benchmark to compare `lif-exp-delay-v1` with
Brian2 on the same network and drive. Usage: shiu_model.py CONFIG.json OUT.json

CONFIG names the edge list (CSV `pre,post,count` with a header row; the count is signed), the
neuron count, the driven neurons, the rates and every constant, the number of trials (each a
separate copy of the network in one group, so they run side by side with independent Poisson
input), the duration, the seed and the code-generation target (`numpy`, `cython` or
`cpp_standalone`); optionally, for `cpp_standalone`, `buildDir` (the project directory; a
temporary one when missing) and `openmpThreads` (0, the default, builds without OpenMP: one
thread).

OUT receives the spike count of every neuron in every trial, the Brian2 version, the target,
the wall time of the run itself (`wallSeconds`; for `cpp_standalone` it includes code
generation, compilation and the binary's start-up) and `timings`: the seconds spent loading the
edges and building the model in Python and, for `cpp_standalone`, compiling (`compileSeconds`,
Brian2's `make` timer), running the binary (`binarySeconds`) and the simulation loop alone
(`runSeconds`, Brian2's `device._last_run_time`, which the binary measures with `std::clock`,
i.e. CPU time, when built without OpenMP, and with `omp_get_wtime` with it).
"""

import json
import sys
import time

import numpy as np
import brian2 as b2
from brian2 import Hz, mV, ms


def build_and_run(cfg):
    n = cfg["neurons"]
    trials = cfg["trials"]
    target = cfg["target"]
    timings = {}
    if target == "cpp_standalone":
        b2.set_device("cpp_standalone", directory=cfg.get("buildDir"), build_on_run=True)
        b2.prefs.devices.cpp_standalone.openmp_threads = cfg.get("openmpThreads", 0)
    else:
        b2.prefs.codegen.target = target
    b2.defaultclock.dt = cfg["dtMs"] * ms
    b2.seed(cfg["seed"])

    start = time.perf_counter()
    edges = np.loadtxt(cfg["edges"], delimiter=",", skiprows=1, dtype=np.int64, ndmin=2)
    timings["loadEdgesSeconds"] = time.perf_counter() - start
    start = time.perf_counter()
    pre, post, count = edges[:, 0], edges[:, 1], edges[:, 2]

    equations = """
    dv/dt = (v_rest - v + g) / tau_m : volt (unless refractory)
    dg/dt = -g / tau_s : volt (unless refractory)
    t_ref : second
    driven : 1
    """
    constants = {
        "v_rest": cfg["restMv"] * mV,
        "v_reset": cfg["resetMv"] * mV,
        "v_threshold": cfg["thresholdMv"] * mV,
        "tau_m": cfg["tauMembraneMs"] * ms,
        "tau_s": cfg["tauSynapseMs"] * ms,
    }
    group = b2.NeuronGroup(
        n * trials,
        equations,
        method="exact",
        threshold="v > v_threshold",
        reset="v = v_reset; g = 0*mV",
        refractory="t_ref",
        namespace=constants,
    )
    group.v = cfg["restMv"] * mV
    group.g = 0 * mV
    group.t_ref = cfg["refractoryMs"] * ms
    driven = np.asarray(cfg["driven"], dtype=np.int64)
    # A list, not an array: the cpp_standalone device compares an index with the string
    # "True", which an array index turns into an ambiguous element-wise comparison.
    every_driven = (driven[None, :] + (np.arange(trials) * n)[:, None]).ravel().tolist()
    group.t_ref[every_driven] = cfg["drivenRefractoryMs"] * ms
    group.driven[every_driven] = 1

    synapses = b2.Synapses(group, group, "w : volt", on_pre="g += w", delay=cfg["delayMs"] * ms)
    offsets = np.repeat(np.arange(trials, dtype=np.int64) * n, len(pre))
    synapses.connect(i=np.tile(pre, trials) + offsets, j=np.tile(post, trials) + offsets)
    synapses.w = np.tile(count, trials) * cfg["synapseMv"] * mV

    poisson = b2.PoissonInput(
        group, "v", N=1, rate=cfg["rateHz"] * Hz, weight="{!r}*mV*driven".format(cfg["inputMv"])
    )
    monitor = b2.SpikeMonitor(group, record=False)
    network = b2.Network(group, synapses, poisson, monitor)
    timings["modelSeconds"] = time.perf_counter() - start
    start = time.perf_counter()
    network.run(cfg["durationMs"] * ms)
    wall = time.perf_counter() - start
    if target == "cpp_standalone":
        device = b2.get_device()
        timings["compileSeconds"] = device.timers["compile"]["make"]
        timings["binarySeconds"] = device.timers["run_binary"]
        timings["runSeconds"] = device._last_run_time
    counts = np.asarray(monitor.count, dtype=np.int64).reshape(trials, n)
    return counts, wall, timings


def main():
    with open(sys.argv[1]) as f:
        cfg = json.load(f)
    counts, wall, timings = build_and_run(cfg)
    out = {
        "brian2": b2.__version__,
        "target": cfg["target"],
        "wallSeconds": wall,
        "timings": timings,
        "counts": counts.tolist(),
    }
    with open(sys.argv[2], "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
