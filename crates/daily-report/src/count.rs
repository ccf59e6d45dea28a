//! Counting: evaluation results → per team → namespace → rule counts.
//!
//! A workload is keyed by (kind, namespace, name): a StatefulSet and a Deployment of the same
//! name are two workloads. A workload flagged by two Constraints of one kind (`<rule>-warn` and
//! `<rule>-enforced`) counts once for that rule. Only results about the configured workload kinds
//! and from the configured Constraint kinds count; the result order does not matter.

use std::collections::BTreeMap;

use report_sinks::model::{RuleReport, TeamReport, ViolatingWorkload};

use crate::config::Config;

/// One violation as an evaluator reports it: which Constraint flagged which object, and why.
///
/// The wiring maps each engine's result (e.g. `gatekeeper_engine::ReviewResult`) to this, so the
/// pipeline does not depend on an engine.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Finding {
    /// The Constraint kind (the rule), e.g. `K8sRequiredLabels`.
    pub constraint_kind: String,
    /// The Constraint's `metadata.name`.
    pub constraint_name: String,
    /// The object's kind, e.g. `Deployment`.
    pub object_kind: String,
    /// The object's namespace; `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    /// The object's name.
    pub name: String,
    /// The violation message.
    pub msg: String,
}

/// Counts `results` per team → namespace → rule. Every configured team (and the default team)
/// is present, clean teams with an empty report.
pub fn count(config: &Config, results: &[Finding]) -> BTreeMap<String, TeamReport> {
    let mut grouped: BTreeMap<(&str, &str), Vec<ViolatingWorkload>> = BTreeMap::new();
    for result in results {
        let Some(namespace) = result.namespace.as_deref() else {
            continue;
        };
        if !config.workload_kinds.contains(&result.object_kind)
            || !config.constraint_kinds.contains(&result.constraint_kind)
        {
            continue;
        }
        grouped
            .entry((namespace, result.constraint_kind.as_str()))
            .or_default()
            .push(ViolatingWorkload {
                kind: result.object_kind.clone(),
                name: result.name.clone(),
                category: config
                    .category_of(&result.constraint_kind, &result.msg)
                    .to_string(),
                message: result.msg.clone(),
            });
    }
    let mut teams: BTreeMap<String, TeamReport> = config
        .routes
        .teams()
        .into_iter()
        .map(|t| (t.to_string(), TeamReport::default()))
        .collect();
    for ((namespace, rule), workloads) in grouped {
        let team = config.routes.route(namespace).team.to_string();
        teams
            .entry(team)
            .or_default()
            .namespaces
            .entry(namespace.to_string())
            .or_default()
            .rules
            .insert(
                rule.to_string(),
                RuleReport::from_workloads(workloads, config.max_names_per_rule),
            );
    }
    teams
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A result of constraint `kind`/`name` about `object_kind` `namespace/name`.
    pub(crate) fn result(
        kind: &str,
        constraint: &str,
        object_kind: &str,
        namespace: &str,
        name: &str,
        msg: &str,
    ) -> Finding {
        Finding {
            constraint_kind: kind.into(),
            constraint_name: constraint.into(),
            object_kind: object_kind.into(),
            namespace: Some(namespace.into()),
            name: name.into(),
            msg: msg.into(),
        }
    }

    pub(crate) fn config() -> Config {
        Config::from_yaml(
            "cluster: dev\ndefaultTeam: infra\nteams:\n  - {name: raster, namespaces: ['dem-*', raster-dev]}\n  - {name: silenced, namespaces: ['kube-*']}\nconstraintKinds: [K8sRequiredLabels, K8sContainerLimits]\nmaxNamesPerRule: 2\ncategories:\n  K8sRequiredLabels:\n    - {name: missing, pattern: '^missing'}\n    - {name: invalid, pattern: 'invalid'}\n",
        )
        .unwrap()
    }

    #[test]
    fn a_workload_flagged_by_warn_and_enforced_counts_once() {
        let results = [
            result(
                "K8sRequiredLabels",
                "labels-warn",
                "Deployment",
                "dem-dev",
                "api",
                "missing owner",
            ),
            result(
                "K8sRequiredLabels",
                "labels-enforced",
                "Deployment",
                "dem-dev",
                "api",
                "missing owner",
            ),
        ];
        let teams = count(&config(), &results);
        let rule = &teams["raster"].namespaces["dem-dev"].rules["K8sRequiredLabels"];
        assert_eq!(rule.count, 1);
        assert_eq!(rule.names, ["api"]);
    }

    #[test]
    fn statefulset_and_deployment_of_one_name_are_two_workloads() {
        let results = [
            result(
                "K8sRequiredLabels",
                "labels",
                "Deployment",
                "raster-dev",
                "api",
                "missing owner",
            ),
            result(
                "K8sRequiredLabels",
                "labels",
                "StatefulSet",
                "raster-dev",
                "api",
                "missing owner",
            ),
        ];
        let teams = count(&config(), &results);
        let rule = &teams["raster"].namespaces["raster-dev"].rules["K8sRequiredLabels"];
        assert_eq!(rule.count, 2);
        assert_eq!(rule.names, ["api", "statefulset/api"]);
    }

    #[test]
    fn names_are_sorted_and_capped_whatever_the_engine_order() {
        let names = ["zeta", "alpha", "mid", "beta"];
        let forward: Vec<_> = names
            .iter()
            .map(|n| {
                result(
                    "K8sContainerLimits",
                    "limits",
                    "Deployment",
                    "dem-a",
                    n,
                    "no limits",
                )
            })
            .collect();
        let mut backward = forward.clone();
        backward.reverse();
        let a = count(&config(), &forward);
        let b = count(&config(), &backward);
        assert_eq!(a, b);
        let rule = &a["raster"].namespaces["dem-a"].rules["K8sContainerLimits"];
        assert_eq!((rule.count, rule.more), (4, 2));
        assert_eq!(rule.names, ["alpha", "beta"]);
    }

    #[test]
    fn routing_teams_categories_and_filters() {
        let results = [
            result(
                "K8sRequiredLabels",
                "labels",
                "Deployment",
                "raster-dev2",
                "a",
                "missing owner",
            ),
            result(
                "K8sRequiredLabels",
                "labels",
                "Deployment",
                "kube-system",
                "b",
                "label invalid",
            ),
            result(
                "K8sRequiredLabels",
                "labels",
                "Deployment",
                "raster-dev",
                "c",
                "label invalid",
            ),
            result(
                "K8sRequiredLabels",
                "labels",
                "Deployment",
                "raster-dev",
                "d",
                "weird",
            ),
            result(
                "K8sRequiredLabels",
                "labels",
                "Pod",
                "raster-dev",
                "pod",
                "missing",
            ),
            result(
                "K8sOther",
                "other",
                "Deployment",
                "raster-dev",
                "x",
                "missing",
            ),
        ];
        let teams = count(&config(), &results);
        assert_eq!(
            teams.keys().collect::<Vec<_>>(),
            ["infra", "raster", "silenced"]
        );
        // routing matches whole names: raster-dev2 is not raster-dev
        assert!(teams["infra"].namespaces.contains_key("raster-dev2"));
        assert!(teams["silenced"].namespaces.contains_key("kube-system"));
        let rule = &teams["raster"].namespaces["raster-dev"].rules["K8sRequiredLabels"];
        assert_eq!(rule.count, 2);
        assert_eq!(
            rule.categories,
            BTreeMap::from([("invalid".to_string(), 1), ("other".to_string(), 1)])
        );
        assert_eq!(teams["raster"].total(), 2);
    }
}
