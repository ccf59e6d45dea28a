//! `jobcheck check -o sarif|junit|github`: the CI formats on the fixture manifests (a rejected
//! pod, a GPU job without toleration, an admissible job, an unreadable region), validated the
//! way CI tools read them — SARIF against the official SARIF 2.1.0 schema
//! (`fixtures/sarif/sarif-schema-2.1.0.json`), JUnit parsed back as XML, workflow commands by
//! their grammar — and snapshotted; `--fail-on-reject` keeps its meaning in every format.

mod common;

use std::process::Output;

use common::root;
use quick_xml::Reader;
use quick_xml::events::Event;
use serde_json::Value;

const JOBS: &str = "fixtures/jobcheck/ci/jobs.yaml";
const EAST1: &str = "us-east-1=fixtures/jobcheck/policies/us-east-1.json";
const EAST2: &str = "us-east-2=fixtures/jobcheck/policies/us-east-2.json";
const UNREADABLE: &str = "eu-west-1=fixtures/jobcheck/ci/unreadable.json";

fn jobcheck(args: &[&str], stdin: &str) -> Output {
    common::jobcheck_with_stdin(args, Some(stdin))
}

/// `jobcheck check JOBS` against us-east-1, us-east-2 and the unreadable eu-west-1, in `format`.
fn check(format: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "check",
        JOBS,
        "--policy-file",
        EAST1,
        "--policy-file",
        EAST2,
        "--policy-file",
        UNREADABLE,
        "-o",
        format,
    ];
    args.extend_from_slice(extra);
    jobcheck(&args, "")
}

fn stdout(output: &Output) -> String {
    assert!(
        output.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).expect("utf-8 stdout")
}

fn sarif_validator() -> jsonschema::Validator {
    let text = std::fs::read_to_string(root().join("fixtures/sarif/sarif-schema-2.1.0.json"))
        .expect("the SARIF schema is committed");
    let schema: Value = serde_json::from_str(&text).expect("the schema is JSON");
    jsonschema::validator_for(&schema).expect("the schema compiles")
}

