//! Project automation, run as `cargo xtask <command>`. xtask orchestrates: it runs cargo and
//! the project's tools and holds no check a test could hold, so `cargo test --workspace` runs
//! every test, and xtask stays light (no Kubernetes client, no Rego engine).
//!
//! - `test`: the one test command — format, tidy, fixtures freshness, clippy, every test (the
//!   chart, parity and live-OPA tests of `crates/system-tests` included), doctests and the
//!   verify suites; before the tests and at the end the line naming the real-server checks that
//!   cannot run here.
//! - `fixtures [--check]`: regenerate committed fixtures (or fail when they are stale).
//! - `bench <name>`: run a release-mode benchmark and report wall time and peak RSS.
//! - `chart`: the chart tests (`system-tests`' `chart_*`).
//! - `parity [--gator PATH]`: fixtures freshness, then the parity and differential tests (with
//!   the gator at PATH).
//! - `opa-diff [--record]`: the live-OPA test (`--record` rewrites OPA's recorded answers).
//! - `tidy`: repository conventions.
//! - `image [--tag REF] [--out PATH]`: the CronJob's image as a docker-archive, built without a
//!   registry (see `image.rs`); prints its image ID.
//!
//! The real servers (kube-apiserver + etcd, Loki, gator, the kube-node tarball) come from `$REAL_SERVERS_DIR` or
//! `../shared/tools` (see `test_support::real`); `test` says loudly which checks did not run
//! without them, and fails under `CI=true`.

mod bench;
mod bench_jobcheck;
mod fixtures;
mod fixtures_cluster;
mod image;
mod tidy;
mod util;

use std::process::ExitCode;

use anyhow::{Result, bail};

/// The test crate that holds the checks across crates.
const SYSTEM_TESTS: &str = "system-tests";
/// Its chart tests.
const CHART_TESTS: [&str; 3] = ["chart_render", "chart_binary", "chart_live"];

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
        ["bench", name, rest @ ..] => bench::run(name, rest),
        [bench::MEASURE, name, program, rest @ ..] => bench::measure(name, program, rest),
        [bench_jobcheck::MEASURE, jobcheck, corpus] => bench_jobcheck::measure(jobcheck, corpus),
        ["tidy"] => tidy::check(),
        ["image", rest @ ..] => image::run(rest),
        ["man"] => man(),
        ["chart"] => util::tests(SYSTEM_TESTS, &CHART_TESTS, &[]),
        ["parity"] => parity(&[]),
        ["parity", "--gator", path] => parity(&[("GATOR_BIN", path)]),
        ["opa-diff"] => util::tests(SYSTEM_TESTS, &["opa_live"], &[]),
        ["opa-diff", "--record"] => {
            util::tests(SYSTEM_TESTS, &["opa_live"], &[("OPA_DIFF_RECORD", "1")])
        }
        _ => bail!(
            "usage: cargo xtask test | fixtures [--check] | bench <{}> | tidy | image [--tag REF] [--out PATH] | man | chart | parity [--gator PATH] | opa-diff [--record]",
            bench::NAMES.join("|")
        ),
    }
}

/// `target/man/jobcheck.1` and `target/man/workload-report.1`: each binary renders its own page
/// from its clap definition (`clap_mangen`, through its hidden `man` subcommand).
fn man() -> Result<()> {
    let dir = std::path::Path::new("target/man");
    std::fs::create_dir_all(dir)?;
    for binary in ["jobcheck", "workload-report"] {
        let output = std::process::Command::new(std::env::var("CARGO").unwrap_or("cargo".into()))
            .args(["run", "--quiet", "--locked", "-p", binary, "--", "man"])
            .output()?;
        if !output.status.success() {
            bail!(
                "{binary} man failed: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        let page = dir.join(format!("{binary}.1"));
        std::fs::write(&page, output.stdout)?;
        println!("wrote {}", page.display());
    }
    Ok(())
}

/// The whole suite, in the order that fails fastest.
fn test() -> Result<()> {
    util::cargo(&["fmt", "--all", "--check"])?;
    tidy::check()?;
    fixtures::check()?;
    let missing = real_servers_missing()?;
    util::cargo(&[
        "clippy",
        "--workspace",
        "--all-targets",
        "--locked",
        "--",
        "-D",
        "warnings",
    ])?;
    util::tests_of_workspace()?;
    util::cargo(&["test", "--workspace", "--locked", "--doc"])?;
    // admission-core is a library others embed: its docs must build without a broken link.
    util::cargo_with_env(
        &["doc", "--no-deps", "--locked", "-p", "admission-core"],
        &[("RUSTDOCFLAGS", "-D warnings")],
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
    if let Some(line) = missing {
        eprintln!("{line}");
    }
    Ok(())
}

/// Parity and the differential check on fresh fixtures: the committed fixtures are what their
/// scenarios read.
fn parity(env: &[(&str, &str)]) -> Result<()> {
    fixtures::check()?;
    util::tests(SYSTEM_TESTS, &["parity", "differential"], env)
}

/// The loud line naming the real-server checks that will not run (printed now and again at the
/// end, since the test runner hides the output of passing tests), or an error under `CI=true`,
/// where every one of them must run. test-support knows where the servers are; xtask asks it.
fn real_servers_missing() -> Result<Option<String>> {
    let (ok, line) = util::cargo_stdout(&[
        "run",
        "-q",
        "--locked",
        "-p",
        "test-support",
        "--bin",
        "real-servers-missing",
        "--",
        "the real-server tests (`real_*` in cluster-projection, report-sinks, gator-runner and \
         workload-report; system-tests' chart_live, rollout, alert_gate_prometheus and gator \
         parity; test-support's real_node)",
    ])?;
    let line = line.trim().to_string();
    if !ok {
        bail!("{line}");
    }
    if line.is_empty() {
        return Ok(None);
    }
    eprintln!("{line}");
    Ok(Some(line))
}
