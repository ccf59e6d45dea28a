//! The seed's rollout, step by step, on a real single-node Kubernetes (`test_support::real::node`)
//! with the demo cluster applied, a real Loki and the fake Slack on loopback, and the CronJob's
//! image (the layout of `cargo xtask image`, packed from this build's binary, or the archive named
//! by `$ROLLOUT_IMAGE`) imported:
//!
//! 1. before deploying: `run --kubeconfig … --dry-run` from outside ends `ok` with the demo's
//!    counts, and a rerun with `--work` gives the same counts and `auditCheck`;
//! 2. the chart installed with real Helm (`report.enabled`, `dryRun: true`, the webhooks Secret,
//!    the Loki URL, the image);
//! 3. a Job from the CronJob runs as the chart's ServiceAccount, ends `ok` with `dryRun: true`,
//!    posts nothing, and Loki holds its run line;
//! 4. the schedule (every minute) fires the next Job; `concurrencyPolicy: Forbid` and
//!    `backoffLimit: 0` hold on the real objects;
//! 5. with Loki stopped the Job fails (`partial`, naming Loki); with a webhook key missing from
//!    the Secret, the same in a dry run, naming the key;
//! 6. `dryRun: false`: the next Job posts one digest per team;
//! 7. `alerts.enabled: false` leaves only `deleteRules`, and after uninstall nothing of the
//!    release is left.
//!
//! **Test-only post-render step:** the node has no kube-proxy and no DNS, so after every install
//! and upgrade the CronJob's Pod template gets `hostNetwork: true` and the in-cluster env
//! (`KUBERNETES_SERVICE_HOST=127.0.0.1`, `KUBERNETES_SERVICE_PORT`); nothing else of the
//! rendered chart is changed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use http::Method;
use serde_json::{Value, json};
use system_tests::chart::{self, CHART, LIVE_TENANT, merged};
use system_tests::helm::{ReleaseAction, release_action};
use system_tests::{binary, workspace};
use test_support::real::node::{self, RealNode};
use test_support::real::{RealLoki, Tool, read_objects, require};
use test_support::slack::SlackServer;

const RELEASE: &str = "workload-report";
const NAMESPACE: &str = "monitoring";
const SECRET: &str = "workload-report-webhooks";
const IMAGE_REPOSITORY: &str = "localhost/workload-report";
const IMAGE_TAG: &str = "rollout-test";
/// An image archive to import instead of packing this build's binary, e.g. the release image
/// of `cargo xtask image --tag localhost/workload-report:rollout-test`.
const IMAGE_ENV: &str = "ROLLOUT_IMAGE";
const DEMO_CLUSTER: &str = "fixtures/demo/cluster";
const DEMO_CONFIG: &str = "fixtures/demo/config.yaml";
const RUN_SELECTOR: &str = r#"{job="gatekeeper-workload-report", type="run"}"#;

/// A step's name and start, printed with its time when it ends.
struct Step {
    name: &'static str,
    started: Instant,
}

impl Step {
    fn start(name: &'static str) -> Step {
        eprintln!("rollout: {name} ...");
        Step {
            name,
            started: Instant::now(),
        }
    }

    fn done(self, node: &RealNode) {
        eprintln!(
            "rollout: {} done in {:.1} s (node memory {} MiB)",
            self.name,
            self.started.elapsed().as_secs_f64(),
            node.memory_mib()
        );
    }
}

struct Rollout {
    node: RealNode,
    slack: SlackServer,
    loki: Option<RealLoki>,
    kubeconfig: PathBuf,
    dir: tempfile::TempDir,
    jobs: usize,
}

