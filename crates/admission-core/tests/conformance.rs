//! Runs every golden case of `fixtures/conformance/gco/cases.jsonl` (format and runner rules in
//! its README): region reads from saved bodies or simulated fetch errors, the namespace
//! pre-fill, verdicts, drift and ECR augmentation, compared exactly with the documented
//! `message_prefix` / `reason_prefix` relaxations. Every failing case is listed with a diff.

use std::path::PathBuf;

use admission_core::{
    FetchStatus, RegionPolicy, all_policy_drift, ecr_augmentation, prefill_namespaces,
    region_verdicts,
};
use serde_json::{Value, json};

fn cases_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/conformance/gco/cases.jsonl")
}

/// What the implementation produced for one case.
enum Outcome {
    Failed {
        stage: &'static str,
        error: String,
    },
    Done {
        verdicts: Value,
        drift: Value,
        ecr: Value,
    },
}

fn run_case(case: &Value) -> Outcome {
    let regions = case["regions"].as_object().expect("regions is an object");
    let mut policies = Vec::with_capacity(regions.len());
    for (region, read) in regions {
        if let Some(status) = read.get("fetch_error").and_then(Value::as_str) {
            let status = match status {
                "unreachable" => FetchStatus::Unreachable,
                _ => FetchStatus::Error,
            };
            let reason = read["reason"].as_str().unwrap_or_default();
            policies.push(RegionPolicy::failed(region.clone(), status, reason));
            continue;
        }
        let body = &read["body"];
        if regions.len() == 1 {
            // The reference converts outside its error handling: with one region a policy that
            // cannot be converted fails the whole command.
            match RegionPolicy::try_from_response_body(region.clone(), body) {
                Ok(entry) => policies.push(entry),
                Err(error) => {
                    return Outcome::Failed {
                        stage: "fetch",
                        error: error.to_string(),
                    };
                }
            }
        } else {
            policies.push(RegionPolicy::from_response_body(region.clone(), body));
        }
    }
    let mut manifests = case["manifests"].as_array().cloned().unwrap_or_default();
    let namespace = case["default_namespace"].as_str().unwrap_or("gco-jobs");
    if let Err(error) = prefill_namespaces(&mut manifests, namespace) {
        return Outcome::Failed {
            stage: "prefill",
            error: format!("{error}: {}", error.source),
        };
    }
    let verdicts = if manifests.is_empty() {
        Vec::new()
    } else {
        match region_verdicts(&manifests, &policies) {
            Ok(verdicts) => verdicts,
            Err(error) => {
                return Outcome::Failed {
                    stage: "evaluate",
                    error: format!("{error}: {}", error.python_error()),
                };
            }
        }
    };
    let drift = match all_policy_drift(&policies) {
        Ok(drift) => drift,
        Err(error) => {
            return Outcome::Failed {
                stage: "drift",
                error: error.to_string(),
            };
        }
    };
    let ecr = match ecr_augmentation(&policies) {
        Ok(ecr) => ecr,
        Err(error) => {
            return Outcome::Failed {
                stage: "drift",
                error: error.to_string(),
            };
        }
    };
    Outcome::Done {
        verdicts: serde_json::to_value(&verdicts).expect("verdicts serialize"),
        drift: serde_json::to_value(&drift).expect("drift serializes"),
        ecr: serde_json::to_value(&ecr).expect("ecr serializes"),
    }
}

fn prefix_matches(expected: &Value, actual: &Value, prefix_key: &str, key: &str) -> bool {
    match expected.get(prefix_key).and_then(Value::as_str) {
        Some(prefix) => actual
            .get(key)
            .and_then(Value::as_str)
            .is_some_and(|text| text.starts_with(prefix)),
        None => expected.get(key) == actual.get(key),
    }
}

fn issue_matches(expected: &Value, actual: &Value) -> bool {
    expected["check"] == actual["check"]
        && expected["manifest"] == actual["manifest"]
        && prefix_matches(expected, actual, "message_prefix", "message")
}

fn verdict_matches(expected: &Value, actual: &Value) -> bool {
    let (Some(expected_issues), Some(actual_issues)) =
        (expected["issues"].as_array(), actual["issues"].as_array())
    else {
        return false;
    };
    expected["region"] == actual["region"]
        && expected["verdict"] == actual["verdict"]
        && expected["enforcement_gaps"] == actual["enforcement_gaps"]
        && prefix_matches(expected, actual, "reason_prefix", "reason")
        && expected_issues.len() == actual_issues.len()
        && expected_issues
            .iter()
            .zip(actual_issues)
            .all(|(e, a)| issue_matches(e, a))
}

fn verdicts_match(expected: &Value, actual: &Value) -> bool {
    match (expected.as_array(), actual.as_array()) {
        (Some(e), Some(a)) => {
            e.len() == a.len() && e.iter().zip(a).all(|(e, a)| verdict_matches(e, a))
        }
        _ => false,
    }
}

