//! Process management: the `--version` check, the private Xvfb, the Dolphin child, FIFOs opened
//! without blocking, bounded waits, the emulation thread's run state and the emulated RAM.
//!
//! Every child runs in its own process group with a cleared environment, its working directory
//! the world's scratch directory, and its output in a log file there. The only variables passed
//! are the ones the children need: `DISPLAY` (Qt mode), `QT_QPA_PLATFORM=xcb`, `HOME` and the
//! `XDG_*` directories (all inside the scratch directory), and `LC_ALL=C` (so Dolphin parses the
//! pipes' decimal numbers with a `.`). Nothing is read from this process's own environment.
//! Teardown never waits unboundedly: SIGINT, then SIGKILL to the whole group after a timeout.

use std::fs::File;
use std::io::{BufRead as _, BufReader, Read as _};
use std::os::unix::fs::FileExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use flysim_types::Digest;
use rustix::fs::{Mode as FileMode, OFlags};
use rustix::io::Errno;
use rustix::process::{Pid, Signal};
use sha2::{Digest as _, Sha256};

use crate::error::DolphinError;

/// How long `--version` may take.
const VERSION_TIMEOUT: Duration = Duration::from_secs(20);
/// How long Xvfb may take to name its display.
const XVFB_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a child may take to exit after SIGINT (Dolphin) or SIGTERM (Xvfb).
const EXIT_TIMEOUT: Duration = Duration::from_secs(5);
/// How often bounded waits look again.
pub(crate) const POLL: Duration = Duration::from_millis(1);

/// Bytes of GameCube main memory, as a length.
const RAM_LEN: usize = 24 * 1024 * 1024;
/// Bytes of GameCube main memory.
pub const RAM_BYTES: u64 = RAM_LEN as u64;

/// Waits for `child` to exit, up to `timeout`.
#[expect(
    clippy::disallowed_methods,
    reason = "a bounded wait on a child process or a pipe; the deadline only turns a hang into an error"
)]
fn wait_timeout(child: &mut Child, timeout: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => return None,
        }
    }
}

/// Signals the process group led by `child` (ignoring a group already gone).
fn signal_group(child: &Child, signal: Signal) {
    if let Some(pid) = i32::try_from(child.id()).ok().and_then(Pid::from_raw) {
        let _ = rustix::process::kill_process_group(pid, signal);
    }
}

/// Stops a child: `first` to its group, then SIGKILL after [`EXIT_TIMEOUT`]; always reaps it.
fn stop(child: &mut Child, first: Signal) {
    if matches!(child.try_wait(), Ok(Some(_))) {
        // The leader is gone; anything it left in its group goes too.
        signal_group(child, Signal::KILL);
        return;
    }
    signal_group(child, first);
    if wait_timeout(child, EXIT_TIMEOUT).is_none() {
        signal_group(child, Signal::KILL);
        let _ = child.wait();
    }
    signal_group(child, Signal::KILL);
}

/// A command with a cleared environment, in its own process group, working in `cwd`.
fn command(binary: &Path, cwd: &Path) -> Command {
    let mut cmd = Command::new(binary);
    cmd.env_clear()
        .current_dir(cwd)
        .process_group(0)
        .stdin(Stdio::null());
    cmd
}

/// Runs `binary --version` and returns its first line.
///
/// # Errors
///
/// [`DolphinError::BinaryUnusable`] when it cannot be started, fails or times out.
pub fn version_of(binary: &Path, cwd: &Path) -> Result<String, DolphinError> {
    let unusable = |reason: String| DolphinError::BinaryUnusable {
        path: binary.display().to_string(),
        reason,
    };
    let mut child = command(binary, cwd)
        .arg("--version")
        .env("LC_ALL", "C")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| unusable(e.to_string()))?;
    let Some(status) = wait_timeout(&mut child, VERSION_TIMEOUT) else {
        stop(&mut child, Signal::KILL);
        return Err(unusable(format!(
            "`--version` did not finish within {VERSION_TIMEOUT:?}"
        )));
    };
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        let _ = stdout.read_to_string(&mut out);
    }
    if !status.success() {
        return Err(unusable(format!("`--version` failed ({status})")));
    }
    Ok(out.lines().next().unwrap_or_default().trim().to_owned())
}

/// SHA-256 of a file, streamed.
///
/// # Errors
///
/// [`DolphinError::ContentMismatch`] when the file cannot be read.
pub fn file_digest(path: &Path) -> Result<Digest, DolphinError> {
    let mut file = File::open(path).map_err(|e| DolphinError::ContentMismatch {
        path: path.display().to_string(),
        reason: e.to_string(),
    })?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file
            .read(&mut buf)
            .map_err(|e| DolphinError::ContentMismatch {
                path: path.display().to_string(),
                reason: e.to_string(),
            })?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(Digest::from_bytes(hasher.finalize().into()))
}

