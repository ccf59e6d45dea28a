//! `cargo xtask bench jobcheck`: the whole `jobcheck` process on a large corpus — 10,000 job
//! manifests in one multi-document file against 8 saved region policies, `-o json` to a file —
//! run several times; reports wall time (best and median), CPU time and peak RSS, and fails
//! when the best wall time misses the 200 ms target.
//!
//! The corpus is the admission benchmark's, written deterministically by
//! `bench_admission --write-corpus`. The runs are measured from a fresh xtask process whose
//! only children are the `jobcheck` runs, so the peak RSS is jobcheck's.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use nix::sys::resource::{UsageWho, getrusage};

use crate::{bench, util};

/// The hidden subcommand that runs and measures jobcheck: `xtask __measure-jobcheck BIN CORPUS`.
pub(crate) const MEASURE: &str = "__measure-jobcheck";

const RUNS: usize = 7;
const TARGET: Duration = Duration::from_millis(200);

/// Builds jobcheck and the corpus writer, writes the corpus, and measures the runs.
pub(crate) fn run(extra: &[&str]) -> Result<()> {
    if !extra.is_empty() {
        bail!("bench jobcheck takes no arguments");
    }
    util::cargo(&["build", "--release", "--package", "jobcheck"])?;
    util::cargo(&[
        "build",
        "--release",
        "--package",
        "admission-core",
        "--example",
        "bench_admission",
    ])?;
    let release = bench::release_dir();
    let corpus = release.join("bench-jobcheck");
    util::run(
        Command::new(release.join("examples/bench_admission"))
            .arg("--write-corpus")
            .arg(&corpus),
    )?;
    let status = Command::new(std::env::current_exe().context("cannot locate xtask")?)
        .arg(MEASURE)
        .arg(release.join("jobcheck"))
        .arg(&corpus)
        .status()
        .context("failed to start the measuring process")?;
    if !status.success() {
        bail!("benchmark jobcheck failed ({status})");
    }
    Ok(())
}

/// One measured run.
struct Run {
    wall: Duration,
    cpu: Duration,
}

/// Runs `jobcheck check` on the corpus [`RUNS`] times and reports the figures.
pub(crate) fn measure(jobcheck: &str, corpus: &str) -> Result<()> {
    let corpus = Path::new(corpus);
    let policies = policy_flags(corpus)?;
    let mut runs = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        runs.push(run_once(jobcheck, corpus, &policies)?);
    }
    check_output(&corpus.join("out.json"), policies.len())?;
    let peak_kib = getrusage(UsageWho::RUSAGE_CHILDREN).map_or(0, |usage| usage.max_rss());
    let mut walls: Vec<Duration> = runs.iter().map(|run| run.wall).collect();
    walls.sort();
    let best = walls[0];
    let cpu = runs.iter().map(|run| run.cpu).min().unwrap_or_default();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    eprintln!(
        "bench jobcheck: 10000 manifests x {} regions, -o json: wall best {:.0} ms, median {:.0} ms of {RUNS} runs; CPU (user+sys) {:.0} ms; peak RSS {:.1} MiB; target wall <= {} ms (load average {})",
        policies.len(),
        best.as_secs_f64() * 1000.0,
        walls[RUNS / 2].as_secs_f64() * 1000.0,
        cpu.as_secs_f64() * 1000.0,
        peak_kib as f64 / 1024.0,
        TARGET.as_millis(),
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" "),
    );
    if best > TARGET {
        bail!("benchmark jobcheck missed its target");
    }
    Ok(())
}

/// `--policy-file REGION=FILE` for every saved body in `corpus/policies/`, sorted by region.
fn policy_flags(corpus: &Path) -> Result<Vec<String>> {
    let dir = corpus.join("policies");
    let entries =
        std::fs::read_dir(&dir).with_context(|| format!("cannot read {}", dir.display()))?;
    let mut flags = Vec::new();
    for entry in entries {
        let path = entry?.path();
        if let Some(region) = path.file_stem().and_then(|s| s.to_str()) {
            flags.push(format!("{region}={}", path.display()));
        }
    }
    flags.sort();
    Ok(flags)
}

/// One `jobcheck check` of the corpus, output to `out.json`, with its wall and CPU time.
fn run_once(jobcheck: &str, corpus: &Path, policies: &[String]) -> Result<Run> {
    let mut command = Command::new(jobcheck);
    command.arg("check").arg(corpus.join("jobs.yaml"));
    for flag in policies {
        command.arg("--policy-file").arg(flag);
    }
    let out = std::fs::File::create(corpus.join("out.json")).context("cannot create out.json")?;
    command
        .args(["-o", "json"])
        .stdout(out)
        .stderr(Stdio::inherit());
    let before = children_cpu();
    let started = Instant::now();
    let status = command
        .status()
        .with_context(|| format!("failed to start {jobcheck}"))?;
    let wall = started.elapsed();
    if !status.success() {
        bail!("jobcheck failed ({status})");
    }
    Ok(Run {
        wall,
        cpu: children_cpu().saturating_sub(before),
    })
}

/// User plus system time of every waited-for child so far.
fn children_cpu() -> Duration {
    getrusage(UsageWho::RUSAGE_CHILDREN).map_or(Duration::ZERO, |usage| {
        let micros = |time: nix::sys::time::TimeVal| {
            Duration::from_secs(time.tv_sec().max(0).unsigned_abs())
                + Duration::from_micros(time.tv_usec().max(0).unsigned_abs())
        };
        micros(usage.user_time()) + micros(usage.system_time())
    })
}

/// The run did the work: one verdict per region, issues found, nothing unreadable.
fn check_output(path: &Path, regions: usize) -> Result<()> {
    let text = std::fs::read_to_string(path).context("cannot read out.json")?;
    let payload: serde_json::Value = serde_json::from_str(&text).context("out.json is not JSON")?;
    let verdicts = payload["verdicts"].as_array().map_or(0, Vec::len);
    let issues: usize = payload["verdicts"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|verdict| verdict["issues"].as_array().map_or(0, Vec::len))
        .sum();
    if verdicts != regions || issues == 0 {
        bail!("unexpected output: {verdicts} verdicts, {issues} issues");
    }
    Ok(())
}
