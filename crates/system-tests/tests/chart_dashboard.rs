//! The Grafana dashboard and the alert rules the chart renders, panel by panel: the whole
//! dashboard is pinned by a snapshot (every query with its selector, line type, fields,
//! aggregation, window and step; every panel's type, transforms and overrides; the variables),
//! the rules a user relies on are named tests, and every LogQL and PromQL expression must parse
//! with the official grammars after Grafana's variables are filled in. What the queries return
//! from a real Loki is `chart_live`'s business.

use std::collections::BTreeSet;

use serde_json::{Value, json};
use system_tests::chart::{self, rendered};
use system_tests::checks::Checks;
use system_tests::grammars::{self, Language};
use system_tests::release::{Release, env_map};

/// The full case's dashboard ConfigMap and Gatekeeper log selector (fixtures/chart/values-full.yaml).
const FULL_DASHBOARD: &str = "nightly-report-dashboard";
const FULL_GATEKEEPER: &str = r#"{namespace="policy-system", app="gatekeeper-controller-manager"}"#;

fn dashboard(release: &Release, name: &str) -> Value {
    let text = release.find("ConfigMap", name)["data"]["workload-report.json"]
        .as_str()
        .expect("the dashboard ConfigMap holds workload-report.json");
    serde_json::from_str(text).expect("the dashboard is JSON")
}

fn full_dashboard() -> Value {
    dashboard(rendered("full"), FULL_DASHBOARD)
}

fn panel<'a>(dashboard: &'a Value, title: &str) -> &'a Value {
    dashboard["panels"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["title"] == json!(title))
        .unwrap_or_else(|| panic!("the dashboard has no panel {title:?}"))
}

fn variable<'a>(dashboard: &'a Value, name: &str) -> &'a Value {
    dashboard["templating"]["list"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|v| v["name"] == json!(name))
        .unwrap_or_else(|| panic!("the dashboard has no variable {name:?}"))
}

fn targets(panel: &Value) -> Vec<&Value> {
    panel["targets"].as_array().into_iter().flatten().collect()
}

fn expr(target: &Value) -> &str {
    target["expr"].as_str().unwrap_or_default()
}

/// An override's property value, by matcher option and property id.
fn override_property<'a>(panel: &'a Value, matcher: &str, property: &str) -> &'a Value {
    panel["fieldConfig"]["overrides"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|o| o["matcher"]["options"] == json!(matcher))
        .flat_map(|o| o["properties"].as_array().into_iter().flatten())
        .find(|p| p["id"] == json!(property))
        .map_or(&Value::Null, |p| &p["value"])
}

#[test]
fn the_dashboard_is_pinned_panel_by_panel() {
    insta::assert_snapshot!(
        "full_dashboard",
        serde_json::to_string_pretty(&full_dashboard()).unwrap()
    );
}

#[test]
fn old_slack_links_and_empty_ranges_keep_the_variables_usable() {
    let mut c = Checks::new("full");
    let d = full_dashboard();
    c.eq(
        "default range (Loki's retention)",
        &d["time"],
        &json!({"from": "now-14d", "to": "now"}),
    );
    let cluster = variable(&d, "cluster");
    c.eq("cluster includes All", &cluster["includeAll"], &json!(true));
    c.eq("cluster All", &cluster["allValue"], &json!(".+"));
    c.eq(
        "cluster defaults to the release's cluster",
        &cluster["current"]["value"],
        &json!(chart::full_values().unwrap()["report"]["config"]["cluster"]),
    );
    let team = variable(&d, "team");
    for (key, want) in [("multi", json!(true)), ("includeAll", json!(true))] {
        c.eq(&format!("team {key}"), &team[key], &want);
    }
    c.eq("team All", &team["allValue"], &json!(".+"));
    let regex = team["regex"].as_str().unwrap_or_default();
    let regex = regex::Regex::new(regex.trim_matches('/')).expect("the team regex compiles");
    for name in ["3d", "data-eng", "web_team", "Infra.EU", "silenced"] {
        c.check(regex.is_match(name), || {
            format!("team {name} is hidden by {regex}")
        });
    }
    c.check(!regex.is_match("_run"), || {
        "the run lines' team _run is offered as a team".into()
    });
    let namespace = variable(&d, "namespace");
    c.eq("namespace type", &namespace["type"], &json!("custom"));
    for (key, want) in [
        ("multi", json!(true)),
        ("includeAll", json!(true)),
        ("allValue", json!(".+")),
        ("allowCustomValue", json!(true)),
        ("query", json!("data-lake,web-shop")),
    ] {
        c.eq(&format!("namespace {key}"), &namespace[key], &want);
    }
    let run = variable(&d, "run");
    c.check(run["multi"] != json!(true), || {
        "the run variable takes one run".into()
    });
    for p in d["panels"].as_array().into_iter().flatten() {
        for t in targets(p) {
            let e = expr(t);
            c.check(!e.contains("cluster=\"$cluster\""), || {
                format!("{}: a single-cluster selector breaks All: {e}", p["title"])
            });
        }
    }
    c.finish();
}

