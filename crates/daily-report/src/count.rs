//! Counting: evaluation results → per team → namespace → rule counts, and the policy errors.
//!
//! A workload is keyed by (kind, namespace, name): a StatefulSet and a Deployment of the same
//! name are two workloads. A workload flagged by two Constraints of one kind (`<rule>-warn` and
//! `<rule>-enforced`) counts once for that rule, and so does a workload flagged both directly and
//! through the resource an ExpansionTemplate makes of it (its Pod): the direct finding is the one
//! listed, and message categories are matched on what the Constraint said, without Gatekeeper's
//! `[Implied by <template>] ` prefix. Only results about the configured workload kinds
//! and from the configured Constraint kinds count; the result order does not matter.
//!
//! A result is either a violation or a policy error ([`FindingKind`]): Gatekeeper reports a
//! policy that failed to evaluate on an object (a Rego evaluation error such as
//! `eval_conflict_error`, or a matching error) as a result whose message is the error text. That
//! is nothing the workload's team can fix, so errors are counted apart (`RuleReport::errors`),
//! never listed as violating workloads and never given a message category; [`policy_errors`]
//! summarises them per Constraint for the default team.

use std::collections::{BTreeMap, BTreeSet};

use gatekeeper_engine::ReviewResult;
use report_sinks::model::{ObjectName, PolicyError, RuleReport, TeamReport, ViolatingWorkload};

use crate::config::Config;

/// Whether a result says something about the object or about the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FindingKind {
    /// The object violates the Constraint.
    Violation,
    /// The Constraint failed to evaluate on the object; the message is the error.
    PolicyError,
}

impl FindingKind {
    /// The kind of an engine result. Both engines mark an evaluation error (and a matching
    /// error) by giving it no `details`: gator prints `"metadata": {"details": null}` (or no
    /// `metadata` for a matching error) where a violation always has details (`{}` at least),
    /// and the embedded engine's results follow gator's. A template that sets `details: null`
    /// on a violation itself is therefore read as an error from gator's output.
    pub fn of(result: &ReviewResult) -> FindingKind {
        match result.details {
            Some(_) => FindingKind::Violation,
            None => FindingKind::PolicyError,
        }
    }
}

/// One result as an evaluator reports it: which Constraint flagged which object, and why.
///
/// The wiring maps each engine's result (`gatekeeper_engine::ReviewResult`, through `From`) to
/// this, so the pipeline does not depend on an engine.
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
    /// The violation message, or the error text of a policy error.
    pub msg: String,
    /// A violation or a policy error.
    pub kind: FindingKind,
    /// The ExpansionTemplate whose resultant (e.g. the workload's Pod) gave the result; `None`
    /// when the Constraint reviewed the object itself.
    pub implied_by: Option<String>,
}

impl Finding {
    /// The message without Gatekeeper's `[Implied by <template>] ` prefix.
    pub fn own_message(&self) -> &str {
        match &self.implied_by {
            Some(template) => self
                .msg
                .strip_prefix(gatekeeper_engine::result::IMPLIED_BY_PREFIX)
                .and_then(|rest| rest.strip_prefix(template.as_str()))
                .and_then(|rest| rest.strip_prefix("] "))
                .unwrap_or(&self.msg),
            None => &self.msg,
        }
    }
}

impl From<ReviewResult> for Finding {
    fn from(result: ReviewResult) -> Finding {
        Finding {
            kind: FindingKind::of(&result),
            implied_by: result.implied_by().map(str::to_string),
            constraint_kind: result.constraint.kind,
            constraint_name: result.constraint.name,
            object_kind: result.object.kind,
            namespace: result.object.namespace,
            name: result.object.name,
            msg: result.msg,
        }
    }
}

/// What one rule found in one namespace while counting.
#[derive(Default)]
struct RuleFindings<'a> {
    violating: Vec<ViolatingWorkload>,
    erring: BTreeSet<(&'a str, &'a str)>,
}

