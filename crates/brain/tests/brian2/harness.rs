//! The Brian2 side of flysim-brain's comparisons with Brian2: where Brian2's Python is
//! (installing it when missing), the two scripts (`shiu_model.py`, the Shiu et al. 2024 model,
//! and `lif1ms_model.py`, the `lif-1ms-v1` kernel), the Shiu script's edge list and
//! configuration, running a script, and the process's CPU time for the figures set beside it.
//!
//! Shared, by `#[path]`, between the agreement test (`tests/it/brian2.rs`), the benchmark
//! example (`examples/shiu_fafb.rs`) and the kernel bench (`benches/kernel/`), so it uses
//! nothing but the library and its dependencies; each uses part of it.

use std::path::{Path, PathBuf};
use std::process::Command;

use flysim_brain::{Connectome, Profile};

/// The Brian2 release compared against, and the NumPy it runs on (Brian2 2.9.0 does not run on
/// NumPy 2.3 and later, which removed `ndarray.ptp`).
pub(crate) const BRIAN2: [&str; 2] = ["brian2==2.9.0", "numpy==1.26.4"];

/// The Python of the first virtual environment of `venvs` that has Brian2; when none has, of
/// the first of them, with [`BRIAN2`] installed into it. `Err` says what is missing here
/// (Python 3, `venv`, a reachable package index).
#[expect(clippy::print_stderr, reason = "the install notice")]
pub(crate) fn brian2_python(venvs: &[PathBuf]) -> Result<PathBuf, String> {
    let has_brian2 = |p: &Path| {
        Command::new(p)
            .args(["-c", "import brian2"])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if let Some(python) = venvs
        .iter()
        .map(|v| v.join("bin/python"))
        .find(|p| has_brian2(p))
    {
        return Ok(python);
    }
    let venv = venvs.first().ok_or("a virtual environment to look in")?;
    let python = venv.join("bin/python");
    eprintln!("installing {} into {}", BRIAN2.join(" "), venv.display());
    if !Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return Err("Python 3 (`python3` was not found)".to_owned());
    }
    let made = Command::new("python3")
        .arg("-m")
        .arg("venv")
        .arg(venv)
        .output();
    if !made.is_ok_and(|o| o.status.success()) {
        return Err("the Python `venv` module (`python3 -m venv` failed)".to_owned());
    }
    let installed = Command::new(&python)
        .args(["-m", "pip", "install", "--quiet"])
        .args(BRIAN2)
        .output();
    match installed {
        Ok(o) if o.status.success() && has_brian2(&python) => Ok(python),
        Ok(o) => Err(format!(
            "{} from the package index (pip: {})",
            BRIAN2.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Err(format!("pip ({e})")),
    }
}

/// The script that builds the Shiu et al. model in Brian2.
pub(crate) fn brian2_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/brian2/shiu_model.py")
}

/// The script that builds `lif-1ms-v1` in Brian2.
pub(crate) fn lif1ms_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/brian2/lif1ms_model.py")
}

/// The virtual environments Brian2 is looked for in, in order: `$FLYSIM_BRIAN2_VENV`,
/// `target/brian2-venv` under the target directory `target` and the workspace's.
#[allow(
    clippy::disallowed_methods,
    reason = "a measurement tool reads where the user keeps Brian2"
)]
pub(crate) fn venvs(target: &Path) -> Vec<PathBuf> {
    let mut all: Vec<PathBuf> = std::env::var_os("FLYSIM_BRIAN2_VENV")
        .map(PathBuf::from)
        .into_iter()
        .collect();
    all.push(target.join("brian2-venv"));
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/brian2-venv");
    if all.last().and_then(|v| v.canonicalize().ok()) != workspace.canonicalize().ok() {
        all.push(workspace);
    }
    all
}

/// User and system CPU seconds of this process so far, from `/proc/self/stat` (in clock ticks
/// of 1/100 s, Linux's `USER_HZ`); `None` where that is not readable.
pub(crate) fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the command name (in parentheses, which may hold spaces): state is
    // field 3, utime and stime fields 14 and 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i - 3)?.parse::<u64>().ok();
    Some((ticks(14)? + ticks(15)?) as f64 / 100.0)
}

