//! End-to-end tests of the `jobcheck` binary: the fixture GPU job against the two fixture region
//! policies (table and JSON snapshots), exit codes, and bad inputs.

mod common;

use std::path::Path;
use std::process::Output;

use common::jobcheck_with_stdin;

const JOB: &str = "fixtures/jobcheck/gpu-job.yaml";
const EAST1: &str = "us-east-1=fixtures/jobcheck/policies/us-east-1.json";
const EAST2: &str = "us-east-2=fixtures/jobcheck/policies/us-east-2.json";

fn jobcheck(args: &[&str]) -> Output {
    jobcheck_with_stdin(args, None)
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("utf-8 stdout")
}

fn stderr(output: &Output) -> String {
    String::from_utf8(output.stderr.clone()).expect("utf-8 stderr")
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write temp file");
    path.display().to_string()
}

#[test]
fn table_output_for_the_gpu_job() {
    let output = jobcheck(&["check", JOB, "--policy-file", EAST1, "--policy-file", EAST2]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    insta::assert_snapshot!("gpu_job_table", stdout(&output));
}

#[test]
fn json_output_for_the_gpu_job() {
    let output = jobcheck(&[
        "check",
        JOB,
        "--policy-file",
        EAST1,
        "--policy-file",
        EAST2,
        "-o",
        "json",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let payload: serde_json::Value = serde_json::from_str(&stdout(&output)).expect("JSON output");
    assert_eq!(payload["verdicts"][0]["verdict"], "admit");
    assert_eq!(payload["verdicts"][1]["verdict"], "reject");
    insta::assert_snapshot!("gpu_job_json", stdout(&output));
}

#[test]
fn yaml_output_carries_the_same_payload_as_json() {
    let json = jobcheck(&[
        "check",
        JOB,
        "--policy-file",
        EAST1,
        "--policy-file",
        EAST2,
        "-o",
        "json",
    ]);
    let yaml = jobcheck(&[
        "check",
        JOB,
        "--policy-file",
        EAST1,
        "--policy-file",
        EAST2,
        "-o",
        "yaml",
    ]);
    assert_eq!(yaml.status.code(), Some(0), "{}", stderr(&yaml));
    let from_json: serde_json::Value = serde_json::from_str(&stdout(&json)).expect("JSON");
    let from_yaml: serde_json::Value = serde_yaml::from_str(&stdout(&yaml)).expect("YAML");
    assert_eq!(from_json, from_yaml);
}

#[test]
fn fail_on_reject_exits_one_only_when_a_region_rejects() {
    let rejecting = jobcheck(&[
        "check",
        JOB,
        "--policy-file",
        EAST1,
        "--policy-file",
        EAST2,
        "--fail-on-reject",
    ]);
    assert_eq!(rejecting.status.code(), Some(1));
    assert!(
        stdout(&rejecting).contains("[REJECT] us-east-2"),
        "printing happens before the exit"
    );
    let admitting = jobcheck(&["check", JOB, "--policy-file", EAST1, "--fail-on-reject"]);
    assert_eq!(admitting.status.code(), Some(0), "{}", stderr(&admitting));
}

#[test]
fn unknown_regions_keep_the_reference_reason() {
    let dir = tempfile::tempdir().expect("temp dir");
    let empty = write(
        dir.path(),
        "empty.json",
        r#"{"region": "eu-west-1", "policy": {}}"#,
    );
    let broken = write(
        dir.path(),
        "broken.yaml",
        "policy:\n  manifest_caps:\n    max_cpu_millicores: 4000m\n",
    );
    let output = jobcheck(&[
        "check",
        JOB,
        "--policy-file",
        &format!("eu-west-1={empty}"),
        "--policy-file",
        &format!("eu-west-2={broken}"),
        "-o",
        "json",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let payload: serde_json::Value = serde_json::from_str(&stdout(&output)).expect("JSON");
    assert_eq!(payload["verdicts"][0]["verdict"], "unknown");
    assert_eq!(
        payload["unreadable"]["eu-west-1"],
        "the response carried no policy object"
    );
    let reason = payload["unreadable"]["eu-west-2"].as_str().expect("reason");
    assert!(
        reason.starts_with("ValueError: invalid literal for int()"),
        "{reason}"
    );
    assert_eq!(payload["ecr_augmentation"], serde_json::json!({}));
}

#[test]
fn without_a_manifest_only_the_policies_are_compared() {
    let output = jobcheck(&[
        "check",
        "--policy-file",
        EAST1,
        "--policy-file",
        EAST1.replace("us-east-1=", "us-west-2=").as_str(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(!text.contains("Admissibility"));
    assert!(
        text.contains("    identical across us-east-1, us-west-2\n"),
        "{text}"
    );
    let single = jobcheck(&["check", "--policy-file", EAST2]);
    assert!(stdout(&single).contains("only one region readable; nothing to compare"));
}

#[test]
fn manifests_from_stdin_are_prefilled_with_the_namespace_flag() {
    let manifest = "kind: Job\nmetadata:\n  name: x\nspec:\n  template:\n    spec:\n      containers:\n        - name: c\n          image: nginx\n";
    let output = jobcheck_with_stdin(
        &[
            "check",
            "-",
            "--policy-file",
            EAST1,
            "-n",
            "team-b",
            "-o",
            "json",
        ],
        Some(manifest),
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let payload: serde_json::Value = serde_json::from_str(&stdout(&output)).expect("JSON");
    assert_eq!(
        payload["verdicts"][0]["issues"][0]["message"],
        "namespace 'team-b' is not in the allowlist (gco-jobs)"
    );
}

#[test]
fn a_directory_is_read_yaml_then_yml_in_sorted_order() {
    let dir = tempfile::tempdir().expect("temp dir");
    let doc = |name: &str| format!("kind: Secret\nmetadata:\n  name: {name}\n");
    write(dir.path(), "b.yaml", &doc("b"));
    write(dir.path(), "a.yml", &doc("a-yml"));
    write(dir.path(), "c.yaml", &doc("c"));
    write(dir.path(), "notes.txt", "not a manifest");
    let path = dir.path().display().to_string();
    let output = jobcheck(&["check", &path, "--policy-file", EAST1, "-o", "json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let payload: serde_json::Value = serde_json::from_str(&stdout(&output)).expect("JSON");
    let labels: Vec<&str> = payload["verdicts"][0]["issues"]
        .as_array()
        .expect("issues")
        .iter()
        .map(|issue| issue["manifest"].as_str().expect("label"))
        .collect();
    assert_eq!(labels, vec!["Secret/b", "Secret/c", "Secret/a-yml"]);
}

#[test]
fn usage_errors_exit_two_with_one_line_naming_the_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let garbage = write(dir.path(), "garbage.json", "{not: [json, or yaml");
    let aliased = write(
        dir.path(),
        "aliased.yaml",
        "kind: Job\nmetadata: &m\n  name: x\nspec: *m\n",
    );
    let missing = dir.path().join("missing.json").display().to_string();
    let cases: Vec<(Vec<String>, String)> = vec![
        (
            vec![
                "check".into(),
                "nope.yaml".into(),
                "--policy-file".into(),
                EAST1.into(),
            ],
            "Path not found: nope.yaml".into(),
        ),
        (
            vec![
                "check".into(),
                JOB.into(),
                "--policy-file".into(),
                format!("us-east-1={garbage}"),
            ],
            format!("policy file {garbage} is not valid JSON or YAML"),
        ),
        (
            vec![
                "check".into(),
                JOB.into(),
                "--policy-file".into(),
                format!("us-east-1={missing}"),
            ],
            format!("cannot read policy file: {missing}: no such file"),
        ),
        (
            vec![
                "check".into(),
                aliased.clone(),
                "--policy-file".into(),
                EAST1.into(),
            ],
            format!("manifest file {aliased} is not valid YAML: YAML anchors are not allowed"),
        ),
        (
            vec![
                "check".into(),
                JOB.into(),
                "--policy-file".into(),
                "us-east-1".into(),
            ],
            "is not REGION=FILE".into(),
        ),
        (
            vec!["check".into(), JOB.into()],
            "no regions: give --policy-file REGION=FILE, or a regions file".into(),
        ),
        (
            vec![
                "check".into(),
                JOB.into(),
                "--policy-file".into(),
                EAST1.into(),
                "--policy-file".into(),
                EAST1.into(),
            ],
            "region us-east-1 is given more than once".into(),
        ),
    ];
    for (args, expected) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let output = jobcheck(&args);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {message}");
        assert!(message.contains(&expected), "{args:?}: {message}");
        assert_eq!(message.trim_end().lines().count(), 1, "{args:?}: {message}");
        assert!(stdout(&output).is_empty(), "{args:?}");
    }
    let bad_flag = jobcheck(&["check", JOB, "--policy-file", EAST1, "-o", "xml"]);
    assert_eq!(bad_flag.status.code(), Some(2));
}

#[test]
fn a_manifest_the_reference_raises_on_is_a_located_rejection() {
    let dir = tempfile::tempdir().expect("temp dir");
    let manifest = write(
        dir.path(),
        "null-containers.yaml",
        "kind: Job\nmetadata:\n  name: x\nspec:\n  template:\n    spec:\n      containers: null\n",
    );
    let output = jobcheck(&["check", &manifest, JOB, "--policy-file", EAST1]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let table = stdout(&output);
    assert!(
        table.contains(&format!(
            "Job/x ({manifest}) [manifest] field spec.template.spec.containers cannot be evaluated: TypeError: 'NoneType' object is not iterable ({manifest}:7)"
        )),
        "{table}"
    );
    assert!(table.contains("[REJECT] us-east-1"), "{table}");
    let rejected = jobcheck(&[
        "check",
        &manifest,
        "--policy-file",
        EAST1,
        "--fail-on-reject",
    ]);
    assert_eq!(rejected.status.code(), Some(1));
    let prefill = write(
        dir.path(),
        "string-metadata.yaml",
        "kind: Job\nmetadata: oops\n",
    );
    let output = jobcheck(&["check", &prefill, "--policy-file", EAST1, "-o", "json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let payload: serde_json::Value = serde_json::from_str(&stdout(&output)).expect("JSON");
    let issue = &payload["verdicts"][0]["issues"][0];
    assert_eq!(issue["check"], "manifest");
    let message = issue["message"].as_str().expect("message");
    assert!(
        message.starts_with("field metadata cannot be evaluated: AttributeError: 'str' object has no attribute 'setdefault'"),
        "{message}"
    );
}
