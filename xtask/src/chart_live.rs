//! `cargo xtask chart`, against real servers: the chart rendered for the demo report (every
//! workload kind, so the ClusterRole lists every resource it can) is installed into a real
//! kube-apiserver holding the demo cluster, and the report runs as the chart's ServiceAccount,
//! pushing to a real Loki.
//!
//! - With exactly the ClusterRole's rights the run is `ok` and reports what the snapshot reports
//!   ([`check`]); the dashboard's and the alert rules' queries read that run's numbers back from
//!   Loki (`chart_queries`).
//! - Without any one resource (or template name) of the ClusterRole the run is `skipped`, naming
//!   the 403 of that resource (`chart_rbac`), and the failed-run alert then counts those runs.
//!
//! The servers come from `test_support::real` (`$REAL_SERVERS_DIR` or `../shared/tools`); when
//! they are missing this part says so loudly and is skipped, or fails under `CI=true`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use team_routing::{Routes, TeamSpec};
use test_support::real::tools::{self, Extracted, Tool};
use test_support::real::{RealKube, RealLoki, read_objects};

use crate::chart::Release;
use crate::{chart_queries, chart_rbac, util};

/// The name of the render case checked here.
pub(crate) const CASE: &str = "live";
/// The Loki tenant of the live config (Grafana's datasource would send the same header).
pub(crate) const TENANT: &str = "platform";
const DEMO_CONFIG: &str = "fixtures/demo/config.yaml";
const DEMO_CLUSTER: &str = "fixtures/demo/cluster";

/// The values of the live case: the demo report config reading every workload kind, with a
/// Loki tenant, alerts and the dashboard on.
pub(crate) fn values(root: &Path) -> Result<Value> {
    let text = std::fs::read_to_string(root.join(DEMO_CONFIG))?;
    let mut config: Value = serde_yaml::from_str(&text).context("the demo config")?;
    config["workloadKinds"] = json!([
        "Deployment",
        "StatefulSet",
        "DaemonSet",
        "ReplicaSet",
        "Job",
        "CronJob"
    ]);
    // The URL is the in-cluster one a release would have; runs here override it by LOKI_URL.
    config["loki"]["url"] = json!("http://loki-gateway.monitoring:80");
    config["loki"]["tenant"] = json!(TENANT);
    Ok(json!({
        "image": {"repository": "registry.example/workload-report"},
        "report": {"enabled": true, "webhooksSecret": "workload-report-webhooks", "config": config},
        "alerts": {"lokiDatasourceUid": "loki", "prometheusDatasourceUid": "prometheus"},
        "dashboard": {"enabled": true, "namespace": "monitoring"}
    }))
}

