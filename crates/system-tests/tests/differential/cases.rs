//! The inputs: one batch per test of every `suite.yaml` under `fixtures/gatekeeper/` (its
//! template, constraint and ExpansionTemplates; its cases' objects and inventories, each once;
//! AdmissionReview cases left out, `gator test` does not take them), plus [`MUTANTS`] mutants
//! of every case object, each renamed `<name>-m<k>` so every input is its own object.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use system_tests::workspace::{self, relative};

use crate::mutate::{Choices, mutant};

/// Mutants per example object.
pub(crate) const MUTANTS: usize = 24;

/// The seed every run starts from.
const SEED: u64 = 0x5EED_2025;

/// One test of a suite, with its mutated inputs.
pub(crate) struct Batch {
    /// `suite path / test name`.
    pub(crate) name: String,
    /// The template's name (for the figures).
    pub(crate) template: String,
    /// Whether the template has CEL code, and Rego code.
    pub(crate) cel: bool,
    pub(crate) rego: bool,
    /// Templates, constraints, ExpansionTemplates and inventory objects.
    pub(crate) policy: Vec<Value>,
    /// The objects compared: the examples and their mutants, with what was changed.
    pub(crate) inputs: Vec<(Value, String)>,
}

impl Batch {
    /// The CEL settings to compare under: both where the template has both engines' code.
    pub(crate) fn cel_modes(&self) -> Vec<bool> {
        match (self.cel, self.rego) {
            (true, true) => vec![true, false],
            (true, false) => vec![true],
            _ => vec![true],
        }
    }
}

fn items<'a>(value: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> + 'a {
    value
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn flag(value: &Value, key: &str) -> bool {
    value.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn text<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn read(path: &Path) -> Vec<Value> {
    gatekeeper_engine::read_verify_file(path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", relative(path)))
}

fn identity(object: &Value) -> [String; 4] {
    [
        "/apiVersion",
        "/kind",
        "/metadata/namespace",
        "/metadata/name",
    ]
    .map(|p| text(object, p).to_string())
}

fn find_suites(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            find_suites(&path, out);
        } else if path.file_name().is_some_and(|n| n == "suite.yaml") {
            out.push(path);
        }
    }
}

/// Every batch, in a fixed order (suites sorted, tests in suite order).
pub(crate) fn batches() -> Vec<Batch> {
    let mut suites = Vec::new();
    find_suites(&workspace::root().join("fixtures/gatekeeper"), &mut suites);
    suites.sort();
    let mut out = Vec::new();
    let mut seed = SEED;
    for suite_path in suites {
        let dir = suite_path.parent().unwrap();
        for suite in read(&suite_path) {
            if flag(&suite, "skip") {
                continue;
            }
            for test in items(&suite, "tests") {
                if flag(test, "skip") || flag(test, "invalid") {
                    continue;
                }
                seed = seed.wrapping_add(1);
                out.push(batch(&suite_path, dir, test, seed));
            }
        }
    }
    out
}

fn batch(suite_path: &Path, dir: &Path, test: &Value, seed: u64) -> Batch {
    let mut policy = Vec::new();
    for key in ["template", "constraint", "expansion"] {
        if let Some(file) = test.get(key).and_then(Value::as_str) {
            policy.extend(read(&dir.join(file)));
        }
    }
    let template = policy.first().cloned().unwrap_or(Value::Null);
    let codes: Vec<&str> = items(&template["spec"], "targets")
        .flat_map(|target| items(target, "code"))
        .map(|code| text(code, "/engine"))
        .collect();
    let has_rego = items(&template["spec"], "targets").any(|t| !text(t, "/rego").is_empty())
        || codes.contains(&"Rego");
    let mut seen: BTreeSet<[String; 4]> = policy.iter().map(identity).collect();
    let mut examples = Vec::new();
    for case in items(test, "cases").filter(|c| !flag(c, "skip")) {
        for file in items(case, "inventory").filter_map(Value::as_str) {
            for object in read(&dir.join(file)) {
                if seen.insert(identity(&object)) {
                    policy.push(object);
                }
            }
        }
        if let Some(file) = case.get("object").and_then(Value::as_str) {
            for object in read(&dir.join(file)) {
                let review = text(&object, "/kind") == "AdmissionReview";
                if !review && seen.insert(identity(&object)) {
                    examples.push(object);
                }
            }
        }
    }
    let mut choices = Choices::new(seed);
    let mut inputs = Vec::new();
    for example in &examples {
        inputs.push((example.clone(), "the example".to_string()));
        let name = text(example, "/metadata/name").to_string();
        for k in 0..MUTANTS {
            if let Some((mut object, what)) = mutant(example, &mut choices) {
                object["metadata"]["name"] = json!(format!("{name}-m{k}"));
                inputs.push((object, what));
            }
        }
    }
    Batch {
        name: format!("{} / {}", relative(suite_path), text(test, "/name")),
        template: text(&template, "/metadata/name").to_string(),
        cel: codes.contains(&"K8sNativeValidation"),
        rego: has_rego,
        policy,
        inputs,
    }
}
