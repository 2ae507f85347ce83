//! `flysim runs [--state-dir DIR]`: the run directories of a state directory (`DIR/runs/*`),
//! one line each (id, status, steps of the plan's, each agent's score, short run digest, age),
//! sorted by start time; a damaged run is listed with its problem. It reads the directories
//! (the shared reader in `run_dir`) and the wall clock for the age, which is display only.

use std::path::PathBuf;

use serde_json::{Value, json};

use super::run_dir::{RecordedRun, score_text};
use crate::Printed;
use crate::error::CliError;

/// Arguments of `flysim runs`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The state directory (default: $FLYSIM_HOME/state, else ./.flysim)
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// Print a JSON array of objects, one per run, instead of text
    #[arg(long)]
    json: bool,
}

/// One run directory as listed.
struct Listed {
    /// Its name (the run id).
    id: String,
    /// The reading, when plan and manifest read.
    run: Option<RecordedRun>,
    /// What is wrong with it, with its code.
    problem: Option<(String, String)>,
}

impl Listed {
    fn started_unix_ms(&self) -> Option<u64> {
        self.run
            .as_ref()
            .map(|r| r.manifest.timings.started_unix_ms.get())
    }
}

fn listed(dir: PathBuf) -> Listed {
    let id = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match RecordedRun::read(&dir) {
        Ok(run) => {
            let problem = match run.unreadable_rows().next() {
                Some((_, e)) => Some((e.code_str(), e.to_string())),
                None => run.digest_damage().map(|e| (e.code_str(), e.to_string())),
            };
            Listed {
                id,
                run: Some(run),
                problem,
            }
        }
        Err(e) => Listed {
            id,
            run: None,
            problem: Some((e.code_str(), e.to_string())),
        },
    }
}

/// `seconds` ago, as a person reads it: `12 s ago`, `3 min ago`, `5 h ago`, `2 d ago`.
fn age_text(seconds: u64) -> String {
    match seconds {
        s if s < 60 => format!("{s} s ago"),
        s if s < 3600 => format!("{} min ago", s / 60),
        s if s < 86_400 => format!("{} h ago", s / 3600),
        s => format!("{} d ago", s / 86_400),
    }
}

fn now_unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

pub(crate) fn run(args: &Args) -> Result<Printed, CliError> {
    let state = super::run::state_dir(args.state_dir.as_deref());
    let runs_dir = state.join(flysim_store::RUNS_DIR);
    let missing = !runs_dir.is_dir();
    let mut dirs: Vec<PathBuf> = match std::fs::read_dir(&runs_dir) {
        Ok(entries) => entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(error) => {
            return Err(CliError::ReadInput {
                path: runs_dir,
                error,
                help: "check the state directory's permissions".to_owned(),
            });
        }
    };
    dirs.sort();
    let mut runs: Vec<Listed> = dirs.into_iter().map(listed).collect();
    // Readable runs by start time, then the unreadable ones; the id breaks ties.
    runs.sort_by(|x, y| {
        (x.started_unix_ms().is_none(), x.started_unix_ms(), &x.id).cmp(&(
            y.started_unix_ms().is_none(),
            y.started_unix_ms(),
            &y.id,
        ))
    });
    let now = now_unix_ms();
    let stdout = if args.json {
        let doc = Value::Array(runs.iter().map(|r| as_json(r, now)).collect());
        let text =
            flysim_types::json::to_canonical(&doc).map_err(flysim_types::ContractError::from)?;
        format!("{text}\n")
    } else if missing {
        format!("no runs: {} does not exist\n", runs_dir.display())
    } else if runs.is_empty() {
        format!("no runs in {}\n", runs_dir.display())
    } else {
        let width = runs.iter().map(|r| r.id.len()).max().unwrap_or(0);
        runs.iter()
            .map(|r| format!("{}\n", as_line(r, width, now)))
            .collect()
    };
    Ok(Printed::from(stdout))
}

fn as_line(listed: &Listed, width: usize, now: u64) -> String {
    let mut line = format!("{:<width$}", listed.id);
    if let Some(run) = &listed.run {
        let scores: Vec<String> = run
            .scores()
            .iter()
            .map(|(agent, score)| format!("{agent} {}", score_text(*score)))
            .collect();
        let status = serde_json::to_value(run.manifest.status)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let started = run.manifest.timings.started_unix_ms.get();
        line.push_str(&format!(
            "  {status:<8}  {}/{} steps  {}  sha256:{}  {}",
            run.manifest.steps,
            run.plan.run.steps,
            scores.join(", "),
            &run.manifest.run_digest.hex()[..12],
            age_text(now.saturating_sub(started) / 1000)
        ));
    }
    if let Some((code, message)) = &listed.problem {
        line.push_str(&format!("  DAMAGED {code}: {message}"));
    }
    line
}

fn as_json(listed: &Listed, now: u64) -> Value {
    let problem = listed
        .problem
        .as_ref()
        .map(|(code, message)| json!({"code": code, "message": message}));
    let Some(run) = &listed.run else {
        return json!({"runId": listed.id, "problem": problem});
    };
    let scores: serde_json::Map<String, Value> = run
        .scores()
        .into_iter()
        .map(|(agent, score)| (agent, json!(score)))
        .collect();
    let started = run.manifest.timings.started_unix_ms.get();
    json!({
        "runId": listed.id,
        "status": run.manifest.status,
        "steps": run.manifest.steps.get(),
        "planSteps": run.plan.run.steps.get(),
        "scores": scores,
        "runDigest": format!("sha256:{}", run.manifest.run_digest),
        "startedUnixMs": started,
        "ageS": now.saturating_sub(started) / 1000,
        "problem": problem,
    })
}