/// Every configured message category name and `other`, sorted and distinct (the categories of
/// each `team_total` line).
pub fn category_names(config: &Config) -> Vec<String> {
    let names: BTreeSet<String> = config
        .categories
        .values()
        .flatten()
        .map(|c| c.name.clone())
        .chain(std::iter::once("other".to_string()))
        .collect();
    names.into_iter().collect()
}

/// Gives every rule report each configured category of its rule and `other`, 0 when no
/// workload is in it, so that the summary lines (and the dashboard's columns) show 0 rather
/// than nothing.
pub fn fill_categories(teams: &mut BTreeMap<String, TeamReport>, config: &Config) {
    for team in teams.values_mut() {
        for namespace in team.namespaces.values_mut() {
            for (rule, report) in &mut namespace.rules {
                let configured = config.categories.get(rule).into_iter().flatten();
                for name in configured.map(|c| c.name.as_str()).chain(["other"]) {
                    report.categories.entry(name.to_string()).or_insert(0);
                }
            }
        }
    }
}

/// Counts `results` per team → namespace → rule. Every configured team (and the default team)
/// is present, clean teams with an empty report.
pub fn count(config: &Config, results: &[Finding]) -> BTreeMap<String, TeamReport> {
    let flagged_directly: BTreeSet<DirectKey<'_>> = results
        .iter()
        .filter(|r| r.implied_by.is_none() && r.kind == FindingKind::Violation)
        .map(direct_key)
        .collect();
    let mut grouped: BTreeMap<(&str, &str), RuleFindings<'_>> = BTreeMap::new();
    for result in results {
        let Some(namespace) = result.namespace.as_deref() else {
            continue;
        };
        if result.implied_by.is_some()
            && result.kind == FindingKind::Violation
            && flagged_directly.contains(&direct_key(result))
        {
            continue;
        }
        if !config
            .workload_kinds
            .iter()
            .any(|kind| kind.kind() == result.object_kind)
            || !config.constraint_kinds.contains(&result.constraint_kind)
        {
            continue;
        }
        let found = grouped
            .entry((namespace, result.constraint_kind.as_str()))
            .or_default();
        match result.kind {
            FindingKind::Violation => found.violating.push(ViolatingWorkload {
                kind: result.object_kind.clone(),
                name: result.name.clone(),
                category: config
                    .category_of(&result.constraint_kind, result.own_message())
                    .to_string(),
                message: result.msg.clone(),
                new: false,
            }),
            FindingKind::PolicyError => {
                found
                    .erring
                    .insert((result.object_kind.as_str(), result.name.as_str()));
            }
        }
    }
    let mut teams: BTreeMap<String, TeamReport> = config
        .routes
        .teams()
        .into_iter()
        .map(|t| (t.to_string(), TeamReport::default()))
        .collect();
    for ((namespace, rule), found) in grouped {
        let team = config.routes.route(namespace).team.to_string();
        let report = RuleReport::from_workloads(found.violating, config.max_names_per_rule)
            .with_errors(found.erring.len());
        teams
            .entry(team)
            .or_default()
            .namespaces
            .entry(namespace.to_string())
            .or_default()
            .rules
            .insert(rule.to_string(), report);
    }
    teams
}

/// (rule, namespace, object kind, name): one workload as one rule sees it.
type DirectKey<'a> = (&'a str, Option<&'a str>, &'a str, &'a str);

fn direct_key(result: &Finding) -> DirectKey<'_> {
    (
        &result.constraint_kind,
        result.namespace.as_deref(),
        &result.object_kind,
        &result.name,
    )
}

