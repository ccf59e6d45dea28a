//! The audit cross-check: this run's count per Constraint against Gatekeeper's own audit
//! (`status.totalViolations`).
//!
//! An audit counts only when it is *fresh*: `status.auditTimestamp` is at least `freshAfter`
//! after the Constraint's `metadata.creationTimestamp` (a chart upgrade recreates Constraints, and
//! their first audits run before the templates load and read 0). Stale or unaudited Constraints
//! are skipped and named in the log; the fresh ones of a rule are summed and compared. A rule is
//! `"skipped"` only when none of its Constraints is fresh. Counts agree when they differ by at
//! most `max(absolute, relative × audit)`; the boundary is agreement. The result does not depend
//! on the order of Constraints or results.
//!
//! Like with like: Gatekeeper's audit adds one to a Constraint's `totalViolations` for every
//! result its review returns, and a policy that fails to evaluate on an object returns a result
//! too (its message is the error, one per matching Constraint of the template; a matching error
//! likewise). So the engine side counts every result of the Constraint — violations and policy
//! errors, on any object — although the digests count errors apart; the log and a disagreement
//! say how many of the engine's results were errors.
//!
//! Gatekeeper's audit reviews the objects in the cluster — real Pods included — and never
//! expands a workload through an ExpansionTemplate; this run reviews workloads and their
//! expansions but reads no Pods. So a rule that sees workloads through an ExpansionTemplate
//! (its findings come from expansion) has no audit count that means the same thing: its check is
//! `"skipped"`, and the log says why.

use std::collections::BTreeMap;
use std::collections::BTreeSet;

use jiff::{SignedDuration, Timestamp};
use report_sinks::model::AuditCheck;

use crate::config::AuditConfig;
use crate::count::{Finding, FindingKind};

