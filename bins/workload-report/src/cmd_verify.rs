//! `workload-report verify`: runs gator verify Suite files against the embedded engine, like
//! `gator verify` (a trailing `/...` walks a directory recursively), printing `ok`/`FAIL` per
//! suite and `PASS`/`FAIL` last. Exit code: 1 on any failure, 2 on listing or filter errors.

use std::process::ExitCode;

/// Arguments of `workload-report verify`.
#[derive(Debug, clap::Args)]
pub(crate) struct VerifyArgs {
    /// Suite files or directories; `DIR/...` is recursive.
    #[arg(required = true)]
    paths: Vec<String>,
    /// Only run tests/cases matching this regex (`TEST//CASE` for both).
    #[arg(short = 'r', long = "run")]
    run: Option<String>,
}

/// Runs `workload-report verify`.
pub(crate) fn run(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let outcome = gatekeeper_engine::verify::run(&args.paths, args.run.as_deref())?;
    print!("{}", outcome.output);
    if outcome.passed {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("Error: FAIL");
        Ok(ExitCode::from(1))
    }
}
