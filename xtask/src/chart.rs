//! `cargo xtask chart` (also part of `cargo xtask test`): renders `charts/workload-report` with real
//! Helm and checks what it renders.
//!
//! Helm is a `helm` binary on PATH when there is one (`helm template`), otherwise the Helm v4
//! engine of the PyPI package `helm-python-sdk` (pinned to [`SDK_VERSION`]), installed once into the
//! project-local virtual environment `.venv-helm/` and driven by
//! `charts/workload-report/tests/render.py`. `XTASK_HELM=sdk` or `XTASK_HELM=binary` forces one.
//!
//! The cases are `fixtures/chart/values-full.yaml` (every value non-default) and variations of it,
//! the chart defaults, a minimal enabled release, and one render-failure case per validation
//! (`fixtures/chart/render-failures/*.yaml`: `expect` texts and `values` merged over the full
//! values). Then the rendered report config goes through `workload-report routes --config` (the same
//! loading and validation as `run --config`), and the CronJob's Pod through
//! `workload-report eval` with the project's example workload constraints (`fixtures/gatekeeper/`).
//! Last, the `live` case (the demo report) is installed into a real kube-apiserver and read back
//! from a real Loki (`chart_live`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::{chart_live, util};

/// The pinned version of the `helm-python-sdk` package (Helm v4 engine) used without a `helm` binary.
pub(crate) const SDK_VERSION: &str = "0.2.2";
const CHART: &str = "charts/workload-report";
const VENV: &str = ".venv-helm";
const RELEASE: &str = "wr";
const NAMESPACE: &str = "monitoring";
/// Where rendered files for the cross-checks go (under the ignored target dir).
const OUT: &str = "target/xtask-chart";
/// The Loki contract the alert rules and the dashboard must stay within.
const LOKI_CONTRACT: &str = "crates/report-sinks/LOKI_CONTRACT.md";
/// Example workload constraints (templates and constraints) the job's own Pod must pass.
const GATEKEEPER_FIXTURES: &str = "fixtures/gatekeeper";
/// Environment variables `workload-report run` reads besides `<TEAM>_WEBHOOK` (README, "Environment").
const BINARY_ENV: [&str; 6] = [
    "DRY_RUN",
    "POST_WHEN_CLEAN",
    "LOKI_URL",
    "LOKI_USERNAME",
    "LOKI_PASSWORD",
    "LOKI_TOKEN",
];

/// Where the binary reads its environment (besides `<TEAM>_WEBHOOK`).
const ENV_SOURCE: &str = "crates/daily-report/src/config.rs";

/// The env var names `ENV_SOURCE` reads with `lookup("NAME")` or `non_empty("NAME")`, so a new
/// variable in the binary fails this test until the chart renders it.
fn env_read_by_binary() -> Result<BTreeSet<String>> {
    let path = util::root().join(ENV_SOURCE);
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("failed to read {}", path.display()))?;
    let mut names = BTreeSet::new();
    for call in ["lookup(\"", "non_empty(\""] {
        for (at, _) in text.match_indices(call) {
            let rest = &text[at + call.len()..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_uppercase() || *c == '_')
                .collect();
            if !name.is_empty() && rest[name.len()..].starts_with('"') {
                names.insert(name);
            }
        }
    }
    if names.is_empty() {
        bail!(
            "found no env lookups in {ENV_SOURCE}; update env_read_by_binary in xtask/src/chart.rs"
        );
    }
    Ok(names)
}

/// Renders every case, checks every output and runs the two cross-checks with the binary.
pub(crate) fn test() -> Result<()> {
    let root = util::root();
    let helm = Helm::find(&root)?;
    eprintln!("chart: rendering {CHART} with {}", helm.describe());
    let full = read_yaml(&root.join("fixtures/chart/values-full.yaml"))?;
    let failures = failure_cases(&root)?;
    let mut cases: Vec<(String, Value)> = vec![
        ("default".into(), json!({})),
        ("full".into(), full.clone()),
        ("minimal".into(), minimal_values()),
        (
            "alerts-off".into(),
            merged(&full, &json!({"alerts": {"enabled": false}})),
        ),
        (
            "report-off".into(),
            merged(&full, &json!({"report": {"enabled": false}})),
        ),
        (
            "digest".into(),
            merged(&full, &json!({"image": {"digest": DIGEST}})),
        ),
    ];
    for case in &failures {
        cases.push((
            format!("failure/{}", case.name),
            merged(&full, &case.values),
        ));
    }
    cases.push((chart_live::CASE.into(), chart_live::values(&root)?));
    let rendered = helm.render(&root, &cases)?;
    let get = |name: &str| -> Result<&Release> {
        match rendered.get(name) {
            Some(Ok(release)) => Ok(release),
            Some(Err(error)) => bail!("case {name}: rendering failed: {error}"),
            None => bail!("case {name}: not rendered"),
        }
    };
    let contract = Contract::load(&root)?;
    let mut checks = Checks::default();
    check_default(&mut checks.scope("default"), get("default")?);
    check_full(
        &mut checks.scope("full"),
        get("full")?,
        &full,
        &contract,
        helm.renders_notes(),
    );
    check_minimal(&mut checks.scope("minimal"), get("minimal")?);
    check_alerts_off(&mut checks.scope("alerts-off"), get("alerts-off")?);
    check_report_off(&mut checks.scope("report-off"), get("report-off")?);
    check_digest(&mut checks.scope("digest"), get("digest")?);
    for case in &failures {
        let name = format!("failure/{}", case.name);
        let mut scope = checks.scope(&name);
        match rendered.get(&name) {
            Some(Ok(_)) => scope.fail("rendered, but rendering must fail".into()),
            Some(Err(error)) => {
                for text in &case.expect {
                    scope.check(error.contains(text.as_str()), || {
                        format!("error does not contain {text:?}: {error}")
                    });
                }
            }
            None => scope.fail("not rendered".into()),
        }
    }
    checks.finish(cases.len())?;
    let out = root.join(OUT);
    std::fs::create_dir_all(&out).with_context(|| format!("failed to create {}", out.display()))?;
    // Both cross-checks run, so one failing does not hide the other.
    let config = check_config_accepted(&root, &out, get("full")?, get("minimal")?);
    let pod = check_pod_passes_constraints(&root, &out, get("full")?);
    match (config, pod) {
        (Ok(()), Ok(())) => {}
        (Err(error), Ok(())) | (Ok(()), Err(error)) => return Err(error),
        (Err(config), Err(pod)) => bail!("{config:#}\n\n{pod:#}"),
    }
    chart_live::check(&root, get(chart_live::CASE)?)
}

const DIGEST: &str = "sha256:0c4f3b1a9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b";

/// The fewest values that turn the report on; everything else keeps its default.
fn minimal_values() -> Value {
    json!({
        "image": {"repository": "registry.example/workload-report"},
        "report": {
            "enabled": true,
            "webhooksSecret": "workload-report-webhooks",
            "config": {
                "cluster": "dev",
                "defaultTeam": "infra",
                "teams": [{"name": "data", "namespaces": ["data-*"]}],
                "constraintKinds": ["K8sRequiredLabels"]
            }
        },
        "alerts": {"lokiDatasourceUid": "loki", "prometheusDatasourceUid": "prometheus"}
    })
}

// ---------------------------------------------------------------------------------------------
// Checks per case
// ---------------------------------------------------------------------------------------------

fn check_default(c: &mut Scope<'_>, r: &Release) {
    let kinds: Vec<String> = r.objects.iter().map(kind_name).collect();
    c.check(
        kinds == ["ConfigMap/wr-workload-report-alert-rules"],
        || format!("the default render must hold only the alert-rule ConfigMap, got {kinds:?}"),
    );
    check_delete_rules_only(c, r, 1);
}

