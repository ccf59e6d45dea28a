//! Project automation, run as `cargo xtask <command>`.
//!
//! - `test`: the one test command (format, lints, tidy, fixtures freshness, every test).
//! - `fixtures [--check]`: regenerate committed fixtures (or fail when they are stale).
//! - `bench <name>`: run a release-mode benchmark and report wall time and peak RSS.
//! - `parity [--gator PATH]`: the engine on fixtures' objects versus on their projection.
//! - `chart`: render `charts/workload-report` with real Helm and check it (also part of `test`).

mod bench;
mod bench_jobcheck;
mod chart;
mod fixtures;
mod fixtures_cluster;
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
        _ => bail!(
            "usage: cargo xtask test | fixtures [--check] | bench <{}> | tidy | chart | parity [--gator PATH]",
            bench::NAMES.join("|")
        ),
    }
}

/// The whole suite, in the order that fails fastest.
fn test() -> Result<()> {
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
    Ok(())
}
