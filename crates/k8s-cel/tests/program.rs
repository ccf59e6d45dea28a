//! Program-level behaviour: the source as Gatekeeper reads it, the message rules, match
//! conditions, variables, failure policy, unsupported features and the evaluation bounds.

use k8s_cel::{Bindings, CelProgram, CelViolation, CompileError, Decision, EvalError};
use serde_json::{Value, json};

fn run(source: Value, object: Value) -> Vec<Decision> {
    run_with_budget(source, object, k8s_cel::COST_BUDGET)
}

fn run_with_budget(source: Value, object: Value, budget: u64) -> Vec<Decision> {
    let program = CelProgram::compile(&source)
        .unwrap()
        .with_cost_budget(budget);
    let constraint = json!({"kind": "K", "spec": {"parameters": {"max": 3, "labels": ["team"]}}});
    let request = json!({"operation": "CREATE", "kind": {"group": "apps", "version": "v1", "kind": "Deployment"}});
    program.evaluate(&Bindings {
        object: Some(&object),
        params: Some(&constraint),
        request: Some(&request),
        ..Bindings::default()
    })
}

fn violation(message: &str) -> Decision {
    Decision::Violation(CelViolation {
        message: message.to_owned(),
        reason: "Invalid".to_owned(),
    })
}

fn deployment(replicas: i64) -> Value {
    json!({"kind": "Deployment", "metadata": {"name": "d", "labels": {"team": "a"}}, "spec": {"replicas": replicas}})
}

#[test]
fn message_falls_back_from_message_expression_to_message_to_the_expression() {
    let source = json!({"validations": [
        {"expression": "object.spec.replicas <= variables.params.max",
         "messageExpression": "'  too many: ' + string(object.spec.replicas) + '  '", "message": "static"},
        {"expression": "object.spec.replicas < 2", "messageExpression": "'two\\nlines'", "message": " static "},
        {"expression": " object.spec.replicas < 1 "},
        {"expression": "object.spec.replicas < 0", "messageExpression": "object.missing", "message": "fallback"},
    ]});
    assert_eq!(
        run(source, deployment(5)),
        vec![
            violation("too many: 5"),
            violation("static"),
            violation("failed expression: object.spec.replicas < 1"),
            violation("fallback"),
        ]
    );
}

#[test]
fn reason_is_kept_and_defaults_to_invalid() {
    let source =
        json!({"validations": [{"expression": "false", "message": "m", "reason": "Forbidden"}]});
    let expected = Decision::Violation(CelViolation {
        message: "m".into(),
        reason: "Forbidden".into(),
    });
    assert_eq!(run(source, deployment(1)), vec![expected]);
}

#[test]
fn a_false_match_condition_gives_nothing_and_an_erring_one_an_error() {
    let failing = json!({"validations": [{"expression": "false", "message": "m"}]});
    let mut source = failing.clone();
    source["matchCondition"] =
        json!([{"name": "only-big", "expression": "object.spec.replicas > 10"}]);
    assert_eq!(run(source.clone(), deployment(5)), vec![]);
    assert_eq!(run(source, deployment(50)), vec![violation("m")]);
    let mut source = failing;
    source["matchCondition"] = json!([{"name": "bad", "expression": "object.nope == 1"}]);
    assert_eq!(
        run(source, deployment(5)),
        vec![Decision::Error(EvalError::Runtime {
            expression: "object.nope == 1".into(),
            detail: "no such key: nope".into()
        })]
    );
}

#[test]
fn an_erring_validation_is_an_error_beside_the_other_decisions() {
    let source = json!({"validations": [
        {"expression": "object.spec.nope > 1", "message": "a"},
        {"expression": "false", "message": "b"},
    ]});
    let decisions = run(source, deployment(1));
    assert_eq!(decisions.len(), 2);
    assert_eq!(
        decisions[0],
        Decision::Error(EvalError::Runtime {
            expression: "object.spec.nope > 1".into(),
            detail: "no such key: nope".into()
        })
    );
    assert_eq!(decisions[1], violation("b"));
}

#[test]
fn failure_policy_ignore_drops_errors_only() {
    let source = json!({"failurePolicy": "Ignore", "validations": [
        {"expression": "object.spec.nope > 1", "message": "a"},
        {"expression": "false", "message": "b"},
    ]});
    assert_eq!(run(source, deployment(1)), vec![violation("b")]);
}