/// Writes `conn` as the script's edge list (`pre,post,count`, the count signed).
///
/// # Errors
///
/// When the file cannot be written.
pub(crate) fn write_edges(conn: &Connectome, path: &Path) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    out.write_all(b"pre,post,count\n")?;
    for pre in 0..conn.neurons() {
        for e in conn.row(pre) {
            writeln!(out, "{pre},{},{}", conn.targets()[e], conn.weights()[e])?;
        }
    }
    out.flush()
}

/// The script's configuration for `profile` (on `lif-exp-delay-v1`, its first Poisson drive
/// on the neurons `driven`) on `edges`: `trials` trials of 1 s on the code-generation `target`.
/// The driven neurons' refractory period is that of the last override of the drive's role (the
/// others' when there is none); the script knows no other per-role parameter, so any other
/// difference is a panic.
pub(crate) fn brian2_config(
    profile: &Profile,
    edges: &Path,
    driven: &[u32],
    trials: usize,
    target: &str,
) -> serde_json::Value {
    let k = profile
        .kernel
        .exp_delay()
        .expect("a lif-exp-delay-v1 profile");
    let n = &k.neurons;
    let drive = &k.poisson[0];
    let driven_params = k
        .overrides
        .iter()
        .rev()
        .find(|o| o.role == drive.role)
        .map_or(*n, |o| o.params);
    assert_eq!(
        flysim_brain::profile::NeuronParams {
            refractory_ms: n.refractory_ms,
            ..driven_params
        },
        *n,
        "the Brian2 model overrides only the driven neurons' refractory period"
    );
    serde_json::json!({
        "neurons": profile.connectome.neurons,
        "edges": edges,
        "driven": driven,
        "rateHz": drive.rate_hz,
        "trials": trials,
        "durationMs": 1000.0,
        "dtMs": f64::from(k.tick_ns) / 1e6,
        "seed": 20_240_101,
        "target": target,
        "synapseMv": k.synapse_mv,
        "inputMv": k.input_mv,
        "restMv": n.rest_mv,
        "resetMv": n.reset_mv,
        "thresholdMv": n.threshold_mv,
        "tauMembraneMs": n.tau_membrane_ms,
        "tauSynapseMs": n.tau_synapse_ms,
        "refractoryMs": n.refractory_ms,
        "delayMs": n.delay_ms,
        "drivenRefractoryMs": driven_params.refractory_ms,
    })
}

/// Runs the Shiu script with `config`, as [`run_script`] does.
///
/// # Errors
///
/// As [`run_script`].
pub(crate) fn run_brian2(
    python: &Path,
    dir: &Path,
    config: &serde_json::Value,
) -> Result<serde_json::Value, String> {
    run_script(python, &brian2_script(), dir, config)
}

/// Runs `script` with `config` (written to `dir/config.json`); its output (`dir/out.json`).
///
/// # Errors
///
/// When the files cannot be written or read or the script fails (with its standard error).
pub(crate) fn run_script(
    python: &Path,
    script: &Path,
    dir: &Path,
    config: &serde_json::Value,
) -> Result<serde_json::Value, String> {
    let cfg = dir.join("config.json");
    let out = dir.join("out.json");
    std::fs::write(&cfg, config.to_string()).map_err(|e| format!("{}: {e}", cfg.display()))?;
    let run = Command::new(python)
        .arg(script)
        .arg(&cfg)
        .arg(&out)
        .output()
        .map_err(|e| format!("{}: {e}", python.display()))?;
    if !run.status.success() {
        return Err(format!(
            "Brian2 failed: {}",
            String::from_utf8_lossy(&run.stderr)
        ));
    }
    let text = std::fs::read(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    serde_json::from_slice(&text).map_err(|e| format!("{}: {e}", out.display()))
}

/// The spike count of every neuron in every trial, from the script's output.
pub(crate) fn spike_counts(out: &serde_json::Value) -> Vec<Vec<u64>> {
    out["counts"]
        .as_array()
        .expect("counts")
        .iter()
        .map(|t| {
            t.as_array()
                .expect("a trial's counts")
                .iter()
                .map(|c| c.as_u64().expect("a count"))
                .collect()
        })
        .collect()
}