#[test]
fn selected_run_stats_say_no_run_rather_than_a_green_zero() {
    let mut c = Checks::new("full");
    let d = full_dashboard();
    let run_exists = r#" or on() (0 * sum(count_over_time({job="nightly-workload-report", cluster=~"$cluster", team="_run", type="run"} | json | runId=~"$run" [$__range])))"#;
    let stats: Vec<&Value> = d["panels"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["type"] == json!("stat"))
        .collect();
    c.check(stats.len() == 4, || format!("{} stat panels", stats.len()));
    for stat in stats {
        let title = stat["title"].as_str().unwrap_or_default();
        c.eq(
            &format!("{title} noValue"),
            &stat["fieldConfig"]["defaults"]["noValue"],
            &json!("no run"),
        );
        let e = expr(targets(stat)[0]);
        c.check(e.ends_with(run_exists) && !e.contains("vector(0)"), || {
            format!("{title}: 0 must mean a selected run with nothing, empty no run: {e}")
        });
    }
    c.finish();
}

#[test]
fn run_tables_colour_the_status_and_show_age_and_failed_teams() {
    let mut c = Checks::new("full");
    let d = full_dashboard();
    for (title, time, max_lines, columns) in [
        ("Last run", "age", 1, vec!["status", "failed", "reason"]),
        (
            "Runs",
            "finished",
            500,
            vec!["status", "runId", "failed", "reason", "total"],
        ),
    ] {
        let p = panel(&d, title);
        c.eq(&format!("{title} type"), &p["type"], &json!("table"));
        let t = targets(p)[0];
        c.eq(
            &format!("{title} maxLines"),
            &t["maxLines"],
            &json!(max_lines),
        );
        c.check(expr(t).contains(r#"type="run"} | json"#), || {
            format!("{title} reads run lines: {}", expr(t))
        });
        let transforms: Vec<&Value> = p["transformations"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| &t["id"])
            .collect();
        c.eq(
            &format!("{title} transforms"),
            &json!(transforms),
            &json!(["extractFields", "organize"]),
        );
        c.eq(
            &format!("{title} extracts the labels"),
            &p["transformations"][0]["options"]["source"],
            &json!("labels"),
        );
        let organize = &p["transformations"][1]["options"];
        c.eq(
            &format!("{title} time column"),
            &organize["renameByName"]["Time"],
            &json!(time),
        );
        for column in columns {
            c.check(organize["indexByName"][column].is_number(), || {
                format!("{title} has no column {column}")
            });
        }
        c.eq(
            &format!("{title} age unit"),
            override_property(p, time, "unit"),
            &json!("dateTimeFromNow"),
        );
        let colours = &override_property(p, "status", "mappings")[0]["options"];
        for (status, colour) in [("ok", "green"), ("partial", "orange"), ("skipped", "red")] {
            c.eq(
                &format!("{title} {status} colour"),
                &colours[status]["color"],
                &json!(colour),
            );
        }
        c.eq(
            &format!("{title} status cells"),
            override_property(p, "status", "custom.cellOptions"),
            &json!({"type": "color-background"}),
        );
    }
    c.finish();
}

