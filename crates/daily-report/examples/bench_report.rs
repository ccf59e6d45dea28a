//! `cargo xtask bench report [--workloads N] [--snapshot] [--engine E --gator PATH] [--out DIR]`:
//! one whole `workload-report run` (the release binary, as a child process) over a synthetic
//! cluster of N workloads (default 25,000: 80% Deployments, 20% StatefulSets) in 500 namespaces,
//! 10 ConstraintTemplates and 20 Constraints, against loopback fakes of the Kubernetes API, Slack
//! and Loki (in this process), or with `--snapshot` from a saved snapshot of that cluster.
//!
//! The figures are the child's: its wall time and its peak RSS (what the CronJob's memory limit
//! must hold). The child is started through this program's `__measure` mode, a fresh small
//! process: Linux charges a child with the memory high-water mark of the process it was spawned
//! from, and this one holds the whole generated cluster (before this, the figures printed were
//! mostly the benchmark's own size). Targets: 25,000 workloads in 5 s, 100,000 in 30 s and 300 MiB (in between and
//! beyond, scaled linearly). The program prints its figures and exits non-zero when the run is
//! not ok or misses a target.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use cluster_projection::{ClusterState, save_snapshot};
use serde_json::{Value, json};
use test_support::kube_api::{FakeApiServer, Scenario};
use test_support::loki::LokiServer;
use test_support::slack::SlackServer;

const NAMESPACES: usize = 500;
const DEFAULT_WORKLOADS: usize = 25_000;
const TEAMS: usize = 10;

/// The fixture templates used (kind, template file); the first three are also used a second
/// time under another kind, to make 10 templates.
const TEMPLATES: [&str; 7] = [
    "requiredlabels",
    "containerlimits",
    "replicalimits",
    "requiredannotations",
    "allowedrepos",
    "privileged",
    "hostnamespaces",
];

fn parameters(template: &str) -> Value {
    match template {
        "requiredlabels" => {
            json!({"labels": [{"key": "owner", "allowedRegex": "^[a-z]+\\.team$"}, {"key": "app"}]})
        }
        "containerlimits" => json!({"cpu": "2", "memory": "1Gi"}),
        "replicalimits" => json!({"ranges": [{"min": 2, "max": 10}]}),
        "requiredannotations" => {
            json!({"annotations": [{"key": "example.com/contact", "allowedRegex": "^[a-z.]+@example\\.com$"}]})
        }
        "allowedrepos" => json!({"repos": ["registry.example.com/"]}),
        "privileged" => json!({"exemptImages": []}),
        _ => json!({"allow": []}),
    }
}

/// Reads a fixture template as JSON, optionally renamed to `<kind><suffix>`.
fn template(name: &str, suffix: &str) -> (String, Value) {
    let path = format!("fixtures/gatekeeper/{name}/template.yaml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {path}: {e}"));
    let value: Value =
        serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("parsing {path}: {e}"));
    let kind = value["spec"]["crd"]["spec"]["names"]["kind"]
        .as_str()
        .expect("kind")
        .to_string();
    if suffix.is_empty() {
        return (kind, value);
    }
    let lower = kind.to_ascii_lowercase();
    let text = serde_json::to_string(&value)
        .expect("json")
        .replace(&kind, &format!("{kind}{suffix}"))
        .replace(&lower, &format!("{lower}{}", suffix.to_ascii_lowercase()));
    (
        format!("{kind}{suffix}"),
        serde_json::from_str(&text).expect("json"),
    )
}

fn workload(kind: &str, namespace: &str, i: usize) -> Value {
    let mut labels = serde_json::Map::new();
    labels.insert("app".into(), json!(format!("app-{i}")));
    if !i.is_multiple_of(3) {
        labels.insert(
            "owner".into(),
            json!(if i.is_multiple_of(7) {
                "Team-X"
            } else {
                "payments.team"
            }),
        );
    }
    let limits = if i.is_multiple_of(5) {
        json!({"cpu": "500m"})
    } else {
        json!({"cpu": "500m", "memory": "512Mi"})
    };
    let image = if i.is_multiple_of(11) {
        format!("docker.io/library/app:{i}")
    } else {
        format!("registry.example.com/app:{i}")
    };
    json!({
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": {
            "name": format!("{}-{i}", kind.to_ascii_lowercase()),
            "namespace": namespace,
            "labels": labels,
            "annotations": if i.is_multiple_of(4) { json!({}) } else { json!({"example.com/contact": "team@example.com"}) },
            "uid": format!("00000000-0000-0000-0000-{i:012}"),
            "resourceVersion": "1000",
            "creationTimestamp": "2026-10-01T09:00:00Z",
        },
        "spec": {
            "replicas": if i.is_multiple_of(13) { 1 } else { 3 },
            "selector": {"matchLabels": {"app": format!("app-{i}")}},
            "template": {
                "metadata": {"labels": {"app": format!("app-{i}")}},
                "spec": {
                    "containers": [{
                        "name": "main",
                        "image": image,
                        "resources": {"limits": limits, "requests": {"cpu": "100m", "memory": "128Mi"}},
                        "securityContext": {"privileged": i.is_multiple_of(17)},
                    }]
                }
            }
        },
        "status": {"replicas": 3, "readyReplicas": 3}
    })
}

