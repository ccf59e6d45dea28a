//! OPA's recorded answers of the Rego corpus (`fixtures/opa-diff/opa-answers.json`) are what
//! OPA answers now, asked live. The engine is compared with those recorded answers by
//! `crates/gatekeeper-engine/tests/opa_diff.rs`; together they compare the engine with OPA.
//!
//! OPA runs from the PyPI package `opa-golib-python-bindings` ([`OPA`], OPA v1.20.2 inside),
//! installed once into the project-local venv `.venv-opa/` (git-ignored; the package declares
//! Python 3.14 but only loads its Go library through `ctypes`, so it is installed with
//! `--ignore-requires-python` for the Python the machine has). OPA is asked for every rule the
//! engine answers, so a rule the engine sees and OPA does not is a difference too.
//!
//! `OPA_DIFF_RECORD=1` (`cargo xtask opa-diff --record`) rewrites the recorded answers instead.

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::Result;
use gatekeeper_engine::rego::{Answers, Case, answer_corpus, read_corpus};
use serde_json::json;
use system_tests::venv::{self, PinnedPackage};
use system_tests::workspace;

/// The pinned reference.
const OPA: PinnedPackage = PinnedPackage {
    venv: ".venv-opa",
    distribution: "opa-golib-python-bindings",
    version: "0.4.4",
    module: "opa_bindings",
    pip_args: &["--ignore-requires-python"],
};
/// The corpus.
const CASES: &str = "fixtures/opa-diff/cases";
/// OPA's recorded answers.
const ANSWERS: &str = "fixtures/opa-diff/opa-answers.json";
/// The variable that makes the test record OPA's answers.
const RECORD_ENV: &str = "OPA_DIFF_RECORD";

#[test]
fn the_recorded_answers_are_what_opa_answers_now() {
    let root = workspace::root();
    let cases = read_corpus(&root.join(CASES)).expect("the corpus");
    assert!(!cases.is_empty(), "no case in {CASES}");
    let ours = answer_corpus(&cases).expect("the corpus compiles");
    let python = OPA.python().unwrap_or_else(|e| panic!("{e:#}"));
    let opa = opa_answers(&python, &cases, &ours).unwrap_or_else(|e| panic!("asking OPA: {e:#}"));
    let path = root.join(ANSWERS);
    if std::env::var(RECORD_ENV).is_ok_and(|v| v == "1") {
        std::fs::write(&path, serde_json::to_string_pretty(&opa).unwrap() + "\n").unwrap();
        eprintln!("recorded OPA's answers in {ANSWERS}");
        return;
    }
    let recorded: Answers = serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
        .unwrap_or_else(|e| panic!("{ANSWERS} is not valid: {e}"));
    let differing = answer_diff(&recorded, &opa);
    assert!(
        differing.is_empty(),
        "{ANSWERS} is not what OPA answers now (run `cargo xtask opa-diff --record` and review \
         the diff):\n  {}",
        differing.join("\n  ")
    );
}

/// Every (case, rule) whose answer differs between `recorded` and `live`, or is in one only.
fn answer_diff(recorded: &Answers, live: &Answers) -> Vec<String> {
    let keys: BTreeSet<(&String, &String)> = [recorded, live]
        .into_iter()
        .flat_map(|answers| {
            answers
                .iter()
                .flat_map(|(case, rules)| rules.keys().map(move |rule| (case, rule)))
        })
        .collect();
    let answer = |answers: &Answers, case: &String, rule: &String| {
        answers.get(case).and_then(|rules| rules.get(rule)).cloned()
    };
    keys.into_iter()
        .filter_map(|(case, rule)| {
            let (then, now) = (answer(recorded, case, rule), answer(live, case, rule));
            (then != now).then(|| format!("{case}.{rule}: recorded {then:?}, OPA now {now:?}"))
        })
        .collect()
}

/// OPA's answers for every rule the engine evaluated.
fn opa_answers(python: &Path, cases: &[Case], ours: &Answers) -> Result<Answers> {
    let request = json!({"cases": cases.iter().map(|case| json!({
        "name": case.name,
        "package": case.package,
        "source": case.source,
        "input": case.input,
        "rules": ours.get(&case.name).map(|r| r.keys().cloned().collect::<Vec<_>>()).unwrap_or_default(),
    })).collect::<Vec<_>>()});
    venv::call_script(python, "opa_answers.py", &request)
}