#[test]
fn trends_draw_daily_bars_an_outlined_total_and_the_latest_run() {
    let mut c = Checks::new("full");
    let d = full_dashboard();
    for (title, field) in [
        ("Trend per team (14 days, last run of each day)", "total"),
        (
            "Namespaces with violations per team (14 days, last run of each day)",
            "namespaces",
        ),
    ] {
        let p = panel(&d, title);
        let t = targets(p);
        c.check(t.len() == 3, || format!("{title}: {} queries", t.len()));
        let daily = format!(
            r#"last_over_time({{job="nightly-workload-report", cluster=~"$cluster", team=~"$team", type="team_total"}} | json | unwrap {field} [1d]) by (cluster, team)"#
        );
        c.eq(
            &format!("{title} per team"),
            &json!(expr(t[0])),
            &json!(daily),
        );
        c.eq(&format!("{title} step"), &t[0]["step"], &json!("1d"));
        c.eq(
            &format!("{title} total"),
            &json!(expr(t[1])),
            &json!(format!("sum({daily})")),
        );
        c.eq(
            &format!("{title} total legend"),
            &t[1]["legendFormat"],
            &json!("total"),
        );
        c.eq(
            &format!("{title} latest run is instant"),
            &t[2]["instant"],
            &json!(true),
        );
        c.check(
            expr(t[2]).contains(&format!("unwrap {field} [$__range]")),
            || format!("{title}: the latest run spans the range: {}", expr(t[2])),
        );
        c.eq(
            &format!("{title} bars"),
            &p["fieldConfig"]["defaults"]["custom"]["drawStyle"],
            &json!("bars"),
        );
        c.eq(
            &format!("{title} bars on their own day"),
            &p["fieldConfig"]["defaults"]["custom"]["barAlignment"],
            &json!(-1),
        );
        c.eq(
            &format!("{title} total is not stacked"),
            &override_property(p, "total", "custom.stacking")["mode"],
            &json!("none"),
        );
        c.eq(
            &format!("{title} total is outlined"),
            override_property(p, "total", "custom.fillOpacity"),
            &json!(0),
        );
        c.eq(
            &format!("{title} latest run as dots"),
            override_property(p, r".* \(latest run\)$", "custom.drawStyle"),
            &json!("points"),
        );
    }
    c.finish();
}

#[test]
fn new_at_deploy_counts_gatekeepers_admission_lines_per_namespace_and_rule_daily_and_now() {
    let mut c = Checks::new("full");
    let d = full_dashboard();
    let p = panel(
        &d,
        "New at deploy (admission violations per namespace and rule)",
    );
    let t = targets(p);
    let want = format!(
        r#"count by (resource_namespace, constraint_kind) (count by (constraint_kind, resource_kind, resource_namespace, resource_name) (count_over_time({FULL_GATEKEEPER} |= "denied admission" | json | event_type="violation" | resource_namespace=~"$namespace" [24h])))"#
    );
    c.check(t.len() == 2, || format!("{} queries", t.len()));
    for target in &t {
        c.eq("admission query", &json!(expr(target)), &json!(want));
    }
    c.eq("daily step", &t[0]["step"], &json!("1d"));
    c.eq(
        "legend per namespace and rule",
        &t[0]["legendFormat"],
        &json!("{{resource_namespace}} {{constraint_kind}}"),
    );
    c.eq("now point", &t[1]["instant"], &json!(true));
    c.eq(
        "now legend per namespace and rule",
        &t[1]["legendFormat"],
        &json!("{{resource_namespace}} {{constraint_kind}} (now)"),
    );
    c.finish();
}

