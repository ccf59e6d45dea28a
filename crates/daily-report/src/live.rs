//! The real I/O behind [`crate::run::execute`]: the cluster (or a snapshot) through
//! `cluster-projection`, the engine through `gator-runner` (its [`PolicyEngine`] gets the
//! projected objects; gator writes its own input directory), Slack and Loki through
//! `report-sinks`, and the `--out DIR` files.
//!
//! This module (with `workloads`, the pager of a run's workloads) is the only one of the crate
//! that does I/O; everything it does is wiring. Every
//! failure while collecting becomes a reason text (a skipped run), every delivery failure a
//! `SendError` (a partial run); only setup problems (runtime, engine configuration, TLS, output
//! paths) are [`LiveError`]s, which the binary reports as usage errors.
//!
//! Output paths are checked before anything is read or sent ([`check_outputs`]): `--out` must be
//! (or become) a writable directory, `--save-snapshot` a `.tar.gz` path that is not a directory,
//! and none of `--out`, `--out/slack`, `--save-snapshot`, `--work` or `<work>/in` may be a
//! symlink. Files are then written to a temporary name and renamed into place, so a symlink
//! planted later is replaced, never followed.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use cluster_projection::{ClusterSource, ClusterState, ReadSpec};
use gator_runner::{EngineConfig, EngineKind, PolicyEngine, ReviewInput};
use jiff::Timestamp;
use redaction::error_text;
use report_sinks::loki::QueryError;
use report_sinks::slack::SlackMessage;
use report_sinks::{
    HistoryError, HistoryQuery, HttpOptions, LokiClient, LokiEndpoint, LokiPush, PreviousRun,
    SendError, SlackPoster, WebhookUrl,
};
use serde_json::Value;

use crate::audit::ConstraintAudit;
use crate::config::{Config, Settings};
use crate::count::Finding;
use crate::coverage::{Coverage, coverage};
use crate::progress::{Phase, Progress};
use crate::run::{Collected, Delivery, RunContext, RunOutput, execute};

mod workloads;

use workloads::Workloads;