fn namespace_name(n: usize) -> String {
    format!("team{}-ns{n:03}", n % TEAMS)
}

/// The synthetic cluster: every object, and the Constraint kinds.
struct Cluster {
    namespaces: Vec<Value>,
    deployments: Vec<Value>,
    statefulsets: Vec<Value>,
    /// (template, its Constraints).
    policies: Vec<(Value, Vec<Value>)>,
    kinds: Vec<String>,
}

fn cluster(workloads: usize) -> Cluster {
    let deployments = workloads * 4 / 5;
    let statefulsets = workloads - deployments;
    let namespaces = (0..NAMESPACES)
        .map(|n| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace_name(n)}}))
        .collect();
    let deployments = (0..deployments)
        .map(|i| workload("Deployment", &namespace_name(i % NAMESPACES), i))
        .collect();
    let statefulsets = (0..statefulsets)
        .map(|i| workload("StatefulSet", &namespace_name(i % NAMESPACES), i))
        .collect();
    let mut policies = Vec::new();
    let mut kinds = Vec::new();
    let mut chosen: Vec<(&str, &str)> = TEMPLATES.iter().map(|t| (*t, "")).collect();
    chosen.extend([
        ("requiredlabels", "B"),
        ("containerlimits", "B"),
        ("replicalimits", "B"),
    ]);
    for (name, suffix) in chosen {
        let (kind, template) = template(name, suffix);
        let lower = kind.to_ascii_lowercase();
        let constraints: Vec<Value> = ["warn", "deny"]
            .iter()
            .map(|action| {
                let mut spec = json!({
                    "enforcementAction": action,
                    "match": {"kinds": [{"apiGroups": ["apps"], "kinds": ["Deployment", "StatefulSet"]}]},
                    "parameters": parameters(name),
                });
                if *action == "deny" {
                    spec["match"]["namespaces"] = json!(["team0-*", "team1-*"]);
                }
                json!({
                    "apiVersion": "constraints.gatekeeper.sh/v1beta1",
                    "kind": kind,
                    "metadata": {"name": format!("{lower}-{action}"), "creationTimestamp": "2026-10-01T09:00:00Z"},
                    "spec": spec,
                })
            })
            .collect();
        policies.push((template, constraints));
        kinds.push(kind);
    }
    Cluster {
        namespaces,
        deployments,
        statefulsets,
        policies,
        kinds,
    }
}

/// The fake API server's scenario for `cluster` (which it takes).
fn scenario(cluster: Cluster) -> Scenario {
    let mut scenario = Scenario::new();
    scenario = scenario.with_list(
        "/api/v1/namespaces",
        "NamespaceList",
        "v1",
        cluster.namespaces,
    );
    scenario = scenario.with_list(
        "/apis/apps/v1/deployments",
        "DeploymentList",
        "apps/v1",
        cluster.deployments,
    );
    scenario = scenario.with_list(
        "/apis/apps/v1/statefulsets",
        "StatefulSetList",
        "apps/v1",
        cluster.statefulsets,
    );
    for ((template, constraints), kind) in cluster.policies.into_iter().zip(&cluster.kinds) {
        let lower = kind.to_ascii_lowercase();
        scenario = scenario.with_object(
            &format!("/apis/templates.gatekeeper.sh/v1/constrainttemplates/{lower}"),
            template,
        );
        scenario = scenario.with_list(
            &format!("/apis/constraints.gatekeeper.sh/v1beta1/{lower}"),
            &format!("{kind}List"),
            "constraints.gatekeeper.sh/v1beta1",
            constraints,
        );
    }
    scenario
}

/// Saves `cluster` as a snapshot tarball `file`.
fn save(cluster: Cluster, file: &Path) {
    let mut objects = Vec::new();
    for (template, constraints) in cluster.policies {
        objects.push(template);
        objects.extend(constraints);
    }
    objects.extend(cluster.namespaces);
    objects.extend(cluster.deployments);
    objects.extend(cluster.statefulsets);
    let state = ClusterState::from_objects(objects).expect("the bench cluster is a model");
    save_snapshot(&state, file).expect("saving the bench snapshot");
}