/// `None` when the case passes, else a description of the difference.
fn check_case(case: &Value) -> Option<String> {
    let expected = &case["expected"];
    let outcome = run_case(case);
    if !expected["error"].is_null() {
        let want_stage = expected["error_stage"].as_str().unwrap_or("?");
        return match outcome {
            Outcome::Failed { stage, .. } if stage == want_stage => None,
            Outcome::Failed { stage, error } => Some(format!(
                "failed at stage {stage} ({error}), expected stage {want_stage}"
            )),
            Outcome::Done {
                verdicts,
                drift,
                ecr,
            } => Some(format!(
                "expected a failure at stage {want_stage} ({}), got\n{}",
                expected["error"],
                pretty(
                    &json!({"verdicts": verdicts, "policy_drift": drift, "ecr_augmentation": ecr})
                )
            )),
        };
    }
    match outcome {
        Outcome::Failed { stage, error } => {
            Some(format!("unexpected failure at stage {stage}: {error}"))
        }
        Outcome::Done {
            verdicts,
            drift,
            ecr,
        } => {
            let mut diffs = Vec::new();
            if !verdicts_match(&expected["verdicts"], &verdicts) {
                diffs.push(diff("verdicts", &expected["verdicts"], &verdicts));
            }
            if expected["policy_drift"] != drift {
                diffs.push(diff("policy_drift", &expected["policy_drift"], &drift));
            }
            if expected["ecr_augmentation"] != ecr {
                diffs.push(diff(
                    "ecr_augmentation",
                    &expected["ecr_augmentation"],
                    &ecr,
                ));
            }
            (!diffs.is_empty()).then(|| diffs.join("\n"))
        }
    }
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_default()
}

/// A line diff of the pretty-printed expected and actual values.
fn diff(what: &str, expected: &Value, actual: &Value) -> String {
    let expected = pretty(expected);
    let actual = pretty(actual);
    let e: Vec<&str> = expected.lines().collect();
    let a: Vec<&str> = actual.lines().collect();
    let mut out = format!("  {what} differs:\n");
    for index in 0..e.len().max(a.len()) {
        match (e.get(index), a.get(index)) {
            (Some(x), Some(y)) if x == y => out.push_str(&format!("      {x}\n")),
            (x, y) => {
                if let Some(x) = x {
                    out.push_str(&format!("    - {x}\n"));
                }
                if let Some(y) = y {
                    out.push_str(&format!("    + {y}\n"));
                }
            }
        }
    }
    out
}

#[test]
fn every_conformance_case_passes() {
    let text = std::fs::read_to_string(cases_path()).expect("read cases.jsonl");
    let mut total = 0;
    let mut exception_text = 0;
    let mut failures = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let case: Value = serde_json::from_str(line).expect("case is JSON");
        total += 1;
        if case["python_exception_text"].as_bool() == Some(true) {
            exception_text += 1;
        }
        if let Some(difference) = check_case(&case) {
            failures.push(format!(
                "{}: {}\n{difference}",
                case["id"], case["description"]
            ));
        }
    }
    eprintln!(
        "conformance: {} of {total} cases passed ({exception_text} with Python exception text), 0 skipped",
        total - failures.len()
    );
    for failure in &failures {
        eprintln!("FAIL {failure}");
    }
    assert!(total >= 400, "expected at least 400 cases, found {total}");
    assert!(
        failures.is_empty(),
        "{} conformance case(s) failed",
        failures.len()
    );
}

#[test]
fn the_comparison_catches_a_wrong_expectation() {
    let text = std::fs::read_to_string(cases_path()).expect("read cases.jsonl");
    let cases: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("case is JSON"))
        .collect();
    // A changed message, a changed drift value and a missing expected error must all be caught.
    let mut with_issue = cases
        .iter()
        .find(|c| c["expected"]["verdicts"][0]["issues"][0]["message"].is_string())
        .expect("a case with an exact issue message")
        .clone();
    with_issue["expected"]["verdicts"][0]["issues"][0]["message"] = json!("something else");
    assert!(check_case(&with_issue).is_some());
    let mut with_drift = cases
        .iter()
        .find(|c| c["expected"]["policy_drift"][0]["field"].is_string())
        .expect("a case with drift")
        .clone();
    with_drift["expected"]["policy_drift"][0]["field"] = json!("max_cpu_millicores_x");
    assert!(check_case(&with_drift).is_some());
    let mut with_error = cases
        .iter()
        .find(|c| {
            c["expected"]["error"].is_null()
                && c["manifests"].as_array().is_some_and(|m| !m.is_empty())
        })
        .expect("a passing case")
        .clone();
    with_error["expected"]["error"] = json!("TypeError: x");
    with_error["expected"]["error_stage"] = json!("evaluate");
    assert!(check_case(&with_error).is_some());
}
