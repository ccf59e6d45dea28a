//! `jobcheck check` as a CI pipeline runs it: never green by accident (no region readable, no
//! manifest found, a wrong-shaped saved policy), several paths and `-f` as CI passes them, and
//! findings that name their file.

mod common;

use std::path::Path;
use std::process::Output;

use common::jobcheck_with_stdin;

const JOB: &str = "fixtures/jobcheck/gpu-job.yaml";
const EAST1: &str = "us-east-1=fixtures/jobcheck/policies/us-east-1.json";
const EAST2: &str = "us-east-2=fixtures/jobcheck/policies/us-east-2.json";
const UNREADABLE: &str = "eu-west-1=fixtures/jobcheck/ci/unreadable.json";

fn jobcheck(args: &[&str]) -> Output {
    jobcheck_with_stdin(args, None)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn write(dir: &Path, name: &str, content: &str) -> String {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("create dir");
    }
    std::fs::write(&path, content).expect("write temp file");
    path.display().to_string()
}

fn job(name: &str) -> String {
    format!(
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {name}\nspec:\n  template:\n    spec:\n      containers:\n        - name: c\n          image: docker.io/library/busybox:1\n"
    )
}

/// Asserts exit 2 with one stderr line holding every one of `expected`, and nothing on stdout.
fn assert_usage_error(output: &Output, expected: &[&str]) {
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    for part in expected {
        assert!(stderr.contains(part), "expected {part:?} in: {stderr}");
    }
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(output.stdout.is_empty(), "{}", text(&output.stdout));
}

#[test]
fn fail_on_unknown_fails_when_a_region_cannot_be_read() {
    let base = [
        "check",
        JOB,
        "--policy-file",
        EAST1,
        "--policy-file",
        UNREADABLE,
    ];
    assert_eq!(jobcheck(&base).status.code(), Some(0));
    let mut args = base.to_vec();
    args.push("--fail-on-unknown");
    let output = jobcheck(&args);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    assert!(text(&output.stderr).contains("1 region(s) could not be read"));
    // The output is printed first.
    assert!(text(&output.stdout).contains("[admit ] us-east-1"));
}

#[test]
fn fail_on_reject_fails_when_no_region_could_be_read() {
    for format in ["table", "sarif", "junit", "github", "json"] {
        let output = jobcheck(&[
            "check",
            JOB,
            "--policy-file",
            UNREADABLE,
            "-o",
            format,
            "--fail-on-reject",
        ]);
        assert_eq!(output.status.code(), Some(1), "{format}");
        assert!(
            text(&output.stderr).contains("nothing was judged"),
            "{format}"
        );
    }
    let sarif = jobcheck(&["check", JOB, "--policy-file", UNREADABLE, "-o", "sarif"]);
    let log: serde_json::Value = serde_json::from_slice(&sarif.stdout).expect("SARIF");
    let invocation = &log["runs"][0]["invocations"][0];
    assert_eq!(invocation["executionSuccessful"], false);
    assert_eq!(
        invocation["toolExecutionNotifications"][0]["level"],
        "error"
    );
}

#[test]
fn a_path_without_a_manifest_is_a_usage_error_naming_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).expect("mkdir");
    let empty = empty.display().to_string();
    assert_usage_error(
        &jobcheck(&["check", &empty, "--policy-file", EAST1]),
        &["no manifest found in", &empty],
    );
    let nested = dir.path().join("nested");
    write(&nested, "team/job.yaml", &job("deep"));
    write(&nested, "README.md", "# jobs\n");
    let nested = nested.display().to_string();
    assert_usage_error(
        &jobcheck(&["check", &nested, "--policy-file", EAST1]),
        &[
            "no manifest found in",
            "team: a directory (give -R to read it)",
            "README.md: not a *.yaml, *.yml or *.json file",
        ],
    );
    let recursive = jobcheck(&["check", &nested, "-R", "--policy-file", EAST1]);
    assert_eq!(
        recursive.status.code(),
        Some(0),
        "{}",
        text(&recursive.stderr)
    );
    assert!(text(&recursive.stdout).contains("[admit ] us-east-1"));
    let string = write(dir.path(), "string.yaml", "just a string\n");
    assert_usage_error(
        &jobcheck(&["check", &string, "--policy-file", EAST1]),
        &["no manifest found in", "a string document, not a mapping"],
    );
    let blank = write(dir.path(), "blank.yaml", "# nothing\n");
    assert_usage_error(
        &jobcheck(&["check", &blank, "--policy-file", EAST1]),
        &["no manifest found in", "it holds no document"],
    );
}

