//! The parity scenarios: sets of fixture objects and their projection, and the comparison of
//! what an engine gives on each side.
//!
//! - snapshots: `fixtures/cluster-src/<s>/`, `fixtures/cluster/<s>/` and
//!   `fixtures/demo/cluster/`, read with `cluster_projection::read_snapshot` and written with
//!   `cluster_projection::write_projection` exactly as the report writes `<work>/in`;
//! - suites: every test of every `suite.yaml` under `fixtures/gatekeeper/` (template,
//!   constraint, ExpansionTemplates, case objects and inventories, de-duplicated by identity;
//!   AdmissionReview cases left out), projected object by object with
//!   `cluster_projection::project_object`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use gator_runner::compare::Comparison;
use serde_json::Value;
use system_tests::workspace::{self, relative, sorted_dirs};

use crate::engines::{Engine, evaluate};

/// One set of objects and its projection.
pub(crate) struct Scenario {
    pub(crate) name: String,
    original: Vec<Value>,
    projected: Projected,
}

/// How the projection side is written.
enum Projected {
    /// A snapshot's model, written as the report writes `<work>/in`.
    State(Box<cluster_projection::ClusterState>),
    /// `(file name, object)` pairs projected object by object.
    Files(Vec<(String, Value)>),
}

fn fixtures() -> PathBuf {
    workspace::root().join("fixtures")
}

/// Every snapshot scenario.
pub(crate) fn snapshots() -> Result<Vec<Scenario>> {
    let root = fixtures();
    let mut dirs = Vec::new();
    for parent in ["cluster-src", "cluster"] {
        dirs.extend(sorted_dirs(&root.join(parent))?);
    }
    let demo = root.join("demo/cluster");
    if demo.is_dir() {
        dirs.push(demo);
    }
    dirs.iter().map(|dir| snapshot_scenario(dir)).collect()
}

/// Every suite-test scenario.
pub(crate) fn suites() -> Result<Vec<Scenario>> {
    let mut suites = Vec::new();
    find_suites(&fixtures().join("gatekeeper"), &mut suites)?;
    suites.sort();
    let mut scenarios = Vec::new();
    for suite in suites {
        scenarios.extend(suite_scenarios(&suite)?);
    }
    Ok(scenarios)
}

/// Evaluates the original and the projection from files, as the report would, and compares;
/// `Ok` says what agreed.
///
/// The projection sets every constraint to `warn` (scoped actions removed) on purpose, so the
/// report sees every violation; the original side gets that same change and nothing else, and
/// enforcement actions are left out of the comparison. What is checked is that nothing else the
/// projection does (kind/apiVersion, dropped server fields, file layout) changes what a
/// constraint sees.
pub(crate) fn check(scenario: &Scenario, engine: &Engine) -> Result<String> {
    let temp = tempfile::tempdir()?;
    let original_dir = temp.path().join("original");
    let projected_dir = temp.path().join("in");
    std::fs::create_dir_all(&original_dir)?;
    for (index, object) in scenario.original.iter().enumerate() {
        write_json(
            &original_dir.join(format!("{index:05}.json")),
            &as_warn(object),
        )?;
    }
    match &scenario.projected {
        Projected::State(state) => {
            cluster_projection::write_projection(state, temp.path())?;
        }
        Projected::Files(files) => {
            std::fs::create_dir_all(&projected_dir)?;
            for (file_name, object) in files {
                write_json(&projected_dir.join(file_name), object)?;
            }
        }
    }
    let original = evaluate(engine, &original_dir);
    let projected = evaluate(engine, &projected_dir);
    match (original, projected) {
        (Ok(original), Ok(projected)) => {
            let comparison = Comparison::new("original", &original, "projection", &projected);
            if !comparison.agrees() {
                bail!("{comparison}");
            }
            Ok(format!(
                "{} objects, {} results",
                scenario.original.len(),
                original.len()
            ))
        }
        (Err(a), Err(b)) => {
            let a = error_text(a, &original_dir);
            let b = error_text(b, &projected_dir);
            if a != b {
                bail!("both sides fail, differently:\n  original:   {a}\n  projection: {b}");
            }
            Ok(format!("both sides fail alike: {a}"))
        }
        (Err(error), Ok(_)) => bail!(
            "only the original fails: {}",
            error_text(error, &original_dir)
        ),
        (Ok(_), Err(error)) => bail!(
            "only the projection fails: {}",
            error_text(error, &projected_dir)
        ),
    }
}

