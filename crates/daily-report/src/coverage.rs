//! Which workload kinds each configured rule can see, and how: directly (a Constraint's
//! `spec.match` selects the workload itself) or through ExpansionTemplates (it selects the
//! resource a template makes of the workload, e.g. a Deployment's Pod). Pure.
//!
//! This is what keeps the report from printing silent zeros: a rule whose Constraints can see
//! none of the configured workload kinds — most pod-security rules match only `Pod` — would
//! count nothing and look clean. [`Coverage::warnings`] names every such rule (the run puts the
//! lines into the default team's problems message, the run staying ok), and `workload-report
//! explain` prints the whole [`Coverage`].
//!
//! Only the criteria that depend on kinds and the review source (`match.kinds`,
//! `match.source`) are considered, through the embedded engine's [`ExpansionSet::visible_to`]:
//! namespaces, labels and names depend on the objects. A Constraint whose `match` cannot be read
//! is an evaluation problem the engines report; it keeps its rule out of the warnings.

use std::collections::{BTreeMap, BTreeSet};

use cluster_projection::{ClusterState, WorkloadKind};
use gatekeeper_engine::matching::{Match, group_version};
use gatekeeper_engine::{ExpansionError, ExpansionSet, ExpansionTemplate, Gvk};
use serde_json::Value;

/// One way as `explain -o json` shows it: `{"directly": true}` or
/// `{"through": [templates…], "as": kind}`.
fn way_json(way: &Way) -> Value {
    match way {
        Way::Directly => serde_json::json!({"directly": true}),
        Way::Through { templates, kind } => serde_json::json!({"through": templates, "as": kind}),
    }
}

/// How one rule sees one workload kind.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Way {
    /// A Constraint matches the workload itself.
    Directly,
    /// A Constraint matches the resource these ExpansionTemplates make of it (outermost first,
    /// e.g. CronJob → Job → Pod), of this kind.
    Through {
        /// The ExpansionTemplates, outermost first.
        templates: Vec<String>,
        /// The kind of the resultant the Constraint matches, e.g. `Pod`.
        kind: String,
    },
}

/// What one configured rule (Constraint kind) can see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleCoverage {
    /// The Constraint kind, e.g. `K8sPSPPrivilegedContainer`.
    pub rule: String,
    /// How many Constraints of the kind were read.
    pub constraints: usize,
    /// The kinds its Constraints name in `spec.match.kinds` (sorted; empty when a Constraint
    /// names none, i.e. matches every kind).
    pub matched_kinds: BTreeSet<String>,
    /// Whether some Constraint's `match` could not be read (the engines report it).
    pub unreadable: bool,
    /// For each configured workload kind, the ways the rule sees it (empty: it cannot).
    pub kinds: BTreeMap<WorkloadKind, BTreeSet<Way>>,
}

impl RuleCoverage {
    /// One rule's lines of `workload-report explain`.
    pub fn to_text(&self) -> String {
        let constraints = match self.constraints {
            0 => "no constraints".to_string(),
            1 => "1 constraint".to_string(),
            n => format!("{n} constraints"),
        };
        let matched = if self.matched_kinds.is_empty() {
            "any kind".to_string()
        } else {
            let kinds: Vec<&str> = self.matched_kinds.iter().map(String::as_str).collect();
            kinds.join(", ")
        };
        let mut out = format!("{} ({constraints}; match kinds: {matched})\n", self.rule);
        if self.unreadable {
            out.push_str("  (a constraint's spec.match cannot be read: the engine reports it)\n");
        }
        for (kind, ways) in &self.kinds {
            let how = if ways.is_empty() {
                "cannot flag".to_string()
            } else {
                ways.iter().map(describe).collect::<Vec<_>>().join("; ")
            };
            out.push_str(&format!("  {kind}: {how}\n"));
        }
        out
    }

    /// Whether the rule has Constraints and none of them can see any configured workload kind.
    pub fn cannot_flag(&self) -> bool {
        self.constraints > 0 && !self.unreadable && self.kinds.values().all(BTreeSet::is_empty)
    }

    /// Whether the rule sees some workload kind through an ExpansionTemplate.
    pub fn sees_through_expansion(&self) -> bool {
        self.kinds
            .values()
            .flatten()
            .any(|way| matches!(way, Way::Through { .. }))
    }
}

/// The coverage of every configured rule, in configuration order, and the ExpansionTemplates in
/// effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Coverage {
    /// One entry per configured rule.
    pub rules: Vec<RuleCoverage>,
    /// The ExpansionTemplates read, by name: (the kinds they expand, the kind they generate).
    pub templates: BTreeMap<String, (Vec<String>, String)>,
    /// The configured workload kinds.
    pub workload_kinds: Vec<WorkloadKind>,
    /// The cluster's mutators, as `Kind name`, sorted.
    pub mutators: Vec<String>,
}

