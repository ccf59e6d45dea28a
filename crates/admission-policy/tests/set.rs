//! `PolicySet`: the fixtures' policies as the report's rules, selection by policy or binding
//! name, and the problems kept per rule.

use admission_policy::{PolicySet, SetInputs};
use serde_json::{Value, json};
use std::path::PathBuf;
use test_support::real::read_objects;

fn fixtures() -> Vec<Value> {
    read_objects(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/admission-policies"),
    )
}

fn of_kind(objects: &[Value], kind: &str) -> Vec<Value> {
    objects
        .iter()
        .filter(|o| o["kind"] == kind)
        .cloned()
        .collect()
}

fn names(strings: impl IntoIterator<Item = impl ToString>) -> Vec<String> {
    strings.into_iter().map(|s| s.to_string()).collect()
}

#[test]
fn selected_policies_bindings_become_rules_and_unknown_names_problems() {
    let objects = fixtures();
    let (policies, bindings) = (
        of_kind(&objects, "ValidatingAdmissionPolicy"),
        of_kind(&objects, "ValidatingAdmissionPolicyBinding"),
    );
    let params = of_kind(&objects, "ConfigMap");
    let inputs = SetInputs {
        policies: &policies,
        bindings: &bindings,
        params: &params,
        crds: &[],
    };
    let set = PolicySet::build(
        inputs,
        &names([
            "replica-limit",
            "owner-label-binding",
            "nothing-by-this-name",
        ]),
    );
    let rules: Vec<&str> = set.rules().iter().map(|r| r.name()).collect();
    assert_eq!(
        rules,
        [
            "owner-label/owner-label-binding",
            "replica-limit/replica-limit-binding"
        ]
    );
    assert_eq!(
        names(
            set.problems()
                .iter()
                .map(|p| format!("{}: {}", p.rule, p.error))
        ),
        ["nothing-by-this-name: no ValidatingAdmissionPolicy or binding has this name"]
    );
    let namespaces = of_kind(&objects, "Namespace");
    let shop = namespaces.iter().find(|n| n["metadata"]["name"] == "shop");
    let web = objects
        .iter()
        .find(|o| o["kind"] == "Deployment" && o["metadata"]["name"] == "web")
        .unwrap();
    let outcomes = set.evaluate(web, shop).unwrap();
    let denials: Vec<String> = outcomes
        .iter()
        .flat_map(|o| o.result.as_ref().unwrap().iter().map(|f| f.denial()))
        .collect();
    assert_eq!(
        denials,
        [
            "ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-limit-binding' denied request: replicas must be at most 3, not 5"
        ]
    );
}

#[test]
fn a_policy_that_cannot_be_evaluated_is_a_problem_of_its_rules_only() {
    let policy = |name: &str, expression: &str| {
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name}, "spec": {"matchConstraints": {}, "validations": [{"expression": expression}]}})
    };
    let binding = |name: &str, policy: &str| {
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name}, "spec": {"policyName": policy, "validationActions": ["Audit"]}})
    };
    let policies = [
        policy(
            "authz",
            "authorizer.serviceAccount('a', 'b').group('').resource('pods').check('get').allowed()",
        ),
        policy("ok", "false"),
    ];
    let bindings = [
        binding("authz-b", "authz"),
        binding("ok-b", "ok"),
        binding("orphan-b", "missing"),
    ];
    let inputs = SetInputs {
        policies: &policies,
        bindings: &bindings,
        ..SetInputs::default()
    };
    let set = PolicySet::build(inputs, &names(["authz-b", "ok", "orphan-b"]));
    assert_eq!(
        set.rules().iter().map(|r| r.name()).collect::<Vec<_>>(),
        ["ok/ok-b"]
    );
    let problems = names(
        set.problems()
            .iter()
            .map(|p| format!("{}: {}", p.rule, p.error)),
    );
    assert_eq!(
        problems,
        [
            "authz/authz-b: ValidatingAdmissionPolicy \"authz\": the authorizer binding (validations[0].expression) is not supported offline",
            "missing/orphan-b: the ValidatingAdmissionPolicy \"missing\" does not exist",
        ]
    );
    let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}});
    let outcomes = set.evaluate(&node, None).unwrap();
    assert_eq!(
        outcomes[0].result.as_ref().unwrap()[0].message,
        "failed expression: false"
    );
}
