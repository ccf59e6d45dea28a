//! `cargo xtask parity [--gator PATH]`: the report's projection must not change what a
//! constraint sees.
//!
//! For every scenario under `fixtures/` that has objects, the engine on the original objects and
//! the engine on `cluster-projection`'s projection of the same objects must give the same
//! results, compared as multisets of (constraint kind and name, object, message). The projection
//! sets every constraint to `warn` (scoped actions removed) on purpose, so the report sees every
//! violation, also of constraints scoped to other enforcement points than gator's. The original
//! side gets that same change and nothing else, and enforcement actions are left out of the
//! comparison: what is checked is that nothing else the projection does (kind/apiVersion,
//! dropped server fields, file layout) changes what a constraint sees. The embedded engine always
//! runs; gator too: `--gator PATH`, else `GATOR_BIN`, else the real gator of the tools tarball
//! (`$REAL_SERVERS_DIR` or `../shared/tools`, see `test_support::real`). Without any of them the
//! gator side is skipped with a loud line, or fails under `CI=true`.
//!
//! Scenarios:
//! - snapshots: `fixtures/cluster-src/<s>/`, `fixtures/cluster/<s>/` and `fixtures/demo/cluster/`,
//!   read with `cluster_projection::read_snapshot` and projected with `cluster_projection::project`;
//! - suites: every test of every `suite.yaml` under `fixtures/gatekeeper/` (template, constraint,
//!   ExpansionTemplates, case objects and inventories, de-duplicated by identity; AdmissionReview
//!   cases left out), projected object by object with `cluster_projection::project_object`.
//!
//! Committed fixtures must also be fresh (`fixtures::check`).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use gatekeeper_engine::ReviewResult;
use gator_runner::compare::Comparison;
use gator_runner::engine::{Embedded, Gator, PolicyEngine, read_dir_input};
use gator_runner::run::GatorRunner;
use serde_json::Value;

use crate::{fixtures, util};

/// One set of objects and its projection.
struct Scenario {
    name: String,
    original: Vec<Value>,
    projected: Projected,
}

/// How the projection side is written.
enum Projected {
    /// A snapshot's model, written by `cluster_projection::write_projection` exactly as the
    /// report writes `<work>/in`.
    State(Box<cluster_projection::ClusterState>),
    /// `(file name, object)` pairs projected object by object.
    Files(Vec<(String, Value)>),
}

/// Runs the parity check; `args` may hold `--gator PATH`.
pub(crate) fn run(args: &[&str]) -> Result<()> {
    let gator = match args {
        [] => match std::env::var_os("GATOR_BIN").filter(|v| !v.is_empty()) {
            Some(path) => Some(PathBuf::from(path)),
            None => real_gator()?,
        },
        ["--gator", path] => Some(PathBuf::from(path)),
        _ => bail!("usage: cargo xtask parity [--gator PATH]"),
    };
    fixtures::check()?;
    let root = util::root().join("fixtures");
    let scenarios = discover(&root)?;
    if scenarios.is_empty() {
        bail!("parity: no scenario with objects under fixtures/");
    }
    let mut evaluators: Vec<Box<dyn PolicyEngine>> = vec![Box::new(Embedded::default())];
    // gator writes the objects it is given to its own input directory under this work dir.
    let gator_work = tempfile::tempdir()?;
    if let Some(path) = &gator {
        if !path.is_file() {
            bail!("parity: gator binary {} is not a file", path.display());
        }
        evaluators.push(Box::new(Gator::new(
            GatorRunner::new(path),
            gator_work.path(),
        )));
    }
    let mut failures = Vec::new();
    for scenario in &scenarios {
        for evaluator in &evaluators {
            match check(scenario, evaluator.as_ref()) {
                Ok(summary) => eprintln!(
                    "parity ok   {:<8} {} ({summary})",
                    evaluator.name(),
                    scenario.name
                ),
                Err(problem) => {
                    eprintln!(
                        "parity FAIL {:<8} {}: {problem:#}",
                        evaluator.name(),
                        scenario.name
                    );
                    failures.push(format!("{} ({})", scenario.name, evaluator.name()));
                }
            }
        }
    }
    if !failures.is_empty() {
        bail!(
            "parity failed for {} scenario(s): {}",
            failures.len(),
            failures.join(", ")
        );
    }
    eprintln!("parity: {} scenario(s) agree", scenarios.len());
    Ok(())
}

