//! A sample report shared by the sink tests.

#![allow(dead_code, unreachable_pub)]

use std::collections::BTreeMap;

use report_sinks::{
    AuditCheck, History, NamespaceReport, ObjectName, PolicyError, Report, RuleReport, RunStatus,
    RunSummary, TeamReport, ViolatingWorkload,
};

pub fn workload(kind: &str, name: &str, category: &str, message: &str) -> ViolatingWorkload {
    ViolatingWorkload {
        kind: kind.into(),
        name: name.into(),
        category: category.into(),
        message: message.into(),
        new: false,
    }
}

pub fn run() -> RunSummary {
    RunSummary {
        run_id: "20261130T073000Z-a1b2".into(),
        cluster: "azure-dev".into(),
        engine: "embedded".into(),
        status: RunStatus::Ok,
        reason: String::new(),
        dry_run: false,
        posted: vec![],
        would_post: vec![],
        failed: vec![],
        audit_check: BTreeMap::from([
            (
                "K8sRequiredLabels".to_string(),
                AuditCheck::Compared {
                    engine: 4,
                    audit: 4,
                },
            ),
            ("K8sRequiredProbes".to_string(), AuditCheck::Skipped),
        ]),
        previous_run_id: None,
        started_at: "2026-11-30T07:30:00Z".parse().unwrap(),
        finished_at: "2026-11-30T07:30:42Z".parse().unwrap(),
    }
}

pub fn namespace(rules: Vec<(&str, Vec<ViolatingWorkload>)>, max: usize) -> NamespaceReport {
    NamespaceReport {
        rules: rules
            .into_iter()
            .map(|(rule, workloads)| (rule.to_string(), RuleReport::from_workloads(workloads, max)))
            .collect(),
    }
}

/// raster: two namespaces (a Deployment and a StatefulSet both named `api`); 3d: clean;
/// silenced: kube-system; infra (default): one violation.
pub fn report() -> Report {
    let raster = TeamReport {
        namespaces: BTreeMap::from([
            (
                "dem-dev".to_string(),
                namespace(
                    vec![(
                        "K8sRequiredLabels",
                        vec![
                            workload("Deployment", "worker", "invalid", "label owner is invalid"),
                            workload("Deployment", "api", "missing", "missing label owner"),
                            workload("Deployment", "web", "missing", "missing label owner"),
                        ],
                    )],
                    2,
                ),
            ),
            (
                "raster-dev".to_string(),
                namespace(
                    vec![
                        (
                            "K8sRequiredLabels",
                            vec![workload(
                                "StatefulSet",
                                "api",
                                "other",
                                "bad <labels> & more",
                            )],
                        ),
                        (
                            "K8sRequiredProbes",
                            vec![
                                workload("Deployment", "api", "other", "no readiness probe"),
                                workload("StatefulSet", "api", "other", "no readiness probe"),
                            ],
                        ),
                    ],
                    10,
                ),
            ),
        ]),
    };
    let silenced = TeamReport {
        namespaces: BTreeMap::from([(
            "kube-system".to_string(),
            namespace(
                vec![(
                    "K8sRequiredProbes",
                    vec![workload(
                        "Deployment",
                        "coredns",
                        "other",
                        "no liveness probe",
                    )],
                )],
                10,
            ),
        )]),
    };
    let infra = TeamReport {
        namespaces: BTreeMap::from([(
            "payments".to_string(),
            namespace(
                vec![(
                    "K8sRequiredLabels",
                    vec![workload(
                        "Deployment",
                        "ledger",
                        "missing",
                        "missing label owner",
                    )],
                )],
                10,
            ),
        )]),
    };
    Report {
        run: run(),
        teams: BTreeMap::from([
            ("3d".to_string(), TeamReport::default()),
            ("infra".to_string(), infra),
            ("raster".to_string(), raster),
            ("silenced".to_string(), silenced),
        ]),
        policy_errors: vec![],
        problems: vec![],
        history: History::Unavailable,
        categories: vec!["invalid".into(), "missing".into(), "other".into()],
    }
}

/// One Constraint's policy error (`objects` objects, the first `Deployment <namespace>/<name>`).
pub fn policy_error(
    rule: &str,
    constraint: &str,
    objects: usize,
    namespace: &str,
    name: &str,
    message: &str,
) -> PolicyError {
    PolicyError {
        rule: rule.into(),
        constraint: constraint.into(),
        objects,
        first_object: ObjectName {
            namespace: Some(namespace.into()),
            kind: "Deployment".into(),
            name: name.into(),
        },
        message: message.into(),
    }
}

/// [`report`] where K8sRequiredProbes also failed to evaluate: on one more workload of
/// raster-dev (besides its two violations), on two workloads of raster-stage (errors only) and
/// on one of the clean team 3d; the report lists the erring Constraint.
pub fn report_with_errors() -> Report {
    let mut report = report();
    let raster = report.teams.get_mut("raster").unwrap();
    let probes = raster
        .namespaces
        .get_mut("raster-dev")
        .unwrap()
        .rules
        .remove("K8sRequiredProbes")
        .unwrap();
    raster
        .namespaces
        .get_mut("raster-dev")
        .unwrap()
        .rules
        .insert("K8sRequiredProbes".to_string(), probes.with_errors(1));
    raster.namespaces.insert(
        "raster-stage".to_string(),
        NamespaceReport {
            rules: BTreeMap::from([(
                "K8sRequiredProbes".to_string(),
                RuleReport::from_workloads(vec![], 10).with_errors(2),
            )]),
        },
    );
    report.teams.get_mut("3d").unwrap().namespaces.insert(
        "3d-render".to_string(),
        NamespaceReport {
            rules: BTreeMap::from([(
                "K8sRequiredProbes".to_string(),
                RuleReport::from_workloads(vec![], 10).with_errors(1),
            )]),
        },
    );
    report.policy_errors = vec![policy_error(
        "K8sRequiredProbes",
        "probes",
        4,
        "3d-render",
        "blender",
        "template:3: eval_conflict_error: complete rules must not produce multiple outputs",
    )];
    report
}
