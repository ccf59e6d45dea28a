//! `workload-report eval`.

use std::process::ExitCode;

/// Arguments of `workload-report eval`.
#[derive(Debug, clap::Args)]
pub(crate) struct EvalArgs {}

/// Runs `workload-report eval`.
pub(crate) fn run(_args: EvalArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`workload-report eval` is not available yet")
}