/// A setup problem: the run could not start (the binary exits 2).
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// The async runtime or a temporary work dir could not be created.
    #[error("failed to set up the run")]
    Setup(#[source] std::io::Error),
    /// The engine configuration is invalid (gator pin, `--gator PATH`).
    #[error("invalid engine configuration")]
    Engine(#[source] gator_runner::ConfigError),
    /// The HTTP client for Slack could not be built.
    #[error("failed to set up the Slack client")]
    Slack(#[source] SendError),
    /// The source cannot be used: a `--snapshot` path that does not exist, or a kubeconfig or
    /// context that cannot be loaded (found before anything is read; a cluster that cannot be
    /// reached is a skipped run instead).
    #[error("{0}")]
    Source(String),
    /// `--save-snapshot` does not name a `.tar.gz`.
    #[error("--save-snapshot {0}: the snapshot is written as a .tar.gz; name it so")]
    SnapshotName(String),
    /// An output path (`--out`, `--save-snapshot`, `--work`) cannot be used.
    #[error("{flag} {}: {what}", path.display())]
    OutputPath {
        /// The flag, e.g. `--out`.
        flag: &'static str,
        /// The path at fault (the flag's value or an entry in it).
        path: PathBuf,
        /// What is wrong, e.g. `is a file, not a directory`.
        what: String,
    },
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
    pub engine: Option<EngineKind>,
    /// A local gator binary, overriding `gator.path`.
    pub gator: Option<PathBuf>,
    /// The work dir: gator's cache and input (`<work>/in`). Without it the embedded engine
    /// touches no disk, and gator gets a temporary directory.
    pub work: Option<PathBuf>,
    /// With the embedded engine, write the projection to `<work>/in` anyway, for inspection
    /// (this holds every projected object until the run ends; gator always writes its input).
    pub write_projection: bool,
    /// Save what was read as a `.tar.gz` snapshot.
    pub save_snapshot: Option<PathBuf>,
    /// Who the Slack and Loki clients trust (default: the system roots).
    pub sink_trust: report_sinks::TrustRoots,
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

/// Checks the source of `options` before anything is read: the `--snapshot` path exists, or the
/// kubeconfig files load and define the context (see `ClusterSource::check`). Nothing is
/// contacted: an unreachable cluster is found by the run, which is then skipped.
pub fn check_source(options: &LiveOptions) -> Result<(), LiveError> {
    if let Some(path) = &options.snapshot {
        return match std::fs::symlink_metadata(path) {
            Ok(_) => Ok(()),
            Err(error) => Err(LiveError::Source(format!(
                "--snapshot {}: {}",
                path.display(),
                redaction::error_text(&error)
            ))),
        };
    }
    ClusterSource::detect(options.kubeconfig.clone(), options.context.clone())
        .check()
        .map_err(|e| LiveError::Source(error_text(&e)))
}

/// Checks every output path before anything is read or sent (see the module documentation):
/// a run that could not write its results must not post first. Creates `out` (and `out/slack`)
/// and makes sure a file can be created in each.
pub fn check_outputs(options: &LiveOptions, out: Option<&Path>) -> Result<(), LiveError> {
    if let Some(file) = &options.save_snapshot {
        let name = file.to_string_lossy().to_ascii_lowercase();
        if !(name.ends_with(".tar.gz") || name.ends_with(".tgz")) {
            return Err(LiveError::SnapshotName(file.display().to_string()));
        }
        let flag = "--save-snapshot";
        not_a_symlink(flag, file)?;
        if file.is_dir() {
            return Err(output_path(flag, file, "is a directory"));
        }
        writable_dir(flag, parent_of(file), false)?;
    }
    if let Some(work) = &options.work {
        not_a_symlink("--work", work)?;
        not_a_symlink("--work", &work.join("in"))?;
        if work.exists() && !work.is_dir() {
            return Err(output_path("--work", work, "is not a directory"));
        }
    }
    if let Some(out) = out {
        writable_dir("--out", out, true)?;
        writable_dir("--out", &out.join("slack"), true)?;
    }
    Ok(())
}

fn output_path(flag: &'static str, path: &Path, what: impl Into<String>) -> LiveError {
    LiveError::OutputPath {
        flag,
        path: path.to_path_buf(),
        what: what.into(),
    }
}

fn parent_of(file: &Path) -> &Path {
    match file.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    }
}

fn not_a_symlink(flag: &'static str, path: &Path) -> Result<(), LiveError> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => Err(output_path(
            flag,
            path,
            "is a symlink; refusing to follow it",
        )),
        _ => Ok(()),
    }
}

/// `dir` is a directory (created when `create`) in which a file can be created.
fn writable_dir(flag: &'static str, dir: &Path, create: bool) -> Result<(), LiveError> {
    not_a_symlink(flag, dir)?;
    if dir.exists() && !dir.is_dir() {
        return Err(output_path(flag, dir, "is a file, not a directory"));
    }
    if create {
        std::fs::create_dir_all(dir)
            .map_err(|e| output_path(flag, dir, format!("cannot be created: {e}")))?;
    } else if !dir.is_dir() {
        return Err(output_path(flag, dir, "no such directory"));
    }
    tempfile::tempfile_in(dir)
        .map_err(|e| output_path(flag, dir, format!("is not writable: {e}")))?;
    Ok(())
}