impl Coverage {
    /// The text `workload-report explain` prints: the ExpansionTemplates, then per rule which
    /// workload kinds it can see and how, then the warnings.
    pub fn to_text(&self) -> String {
        let mut out = String::from("expansion templates:");
        if self.templates.is_empty() {
            out.push_str(" none\n");
        } else {
            out.push('\n');
            for (name, (applied, generated)) in &self.templates {
                out.push_str(&format!("  {name}: {} → {generated}\n", applied.join(", ")));
            }
        }
        for rule in &self.rules {
            out.push_str(&rule.to_text());
        }
        for warning in self.warnings() {
            out.push_str(&format!("warning: {warning}\n"));
        }
        out
    }

    /// What `workload-report explain -o json|yaml` prints: the same as [`Coverage::to_text`], as
    /// one document (`expansionTemplates`, `rules` with each workload kind's ways, `mutators`,
    /// `warnings`).
    pub fn to_json(&self) -> Value {
        let templates: Vec<Value> = self
            .templates
            .iter()
            .map(|(name, (applied, generated))| {
                serde_json::json!({"name": name, "applyTo": applied, "generates": generated})
            })
            .collect();
        let rules: Vec<Value> = self
            .rules
            .iter()
            .map(|rule| {
                let kinds: serde_json::Map<String, Value> = rule
                    .kinds
                    .iter()
                    .map(|(kind, ways)| {
                        let ways: Vec<Value> = ways.iter().map(way_json).collect();
                        (kind.kind().to_string(), Value::Array(ways))
                    })
                    .collect();
                serde_json::json!({
                    "rule": rule.rule,
                    "constraints": rule.constraints,
                    "matchKinds": rule.matched_kinds,
                    "matchUnreadable": rule.unreadable,
                    "canFlag": !rule.cannot_flag(),
                    "kinds": kinds,
                })
            })
            .collect();
        serde_json::json!({
            "expansionTemplates": templates,
            "rules": rules,
            "mutators": self.mutators,
            "warnings": self.warnings(),
        })
    }

    /// The warning line of every rule that cannot flag a workload, e.g. `K8sPSPPrivilegedContainer
    /// matches only Pod; no ExpansionTemplate covers Deployment, StatefulSet: this rule cannot
    /// flag a workload`.
    /// Then, when the cluster has both ExpansionTemplates and mutators, that the mutators are not
    /// applied to the expanded resources.
    pub fn warnings(&self) -> Vec<String> {
        let workloads: Vec<&str> = self.workload_kinds.iter().map(|k| k.kind()).collect();
        let mut out: Vec<String> = self
            .rules
            .iter()
            .filter(|rule| rule.cannot_flag())
            .map(|rule| {
                format!(
                    "{} matches only {}; no ExpansionTemplate covers {}: this rule cannot flag a workload",
                    rule.rule,
                    describe_matched(rule),
                    workloads.join(", ")
                )
            })
            .collect();
        if !self.templates.is_empty() && !self.mutators.is_empty() {
            out.push(self.mutators_warning());
        }
        out
    }

    /// The mutators are not applied to expanded resources (the workloads themselves were mutated
    /// when they were admitted; what Gatekeeper expands them into is mutated too, but not here).
    fn mutators_warning(&self) -> String {
        const SHOWN: usize = 5;
        let mut named = self
            .mutators
            .iter()
            .take(SHOWN)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ");
        if self.mutators.len() > SHOWN {
            named.push_str(&format!(", +{} more", self.mutators.len() - SHOWN));
        }
        let count = self.mutators.len();
        let noun = if count == 1 { "mutator" } else { "mutators" };
        format!(
            "the cluster has {count} Gatekeeper {noun} ({named}): Gatekeeper applies them to the \
             resources it expands workloads into, the report does not, so findings through \
             ExpansionTemplates may differ from Gatekeeper's"
        )
    }

    /// The rules that see a workload kind through an ExpansionTemplate.
    pub fn expansion_rules(&self) -> BTreeSet<String> {
        self.rules
            .iter()
            .filter(|rule| rule.sees_through_expansion())
            .map(|rule| rule.rule.clone())
            .collect()
    }
}

