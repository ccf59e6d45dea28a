//! The chart's dashboard and alert-rule queries against a real Loki after a real run: each query
//! runs (Grafana's variables filled in: the run's cluster, every team, the run id, a one-hour
//! range) and the known panels must show that run's numbers, taken from what the run says it
//! pushed (`--out DIR/loki.json`): violations = the run's total, per-team rows adding up, the
//! run visible to the missing-run rule and (while it is `ok`) not to the failed-run rule.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde_json::Value;
use test_support::real::RealLoki;

use system_tests::chart::LIVE_TENANT as TENANT;
use system_tests::release::Release;

/// The alert-rule ConfigMap's file.
const ALERT_RULES: &str = "workload-report-alert-rules.yaml";
/// The dashboard ConfigMap's file.
const DASHBOARD: &str = "workload-report.json";

/// What one run pushed, as the dashboard should show it.
pub(crate) struct RunFacts {
    run_id: String,
    cluster: String,
    total: f64,
    status: String,
    /// team → (total, namespaces), from the `team_total` lines.
    teams: BTreeMap<String, (f64, f64)>,
    /// (team, namespace, rule) → count, from the `summary` lines.
    summaries: BTreeMap<(String, String, String), f64>,
    /// (team, namespace, rule, category) → count, from the `summary` lines' `categories`.
    categories: BTreeMap<(String, String, String, String), f64>,
    /// (team, category) → count, from the `team_total` lines' `categories` (every category).
    team_categories: BTreeMap<(String, String), f64>,
    /// team → (new, fixed), from the `team_total` lines that carry them.
    changes: BTreeMap<String, (f64, f64)>,
    /// The `violation` lines.
    violations: Vec<Value>,
}

impl RunFacts {
    /// Reads `<out>/loki.json`.
    pub(crate) fn from_out(out: &Path) -> Result<RunFacts> {
        let path = out.join("loki.json");
        let push: Value = serde_json::from_str(&std::fs::read_to_string(&path)?)
            .with_context(|| format!("{} is not JSON", path.display()))?;
        let mut facts = RunFacts {
            run_id: String::new(),
            cluster: String::new(),
            total: 0.0,
            status: String::new(),
            teams: BTreeMap::new(),
            summaries: BTreeMap::new(),
            categories: BTreeMap::new(),
            team_categories: BTreeMap::new(),
            changes: BTreeMap::new(),
            violations: Vec::new(),
        };
        for stream in push["streams"].as_array().into_iter().flatten() {
            for pair in stream["values"].as_array().into_iter().flatten() {
                let line: Value = serde_json::from_str(pair[1].as_str().unwrap_or_default())?;
                facts.add(&stream["stream"], line);
            }
        }
        if facts.run_id.is_empty() {
            bail!("{} has no run line", path.display());
        }
        Ok(facts)
    }

    /// The run's total.
    pub(crate) fn total(&self) -> f64 {
        self.total
    }

    /// Whether two runs pushed the same counts and violation lines (run ids aside).
    pub(crate) fn same_counts(&self, other: &RunFacts) -> bool {
        let without_run = |lines: &[Value]| -> Vec<Value> {
            lines
                .iter()
                .map(|line| {
                    let mut line = line.clone();
                    if let Some(map) = line.as_object_mut() {
                        map.remove("runId");
                    }
                    line
                })
                .collect()
        };
        self.total == other.total
            && self.teams == other.teams
            && self.summaries == other.summaries
            && without_run(&self.violations) == without_run(&other.violations)
    }

