//! Helpers shared by the integration tests: evaluate one validation expression on a small Pod.

use k8s_cel::{Bindings, CelProgram, Decision};
use serde_json::{Value, json};

/// The Pod the expressions are evaluated against.
pub(crate) fn pod() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", "labels": {"app": "x"}},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.0",
            "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}}}]}
    })
}

/// What one validation gives: `Ok(true)` passes, `Ok(false)` fails, `Err` is the error text.
pub(crate) fn outcome(expression: &str) -> Result<bool, String> {
    let program = CelProgram::compile(
        &json!({"validations": [{"expression": expression, "message": "FALSE"}]}),
    )
    .map_err(|e| e.to_string())?;
    let object = pod();
    let constraint = json!({"kind": "K", "spec": {"parameters": {"p": 1}}});
    let decisions = program.evaluate(&Bindings {
        object: Some(&object),
        params: Some(&constraint),
        ..Bindings::default()
    });
    match decisions.as_slice() {
        [] => Ok(true),
        [Decision::Violation(v)] if v.message == "FALSE" => Ok(false),
        [Decision::Error(e)] => Err(e.to_string()),
        other => Err(format!("unexpected decisions: {other:?}")),
    }
}

/// Asserts that every expression holds (evaluates to true).
pub(crate) fn assert_all_true(expressions: &[&str]) {
    let failures: Vec<String> = expressions
        .iter()
        .filter_map(|e| match outcome(e) {
            Ok(true) => None,
            other => Some(format!("{e}\n    => {other:?}")),
        })
        .collect();
    assert!(
        failures.is_empty(),
        "expressions that do not hold:\n{}",
        failures.join("\n")
    );
}
