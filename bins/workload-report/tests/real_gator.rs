//! The real gator (`test-support::real`) as the reference: `run --engine both` and `--engine
//! gator` on the demo cluster give the embedded engine's report, and every `gator verify` suite
//! under `fixtures/gatekeeper/` (found anew on every run) passes under the real `gator verify` as
//! it does under ours, so a fixture that encodes a misreading of Gatekeeper fails here: with CEL
//! on (both defaults), and again with CEL off for suites whose templates carry CEL and Rego.

mod real_common;

use std::path::{Path, PathBuf};
use std::process::Command;

use real_common::{demo_cluster, dry_run, fixture_suites, normalized_out, root, run, write_config};
use serde_json::{Value, json};
use test_support::real::{Tool, require};

#[test]
fn real_gator_reports_like_the_embedded_engine_alone_and_in_both_mode() {
    let Some(gator) = require(
        Tool::Gator,
        "real_gator_reports_like_the_embedded_engine_alone_and_in_both_mode",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "config.yaml", None, "");
    let demo = demo_cluster();
    let snapshot = ["--snapshot", demo.to_str().unwrap()];
    let binary = gator.bin("gator");
    let embedded_out = dir.path().join("embedded");
    dry_run(&config, &snapshot, &embedded_out, &[]).expect_code(0);
    let expected = normalized_out(&embedded_out);

    assert_gator_engines_report(dir.path(), &config, &snapshot, &binary, expected);
}

/// The demo snapshot plus two CEL templates with a Constraint each on Deployments: the
/// dual-engine `celreplicas` (violations) and the CEL-only `celonly`, whose expression reads
/// `object.spec.containers`, absent from a Deployment (an evaluation error on every one).
fn demo_with_cel_templates(dir: &Path) -> PathBuf {
    let cluster = dir.join("cluster");
    std::fs::create_dir_all(&cluster).unwrap();
    copy_dir(&demo_cluster(), &cluster);
    for (fixture, file) in [
        ("celreplicas/template.yaml", "k8scelreplicalimits.yaml"),
        ("celonly/template.yaml", "k8simagetagged.yaml"),
    ] {
        let template = root().join("fixtures/gatekeeper").join(fixture);
        std::fs::copy(template, cluster.join("templates").join(file)).unwrap();
    }
    let deployments =
        "  match:\n    kinds:\n      - apiGroups: [\"apps\"]\n        kinds: [\"Deployment\"]\n";
    std::fs::write(
        cluster.join("constraints-cel.yaml"),
        format!(
            "apiVersion: constraints.gatekeeper.sh/v1beta1\nkind: K8sCelReplicaLimits\nmetadata:\n  name: two-to-five\nspec:\n{deployments}  parameters:\n    min: 2\n    max: 5\n---\napiVersion: constraints.gatekeeper.sh/v1beta1\nkind: K8sImageTagged\nmetadata:\n  name: tagged\nspec:\n{deployments}"
        ),
    )
    .unwrap();
    cluster
}

