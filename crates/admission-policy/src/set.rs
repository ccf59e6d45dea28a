//! A cluster's admission policies as the report's rules: every binding of a selected policy is
//! a rule named `<policy>/<binding>`, evaluated against each object with the parameters and
//! CRDs the cluster holds. What cannot be evaluated (a policy that does not compile, a binding
//! whose policy is missing) is kept per rule, so one bad policy never hides the others.

use crate::error::PolicyError;
use crate::evaluate::{Finding, Review};
use crate::policy::{Binding, Policy};
use crate::resources::Resources;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// What the set is built from: the cluster's objects of each kind.
#[derive(Debug, Clone, Copy, Default)]
pub struct SetInputs<'a> {
    /// ValidatingAdmissionPolicies.
    pub policies: &'a [Value],
    /// ValidatingAdmissionPolicyBindings.
    pub bindings: &'a [Value],
    /// The parameter objects (of any kind; each policy uses those of its `paramKind`).
    pub params: &'a [Value],
    /// CustomResourceDefinitions, whose kinds (parameters, custom resources) are registered.
    pub crds: &'a [Value],
}

/// One rule: a binding of its policy.
#[derive(Debug)]
pub struct Rule {
    name: String,
    policy: usize,
    binding: Binding,
}

impl Rule {
    /// `<policy>/<binding>`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The binding.
    pub fn binding(&self) -> &Binding {
        &self.binding
    }
}

/// A rule (or a selected name) that cannot be evaluated, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetProblem {
    /// The rule (`<policy>/<binding>`), or the policy or binding name when there is no rule.
    pub rule: String,
    /// Why.
    pub error: String,
}

/// One rule's answer for one object: its findings, or why it cannot be evaluated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleOutcome<'s> {
    /// The rule's name.
    pub rule: &'s str,
    /// The findings (none: admitted) or the error.
    pub result: Result<Vec<Finding>, PolicyError>,
}

/// The selected policies' bindings, compiled once.
#[derive(Debug)]
pub struct PolicySet {
    policies: Vec<Policy>,
    rules: Vec<Rule>,
    problems: Vec<SetProblem>,
    params: Vec<Value>,
    resources: Resources,
}

fn name_of(object: &Value) -> &str {
    object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

impl PolicySet {
    /// The rules of the policies and bindings `selected` names (a policy's name selects all
    /// its bindings; a binding's name that binding). A selected name that is no policy or
    /// binding, a policy that does not compile and a binding that cannot be read are
    /// [`PolicySet::problems`]; a binding whose policy does not exist binds nothing (as in the
    /// API server) and is a problem only when it is selected.
    pub fn build(inputs: SetInputs<'_>, selected: &[String]) -> PolicySet {
        let selected: BTreeSet<&str> = selected.iter().map(String::as_str).collect();
        let mut resources = Resources::default();
        for crd in inputs.crds {
            resources.register_crd(crd);
        }
        let mut problems = Vec::new();
        let mut seen: BTreeSet<&str> = BTreeSet::new();
        let mut policies = Vec::new();
        let mut failed: BTreeMap<&str, String> = BTreeMap::new();
        for object in inputs.policies {
            let name = name_of(object);
            seen.insert(name);
            match Policy::compile(object) {
                Ok(policy) => policies.push(policy),
                Err(e) => {
                    if selected.contains(name) {
                        problems.push(SetProblem {
                            rule: name.to_owned(),
                            error: e.to_string(),
                        });
                    }
                    failed.insert(name, e.to_string());
                }
            }
        }
        let mut rules = Vec::new();
        for object in inputs.bindings {
            let name = name_of(object);
            seen.insert(name);
            let binding = match Binding::parse(object) {
                Ok(binding) => binding,
                Err(e) => {
                    if selected.contains(name) {
                        problems.push(SetProblem {
                            rule: name.to_owned(),
                            error: e.to_string(),
                        });
                    }
                    continue;
                }
            };
            let policy_name = binding.policy_name().to_owned();
            if !selected.contains(name) && !selected.contains(policy_name.as_str()) {
                continue;
            }
            let rule = format!("{policy_name}/{name}");
            if let Some(error) = failed.get(policy_name.as_str()) {
                if !selected.contains(policy_name.as_str()) {
                    problems.push(SetProblem {
                        rule,
                        error: error.clone(),
                    });
                }
                continue;
            }
            match policies
                .iter()
                .position(|p: &Policy| p.name() == policy_name)
            {
                Some(policy) => rules.push(Rule {
                    name: rule,
                    policy,
                    binding,
                }),
                None => problems.push(SetProblem {
                    rule,
                    error: format!("the ValidatingAdmissionPolicy {policy_name:?} does not exist"),
                }),
            }
        }
        for name in selected.iter().filter(|n| !seen.contains(*n)) {
            problems.push(SetProblem {
                rule: (*name).to_owned(),
                error: "no ValidatingAdmissionPolicy or binding has this name".into(),
            });
        }
        rules.sort_by(|a, b| a.name.cmp(&b.name));
        problems.sort_by(|a, b| a.rule.cmp(&b.rule));
        PolicySet {
            policies,
            rules,
            problems,
            params: inputs.params.to_vec(),
            resources,
        }
    }

    /// The rules, by name.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// What cannot be evaluated, by name.
    pub fn problems(&self) -> &[SetProblem] {
        &self.problems
    }

    /// The kinds known (built-ins and the CRDs given).
    pub fn resources(&self) -> &Resources {
        &self.resources
    }

    /// Every rule's answer for `object` (with its Namespace), in rule order; `Err` when the
    /// object itself cannot be reviewed (an unknown kind, a missing Namespace).
    pub fn evaluate(
        &self,
        object: &Value,
        namespace: Option<&Value>,
    ) -> Result<Vec<RuleOutcome<'_>>, PolicyError> {
        let review = Review::new(object, namespace, &self.resources)?;
        Ok(self
            .rules
            .iter()
            .map(|rule| RuleOutcome {
                rule: &rule.name,
                result: review.evaluate(
                    &self.policies[rule.policy],
                    &rule.binding,
                    &self.params,
                    &self.resources,
                ),
            })
            .collect())
    }
}