fn check_full(c: &mut Scope<'_>, r: &Release, values: &Value, contract: &Contract, notes: bool) {
    let ns = "gatekeeper-report";
    let name = "nightly-report";
    // The ConfigMap holds exactly the configured report config: every value reaches it.
    let config = rendered_config(c, r, "nightly-report-config");
    c.eq("config.yaml", &config, &values["report"]["config"]);
    c.eq(
        "config teams in order",
        &names(&config["teams"]),
        &json!(["data-eng", "silenced", "web_team"]),
    );
    let cm = r.find("ConfigMap", "nightly-report-config");
    c.eq("config namespace", &cm["metadata"]["namespace"], &json!(ns));

    let sa = r.find("ServiceAccount", name);
    c.eq(
        "ServiceAccount namespace",
        &sa["metadata"]["namespace"],
        &json!(ns),
    );

    let cron = r.find("CronJob", name);
    c.eq(
        "CronJob namespace",
        &cron["metadata"]["namespace"],
        &json!(ns),
    );
    c.eq(
        "schedule",
        &cron["spec"]["schedule"],
        &json!("15 6 * * 1-5"),
    );
    c.eq(
        "timeZone",
        &cron["spec"]["timeZone"],
        &json!("Asia/Jerusalem"),
    );
    c.eq(
        "startingDeadlineSeconds",
        &cron["spec"]["startingDeadlineSeconds"],
        &json!(900),
    );
    c.eq(
        "successfulJobsHistoryLimit",
        &cron["spec"]["successfulJobsHistoryLimit"],
        &json!(5),
    );
    c.eq(
        "failedJobsHistoryLimit",
        &cron["spec"]["failedJobsHistoryLimit"],
        &json!(7),
    );
    check_cronjob_wiring(c, cron, name, "nightly-report-config");
    let pod = &cron["spec"]["jobTemplate"]["spec"]["template"];
    let container = &pod["spec"]["containers"][0];
    c.eq(
        "image",
        &container["image"],
        &json!("registry.example.com/platform/workload-report:1.2.3"),
    );
    c.eq(
        "imagePullPolicy",
        &container["imagePullPolicy"],
        &json!("Always"),
    );
    c.eq(
        "imagePullSecrets",
        &pod["spec"]["imagePullSecrets"],
        &json!([{"name": "registry-pull"}]),
    );
    c.eq(
        "pod label owner",
        &pod["metadata"]["labels"]["owner"],
        &json!("platform.team"),
    );
    c.eq(
        "pod label app",
        &pod["metadata"]["labels"]["app"],
        &json!("workload-report"),
    );
    c.eq(
        "pod annotation",
        &pod["metadata"]["annotations"]["example.com/owner"],
        &json!("platform"),
    );
    c.eq(
        "nodeSelector",
        &pod["spec"]["nodeSelector"],
        &values["report"]["nodeSelector"],
    );
    c.eq(
        "tolerations",
        &pod["spec"]["tolerations"],
        &values["report"]["tolerations"],
    );
    c.eq(
        "affinity",
        &pod["spec"]["affinity"],
        &values["report"]["affinity"],
    );
    c.eq(
        "cpu request",
        &container["resources"]["requests"]["cpu"],
        &json!("300m"),
    );
    c.eq(
        "cpu limit",
        &container["resources"]["limits"]["cpu"],
        &json!("1200m"),
    );
    c.eq(
        "memory request",
        &container["resources"]["requests"]["memory"],
        &json!("768Mi"),
    );
    c.eq(
        "memory limit",
        &container["resources"]["limits"]["memory"],
        &json!("768Mi"),
    );
    let work = volume(pod, "work");
    c.eq(
        "work emptyDir sizeLimit",
        &work["emptyDir"]["sizeLimit"],
        &json!("2Gi"),
    );

    let env = env_map(container);
    c.eq("env DRY_RUN", &env_value(&env, "DRY_RUN"), &json!("false"));
    c.eq(
        "env POST_WHEN_CLEAN",
        &env_value(&env, "POST_WHEN_CLEAN"),
        &json!("true"),
    );
    c.eq(
        "env LOKI_URL",
        &env_value(&env, "LOKI_URL"),
        &json!("http://loki-gateway.monitoring:80"),
    );
    for key in ["LOKI_USERNAME", "LOKI_PASSWORD", "LOKI_TOKEN"] {
        c.eq(
            &format!("env {key}"),
            &env_secret(&env, key),
            &json!({"name": "loki-push-credentials", "key": key, "optional": true}),
        );
    }
    for key in ["INFRA_WEBHOOK", "DATA_ENG_WEBHOOK", "WEB_TEAM_WEBHOOK"] {
        c.eq(
            &format!("env {key}"),
            &env_secret(&env, key),
            &json!({"name": "report-webhooks", "key": key, "optional": true}),
        );
    }
    c.check(!env.contains_key("SILENCED_WEBHOOK"), || {
        "the silenced team must get no webhook".into()
    });
    for key in BINARY_ENV {
        c.check(env.contains_key(key), || {
            format!("env var {key}, read by the binary, is not rendered")
        });
    }
    match env_read_by_binary() {
        Ok(read) => c.check(
            read.iter().all(|k| BINARY_ENV.contains(&k.as_str())),
            || format!("{ENV_SOURCE} reads {read:?}; BINARY_ENV (and the chart) must cover each"),
        ),
        Err(error) => c.fail(format!("{error:#}")),
    }
    let webhooks: Vec<&String> = env.keys().filter(|k| k.ends_with("_WEBHOOK")).collect();
    c.eq(
        "webhook env vars",
        &json!(webhooks),
        &json!(["DATA_ENG_WEBHOOK", "INFRA_WEBHOOK", "WEB_TEAM_WEBHOOK"]),
    );

    check_cluster_role(
        c,
        r,
        name,
        ns,
        &json!([
            {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["list"]},
            {"apiGroups": ["apps"], "resources": ["daemonsets", "deployments", "statefulsets"], "verbs": ["list"]},
            {"apiGroups": ["batch"], "resources": ["cronjobs"], "verbs": ["list"]},
            {"apiGroups": ["constraints.gatekeeper.sh"], "resources": ["k8srequiredlabels", "k8scontainerlimits"], "verbs": ["list"]},
            {"apiGroups": ["templates.gatekeeper.sh"], "resources": ["constrainttemplates"],
             "resourceNames": ["k8srequiredlabels", "k8scontainerlimits"], "verbs": ["get"]}
        ]),
    );

    // Alert rules: queries, thresholds, states, window, `for`.
    let alerts = r.find("ConfigMap", "nightly-report-alert-rules");
    c.eq(
        "alerts namespace",
        &alerts["metadata"]["namespace"],
        &json!("grafana"),
    );
    c.eq(
        "alerts sidecar label",
        &alerts["metadata"]["labels"]["grafana_alert_rule"],
        &json!("yes"),
    );
    let file = provisioning(c, alerts);
    c.check(file.get("deleteRules").is_none(), || {
        "alerts on must not delete the rules".into()
    });
    let group = &file["groups"][0];
    c.eq("group orgId", &group["orgId"], &json!(2));
    c.eq("group name", &group["name"], &json!("nightly-report"));
    c.eq("group folder", &group["folder"], &json!("Platform alerts"));
    c.eq("group interval", &group["interval"], &json!("2m"));
    let selector = r#"{job="nightly-workload-report", cluster="azure-dev", type="run"}"#;
    let labels = json!({"alert_team": "infra", "severity": "warning"});
    let missing = rule(c, group, "workload-report-missing");
    c.eq("missing condition", &missing["condition"], &json!("C"));
    c.eq("missing for", &missing["for"], &json!("20m"));
    c.eq(
        "missing execErrState",
        &missing["execErrState"],
        &json!("KeepLast"),
    );
    c.eq("missing labels", &missing["labels"], &labels);
    let a = query(c, missing, "A");
    c.eq(
        "missing A datasource",
        &a["datasourceUid"],
        &json!("loki-main"),
    );
    c.eq(
        "missing A window",
        &a["relativeTimeRange"],
        &json!({"from": 36000, "to": 0}),
    );
    c.eq(
        "missing A expr",
        &a["model"]["expr"],
        &json!(format!(
            "sum(count_over_time({selector} [10h])) or vector(0)"
        )),
    );
    let b = query(c, missing, "B");
    c.eq(
        "missing B datasource",
        &b["datasourceUid"],
        &json!("prom-main"),
    );
    c.eq(
        "missing B expr (time-of-day gate)",
        &b["model"]["expr"],
        &json!(
            "(hour() >= bool 8) * (hour() < bool 17) * clamp_max((day_of_week() == bool 1) + \
             (day_of_week() == bool 2) + (day_of_week() == bool 3) + (day_of_week() == bool 4) + \
             (day_of_week() == bool 5), 1)"
        ),
    );
    let cond = query(c, missing, "C");
    c.eq(
        "missing C",
        &cond["model"]["expression"],
        &json!("$B > 0 && $A < 1"),
    );
    c.eq("missing C type", &cond["model"]["type"], &json!("math"));

    let failed = rule(c, group, "workload-report-failed");
    c.eq("failed condition", &failed["condition"], &json!("C"));
    c.eq(
        "failed execErrState",
        &failed["execErrState"],
        &json!("KeepLast"),
    );
    c.eq("failed noDataState", &failed["noDataState"], &json!("OK"));
    c.eq("failed labels", &failed["labels"], &labels);
    let a = query(c, failed, "A");
    c.eq(
        "failed A datasource",
        &a["datasourceUid"],
        &json!("loki-main"),
    );
    c.eq(
        "failed A expr",
        &a["model"]["expr"],
        &json!(format!(
            "sum(count_over_time({selector} | json | status=~\"partial|skipped\" [10h])) or vector(0)"
        )),
    );
    let threshold = query(c, failed, "C");
    c.eq(
        "failed C type",
        &threshold["model"]["type"],
        &json!("threshold"),
    );
    c.eq(
        "failed C threshold",
        &threshold["model"]["conditions"][0]["evaluator"],
        &json!({"type": "gt", "params": [0]}),
    );
    for rule in [missing, failed] {
        for q in rule["data"].as_array().into_iter().flatten() {
            if q["datasourceUid"] == json!("loki-main") {
                contract.check_query(
                    c,
                    q["model"]["expr"].as_str().unwrap_or_default(),
                    "nightly-workload-report",
                );
            }
        }
    }

    check_dashboard(c, r, contract);
    c.eq(
        "nameOverride",
        &cron["metadata"]["labels"]["app.kubernetes.io/name"],
        &json!("wlr"),
    );
    // Every string value of the full values reaches some rendered object.
    let rendered = serde_json::to_string(&r.objects).unwrap_or_default();
    let mut leaves = Vec::new();
    string_leaves(values, "", &mut leaves);
    for (path, leaf) in leaves {
        c.check(rendered.contains(leaf), || {
            format!("value {path} = {leaf:?} reaches no rendered object")
        });
    }

    if notes {
        let text = r.notes.as_deref().unwrap_or_default();
        for needle in [
            "kubectl -n gatekeeper-report create job --from=cronjob/nightly-report nightly-report-manual-1",
            "kubectl -n gatekeeper-report logs -f job/nightly-report-manual-1",
            "INFRA_WEBHOOK",
            "DATA_ENG_WEBHOOK",
            "WEB_TEAM_WEBHOOK",
            "report-webhooks",
            "\"status\":\"ok\"",
            "first deploy with alerts.enabled=false",
        ] {
            c.check(text.contains(needle), || {
                format!("NOTES.txt does not say {needle:?}")
            });
        }
        c.check(!text.contains("SILENCED_WEBHOOK"), || {
            "NOTES.txt asks for a silenced webhook".into()
        });
    }
}