/// The real gator of the tools tarball, extracted; `None` after the loud line when the tarball
/// is missing (an error under `CI=true`).
fn real_gator() -> Result<Option<PathBuf>> {
    use test_support::real::tools::{self, Tool};
    match tools::locate(Tool::Gator) {
        Ok(located) => {
            let gator = tools::extract(&located).map_err(anyhow::Error::msg)?;
            eprintln!(
                "parity: gator {} from {}",
                gator.version(),
                gator.located.tarball.display()
            );
            Ok(Some(gator.bin("gator")))
        }
        Err(why) => {
            let line = tools::skip_line(
                "cargo xtask parity's gator check (or set GATOR_BIN / pass --gator PATH)",
                &[(Tool::Gator, why)],
            );
            if tools::in_ci() {
                bail!("{line}");
            }
            eprintln!("{line}");
            Ok(None)
        }
    }
}

/// Evaluates the original and the projection from files, as the report would, and compares.
fn check(scenario: &Scenario, evaluator: &dyn PolicyEngine) -> Result<String> {
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
    let original = review_dir(evaluator, &original_dir);
    let projected = review_dir(evaluator, &projected_dir);
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
        (Ok(_), Err(error)) => {
            bail!(
                "only the projection fails: {}",
                error_text(error, &projected_dir)
            )
        }
    }
}

/// Reviews the objects of the files under `dir` with `engine`.
fn review_dir(engine: &dyn PolicyEngine, dir: &Path) -> Result<Vec<ReviewResult>> {
    Ok(engine.review_to_vec(read_dir_input(dir)?)?)
}

/// The whole error chain, with the scenario directory replaced so both sides compare.
fn error_text(error: impl Into<anyhow::Error>, dir: &Path) -> String {
    format!("{:#}", error.into()).replace(&dir.display().to_string(), "<dir>")
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

fn discover(root: &Path) -> Result<Vec<Scenario>> {
    let mut scenarios = Vec::new();
    let mut snapshot_dirs = Vec::new();
    for parent in ["cluster-src", "cluster"] {
        snapshot_dirs.extend(subdirs(&root.join(parent))?);
    }
    let demo = root.join("demo/cluster");
    if demo.is_dir() {
        snapshot_dirs.push(demo);
    }
    for dir in snapshot_dirs {
        scenarios.push(snapshot_scenario(root, &dir)?);
    }
    let mut suites = Vec::new();
    find_suites(&root.join("gatekeeper"), &mut suites)?;
    suites.sort();
    for suite in suites {
        scenarios.extend(suite_scenarios(root, &suite)?);
    }
    Ok(scenarios)
}

fn subdirs(dir: &Path) -> Result<Vec<PathBuf>> {
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("failed to read {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    out.sort();
    Ok(out)
}

fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root.parent().unwrap_or(root))
        .unwrap_or(path)
        .display()
        .to_string()
}

fn snapshot_scenario(root: &Path, dir: &Path) -> Result<Scenario> {
    let state = cluster_projection::read_snapshot(dir)
        .with_context(|| format!("parity: reading snapshot {}", relative(root, dir)))?;
    let original = state.raw_objects().map(|raw| raw.to_value()).collect();
    Ok(Scenario {
        name: relative(root, dir),
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
    gatekeeper_engine::read_verify_file(path)
        .with_context(|| format!("parity: reading {}", path.display()))
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
fn suite_scenarios(root: &Path, suite_path: &Path) -> Result<Vec<Scenario>> {
    let dir = suite_path.parent().unwrap_or(Path::new("."));
    let mut out = Vec::new();
    for suite in read_objects(suite_path)? {
        if suite.get("kind").and_then(Value::as_str) != Some("Suite") || flag(&suite, "skip") {
            continue;
        }
        for test in suite
            .get("tests")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if flag(test, "skip") || flag(test, "invalid") {
                continue;
            }
            let name = test.get("name").and_then(Value::as_str).unwrap_or("?");
            let mut files = Vec::new();
            for key in ["template", "constraint", "expansion"] {
                if let Some(file) = test.get(key).and_then(Value::as_str) {
                    files.push(dir.join(file));
                }
            }
            for case in test
                .get("cases")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if flag(case, "skip") {
                    continue;
                }
                if let Some(file) = case.get("object").and_then(Value::as_str) {
                    files.push(dir.join(file));
                }
                for file in case
                    .get("inventory")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                {
                    files.push(dir.join(file));
                }
            }
            let mut seen = std::collections::BTreeSet::new();
            let mut original = Vec::new();
            for file in files {
                for object in read_objects(&file)? {
                    let is_review =
                        object.get("kind").and_then(Value::as_str) == Some("AdmissionReview");
                    if !is_review && seen.insert(identity(&object)) {
                        original.push(object);
                    }
                }
            }
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
                name: format!("{} / {name}", relative(root, suite_path)),
                original,
                projected: Projected::Files(projected),
            });
        }
    }
    Ok(out)
}

fn flag(value: &Value, key: &str) -> bool {
    value.get(key).and_then(Value::as_bool).unwrap_or(false)
}