#[test]
fn message_categories_are_columns_of_the_team_and_namespace_tables_with_zeros() {
    let mut c = Checks::new("full");
    let d = full_dashboard();
    let job = "nightly-workload-report";
    for category in ["invalid", "missing", "other"] {
        let i = ["invalid", "missing", "other"]
            .iter()
            .position(|n| *n == category)
            .unwrap_or_default();
        // Per team: the team_total lines, which carry every category (0 included).
        let team = format!(
            r#"sum by (cluster, team) (last_over_time({{job="{job}", cluster=~"$cluster", team=~"$team", type="team_total"}} | json | runId=~"$run" | unwrap categories_{category} | __error__="" [$__range]) by (cluster, team))"#
        );
        // Per namespace: the summary lines; a category of another rule is 0 on every row.
        let by = "cluster, team, namespace, rule";
        let summaries = format!(
            r#"{{job="{job}", cluster=~"$cluster", team=~"$team", type="summary"}} | json | runId=~"$run" | namespace=~"$namespace""#
        );
        let namespace = format!(
            r#"(sum by ({by}) (last_over_time({summaries} | unwrap categories_{category} | __error__="" [$__range]) by ({by}))) or (0 * sum by ({by}) (last_over_time({summaries} | unwrap count [$__range]) by ({by})))"#
        );
        for (title, want) in [("Per team", team), ("Per namespace", namespace)] {
            let p = panel(&d, title);
            let t = targets(p);
            let target = t.iter().find(|t| t["refId"] == json!(format!("C{i}")));
            let Some(target) = target else {
                c.fail(format!("{title}: no query for category {category}"));
                continue;
            };
            c.eq(
                &format!("{title} {category}"),
                &json!(expr(target)),
                &json!(want),
            );
            c.eq(
                &format!("{title} column C{i}"),
                &p["transformations"][1]["options"]["renameByName"][format!("Value #C{i}")],
                &json!(category),
            );
        }
    }
    let minimal = rendered("minimal");
    c.check(
        !minimal.has("ConfigMap", "wr-workload-report-dashboard"),
        || "the minimal case has no dashboard".into(),
    );
    c.finish();
}

#[test]
fn new_and_fixed_per_team_come_from_the_selected_runs_team_totals() {
    let mut c = Checks::new("full");
    let d = full_dashboard();
    let p = panel(&d, "New and fixed since the previous run");
    let t = targets(p);
    for (target, field) in t.iter().zip(["new", "fixed"]) {
        c.eq(
            &format!("{field} query"),
            &json!(expr(target)),
            &json!(format!(
                r#"sum by (cluster, team) (last_over_time({{job="nightly-workload-report", cluster=~"$cluster", team=~"$team", type="team_total"}} | json | runId=~"$run" | unwrap {field} | __error__="" [$__range]) by (cluster, team))"#
            )),
        );
    }
    c.eq(
        "columns",
        &p["transformations"][1]["options"]["renameByName"],
        &json!({"Value #A": "new", "Value #B": "fixed"}),
    );
    c.finish();
}