/// The CronJob wiring that never depends on values: Forbid, no retries, Never, the deadline, the
/// read-only config, --work on an emptyDir, the bound ServiceAccount, the hardened Pod, CPU 1:4.
fn check_cronjob_wiring(c: &mut Scope<'_>, cron: &Value, name: &str, config_map: &str) {
    let job = &cron["spec"]["jobTemplate"]["spec"];
    let pod = &job["template"]["spec"];
    let container = &pod["containers"][0];
    c.eq(
        "concurrencyPolicy",
        &cron["spec"]["concurrencyPolicy"],
        &json!("Forbid"),
    );
    c.eq("backoffLimit", &job["backoffLimit"], &json!(0));
    c.eq(
        "activeDeadlineSeconds",
        &job["activeDeadlineSeconds"],
        &json!(900),
    );
    c.eq("restartPolicy", &pod["restartPolicy"], &json!("Never"));
    c.eq(
        "serviceAccountName",
        &pod["serviceAccountName"],
        &json!(name),
    );
    c.eq(
        "one container",
        &json!(pod["containers"].as_array().map(Vec::len)),
        &json!(1),
    );
    c.eq(
        "args",
        &container["args"],
        &json!([
            "run",
            "--config",
            "/etc/workload-report/config.yaml",
            "--work",
            "/work"
        ]),
    );
    c.eq(
        "config volume",
        &volume(&job["template"], "config")["configMap"]["name"],
        &json!(config_map),
    );
    c.check(
        volume(&job["template"], "work")["emptyDir"].is_object(),
        || "--work is not an emptyDir".into(),
    );
    let mounts = &container["volumeMounts"];
    c.eq(
        "config mount",
        &find_by_name(mounts, "config"),
        &json!({"name": "config", "mountPath": "/etc/workload-report", "readOnly": true}),
    );
    c.eq(
        "work mount",
        &find_by_name(mounts, "work")["mountPath"],
        &json!("/work"),
    );
    c.eq(
        "pod runAsNonRoot",
        &pod["securityContext"]["runAsNonRoot"],
        &json!(true),
    );
    c.eq(
        "pod seccomp",
        &pod["securityContext"]["seccompProfile"]["type"],
        &json!("RuntimeDefault"),
    );
    let sc = &container["securityContext"];
    c.eq("runAsNonRoot", &sc["runAsNonRoot"], &json!(true));
    c.eq(
        "readOnlyRootFilesystem",
        &sc["readOnlyRootFilesystem"],
        &json!(true),
    );
    c.eq(
        "allowPrivilegeEscalation",
        &sc["allowPrivilegeEscalation"],
        &json!(false),
    );
    c.eq(
        "capabilities",
        &sc["capabilities"],
        &json!({"drop": ["ALL"]}),
    );
    c.eq(
        "container seccomp",
        &sc["seccompProfile"]["type"],
        &json!("RuntimeDefault"),
    );
    let request = millicores(&container["resources"]["requests"]["cpu"]);
    let limit = millicores(&container["resources"]["limits"]["cpu"]);
    c.check(request.is_some() && request.map(|r| r * 4) == limit, || {
        format!("CPU request:limit must be 1:4, got {request:?}:{limit:?} millicores")
    });
}

