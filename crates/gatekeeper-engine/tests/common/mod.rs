//! Helpers shared by the engine's integration tests: a one-template policy around a piece of
//! Rego, and the objects it reviews.

#![allow(dead_code)]

use gatekeeper_engine::{Engine, EngineError, EngineOptions, ReviewOutcome};
use serde_json::{Value, json};

/// The constraint kind of [`policy`]'s template.
pub(crate) const KIND: &str = "Gap";

/// A ConstraintTemplate `gap` with `rego` and `libs` (Rego v1 with `v1`, through the `code`
/// form; v0 through the legacy `rego` field), and one constraint matching kind `Thing`.
pub(crate) fn policy(rego: &str, libs: &[&str], v1: bool) -> Vec<Value> {
    let target = if v1 {
        json!({"target": "admission.k8s.gatekeeper.sh", "code": [
            {"engine": "Rego", "source": {"rego": rego, "libs": libs, "version": "v1"}}
        ]})
    } else {
        json!({"target": "admission.k8s.gatekeeper.sh", "rego": rego, "libs": libs})
    };
    vec![
        json!({
            "apiVersion": "templates.gatekeeper.sh/v1",
            "kind": "ConstraintTemplate",
            "metadata": {"name": "gap"},
            "spec": {"crd": {"spec": {"names": {"kind": KIND}}}, "targets": [target]}
        }),
        json!({
            "apiVersion": "constraints.gatekeeper.sh/v1beta1", "kind": KIND,
            "metadata": {"name": "gap"},
            "spec": {"match": {"kinds": [{"kinds": ["Thing"]}]}}
        }),
    ]
}

/// An object of kind `Thing` with `spec`.
pub(crate) fn thing(spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t", "namespace": "default"}, "spec": spec})
}

/// Ingests the policy and `object`, and reviews everything with `options`.
pub(crate) fn review(
    rego: &str,
    libs: &[&str],
    v1: bool,
    object: Value,
    options: EngineOptions,
) -> Result<ReviewOutcome, EngineError> {
    let mut objects = policy(rego, libs, v1);
    objects.push(object);
    Engine::new(objects, options)?.review_all_detailed()
}

/// The sorted messages of the v0 policy `rego` (with `libs`) on `object`.
pub(crate) fn messages(rego: &str, libs: &[&str], object: Value) -> Vec<String> {
    messages_of(rego, libs, false, object)
}

/// The sorted messages of the policy on `object`.
pub(crate) fn messages_of(rego: &str, libs: &[&str], v1: bool, object: Value) -> Vec<String> {
    let mut m: Vec<String> = review(rego, libs, v1, object, EngineOptions::default())
        .expect("review")
        .results
        .into_iter()
        .map(|r| r.result.msg)
        .collect();
    m.sort();
    m
}

/// The ingestion error of the policy (which must be refused).
pub(crate) fn refusal(rego: &str, libs: &[&str], v1: bool) -> String {
    Engine::new(policy(rego, libs, v1), EngineOptions::default())
        .expect_err("the template should be refused")
        .to_string()
}
