//! The change since the previous run, pure: this run's counts compared with the violations the
//! previous run pushed to Loki (read by `report_sinks::LokiClient::previous_run`).
//!
//! A workload is (kind, namespace, name, rule), compared per team: **new** when this run flags
//! it for a team and the previous run did not flag it for that team, **fixed** when the previous
//! run flagged it for a team and this run does not. So a namespace that moved to another team
//! is new for its new team and fixed for its old one, and a team added to the config starts
//! with every violation new. Only what this run evaluates can be fixed: previous violations of a
//! rule or a workload kind no longer configured are left out, not called fixed. A team no longer
//! configured is left out too.

use std::collections::{BTreeMap, BTreeSet};

use report_sinks::PreviousViolation;
use report_sinks::model::{FixedWorkload, RuleReport, TeamReport};

use crate::config::Config;

/// (namespace, rule) → the (kind, name) of the workloads it flagged.
type Flagged<'a> = BTreeMap<(String, String), BTreeSet<(&'a str, &'a str)>>;

/// `teams` with every rule compared with `previous` (the previous run's violation lines): new
/// workloads marked (and named first), fixed ones listed; a (namespace, rule) whose workloads
/// were all fixed is added with a count of 0.
pub fn compare(
    mut teams: BTreeMap<String, TeamReport>,
    previous: &[PreviousViolation],
    config: &Config,
) -> BTreeMap<String, TeamReport> {
    let mut before = flagged_per_team(previous, config);
    for (team, report) in &mut teams {
        let flagged = before.remove(team.as_str()).unwrap_or_default();
        compare_team(report, flagged, config.max_names_per_rule);
    }
    teams
}

/// The previous violations this run could flag again, per team.
fn flagged_per_team<'a>(
    previous: &'a [PreviousViolation],
    config: &Config,
) -> BTreeMap<&'a str, Flagged<'a>> {
    let mut per_team: BTreeMap<&str, Flagged<'_>> = BTreeMap::new();
    for v in previous {
        let evaluated = config.constraint_kinds.contains(&v.rule)
            && config.workload_kinds.iter().any(|k| k.kind() == v.kind);
        if evaluated {
            per_team
                .entry(&v.team)
                .or_default()
                .entry((v.namespace.clone(), v.rule.clone()))
                .or_default()
                .insert((&v.kind, &v.name));
        }
    }
    per_team
}

fn compare_team(report: &mut TeamReport, mut flagged: Flagged<'_>, max_names: usize) {
    for (namespace, ns) in &mut report.namespaces {
        for (rule, rule_report) in &mut ns.rules {
            let before = flagged
                .remove(&(namespace.clone(), rule.clone()))
                .unwrap_or_default();
            let now: BTreeSet<(&str, &str)> = rule_report
                .workloads
                .iter()
                .map(|w| (w.kind.as_str(), w.name.as_str()))
                .collect();
            let fixed = before
                .iter()
                .filter(|key| !now.contains(*key))
                .map(|&(kind, name)| fixed_workload(kind, name))
                .collect();
            let compared = std::mem::take(rule_report).with_change(
                |w| !before.contains(&(w.kind.as_str(), w.name.as_str())),
                fixed,
                max_names,
            );
            *rule_report = compared;
        }
    }
    // what the previous run flagged where this run flags nothing: all fixed
    for ((namespace, rule), before) in flagged {
        let fixed = before
            .into_iter()
            .map(|(kind, name)| fixed_workload(kind, name))
            .collect();
        report
            .namespaces
            .entry(namespace)
            .or_default()
            .rules
            .insert(
                rule,
                RuleReport::default().with_change(|_| false, fixed, max_names),
            );
    }
}

