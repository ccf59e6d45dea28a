//! The chart's ClusterRole against the real authorizer: it grants nothing beyond what it lists,
//! and each resource it lists (each template name of its `get` rule) is needed — without it the
//! report's run is `skipped`, naming the 403 of that resource.

use anyhow::{Result, bail};
use serde_json::{Value, json};
use test_support::real::Access;

use crate::installed::{Installed, Run};

/// One thing the ClusterRole grants, and how to take it away.
struct Grant {
    access: Access,
    /// Where it sits: rule index and, for a named grant, the resource name.
    rule: usize,
    resource: String,
    name: Option<String>,
    /// What the skipped run's reason must contain without it.
    expected: String,
}

/// Rights the ServiceAccount must not have with the chart's ClusterRole.
fn never_granted() -> Vec<Access> {
    vec![
        Access::new("list", "", "secrets"),
        Access::new("list", "", "pods"),
        Access::new("get", "", "pods/log"),
        Access::new("watch", "apps", "deployments"),
        Access::new("delete", "apps", "deployments"),
        Access::new("list", "templates.gatekeeper.sh", "constrainttemplates"),
        Access::new("get", "templates.gatekeeper.sh", "constrainttemplates")
            .named("k8sallowedrepos"),
    ]
}

/// Checks that the role grants exactly its rules and that every grant is needed; returns the
/// (skipped) runs made, one per grant.
pub(crate) fn check_minimal(installed: &Installed) -> Result<Vec<Run>> {
    let grants = grants(&installed.role);
    if grants.is_empty() {
        bail!("the ClusterRole grants nothing");
    }
    let full: Vec<(Access, bool)> = grants
        .iter()
        .map(|g| (g.access.clone(), true))
        .chain(never_granted().into_iter().map(|a| (a, false)))
        .collect();
    installed
        .kube
        .wait_for_access(&installed.user, &installed.groups, &full);

    let mut failures = Vec::new();
    let mut runs = Vec::new();
    for (index, grant) in grants.iter().enumerate() {
        installed.kube.apply(&without(&installed.role, grant));
        let expected: Vec<(Access, bool)> = grants
            .iter()
            .enumerate()
            .map(|(i, g)| (g.access.clone(), i != index))
            .collect();
        installed
            .kube
            .wait_for_access(&installed.user, &installed.groups, &expected);
        let label = describe(grant);
        let run = installed.run(&format!("without-{index}"))?;
        let reason = run.run_line["reason"].as_str().unwrap_or_default();
        if run.code != Some(1)
            || run.run_line["status"] != "skipped"
            || !reason.contains(&grant.expected)
        {
            failures.push(format!(
                "without {label}: exit {:?}, status {}, reason {reason:?} (expected skipped naming {:?})",
                run.code, run.run_line["status"], grant.expected
            ));
        } else {
            eprintln!("without {label} the run is skipped: {reason}");
        }
        runs.push(run);
    }
    installed.kube.apply(&installed.role);
    installed
        .kube
        .wait_for_access(&installed.user, &installed.groups, &full);
    if !failures.is_empty() {
        bail!(
            "the chart's ClusterRole is not minimal for the report:\n  {}",
            failures.join("\n  ")
        );
    }
    eprintln!(
        "each of the ClusterRole's {} grants is needed (a 403 skips the run without it)",
        grants.len()
    );
    Ok(runs)
}

/// Every (verb, group, resource[, name]) the role's rules grant.
fn grants(role: &Value) -> Vec<Grant> {
    let strings = |value: &Value| -> Vec<String> {
        value
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect()
    };
    let mut out = Vec::new();
    for (rule_index, rule) in role["rules"].as_array().into_iter().flatten().enumerate() {
        let names = strings(&rule["resourceNames"]);
        for group in strings(&rule["apiGroups"]) {
            for resource in strings(&rule["resources"]) {
                for verb in strings(&rule["verbs"]) {
                    let access = Access::new(&verb, &group, &resource);
                    if names.is_empty() {
                        out.push(Grant {
                            access: access.clone(),
                            rule: rule_index,
                            expected: format!("{resource}: HTTP 403"),
                            resource: resource.clone(),
                            name: None,
                        });
                    }
                    for name in &names {
                        out.push(Grant {
                            access: access.clone().named(name),
                            rule: rule_index,
                            expected: format!("{resource}/{name}: HTTP 403"),
                            resource: resource.clone(),
                            name: Some(name.clone()),
                        });
                    }
                }
            }
        }
    }
    out
}

/// The role without `grant`: its resource (or, for a named grant, its name) removed from its
/// rule, and the rule dropped when nothing is left in it.
fn without(role: &Value, grant: &Grant) -> Value {
    let mut role = role.clone();
    let (key, item) = match &grant.name {
        Some(name) => ("resourceNames", name),
        None => ("resources", &grant.resource),
    };
    let rules = role["rules"].as_array_mut().expect("rules");
    let rule = &mut rules[grant.rule];
    let kept: Vec<Value> = rule[key]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v.as_str() != Some(item.as_str()))
        .cloned()
        .collect();
    if kept.is_empty() {
        rules.remove(grant.rule);
    } else {
        rule[key] = json!(kept);
    }
    role
}

fn describe(grant: &Grant) -> String {
    let a = &grant.access;
    let group = if a.group.is_empty() { "core" } else { &a.group };
    match &a.name {
        Some(name) => format!("{} {group}/{}/{name}", a.verb, a.resource),
        None => format!("{} {group}/{}", a.verb, a.resource),
    }
}
