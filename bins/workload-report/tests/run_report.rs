//! End-to-end tests of `workload-report run` and `routes` through the binary, against loopback
//! fakes: the Kubernetes API (cluster-projection's fake), Slack and Loki capture servers.
//!
//! The cluster is the demo snapshot (`fixtures/demo/cluster`), served by the fake API server or
//! read as a snapshot. Every run gets an explicit environment (no inherited variables).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;
use test_support::kube_api::{FakeApiServer, Fault, Scenario};
use test_support::loki::LokiServer;
use test_support::slack::{SinkReply, SlackServer};

const TEAMS: [&str; 3] = ["infra", "payments", "raster"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn demo_dir() -> PathBuf {
    root().join("fixtures/demo")
}

/// Every object of the demo snapshot.
fn demo_objects() -> Vec<Value> {
    let mut files: Vec<PathBuf> = Vec::new();
    let mut dirs = vec![demo_dir().join("cluster")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut objects = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for doc in serde_yaml::Deserializer::from_str(&text) {
            let value: Value = serde::Deserialize::deserialize(doc).unwrap();
            if !value.is_null() {
                objects.push(value);
            }
        }
    }
    objects
}

/// The demo cluster as the fake API server serves it.
fn demo_scenario() -> Scenario {
    scenario_of(demo_objects())
}

/// `objects` as the fake API server serves them.
fn scenario_of(objects: Vec<Value>) -> Scenario {
    let mut lists: BTreeMap<String, (String, String, Vec<Value>)> = BTreeMap::new();
    let mut scenario = Scenario::new();
    for object in objects {
        let kind = object["kind"].as_str().unwrap().to_string();
        let api_version = object["apiVersion"].as_str().unwrap().to_string();
        let path = match kind.as_str() {
            "ConstraintTemplate" => {
                let name = object["metadata"]["name"].as_str().unwrap();
                scenario = scenario.with_object(
                    &format!("/apis/{api_version}/constrainttemplates/{name}"),
                    object.clone(),
                );
                continue;
            }
            "Namespace" => "/api/v1/namespaces".to_string(),
            "Assign" => format!("/apis/{api_version}/assign"),
            "ExpansionTemplate" => format!("/apis/{api_version}/expansiontemplate"),
            "Deployment" => "/apis/apps/v1/deployments".to_string(),
            "StatefulSet" => "/apis/apps/v1/statefulsets".to_string(),
            other => format!("/apis/{api_version}/{}", other.to_ascii_lowercase()),
        };
        lists
            .entry(path)
            .or_insert_with(|| (format!("{kind}List"), api_version.clone(), Vec::new()))
            .2
            .push(object);
    }
    for (path, (kind, api_version, items)) in lists {
        scenario = scenario.with_list(&path, &kind, &api_version, items);
    }
    scenario
}

/// The demo config pointed at `loki`, with short timeouts.
fn write_config(dir: &Path, loki: Option<&str>, extra: &str) -> PathBuf {
    let mut text = std::fs::read_to_string(demo_dir().join("config.yaml")).unwrap();
    text = text.replace("loki:\n  job: gatekeeper-workload-report\n", "");
    if let Some(url) = loki {
        text.push_str(&format!(
            "loki:\n  url: {url}\n  job: gatekeeper-workload-report\n  tenant: demo\n"
        ));
    }
    text.push_str("timeouts:\n  api: 2s\n  post: 2s\n  engine: 60s\n  push: 3s\n");
    text.push_str(extra);
    let path = dir.join("config.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

struct Outcome {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Outcome {
    fn run_line(&self) -> Value {
        let line = self
            .stdout
            .lines()
            .rev()
            .find(|l| l.starts_with('{'))
            .expect("a run line on stdout");
        serde_json::from_str(line).unwrap()
    }
}

/// The binary with `args` and an explicit environment (`PATH` and `env`), in the repository root.
fn command(args: &[&str], env: &[(String, String)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_workload-report"));
    command
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .current_dir(root());
    command
}

fn run(args: &[&str], env: &[(String, String)]) -> Outcome {
    let output = command(args, env).output().unwrap();
    Outcome {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn hooks(slack: &SlackServer, teams: &[&str]) -> Vec<(String, String)> {
    teams
        .iter()
        .map(|t| {
            (
                format!("{}_WEBHOOK", t.to_ascii_uppercase()),
                slack.webhook_url(t),
            )
        })
        .collect()
}

/// A live run against the fake API server with the given faults.
struct Live {
    api: FakeApiServer,
    slack: SlackServer,
    loki: LokiServer,
    dir: tempfile::TempDir,
}

impl Live {
    fn start() -> Live {
        Live::with_scenario(demo_scenario())
    }

    fn with_scenario(scenario: Scenario) -> Live {
        Live {
            api: FakeApiServer::start(scenario),
            slack: SlackServer::start(),
            loki: LokiServer::start(),
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn run(&self, extra_config: &str, extra_args: &[&str], env: &[(String, String)]) -> Outcome {
        let config = write_config(self.dir.path(), Some(&self.loki.url()), extra_config);
        let kubeconfig = self.api.write_kubeconfig(self.dir.path());
        let mut args = vec![
            "run".to_string(),
            "--config".into(),
            config.display().to_string(),
            "--kubeconfig".into(),
            kubeconfig.display().to_string(),
            "--context".into(),
            "fake".into(),
        ];
        args.extend(extra_args.iter().map(|s| s.to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run(&args, env)
    }

    fn all_hooks(&self) -> Vec<(String, String)> {
        hooks(&self.slack, &TEAMS)
    }

    /// Every byte any party saw from the run: stdout, stderr, Slack bodies, Loki bodies.
    fn everything(&self, outcome: &Outcome) -> String {
        let mut text = format!("{}\n{}\n", outcome.stdout, outcome.stderr);
        for request in self.slack.requests() {
            text.push_str(&String::from_utf8_lossy(&request.body));
        }
        for push in self.loki.pushes() {
            text.push_str(&push);
        }
        text
    }
}

/// Replaces the run id and timestamps, which come from the clock.
fn normalize(text: &str) -> String {
    let id = regex_like_run_id(text);
    let mut out = text.to_string();
    if let Some(id) = id {
        out = out.replace(&id, "<RUN_ID>");
    }
    let mut result = String::new();
    for line in out.lines() {
        let mut line = line.to_string();
        for key in ["\"startedAt\":\"", "\"finishedAt\":\""] {
            if let Some(start) = line.find(key) {
                let from = start + key.len();
                if let Some(len) = line[from..].find('"') {
                    line.replace_range(from..from + len, "<TIME>");
                }
            }
        }
        result.push_str(&line);
        result.push('\n');
    }
    result
}

/// `text` with every run id (`YYYYMMDDTHHMMSSZ`) written `<RUN_ID>`.
fn mask_run_ids(text: &str) -> String {
    let is_id = |b: &[u8]| {
        b.len() == 16
            && b[8] == b'T'
            && b[15] == b'Z'
            && b[..8].iter().chain(&b[9..15]).all(u8::is_ascii_digit)
    };
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        if bytes.get(i..i + 16).is_some_and(is_id) {
            out.push_str("<RUN_ID>");
            i += 16;
        } else {
            let c = text[i..].chars().next().unwrap_or_default();
            out.push(c);
            i += c.len_utf8().max(1);
        }
    }
    out
}

fn regex_like_run_id(text: &str) -> Option<String> {
    let start = text.find("\"runId\":\"")? + "\"runId\":\"".len();
    let len = text[start..].find('"')?;
    Some(text[start..start + len].to_string())
}

#[test]
fn demo_snapshot_dry_run_prints_every_digest() {
    let slack = SlackServer::start();
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    let outcome = run(
        &[
            "run",
            "--config",
            "fixtures/demo/config.yaml",
            "--snapshot",
            "fixtures/demo/cluster",
            "--dry-run",
            "--out",
            out_dir.to_str().unwrap(),
        ],
        &hooks(&slack, &TEAMS),
    );
    assert_eq!(outcome.code, 0, "{}\n{}", outcome.stdout, outcome.stderr);
    assert!(slack.requests().is_empty(), "a dry run posts nothing");
    insta::assert_snapshot!("demo_dry_run_stdout", normalize(&outcome.stdout));
    let run_line = outcome.run_line();
    assert_eq!(run_line["status"], "ok");
    assert_eq!(run_line["dryRun"], true);
    assert_eq!(
        run_line["posted"],
        serde_json::json!([]),
        "a dry run posts no one"
    );
    assert_eq!(
        run_line["wouldPost"],
        serde_json::json!(["infra", "payments", "raster"])
    );
    assert!(
        outcome
            .stderr
            .contains("dry run: nothing posted to Slack; no Loki URL: nothing pushed"),
        "{}",
        outcome.stderr
    );
    assert!(
        outcome
            .stdout
            .lines()
            .last()
            .is_some_and(|l| l.starts_with("{\"runId\":")),
        "text mode: the run line is the last stdout line"
    );
    assert_eq!(run_line["auditCheck"]["K8sReplicaLimits"], "skipped");
    assert!(
        outcome
            .stderr
            .contains("audit check: 1 of 1 constraint of K8sReplicaLimits audited less than 10m after creation: replica-bounds"),
        "{}",
        outcome.stderr
    );
    for file in [
        "run.json",
        "loki.json",
        "slack/infra.json",
        "slack/payments.json",
        "slack/raster.json",
    ] {
        assert!(out_dir.join(file).is_file(), "--out misses {file}");
    }
    assert!(!out_dir.join("slack/silenced.json").exists());
    let loki: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("loki.json")).unwrap()).unwrap();
    let types: Vec<&str> = loki["streams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["stream"]["type"].as_str().unwrap())
        .collect();
    for kind in ["run", "summary", "team_total", "violation"] {
        assert!(types.contains(&kind), "no {kind} stream in {types:?}");
    }
    // every configured category (and other) is in every summary and team_total line, 0 included
    let lines: Vec<Value> = loki["streams"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["values"].as_array().unwrap().clone())
        .map(|v| serde_json::from_str(v[1].as_str().unwrap()).unwrap())
        .collect();
    for line in &lines {
        let expected: &[&str] = match (line["type"].as_str(), line["rule"].as_str()) {
            (Some("team_total"), _) | (Some("summary"), Some("K8sRequiredLabels")) => {
                &["invalid", "missing", "other"]
            }
            (Some("summary"), _) => &["other"],
            _ => continue,
        };
        let categories: Vec<&str> = line["categories"]
            .as_object()
            .unwrap_or_else(|| panic!("no categories in {line}"))
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(categories, expected, "{line}");
    }
    assert!(
        lines
            .iter()
            .any(|l| l["type"] == "team_total" && l["categories"]["invalid"] == 0),
        "a category with no workload shows 0"
    );
    let payments = std::fs::read_to_string(out_dir.join("slack/payments.json")).unwrap();
    insta::assert_snapshot!(
        "demo_payments_digest",
        normalize_digest(&payments, &run_line)
    );
}

fn normalize_digest(text: &str, run_line: &Value) -> String {
    text.replace(run_line["runId"].as_str().unwrap(), "<RUN_ID>")
}

#[test]
fn demo_without_webhooks_is_partial_even_in_a_dry_run() {
    let outcome = run(
        &[
            "run",
            "--config",
            "fixtures/demo/config.yaml",
            "--snapshot",
            "fixtures/demo/cluster",
            "--dry-run",
        ],
        &[],
    );
    assert_eq!(outcome.code, 1);
    let line = outcome.run_line();
    assert_eq!(line["status"], "partial");
    assert_eq!(
        line["failed"],
        serde_json::json!(["infra", "payments", "raster"])
    );
    assert!(
        line["reason"]
            .as_str()
            .unwrap()
            .contains("PAYMENTS_WEBHOOK is not set")
    );
}

#[test]
fn live_ok_run_posts_digests_and_pushes_loki() {
    let live = Live::start();
    let out_dir = live.dir.path().join("out");
    let snapshot = live.dir.path().join("saved.tar.gz");
    let outcome = live.run(
        "",
        &[
            "--out",
            out_dir.to_str().unwrap(),
            "--save-snapshot",
            snapshot.to_str().unwrap(),
            "-o",
            "json",
        ],
        &live.all_hooks(),
    );
    assert_eq!(outcome.code, 0, "{}\n{}", outcome.stdout, outcome.stderr);
    let document = json_document(&outcome.stdout);
    assert_eq!(document["run"]["status"], "ok");
    assert_eq!(
        document["run"]["posted"],
        serde_json::json!(["infra", "payments", "raster"])
    );
    assert_eq!(
        live.slack.teams_posted(),
        ["infra", "payments", "raster"],
        "silenced is never posted"
    );
    let pushes = live.loki.pushes();
    assert_eq!(pushes.len(), 1);
    let push: Value = serde_json::from_str(&pushes[0]).unwrap();
    assert!(
        push["streams"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["stream"]["team"] == "silenced" && s["stream"]["type"] == "violation"),
        "silenced is counted and pushed"
    );
    let request = &live.loki.requests()[0];
    assert_eq!(request.header("x-scope-orgid"), Some("demo"));
    let sent = live.slack.posts("payments").remove(0);
    let written = std::fs::read_to_string(out_dir.join("slack/payments.json")).unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&sent).unwrap(),
        serde_json::from_str::<Value>(&written).unwrap(),
        "--out writes exactly what was sent"
    );
    assert!(snapshot.is_file());
    // the saved snapshot replays to the same counts
    let replayed = replay(&snapshot, &live.slack);
    assert_eq!(replayed["run"]["status"], "ok");
    assert_eq!(
        replayed["digests"]["raster"]["text"]
            .as_str()
            .map(|t| t.lines().count()),
        document["digests"]["raster"]["text"]
            .as_str()
            .map(|t| t.lines().count())
    );
    assert_eq!(replayed["run"]["auditCheck"], document["run"]["auditCheck"]);
}

/// A dry run of the demo config over a saved `snapshot`: its `-o json` document.
fn replay(snapshot: &Path, slack: &SlackServer) -> Value {
    let outcome = run(
        &[
            "run",
            "--config",
            "fixtures/demo/config.yaml",
            "--snapshot",
            snapshot.to_str().unwrap(),
            "--dry-run",
            "-o",
            "json",
        ],
        &hooks(slack, &TEAMS),
    );
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    json_document(&outcome.stdout)
}

/// Stdout of `-o json`: one JSON document and nothing else (as `json.load` reads it).
fn json_document(stdout: &str) -> Value {
    serde_json::from_str(stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}): {stdout}"))
}

#[test]
fn live_api_failures_skip_the_run() {
    let cases: [(&str, Fault, &str); 4] = [
        ("/apis/apps/v1/deployments", Fault::Status(403), "HTTP 403"),
        ("/apis/apps/v1/statefulsets", Fault::Status(500), "HTTP 500"),
        ("/api/v1/namespaces", Fault::NotJson, "not valid JSON"),
        (
            "/apis/apps/v1/deployments",
            Fault::Delay(Duration::from_secs(5)),
            "no complete response",
        ),
    ];
    for (path, fault, reason) in cases {
        let live = Live::start();
        live.api.inject(path, fault.clone());
        let outcome = live.run("", &[], &live.all_hooks());
        assert_eq!(outcome.code, 1, "{fault:?}: {}", outcome.stderr);
        let line = outcome.run_line();
        assert_eq!(line["status"], "skipped", "{fault:?}");
        assert!(
            line["reason"].as_str().unwrap().contains(reason),
            "{fault:?}: {}",
            line["reason"]
        );
        assert_eq!(line["auditCheck"]["K8sRequiredLabels"], "skipped");
        assert_eq!(
            live.slack.teams_posted(),
            ["infra"],
            "{fault:?}: only the problems message"
        );
        let pushes = live.loki.pushes();
        assert_eq!(
            pushes.len(),
            1,
            "{fault:?}: the run line still reaches Loki"
        );
        assert!(!pushes[0].contains("\"type\":\"violation\""));
    }
}

#[test]
fn a_source_that_cannot_be_loaded_is_a_usage_error_before_anything_is_read() {
    let live = Live::start();
    let config = write_config(live.dir.path(), Some(&live.loki.url()), "");
    let config = config.to_str().unwrap();
    let kubeconfig = live.api.write_kubeconfig(live.dir.path());
    let kubeconfig = kubeconfig.to_str().unwrap();
    let missing = live.dir.path().join("no-such-snapshot");
    let cases: [(Vec<&str>, String); 2] = [
        (
            vec!["--snapshot", missing.to_str().unwrap()],
            format!("--snapshot {}: ", missing.display()),
        ),
        (
            vec!["--kubeconfig", kubeconfig, "--context", "nope"],
            format!("context \"nope\" not found in {kubeconfig}; contexts: fake, decoy"),
        ),
    ];
    for (source, message) in cases {
        let mut args = vec!["run", "--config", config];
        args.extend(&source);
        let outcome = run(&args, &live.all_hooks());
        assert_eq!(outcome.code, 2, "{source:?}: {}", outcome.stderr);
        assert!(
            outcome.stderr.contains(&message),
            "{source:?}: {}",
            outcome.stderr
        );
        assert!(outcome.stdout.is_empty(), "no run line: {}", outcome.stdout);
        assert!(live.slack.requests().is_empty() && live.loki.pushes().is_empty());
        assert!(
            !outcome.stderr.contains("WEBHOOK"),
            "no unrelated webhook text"
        );
    }
    assert!(live.api.requests().is_empty(), "nothing was read");
}

#[test]
fn a_kubeconfig_list_skips_missing_files_as_kubectl_does() {
    let live = Live::start();
    let config = write_config(live.dir.path(), Some(&live.loki.url()), "");
    let kubeconfig = live.api.write_kubeconfig(live.dir.path());
    let missing = live.dir.path().join("missing-kubeconfig");
    let list = std::env::join_paths([missing.as_path(), kubeconfig.as_path()]).unwrap();
    let mut env = live.all_hooks();
    env.push(("KUBECONFIG".into(), list.to_str().unwrap().to_string()));
    let outcome = run(
        &[
            "run",
            "--config",
            config.to_str().unwrap(),
            "--context",
            "fake",
        ],
        &env,
    );
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    assert_eq!(outcome.run_line()["status"], "ok");
}

#[test]
fn an_unreachable_cluster_is_skipped_naming_the_server() {
    let live = Live::start();
    let outcome = {
        let config = write_config(live.dir.path(), Some(&live.loki.url()), "");
        let kubeconfig = live.api.write_kubeconfig_with_decoy(live.dir.path());
        let args = [
            "run",
            "--config",
            config.to_str().unwrap(),
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
            "--context",
            "decoy",
        ];
        run(&args, &live.all_hooks())
    };
    assert_eq!(outcome.code, 1, "{}", outcome.stderr);
    let line = outcome.run_line();
    assert_eq!(line["status"], "skipped");
    let reason = line["reason"].as_str().unwrap();
    assert!(
        reason.contains("cannot reach https://127.0.0.1:9: connection refused"),
        "{reason}"
    );
}

#[test]
fn live_list_expired_410_keeps_its_own_reason() {
    let mut many: Vec<Value> = Vec::new();
    for i in 0..501 {
        many.push(serde_json::json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": format!("d{i:03}"), "namespace": "payments-dev"},
            "spec": {"replicas": 2, "template": {"spec": {"containers": []}}}
        }));
    }
    let scenario = demo_scenario().with_list(
        "/apis/apps/v1/deployments",
        "DeploymentList",
        "apps/v1",
        many,
    );
    let live = Live::with_scenario(scenario);
    live.api
        .inject("/apis/apps/v1/deployments", Fault::ExpireOnContinue);
    let outcome = live.run("", &[], &live.all_hooks());
    let line = outcome.run_line();
    assert_eq!(line["status"], "skipped");
    assert!(
        line["reason"].as_str().unwrap().contains("410 Gone"),
        "{}",
        line["reason"]
    );
}

#[test]
fn live_missing_constraint_kind_skips_the_run() {
    let live = Live::start();
    let outcome = live.run("", &[], &live.all_hooks());
    assert_eq!(outcome.code, 0);
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), Some(&live.loki.url()), "");
    let text = std::fs::read_to_string(&config).unwrap().replace(
        "  - K8sReplicaLimits\n",
        "  - K8sReplicaLimits\n  - K8sAllowedRepos\n",
    );
    std::fs::write(&config, text).unwrap();
    let kubeconfig = live.api.write_kubeconfig(dir.path());
    let outcome = run(
        &[
            "run",
            "--config",
            config.to_str().unwrap(),
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
            "--context",
            "fake",
        ],
        &live.all_hooks(),
    );
    assert_eq!(outcome.code, 1);
    let line = outcome.run_line();
    assert_eq!(line["status"], "skipped");
    assert!(
        line["reason"].as_str().unwrap().contains("k8sallowedrepos"),
        "{}",
        line["reason"]
    );
}

#[test]
fn live_slack_failures_are_partial_and_never_leak_the_webhook() {
    let cases = [
        (SinkReply::Status(500), "HTTP 500"),
        (SinkReply::Hang, "no answer within 2s"),
        (SinkReply::Redirect, "HTTP 302"),
        (SinkReply::EchoPath(404), "HTTP 404"),
    ];
    for (reply, reason) in cases {
        let live = Live::start();
        live.slack.reply("raster", vec![reply.clone()]);
        let outcome = live.run("", &[], &live.all_hooks());
        assert_eq!(outcome.code, 1, "{reply:?}");
        let line = outcome.run_line();
        assert_eq!(line["status"], "partial", "{reply:?}");
        assert_eq!(line["failed"], serde_json::json!(["raster"]), "{reply:?}");
        let why = line["reason"].as_str().unwrap();
        assert!(
            why.contains("team raster: slack post failed") && why.contains(reason),
            "{reply:?}: {why}"
        );
        assert_eq!(
            live.slack.posts("infra").len(),
            2,
            "{reply:?}: the digest and the problems message"
        );
        let all = live.everything(&outcome);
        let path = SlackServer::webhook_path("raster");
        assert!(!all.contains(&path), "{reply:?}: webhook path leaked");
        assert!(
            !all.contains(path.trim_start_matches('/')),
            "{reply:?}: webhook path leaked"
        );
        assert!(!all.contains("sEcReT"), "{reply:?}: webhook token leaked");
    }
}

#[test]
fn a_control_character_in_one_webhook_fails_that_team_only_and_is_never_echoed() {
    let live = Live::start();
    let mut env = live.all_hooks();
    let raster = format!("{}\tsEcReT-tail", live.slack.webhook_url("raster"));
    for (name, value) in &mut env {
        if name == "RASTER_WEBHOOK" {
            *value = raster.clone();
        }
    }
    let outcome = live.run("", &[], &env);
    assert_eq!(outcome.code, 1, "{}", outcome.stderr);
    let line = outcome.run_line();
    assert_eq!(line["status"], "partial");
    assert_eq!(line["failed"], serde_json::json!(["raster"]));
    assert_eq!(line["reason"], "team raster: invalid URL");
    assert_eq!(line["posted"], serde_json::json!(["infra", "payments"]));
    assert_eq!(
        live.slack.posts("infra").len(),
        2,
        "the digest and the problems message"
    );
    let all = live.everything(&outcome);
    assert!(!all.contains("sEcReT"), "the value is never echoed");
    assert!(!all.contains(&SlackServer::webhook_path("raster")));
}

#[test]
fn live_loki_failures_are_partial() {
    // Loki too busy (429, 503) is tried again until `timeouts.push` (3 s here) runs out; any
    // other failure ends the push at once.
    let cases = [
        (SinkReply::Status(400), "HTTP 400", false),
        (
            SinkReply::RateLimited {
                retry_after_secs: 1,
            },
            "HTTP 429",
            true,
        ),
        (SinkReply::Status(503), "HTTP 503", true),
        (SinkReply::Redirect, "HTTP 302", false),
    ];
    for (reply, reason, tried_again) in cases {
        let live = Live::start();
        live.loki.reply(vec![reply.clone()]);
        let outcome = live.run("", &[], &live.all_hooks());
        assert_eq!(live.loki.pushes().len() > 1, tried_again, "{reply:?}");
        assert_eq!(outcome.code, 1, "{reply:?}");
        let line = outcome.run_line();
        assert_eq!(line["status"], "partial", "{reply:?}");
        let why = line["reason"].as_str().unwrap();
        assert!(
            why.starts_with("loki push failed: ") && why.contains(reason),
            "{reply:?}: {why}"
        );
        assert!(
            live.slack
                .posts("infra")
                .last()
                .unwrap()
                .contains("loki push failed")
        );
    }
}

#[test]
fn live_dry_run_from_the_env_alone_posts_nothing() {
    let live = Live::start();
    let mut env = live.all_hooks();
    env.push(("DRY_RUN".into(), "true".into()));
    let outcome = live.run("", &[], &env);
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    assert!(live.slack.requests().is_empty());
    assert_eq!(live.loki.pushes().len(), 1);
    assert_eq!(outcome.run_line()["dryRun"], true);
    assert!(
        outcome.stderr.contains(&format!(
            "dry run: nothing posted to Slack; pushing the run to Loki at {}",
            live.loki.url()
        )),
        "{}",
        outcome.stderr
    );
}

#[test]
fn engine_failure_skips_the_run() {
    let live = Live::start();
    let gator = live.dir.path().join("gator");
    std::fs::write(&gator, "#!/bin/sh\necho 'gator exploded' >&2\nexit 3\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&gator, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let work = live.dir.path().join("work");
    let outcome = live.run(
        "",
        &[
            "--engine",
            "gator",
            "--gator",
            gator.to_str().unwrap(),
            "--work",
            work.to_str().unwrap(),
        ],
        &live.all_hooks(),
    );
    assert_eq!(outcome.code, 1, "{}", outcome.stderr);
    let line = outcome.run_line();
    assert_eq!(line["status"], "skipped");
    assert_eq!(line["engine"], "gator");
    assert!(
        line["reason"].as_str().unwrap().contains("gator"),
        "{}",
        line["reason"]
    );
}

#[test]
fn foreign_files_in_the_work_dir_skip_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(work.join("in")).unwrap();
    std::fs::write(work.join("in/stale.yaml"), "kind: Pod\n").unwrap();
    let slack = SlackServer::start();
    let outcome = run(
        &[
            "run",
            "--config",
            "fixtures/demo/config.yaml",
            "--snapshot",
            "fixtures/demo/cluster",
            "--work",
            work.to_str().unwrap(),
            "--write-projection",
        ],
        &hooks(&slack, &TEAMS),
    );
    let line = outcome.run_line();
    assert_eq!(line["status"], "skipped");
    assert!(
        line["reason"].as_str().unwrap().contains("stale.yaml"),
        "{}",
        line["reason"]
    );
}

#[test]
fn config_errors_exit_2_and_name_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), None, "maxNamesPerRule: 0\n");
    let outcome = run(
        &[
            "run",
            "--config",
            config.to_str().unwrap(),
            "--snapshot",
            "fixtures/demo/cluster",
        ],
        &[],
    );
    assert_eq!(outcome.code, 2);
    assert!(
        outcome.stderr.contains("maxNamesPerRule"),
        "{}",
        outcome.stderr
    );
    let outcome = run(
        &[
            "run",
            "--config",
            "fixtures/demo/config.yaml",
            "--snapshot",
            "x",
            "--bogus",
        ],
        &[],
    );
    assert_eq!(outcome.code, 2);
}

