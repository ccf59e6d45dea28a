//! `jobcheck` against live regions: the loopback HTTPS policy server of `test-support` (real TLS
//! with a per-test CA named by the regions file's `caFile`), for `check` and `policy`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::json;
use test_support::TestCa;
use test_support::policy_server::{
    AuthCheck, Behaviour, PolicyServer, Route, echo_authorization_into_a_cap,
    echo_credentials_everywhere, leaked_encoding, sample_policy_response,
};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

const JOB: &str = "fixtures/jobcheck/gpu-job.yaml";

/// A policy server for three regions (one over-capped, one failing) and a regions file for it.
struct Fleet {
    server: PolicyServer,
    dir: tempfile::TempDir,
}

impl Fleet {
    fn start() -> Fleet {
        let ca = TestCa::new();
        let server = PolicyServer::start(&ca);
        server.route(
            "us-east-1",
            Behaviour::Serve(sample_policy_response("us-east-1")),
        );
        let mut capped = sample_policy_response("eu-west-1");
        capped["policy"]["manifest_caps"]["max_gpu_count"] = json!(4);
        server.route("eu-west-1", Behaviour::Serve(capped));
        server.route("ap-south-1", Behaviour::Status(500));
        let dir = tempfile::tempdir().expect("temp dir");
        write_regions_file(
            dir.path(),
            &ca,
            &server,
            &["us-east-1", "eu-west-1", "ap-south-1"],
            "auth: {type: none}\ntimeoutSeconds: 5\ndeadlineSeconds: 10\n",
        );
        Fleet { server, dir }
    }

    fn regions_file(&self) -> PathBuf {
        self.dir.path().join("jobcheck.yaml")
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_jobcheck"))
            .args(args)
            .current_dir(root())
            .env("JOBCHECK_REGIONS_FILE", self.regions_file())
            .output()
            .expect("jobcheck runs")
    }
}

/// Writes `dir/jobcheck.yaml` listing `regions` of `server` (trusting `ca` through `caFile`) with
/// the `settings` lines, and returns its path.
fn write_regions_file(
    dir: &Path,
    ca: &TestCa,
    server: &PolicyServer,
    regions: &[&str],
    settings: &str,
) -> PathBuf {
    std::fs::write(dir.join("ca.pem"), ca.ca_pem()).expect("write CA");
    let entries: String = regions
        .iter()
        .map(|r| format!("  - name: {r}\n    endpoint: {}\n", server.endpoint(r)))
        .collect();
    let file = dir.join("jobcheck.yaml");
    std::fs::write(
        &file,
        format!("regions:\n{entries}{settings}caFile: ca.pem\n"),
    )
    .expect("write regions file");
    file
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("utf-8")
}