#[test]
fn compile_problems_are_reported_on_evaluation_with_kubernetes_wording() {
    let cases = [
        (
            "object.metadata.name",
            "compilation error: must evaluate to bool but got dyn",
        ),
        ("1", "compilation error: must evaluate to bool but got int"),
        (
            "params.spec.parameters.max == 1",
            "compilation error: compilation failed: ERROR: <input>:1:1: undeclared reference to 'params' (in container '')\n | params.spec.parameters.max == 1\n | ^",
        ),
        (
            "foo == 1",
            "compilation error: compilation failed: ERROR: <input>:1:1: undeclared reference to 'foo' (in container '')\n | foo == 1\n | ^",
        ),
    ];
    for (expression, expected) in cases {
        let decisions = run(
            json!({"validations": [{"expression": expression}]}),
            deployment(1),
        );
        let texts: Vec<String> = decisions
            .iter()
            .map(|d| match d {
                Decision::Error(e) => e.to_string(),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(texts, vec![expected.to_owned()], "{expression}");
    }
    let program = CelProgram::compile(&json!({"validations": [{"expression": "foo(1)"}]})).unwrap();
    assert_eq!(program.compile_errors().len(), 1);
}

#[test]
fn a_syntax_error_is_a_compilation_error() {
    let decisions = run(
        json!({"validations": [{"expression": "object.spec.replicas <"}]}),
        deployment(1),
    );
    let [Decision::Error(EvalError::Compilation { detail })] = decisions.as_slice() else {
        panic!("{decisions:?}");
    };
    assert!(
        detail.starts_with("compilation failed: ERROR: <input>:1:"),
        "{detail}"
    );
}

#[test]
fn variables_see_earlier_variables_and_params_and_are_lazy() {
    let source = json!({
        "variables": [
            {"name": "max", "expression": "params.spec.parameters.max"},
            {"name": "over", "expression": "object.spec.replicas > variables.max"},
            {"name": "broken", "expression": "object.nope"},
        ],
        "validations": [{"expression": "!variables.over", "messageExpression": "'over ' + string(variables.max)"}],
    });
    assert_eq!(
        run(source.clone(), deployment(5)),
        vec![violation("over 3")]
    );
    assert_eq!(run(source, deployment(2)), vec![]);
    let source = json!({
        "variables": [{"name": "broken", "expression": "object.nope"}],
        "validations": [{"expression": "variables.broken == 1"}],
    });
    assert_eq!(
        run(source, deployment(1)),
        vec![Decision::Error(EvalError::Runtime {
            expression: "variables.broken == 1".into(),
            detail: "composited variable \"broken\" fails to evaluate: no such key: nope".into()
        })]
    );
}

#[test]
fn a_kept_variable_is_the_value_it_was() {
    // A variable's value is copied out of its evaluation to be kept: maps keep their keys of
    // every type, lists their order, and a sub-tree of a binding all its entries.
    let source = json!({
        "variables": [
            {"name": "m", "expression": "{1: 'int', 2u: 'uint', true: 'bool', 'k': [3, 'x', [4.5, null]]}"},
            {"name": "labels", "expression": "object.metadata.labels"},
            {"name": "all", "expression": "[object.metadata, object.spec]"},
        ],
        "validations": [{
            "expression": "false",
            "messageExpression": "variables.m[1] + ' ' + variables.m[2u] + ' ' + variables.m[true] + ' ' + string(variables.m['k'][0]) + variables.m['k'][1] + string(variables.m['k'][2][0]) + string(variables.m['k'][2][1] == null) + ' ' + variables.labels.team + ' ' + string(variables.all[1].replicas) + ' ' + string(variables.m == {1: 'int', 2u: 'uint', true: 'bool', 'k': [3, 'x', [4.5, null]]})"
        }],
    });
    assert_eq!(
        run(source, deployment(7)),
        vec![violation("int uint bool 3x4.5true a 7 true")]
    );
}

#[test]
fn a_variable_may_not_use_a_later_one() {
    let source = json!({
        "variables": [{"name": "a", "expression": "variables.b"}, {"name": "b", "expression": "1"}],
        "validations": [{"expression": "variables.a == 1"}],
    });
    let decisions = run(source, deployment(1));
    let [Decision::Error(error)] = decisions.as_slice() else {
        panic!("{decisions:?}")
    };
    assert!(
        error
            .to_string()
            .contains("composited variable \"a\" fails to compile"),
        "{error}"
    );
    assert!(error.to_string().contains("undefined field 'b'"), "{error}");
}

#[test]
fn any_object_is_the_old_object_on_delete() {
    let program = CelProgram::compile(&json!({"validations": [
        {"expression": "variables.anyObject.metadata.name != 'old'", "message": "old seen"},
        {"expression": "object != null", "message": "object cleared"},
    ]}))
    .unwrap();
    let old = json!({"metadata": {"name": "old"}});
    let request = json!({"operation": "DELETE"});
    let decisions = program.evaluate(&Bindings {
        old_object: Some(&old),
        request: Some(&request),
        ..Bindings::default()
    });
    assert_eq!(
        decisions,
        vec![violation("old seen"), violation("object cleared")]
    );
}

#[test]
fn the_source_is_read_as_gatekeeper_reads_it() {
    let reserved =
        CelProgram::compile(&json!({"variables": [{"name": "params", "expression": "1"}]}))
            .unwrap_err();
    assert_eq!(
        reserved.to_string(),
        "invalid variable: params an invalid variable name, \"params\" is a reserved keyword"
    );
    let prefixed = CelProgram::compile(
        &json!({"matchCondition": [{"name": "gatekeeper_internal_x", "expression": "true"}]}),
    )
    .unwrap_err();
    assert!(matches!(prefixed, CompileError::Reserved(_)), "{prefixed}");
    let policy = CelProgram::compile(&json!({"failurePolicy": "Sometimes"})).unwrap_err();
    assert_eq!(
        policy.to_string(),
        "invalid K8sNativeValidation source: unrecognized failure policy: Sometimes"
    );
    let typed = CelProgram::compile(&json!({"validations": [{"expression": 1}]})).unwrap_err();
    assert_eq!(
        typed.to_string(),
        "invalid K8sNativeValidation source: validations[0].expression must be a string"
    );
    let plural = CelProgram::compile(&json!({"matchConditions": [], "validations": []})).unwrap();
    assert_eq!(plural.ignored_keys(), ["matchConditions"]);
}

#[test]
fn what_is_not_provided_is_refused_naming_it() {
    for (expression, named) in [
        ("[1].first().hasValue()", "function 'first'"),
        ("[1].all(i, v, v > 0)", "two-variable comprehension 'all'"),
        ("isSemver('1.0.0')", "function 'isSemver'"),
        (
            "format.uuid().validate('x').hasValue()",
            "function 'format.uuid'",
        ),
    ] {
        let error =
            CelProgram::compile(&json!({"validations": [{"expression": expression}]})).unwrap_err();
        let text = error.to_string();
        assert!(
            text.starts_with(&format!("validations[0].expression: {named}")),
            "{text}"
        );
        assert!(
            text.ends_with("is not supported by the embedded CEL engine"),
            "{text}"
        );
    }
}

#[test]
fn hostile_expressions_end_in_errors() {
    // The default budget stops this too, in about a second of a release build; a small budget
    // keeps the test fast.
    let nested = "lists.range(1000).all(a, lists.range(1000).all(b, lists.range(1000).all(c, a + b + c >= 0)))";
    let out_of_budget = vec![Decision::Error(EvalError::OutOfBudget)];
    assert_eq!(
        run_with_budget(
            json!({"validations": [{"expression": nested}]}),
            deployment(1),
            50_000
        ),
        out_of_budget
    );
    let absorbed = format!("({nested}) || true");
    assert_eq!(
        run_with_budget(
            json!({"validations": [{"expression": absorbed}]}),
            deployment(1),
            50_000
        ),
        out_of_budget
    );
    let small = "lists.range(10).all(a, lists.range(10).all(b, a + b >= 0))";
    assert_eq!(
        run_with_budget(
            json!({"validations": [{"expression": small}]}),
            deployment(1),
            50_000
        ),
        vec![]
    );
    let growing = json!({
        "variables": [
            {"name": "a", "expression": "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'"},
            {"name": "b", "expression": "variables.a.replace('a', variables.a)"},
            {"name": "c", "expression": "variables.b.replace('a', variables.b)"},
        ],
        "validations": [{"expression": "variables.c.size() > 0"}],
    });
    let decisions = run(growing, deployment(1));
    let [Decision::Error(error)] = decisions.as_slice() else {
        panic!("{decisions:?}")
    };
    assert!(error.to_string().contains("value cap"), "{error}");
    let deep = format!("{}1{} == 1", "(".repeat(500), ")".repeat(500));
    let decisions = run(
        json!({"validations": [{"expression": deep}]}),
        deployment(1),
    );
    let [Decision::Error(EvalError::Compilation { detail })] = decisions.as_slice() else {
        panic!("{decisions:?}")
    };
    assert!(detail.contains("nests deeper than 64 levels"), "{detail}");
}

#[test]
fn bindings_nested_too_deeply_are_an_error() {
    let mut deep = json!(1);
    for _ in 0..200 {
        deep = json!([deep]);
    }
    let decisions = run(json!({"validations": [{"expression": "true"}]}), deep);
    assert_eq!(
        decisions,
        vec![Decision::Error(EvalError::TooDeep {
            binding: "object",
            max: 128
        })]
    );
}

#[test]
fn prepared_bindings_take_each_constraints_params_and_keep_the_rest() {
    let program = CelProgram::compile(&json!({
        "variables": [{"name": "who", "expression": "params.metadata.name"}],
        "validations": [{
            "expression": "object.spec.replicas <= variables.params.max",
            "messageExpression": "variables.who + ': at most ' + string(variables.params.max)",
        }],
    }))
    .unwrap();
    let object = deployment(5);
    let constraint = |name: &str, max: i64| json!({"metadata": {"name": name}, "spec": {"parameters": {"max": max}}});
    let prepared = k8s_cel::PreparedBindings::new(&Bindings {
        object: Some(&object),
        ..Bindings::default()
    })
    .unwrap();
    // Params converted once each and kept, evaluated in turn against the same bindings (as the
    // engine does for several Constraints of a template): each gives its own message.
    let kept: Vec<_> = [("three", 3), ("nine", 9), ("four", 4)]
        .into_iter()
        .map(|(name, max)| {
            let params = constraint(name, max);
            let prepared_params = k8s_cel::PreparedParams::new(Some(&params)).unwrap();
            (name, params, prepared_params)
        })
        .collect();
    for _round in 0..2 {
        for (name, params, prepared_params) in &kept {
            let fresh = program.evaluate(&Bindings {
                object: Some(&object),
                params: Some(params),
                ..Bindings::default()
            });
            assert_eq!(
                program.evaluate_prepared(&prepared, prepared_params),
                fresh,
                "{name}"
            );
        }
    }
    let [_, (_, _, nine), (_, _, four)] = kept.as_slice() else {
        panic!("three constraints")
    };
    assert_eq!(program.evaluate_prepared(&prepared, nine), []);
    assert_eq!(
        program.evaluate_prepared(&prepared, four),
        [violation("four: at most 4")]
    );
}

#[test]
fn params_nested_too_deeply_are_an_error() {
    let mut deep = json!(1);
    for _ in 0..200 {
        deep = json!([deep]);
    }
    let constraint = json!({"spec": {"parameters": {"deep": deep}}});
    assert_eq!(
        k8s_cel::PreparedParams::new(Some(&constraint)).unwrap_err(),
        EvalError::TooDeep {
            binding: "params",
            max: 128
        }
    );
}

#[test]
fn the_deadline_stops_one_evaluation_while_it_runs() {
    use k8s_cel::{PreparedBindings, PreparedParams};
    use std::time::{Duration, Instant};
    // Without a budget this runs for minutes (2^24 iterations of a 4,096-element scan).
    let program = CelProgram::compile(&json!({
        "variables": [{"name": "r", "expression": "lists.range(4096)"}],
        "validations": [{
            "expression": "variables.r.all(x, variables.r.all(y, !(-1 in variables.r)))"
        }],
    }))
    .unwrap()
    .with_cost_budget(u64::MAX);
    let object = json!({"kind": "Pod"});
    let bindings = PreparedBindings::new(&Bindings {
        object: Some(&object),
        ..Bindings::default()
    })
    .unwrap();
    let params = PreparedParams::new(None).unwrap();
    let started = Instant::now();
    let deadline = started + Duration::from_millis(300);
    assert_eq!(
        program.evaluate_until(&bindings, &params, Some(deadline)),
        None
    );
    assert!(
        started.elapsed() < Duration::from_millis(1300),
        "{:?}",
        started.elapsed()
    );
    // An evaluation that ends before its deadline gives its decisions.
    let quick =
        CelProgram::compile(&json!({"validations": [{"expression": "1 == 2", "message": "no"}]}))
            .unwrap();
    let far = Some(Instant::now() + Duration::from_secs(60));
    assert_eq!(
        quick
            .evaluate_until(&bindings, &params, far)
            .map(|d| d.len()),
        Some(1)
    );
}