/// Runs the report against the real world: reads, evaluates, posts, pushes.
/// Progress lines go to `log` as they happen (the run's own log is in the output); the phase and
/// the workloads listed and reviewed so far go to `progress`.
///
/// The output paths of `options` are checked first ([`check_outputs`]); the cluster's
/// credentials join the secrets the run redacts.
pub fn run_live(
    config: &Config,
    settings: &Settings,
    options: &LiveOptions,
    log: &(dyn Fn(&str) + Sync),
    progress: &dyn Progress,
) -> Result<RunOutput, LiveError> {
    check_outputs(options, None)?;
    let source = options
        .snapshot
        .is_none()
        .then(|| ClusterSource::detect(options.kubeconfig.clone(), options.context.clone()));
    let mut settings = settings.clone();
    if let Some(source) = &source {
        settings.cluster_credentials.merge(&source.redactor());
    }
    let settings = &settings;
    let engine = options.engine.unwrap_or(config.engine);
    let work = match &options.work {
        Some(dir) => WorkDir::Given(dir.clone()),
        None if engine == EngineKind::Embedded => WorkDir::InMemory,
        None => WorkDir::Temp(tempfile::tempdir().map_err(LiveError::Setup)?),
    };
    let engine_config = engine_config(config, engine, options.gator.clone(), &work);
    engine_config.validate().map_err(LiveError::Engine)?;
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
        trust: options.sink_trust.clone(),
        ..HttpOptions::default()
    };
    let mut delivery = LiveDelivery {
        runtime: &runtime,
        poster: SlackPoster::new(&http).map_err(LiveError::Slack)?,
        loki: settings.loki_url.clone().map(|url| LokiEndpoint {
            url,
            tenant: config.loki.tenant.clone(),
            auth: settings.loki_auth.clone(),
        }),
        http,
        pusher: None,
        push_timeout: config.timeouts.push,
        push_deadline: None,
        progress,
    };
    let reader = Reader {
        config,
        options,
        source: source.as_ref(),
        runtime: &runtime,
        work: &work,
        engine_config: &engine_config,
        log,
        progress,
    };
    let mut collect = || reader.collect();
    let ctx = RunContext {
        config,
        settings,
        engine,
    };
    Ok(execute(&ctx, &mut collect, &mut delivery, &Timestamp::now))
}

/// The engine settings of this run: the config's `gator` section with `--gator PATH` over its
/// `path`, the work dir, `timeouts.engine` as gator's limit, and `k8sNativeValidation`.
fn engine_config(
    config: &Config,
    engine: EngineKind,
    gator_path: Option<PathBuf>,
    work: &WorkDir,
) -> EngineConfig {
    let mut gator = config.gator.clone().unwrap_or_default();
    if gator_path.is_some() {
        gator.path = gator_path;
    }
    let mut engine_config = EngineConfig::new(
        engine,
        gator,
        work.path().map(Path::to_path_buf).unwrap_or_default(),
    );
    engine_config.timeout = config.timeouts.engine;
    engine_config.engine_options.k8s_native_validation = config.k8s_native_validation;
    engine_config
}

/// Reads the cluster (or snapshot), projects it and evaluates it; every error is a reason text.
struct Reader<'a> {
    config: &'a Config,
    options: &'a LiveOptions,
    /// The cluster, when no snapshot is read.
    source: Option<&'a ClusterSource>,
    runtime: &'a tokio::runtime::Runtime,
    work: &'a WorkDir,
    engine_config: &'a EngineConfig,
    log: &'a (dyn Fn(&str) + Sync),
    progress: &'a dyn Progress,
}

