//! `workload-report explain`: which workload kinds each configured rule can see, and how —
//! directly, or through which ExpansionTemplates — in a snapshot or the cluster, read as `run`
//! reads it; then the warning line of every rule that cannot flag a workload (the line `run`
//! sends to the default team).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow};
use daily_report::Config;
use daily_report::live::{LiveOptions, check_source, explain};

use crate::cmd_run::SourceArgs;
use crate::format::{Format, document};

/// Arguments of `workload-report explain`.
#[derive(Debug, clap::Args)]
pub(crate) struct ExplainArgs {
    /// The report's config file (YAML).
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
    #[command(flatten)]
    source: SourceArgs,
    /// Output format on stdout.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Text)]
    output: Format,
}

/// Runs `workload-report explain`.
pub(crate) fn run(args: ExplainArgs) -> Result<ExitCode> {
    let config = Config::load(&args.config)
        .with_context(|| format!("invalid config {}", args.config.display()))?;
    let options = LiveOptions {
        snapshot: args.source.snapshot,
        kubeconfig: args.source.kubeconfig,
        context: args.source.context,
        ..LiveOptions::default()
    };
    check_source(&options)?;
    let coverage = explain(&config, &options).map_err(|reason| anyhow!(reason))?;
    let text = document(&coverage.to_json(), args.output).unwrap_or_else(|| coverage.to_text());
    crate::stdio::print(&text)?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use daily_report::coverage::Coverage;

    use super::*;

    /// Copies the directory `from` to `to`, leaving out the files named `skip`.
    fn copy_dir(from: &Path, to: &Path, skip: &str) {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            let target = to.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                copy_dir(&entry.path(), &target, skip);
            } else if entry.file_name() != skip {
                std::fs::copy(entry.path(), target).unwrap();
            }
        }
    }

    /// The coverage of the demo config over the demo cluster, without the files named `skip`.
    fn demo_coverage(skip: &str) -> Coverage {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/demo");
        let config = Config::load(&root.join("config.yaml")).expect("the demo config");
        let dir = tempfile::tempdir().unwrap();
        copy_dir(&root.join("cluster"), dir.path(), skip);
        let options = LiveOptions {
            snapshot: Some(dir.path().to_path_buf()),
            ..LiveOptions::default()
        };
        explain(&config, &options).expect("coverage")
    }

    #[test]
    fn explain_the_demo_cluster() {
        insta::assert_snapshot!(demo_coverage("-").to_text());
    }

    #[test]
    fn explain_the_demo_cluster_as_json() {
        insta::assert_snapshot!(document(&demo_coverage("-").to_json(), Format::Json).unwrap());
    }

    #[test]
    fn explain_the_demo_cluster_without_its_expansion_template() {
        insta::assert_snapshot!(demo_coverage("expansion.yaml").to_text());
    }
}
