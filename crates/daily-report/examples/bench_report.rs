//! `cargo xtask bench report`: one whole report run over a synthetic cluster of 20,000
//! Deployments and 5,000 StatefulSets in 500 namespaces, 10 ConstraintTemplates and 20
//! Constraints, with the embedded engine, against loopback fakes of the Kubernetes API, Slack
//! and Loki (all in this process).
//!
//! Targets: the whole run (read, evaluate, count, post, push) under 15 s wall and under 500 MiB
//! peak RSS. The program prints its figures and exits non-zero when it misses a target or the
//! run is not ok.

use std::collections::BTreeMap;

/// The allocator of the `workload-report` binary, so the benchmark measures what ships.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use std::process::ExitCode;
use std::time::Instant;

use daily_report::live::{LiveOptions, run_live};
use daily_report::{Config, Settings};
use report_sinks::RunStatus;
use serde_json::{Value, json};
use test_support::kube_api::{FakeApiServer, Scenario};
use test_support::loki::LokiServer;
use test_support::slack::SlackServer;

const NAMESPACES: usize = 500;
const DEPLOYMENTS: usize = 20_000;
const STATEFULSETS: usize = 5_000;
const TEAMS: usize = 10;
const WALL_TARGET_SECS: f64 = 15.0;
const RSS_TARGET_MIB: f64 = 500.0;

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

fn scenario() -> (Scenario, Vec<String>) {
    let mut scenario = Scenario::new();
    let namespaces: Vec<Value> = (0..NAMESPACES)
        .map(|n| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace_name(n)}}))
        .collect();
    scenario = scenario.with_list("/api/v1/namespaces", "NamespaceList", "v1", namespaces);
    let deployments =
        (0..DEPLOYMENTS).map(|i| workload("Deployment", &namespace_name(i % NAMESPACES), i));
    scenario = scenario.with_list(
        "/apis/apps/v1/deployments",
        "DeploymentList",
        "apps/v1",
        deployments,
    );
    let statefulsets =
        (0..STATEFULSETS).map(|i| workload("StatefulSet", &namespace_name(i % NAMESPACES), i));
    scenario = scenario.with_list(
        "/apis/apps/v1/statefulsets",
        "StatefulSetList",
        "apps/v1",
        statefulsets,
    );

    let mut kinds = Vec::new();
    let mut chosen: Vec<(&str, &str)> = TEMPLATES.iter().map(|t| (*t, "")).collect();
    chosen.extend([
        ("requiredlabels", "B"),
        ("containerlimits", "B"),
        ("replicalimits", "B"),
    ]);
    for (name, suffix) in chosen {
        let (kind, value) = template(name, suffix);
        let lower = kind.to_ascii_lowercase();
        scenario = scenario.with_object(
            &format!("/apis/templates.gatekeeper.sh/v1/constrainttemplates/{lower}"),
            value,
        );
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
        scenario = scenario.with_list(
            &format!("/apis/constraints.gatekeeper.sh/v1beta1/{lower}"),
            &format!("{kind}List"),
            "constraints.gatekeeper.sh/v1beta1",
            constraints,
        );
        kinds.push(kind);
    }
    (scenario, kinds)
}

fn peak_rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kib| kib / 1024.0)
}

fn main() -> ExitCode {
    let (scenario, kinds) = scenario();
    let api = FakeApiServer::start(scenario);
    let slack = SlackServer::start();
    let loki = LokiServer::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let kubeconfig = api.write_kubeconfig(dir.path());

    let mut config = String::from("cluster: bench\ndefaultTeam: infra\nteams:\n");
    for t in 0..TEAMS {
        config.push_str(&format!(
            "  - {{name: team{t}, namespaces: ['team{t}-*']}}\n"
        ));
    }
    config.push_str(&format!("constraintKinds: [{}]\n", kinds.join(", ")));
    config.push_str(&format!("loki: {{url: '{}'}}\n", loki.url()));
    let config = Config::from_yaml(&config).expect("bench config");
    let mut env: BTreeMap<String, String> = (0..TEAMS)
        .map(|t| {
            (
                format!("TEAM{t}_WEBHOOK"),
                slack.webhook_url(&format!("team{t}")),
            )
        })
        .collect();
    env.insert("INFRA_WEBHOOK".into(), slack.webhook_url("infra"));
    let settings = Settings::from_env(&config, false, &|n| env.get(n).cloned()).expect("settings");
    let options = LiveOptions {
        kubeconfig: Some(kubeconfig),
        context: Some("fake".into()),
        ..LiveOptions::default()
    };

    let started = Instant::now();
    let log = |line: &str| {
        eprintln!(
            "[{:7.2} s, RSS {:6.1} MiB] {line}",
            started.elapsed().as_secs_f64(),
            peak_rss_mib()
        )
    };
    let output = match run_live(&config, &settings, &options, &log) {
        Ok(output) => output,
        Err(error) => {
            eprintln!("bench report: setup failed: {error}");
            return ExitCode::FAILURE;
        }
    };
    let wall = started.elapsed().as_secs_f64();
    let rss = peak_rss_mib();
    let total: usize = output.report.teams.values().map(|t| t.total()).sum();
    println!(
        "bench report: {} workloads in {NAMESPACES} namespaces, {} templates / {} constraints: status {}, {total} (workload, rule) violations, {} digests posted, {} Loki lines pushed",
        DEPLOYMENTS + STATEFULSETS,
        kinds.len(),
        kinds.len() * 2,
        output.report.run.status.as_str(),
        slack.teams_posted().len(),
        output.loki.line_count(),
    );
    println!(
        "bench report: whole run {wall:.2} s wall (target < {WALL_TARGET_SECS} s), peak RSS {rss:.1} MiB (target < {RSS_TARGET_MIB} MiB)"
    );
    let mut ok = true;
    if output.report.run.status != RunStatus::Ok {
        eprintln!(
            "bench report: run is {}: {}",
            output.report.run.status.as_str(),
            output.report.run.reason
        );
        ok = false;
    }
    if loki.pushes().len() != 1 || slack.teams_posted().is_empty() || total == 0 {
        eprintln!("bench report: expected one Loki push, Slack posts and violations");
        ok = false;
    }
    if wall >= WALL_TARGET_SECS {
        eprintln!("bench report: MISSED the wall target");
        ok = false;
    }
    if rss >= RSS_TARGET_MIB {
        eprintln!("bench report: MISSED the RSS target");
        ok = false;
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
