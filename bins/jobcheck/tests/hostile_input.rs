//! `jobcheck` against hostile and broken input files: FIFOs, devices and oversized files where a
//! policy, manifest, regions or CA file is expected, endless stdin, YAML nested past the cap, and
//! the messages of a careless operator's mistakes. Every run ends with a clear one-line error,
//! never a panic, an abort or a wait.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

const JOB: &str = "fixtures/jobcheck/gpu-job.yaml";
const EAST1: &str = "us-east-1=fixtures/jobcheck/policies/us-east-1.json";

fn command(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_jobcheck"));
    command
        .args(args)
        .current_dir(root())
        .env_remove("JOBCHECK_REGIONS_FILE")
        .stdin(Stdio::null());
    command
}

fn jobcheck(args: &[&str]) -> Output {
    command(args).output().expect("jobcheck runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Asserts a usage error (exit 2) on one stderr line containing `expected`, nothing on stdout,
/// and no panic.
fn assert_usage_error(output: &Output, expected: &str) {
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(expected),
        "expected {expected:?} in: {stderr}"
    );
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(!stderr.contains("panicked at"), "{stderr}");
    assert!(output.stdout.is_empty(), "{}", text(&output.stdout));
}

fn fifo(dir: &Path, name: &str) -> String {
    let path = dir.join(name);
    nix::unistd::mkfifo(&path, nix::sys::stat::Mode::S_IRWXU).expect("mkfifo");
    path.display().to_string()
}

fn symlink(dir: &Path, name: &str, target: &str) -> String {
    let path = dir.join(name);
    std::os::unix::fs::symlink(target, &path).expect("symlink");
    path.display().to_string()
}

#[test]
fn a_policy_file_that_is_not_a_regular_file_is_refused_at_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let pipe = fifo(dir.path(), "policy.json");
    let linked = symlink(dir.path(), "linked.json", &pipe);
    let zero = symlink(dir.path(), "zero.json", "/dev/zero");
    for (path, what) in [
        (&pipe, "a FIFO"),
        (&linked, "a FIFO"),
        (&zero, "a character device"),
        (&"/dev/zero".to_string(), "a character device"),
    ] {
        let output = jobcheck(&["check", JOB, "--policy-file", &format!("us-east-1={path}")]);
        assert_usage_error(
            &output,
            &format!("cannot read policy file: {path}: is not a regular file ({what})"),
        );
    }
}

#[test]
fn a_saved_policy_body_has_the_live_body_cap() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("big.json");
    let mut body = br#"{"policy": {"allowed_kinds": ["Job"]}, "padding": ""#.to_vec();
    body.resize(body.len() + 9 * 1024 * 1024, b'x');
    body.extend_from_slice(br#""}"#);
    std::fs::write(&path, body).expect("write");
    let output = jobcheck(&[
        "check",
        JOB,
        "--policy-file",
        &format!("us-east-1={}", path.display()),
    ]);
    assert_usage_error(
        &output,
        &format!(
            "cannot read policy file: {}: is larger than the 8 MiB cap",
            path.display()
        ),
    );
}

#[test]
fn a_manifest_path_that_is_not_a_regular_file_says_what_it_is() {
    let dir = tempfile::tempdir().expect("temp dir");
    let pipe = fifo(dir.path(), "job.yaml");
    let output = jobcheck(&["check", &pipe, "--policy-file", EAST1]);
    assert_usage_error(
        &output,
        &format!("cannot read manifest file: {pipe}: is not a regular file (a FIFO)"),
    );
    let zero = jobcheck(&["check", "/dev/zero", "--policy-file", EAST1]);
    assert_usage_error(
        &zero,
        "cannot read manifest file: /dev/zero: is not a regular file (a character device)",
    );
    // The reference's message stays for a path that does not exist.
    let missing = jobcheck(&["check", "nope.yaml", "--policy-file", EAST1]);
    assert_usage_error(&missing, "Path not found: nope.yaml");
}

#[test]
fn a_manifest_directory_entry_that_is_not_a_regular_file_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("a.yaml"), "kind: Job\n").expect("write");
    let zero = symlink(dir.path(), "b.yaml", "/dev/zero");
    let path = dir.path().display().to_string();
    let output = jobcheck(&["check", &path, "--policy-file", EAST1]);
    assert_usage_error(
        &output,
        &format!("cannot read manifest file: {zero}: is not a regular file (a character device)"),
    );
    let sub = tempfile::tempdir().expect("temp dir");
    fifo(sub.path(), "c.yml");
    let output = jobcheck(&[
        "check",
        &sub.path().display().to_string(),
        "--policy-file",
        EAST1,
    ]);
    assert_usage_error(&output, "is not a regular file (a FIFO)");
}