#[test]
fn routes_explains_namespaces() {
    let outcome = run(
        &[
            "routes",
            "--config",
            "fixtures/demo/config.yaml",
            "raster-dev",
            "raster-dev2",
            "kube-system",
            "payments-prod",
        ],
        &[],
    );
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    insta::assert_snapshot!("routes_demo", outcome.stdout);
}

#[test]
fn routes_reads_the_namespaces_of_a_snapshot_and_the_cluster() {
    let from_snapshot = run(
        &[
            "routes",
            "--config",
            "fixtures/demo/config.yaml",
            "--snapshot",
            "fixtures/demo/cluster",
            "-o",
            "json",
        ],
        &[],
    );
    assert_eq!(from_snapshot.code, 0, "{}", from_snapshot.stderr);
    let document = json_document(&from_snapshot.stdout);
    let namespaces: Vec<&str> = document["namespaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["namespace"].as_str().unwrap())
        .collect();
    assert!(
        namespaces.contains(&"payments-prod") && namespaces.contains(&"dem-dev"),
        "{namespaces:?}"
    );
    assert_eq!(document["defaultTeam"], "infra");
    assert!(document["unusedPatterns"].is_array());
    // the cluster's namespaces, read as a run reads them, route the same
    let live = Live::start();
    let kubeconfig = live.api.write_kubeconfig(live.dir.path());
    let from_cluster = run(
        &[
            "routes",
            "--config",
            "fixtures/demo/config.yaml",
            "--kubeconfig",
            kubeconfig.to_str().unwrap(),
            "--context",
            "fake",
            "-o",
            "json",
        ],
        &[],
    );
    assert_eq!(from_cluster.code, 0, "{}", from_cluster.stderr);
    assert_eq!(json_document(&from_cluster.stdout), document);
}

#[test]
fn routes_warnings_go_to_stderr_and_the_table_has_a_header() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        "cluster: c\ndefaultTeam: infra\nteams:\n  - {name: web, namespaces: ['web-*']}\n  - {name: api, namespaces: [web-dev]}\nconstraintKinds: [A]\n",
    )
    .unwrap();
    let outcome = run(
        &[
            "routes",
            "--config",
            config.to_str().unwrap(),
            "web-dev",
            "x",
        ],
        &[],
    );
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    assert!(
        outcome.stderr.contains("warning: routes: "),
        "{}",
        outcome.stderr
    );
    assert!(!outcome.stdout.contains("warning"), "{}", outcome.stdout);
    assert_eq!(
        outcome.stdout,
        "NAMESPACE\tTEAM\tPATTERN\tNOTE\nweb-dev\tweb\tweb-*\talso matched, lost: `web-dev` of api\nx\tinfra\t-\tno pattern matches: default team\n"
    );
    // every row has the header's four columns
    assert!(outcome.stdout.lines().all(|l| l.split('\t').count() == 4));
}

