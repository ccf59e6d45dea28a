//! The regorus 0.14.1 gaps (see `docs/gatekeeper-semantics.md`), checked through the engine:
//! the ones the wrapper closes assert OPA's answer, so a regorus that changes its behaviour
//! fails here; the ones it does not close assert (and so document) the difference from gator.

mod common;

use common::{messages, thing};
use serde_json::json;

/// G1: calls through `import data.lib.<pkg>.<func>` resolve (fixed upstream before 0.14).
#[test]
fn g1_imported_lib_functions_resolve() {
    let rego = "package gap\nimport data.lib.util.is_big\nviolation[{\"msg\": \"big\"}] { is_big(input.review.object.spec.n) }\n";
    let lib = "package lib.util\nis_big(n) { n > 10 }\n";
    assert_eq!(messages(rego, &[lib], thing(json!({"n": 11}))), vec!["big"]);
    assert!(messages(rego, &[lib], thing(json!({"n": 1}))).is_empty());
}

/// G2: a body line starting with `(` after a ref is a new expression (closed by a rewrite).
#[test]
fn g2_newline_before_parenthesis_ends_the_expression() {
    let rego = "package gap\nviolation[{\"msg\": \"spread\"}] {\n  spread := input.review.object.spec.spread\n  input.review.object.spec.max\n  (input.review.object.spec.max - input.review.object.spec.min) < spread\n}\n";
    assert_eq!(
        messages(rego, &[], thing(json!({"spread": 5, "max": 3, "min": 1}))),
        vec!["spread"]
    );
}

/// G3: v0 multi-body rules define the rule once per body (closed by a rewrite).
#[test]
fn g3_multi_body_rules() {
    let rego = "package gap\nviolation[{\"msg\": msg}] {\n  input.review.object.spec.a\n  msg := \"a\"\n} {\n  input.review.object.spec.b\n  msg := \"b\"\n}\n";
    assert_eq!(messages(rego, &[], thing(json!({"a": true}))), vec!["a"]);
    assert_eq!(
        messages(rego, &[], thing(json!({"a": true, "b": true}))),
        vec!["a", "b"]
    );
}

/// G4: `not f(x.y)` with `x.y` undefined is undefined in OPA, not true (closed by a rewrite
/// for dotted-ref arguments).
#[test]
fn g4_negated_call_with_undefined_argument_is_undefined() {
    let rego = "package gap\nok(v, allowed) { v == allowed[_] }\nviolation[{\"msg\": \"not allowed\"}] {\n  not ok(input.review.object.spec.value, input.review.object.spec.allowed)\n}\n";
    assert!(messages(rego, &[], thing(json!({"allowed": ["a"]}))).is_empty());
    assert_eq!(
        messages(rego, &[], thing(json!({"value": "b", "allowed": ["a"]}))),
        vec!["not allowed"]
    );
    assert!(messages(rego, &[], thing(json!({"value": "a", "allowed": ["a"]}))).is_empty());
    let builtin = "package gap\nviolation[{\"msg\": \"no prefix\"}] { not startswith(input.review.object.spec.missing, \"x\") }\n";
    assert!(messages(builtin, &[], thing(json!({}))).is_empty());
}

/// Not closed: gatekeeper prints input numbers >= 1e6 with Go's `%g` text (`1e+06`), because
/// the review is a float64 round trip; regorus prints `1000000`.
#[test]
fn known_difference_large_input_numbers_print_in_full() {
    let rego = "package gap\nviolation[{\"msg\": sprintf(\"replicas: %v\", [input.review.object.spec.replicas])}] { true }\n";
    assert_eq!(
        messages(rego, &[], thing(json!({"replicas": 1000000}))),
        vec!["replicas: 1000000"]
    );
}

/// Not closed: regorus multiplies in f64 where OPA uses decimals (`0.1 * 3` prints `0.3` in
/// OPA).
#[test]
fn known_difference_float_arithmetic() {
    let rego = "package gap\nviolation[{\"msg\": sprintf(\"%v\", [input.review.object.spec.x * 3])}] { true }\n";
    assert_eq!(
        messages(rego, &[], thing(json!({"x": 0.1}))),
        vec!["0.30000000000000004"]
    );
}

/// Closed: `sprintf` follows Go's fmt like OPA's (regorus' is undefined on a verb/argument
/// mismatch, which dropped violations of templates with one verb too many).
#[test]
fn sprintf_follows_go_fmt() {
    let rego = "package gap\nviolation[{\"msg\": sprintf(\"%v and %v\", [1])}] { true }\nviolation[{\"msg\": sprintf(\"%d\", [3.5])}] { true }\nviolation[{\"msg\": sprintf(\"%v\", [1, set()])}] { true }\n";
    assert_eq!(
        messages(rego, &[], thing(json!({}))),
        vec![
            "%!d(float64=3.5)",
            "1 and %!v(MISSING)",
            "1%!(EXTRA string=set())"
        ]
    );
}

/// Non-strict builtin errors (as gatekeeper runs OPA): a failing builtin leaves only its body
/// undefined.
#[test]
fn builtin_errors_are_not_strict() {
    let rego = "package gap\nviolation[{\"msg\": \"a\"}] { to_number(\"abc\") }\nviolation[{\"msg\": \"b\"}] { regex.match(\"[\", \"x\") }\nviolation[{\"msg\": \"c\"}] { true }\n";
    assert_eq!(messages(rego, &[], thing(json!({}))), vec!["c"]);
}

