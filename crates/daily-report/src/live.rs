//! The real I/O behind [`crate::run::execute`]: the cluster (or a snapshot) through
//! `cluster-projection`, the engine through `gator-runner`, Slack and Loki through
//! `report-sinks`, and the `--out DIR` files.
//!
//! This is the only module of the crate that does I/O; everything it does is wiring. Every
//! failure while collecting becomes a reason text (a skipped run), every delivery failure a
//! `SendError` (a partial run); only setup problems (runtime, engine configuration, TLS) are
//! [`LiveError`]s, which the binary reports as usage errors.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use cluster_projection::{ClusterSource, ClusterState, ReadSpec, WorkloadKind};
use gatekeeper_engine::ReviewResult;
use gator_runner::{EngineKind, Evaluator, EvaluatorConfig};
use jiff::Timestamp;
use report_sinks::slack::SlackMessage;
use report_sinks::{HttpOptions, LokiClient, LokiPush, SendError, SlackPoster, WebhookUrl};

use crate::audit::ConstraintAudit;
use crate::config::{Config, EngineChoice, Settings};
use crate::count::Finding;
use crate::run::{Collected, Delivery, RunContext, RunOutput, execute};

/// A setup problem: the run could not start (the binary exits 2).
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// The async runtime or a temporary work dir could not be created.
    #[error("failed to set up the run: {0}")]
    Setup(#[source] std::io::Error),
    /// The engine configuration is invalid (gator pin, `--gator PATH`).
    #[error("invalid engine configuration")]
    Engine(#[source] gator_runner::ConfigError),
    /// The HTTP client for Slack could not be built.
    #[error("failed to set up the Slack client: {0}")]
    Slack(#[source] SendError),
    /// `--save-snapshot` does not name a `.tar.gz`.
    #[error("--save-snapshot {0}: the snapshot is written as a .tar.gz; name it so")]
    SnapshotName(String),
    /// A `--out` file could not be written.
    #[error("failed to write {}", path.display())]
    Out {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// Where the run reads from and what it writes besides Slack and Loki.
#[derive(Debug, Clone, Default)]
pub struct LiveOptions {
    /// Read this snapshot instead of the cluster.
    pub snapshot: Option<PathBuf>,
    /// The kubeconfig (default: in-cluster, else `KUBECONFIG` / `~/.kube/config`).
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context.
    pub context: Option<String>,
    /// The engine, overriding the config's.
    pub engine: Option<EngineChoice>,
    /// A local gator binary, overriding `gator.path`.
    pub gator: Option<PathBuf>,
    /// The work dir (`<work>/in` gets the projection). Without it the embedded engine evaluates
    /// in memory, and gator gets a temporary directory.
    pub work: Option<PathBuf>,
    /// Save what was read as a `.tar.gz` snapshot.
    pub save_snapshot: Option<PathBuf>,
    /// Extra CA certificates (PEM) trusted by the Slack and Loki clients.
    pub extra_ca_pem: Option<String>,
}

enum WorkDir {
    Given(PathBuf),
    Temp(tempfile::TempDir),
    InMemory,
}

impl WorkDir {
    fn path(&self) -> Option<&Path> {
        match self {
            WorkDir::Given(dir) => Some(dir),
            WorkDir::Temp(dir) => Some(dir.path()),
            WorkDir::InMemory => None,
        }
    }
}

/// Runs the report against the real world: reads, evaluates, posts, pushes.
/// Progress lines go to `log` as they happen (the run's own log is in the output).
pub fn run_live(
    config: &Config,
    settings: &Settings,
    options: &LiveOptions,
    log: &(dyn Fn(&str) + Sync),
) -> Result<RunOutput, LiveError> {
    if let Some(file) = &options.save_snapshot {
        let name = file.to_string_lossy().to_ascii_lowercase();
        if !(name.ends_with(".tar.gz") || name.ends_with(".tgz")) {
            return Err(LiveError::SnapshotName(file.display().to_string()));
        }
    }
    let engine = options.engine.unwrap_or(config.engine);
    let work = match &options.work {
        Some(dir) => WorkDir::Given(dir.clone()),
        None if engine == EngineChoice::Embedded => WorkDir::InMemory,
        None => WorkDir::Temp(tempfile::tempdir().map_err(LiveError::Setup)?),
    };
    let evaluator_config = evaluator_config(config, engine, options.gator.clone(), &work);
    evaluator_config.validate().map_err(LiveError::Engine)?;
    // List pages are parsed on the blocking pool (two at a time). A small pool reuses its
    // threads, and with them the allocator's per-thread memory: tokio's default of up to 512
    // threads left the read phase holding about 70 MiB more (`cargo xtask bench report`).
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(4)
        .enable_all()
        .build()
        .map_err(LiveError::Setup)?;
    let http = HttpOptions {
        timeout: config.timeouts.post,
        extra_ca_pem: options.extra_ca_pem.clone(),
        ..HttpOptions::default()
    };
    let mut delivery = LiveDelivery {
        runtime: &runtime,
        poster: SlackPoster::new(&http).map_err(LiveError::Slack)?,
        loki: settings
            .loki_url
            .clone()
            .map(|url| report_sinks::LokiConfig {
                url,
                tenant: config.loki.tenant.clone(),
                auth: settings.loki_auth.clone(),
            }),
        http,
    };
    let reader = Reader {
        config,
        options,
        runtime: &runtime,
        work: &work,
        evaluator_config: &evaluator_config,
        log,
    };
    let mut collect = || reader.collect();
    let ctx = RunContext {
        config,
        settings,
        engine,
    };
    Ok(execute(&ctx, &mut collect, &mut delivery, &Timestamp::now))
}

fn evaluator_config(
    config: &Config,
    engine: EngineChoice,
    gator_path: Option<PathBuf>,
    work: &WorkDir,
) -> EvaluatorConfig {
    let kind = match engine {
        EngineChoice::Embedded => EngineKind::Embedded,
        EngineChoice::Gator => EngineKind::Gator,
        EngineChoice::Both => EngineKind::Both,
    };
    let pin = config.gator.clone().unwrap_or_default();
    let gator = gator_runner::GatorConfig {
        version: pin.version,
        url: pin.url,
        sha256: pin.sha256,
        path: gator_path.or(pin.path.map(PathBuf::from)),
        k8s_native_validation: pin.k8s_native_validation,
    };
    let mut evaluator = EvaluatorConfig::new(
        kind,
        gator,
        work.path().map(Path::to_path_buf).unwrap_or_default(),
    );
    evaluator.timeout = config.timeouts.engine;
    evaluator
}

/// Reads the cluster (or snapshot), projects it and evaluates it; every error is a reason text.
struct Reader<'a> {
    config: &'a Config,
    options: &'a LiveOptions,
    runtime: &'a tokio::runtime::Runtime,
    work: &'a WorkDir,
    evaluator_config: &'a EvaluatorConfig,
    log: &'a (dyn Fn(&str) + Sync),
}

/// An error's text with its causes, `a: b: c`.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.ends_with(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = cause.source();
    }
    text
}

impl Reader<'_> {
    fn collect(&self) -> Result<Collected, String> {
        let state = self.read()?;
        (self.log)(&format!(
            "read {} templates, {} constraints, {} namespaces, {} workloads",
            state.templates.len(),
            state.constraints.len(),
            state.namespaces.len(),
            state.workloads.len()
        ));
        if let Some(file) = &self.options.save_snapshot {
            cluster_projection::save_snapshot(&state, file)
                .map_err(|e| format!("failed to save the snapshot: {}", chain(&e)))?;
            (self.log)(&format!("saved the snapshot to {}", file.display()));
        }
        let constraints = audit_facts(&state)?;
        let template_kinds: BTreeSet<String> = state
            .templates
            .iter()
            .map(|t| t.constraint_kind.clone())
            .collect();
        let results = self.evaluate(state)?;
        (self.log)(&format!("evaluated: {} results", results.len()));
        Ok(Collected {
            results: results.into_iter().map(Finding::from).collect(),
            constraints,
            template_kinds,
        })
    }

    fn read(&self) -> Result<ClusterState, String> {
        let workload_kinds = self
            .config
            .workload_kinds
            .iter()
            .map(|k| k.parse::<WorkloadKind>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| chain(&e))?;
        let spec = ReadSpec {
            workload_kinds,
            constraint_kinds: self.config.constraint_kinds.clone(),
            request_timeout: self.config.timeouts.api,
            ..ReadSpec::default()
        };
        match &self.options.snapshot {
            Some(path) => {
                let state = cluster_projection::read_snapshot(path)
                    .map_err(|e| format!("failed to read the snapshot: {}", chain(&e)))?;
                state
                    .restrict_to(&spec)
                    .map_err(|e| format!("snapshot {}: {}", path.display(), chain(&e)))
            }
            None => {
                let source = ClusterSource::detect(
                    self.options.kubeconfig.clone(),
                    self.options.context.clone(),
                );
                self.runtime
                    .block_on(cluster_projection::read_cluster(&source, &spec))
                    .map_err(|e| {
                        format!(
                            "failed to read the cluster ({}): {}",
                            source.describe(),
                            chain(&e)
                        )
                    })
            }
        }
    }

    fn evaluate(&self, state: ClusterState) -> Result<Vec<ReviewResult>, String> {
        let Some(work) = self.work.path() else {
            // Projected objects go to the engine one at a time (it keeps them compact).
            let projected = cluster_projection::project_lazily(&state).map_err(|e| chain(&e))?;
            let embedded =
                gator_runner::Embedded::new(self.evaluator_config.engine_options.clone());
            return embedded
                .evaluate_objects(projected.map(|p| p.object))
                .map_err(|e| format!("embedded evaluation failed: {}", chain(&e)));
        };
        let summary = cluster_projection::write_projection(&state, work)
            .map_err(|e| format!("failed to write the projection: {}", chain(&e)))?;
        drop(state);
        let evaluator: Box<dyn Evaluator> = self
            .runtime
            .block_on(gator_runner::build_evaluator(self.evaluator_config))
            .map_err(|e| chain(&e))?;
        let evaluation = evaluator
            .evaluate_detailed(&summary.dir)
            .map_err(|e| format!("{} evaluation failed: {}", evaluator.name(), chain(&e)))?;
        if let Some(comparison) = &evaluation.comparison {
            if comparison.agrees() {
                (self.log)("engines agree: embedded and gator gave the same results");
            } else {
                (self.log)(&format!(
                    "warning: engines disagree (embedded results are used): {comparison}"
                ));
            }
        }
        Ok(evaluation.results)
    }
}

