//! Random expressions over random bindings: compiling and evaluating never panics, and every
//! evaluation ends (errors included) within the cost budget. A fixed-seed generator keeps runs
//! reproducible.

use k8s_cel::{Bindings, CelProgram, Decision, EvalError};
use serde_json::{Value, json};

/// xorshift64*: small, deterministic.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }
}

const ATOMS: &[&str] = &[
    "object",
    "oldObject",
    "request",
    "namespaceObject",
    "variables.anyObject",
    "variables.params",
    "object.spec",
    "object.metadata.labels",
    "object.spec.containers",
    "1",
    "-7",
    "2.5",
    "'a'",
    "''",
    "true",
    "null",
    "[]",
    "[1, 'x']",
    "{'k': 1}",
    "b'xy'",
    "quantity('1Gi')",
    "url('https://h:1/p?q=1')",
    "ip('10.0.0.1')",
    "cidr('10.0.0.0/8')",
    "duration('1s')",
    "optional.none()",
    "optional.of(3)",
    "lists.range(5)",
    "format.dns1123Label()",
    "9223372036854775807",
];

const UNARY: &[&str] = &[
    "size(#)",
    "!#",
    "-#",
    "string(#)",
    "int(#)",
    "double(#)",
    "type(#)",
    "has(#.x)",
    "#.?x",
    "#[?0]",
    "#[0]",
    "#.lowerAscii()",
    "#.split(',')",
    "#.isSorted()",
    "#.sum()",
    "#.max()",
    "#.find('[a-z]+')",
    "#.findAll('.')",
    "#.orValue(1)",
    "#.hasValue()",
    "#.value()",
    "quantity(#)",
    "isQuantity(#)",
    "url(#)",
    "ip(#)",
    "cidr(#)",
    "#.asInteger()",
    "#.getHost()",
    "#.family()",
    "#.masked()",
    "#.validate('x')",
    "#.map(e, e)",
    "#.filter(e, e == 1)",
    "#.all(e, e != null)",
    "#.exists(e, true)",
    "#.join('-')",
    "#.distinct()",
    "#.sort()",
    "#.charAt(1)",
    "#.replace('a', 'bb')",
    "'%s'.format([#])",
    "strings.quote(#)",
    "sets.contains(#, #)",
    "#.size()",
    "dyn(#)",
];

const BINARY: &[&str] = &[
    "# + #",
    "# - #",
    "# * #",
    "# / #",
    "# % #",
    "# == #",
    "# != #",
    "# < #",
    "# >= #",
    "# && #",
    "# || #",
    "# in #",
    "# ? # : #",
    "#.contains(#)",
    "#.startsWith(#)",
    "#.indexOf(#)",
    "#.add(#)",
    "#.isGreaterThan(#)",
    "#.containsIP(#)",
    "[#, #]",
    "{#: #}",
    "#.substring(#)",
    "#.matches(#)",
];

fn expression(rng: &mut Rng, depth: u32) -> String {
    if depth == 0 || rng.next().is_multiple_of(4) {
        return rng.pick(ATOMS).to_owned();
    }
    if rng.next().is_multiple_of(2) {
        rng.pick(UNARY)
            .replacen('#', &expression(rng, depth - 1), 2)
    } else {
        let template = rng.pick(BINARY);
        let mut out = String::new();
        for (i, part) in template.split('#').enumerate() {
            if i > 0 {
                out.push_str(&expression(rng, depth - 1));
            }
            out.push_str(part);
        }
        out
    }
}

fn json_value(rng: &mut Rng, depth: u32) -> Value {
    match rng.next() % if depth == 0 { 5 } else { 7 } {
        0 => Value::Null,
        1 => json!(rng.next().is_multiple_of(2)),
        2 => json!(rng.next() as i64),
        3 => json!(rng.pick(&["", "a", "1Gi", "10.0.0.1", "https://x/", "δ"])),
        4 => json!((rng.next() % 1000) as f64 / 7.0),
        5 => Value::Array(
            (0..rng.next() % 4)
                .map(|_| json_value(rng, depth - 1))
                .collect(),
        ),
        _ => {
            let keys = ["x", "spec", "metadata", "labels", "containers", "name"];
            Value::Object(
                (0..rng.next() % 4)
                    .map(|i| {
                        (
                            keys[i as usize % keys.len()].to_owned(),
                            json_value(rng, depth - 1),
                        )
                    })
                    .collect(),
            )
        }
    }
}

#[test]
fn random_expressions_and_bindings_never_panic() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut evaluated = 0;
    for _ in 0..2000 {
        let source = json!({
            "variables": [{"name": "v", "expression": expression(&mut rng, 3)}],
            "matchCondition": [{"name": "m", "expression": format!("{} || true", expression(&mut rng, 2))}],
            "validations": [{"expression": expression(&mut rng, 4), "messageExpression": expression(&mut rng, 2)}],
        });
        let Ok(program) = CelProgram::compile(&source) else {
            continue;
        };
        let program = program.with_cost_budget(100_000);
        let (object, params, request) = (
            json_value(&mut rng, 4),
            json_value(&mut rng, 3),
            json_value(&mut rng, 2),
        );
        let decisions = program.evaluate(&Bindings {
            object: Some(&object),
            old_object: Some(&object),
            request: Some(&request),
            params: Some(&params),
            namespace_object: None,
        });
        // A panic inside the interpreter is caught at the boundary as `Internal`: none may occur.
        assert!(
            !decisions.contains(&Decision::Error(EvalError::Internal)),
            "{source}"
        );
        evaluated += 1;
    }
    assert!(evaluated > 1000, "only {evaluated} programs compiled");
}
