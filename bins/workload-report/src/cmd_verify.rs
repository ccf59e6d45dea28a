//! `workload-report verify`: runs gator verify Suite files against the embedded engine, like
//! `gator verify` (a trailing `/...` walks a directory recursively), printing `ok`/`FAIL` per
//! suite and `PASS`/`FAIL` last. Exit code: 1 on any failure, 2 on listing or filter errors.
//! Files a Suite names must stay inside its directory tree unless `--allow-outside-suite`.

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
    /// Let Suites name files outside their own directory (absolute paths, `..`, symlinks out).
    #[arg(long)]
    allow_outside_suite: bool,
    #[command(flatten)]
    cel: crate::cmd_eval::CelFlag,
}

/// Runs `workload-report verify`.
pub(crate) fn run(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let options = gatekeeper_engine::verify::VerifyOptions {
        filter: args.run,
        allow_outside_suite: args.allow_outside_suite,
        k8s_native_validation: args.cel.enable_k8s_native_validation,
    };
    let outcome = gatekeeper_engine::verify::run(&args.paths, &options)?;
    crate::stdio::print(&outcome.output)?;
    if outcome.passed {
        Ok(ExitCode::SUCCESS)
    } else {
        crate::stdio::log("Error: FAIL");
        Ok(ExitCode::from(1))
    }
}
