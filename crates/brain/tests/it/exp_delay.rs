//! The kernel `lif-exp-delay-v1`: results independent of the thread count, exact capture and
//! restore, refusals, and every kernel parameter of both kernels changes what a brain does.

use std::sync::Arc;

use flysim_brain::profile::{Kernel, NeuronOverride, Role, StimulusKind};
use flysim_brain::{Brain, Connectome, Profile, generate};
use flysim_types::Id;
use flysim_types::workers::Stimulus;

use crate::toy;

fn id(s: &str) -> Id {
    Id::parse(s).unwrap()
}

/// A 2,000-neuron FlyWire-like graph on the Shiu kernel: 60 driven neurons at 150 Hz, a
/// 40-neuron stimulus role (`sugar`, 200 Hz) whose neurons have a 1 ms delay.
fn shiu_toy() -> (Profile, Arc<Connectome>) {
    let c = Arc::new(generate::shiu_like(2_000, 400_000, 0.25, 5));
    let driven = generate::pick_neurons(2_000, 60, "driven");
    let mut p = generate::shiu_profile(&c, "shiu-toy", driven.clone(), 150.0);
    let stim: Vec<u32> = generate::pick_neurons(2_000, 100, "stim")
        .into_iter()
        .filter(|i| driven.binary_search(i).is_err())
        .take(40)
        .collect();
    p.roles.push(Role {
        id: id("sugar"),
        neurons: stim,
    });
    p.stimuli.push(StimulusKind {
        kind: id("sugar"),
        role: id("sugar"),
        drive: 200.0,
    });
    let k = p.kernel.exp_delay_mut().unwrap();
    let mut fast = generate::shiu_neurons();
    fast.delay_ms = 1.0;
    k.overrides.push(NeuronOverride {
        role: id("sugar"),
        params: fast,
    });
    (p, c)
}

fn sugar(ms: f64) -> Stimulus {
    Stimulus {
        id: id("s1"),
        kind_id: id("sugar"),
        duration_ms: ms,
    }
}

/// Runs the standard schedule: 1,500 ticks with the stimulus for 50 ms, then 1,500 without;
/// returns every tick's spikes (flattened, with a separator per tick) and the final snapshot.
fn schedule(b: &mut Brain) -> (Vec<u32>, Vec<u8>) {
    let mut all = Vec::new();
    b.prepare(0, &[sugar(50.0)]).unwrap();
    for _ in 0..2 {
        b.run_recording(1_500, &mut |s| {
            all.extend_from_slice(s);
            all.push(u32::MAX);
        });
    }
    (all, b.capture())
}

#[test]
fn thread_counts_give_bit_identical_results() {
    let (p, c) = shiu_toy();
    let mut results = Vec::new();
    for threads in [1, 2, 3, 4] {
        let mut b = Brain::new(p.clone(), c.clone(), 42, threads).unwrap();
        assert_eq!(b.shards().len(), threads as usize);
        results.push((threads, schedule(&mut b)));
    }
    let spikes = results[0].1.0.iter().filter(|&&s| s != u32::MAX).count();
    assert!(spikes > 3_000, "the network is active: {spikes} spikes");
    for (threads, r) in &results[1..] {
        assert!(*r == results[0].1, "{threads} threads differ from 1");
    }
}

#[test]
fn capture_restore_and_continue_is_exact() {
    let (p, c) = shiu_toy();
    let mut whole = Brain::new(p.clone(), c.clone(), 7, 1).unwrap();
    let (_, expected) = schedule(&mut whole);

    let mut first = Brain::new(p.clone(), c.clone(), 7, 2).unwrap();
    first.prepare(0, &[sugar(50.0)]).unwrap();
    first.run_recording(1_500, &mut |_| {});
    // Mid-stimulus, with conductance pending in the delay ring.
    let snap = first.capture();
    let mut second = Brain::new(p, c, 7, 3).unwrap();
    second.restore(&snap).unwrap();
    assert_eq!(
        second.capture(),
        snap,
        "restore then capture is the identity"
    );
    second.run_recording(1_500, &mut |_| {});
    assert_eq!(second.capture(), expected);
    let mut bad = snap.clone();
    let at = bad.len() / 2;
    bad[at] ^= 1;
    assert_eq!(second.restore(&bad).unwrap_err().code_str(), "FS0730");
}

#[test]
fn the_driven_neurons_fire_at_the_poisson_rate_and_ticks_are_a_tenth_of_a_ms() {
    let (p, c) = shiu_toy();
    let mut b = Brain::new(p, c, 3, 1).unwrap();
    assert_eq!(b.tick_duration().to_string(), "100000/1");
    let driven = b.profile().role(&id("driven")).unwrap().neurons.clone();
    let mut count = 0u64;
    b.run_recording(10_000, &mut |s| {
        count += s.iter().filter(|i| driven.binary_search(i).is_ok()).count() as u64;
    });
    let rate = count as f64 / driven.len() as f64;
    assert!((135.0..165.0).contains(&rate), "driven rate {rate} Hz");
    assert_eq!(b.counters().ticks, 10_000);
    // One draw per driven neuron per tick (no stimulus is running).
    assert_eq!(b.counters().draws, 10_000 * driven.len() as u64);
}

