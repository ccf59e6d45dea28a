//! Templates with CEL (`K8sNativeValidation`) code in [`gatekeeper_engine::Engine`]: which code
//! runs (`k8s_native_validation`, gator's `--enable-k8s-native-validation`), the bindings, and
//! results in the Rego results' model — violations with details, errors as errors, enforcement
//! actions copied, gator's output without `metadata` — under the engine's budgets.

use std::time::Instant;

use gatekeeper_engine::{
    DeadlinePassed, Driver, Engine, EngineError, EngineOptions, Inventory, PolicySet, ResultKind,
    ReviewRequest, ReviewResult, ReviewStats, output,
};
use serde_json::{Value, json};

fn template(kind: &str, code: Value) -> Value {
    json!({
        "apiVersion": "templates.gatekeeper.sh/v1",
        "kind": "ConstraintTemplate",
        "metadata": {"name": kind.to_lowercase()},
        "spec": {
            "crd": {"spec": {"names": {"kind": kind}, "validation": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"max": {"type": "integer", "default": 3}}
            }}}},
            "targets": [{"target": "admission.k8s.gatekeeper.sh", "code": code}]
        }
    })
}

fn cel(source: Value) -> Value {
    json!({"engine": "K8sNativeValidation", "source": source})
}

fn rego(text: &str) -> Value {
    json!({"engine": "Rego", "source": {"version": "v1", "rego": text}})
}

fn constraint(kind: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": "constraints.gatekeeper.sh/v1beta1", "kind": kind, "metadata": {"name": name}, "spec": spec})
}

fn deployment(name: &str, replicas: u64) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": name, "namespace": "shop"}, "spec": {"replicas": replicas}})
}

fn deployments_only() -> Value {
    json!({"kinds": [{"apiGroups": ["apps"], "kinds": ["Deployment"]}]})
}

/// A Constraint spec matching Deployments, with `max: 3`.
fn at_most_three() -> Value {
    json!({"match": deployments_only(), "parameters": {"max": 3}})
}

/// A template whose CEL and Rego say different things, to see which one ran.
fn dual() -> Value {
    template(
        "Dual",
        json!([
            cel(json!({"validations": [{
                "expression": "object.spec.replicas <= variables.params.max",
                "messageExpression": "'cel: ' + string(object.spec.replicas) + ' > ' + string(variables.params.max)"
            }]})),
            rego(
                "package dual\nviolation contains {\"msg\": msg} if {\n  input.review.object.spec.replicas > input.parameters.max\n  msg := sprintf(\"rego: %v > %v\", [input.review.object.spec.replicas, input.parameters.max])\n}\n"
            ),
        ]),
    )
}

fn engine(objects: Vec<Value>, native: bool) -> Result<Engine, EngineError> {
    let options = EngineOptions {
        k8s_native_validation: native,
        ..EngineOptions::default()
    };
    Engine::new(objects, options)
}

fn review(objects: Vec<Value>, native: bool) -> Vec<ReviewResult> {
    engine(objects, native)
        .expect("engine")
        .review_all()
        .expect("review")
}

fn msgs(results: &[ReviewResult]) -> Vec<&str> {
    results.iter().map(|r| r.msg.as_str()).collect()
}

#[test]
fn a_dual_template_runs_its_cel_by_default_and_its_rego_with_cel_off() {
    assert!(EngineOptions::default().k8s_native_validation);
    let objects = || {
        vec![
            dual(),
            constraint("Dual", "c", at_most_three()),
            deployment("big", 5),
            deployment("small", 2),
        ]
    };
    assert_eq!(msgs(&review(objects(), true)), ["cel: 5 > 3"]);
    assert_eq!(msgs(&review(objects(), false)), ["rego: 5 > 3"]);
    let with_cel = engine(objects(), true).unwrap();
    assert!(with_cel.policies().templates()[0].is_cel());
    let with_rego = engine(objects(), false).unwrap();
    assert!(!with_rego.policies().templates()[0].is_cel());
}

