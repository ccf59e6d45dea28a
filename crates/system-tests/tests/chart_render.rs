//! What `charts/workload-report` renders, case by case (the cases: `system_tests::chart`).
//! Each test is one rule of the chart; it makes every check of that rule and lists every one
//! that failed. The chart's queries are held to the Loki contract here; the binary's view of the
//! rendered config is in `chart_binary`, the real servers' in `chart_live`.

use std::collections::BTreeSet;

use serde_json::{Value, json};
use system_tests::chart::{self, DIGEST, NAMESPACE, rendered};
use system_tests::checks::Checks;
use system_tests::contract::Contract;
use system_tests::release::{
    Release, env_map, env_secret, env_value, find_by_name, kind_name, millicores, names,
    string_leaves, strings, volume,
};

/// The full case's names: its fullnameOverride, namespaces and Loki job.
const FULL_NAME: &str = "nightly-report";
const FULL_NS: &str = "gatekeeper-report";
const FULL_JOB: &str = "nightly-workload-report";
/// The minimal case's name: release `wr` and the chart's name.
const MINIMAL_NAME: &str = "wr-workload-report";

fn full_values() -> Value {
    chart::full_values().expect("fixtures/chart/values-full.yaml")
}

fn container(pod: &Value) -> &Value {
    &pod["spec"]["containers"][0]
}

// ---------------------------------------------------------------------------------------------
// The full values: every value reaches what it configures
// ---------------------------------------------------------------------------------------------

#[test]
fn full_config_map_holds_exactly_the_configured_report_config() {
    let mut c = Checks::new("full");
    let r = rendered("full");
    let config = rendered_config(&mut c, r, "nightly-report-config");
    c.eq("config.yaml", &config, &full_values()["report"]["config"]);
    c.eq(
        "config teams in order",
        &names(&config["teams"]),
        &json!(["data-eng", "silenced", "web_team"]),
    );
    let cm = r.find("ConfigMap", "nightly-report-config");
    c.eq(
        "config namespace",
        &cm["metadata"]["namespace"],
        &json!(FULL_NS),
    );
    c.finish();
}