/// Runs every live check on the rendered `release`, or skips them loudly when the servers are
/// missing (an error under `CI=true`).
pub(crate) fn check(root: &Path, release: &Release) -> Result<()> {
    let Some((kube_tools, loki_tools)) = servers()? else {
        return Ok(());
    };
    let started = std::time::Instant::now();
    let installed = Installed::new(root, release, &kube_tools)?;
    let loki = RealLoki::start(&loki_tools);
    let report = Report::new(&installed, &loki)?;

    let ok = report.run("ok")?;
    ok.expect(0, "ok")?;
    let facts = chart_queries::RunFacts::from_out(&ok.out)?;
    let offline = report.run_snapshot(&root.join(DEMO_CLUSTER))?;
    offline.expect(0, "of the demo snapshot")?;
    let expected = chart_queries::RunFacts::from_out(&offline.out)?;
    if !facts.same_counts(&expected) || facts.total() == 0.0 {
        bail!(
            "the run as the chart's ServiceAccount does not report what the demo snapshot \
             reports: {} against {} violations",
            facts.total(),
            expected.total()
        );
    }
    eprintln!(
        "chart: the report ran as {} with exactly the chart's ClusterRole: ok, {} violations \
         as in the demo snapshot",
        installed.user,
        facts.total()
    );
    chart_queries::check_dashboard(&loki, release, &facts)?;
    chart_queries::check_alerts(&loki, release, &facts, 1, 0)?;

    let skipped = chart_rbac::check_minimal(&installed, &report)?;
    chart_queries::check_alerts(&loki, release, &facts, 1 + skipped, skipped)?;
    eprintln!(
        "chart: the checks against real servers took {:.1}s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The real kube and Loki tools, or `None` after the loud line (an error under `CI=true`).
fn servers() -> Result<Option<(Extracted, Extracted)>> {
    let located: Vec<_> = [Tool::Kube, Tool::Loki]
        .into_iter()
        .map(|tool| (tool, tools::locate(tool)))
        .collect();
    let missing: Vec<(Tool, String)> = located
        .iter()
        .filter_map(|(tool, found)| found.as_ref().err().map(|why| (*tool, why.clone())))
        .collect();
    if !missing.is_empty() {
        let line = tools::skip_line(
            "the chart's RBAC and dashboard checks against real servers",
            &missing,
        );
        if tools::in_ci() {
            bail!("{line}");
        }
        eprintln!("{line}");
        return Ok(None);
    }
    let mut extracted = Vec::new();
    for (_, found) in located {
        let found = found.map_err(anyhow::Error::msg)?;
        extracted.push(tools::extract(&found).map_err(anyhow::Error::msg)?);
    }
    let loki = extracted.pop().context("loki")?;
    let kube = extracted.pop().context("kube")?;
    Ok(Some((kube, loki)))
}

/// The demo cluster in a real API server with the chart's ServiceAccount, ClusterRole and
/// ClusterRoleBinding applied exactly as rendered.
pub(crate) struct Installed {
    pub(crate) kube: RealKube,
    pub(crate) role: Value,
    pub(crate) user: String,
    pub(crate) groups: Vec<String>,
    pub(crate) config: Value,
    kubeconfig: PathBuf,
    dir: tempfile::TempDir,
}

impl Installed {
    fn new(root: &Path, release: &Release, tools: &Extracted) -> Result<Installed> {
        let only = |kind: &str| -> Result<&Value> {
            let found: Vec<&Value> = release
                .objects
                .iter()
                .filter(|o| o["kind"] == kind)
                .collect();
            match found.as_slice() {
                [one] => Ok(*one),
                other => bail!("the live render has {} {kind} objects", other.len()),
            }
        };
        let account = only("ServiceAccount")?;
        let role = only("ClusterRole")?.clone();
        let binding = only("ClusterRoleBinding")?;
        let config_map = release
            .objects
            .iter()
            .find(|o| o["kind"] == "ConfigMap" && o["data"]["config.yaml"].is_string())
            .context("the live render has no config ConfigMap")?;
        let config: Value = serde_yaml::from_str(
            config_map["data"]["config.yaml"]
                .as_str()
                .unwrap_or_default(),
        )
        .context("the rendered config.yaml")?;

        let kube = RealKube::start(tools);
        kube.load(&read_objects(&root.join(DEMO_CLUSTER)));
        let namespace = account["metadata"]["namespace"]
            .as_str()
            .context("the ServiceAccount has no namespace")?;
        let name = account["metadata"]["name"].as_str().context("no name")?;
        kube.apply(
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}),
        );
        for object in [account, &role, binding] {
            kube.apply(object);
        }
        let token = kube.service_account_token(namespace, name);
        let dir = tempfile::tempdir()?;
        let kubeconfig = kube.write_kubeconfig(dir.path(), &token);
        std::fs::write(
            dir.path().join("config.yaml"),
            config_map["data"]["config.yaml"]
                .as_str()
                .unwrap_or_default(),
        )?;
        Ok(Installed {
            kube,
            role,
            user: format!("system:serviceaccount:{namespace}:{name}"),
            groups: vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{namespace}"),
                "system:authenticated".into(),
            ],
            config,
            kubeconfig,
            dir,
        })
    }
}

/// Runs the report binary with the rendered config, as the installed ServiceAccount.
pub(crate) struct Report {
    binary: PathBuf,
    env: BTreeMap<String, String>,
    config: PathBuf,
    kubeconfig: PathBuf,
    dir: PathBuf,
}