/// The whole error chain, with the scenario directory replaced so both sides compare.
fn error_text(error: anyhow::Error, dir: &Path) -> String {
    format!("{error:#}").replace(&dir.display().to_string(), "<dir>")
}

/// `object` with, when it is a constraint, `spec.enforcementAction: warn` and no scoped actions:
/// the one change of the projection that is meant to change results.
fn as_warn(object: &Value) -> Value {
    let is_constraint = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .and_then(|v| v.split_once('/'))
        .is_some_and(|(group, _)| group == "constraints.gatekeeper.sh");
    let mut object = object.clone();
    if is_constraint && let Some(map) = object.as_object_mut() {
        let spec = map
            .entry("spec")
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
        if let Some(spec) = spec.as_object_mut() {
            spec.remove("scopedEnforcementActions");
            spec.insert("enforcementAction".into(), Value::String("warn".into()));
        }
    }
    object
}

fn write_json(path: &Path, value: &Value) -> Result<()> {
    let text = serde_json::to_string_pretty(value)?;
    std::fs::write(path, text).with_context(|| format!("failed to write {}", path.display()))
}

fn snapshot_scenario(dir: &Path) -> Result<Scenario> {
    let state = cluster_projection::read_snapshot(dir)
        .with_context(|| format!("reading snapshot {}", relative(dir)))?;
    let original = state.raw_objects().map(|raw| raw.to_value()).collect();
    Ok(Scenario {
        name: relative(dir),
        original,
        projected: Projected::State(Box::new(state)),
    })
}

fn find_suites(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    if !dir.is_dir() {
        return Ok(());
    }
    for entry in
        std::fs::read_dir(dir).with_context(|| format!("failed to read {}", dir.display()))?
    {
        let path = entry?.path();
        if path.is_dir() {
            find_suites(&path, out)?;
        } else if path.file_name().is_some_and(|n| n == "suite.yaml") {
            out.push(path);
        }
    }
    Ok(())
}

fn read_objects(path: &Path) -> Result<Vec<Value>> {
    gatekeeper_engine::read_verify_file(path).with_context(|| format!("reading {}", relative(path)))
}

fn identity(object: &Value) -> (String, String, String, String) {
    let text = |pointer: &str| {
        object
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    (
        text("/apiVersion"),
        text("/kind"),
        text("/metadata/namespace"),
        text("/metadata/name"),
    )
}

/// One scenario per non-skipped, valid test of the suite.
fn suite_scenarios(suite_path: &Path) -> Result<Vec<Scenario>> {
    let dir = suite_path.parent().unwrap_or(Path::new("."));
    let mut out = Vec::new();
    for suite in read_objects(suite_path)? {
        if suite.get("kind").and_then(Value::as_str) != Some("Suite") || flag(&suite, "skip") {
            continue;
        }
        for test in items(&suite, "tests") {
            if flag(test, "skip") || flag(test, "invalid") {
                continue;
            }
            let name = test.get("name").and_then(Value::as_str).unwrap_or("?");
            let original = test_objects(dir, test)?;
            let projected = original
                .iter()
                .map(|object| {
                    let projected = cluster_projection::project_object(object);
                    (
                        cluster_projection::projection::file_name(&projected),
                        projected,
                    )
                })
                .collect();
            out.push(Scenario {
                name: format!("{} / {name}", relative(suite_path)),
                original,
                projected: Projected::Files(projected),
            });
        }
    }
    Ok(out)
}

/// A suite test's template, constraint, ExpansionTemplates, case objects and inventories, each
/// object once (AdmissionReview cases left out).
fn test_objects(dir: &Path, test: &Value) -> Result<Vec<Value>> {
    let mut files = Vec::new();
    for key in ["template", "constraint", "expansion"] {
        if let Some(file) = test.get(key).and_then(Value::as_str) {
            files.push(dir.join(file));
        }
    }
    for case in items(test, "cases") {
        if flag(case, "skip") {
            continue;
        }
        if let Some(file) = case.get("object").and_then(Value::as_str) {
            files.push(dir.join(file));
        }
        for file in items(case, "inventory").filter_map(Value::as_str) {
            files.push(dir.join(file));
        }
    }
    let mut seen = BTreeSet::new();
    let mut objects = Vec::new();
    for file in files {
        for object in read_objects(&file)? {
            let is_review = object.get("kind").and_then(Value::as_str) == Some("AdmissionReview");
            if !is_review && seen.insert(identity(&object)) {
                objects.push(object);
            }
        }
    }
    Ok(objects)
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
