//! The engine against OPA's recorded answers on the differential corpus
//! (`fixtures/opa-diff/`): every rule agrees, except the listed known differences, where the
//! engine must still give the listed answer. `cargo xtask opa-diff` re-checks the recorded
//! answers against a live OPA.

use std::path::{Path, PathBuf};

use gatekeeper_engine::rego::{Answers, KnownDifference, answer_corpus, differences, read_corpus};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/opa-diff")
}

fn read<T: serde::de::DeserializeOwned>(name: &str) -> T {
    let text = std::fs::read_to_string(corpus().join(name)).expect(name);
    serde_json::from_str(&text).expect(name)
}

#[test]
fn the_engine_answers_like_opa_except_the_known_differences() {
    let cases = read_corpus(&corpus().join("cases")).expect("corpus");
    assert!(cases.len() >= 6, "the corpus went missing");
    let ours = answer_corpus(&cases).expect("the corpus compiles");
    let opa: Answers = read("opa-answers.json");
    let known: Vec<KnownDifference> = read("known-differences.json");
    let problems = differences(&ours, &opa, &known);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let rules: usize = ours.values().map(|r| r.len()).sum();
    assert!(rules >= 100, "only {rules} rules compared");
}
