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
mod malformed;
mod policy_cmd;
mod render;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand, ValueEnum};

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
    /// Print a shell completion script (`source <(jobcheck completion bash)`).
    Completion {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), as `cargo xtask man` writes it.
    #[command(hide = true)]
    Man,
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

/// Arguments of `jobcheck check`.
#[derive(Debug, clap::Args)]
#[command(after_help = CHECK_AFTER_HELP)]
struct CheckArgs {
    /// Manifest files (every YAML or JSON document), directories (*.yaml, *.yml, *.json, any
    /// case) or `-` for stdin; several may be given. Omit them to only compare the policies.
    #[arg(value_name = "PATH")]
    paths: Vec<PathBuf>,
    /// One more manifest file, directory or `-` (stdin), as kubectl's `-f`; repeatable, read
    /// after the PATH arguments.
    #[arg(short = 'f', long = "filename", value_name = "PATH")]
    filenames: Vec<PathBuf>,
    /// Read directories recursively (as kubectl's `-R`).
    #[arg(short = 'R', long)]
    recursive: bool,
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
    /// Exit 1 when any region would reject, or when no region's policy could be read (nothing
    /// was judged); the output is printed first.
    #[arg(long)]
    fail_on_reject: bool,
    /// Exit 1 when any region's policy could not be read (`unknown`).
    #[arg(long)]
    fail_on_unknown: bool,
    /// A live region from the regions file; repeatable, repeats dropped keeping the first.
    /// Without it (and without --policy-file), every region in the file is read.
    #[arg(short = 'r', long = "region", value_name = "REGION")]
    regions: Vec<String>,
    /// The regions file [default: $JOBCHECK_REGIONS_FILE, else ./jobcheck.yaml]; an empty
    /// JOBCHECK_REGIONS_FILE counts as unset.
    #[arg(long, value_name = "FILE")]
    regions_file: Option<PathBuf>,
    /// Count the advisory LimitRange / ResourceQuota warnings as issues (they can then turn an
    /// `admit` into a `reject`).
    #[arg(long)]
    strict_enforcement: bool,
}

impl CheckArgs {
    /// Every manifest input: the PATH arguments, then the `-f` ones.
    fn inputs(&self) -> Vec<PathBuf> {
        self.paths.iter().chain(&self.filenames).cloned().collect()
    }
}

/// The environment and exit codes, after `jobcheck check --help`.
const CHECK_AFTER_HELP: &str = "\
Environment:
  JOBCHECK_REGIONS_FILE   the regions file when --regions-file is not given (empty = unset)
  AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN
                          SigV4 credentials for regions with `auth: {type: sigv4}`

Exit codes:
  0  advisory: printed, nothing failed the run
  1  --fail-on-reject and a region rejects (a malformed manifest counts) or no region was
     readable; --fail-on-unknown and a region could not be read; the evaluation failed
  2  usage: bad flag, unreadable or invalid file, a path with no manifest";

/// The environment and exit codes, after `jobcheck policy --help`.
const POLICY_AFTER_HELP: &str = "\
Environment:
  JOBCHECK_REGIONS_FILE   the regions file when --regions-file is not given (empty = unset)
  AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN
                          SigV4 credentials for regions with `auth: {type: sigv4}`

Exit codes:
  0  printed
  1  the region's policy could not be read
  2  usage: bad flag, unreadable or invalid file";

/// Arguments of `jobcheck policy`.
#[derive(Debug, clap::Args)]
#[command(after_help = POLICY_AFTER_HELP)]
struct PolicyArgs {
    /// The region to read (it must be in the regions file).
    #[arg(
        short = 'r',
        long = "region",
        value_name = "REGION",
        required_unless_present = "policy_file",
        conflicts_with = "policy_file"
    )]
    region: Option<String>,
    /// Show a saved `GET /api/v1/policy` response body (JSON or YAML) for REGION instead of
    /// reading the region.
    #[arg(long = "policy-file", value_name = "REGION=FILE")]
    policy_file: Option<String>,
    /// The regions file [default: $JOBCHECK_REGIONS_FILE, else ./jobcheck.yaml].
    #[arg(long, value_name = "FILE")]
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
        Command::Completion { shell } => {
            clap_complete::generate(
                shell,
                &mut Cli::command(),
                "jobcheck",
                &mut std::io::stdout(),
            );
            ExitCode::SUCCESS
        }
        Command::Man => {
            match clap_mangen::Man::new(Cli::command()).render(&mut std::io::stdout()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(_) => ExitCode::from(1),
            }
        }
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
            match report.failure() {
                Some(why) => {
                    eprintln!("jobcheck: {why}");
                    ExitCode::from(1)
                }
                None => ExitCode::SUCCESS,
            }
        }
        Err(error) => {
            eprintln!("{}", error.one_line());
            ExitCode::from(error.exit_code())
        }
    }
}
