//! Rego v0 templates may call OPA's deprecated built-ins; Rego v1 templates that call them, or
//! call functions that do not exist, are refused as OPA's compiler refuses them, and built-ins
//! the engine does not evaluate are an explicit `unsupported` error.

mod common;

use common::{messages, messages_of, refusal, thing};
use serde_json::json;

#[test]
fn v0_templates_get_the_deprecated_builtins() {
    let rego = "package gap\nviolation[{\"msg\": m}] {\n  v := input.review.object.metadata.labels[k]\n  not re_match(\"^[a-z]+$\", v)\n  m := sprintf(\"bad label %v\", [k])\n}\n";
    let mut object = thing(json!({}));
    object["metadata"]["labels"] = json!({"good": "abc", "bad": "ABC"});
    assert_eq!(messages(rego, &[], object), vec!["bad label bad"]);

    let rego = "package gap\nviolation[{\"msg\": msg}] {\n  flags := input.review.object.spec.flags\n  any(flags)\n  not all(flags)\n  missing := set_diff(cast_set(input.review.object.spec.want), cast_set(input.review.object.spec.have))\n  cast_array(missing) == [\"b\"]\n  cast_string(\"s\") == \"s\"\n  cast_boolean(true)\n  cast_null(null) == null\n  cast_object({\"a\": 1}).a == 1\n  net.cidr_overlap(\"10.0.0.0/8\", input.review.object.spec.ip)\n  msg := \"all deprecated built-ins answered\"\n}\n";
    let spec = json!({"flags": [true, false], "want": ["a", "b"], "have": ["a"], "ip": "10.1.2.3"});
    assert_eq!(
        messages(rego, &[], thing(spec)),
        vec!["all deprecated built-ins answered"]
    );
}

#[test]
fn v1_templates_calling_deprecated_builtins_are_refused() {
    let rego = "package gap\nviolation contains {\"msg\": \"x\"} if {\n  re_match(\"a\", input.review.object.spec.v)\n}\n";
    let error = refusal(rego, &[], true);
    assert!(
        error.contains(
            "template:3: rego_type_error: deprecated built-in function calls in expression: re_match"
        ),
        "{error}"
    );
    let fine = "package gap\nviolation contains {\"msg\": \"x\"} if {\n  regex.match(\"a\", input.review.object.spec.v)\n}\n";
    assert_eq!(
        messages_of(fine, &[], true, thing(json!({"v": "a"}))),
        vec!["x"]
    );
}

#[test]
fn undefined_functions_and_type_errors_are_refused_at_ingestion() {
    let undefined = "package gap\nviolation[{\"msg\": \"x\"}] { no_such_function(1) }\n";
    assert!(
        refusal(undefined, &[], false)
            .contains("template:2: rego_type_error: undefined function no_such_function")
    );
    let arity = "package gap\nviolation[{\"msg\": \"x\"}] { count(1, 2, 3) }\n";
    assert!(refusal(arity, &[], false).contains("rego_type_error: count: arity mismatch"));
    let types = "package gap\nviolation[{\"msg\": \"x\"}] { startswith(1, \"a\") }\n";
    assert!(
        refusal(types, &[], false).contains("rego_type_error: startswith: invalid argument(s)")
    );
}

#[test]
fn builtins_the_engine_does_not_evaluate_are_unsupported() {
    let external = "package gap\nviolation[{\"msg\": \"x\"}] {\n  response := external_data({\"provider\": \"p\", \"keys\": [\"k\"]})\n  count(response.errors) > 0\n}\n";
    let error = refusal(external, &[], false);
    assert!(error.contains("unsupported: external_data"), "{error}");
    let http = "package gap\nviolation[{\"msg\": \"x\"}] { http.send({\"method\": \"get\", \"url\": \"https://x\"}) }\n";
    let error = refusal(http, &[], false);
    assert!(
        error.contains("unsupported: built-in function http.send"),
        "{error}"
    );
}
