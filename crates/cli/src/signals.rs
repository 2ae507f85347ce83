//! What SIGINT, SIGTERM and SIGHUP do to `flysim`: the first asks a run to stop at its next
//! committed boundary (through the run's stop handle); a second one ends the process at once
//! with `128 + signal`. A worker process ignores all three (a terminal sends SIGINT and SIGHUP
//! to its whole process group, a service manager SIGTERM to all its processes): its coordinator
//! stops it at a boundary and shuts it down, and kills it outright when it must.
//!
//! The handlers only touch atomics and call `_exit`, both async-signal-safe; a watcher thread
//! turns the first signal into a stop request. Handlers (unlike ignored dispositions) are reset
//! by `exec`, so a program a worker starts (Dolphin, Xvfb) keeps the default dispositions.
//!
//! It knows nothing of runs beyond their stop handle.

use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use flysim_run::PauseHandle;

/// The first stop signal received, or 0.
static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// The signals that stop a run.
const STOP_SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// How often the watcher thread looks for a signal (a stop waits for a boundary anyway).
const WATCH_EVERY: Duration = Duration::from_millis(10);

#[expect(unsafe_code, reason = "ending the process from a signal handler (FFI)")]
extern "C" fn on_stop_signal(signal: libc::c_int) {
    if RECEIVED
        .compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst)
        .is_err()
    {
        // SAFETY: `_exit` is async-signal-safe; a second signal means "stop at once".
        unsafe { libc::_exit(128 + signal) };
    }
}

extern "C" fn on_worker_signal(_: libc::c_int) {}

/// Installs `handler` for `signals`.
#[expect(unsafe_code, reason = "installing a signal handler (FFI)")]
fn install(signals: &[libc::c_int], handler: extern "C" fn(libc::c_int)) {
    for &signal in signals {
        // SAFETY: the handler only touches an atomic and calls `_exit` (async-signal-safe); the
        // `sigaction` is zero-initialised and then filled in before use.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = handler as usize;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&raw mut action.sa_mask);
            libc::sigaction(signal, &raw const action, std::ptr::null_mut());
        }
    }
}

/// The stop signals now ask `stop` to stop the run at its next committed boundary; a second
/// one ends the process at once.
pub(crate) fn stop_on_signals(stop: &PauseHandle) {
    install(&STOP_SIGNALS, on_stop_signal);
    let stop = stop.clone();
    let watcher = std::thread::Builder::new()
        .name("flysim-signals".into())
        .spawn(move || {
            while RECEIVED.load(Ordering::SeqCst) == 0 {
                std::thread::sleep(WATCH_EVERY);
            }
            stop.request();
        });
    // Without the watcher a signal still stops the process (its second delivery ends it).
    drop(watcher);
}

/// The first stop signal received, by name (`SIGINT`), if any.
pub(crate) fn received() -> Option<(&'static str, u8)> {
    let signal = RECEIVED.load(Ordering::SeqCst);
    let name = match signal {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        _ => return None,
    };
    Some((name, u8::try_from(128 + signal).unwrap_or(u8::MAX)))
}

/// A worker process ignores the stop signals sent to its whole group: its coordinator stops it.
pub(crate) fn worker_ignores_stop_signals() {
    install(&STOP_SIGNALS, on_worker_signal);
}