#[test]
fn real_rollout_from_dry_run_to_live_and_off() {
    let test = "real_rollout_from_dry_run_to_live_and_off";
    let Some(tools) = node::require(test) else {
        return;
    };
    let Some(loki_tools) = require(Tool::Loki, test) else {
        return;
    };
    let whole = Instant::now();
    let setup = Instant::now();
    // Built first (step 1 runs it from outside), so no step's time includes a build.
    let binary = binary::workload_report();
    let node = RealNode::start(&tools);
    node.kube()
        .load(&read_objects(&workspace::root().join(DEMO_CLUSTER)));
    let dir = tempfile::tempdir().unwrap();
    let image = match std::env::var_os(IMAGE_ENV).filter(|v| !v.is_empty()) {
        Some(archive) => PathBuf::from(archive),
        None => {
            let ldd = std::process::Command::new("ldd")
                .arg(binary)
                .output()
                .unwrap();
            let built = image_archive::workload_report::from_host(
                binary,
                &String::from_utf8_lossy(&ldd.stdout),
                &format!("{IMAGE_REPOSITORY}:{IMAGE_TAG}"),
            )
            .unwrap();
            let image = dir.path().join("image.tar");
            std::fs::write(&image, &built.archive).unwrap();
            image
        }
    };
    node.import_image(&image);
    let image_size = std::fs::metadata(&image)
        .map(|m| m.len())
        .unwrap_or_default();
    let kubeconfig = node
        .kube()
        .write_kubeconfig(dir.path(), node.kube().admin_token());
    let mut rollout = Rollout {
        node,
        slack: SlackServer::start(),
        loki: Some(RealLoki::start(&loki_tools)),
        kubeconfig,
        dir,
        jobs: 0,
    };
    eprintln!(
        "rollout: setup (node, demo cluster, Loki, image {} of {:.1} MiB) in {:.1} s",
        image.display(),
        image_size as f64 / 1048576.0,
        setup.elapsed().as_secs_f64()
    );

    rollout.before_deploying();
    rollout.install();
    let first = rollout.manual_job_ok();
    rollout.schedule_fires();
    rollout.failures();
    rollout.go_live();
    rollout.turn_off();
    drop(first);
    eprintln!("rollout: whole test {:.1} s", whole.elapsed().as_secs_f64());
}

impl Rollout {
    fn loki(&self) -> &RealLoki {
        self.loki.as_ref().expect("Loki runs")
    }

    fn webhook_env(&self) -> BTreeMap<String, String> {
        // The demo's posting teams; silenced has no webhook.
        ["infra", "payments", "raster"]
            .iter()
            .map(|team| {
                (
                    format!("{}_WEBHOOK", team.to_ascii_uppercase()),
                    self.slack.webhook_url(team),
                )
            })
            .collect()
    }

    /// Step 1: the local dry run through the kubeconfig, then the `--work` rerun.
    fn before_deploying(&self) {
        let step = Step::start("1 before deploying (dry run from outside, --work rerun)");
        // The demo config, with the tenant Grafana's datasource would send.
        let mut demo: Value = serde_yaml::from_str(
            &std::fs::read_to_string(workspace::root().join(DEMO_CONFIG)).unwrap(),
        )
        .unwrap();
        demo["loki"]["tenant"] = json!(LIVE_TENANT);
        let config = self.dir.path().join("demo-config.yaml");
        std::fs::write(&config, serde_yaml::to_string(&demo).unwrap()).unwrap();
        let mut env = self.webhook_env();
        env.insert("LOKI_URL".into(), self.loki().url());
        let fake_loki = test_support::loki::LokiServer::start();
        let run = |name: &str, extra: &[&str]| -> (Value, BTreeMap<String, Value>) {
            let out = self.dir.path().join(name);
            let mut args = vec![
                "run".to_string(),
                "--config".into(),
                config.display().to_string(),
                "--dry-run".into(),
                "--out".into(),
                out.display().to_string(),
            ];
            args.extend(extra.iter().map(|s| s.to_string()));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let mut env = env.clone();
            if name == "snapshot" {
                // The snapshot's run goes to a loopback fake, so the real Loki holds the cluster's
                // runs only.
                env.insert("LOKI_URL".into(), fake_loki.url());
            }
            let output = binary::run(&args, &env).unwrap();
            let run_line = last_json_line(&output.stdout)
                .unwrap_or_else(|| panic!("run {name} printed no run line:\n{}", output.text));
            (run_line, team_totals(&out))
        };
        let kubeconfig = self.kubeconfig.display().to_string();
        let snapshot = workspace::root().join(DEMO_CLUSTER).display().to_string();
        let (offline, expected) = run("snapshot", &["--snapshot", &snapshot]);
        let (first, counts) = run("cluster", &["--kubeconfig", &kubeconfig]);
        assert_eq!(first["status"], "ok", "the dry run from outside: {first}");
        assert_eq!(first["dryRun"], true);
        assert_eq!(
            counts, expected,
            "the cluster run does not count what the demo snapshot counts"
        );
        assert!(!counts.is_empty());
        let work = self.dir.path().join("work");
        let work = work.display().to_string();
        let (rerun, rerun_counts) = run(
            "cluster-work",
            &["--kubeconfig", &kubeconfig, "--work", &work],
        );
        assert_eq!(rerun["status"], "ok", "the --work rerun: {rerun}");
        assert_eq!(rerun_counts, counts);
        assert_eq!(rerun["auditCheck"], first["auditCheck"]);
        assert_eq!(
            first["auditCheck"], offline["auditCheck"],
            "the cluster run and the demo snapshot differ in auditCheck"
        );
        step.done(&self.node);
    }

