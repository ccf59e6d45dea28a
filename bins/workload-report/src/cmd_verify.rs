//! `workload-report verify`.

use std::process::ExitCode;

/// Arguments of `workload-report verify`.
#[derive(Debug, clap::Args)]
pub(crate) struct VerifyArgs {}

/// Runs `workload-report verify`.
pub(crate) fn run(_args: VerifyArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`workload-report verify` is not available yet")
}
