//! Selection, presence tests, indexing and operator errors on null, absent and scalar values,
//! each expected answer taken from the real gator (v3.21.1) on the same object
//! (`docs/cel-semantics.md`, "Selection, presence and indexing on any receiver").

use k8s_cel::{Bindings, CelProgram, Decision};
use serde_json::{Value, json};

fn object() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "labels": {"a": "b"}},
        "spec": {
            "nul": null, "str": "s", "num": 3, "lst": [1, 2], "emptymap": {},
            "m": {"k": "v"},
            "containers": [{"name": "c", "image": "x"}, {"name": "d"}]
        }
    })
}

/// `Ok(true)` passes, `Ok(false)` fails, `Err` is the error text after `resulted in error: `.
fn outcome(expression: &str) -> Result<bool, String> {
    let program = CelProgram::compile(
        &json!({"validations": [{"expression": expression, "message": "FALSE"}]}),
    )
    .map_err(|e| e.to_string())?;
    let object = object();
    let decisions = program.evaluate(&Bindings {
        object: Some(&object),
        ..Bindings::default()
    });
    match decisions.as_slice() {
        [] => Ok(true),
        [Decision::Violation(v)] if v.message == "FALSE" => Ok(false),
        [Decision::Error(e)] => {
            let text = e.to_string();
            Err(text
                .split_once("resulted in error: ")
                .map_or(text.clone(), |(_, detail)| detail.to_owned()))
        }
        other => Err(format!("unexpected decisions: {other:?}")),
    }
}

