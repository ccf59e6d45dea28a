//! The guarantee gatekeeper-library makes for its dual-engine templates, for ours: every
//! template under `fixtures/gatekeeper/` that carries both CEL (`K8sNativeValidation`) and Rego
//! code gives identical results with its CEL and with its Rego, for its own Constraints over
//! every object of every fixture (not only its own suite's).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use gatekeeper_engine::{CEL_ENGINE, Engine, EngineOptions, read_sources};
use serde_json::Value;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/gatekeeper")
}

fn text(object: &Value, pointer: &str) -> String {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn group(object: &Value) -> String {
    let api_version = text(object, "/apiVersion");
    api_version
        .rsplit_once('/')
        .map_or(String::new(), |(group, _)| group.to_string())
}

/// Whether an object is policy or test plumbing rather than something to review.
fn is_policy(object: &Value) -> bool {
    matches!(
        group(object).as_str(),
        "templates.gatekeeper.sh"
            | "constraints.gatekeeper.sh"
            | "test.gatekeeper.sh"
            | "expansion.gatekeeper.sh"
            | "mutations.gatekeeper.sh"
            | "admission.k8s.io"
    )
}

/// Every reviewable object of every fixture, one per identity (the first found).
fn fixture_objects() -> Vec<Value> {
    let mut seen = BTreeSet::new();
    read_sources(&[fixtures()])
        .expect("fixtures")
        .into_iter()
        .filter(|o| !is_policy(o))
        .filter(|o| {
            seen.insert((
                text(o, "/apiVersion"),
                text(o, "/kind"),
                text(o, "/metadata/namespace"),
                text(o, "/metadata/name"),
            ))
        })
        .collect()
}

fn engines(template: &Value) -> Vec<String> {
    template
        .pointer("/spec/targets/0/code")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| text(c, "/engine"))
        .collect()
}

/// The fixture directories whose template has both engines, with the template and its
/// Constraints (every valid one under the directory).
fn dual_engine_policies() -> Vec<(String, Vec<Value>)> {
    let mut found = Vec::new();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(fixtures())
        .expect("fixtures")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.join("template.yaml").is_file())
        .collect();
    dirs.sort();
    for dir in dirs {
        let objects = read_sources(std::slice::from_ref(&dir)).expect("fixture");
        let Some(template) = objects
            .iter()
            .find(|o| text(o, "/kind") == "ConstraintTemplate")
        else {
            continue;
        };
        let engines = engines(template);
        if !(engines.iter().any(|e| e == CEL_ENGINE) && engines.iter().any(|e| e == "Rego")) {
            continue;
        }
        let kind = text(template, "/spec/crd/spec/names/kind");
        let mut policy = vec![template.clone()];
        policy.extend(
            objects
                .iter()
                .filter(|o| group(o) == "constraints.gatekeeper.sh" && text(o, "/kind") == kind)
                .cloned(),
        );
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        found.push((name, policy));
    }
    found
}

/// What a result says, as both engines must say it.
type Said = (String, String, String, String, String, bool);

fn results(policy: &[Value], objects: &[Value], cel: bool) -> Vec<Said> {
    let options = EngineOptions {
        k8s_native_validation: cel,
        ..EngineOptions::default()
    };
    let input = policy.iter().chain(objects).cloned();
    let engine = Engine::new(input, options).expect("the fixture policy is accepted");
    assert_eq!(engine.policies().templates()[0].is_cel(), cel);
    let mut said: Vec<Said> = engine
        .review_all()
        .expect("review")
        .into_iter()
        .map(|r| {
            let evaluation_error = r.is_evaluation_error();
            (
                r.constraint.kind,
                r.constraint.name,
                r.object.kind,
                format!(
                    "{}/{}",
                    r.object.namespace.unwrap_or_default(),
                    r.object.name
                ),
                r.msg,
                evaluation_error,
            )
        })
        .collect();
    said.sort();
    said
}

#[test]
fn every_dual_engine_template_gives_the_same_results_with_cel_and_with_rego() {
    let objects = fixture_objects();
    assert!(objects.len() > 30, "{} fixture objects", objects.len());
    let policies = dual_engine_policies();
    let names: Vec<&str> = policies.iter().map(|(name, _)| name.as_str()).collect();
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
    for (name, policy) in &policies {
        let with_cel = results(policy, &objects, true);
        let with_rego = results(policy, &objects, false);
        // The comparison can fail: every template finds something among the fixtures.
        assert!(
            with_rego.iter().any(|said| !said.5),
            "{name}: no violation at all"
        );
        assert_eq!(
            with_cel, with_rego,
            "{name}: CEL (left) and Rego (right) differ"
        );
    }
}