fn fixed_workload(kind: &str, name: &str) -> FixedWorkload {
    FixedWorkload {
        name: name.to_string(),
        kind: kind.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::count::count;
    use crate::count::tests::result;

    fn config() -> Config {
        Config::from_yaml(
            "cluster: dev\ndefaultTeam: infra\nteams:\n  - {name: web, namespaces: ['web-*']}\n  - {name: raster, namespaces: ['dem-*']}\nconstraintKinds: [K8sRequiredLabels, K8sContainerLimits]\nmaxNamesPerRule: 2\n",
        )
        .unwrap()
    }

    fn was(team: &str, namespace: &str, rule: &str, kind: &str, name: &str) -> PreviousViolation {
        PreviousViolation {
            team: team.into(),
            namespace: namespace.into(),
            rule: rule.into(),
            kind: kind.into(),
            name: name.into(),
        }
    }

    fn labels(kind: &str, namespace: &str, name: &str) -> crate::count::Finding {
        result(
            "K8sRequiredLabels",
            "labels",
            kind,
            namespace,
            name,
            "missing owner",
        )
    }

    #[test]
    fn new_and_fixed_per_team_with_new_names_first() {
        let config = config();
        let teams = count(
            &config,
            &[
                labels("Deployment", "web-shop", "api"),
                labels("Deployment", "web-shop", "cart"),
                labels("Deployment", "web-shop", "zeta"),
                labels("StatefulSet", "web-shop", "api"),
            ],
        );
        let previous = [
            was("web", "web-shop", "K8sRequiredLabels", "Deployment", "api"),
            was("web", "web-shop", "K8sRequiredLabels", "Deployment", "cart"),
            was("web", "web-shop", "K8sRequiredLabels", "Deployment", "gone"),
            was("web", "web-old", "K8sContainerLimits", "StatefulSet", "db"),
        ];
        let teams = compare(teams, &previous, &config);
        let web = &teams["web"];
        assert_eq!((web.total(), web.new_count(), web.fixed_count()), (4, 2, 2));
        let rule = &web.namespaces["web-shop"].rules["K8sRequiredLabels"];
        assert_eq!(rule.new, 2);
        // new first (sorted by name, kind), then the rest, capped at maxNamesPerRule
        assert_eq!(rule.names, ["statefulset/api", "zeta"]);
        assert_eq!(rule.more, 2);
        let new: Vec<(&str, bool)> = rule
            .workloads
            .iter()
            .map(|w| (w.name.as_str(), w.new))
            .collect();
        assert_eq!(
            new,
            [
                ("api", false),
                ("api", true),
                ("cart", false),
                ("zeta", true)
            ]
        );
        assert_eq!(rule.fixed, [fixed_workload("Deployment", "gone")]);
        // a namespace whose violations were all fixed is there with a count of 0
        let old = &web.namespaces["web-old"].rules["K8sContainerLimits"];
        assert_eq!((old.count, old.new), (0, 0));
        assert_eq!(old.fixed, [fixed_workload("StatefulSet", "db")]);
        assert!(!web.namespaces["web-old"].has_findings());
        // untouched teams: nothing before, nothing now
        assert_eq!(
            (teams["raster"].new_count(), teams["raster"].fixed_count()),
            (0, 0)
        );
    }

    #[test]
    fn a_moved_namespace_is_new_for_its_new_team_and_fixed_for_its_old_one() {
        let config = config();
        let teams = count(&config, &[labels("Deployment", "dem-dev", "api")]);
        let previous = [was(
            "web",
            "dem-dev",
            "K8sRequiredLabels",
            "Deployment",
            "api",
        )];
        let teams = compare(teams, &previous, &config);
        assert_eq!(
            (teams["raster"].new_count(), teams["raster"].fixed_count()),
            (1, 0)
        );
        assert_eq!(
            (teams["web"].new_count(), teams["web"].fixed_count()),
            (0, 1)
        );
    }

    #[test]
    fn rules_kinds_and_teams_no_longer_configured_are_never_fixed() {
        let config = config();
        let teams = count(&config, &[]);
        let previous = [
            was("web", "web-shop", "K8sRetired", "Deployment", "api"),
            was("web", "web-shop", "K8sRequiredLabels", "DaemonSet", "agent"),
            was("gone-team", "x", "K8sRequiredLabels", "Deployment", "api"),
        ];
        let teams = compare(teams, &previous, &config);
        assert!(
            teams
                .values()
                .all(|t| t.fixed_count() == 0 && t.namespaces.is_empty())
        );
        assert!(!teams.contains_key("gone-team"));
    }

    #[test]
    fn the_same_violations_are_unchanged() {
        let config = config();
        let results = [labels("Deployment", "web-shop", "api")];
        let previous = [was(
            "web",
            "web-shop",
            "K8sRequiredLabels",
            "Deployment",
            "api",
        )];
        let teams = compare(count(&config, &results), &previous, &config);
        assert_eq!(
            (teams["web"].new_count(), teams["web"].fixed_count()),
            (0, 0)
        );
        assert_eq!(
            teams["web"].namespaces["web-shop"].rules["K8sRequiredLabels"].names,
            ["api"]
        );
    }
}