#[test]
fn explain_prints_one_yaml_or_json_document() {
    let args = |format: &'static str| {
        [
            "explain",
            "--config",
            "fixtures/demo/config.yaml",
            "--snapshot",
            "fixtures/demo/cluster",
            "-o",
            format,
        ]
    };
    let json = run(&args("json"), &[]);
    assert_eq!(json.code, 0, "{}", json.stderr);
    let from_json = json_document(&json.stdout);
    let yaml = run(&args("yaml"), &[]);
    assert_eq!(yaml.code, 0, "{}", yaml.stderr);
    let from_yaml: Value = serde_yaml::from_str(&yaml.stdout).unwrap();
    assert_eq!(from_json, from_yaml);
    assert_eq!(from_json["rules"][0]["rule"], "K8sRequiredLabels");
}

#[test]
fn malformed_audit_status_skips_the_run_and_pushes_the_run_line_only() {
    let mut objects = demo_objects();
    for object in &mut objects {
        if object["metadata"]["name"] == "container-limits" {
            object["status"]["totalViolations"] = serde_json::json!("seven");
        }
    }
    let live = Live::with_scenario(scenario_of(objects));
    let outcome = live.run("", &[], &live.all_hooks());
    assert_eq!(outcome.code, 1);
    let line = outcome.run_line();
    assert_eq!(line["status"], "skipped");
    assert!(
        line["reason"]
            .as_str()
            .unwrap()
            .contains("status.totalViolations"),
        "{}",
        line["reason"]
    );
    let pushes = live.loki.pushes();
    assert_eq!(pushes.len(), 1);
    assert!(
        !pushes[0].contains("\"type\":\"summary\""),
        "only the run line"
    );
    assert_eq!(live.slack.teams_posted(), ["infra"]);
}