    fn add(&mut self, labels: &Value, line: Value) {
        let text = |key: &str| line[key].as_str().unwrap_or_default().to_string();
        let number = |key: &str| line[key].as_f64().unwrap_or_default();
        match line["type"].as_str().unwrap_or_default() {
            "run" => {
                self.run_id = text("runId");
                self.cluster = labels["cluster"].as_str().unwrap_or_default().to_string();
                self.total = number("total");
                self.status = text("status");
            }
            "team_total" => {
                self.teams
                    .insert(text("team"), (number("total"), number("namespaces")));
                for (category, count) in line["categories"].as_object().into_iter().flatten() {
                    self.team_categories.insert(
                        (text("team"), category.clone()),
                        count.as_f64().unwrap_or_default(),
                    );
                }
                // `null` while the change is unknown (first run, history unavailable).
                if line["new"].is_number() {
                    self.changes
                        .insert(text("team"), (number("new"), number("fixed")));
                }
            }
            "summary" => {
                let key = (text("team"), text("namespace"), text("rule"));
                for (category, count) in line["categories"].as_object().into_iter().flatten() {
                    let (t, n, r) = key.clone();
                    self.categories.insert(
                        (t, n, r, category.clone()),
                        count.as_f64().unwrap_or_default(),
                    );
                }
                self.summaries.insert(key, number("count"));
            }
            "violation" => self.violations.push(line),
            _ => {}
        }
    }

    /// A query with Grafana's variables filled in for this run.
    fn fill(&self, expr: &str) -> String {
        expr.replace("$cluster", &self.cluster)
            .replace("$team", ".+")
            .replace("$namespace", ".+")
            .replace("$run", &self.run_id)
            .replace("$__range", "1h")
    }
}

/// Gatekeeper's `--log-denies` lines as its controller logs them (JSON, message
/// `denied admission: …`, `event_type` `violation`), shipped under the chart's default
/// Gatekeeper selector: a Deployment flagged by a warn and a deny Constraint of one kind (counted
/// once), another Deployment of that kind, and one of a second kind.
const GATEKEEPER_LABELS: &str = r#"{"namespace": "gatekeeper-system", "container": "manager"}"#;
const DENIES: [(&str, &str, &str, &str); 4] = [
    ("K8sRequiredLabels", "must-have-owner", "deny", "shop/web"),
    (
        "K8sRequiredLabels",
        "must-have-owner-warn",
        "warn",
        "shop/web",
    ),
    ("K8sRequiredLabels", "must-have-owner", "deny", "shop/cart"),
    ("K8sContainerLimits", "container-limits", "deny", "data/etl"),
];

/// Ships [`DENIES`] to Loki, as the cluster's log agent would.
pub(crate) fn push_gatekeeper_denies(loki: &RealLoki) -> Result<()> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_nanos() as i128;
    let lines: Vec<(i128, String)> = DENIES
        .iter()
        .enumerate()
        .map(|(i, (kind, constraint, action, object))| {
            let (namespace, name) = object.split_once('/').unwrap_or_default();
            let line = serde_json::json!({
                "level": "info", "ts": 1.7e9, "logger": "webhook",
                "msg": format!("denied admission: {name} has no owner label"),
                "semantic": true, "process": "admission", "event_type": "violation",
                "constraint_name": constraint, "constraint_group": "constraints.gatekeeper.sh",
                "constraint_api_version": "v1beta1", "constraint_kind": kind,
                "constraint_action": action, "resource_group": "apps",
                "resource_api_version": "v1", "resource_kind": "Deployment",
                "resource_namespace": namespace, "resource_name": name,
                "request_username": "alice"
            });
            (now - 1_000_000_000 + i as i128, line.to_string())
        })
        .collect();
    let labels: Value = serde_json::from_str(GATEKEEPER_LABELS)?;
    loki.push_stream(TENANT, &labels, &lines)
        .map_err(anyhow::Error::msg)
}

/// Runs every dashboard query and checks the known panels' numbers.
pub(crate) fn check_dashboard(loki: &RealLoki, release: &Release, facts: &RunFacts) -> Result<()> {
    let dashboard = dashboard(release)?;
    let mut failures = Vec::new();
    let mut checked = 0;
    for panel in dashboard["panels"].as_array().into_iter().flatten() {
        let title = panel["title"].as_str().unwrap_or_default();
        for target in panel["targets"].as_array().into_iter().flatten() {
            let Some(expr) = target["expr"].as_str() else {
                continue;
            };
            let instant = target["instant"] == true || target["queryType"] == "instant";
            let answer = Answer::query(loki, &facts.fill(expr), instant);
            if let Err(problem) = panel_shows_the_run(title, expr, &answer, facts) {
                failures.push(format!("panel {title:?} ({expr}): {problem}"));
            }
            checked += 1;
        }
    }
    for variable in dashboard["templating"]["list"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let (Some(label), Some(stream)) = (
            variable["query"]["label"].as_str(),
            variable["query"]["stream"].as_str(),
        ) else {
            continue;
        };
        let values = loki.api(
            TENANT,
            &format!("label/{label}/values"),
            &[("query", &facts.fill(stream))],
        );
        let values: BTreeSet<&str> = values
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let wanted: BTreeSet<&str> = match label {
            "cluster" => BTreeSet::from([facts.cluster.as_str()]),
            "team" => facts.teams.keys().map(String::as_str).collect(),
            _ => BTreeSet::new(),
        };
        if values.is_empty() || !wanted.is_subset(&values) {
            failures.push(format!(
                "variable {label}: values {values:?}, expected {wanted:?}"
            ));
        }
        checked += 1;
    }
    if !failures.is_empty() {
        bail!(
            "the dashboard does not show the run from the real Loki:\n  {}",
            failures.join("\n  ")
        );
    }
    eprintln!("{checked} dashboard queries read the run back from the real Loki");
    Ok(())
}