#[test]
fn endless_stdin_stops_at_the_cap() {
    let output = command(&["check", "-", "--policy-file", EAST1])
        .stdin(File::open("/dev/zero").expect("/dev/zero"))
        .output()
        .expect("jobcheck runs");
    assert_usage_error(
        &output,
        "cannot read manifests: stdin: is larger than the 8 MiB cap",
    );
}

#[test]
fn a_ca_file_that_is_not_a_regular_file_is_refused_at_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let pipe = fifo(dir.path(), "ca.pem");
    let regions = dir.path().join("jobcheck.yaml");
    std::fs::write(
        &regions,
        "regions:\n  - name: a\n    endpoint: https://localhost:1/a\nauth: {type: none}\ncaFile: ca.pem\n",
    )
    .expect("write");
    let output = jobcheck(&[
        "check",
        JOB,
        "--regions-file",
        &regions.display().to_string(),
    ]);
    assert_usage_error(
        &output,
        &format!("cannot read caFile: {pipe}: is not a regular file (a FIFO)"),
    );
}

#[test]
fn yaml_nested_past_the_cap_is_refused_before_parsing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let deep = format!("a: {}{}\n", "[".repeat(5000), "]".repeat(5000));
    let manifest = dir.path().join("deep.yaml");
    std::fs::write(&manifest, &deep).expect("write");
    let policy = dir.path().join("deep-policy.yaml");
    std::fs::write(&policy, format!("policy: {{}}\n{deep}")).expect("write");
    let regions = dir.path().join("regions.yaml");
    std::fs::write(&regions, &deep).expect("write");
    let expected = "recursion limit exceeded: YAML nested deeper than 128 levels at line";
    let output = jobcheck(&[
        "check",
        &manifest.display().to_string(),
        "--policy-file",
        EAST1,
    ]);
    assert_usage_error(&output, expected);
    let output = command(&["check", "-", "--policy-file", EAST1])
        .stdin(File::open(&manifest).expect("open"))
        .output()
        .expect("jobcheck runs");
    assert_usage_error(&output, expected);
    let output = jobcheck(&[
        "check",
        "--policy-file",
        &format!("us-east-1={}", policy.display()),
    ]);
    assert_usage_error(&output, expected);
    let output = jobcheck(&["check", "--regions-file", &regions.display().to_string()]);
    assert_usage_error(&output, expected);
}

#[test]
fn a_regions_file_error_is_printed_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    let regions = dir.path().join("jobcheck.yaml");
    std::fs::write(
        &regions,
        "regions:\n  - name: a\n    endpoint: https://e.com\nfoo: 1\n",
    )
    .expect("write");
    let output = jobcheck(&["check", "--regions-file", &regions.display().to_string()]);
    assert_usage_error(
        &output,
        &format!(
            "error: {}: regions file is not valid: foo: is not a known key",
            regions.display()
        ),
    );
    let stderr = text(&output.stderr);
    assert_eq!(stderr.matches("foo").count(), 1, "{stderr}");
}

#[test]
fn the_table_counts_only_the_regions_actually_read() {
    let dir = tempfile::tempdir().expect("temp dir");
    let empty = dir.path().join("empty.json");
    std::fs::write(&empty, r#"{"policy": {}}"#).expect("write");
    let empty = empty.display().to_string();
    let output = jobcheck(&[
        "check",
        "--policy-file",
        &format!("eu-west-1={empty}"),
        "--policy-file",
        &format!("eu-west-2={empty}"),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    let table = text(&output.stdout);
    assert!(
        table.contains("Cross-region policy agreement — 0 of 2 region(s) read\n"),
        "{table}"
    );
    assert!(
        table.contains("    no region readable; nothing to compare\n"),
        "{table}"
    );
    let partial = jobcheck(&[
        "check",
        "--policy-file",
        EAST1,
        "--policy-file",
        &format!("eu-west-2={empty}"),
    ]);
    let table = text(&partial.stdout);
    assert!(
        table.contains("Cross-region policy agreement — 1 of 2 region(s) read\n"),
        "{table}"
    );
    assert!(
        table.contains("    only one region readable; nothing to compare\n"),
        "{table}"
    );
}