impl Reader<'_> {
    fn collect(&self) -> Result<Collected, String> {
        self.progress.phase(Phase::Reading);
        let (policy, mut workloads) = self.open()?;
        (self.log)(&format!(
            "read {} templates, {} constraints, {} expansion templates, {} namespaces; reviewing the workloads a page at a time",
            policy.templates.len(),
            policy.constraints.len(),
            policy.expansion_templates.len(),
            policy.namespaces.len(),
        ));
        let constraints = audit_facts(&policy)?;
        let coverage = coverage(
            &self.config.constraint_kinds,
            &self.config.workload_kinds,
            &policy,
        )
        .map_err(|e| format!("invalid ExpansionTemplates: {}", error_text(&e)))?;
        let template_kinds: BTreeSet<String> = policy
            .templates
            .iter()
            .map(|t| t.constraint_kind.clone())
            .collect();
        let mut snapshot = match &self.options.save_snapshot {
            Some(file) => Some(
                cluster_projection::SnapshotWriter::create(file)
                    .map_err(|e| format!("failed to save the snapshot: {}", error_text(&e)))?,
            ),
            None => None,
        };
        self.progress.phase(Phase::Reviewing);
        let evaluated = self.evaluate(&policy, &mut workloads, snapshot.as_mut());
        if let (Some(mut writer), Some(file)) = (snapshot, &self.options.save_snapshot) {
            // What was read is saved even when the evaluation failed: the snapshot is how the
            // failure is replayed. Workloads the engine did not ask for are read for it.
            while workloads
                .next_page(self.runtime, Some(&mut writer))?
                .is_some()
            {}
            writer
                .finish(&policy)
                .map_err(|e| format!("failed to save the snapshot: {}", error_text(&e)))?;
            (self.log)(&format!("saved the snapshot to {}", file.display()));
        }
        let results = evaluated?;
        (self.log)(&format!(
            "read {} workloads; evaluated: {} results",
            workloads.given,
            results.len()
        ));
        Ok(Collected {
            results,
            constraints,
            template_kinds,
            expansion_rules: coverage.expansion_rules(),
            warnings: coverage.warnings(),
        })
    }

    /// The policy side (templates, Constraints, Namespaces) read whole, and the workloads to be
    /// read a page at a time.
    fn open(&self) -> Result<(ClusterState, Workloads), String> {
        let spec = read_spec(self.config);
        match (&self.options.snapshot, self.source) {
            (Some(path), _) => {
                let (state, pages) = cluster_projection::open_snapshot(path, &spec)
                    .map_err(|e| format!("failed to read the snapshot: {}", error_text(&e)))?;
                Ok((state, Workloads::snapshot(pages)))
            }
            (None, None) => Err("no cluster source and no snapshot".to_string()),
            (None, Some(source)) => {
                let (described, server) = (source.describe(), source.server());
                let describe = move |e: &cluster_projection::ReadError| {
                    cluster_failure(&described, server.as_deref(), e)
                };
                let (state, pages) = self
                    .runtime
                    .block_on(cluster_projection::open_cluster(source, &spec))
                    .map_err(|e| describe(&e))?;
                Ok((state, Workloads::live(self.runtime, pages, describe)))
            }
        }
    }

    /// Reviews the workloads against the projected policy side with the configured engine, a
    /// page at a time as they are read (each workload saved to `snapshot` on the way); each
    /// result is kept only as the finding the counts need, sorted.
    fn evaluate(
        &self,
        policy: &ClusterState,
        workloads: &mut Workloads,
        mut snapshot: Option<&mut cluster_projection::SnapshotWriter>,
    ) -> Result<Vec<Finding>, String> {
        let engine: Box<dyn PolicyEngine> = self
            .runtime
            .block_on(gator_runner::build_engine(self.engine_config))
            .map_err(|e| error_text(&e))?;
        // Mutators are read only to warn about them: Gatekeeper's expansion would apply them, we
        // do not, and no engine is given them.
        let policy_objects: Vec<Value> = policy
            .templates
            .iter()
            .map(|t| &t.raw)
            .chain(policy.constraints.iter().map(|c| &c.raw))
            .chain(policy.expansion_templates.iter().map(|e| &e.raw))
            .chain(policy.namespaces.iter().map(|n| &n.raw))
            .map(|raw| cluster_projection::project_owned(raw.to_value()))
            .collect();
        let inspect = self.inspected_projection();
        let mut projected = Vec::new();
        let runtime = self.runtime;
        let mut failure: Option<String> = None;
        let (progress, mut reviewed) = (self.progress, 0);
        let objects = std::iter::from_fn(|| {
            if failure.is_some() {
                return None;
            }
            match workloads.next_page(runtime, snapshot.as_deref_mut()) {
                Ok(page) => {
                    progress.listed(workloads.given);
                    page
                }
                Err(reason) => {
                    failure = Some(reason);
                    None
                }
            }
        })
        .flatten()
        .map(|workload| cluster_projection::project_owned(workload.raw.to_value()))
        .inspect(|object| {
            reviewed += 1;
            progress.reviewed(reviewed);
            if inspect.is_some() {
                projected.push(object.clone());
            }
        });
        let mut results = Vec::new();
        let reviewed = engine.review(
            ReviewInput::new(policy_objects.clone(), objects),
            &mut |result| results.push(Finding::from(result)),
        );
        if let Some(reason) = failure {
            return Err(reason);
        }
        let summary = reviewed
            .map_err(|e| format!("{} evaluation failed: {}", engine.name(), error_text(&e)))?;
        if let Some(work) = inspect {
            cluster_projection::write_projected(work, policy_objects.into_iter().chain(projected))
                .map_err(|e| format!("failed to write the projection: {}", error_text(&e)))?;
        }
        if let Some(comparison) = &summary.comparison {
            if comparison.agrees() {
                (self.log)("engines agree: embedded and gator gave the same results");
            } else {
                (self.log)(&format!(
                    "warning: engines disagree (embedded results are used): {comparison}"
                ));
            }
        }
        results.sort_unstable();
        Ok(results)
    }

    /// Where the embedded engine's projection is written for inspection, when it is asked for
    /// (gator writes its own input).
    fn inspected_projection(&self) -> Option<&Path> {
        match (self.engine_config.engine, self.work.path()) {
            (EngineKind::Embedded, Some(work)) if self.options.write_projection => Some(work),
            _ => None,
        }
    }
}