#[test]
fn json_and_upper_case_extensions_are_read_from_a_directory() {
    let dir = tempfile::tempdir().expect("temp dir");
    write(dir.path(), "a.YAML", &job("upper"));
    write(
        dir.path(),
        "b.json",
        r#"{"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "from-json"}, "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "docker.io/library/busybox:1", "securityContext": {"privileged": true}}]}}}}"#,
    );
    let path = dir.path().display().to_string();
    let output = jobcheck(&["check", &path, "--policy-file", EAST1, "-o", "json"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let payload: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let issues = payload["verdicts"][0]["issues"].as_array().expect("issues");
    assert!(
        issues.iter().any(|i| i["manifest"] == "Job/from-json"),
        "{issues:?}"
    );
}

#[test]
fn skipped_documents_are_counted_and_named_on_stderr() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = write(
        dir.path(),
        "mixed.yaml",
        &format!("{}---\n- a list\n---\nplain words\n", job("kept")),
    );
    let output = jobcheck(&["check", &file, "--policy-file", EAST1]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let stderr = text(&output.stderr);
    assert!(stderr.contains("skipped 2 inputs"), "{stderr}");
    assert!(stderr.contains("mixed.yaml: a list document"), "{stderr}");
    assert!(stderr.contains("mixed.yaml: a string document"), "{stderr}");
}

#[test]
fn a_wrong_shaped_policy_file_is_a_usage_error_naming_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let nope = write(dir.path(), "nope.json", r#"{"nope": 1}"#);
    assert_usage_error(
        &jobcheck(&["check", JOB, "--policy-file", &format!("us-east-1={nope}")]),
        &[&format!("policy file {nope}"), "no `policy` object"],
    );
}

#[test]
fn several_paths_and_filename_flags_are_all_judged_and_named() {
    let dir = tempfile::tempdir().expect("temp dir");
    let a = write(dir.path(), "a.yaml", &job("job-a"));
    let b = write(dir.path(), "b.yaml", &job("job-b"));
    let c = write(
        dir.path(),
        "c.yaml",
        &job("job-c").replace("docker.io/library/busybox:1", "evil.example/x:1"),
    );
    let output = jobcheck_with_stdin(
        &[
            "check",
            &a,
            &b,
            "-f",
            &c,
            "--filename",
            "-",
            "--policy-file",
            EAST1,
            "-o",
            "json",
        ],
        Some(&job("from-stdin")),
    );
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let payload: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let issues = payload["verdicts"][0]["issues"].as_array().expect("issues");
    assert!(
        issues.iter().any(|i| i["manifest"] == "Job/job-c"),
        "{issues:?}"
    );
    // The CI formats name each finding's file.
    let github = jobcheck(&["check", &a, &c, "--policy-file", EAST1, "-o", "github"]);
    let commands = text(&github.stdout);
    assert!(
        commands
            .lines()
            .any(|l| l.starts_with("::error") && l.contains(&format!("file={c}"))),
        "{commands}"
    );
    // stdin given twice is refused rather than read as empty.
    assert_usage_error(
        &jobcheck(&["check", "-", "-f", "-", "--policy-file", EAST1]),
        &["stdin (-) is given more than once"],
    );
}

#[test]
fn an_empty_regions_file_variable_counts_as_unset() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_jobcheck"))
        .args(["check", JOB, "--policy-file", EAST1, "--policy-file", EAST2])
        .current_dir(common::root())
        .env("JOBCHECK_REGIONS_FILE", "")
        .output()
        .expect("jobcheck runs");
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
}

#[test]
fn a_malformed_manifest_is_a_finding_in_every_format_and_region() {
    let dir = tempfile::tempdir().expect("temp dir");
    let bad = write(
        dir.path(),
        "bad.yaml",
        "kind: Job\nmetadata:\n  name: broken\nspec:\n  template:\n    spec:\n      containers: null\n",
    );
    let run = |format: &str| {
        jobcheck(&[
            "check",
            &bad,
            JOB,
            "--policy-file",
            EAST1,
            "--policy-file",
            EAST2,
            "--policy-file",
            UNREADABLE,
            "-o",
            format,
            "--fail-on-reject",
        ])
    };
    let json = run("json");
    assert_eq!(json.status.code(), Some(1), "{}", text(&json.stderr));
    let payload: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    for verdict in payload["verdicts"].as_array().expect("verdicts") {
        assert_eq!(verdict["verdict"], "reject", "{verdict}");
        assert!(
            verdict["issues"]
                .as_array()
                .expect("issues")
                .iter()
                .any(|i| i["check"] == "manifest" && i["manifest"] == "Job/broken"),
            "{verdict}"
        );
    }
    // us-east-2 still judges the GPU job: its own issues are there.
    assert!(
        payload["verdicts"][1]["issues"]
            .as_array()
            .expect("issues")
            .iter()
            .any(|i| i["manifest"] == "Job/gpu-training"),
        "{payload}"
    );
    let sarif = run("sarif");
    let log: serde_json::Value = serde_json::from_slice(&sarif.stdout).expect("SARIF");
    let results = log["runs"][0]["results"].as_array().expect("results");
    let manifest_results: Vec<_> = results
        .iter()
        .filter(|r| r["ruleId"] == "manifest")
        .collect();
    assert_eq!(manifest_results.len(), 3, "{results:?}");
    let location = &manifest_results[0]["locations"][0]["physicalLocation"];
    assert_eq!(location["region"]["startLine"], 7);
    assert!(
        manifest_results[0]["message"]["text"]
            .as_str()
            .expect("text")
            .contains("TypeError: 'NoneType' object is not iterable")
    );
    let junit = run("junit");
    let xml = text(&junit.stdout);
    let mut reader = quick_xml::Reader::from_str(&xml);
    let mut failures = 0;
    loop {
        match reader.read_event().expect("well-formed JUnit") {
            quick_xml::events::Event::Eof => break,
            quick_xml::events::Event::Start(e) if e.name().into_inner() == "failure" => {
                failures += 1;
            }
            _ => {}
        }
    }
    // The broken job fails in all three regions, the GPU job in us-east-2.
    assert_eq!(failures, 4, "{xml}");
    let github = text(&run("github").stdout);
    assert!(
        github.contains(&format!(
            "::error file={bad},line=7,title=jobcheck manifest (us-east-1)::Job/broken: field spec.template.spec.containers"
        )),
        "{github}"
    );
}

#[test]
fn junit_stays_well_formed_with_characters_xml_forbids() {
    let dir = tempfile::tempdir().expect("temp dir");
    // A control character in a manifest value (the name, the image) and in a file name.
    let bad = write(
        dir.path(),
        "bell\u{7}file.yaml",
        "kind: Job\nmetadata:\n  name: \"a\\x01b\\x1bc\"\nspec:\n  template:\n    spec:\n      containers:\n        - name: c\n          image: \"evil.example/x\\x0c:1\"\n",
    );
    let output = jobcheck(&["check", &bad, "--policy-file", EAST1, "-o", "junit"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let xml = text(&output.stdout);
    let document = roxmltree::Document::parse(&xml)
        .unwrap_or_else(|error| panic!("JUnit is not well-formed XML: {error}\n{xml}"));
    let case = document
        .descendants()
        .find(|n| n.has_tag_name("testcase"))
        .expect("a testcase");
    assert_eq!(case.attribute("name"), Some("Job/a\\u{0001}b\\u{001b}c"));
    assert!(
        case.attribute("file")
            .expect("file")
            .ends_with("bell\\u{0007}file.yaml")
    );
    let failure = document
        .descendants()
        .find(|n| n.has_tag_name("failure"))
        .expect("a failure");
    assert!(
        failure
            .text()
            .expect("text")
            .contains("evil.example/x\\u{000c}:1"),
        "{xml}"
    );
}

#[test]
fn inline_merge_keys_are_applied_as_pyyaml_does() {
    let dir = tempfile::tempdir().expect("temp dir");
    let merged = write(
        dir.path(),
        "merged.yaml",
        "kind: Job\nmetadata:\n  name: merged\nspec:\n  template:\n    spec:\n      <<: {hostNetwork: true, hostPID: true}\n      hostPID: false\n      containers:\n        - name: c\n          image: docker.io/library/busybox:1\n",
    );
    let output = jobcheck(&[
        "check",
        &merged,
        "--policy-file",
        EAST1,
        "-o",
        "json",
        "--fail-on-reject",
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stderr));
    let payload: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let messages: Vec<&str> = payload["verdicts"][0]["issues"]
        .as_array()
        .expect("issues")
        .iter()
        .filter_map(|i| i["message"].as_str())
        .collect();
    assert!(
        messages.iter().any(|m| m.contains("hostNetwork")),
        "{messages:?}"
    );
    // The explicit `hostPID: false` wins over the merged `true`.
    assert!(
        !messages.iter().any(|m| m.contains("hostPID")),
        "{messages:?}"
    );
    // An alias stays refused, merge key or not.
    let aliased = write(
        dir.path(),
        "aliased.yaml",
        "base: &b {hostNetwork: true}\nkind: Job\nspec:\n  <<: *b\n",
    );
    assert_usage_error(
        &jobcheck(&["check", &aliased, "--policy-file", EAST1]),
        &["YAML anchors are not allowed"],
    );
}

#[test]
fn a_leading_byte_order_mark_is_skipped_as_kubectl_does() {
    let dir = tempfile::tempdir().expect("temp dir");
    let with_bom = write(
        dir.path(),
        "bom.yaml",
        &format!("\u{feff}# a comment, not a key\n{}", job("with-bom")),
    );
    for format in ["json", "sarif"] {
        let output = jobcheck(&["check", &with_bom, "--policy-file", EAST1, "-o", format]);
        assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
        let stdout = text(&output.stdout);
        assert!(!stdout.contains("a comment"), "{stdout}");
    }
    let json = jobcheck(&["check", &with_bom, "--policy-file", EAST1, "-o", "json"]);
    let payload: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    assert_eq!(payload["verdicts"][0]["verdict"], "admit", "{payload}");
}

#[test]
fn the_table_names_each_file_and_ends_with_a_summary() {
    let dir = tempfile::tempdir().expect("temp dir");
    let a = write(
        dir.path(),
        "a.yaml",
        &format!("{}---\n{}", job("one"), job("two")),
    );
    let b = write(
        dir.path(),
        "b.yaml",
        &job("three").replace("docker.io/library/busybox:1", "evil.example/x:1"),
    );
    let output = jobcheck(&[
        "check",
        &a,
        &b,
        "--policy-file",
        EAST1,
        "--policy-file",
        EAST2,
        "--policy-file",
        UNREADABLE,
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let table = text(&output.stdout);
    assert!(
        table.contains(&format!("Job/three ({b}) [images]")),
        "{table}"
    );
    assert_eq!(
        table.trim_end().lines().last(),
        Some("  3 manifests in 2 files; 0 regions admit, 2 reject, 1 unknown"),
        "{table}"
    );
}

#[test]
fn policy_shows_a_saved_policy_file_as_the_table() {
    let output = jobcheck(&["policy", "--policy-file", EAST1]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert!(text(&output.stdout).contains("Job Validation Policy — us-east-1"));
    let dir = tempfile::tempdir().expect("temp dir");
    let nope = write(dir.path(), "nope.json", r#"{"nope": 1}"#);
    assert_usage_error(
        &jobcheck(&["policy", "--policy-file", &format!("us-east-1={nope}")]),
        &["no `policy` object"],
    );
}

#[test]
fn help_lists_the_environment_and_the_exit_codes() {
    for command in ["check", "policy"] {
        let output = jobcheck(&[command, "--help"]);
        let help = text(&output.stdout);
        for expected in [
            "JOBCHECK_REGIONS_FILE",
            "AWS_ACCESS_KEY_ID",
            "Exit codes:",
            "  2  usage",
        ] {
            assert!(help.contains(expected), "{command}: {expected:?} in {help}");
        }
    }
}

#[test]
fn completions_and_the_man_page_come_from_the_cli_definition() {
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef jobcheck"),
        ("fish", "complete -c jobcheck"),
    ] {
        let output = jobcheck(&["completion", shell]);
        assert_eq!(output.status.code(), Some(0), "{shell}");
        let script = text(&output.stdout);
        assert!(script.contains(marker), "{shell}: {script}");
        assert!(script.contains("fail-on-unknown"), "{shell}");
    }
    let man = jobcheck(&["man"]);
    assert_eq!(man.status.code(), Some(0));
    let page = text(&man.stdout);
    assert!(
        page.starts_with(".ie") || page.contains(".TH jobcheck"),
        "{page}"
    );
}