#[test]
fn audit_mismatch_beyond_the_tolerance_is_partial_and_names_the_rule() {
    let mut objects = demo_objects();
    for object in &mut objects {
        // the engine counts 7 for container-limits: 13 is 6 off, beyond max(5, 10% of 13)
        if object["metadata"]["name"] == "container-limits" {
            object["status"]["totalViolations"] = serde_json::json!(13);
        }
        // the engine counts 12 for K8sRequiredLabels, audit 15 + 2 = 17: exactly the floor 5 off
        if object["metadata"]["name"] == "require-owner-warn" {
            object["status"]["totalViolations"] = serde_json::json!(15);
        }
    }
    let live = Live::with_scenario(scenario_of(objects));
    let outcome = live.run("", &[], &live.all_hooks());
    let line = outcome.run_line();
    assert_eq!(line["status"], "partial");
    assert_eq!(
        line["reason"],
        "audit check disagrees for K8sContainerLimits: engine 7, audit 13"
    );
    assert_eq!(
        line["auditCheck"]["K8sRequiredLabels"],
        serde_json::json!({"engine": 12, "audit": 17})
    );
    assert_eq!(line["auditCheck"]["K8sReplicaLimits"], "skipped");
}

/// `run` of the policy-errors scenario (a policy that fails to evaluate on some workloads and is
/// violated by others) as a dry run writing `--out`, with `extra` arguments.
fn run_policy_errors(out_dir: &Path, extra: &[&str]) -> Outcome {
    let slack = SlackServer::start();
    let mut args = vec![
        "run",
        "--config",
        "fixtures/policy-errors/config.yaml",
        "--snapshot",
        "fixtures/policy-errors/cluster",
        "--dry-run",
        "--out",
        out_dir.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let outcome = run(&args, &hooks(&slack, &TEAMS));
    assert!(slack.requests().is_empty(), "a dry run posts nothing");
    outcome
}

/// Every Loki line of `loki.json` (its team label, then the line with sorted keys) without what
/// comes from the clock, in push order (streams sorted by labels).
fn loki_lines(out_dir: &Path) -> String {
    let push: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("loki.json")).unwrap()).unwrap();
    let mut lines = Vec::new();
    for stream in push["streams"].as_array().unwrap() {
        for value in stream["values"].as_array().unwrap() {
            let mut line: BTreeMap<String, Value> =
                serde_json::from_str(value[1].as_str().unwrap()).unwrap();
            for clock in ["runId", "startedAt", "finishedAt"] {
                line.remove(clock);
            }
            lines.push(format!(
                "{} {}",
                stream["stream"]["team"].as_str().unwrap(),
                serde_json::to_string(&line).unwrap()
            ));
        }
    }
    lines.join("\n")
}