fn assert_valid_sarif(log: &Value) {
    let validator = sarif_validator();
    let errors: Vec<String> = validator
        .iter_errors(log)
        .map(|error| format!("{} at {}", error, error.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn sarif_is_valid_and_points_at_lines() {
    let output = check("sarif", &[]);
    assert_eq!(output.status.code(), Some(0));
    let text = stdout(&output);
    let log: Value = serde_json::from_str(&text).expect("SARIF is JSON");
    assert_valid_sarif(&log);
    let results = log["runs"][0]["results"].as_array().expect("results");
    let at = |rule: &str, region: &str| -> Vec<(i64, String)> {
        results
            .iter()
            .filter(|r| r["ruleId"] == rule && r["properties"]["region"] == region)
            .map(|r| {
                let location = &r["locations"][0]["physicalLocation"];
                (
                    location["region"]["startLine"].as_i64().unwrap_or(0),
                    r["level"].as_str().unwrap_or_default().to_owned(),
                )
            })
            .collect()
    };
    // The pod's namespace, image and hostNetwork lines; the accelerator the job requests.
    assert_eq!(at("namespace", "us-east-1"), [(20, "error".to_owned())]);
    assert_eq!(at("images", "us-east-1"), [(25, "error".to_owned())]);
    assert_eq!(
        at("security_context", "us-east-1"),
        [(22, "error".to_owned())]
    );
    assert_eq!(at("tolerations", "us-east-2"), [(39, "error".to_owned())]);
    // The unreadable region is a notification, not a result.
    assert!(
        results
            .iter()
            .all(|r| r["properties"]["region"] != "eu-west-1")
    );
    let notes = &log["runs"][0]["invocations"][0]["toolExecutionNotifications"];
    assert_eq!(notes.as_array().map(Vec::len), Some(1));
    insta::assert_snapshot!("ci_sarif", text);
}

#[test]
fn the_schema_check_catches_a_broken_log() {
    let output = check("sarif", &[]);
    let mut log: Value = serde_json::from_str(&stdout(&output)).expect("SARIF is JSON");
    log["runs"][0]["results"][0]["level"] = Value::from("fatal");
    assert!(!sarif_validator().is_valid(&log));
    log["runs"][0]["results"][0]["level"] = Value::from("error");
    assert!(sarif_validator().is_valid(&log));
    log.as_object_mut().expect("object").remove("version");
    assert!(!sarif_validator().is_valid(&log));
}

#[test]
fn stdin_manifests_are_reported_as_dash() {
    let manifest = std::fs::read_to_string(root().join(JOBS)).expect("fixture");
    let output = jobcheck(
        &["check", "-", "--policy-file", EAST1, "-o", "sarif"],
        &manifest,
    );
    let log: Value = serde_json::from_str(&stdout(&output)).expect("SARIF is JSON");
    assert_valid_sarif(&log);
    let results = log["runs"][0]["results"].as_array().expect("results");
    assert!(!results.is_empty());
    for result in results {
        let location = &result["locations"][0]["physicalLocation"];
        assert_eq!(location["artifactLocation"]["uri"], "-");
        assert!(
            location["region"]["startLine"]
                .as_i64()
                .is_some_and(|l| l > 1)
        );
    }
}

/// A parsed XML element: name, attributes, children and text.
#[derive(Debug, Default)]
struct Element {
    name: String,
    attributes: Vec<(String, String)>,
    children: Vec<Element>,
    text: String,
}

impl Element {
    fn attribute(&self, name: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }

    fn count(&self, name: &str) -> usize {
        self.children.iter().filter(|c| c.name == name).count()
    }

    fn number(&self, name: &str) -> usize {
        self.attribute(name)
            .and_then(|v| v.parse().ok())
            .unwrap_or(usize::MAX)
    }
}

/// Parses an XML document with quick-xml into its root element.
fn parse_xml(text: &str) -> Element {
    let mut reader = Reader::from_str(text);
    let mut stack: Vec<Element> = vec![Element::default()];
    loop {
        let event = reader.read_event().expect("well-formed XML");
        let open = |start: &quick_xml::events::BytesStart<'_>| Element {
            name: start.name().as_ref().to_owned(),
            attributes: start
                .attributes()
                .map(|a| {
                    let a = a.expect("attribute");
                    (
                        a.key.as_ref().to_owned(),
                        a.normalized_value(quick_xml::XmlVersion::Explicit1_0)
                            .expect("attribute value")
                            .into_owned(),
                    )
                })
                .collect(),
            ..Element::default()
        };
        match event {
            Event::Start(start) => stack.push(open(&start)),
            Event::Empty(start) => {
                let element = open(&start);
                stack.last_mut().expect("parent").children.push(element);
            }
            Event::End(_) => {
                let element = stack.pop().expect("open element");
                stack.last_mut().expect("parent").children.push(element);
            }
            Event::Text(text) => stack.last_mut().expect("open").text.push_str(&text),
            Event::GeneralRef(reference) => {
                let entity = format!("&{};", &*reference);
                let resolved = quick_xml::escape::unescape(&entity).expect("known entity");
                stack.last_mut().expect("open").text.push_str(&resolved);
            }
            Event::Eof => break,
            _ => {}
        }
    }
    let mut document = stack.pop().expect("document");
    assert_eq!(document.children.len(), 1, "one root element");
    document.children.remove(0)
}

#[test]
fn junit_has_a_suite_per_region_and_a_case_per_manifest() {
    let output = check("junit", &[]);
    assert_eq!(output.status.code(), Some(0));
    let text = stdout(&output);
    let root = parse_xml(&text);
    assert_eq!(root.name, "testsuites");
    let suites: Vec<&Element> = root.children.iter().collect();
    let names: Vec<&str> = suites.iter().filter_map(|s| s.attribute("name")).collect();
    assert_eq!(names, ["us-east-1", "us-east-2", "eu-west-1"]);
    let mut failures = 0;
    for suite in &suites {
        assert_eq!(suite.name, "testsuite");
        assert_eq!(suite.count("testcase"), 3, "one testcase per manifest");
        assert_eq!(suite.number("tests"), 3);
        let failed = suite
            .children
            .iter()
            .filter(|case| case.count("failure") == 1)
            .count();
        assert_eq!(suite.number("failures"), failed);
        failures += failed;
        for case in &suite.children {
            assert_eq!(case.attribute("file"), Some(JOBS));
            assert!(case.attribute("line").is_some(), "{case:?}");
        }
    }
    assert_eq!(root.number("failures"), failures);
    // us-east-1 rejects the pod and the GPU job; the job named fine passes.
    let east1 = suites[0];
    let case = |name: &str| {
        east1
            .children
            .iter()
            .find(|c| c.attribute("name") == Some(name))
    };
    assert_eq!(case("Job/fine").map(|c| c.children.len()), Some(0));
    let pod = case("Pod/debug-shell").expect("the pod's testcase");
    assert_eq!(pod.attribute("line"), Some("16"));
    let failure = &pod.children[0];
    assert_eq!(failure.attribute("message"), Some("3 issues"));
    assert!(failure.text.contains("[images] container 'shell': Untrusted image source 'ghcr.io/someone/shell:latest' (fixtures/jobcheck/ci/jobs.yaml:25)"), "{}", failure.text);
    // The unreadable region skips every testcase.
    let eu = suites[2];
    assert_eq!(eu.number("skipped"), 3);
    assert!(eu.children.iter().all(|c| c.children[0].name == "skipped"));
    insta::assert_snapshot!("ci_junit", text);
}

#[test]
fn github_commands_follow_the_workflow_command_grammar() {
    let output = check("github", &[]);
    assert_eq!(output.status.code(), Some(0));
    let text = stdout(&output);
    for line in text.lines() {
        let (command, message) = line
            .strip_prefix("::")
            .and_then(|rest| rest.split_once("::"))
            .unwrap_or_else(|| panic!("not a workflow command: {line}"));
        let (kind, properties) = command.split_once(' ').unwrap_or((command, ""));
        assert!(["error", "warning", "notice"].contains(&kind), "{line}");
        for property in properties.split(',').filter(|p| !p.is_empty()) {
            let (key, value) = property.split_once('=').expect("key=value");
            assert!(["file", "line", "title"].contains(&key), "{line}");
            assert!(!value.contains([':', ',', '\n']), "{line}");
        }
        assert!(!message.is_empty() && !message.contains('\n'), "{line}");
    }
    assert!(text.contains("::error file=fixtures/jobcheck/ci/jobs.yaml,line=22,title=jobcheck security_context (us-east-1)::Pod/debug-shell: hostNetwork is not permitted\n"));
    insta::assert_snapshot!("ci_github", text);
}

#[test]
fn fail_on_reject_means_the_same_in_every_format() {
    for format in ["sarif", "junit", "github", "json", "table", "yaml"] {
        let rejecting = check(format, &["--fail-on-reject"]);
        assert_eq!(rejecting.status.code(), Some(1), "{format}");
        assert!(
            !rejecting.stdout.is_empty(),
            "{format}: printed before the exit"
        );
        let admissible = jobcheck(
            &[
                "check",
                "fixtures/jobcheck/gpu-job.yaml",
                "--policy-file",
                EAST1,
                "--policy-file",
                UNREADABLE,
                "-o",
                format,
                "--fail-on-reject",
            ],
            "",
        );
        assert_eq!(
            admissible.status.code(),
            Some(0),
            "{format}: unknown never fails"
        );
    }
}
