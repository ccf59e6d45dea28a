//! Rego sources through template ingestion and one review: random sequences of Rego fragments
//! (valid, broken and hostile) must give a template error, evaluation errors or results, and
//! never a panic, an abort or a hang. The case count is bounded; the seeds of every problem found
//! are kept as regression cases below.

mod common;

use std::time::Duration;

use common::{policy, thing};
use gatekeeper_engine::{Engine, EngineOptions};
use proptest::prelude::*;
use serde_json::json;

/// Pieces templates are made of, with the ones that broke the engine before.
const FRAGMENTS: &[&str] = &[
    "violation[{\"msg\": msg}] {",
    "violation contains {\"msg\": msg} if {",
    "}",
    "{",
    "\n",
    "msg := ",
    "msg := sprintf(\"%v\", [x])",
    "sprintf(",
    "\"%99999999999999999999d\"",
    "\"%9999999d\"",
    "x := input.review.object.spec.n",
    "input.review.object.spec",
    "numbers.range(1, 1e12)",
    "numbers.range(",
    "f(x) = y { y := f(x) }\n",
    "g(x) = y { y := h(x) }\nh(x) = y { y := g(x) }\n",
    "f(1)",
    "g(",
    "regex.match(\"a{\", \"a{\")",
    "re_match(\"[\", x)",
    "any([true])",
    "not ",
    "some i\n",
    "count(",
    "[",
    "]",
    "(",
    ")",
    "|",
    ",",
    "x",
    " := ",
    " = ",
    "1",
    "\"s\"",
    "`raw`",
    "import future.keywords\n",
    "import data.lib.x\n",
    "every y in [1] { y }\n",
    "with input as {}",
    "hosts()",
    "data.inventory",
    "http.send({})",
    "external_data({})",
    "# comment\n",
    "default violation := []\n",
];

fn source(fragments: &[usize]) -> String {
    let mut out = String::from("package gap\n");
    for &i in fragments {
        out.push_str(FRAGMENTS[i % FRAGMENTS.len()]);
        out.push(' ');
    }
    out
}

/// Ingests and reviews one source with a short time budget; any outcome but a panic is fine.
fn ingest(rego: &str, v1: bool) {
    let mut objects = policy(rego, &[], v1);
    objects.push(thing(json!({"n": 3})));
    let options = EngineOptions {
        time_budget: Some(Duration::from_millis(200)),
        ..EngineOptions::default()
    };
    if let Ok(engine) = Engine::new(objects, options) {
        let _ = engine.review_all_detailed();
    }
}

proptest! {
    // Under a second per run; failures shrink to the fewest fragments and
    // their seeds are replayed first by later runs (`fuzz_ingestion.proptest-regressions`).
    #![proptest_config(ProptestConfig { cases: 16_384, ..ProptestConfig::default() })]

    #[test]
    fn random_rego_never_panics(
        fragments in prop::collection::vec(0..FRAGMENTS.len(), 1..=40),
        v1 in any::<bool>(),
    ) {
        ingest(&source(&fragments), v1);
    }
}

#[test]
fn regression_seeds() {
    let seeds = [
        // Recursion overflowed the stack.
        "package gap\nf(x) = y { y := f(x) }\nviolation[{\"msg\": \"x\"}] { f(1) }\n",
        // A range of 10^12 elements aborted on allocation.
        "package gap\nviolation[{\"msg\": \"x\"}] { count(numbers.range(1, 1e12)) > 0 }\n",
        // A 20-digit width overflowed.
        "package gap\nviolation[{\"msg\": msg}] { msg := sprintf(\"%99999999999999999999d\", [1]) }\n",
        // Deep nesting in a source.
        &format!(
            "package gap\nviolation[{{\"msg\": \"x\"}}] {{ x := {}1{} }}\n",
            "[".repeat(10_000),
            "]".repeat(10_000)
        ),
        // A brace-less negation whose argument is a ref.
        "package gap\np if not startswith(input.review.object.spec.x, \"a\")\nviolation contains {\"msg\": \"x\"} if p\n",
    ];
    for seed in seeds {
        ingest(seed, false);
        ingest(seed, true);
    }
}