/// Class 2a: a comprehension's local variable may have the name of the variable it is assigned
/// to (`found := [found | …]`: the inner `found` is local). regorus calls it unsafe; closed by
/// renaming the inner variable.
#[test]
fn comprehension_local_named_like_its_target() {
    let rego = "package gap\nviolation[{\"msg\": \"matched\"}] {\n  p := input.review.object.spec.pattern\n  found := [found | found = regex.match(p, input.review.object.spec.value)]\n  found[0]\n}\n";
    assert_eq!(
        messages(rego, &[], thing(json!({"pattern": "^a", "value": "abc"}))),
        vec!["matched"]
    );
    assert!(messages(rego, &[], thing(json!({"pattern": "^a", "value": "xyz"}))).is_empty());
}

/// Class 2b: under `import future.keywords.contains` a v0 partial rule with an object literal
/// and no `if` (`violation contains {"msg": msg} { … }`).
#[test]
fn v0_contains_without_if() {
    let rego = "package gap\nimport future.keywords.contains\nviolation contains {\"msg\": msg} {\n  msg := sprintf(\"n is %v\", [input.review.object.spec.n])\n}\n";
    assert_eq!(messages(rego, &[], thing(json!({"n": 2}))), vec!["n is 2"]);
}

/// Class 2c: a complete rule called with empty parentheses (`hosts()`) whose value has one
/// static type. OPA's compiler (gator v3.21.1 checked) refuses it: `rego_type_error: undefined
/// function data.template.hosts`; so does the embedded engine (regorus alone would look for a
/// function at evaluation). A v0 zero-argument function (`f() = x`, as gatekeeper-library's
/// forbidden-sysctls has) is called with `f()`.
#[test]
fn v0_complete_rule_called_with_empty_parentheses_is_refused_like_gator() {
    let rego = "package gap\nhosts = h { h := {\"a\", \"b\"} }\nviolation[{\"msg\": host}] {\n  host := hosts()[_]\n}\n";
    let error = common::refusal(rego, &[], false);
    assert!(
        error.contains("template:4: rego_type_error: undefined function data.template.hosts"),
        "{error}"
    );
    let function = "package gap\nhosts() = h { h := {\"a\", \"b\"} }\nviolation[{\"msg\": msg}] {\n  all := hosts()\n  msg := concat(\",\", all)\n}\n";
    assert_eq!(messages(function, &[], thing(json!({}))), vec!["a,b"]);
}

/// Issue 25 §2: a complete rule of several definitions (or of a value OPA cannot type) is of
/// type `any` for OPA's checker, which lets `name()` through, and the call evaluates to the
/// rule's value (gator v3.21.1 checked; `fixtures/gatekeeper/emptycall`). A real undefined
/// function is still refused.
#[test]
fn v0_complete_rule_of_several_definitions_called_with_empty_parentheses() {
    let rego = "package gap\nget_hosts = hosts { hosts := input.review.object.spec.rules[_].host }\nget_hosts = hosts { hosts := [input.review.object.spec.host] }\nviolation[{\"msg\": msg}] {\n  host := get_hosts()[_]\n  msg := sprintf(\"host %v\", [host])\n}\n";
    assert_eq!(
        messages(rego, &[], thing(json!({"host": "a.example.com"}))),
        vec!["host a.example.com"]
    );
    assert!(messages(rego, &[], thing(json!({}))).is_empty());
    let untyped = "package gap\nname = n { n := input.review.object.spec.name }\nviolation[{\"msg\": name()}] { true }\n";
    assert_eq!(
        messages(untyped, &[], thing(json!({"name": "x"}))),
        vec!["x"]
    );
    let undefined = "package gap\nviolation[{\"msg\": \"m\"}] { get_hosts() }\n";
    let error = common::refusal(undefined, &[], false);
    assert!(
        error.contains("template:2: rego_type_error: undefined function get_hosts"),
        "{error}"
    );
}

/// Issue 25 §3: one body of a complete rule giving several values is OPA's conflict error, in
/// OPA's words at the rule's line (gator v3.21.1 checked).
#[test]
fn one_body_with_several_values_is_opas_conflict_error() {
    let rego = "package gap\nv = x { x := input.review.object.spec.b[_] }\nviolation[{\"msg\": sprintf(\"%v\", [v])}] { true }\n";
    assert_eq!(messages(rego, &[], thing(json!({"b": [2]}))), vec!["2"]);
    assert_eq!(
        messages(rego, &[], thing(json!({"b": [2, 3]}))),
        vec!["template:2: eval_conflict_error: complete rules must not produce multiple outputs"]
    );
}

/// Issue 25 §3: an object comprehension giving one key two values is OPA's conflict error in
/// OPA's words (gator v3.21.1 checked).
#[test]
fn object_keys_given_twice_are_opas_conflict_error() {
    let rego = "package gap\nviolation[{\"msg\": \"dup\"}] {\n  x := {k: v | v := input.review.object.spec.b[_]; k := \"a\"}\n  x.a\n}\n";
    assert_eq!(messages(rego, &[], thing(json!({"b": [2]}))), vec!["dup"]);
    assert_eq!(
        messages(rego, &[], thing(json!({"b": [2, 3]}))),
        vec!["template:3: eval_conflict_error: object keys must be unique"]
    );
}

/// Issue 25 §3: `some x` in a comprehension declares a local of its own even when the rule
/// body binds `x` (gator v3.21.1 checked: `dupsome:1`).
#[test]
fn some_in_a_comprehension_rebinds_a_name_locally() {
    let rego = "package gap\nviolation[{\"msg\": sprintf(\"%v %v\", [x, ys])}] {\n  x := input.review.object.spec.a\n  ys := {y | some x; y := input.review.object.spec.b[x]}\n  count(ys) > 0\n}\n";
    assert_eq!(
        messages(rego, &[], thing(json!({"a": 1, "b": [2]}))),
        vec!["1 {2}"]
    );
}