#[test]
fn policy_errors_are_counted_apart_and_told_to_the_default_team() {
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("out");
    let outcome = run_policy_errors(&out_dir, &[]);
    assert_eq!(outcome.code, 0, "{}\n{}", outcome.stdout, outcome.stderr);
    let run_line = outcome.run_line();
    // the engine worked: the run is ok although a policy erred
    assert_eq!(run_line["status"], "ok");
    assert_eq!(run_line["reason"], "");
    // Gatekeeper's audit counts a policy error in totalViolations: 4 violations + 5 errors
    assert_eq!(
        run_line["auditCheck"]["K8sOwner"],
        serde_json::json!({"engine": 9, "audit": 9})
    );
    assert!(
        outcome
            .stderr
            .contains("audit check K8sOwner: engine 9 (5 of them policy errors), audit 9"),
        "{}",
        outcome.stderr
    );
    insta::assert_snapshot!("policy_errors_stdout", normalize(&outcome.stdout));
    let read = |file: &str| std::fs::read_to_string(out_dir.join(file)).unwrap();
    // payments: `N policy errors` under the rule, the erring workloads never listed
    let payments = read("slack/payments.json");
    insta::assert_snapshot!(
        "policy_errors_payments_digest",
        normalize_digest(&payments, &run_line)
    );
    for erring in ["worker", "checkout"] {
        assert!(!payments.contains(&format!("`{erring}`")), "{payments}");
    }
    // raster's only finding is an error: nothing for raster to fix, so no digest
    assert!(!out_dir.join("slack/raster.json").exists());
    // the default team hears of every erring Constraint, in an ok run
    let problems = read("slack/infra.problems.json");
    insta::assert_snapshot!(
        "policy_errors_problems",
        normalize_digest(&problems, &run_line)
    );
    // Loki: errors counted on summary/team_total/run lines and as policy_error lines; never a
    // violation line, never a category
    let lines = loki_lines(&out_dir);
    insta::assert_snapshot!("policy_errors_loki_lines", lines);
    // (every summary line lists `other`, at 0: no error text is counted in it)
    assert!(!lines.contains("\"category\":\"other\""), "{lines}");
    assert!(
        !(1..10).any(|n| lines.contains(&format!("\"other\":{n}"))),
        "{lines}"
    );
    for line in lines
        .lines()
        .filter(|l| l.contains("\"type\":\"violation\""))
    {
        assert!(line.contains("has no owner"), "{line}");
    }
}

