//! Generated CEL expressions — deep, wide and costly — compiled and evaluated on a thread with
//! a rayon worker's stack (2 MiB) under a deadline: each must end in decisions or an error
//! within the deadline plus a second, never a panic, an abort or a stack overflow. The case
//! count is bounded so the test stays quick.

use std::time::{Duration, Instant};

use k8s_cel::{Bindings, CelProgram, PreparedBindings, PreparedParams};
use proptest::prelude::*;
use serde_json::json;

/// Expressions of any type; the costly and the odd ones included.
fn expression() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("1".to_owned()),
        Just("'abc'".to_owned()),
        Just("null".to_owned()),
        Just("true".to_owned()),
        Just("1.5".to_owned()),
        Just("object.spec".to_owned()),
        Just("object.spec.l".to_owned()),
        Just("object.spec.s".to_owned()),
        Just("object.spec.nul".to_owned()),
        Just("object.spec.missing".to_owned()),
        Just("variables.l".to_owned()),
        Just("lists.range(2000)".to_owned()),
        Just("[1, 'a', null, [2]]".to_owned()),
        Just("{'k': 'v', 'n': 1}".to_owned()),
        Just("x".to_owned()),
    ];
    leaf.prop_recursive(6, 64, 4, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone(), 0..9usize).prop_map(|(a, b, op)| {
                let op = ["+", "-", "*", "==", "!=", "<", "in", "&&", "||"][op];
                format!("({a} {op} {b})")
            }),
            (inner.clone(), inner.clone(), 0..6usize).prop_map(|(a, b, m)| {
                let m = ["map", "all", "exists", "filter", "exists_one", "map"][m];
                format!("{a}.{m}(x, {b})")
            }),
            inner.clone().prop_map(|a| format!("size({a})")),
            inner.clone().prop_map(|a| format!("string({a})")),
            inner.clone().prop_map(|a| format!("has({a}.f)")),
            inner.clone().prop_map(|a| format!("{a}.?f.orValue(0)")),
            inner.clone().prop_map(|a| format!("{a}.join(',')")),
            inner
                .clone()
                .prop_map(|a| format!("{a}.matches('(a|b)*c')")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("{a}[{b}]")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("sets.intersects({a}, {b})")),
            (inner.clone(), inner.clone(), inner.clone())
                .prop_map(|(a, b, c)| format!("({a} ? {b} : {c})")),
            (inner.clone(), 1..400usize).prop_map(|(a, n)| format!("{}{a}", "1 + ".repeat(n))),
            (inner.clone(), 1..80usize).prop_map(|(a, n)| format!(
                "{}{a}{}",
                "[".repeat(n),
                "]".repeat(n)
            )),
            (inner.clone(), 1..300usize).prop_map(|(a, n)| format!("{a}{}", ".f".repeat(n))),
            (inner, 1..500usize).prop_map(|(a, n)| format!("[{}]", vec![a; n].join(", "))),
        ]
    })
}

const DEADLINE: Duration = Duration::from_secs(2);

fn evaluate(expression: &str) -> Duration {
    let source = json!({
        "variables": [{"name": "l", "expression": "object.spec.l"}],
        "validations": [
            {"expression": format!("({expression}) == true")},
            {"expression": "true", "messageExpression": expression},
        ],
    });
    let object = json!({"kind": "Pod", "spec": {
        "l": (0..2000).collect::<Vec<i64>>(), "s": "a".repeat(2000), "nul": null
    }});
    let started = Instant::now();
    if let Ok(program) = CelProgram::compile(&source) {
        let bindings = PreparedBindings::new(&Bindings {
            object: Some(&object),
            ..Bindings::default()
        })
        .unwrap();
        let params = PreparedParams::new(None).unwrap();
        let _ = program.evaluate_until(&bindings, &params, Some(started + DEADLINE));
    }
    started.elapsed()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn generated_expressions_end_within_the_deadline_without_crashing(expression in expression()) {
        let text = expression.clone();
        let took = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || evaluate(&text))
            .unwrap()
            .join()
            .map_err(|_| TestCaseError::fail(format!("panicked: {expression}")))?;
        prop_assert!(took <= DEADLINE + Duration::from_secs(1), "took {took:?}: {expression}");
    }
}

/// The deepest expressions the bounds accept (250 levels, 64 brackets), each on a worker's
/// stack: the depth bound must be what keeps evaluation within it.
#[test]
fn the_deepest_accepted_expressions_fit_a_worker_stack() {
    let comprehensions = format!("{}true{}", "[1].all(x, ".repeat(31), ")".repeat(31));
    let expressions = [
        format!("{} > 0", vec!["object.spec.l[0]"; 124].join(" + ")),
        format!("{} > 0", vec!["size(object.spec.s)"; 124].join(" + ")),
        format!("has(object{}.f)", ".f".repeat(248)),
        format!("{}1{} == 1", "(true ? ".repeat(60), " : 0)".repeat(60)),
        format!("{}1{} != []", "[".repeat(63), "]".repeat(63)),
        comprehensions,
        format!("{}true", "!".repeat(249)),
        format!("{}1 == 1", "-".repeat(248)),
    ];
    for expression in expressions {
        let program = CelProgram::compile(&json!({"validations": [{"expression": expression}]}))
            .unwrap_or_else(|e| panic!("{e}: {expression}"));
        assert!(
            program.compile_errors().is_empty(),
            "{:?}",
            program.compile_errors()
        );
        let text = expression.clone();
        let took = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || evaluate(&text))
            .unwrap()
            .join()
            .unwrap_or_else(|_| panic!("panicked: {expression}"));
        assert!(took <= DEADLINE + Duration::from_secs(1), "took {took:?}");
    }
}