/// The benchmark's arguments.
struct Args {
    workloads: usize,
    snapshot: bool,
    engine: Option<String>,
    gator: Option<String>,
    out: Option<PathBuf>,
}

fn args() -> Result<Args, String> {
    let mut args = Args {
        workloads: DEFAULT_WORKLOADS,
        snapshot: false,
        engine: None,
        gator: None,
        out: None,
    };
    let mut given = std::env::args().skip(1);
    while let Some(arg) = given.next() {
        let mut value = || given.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--workloads" => {
                args.workloads = value()?
                    .replace('_', "")
                    .parse()
                    .map_err(|e| format!("--workloads: {e}"))?;
            }
            "--snapshot" => args.snapshot = true,
            "--engine" => args.engine = Some(value()?),
            "--gator" => args.gator = Some(value()?),
            "--out" => args.out = Some(PathBuf::from(value()?)),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(args)
}

/// The wall target: 5 s up to 25,000 workloads, then growing linearly to 30 s at 100,000 and
/// 30 s per 100,000 beyond.
fn wall_target_secs(workloads: usize) -> f64 {
    let n = workloads as f64;
    if n <= 25_000.0 {
        5.0
    } else if n <= 100_000.0 {
        5.0 + (n - 25_000.0) * 25.0 / 75_000.0
    } else {
        n * 30.0 / 100_000.0
    }
}

/// The peak RSS target: 300 MiB up to 100,000 workloads, scaled beyond.
fn rss_target_mib(workloads: usize) -> f64 {
    (workloads as f64 * 300.0 / 100_000.0).max(300.0)
}

/// The largest peak RSS among this process's waited-for children (KiB) and their CPU time (user
/// plus system, seconds), as `"<kib> <secs>"`.
fn children_usage() -> String {
    let Ok(usage) = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_CHILDREN)
    else {
        return String::new();
    };
    let secs = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
    format!(
        "{} {:.2}",
        usage.max_rss(),
        secs(usage.user_time()) + secs(usage.system_time())
    )
}

/// The hidden first argument of `bench_report __measure FILE PROGRAM ARGS…`: run PROGRAM as this
/// process's only child and write the child's peak RSS (KiB) and CPU time (seconds) to FILE.
///
/// Why a process in between: Linux records the memory high-water mark of the process a child
/// was spawned from into the child's `ru_maxrss` when the child calls exec. Spawned straight
/// from this benchmark, which holds the whole generated cluster (about 4.5 KiB per workload), the
/// report would be charged with the benchmark's size; spawned from a freshly started small
/// process, it is charged only with its own.
const MEASURE: &str = "__measure";

/// The `__measure` mode: runs the command in `args` (FILE PROGRAM ARGS…), writes its peak RSS
/// and CPU time to FILE and exits as it exited.
fn measure_child(mut args: impl Iterator<Item = std::ffi::OsString>) -> ExitCode {
    let (Some(file), Some(program)) = (args.next(), args.next()) else {
        eprintln!("bench report: {MEASURE} needs FILE PROGRAM [ARGS…]");
        return ExitCode::from(2);
    };
    let status = match Command::new(&program).args(args).status() {
        Ok(status) => status,
        Err(error) => {
            eprintln!(
                "bench report: cannot start {}: {error}",
                program.to_string_lossy()
            );
            return ExitCode::from(2);
        }
    };
    if let Err(error) = std::fs::write(&file, children_usage()) {
        eprintln!("bench report: cannot write the peak RSS: {error}");
        return ExitCode::from(2);
    }
    match status.code() {
        Some(0) => ExitCode::SUCCESS,
        Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        None => ExitCode::FAILURE,
    }
}

/// A command that runs `binary` through this program's `__measure` mode, which writes the
/// binary's peak RSS and CPU time to `usage_file`.
fn measured_command(binary: &std::ffi::OsStr, usage_file: &Path) -> Command {
    let this = std::env::current_exe().expect("the benchmark knows its own path");
    let mut command = Command::new(this);
    command.arg(MEASURE).arg(usage_file).arg(binary);
    command
}

/// The child's peak RSS (MiB) and CPU time (seconds) from `usage_file`; NaN for what is missing.
fn child_usage(usage_file: &Path) -> (f64, f64) {
    let text = std::fs::read_to_string(usage_file).unwrap_or_default();
    let mut fields = text.split_whitespace().map(|f| f.parse::<f64>().ok());
    let kib = fields.next().flatten().unwrap_or(f64::NAN);
    let cpu = fields.next().flatten().unwrap_or(f64::NAN);
    (kib / 1024.0, cpu)
}

