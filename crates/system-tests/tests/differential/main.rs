//! The differential check: for every test of every Suite under `fixtures/gatekeeper/`, the
//! example objects and seeded mutations of them ([`mutate`], a fixed seed and [`cases::MUTANTS`]
//! per object) go through the real `gator test -o json` and the embedded engine
//! (`gatekeeper_engine::Engine`, rendered as `eval -o json`) on the same files, with CEL on and
//! off where a template has both, and the results must be identical — the messages and actions
//! of every (constraint, object) — except for the classes in [`known::CLASSES`], the known
//! differences that other work is closing (each names its class; the list only shrinks).
//!
//! The real gator comes from `test_support::real` (`GATOR_BIN` when set); without it the test
//! says so loudly and passes, or fails under `CI=true`. The figures (templates, inputs,
//! comparisons, differences per class) are printed on every run.

mod cases;
mod known;
mod mutate;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use test_support::real::{Tool, require};

use cases::Batch;

/// What one engine said about one input directory: results per (constraint, object), or the
/// error that stopped the whole run.
type Outcome = Result<BTreeMap<String, Vec<String>>, String>;

/// The messages and actions of gator's `-o json` results, per `constraint on object`.
fn results_of(json: &str) -> Result<BTreeMap<String, Vec<String>>, String> {
    let value: Value = serde_json::from_str(json).map_err(|e| format!("not JSON: {e}"))?;
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for result in value.as_array().into_iter().flatten() {
        let text = |pointer: &str| {
            result
                .pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or("")
        };
        let key = format!(
            "{}/{} on {} {}/{}",
            text("/constraint/kind"),
            text("/constraint/metadata/name"),
            text("/violatingObject/kind"),
            text("/violatingObject/metadata/namespace"),
            text("/violatingObject/metadata/name"),
        );
        out.entry(key).or_default().push(format!(
            "[{}] {}",
            text("/enforcementAction"),
            text("/msg")
        ));
    }
    for messages in out.values_mut() {
        messages.sort();
    }
    Ok(out)
}

fn gator_test(gator: &Path, dir: &Path, cel: bool) -> Outcome {
    let output = Command::new(gator)
        .args(["test", "-o", "json", "-f"])
        .arg(dir)
        .arg(format!("--enable-k8s-native-validation={cel}"))
        .env_clear()
        .env("HOME", std::env::temp_dir())
        .output()
        .map_err(|e| format!("running gator: {e}"))?;
    match output.status.code() {
        Some(0 | 1) if !output.stdout.is_empty() => {
            results_of(&String::from_utf8_lossy(&output.stdout))
        }
        _ => Err(String::from_utf8_lossy(&output.stderr).trim().to_string()),
    }
}

fn embedded(dir: &Path, cel: bool) -> Outcome {
    let objects =
        gatekeeper_engine::read_sources(&[dir.to_path_buf()]).map_err(|e| format!("{e:#}"))?;
    let options = gatekeeper_engine::EngineOptions {
        k8s_native_validation: cel,
        ..gatekeeper_engine::EngineOptions::default()
    };
    let engine = gatekeeper_engine::Engine::new(objects, options).map_err(|e| e.to_string())?;
    let outcome = engine.review_all_detailed().map_err(|e| e.to_string())?;
    results_of(&gatekeeper_engine::output::render_json(
        &engine,
        &outcome.results,
    ))
}

/// Writes `objects` as one JSON file each (both engines read the directory).
fn write_inputs(dir: &Path, objects: &[&Value]) {
    for (i, object) in objects.iter().enumerate() {
        let text = serde_json::to_string_pretty(object).unwrap();
        std::fs::write(dir.join(format!("{i:05}.json")), text).unwrap();
    }
}

/// One difference: where, and what each side said.
#[derive(Debug)]
pub(crate) struct Difference {
    pub(crate) batch: String,
    pub(crate) cel: bool,
    pub(crate) key: String,
    pub(crate) gator: Vec<String>,
    pub(crate) ours: Vec<String>,
    /// What the mutation changed (empty for a whole-run difference).
    pub(crate) mutation: String,
}

