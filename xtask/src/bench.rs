//! `cargo xtask bench <name>`: builds a benchmark program in release mode, runs it, and reports
//! its wall time and peak resident set size (measured here, from the child's rusage).
//!
//! Each benchmark is an `examples/bench_*.rs` program of the crate it measures; it prints its own
//! figures (throughput, counts) and exits non-zero when it misses its target. `jobcheck` measures
//! the binary itself (`bench_jobcheck`).

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::util;

/// One benchmark: its name, the package and the example that runs it, and optionally a binary
/// the example runs too (built in release mode, its path passed in the named variable).
struct Bench {
    name: &'static str,
    package: &'static str,
    example: &'static str,
    binary: Option<(&'static str, &'static str)>,
}

const BENCHES: &[Bench] = &[
    Bench {
        name: "admission",
        package: "admission-core",
        example: "bench_admission",
        binary: None,
    },
    Bench {
        name: "fanout",
        package: "policy-client",
        example: "bench_fanout",
        binary: Some(("jobcheck", "JOBCHECK_BIN")),
    },
    Bench {
        name: "engine",
        package: "gatekeeper-engine",
        example: "bench_engine",
        binary: None,
    },
    Bench {
        name: "projection",
        package: "cluster-projection",
        example: "bench_projection",
        binary: None,
    },
    Bench {
        name: "report",
        package: "daily-report",
        example: "bench_report",
        binary: None,
    },
];

/// The benchmark names, for usage messages.
pub(crate) const NAMES: &[&str] = &[
    "admission",
    "fanout",
    "jobcheck",
    "projection",
    "engine",
    "report",
];

/// Where cargo puts release builds (`CARGO_TARGET_DIR` when set).
pub(crate) fn release_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| util::root().join("target"), PathBuf::from)
        .join("release")
}

/// Runs the benchmark called `name`, passing `extra` arguments to it.
pub(crate) fn run(name: &str, extra: &[&str]) -> Result<()> {
    if name == "jobcheck" {
        return crate::bench_jobcheck::run(extra);
    }
    let Some(bench) = BENCHES.iter().find(|b| b.name == name) else {
        bail!("unknown benchmark {name:?}; known: {}", NAMES.join(", "));
    };
    util::cargo(&[
        "build",
        "--release",
        "--package",
        bench.package,
        "--example",
        bench.example,
    ])?;
    let program = release_dir().join("examples").join(bench.example);
    let mut measured = Command::new(std::env::current_exe().context("cannot locate xtask")?);
    if let Some((package, variable)) = bench.binary {
        util::cargo(&["build", "--release", "--package", package])?;
        measured.env(variable, release_dir().join(package));
    }
    // Measure through a fresh xtask process whose only child is the benchmark: rusage of
    // children covers every waited-for child, and this process has already waited for cargo.
    let status = measured
        .arg(MEASURE)
        .arg(name)
        .arg(&program)
        .args(extra)
        .current_dir(util::root())
        .status()
        .context("failed to start the measuring process")?;
    if !status.success() {
        bail!("benchmark {name} failed ({status})");
    }
    Ok(())
}

/// The hidden subcommand that runs one benchmark program and reports its wall time and peak RSS.
pub(crate) const MEASURE: &str = "__measure";

/// `xtask __measure NAME PROGRAM ARGS…`: runs PROGRAM as this process's only child.
pub(crate) fn measure(name: &str, program: &str, args: &[&str]) -> Result<()> {
    let started = Instant::now();
    let status = Command::new(program)
        .args(args)
        .status()
        .with_context(|| format!("failed to start {program}"))?;
    let wall = started.elapsed();
    let peak_kib = children_peak_rss_kib();
    eprintln!(
        "bench {name}: wall {:.3} s, peak RSS {:.1} MiB",
        wall.as_secs_f64(),
        peak_kib as f64 / 1024.0
    );
    if !status.success() {
        bail!("benchmark {name} missed its target or failed ({status})");
    }
    Ok(())
}

/// The largest peak RSS among the waited-for children of this process, in KiB (Linux reports
/// `ru_maxrss` in KiB).
fn children_peak_rss_kib() -> i64 {
    nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
        .map(|usage| usage.max_rss())
        .unwrap_or(0)
}
