//! `workload-report run`: checks the output paths, loads the config and the environment, hands
//! them to `daily_report::live::run_live`, then writes `--out DIR` and prints the digests and the
//! run line — always the last line on stdout in text mode, also when `--out` fails — or, with
//! `-o json`, one JSON document that holds the run line as `run`.
//!
//! Everything that decides anything (status, counts, audit check, what is posted) lives in
//! `daily-report`; this file only parses and prints.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow};
use daily_report::live::{LiveOptions, check_outputs, check_source, run_live, write_out};
use daily_report::progress::{NoProgress, Progress};
use daily_report::{Config, EngineKind, RunOutput, Settings};
use serde_json::Value;

use crate::progress::{TerminalProgress, shows_progress};
use crate::stdio;

/// Where the report reads the cluster from: a snapshot, or the cluster itself (`run` and
/// `explain`).
#[derive(Debug, clap::Args)]
pub(crate) struct SourceArgs {
    /// Read a saved snapshot (directory, file or .tar.gz) instead of the cluster.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["kubeconfig", "context"])]
    pub(crate) snapshot: Option<PathBuf>,
    /// The kubeconfig file (default: in-cluster, else KUBECONFIG / ~/.kube/config).
    #[arg(long, value_name = "FILE")]
    pub(crate) kubeconfig: Option<PathBuf>,
    /// The kubeconfig context.
    #[arg(long, value_name = "NAME")]
    pub(crate) context: Option<String>,
}

impl SourceArgs {
    /// Whether a source was named (`routes` reads namespaces only then).
    pub(crate) fn is_given(&self) -> bool {
        self.snapshot.is_some() || self.kubeconfig.is_some() || self.context.is_some()
    }
}

/// Arguments of `workload-report run`.
#[derive(Debug, clap::Args)]
pub(crate) struct RunArgs {
    /// The report's config file (YAML).
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
    #[command(flatten)]
    source: SourceArgs,
    /// The engine (overrides the config's `engine`).
    #[arg(long, value_parser = ["embedded", "gator", "both"])]
    engine: Option<String>,
    /// A local gator binary (overrides `gator.path`; no download).
    #[arg(long, value_name = "PATH")]
    gator: Option<PathBuf>,
    /// The work dir: gator is cached here and reads its input from `<work>/in`.
    #[arg(long, value_name = "DIR")]
    work: Option<PathBuf>,
    /// With the embedded engine, write the projection to `<work>/in` too, for inspection.
    #[arg(long, requires = "work")]
    write_projection: bool,
    /// Post nothing to Slack (also `DRY_RUN=true`).
    #[arg(long)]
    dry_run: bool,
    /// Write run.json, slack/<team>.json and loki.json to this directory.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Save what was read as a snapshot (a .tar.gz) that `--snapshot` replays offline.
    #[arg(long, value_name = "FILE")]
    save_snapshot: Option<PathBuf>,
    /// Output format on stdout.
    #[arg(short = 'o', long = "output", default_value = "text", value_parser = ["text", "json"])]
    output: String,
}

/// Runs `workload-report run`.
pub(crate) fn run(args: RunArgs) -> Result<ExitCode> {
    keep_panic_messages_out_of_the_logs();
    let options = LiveOptions {
        snapshot: args.source.snapshot,
        kubeconfig: args.source.kubeconfig,
        context: args.source.context,
        engine: args
            .engine
            .as_deref()
            .map(str::parse::<EngineKind>)
            .transpose()?,
        gator: args.gator,
        work: args.work,
        write_projection: args.write_projection,
        save_snapshot: args.save_snapshot,
        ..LiveOptions::default()
    };
    check_outputs(&options, args.out.as_deref())?;
    let config = Config::load(&args.config)
        .with_context(|| format!("invalid config {}", args.config.display()))?;
    let settings = Settings::from_env(&config, args.dry_run, &|name| std::env::var(name).ok())?;
    // a path may spell a secret of the run: the error is redacted like every reason
    check_source(&options).map_err(|e| anyhow!(settings.redactor().redact(&e.to_string())))?;
    for warning in config.routes.warnings() {
        // A team with a webhookEnv override does not read the name the warning is about.
        if !warning
            .webhook_team()
            .is_some_and(|team| config.webhook_env.contains_key(team))
        {
            stdio::log(&format!("warning: routes: {warning}"));
        }
    }
    let terminal =
        shows_progress(std::io::stderr().is_terminal(), &args.output).then(TerminalProgress::start);
    let log = |line: &str| match &terminal {
        Some(progress) => progress.log(line),
        None => stdio::log(line),
    };
    let progress: &dyn Progress = match &terminal {
        Some(progress) => progress,
        None => &NoProgress,
    };
    let output = run_live(&config, &settings, &options, &log, progress);
    // the progress line is cleared before anything else is written
    drop(terminal);
    let output = output?;
    for line in &output.log {
        stdio::log(line);
    }
    let written = match &args.out {
        Some(dir) => write_out(dir, &output, &config.default_team),
        None => Ok(()),
    };
    stdio::print(&rendered(&output, &args.output))?;
    written?;
    Ok(ExitCode::from(output.exit_code()))
}

/// A panic's message could quote a secret or input; stderr gets where it happened only. (A panic
/// while collecting is caught by the run and reported, redacted, in the run line.)
fn keep_panic_messages_out_of_the_logs() {
    std::panic::set_hook(Box::new(|info| {
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        stdio::log(&format!("workload-report: internal error{at}"));
    }));
}

/// What `run` prints: the digests then the run line as the last line, so that a log shipper can
/// take it from the end (text); or one JSON document (`-o json`: the run line as `run`, digests,
/// problems), which `json.load` and `jq` read whole.
fn rendered(output: &RunOutput, format: &str) -> String {
    if format == "json" {
        json_document(output)
    } else {
        text_report(output)
    }
}

fn json_document(output: &RunOutput) -> String {
    let digests: serde_json::Map<String, Value> = output
        .digests
        .iter()
        .map(|d| {
            (
                d.team.clone(),
                serde_json::to_value(&d.message).unwrap_or(Value::Null),
            )
        })
        .collect();
    let document = serde_json::json!({
        "run": output.report.run,
        "digests": digests,
        "problems": output.problems,
    });
    let mut text = serde_json::to_string_pretty(&document).unwrap_or_default();
    text.push('\n');
    text
}

fn text_report(output: &RunOutput) -> String {
    let run = &output.report.run;
    let mut text = String::new();
    for digest in &output.digests {
        let state = if run.posted.contains(&digest.team) {
            "posted"
        } else if run.would_post.contains(&digest.team) {
            "dry run: would post"
        } else {
            "not posted"
        };
        text.push_str(&format!("=== digest for {} ({state}) ===\n", digest.team));
        text.push_str(&format!("{}\n\n", digest.message.plain_text()));
    }
    if let Some(problems) = &output.problems {
        text.push_str("=== problems for the default team ===\n");
        text.push_str(&format!("{}\n\n", problems.plain_text()));
    }
    text.push_str(&output.run_line());
    text.push('\n');
    text
}