fn check_cluster_role(c: &mut Scope<'_>, r: &Release, name: &str, ns: &str, want: &Value) {
    let role = r.find("ClusterRole", name);
    c.eq("ClusterRole rules", &role["rules"], want);
    for rule in role["rules"].as_array().into_iter().flatten() {
        let verbs: Vec<&str> = strings(&rule["verbs"]);
        let resources: Vec<&str> = strings(&rule["resources"]);
        c.check(verbs.iter().all(|v| *v == "list" || *v == "get"), || {
            format!("ClusterRole grants a verb other than list/get: {verbs:?}")
        });
        c.check(
            !verbs.contains(&"get") || rule["resourceNames"].is_array(),
            || format!("get without resourceNames on {resources:?}"),
        );
        c.check(
            !resources
                .iter()
                .any(|r| *r == "secrets" || *r == "pods/log" || r.contains('*')),
            || format!("ClusterRole grants {resources:?}"),
        );
    }
    let binding = r.find("ClusterRoleBinding", name);
    c.eq(
        "ClusterRoleBinding roleRef",
        &binding["roleRef"],
        &json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name}),
    );
    c.eq(
        "ClusterRoleBinding subjects",
        &binding["subjects"],
        &json!([{"kind": "ServiceAccount", "name": name, "namespace": ns}]),
    );
}

fn check_dashboard(c: &mut Scope<'_>, r: &Release, contract: &Contract) {
    let cm = r.find("ConfigMap", "nightly-report-dashboard");
    c.eq(
        "dashboard namespace",
        &cm["metadata"]["namespace"],
        &json!("grafana-dashboards"),
    );
    c.eq(
        "dashboard sidecar label",
        &cm["metadata"]["labels"]["grafana_dashboard_platform"],
        &json!("on"),
    );
    c.eq(
        "dashboard folder annotation",
        &cm["metadata"]["annotations"]["k8s-sidecar-target-directory"],
        &json!("Platform"),
    );
    let Some(text) = cm["data"]["workload-report.json"].as_str() else {
        c.fail("dashboard ConfigMap has no workload-report.json".into());
        return;
    };
    let dashboard: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(error) => return c.fail(format!("dashboard JSON does not parse: {error}")),
    };
    c.eq("dashboard uid", &dashboard["uid"], &json!("wlr-policy"));
    c.eq(
        "dashboard default datasource",
        &dashboard["templating"]["list"][0]["current"]["value"],
        &json!("loki-main"),
    );
    c.eq(
        "dashboard title",
        &dashboard["title"],
        &json!("Workload policy (nightly)"),
    );
    let mut titles = BTreeSet::new();
    let mut exprs = Vec::new();
    for panel in dashboard["panels"].as_array().into_iter().flatten() {
        if let Some(title) = panel["title"].as_str() {
            titles.insert(title.to_string());
        }
        for target in panel["targets"].as_array().into_iter().flatten() {
            if let Some(expr) = target["expr"].as_str() {
                exprs.push(expr.to_string());
            }
        }
    }
    for variable in dashboard["templating"]["list"]
        .as_array()
        .into_iter()
        .flatten()
    {
        for query in [&variable["definition"], &variable["query"]["stream"]] {
            if let Some(query) = query.as_str() {
                exprs.push(query.to_string());
            }
        }
    }
    for title in crate::chart::DASHBOARD_PANELS {
        c.check(titles.contains(*title), || {
            format!("dashboard has no panel {title:?}")
        });
    }
    c.check(exprs.len() >= DASHBOARD_PANELS.len(), || {
        format!("only {} dashboard queries", exprs.len())
    });
    for expr in &exprs {
        contract.check_query(c, expr, "nightly-workload-report");
    }
}

/// Panels the issue asks for, by title.
pub(crate) const DASHBOARD_PANELS: &[&str] = &[
    "Violations",
    "Teams with violations",
    "Namespaces with violations",
    "Last run",
    "Per team",
    "Per namespace",
    "Workloads (selected run)",
    "Violation messages (selected run)",
    "Message categories",
    "Silenced",
    "Trend per team (14 days, last run of each day)",
    "Runs",
];

fn check_minimal(c: &mut Scope<'_>, r: &Release) {
    let name = "wr-workload-report";
    let cron = r.find("CronJob", name);
    c.eq(
        "default schedule",
        &cron["spec"]["schedule"],
        &json!("30 7 * * 0-4"),
    );
    c.eq(
        "default timeZone",
        &cron["spec"]["timeZone"],
        &json!("Etc/UTC"),
    );
    c.eq(
        "CronJob namespace",
        &cron["metadata"]["namespace"],
        &json!(NAMESPACE),
    );
    check_cronjob_wiring(c, cron, name, "wr-workload-report-config");
    let container = &cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0];
    c.eq(
        "image tag defaults to appVersion",
        &container["image"],
        &json!("registry.example/workload-report:0.1.0"),
    );
    c.eq(
        "default cpu request",
        &container["resources"]["requests"]["cpu"],
        &json!("250m"),
    );
    c.eq(
        "default cpu limit",
        &container["resources"]["limits"]["cpu"],
        &json!("1000m"),
    );
    let env = env_map(container);
    c.eq(
        "default DRY_RUN",
        &env_value(&env, "DRY_RUN"),
        &json!("true"),
    );
    c.eq(
        "default POST_WHEN_CLEAN",
        &env_value(&env, "POST_WHEN_CLEAN"),
        &json!("false"),
    );
    c.check(
        !env.contains_key("LOKI_URL") && !env.contains_key("LOKI_TOKEN"),
        || "no Loki URL or credentials configured, yet rendered".into(),
    );
    // The default team gets its webhook although no namespace pattern names it.
    c.eq(
        "default team webhook",
        &env_secret(&env, "INFRA_WEBHOOK"),
        &json!({"name": "workload-report-webhooks", "key": "INFRA_WEBHOOK", "optional": true}),
    );
    c.eq(
        "team webhook",
        &env_secret(&env, "DATA_WEBHOOK"),
        &json!({"name": "workload-report-webhooks", "key": "DATA_WEBHOOK", "optional": true}),
    );
    let config = rendered_config(c, r, "wr-workload-report-config");
    c.eq(
        "minimal config",
        &config,
        &json!({
            "cluster": "dev", "defaultTeam": "infra",
            "teams": [{"name": "data", "namespaces": ["data-*"]}],
            "constraintKinds": ["K8sRequiredLabels"], "workloadKinds": ["Deployment", "StatefulSet"],
            "maxNamesPerRule": 10, "maxMessageChars": 12000, "postWhenClean": false,
            "postOnlyOnChange": false,
            "loki": {"job": "gatekeeper-workload-report", "lookback": "14d"}, "engine": "embedded",
            "audit": {"freshAfter": "10m", "tolerance": {"absolute": 5, "relative": 0.1}},
            "timeouts": {"api": "30s", "post": "10s", "engine": "10m", "query": "30s"}
        }),
    );
    // The ClusterRole follows constraintKinds (and the default workload kinds).
    check_cluster_role(
        c,
        r,
        name,
        NAMESPACE,
        &json!([
            {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["list"]},
            {"apiGroups": ["apps"], "resources": ["deployments", "statefulsets"], "verbs": ["list"]},
            {"apiGroups": ["constraints.gatekeeper.sh"], "resources": ["k8srequiredlabels"], "verbs": ["list"]},
            {"apiGroups": ["templates.gatekeeper.sh"], "resources": ["constrainttemplates"],
             "resourceNames": ["k8srequiredlabels"], "verbs": ["get"]}
        ]),
    );
    let alerts = r.find("ConfigMap", "wr-workload-report-alert-rules");
    c.eq(
        "default alert sidecar label",
        &alerts["metadata"]["labels"]["grafana_alert"],
        &json!("1"),
    );
    let file = provisioning(c, alerts);
    let group = &file["groups"][0];
    let missing = rule(c, group, "workload-report-missing");
    c.eq("default for", &missing["for"], &json!("15m"));
    c.eq(
        "default team label",
        &missing["labels"],
        &json!({"team": "infra"}),
    );
    let a = query(c, missing, "A");
    c.eq(
        "default lookback",
        &a["relativeTimeRange"],
        &json!({"from": 32400, "to": 0}),
    );
    c.check(
        a["model"]["expr"]
            .as_str()
            .is_some_and(|e| e.contains("[9h]")),
        || "default lookback is not 9h".into(),
    );
    let gate = query(c, missing, "B");
    c.eq(
        "default gate",
        &gate["model"]["expr"],
        &json!(
            "(hour() >= bool 9) * (hour() < bool 16) * clamp_max((day_of_week() == bool 0) + \
             (day_of_week() == bool 1) + (day_of_week() == bool 2) + (day_of_week() == bool 3) + \
             (day_of_week() == bool 4), 1)"
        ),
    );
    c.check(
        r.objects
            .iter()
            .all(|o| o["kind"] != json!("ConfigMap") || !kind_name(o).ends_with("-dashboard")),
        || "the dashboard is off by default".into(),
    );
}