/// A private X server: `Xvfb -displayfd`, so it picks a free display itself.
#[derive(Debug)]
pub(crate) struct Xvfb {
    child: Child,
    display: u32,
    /// Its socket file as it was once the display was named (see [`SocketFile`]).
    socket: Option<SocketFile>,
}

/// Which file a path names: its inode and change time. A file created later under the same path
/// (by another server that took the display after this one ended) differs in one of them, even
/// where the file system gives a freed inode number again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SocketFile(u64, i64, i64);

impl SocketFile {
    fn of(path: &Path) -> Option<Self> {
        use std::os::unix::fs::MetadataExt as _;
        let m = std::fs::metadata(path).ok()?;
        Some(Self(m.ino(), m.ctime(), m.ctime_nsec()))
    }
}

/// Display `n`'s socket file.
fn socket_path(display: u32) -> PathBuf {
    PathBuf::from(format!("/tmp/.X11-unix/X{display}"))
}

impl Xvfb {
    /// Starts Xvfb in `scratch` and waits until it names its display.
    pub(crate) fn start(binary: &Path, scratch: &Path) -> Result<Self, DolphinError> {
        let log = File::create(scratch.join("xvfb.log"))
            .map_err(|e| DolphinError::helper(format!("cannot create xvfb.log: {e}")))?;
        let mut child = command(binary, scratch)
            .args([
                "-displayfd",
                "1",
                "-nolisten",
                "tcp",
                "-screen",
                "0",
                "640x480x24",
            ])
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .map_err(|e| DolphinError::BinaryUnusable {
                path: binary.display().to_string(),
                reason: e.to_string(),
            })?;
        let Some(stdout) = child.stdout.take() else {
            // Not reached: the command above pipes stdout.
            stop(&mut child, Signal::KILL);
            return Err(DolphinError::helper("Xvfb's output is not piped"));
        };
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let display = rx
            .recv_timeout(XVFB_TIMEOUT)
            .ok()
            .and_then(|line| line.trim().parse().ok());
        match display {
            Some(display) => Ok(Self {
                child,
                display,
                socket: SocketFile::of(&socket_path(display)),
            }),
            None => {
                stop(&mut child, Signal::KILL);
                Err(DolphinError::helper(format!(
                    "Xvfb named no display within {XVFB_TIMEOUT:?} (see xvfb.log)"
                )))
            }
        }
    }

    /// The display, `:N`.
    pub(crate) fn display(&self) -> String {
        format!(":{}", self.display)
    }

    /// The process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Xvfb {
    fn drop(&mut self) {
        let pid = self.child.id();
        stop(&mut self.child, Signal::TERM);
        // An Xvfb that had to be killed (a loaded machine can keep it past the timeout) leaves
        // its display's socket behind (and its lock, where it wrote one; `-displayfd` servers
        // do not): remove the socket while it is still the file this server created, and the
        // lock while it names this server, so no other server's files are touched.
        let socket = socket_path(self.display);
        if self.socket.is_some() && SocketFile::of(&socket) == self.socket {
            let _ = std::fs::remove_file(&socket);
        }
        let lock = PathBuf::from(format!("/tmp/.X{}-lock", self.display));
        let ours = std::fs::read_to_string(&lock)
            .is_ok_and(|text| text.trim().parse::<u32>().ok() == Some(pid));
        if ours {
            let _ = std::fs::remove_file(&lock);
        }
    }
}

/// What the watchdog shell runs: wait for end of file on its standard input (this process
/// closes it only by ending, the pipe closes with it however it ends), then stop Dolphin's
/// process group (SIGINT, SIGKILL after 3 s) and Xvfb's (SIGTERM, SIGKILL after 2 s).
const WATCHDOG: &str = "read -r _; \
    kill -s INT -- \"-$1\" 2>/dev/null; sleep 3; kill -s KILL -- \"-$1\" 2>/dev/null; \
    if [ -n \"$2\" ]; then kill -s TERM -- \"-$2\" 2>/dev/null; sleep 2; \
    kill -s KILL -- \"-$2\" 2>/dev/null; fi";

/// What the directory watchdog runs: after end of file, give the world's watchdog time to stop
/// Dolphin and Xvfb, then remove the directory.
const DIR_WATCHDOG: &str = "read -r _; sleep 6; rm -rf -- \"$1\"";