#[test]
fn a_cel_only_template_works_and_is_refused_like_gator_with_cel_off() {
    let only = || {
        template(
            "Only",
            json!([cel(json!({"validations": [{
                "expression": "object.spec.replicas <= 3", "message": "too many"
            }]}))]),
        )
    };
    let objects = |t| {
        vec![
            t,
            constraint("Only", "c", json!({"match": deployments_only()})),
            deployment("big", 5),
        ]
    };
    assert_eq!(msgs(&review(objects(only()), true)), ["too many"]);
    let refused = engine(objects(only()), false).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "adding template \"only\": no language driver is installed that handles this constraint template"
    );
}

/// What a result is: message, kind, driver, details, enforcement action, evaluation error.
type Row<'a> = (&'a str, ResultKind, Driver, Option<&'a str>, &'a str, bool);

#[test]
fn violations_and_errors_follow_the_rego_results_model_side_by_side() {
    let template = template(
        "Checks",
        json!([cel(json!({"validations": [
            {"expression": "object.spec.replicas <= variables.params.max", "message": "too many"},
            {"expression": "object.spec.missing == 1"},
        ]}))]),
    );
    let mut warn = at_most_three();
    warn["enforcementAction"] = json!("warn");
    let engine = engine(
        vec![
            template,
            constraint("Checks", "c", warn),
            deployment("big", 5),
        ],
        true,
    )
    .unwrap();
    let outcome = engine.review_all_detailed().unwrap();
    let found: Vec<Row<'_>> = outcome
        .results
        .iter()
        .map(|d| {
            let r = &d.result;
            (
                r.msg.as_str(),
                d.kind,
                d.driver,
                r.details.as_deref(),
                r.constraint.enforcement_action.as_str(),
                r.is_evaluation_error(),
            )
        })
        .collect();
    assert_eq!(
        found,
        [
            (
                "expression 'object.spec.missing == 1' resulted in error: no such key: missing",
                ResultKind::EvalError,
                Driver::Cel,
                None,
                "warn",
                true
            ),
            (
                "too many",
                ResultKind::Violation,
                Driver::Cel,
                Some("{}"),
                "warn",
                false
            ),
        ]
    );
    // gator prints CEL results without `metadata`, violation or error alike.
    let json: Value =
        serde_json::from_str(&output::render_json(&engine, &outcome.results)).unwrap();
    let items = json.as_array().unwrap();
    assert_eq!(items.len(), 2);
    assert!(
        items.iter().all(|item| item.get("metadata").is_none()),
        "{json}"
    );
    assert_eq!(items[1]["enforcementAction"], "warn");
    assert_eq!(items[1]["violatingObject"]["metadata"]["name"], "big");
}

#[test]
fn the_bindings_are_gatekeepers() {
    let template = template(
        "Bound",
        json!([cel(json!({
            "variables": [{"name": "constraintName", "expression": "params.metadata.name"}],
            "validations": [{
                "expression": "false",
                "messageExpression": "variables.constraintName + ' ' + request.kind.kind + ' ' + request.namespace + '/' + request.name + ' ' + string(variables.params.max) + ' ' + string(oldObject == null) + ' ' + string(namespaceObject == null) + ' ' + variables.anyObject.metadata.name"
            }]
        }))]),
    );
    let results = review(
        vec![
            template,
            constraint(
                "Bound",
                "named",
                json!({"match": deployments_only(), "parameters": {"max": 9}}),
            ),
            deployment("web", 1),
        ],
        true,
    );
    assert_eq!(
        msgs(&results),
        ["named Deployment shop/web 9 true true web"]
    );
}

