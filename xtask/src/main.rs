//! Project automation, run as `cargo xtask <command>`.
//!
//! - `test`: the one test command (format, lints, tidy, fixtures freshness, every test).
//! - `fixtures [--check]`: regenerate committed fixtures (or fail when they are stale).
//! - `bench <name>`: run a release-mode benchmark and report wall time and peak RSS.
//! - `parity [--gator PATH]`: the engine on fixtures' objects versus on their projection (and the
//!   real gator from the tools tarball by default).
//! - `opa-diff [--record]`: the embedded engine against real OPA on a Rego corpus (also part
//!   of `test` when `python3` is available).
//! - `chart`: render `charts/workload-report` with real Helm and check it, also against a real
//!   kube-apiserver and Loki (also part of `test`).
//!
//! The real servers (kube-apiserver + etcd, Loki, gator) come from `$REAL_SERVERS_DIR` or
//! `../shared/tools` (see `test_support::real`); `test` says loudly which checks did not run
//! without them, and fails under `CI=true`.

mod bench;
mod bench_jobcheck;
mod chart;
mod chart_live;
mod chart_queries;
mod chart_rbac;
mod fixtures;
mod fixtures_cluster;
mod opa_diff;
mod parity;
mod tidy;
mod util;

use std::process::ExitCode;

use anyhow::{Result, bail};

fn main() -> ExitCode {
    match run(std::env::args().skip(1).collect()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("xtask: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Vec<String>) -> Result<()> {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        ["test"] => test(),
        ["fixtures"] => fixtures::regenerate(),
        ["fixtures", "--check"] => fixtures::check(),
        ["parity", rest @ ..] => parity::run(rest),
        ["bench", name, rest @ ..] => bench::run(name, rest),
        [bench::MEASURE, name, program, rest @ ..] => bench::measure(name, program, rest),
        [bench_jobcheck::MEASURE, jobcheck, corpus] => bench_jobcheck::measure(jobcheck, corpus),
        ["tidy"] => tidy::check(),
        ["chart"] => chart::test(),
        ["opa-diff", rest @ ..] => opa_diff::run(rest),
        _ => bail!(
            "usage: cargo xtask test | fixtures [--check] | bench <{}> | tidy | chart | parity [--gator PATH] | opa-diff [--record]",
            bench::NAMES.join("|")
        ),
    }
}

/// The whole suite, in the order that fails fastest.
fn test() -> Result<()> {
    let missing = real_servers_missing()?;
    util::cargo(&["fmt", "--all", "--check"])?;
    tidy::check()?;
    fixtures::check()?;
    util::cargo(&[
        "clippy",
        "--workspace",
        "--all-targets",
        "--locked",
        "--",
        "-D",
        "warnings",
    ])?;
    if util::has_nextest() {
        util::cargo(&[
            "nextest",
            "run",
            "--workspace",
            "--locked",
            "--no-fail-fast",
        ])?;
    } else {
        util::cargo(&["test", "--workspace", "--locked", "--no-fail-fast"])?;
    }
    util::cargo(&["test", "--workspace", "--locked", "--doc"])?;
    // admission-core is a library others embed: its docs must build without a broken link.
    util::run(
        std::process::Command::new(util::cargo_bin())
            .args(["doc", "--no-deps", "--locked", "-p", "admission-core"])
            .env("RUSTDOCFLAGS", "-D warnings"),
    )?;
    // The gatekeeper fixtures' gator-verify suites, through the embedded engine (fails on FAIL).
    util::cargo(&[
        "run",
        "-q",
        "--locked",
        "-p",
        "workload-report",
        "--",
        "verify",
        "fixtures/gatekeeper/...",
    ])?;
    chart::test()?;
    parity::run(&[])?;
    if opa_diff::available() {
        opa_diff::run(&[])?;
    } else {
        eprintln!("opa-diff: skipped (no python3 to run the OPA reference)");
    }
    if let Some(line) = missing {
        eprintln!("{line}");
    }
    Ok(())
}

/// The loud line naming the real-server checks that will not run (printed first and again at
/// the end), or an error under `CI=true`, where every one of them must run.
fn real_servers_missing() -> Result<Option<String>> {
    use test_support::real::tools;
    let missing = tools::missing();
    if missing.is_empty() {
        return Ok(None);
    }
    let line = tools::skip_line(
        "the real-server tests (`real_*` in cluster-projection, report-sinks, gator-runner and \
         workload-report; the chart's RBAC and dashboard checks; parity's gator)",
        &missing,
    );
    if tools::in_ci() {
        bail!("{line}");
    }
    eprintln!("{line}");
    Ok(Some(line))
}