#[test]
fn check_reads_every_live_region_in_file_order() {
    let fleet = Fleet::start();
    let output = fleet.run(&["check", JOB, "-o", "json"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    insta::assert_snapshot!("live_check_json", text(&output.stdout));
    assert_eq!(fleet.server.hits("us-east-1"), 1);
    assert_eq!(fleet.server.hits("ap-south-1"), 1, "500 is not retried");
}

#[test]
fn check_table_shows_verdicts_warnings_and_drift() {
    let fleet = Fleet::start();
    let output = fleet.run(&["check", JOB]);
    assert_eq!(output.status.code(), Some(0));
    insta::assert_snapshot!("live_check_table", text(&output.stdout));
    assert!(
        !text(&output.stderr).contains("waiting for"),
        "no progress line when not on a terminal"
    );
}

#[test]
fn region_selection_deduplicates_and_mixes_with_saved_policies() {
    let fleet = Fleet::start();
    let output = fleet.run(&[
        "check",
        JOB,
        "-r",
        "eu-west-1",
        "-r",
        "eu-west-1",
        "--policy-file",
        "us-east-2=fixtures/jobcheck/policies/us-east-2.json",
        "-o",
        "json",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let payload: serde_json::Value = serde_json::from_slice(&output.stdout).expect("json");
    assert_eq!(payload["regions"], json!(["us-east-2", "eu-west-1"]));
    assert_eq!(
        fleet.server.hits("us-east-1"),
        0,
        "unselected regions are not read"
    );
    assert_eq!(fleet.server.hits("eu-west-1"), 1);
}

#[test]
fn fail_on_reject_counts_rejects_and_a_run_where_nothing_was_judged() {
    let fleet = Fleet::start();
    let rejecting = fleet.run(&["check", JOB, "-r", "eu-west-1", "--fail-on-reject"]);
    assert_eq!(rejecting.status.code(), Some(1));
    // One region read and admitting, one unknown: advisory unless --fail-on-unknown.
    let some_read = ["check", JOB, "-r", "us-east-1", "-r", "ap-south-1"];
    let mut args = some_read.to_vec();
    args.push("--fail-on-reject");
    assert_eq!(fleet.run(&args).status.code(), Some(0));
    args.push("--fail-on-unknown");
    let failed = fleet.run(&args);
    assert_eq!(failed.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&failed.stderr);
    assert!(stderr.contains("--fail-on-unknown"), "{stderr}");
    // No region read: nothing was judged, so --fail-on-reject fails the run.
    let unknown = fleet.run(&["check", JOB, "-r", "ap-south-1", "--fail-on-reject"]);
    assert_eq!(unknown.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&unknown.stderr);
    assert!(stderr.contains("nothing was judged"), "{stderr}");
    let sarif = fleet.run(&["check", JOB, "-r", "ap-south-1", "-o", "sarif"]);
    assert_eq!(sarif.status.code(), Some(0));
    let log: serde_json::Value = serde_json::from_slice(&sarif.stdout).expect("SARIF");
    let invocation = &log["runs"][0]["invocations"][0];
    assert_eq!(invocation["executionSuccessful"], false);
    assert_eq!(
        invocation["toolExecutionNotifications"][0]["level"],
        "error"
    );
}

#[test]
fn strict_enforcement_turns_limit_range_warnings_into_rejections() {
    let fleet = Fleet::start();
    // us-east-1 admits the 12-GPU job at the front door, but its LimitRange caps a container at 8.
    let advisory = fleet.run(&[
        "check",
        JOB,
        "-r",
        "us-east-1",
        "-o",
        "json",
        "--fail-on-reject",
    ]);
    assert_eq!(advisory.status.code(), Some(0));
    let payload: serde_json::Value = serde_json::from_slice(&advisory.stdout).expect("json");
    assert_eq!(payload["verdicts"][0]["verdict"], "admit");
    assert_eq!(
        payload["verdicts"][0]["warnings"][0]["check"],
        "limit_range"
    );

    let strict = fleet.run(&[
        "check",
        JOB,
        "-r",
        "us-east-1",
        "-o",
        "json",
        "--fail-on-reject",
        "--strict-enforcement",
    ]);
    assert_eq!(strict.status.code(), Some(1));
    let payload: serde_json::Value = serde_json::from_slice(&strict.stdout).expect("json");
    assert_eq!(payload["verdicts"][0]["verdict"], "reject");
    assert_eq!(payload["verdicts"][0]["issues"][0]["check"], "limit_range");
}

#[test]
fn policy_prints_one_region_as_a_table_or_unchanged() {
    let fleet = Fleet::start();
    let table = fleet.run(&["policy", "-r", "us-east-1"]);
    assert_eq!(table.status.code(), Some(0), "{}", text(&table.stderr));
    insta::assert_snapshot!("live_policy_table", text(&table.stdout));
    let json = fleet.run(&["policy", "-r", "us-east-1", "-o", "json"]);
    let body: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    assert_eq!(body, sample_policy_response("us-east-1"));
}

#[test]
fn policy_read_failure_exits_one_with_the_reason() {
    let fleet = Fleet::start();
    let output = fleet.run(&["policy", "-r", "ap-south-1"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        text(&output.stderr),
        "Failed to get job validation policy: HTTP 500 Internal Server Error\n"
    );
    assert!(output.stdout.is_empty());
}

#[test]
fn regions_file_problems_are_usage_errors() {
    let fleet = Fleet::start();
    let unknown = fleet.run(&["check", JOB, "-r", "mars-1"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(text(&unknown.stderr).contains("region \"mars-1\" is not in the regions file"));

    let bad = fleet.dir.path().join("bad.yaml");
    std::fs::write(&bad, "regions:\n  - name: x\n    endpoint: http://plain\n").expect("write");
    let output = Command::new(env!("CARGO_BIN_EXE_jobcheck"))
        .args(["check", JOB, "--regions-file"])
        .arg(&bad)
        .current_dir(root())
        .output()
        .expect("jobcheck runs");
    assert_eq!(output.status.code(), Some(2));
    let message = text(&output.stderr);
    assert!(message.contains("regions[0].endpoint"), "{message}");
    assert_eq!(message.lines().count(), 1, "{message}");
}

#[test]
fn a_region_echoing_the_bearer_token_never_prints_it() {
    const TOKEN: &str = "tok/SECRET+8f3a.Zq~x";
    let ca = TestCa::new();
    let server = PolicyServer::start(&ca);
    for (name, echo) in [
        (
            "cap",
            echo_authorization_into_a_cap
                as fn(&test_support::RecordedRequest) -> serde_json::Value,
        ),
        ("everywhere", echo_credentials_everywhere),
    ] {
        server.route(
            name,
            Route {
                behaviour: Behaviour::Echo(echo),
                auth: AuthCheck::Bearer(TOKEN.into()),
            },
        );
    }
    server.route("plain", Behaviour::Serve(sample_policy_response("plain")));
    let dir = tempfile::tempdir().expect("temp dir");
    let file = write_regions_file(
        dir.path(),
        &ca,
        &server,
        &["cap", "everywhere", "plain"],
        "auth: {type: bearer, tokenEnv: GCO_TOKEN}\n",
    );
    let runs: [&[&str]; 7] = [
        &["check", JOB],
        &["check", JOB, "-o", "json"],
        &["check", JOB, "-o", "yaml"],
        &["check"],
        &["policy", "-r", "everywhere"],
        &["policy", "-r", "everywhere", "-o", "json"],
        &["policy", "-r", "cap"],
    ];
    let mut rendered = String::new();
    for args in runs {
        let output = Command::new(env!("CARGO_BIN_EXE_jobcheck"))
            .args(args)
            .current_dir(root())
            .env("JOBCHECK_REGIONS_FILE", &file)
            .env("GCO_TOKEN", format!("{TOKEN}\n"))
            .output()
            .expect("jobcheck runs");
        assert!(matches!(output.status.code(), Some(0 | 1)), "{args:?}");
        rendered.push_str(&text(&output.stdout));
        rendered.push_str(&text(&output.stderr));
    }
    // The echo did reach the output, scrubbed.
    assert!(
        rendered.contains("invalid literal for int() with base 10: '[redacted]'"),
        "{rendered}"
    );
    assert!(rendered.contains("org-[redacted]"), "{rendered}");
    assert!(!rendered.contains("panicked at"), "{rendered}");
    if let Some(encoded) = leaked_encoding(&rendered, TOKEN) {
        panic!("the token leaked as {encoded:?} into:\n{rendered}");
    }
}