/// What a run reads: the configured workload and Constraint kinds, within `timeouts.api`.
fn read_spec(config: &Config) -> ReadSpec {
    ReadSpec {
        workload_kinds: config.workload_kinds.clone(),
        constraint_kinds: config.constraint_kinds.clone(),
        request_timeout: config.timeouts.api,
        ..ReadSpec::default()
    }
}

/// Reads what `spec` selects from the snapshot of `options`, or else from the cluster it names;
/// every error is a reason text.
fn read_state(spec: &ReadSpec, options: &LiveOptions) -> Result<ClusterState, String> {
    if let Some(path) = &options.snapshot {
        let state = cluster_projection::read_snapshot(path)
            .map_err(|e| format!("failed to read the snapshot: {}", error_text(&e)))?;
        return state
            .restrict_to(spec)
            .map_err(|e| format!("snapshot {}: {}", path.display(), error_text(&e)));
    }
    let source = ClusterSource::detect(options.kubeconfig.clone(), options.context.clone());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("failed to start the async runtime: {e}"))?;
    runtime
        .block_on(cluster_projection::read_cluster(&source, spec))
        .map_err(|e| cluster_failure(&source.describe(), source.server().as_deref(), &e))
}

/// Why reading the cluster `described` failed; a refused connection names the server, as
/// kubectl does (`cannot reach https://…:6443: connection refused`).
fn cluster_failure(
    described: &str,
    server: Option<&str>,
    error: &cluster_projection::ReadError,
) -> String {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(current) = cause {
        if let Some(io) = current.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionRefused
        {
            let server = server.unwrap_or("the API server");
            return format!(
                "failed to read the cluster ({described}): cannot reach {server}: connection refused"
            );
        }
        cause = current.source();
    }
    format!(
        "failed to read the cluster ({described}): {}",
        error_text(error)
    )
}

/// What `workload-report explain` shows: which workload kinds each configured rule can see, and
/// how, in the snapshot of `options` or the cluster (read as a run reads it).
pub fn explain(config: &Config, options: &LiveOptions) -> Result<Coverage, String> {
    let state = read_state(&read_spec(config), options)?;
    coverage(&config.constraint_kinds, &config.workload_kinds, &state)
        .map_err(|e| format!("invalid ExpansionTemplates: {}", error_text(&e)))
}

/// The namespaces of the snapshot of `options` or of the cluster (read as a run reads them, no
/// workload and no Constraint), sorted: what `workload-report routes` routes.
pub fn namespaces(config: &Config, options: &LiveOptions) -> Result<Vec<String>, String> {
    let spec = ReadSpec {
        workload_kinds: Vec::new(),
        constraint_kinds: Vec::new(),
        request_timeout: config.timeouts.api,
        ..ReadSpec::default()
    };
    let state = read_state(&spec, options)?;
    let mut names: Vec<String> = state.namespaces.into_iter().map(|n| n.name).collect();
    names.sort();
    Ok(names)
}

fn audit_facts(state: &ClusterState) -> Result<Vec<ConstraintAudit>, String> {
    state
        .constraints
        .iter()
        .map(|c| {
            Ok(ConstraintAudit {
                kind: c.kind.clone(),
                name: c.name.clone(),
                created_at: c.created_at().map_err(|e| error_text(&e))?,
                audit_timestamp: c.audit_timestamp().map_err(|e| error_text(&e))?,
                total_violations: c.total_violations().map_err(|e| error_text(&e))?,
            })
        })
        .collect()
}

