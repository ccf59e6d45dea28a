//! Hostile ExpansionTemplate sets through `workload-report eval` (issue 26 §5–6): the command
//! ends in time with a clear error or its results, never an abort.

use std::fmt::Write as _;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

fn expansion(name: &str, from: &str, to: &str) -> String {
    format!(
        "apiVersion: expansion.gatekeeper.sh/v1beta1\nkind: ExpansionTemplate\nmetadata:\n  name: {name}\nspec:\n  applyTo:\n    - groups: [\"example.com\"]\n      kinds: [\"{from}\"]\n      versions: [\"v1\"]\n  templateSource: metadata\n  generatedGVK:\n    group: example.com\n    version: v1\n    kind: {to}\n---\n"
    )
}

const POLICY: &str = "apiVersion: templates.gatekeeper.sh/v1\nkind: ConstraintTemplate\nmetadata:\n  name: nameit\nspec:\n  crd:\n    spec:\n      names:\n        kind: NameIt\n  targets:\n    - target: admission.k8s.gatekeeper.sh\n      rego: |\n        package nameit\n        violation[{\"msg\": input.review.object.metadata.name}] { true }\n---\napiVersion: constraints.gatekeeper.sh/v1beta1\nkind: NameIt\nmetadata:\n  name: all\nspec: {}\n---\napiVersion: example.com/v1\nkind: K0\nmetadata:\n  name: root\n";

fn eval(yaml: &str) -> (Output, Duration) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("input.yaml");
    std::fs::write(&path, yaml).expect("write");
    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_workload-report"))
        .args(["eval", "-f"])
        .arg(&path)
        .output()
        .expect("run workload-report");
    (output, started.elapsed())
}

#[test]
fn templates_two_per_level_end_in_the_resultant_limit_error() {
    let mut yaml = String::new();
    for level in 0..21 {
        for side in ["a", "b"] {
            yaml.push_str(&expansion(
                &format!("level{level:02}-{side}"),
                &format!("K{level}"),
                &format!("K{}", level + 1),
            ));
        }
    }
    yaml.push_str(&expansion("beside", "Other", "Elsewhere"));
    yaml.push_str(POLICY);
    let (output, took) = eval(&yaml);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(took < Duration::from_secs(20), "{took:?}");
    assert!(
        matches!(output.status.code(), Some(1 | 2)),
        "{:?} {stderr}",
        output.status
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        stderr.contains("more than 1000 resultants (the embedded engine's limit per object)"),
        "{stderr}"
    );
    assert!(stderr.contains("level00-a"), "{stderr}");
}

#[test]
fn two_thousand_unrelated_templates_are_read_quickly() {
    let mut yaml = String::new();
    for i in 0..2_000 {
        yaml.push_str(&expansion(
            &format!("unrelated-{i:04}"),
            &format!("From{i}"),
            &format!("To{i}"),
        ));
    }
    yaml.push_str(&expansion("root-kind", "K0", "K1"));
    yaml.push_str(POLICY);
    let (output, took) = eval(&yaml);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let mut why = String::new();
    let _ = write!(
        why,
        "{:?} {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(took < Duration::from_secs(20), "{took:?}");
    assert!(stdout.contains("root"), "{stdout} {why}");
    assert!(stdout.contains("[Implied by root-kind]"), "{stdout} {why}");
}