/// The figures of a run.
#[derive(Default)]
struct Figures {
    templates: std::collections::BTreeSet<String>,
    inputs: usize,
    runs: usize,
    comparisons: usize,
    /// Results both sides gave alike (so the check is not one of empty lists).
    agreed_results: usize,
    per_class: BTreeMap<&'static str, usize>,
    unexplained: Vec<String>,
}

impl Figures {
    fn record(&mut self, difference: Difference) {
        match known::class_of(&difference) {
            Some(class) => *self.per_class.entry(class).or_default() += 1,
            None => self.unexplained.push(format!(
                "{} (CEL {}) {}: {}\n    gator: {:?}\n    ours:  {:?}",
                difference.batch,
                if difference.cel { "on" } else { "off" },
                difference.key,
                difference.mutation,
                difference.gator,
                difference.ours
            )),
        }
    }
}

/// Compares one directory of `objects` (the policy and `inputs`) under one CEL setting;
/// a run that either side ends with an error is narrowed to the inputs one by one, so one
/// input gator cannot take hides no other.
fn compare(
    gator: &Path,
    batch: &Batch,
    inputs: &[&(Value, String)],
    cel: bool,
    figures: &mut Figures,
) {
    let dir = tempfile::tempdir().unwrap();
    let objects: Vec<&Value> = batch
        .policy
        .iter()
        .chain(inputs.iter().map(|(o, _)| o))
        .collect();
    write_inputs(dir.path(), &objects);
    figures.runs += 1;
    let theirs = gator_test(gator, dir.path(), cel);
    let ours = embedded(dir.path(), cel);
    match (theirs, ours) {
        (Ok(theirs), Ok(ours)) => {
            figures.comparisons += inputs.len();
            let mutation_of = |key: &str| {
                inputs
                    .iter()
                    .find(|(o, _)| {
                        let name = o
                            .pointer("/metadata/name")
                            .and_then(Value::as_str)
                            .unwrap_or("");
                        key.ends_with(&format!("/{name}"))
                    })
                    .map(|(_, what)| what.clone())
                    .unwrap_or_default()
            };
            let keys: std::collections::BTreeSet<&String> =
                theirs.keys().chain(ours.keys()).collect();
            for key in keys {
                let (g, o) = (
                    theirs.get(key).cloned().unwrap_or_default(),
                    ours.get(key).cloned().unwrap_or_default(),
                );
                if g == o {
                    figures.agreed_results += g.len();
                } else {
                    figures.record(Difference {
                        batch: batch.name.clone(),
                        cel,
                        key: key.clone(),
                        gator: g,
                        ours: o,
                        mutation: mutation_of(key),
                    });
                }
            }
        }
        (Err(_), Err(_)) if inputs.len() == 1 => figures.comparisons += 1,
        (theirs, ours) if inputs.len() == 1 => {
            figures.comparisons += 1;
            let side = |outcome: Result<BTreeMap<String, Vec<String>>, String>| match outcome {
                Ok(results) => results
                    .into_iter()
                    .map(|(k, v)| format!("{k}: {v:?}"))
                    .collect(),
                Err(error) => vec![format!("run error: {error}")],
            };
            figures.record(Difference {
                batch: batch.name.clone(),
                cel,
                key: "the whole run".to_string(),
                gator: side(theirs),
                ours: side(ours),
                mutation: inputs[0].1.clone(),
            });
        }
        _ => {
            for input in inputs {
                compare(gator, batch, &[*input], cel, figures);
            }
        }
    }
}

/// `GATOR_BIN`, else the real gator of the tools tarball, else `None` after the loud line.
fn gator(test: &str) -> Option<PathBuf> {
    match std::env::var_os("GATOR_BIN").filter(|v| !v.is_empty()) {
        Some(path) => Some(PathBuf::from(path)),
        None => Some(require(Tool::Gator, test)?.bin("gator")),
    }
}