/// Slack and Loki over report-sinks' clients, on the run's runtime: posts, the push, and the
/// previous run read back.
struct LiveDelivery<'a> {
    runtime: &'a tokio::runtime::Runtime,
    poster: SlackPoster,
    loki: Option<LokiEndpoint>,
    http: HttpOptions,
    /// The client of the run's pushes, made at the first.
    pusher: Option<LokiClient>,
    /// `timeouts.push`: how long all the run's pushes may take together.
    push_timeout: std::time::Duration,
    /// When the pushes must be done by, from the first push on.
    push_deadline: Option<tokio::time::Instant>,
    progress: &'a dyn Progress,
}

impl Delivery for LiveDelivery<'_> {
    fn post(
        &mut self,
        _team: &str,
        webhook: &WebhookUrl,
        message: &SlackMessage,
    ) -> Result<(), SendError> {
        self.progress.phase(Phase::Posting);
        self.runtime.block_on(self.poster.post(webhook, message))
    }

    /// Pushes within `timeouts.push` for all the run's pushes together, waiting while Loki
    /// refuses them for its rate limit.
    fn push(&mut self, push: &LokiPush) -> Result<(), SendError> {
        let Some(config) = &self.loki else {
            return Ok(());
        };
        self.progress.phase(Phase::Pushing);
        let client = match &self.pusher {
            Some(client) => client,
            None => self.pusher.insert(LokiClient::new(config, &self.http)?),
        };
        let timeout = self.push_timeout;
        let deadline = *self.push_deadline.get_or_insert_with(|| {
            let now = tokio::time::Instant::now();
            now.checked_add(timeout).unwrap_or(now)
        });
        self.runtime.block_on(client.push_until(push, deadline))
    }

    /// Reads with the query's timeout per request (the read as a whole has it too).
    fn previous_run(&mut self, query: &HistoryQuery) -> Result<Option<PreviousRun>, HistoryError> {
        let Some(config) = &self.loki else {
            return Ok(None);
        };
        let http = HttpOptions {
            timeout: query.timeout,
            ..self.http.clone()
        };
        let client = LokiClient::new(config, &http).map_err(QueryError::from)?;
        self.runtime.block_on(client.previous_run(query))
    }
}

/// Writes `run.json`, `slack/<team>.json` (and `slack/<default team>.problems.json`) and
/// `loki.json` into `dir`, exactly as sent or as they would be sent. Each file is written to a
/// temporary name and renamed into place: a symlink at its name is replaced, never followed.
pub fn write_out(dir: &Path, output: &RunOutput, default_team: &str) -> Result<(), LiveError> {
    let slack = dir.join("slack");
    for path in [dir, slack.as_path()] {
        not_a_symlink("--out", path)?;
        std::fs::create_dir_all(path).map_err(|source| LiveError::Out {
            path: path.to_path_buf(),
            source,
        })?;
    }
    let run = serde_json::to_string_pretty(&output.report.run).expect("the run summary serializes");
    replace_file(&dir.join("run.json"), run)?;
    for digest in &output.digests {
        replace_file(
            &slack.join(format!("{}.json", digest.team)),
            digest.message.to_json(),
        )?;
    }
    if let Some(problems) = &output.problems {
        replace_file(
            &slack.join(format!("{default_team}.problems.json")),
            problems.to_json(),
        )?;
    }
    replace_file(&dir.join("loki.json"), output.loki_push().to_json())?;
    Ok(())
}

/// Writes `text` and a newline to a temporary file next to `path`, then renames it to `path`.
fn replace_file(path: &Path, text: String) -> Result<(), LiveError> {
    use std::io::Write;
    let fail = |source| LiveError::Out {
        path: path.to_path_buf(),
        source,
    };
    let mut temp = tempfile::NamedTempFile::new_in(parent_of(path)).map_err(fail)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let readable = std::fs::Permissions::from_mode(0o644);
        temp.as_file().set_permissions(readable).map_err(fail)?;
    }
    temp.write_all(text.as_bytes()).map_err(fail)?;
    temp.write_all(b"\n").map_err(fail)?;
    temp.persist(path).map_err(|e| fail(e.error))?;
    Ok(())
}
