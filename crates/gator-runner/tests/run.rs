//! Running a stand-in `gator` (a shell script written by the test) that prints recorded outputs
//! in the exact formats `docs/gator-cli.md` describes, and interpreting them.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use gator_runner::{GatorRunner, RunError};

/// The checks every stand-in makes before printing: stdin is `/dev/null`, none of the test
/// process's environment leaked in, and the arguments are recorded.
fn preamble(dir: &Path) -> String {
    format!(
        r#"printf '%s\n' "$@" > '{args}'
if [ "$(readlink /proc/self/fd/0)" != /dev/null ]; then echo "stdin is not /dev/null" >&2; exit 3; fi
if [ -n "${{CARGO_MANIFEST_DIR:-}}" ]; then echo "environment leaked into gator" >&2; exit 3; fi"#,
        args = dir.join("args.txt").display()
    )
}

fn stand_in(dir: &Path, body: &str) -> PathBuf {
    common::script(dir, "gator", &format!("{}\n{body}", preamble(dir)))
}

fn input(dir: &Path) -> PathBuf {
    let input = dir.join("in");
    std::fs::create_dir_all(&input).unwrap();
    input
}

#[test]
fn deny_results_with_exit_1_are_results() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = common::data("gator-results.json");
    let gator = stand_in(dir.path(), &format!("cat '{}'\nexit 1", fixture.display()));
    let input = input(dir.path());
    let runner = GatorRunner::new(&gator).with_k8s_native_validation(Some(false));
    let results = runner.test(&input).unwrap();
    insta::assert_json_snapshot!("gator_results", results);
    let args = std::fs::read_to_string(dir.path().join("args.txt")).unwrap();
    assert_eq!(
        args,
        format!(
            "test\n-f\n{}\n-o\njson\n--enable-k8s-native-validation=false\n",
            input.display()
        )
    );
}

#[test]
fn warn_results_with_exit_0_are_results_and_no_flag_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = common::data("gator-results.json");
    let gator = stand_in(dir.path(), &format!("cat '{}'", fixture.display()));
    let input = input(dir.path());
    let results = GatorRunner::new(&gator).test(&input).unwrap();
    assert_eq!(results.len(), 4);
    let args = std::fs::read_to_string(dir.path().join("args.txt")).unwrap();
    assert!(!args.contains("--enable-k8s-native-validation"), "{args}");
}

#[test]
fn evaluation_errors_are_results_without_details() {
    // what gator v3.21.1 printed for fixtures/policy-errors: a template whose complete rule
    // conflicts on some objects (eval_conflict_error) and is violated by others
    let dir = tempfile::tempdir().unwrap();
    let fixture = common::data("gator-policy-errors.json");
    let gator = stand_in(dir.path(), &format!("cat '{}'", fixture.display()));
    let results = GatorRunner::new(&gator).test(&input(dir.path())).unwrap();
    let (errors, violations): (Vec<_>, Vec<_>) = results.iter().partition(|r| r.details.is_none());
    assert_eq!((errors.len(), violations.len()), (5, 4));
    assert!(errors.iter().all(|r| r.msg
        == "template:3: eval_conflict_error: complete rules must not produce multiple outputs"));
    assert!(
        violations
            .iter()
            .all(|r| r.details.as_deref() == Some("{}"))
    );
}

#[test]
fn null_is_no_results() {
    let dir = tempfile::tempdir().unwrap();
    let gator = stand_in(dir.path(), "printf null");
    let results = GatorRunner::new(&gator).test(&input(dir.path())).unwrap();
    assert!(results.is_empty());
}

#[test]
fn stderr_error_with_exit_1_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let gator = stand_in(
        dir.path(),
        r#"printf 'auditing objects: adding constraint "must-have-owner": missing ConstraintTemplate: template "k8srequiredlabels" not found\n' >&2
exit 1"#,
    );
    let error = GatorRunner::new(&gator)
        .test(&input(dir.path()))
        .unwrap_err();
    assert!(matches!(error, RunError::Failed { .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        r#"gator error (exit 1): auditing objects: adding constraint "must-have-owner": missing ConstraintTemplate: template "k8srequiredlabels" not found"#
    );
}

#[test]
fn no_input_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let gator = stand_in(dir.path(), "echo 'no input data identified' >&2\nexit 1");
    let error = GatorRunner::new(&gator)
        .test(&input(dir.path()))
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "gator error (exit 1): no input data identified"
    );
}