/// Runs the alert rules' Loki queries: the missing-run rule must count `runs` run lines and the
/// failed-run rule `failed` partial or skipped ones.
pub(crate) fn check_alerts(
    loki: &RealLoki,
    release: &Release,
    facts: &RunFacts,
    runs: usize,
    failed: usize,
) -> Result<()> {
    let text = release.config_map_with(ALERT_RULES)["data"][ALERT_RULES]
        .as_str()
        .context("no alert-rule ConfigMap")?;
    let provisioning: Value = serde_yaml::from_str(text)?;
    let mut seen = BTreeSet::new();
    for rule in provisioning["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|g| g["rules"].as_array().into_iter().flatten())
    {
        let uid = rule["uid"].as_str().unwrap_or_default();
        for query in rule["data"].as_array().into_iter().flatten() {
            let Some(expr) = query["model"]["expr"].as_str() else {
                continue;
            };
            if query["datasourceUid"] == "prometheus" || query["datasourceUid"] == "__expr__" {
                continue;
            }
            let value = Answer::query(loki, &facts.fill(expr), true)?.sum();
            let wanted = match uid {
                "workload-report-missing" => runs,
                "workload-report-failed" => failed,
                _ => continue,
            };
            if value != wanted as f64 {
                bail!(
                    "alert {uid}: {expr} gives {value} from the real Loki, expected {wanted} \
                     ({runs} run line(s), {failed} partial or skipped)"
                );
            }
            seen.insert(uid.to_string());
        }
    }
    if seen.len() != 2 {
        bail!("expected the missing-run and failed-run rules' Loki queries, found {seen:?}");
    }
    eprintln!("alert rules see {runs} run(s), {failed} failed, in the real Loki");
    Ok(())
}

fn dashboard(release: &Release) -> Result<Value> {
    let text = release.config_map_with(DASHBOARD)["data"][DASHBOARD]
        .as_str()
        .context("no dashboard ConfigMap in the live render")?;
    serde_json::from_str(text).context("the dashboard JSON")
}

/// What one query gave.
enum Answer {
    /// An instant vector: (labels, value) per series.
    Vector(Vec<(BTreeMap<String, String>, f64)>),
    /// A range query of series: (labels, last value) per series.
    Matrix(Vec<(BTreeMap<String, String>, f64)>),
    /// A range query of lines.
    Lines(Vec<String>),
}

impl Answer {
    fn query(loki: &RealLoki, expr: &str, instant: bool) -> Result<Answer> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_nanos();
        let result = if instant {
            loki.try_api(
                TENANT,
                "query",
                &[("query", expr), ("time", &now.to_string())],
            )
        } else {
            let start = (now - 3_600_000_000_000).to_string();
            let end = (now + 60_000_000_000).to_string();
            let params = [
                ("query", expr),
                ("start", start.as_str()),
                ("end", end.as_str()),
                ("limit", "5000"),
                ("direction", "forward"),
            ];
            loki.try_api(TENANT, "query_range", &params)
        }
        .map_err(anyhow::Error::msg)?;
        let items = result.as_array().context("a result list")?;
        let labels = |item: &Value, key: &str| -> BTreeMap<String, String> {
            serde_json::from_value(item[key].clone()).unwrap_or_default()
        };
        let number = |pair: &Value| pair[1].as_str().and_then(|v| v.parse::<f64>().ok());
        if instant {
            let series = items
                .iter()
                .map(|i| (labels(i, "metric"), number(&i["value"]).unwrap_or(f64::NAN)))
                .collect();
            return Ok(Answer::Vector(series));
        }
        if items.iter().all(|i| i.get("metric").is_some()) && !items.is_empty() {
            let series = items
                .iter()
                .map(|i| {
                    let last = i["values"]
                        .as_array()
                        .and_then(|v| v.last())
                        .and_then(number);
                    (labels(i, "metric"), last.unwrap_or(f64::NAN))
                })
                .collect();
            return Ok(Answer::Matrix(series));
        }
        let mut lines: Vec<String> = items
            .iter()
            .flat_map(|i| i["values"].as_array().into_iter().flatten())
            .filter_map(|pair| pair[1].as_str().map(str::to_string))
            .collect();
        lines.sort();
        Ok(Answer::Lines(lines))
    }

    fn sum(&self) -> f64 {
        match self {
            Answer::Vector(series) | Answer::Matrix(series) => series.iter().map(|(_, v)| v).sum(),
            Answer::Lines(lines) => lines.len() as f64,
        }
    }

    /// The series keyed by the values of `keys` (missing labels as "").
    fn by(&self, keys: &[&str]) -> BTreeMap<Vec<String>, f64> {
        match self {
            Answer::Vector(series) | Answer::Matrix(series) => series
                .iter()
                .map(|(labels, value)| {
                    let key = keys
                        .iter()
                        .map(|k| labels.get(*k).cloned().unwrap_or_default())
                        .collect();
                    (key, *value)
                })
                .collect(),
            Answer::Lines(_) => BTreeMap::new(),
        }
    }

    fn lines(&self) -> &[String] {
        match self {
            Answer::Lines(lines) => lines,
            _ => &[],
        }
    }
}