fn main() -> ExitCode {
    let mut raw = std::env::args_os().skip(1);
    if raw.next().is_some_and(|first| first == MEASURE) {
        return measure_child(raw);
    }
    let args = match args() {
        Ok(args) => args,
        Err(error) => {
            eprintln!("bench report: {error}");
            return ExitCode::from(2);
        }
    };
    let Some(binary) = std::env::var_os("WORKLOAD_REPORT_BIN") else {
        eprintln!(
            "bench report: WORKLOAD_REPORT_BIN names no binary (run it through cargo xtask bench report)"
        );
        return ExitCode::from(2);
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let generated = Instant::now();
    let cluster = cluster(args.workloads);
    let kinds = cluster.kinds.clone();
    let slack = SlackServer::start();
    let loki = LokiServer::start();
    let usage_file = dir.path().join("child-usage");
    let mut command = measured_command(&binary, &usage_file);
    command.arg("run");
    let _api = if args.snapshot {
        let file = dir.path().join("bench-snapshot.tar.gz");
        save(cluster, &file);
        command.arg("--snapshot").arg(file);
        None
    } else {
        let api = FakeApiServer::start(scenario(cluster));
        let kubeconfig = api.write_kubeconfig(dir.path());
        command
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["--context", "fake"]);
        Some(api)
    };
    eprintln!(
        "bench report: cluster generated in {:.2} s",
        generated.elapsed().as_secs_f64()
    );

    let mut config = String::from("cluster: bench\ndefaultTeam: infra\nteams:\n");
    for t in 0..TEAMS {
        config.push_str(&format!(
            "  - {{name: team{t}, namespaces: ['team{t}-*']}}\n"
        ));
    }
    config.push_str(&format!("constraintKinds: [{}]\n", kinds.join(", ")));
    config.push_str(&format!("loki: {{url: '{}'}}\n", loki.url()));
    let config_file = dir.path().join("config.yaml");
    std::fs::write(&config_file, config).expect("writing the bench config");
    for t in 0..TEAMS {
        command.env(
            format!("TEAM{t}_WEBHOOK"),
            slack.webhook_url(&format!("team{t}")),
        );
    }
    command.env("INFRA_WEBHOOK", slack.webhook_url("infra"));
    command.arg("--config").arg(&config_file);
    if let Some(engine) = &args.engine {
        command.args(["--engine", engine]);
        command.arg("--work").arg(dir.path().join("work"));
    }
    if let Some(gator) = &args.gator {
        command.args(["--gator", gator]);
    }
    // The run line is the last line of `-o json`; `--out` (only when asked for: writing the
    // files costs the run memory a CronJob does not spend) keeps every payload.
    command.args(["-o", "json"]);
    if let Some(out) = &args.out {
        command.arg("--out").arg(out);
    }
    command.stdout(std::process::Stdio::piped());

    let started = Instant::now();
    let output = command.output().expect("starting workload-report");
    let wall = started.elapsed().as_secs_f64();
    let (rss, cpu) = child_usage(&usage_file);
    let status = output.status;
    let run: Value = String::from_utf8_lossy(&output.stdout)
        .lines()
        .last()
        .and_then(|line| serde_json::from_str(line).ok())
        .unwrap_or(Value::Null);
    let (wall_target, rss_target) = (
        wall_target_secs(args.workloads),
        rss_target_mib(args.workloads),
    );
    println!(
        "bench report: {} workloads in {NAMESPACES} namespaces, {} templates / {} constraints, from {}: status {}, {} digests posted, {} Loki pushes",
        args.workloads,
        kinds.len(),
        kinds.len() * 2,
        if args.snapshot {
            "a snapshot"
        } else {
            "the API"
        },
        run["status"].as_str().unwrap_or("unknown"),
        slack.teams_posted().len(),
        loki.pushes().len(),
    );
    println!(
        "bench report: workload-report run {wall:.2} s wall (target <= {wall_target:.0} s), {cpu:.1} s CPU, peak RSS {rss:.1} MiB (target <= {rss_target:.0} MiB)"
    );
    let mut ok = true;
    if !status.success() || run["status"] != "ok" {
        eprintln!(
            "bench report: the run is not ok ({status}): {}",
            run["reason"].as_str().unwrap_or("no run line")
        );
        ok = false;
    }
    if loki.pushes().is_empty() || slack.teams_posted().is_empty() {
        eprintln!("bench report: expected Loki pushes and Slack posts");
        ok = false;
    }
    if wall > wall_target {
        eprintln!("bench report: MISSED the wall target");
        ok = false;
    }
    if rss.is_nan() || rss > rss_target {
        eprintln!("bench report: MISSED the RSS target");
        ok = false;
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