fn audit_facts(state: &ClusterState) -> Result<Vec<ConstraintAudit>, String> {
    state
        .constraints
        .iter()
        .map(|c| {
            Ok(ConstraintAudit {
                kind: c.kind.clone(),
                name: c.name.clone(),
                created_at: c.created_at().map_err(|e| chain(&e))?,
                audit_timestamp: c.audit_timestamp().map_err(|e| chain(&e))?,
                total_violations: c.total_violations().map_err(|e| chain(&e))?,
            })
        })
        .collect()
}

/// Slack and Loki over report-sinks' clients, on the run's runtime.
struct LiveDelivery<'a> {
    runtime: &'a tokio::runtime::Runtime,
    poster: SlackPoster,
    loki: Option<report_sinks::LokiConfig>,
    http: HttpOptions,
}

impl Delivery for LiveDelivery<'_> {
    fn post(
        &mut self,
        _team: &str,
        webhook: &WebhookUrl,
        message: &SlackMessage,
    ) -> Result<(), SendError> {
        self.runtime.block_on(self.poster.post(webhook, message))
    }

    fn push(&mut self, push: &LokiPush) -> Result<(), SendError> {
        let Some(config) = &self.loki else {
            return Ok(());
        };
        let client = LokiClient::new(config, &self.http)?;
        self.runtime.block_on(client.push(push))
    }
}

/// Writes `run.json`, `slack/<team>.json` (and `slack/<default team>.problems.json`) and
/// `loki.json` into `dir`, exactly as sent or as they would be sent.
pub fn write_out(dir: &Path, output: &RunOutput, default_team: &str) -> Result<(), LiveError> {
    let slack = dir.join("slack");
    std::fs::create_dir_all(&slack).map_err(|source| LiveError::Out {
        path: slack.clone(),
        source,
    })?;
    let write = |path: PathBuf, text: String| {
        std::fs::write(&path, text + "\n").map_err(|source| LiveError::Out { path, source })
    };
    let run = serde_json::to_string_pretty(&output.report.run).expect("the run summary serializes");
    write(dir.join("run.json"), run)?;
    for digest in &output.digests {
        write(
            slack.join(format!("{}.json", digest.team)),
            digest.message.to_json(),
        )?;
    }
    if let Some(problems) = &output.problems {
        write(
            slack.join(format!("{default_team}.problems.json")),
            problems.to_json(),
        )?;
    }
    write(dir.join("loki.json"), output.loki.to_json())?;
    Ok(())
}
