//! Templates that would crash, hang or exhaust memory: recursion is refused at ingestion as
//! OPA refuses it, collections and texts past the engine's limits are evaluation errors of the
//! template, and a time budget stops a review that runs too long.

mod common;

use std::time::Duration;

use common::{messages, refusal, review, thing};
use gatekeeper_engine::{EngineError, EngineOptions, ResultKind};
use serde_json::json;

#[test]
fn recursive_functions_are_refused_like_opa() {
    let direct = "package gap\nf(x) = y { y := f(x) }\nviolation[{\"msg\": \"x\"}] { f(1) }\n";
    let error = refusal(direct, &[], false);
    assert!(
        error.contains(
            "template:2: rego_recursion_error: rule data.template.f is recursive: data.template.f -> data.template.f"
        ),
        "{error}"
    );
    let mutual = "package gap\nf(x) = y { y := g(x) }\ng(x) = y { y := f(x) }\nviolation[{\"msg\": \"x\"}] { f(1) }\n";
    let error = refusal(mutual, &[], false);
    assert!(
        error.contains("rule data.template.f is recursive: data.template.f -> data.template.g -> data.template.f"),
        "{error}"
    );
    let through_lib = "package gap\nimport data.lib.loop.a\nviolation[{\"msg\": \"x\"}] { a(1) }\n";
    let lib = "package lib.loop\na(x) = y { y := data.lib.loop.b(x) }\nb(x) = y { y := a(x) }\n";
    let error = refusal(through_lib, &[lib], false);
    assert!(error.contains("rego_recursion_error"), "{error}");
    let rules = "package gap\na { b }\nb { a }\nviolation[{\"msg\": \"x\"}] { a }\n";
    assert!(refusal(rules, &[], false).contains("rego_recursion_error"));
}

#[test]
fn a_chain_of_references_past_the_limit_is_unsupported() {
    let mut rego = "package gap\nf0(x) = x { true }\n".to_string();
    for i in 1..=100 {
        rego.push_str(&format!("f{i}(x) = y {{ y := f{}(x) }}\n", i - 1));
    }
    rego.push_str("violation[{\"msg\": \"x\"}] { f100(input.review.object.spec.n) }\n");
    let error = refusal(&rego, &[], false);
    assert!(error.contains("unsupported"), "{error}");
    assert!(error.contains("limit of 64"), "{error}");
}

/// The one evaluation-error result of the policy on `spec` (the template must compile).
fn evaluation_error(rego: &str, spec: serde_json::Value) -> String {
    let outcome = review(rego, &[], false, thing(spec), EngineOptions::default()).expect("review");
    let errors: Vec<_> = outcome
        .results
        .iter()
        .filter(|r| r.kind == ResultKind::EvalError)
        .collect();
    assert_eq!(errors.len(), 1, "{:?}", outcome.results);
    assert!(errors[0].result.is_evaluation_error());
    errors[0].result.msg.clone()
}

#[test]
fn huge_ranges_are_evaluation_errors() {
    let rego = "package gap\nviolation[{\"msg\": \"big\"}] {\n  xs := numbers.range(1, input.review.object.spec.n)\n  count(xs) > 1\n}\n";
    let error = evaluation_error(rego, json!({"n": 1e12}));
    assert!(
        error.contains(
            "numbers.range: a result of 1000000000000 elements exceeds the embedded engine's limit"
        ),
        "{error}"
    );
    assert_eq!(messages(rego, &[], thing(json!({"n": 3}))), vec!["big"]);
}

#[test]
fn huge_sprintf_widths_are_evaluation_errors() {
    let rego = "package gap\nviolation[{\"msg\": msg}] {\n  msg := sprintf(input.review.object.spec.format, [1])\n}\n";
    let error = evaluation_error(rego, json!({"format": "%9999999d"}));
    assert!(
        error.contains("sprintf: a width of 9999999 exceeds"),
        "{error}"
    );
    // Twenty digits: Go gives up on the number, nothing is allocated or overflows.
    assert_eq!(
        messages(
            rego,
            &[],
            thing(json!({"format": "%99999999999999999999d"}))
        ),
        vec!["%!(NOVERB)%!(EXTRA int=1)"]
    );
}

#[test]
fn a_review_past_its_time_budget_stops_with_a_typed_error() {
    let rego = "package gap\nviolation[{\"msg\": \"never\"}] {\n  some i\n  numbers.range(1, input.review.object.spec.n)[i]\n  some j\n  numbers.range(1, input.review.object.spec.n)[j]\n  i + j < 0\n}\n";
    let options = EngineOptions {
        time_budget: Some(Duration::from_millis(300)),
        ..EngineOptions::default()
    };
    let error = review(rego, &[], false, thing(json!({"n": 999999})), options).unwrap_err();
    assert!(matches!(error, EngineError::TimedOut { .. }), "{error}");
    assert_eq!(
        error.to_string(),
        "the embedded engine did not finish within its time budget of 300ms"
    );
}

#[test]
fn conflicts_are_errors_in_opas_words_and_tell_apart_from_violations() {
    let rego = "package gap\np := 1 { input.review.object.spec.a }\np := 2 { input.review.object.spec.a }\nviolation[{\"msg\": \"ok\"}] { p }\n";
    let error = evaluation_error(rego, json!({"a": true}));
    assert!(
        error.ends_with("eval_conflict_error: complete rules must not produce multiple outputs"),
        "{error}"
    );
    assert!(error.starts_with("template:"), "{error}");
    let functions = "package gap\nf(x) := 1 { input.review.object.spec.a }\nf(x) := 2 { input.review.object.spec.a }\nviolation[{\"msg\": \"ok\"}] { f(1) }\n";
    let error = evaluation_error(functions, json!({"a": true}));
    assert!(
        error.ends_with(
            "eval_conflict_error: functions must not produce multiple outputs for same inputs"
        ),
        "{error}"
    );
    let outcome = review(
        rego,
        &[],
        false,
        thing(json!({"a": false})),
        EngineOptions::default(),
    )
    .expect("review");
    assert!(outcome.results.is_empty());
}

#[test]
fn deeply_nested_brackets_are_refused_before_parsing() {
    let rego = format!(
        "package gap\nviolation[{{\"msg\": \"x\"}}] {{\n  x := {}1{}\n}}\n",
        "[".repeat(40),
        "]".repeat(40)
    );
    let error = refusal(&rego, &[], false);
    assert!(
        error.contains("unsupported: brackets nested 41 deep (template:3) exceed"),
        "{error}"
    );
}
