//! The binaries that ship (`workload-report`, which the chart runs, and `jobcheck`), built by
//! cargo for this test run's profile and target directory (a no-op when `cargo test --workspace`
//! has built them already), and run with an explicit environment.
//!
//! A test crate cannot name another package's binary (`CARGO_BIN_EXE_*` is for the package's
//! own), so it asks cargo: `cargo build -p workload-report --message-format json` says where the
//! executable is. The nested cargo runs without the variables cargo sets for a test process, so
//! it sees the environment the outer build saw and finds the binary fresh.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::workspace;

/// The package and binary name of the report.
pub const PACKAGE: &str = "workload-report";

/// The built `workload-report` (built once per process). Panics with cargo's output when it does
/// not build.
pub fn workload_report() -> &'static Path {
    static BINARY: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    built(&BINARY, PACKAGE)
}

/// The built `jobcheck` (built once per process), like [`workload_report`].
pub fn jobcheck() -> &'static Path {
    static BINARY: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    built(&BINARY, "jobcheck")
}

fn built<'a>(cell: &'a OnceLock<Result<PathBuf, String>>, package: &str) -> &'a Path {
    match cell.get_or_init(|| build(package).map_err(|e| format!("{e:#}"))) {
        Ok(path) => path,
        Err(error) => panic!("cannot build {package}: {error}"),
    }
}

/// The cargo profile of this test run: the name of the folder above `deps/`, where cargo put the
/// test executable (`debug` is the `dev` profile).
fn profile() -> String {
    let exe = std::env::current_exe().unwrap_or_default();
    let folder = exe
        .parent()
        .and_then(Path::parent)
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match folder.as_str() {
        "debug" | "" => "dev".into(),
        other => other.into(),
    }
}

fn build(package: &str) -> Result<PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| env!("CARGO").to_string());
    let target_dir = test_support::real::tools::target_dir();
    let mut command = Command::new(&cargo);
    for (name, _) in std::env::vars_os() {
        if set_by_cargo_for_tests(&name.to_string_lossy()) {
            command.env_remove(&name);
        }
    }
    let output = command
        .args(["build", "--quiet", "--locked", "--message-format", "json"])
        .args([
            "--package",
            package,
            "--bin",
            package,
            "--profile",
            &profile(),
        ])
        .arg("--target-dir")
        .arg(&target_dir)
        .current_dir(workspace::root())
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("failed to start {cargo}"))?;
    if !output.status.success() {
        bail!(
            "`cargo build -p {package}` failed ({}):\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|message| message["target"]["name"] == package)
        .find_map(|message| message["executable"].as_str().map(PathBuf::from))
        .with_context(|| format!("`cargo build -p {package}` named no executable"))
}

/// Whether cargo (or nextest) sets the variable for a test process. Passed on, such variables
/// would make the nested build differ from the outer one (`ring`'s build script reruns when
/// `CARGO_MANIFEST_DIR` changes), rebuilding half the workspace on every test run.
fn set_by_cargo_for_tests(name: &str) -> bool {
    const NAMES: [&str; 9] = [
        "CARGO",
        "CARGO_MANIFEST_DIR",
        "CARGO_MANIFEST_PATH",
        "CARGO_CRATE_NAME",
        "CARGO_BIN_NAME",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_TARGET_TMPDIR",
        "CARGO_RUSTC_CURRENT_DIR",
        "OUT_DIR",
    ];
    const PREFIXES: [&str; 3] = ["CARGO_PKG_", "CARGO_BIN_EXE_", "NEXTEST"];
    NAMES.contains(&name) || PREFIXES.iter().any(|prefix| name.starts_with(prefix))
}

/// One finished run of the binary.
#[derive(Debug)]
pub struct Output {
    /// The exit code (`None` when a signal ended it).
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: String,
    /// Standard output, then standard error, for failure messages.
    pub text: String,
}

/// Runs `workload-report ARGS` from the workspace root with exactly `env` (and `PATH`).
pub fn run(args: &[&str], env: &BTreeMap<String, String>) -> Result<Output> {
    let output = Command::new(workload_report())
        .args(args)
        .current_dir(workspace::root())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(env)
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("failed to run {PACKAGE}"))?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let text = format!("{stdout}{}", String::from_utf8_lossy(&output.stderr));
    Ok(Output {
        code: output.status.code(),
        stdout,
        text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variables_cargo_sets_for_a_test_are_not_passed_on_and_others_are() {
        for name in [
            "CARGO_MANIFEST_DIR",
            "CARGO_PKG_NAME",
            "CARGO_BIN_EXE_x",
            "NEXTEST_RUN_ID",
        ] {
            assert!(set_by_cargo_for_tests(name), "{name}");
        }
        for name in ["CARGO_TARGET_DIR", "CARGO_HOME", "RUSTFLAGS", "PATH"] {
            assert!(!set_by_cargo_for_tests(name), "{name}");
        }
    }
}
