//! The demo cluster in a real kube-apiserver with the chart's ServiceAccount, ClusterRole and
//! ClusterRoleBinding applied exactly as rendered, a real Loki, and the report binary run with
//! the rendered config as that ServiceAccount.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use system_tests::release::Release;
use system_tests::workspace;
use system_tests::{binary, chart};
use test_support::real::{RealKube, RealLoki, Tool, read_objects, require};

/// The demo cluster, from the workspace root.
pub(crate) const DEMO_CLUSTER: &str = "fixtures/demo/cluster";

/// The servers with the chart's RBAC installed, and what runs the report against them.
pub(crate) struct Installed {
    pub(crate) kube: RealKube,
    pub(crate) loki: RealLoki,
    pub(crate) role: Value,
    pub(crate) user: String,
    pub(crate) groups: Vec<String>,
    env: BTreeMap<String, String>,
    kubeconfig: PathBuf,
    dir: tempfile::TempDir,
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

impl Installed {
    /// Starts the servers and installs `release`'s RBAC, or `None` after the loud line when a
    /// server's tarball is missing (a failure under `CI=true`).
    pub(crate) fn start(release: &Release, test: &str) -> Result<Option<Installed>> {
        let Some(kube_tools) = require(Tool::Kube, test) else {
            return Ok(None);
        };
        let Some(loki_tools) = require(Tool::Loki, test) else {
            return Ok(None);
        };
        let account = only(release, "ServiceAccount")?;
        let role = only(release, "ClusterRole")?.clone();
        let binding = only(release, "ClusterRoleBinding")?;
        let config_text = release.config_map_with("config.yaml")["data"]["config.yaml"]
            .as_str()
            .context("the live render has no config ConfigMap")?;
        let config: Value =
            serde_yaml::from_str(config_text).context("the rendered config.yaml")?;

        let kube = RealKube::start(&kube_tools);
        kube.load(&read_objects(&workspace::root().join(DEMO_CLUSTER)));
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
        std::fs::write(dir.path().join("config.yaml"), config_text)?;
        let loki = RealLoki::start(&loki_tools);
        let mut env = BTreeMap::from([("LOKI_URL".to_string(), loki.url())]);
        for variable in chart::webhook_vars(&config)? {
            env.insert(
                variable,
                "https://hooks.slack.com/services/T0/B0/dry-run".into(),
            );
        }
        Ok(Some(Installed {
            kube,
            loki,
            role,
            user: format!("system:serviceaccount:{namespace}:{name}"),
            groups: vec![
                "system:serviceaccounts".into(),
                format!("system:serviceaccounts:{namespace}"),
                "system:authenticated".into(),
            ],
            env,
            kubeconfig,
            dir,
        }))
    }

    /// A dry run against the cluster, pushing to the real Loki, with `--out <dir>/<name>`.
    pub(crate) fn run(&self, name: &str) -> Result<Run> {
        let kubeconfig = self.kubeconfig.display().to_string();
        self.run_with(name, &["--kubeconfig", &kubeconfig], &self.env)
    }

    /// A dry run of a snapshot, pushing to a loopback fake so the real Loki holds the cluster's
    /// runs only.
    pub(crate) fn run_snapshot(&self, snapshot: &Path) -> Result<Run> {
        let snapshot = snapshot.display().to_string();
        let fake = test_support::loki::LokiServer::start();
        let mut env = self.env.clone();
        env.insert("LOKI_URL".into(), fake.url());
        self.run_with("snapshot", &["--snapshot", &snapshot], &env)
    }

    fn run_with(&self, name: &str, source: &[&str], env: &BTreeMap<String, String>) -> Result<Run> {
        let out = self.dir.path().join(name);
        let config = self.dir.path().join("config.yaml");
        let out_arg = out.display().to_string();
        let config_arg = config.display().to_string();
        let mut args = vec!["run", "--config", &config_arg];
        args.extend(source);
        args.extend(["--dry-run", "-o", "json", "--out", &out_arg]);
        let output = binary::run(&args, env)?;
        // `-o json` prints the report document, then the run line as the last line.
        let document: Value = serde_json::Deserializer::from_str(&output.stdout)
            .into_iter::<Value>()
            .next()
            .transpose()
            .ok()
            .flatten()
            .with_context(|| format!("run {name} printed no JSON:\n{}", output.text))?;
        Ok(Run {
            code: output.code,
            run_line: document["run"].clone(),
            out,
            output: output.text,
        })
    }
}

/// The one object of `kind` in the release.
fn only<'a>(release: &'a Release, kind: &str) -> Result<&'a Value> {
    match release.of_kind(kind).collect::<Vec<_>>().as_slice() {
        [one] => Ok(*one),
        other => bail!("the live render has {} {kind} objects", other.len()),
    }
}
