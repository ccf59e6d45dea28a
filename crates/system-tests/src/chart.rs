//! The chart `charts/workload-report` and the value cases it is rendered with:
//! `fixtures/chart/values-full.yaml` (every value non-default) and variations of it, the chart
//! defaults, a minimal enabled release, the demo report for the real servers (`live`), and one
//! render-failure case per validation (`fixtures/chart/render-failures/*.yaml`: `expect` texts
//! and `values` merged over the full values).
//!
//! [`rendered`] renders a named case once per process, with the Helm [`Helm::find`] picks.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use team_routing::{Routes, TeamSpec};

use crate::helm::{Helm, RenderCase, Rendered};
use crate::release::{Release, strings};
use crate::workspace;

/// The chart, from the workspace root.
pub const CHART: &str = "charts/workload-report";
/// The release name the cases are rendered as (the full values override the name).
pub const RELEASE: &str = "wr";
/// The release namespace.
pub const NAMESPACE: &str = "monitoring";
/// The image digest of the `digest` case.
pub const DIGEST: &str = "sha256:0c4f3b1a9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b";
/// The demo report's config, the base of the `live` case.
pub const DEMO_CONFIG: &str = "fixtures/demo/config.yaml";
/// The Loki tenant of the `live` case (Grafana's datasource would send the same header).
pub const LIVE_TENANT: &str = "platform";

/// The named cases every chart test can ask [`rendered`] for.
pub const CASES: [&str; 7] = [
    "default",
    "full",
    "minimal",
    "alerts-off",
    "report-off",
    "digest",
    "live",
];

/// The values of the named case.
pub fn values(case: &str) -> Result<Value> {
    Ok(match case {
        "default" => json!({}),
        "full" => full_values()?,
        "minimal" => minimal_values(),
        "alerts-off" => merged(&full_values()?, &json!({"alerts": {"enabled": false}})),
        "report-off" => merged(&full_values()?, &json!({"report": {"enabled": false}})),
        "digest" => merged(&full_values()?, &json!({"image": {"digest": DIGEST}})),
        "live" => live_values()?,
        other => bail!("no render case {other:?}"),
    })
}

/// `fixtures/chart/values-full.yaml`: every value set to something other than its default.
pub fn full_values() -> Result<Value> {
    read_yaml(&workspace::root().join("fixtures/chart/values-full.yaml"))
}

