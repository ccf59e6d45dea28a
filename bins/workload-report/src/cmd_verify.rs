//! `workload-report verify`: runs gator verify Suite files against the embedded engine, like
//! `gator verify` (a trailing `/...` walks a directory recursively), printing `ok`/`FAIL` per
//! suite and `PASS`/`FAIL` last (`-v`: a line per test and case). What gator passes over in
//! silence — no Suite under a path, a `--run` matching nothing, Suite keys gator ignores — is
//! said on stderr, with gator's exit code. Exit code: 1 on any failure, 2 on listing or filter
//! errors. Files a Suite names resolve as in gator (`..` may leave the Suite's folder) unless
//! `--confine-to-suite`.

use std::process::ExitCode;

/// Arguments of `workload-report verify`.
#[derive(Debug, clap::Args)]
pub(crate) struct VerifyArgs {
    /// Suite files or directories; `DIR/...` is recursive.
    #[arg(required = true)]
    paths: Vec<String>,
    /// Only run tests/cases matching this Go regex (`TEST//CASE` for both).
    #[arg(short = 'r', long = "run")]
    run: Option<String>,
    /// Print a line per test and case run or skipped, as `gator verify -v`.
    #[arg(short = 'v', long)]
    verbose: bool,
    /// Refuse files outside the Suite's own directory tree (`..`, symlinks out), which gator
    /// reads: for CI running suites from untrusted pull requests.
    #[arg(long)]
    confine_to_suite: bool,
    /// Deprecated, no effect: files outside the Suite's directory are read by default.
    #[arg(long, hide = true)]
    allow_outside_suite: bool,
    #[command(flatten)]
    cel: crate::cmd_eval::CelFlag,
}

/// Runs `workload-report verify`.
pub(crate) fn run(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    if args.allow_outside_suite {
        crate::stdio::log(
            "warning: --allow-outside-suite is deprecated and has no effect: Suites may name \
             files outside their folder by default (--confine-to-suite refuses them)",
        );
    }
    let options = gatekeeper_engine::verify::VerifyOptions {
        filter: args.run,
        confine_to_suite: args.confine_to_suite,
        verbose: args.verbose,
        k8s_native_validation: args.cel.enable_k8s_native_validation,
    };
    let outcome = gatekeeper_engine::verify::run(&args.paths, &options)?;
    for warning in &outcome.warnings {
        crate::stdio::log(&format!("warning: {warning}"));
    }
    crate::stdio::print(&outcome.output)?;
    if outcome.passed {
        Ok(ExitCode::SUCCESS)
    } else {
        crate::stdio::log("Error: FAIL");
        Ok(ExitCode::from(1))
    }
}