#[test]
fn full_cronjob_takes_namespace_schedule_and_history_from_the_values() {
    let mut c = Checks::new("full");
    let r = rendered("full");
    let sa = r.find("ServiceAccount", FULL_NAME);
    c.eq(
        "ServiceAccount namespace",
        &sa["metadata"]["namespace"],
        &json!(FULL_NS),
    );
    let cron = r.find("CronJob", FULL_NAME);
    c.eq(
        "CronJob namespace",
        &cron["metadata"]["namespace"],
        &json!(FULL_NS),
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
    c.eq(
        "nameOverride",
        &cron["metadata"]["labels"]["app.kubernetes.io/name"],
        &json!("wlr"),
    );
    c.finish();
}

#[test]
fn full_pod_takes_image_metadata_placement_and_resources_from_the_values() {
    let mut c = Checks::new("full");
    let values = full_values();
    let pod = rendered("full").pod_template();
    let container = container(pod);
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
    for key in ["nodeSelector", "tolerations", "affinity"] {
        c.eq(key, &pod["spec"][key], &values["report"][key]);
    }
    let resources = &container["resources"];
    c.eq("cpu request", &resources["requests"]["cpu"], &json!("300m"));
    c.eq("cpu limit", &resources["limits"]["cpu"], &json!("1200m"));
    c.eq(
        "memory request",
        &resources["requests"]["memory"],
        &json!("768Mi"),
    );
    c.eq(
        "memory limit",
        &resources["limits"]["memory"],
        &json!("768Mi"),
    );
    c.eq(
        "work emptyDir sizeLimit",
        &volume(pod, "work")["emptyDir"]["sizeLimit"],
        &json!("2Gi"),
    );
    c.finish();
}

#[test]
fn full_env_sets_the_flags_loki_and_one_webhook_per_postable_team() {
    let mut c = Checks::new("full");
    let env = env_map(container(rendered("full").pod_template()));
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
    // web_team reads its webhook from its webhookEnv override.
    for key in ["INFRA_WEBHOOK", "DATA_ENG_WEBHOOK", "WEB_TEAM_HOOK"] {
        c.eq(
            &format!("env {key}"),
            &env_secret(&env, key),
            &json!({"name": "report-webhooks", "key": key, "optional": true}),
        );
    }
    c.check(!env.contains_key("SILENCED_WEBHOOK"), || {
        "the silenced team must get no webhook".into()
    });
    c.finish();
}

/// The binary's own list of what it reads (`daily_report::config::ENV_VARS`) and team-routing's
/// webhook rule, against the rendered env: a variable the binary starts reading fails here until
/// the chart renders it.
#[test]
fn every_env_var_the_binary_reads_is_rendered() {
    let mut c = Checks::new("full");
    let r = rendered("full");
    let env = env_map(container(r.pod_template()));
    for key in daily_report::config::ENV_VARS {
        c.check(env.contains_key(*key), || {
            format!("env var {key}, read by the binary (daily_report::config::ENV_VARS), is not rendered")
        });
    }
    let config = rendered_config(&mut c, r, "nightly-report-config");
    let webhooks: BTreeSet<String> = env
        .keys()
        .filter(|k| env_secret(&env, k)["name"] == json!("report-webhooks"))
        .cloned()
        .collect();
    c.eq(
        "webhook env vars",
        &json!(webhooks),
        &json!(["DATA_ENG_WEBHOOK", "INFRA_WEBHOOK", "WEB_TEAM_HOOK"]),
    );
    c.eq(
        "webhook env vars by team-routing's rule",
        &json!(webhooks),
        &json!(chart::webhook_vars(&config).unwrap_or_default()),
    );
    for key in env.keys() {
        let known =
            daily_report::config::ENV_VARS.contains(&key.as_str()) || webhooks.contains(key);
        c.check(known, || {
            format!("env var {key} is rendered, but the binary does not read it")
        });
    }
    c.finish();
}

#[test]
fn full_cluster_role_lists_exactly_the_configured_kinds_and_templates() {
    let mut c = Checks::new("full");
    check_cluster_role(
        &mut c,
        rendered("full"),
        FULL_NAME,
        FULL_NS,
        &json!([
            {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["list"]},
            {"apiGroups": ["apps"], "resources": ["daemonsets", "deployments", "statefulsets"], "verbs": ["list"]},
            {"apiGroups": ["batch"], "resources": ["cronjobs"], "verbs": ["list"]},
            {"apiGroups": ["constraints.gatekeeper.sh"], "resources": ["k8srequiredlabels", "k8scontainerlimits"], "verbs": ["list"]},
            {"apiGroups": ["expansion.gatekeeper.sh"], "resources": ["expansiontemplate"], "verbs": ["list"]},
            {"apiGroups": ["mutations.gatekeeper.sh"], "resources": ["assign", "assignimage", "assignmetadata", "modifyset"], "verbs": ["list"]},
            {"apiGroups": ["templates.gatekeeper.sh"], "resources": ["constrainttemplates"],
             "resourceNames": ["k8srequiredlabels", "k8scontainerlimits"], "verbs": ["get"]}
        ]),
    );
    c.finish();
}

#[test]
fn full_alert_rules_take_queries_window_gate_and_labels_from_the_values() {
    let mut c = Checks::new("full");
    let alerts = rendered("full").find("ConfigMap", "nightly-report-alert-rules");
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
    let file = provisioning(&mut c, alerts);
    c.check(file.get("deleteRules").is_none(), || {
        "alerts on must not delete the rules".into()
    });
    let group = &file["groups"][0];
    c.eq("group orgId", &group["orgId"], &json!(2));
    c.eq("group name", &group["name"], &json!("nightly-report"));
    c.eq("group folder", &group["folder"], &json!("Platform alerts"));
    c.eq("group interval", &group["interval"], &json!("2m"));
    let selector = format!(r#"{{job="{FULL_JOB}", cluster="azure-dev", type="run"}}"#);
    let labels = json!({"alert_team": "infra", "severity": "warning"});

    let missing = rule(&mut c, group, "workload-report-missing");
    c.eq("missing condition", &missing["condition"], &json!("C"));
    c.eq("missing for", &missing["for"], &json!("20m"));
    c.eq(
        "missing execErrState",
        &missing["execErrState"],
        &json!("KeepLast"),
    );
    c.eq("missing labels", &missing["labels"], &labels);
    let a = query(&mut c, missing, "A");
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
    let b = query(&mut c, missing, "B");
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
    let cond = query(&mut c, missing, "C");
    c.eq(
        "missing C",
        &cond["model"]["expression"],
        &json!("$B > 0 && $A < 1"),
    );
    c.eq("missing C type", &cond["model"]["type"], &json!("math"));

    let failed = rule(&mut c, group, "workload-report-failed");
    c.eq("failed condition", &failed["condition"], &json!("C"));
    c.eq(
        "failed execErrState",
        &failed["execErrState"],
        &json!("KeepLast"),
    );
    c.eq("failed noDataState", &failed["noDataState"], &json!("OK"));
    c.eq("failed labels", &failed["labels"], &labels);
    let a = query(&mut c, failed, "A");
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
    let threshold = query(&mut c, failed, "C");
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
    c.finish();
}

#[test]
fn full_dashboard_has_every_panel_in_its_folder_and_namespace() {
    let mut c = Checks::new("full");
    let cm = rendered("full").find("ConfigMap", "nightly-report-dashboard");
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
    let dashboard = dashboard_json(&mut c, cm);
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
    let titles: BTreeSet<&str> = dashboard["panels"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|panel| panel["title"].as_str())
        .collect();
    for title in DASHBOARD_PANELS {
        c.check(titles.contains(title), || {
            format!("dashboard has no panel {title:?}")
        });
    }
    c.check(
        dashboard_queries(&dashboard).len() >= DASHBOARD_PANELS.len(),
        || {
            format!(
                "only {} dashboard queries",
                dashboard_queries(&dashboard).len()
            )
        },
    );
    c.finish();
}

/// Panels the dashboard must have, by title.
const DASHBOARD_PANELS: &[&str] = &[
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
    "Namespaces with violations per team (14 days, last run of each day)",
    "New at deploy (admission violations per namespace and rule)",
    "New and fixed since the previous run",
    "Runs",
    "Policy errors (selected run)",
];

#[test]
fn alert_and_dashboard_queries_use_only_what_the_loki_contract_documents() {
    let mut c = Checks::new("full");
    let contract = Contract::load().expect("the Loki contract");
    let r = rendered("full");
    let file = provisioning(&mut c, r.find("ConfigMap", "nightly-report-alert-rules"));
    let rules = file["groups"][0]["rules"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    c.check(rules.len() == 2, || {
        format!("{} alert rules, expected 2", rules.len())
    });
    for rule in &rules {
        for q in rule["data"].as_array().into_iter().flatten() {
            if q["datasourceUid"] == json!("loki-main") {
                let expr = q["model"]["expr"].as_str().unwrap_or_default();
                contract.check_query(&mut c, expr, FULL_JOB);
            }
        }
    }
    let dashboard = dashboard_json(&mut c, r.find("ConfigMap", "nightly-report-dashboard"));
    // New at deploy reads Gatekeeper's own log lines, not the report's (chart_dashboard pins it).
    let gatekeeper = full_values()["dashboard"]["gatekeeperLogSelector"].clone();
    let gatekeeper = gatekeeper.as_str().unwrap_or_default();
    for expr in dashboard_queries(&dashboard) {
        if !expr.contains(gatekeeper) {
            contract.check_query(&mut c, &expr, FULL_JOB);
        }
    }
    c.finish();
}

#[test]
fn every_full_value_reaches_a_rendered_object() {
    let mut c = Checks::new("full");
    let values = full_values();
    let objects = &rendered("full").objects;
    let rendered = serde_json::to_string(objects).unwrap_or_default();
    // A value inside an embedded JSON file (the dashboard) is JSON-escaped there.
    let objects_value = serde_json::to_value(objects).unwrap_or_default();
    let mut embedded = Vec::new();
    string_leaves(&objects_value, "", &mut embedded);
    let embedded: String = embedded.into_iter().map(|(_, text)| text).collect();
    let mut leaves = Vec::new();
    string_leaves(&values, "", &mut leaves);
    for (path, leaf) in leaves {
        let escaped = serde_json::to_string(leaf).unwrap_or_default();
        let escaped = escaped.trim_matches('"');
        c.check(
            rendered.contains(leaf) || embedded.contains(escaped),
            || format!("value {path} = {leaf:?} reaches no rendered object"),
        );
    }
    c.finish();
}

/// NOTES.txt tells how to run the job by hand and which Secret keys to create. `helm template`
/// does not render NOTES.txt, so with the helm binary this test checks nothing and says so.
#[test]
fn full_notes_tell_how_to_run_by_hand_and_which_webhook_keys_to_create() {
    if !chart::helm().renders_notes() {
        eprintln!(
            "NOTES.txt not checked: {} does not render it",
            chart::helm().describe()
        );
        return;
    }
    let mut c = Checks::new("full");
    let text = rendered("full").notes.as_deref().unwrap_or_default();
    for needle in [
        "kubectl -n gatekeeper-report create job --from=cronjob/nightly-report nightly-report-manual-1",
        "kubectl -n gatekeeper-report logs -f job/nightly-report-manual-1",
        "INFRA_WEBHOOK",
        "DATA_ENG_WEBHOOK",
        "WEB_TEAM_HOOK   (team web_team)",
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
    c.finish();
}

// ---------------------------------------------------------------------------------------------
// What never depends on the values
// ---------------------------------------------------------------------------------------------

/// Forbid, no retries, Never, the deadline, the read-only config, `--work` on an emptyDir, the
/// bound ServiceAccount, the hardened Pod, CPU request:limit 1:4 — with the full values and the
/// minimal ones alike.
#[test]
fn cronjob_runs_once_read_only_hardened_and_bounded_whatever_the_values() {
    let mut c = Checks::new("full");
    check_cronjob_wiring(&mut c, rendered("full"), FULL_NAME, "nightly-report-config");
    c.case("minimal");
    check_cronjob_wiring(
        &mut c,
        rendered("minimal"),
        MINIMAL_NAME,
        "wr-workload-report-config",
    );
    c.finish();
}

fn check_cronjob_wiring(c: &mut Checks, r: &Release, name: &str, config_map: &str) {
    let cron = r.find("CronJob", name);
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

/// The ClusterRole is exactly `want`, grants only list and named get, never secrets, logs or
/// wildcards, and is bound to the release's ServiceAccount.
fn check_cluster_role(c: &mut Checks, r: &Release, name: &str, ns: &str, want: &Value) {
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

// ---------------------------------------------------------------------------------------------
// The defaults and the switches
// ---------------------------------------------------------------------------------------------

#[test]
fn by_default_only_the_alert_rule_config_map_is_rendered_and_it_deletes_the_rules() {
    let mut c = Checks::new("default");
    let r = rendered("default");
    let kinds: Vec<String> = r.objects.iter().map(kind_name).collect();
    c.check(
        kinds == ["ConfigMap/wr-workload-report-alert-rules"],
        || format!("the default render must hold only the alert-rule ConfigMap, got {kinds:?}"),
    );
    check_delete_rules_only(&mut c, r, 1);
    c.finish();
}

#[test]
fn minimal_release_gets_the_documented_defaults() {
    let mut c = Checks::new("minimal");
    let r = rendered("minimal");
    let cron = r.find("CronJob", MINIMAL_NAME);
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
    let container = container(r.pod_template());
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
    let config = rendered_config(&mut c, r, "wr-workload-report-config");
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
            "timeouts": {"api": "30s", "post": "10s", "engine": "10m", "query": "30s", "push": "2m"}
        }),
    );
    c.check(
        r.of_kind("ConfigMap")
            .all(|o| !kind_name(o).ends_with("-dashboard")),
        || "the dashboard is off by default".into(),
    );
    c.finish();
}

/// The ClusterRole follows `constraintKinds` and the default workload kinds.
#[test]
fn minimal_cluster_role_follows_the_constraint_kinds_and_default_workload_kinds() {
    let mut c = Checks::new("minimal");
    check_cluster_role(
        &mut c,
        rendered("minimal"),
        MINIMAL_NAME,
        NAMESPACE,
        &json!([
            {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["list"]},
            {"apiGroups": ["apps"], "resources": ["deployments", "statefulsets"], "verbs": ["list"]},
            {"apiGroups": ["constraints.gatekeeper.sh"], "resources": ["k8srequiredlabels"], "verbs": ["list"]},
            {"apiGroups": ["expansion.gatekeeper.sh"], "resources": ["expansiontemplate"], "verbs": ["list"]},
            {"apiGroups": ["mutations.gatekeeper.sh"], "resources": ["assign", "assignimage", "assignmetadata", "modifyset"], "verbs": ["list"]},
            {"apiGroups": ["templates.gatekeeper.sh"], "resources": ["constrainttemplates"],
             "resourceNames": ["k8srequiredlabels"], "verbs": ["get"]}
        ]),
    );
    c.finish();
}

#[test]
fn minimal_alert_rules_use_the_default_window_gate_and_team_label() {
    let mut c = Checks::new("minimal");
    let alerts = rendered("minimal").find("ConfigMap", "wr-workload-report-alert-rules");
    c.eq(
        "default alert sidecar label",
        &alerts["metadata"]["labels"]["grafana_alert"],
        &json!("1"),
    );
    let file = provisioning(&mut c, alerts);
    let missing = rule(&mut c, &file["groups"][0], "workload-report-missing");
    c.eq("default for", &missing["for"], &json!("15m"));
    c.eq(
        "default team label",
        &missing["labels"],
        &json!({"team": "infra"}),
    );
    let a = query(&mut c, missing, "A");
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
    let gate = query(&mut c, missing, "B");
    c.eq(
        "default gate",
        &gate["model"]["expr"],
        &json!(
            "(hour() >= bool 9) * (hour() < bool 16) * clamp_max((day_of_week() == bool 0) + \
             (day_of_week() == bool 1) + (day_of_week() == bool 2) + (day_of_week() == bool 3) + \
             (day_of_week() == bool 4), 1)"
        ),
    );
    c.finish();
}

#[test]
fn alerts_off_deletes_the_rules_and_keeps_the_report() {
    let mut c = Checks::new("alerts-off");
    let r = rendered("alerts-off");
    check_delete_rules_only(&mut c, r, 2);
    c.check(r.has("CronJob", FULL_NAME), || {
        "alerts off must keep the report".into()
    });
    c.finish();
}

#[test]
fn report_off_renders_no_job_or_rights_and_keeps_the_dashboard() {
    let mut c = Checks::new("report-off");
    let r = rendered("report-off");
    check_delete_rules_only(&mut c, r, 2);
    for kind in [
        "CronJob",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
    ] {
        c.check(r.of_kind(kind).next().is_none(), || {
            format!("report off renders a {kind}")
        });
    }
    c.check(!r.has("ConfigMap", "nightly-report-config"), || {
        "report off renders its config".into()
    });
    c.check(r.has("ConfigMap", "nightly-report-dashboard"), || {
        "the dashboard is independent of the report".into()
    });
    c.finish();
}

#[test]
fn an_image_digest_replaces_the_tag() {
    let mut c = Checks::new("digest");
    c.eq(
        "image by digest",
        &container(rendered("digest").pod_template())["image"],
        &json!(format!(
            "registry.example.com/platform/workload-report@{DIGEST}"
        )),
    );
    c.finish();
}

/// Every `fixtures/chart/render-failures/*.yaml`, merged over the full values, fails to render
/// with an error containing each of its `expect` texts.
#[test]
fn every_invalid_value_fails_the_render_naming_the_problem() {
    let failures = chart::failure_cases().expect("fixtures/chart/render-failures");
    let full = full_values();
    let cases: Vec<(String, Value)> = failures
        .iter()
        .map(|case| (case.name.clone(), chart::merged(&full, &case.values)))
        .collect();
    let rendered = chart::render(&cases).expect("the render-failure cases");
    let mut c = Checks::new("render-failures");
    for case in &failures {
        c.case(&format!("failure/{}", case.name));
        match rendered.get(&case.name) {
            Some(Ok(_)) => c.fail("rendered, but rendering must fail".into()),
            Some(Err(error)) => {
                for text in &case.expect {
                    c.check(error.contains(text.as_str()), || {
                        format!("error does not contain {text:?}: {error}")
                    });
                }
            }
            None => c.fail("not rendered".into()),
        }
    }
    c.finish();
}

// ---------------------------------------------------------------------------------------------
// Lookups that record a failure when what they look for is missing
// ---------------------------------------------------------------------------------------------

/// The alert-rule ConfigMap of a release whose report or alerts are off: deleteRules only.
fn check_delete_rules_only(c: &mut Checks, r: &Release, org: i64) {
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

fn rendered_config(c: &mut Checks, r: &Release, name: &str) -> Value {
    let text = r.find("ConfigMap", name)["data"]["config.yaml"]
        .as_str()
        .unwrap_or_default();
    serde_yaml::from_str(text).unwrap_or_else(|error| {
        c.fail(format!("config.yaml of {name} does not parse: {error}"));
        Value::Null
    })
}

/// The Grafana provisioning file inside an alert-rule ConfigMap.
fn provisioning(c: &mut Checks, cm: &Value) -> Value {
    let text = cm["data"]["workload-report-alert-rules.yaml"]
        .as_str()
        .unwrap_or_default();
    serde_yaml::from_str(text).unwrap_or_else(|error| {
        c.fail(format!("alert provisioning file does not parse: {error}"));
        Value::Null
    })
}

fn dashboard_json(c: &mut Checks, cm: &Value) -> Value {
    let Some(text) = cm["data"]["workload-report.json"].as_str() else {
        c.fail("dashboard ConfigMap has no workload-report.json".into());
        return Value::Null;
    };
    serde_json::from_str(text).unwrap_or_else(|error| {
        c.fail(format!("dashboard JSON does not parse: {error}"));
        Value::Null
    })
}

/// Every query of the dashboard: the panels' targets and the variables' queries.
fn dashboard_queries(dashboard: &Value) -> Vec<String> {
    let mut exprs = Vec::new();
    for panel in dashboard["panels"].as_array().into_iter().flatten() {
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
    exprs
}

fn rule<'a>(c: &mut Checks, group: &'a Value, uid: &str) -> &'a Value {
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

fn query<'a>(c: &mut Checks, rule: &'a Value, ref_id: &str) -> &'a Value {
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