/// Whether a known panel shows the run's numbers (other panels only have to run).
fn panel_shows_the_run(
    title: &str,
    expr: &str,
    answer: &Result<Answer>,
    facts: &RunFacts,
) -> std::result::Result<(), String> {
    let answer = answer.as_ref().map_err(|e| format!("{e:#}"))?;
    let per_team = |pick: fn(&(f64, f64)) -> f64| -> BTreeMap<Vec<String>, f64> {
        facts
            .teams
            .iter()
            .map(|(team, numbers)| (vec![team.clone()], pick(numbers)))
            .collect()
    };
    let expect_number = |want: f64| {
        let got = answer.sum();
        if got == want {
            Ok(())
        } else {
            Err(format!("shows {got}, the run pushed {want}"))
        }
    };
    let expect_map = |got: BTreeMap<Vec<String>, f64>, want: BTreeMap<Vec<String>, f64>| {
        if got == want {
            Ok(())
        } else {
            Err(format!("shows {got:?}, the run pushed {want:?}"))
        }
    };
    let violation_text = |v: &Value, key: &str| v[key].as_str().unwrap_or_default().to_string();
    // A category column's query unwraps `categories_<name>`.
    let category = expr.split("unwrap categories_").nth(1).map(|rest| {
        rest.split([' ', '|'])
            .next()
            .unwrap_or_default()
            .to_string()
    });
    // Per team: every team's count from its team_total line (0 included).
    let per_team_category = || -> BTreeMap<Vec<String>, f64> {
        facts
            .team_categories
            .iter()
            .filter(|((_, c), _)| Some(c) == category.as_ref())
            .map(|((team, _), count)| (vec![team.clone()], *count))
            .collect()
    };
    // Per namespace: every (team, namespace, rule) with a summary line, 0 when its line has no
    // such category (a category of another rule).
    let per_summary_category = || -> BTreeMap<Vec<String>, f64> {
        facts
            .summaries
            .keys()
            .map(|(t, n, r)| {
                let key = (
                    t.clone(),
                    n.clone(),
                    r.clone(),
                    category.clone().unwrap_or_default(),
                );
                let count = facts.categories.get(&key).copied().unwrap_or_default();
                (vec![t.clone(), n.clone(), r.clone()], count)
            })
            .collect()
    };
    let run_lines = || -> Vec<Value> {
        answer
            .lines()
            .iter()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    };
    let total_namespaces: f64 = facts.teams.values().map(|(_, namespaces)| namespaces).sum();
    match title {
        "Violations" => expect_number(facts.total),
        "Teams with violations" => expect_number(
            facts
                .teams
                .values()
                .filter(|(total, _)| *total > 0.0)
                .count() as f64,
        ),
        "Namespaces with violations" => expect_number(total_namespaces),
        "Per team" if category.is_some() => expect_map(answer.by(&["team"]), per_team_category()),
        "Per team" if expr.contains("unwrap total") => {
            expect_map(answer.by(&["team"]), per_team(|(total, _)| *total))
        }
        "Per team" => expect_map(
            answer.by(&["team"]),
            per_team(|(_, namespaces)| *namespaces),
        ),
        "Trend per team (14 days, last run of each day)" if expr.starts_with("sum(") => {
            expect_number(facts.total)
        }
        "Trend per team (14 days, last run of each day)" => {
            expect_map(answer.by(&["team"]), per_team(|(total, _)| *total))
        }
        "Namespaces with violations per team (14 days, last run of each day)"
            if expr.starts_with("sum(") =>
        {
            expect_number(total_namespaces)
        }
        "Namespaces with violations per team (14 days, last run of each day)" => expect_map(
            answer.by(&["team"]),
            per_team(|(_, namespaces)| *namespaces),
        ),
        "Per namespace" if category.is_some() => expect_map(
            answer.by(&["team", "namespace", "rule"]),
            per_summary_category(),
        ),
        "Per namespace" => expect_map(
            answer.by(&["team", "namespace", "rule"]),
            facts
                .summaries
                .iter()
                .map(|((t, n, r), count)| (vec![t.clone(), n.clone(), r.clone()], *count))
                .collect(),
        ),
        "New and fixed since the previous run" => {
            let pick: fn(&(f64, f64)) -> f64 = if expr.contains("unwrap new") {
                |(new, _)| *new
            } else {
                |(_, fixed)| *fixed
            };
            expect_map(
                answer.by(&["team"]),
                facts
                    .changes
                    .iter()
                    .map(|(team, numbers)| (vec![team.clone()], pick(numbers)))
                    .collect(),
            )
        }
        "New at deploy (admission violations per namespace and rule)" => expect_map(
            answer.by(&["resource_namespace", "constraint_kind"]),
            BTreeMap::from([
                (
                    vec!["data".to_string(), "K8sContainerLimits".to_string()],
                    1.0,
                ),
                (
                    vec!["shop".to_string(), "K8sRequiredLabels".to_string()],
                    2.0,
                ),
            ]),
        ),
        "Message categories" => {
            let mut want: BTreeMap<Vec<String>, f64> = BTreeMap::new();
            for violation in &facts.violations {
                let key = vec![
                    violation_text(violation, "rule"),
                    violation_text(violation, "category"),
                ];
                *want.entry(key).or_default() += 1.0;
            }
            expect_map(answer.by(&["rule", "category"]), want)
        }
        "Silenced" => expect_number(facts.teams.get("silenced").map_or(0.0, |(total, _)| *total)),
        "Workloads (selected run)" => {
            let key = |v: &Value| {
                ["namespace", "kind", "name", "rule", "category"].map(|k| violation_text(v, k))
            };
            let mut want: Vec<_> = facts.violations.iter().map(key).collect();
            let mut got: Vec<_> = run_lines().iter().map(key).collect();
            want.sort();
            got.sort();
            if got == want {
                Ok(())
            } else {
                Err(format!("shows {got:?}, the run pushed {want:?}"))
            }
        }
        "Violation messages (selected run)" => expect_number(facts.violations.len() as f64),
        "Last run" | "Runs" => match run_lines().as_slice() {
            [line]
                if line["status"] == facts.status.as_str()
                    && line["total"].as_f64() == Some(facts.total) =>
            {
                Ok(())
            }
            lines => Err(format!(
                "shows {lines:?}, expected one run line with status {} and total {}",
                facts.status, facts.total
            )),
        },
        _ => Ok(()),
    }
}