    fn values(&self, over: Value) -> Value {
        let mut config: Value = chart::values("live").unwrap()["report"]["config"].clone();
        config["loki"]["url"] = json!(self.loki.as_ref().map(RealLoki::url).unwrap_or_default());
        let base = json!({
            "image": {"repository": IMAGE_REPOSITORY, "tag": IMAGE_TAG, "pullPolicy": "Never"},
            "report": {
                "enabled": true, "dryRun": true, "webhooksSecret": SECRET,
                // Not during the steps that start Jobs by hand; step 4 sets every minute.
                "schedule": "0 0 1 1 *",
                "config": config
            },
            "alerts": {"enabled": true, "lokiDatasourceUid": "loki", "prometheusDatasourceUid": "prometheus"}
        });
        merged(&base, &over)
    }

    fn helm(&self, action: ReleaseAction, values: &Value) {
        let chart = workspace::root().join(CHART);
        release_action(action, &self.kubeconfig, &chart, RELEASE, NAMESPACE, values)
            .unwrap_or_else(|e| panic!("{}", self.node.failure(&format!("{e:#}"))));
        if action != ReleaseAction::Uninstall {
            self.post_render();
        }
    }

    /// The test-only post-render step: `hostNetwork` and the in-cluster env on the CronJob's
    /// Pod template (no kube-proxy, no DNS on the node).
    fn post_render(&self) {
        let kube = self.node.kube();
        let path = format!("/apis/batch/v1/namespaces/{NAMESPACE}/cronjobs/{RELEASE}");
        let mut cronjob = kube.get(&path);
        let spec = &mut cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"];
        spec["hostNetwork"] = json!(true);
        let env = &mut spec["containers"][0]["env"];
        let mut entries: Vec<Value> = env.as_array().cloned().unwrap_or_default();
        entries.retain(|e| {
            !e["name"]
                .as_str()
                .unwrap_or_default()
                .starts_with("KUBERNETES_SERVICE_")
        });
        entries.extend(
            self.node
                .in_cluster_env()
                .as_array()
                .cloned()
                .unwrap_or_default(),
        );
        *env = Value::Array(entries);
        let (status, answer) = kube.raw(Method::PUT, &path, Some(cronjob));
        assert_eq!(status, 200, "post-render of the CronJob: {answer}");
    }