#[test]
fn the_shiu_kernel_refuses_what_it_cannot_honour() {
    let (p, _) = shiu_toy();
    let text = p.to_canonical();
    let refuse = |from: &str, to: &str, needle: &str| {
        assert!(text.contains(from), "{from}");
        let err = Profile::parse(text.replacen(from, to, 1).as_bytes()).unwrap_err();
        assert_eq!(err.code_str(), "FS0122", "{err}");
        assert!(err.to_string().contains(needle), "{err}");
    };
    refuse(
        "\"delayMs\":1.8",
        "\"delayMs\":0.01",
        "kernel.neurons.delayMs",
    );
    refuse("\"tickNs\":100000", "\"tickNs\":0", "kernel.tickNs");
    refuse("\"tauSynapseMs\":5", "\"tauSynapseMs\":0", "tauSynapseMs");
    refuse(
        "\"rateHz\":150",
        "\"rateHz\":-1",
        "kernel.poisson[0].rateHz",
    );
    refuse(
        "\"role\":\"driven\"",
        "\"role\":\"nobody\"",
        "kernel.overrides[0].role",
    );
    let extra = Profile::parse(
        text.replacen("\"tickNs\"", "\"gain\":1,\"tickNs\"", 1)
            .as_bytes(),
    );
    assert_eq!(extra.unwrap_err().code_str(), "FS0120");
    let mut learning = p.clone();
    learning.plasticity = toy().0.plasticity;
    let err = Profile::parse(learning.to_canonical().as_bytes()).unwrap_err();
    assert_eq!(err.code_str(), "FS0122");
    assert!(err.to_string().contains("plasticity"), "{err}");
}

/// What a brain did: the membrane, the spikes, the rates.
fn outcome(p: &Profile, c: &Arc<Connectome>, ticks: u64) -> (String, u64, Vec<u64>) {
    let mut b = Brain::new(p.clone(), c.clone(), 11, 1).unwrap();
    b.prepare(0, &[]).unwrap();
    b.run_recording(ticks, &mut |_| {});
    let rates = b.rates().iter().map(|r| r.to_bits()).collect();
    (b.membrane_digest().to_string(), b.activity().spikes, rates)
}