#[test]
fn policy_errors_from_gator_are_counted_as_from_the_embedded_engine() {
    let dir = tempfile::tempdir().unwrap();
    let embedded_out = dir.path().join("embedded");
    let embedded = run_policy_errors(&embedded_out, &[]);
    let embedded_line = embedded.run_line();
    let embedded_digest = normalize_digest(
        &std::fs::read_to_string(embedded_out.join("slack/payments.json")).unwrap(),
        &embedded_line,
    );
    // a stand-in gator printing what gator v3.21.1 printed for this scenario's projection
    let recorded = root().join("crates/gator-runner/tests/data/gator-policy-errors.json");
    let gator = dir.path().join("stand-in-gator");
    std::fs::write(&gator, format!("#!/bin/sh\ncat '{}'\n", recorded.display())).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&gator, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    for engine in ["gator", "both"] {
        let out_dir = dir.path().join(engine);
        let outcome = run_policy_errors(
            &out_dir,
            &["--engine", engine, "--gator", gator.to_str().unwrap()],
        );
        assert_eq!(outcome.code, 0, "{engine}: {}", outcome.stderr);
        let line = outcome.run_line();
        assert_eq!(line["status"], "ok", "{engine}");
        assert_eq!(line["auditCheck"], embedded_line["auditCheck"], "{engine}");
        let digest = normalize_digest(
            &std::fs::read_to_string(out_dir.join("slack/payments.json")).unwrap(),
            &line,
        );
        assert_eq!(digest, embedded_digest, "{engine}: the same counts");
        assert!(!out_dir.join("slack/raster.json").exists(), "{engine}");
        let problems = std::fs::read_to_string(out_dir.join("slack/infra.problems.json")).unwrap();
        assert!(
            problems.contains(
                "• *K8sOwner* `owner-required`: 4 objects, first `Deployment payments-dev/worker`: "
            ),
            "{engine}: {problems}"
        );
    }
}

/// A run over the demo snapshot with a Loki capture server and every team's webhook.
fn snapshot_run(
    dir: &Path,
    loki: &LokiServer,
    slack: &SlackServer,
    snapshot: &str,
    extra: &[&str],
) -> Outcome {
    let config = write_config(dir, Some(&loki.url()), "");
    let mut args = vec![
        "run",
        "--config",
        config.to_str().unwrap(),
        "--snapshot",
        snapshot,
    ];
    args.extend_from_slice(extra);
    run(&args, &hooks(slack, &TEAMS))
}

#[test]
fn an_unwritable_work_dir_skips_the_run_with_a_named_reason() {
    let dir = tempfile::tempdir().unwrap();
    let (loki, slack) = (LokiServer::start(), SlackServer::start());
    // A work dir that cannot be created, for root too: its parent is a regular file.
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, "x").unwrap();
    let work = file.join("work");
    let outcome = snapshot_run(
        dir.path(),
        &loki,
        &slack,
        "fixtures/demo/cluster",
        &["--work", work.to_str().unwrap(), "--write-projection"],
    );
    assert_eq!(outcome.code, 1, "{}", outcome.stderr);
    let line = outcome.run_line();
    assert_eq!(line["status"], "skipped");
    let reason = line["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("failed to write the projection: creating ")
            && reason.contains(&work.join("in").display().to_string()),
        "{reason}"
    );
    assert!(
        slack.teams_posted().iter().all(|t| t == "infra"),
        "only the problems message"
    );
    assert_eq!(loki.pushes().len(), 1, "the run line reaches Loki");
}

#[test]
fn a_skipped_reason_naming_a_secret_path_is_redacted() {
    let dir = tempfile::tempdir().unwrap();
    let (loki, slack) = (LokiServer::start(), SlackServer::start());
    // A snapshot path that spells a webhook's path: the reason names it, the run line must not.
    let secret_path = SlackServer::webhook_path("payments");
    let snapshot = format!("{}{secret_path}/cluster", dir.path().display());
    // a snapshot that does not exist is a usage error, its path redacted too
    let missing = snapshot_run(dir.path(), &loki, &slack, &snapshot, &[]);
    assert_eq!(missing.code, 2, "{}", missing.stderr);
    assert!(missing.stderr.contains("[redacted]"), "{}", missing.stderr);
    assert!(
        !missing
            .stderr
            .contains(secret_path.rsplit('/').next().unwrap())
    );
    // one that cannot be read is a skipped run
    std::fs::create_dir_all(&snapshot).unwrap();
    std::fs::write(format!("{snapshot}/broken.yaml"), "kind: [unclosed\n").unwrap();
    let outcome = snapshot_run(dir.path(), &loki, &slack, &snapshot, &[]);
    assert_eq!(outcome.code, 1, "{}", outcome.stderr);
    let line = outcome.run_line();
    assert_eq!(line["status"], "skipped");
    let reason = line["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("failed to read the snapshot: ") && reason.contains("[redacted]"),
        "{reason}"
    );
    let token = secret_path.rsplit('/').next().unwrap();
    let mut everything = format!("{}\n{}\n", outcome.stdout, outcome.stderr);
    for request in slack.requests() {
        everything.push_str(&String::from_utf8_lossy(&request.body));
    }
    for push in loki.pushes() {
        everything.push_str(&push);
    }
    assert!(
        !everything
            .to_ascii_lowercase()
            .contains(&token.to_ascii_lowercase()),
        "{everything}"
    );
    assert_eq!(loki.pushes().len(), 1);
}