/// A `/bin/sh` that cleans up after this process if it ends without dropping what it owns
/// (killed by a signal, or exiting without unwinding): Dolphin and Xvfb run in their own process
/// groups and would outlive it, and so would a private directory. It waits for end of file on a
/// pipe from this process, which closes however this process ends. It runs in its own process
/// group too, so a terminal's Ctrl-C does not reach it. Dropping it kills it first: the owner
/// then cleans up itself.
#[derive(Debug)]
pub(crate) struct Watchdog {
    child: Child,
}

impl Watchdog {
    /// Starts the watchdog of Dolphin (`emulator`) and, in Qt mode, its Xvfb.
    pub(crate) fn start(
        emulator: u32,
        xvfb: Option<u32>,
        scratch: &Path,
    ) -> Result<Self, DolphinError> {
        let xvfb = xvfb.map(|p| p.to_string()).unwrap_or_default();
        Self::spawn(WATCHDOG, &[&emulator.to_string(), &xvfb], scratch)
    }

    /// Starts a watchdog that removes `dir` (after the worlds' watchdogs had their time).
    pub(crate) fn remove_dir(dir: &Path) -> Result<Self, DolphinError> {
        let path = dir.to_str().ok_or_else(|| {
            DolphinError::helper(format!("{} is not a UTF-8 path", dir.display()))
        })?;
        Self::spawn(DIR_WATCHDOG, &[path], Path::new("/"))
    }

    fn spawn(script: &str, args: &[&str], cwd: &Path) -> Result<Self, DolphinError> {
        let child = command(Path::new("/bin/sh"), cwd)
            .args(["-c", script, "flysim-dolphin-watchdog"])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| DolphinError::helper(format!("cannot start the watchdog shell: {e}")))?;
        Ok(Self { child })
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The Dolphin child.
#[derive(Debug)]
pub(crate) struct Emulator {
    child: Child,
}

impl Emulator {
    /// Starts `binary args` in `scratch` with the few variables it needs (see the module doc).
    pub(crate) fn start(
        binary: &Path,
        args: &[&std::ffi::OsStr],
        scratch: &Path,
        display: Option<&str>,
    ) -> Result<Self, DolphinError> {
        let log = File::create(scratch.join("dolphin.log"))
            .map_err(|e| DolphinError::helper(format!("cannot create dolphin.log: {e}")))?;
        let err_log = log
            .try_clone()
            .map_err(|e| DolphinError::helper(e.to_string()))?;
        let home = scratch.join("home");
        let runtime = scratch.join("run");
        let mut cmd = command(binary, scratch);
        cmd.args(args)
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_DATA_HOME", home.join(".local/share"))
            .env("XDG_CACHE_HOME", home.join(".cache"))
            .env("XDG_RUNTIME_DIR", &runtime)
            .env("LC_ALL", "C")
            .env("QT_QPA_PLATFORM", "xcb")
            .stdout(log)
            .stderr(err_log);
        if let Some(display) = display {
            cmd.env("DISPLAY", display);
        }
        let child = cmd.spawn().map_err(|e| DolphinError::BinaryUnusable {
            path: binary.display().to_string(),
            reason: e.to_string(),
        })?;
        Ok(Self { child })
    }

    /// The process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `Err` with the exit status if the process has exited.
    pub(crate) fn check_alive(&mut self) -> Result<(), DolphinError> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(DolphinError::helper(format!(
                "Dolphin exited ({status}); see dolphin.log in the scratch directory"
            ))),
            Err(e) => Err(DolphinError::helper(e.to_string())),
        }
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        stop(&mut self.child, Signal::INT);
    }
}

/// Creates a FIFO.
pub(crate) fn make_fifo(path: &Path) -> Result<(), DolphinError> {
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        FileMode::from_raw_mode(0o600),
        0,
    )
    .map_err(|e| DolphinError::helper(format!("cannot create FIFO {}: {e}", path.display())))
}

