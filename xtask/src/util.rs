//! Small helpers shared by the xtask commands: locating the workspace and running cargo.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, Result, bail};

/// The workspace root (the parent of `xtask/`).
pub(crate) fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_path_buf()
}

/// Runs `cargo ARGS` in the workspace root, failing when it fails.
pub(crate) fn cargo(args: &[&str]) -> Result<()> {
    run(Command::new(cargo_bin()).args(args))
}

/// Runs a prepared command in the workspace root, echoing it first.
pub(crate) fn run(command: &mut Command) -> Result<()> {
    command.current_dir(root());
    eprintln!("$ {}", describe(command));
    let status = command
        .status()
        .with_context(|| format!("failed to start {}", describe(command)))?;
    if !status.success() {
        bail!("{} failed with {status}", describe(command));
    }
    Ok(())
}

/// The cargo that runs this xtask.
pub(crate) fn cargo_bin() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string())
}

/// Whether `cargo nextest` is installed.
pub(crate) fn has_nextest() -> bool {
    Command::new(cargo_bin())
        .args(["nextest", "--version"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

fn describe(command: &Command) -> String {
    let mut text = command.get_program().to_string_lossy().into_owned();
    for arg in command.get_args() {
        text.push(' ');
        text.push_str(&arg.to_string_lossy());
    }
    text
}