fn check_alerts_off(c: &mut Scope<'_>, r: &Release) {
    check_delete_rules_only(c, r, 2);
    c.check(r.has("CronJob", "nightly-report"), || {
        "alerts off must keep the report".into()
    });
}

fn check_report_off(c: &mut Scope<'_>, r: &Release) {
    check_delete_rules_only(c, r, 2);
    for kind in [
        "CronJob",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
    ] {
        c.check(!r.objects.iter().any(|o| o["kind"] == json!(kind)), || {
            format!("report off renders a {kind}")
        });
    }
    c.check(!r.has("ConfigMap", "nightly-report-config"), || {
        "report off renders its config".into()
    });
    c.check(r.has("ConfigMap", "nightly-report-dashboard"), || {
        "the dashboard is independent of the report".into()
    });
}

fn check_digest(c: &mut Scope<'_>, r: &Release) {
    let cron = r.find("CronJob", "nightly-report");
    c.eq(
        "image by digest",
        &cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["image"],
        &json!(format!(
            "registry.example.com/platform/workload-report@{DIGEST}"
        )),
    );
}

/// The alert-rule ConfigMap of a release whose report or alerts are off: deleteRules only.
fn check_delete_rules_only(c: &mut Scope<'_>, r: &Release, org: i64) {
    let Some(cm) = r
        .objects
        .iter()
        .find(|o| kind_name(o).ends_with("-alert-rules"))
    else {
        return c.fail("no alert-rule ConfigMap".into());
    };
    let file = provisioning(c, cm);
    c.eq(
        "deleteRules only",
        &file,
        &json!({"apiVersion": 1, "deleteRules": [
            {"orgId": org, "uid": "workload-report-missing"},
            {"orgId": org, "uid": "workload-report-failed"}
        ]}),
    );
}

// ---------------------------------------------------------------------------------------------
// Cross-checks with the binary
// ---------------------------------------------------------------------------------------------

/// The rendered config passes `workload-report routes --config` (the loading and validation of
/// `run --config`), and a broken copy of it is refused with exit code 2 (so the check can fail).
fn check_config_accepted(root: &Path, out: &Path, full: &Release, minimal: &Release) -> Result<()> {
    for (case, release, name) in [
        ("full", full, "nightly-report-config"),
        ("minimal", minimal, "wr-workload-report-config"),
    ] {
        let text = release.find("ConfigMap", name)["data"]["config.yaml"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let file = out.join(format!("{case}-config.yaml"));
        std::fs::write(&file, &text)
            .with_context(|| format!("failed to write {}", file.display()))?;
        let (code, output) = workload_report(root, &["routes", "--config", &path_arg(&file)])?;
        if code != Some(0) {
            bail!(
                "the rendered {case} config is refused by `workload-report routes --config` (exit {code:?}):\n{output}"
            );
        }
        let mut broken: Value = serde_yaml::from_str(&text)?;
        broken["maxNamesPerRule"] = json!(0);
        let file = out.join(format!("{case}-config-broken.yaml"));
        std::fs::write(&file, serde_yaml::to_string(&broken)?)?;
        let (code, output) = workload_report(root, &["routes", "--config", &path_arg(&file)])?;
        if code != Some(2) {
            bail!(
                "`workload-report routes --config` accepted maxNamesPerRule: 0 (exit {code:?}):\n{output}"
            );
        }
    }
    eprintln!("chart: the rendered report config passes `workload-report routes --config`");
    Ok(())
}

/// The CronJob, a Job and a Pod made from its template pass the example workload constraints
/// under the embedded engine.
fn check_pod_passes_constraints(root: &Path, out: &Path, full: &Release) -> Result<()> {
    let cron = full.find("CronJob", "nightly-report").clone();
    let ns = cron["metadata"]["namespace"].clone();
    let template = &cron["spec"]["jobTemplate"]["spec"]["template"];
    let mut pod_meta = template["metadata"].clone();
    pod_meta["name"] = json!("nightly-report-manual-1-abcde");
    pod_meta["namespace"] = ns.clone();
    let pod =
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": template["spec"]});
    let mut job_spec = cron["spec"]["jobTemplate"]["spec"].clone();
    job_spec["template"]["metadata"]["labels"]["job-name"] = json!("nightly-report-manual-1");
    let job = json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "nightly-report-manual-1", "namespace": ns.clone(),
                     "labels": cron["spec"]["jobTemplate"]["metadata"]["labels"]},
        "spec": job_spec
    });
    let mut docs = String::new();
    // The release namespace as its owners would label it, so namespace selectors can match.
    let namespace = json!({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": ns, "labels": {"owner": "platform.team", "app": "workload-report"}}
    });
    for object in [&namespace, &cron, &job, &pod] {
        docs.push_str("---\n");
        docs.push_str(&serde_yaml::to_string(object)?);
    }
    let file = out.join("job-pod.yaml");
    std::fs::write(&file, docs).with_context(|| format!("failed to write {}", file.display()))?;
    let fixtures = root.join(GATEKEEPER_FIXTURES);
    if !fixtures.is_dir() {
        bail!(
            "{GATEKEEPER_FIXTURES} is missing: the job's Pod cannot be checked against the example constraints"
        );
    }
    let mut args = vec!["eval".to_string(), "-f".into(), path_arg(&file)];
    for policy in policy_files(&fixtures)? {
        args.push("-f".into());
        args.push(path_arg(&policy));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, output) = workload_report(root, &args)?;
    // Not even a warn or dryrun result: the job's own objects are clean.
    if code != Some(0) || !output.trim().is_empty() {
        bail!(
            "the CronJob's Pod does not pass the example constraints (`workload-report {}` exit {code:?}):\n{output}",
            args.join(" ")
        );
    }
    eprintln!("chart: the CronJob, its Job and Pod pass the example workload constraints");
    Ok(())
}

