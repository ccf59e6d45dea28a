//! The real gator (`test-support::real`) as the reference for ExpansionTemplates. For every test
//! of a suite under `fixtures/gatekeeper/` that names an `expansion:` file (found anew on every
//! run), its template, constraint, ExpansionTemplates and case objects together give the same
//! `gator test -o json` results and exit code as `workload-report eval -o json`, and `gator
//! expand` makes the same resultants as the engine's `ExpansionSet::expand`. (`gator verify` of
//! the same suites runs in `real_gator.rs`.)

mod real_common;

use std::path::{Path, PathBuf};
use std::process::Command;

use gatekeeper_engine::{ExpansionSet, ExpansionTemplate, is_expansion_template};
use real_common::{fixture_suites, root, run};
use serde_json::Value;
use test_support::real::{Tool, require};

/// One suite test with an `expansion:` file: its name and its files, relative to the root.
struct ExpansionTest {
    name: String,
    files: Vec<PathBuf>,
}

/// Every suite test with an `expansion:` under `fixtures/gatekeeper/`, sorted by suite.
fn expansion_tests() -> Vec<ExpansionTest> {
    fixture_suites()
        .iter()
        .flat_map(|suite| tests_of(suite))
        .collect()
}

fn tests_of(suite_path: &Path) -> Vec<ExpansionTest> {
    let dir = suite_path.parent().unwrap().strip_prefix(root()).unwrap();
    let suite = &gatekeeper_engine::read_verify_file(suite_path).unwrap()[0];
    let text =
        |value: &Value, key: &str| value.get(key).and_then(Value::as_str).map(str::to_string);
    let mut out = Vec::new();
    for test in suite["tests"].as_array().into_iter().flatten() {
        let (Some(expansion), false) = (text(test, "expansion"), test.get("invalid").is_some())
        else {
            continue;
        };
        let named: Vec<PathBuf> = [text(test, "template"), text(test, "constraint")]
            .into_iter()
            .flatten()
            .chain([expansion])
            .chain(
                test["cases"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|case| text(case, "object")),
            )
            .map(|file| dir.join(file))
            .collect();
        let mut files = Vec::new();
        for file in named {
            if !files.contains(&file) {
                files.push(file);
            }
        }
        out.push(ExpansionTest {
            name: format!(
                "{} / {}",
                dir.display(),
                text(test, "name").unwrap_or_default()
            ),
            files,
        });
    }
    out
}

fn file_args(files: &[PathBuf]) -> Vec<String> {
    files
        .iter()
        .flat_map(|file| ["-f".to_string(), file.display().to_string()])
        .collect()
}

/// The results of `-o json` output (`null` is none), each as canonical JSON text, sorted.
fn results(json: &str) -> Vec<String> {
    let parsed: Option<Vec<Value>> =
        serde_json::from_str(json).unwrap_or_else(|e| panic!("not JSON results ({e}):\n{json}"));
    let mut out: Vec<String> = parsed.unwrap_or_default().iter().map(canonical).collect();
    out.sort();
    out
}

/// JSON text with sorted keys, so equal values compare equal.
fn canonical(value: &Value) -> String {
    serde_json::to_string(&gatekeeper_engine::output::sorted_keys(value)).unwrap()
}

fn gator(binary: &Path, args: &[String]) -> (i32, String, String) {
    let output = Command::new(binary)
        .args(args)
        .current_dir(root())
        .env_clear()
        .env("HOME", std::env::temp_dir())
        .output()
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn real_gator_test_gives_evals_results_on_every_expansion_fixture() {
    let Some(tool) = require(
        Tool::Gator,
        "real_gator_test_gives_evals_results_on_every_expansion_fixture",
    ) else {
        return;
    };
    let binary = tool.bin("gator");
    let tests = expansion_tests();
    assert!(tests.len() >= 3, "too few expansion fixtures");
    let mut implied = 0;
    for test in &tests {
        let files = file_args(&test.files);
        let mut gator_args = vec!["test".to_string(), "-o".into(), "json".into()];
        gator_args.extend(files.iter().cloned());
        let (gator_code, gator_out, gator_err) = gator(&binary, &gator_args);
        let mut our_args = vec!["eval", "-o", "json"];
        our_args.extend(files.iter().map(String::as_str));
        let ours = run(&our_args, &[]);
        assert_eq!(
            (ours.code, results(&ours.stdout)),
            (gator_code, results(&gator_out)),
            "{}: workload-report eval (left) and gator test (right) differ\n{gator_err}{}",
            test.name,
            ours.stderr
        );
        implied += results(&gator_out)
            .iter()
            .filter(|r| r.contains("\"msg\":\"[Implied by "))
            .count();
    }
    assert!(implied >= 3, "the fixtures show too few expansion results");
}

#[test]
fn real_gator_expand_makes_the_engines_resultants() {
    let Some(tool) = require(
        Tool::Gator,
        "real_gator_expand_makes_the_engines_resultants",
    ) else {
        return;
    };
    let binary = tool.bin("gator");
    for test in expansion_tests() {
        let mut args = vec!["expand".to_string()];
        for file in &test.files {
            args.extend(["-n".to_string(), file.display().to_string()]);
        }
        let (code, stdout, stderr) = gator(&binary, &args);
        assert_eq!(code, 0, "{}: gator expand failed\n{stderr}", test.name);
        let mut theirs: Vec<String> = gatekeeper_engine::parse_stream(Path::new("stdout"), &stdout)
            .unwrap_or_else(|e| {
                panic!("{}: gator expand printed no YAML: {e}\n{stdout}", test.name)
            })
            .iter()
            .map(canonical)
            .collect();
        theirs.sort();
        let objects = gatekeeper_engine::read_sources(
            &test
                .files
                .iter()
                .map(|f| root().join(f))
                .collect::<Vec<_>>(),
        )
        .unwrap();
        let templates = objects
            .iter()
            .filter(|o| is_expansion_template(o))
            .map(|o| ExpansionTemplate::from_object(o).unwrap());
        let set = ExpansionSet::from_templates(templates).unwrap();
        let mut ours: Vec<String> = objects
            .iter()
            .flat_map(|object| set.expand(object).unwrap())
            .map(|resultant| canonical(&resultant.object))
            .collect();
        ours.sort();
        assert!(!ours.is_empty(), "{}: nothing expanded", test.name);
        assert_eq!(
            ours, theirs,
            "{}: our resultants (left), gator expand's (right)",
            test.name
        );
    }
}
