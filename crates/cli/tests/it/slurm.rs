//! A sweep on a real Slurm: the test starts munged, slurmctld and slurmd on this machine (a
//! one-node cluster on loopback, its configuration, keys, state and logs in a temporary
//! directory, each daemon in the foreground and stopped by the test), writes a 6-member sweep
//! with `flysim sweep slurm`, submits its array with `sbatch`, polls `squeue` until the job is
//! gone, collects the table and checks every member's run digest against the same member run
//! on this machine. It prints the time from `sbatch` to the collected table. Without the
//! Slurm or munge programs (or without root, which slurmd needs to start jobs) it says what is
//! missing and skips.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{flysim, root};

const SEEDS: &str = "fixtures/compositions/sweep/seeds.kdl";

/// The programs the test needs, and where they are.
fn programs() -> Result<Vec<(&'static str, PathBuf)>, Vec<&'static str>> {
    let dirs = [
        "/usr/sbin",
        "/usr/bin",
        "/sbin",
        "/bin",
        "/usr/local/sbin",
        "/usr/local/bin",
    ];
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for name in [
        "munged",
        "mungekey",
        "slurmctld",
        "slurmd",
        "sbatch",
        "squeue",
        "sinfo",
    ] {
        match dirs
            .iter()
            .map(|d| Path::new(d).join(name))
            .find(|p| p.is_file())
        {
            Some(path) => found.push((name, path)),
            None => missing.push(name),
        }
    }
    if missing.is_empty() {
        Ok(found)
    } else {
        Err(missing)
    }
}

/// The daemons of the test's cluster, stopped (SIGTERM, then SIGKILL) when it is dropped.
struct Daemons(Vec<(&'static str, Child)>);

impl Drop for Daemons {
    fn drop(&mut self) {
        for (_, child) in self.0.iter_mut().rev() {
            let pid = i32::try_from(child.id()).unwrap_or(0);
            #[expect(unsafe_code, reason = "stopping a daemon this test started (FFI)")]
            // SAFETY: kill(2) on the pid of a child this test spawned and has not reaped.
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
            let deadline = Instant::now() + Duration::from_secs(10);
            while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Two different TCP ports nothing listens on now. Both listeners are held until both ports are
/// known: one dropped before the next is bound may hand out the same port again, which once
/// gave slurmctld and slurmd one port (slurmctld then could not bind it, and the node never
/// became idle).
fn free_ports() -> (u16, u16) {
    let first = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let second = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = |l: &std::net::TcpListener| l.local_addr().unwrap().port();
    (port(&first), port(&second))
}

/// This machine's host name, as slurmctld compares it with `SlurmctldHost`.
fn host_name() -> String {
    let out = Command::new("hostname").arg("-s").output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// The cluster's slurm.conf: one node of this machine's CPUs, reached on loopback.
fn config(dir: &Path, host: &str, cpus: usize) -> String {
    let d = dir.display();
    let (controller, node) = free_ports();
    format!(
        "ClusterName=flysimtest\n\
         SlurmctldHost={host}(127.0.0.1)\n\
         SlurmUser=root\nSlurmdUser=root\n\
         SlurmctldPort={controller}\nSlurmdPort={node}\n\
         AuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket={d}/munge/munge.sock\n\
         StateSaveLocation={d}/state\nSlurmdSpoolDir={d}/spool\n\
         SlurmctldPidFile={d}/slurmctld.pid\nSlurmdPidFile={d}/slurmd.pid\n\
         SlurmctldLogFile={d}/slurmctld.log\nSlurmdLogFile={d}/slurmd.log\n\
         ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n\
         SchedulerType=sched/builtin\nSelectType=select/cons_tres\nSelectTypeParameters=CR_CPU\n\
         ReturnToService=2\nMpiDefault=none\n\
         JobAcctGatherType=jobacct_gather/none\nAccountingStorageType=accounting_storage/none\n\
         NodeName=flysim0 NodeAddr=127.0.0.1 NodeHostname={host} CPUs={cpus} State=UNKNOWN\n\
         PartitionName=test Nodes=flysim0 Default=YES MaxTime=INFINITE State=UP\n",
    )
}

/// Runs a Slurm client program against the cluster's configuration.
fn client(program: &Path, conf: &Path, args: &[&str]) -> std::process::Output {
    Command::new(program)
        .args(args)
        .env_clear()
        .env("SLURM_CONF", conf)
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .output()
        .unwrap()
}

/// Polls `check` every 200 ms for at most `limit`.
fn wait_for(limit: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if check() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    false
}

/// Starts munged, slurmctld and slurmd for the configuration in `dir`.
fn start(dir: &Path, programs: &[(&'static str, PathBuf)]) -> Daemons {
    let program = |name: &str| programs.iter().find(|(n, _)| *n == name).unwrap().1.clone();
    let munge = dir.join("munge");
    for sub in ["munge", "state", "spool"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
    }
    let key = munge.join("munge.key");
    let made = Command::new(program("mungekey"))
        .args(["-c", "-b", "1024", "-k"])
        .arg(&key)
        .status()
        .unwrap();
    assert!(made.success(), "mungekey failed");
    let spawn = |program: PathBuf, args: Vec<String>, log: &str| {
        let log = std::fs::File::create(dir.join(log)).unwrap();
        Command::new(program)
            .args(args)
            .env_clear()
            .env("SLURM_CONF", dir.join("slurm.conf"))
            .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap()
    };
    let m = |f: &str| munge.join(f).display().to_string();
    let mut daemons = Daemons(Vec::new());
    daemons.0.push((
        "munged",
        spawn(
            program("munged"),
            vec![
                "-F".into(),
                "--force".into(),
                format!("--socket={}", m("munge.sock")),
                format!("--key-file={}", m("munge.key")),
                format!("--pid-file={}", m("munged.pid")),
                format!("--log-file={}", m("munged.log")),
                format!("--seed-file={}", m("munged.seed")),
            ],
            "munged.out",
        ),
    ));
    assert!(
        wait_for(Duration::from_secs(10), || munge
            .join("munge.sock")
            .exists()),
        "munged did not start"
    );
    let conf = dir.join("slurm.conf").display().to_string();
    daemons.0.push((
        "slurmctld",
        spawn(
            program("slurmctld"),
            vec!["-D".into(), "-i".into(), "-f".into(), conf.clone()],
            "slurmctld.out",
        ),
    ));
    daemons.0.push((
        "slurmd",
        spawn(
            program("slurmd"),
            vec![
                "-D".into(),
                "-N".into(),
                "flysim0".into(),
                "-f".into(),
                conf,
            ],
            "slurmd.out",
        ),
    ));
    daemons
}

/// The daemons' logs, for a failure message.
fn logs(dir: &Path) -> String {
    [
        "munged.out",
        "slurmctld.out",
        "slurmd.out",
        "slurmctld.log",
        "slurmd.log",
    ]
    .iter()
    .map(|f| {
        let text = std::fs::read_to_string(dir.join(f)).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(15).collect();
        format!(
            "--- {f}\n{}\n",
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        )
    })
    .collect()
}

#[test]
#[expect(
    clippy::print_stderr,
    reason = "the explicit skip messages, and the time from sbatch to the table for the note"
)]
fn a_sweep_runs_as_a_slurm_array_to_the_digests_of_the_local_members() {
    let programs = match programs() {
        Ok(p) => p,
        Err(missing) => {
            eprintln!(
                "skipped: the Slurm test needs {} (Debian: apt-get install slurmctld slurmd slurm-client munge)",
                missing.join(", ")
            );
            return;
        }
    };
    // SAFETY: getuid(2) has no preconditions.
    #[expect(unsafe_code, reason = "asking for the user id (FFI)")]
    let uid = unsafe { libc::getuid() };
    if uid != 0 {
        eprintln!("skipped: the Slurm test needs root (slurmd starts each job as its user)");
        return;
    }
    let program = |name: &str| programs.iter().find(|(n, _)| *n == name).unwrap().1.clone();
    let tmp = tempfile::tempdir().unwrap();
    let cluster = tmp.path().join("cluster");
    std::fs::create_dir_all(&cluster).unwrap();
    let conf = cluster.join("slurm.conf");
    let cpus = std::thread::available_parallelism().map_or(1, usize::from);
    std::fs::write(&conf, config(&cluster, &host_name(), cpus)).unwrap();
    let daemons = start(&cluster, &programs);
    let idle = wait_for(Duration::from_secs(60), || {
        let out = client(&program("sinfo"), &conf, &["-h", "-o", "%T"]);
        String::from_utf8_lossy(&out.stdout).trim() == "idle"
    });
    assert!(idle, "the node never became idle\n{}", logs(&cluster));

    // The shared storage is the temporary directory; the binary is this build's.
    let shared = tmp.path().join("shared/sweep");
    let bin = env!("CARGO_BIN_EXE_flysim");
    let written = flysim(
        &[
            "sweep",
            "slurm",
            SEEDS,
            "--out",
            shared.to_str().unwrap(),
            "--flysim",
            bin,
        ],
        b"",
    );
    assert_eq!(written.status, 0, "{}", written.stderr);
    let script = shared.canonicalize().unwrap().join("sweep.sbatch");
    let started = Instant::now();
    let submitted = client(
        &program("sbatch"),
        &conf,
        &["--parsable", script.to_str().unwrap()],
    );
    assert!(
        submitted.status.success(),
        "sbatch: {}\n{}",
        String::from_utf8_lossy(&submitted.stderr),
        logs(&cluster)
    );
    let job = String::from_utf8(submitted.stdout)
        .unwrap()
        .trim()
        .to_owned();
    let gone = wait_for(Duration::from_secs(600), || {
        let out = client(&program("squeue"), &conf, &["-h", "-j", &job]);
        out.status.success() && out.stdout.is_empty()
    });
    assert!(gone, "job {job} did not finish\n{}", logs(&cluster));
    let collected = flysim(&["sweep", "collect", shared.to_str().unwrap()], b"");
    let elapsed = started.elapsed();
    drop(daemons);
    assert_eq!(
        collected.status, 0,
        "{}{}",
        collected.stdout, collected.stderr
    );
    eprintln!(
        "slurm: 6-member array job {job}, sbatch to collected table in {:.1} s",
        elapsed.as_secs_f64()
    );

    let local = tmp.path().join("local");
    let run = flysim(
        &[
            "sweep",
            "run",
            SEEDS,
            "--jobs",
            "2",
            "--dir",
            local.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(run.status, 0, "{}", run.stderr);
    assert_eq!(
        flysim(&["sweep", "collect", local.to_str().unwrap()], b"").status,
        0
    );
    let read = |dir: &Path| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(dir.join("table.json")).unwrap()).unwrap()
    };
    let (cluster_table, local_table) = (read(&shared), read(&local));
    assert_eq!(cluster_table["sweepDigest"], local_table["sweepDigest"]);
    let members = cluster_table["members"].as_array().unwrap();
    assert_eq!(members.len(), 6);
    for (a, b) in members
        .iter()
        .zip(local_table["members"].as_array().unwrap())
    {
        assert_eq!(a["status"], "complete");
        assert_eq!(a["runDigest"], b["runDigest"], "member {}", a["index"]);
    }
    // Each task wrote its log where the script said.
    let logs_dir = shared.join("slurm");
    assert_eq!(std::fs::read_dir(logs_dir).unwrap().count(), 6);
    assert!(root().join(SEEDS).is_file());
}
