//! Small helpers shared by the xtask commands: locating the workspace and running cargo.

use std::path::PathBuf;
use std::process::{Command, Stdio};

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
    run(cargo_command().args(args))
}

/// Runs `cargo ARGS` in the workspace root with `env` set, failing when it fails.
pub(crate) fn cargo_with_env(args: &[&str], env: &[(&str, &str)]) -> Result<()> {
    run(cargo_command().args(args).envs(env.iter().copied()))
}

/// The cargo that runs this xtask, without the variables `cargo run` set for xtask itself: a
/// build script that reads one of them (`ring`'s reads `CARGO_MANIFEST_DIR`) would otherwise
/// run again, and rebuild what depends on it, whenever plain cargo and xtask take turns.
fn cargo_command() -> Command {
    let mut command = Command::new(cargo_bin());
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if name.starts_with("CARGO_PKG_") || SET_BY_CARGO_RUN.contains(&name.as_ref()) {
            command.env_remove(name.as_ref());
        }
    }
    command
}

/// The variables besides `CARGO_PKG_*` that `cargo run` sets for the program it runs.
const SET_BY_CARGO_RUN: [&str; 5] = [
    "CARGO_MANIFEST_DIR",
    "CARGO_MANIFEST_PATH",
    "CARGO_CRATE_NAME",
    "CARGO_BIN_NAME",
    "CARGO_PRIMARY_PACKAGE",
];

/// Runs `cargo ARGS` in the workspace root (stderr shown) and returns whether it succeeded and
/// its standard output.
pub(crate) fn cargo_stdout(args: &[&str]) -> Result<(bool, String)> {
    let mut command = cargo_command();
    command
        .args(args)
        .current_dir(root())
        .stdin(Stdio::null())
        .stderr(Stdio::inherit());
    eprintln!("$ {}", describe(&command));
    let output = command
        .output()
        .with_context(|| format!("failed to start {}", describe(&command)))?;
    Ok((
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    ))
}

/// Every test of the workspace, with nextest when it is installed (each test in its own
/// process), else with `cargo test`.
pub(crate) fn tests_of_workspace() -> Result<()> {
    if has_nextest() {
        cargo(&[
            "nextest",
            "run",
            "--workspace",
            "--locked",
            "--no-fail-fast",
        ])
    } else {
        cargo(&["test", "--workspace", "--locked", "--no-fail-fast"])
    }
}

/// The integration tests `targets` of `package`, with `env` set, with nextest when it is
/// installed, else with `cargo test`.
pub(crate) fn tests(package: &str, targets: &[&str], env: &[(&str, &str)]) -> Result<()> {
    let runner: &[&str] = if has_nextest() {
        &["nextest", "run", "--no-fail-fast"]
    } else {
        &["test", "--no-fail-fast"]
    };
    let mut command = cargo_command();
    command
        .args(runner)
        .args(["--locked", "--package", package]);
    for target in targets {
        command.args(["--test", target]);
    }
    command.envs(env.iter().copied());
    run(&mut command)
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
fn cargo_bin() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string())
}

/// Whether `cargo nextest` is installed.
fn has_nextest() -> bool {
    cargo_command()
        .args(["nextest", "--version"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

fn describe(command: &Command) -> String {
    let mut text: String = command
        .get_envs()
        .filter_map(|(key, value)| {
            Some(format!(
                "{}={} ",
                key.to_string_lossy(),
                value?.to_string_lossy()
            ))
        })
        .collect();
    text.push_str(&command.get_program().to_string_lossy());
    for arg in command.get_args() {
        text.push(' ');
        text.push_str(&arg.to_string_lossy());
    }
    text
}