#[test]
fn every_shiu_kernel_parameter_changes_the_run() {
    let (p, c) = shiu_toy();
    let base = outcome(&p, &c, 2_000);
    type Change = (&'static str, fn(&mut flysim_brain::profile::ExpDelayParams));
    let changes: [Change; 15] = [
        ("tickNs", |k| k.tick_ns = 50_000),
        ("synapseMv", |k| k.synapse_mv = 0.3),
        ("inputMv", |k| k.input_mv = 5.0),
        ("rateAlpha", |k| k.rate_alpha = 0.01),
        ("neurons.restMv", |k| k.neurons.rest_mv = -51.0),
        ("neurons.resetMv", |k| k.neurons.reset_mv = -60.0),
        ("neurons.thresholdMv", |k| k.neurons.threshold_mv = -46.0),
        ("neurons.tauMembraneMs", |k| {
            k.neurons.tau_membrane_ms = 15.0
        }),
        ("neurons.tauSynapseMs", |k| k.neurons.tau_synapse_ms = 4.0),
        ("neurons.refractoryMs", |k| k.neurons.refractory_ms = 5.0),
        ("neurons.delayMs", |k| k.neurons.delay_ms = 3.0),
        ("overrides[0].role", |k| k.overrides[0].role = id("sugar")),
        ("overrides[0].params", |k| {
            k.overrides[0].params.threshold_mv = 100.0;
        }),
        ("poisson[0].role", |k| k.poisson[0].role = id("sugar")),
        ("poisson[0].rateHz", |k| k.poisson[0].rate_hz = 100.0),
    ];
    for (name, change) in changes {
        let mut q = p.clone();
        change(q.kernel.exp_delay_mut().unwrap());
        assert_ne!(
            outcome(&q, &c, 2_000),
            base,
            "kernel.{name} changes nothing"
        );
    }
}

#[test]
fn every_lif_1ms_parameter_changes_the_run() {
    let (p, c) = toy();
    let mut p = p;
    // The arena toy is quiet without a frame; more noise makes every parameter matter.
    if let Kernel::Lif1ms(k) = &mut p.kernel {
        k.noise_kicks = 400;
        k.baseline_max = 0.06;
        k.membrane_floor = -0.05;
    }
    let base = outcome(&p, &c, 300);
    type Change = (&'static str, fn(&mut flysim_brain::profile::Lif1msParams));
    let changes: [Change; 9] = [
        ("tauMs", |k| k.tau_ms = 10.0),
        ("threshold", |k| k.threshold = 0.9),
        ("refractoryTicks", |k| k.refractory_ticks = 4),
        ("synapseScale", |k| k.synapse_scale = 0.01),
        ("baselineMax", |k| k.baseline_max = 0.07),
        ("noiseKicks", |k| k.noise_kicks = 300),
        ("noiseAmount", |k| k.noise_amount = 0.3),
        ("membraneFloor", |k| k.membrane_floor = -0.01),
        ("rateAlpha", |k| k.rate_alpha = 0.1),
    ];
    for (name, change) in changes {
        let mut q = p.clone();
        change(q.kernel.lif_1ms_mut().unwrap());
        assert_ne!(outcome(&q, &c, 300), base, "kernel.{name} changes nothing");
    }
}

#[test]
fn the_committed_arena_shiu_profile_is_what_the_generator_makes() {
    let dir = crate::root().join("fixtures/profiles/arena-shiu-v1");
    let (conn, profile) = generate::arena_shiu_v1();
    let committed = std::fs::read_to_string(dir.join("arena-shiu-v1.json")).unwrap_or_default();
    assert_eq!(
        committed,
        profile.to_canonical(),
        "rewrite {} from generate::arena_shiu_v1()",
        dir.display()
    );
    // It runs on the toy's committed connectome.
    let (_, toy_conn) = toy();
    assert_eq!(toy_conn.digest(), conn.digest());
    let mut b = Brain::new(profile, toy_conn, 1, 1).unwrap();
    b.warm_up_and_calibrate();
    assert_eq!(b.counters().ticks, 25_000);
}

/// A sparse FAFB-like graph on the Shiu kernel (most neurons at rest most of the time), run in
/// batches of the given lengths: the digests of every tick's spikes and of the final snapshot.
fn sparse_run(threads: u32, batches: &[u64]) -> (String, String) {
    let c = Arc::new(generate::shiu_like(20_000, 240_000, 0.3, 11));
    let driven = generate::pick_neurons(20_000, 80, "driven");
    let mut p = generate::shiu_profile(&c, "shiu-sparse", driven.clone(), 150.0);
    // A 20 ms stimulus whose downstream then relaxes back to rest, or near it.
    let stim: Vec<u32> = generate::pick_neurons(20_000, 300, "stim")
        .into_iter()
        .filter(|i| driven.binary_search(i).is_err())
        .take(200)
        .collect();
    p.roles.push(Role {
        id: id("sugar"),
        neurons: stim,
    });
    p.stimuli.push(StimulusKind {
        kind: id("sugar"),
        role: id("sugar"),
        drive: 400.0,
    });
    let mut b = Brain::new(p, c, 3, threads).unwrap();
    b.prepare(0, &[sugar(20.0)]).unwrap();
    let mut spikes: Vec<u8> = Vec::new();
    for &ticks in batches {
        b.run_recording(ticks, &mut |s| {
            for &i in s {
                spikes.extend_from_slice(&i.to_le_bytes());
            }
            spikes.extend_from_slice(&u32::MAX.to_le_bytes());
        });
    }
    (
        flysim_types::digest::sha256(&spikes).to_string(),
        flysim_types::digest::sha256(&b.capture()).to_string(),
    )
}

/// The digests of [`sparse_run`] as the kernel gave them when it updated every neuron every
/// tick: updating only the neurons that are not at a fixed point must change no spike and no
/// bit of the state, whatever the batches and the thread count.
#[test]
fn skipping_neurons_at_rest_changes_no_spike_and_no_state_bit() {
    const SPIKES: &str = "737ee66fd75f367bbd5209732ea3483b3ae069c109f21a9be6c41c273bb289a3";
    const STATE: &str = "316d81e8b1772c1bbb38a29f278e66697244cfc793f6d5c45d335f0607ce1273";
    for (threads, batches) in [
        (1, &[6_000][..]),
        (1, &[1, 37, 962, 2_000, 3_000]),
        (3, &[500; 12]),
    ] {
        let (spikes, state) = sparse_run(threads, batches);
        assert_eq!(
            (spikes.as_str(), state.as_str()),
            (SPIKES, STATE),
            "{threads} thread(s), batches {batches:?}"
        );
    }
}

/// The digests of [`schedule`] on [`shiu_toy`] (an active network: the shard sweeps every
/// neuron, 16 at a time where a run shares a class) as the scalar kernel gave them, one neuron
/// at a time: the packed sweep changes no spike and no bit of the state.
#[test]
fn the_packed_sweep_gives_the_scalar_kernels_spikes_and_state() {
    const SPIKES: &str = "4c9dd8bc78c409b915363b50f85a34365caceb9b591ddda5900472f56e56d59e";
    const STATE: &str = "222562fe578ed6c6aa9d31a1beafa6233d3706a5a9e168d16ad0875b032badb9";
    let (p, c) = shiu_toy();
    for threads in [1, 3] {
        let mut b = Brain::new(p.clone(), c.clone(), 42, threads).unwrap();
        let (spikes, state) = schedule(&mut b);
        let bytes: Vec<u8> = spikes.iter().flat_map(|s| s.to_le_bytes()).collect();
        let digests = (
            flysim_types::digest::sha256(&bytes).to_string(),
            flysim_types::digest::sha256(&state).to_string(),
        );
        assert_eq!(
            (digests.0.as_str(), digests.1.as_str()),
            (SPIKES, STATE),
            "{threads} thread(s)"
        );
    }
}