/// The example policies under `fixtures/gatekeeper/`: every `<policy>/template.yaml` and every
/// `<policy>/samples/<sample>/constraint.yaml` except the `bad-params` samples (invalid on purpose).
fn policy_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for policy in sorted_dirs(dir)? {
        let template = policy.join("template.yaml");
        if !template.is_file() {
            continue;
        }
        files.push(template);
        let samples = policy.join("samples");
        if samples.is_dir() {
            for sample in sorted_dirs(&samples)? {
                let constraint = sample.join("constraint.yaml");
                if constraint.is_file() && !sample.ends_with("bad-params") {
                    files.push(constraint);
                }
            }
        }
    }
    if !files.iter().any(|f| f.ends_with("constraint.yaml")) {
        bail!(
            "no template with a sample constraint under {}",
            dir.display()
        );
    }
    Ok(files)
}

fn sorted_dirs(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("failed to read {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    Ok(dirs)
}

/// Runs `cargo run -q -p workload-report -- ARGS`; returns the exit code and the combined output.
fn workload_report(root: &Path, args: &[&str]) -> Result<(Option<i32>, String)> {
    let output = Command::new(util::cargo_bin())
        .args(["run", "-q", "-p", "workload-report", "--"])
        .args(args)
        .current_dir(root)
        .stdin(Stdio::null())
        .output()
        .context("failed to run cargo run -p workload-report")?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    Ok((output.status.code(), text))
}

fn path_arg(path: &Path) -> String {
    path.display().to_string()
}

// ---------------------------------------------------------------------------------------------
// The Loki contract
// ---------------------------------------------------------------------------------------------

/// The names the Loki contract documents: stream labels, line types and JSON fields. A name counts
/// as documented when the contract file has it in backticks.
struct Contract {
    text: String,
}

/// Stream labels of the contract; a query's selector may use no other.
const CONTRACT_LABELS: [&str; 4] = ["job", "cluster", "team", "type"];

impl Contract {
    fn load(root: &Path) -> Result<Self> {
        let path = root.join(LOKI_CONTRACT);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("failed to read the Loki contract {}", path.display()))?;
        Ok(Self { text })
    }

    fn documents(&self, name: &str) -> bool {
        self.text.contains(&format!("`{name}`")) || self.text.contains(&format!("\"{name}\""))
    }

    /// A JSON field is documented, or is a key of a documented map field that `| json` flattened
    /// (`categories_missing` from `categories`).
    fn documents_field(&self, name: &str) -> bool {
        self.documents(name)
            || name
                .split_once('_')
                .is_some_and(|(map, _)| self.documents(map))
    }

    /// Every selector label is a contract label (with `job` the configured job), every line type
    /// and every JSON field the query filters, unwraps or groups by is documented.
    fn check_query(&self, c: &mut Scope<'_>, expr: &str, job: &str) {
        for label in CONTRACT_LABELS {
            c.check(self.documents(label), || {
                format!("the Loki contract does not document the label {label:?}")
            });
        }
        let selectors = selectors(expr);
        c.check(!selectors.is_empty(), || {
            format!("query has no stream selector: {expr}")
        });
        for selector in selectors {
            for (label, value) in matchers(&selector) {
                c.check(CONTRACT_LABELS.contains(&label.as_str()), || {
                    format!(
                        "query selects on {label:?}, not a stream label of the contract: {expr}"
                    )
                });
                if label == "job" {
                    c.check(value == job || value == "$job", || {
                        format!("query selects job {value:?}, not {job:?}: {expr}")
                    });
                }
                if label == "type" {
                    for t in value.split('|') {
                        c.check(self.documents(t), || {
                            format!("line type {t:?} is not in the contract: {expr}")
                        });
                    }
                }
            }
        }
        for field in fields(expr) {
            c.check(self.documents_field(&field), || {
                format!("field {field:?} is not in the Loki contract: {expr}")
            });
        }
    }
}

/// The `{...}` stream selectors of a LogQL query.
fn selectors(expr: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = expr;
    while let Some(start) = rest.find('{') {
        let Some(end) = rest[start..].find('}') else {
            break;
        };
        let inner = &rest[start + 1..start + end];
        // Grafana's `${var}` and `{{legend}}` are not selectors.
        let prev = rest[..start].chars().last();
        if prev != Some('$') && !inner.starts_with('{') && inner.contains('=') {
            out.push(inner.to_string());
        }
        rest = &rest[start + end + 1..];
    }
    out
}

/// `(label, value)` pairs of a selector body such as `job="x", type=~"a|b"`.
fn matchers(selector: &str) -> Vec<(String, String)> {
    selector
        .split(',')
        .filter_map(|part| {
            let part = part.trim();
            let split = part.find(['=', '!'])?;
            let label = part[..split].trim().to_string();
            let value = part[split..]
                .trim_start_matches(['=', '!', '~'])
                .trim()
                .trim_matches('"')
                .to_string();
            Some((label, value))
        })
        .collect()
}

/// JSON fields a query uses after `| json`: label filters (`| name="x"`, `| name=~`, `| name>`),
/// `unwrap name`, `by (a, b)` / `without (...)` groupings and `line_format` references.
fn fields(expr: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let Some(json_at) = expr.find("| json") else {
        return out;
    };
    let after = &expr[json_at + 6..];
    for stage in after.split('|').skip(1) {
        let stage = stage.trim();
        if let Some(rest) = stage.strip_prefix("line_format") {
            let mut rest = rest;
            while let Some(at) = rest.find("{{") {
                let inner = &rest[at + 2..];
                let end = inner.find("}}").unwrap_or(inner.len());
                for word in inner[..end].split_whitespace() {
                    if let Some(name) = word.strip_prefix('.') {
                        out.insert(name.to_string());
                    }
                }
                rest = &inner[end..];
            }
            continue;
        }
        if stage.starts_with("unwrap")
            || stage.starts_with("label_format")
            || stage.starts_with("keep")
            || stage.starts_with("drop")
        {
            continue;
        }
        let name: String = stage
            .chars()
            .take_while(|ch| ch.is_ascii_alphanumeric() || *ch == '_')
            .collect();
        let op = stage[name.len()..].trim_start();
        if !name.is_empty()
            && (op.starts_with('=')
                || op.starts_with('!')
                || op.starts_with('>')
                || op.starts_with('<'))
        {
            out.insert(name);
        }
    }
    for word in ["unwrap ", "by (", "without ("] {
        let mut rest = expr;
        while let Some(at) = rest.find(word) {
            let tail = &rest[at + word.len()..];
            let stops: &[char] = if word == "unwrap " {
                &[')', ' ', '[', '|']
            } else {
                &[')']
            };
            let end = tail.find(stops).unwrap_or(tail.len());
            for name in tail[..end].split(',') {
                let name = name.trim();
                if !name.is_empty() && !CONTRACT_LABELS.contains(&name) {
                    out.insert(name.to_string());
                }
            }
            rest = &tail[end..];
        }
    }
    out.remove("__error__");
    out
}

// ---------------------------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------------------------

/// One rendered release: its objects (every YAML document, in template order) and NOTES.txt when
/// the renderer gives it.
pub(crate) struct Release {
    pub(crate) objects: Vec<Value>,
    notes: Option<String>,
}

impl Release {
    fn has(&self, kind: &str, name: &str) -> bool {
        self.objects
            .iter()
            .any(|o| o["kind"] == json!(kind) && o["metadata"]["name"] == json!(name))
    }

    /// The object of that kind and name, or `null` (so a check on it fails with its name).
    fn find(&self, kind: &str, name: &str) -> &Value {
        self.objects
            .iter()
            .find(|o| o["kind"] == json!(kind) && o["metadata"]["name"] == json!(name))
            .unwrap_or(&Value::Null)
    }
}

enum Helm {
    Binary,
    Sdk { python: PathBuf },
}