#[test]
fn stderr_warning_with_exit_0_is_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let gator = stand_in(
        dir.path(),
        r#"echo '2026/11/30 07:30:01 WARNING - Resource named "api" (from file: "/work/in/b.yaml") is already defined in file: "/work/in/a.yaml"' >&2
printf null"#,
    );
    let error = GatorRunner::new(&gator)
        .test(&input(dir.path()))
        .unwrap_err();
    match &error {
        RunError::Warning { line } => assert!(line.contains("is already defined in")),
        other => panic!("expected a warning, got {other:?}"),
    }
    assert!(
        error
            .to_string()
            .starts_with("gator warning: 2026/11/30 07:30:01 WARNING - Resource named \"api\"")
    );
}

#[test]
fn non_json_stdout_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let gator = stand_in(
        dir.path(),
        "printf 'apps/v1/Deployment team-a/api: [\"must-have-owner\"] Message: \"x\"\\n'\nexit 1",
    );
    let error = GatorRunner::new(&gator)
        .test(&input(dir.path()))
        .unwrap_err();
    assert!(matches!(error, RunError::NonJson { .. }), "{error:?}");
    assert!(
        error
            .to_string()
            .starts_with("gator printed non-JSON output: apps/v1/Deployment")
    );
}

#[test]
fn unexpected_exit_signal_and_silent_failure_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("exit 2", "gator error (exit 2): (stderr empty)"),
        ("kill -9 $$", "gator error (signal 9): (stderr empty)"),
        ("exit 1", "gator error (exit 1): (stderr and stdout empty)"),
    ];
    for (body, want) in cases {
        let gator = stand_in(dir.path(), body);
        let error = GatorRunner::new(&gator)
            .test(&input(dir.path()))
            .unwrap_err();
        assert_eq!(error.to_string(), want);
    }
}

#[test]
fn a_hang_is_killed_at_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    // Not `exec`: the sleeping child keeps stdout open, so the whole process group must go.
    let gator = stand_in(dir.path(), "sleep 60\nprintf null");
    let started = Instant::now();
    let error = GatorRunner::new(&gator)
        .with_timeout(Duration::from_millis(300))
        .test(&input(dir.path()))
        .unwrap_err();
    assert!(matches!(error, RunError::Timeout { .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        "gator timed out after 0.3s and was killed"
    );
    // The child holding the pipes was killed too (otherwise this waits for the 60 s sleep).
    assert!(started.elapsed() < Duration::from_secs(30));
}

/// Set in the child of [`stdin_is_dev_null_even_when_the_runner_reads_a_pipe`]: the work dir.
const STDIN_CHILD: &str = "GATOR_RUNNER_TEST_STDIN_CHILD";

#[test]
fn stdin_is_dev_null_even_when_the_runner_reads_a_pipe() {
    // The stand-in refuses anything but /dev/null on fd 0, and fails if it can read a line; the
    // runner's results prove it passed.
    if let Some(dir) = std::env::var_os(STDIN_CHILD) {
        let dir = Path::new(&dir);
        let gator = stand_in(
            dir,
            "if read -r line; then echo \"read $line\" >&2; exit 3; fi\nprintf null",
        );
        assert!(
            GatorRunner::new(&gator)
                .test(&input(dir))
                .unwrap()
                .is_empty()
        );
        return;
    }
    // The runner is a child test process whose fd 0 is a real pipe holding a line, so gator
    // would find that line if it inherited the runner's stdin (the harness's own stdin may
    // already be /dev/null, which would prove nothing).
    let dir = tempfile::tempdir().unwrap();
    let (reader, mut writer) = std::io::pipe().unwrap();
    writer.write_all(b"a line gator must never read\n").unwrap();
    drop(writer);
    let name = "stdin_is_dev_null_even_when_the_runner_reads_a_pipe";
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name, "--nocapture", "--test-threads", "1"])
        .env(STDIN_CHILD, dir.path())
        .stdin(reader)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("1 passed"),
        "the child ran the test: {stdout}"
    );
}

#[test]
fn missing_binary_is_a_spawn_error() {
    let dir = tempfile::tempdir().unwrap();
    let error = GatorRunner::new(dir.path().join("nope"))
        .test(&input(dir.path()))
        .unwrap_err();
    assert!(matches!(error, RunError::Spawn { .. }), "{error:?}");
}

#[test]
fn only_the_configured_environment_reaches_gator() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("env.txt");
    let gator = stand_in(
        dir.path(),
        &format!("env | sort > '{}'\nprintf null", out.display()),
    );
    GatorRunner::new(&gator)
        .with_work_dir(dir.path())
        .with_env("EXTRA", "1")
        .test(&input(dir.path()))
        .unwrap();
    let env = std::fs::read_to_string(out).unwrap();
    let names: Vec<&str> = env
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, _)| k))
        .filter(|k| !matches!(*k, "PWD" | "SHLVL" | "_" | "OLDPWD"))
        .collect();
    assert_eq!(names, ["EXTRA", "HOME", "PATH"], "{env}");
}
