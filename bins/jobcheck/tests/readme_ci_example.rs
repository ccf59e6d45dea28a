//! The README's GitHub Actions example, run as written: its `jobcheck check` step, in a checkout
//! holding `jobs/` and `jobcheck.yaml`, against a loopback policy server. Without credentials (a
//! pull request from a fork gets no secrets) it must fail the job; with them it passes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use test_support::TestCa;
use test_support::policy_server::{Behaviour, PolicyServer, sample_policy_response};

fn readme() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    std::fs::read_to_string(path).expect("README.md")
}

/// The `run:` command of the README's CI step that runs `jobcheck check … -o sarif`.
fn ci_command() -> String {
    readme()
        .lines()
        .map(str::trim)
        .filter_map(|line| line.strip_prefix("run: "))
        .find(|command| command.starts_with("jobcheck check") && command.contains("-o sarif"))
        .expect("the README's CI example runs jobcheck check -o sarif")
        .to_owned()
}

/// A checkout with one admissible job under `jobs/team/` and a regions file for two regions of
/// `server` (SigV4, the default auth), trusting `ca`.
fn checkout(server: &PolicyServer, ca: &TestCa) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::create_dir_all(dir.path().join("jobs/team")).expect("mkdir");
    std::fs::write(
        dir.path().join("jobs/team/job.yaml"),
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: ok\nspec:\n  template:\n    spec:\n      containers:\n        - name: c\n          image: docker.io/library/busybox:1\n",
    )
    .expect("write job");
    std::fs::write(dir.path().join("ca.pem"), ca.ca_pem()).expect("write CA");
    let entries: String = ["us-east-1", "eu-west-1"]
        .iter()
        .map(|r| format!("  - name: {r}\n    endpoint: {}\n", server.endpoint(r)))
        .collect();
    std::fs::write(
        dir.path().join("jobcheck.yaml"),
        format!("regions:\n{entries}timeoutSeconds: 5\ndeadlineSeconds: 10\ncaFile: ca.pem\n"),
    )
    .expect("write regions file");
    dir
}

/// Runs `command` as GitHub Actions runs a `run:` step (bash -eo pipefail), with the installed
/// `jobcheck` on PATH and only the AWS variables given.
fn run_step(dir: &Path, command: &str, aws: &[(&str, &str)]) -> Output {
    let bin_dir: PathBuf = Path::new(env!("CARGO_BIN_EXE_jobcheck"))
        .parent()
        .expect("bin dir")
        .to_path_buf();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut step = Command::new("bash");
    step.args(["--noprofile", "--norc", "-eo", "pipefail", "-c", command])
        .current_dir(dir)
        .env("PATH", path)
        .env("HOME", dir)
        .env_remove("JOBCHECK_REGIONS_FILE");
    for (name, _) in std::env::vars() {
        if name.starts_with("AWS_") {
            step.env_remove(name);
        }
    }
    step.envs(aws.iter().copied());
    step.output().expect("bash runs the step")
}

#[test]
fn the_readme_ci_example_fails_the_job_without_credentials() {
    let ca = TestCa::new();
    let server = PolicyServer::start(&ca);
    for region in ["us-east-1", "eu-west-1"] {
        server.route(region, Behaviour::Serve(sample_policy_response(region)));
    }
    let dir = checkout(&server, &ca);
    let command = ci_command();
    assert!(command.contains("--fail-on-unknown"), "{command}");

    let without = run_step(dir.path(), &command, &[]);
    let stderr = String::from_utf8_lossy(&without.stderr);
    assert_eq!(without.status.code(), Some(1), "{command}: {stderr}");
    let sarif: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.path().join("jobcheck.sarif")).expect("the SARIF file is written"),
    )
    .expect("valid SARIF");
    assert_eq!(
        sarif["runs"][0]["invocations"][0]["executionSuccessful"],
        false
    );
    assert_eq!(
        server.hits("us-east-1"),
        0,
        "nothing is sent without credentials"
    );

    // The same step with the secrets passes: the failure above is the missing credentials.
    let with = run_step(
        dir.path(),
        &command,
        &[
            ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLEREADME1"),
            ("AWS_SECRET_ACCESS_KEY", "readme-example-secret-key-value"),
        ],
    );
    assert_eq!(
        with.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&with.stderr)
    );
    assert_eq!(server.hits("us-east-1"), 1);
}