/// Runs the binary with stdout on a pipe whose reader is already gone.
fn run_into_a_closed_pipe(args: &[&str], env: &[(String, String)]) -> (i32, String) {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let output = command(args, env)
        .stdout(writer)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn a_closed_stdout_ends_the_output_quietly() {
    let slack = SlackServer::start();
    let config = demo_dir().join("config.yaml");
    let config = config.to_str().unwrap();
    let (code, stderr) = run_into_a_closed_pipe(&["routes", "--config", config], &[]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
    let (code, stderr) = run_into_a_closed_pipe(
        &[
            "run",
            "--config",
            config,
            "--snapshot",
            "fixtures/demo/cluster",
            "--dry-run",
        ],
        &hooks(&slack, &TEAMS),
    );
    assert_eq!(code, 0, "the run's own exit code: {stderr}");
    assert!(
        !stderr.contains("internal error") && !stderr.contains("panicked"),
        "{stderr}"
    );
    // eval and verify print gator-style output that is often piped into `head`.
    let (code, stderr) = run_into_a_closed_pipe(
        &[
            "eval",
            "-f",
            "fixtures/gatekeeper/podexpansion",
            "-o",
            "text",
        ],
        &[],
    );
    assert_eq!(code, 1, "eval's own exit code (violations found): {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let (code, stderr) = run_into_a_closed_pipe(&["verify", "fixtures/gatekeeper/..."], &[]);
    assert_eq!(code, 0, "verify's own exit code: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

/// `text` with what the clock wrote masked: `hh:mm:ss` times with their fraction of a second, and
/// runs of 6 or more digits (Loki's nanosecond timestamps, the date and time of a run id).
fn mask_clock(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        let digits = bytes[i..].iter().take_while(|b| b.is_ascii_digit()).count();
        let is_time = bytes.len() >= i + 8
            && bytes[i..i + 8].iter().enumerate().all(|(at, b)| {
                if at % 3 == 2 {
                    *b == b':'
                } else {
                    b.is_ascii_digit()
                }
            });
        if is_time {
            // The time and its fraction of a second, however many digits it has.
            out.push('#');
            i += 8;
            if bytes.get(i) == Some(&b'.') {
                i += 1 + bytes[i + 1..]
                    .iter()
                    .take_while(|b| b.is_ascii_digit())
                    .count();
            }
        } else if digits >= 6 {
            out.push('#');
            i += digits;
        } else {
            let c = text[i..].chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// Every `--out` file of a run, read with the run id and the clock's figures masked.
fn out_files(dir: &Path) -> BTreeMap<String, String> {
    let mut files = BTreeMap::new();
    for sub in ["", "slack"] {
        for entry in std::fs::read_dir(dir.join(sub)).unwrap() {
            let path = entry.unwrap().path();
            if path.is_file() {
                let name = path.strip_prefix(dir).unwrap().display().to_string();
                files.insert(
                    name,
                    mask_clock(&normalize(&std::fs::read_to_string(&path).unwrap())),
                );
            }
        }
    }
    files
}

#[test]
fn a_live_run_read_a_page_at_a_time_reports_what_its_saved_snapshot_reports() {
    let live = Live::start();
    let (live_out, saved) = (
        live.dir.path().join("live"),
        live.dir.path().join("saved.tar.gz"),
    );
    let outcome = live.run(
        "",
        &[
            "--out",
            live_out.to_str().unwrap(),
            "--save-snapshot",
            saved.to_str().unwrap(),
        ],
        &live.all_hooks(),
    );
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    let (loki, slack) = (LokiServer::start(), SlackServer::start());
    let replay_out = live.dir.path().join("replay");
    let replayed = snapshot_run(
        live.dir.path(),
        &loki,
        &slack,
        saved.to_str().unwrap(),
        &["--out", replay_out.to_str().unwrap()],
    );
    assert_eq!(replayed.code, 0, "{}", replayed.stderr);
    let (from_live, from_snapshot) = (out_files(&live_out), out_files(&replay_out));
    assert!(from_live.len() > 3, "{:?}", from_live.keys());
    assert_eq!(from_live, from_snapshot);
    assert!(
        from_live["loki.json"].contains("\"violation\\\""),
        "violations are reported"
    );
}

#[test]
fn a_pod_only_rule_flags_workloads_through_their_pods() {
    let live = Live::start();
    let snapshot = live.dir.path().join("saved.tar.gz");
    let outcome = live.run(
        "",
        &["--save-snapshot", snapshot.to_str().unwrap(), "-o", "json"],
        &live.all_hooks(),
    );
    assert_eq!(outcome.code, 0, "{}\n{}", outcome.stdout, outcome.stderr);
    let document = json_document(&outcome.stdout);
    assert_eq!(document["run"]["status"], "ok");
    // K8sPodRunAsNonRoot matches only Pods: it sees the payments-prod Deployment and
    // StatefulSet through the demo's ExpansionTemplate (api runs as non-root)
    let payments = document["digests"]["payments"].to_string();
    assert!(
        payments.contains("• *K8sPodRunAsNonRoot*: 2 — `checkout`, `statefulset/ledger`"),
        "{payments}"
    );
    assert!(
        outcome.stderr.contains("1 expansion templates"),
        "{}",
        outcome.stderr
    );
    // Gatekeeper's audit counts real Pods: the rule's audit check is skipped, saying why
    assert_eq!(
        document["run"]["auditCheck"]["K8sPodRunAsNonRoot"],
        "skipped"
    );
    assert!(
        outcome.stderr.contains(
            "audit check K8sPodRunAsNonRoot: skipped (its findings come through ExpansionTemplates, \
             and Gatekeeper's audit reviews real Pods, not expansions)"
        ),
        "{}",
        outcome.stderr
    );
    assert!(
        document["problems"].is_null(),
        "no warning: the rule is covered"
    );
    // the saved snapshot holds the ExpansionTemplate: the replay finds the same
    let replayed = replay(&snapshot, &live.slack);
    // The two runs read their history from different places, and may start in different
    // seconds (their run ids); the findings are what must agree.
    let findings = |text: &serde_json::Value| {
        mask_run_ids(text.as_str().unwrap_or_default())
            .replace(" Change unknown (history unavailable).", "")
            .replace(" Change unknown (first run).", "")
    };
    assert_eq!(
        findings(&replayed["digests"]["payments"]["text"]),
        findings(&document["digests"]["payments"]["text"])
    );
}

/// Copies the demo cluster into `to`, leaving out the files named `skip`.
fn copy_demo_cluster(to: &Path, skip: &str) {
    let mut dirs = vec![(demo_dir().join("cluster"), to.to_path_buf())];
    while let Some((from, to)) = dirs.pop() {
        std::fs::create_dir_all(&to).unwrap();
        for entry in std::fs::read_dir(&from).unwrap() {
            let entry = entry.unwrap();
            if entry.path().is_dir() {
                dirs.push((entry.path(), to.join(entry.file_name())));
            } else if entry.file_name() != skip {
                std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
            }
        }
    }
}

#[test]
fn a_rule_that_cannot_flag_a_workload_is_told_to_the_default_team() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = dir.path().join("cluster");
    copy_demo_cluster(&cluster, "expansion.yaml");
    let (loki, slack) = (LokiServer::start(), SlackServer::start());
    let outcome = snapshot_run(dir.path(), &loki, &slack, cluster.to_str().unwrap(), &[]);
    assert_eq!(outcome.code, 0, "{}\n{}", outcome.stdout, outcome.stderr);
    assert_eq!(
        outcome.run_line()["status"],
        "ok",
        "a warning keeps the run ok"
    );
    let warning = "K8sPodRunAsNonRoot matches only Pod; no ExpansionTemplate covers Deployment, \
                   StatefulSet: this rule cannot flag a workload";
    let problems = slack.posts("infra");
    assert!(problems.iter().any(|p| p.contains(warning)), "{problems:?}");
    assert!(
        outcome.stderr.contains(&format!("warning: {warning}")),
        "{}",
        outcome.stderr
    );
}

#[test]
fn explain_says_how_each_rule_sees_the_workloads() {
    let outcome = run(
        &[
            "explain",
            "--config",
            "fixtures/demo/config.yaml",
            "--snapshot",
            "fixtures/demo/cluster",
        ],
        &[],
    );
    assert_eq!(outcome.code, 0, "{}", outcome.stderr);
    assert!(
        outcome.stdout.contains(
            "  Deployment: through ExpansionTemplate expand-deployments-statefulsets (as Pod)"
        ),
        "{}",
        outcome.stdout
    );
}

#[test]
fn mutators_beside_expansion_templates_are_told_to_the_default_team() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = dir.path().join("cluster");
    copy_demo_cluster(&cluster, "-");
    std::fs::write(
        cluster.join("mutators.yaml"),
        "apiVersion: mutations.gatekeeper.sh/v1\nkind: Assign\nmetadata:\n  name: pods-non-root\n\
         spec:\n  applyTo: [{groups: [''], kinds: [Pod], versions: [v1]}]\n  location: \
         spec.securityContext.runAsNonRoot\n  parameters: {assign: {value: true}}\n",
    )
    .unwrap();
    let (loki, slack) = (LokiServer::start(), SlackServer::start());
    let outcome = snapshot_run(dir.path(), &loki, &slack, cluster.to_str().unwrap(), &[]);
    assert_eq!(outcome.code, 0, "{}\n{}", outcome.stdout, outcome.stderr);
    assert_eq!(outcome.run_line()["status"], "ok");
    let problems = slack.posts("infra");
    assert!(
        problems.iter().any(|p| p.contains(
            "the cluster has 1 Gatekeeper mutator (Assign pods-non-root): Gatekeeper applies them"
        )),
        "{problems:?}"
    );
}

/// The demo snapshot plus the dual-engine `celreplicas` fixture template and a Constraint of
/// it, and the demo config reporting on that kind too.
fn demo_with_cel_template(dir: &Path, extra_config: &str) -> (PathBuf, PathBuf) {
    let cluster = dir.join("cluster");
    std::fs::create_dir_all(cluster.join("templates")).unwrap();
    for file in ["constraints.yaml", "namespaces.yaml", "workloads.yaml"] {
        std::fs::copy(demo_dir().join("cluster").join(file), cluster.join(file)).unwrap();
    }
    for entry in std::fs::read_dir(demo_dir().join("cluster/templates")).unwrap() {
        let path = entry.unwrap().path();
        std::fs::copy(
            &path,
            cluster.join("templates").join(path.file_name().unwrap()),
        )
        .unwrap();
    }
    std::fs::copy(
        root().join("fixtures/gatekeeper/celreplicas/template.yaml"),
        cluster.join("templates/k8scelreplicalimits.yaml"),
    )
    .unwrap();
    std::fs::write(
        cluster.join("constraints-cel.yaml"),
        "apiVersion: constraints.gatekeeper.sh/v1beta1\nkind: K8sCelReplicaLimits\nmetadata:\n  name: two-to-five\nspec:\n  match:\n    kinds:\n      - apiGroups: [\"apps\"]\n        kinds: [\"Deployment\"]\n  parameters:\n    min: 2\n    max: 5\n",
    )
    .unwrap();
    let config = write_config(dir, None, extra_config);
    let text = std::fs::read_to_string(&config).unwrap().replace(
        "constraintKinds:\n",
        "constraintKinds:\n  - K8sCelReplicaLimits\n",
    );
    std::fs::write(&config, text).unwrap();
    (config, cluster)
}

/// The `violation` lines of the Loki body `--out` wrote for `rule`, as (namespace, name, message).
fn violations_of(out: &Path, rule: &str) -> Vec<(String, String, String)> {
    let loki: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("loki.json")).unwrap()).unwrap();
    let mut found: Vec<(String, String, String)> = loki["streams"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["stream"]["type"] == "violation")
        .flat_map(|s| s["values"].as_array().unwrap().iter())
        .map(|pair| serde_json::from_str::<Value>(pair[1].as_str().unwrap()).unwrap())
        .filter(|line| line["rule"] == rule)
        .map(|line| {
            let text = |k: &str| line[k].as_str().unwrap_or_default().to_string();
            (text("namespace"), text("name"), text("message"))
        })
        .collect();
    found.sort();
    found
}

#[test]
fn run_reports_a_dual_engine_template_by_its_cel_and_by_its_rego_alike() {
    let slack = SlackServer::start();
    let mut reported = Vec::new();
    for extra in ["", "k8sNativeValidation: false\n"] {
        let dir = tempfile::tempdir().unwrap();
        let (config, cluster) = demo_with_cel_template(dir.path(), extra);
        let out = dir.path().join("out");
        let outcome = run(
            &[
                "run",
                "--config",
                config.to_str().unwrap(),
                "--snapshot",
                cluster.to_str().unwrap(),
                "--dry-run",
                "--out",
                out.to_str().unwrap(),
            ],
            &hooks(&slack, &TEAMS),
        );
        assert_eq!(outcome.code, 0, "{}\n{}", outcome.stdout, outcome.stderr);
        reported.push(violations_of(&out, "K8sCelReplicaLimits"));
    }
    // The demo's Deployments with 1 and 12 replicas are outside 2..=5.
    assert_eq!(reported[0].len(), 3, "{:?}", reported[0]);
    assert!(
        reported[0]
            .iter()
            .any(|(_, _, msg)| msg == "replicas must be between 2 and 5, not 12"),
        "{:?}",
        reported[0]
    );
    assert_eq!(reported[0], reported[1], "CEL (left) and Rego (right)");
}

#[test]
fn run_ids_are_masked_wherever_they_stand() {
    assert_eq!(
        mask_run_ids(
            "report (run 20261201T235545Z).\n…?var-run=20261201T235544Z é 2026120XT235544Z"
        ),
        "report (run <RUN_ID>).\n…?var-run=<RUN_ID> é 2026120XT235544Z"
    );
}

/// The demo snapshot's dry run (`-o FORMAT`), as `script` runs it on a pseudo-terminal (stdout
/// to /dev/null): what the terminal got on stderr. `None` without util-linux's `script`.
fn on_a_terminal(format: &str) -> Option<String> {
    let bin = env!("CARGO_BIN_EXE_workload-report");
    let line = format!(
        "'{bin}' run --config fixtures/demo/config.yaml --snapshot fixtures/demo/cluster --dry-run -o {format} >/dev/null"
    );
    let output = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("TERM", "xterm")
        .current_dir(root())
        .output()
        .ok()?;
    Some(String::from_utf8_lossy(&output.stdout).into_owned())
}

#[test]
fn a_piped_run_shows_no_progress() {
    for format in ["text", "json"] {
        let outcome = run(
            &[
                "run",
                "--config",
                "fixtures/demo/config.yaml",
                "--snapshot",
                "fixtures/demo/cluster",
                "--dry-run",
                "-o",
                format,
            ],
            &[],
        );
        assert!(
            outcome.stderr.contains("read 15 workloads"),
            "the log lines are there: {}",
            outcome.stderr
        );
        assert!(
            !outcome.stderr.contains(['\x1b', '\r']) && !outcome.stderr.contains("listed so far"),
            "no progress in a pipe (-o {format}): {:?}",
            outcome.stderr
        );
    }
}

#[test]
fn a_terminal_shows_progress_and_clears_it() {
    let Some(terminal) = on_a_terminal("text") else {
        eprintln!("skipped: no `script` (util-linux) to run on a pseudo-terminal");
        return;
    };
    assert!(
        terminal.contains("reviewing: reviewed 15 of 15 workloads listed so far"),
        "{terminal:?}"
    );
    let last = terminal.rfind("listed so far").unwrap();
    let after = &terminal[last..];
    let cleared = after.find("\x1b[2K").expect("the progress line is cleared");
    assert!(
        after[cleared..].contains("history unavailable"),
        "the run's log comes after the progress was cleared: {after:?}"
    );
    let json = on_a_terminal("json").unwrap();
    assert!(json.contains("read 15 workloads"), "{json:?}");
    assert!(
        !json.contains("listed so far") && !json.contains('\x1b'),
        "-o json shows no progress, also on a terminal: {json:?}"
    );
}