/// What the cross-check needs of one Constraint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConstraintAudit {
    /// The Constraint kind (the rule).
    pub kind: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.creationTimestamp`; when absent the audit's freshness is not limited by it.
    pub created_at: Option<Timestamp>,
    /// `status.auditTimestamp` (start of the last audit run), when audited.
    pub audit_timestamp: Option<Timestamp>,
    /// `status.totalViolations`, when audited.
    pub total_violations: Option<u64>,
}

/// The cross-check's outcome.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AuditOutcome {
    /// Rule → check, for every configured rule.
    pub checks: BTreeMap<String, AuditCheck>,
    /// Rules whose counts disagree, with a message naming the rule and both counts.
    pub mismatches: Vec<String>,
    /// Rule → how many of a compared rule's engine results were policy errors (included in its
    /// `engine` count, as the audit includes them); rules without errors are absent.
    pub errors: BTreeMap<String, u64>,
    /// Log lines naming every Constraint that was skipped (stale or unaudited), sorted.
    pub skipped: Vec<String>,
    /// The rules skipped because they see workloads through ExpansionTemplates.
    pub through_expansion: BTreeSet<String>,
}

/// The reason a rule that sees workloads through ExpansionTemplates is not cross-checked.
pub const EXPANSION_SKIP_REASON: &str = "its findings come through ExpansionTemplates, and Gatekeeper's audit reviews real Pods, not expansions";

/// Cross-checks `results` (all results of the run's evaluation, any object) against the
/// Constraints' audit status for each of `rules`. The rules of `seen_through_expansion`, and
/// those with a finding from an ExpansionTemplate's resultant, are skipped (see the module
/// documentation).
pub fn cross_check(
    rules: &[String],
    constraints: &[ConstraintAudit],
    results: &[Finding],
    audit: &AuditConfig,
    seen_through_expansion: &BTreeSet<String>,
) -> AuditOutcome {
    let through_expansion: BTreeSet<String> = results
        .iter()
        .filter(|r| r.implied_by.is_some())
        .map(|r| r.constraint_kind.clone())
        .chain(seen_through_expansion.iter().cloned())
        .filter(|rule| rules.contains(rule))
        .collect();
    // (constraint kind, name) → (results, of which policy errors)
    let mut engine_counts: BTreeMap<(&str, &str), (u64, u64)> = BTreeMap::new();
    for result in results {
        let counts = engine_counts
            .entry((
                result.constraint_kind.as_str(),
                result.constraint_name.as_str(),
            ))
            .or_insert((0, 0));
        counts.0 += 1;
        if result.kind == FindingKind::PolicyError {
            counts.1 += 1;
        }
    }
    let fresh_after = SignedDuration::try_from(audit.fresh_after).unwrap_or(SignedDuration::MAX);
    // rule → (engine results, audit total, engine policy errors) over its fresh Constraints
    let mut sums: BTreeMap<&str, (u64, u64, u64)> = BTreeMap::new();
    // rule → its Constraints checked, those not audited yet, those audited too soon
    let mut checked: BTreeMap<&str, usize> = BTreeMap::new();
    let mut unaudited: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut stale: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for c in constraints {
        if !rules.contains(&c.kind) || through_expansion.contains(&c.kind) {
            continue;
        }
        *checked.entry(c.kind.as_str()).or_default() += 1;
        let (Some(audited_at), Some(total)) = (c.audit_timestamp, c.total_violations) else {
            unaudited
                .entry(c.kind.as_str())
                .or_default()
                .push(c.name.clone());
            continue;
        };
        if let Some(created) = c.created_at {
            let fresh_from = created.checked_add(fresh_after).unwrap_or(Timestamp::MAX);
            if audited_at < fresh_from {
                stale.entry(c.kind.as_str()).or_default().push(format!(
                    "{} (audit at {audited_at}, created at {created})",
                    c.name
                ));
                continue;
            }
        }
        let (engine, errors) = engine_counts
            .get(&(c.kind.as_str(), c.name.as_str()))
            .copied()
            .unwrap_or((0, 0));
        let sum = sums.entry(c.kind.as_str()).or_insert((0, 0, 0));
        sum.0 += engine;
        sum.1 += total;
        sum.2 += errors;
    }
    // one line per rule and reason, however many Constraints
    let mut skipped = Vec::new();
    for (reason, per_rule) in [
        ("not audited yet".to_string(), unaudited),
        (
            format!(
                "audited less than {} after creation",
                humanize(audit.fresh_after)
            ),
            stale,
        ),
    ] {
        for (rule, mut names) in per_rule {
            names.sort();
            let of = checked.get(rule).copied().unwrap_or(names.len());
            skipped.push(format!(
                "audit check: {} of {of} {} of {rule} {reason}: {}",
                names.len(),
                if of == 1 { "constraint" } else { "constraints" },
                capped_list(&names)
            ));
        }
    }
    skipped.sort();
    let mut checks = BTreeMap::new();
    let mut mismatches = Vec::new();
    let mut error_counts = BTreeMap::new();
    for rule in rules {
        let check = match sums.get(rule.as_str()) {
            Some(&(engine, audit_total, errors)) => {
                if errors > 0 {
                    error_counts.insert(rule.clone(), errors);
                }
                if !audit.tolerance.agrees(engine, audit_total) {
                    mismatches.push(format!(
                        "audit check disagrees for {rule}: engine {engine}{}, audit {audit_total}",
                        of_them_errors(errors)
                    ));
                }
                AuditCheck::Compared {
                    engine,
                    audit: audit_total,
                }
            }
            None => AuditCheck::Skipped,
        };
        checks.insert(rule.clone(), check);
    }
    AuditOutcome {
        checks,
        mismatches,
        errors: error_counts,
        skipped,
        through_expansion,
    }
}

/// ` (N of them policy errors)`, or nothing when there are none.
pub fn of_them_errors(errors: u64) -> String {
    match errors {
        0 => String::new(),
        1 => " (1 of them a policy error)".to_string(),
        n => format!(" ({n} of them policy errors)"),
    }
}

/// The most Constraint names one audit-skip line lists.
const MAX_NAMES_PER_SKIP_LINE: usize = 10;

/// `a, b, c`, or the first [`MAX_NAMES_PER_SKIP_LINE`] and `+N more`.
fn capped_list(names: &[String]) -> String {
    let shown = names.len().min(MAX_NAMES_PER_SKIP_LINE);
    let mut text = names[..shown].join(", ");
    if names.len() > shown {
        text.push_str(&format!(" +{} more", names.len() - shown));
    }
    text
}

/// Every rule `"skipped"`: the audit check of a run that could not count.
pub fn all_skipped(rules: &[String]) -> BTreeMap<String, AuditCheck> {
    rules
        .iter()
        .map(|r| (r.clone(), AuditCheck::Skipped))
        .collect()
}

fn humanize(d: std::time::Duration) -> String {
    let secs = d.as_secs();
    if secs > 0 && secs.is_multiple_of(3600) {
        format!("{}h", secs / 3600)
    } else if secs > 0 && secs.is_multiple_of(60) {
        format!("{}m", secs / 60)
    } else {
        format!("{secs}s")
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::config::Tolerance;
    use crate::count::tests::{error, result};

    fn audit_config() -> AuditConfig {
        AuditConfig {
            fresh_after: Duration::from_secs(600),
            tolerance: Tolerance {
                absolute: 5,
                relative: 0.10,
            },
        }
    }

    fn ts(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    fn constraint(
        name: &str,
        created: &str,
        audited: Option<&str>,
        total: Option<u64>,
    ) -> ConstraintAudit {
        ConstraintAudit {
            kind: "K8sRequiredLabels".into(),
            name: name.into(),
            created_at: Some(ts(created)),
            audit_timestamp: audited.map(ts),
            total_violations: total,
        }
    }

    fn results(constraint: &str, n: usize) -> Vec<Finding> {
        (0..n)
            .map(|i| {
                result(
                    "K8sRequiredLabels",
                    constraint,
                    "Deployment",
                    "ns",
                    &format!("w{i}"),
                    "missing",
                )
            })
            .collect()
    }

    fn rules() -> Vec<String> {
        vec![
            "K8sRequiredLabels".to_string(),
            "K8sContainerLimits".to_string(),
        ]
    }

    #[test]
    fn rules_seen_through_expansion_are_skipped() {
        let c = [constraint(
            "labels",
            "2026-11-01T00:00:00Z",
            Some("2026-11-01T00:10:00Z"),
            Some(0),
        )];
        // a finding through a Pod: the audit (which counts real Pods) would never agree
        let mut found = results("labels", 40);
        found.push(crate::count::tests::implied(
            "expand-workloads",
            result(
                "K8sRequiredLabels",
                "labels",
                "Deployment",
                "ns",
                "x",
                "missing",
            ),
        ));
        let outcome = cross_check(&rules(), &c, &found, &audit_config(), &BTreeSet::new());
        assert!(outcome.mismatches.is_empty(), "{:?}", outcome.mismatches);
        assert_eq!(outcome.checks["K8sRequiredLabels"], AuditCheck::Skipped);
        assert_eq!(
            outcome.through_expansion,
            BTreeSet::from(["K8sRequiredLabels".to_string()])
        );
        // no finding yet, but the rule sees workloads only through their Pods: skipped too
        let seen = BTreeSet::from(["K8sRequiredLabels".to_string()]);
        let outcome = cross_check(&rules(), &c, &[], &audit_config(), &seen);
        assert_eq!(outcome.checks["K8sRequiredLabels"], AuditCheck::Skipped);
        assert!(outcome.mismatches.is_empty());
        // without expansion the same counts disagree
        let outcome = cross_check(
            &rules(),
            &c,
            &found[..40],
            &audit_config(),
            &BTreeSet::new(),
        );
        assert_eq!(outcome.mismatches.len(), 1);
    }

    #[test]
    fn fresh_audit_within_the_tolerance_boundary_agrees() {
        let c = [constraint(
            "labels",
            "2026-11-01T00:00:00Z",
            Some("2026-11-01T00:10:00Z"),
            Some(100),
        )];
        let outcome = cross_check(
            &rules(),
            &c,
            &results("labels", 110),
            &audit_config(),
            &BTreeSet::new(),
        );
        assert!(outcome.mismatches.is_empty(), "{:?}", outcome.mismatches);
        assert_eq!(
            outcome.checks["K8sRequiredLabels"],
            AuditCheck::Compared {
                engine: 110,
                audit: 100
            }
        );
        assert_eq!(outcome.checks["K8sContainerLimits"], AuditCheck::Skipped);
        let outcome = cross_check(
            &rules(),
            &c,
            &results("labels", 111),
            &audit_config(),
            &BTreeSet::new(),
        );
        assert_eq!(
            outcome.mismatches,
            ["audit check disagrees for K8sRequiredLabels: engine 111, audit 100"]
        );
    }

    #[test]
    fn the_absolute_floor_applies_to_small_counts() {
        let c = [constraint(
            "labels",
            "2026-11-01T00:00:00Z",
            Some("2026-11-02T00:00:00Z"),
            Some(0),
        )];
        assert!(
            cross_check(
                &rules(),
                &c,
                &results("labels", 5),
                &audit_config(),
                &BTreeSet::new()
            )
            .mismatches
            .is_empty()
        );
        assert_eq!(
            cross_check(
                &rules(),
                &c,
                &results("labels", 6),
                &audit_config(),
                &BTreeSet::new()
            )
            .mismatches
            .len(),
            1
        );
    }

    #[test]
    fn stale_and_unaudited_constraints_are_skipped_and_named() {
        // audited 9m59s after creation: stale (the chart-upgrade window)
        let stale = constraint(
            "labels-a",
            "2026-11-01T00:00:00Z",
            Some("2026-11-01T00:09:59Z"),
            Some(0),
        );
        let unaudited = constraint("labels-b", "2026-11-01T00:00:00Z", None, None);
        let outcome = cross_check(
            &rules(),
            &[stale.clone(), unaudited.clone()],
            &results("labels-a", 157),
            &audit_config(),
            &BTreeSet::new(),
        );
        assert!(outcome.mismatches.is_empty());
        assert_eq!(outcome.checks["K8sRequiredLabels"], AuditCheck::Skipped);
        assert_eq!(
            outcome.skipped,
            [
                "audit check: 1 of 2 constraints of K8sRequiredLabels audited less than 10m after creation: labels-a (audit at 2026-11-01T00:09:59Z, created at 2026-11-01T00:00:00Z)",
                "audit check: 1 of 2 constraints of K8sRequiredLabels not audited yet: labels-b",
            ]
        );
        // exactly freshAfter is fresh; the fresh one is compared, the others stay skipped,
        // whatever the order
        let fresh = constraint(
            "labels-c",
            "2026-11-01T00:00:00Z",
            Some("2026-11-01T00:10:00Z"),
            Some(3),
        );
        for order in [
            vec![stale.clone(), fresh.clone(), unaudited.clone()],
            vec![fresh.clone(), unaudited.clone(), stale.clone()],
        ] {
            let mut all = results("labels-a", 157);
            all.extend(results("labels-c", 3));
            let outcome = cross_check(&rules(), &order, &all, &audit_config(), &BTreeSet::new());
            assert_eq!(
                outcome.checks["K8sRequiredLabels"],
                AuditCheck::Compared {
                    engine: 3,
                    audit: 3
                }
            );
            assert_eq!(outcome.skipped.len(), 2);
        }
        // many unaudited Constraints of a rule are one line, their names capped
        let many: Vec<ConstraintAudit> = (0..30)
            .map(|i| {
                constraint(
                    &format!("labels-{i:02}"),
                    "2026-11-01T00:00:00Z",
                    None,
                    None,
                )
            })
            .collect();
        let outcome = cross_check(&rules(), &many, &[], &audit_config(), &BTreeSet::new());
        assert_eq!(
            outcome.skipped,
            [
                "audit check: 30 of 30 constraints of K8sRequiredLabels not audited yet: labels-00, labels-01, labels-02, labels-03, labels-04, labels-05, labels-06, labels-07, labels-08, labels-09 +20 more"
            ]
        );
    }

    #[test]
    fn fresh_constraints_of_a_rule_are_summed() {
        let c = [
            constraint(
                "labels-warn",
                "2026-11-01T00:00:00Z",
                Some("2026-11-02T00:00:00Z"),
                Some(50),
            ),
            constraint(
                "labels-enforced",
                "2026-11-01T00:00:00Z",
                Some("2026-11-02T00:00:00Z"),
                Some(10),
            ),
        ];
        let mut all = results("labels-warn", 50);
        all.extend(results("labels-enforced", 10));
        let outcome = cross_check(&rules(), &c, &all, &audit_config(), &BTreeSet::new());
        assert_eq!(
            outcome.checks["K8sRequiredLabels"],
            AuditCheck::Compared {
                engine: 60,
                audit: 60
            }
        );
    }

    #[test]
    fn a_skipped_run_skips_every_rule() {
        let checks = all_skipped(&rules());
        assert_eq!(
            serde_json::to_string(&checks).unwrap(),
            r#"{"K8sContainerLimits":"skipped","K8sRequiredLabels":"skipped"}"#
        );
    }

    #[test]
    fn policy_errors_count_toward_the_engine_as_the_audit_counts_them() {
        // Gatekeeper's audit counted 3 violations and 2 errors (one error per matching
        // Constraint of the template) in totalViolations
        let c = [constraint(
            "labels",
            "2026-11-01T00:00:00Z",
            Some("2026-11-02T00:00:00Z"),
            Some(5),
        )];
        let mut all = results("labels", 3);
        for name in ["e1", "e2"] {
            all.push(error(result(
                "K8sRequiredLabels",
                "labels",
                "Deployment",
                "ns",
                name,
                "eval_conflict_error: complete rules must not produce multiple outputs",
            )));
        }
        let exact = AuditConfig {
            tolerance: Tolerance {
                absolute: 0,
                relative: 0.0,
            },
            ..audit_config()
        };
        let outcome = cross_check(&rules(), &c, &all, &exact, &BTreeSet::new());
        assert!(outcome.mismatches.is_empty(), "{:?}", outcome.mismatches);
        assert_eq!(
            outcome.checks["K8sRequiredLabels"],
            AuditCheck::Compared {
                engine: 5,
                audit: 5
            }
        );
        assert_eq!(
            outcome.errors,
            BTreeMap::from([("K8sRequiredLabels".to_string(), 2)])
        );
        // an audit that left the errors out disagrees, and the message says how many errors
        // the engine's count holds
        let c = [ConstraintAudit {
            total_violations: Some(3),
            ..c[0].clone()
        }];
        let outcome = cross_check(&rules(), &c, &all, &exact, &BTreeSet::new());
        assert_eq!(
            outcome.mismatches,
            [
                "audit check disagrees for K8sRequiredLabels: engine 5 (2 of them policy errors), audit 3"
            ]
        );
    }
}