/// Every Constraint of a configured kind that failed to evaluate, sorted by (rule, constraint):
/// the number of distinct objects (any kind, namespaced or not) it failed on, and the first of
/// them (by namespace, kind, name) with its error text.
pub fn policy_errors(config: &Config, results: &[Finding]) -> Vec<PolicyError> {
    let mut per_constraint: BTreeMap<(&str, &str), BTreeMap<ObjectName, &str>> = BTreeMap::new();
    for result in results {
        if result.kind != FindingKind::PolicyError
            || !config.constraint_kinds.contains(&result.constraint_kind)
        {
            continue;
        }
        let object = ObjectName {
            namespace: result.namespace.clone(),
            kind: result.object_kind.clone(),
            name: result.name.clone(),
        };
        let message = per_constraint
            .entry((&result.constraint_kind, &result.constraint_name))
            .or_default()
            .entry(object)
            .or_insert(&result.msg);
        // one object can err more than once (a matching and an evaluation error): keep the
        // smallest text, so the result does not depend on the order of the results
        *message = (*message).min(result.msg.as_str());
    }
    per_constraint
        .into_iter()
        .filter_map(|((rule, constraint), objects)| {
            let count = objects.len();
            let (first_object, message) = objects.into_iter().next()?;
            Some(PolicyError {
                rule: rule.to_string(),
                constraint: constraint.to_string(),
                objects: count,
                first_object,
                message: message.to_string(),
            })
        })
        .collect()
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
            kind: FindingKind::Violation,
            implied_by: None,
        }
    }

    /// `finding` as found through ExpansionTemplate `template` (its message prefixed as
    /// Gatekeeper prefixes it).
    pub(crate) fn implied(template: &str, finding: Finding) -> Finding {
        Finding {
            msg: format!("[Implied by {template}] {}", finding.msg),
            implied_by: Some(template.into()),
            ..finding
        }
    }

    /// `finding` as a policy error (its `msg` the error text).
    pub(crate) fn error(finding: Finding) -> Finding {
        Finding {
            kind: FindingKind::PolicyError,
            ..finding
        }
    }

    pub(crate) fn config() -> Config {
        Config::from_yaml(
            "cluster: dev\ndefaultTeam: infra\nteams:\n  - {name: raster, namespaces: ['dem-*', raster-dev]}\n  - {name: silenced, namespaces: ['kube-*']}\nconstraintKinds: [K8sRequiredLabels, K8sContainerLimits]\nmaxNamesPerRule: 2\ncategories:\n  K8sRequiredLabels:\n    - {name: missing, pattern: '^missing'}\n    - {name: invalid, pattern: 'invalid'}\n",
        )
        .unwrap()
    }

    #[test]
    fn a_workload_flagged_directly_and_through_its_pod_counts_once() {
        let labels = |name: &str, msg: &str| {
            result(
                "K8sRequiredLabels",
                "labels",
                "Deployment",
                "dem-dev",
                name,
                msg,
            )
        };
        let direct = labels("api", "invalid owner");
        let through_pod = implied(
            "expand-workloads",
            labels("api", "missing owner on the Pod"),
        );
        let only_pod = implied("expand-workloads", labels("web", "missing owner"));
        let results = [through_pod, direct, only_pod];
        let teams = count(&config(), &results);
        let rule = &teams["raster"].namespaces["dem-dev"].rules["K8sRequiredLabels"];
        assert_eq!(rule.count, 2);
        assert_eq!(rule.names, ["api", "web"]);
        // the direct finding is the one kept, and categories read the unprefixed message
        assert_eq!(rule.workloads[0].message, "invalid owner");
        assert_eq!(
            rule.workloads[1].message,
            "[Implied by expand-workloads] missing owner"
        );
        assert_eq!(rule.categories["invalid"], 1);
        assert_eq!(rule.categories["missing"], 1);
    }

    #[test]
    fn every_configured_category_and_other_is_filled_with_zero() {
        let config = config();
        assert_eq!(category_names(&config), ["invalid", "missing", "other"]);
        let results = [
            result(
                "K8sRequiredLabels",
                "labels",
                "Deployment",
                "dem-dev",
                "api",
                "missing x",
            ),
            result(
                "K8sContainerLimits",
                "limits",
                "Deployment",
                "dem-dev",
                "api",
                "no limits",
            ),
        ];
        let mut teams = count(&config, &results);
        fill_categories(&mut teams, &config);
        let rules = &teams["raster"].namespaces["dem-dev"].rules;
        let labels: Vec<(&str, usize)> = rules["K8sRequiredLabels"]
            .categories
            .iter()
            .map(|(c, n)| (c.as_str(), *n))
            .collect();
        assert_eq!(labels, [("invalid", 0), ("missing", 1), ("other", 0)]);
        let limits: Vec<(&str, usize)> = rules["K8sContainerLimits"]
            .categories
            .iter()
            .map(|(c, n)| (c.as_str(), *n))
            .collect();
        assert_eq!(
            limits,
            [("other", 1)],
            "a rule without categories has other only"
        );
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

    #[test]
    fn policy_errors_are_counted_apart_never_listed_and_never_categorised() {
        let results = [
            result(
                "K8sRequiredLabels",
                "labels",
                "Deployment",
                "raster-dev",
                "api",
                "missing owner",
            ),
            // the same workload also errs under a second Constraint of the rule
            error(result(
                "K8sRequiredLabels",
                "labels-enforced",
                "Deployment",
                "raster-dev",
                "api",
                "eval_conflict_error: complete rules must not produce multiple outputs",
            )),
            // erring under both Constraints of the rule: one erring workload
            error(result(
                "K8sRequiredLabels",
                "labels",
                "Deployment",
                "raster-dev",
                "worker",
                "eval_conflict_error: complete rules must not produce multiple outputs",
            )),
            error(result(
                "K8sRequiredLabels",
                "labels-enforced",
                "Deployment",
                "raster-dev",
                "worker",
                "eval_conflict_error: complete rules must not produce multiple outputs",
            )),
            error(result(
                "K8sContainerLimits",
                "limits",
                "StatefulSet",
                "dem-a",
                "db",
                "missing owner",
            )),
        ];
        let teams = count(&config(), &results);
        let labels = &teams["raster"].namespaces["raster-dev"].rules["K8sRequiredLabels"];
        assert_eq!((labels.count, labels.errors), (1, 2));
        assert_eq!(labels.names, ["api"]);
        assert_eq!(
            labels.categories,
            BTreeMap::from([("missing".to_string(), 1)])
        );
        assert_eq!(labels.workloads.len(), 1);
        // an error text never fills a category, not even one whose pattern it matches
        let limits = &teams["raster"].namespaces["dem-a"].rules["K8sContainerLimits"];
        assert_eq!((limits.count, limits.errors), (0, 1));
        assert!(limits.names.is_empty() && limits.categories.is_empty());
        assert_eq!((teams["raster"].total(), teams["raster"].errors()), (1, 3));
        assert_eq!(teams["raster"].violating_namespaces(), 1);
    }

    #[test]
    fn policy_errors_name_each_constraint_with_its_objects_and_first_error() {
        let conflict = "eval_conflict_error: complete rules must not produce multiple outputs";
        let mut results = vec![
            error(result(
                "K8sRequiredLabels",
                "labels",
                "Deployment",
                "raster-dev",
                "b",
                "later",
            )),
            error(result(
                "K8sRequiredLabels",
                "labels",
                "Deployment",
                "dem-a",
                "z",
                conflict,
            )),
            error(result(
                "K8sRequiredLabels",
                "labels",
                "StatefulSet",
                "dem-a",
                "a",
                "kind sorts after",
            )),
            // one object erring twice counts once
            error(result(
                "K8sRequiredLabels",
                "labels",
                "Deployment",
                "dem-a",
                "z",
                conflict,
            )),
            // any object counts, workload kind or not, namespaced or not
            Finding {
                namespace: None,
                ..error(result(
                    "K8sRequiredLabels",
                    "labels",
                    "Namespace",
                    "",
                    "dem-a",
                    "ns error",
                ))
            },
            error(result(
                "K8sContainerLimits",
                "limits",
                "Deployment",
                "dem-a",
                "x",
                "limits error",
            )),
            // violations and other Constraint kinds are not policy errors of the report
            result(
                "K8sRequiredLabels",
                "labels",
                "Deployment",
                "dem-a",
                "v",
                "missing owner",
            ),
            error(result(
                "K8sOther",
                "other",
                "Deployment",
                "dem-a",
                "x",
                "not a rule",
            )),
        ];
        let expected = vec![
            PolicyError {
                rule: "K8sContainerLimits".into(),
                constraint: "limits".into(),
                objects: 1,
                first_object: ObjectName {
                    namespace: Some("dem-a".into()),
                    kind: "Deployment".into(),
                    name: "x".into(),
                },
                message: "limits error".into(),
            },
            PolicyError {
                rule: "K8sRequiredLabels".into(),
                constraint: "labels".into(),
                objects: 4,
                first_object: ObjectName {
                    namespace: None,
                    kind: "Namespace".into(),
                    name: "dem-a".into(),
                },
                message: "ns error".into(),
            },
        ];
        assert_eq!(policy_errors(&config(), &results), expected);
        results.reverse();
        assert_eq!(policy_errors(&config(), &results), expected);
        // without the cluster-scoped object the first is the Deployment dem-a/z
        results.retain(|r| r.namespace.is_some());
        let errors = policy_errors(&config(), &results);
        assert_eq!(errors[1].objects, 3);
        assert_eq!(errors[1].first_object.to_string(), "Deployment dem-a/z");
        assert_eq!(errors[1].message, conflict);
    }

    #[test]
    fn gators_evaluation_errors_are_policy_errors() {
        // `gator test -o json` of gator v3.21.1 on the fixtures/policy-errors projection: an
        // evaluation error is a result with `"metadata": {"details": null}`
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../gator-runner/tests/data/gator-policy-errors.json");
        let text = std::fs::read_to_string(path).unwrap();
        let results = gator_runner::run::parse_results(&text).unwrap();
        let findings: Vec<Finding> = results.into_iter().map(Finding::from).collect();
        let mut erring: Vec<(&str, &str, &str)> = findings
            .iter()
            .filter(|f| f.kind == FindingKind::PolicyError)
            .map(|f| (f.constraint_name.as_str(), f.name.as_str(), f.msg.as_str()))
            .collect();
        erring.sort();
        let conflict =
            "template:3: eval_conflict_error: complete rules must not produce multiple outputs";
        assert_eq!(
            erring,
            [
                ("owner-required", "checkout", conflict),
                ("owner-required", "ci", conflict),
                ("owner-required", "render", conflict),
                ("owner-required", "worker", conflict),
                ("owner-required-prod", "checkout", conflict),
            ]
        );
        assert!(
            findings
                .iter()
                .filter(|f| f.kind == FindingKind::Violation)
                .all(|f| f.msg.ends_with("has no owner: set the owner label"))
        );
        assert_eq!(findings.len(), 9);
    }

    #[test]
    fn a_result_without_details_is_a_policy_error() {
        let text = r#"[
            {"msg": "v", "metadata": {"details": {}}, "constraint": {"kind": "K", "metadata": {"name": "c"}}},
            {"msg": "e", "metadata": {"details": null}, "constraint": {"kind": "K", "metadata": {"name": "c"}}},
            {"msg": "expression 'object.x' resulted in error: no such key: x", "constraint": {"kind": "K", "metadata": {"name": "c"}}},
            {"msg": "too many replicas", "constraint": {"kind": "K", "metadata": {"name": "c"}}}
        ]"#;
        let kinds: Vec<FindingKind> = gator_runner::run::parse_results(text)
            .unwrap()
            .iter()
            .map(FindingKind::of)
            .collect();
        assert_eq!(
            kinds,
            [
                FindingKind::Violation,
                FindingKind::PolicyError,
                // A CEL template's results carry no metadata: the text tells an error.
                FindingKind::PolicyError,
                FindingKind::Violation
            ]
        );
    }
}
