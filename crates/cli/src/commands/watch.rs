//! `--watch [ADDR]` and `--pace realtime` of `flysim run` and `flysim resume`: a presentation
//! gateway on the run's router, its URL printed, and the run paced at the world's speed for a
//! person's eye. Neither changes the run: the gateway only subscribes to what the session
//! publishes, and pacing only delays the start of steps.
//!
//! It knows the gateway's API and the run library's launch hook; the page is the gateway's.

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use flysim_gateway::{Gateway, GatewayError};
use flysim_run::{OnLaunch, Pace, PauseHandle};
use flysim_types::Id;
use flysim_types::publish::Topics;

/// Watching a run.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct Watching {
    /// Serve a live view of the run in the browser at ADDR (default 127.0.0.1:0: a free port
    /// on this machine; the URL is printed); watching never changes the run
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:0")]
    watch: Option<SocketAddr>,
    /// How fast steps follow each other: `unpaced` (as fast as they can) or `realtime` (the
    /// world's step duration, to watch at game speed); pacing never changes the run
    #[arg(long, value_parser = parse_pace, default_value = "unpaced", value_name = "unpaced|realtime")]
    pace: Pace,
}

fn parse_pace(text: &str) -> Result<Pace, String> {
    match text {
        "unpaced" => Ok(Pace::Unpaced),
        "realtime" => Ok(Pace::Realtime),
        other => Err(format!("`{other}` is not a pace: use unpaced or realtime")),
    }
}

/// The gateway of a watched run, once its launch started it (or why it could not start).
#[derive(Debug, Default)]
pub(crate) struct Watcher {
    slot: Arc<Mutex<Option<Result<Gateway, GatewayError>>>>,
}

impl Watching {
    /// The pace of the run.
    pub(crate) fn pace(&self) -> Pace {
        self.pace
    }

    /// The launch hook that starts the gateway, and the watcher that keeps it; none when the
    /// run is not watched. A gateway that cannot start stops the run at its first boundary.
    pub(crate) fn hook(&self, stop: &PauseHandle) -> (Option<OnLaunch>, Watcher) {
        let watcher = Watcher::default();
        let Some(addr) = self.watch else {
            return (None, watcher);
        };
        let slot = Arc::clone(&watcher.slot);
        let stop = stop.clone();
        let hook = move |launch: &mut flysim_run::Launch, session: &Id| {
            let (link, options) = launch.watcher_connection(Id::from_static("gateway"));
            let started = Gateway::start(link, options, Topics::of(session), addr);
            match &started {
                Ok(gateway) => print_line(&format!("watch the run at {}", gateway.url())),
                Err(_) => stop.request(),
            }
            *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(started);
        };
        (Some(OnLaunch(Arc::new(hook))), watcher)
    }
}

impl Watcher {
    /// After the run: the gateway's start failure, if it failed; otherwise, on a terminal, the
    /// page stays up (showing the run's end) until the user presses Enter, then it closes.
    ///
    /// # Errors
    ///
    /// Why the gateway could not start.
    pub(crate) fn finish(self) -> Result<(), GatewayError> {
        let taken = self
            .slot
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        match taken {
            None => Ok(()),
            Some(Err(e)) => Err(e),
            Some(Ok(gateway)) => {
                if std::io::stdin().is_terminal() {
                    print_line(&format!(
                        "the run ended; its page stays at {} until you press Enter",
                        gateway.url()
                    ));
                    let _ = std::io::stdin().lock().read_line(&mut String::new());
                }
                gateway.shutdown();
                Ok(())
            }
        }
    }
}

/// One line on standard error (standard output is the run's result).
fn print_line(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{text}");
}
