//! The library's decisions on small policies, one rule of the API server's each: parameters
//! (none, by name, by selector, not found under Allow and Deny), match conditions (false, an
//! error under Fail and Ignore), variables, message fallbacks, reasons, the request modelled,
//! and what is refused as unsupported. The real API server's answers on the fixtures are
//! `tests/real_apiserver.rs`.

use admission_policy::{
    Binding, FindingKind, Policy, PolicyError, Resources, Review, ValidationAction,
};
use serde_json::{Value, json};

fn policy(spec: Value) -> Policy {
    try_policy(spec).unwrap()
}

fn try_policy(mut spec: Value) -> Result<Policy, PolicyError> {
    if spec.get("matchConstraints").is_none() {
        spec["matchConstraints"] = json!({"resourceRules": [{"apiGroups": ["apps"],
            "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]});
    }
    Policy::compile(&json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "p"}, "spec": spec}))
}

fn binding(spec: Value) -> Binding {
    let mut spec = spec;
    spec["policyName"] = json!("p");
    if spec.get("validationActions").is_none() {
        spec["validationActions"] = json!(["Deny"]);
    }
    Binding::parse(&json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "b"}, "spec": spec}))
    .unwrap()
}

fn namespace() -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop", "labels": {"team": "shop"}}})
}

fn deployment(replicas: i64) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop", "labels": {"tier": "web"}},
        "spec": {"replicas": replicas}})
}

fn limits(name: &str, max: i64, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "shop", "labels": labels}, "data": {"max": max.to_string()}})
}

/// The denial texts of `binding` for `object`.
fn denials(policy: &Policy, binding: &Binding, object: &Value, params: &[Value]) -> Vec<String> {
    let resources = Resources::default();
    let ns = namespace();
    let review = Review::new(object, Some(&ns), &resources).unwrap();
    review
        .evaluate(policy, binding, params, &resources)
        .unwrap()
        .iter()
        .map(|f| f.denial())
        .collect()
}

const PREFIX: &str = "ValidatingAdmissionPolicy 'p' with binding 'b' denied request: ";

fn denied(message: &str) -> Vec<String> {
    vec![format!("{PREFIX}{message}")]
}

#[test]
fn params_come_from_the_named_object_or_every_selected_one() {
    let p = policy(json!({
        "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
        "validations": [{"expression": "object.spec.replicas <= int(params.data.max)",
            "messageExpression": "'at most ' + params.data.max"}],
    }));
    let params = [
        limits("three", 3, json!({"limits": "yes"})),
        limits("ten", 10, json!({"limits": "yes"})),
    ];
    let by_name =
        binding(json!({"paramRef": {"name": "three", "parameterNotFoundAction": "Deny"}}));
    assert_eq!(
        denials(&p, &by_name, &deployment(5), &params),
        denied("at most 3")
    );
    assert!(denials(&p, &by_name, &deployment(2), &params).is_empty());
    let selected = binding(
        json!({"paramRef": {"selector": {"matchLabels": {"limits": "yes"}},
        "parameterNotFoundAction": "Allow"}}),
    );
    assert_eq!(
        denials(&p, &selected, &deployment(11), &params),
        [denied("at most 10"), denied("at most 3")].concat(),
        "each selected parameter, by name"
    );
    let none = binding(
        json!({"paramRef": {"selector": {"matchLabels": {"limits": "no"}},
        "parameterNotFoundAction": "Allow"}}),
    );
    assert!(
        denials(&p, &none, &deployment(11), &params).is_empty(),
        "Allow: nothing to evaluate"
    );
    let missing =
        binding(json!({"paramRef": {"name": "absent", "parameterNotFoundAction": "Deny"}}));
    assert_eq!(
        denials(&p, &missing, &deployment(1), &params),
        denied(
            "failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"
        )
    );
    let elsewhere = binding(
        json!({"paramRef": {"name": "three", "namespace": "other", "parameterNotFoundAction": "Allow"}}),
    );
    assert!(
        denials(&p, &elsewhere, &deployment(5), &params).is_empty(),
        "paramRef.namespace is where params are looked up"
    );
    let no_ref = binding(json!({}));
    assert_eq!(
        denials(&p, &no_ref, &deployment(5), &params).len(),
        1,
        "no paramRef: params is null"
    );
}

#[test]
fn match_conditions_skip_on_false_and_errors_follow_the_failure_policy() {
    let spec = |failure: &str| {
        json!({
            "failurePolicy": failure,
            "matchConditions": [
                {"name": "labelled", "expression": "has(object.metadata.labels) && 'tier' in object.metadata.labels"},
                {"name": "broken", "expression": "object.spec.missing == 1"},
            ],
            "validations": [{"expression": "false", "message": "always"}],
        })
    };
    let unlabelled = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop"}, "spec": {}});
    let fail = policy(spec("Fail"));
    assert!(
        denials(&fail, &binding(json!({})), &unlabelled, &[]).is_empty(),
        "a false condition wins over an error"
    );
    assert_eq!(
        denials(&fail, &binding(json!({})), &deployment(1), &[]),
        denied("expression 'object.spec.missing == 1' resulted in error: no such key: missing")
    );
    let ignore = policy(spec("Ignore"));
    assert!(denials(&ignore, &binding(json!({})), &deployment(1), &[]).is_empty());
}