fn assert_gator(cases: &[(&str, Result<bool, &str>)]) {
    let wrong: Vec<String> = cases
        .iter()
        .filter_map(|(expression, want)| {
            let want = want.map_err(str::to_owned);
            let got = outcome(expression);
            (got != want).then(|| format!("{expression}\n    gator: {want:?}\n    ours:  {got:?}"))
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "answers unlike gator's:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn presence_tests_on_null_and_scalar_parents_are_false() {
    assert_gator(&[
        ("has(object.spec.nul.x)", Ok(false)),
        ("has(object.spec.str.x)", Ok(false)),
        ("has(object.spec.num.x)", Ok(false)),
        ("has(object.spec.m.k.x)", Ok(false)),
        ("has(object.spec.emptymap.x)", Ok(false)),
        ("has(object.spec.nul)", Ok(true)),
        ("has(object.spec.missing)", Ok(false)),
        ("has(object.spec.containers[1].image)", Ok(false)),
        ("object.spec.containers.all(c, has(c.image))", Ok(false)),
        ("has(object.spec.missing.x)", Err("no such key: missing")),
        (
            "has(object.spec.lst.x)",
            Err("unsupported index type 'string' in list"),
        ),
    ]);
}

#[test]
fn selections_and_indexes_fail_with_cel_go_texts() {
    assert_gator(&[
        ("object.spec.nul.x == 1", Err("no such key: x")),
        ("object.spec.str.x == 1", Err("no such key: x")),
        ("object.spec.nul.x.y == 1", Err("no such key: x")),
        ("object.spec.missing.x == 1", Err("no such key: missing")),
        ("object.spec.m.zz == 1", Err("no such key: zz")),
        ("object.spec.nul['x'] == 1", Err("no such key: x")),
        ("object.spec.str['x'] == 1", Err("no such key: x")),
        ("object.spec.nul[0] == 1", Err("no such key: 0")),
        ("object.spec.m[1] == 1", Err("no such key: 1")),
        ("object.spec.lst[5] == 1", Err("index out of bounds: 5")),
        ("object.spec.lst[-1] == 1", Err("index out of bounds: -1")),
        (
            "object.spec.lst[1.5] == 1",
            Err("unsupported index value 1.5 in list"),
        ),
        (
            "object.spec.lst[true] == 1",
            Err("unsupported index type 'bool' in list"),
        ),
        (
            "object.spec.lst['a'] == 1",
            Err("unsupported index type 'string' in list"),
        ),
        (
            "object.spec.lst.x == 1",
            Err("unsupported index type 'string' in list"),
        ),
        (
            "object.spec.lst[1] == 2 && object.spec.lst[1u] == 2 && object.spec.lst[1.0] == 2",
            Ok(true),
        ),
        (
            "object.spec.containers[1].image == 'x'",
            Err("no such key: image"),
        ),
        (
            "object.spec.containers.all(c, c.image != '')",
            Err("no such key: image"),
        ),
        (
            "object.spec.containers.exists(c, c.image == 'zz')",
            Err("no such key: image"),
        ),
        ("object.spec.containers.exists(c, c.image == 'x')", Ok(true)),
        (
            "object.spec.lst.map(x, x.y).size() == 1",
            Err("no such key: y"),
        ),
        ("object.spec.m.exists(k, k.z)", Err("no such key: z")),
        ("object.spec.nul == null", Ok(true)),
        ("'x' in object.spec.m", Ok(false)),
        ("'k' in object.spec.m", Ok(true)),
    ]);
}

#[test]
fn qualifiers_after_an_optional_one_are_optional() {
    assert_gator(&[
        ("object.spec.?nul.x.orValue(1) == 1", Ok(true)),
        ("object.spec.?str.x.orValue(1) == 1", Ok(true)),
        ("object.spec.?missing.x.orValue(1) == 1", Ok(true)),
        ("object.spec.?nul.?x.orValue(1) == 1", Ok(true)),
        ("object.spec.nul.?x.orValue(1) == 1", Ok(true)),
        ("object.spec.?m.k.orValue(1) == 'v'", Ok(true)),
        ("object.spec.?lst[9].orValue(1) == 1", Ok(true)),
        ("object.spec.lst[?9].orValue(1) == 1", Ok(true)),
        ("object.spec.?nul.orValue(2) == 2", Ok(false)),
    ]);
}

#[test]
fn operator_and_function_errors_use_cel_go_wording() {
    assert_gator(&[
        ("'x' in object.spec.nul", Err("no such overload")),
        ("'x' in object.spec.str", Err("no such overload")),
        ("object.spec.nul + [1] == []", Err("no such overload: _+_")),
        ("object.spec.str + 1 == 1", Err("no such overload")),
        ("object.spec.nul - 1 == 0", Err("no such overload: _-_")),
        ("object.spec.str * 2 == 0", Err("no such overload")),
        ("-object.spec.str == 0", Err("no such overload")),
        ("object.spec.nul < 1", Err("no such overload: _<_")),
        ("object.spec.str < 1", Err("no such overload")),
        ("object.spec.num < 'a'", Err("no such overload")),
        ("size(object.spec.nul) == 0", Err("no such overload: size")),
        ("size(object.spec.num) == 0", Err("no such overload: size")),
        ("object.spec.nul.size() == 0", Err("no such overload: size")),
        ("object.spec.nul.startsWith('a')", Err("no such overload")),
        ("object.spec.nul.matches('a')", Err("no such overload")),
        ("object.spec.num.contains('a')", Err("no such overload")),
        ("!object.spec.str", Err("no such overload")),
        ("object.spec.str && true", Err("no such overload")),
        ("true && object.spec.str", Err("no such overload")),
        ("object.spec.str || false", Err("no such overload")),
        ("object.spec.str ? true : false", Err("no such overload")),
        (
            "string(object.spec.nul) == ''",
            Err("no such overload: string(null_type)"),
        ),
        (
            "int(object.spec.str) == 1",
            Err("type conversion error from 'string' to 'int'"),
        ),
        (
            "object.spec.nul.all(x, x == 1)",
            Err("got 'types.Null', expected iterable type"),
        ),
        (
            "object.spec.str.all(x, x == 1)",
            Err("got 'types.String', expected iterable type"),
        ),
        ("object.spec.num / 0 == 1", Err("division by zero")),
        ("object.spec.num % 0 == 1", Err("modulus by zero")),
        (
            "9223372036854775807 + object.spec.num == 1",
            Err("integer overflow"),
        ),
    ]);
}