impl Helm {
    /// `helm` on PATH, else the pinned SDK in `.venv-helm/` (installed when missing or another version).
    fn find(root: &Path) -> Result<Self> {
        let forced = std::env::var("XTASK_HELM").unwrap_or_default();
        let has_binary = || {
            Command::new("helm")
                .args(["version", "--short"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        match forced.as_str() {
            "binary" => {
                return if has_binary() {
                    Ok(Self::Binary)
                } else {
                    bail!("XTASK_HELM=binary, but no working `helm` on PATH")
                };
            }
            "sdk" => {}
            "" if has_binary() => return Ok(Self::Binary),
            "" => {}
            other => bail!("XTASK_HELM must be `binary` or `sdk`, not {other:?}"),
        }
        let venv = root.join(VENV);
        let python = venv.join("bin/python");
        let probe = format!(
            "import helm_python, sys; sys.exit(helm_python.__version__ != {SDK_VERSION:?})"
        );
        let ready = |python: &Path| {
            Command::new(python)
                .args(["-c", &probe])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        };
        if !ready(&python) {
            eprintln!(
                "chart: no `helm` on PATH; installing helm-python-sdk=={SDK_VERSION} into {VENV}/"
            );
            if !python.exists() {
                let status = Command::new("python3")
                    .args(["-m", "venv"])
                    .arg(&venv)
                    .status();
                if !status.is_ok_and(|s| s.success()) {
                    bail!(
                        "no `helm` on PATH, and `python3 -m venv {VENV}` failed: install helm, or python3 with its venv module (Debian: python3-venv)"
                    );
                }
            }
            util::run(Command::new(&python).args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                &format!("helm-python-sdk=={SDK_VERSION}"),
            ]))
            .context("failed to install helm-python-sdk (PyPI must be reachable once; later runs reuse .venv-helm/)")?;
            if !ready(&python) {
                bail!(
                    "{VENV}/ does not import helm_python {SDK_VERSION} after installing it; remove {VENV}/ and retry"
                );
            }
        }
        Ok(Self::Sdk { python })
    }

    fn describe(&self) -> String {
        match self {
            Self::Binary => "the helm binary on PATH".into(),
            Self::Sdk { .. } => {
                format!("helm-python-sdk {SDK_VERSION} (Helm v4 engine) in {VENV}/")
            }
        }
    }

    /// `helm template` does not render NOTES.txt; the SDK does.
    fn renders_notes(&self) -> bool {
        matches!(self, Self::Sdk { .. })
    }

    /// Renders every case; a failed render is `Err(helm's message)`.
    fn render(
        &self,
        root: &Path,
        cases: &[(String, Value)],
    ) -> Result<BTreeMap<String, Result<Release, String>>> {
        let chart = root.join(CHART);
        let mut out = BTreeMap::new();
        match self {
            Self::Binary => {
                let dir = root.join(OUT).join("values");
                std::fs::create_dir_all(&dir)?;
                for (index, (name, values)) in cases.iter().enumerate() {
                    let file = dir.join(format!("{index}.json"));
                    std::fs::write(&file, serde_json::to_vec(values)?)?;
                    let output = Command::new("helm")
                        .args(["template", RELEASE])
                        .arg(&chart)
                        .args(["--namespace", NAMESPACE, "--values"])
                        .arg(&file)
                        .output()
                        .context("failed to run helm template")?;
                    let result = if output.status.success() {
                        Ok(Release {
                            objects: parse_docs(&String::from_utf8_lossy(&output.stdout))?,
                            notes: None,
                        })
                    } else {
                        Err(String::from_utf8_lossy(&output.stderr).into_owned())
                    };
                    out.insert(name.clone(), result);
                }
            }
            Self::Sdk { python } => {
                let request = json!({
                    "chart": chart,
                    "cases": cases.iter().map(|(name, values)| json!({
                        "name": name, "release": RELEASE, "namespace": NAMESPACE, "values": values
                    })).collect::<Vec<_>>()
                });
                let script = chart.join("tests/render.py");
                let mut child = Command::new(python)
                    .arg(&script)
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::inherit())
                    .spawn()
                    .with_context(|| format!("failed to run {}", script.display()))?;
                serde_json::to_writer(child.stdin.take().context("no stdin")?, &request)?;
                let output = child.wait_with_output()?;
                if !output.status.success() {
                    bail!("{} failed with {}", script.display(), output.status);
                }
                let response: SdkResponse =
                    serde_json::from_slice(&output.stdout).context("render.py printed no JSON")?;
                for case in response.cases {
                    let result = if case.ok {
                        let mut objects = Vec::new();
                        let mut notes = None;
                        for (path, text) in &case.manifests {
                            if path.ends_with("NOTES.txt") {
                                notes = Some(text.clone());
                            } else {
                                objects.extend(
                                    parse_docs(text)
                                        .with_context(|| format!("{}: {path}", case.name))?,
                                );
                            }
                        }
                        Ok(Release { objects, notes })
                    } else {
                        Err(case.error)
                    };
                    out.insert(case.name, result);
                }
            }
        }
        Ok(out)
    }
}

#[derive(Deserialize)]
struct SdkResponse {
    cases: Vec<SdkCase>,
}

#[derive(Deserialize)]
struct SdkCase {
    name: String,
    ok: bool,
    #[serde(default)]
    manifests: BTreeMap<String, String>,
    #[serde(default)]
    error: String,
}