#[test]
fn gator_and_the_embedded_engine_agree_on_mutated_fixture_objects() {
    let Some(gator) = gator("gator_and_the_embedded_engine_agree_on_mutated_fixture_objects")
    else {
        return;
    };
    let batches = cases::batches();
    assert!(
        batches.len() >= 20,
        "only {} suite tests found",
        batches.len()
    );
    let mut figures = Figures::default();
    for batch in &batches {
        figures.templates.insert(batch.template.clone());
        figures.inputs += batch.inputs.len();
        let inputs: Vec<&(Value, String)> = batch.inputs.iter().collect();
        for cel in batch.cel_modes() {
            compare(&gator, batch, &inputs, cel, &mut figures);
        }
    }
    let differences: usize = figures.per_class.values().sum::<usize>() + figures.unexplained.len();
    eprintln!(
        "differential: {} templates, {} suite tests, {} inputs, {} gator runs, {} comparisons \
         ({} results alike), {} differences ({} unexplained)",
        figures.templates.len(),
        batches.len(),
        figures.inputs,
        figures.runs,
        figures.comparisons,
        figures.agreed_results,
        differences,
        figures.unexplained.len()
    );
    for class in known::CLASSES {
        match figures.per_class.get(class.name) {
            Some(count) => eprintln!("differential: known difference {}: {count}", class.name),
            None => eprintln!(
                "differential: known difference {} no longer occurs: remove it from known.rs",
                class.name
            ),
        }
    }
    assert!(figures.inputs > 1000, "too few inputs: {}", figures.inputs);
    assert!(
        figures.agreed_results > 500,
        "too few results alike: {}",
        figures.agreed_results
    );
    assert!(
        figures.unexplained.is_empty(),
        "{} differences between gator and the embedded engine belong to no known class:\n{}",
        figures.unexplained.len(),
        figures.unexplained.join("\n")
    );
}

#[test]
fn mutants_are_deterministic_and_each_changes_the_object() {
    let object = serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "labels": {"app": "a"}},
        "spec": {"hostPID": false, "containers": [{"name": "c", "image": "nginx:1", "ports": [{"containerPort": 80}]}]}
    });
    let run = |seed| {
        let mut choices = mutate::Choices::new(seed);
        (0..32)
            .filter_map(|_| mutate::mutant(&object, &mut choices))
            .collect::<Vec<_>>()
    };
    let first = run(7);
    assert_eq!(first.len(), 32);
    assert_eq!(first, run(7), "the same seed must give the same mutants");
    assert_ne!(first, run(8));
    for (mutant, what) in &first {
        assert_eq!(mutant["metadata"]["name"], "p", "{what}");
        assert_eq!(mutant["kind"], "Pod", "{what}");
    }
    assert!(first.iter().filter(|(m, _)| *m != object).count() >= 28);
}

#[test]
fn a_difference_of_no_known_class_is_unexplained() {
    let mut figures = Figures::default();
    figures.record(Difference {
        batch: "suite / test".into(),
        cel: false,
        key: "K/c on Pod ns/p".into(),
        gator: vec!["[deny] one".into()],
        ours: vec![],
        mutation: "/spec deleted".into(),
    });
    assert_eq!(figures.unexplained.len(), 1, "{:?}", figures.unexplained);
    figures.record(Difference {
        batch: "suite / test".into(),
        cel: false,
        key: "K/c on Pod ns/p".into(),
        gator: vec!["[deny] has 1e+06 replicas".into()],
        ours: vec!["[deny] has 1000000 replicas".into()],
        mutation: "/spec/replicas number changed".into(),
    });
    assert_eq!(figures.unexplained.len(), 1);
    assert_eq!(figures.per_class.values().sum::<usize>(), 1);
}
