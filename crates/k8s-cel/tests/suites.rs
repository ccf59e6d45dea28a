//! The CEL halves of the dual-engine suites (`fixtures/gatekeeper/cel*`), evaluated by this crate
//! with each case's assertions (the same suites pass under the real gator, with CEL and with
//! Rego). Matching is not this crate's job: every case's object matches its Constraint.

use k8s_cel::{Bindings, CelProgram, Decision};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn read_yaml(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The `K8sNativeValidation` source of a template.
fn cel_source(template: &Value) -> &Value {
    template["spec"]["targets"][0]["code"]
        .as_array()
        .and_then(|code| code.iter().find(|c| c["engine"] == "K8sNativeValidation"))
        .map(|c| &c["source"])
        .expect("the template has CEL code")
}

/// Checks one gator assertion (`violations: yes|no|N`, optional `message` substring).
fn check(assertion: &Value, messages: &[String], place: &str) {
    let matching: Vec<&String> = match assertion["message"].as_str() {
        Some(part) => messages.iter().filter(|m| m.contains(part)).collect(),
        None => messages.iter().collect(),
    };
    match &assertion["violations"] {
        Value::Bool(false) => assert!(matching.is_empty(), "{place}: {messages:?}"),
        Value::Bool(true) => assert!(!matching.is_empty(), "{place}: {messages:?}"),
        Value::String(s) if s == "no" => assert!(matching.is_empty(), "{place}: {messages:?}"),
        Value::String(s) if s == "yes" => assert!(!matching.is_empty(), "{place}: {messages:?}"),
        Value::Number(n) => assert_eq!(
            matching.len() as u64,
            n.as_u64().unwrap_or(0),
            "{place}: {messages:?}"
        ),
        other => panic!("{place}: unknown assertion {other}"),
    }
}

fn run_suite(dir: &Path) -> usize {
    let suite = read_yaml(&dir.join("suite.yaml"));
    let mut cases = 0;
    for test in suite["tests"].as_array().expect("tests") {
        let template = read_yaml(&dir.join(test["template"].as_str().expect("template")));
        let constraint = read_yaml(&dir.join(test["constraint"].as_str().expect("constraint")));
        let program = CelProgram::compile(cel_source(&template)).expect("the CEL source compiles");
        assert!(
            program.compile_errors().is_empty(),
            "{:?}",
            program.compile_errors()
        );
        for case in test["cases"].as_array().expect("cases") {
            let object = read_yaml(&dir.join(case["object"].as_str().expect("object")));
            let decisions = program.evaluate(&Bindings {
                object: Some(&object),
                params: Some(&constraint),
                ..Bindings::default()
            });
            let messages: Vec<String> = decisions
                .iter()
                .map(|d| match d {
                    Decision::Violation(v) => v.message.clone(),
                    Decision::Error(e) => panic!("{}: {e}", dir.display()),
                })
                .collect();
            let place = format!("{}/{}", dir.display(), case["name"].as_str().unwrap_or("?"));
            for assertion in case["assertions"].as_array().expect("assertions") {
                check(assertion, &messages, &place);
            }
            cases += 1;
        }
    }
    cases
}

/// Whether a fixture template carries both CEL and Rego code.
fn has_rego_and_cel(template: &Path) -> bool {
    template.is_file() && {
        let code = &read_yaml(template)["spec"]["targets"][0]["code"];
        let engines: Vec<&str> = code
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["engine"].as_str())
            .collect();
        engines.contains(&"K8sNativeValidation") && engines.contains(&"Rego")
    }
}

#[test]
fn dual_engine_suites_pass_with_this_crate() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/gatekeeper");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("fixtures directory")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.join("suite.yaml").is_file() && has_rego_and_cel(&p.join("template.yaml")))
        .collect();
    dirs.sort();
    let names: Vec<String> = dirs
        .iter()
        .filter_map(|d| d.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "celallowedrepos",
            "celhostnamespaces",
            "celprivileged",
            "celreplicas",
            "celrequiredlabels",
            "celresourcelimits"
        ]
    );
    let cases: usize = dirs.iter().map(|d| run_suite(d)).sum();
    assert_eq!(cases, 14);
}
