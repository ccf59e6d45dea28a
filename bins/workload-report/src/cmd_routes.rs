//! `workload-report routes`.

use std::process::ExitCode;

/// Arguments of `workload-report routes`.
#[derive(Debug, clap::Args)]
pub(crate) struct RoutesArgs {}

/// Runs `workload-report routes`.
pub(crate) fn run(_args: RoutesArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`workload-report routes` is not available yet")
}
