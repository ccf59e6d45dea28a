//! Integration tests of `workload-report eval` and `workload-report verify`: the binary runs
//! over the gatekeeper fixtures; outputs are snapshotted and exit codes checked.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_workload-report"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("run workload-report")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Replaces the durations in verify output (`\t0.005s`, `\t(0.000s)`) by `<d>`.
fn without_durations(text: &str) -> String {
    text.lines()
        .map(|line| match line.rsplit_once('\t') {
            Some((head, tail)) if tail.ends_with("s)") && tail.starts_with('(') => {
                format!("{head}\t(<d>)")
            }
            Some((head, tail))
                if tail.ends_with('s')
                    && tail.chars().next().is_some_and(|c| c.is_ascii_digit()) =>
            {
                format!("{head}\t<d>")
            }
            _ => line.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

const LABELS: [&str; 4] = [
    "-f",
    "fixtures/gatekeeper/requiredlabels/template.yaml",
    "-f",
    "fixtures/gatekeeper/requiredlabels/samples/owner-label",
];

#[test]
fn eval_json_is_shaped_like_gator_and_exits_1_on_deny() {
    let mut args = vec!["eval"];
    args.extend(LABELS);
    args.extend(["-o", "json"]);
    let output = run(&args);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(!text.ends_with('\n'));
    insta::assert_snapshot!("eval_json", text);
}

#[test]
fn eval_text_and_yaml() {
    let mut args = vec!["eval"];
    args.extend(LABELS);
    let output = run(&args);
    assert_eq!(output.status.code(), Some(1));
    insta::assert_snapshot!("eval_text", stdout(&output));
    args.extend(["-o", "YAML"]);
    let output = run(&args);
    assert_eq!(output.status.code(), Some(1));
    insta::assert_snapshot!("eval_yaml", stdout(&output));
}

#[test]
fn eval_exits_0_when_only_non_deny_results_exist() {
    let output = run(&[
        "eval",
        "-f",
        "fixtures/gatekeeper/requiredannotations/template.yaml",
        "-f",
        "fixtures/gatekeeper/requiredannotations/samples/contact",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    insta::assert_snapshot!("eval_dryrun_text", stdout(&output));
}

#[test]
fn eval_without_results_prints_null_json_and_empty_yaml_list() {
    let base = [
        "eval",
        "-f",
        "fixtures/gatekeeper/replicalimits/samples/bounds/example_allowed.yaml",
    ];
    let output = run(&[&base[..], &["-o", "json"]].concat());
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(stdout(&output), "null");
    let output = run(&[&base[..], &["-o", "yaml"]].concat());
    assert_eq!(stdout(&output), "[]\n");
}

#[test]
fn eval_input_errors_exit_2_naming_the_file() {
    let output = run(&["eval", "-f", "fixtures/gatekeeper/README.md"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("fixtures/gatekeeper/README.md"),
        "{}",
        stderr(&output)
    );
    assert!(stderr(&output).contains("must be of extensions: [.yaml .yml .json]"));

    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "a: [\n").unwrap();
    let output = run(&["eval", "-f", bad.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("bad.yaml"), "{}", stderr(&output));

    let template = dir.path().join("template.yaml");
    std::fs::write(
        &template,
        "apiVersion: templates.gatekeeper.sh/v1\nkind: ConstraintTemplate\nmetadata:\n  name: k8sbroken\nspec:\n  crd:\n    spec:\n      names:\n        kind: K8sBroken\n  targets:\n    - target: admission.k8s.gatekeeper.sh\n      rego: |\n        package k8sbroken\n        violation[{\"msg\": m}] { m := }\n",
    )
    .unwrap();
    let output = run(&["eval", "-f", template.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("adding template \"k8sbroken\""),
        "{}",
        stderr(&output)
    );
}

#[test]
fn verify_passes_over_the_fixtures() {
    let output = run(&["verify", "fixtures/gatekeeper/..."]);
    assert_eq!(output.status.code(), Some(0), "{}", stdout(&output));
    insta::assert_snapshot!("verify_fixtures", without_durations(&stdout(&output)));
}

#[test]
fn verify_without_recursion_reads_only_the_directory() {
    let output = run(&["verify", "fixtures/gatekeeper"]);
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(stdout(&output), "PASS\n\n");
}

#[test]
fn verify_reports_failures_and_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = root().join("fixtures/gatekeeper/replicalimits");
    let suite = format!(
        "kind: Suite\napiVersion: test.gatekeeper.sh/v1alpha1\ntests:\n- name: bounds\n  template: {t}\n  constraint: {c}\n  cases:\n  - name: wrong-count\n    object: {o}\n    assertions:\n    - violations: 2\n  - name: right\n    object: {o}\n    assertions:\n    - violations: yes\n      message: \"has 50 replicas\"\n- name: not-invalid\n  template: {t}\n  constraint: {c}\n  invalid: true\n",
        t = fixtures.join("template.yaml").display(),
        c = fixtures.join("samples/bounds/constraint.yaml").display(),
        o = fixtures
            .join("samples/bounds/example_too_many.yaml")
            .display(),
    );
    std::fs::write(dir.path().join("suite.yaml"), suite).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_workload-report"))
        .args(["verify", "."])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stderr(&output), "Error: FAIL\n");
    insta::assert_snapshot!("verify_failures", without_durations(&stdout(&output)));
}

#[test]
fn verify_run_filter_selects_tests_and_cases() {
    let output = run(&[
        "verify",
        "fixtures/gatekeeper/...",
        "--run",
        "owner-label//missing",
    ]);
    assert_eq!(output.status.code(), Some(0));
    let output = run(&["verify", "fixtures/gatekeeper/...", "--run", "a//b//c"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("invalid --run filter"));
}

#[test]
fn verify_rejects_bad_paths() {
    let output = run(&[
        "verify",
        "fixtures/gatekeeper/requiredlabels/suite.yaml/...",
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("can only recursively traverse directories"),
        "{}",
        stderr(&output)
    );
    let output = run(&["verify", "fixtures/gatekeeper/nope"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("listing test files"));
}