/// The fewest values that turn the report on; everything else keeps its default.
pub fn minimal_values() -> Value {
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

/// The demo report config reading every workload kind (so the ClusterRole lists every resource
/// it can), with a Loki tenant, alerts and the dashboard on.
pub fn live_values() -> Result<Value> {
    let mut config = read_yaml(&workspace::root().join(DEMO_CONFIG))?;
    config["workloadKinds"] = json!([
        "Deployment",
        "StatefulSet",
        "DaemonSet",
        "ReplicaSet",
        "Job",
        "CronJob"
    ]);
    // The URL is the in-cluster one a release would have; runs override it by LOKI_URL.
    config["loki"]["url"] = json!("http://loki-gateway.monitoring:80");
    config["loki"]["tenant"] = json!(LIVE_TENANT);
    Ok(json!({
        "image": {"repository": "registry.example/workload-report"},
        "report": {"enabled": true, "webhooksSecret": "workload-report-webhooks", "config": config},
        "alerts": {"lokiDatasourceUid": "loki", "prometheusDatasourceUid": "prometheus"},
        "dashboard": {"enabled": true, "namespace": "monitoring"}
    }))
}

/// A values file that must fail to render, with texts Helm's error must contain.
#[derive(Debug, Clone)]
pub struct FailureCase {
    /// The file's stem.
    pub name: String,
    /// Texts the error must contain.
    pub expect: Vec<String>,
    /// Values merged over the full values.
    pub values: Value,
}

/// Every `fixtures/chart/render-failures/*.yaml`, sorted.
pub fn failure_cases() -> Result<Vec<FailureCase>> {
    let dir = workspace::root().join("fixtures/chart/render-failures");
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

/// The Helm this process renders with (found, or installed, once).
pub fn helm() -> &'static Helm {
    static HELM: OnceLock<Result<Helm, String>> = OnceLock::new();
    match HELM.get_or_init(|| Helm::find().map_err(|e| format!("{e:#}"))) {
        Ok(helm) => helm,
        Err(error) => panic!("cannot render the chart: {error}"),
    }
}

/// Renders the chart for `(name, values)` cases, as release [`RELEASE`] in [`NAMESPACE`].
pub fn render(cases: &[(String, Value)]) -> Result<BTreeMap<String, Rendered>> {
    let cases: Vec<RenderCase> = cases
        .iter()
        .map(|(name, values)| RenderCase {
            name: name.clone(),
            release: RELEASE.into(),
            namespace: NAMESPACE.into(),
            values: values.clone(),
        })
        .collect();
    let chart = workspace::root().join(CHART);
    helm()
        .render(&chart, &cases)
        .with_context(|| format!("rendering {CHART} with {}", helm().describe()))
}

/// The release of the named case (one of [`CASES`]), rendered on first use in this process
/// (under nextest every test is a process of its own, so a test renders only what it asks for).
/// Panics with Helm's message when the case does not render.
pub fn rendered(case: &str) -> &'static Release {
    static RENDERED: OnceLock<BTreeMap<&'static str, OnceLock<Rendered>>> = OnceLock::new();
    let cache =
        RENDERED.get_or_init(|| CASES.iter().map(|name| (*name, OnceLock::new())).collect());
    let Some(slot) = cache.get(case) else {
        panic!("case {case}: not one of {CASES:?}");
    };
    match slot.get_or_init(|| render_one(case)) {
        Ok(release) => release,
        Err(error) => panic!("case {case}: {error}"),
    }
}

/// Renders one named case; any failure is the text to panic with.
fn render_one(case: &str) -> Rendered {
    let values = values(case).map_err(|e| format!("{e:#}"))?;
    let mut rendered = render(&[(case.to_string(), values)]).map_err(|e| format!("{e:#}"))?;
    match rendered.remove(case) {
        Some(Ok(release)) => Ok(release),
        Some(Err(error)) => Err(format!("rendering failed: {error}")),
        None => Err("not rendered".into()),
    }
}

/// The webhook variables a rendered report config needs (the default team and every team but
/// `silenced`), sorted: the team's `webhookEnv` override, else `<TEAM>_WEBHOOK` by
/// team-routing's rule.
pub fn webhook_vars(config: &Value) -> Result<Vec<String>> {
    let teams: Vec<TeamSpec> =
        serde_json::from_value(config["teams"].clone()).context("the rendered config's teams")?;
    let default_team = config["defaultTeam"].as_str().unwrap_or_default();
    let routes = Routes::new(teams, default_team).context("the rendered config's teams")?;
    let mut vars: Vec<String> = routes
        .webhook_vars()
        .into_iter()
        .map(
            |(team, variable)| match config["webhookEnv"][team].as_str() {
                Some(other) => other.to_string(),
                None => variable,
            },
        )
        .collect();
    vars.sort();
    Ok(vars)
}

fn read_yaml(path: &Path) -> Result<Value> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("failed to read {}", path.display()))?;
    serde_yaml::from_str(&text).with_context(|| format!("{} is not YAML", path.display()))
}

/// `over` merged into `base`: maps merge key by key, anything else replaces.
pub fn merged(base: &Value, over: &Value) -> Value {
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn every_named_case_has_values_and_an_unknown_one_is_an_error() {
        for case in CASES {
            assert!(values(case).unwrap().is_object(), "{case}");
        }
        assert!(values("nope").is_err());
    }

    #[test]
    fn every_failure_case_has_expectations_and_values() {
        let cases = failure_cases().unwrap();
        assert!(cases.len() >= 10, "only {} failure cases", cases.len());
    }
}