/// Opens a FIFO for writing without ever blocking: retries while it has no reader, until
/// `deadline`, giving up early when `alive` says the reader's process is gone.
#[expect(
    clippy::disallowed_methods,
    reason = "a bounded wait on a child process or a pipe; the deadline only turns a hang into an error"
)]
pub(crate) fn open_fifo(
    path: &Path,
    deadline: Instant,
    mut alive: impl FnMut() -> Result<(), DolphinError>,
) -> Result<File, DolphinError> {
    loop {
        match rustix::fs::open(
            path,
            OFlags::WRONLY | OFlags::NONBLOCK | OFlags::CLOEXEC,
            FileMode::empty(),
        ) {
            Ok(fd) => return Ok(File::from(fd)),
            Err(Errno::NXIO) if Instant::now() < deadline => {
                alive()?;
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(Errno::NXIO) => {
                return Err(DolphinError::helper(format!(
                    "Dolphin did not open {} in time",
                    path.display()
                )));
            }
            Err(e) => {
                return Err(DolphinError::helper(format!(
                    "cannot open {}: {e}",
                    path.display()
                )));
            }
        }
    }
}

/// Writes all of `bytes` to a non-blocking pipe, retrying while it is full, until `deadline`.
#[expect(
    clippy::disallowed_methods,
    reason = "a bounded wait on a child process or a pipe; the deadline only turns a hang into an error"
)]
pub(crate) fn write_all(pipe: &File, bytes: &[u8], deadline: Instant) -> Result<(), DolphinError> {
    let mut rest = bytes;
    while !rest.is_empty() {
        match rustix::io::write(pipe, rest) {
            Ok(n) => rest = &rest[n..],
            Err(Errno::AGAIN | Errno::INTR) if Instant::now() < deadline => {
                std::thread::sleep(POLL);
            }
            Err(e) => return Err(DolphinError::helper(format!("pipe write failed: {e}"))),
        }
    }
    Ok(())
}

/// Waits until the reader has taken everything written to `pipe`.
#[expect(
    clippy::disallowed_methods,
    reason = "a bounded wait on a child process or a pipe; the deadline only turns a hang into an error"
)]
pub(crate) fn wait_drained(pipe: &File, deadline: Instant) -> Result<(), DolphinError> {
    loop {
        let pending = rustix::io::ioctl_fionread(pipe)
            .map_err(|e| DolphinError::helper(format!("FIONREAD failed: {e}")))?;
        if pending == 0 {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(DolphinError::helper(format!(
                "Dolphin did not read its pipe ({pending} bytes left)"
            )));
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

/// The emulation thread of a single-core Dolphin (`CPU-GPU thread`), found by name.
pub(crate) fn find_thread(pid: u32, name: &str) -> Option<u32> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    for task in tasks.flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if comm.trim_end() == name {
            return task.file_name().to_str()?.parse().ok();
        }
    }
    None
}

/// A thread's scheduler state letter (`R`, `S`, ...) and its total run time in nanoseconds.
pub(crate) fn thread_sample(pid: u32, tid: u32) -> Option<(char, u64)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).ok()?;
    let state = stat.rsplit_once(')')?.1.trim_start().chars().next()?;
    let sched = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/schedstat")).ok()?;
    let runtime = sched.split_whitespace().next()?.parse().ok()?;
    Some((state, runtime))
}

/// The emulated main memory of a running Dolphin, read through `/proc/<pid>/mem`.
#[derive(Debug)]
pub(crate) struct Ram {
    mem: File,
    base: u64,
}

impl Ram {
    /// Finds the shared mapping that holds physical address 0 of the emulated RAM.
    pub(crate) fn open(pid: u32) -> Result<Self, DolphinError> {
        let maps = std::fs::read_to_string(format!("/proc/{pid}/maps"))
            .map_err(|e| DolphinError::helper(format!("cannot read Dolphin's maps: {e}")))?;
        let base = maps
            .lines()
            .filter_map(|line| {
                let mut parts = line.split_whitespace();
                let range = parts.next()?;
                let _perms = parts.next()?;
                let offset = parts.next()?;
                let path = parts.nth(2)?;
                let (start, end) = range.split_once('-')?;
                let start = u64::from_str_radix(start, 16).ok()?;
                let end = u64::from_str_radix(end, 16).ok()?;
                (path.starts_with("/dev/shm/dolphin-emu")
                    && u64::from_str_radix(offset, 16).ok()? == 0
                    && end - start >= RAM_BYTES)
                    .then_some(start)
            })
            .min()
            .ok_or_else(|| DolphinError::helper("Dolphin's emulated RAM mapping was not found"))?;
        let mem = File::open(format!("/proc/{pid}/mem")).map_err(|e| {
            DolphinError::helper(format!(
                "cannot open Dolphin's memory (ptrace policy?): {e}"
            ))
        })?;
        Ok(Self { mem, base })
    }

