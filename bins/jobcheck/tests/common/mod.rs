//! Running the `jobcheck` binary from the workspace root, as the end-to-end tests do.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The workspace root (fixture paths are relative to it).
pub(crate) fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs `jobcheck ARGS` in the workspace root with `stdin` as its standard input (empty for
/// `None`) and no regions file from the environment.
pub(crate) fn jobcheck_with_stdin(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_jobcheck"))
        .args(args)
        .current_dir(root())
        .env_remove("JOBCHECK_REGIONS_FILE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("jobcheck starts");
    let mut input = child.stdin.take().expect("stdin is piped");
    input
        .write_all(stdin.unwrap_or("").as_bytes())
        .expect("write stdin");
    drop(input);
    child.wait_with_output().expect("jobcheck runs")
}