/// Every non-empty YAML document of a rendered template.
fn parse_docs(text: &str) -> Result<Vec<Value>> {
    let mut out = Vec::new();
    for doc in serde_yaml::Deserializer::from_str(text) {
        let value = Value::deserialize(doc).context("rendered YAML does not parse")?;
        if !value.is_null() {
            out.push(value);
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Cases and small helpers
// ---------------------------------------------------------------------------------------------

struct FailureCase {
    name: String,
    expect: Vec<String>,
    values: Value,
}

fn failure_cases(root: &Path) -> Result<Vec<FailureCase>> {
    let dir = root.join("fixtures/chart/render-failures");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .with_context(|| format!("failed to read {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    paths.sort();
    let mut cases = Vec::new();
    for path in paths {
        let doc = read_yaml(&path)?;
        let expect: Vec<String> = strings(&doc["expect"])
            .into_iter()
            .map(String::from)
            .collect();
        if expect.is_empty() || !doc["values"].is_object() {
            bail!("{}: needs `expect` (texts) and `values`", path.display());
        }
        let name = path
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        cases.push(FailureCase {
            name,
            expect,
            values: doc["values"].clone(),
        });
    }
    Ok(cases)
}

fn read_yaml(path: &Path) -> Result<Value> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("failed to read {}", path.display()))?;
    serde_yaml::from_str(&text).with_context(|| format!("{} is not YAML", path.display()))
}

/// `over` merged into `base`: maps merge key by key, anything else replaces.
fn merged(base: &Value, over: &Value) -> Value {
    match (base, over) {
        (Value::Object(base), Value::Object(over)) => {
            let mut out = base.clone();
            for (key, value) in over {
                let next = match out.get(key) {
                    Some(existing) => merged(existing, value),
                    None => value.clone(),
                };
                out.insert(key.clone(), next);
            }
            Value::Object(out)
        }
        _ => over.clone(),
    }
}

/// `(path, value)` of every non-empty string in a values tree.
fn string_leaves<'a>(value: &'a Value, path: &str, out: &mut Vec<(String, &'a str)>) {
    match value {
        Value::String(text) if !text.is_empty() => out.push((path.to_string(), text)),
        Value::Object(map) => {
            for (key, value) in map {
                string_leaves(value, &format!("{path}.{key}"), out);
            }
        }
        Value::Array(items) => {
            for (index, value) in items.iter().enumerate() {
                string_leaves(value, &format!("{path}[{index}]"), out);
            }
        }
        _ => {}
    }
}

fn kind_name(object: &Value) -> String {
    format!(
        "{}/{}",
        object["kind"].as_str().unwrap_or("?"),
        object["metadata"]["name"].as_str().unwrap_or("?")
    )
}

fn strings(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

fn names(list: &Value) -> Value {
    json!(
        list.as_array()
            .into_iter()
            .flatten()
            .map(|t| t["name"].clone())
            .collect::<Vec<_>>()
    )
}

fn find_by_name(list: &Value, name: &str) -> Value {
    list.as_array()
        .into_iter()
        .flatten()
        .find(|v| v["name"] == json!(name))
        .cloned()
        .unwrap_or(Value::Null)
}

fn volume(template: &Value, name: &str) -> Value {
    find_by_name(&template["spec"]["volumes"], name)
}

fn env_map(container: &Value) -> BTreeMap<String, Value> {
    container["env"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| Some((e["name"].as_str()?.to_string(), e.clone())))
        .collect()
}

fn env_value(env: &BTreeMap<String, Value>, key: &str) -> Value {
    env.get(key)
        .map(|e| e["value"].clone())
        .unwrap_or(Value::Null)
}

fn env_secret(env: &BTreeMap<String, Value>, key: &str) -> Value {
    env.get(key)
        .map(|e| e["valueFrom"]["secretKeyRef"].clone())
        .unwrap_or(Value::Null)
}

fn millicores(value: &Value) -> Option<u64> {
    let text = value.as_str()?;
    match text.strip_suffix('m') {
        Some(milli) => milli.parse().ok(),
        None => text.parse::<u64>().ok().map(|cores| cores * 1000),
    }
}

fn rendered_config(c: &mut Scope<'_>, r: &Release, name: &str) -> Value {
    let text = r.find("ConfigMap", name)["data"]["config.yaml"]
        .as_str()
        .unwrap_or_default();
    match serde_yaml::from_str(text) {
        Ok(value) => value,
        Err(error) => {
            c.fail(format!("config.yaml of {name} does not parse: {error}"));
            Value::Null
        }
    }
}

/// The Grafana provisioning file inside an alert-rule ConfigMap.
fn provisioning(c: &mut Scope<'_>, cm: &Value) -> Value {
    let text = cm["data"]["workload-report-alert-rules.yaml"]
        .as_str()
        .unwrap_or_default();
    match serde_yaml::from_str(text) {
        Ok(value) => value,
        Err(error) => {
            c.fail(format!("alert provisioning file does not parse: {error}"));
            Value::Null
        }
    }
}

fn rule<'a>(c: &mut Scope<'_>, group: &'a Value, uid: &str) -> &'a Value {
    let found = group["rules"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| r["uid"] == json!(uid));
    if found.is_none() {
        c.fail(format!("no alert rule {uid}"));
    }
    found.unwrap_or(&Value::Null)
}

fn query<'a>(c: &mut Scope<'_>, rule: &'a Value, ref_id: &str) -> &'a Value {
    let found = rule["data"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|q| q["refId"] == json!(ref_id));
    if found.is_none() {
        c.fail(format!("rule {} has no query {ref_id}", rule["uid"]));
    }
    found.unwrap_or(&Value::Null)
}

/// Collects every failed check (prefixed by its case) so one run reports them all.
#[derive(Default)]
struct Checks {
    failures: Vec<String>,
    passed: usize,
}

struct Scope<'a> {
    checks: &'a mut Checks,
    case: String,
}

impl Checks {
    fn scope(&mut self, case: &str) -> Scope<'_> {
        Scope {
            checks: self,
            case: case.to_string(),
        }
    }

    fn finish(self, cases: usize) -> Result<()> {
        if !self.failures.is_empty() {
            bail!(
                "chart: {} check(s) failed ({} passed):\n  {}",
                self.failures.len(),
                self.passed,
                self.failures.join("\n  ")
            );
        }
        eprintln!(
            "chart: {cases} cases rendered, {} checks passed",
            self.passed
        );
        Ok(())
    }
}

impl Scope<'_> {
    fn check(&mut self, ok: bool, message: impl FnOnce() -> String) {
        if ok {
            self.checks.passed += 1;
        } else {
            self.fail(message());
        }
    }

    fn fail(&mut self, message: String) {
        self.checks
            .failures
            .push(format!("[{}] {message}", self.case));
    }

    fn eq(&mut self, what: &str, got: &Value, want: &Value) {
        self.check(got == want, || format!("{what}: got {got}, want {want}"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_skip_grafana_variables_and_legends() {
        let expr = r#"sum by (team) (last_over_time({job="j", team=~"$team", type="team_total"} | json | runId=~"${run}" | line_format "{{.name}}" [1d]))"#;
        assert_eq!(
            selectors(expr),
            vec![r#"job="j", team=~"$team", type="team_total""#.to_string()]
        );
        assert_eq!(
            matchers(r#"job="j", team=~"$team", type!="run""#),
            vec![
                ("job".to_string(), "j".to_string()),
                ("team".to_string(), "$team".to_string()),
                ("type".to_string(), "run".to_string()),
            ]
        );
    }

    #[test]
    fn fields_finds_filters_unwraps_groupings_and_line_format() {
        let expr = r#"max by (rule, category) (sum by (runId, team) (last_over_time({job="j"} | json | runId=~"$run" | namespace=~".+" | line_format "{{.kind}}/{{.name}}" | unwrap total [1d]) by (team)))"#;
        let got: Vec<String> = fields(expr).into_iter().collect();
        assert_eq!(
            got,
            [
                "category",
                "kind",
                "name",
                "namespace",
                "rule",
                "runId",
                "total"
            ]
        );
        assert!(
            fields(r#"count_over_time({job="j"} [1h])"#).is_empty(),
            "no | json, no fields"
        );
    }

    #[test]
    fn contract_accepts_documented_names_only() {
        let contract = Contract {
            text: "`job` `cluster` `team` `type` `run` `runId` `status` `categories`".into(),
        };
        let mut checks = Checks::default();
        let good = r#"{job="j", cluster="c", type="run"} | json | runId=~"$run" | status="ok" | categories_missing > 0"#;
        contract.check_query(&mut checks.scope("good"), good, "j");
        assert!(checks.failures.is_empty(), "{:?}", checks.failures);
        let bad = r#"{job="other", namespace="x", type="summary"} | json | rule="r""#;
        contract.check_query(&mut checks.scope("bad"), bad, "j");
        let text = checks.failures.join("\n");
        for needle in [
            "job \"other\"",
            "selects on \"namespace\"",
            "line type \"summary\"",
            "field \"rule\"",
        ] {
            assert!(text.contains(needle), "{needle} missing in:\n{text}");
        }
    }

    #[test]
    fn merged_overlays_maps_and_replaces_the_rest() {
        let base = json!({"a": {"b": 1, "c": [1, 2]}, "d": "x"});
        let over = json!({"a": {"c": [], "e": null}, "d": "y"});
        assert_eq!(
            merged(&base, &over),
            json!({"a": {"b": 1, "c": [], "e": null}, "d": "y"})
        );
    }

    #[test]
    fn millicores_reads_both_notations() {
        assert_eq!(millicores(&json!("250m")), Some(250));
        assert_eq!(millicores(&json!("2")), Some(2000));
        assert_eq!(millicores(&json!("1.5")), None);
        assert_eq!(millicores(&json!(null)), None);
    }
}