/// Every LogQL expression of the dashboard (panels and variable streams) and of the alert rules'
/// Loki queries, and the PromQL of the time-of-day gate, parse with the official grammars — and
/// the check can fail: a broken expression of each language is refused.
#[test]
fn every_query_parses_with_the_official_grammars() {
    let r = rendered("full");
    let d = full_dashboard();
    let mut queries: Vec<(Language, String)> = Vec::new();
    for p in d["panels"].as_array().into_iter().flatten() {
        for t in targets(p) {
            queries.push((Language::LogQl, expr(t).to_string()));
        }
    }
    for v in d["templating"]["list"].as_array().into_iter().flatten() {
        if let Some(stream) = v["query"]["stream"].as_str() {
            queries.push((Language::LogQl, stream.to_string()));
        }
    }
    let rules = r.find("ConfigMap", "nightly-report-alert-rules")["data"]
        ["workload-report-alert-rules.yaml"]
        .as_str()
        .expect("the alert rules");
    let rules: Value = serde_yaml::from_str(rules).expect("the alert rules are YAML");
    let mut promql = 0;
    for rule in rules["groups"][0]["rules"].as_array().into_iter().flatten() {
        for q in rule["data"].as_array().into_iter().flatten() {
            let Some(e) = q["model"]["expr"].as_str() else {
                continue;
            };
            let language = if q["datasourceUid"] == json!("loki-main") {
                Language::LogQl
            } else {
                promql += 1;
                Language::PromQl
            };
            queries.push((language, e.to_string()));
        }
    }
    assert!(
        queries.len() > 30 && promql == 1,
        "{} queries, {promql} PromQL",
        queries.len()
    );
    let controls = [
        (
            Language::LogQl,
            r#"sum(count_over_time({job="x"} | json | [1h])"#.to_string(),
        ),
        (Language::PromQl, "hour( >= bool 9".to_string()),
    ];
    let filled: Vec<(Language, String)> = queries
        .iter()
        .chain(controls.iter())
        .map(|(language, e)| (*language, grammars::fill_grafana_variables(e)))
        .collect();
    let parsed = grammars::parse(&filled).expect("the grammars run");
    let (answers, control_answers) = parsed.split_at(queries.len());
    for ((language, e), control) in controls.iter().zip(control_answers) {
        assert!(
            !control.is_valid(*language),
            "the grammar check cannot fail: it took {e}"
        );
    }
    let failures: Vec<String> = filled
        .iter()
        .zip(answers)
        .filter(|((language, _), parsed)| !parsed.is_valid(*language))
        .map(|((language, e), parsed)| {
            format!(
                "{language:?} does not parse (errors at {:?}): {e}",
                parsed.errors
            )
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The seed's team `3d` reads `3D_WEBHOOK`, which Kubernetes accepts by default since v1.32; the
/// chart renders it and says so in NOTES, and `webhookEnv` renames it for older clusters.
#[test]
fn a_team_whose_variable_starts_with_a_digit_renders_and_can_be_renamed() {
    let mut c = Checks::new("3d");
    let base = chart::merged(
        &chart::minimal_values(),
        &json!({"report": {"config": {"teams": [
            {"name": "data", "namespaces": ["data-*"]},
            {"name": "3d", "namespaces": ["render-*"]}
        ]}}}),
    );
    let renamed = chart::merged(
        &base,
        &json!({"report": {"config": {"webhookEnv": {"3d": "THREE_D_WEBHOOK"}}}}),
    );
    let mut releases = chart::render(&[("3d".into(), base), ("renamed".into(), renamed)])
        .expect("the chart renders");
    let plain = releases.remove("3d").unwrap().expect("team 3d renders");
    let env = env_map(&plain.pod_template()["spec"]["containers"][0]);
    c.check(env.contains_key("3D_WEBHOOK"), || {
        format!("team 3d reads no 3D_WEBHOOK: {:?}", env.keys())
    });
    if let Some(notes) = &plain.notes {
        for needle in [
            "3D_WEBHOOK   (team 3d)",
            "since v1.32",
            "report.config.webhookEnv.3d",
        ] {
            c.check(notes.contains(needle), || {
                format!("NOTES.txt does not say {needle:?}:\n{notes}")
            });
        }
    }
    let renamed = releases
        .remove("renamed")
        .unwrap()
        .expect("the override renders");
    let env = env_map(&renamed.pod_template()["spec"]["containers"][0]);
    let names: BTreeSet<&str> = env.keys().map(String::as_str).collect();
    c.check(
        names.contains("THREE_D_WEBHOOK") && !names.contains("3D_WEBHOOK"),
        || format!("the override is not the variable: {names:?}"),
    );
    c.eq(
        "override's Secret key",
        &env["THREE_D_WEBHOOK"]["valueFrom"]["secretKeyRef"]["key"],
        &json!("THREE_D_WEBHOOK"),
    );
    let config: Value = serde_yaml::from_str(
        renamed.find("ConfigMap", "wr-workload-report-config")["data"]["config.yaml"]
            .as_str()
            .unwrap_or_default(),
    )
    .expect("the rendered config");
    c.eq(
        "the binary is told the override",
        &config["webhookEnv"],
        &json!({"3d": "THREE_D_WEBHOOK"}),
    );
    c.finish();
}