/// What a rule's Constraints match, for the warning: their kinds, or (when they name none) the
/// review source they are limited to.
fn describe_matched(rule: &RuleCoverage) -> String {
    if rule.matched_kinds.is_empty() {
        "generated resources".to_string()
    } else {
        rule.matched_kinds
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// How a rule sees a kind, in words.
fn describe(way: &Way) -> String {
    match way {
        Way::Directly => "directly".to_string(),
        Way::Through { templates, kind } if templates.len() == 1 => {
            format!("through ExpansionTemplate {} (as {kind})", templates[0])
        }
        Way::Through { templates, kind } => format!(
            "through ExpansionTemplates {} (as {kind})",
            templates.join(" → ")
        ),
    }
}

/// The coverage of `rules` over `workload_kinds` in `state` (its Constraints and
/// ExpansionTemplates). Fails when the ExpansionTemplates are not usable (gator's errors: the
/// engines refuse them too).
pub fn coverage(
    rules: &[String],
    workload_kinds: &[WorkloadKind],
    state: &ClusterState,
) -> Result<Coverage, ExpansionError> {
    let templates = state
        .expansion_templates
        .iter()
        .map(|t| ExpansionTemplate::from_object(&t.raw.to_value()))
        .collect::<Result<Vec<_>, _>>()?;
    let expansions = ExpansionSet::from_templates(templates)?;
    let mut workload_kinds = workload_kinds.to_vec();
    workload_kinds.sort();
    workload_kinds.dedup();
    let rules = rules
        .iter()
        .map(|rule| {
            let specs: Vec<Value> = state
                .constraints
                .iter()
                .filter(|c| &c.kind == rule)
                .map(|c| c.spec.clone())
                .collect();
            rule_coverage(rule, &specs, &workload_kinds, &expansions)
        })
        .collect();
    let templates = expansions
        .templates()
        .iter()
        .map(|t| {
            let mut applied: Vec<String> = t
                .apply_to
                .iter()
                .flat_map(|a| a.kinds.iter().cloned())
                .collect();
            applied.sort();
            applied.dedup();
            (t.name.clone(), (applied, t.generated.kind.clone()))
        })
        .collect();
    let mutators = state
        .mutators
        .iter()
        .map(|m| format!("{} {}", m.kind, m.name))
        .collect();
    Ok(Coverage {
        rules,
        templates,
        workload_kinds,
        mutators,
    })
}

fn rule_coverage(
    rule: &str,
    specs: &[Value],
    workload_kinds: &[WorkloadKind],
    expansions: &ExpansionSet,
) -> RuleCoverage {
    let mut coverage = RuleCoverage {
        rule: rule.to_string(),
        constraints: specs.len(),
        matched_kinds: BTreeSet::new(),
        unreadable: false,
        kinds: workload_kinds
            .iter()
            .map(|k| (*k, BTreeSet::new()))
            .collect(),
    };
    for spec in specs {
        let Ok(matcher) = Match::parse(spec.get("match")) else {
            coverage.unreadable = true;
            continue;
        };
        coverage.matched_kinds.extend(match_kind_names(spec));
        for kind in workload_kinds {
            let (group, version) = group_version(kind.api_version());
            let gvk = Gvk::new(group, version, kind.kind());
            let ways = coverage.kinds.entry(*kind).or_default();
            for seen in expansions.visible_to(&matcher, &gvk) {
                ways.insert(if seen.templates.is_empty() {
                    Way::Directly
                } else {
                    Way::Through {
                        templates: seen.templates,
                        kind: seen.gvk.kind,
                    }
                });
            }
        }
    }
    coverage
}

/// The kind names a Constraint's `spec.match.kinds` lists (`*` left out).
fn match_kind_names(spec: &Value) -> BTreeSet<String> {
    let entries = spec.pointer("/match/kinds").and_then(Value::as_array);
    entries
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.get("kinds").and_then(Value::as_array))
        .flatten()
        .filter_map(Value::as_str)
        .filter(|kind| *kind != "*")
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chains_of_templates_are_named_in_order() {
        let rule = RuleCoverage {
            rule: "K8sPodRule".into(),
            constraints: 2,
            matched_kinds: BTreeSet::from(["Pod".to_string()]),
            unreadable: false,
            kinds: BTreeMap::from([(
                WorkloadKind::CronJob,
                BTreeSet::from([Way::Through {
                    templates: vec!["expand-cronjobs".into(), "expand-jobs".into()],
                    kind: "Pod".into(),
                }]),
            )]),
        };
        assert_eq!(
            rule.to_text(),
            "K8sPodRule (2 constraints; match kinds: Pod)\n  CronJob: through ExpansionTemplates expand-cronjobs → expand-jobs (as Pod)\n"
        );
    }
    use serde_json::json;

    fn state(constraints: &[Value], templates: &[Value]) -> ClusterState {
        let objects = constraints.iter().chain(templates).cloned();
        ClusterState::from_objects(objects).expect("a valid state")
    }

    fn constraint(kind: &str, name: &str, matched: Value) -> Value {
        json!({"apiVersion": "constraints.gatekeeper.sh/v1beta1", "kind": kind,
               "metadata": {"name": name}, "spec": {"match": matched}})
    }

    fn pods_only(kind: &str) -> Value {
        constraint(
            kind,
            "pods",
            json!({"kinds": [{"apiGroups": [""], "kinds": ["Pod"]}]}),
        )
    }

    fn expand_workloads() -> Value {
        json!({"apiVersion": "expansion.gatekeeper.sh/v1beta1", "kind": "ExpansionTemplate",
               "metadata": {"name": "expand-workloads"},
               "spec": {"applyTo": [{"groups": ["apps"], "kinds": ["Deployment"], "versions": ["v1"]}],
                        "templateSource": "spec.template",
                        "generatedGVK": {"group": "", "version": "v1", "kind": "Pod"}}})
    }

    const DEFAULT: [WorkloadKind; 2] = WorkloadKind::DEFAULT;

    #[test]
    fn a_pod_only_rule_without_templates_cannot_flag_a_workload() {
        let rules = ["K8sPSPPrivilegedContainer".to_string()];
        let found = coverage(
            &rules,
            &DEFAULT,
            &state(&[pods_only("K8sPSPPrivilegedContainer")], &[]),
        )
        .unwrap();
        assert_eq!(
            found.warnings(),
            [
                "K8sPSPPrivilegedContainer matches only Pod; no ExpansionTemplate covers Deployment, StatefulSet: this rule cannot flag a workload"
            ]
        );
        assert!(found.expansion_rules().is_empty());
    }

    #[test]
    fn a_template_makes_a_pod_only_rule_see_the_workloads_it_expands() {
        let rules = ["K8sPodRule".to_string()];
        let found = coverage(
            &rules,
            &DEFAULT,
            &state(&[pods_only("K8sPodRule")], &[expand_workloads()]),
        )
        .unwrap();
        assert!(found.warnings().is_empty());
        let rule = &found.rules[0];
        let through = Way::Through {
            templates: vec!["expand-workloads".into()],
            kind: "Pod".into(),
        };
        assert_eq!(
            rule.kinds[&WorkloadKind::Deployment],
            BTreeSet::from([through])
        );
        assert!(rule.kinds[&WorkloadKind::StatefulSet].is_empty());
        assert_eq!(
            found.expansion_rules(),
            BTreeSet::from(["K8sPodRule".into()])
        );
    }

    #[test]
    fn direct_matches_rules_without_constraints_and_unreadable_matches_do_not_warn() {
        let rules = ["A".to_string(), "B".to_string(), "C".to_string()];
        let direct = constraint(
            "A",
            "a",
            json!({"kinds": [{"apiGroups": ["apps"], "kinds": ["Deployment"]}]}),
        );
        let unreadable = constraint("C", "c", json!({"kinds": "Pod"}));
        let found = coverage(&rules, &DEFAULT, &state(&[direct, unreadable], &[])).unwrap();
        assert!(found.warnings().is_empty(), "{:?}", found.warnings());
        assert_eq!(
            found.rules[0].kinds[&WorkloadKind::Deployment],
            BTreeSet::from([Way::Directly])
        );
        assert_eq!(found.rules[1].constraints, 0);
        assert!(found.rules[2].unreadable);
    }

    #[test]
    fn mutators_are_named_when_expansion_templates_are_in_use() {
        let rules = ["K8sPodRule".to_string()];
        let mutator = |kind: &str, name: &str| {
            json!({"apiVersion": "mutations.gatekeeper.sh/v1", "kind": kind,
                   "metadata": {"name": name}, "spec": {}})
        };
        let mutators = [mutator("Assign", "non-root"), mutator("ModifySet", "caps")];
        let objects = [pods_only("K8sPodRule"), expand_workloads()];
        let found = coverage(&rules, &DEFAULT, &state(&objects, &mutators)).unwrap();
        assert_eq!(
            found.warnings(),
            [
                "the cluster has 2 Gatekeeper mutators (Assign non-root, ModifySet caps): Gatekeeper \
              applies them to the resources it expands workloads into, the report does not, so \
              findings through ExpansionTemplates may differ from Gatekeeper's"
            ]
        );
        // without ExpansionTemplates nothing is expanded: the mutators change nothing here
        let found = coverage(
            &rules,
            &DEFAULT,
            &state(&[pods_only("K8sPodRule")], &mutators),
        );
        assert_eq!(
            found.unwrap().warnings().len(),
            1,
            "only the cannot-flag line"
        );
    }

    #[test]
    fn source_generated_without_templates_is_named_in_the_warning() {
        let rules = ["G".to_string()];
        let generated = constraint("G", "g", json!({"source": "Generated"}));
        let found = coverage(&rules, &[WorkloadKind::Job], &state(&[generated], &[])).unwrap();
        assert_eq!(
            found.warnings(),
            [
                "G matches only generated resources; no ExpansionTemplate covers Job: this rule cannot flag a workload"
            ]
        );
    }
}