/// One finished run.
pub(crate) struct Run {
    pub(crate) code: Option<i32>,
    pub(crate) run_line: Value,
    pub(crate) out: PathBuf,
    output: String,
}

impl Run {
    /// Fails with the run's output unless it exited `code`.
    pub(crate) fn expect(&self, code: i32, what: &str) -> Result<()> {
        if self.code != Some(code) {
            bail!(
                "run {what}: exit {:?}, expected {code}:\n{}",
                self.code,
                self.output
            );
        }
        Ok(())
    }
}

impl Report {
    fn new(installed: &Installed, loki: &RealLoki) -> Result<Report> {
        util::cargo(&["build", "-q", "--locked", "-p", "workload-report"])?;
        let binary = std::env::current_exe()?
            .parent()
            .context("xtask has a folder")?
            .join("workload-report");
        let mut env = BTreeMap::from([
            (
                "PATH".to_string(),
                std::env::var("PATH").unwrap_or_default(),
            ),
            ("LOKI_URL".to_string(), loki.url()),
        ]);
        for variable in webhook_variables(&installed.config)? {
            env.insert(
                variable,
                "https://hooks.slack.com/services/T0/B0/dry-run".into(),
            );
        }
        Ok(Report {
            binary,
            env,
            config: installed.dir.path().join("config.yaml"),
            kubeconfig: installed.kubeconfig.clone(),
            dir: installed.dir.path().to_path_buf(),
        })
    }

    /// A dry run against the cluster, pushing to Loki, with `--out <dir>/<name>`.
    pub(crate) fn run(&self, name: &str) -> Result<Run> {
        let kubeconfig = self.kubeconfig.display().to_string();
        self.run_with(name, &["--kubeconfig", &kubeconfig], None)
    }

    /// A dry run of a snapshot, pushing to a loopback fake so the real Loki holds the cluster's
    /// runs only.
    fn run_snapshot(&self, snapshot: &Path) -> Result<Run> {
        let snapshot = snapshot.display().to_string();
        let fake = test_support::loki::LokiServer::start();
        self.run_with("snapshot", &["--snapshot", &snapshot], Some(&fake.url()))
    }

    /// A dry run from `source`, pushing to the real Loki or to `loki` when given.
    fn run_with(&self, name: &str, source: &[&str], loki: Option<&str>) -> Result<Run> {
        let out = self.dir.join(name);
        let mut command = Command::new(&self.binary);
        command
            .arg("run")
            .arg("--config")
            .arg(&self.config)
            .args(source)
            .args(["--dry-run", "-o", "json", "--out"])
            .arg(&out)
            .env_clear()
            .envs(&self.env);
        if let Some(url) = loki {
            command.env("LOKI_URL", url);
        }
        let output = command
            .output()
            .with_context(|| format!("failed to run {}", self.binary.display()))?;
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let text = format!("{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
        // `-o json` prints the report document, then the run line as the last line.
        let document: Value = serde_json::Deserializer::from_str(&stdout)
            .into_iter::<Value>()
            .next()
            .transpose()
            .ok()
            .flatten()
            .with_context(|| format!("run {name} printed no JSON:\n{text}"))?;
        Ok(Run {
            code: output.status.code(),
            run_line: document["run"].clone(),
            out,
            output: text,
        })
    }
}

/// The `<TEAM>_WEBHOOK` variables the config needs (the default team and every team but
/// `silenced`), by team-routing's rule.
fn webhook_variables(config: &Value) -> Result<Vec<String>> {
    let teams: Vec<TeamSpec> =
        serde_json::from_value(config["teams"].clone()).context("the rendered config's teams")?;
    let default_team = config["defaultTeam"].as_str().unwrap_or_default();
    let routes = Routes::new(teams, default_team).context("the rendered config's teams")?;
    Ok(routes
        .webhook_vars()
        .into_iter()
        .map(|(_, variable)| variable)
        .collect())
}