    /// Reads `len` bytes at a physical or mirrored (`0x80…`/`0xC0…`) address.
    pub(crate) fn read(&self, address: u32, len: usize) -> Result<Vec<u8>, DolphinError> {
        let physical = u64::from(address & 0x01FF_FFFF);
        if physical + len as u64 > RAM_BYTES {
            return Err(DolphinError::helper(format!(
                "{address:08x}+{len} lies outside main memory"
            )));
        }
        let mut buf = vec![0u8; len];
        self.mem
            .read_exact_at(&mut buf, self.base + physical)
            .map_err(|e| DolphinError::helper(format!("cannot read Dolphin's memory: {e}")))?;
        Ok(buf)
    }

    /// SHA-256 of all of main memory.
    pub(crate) fn digest(&self) -> Result<Digest, DolphinError> {
        let bytes = self.read(0, RAM_LEN)?;
        Ok(flysim_types::digest::sha256(&bytes))
    }
}

/// The directories of a world inside its scratch directory.
#[derive(Debug, Clone)]
pub(crate) struct Layout {
    pub(crate) scratch: PathBuf,
    pub(crate) user: PathBuf,
}

impl Layout {
    /// Creates `u/` (the Dolphin user directory), `home/` and `run/` (mode 0700) in `scratch`.
    pub(crate) fn create(scratch: &Path) -> Result<Self, DolphinError> {
        use std::os::unix::fs::PermissionsExt as _;
        let user = scratch.join("u");
        for dir in [
            user.join("Config"),
            user.join("Pipes"),
            user.join("MemoryWatcher"),
            user.join("StateSaves"),
            scratch.join("home"),
            scratch.join("run"),
        ] {
            std::fs::create_dir_all(&dir).map_err(|e| {
                DolphinError::helper(format!("cannot create {}: {e}", dir.display()))
            })?;
        }
        std::fs::set_permissions(scratch.join("run"), std::fs::Permissions::from_mode(0o700))
            .map_err(|e| DolphinError::helper(e.to_string()))?;
        Ok(Self {
            scratch: scratch.to_owned(),
            user,
        })
    }

    /// Removes what [`create`](Self::create) made, for a fresh start in the same scratch.
    pub(crate) fn clear(scratch: &Path) -> Result<(), DolphinError> {
        for dir in ["u", "home", "run"] {
            let path = scratch.join(dir);
            match std::fs::remove_dir_all(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(DolphinError::helper(format!(
                        "cannot clear {}: {e}",
                        path.display()
                    )));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every child of this crate (Dolphin, Xvfb, the watchdogs, `--version`) is spawned through
    /// [`command`]: it leads a process group of its own, so a terminal's Ctrl-C, which the
    /// kernel sends to the terminal's foreground group (the coordinator's), never reaches it,
    /// and the coordinator stops it cleanly instead.
    #[test]
    fn a_child_leads_a_process_group_of_its_own() {
        let cwd = std::env::temp_dir();
        let mut child = command(Path::new("/bin/sleep"), &cwd)
            .arg("30")
            .spawn()
            .unwrap();
        let pid = Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
        let group = rustix::process::getpgid(Some(pid)).unwrap();
        assert_eq!(group, pid, "the child leads its group");
        assert_ne!(
            Some(group),
            rustix::process::getpgid(None).ok(),
            "not this process's group"
        );
        // A SIGINT to this process's group would not reach it; the coordinator's own stop does.
        stop(&mut child, Signal::INT);
        let status = child.try_wait().unwrap().expect("stopped and reaped");
        assert!(!status.success());
    }

    /// An Xvfb that ignores SIGTERM (stopped here, as a loaded machine can keep one past the
    /// timeout) is killed, which leaves its socket file behind: dropping it removes that file.
    #[test]
    #[expect(
        clippy::disallowed_methods,
        reason = "a test finds the installed Xvfb on PATH, as the integration tests do"
    )]
    fn a_killed_xvfb_leaves_no_socket_behind() {
        let Some(binary) = std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join("Xvfb"))
                .find(|p| p.is_file())
        }) else {
            #[expect(clippy::print_stderr, reason = "the explicit skip message")]
            {
                eprintln!("skipped: not installed: Xvfb (apt-get install xvfb)");
            }
            return;
        };
        let scratch = tempfile::tempdir().unwrap();
        let xvfb = Xvfb::start(&binary, scratch.path()).unwrap();
        let socket = socket_path(xvfb.display);
        let file = SocketFile::of(&socket);
        assert!(file.is_some(), "a running Xvfb has its socket file");
        let pid = Pid::from_raw(i32::try_from(xvfb.pid()).unwrap()).unwrap();
        rustix::process::kill_process(pid, Signal::STOP).unwrap();
        drop(xvfb);
        // Gone, or (tests run in parallel) another server's new socket under the same name.
        assert_ne!(SocketFile::of(&socket), file, "the socket file is removed");
    }
}
