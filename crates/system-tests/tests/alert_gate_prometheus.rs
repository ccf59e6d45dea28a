//! The missing-run alert's time gate (its PromQL part, refId B) as rendered for the live
//! release, evaluated by a real Prometheus (Debian's package) at chosen instants: open inside the
//! check window on check days, closed outside it and on the days off, at both hour boundaries.
//! Grafana itself cannot run here; its math expression (`$B > 0 && $A < 1`) stays covered by
//! the rendered-rule tests, and the rule's Loki part (refId A) is evaluated against the real
//! Loki by the rollout test.

use serde_json::Value;
use system_tests::chart::rendered;
use test_support::real::prometheus::{self, RealPrometheus};

/// The rendered missing-run rule's query of `ref_id`.
fn missing_run_query(ref_id: &str) -> String {
    let release = rendered("live");
    let key = "workload-report-alert-rules.yaml";
    let text = release.config_map_with(key)["data"][key]
        .as_str()
        .expect("the live render has the alert rules ConfigMap");
    let file: Value = serde_yaml::from_str(text).unwrap();
    let rule = file["groups"][0]["rules"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| r["uid"] == "workload-report-missing")
        .expect("the missing-run rule");
    rule["data"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|d| d["refId"] == ref_id)
        .and_then(|d| d["model"]["expr"].as_str())
        .expect("the query")
        .to_string()
}

/// Unix seconds of a UTC instant `YYYY-MM-DDTHH:MM:SSZ`.
fn at(instant: &str) -> i64 {
    instant.parse::<jiff::Timestamp>().unwrap().as_second()
}

#[test]
fn real_prometheus_opens_the_missing_run_gate_only_in_the_check_window_on_check_days() {
    if prometheus::require(
        "real_prometheus_opens_the_missing_run_gate_only_in_the_check_window_on_check_days",
    )
    .is_none()
    {
        return;
    }
    let gate = missing_run_query("B");
    let prometheus = RealPrometheus::start();
    // The live values keep the defaults: 09:00-16:00 UTC, Sunday to Thursday.
    let cases = [
        ("2026-11-30T08:59:59Z", "Monday before the window", "0"),
        ("2026-11-30T09:00:00Z", "Monday at the window's start", "1"),
        ("2026-11-30T12:30:00Z", "Monday inside", "1"),
        (
            "2026-11-30T15:59:59Z",
            "Monday at the window's last second",
            "1",
        ),
        ("2026-11-30T16:00:00Z", "Monday at the window's end", "0"),
        ("2026-11-29T12:00:00Z", "Sunday (a check day)", "1"),
        ("2026-12-03T12:00:00Z", "Thursday (a check day)", "1"),
        ("2026-12-04T12:00:00Z", "Friday (a day off)", "0"),
        ("2026-12-05T12:00:00Z", "Saturday (a day off)", "0"),
        ("2026-12-05T23:59:59Z", "Saturday's last second", "0"),
        ("2026-12-06T09:00:00Z", "Sunday's window opening", "1"),
    ];
    let mut wrong = Vec::new();
    for (instant, what, expected) in cases {
        let data = prometheus.query(&gate, at(instant));
        let values: Vec<&str> = data["result"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|sample| sample["value"][1].as_str())
            .collect();
        if values != [expected] {
            wrong.push(format!(
                "{what} ({instant}): {values:?}, expected [{expected:?}]"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "the gate {gate:?} is wrong at:\n{}",
        wrong.join("\n")
    );
}