    fn secret(&self, env: &BTreeMap<String, String>) {
        self.node.kube().apply(&json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": SECRET, "namespace": NAMESPACE},
            "stringData": env
        }));
    }

    /// Step 2: the chart installed with `dryRun: true`.
    fn install(&self) {
        let step = Step::start("2 install the chart (dryRun: true)");
        self.node.kube().apply(
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}),
        );
        self.secret(&self.webhook_env());
        self.helm(ReleaseAction::Install, &self.values(json!({})));
        let cronjob = self.node.kube().get(&format!(
            "/apis/batch/v1/namespaces/{NAMESPACE}/cronjobs/{RELEASE}"
        ));
        assert_eq!(
            cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["image"],
            format!("{IMAGE_REPOSITORY}:{IMAGE_TAG}")
        );
        step.done(&self.node);
    }

    /// What `kubectl create job --from=cronjob/…` does: a Job of the CronJob's template, owned
    /// by the CronJob.
    fn job_from_cronjob(&mut self) -> String {
        self.jobs += 1;
        let kube = self.node.kube();
        let cronjob = kube.get(&format!(
            "/apis/batch/v1/namespaces/{NAMESPACE}/cronjobs/{RELEASE}"
        ));
        let name = format!("{RELEASE}-manual-{}", self.jobs);
        let template = &cronjob["spec"]["jobTemplate"];
        let mut annotations = template["metadata"]["annotations"].clone();
        if !annotations.is_object() {
            annotations = json!({});
        }
        annotations["cronjob.kubernetes.io/instantiate"] = json!("manual");
        kube.apply(&json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {
                "name": name, "namespace": NAMESPACE,
                "labels": template["metadata"]["labels"],
                "annotations": annotations,
                "ownerReferences": [{
                    "apiVersion": "batch/v1", "kind": "CronJob", "name": RELEASE,
                    "uid": cronjob["metadata"]["uid"], "controller": true,
                    "blockOwnerDeletion": true
                }]
            },
            "spec": template["spec"]
        }));
        name
    }

    /// Waits until Job `name` completes or fails; its last Pod and whether it succeeded.
    fn finished(&self, name: &str) -> (bool, Value) {
        let kube = self.node.kube();
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let job = kube.get(&format!(
                "/apis/batch/v1/namespaces/{NAMESPACE}/jobs/{name}"
            ));
            let condition = |kind: &str| {
                job["status"]["conditions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|c| c["type"] == kind && c["status"] == "True")
            };
            let (complete, failed) = (condition("Complete"), condition("Failed"));
            if complete || failed {
                let pods = kube.get(&format!(
                    "/api/v1/namespaces/{NAMESPACE}/pods?labelSelector=job-name%3D{name}"
                ));
                let pod = pods["items"]
                    .as_array()
                    .and_then(|p| p.last())
                    .cloned()
                    .unwrap_or_else(|| panic!("Job {name} finished without a Pod"));
                return (complete, pod);
            }
            assert!(
                Instant::now() < deadline,
                "{}",
                self.node
                    .failure(&format!("Job {name} did not finish: {}", job["status"]))
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    /// The Pod's log (through the API server and the kubelet) and its run line.
    fn run_line(&self, pod: &Value) -> (String, Value) {
        let name = pod["metadata"]["name"].as_str().unwrap_or_default();
        let (status, log) = self.node.kube().raw(
            Method::GET,
            &format!("/api/v1/namespaces/{NAMESPACE}/pods/{name}/log"),
            None,
        );
        assert_eq!(status, 200, "log of {name}: {log}");
        let text = match log {
            Value::String(text) => text,
            other => other.to_string(),
        };
        let run_line = last_json_line(&text)
            .unwrap_or_else(|| panic!("the log of {name} ends with no run line:\n{text}"));
        (text, run_line)
    }

    /// Step 3: a Job from the CronJob, as the chart's ServiceAccount, ends ok in a dry run.
    fn manual_job_ok(&mut self) -> Value {
        let step = Step::start("3 a Job from the CronJob (dry run)");
        let name = self.job_from_cronjob();
        let (complete, pod) = self.finished(&name);
        let (log, run_line) = self.run_line(&pod);
        assert!(
            complete,
            "{}",
            self.node
                .failure(&format!("Job {name} failed; log:\n{log}"))
        );
        assert_eq!(pod["spec"]["serviceAccountName"], RELEASE);
        assert_eq!(pod["status"]["phase"], "Succeeded");
        assert_eq!(run_line["status"], "ok", "{run_line}");
        assert_eq!(run_line["dryRun"], true);
        assert!(
            self.slack.requests().is_empty(),
            "a dry run posted to Slack"
        );
        let run_id = run_line["runId"].as_str().unwrap_or_default().to_string();
        let now = jiff::Timestamp::now().as_nanosecond();
        let lines = self
            .loki()
            .query_range(LIVE_TENANT, RUN_SELECTOR, now - 600_000_000_000, now);
        assert!(
            lines.to_string().contains(&run_id),
            "Loki holds no run line of run {run_id} under {RUN_SELECTOR}: {lines}"
        );
        // The missing-run alert's Loki part (refId A, as installed) counts the runs now (the two
        // of step 1 and this Job's), and none ten minutes before the test.
        let missing = self.alert_query("workload-report-missing", "A");
        let count = |at: i128| -> String {
            let result = self.loki().query(LIVE_TENANT, &missing, at);
            result[0]["value"][1]
                .as_str()
                .unwrap_or_default()
                .to_string()
        };
        assert_eq!(count(now), "3", "{missing} now");
        assert_eq!(
            count(now - 600_000_000_000),
            "0",
            "{missing} ten minutes ago"
        );
        step.done(&self.node);
        run_line
    }

    /// The installed alert rule `uid`'s query of `ref_id`.
    fn alert_query(&self, uid: &str, ref_id: &str) -> String {
        let key = "workload-report-alert-rules.yaml";
        let rules = self.node.kube().get(&format!(
            "/api/v1/namespaces/{NAMESPACE}/configmaps/{RELEASE}-alert-rules"
        ));
        let file: Value =
            serde_yaml::from_str(rules["data"][key].as_str().unwrap_or_default()).unwrap();
        let rule = file["groups"][0]["rules"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| r["uid"] == uid)
            .unwrap_or_else(|| panic!("no alert rule {uid}: {file:?}"))
            .clone();
        rule["data"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|d| d["refId"] == ref_id)
            .and_then(|d| d["model"]["expr"].as_str())
            .unwrap_or_else(|| panic!("rule {uid} has no query {ref_id}"))
            .to_string()
    }

    /// Step 4: with a schedule of every minute the CronJob starts the next Job itself.
    fn schedule_fires(&self) {
        let step = Step::start("4 the schedule fires (every minute)");
        self.helm(
            ReleaseAction::Upgrade,
            &self.values(json!({"report": {"schedule": "* * * * *"}})),
        );
        let kube = self.node.kube();
        let cronjob = kube.get(&format!(
            "/apis/batch/v1/namespaces/{NAMESPACE}/cronjobs/{RELEASE}"
        ));
        assert_eq!(cronjob["spec"]["concurrencyPolicy"], "Forbid");
        assert_eq!(cronjob["spec"]["jobTemplate"]["spec"]["backoffLimit"], 0);
        let deadline = Instant::now() + Duration::from_secs(100);
        let scheduled = loop {
            let jobs = kube.get(&format!("/apis/batch/v1/namespaces/{NAMESPACE}/jobs"));
            let found = jobs["items"].as_array().into_iter().flatten().find(|job| {
                job["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"].is_null()
                    && job["metadata"]["ownerReferences"][0]["name"] == RELEASE
            });
            if let Some(job) = found {
                break job["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
            }
            assert!(
                Instant::now() < deadline,
                "the CronJob started no Job: {}",
                cronjob["status"]
            );
            std::thread::sleep(Duration::from_secs(1));
        };
        let job = kube.get(&format!(
            "/apis/batch/v1/namespaces/{NAMESPACE}/jobs/{scheduled}"
        ));
        assert_eq!(
            job["spec"]["backoffLimit"], 0,
            "as rendered, on the real Job"
        );
        let (complete, pod) = self.finished(&scheduled);
        let (log, run_line) = self.run_line(&pod);
        assert!(complete, "scheduled Job {scheduled} failed:\n{log}");
        assert_eq!(run_line["status"], "ok");
        // Back to a schedule that does not fire during the next steps.
        self.helm(ReleaseAction::Upgrade, &self.values(json!({})));
        step.done(&self.node);
    }

    /// Step 5: Loki stopped, then a webhook key missing: the Job fails with `partial`.
    fn failures(&mut self) {
        let step = Step::start("5 failures as the cluster sees them");
        let loki_tools = require(Tool::Loki, "rollout").expect("Loki was found before");
        self.loki = None;
        let name = self.job_from_cronjob();
        let (complete, pod) = self.finished(&name);
        let (log, run_line) = self.run_line(&pod);
        assert!(!complete, "with Loki stopped the Job must fail:\n{log}");
        assert_eq!(exit_code(&pod), Some(1), "{}", pod["status"]);
        assert_eq!(run_line["status"], "partial");
        assert!(
            run_line["reason"]
                .as_str()
                .unwrap_or_default()
                .contains("loki"),
            "the reason names Loki: {run_line}"
        );

        self.loki = Some(RealLoki::start(&loki_tools));
        self.helm(ReleaseAction::Upgrade, &self.values(json!({})));
        let mut env = self.webhook_env();
        env.remove("RASTER_WEBHOOK");
        self.node.kube().delete(&json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": SECRET, "namespace": NAMESPACE}
        }));
        self.secret(&env);
        let name = self.job_from_cronjob();
        let (complete, pod) = self.finished(&name);
        let (log, run_line) = self.run_line(&pod);
        assert!(
            !complete,
            "with a webhook key missing the Job must fail:\n{log}"
        );
        assert_eq!(exit_code(&pod), Some(1));
        assert_eq!(run_line["status"], "partial");
        assert_eq!(run_line["dryRun"], true);
        assert!(
            run_line["reason"]
                .as_str()
                .unwrap_or_default()
                .contains("RASTER_WEBHOOK"),
            "the reason names the missing key: {run_line}"
        );
        self.secret(&self.webhook_env());
        step.done(&self.node);
    }

    /// Step 6: `dryRun: false`: one digest per team.
    fn go_live(&mut self) {
        let step = Step::start("6 go live (dryRun: false)");
        self.helm(
            ReleaseAction::Upgrade,
            &self.values(json!({"report": {"dryRun": false}})),
        );
        let name = self.job_from_cronjob();
        let (complete, pod) = self.finished(&name);
        let (log, run_line) = self.run_line(&pod);
        assert!(complete, "the live Job failed:\n{log}");
        assert_eq!(run_line["status"], "ok");
        assert_eq!(run_line["dryRun"], false);
        assert_eq!(self.slack.teams_posted(), ["infra", "payments", "raster"]);
        for team in ["infra", "payments", "raster"] {
            assert_eq!(self.slack.posts(team).len(), 1, "one digest for {team}");
        }
        step.done(&self.node);
    }

    /// Step 7: alerts off (only deleteRules), then uninstall: nothing of the release is left.
    fn turn_off(&self) {
        let step = Step::start("7 turn off (alerts off, uninstall)");
        self.helm(
            ReleaseAction::Upgrade,
            &self.values(json!({"report": {"dryRun": false}, "alerts": {"enabled": false}})),
        );
        let kube = self.node.kube();
        let rules = kube.get(&format!(
            "/api/v1/namespaces/{NAMESPACE}/configmaps/{RELEASE}-alert-rules"
        ));
        let text = rules["data"]["workload-report-alert-rules.yaml"]
            .as_str()
            .unwrap_or_default();
        let file: Value = serde_yaml::from_str(text).unwrap();
        let keys: Vec<&String> = file
            .as_object()
            .map(|o| o.keys().collect())
            .unwrap_or_default();
        assert_eq!(keys, ["apiVersion", "deleteRules"], "{text}");
        self.helm(ReleaseAction::Uninstall, &json!({}));
        let selector = format!("app.kubernetes.io/instance%3D{RELEASE}");
        let lists = [
            format!("/apis/batch/v1/namespaces/{NAMESPACE}/cronjobs"),
            format!("/apis/batch/v1/namespaces/{NAMESPACE}/jobs"),
            format!("/api/v1/namespaces/{NAMESPACE}/pods"),
            format!("/api/v1/namespaces/{NAMESPACE}/configmaps?labelSelector={selector}"),
            format!("/api/v1/namespaces/{NAMESPACE}/serviceaccounts?labelSelector={selector}"),
            format!("/api/v1/namespaces/{NAMESPACE}/secrets?labelSelector=owner%3Dhelm"),
            format!("/apis/rbac.authorization.k8s.io/v1/clusterroles?labelSelector={selector}"),
            format!(
                "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings?labelSelector={selector}"
            ),
        ];
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let left: Vec<String> = lists
                .iter()
                .flat_map(|path| {
                    let list = kube.get(path);
                    list["items"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|o| format!("{} {}", path, o["metadata"]["name"]))
                        .collect::<Vec<_>>()
                })
                .collect();
            if left.is_empty() {
                break;
            }
            assert!(Instant::now() < deadline, "left after uninstall: {left:?}");
            std::thread::sleep(Duration::from_secs(1));
        }
        step.done(&self.node);
    }
}

/// The exit code of the Pod's first container.
fn exit_code(pod: &Value) -> Option<i64> {
    pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"].as_i64()
}

/// The last line of `text` that is a JSON object.
fn last_json_line(text: &str) -> Option<Value> {
    text.lines()
        .rev()
        .filter_map(|line| serde_json::from_str::<Value>(line.trim()).ok())
        .find(Value::is_object)
}

/// team → its `team_total` line without the run id and the changes against the previous run
/// (the first run has none), from `<out>/loki.json`.
fn team_totals(out: &Path) -> BTreeMap<String, Value> {
    let text = std::fs::read_to_string(out.join("loki.json")).unwrap();
    let push: Value = serde_json::from_str(&text).unwrap();
    let mut totals = BTreeMap::new();
    for stream in push["streams"].as_array().into_iter().flatten() {
        for pair in stream["values"].as_array().into_iter().flatten() {
            let mut line: Value =
                serde_json::from_str(pair[1].as_str().unwrap_or_default()).unwrap();
            if line["type"] == "team_total" {
                for key in ["runId", "new", "fixed"] {
                    line.as_object_mut().unwrap().remove(key);
                }
                totals.insert(line["team"].as_str().unwrap_or_default().to_string(), line);
            }
        }
    }
    totals
}