#[test]
fn real_gator_reports_cel_templates_like_the_embedded_engine() {
    let Some(gator) = require(
        Tool::Gator,
        "real_gator_reports_cel_templates_like_the_embedded_engine",
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let cluster = demo_with_cel_templates(dir.path());
    let config = write_config(dir.path(), "config.yaml", None, "");
    let text = std::fs::read_to_string(&config).unwrap().replace(
        "constraintKinds:\n",
        "constraintKinds:\n  - K8sCelReplicaLimits\n  - K8sImageTagged\n",
    );
    std::fs::write(&config, text).unwrap();
    let snapshot = ["--snapshot", cluster.to_str().unwrap()];
    let binary = gator.bin("gator");
    let embedded_out = dir.path().join("embedded");
    dry_run(&config, &snapshot, &embedded_out, &[]).expect_code(0);
    let expected = normalized_out(&embedded_out);
    // 12 Deployments: three outside 2..=5 (violations), every one an evaluation error of the
    // CEL-only template (a policy error, not a violation).
    let run_line = expected["loki.json"]["streams"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["values"].as_array().unwrap())
        .map(|pair| &pair[1])
        .find(|line| line["type"] == "run")
        .unwrap();
    assert_eq!(run_line["errors"], 12, "{run_line}");
    assert_eq!(
        run_line["auditCheck"]["K8sImageTagged"], "skipped",
        "{run_line}"
    );
    assert_gator_engines_report(dir.path(), &config, &snapshot, &binary, expected);
}

/// Runs `snapshot` with `--engine both` and `--engine gator` (the real gator at `binary`, work
/// dirs under `dir`) and requires each output to be `expected`, the embedded engine's, but for
/// the engine named; `both` must also say the engines agree.
fn assert_gator_engines_report(
    dir: &Path,
    config: &Path,
    snapshot: &[&str],
    binary: &Path,
    mut expected: std::collections::BTreeMap<String, Value>,
) {
    for engine in ["both", "gator"] {
        let out = dir.join(engine);
        let work = dir.join(format!("work-{engine}"));
        let outcome = dry_run(
            config,
            snapshot,
            &out,
            &[
                "--engine",
                engine,
                "--gator",
                binary.to_str().unwrap(),
                "--work",
                work.to_str().unwrap(),
            ],
        );
        outcome.expect_code(0);
        if engine == "both" {
            assert!(
                outcome
                    .stderr
                    .contains("engines agree: embedded and gator gave the same results"),
                "{}",
                outcome.stderr
            );
        }
        set_engine(&mut expected, engine);
        assert_eq!(normalized_out(&out), expected, "engine {engine}");
    }
}

/// The `engine` a normalized `--out` names in `run.json` and in the Loki run line.
fn set_engine(out: &mut std::collections::BTreeMap<String, Value>, engine: &str) {
    out.get_mut("run.json").unwrap()["engine"] = json!(engine);
    for stream in out.get_mut("loki.json").unwrap()["streams"]
        .as_array_mut()
        .unwrap()
    {
        for pair in stream["values"].as_array_mut().unwrap() {
            if pair[1]["type"] == "run" {
                pair[1]["engine"] = json!(engine);
            }
        }
    }
}

/// Whether every template the suite names carries both CEL (`K8sNativeValidation`) and Rego
/// code, so the suite must pass with CEL on and with CEL off.
fn suite_is_dual_engine(suite: &Path) -> bool {
    let text = std::fs::read_to_string(suite).unwrap();
    let dir = suite.parent().unwrap();
    let mut templates = text
        .lines()
        .filter_map(|line| line.trim().strip_prefix("template:"))
        .map(|file| dir.join(file.trim().trim_matches('"')))
        .peekable();
    templates.peek().is_some()
        && templates.all(|template| {
            let text = std::fs::read_to_string(&template)
                .unwrap_or_else(|e| panic!("{}: {e}", template.display()));
            text.contains("engine: K8sNativeValidation") && text.contains("engine: Rego")
        })
}

/// gator's and our flag for CEL off; none for both defaults (CEL on).
const CEL_OFF: &str = "--enable-k8s-native-validation=false";

/// `gator verify SUITE [FLAGS]`: success and the output. gator takes the suite relative to its
/// working directory (it does not open absolute paths).
fn gator_verify(gator: &Path, suite: &Path, flags: &[&str]) -> (bool, String) {
    let output = Command::new(gator)
        .arg("verify")
        .arg(suite.file_name().unwrap())
        .args(flags)
        .current_dir(suite.parent().unwrap())
        .env_clear()
        .env("HOME", std::env::temp_dir())
        .output()
        .unwrap();
    (
        output.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
    )
}

/// `workload-report verify [FLAGS] SUITE`: success and the output.
fn our_verify(suite: &Path, flags: &[&str]) -> (bool, String) {
    let mut args = vec!["verify"];
    args.extend(flags);
    args.push(suite.to_str().unwrap());
    let outcome = run(&args, &[]);
    (
        outcome.code == 0,
        format!("{}{}", outcome.stdout, outcome.stderr),
    )
}

#[test]
fn real_gator_verify_passes_every_fixture_suite_and_fails_a_misreading() {
    let Some(gator) = require(
        Tool::Gator,
        "real_gator_verify_passes_every_fixture_suite_and_fails_a_misreading",
    ) else {
        return;
    };
    let binary = gator.bin("gator");
    let suites = fixture_suites();
    assert!(suites.len() >= 9, "{suites:?}");
    let dual: Vec<&PathBuf> = suites.iter().filter(|s| suite_is_dual_engine(s)).collect();
    assert!(dual.len() >= 6, "{dual:?}");
    let runs = suites
        .iter()
        .map(|suite| (suite, &[][..]))
        .chain(dual.iter().map(|suite| (*suite, &[CEL_OFF][..])));
    let mut failures = Vec::new();
    for (suite, flags) in runs {
        let name = suite.strip_prefix(root()).unwrap().display().to_string();
        let (real_ok, real_output) = gator_verify(&binary, suite, flags);
        let (our_ok, our_output) = our_verify(suite, flags);
        if !real_ok || !our_ok {
            failures.push(format!(
                "{name} {flags:?}: gator verify {}, workload-report verify {}\n--- gator ---\n{real_output}\n--- ours ---\n{our_output}",
                if real_ok { "passes" } else { "FAILS" },
                if our_ok { "passes" } else { "FAILS" },
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    // The check can fail: a suite whose expectation is wrong fails under the real gator (and
    // under ours).
    let (source, misread) = misreading(&suites);
    let copy = tempfile::tempdir().unwrap();
    copy_dir(source.parent().unwrap(), copy.path());
    let suite = copy.path().join("suite.yaml");
    std::fs::write(&suite, misread).unwrap();
    let (real_ok, real_output) = gator_verify(&binary, &suite, &[]);
    assert!(
        !real_ok,
        "the real gator passed a wrong expectation:\n{real_output}"
    );
    assert!(real_output.contains("FAIL"), "{real_output}");
    let (our_ok, our_output) = our_verify(&suite, &[]);
    assert!(
        !our_ok,
        "workload-report verify passed a wrong expectation:\n{our_output}"
    );
}

/// The first suite with a case asserting `violations: no`, and its text with that one
/// assertion turned into `violations: yes`.
fn misreading(suites: &[PathBuf]) -> (PathBuf, String) {
    for suite in suites {
        let text = std::fs::read_to_string(suite).unwrap();
        if text.contains("- violations: no\n") {
            return (
                suite.clone(),
                text.replacen("- violations: no\n", "- violations: yes\n", 1),
            );
        }
    }
    panic!("no fixture suite asserts `violations: no`")
}

fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_dir(&path, &target);
        } else {
            std::fs::copy(&path, &target).unwrap();
        }
    }
}

/// `program verify ARGS` in `dir`: exit code, stdout with durations masked, stderr.
fn verify_in(program: &Path, dir: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let output = Command::new(program)
        .arg("verify")
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("HOME", std::env::temp_dir())
        .output()
        .unwrap();
    let masked = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| match line.rsplit_once('\t') {
            Some((head, tail)) if tail.ends_with('s') || tail.ends_with("s)") => {
                format!("{head}\t<d>")
            }
            _ => line.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    (
        output.status.code(),
        masked,
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn real_gator_and_verify_agree_on_exit_codes_and_verbose_lines_where_nothing_or_little_runs() {
    let Some(gator) = require(
        Tool::Gator,
        "real_gator_and_verify_agree_on_exit_codes_and_verbose_lines_where_nothing_or_little_runs",
    ) else {
        return;
    };
    let gator = gator.bin("gator");
    let ours = PathBuf::from(env!("CARGO_BIN_EXE_workload-report"));
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("empty")).unwrap();
    std::fs::create_dir_all(dir.path().join("other")).unwrap();
    std::fs::write(
        dir.path().join("other/configmap.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n",
    )
    .unwrap();
    let suite = dir.path().join("labels");
    std::fs::create_dir_all(&suite).unwrap();
    copy_dir(&root().join("fixtures/gatekeeper/requiredlabels"), &suite);
    // One failing case, one skipped case and an unknown key, beside the fixture's tests.
    let text = std::fs::read_to_string(suite.join("suite.yaml")).unwrap().replacen(
        "    cases:\n",
        "    cases:\n      - name: wrong-count\n        object: samples/owner-label/example_missing.yaml\n        assertions:\n          - violations: 3\n      - name: skipped\n        skip: true\n        objects: none.yaml\n",
        1,
    );
    std::fs::write(suite.join("suite.yaml"), text).unwrap();
    let runs: [(&[&str], Option<&str>); 8] = [
        (&["empty/..."], Some("no Suite found under empty/...")),
        (&["empty"], Some("no Suite found under empty")),
        (
            &["other/configmap.yaml"],
            Some("no Suite found under other/configmap.yaml"),
        ),
        (
            &["labels/...", "--run", "nothing-like-this"],
            Some("no test matched --run"),
        ),
        (
            &["labels/...", "--run", "owner-label//nothing"],
            Some("no test matched --run"),
        ),
        (
            &["labels/...", "-v", "--run", "owner-label"],
            Some("unknown key tests[0].cases[1].objects"),
        ),
        (&["labels/...", "-v"], None),
        (&["labels/suite.yaml", "--run", "//allowed"], None),
    ];
    for (args, warning) in runs {
        let (gator_code, gator_out, _) = verify_in(&gator, dir.path(), args);
        let (our_code, our_out, our_err) = verify_in(&ours, dir.path(), args);
        assert_eq!(
            our_code, gator_code,
            "{args:?}: exit codes\n{gator_out}\n---\n{our_out}"
        );
        assert_eq!(our_out, gator_out, "{args:?}: stdout");
        if let Some(warning) = warning {
            assert!(our_err.contains(warning), "{args:?}: {our_err}");
        }
    }
}