#[test]
fn variables_messages_and_reasons() {
    let p = policy(json!({
        "variables": [{"name": "replicas", "expression": "object.spec.replicas"},
                      {"name": "broken", "expression": "object.spec.nothing"}],
        "validations": [
            {"expression": "variables.replicas < 3", "messageExpression": "'replicas: ' + string(variables.replicas)", "reason": "Forbidden"},
            {"expression": "variables.replicas < 2", "messageExpression": "variables.broken", "message": "static fallback"},
            {"expression": "variables.replicas < 1"},
            {"expression": "variables.broken == 1"},
        ],
    }));
    let resources = Resources::default();
    let (object, ns) = (deployment(4), namespace());
    let review = Review::new(&object, Some(&ns), &resources).unwrap();
    let findings = review
        .evaluate(&p, &binding(json!({})), &[], &resources)
        .unwrap();
    let got: Vec<(&str, Option<&str>, FindingKind)> = findings
        .iter()
        .map(|f| (f.message.as_str(), f.reason.as_deref(), f.kind))
        .collect();
    assert_eq!(
        got,
        vec![
            ("replicas: 4", Some("Forbidden"), FindingKind::Violation),
            ("static fallback", Some("Invalid"), FindingKind::Violation),
            (
                "failed expression: variables.replicas < 1",
                Some("Invalid"),
                FindingKind::Violation
            ),
            (
                "expression 'variables.broken == 1' resulted in error: composited variable \"broken\" fails to evaluate: no such key: nothing",
                None,
                FindingKind::EvaluationError
            ),
        ]
    );
    assert_eq!(findings[0].actions, vec![ValidationAction::Deny]);
}

#[test]
fn the_request_is_a_dry_run_create_and_the_namespace_is_bound() {
    let p = policy(json!({
        "validations": [
            {"expression": "request.operation == 'CREATE' && request.dryRun && request.namespace == 'shop' && request.resource.resource == 'deployments' && oldObject == null", "message": "request"},
            {"expression": "namespaceObject.metadata.labels.team == 'ops'", "message": "namespace"},
        ],
    }));
    assert_eq!(
        denials(&p, &binding(json!({})), &deployment(1), &[]),
        denied("namespace")
    );
}

#[test]
fn binding_match_resources_narrow_the_policy() {
    let p = policy(json!({"validations": [{"expression": "false", "message": "no"}]}));
    let other_team =
        binding(json!({"matchResources": {"namespaceSelector": {"matchLabels": {"team": "ops"}}}}));
    assert!(denials(&p, &other_team, &deployment(1), &[]).is_empty());
    let excluded = binding(
        json!({"matchResources": {"excludeResourceRules": [{"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"], "resources": ["*"]}]}}),
    );
    assert!(denials(&p, &excluded, &deployment(1), &[]).is_empty());
    let warn = binding(json!({"validationActions": ["Warn", "Audit"]}));
    let resources = Resources::default();
    let (object, ns) = (deployment(1), namespace());
    let findings = Review::new(&object, Some(&ns), &resources)
        .unwrap()
        .evaluate(&p, &warn, &[], &resources)
        .unwrap();
    assert_eq!(
        findings[0].actions,
        vec![ValidationAction::Warn, ValidationAction::Audit]
    );
}

#[test]
fn what_cannot_be_answered_offline_is_refused_naming_the_policy() {
    let authorizer = try_policy(json!({"validations": [{"expression": "authorizer.requestResource.check('get').allowed()"}]})).unwrap_err();
    assert_eq!(
        authorizer.to_string(),
        "ValidatingAdmissionPolicy \"p\": the authorizer binding (validations[0].expression) is not supported offline"
    );
    let annotations =
        try_policy(json!({"auditAnnotations": [{"key": "k", "valueExpression": "'v'"}]}))
            .unwrap_err();
    assert!(
        annotations.to_string().contains("auditAnnotations"),
        "{annotations}"
    );
    let unknown =
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}});
    assert!(matches!(
        Review::new(&unknown, None, &Resources::default()),
        Err(PolicyError::UnknownResource { .. })
    ));
    let bad = Binding::parse(&json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "b"}, "spec": {"policyName": "p", "validationActions": ["Deny", "Warn"]}})).unwrap_err();
    assert!(bad.to_string().contains("Deny and Warn"), "{bad}");
}

#[test]
fn a_policy_without_match_constraints_is_denied_without_a_binding_name() {
    let p = Policy::compile(&json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "p"}, "spec": {"validations": [{"expression": "true"}]}})).unwrap();
    assert_eq!(
        denials(&p, &binding(json!({})), &deployment(1), &[]),
        vec!["ValidatingAdmissionPolicy 'p' denied request: failed to configure policy: policy contained no match constraints, a required field".to_owned()]
    );
}

#[test]
fn limits_are_errors_naming_the_policy_not_findings() {
    let p = policy(json!({
        "failurePolicy": "Ignore",
        "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
        "validations": [{"expression": "true"}],
    }));
    let many: Vec<Value> = (0..=admission_policy::MAX_PARAMS_PER_BINDING)
        .map(|i| limits(&format!("l{i}"), 1, json!({"limits": "yes"})))
        .collect();
    let all = binding(json!({"paramRef": {"selector": {}, "parameterNotFoundAction": "Allow"}}));
    let resources = Resources::default();
    let (object, ns) = (deployment(1), namespace());
    let review = Review::new(&object, Some(&ns), &resources).unwrap();
    let error = review.evaluate(&p, &all, &many, &resources).unwrap_err();
    assert_eq!(
        error.to_string(),
        "ValidatingAdmissionPolicy \"p\": the binding \"b\" selects 1001 parameters, more than 1000"
    );
    let mut deep = json!("leaf");
    for _ in 0..200 {
        deep = json!({"x": deep});
    }
    let mut nested = deployment(1);
    nested["spec"]["deep"] = deep;
    let review = Review::new(&nested, Some(&ns), &resources).unwrap();
    let error = review
        .evaluate(&p, &binding(json!({})), &[], &resources)
        .unwrap_err();
    assert!(matches!(error, PolicyError::Limit { .. }), "{error}");
}
