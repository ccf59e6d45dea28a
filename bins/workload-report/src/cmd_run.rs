//! `workload-report run`.

use std::process::ExitCode;

/// Arguments of `workload-report run`.
#[derive(Debug, clap::Args)]
pub(crate) struct RunArgs {}

/// Runs `workload-report run`.
pub(crate) fn run(_args: RunArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`workload-report run` is not available yet")
}
