//! `jobcheck`: which regions would admit these job manifests, and do the regions still agree?
//!
//! - `jobcheck check [MANIFEST_PATH] [-r REGION]... [--policy-file REGION=FILE]... [-n NS]
//!   [-o table|json|yaml|sarif|junit|github] [--fail-on-reject] [--strict-enforcement]` judges
//!   manifests against live regions (read concurrently through `policy-client`) and/or saved
//!   `GET /api/v1/policy` response bodies; the CI formats point at manifest lines (`ci`). Exit
//!   codes: 0 advisory, 1 with `--fail-on-reject` and a `reject` (or when the evaluation itself
//!   fails), 2 for usage errors (bad flag, unreadable or unparsable file).
//! - `jobcheck policy -r REGION [-o table|json|yaml]` prints one region's full response; exit 1
//!   when it cannot be read.

mod check;
mod ci;
mod live;
mod manifests;
mod policy_cmd;
mod render;
mod yaml;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

/// Loading a large manifest stream allocates and frees every key and value of every manifest;
/// mimalloc makes that markedly cheaper than the system allocator (`cargo xtask bench jobcheck`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Command-line interface.
#[derive(Debug, Parser)]
#[command(name = "jobcheck", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check which regions would admit the manifests, and compare the region policies.
    Check(CheckArgs),
    /// Show one region's deployed job-validation policy.
    Policy(PolicyArgs),
}

/// Output formats of `jobcheck check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum OutputFormat {
    /// The reference's table.
    Table,
    /// The reference's JSON payload.
    Json,
    /// The same payload as YAML.
    Yaml,
    /// SARIF 2.1.0, for code scanning.
    Sarif,
    /// JUnit XML, for CI test reports.
    Junit,
    /// GitHub Actions workflow commands (annotations).
    Github,
}

impl OutputFormat {
    /// Whether the format points at manifest lines (so the manifests' texts are kept).
    fn needs_positions(self) -> bool {
        matches!(self, Self::Sarif | Self::Junit | Self::Github)
    }
}

/// Arguments of `jobcheck check`.
#[derive(Debug, clap::Args)]
struct CheckArgs {
    /// Manifest file (every YAML document), directory (*.yaml then *.yml) or `-` for stdin.
    /// Omit it to only compare the policies.
    manifest_path: Option<PathBuf>,
    /// A saved `GET /api/v1/policy` response body (JSON or YAML) for REGION; repeatable, regions
    /// keep the order given.
    #[arg(long = "policy-file", value_name = "REGION=FILE")]
    policy_files: Vec<String>,
    /// Namespace assumed for manifests that declare none.
    #[arg(short = 'n', long, default_value = admission_core::DEFAULT_NAMESPACE)]
    namespace: String,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = OutputFormat::Table)]
    output: OutputFormat,
    /// Exit 1 when any region would reject (after printing); `unknown` never fails.
    #[arg(long)]
    fail_on_reject: bool,
    /// A live region from the regions file; repeatable, repeats dropped keeping the first.
    /// Without it (and without --policy-file), every region in the file is read.
    #[arg(short = 'r', long = "region", value_name = "REGION")]
    regions: Vec<String>,
    /// The regions file [default: ./jobcheck.yaml].
    #[arg(long, value_name = "FILE", env = "JOBCHECK_REGIONS_FILE")]
    regions_file: Option<PathBuf>,
    /// Count the advisory LimitRange / ResourceQuota warnings as issues (they can then turn an
    /// `admit` into a `reject`).
    #[arg(long)]
    strict_enforcement: bool,
}

/// Arguments of `jobcheck policy`.
#[derive(Debug, clap::Args)]
struct PolicyArgs {
    /// The region to read (it must be in the regions file).
    #[arg(short = 'r', long = "region", value_name = "REGION")]
    region: String,
    /// The regions file [default: ./jobcheck.yaml].
    #[arg(long, value_name = "FILE", env = "JOBCHECK_REGIONS_FILE")]
    regions_file: Option<PathBuf>,
    /// Output format: the reference's table, or the response unchanged as JSON / YAML.
    #[arg(short = 'o', long, value_enum, default_value_t = PolicyFormat::Table)]
    output: PolicyFormat,
}

/// Output formats of `jobcheck policy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum PolicyFormat {
    /// The reference's table.
    Table,
    /// The response unchanged, as JSON.
    Json,
    /// The response unchanged, as YAML.
    Yaml,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Check(args) => finish(check::run(&args)),
        Command::Policy(args) => policy_cmd::run(&args),
    }
}

/// Prints the report or the error and maps the outcome to the exit code.
fn finish(outcome: Result<check::Report, check::CheckError>) -> ExitCode {
    match outcome {
        Ok(report) => {
            let mut stdout = std::io::stdout().lock();
            if stdout.write_all(report.output.as_bytes()).is_err() || stdout.flush().is_err() {
                return ExitCode::from(1);
            }
            if report.any_reject && report.fail_on_reject {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(error) => {
            eprintln!("{}", error.one_line());
            ExitCode::from(error.exit_code())
        }
    }
}