#[test]
fn each_constraint_sees_its_own_params_in_every_review() {
    // Two CEL templates around a Rego one (constraints are kept sorted by kind, so their
    // `params` sit on both sides of a Rego constraint), two Constraints each with different
    // parameters, three objects: the review's bindings are shared by its CEL templates and
    // each Constraint's `params` converted once, so every message must still name its own
    // Constraint, its own `max` and its own object.
    let cel_template = |kind: &str| {
        template(
            kind,
            json!([cel(json!({
                "variables": [{"name": "me", "expression": "params.metadata.name"}],
                "validations": [{
                    "expression": "object.spec.replicas <= variables.params.max",
                    "messageExpression": "variables.me + ': ' + object.metadata.name + ' has ' + string(object.spec.replicas) + ' > ' + string(variables.params.max)"
                }]
            }))]),
        )
    };
    let rego_template = template(
        "BetaRego",
        json!([rego(
            "package betarego\nviolation contains {\"msg\": msg} if {\n  input.review.object.spec.replicas > input.parameters.max\n  msg := sprintf(\"rego: %v\", [input.review.object.metadata.name])\n}\n"
        )]),
    );
    let limit = |max: u64| json!({"match": deployments_only(), "parameters": {"max": max}});
    let results = review(
        vec![
            cel_template("AlphaCel"),
            rego_template,
            cel_template("GammaCel"),
            constraint("AlphaCel", "alpha-two", limit(2)),
            constraint("AlphaCel", "alpha-four", limit(4)),
            constraint("BetaRego", "beta-one", limit(1)),
            constraint("GammaCel", "gamma-three", limit(3)),
            constraint("GammaCel", "gamma-zero", limit(0)),
            deployment("one", 1),
            deployment("three", 3),
            deployment("five", 5),
        ],
        true,
    );
    let mut found: Vec<(&str, &str)> = results
        .iter()
        .map(|r| (r.constraint.name.as_str(), r.msg.as_str()))
        .collect();
    found.sort_unstable();
    assert_eq!(
        found,
        [
            ("alpha-four", "alpha-four: five has 5 > 4"),
            ("alpha-two", "alpha-two: five has 5 > 2"),
            ("alpha-two", "alpha-two: three has 3 > 2"),
            ("beta-one", "rego: five"),
            ("beta-one", "rego: three"),
            ("gamma-three", "gamma-three: five has 5 > 3"),
            ("gamma-zero", "gamma-zero: five has 5 > 0"),
            ("gamma-zero", "gamma-zero: one has 1 > 0"),
            ("gamma-zero", "gamma-zero: three has 3 > 0"),
        ]
    );
}

#[test]
fn a_cel_feature_the_engine_lacks_is_unsupported_naming_it() {
    let template = template(
        "Lacking",
        json!([cel(
            json!({"validations": [{"expression": "[1, 2].all(i, v, v > 0)"}]})
        )]),
    );
    let error = engine(vec![template, deployment("web", 1)], true).unwrap_err();
    assert!(matches!(error, EngineError::Unsupported { .. }), "{error}");
    let text = error.to_string();
    assert!(
        text.starts_with("adding template \"lacking\": unsupported: validations[0].expression:"),
        "{text}"
    );
    assert!(text.contains("two-variable comprehension 'all'"), "{text}");
}

#[test]
fn cel_evaluations_stop_at_the_deadline() {
    let mut policies = PolicySet::new();
    policies
        .add_template(&template(
            "Only",
            json!([cel(
                json!({"validations": [{"expression": "false", "message": "no"}]})
            )]),
        ))
        .unwrap();
    policies
        .add_constraint(&constraint(
            "Only",
            "c",
            json!({"match": deployments_only()}),
        ))
        .unwrap();
    let inventory = Inventory::new(&[]).unwrap();
    let mut evaluator = policies.evaluator(&inventory).unwrap();
    let request = ReviewRequest::from_object(&deployment("web", 1), None);
    let point = gatekeeper_engine::GATOR_ENFORCEMENT_POINT;
    let mut stats = ReviewStats::default();
    let found = evaluator
        .review(&policies, &request, None, point, &mut stats)
        .unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!((stats.reviews, stats.evaluations), (1, 1));
    evaluator.set_deadline(Some(Instant::now()));
    assert_eq!(
        evaluator.review(&policies, &request, None, point, &mut stats),
        Err(DeadlinePassed)
    );
}
