//! `cargo xtask opa-diff [--record]`: the embedded engine against real OPA on a corpus of small
//! Rego v1 policies (`fixtures/opa-diff/cases/*.rego`, each with an optional `<name>.json`
//! input).
//!
//! OPA runs from the PyPI package `opa-golib-python-bindings` ([`PACKAGE`], OPA v1.20.2 inside),
//! installed once into the project-local virtual environment `.venv-opa/` (git-ignored; the
//! package declares Python 3.14 but only loads its Go library through `ctypes`, so it is
//! installed with `--ignore-requires-python` for the Python the machine has).
//!
//! Two checks:
//! - OPA's answers equal the recorded `fixtures/opa-diff/opa-answers.json` (`--record` rewrites
//!   it), so the Rust test `crates/gatekeeper-engine/tests/opa_diff.rs` compares the engine
//!   with OPA on every `cargo test`, Python or not;
//! - every answer of the engine agrees with OPA's, except the differences listed in
//!   `fixtures/opa-diff/known-differences.json` (each must still differ, with the engine
//!   giving the listed value; README's "Known differences from gator" explains them).
//!
//! `cargo xtask test` runs it when `python3` is available.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};
use gatekeeper_engine::rego::{
    Answers, Case, KnownDifference, answer_corpus, differences, read_corpus,
};
use serde_json::json;

use crate::util;

/// The pinned reference package.
const PACKAGE: &str = "opa-golib-python-bindings==0.4.4";
/// Its Python module, checked after installing.
const MODULE: &str = "opa_bindings";
/// The virtual environment, at the repository root.
const VENV: &str = ".venv-opa";
/// The corpus.
const CASES: &str = "fixtures/opa-diff/cases";
/// OPA's recorded answers.
const ANSWERS: &str = "fixtures/opa-diff/opa-answers.json";
/// The differences the engine keeps on purpose.
const KNOWN: &str = "fixtures/opa-diff/known-differences.json";

/// Runs the check; `--record` rewrites the recorded answers from OPA.
pub(crate) fn run(args: &[&str]) -> Result<()> {
    let record = match args {
        [] => false,
        ["--record"] => true,
        _ => bail!("usage: cargo xtask opa-diff [--record]"),
    };
    let root = util::root();
    let cases = read_corpus(&root.join(CASES)).map_err(anyhow::Error::msg)?;
    let ours = answer_corpus(&cases).map_err(anyhow::Error::msg)?;
    let python = venv_python(&root)?;
    let opa = opa_answers(&python, &cases, &ours)?;
    let recorded_path = root.join(ANSWERS);
    if record {
        std::fs::write(&recorded_path, serde_json::to_string_pretty(&opa)? + "\n")
            .with_context(|| format!("failed to write {ANSWERS}"))?;
        eprintln!("opa-diff: recorded OPA's answers in {ANSWERS}");
    } else {
        let recorded: Answers = read_json(&recorded_path)?;
        if recorded != opa {
            bail!("{ANSWERS} is not what OPA answers now: run `cargo xtask opa-diff --record`");
        }
    }
    let known: Vec<KnownDifference> = read_json(&root.join(KNOWN))?;
    let problems = differences(&ours, &opa, &known);
    if !problems.is_empty() {
        bail!(
            "the embedded engine and OPA differ:\n  {}",
            problems.join("\n  ")
        );
    }
    let rules: usize = ours.values().map(BTreeMap::len).sum();
    eprintln!(
        "opa-diff: {rules} rules in {} cases agree with OPA ({} known differences)",
        cases.len(),
        known.len()
    );
    Ok(())
}

/// Whether `cargo xtask test` can run the check here.
pub(crate) fn available() -> bool {
    Command::new("python3")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("failed to read {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("{} is not valid", path.display()))
}

/// The venv's Python with the pinned package, installed when missing.
fn venv_python(root: &Path) -> Result<PathBuf> {
    let venv = root.join(VENV);
    let python = venv.join("bin/python");
    let ready = |python: &Path| {
        Command::new(python)
            .args(["-c", &format!("import {MODULE}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if ready(&python) {
        return Ok(python);
    }
    eprintln!("opa-diff: installing {PACKAGE} into {VENV}/");
    if !python.exists() {
        util::run(Command::new("python3").args(["-m", "venv"]).arg(&venv))
            .with_context(|| format!("`python3 -m venv {VENV}` failed (Debian: python3-venv)"))?;
    }
    util::run(Command::new(&python).args([
        "-m",
        "pip",
        "install",
        "--quiet",
        "--ignore-requires-python",
        PACKAGE,
    ]))
    .context("failed to install the OPA bindings (PyPI must be reachable once)")?;
    if !ready(&python) {
        bail!("{VENV}/ does not import {MODULE} after installing it; remove {VENV}/ and retry");
    }
    Ok(python)
}

/// OPA's answers for every rule the engine evaluated.
fn opa_answers(python: &Path, cases: &[Case], ours: &Answers) -> Result<Answers> {
    let request = json!({"cases": cases.iter().map(|case| json!({
        "name": case.name,
        "package": case.package,
        "source": case.source,
        "input": case.input,
        "rules": ours.get(&case.name).map(|r| r.keys().cloned().collect::<Vec<_>>()).unwrap_or_default(),
    })).collect::<Vec<_>>()});
    let mut child = Command::new(python)
        .args(["-c", include_str!("opa_diff.py")])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .context("failed to start the OPA driver")?;
    child
        .stdin
        .take()
        .context("no stdin for the OPA driver")?
        .write_all(request.to_string().as_bytes())?;
    let output = child.wait_with_output()?;
    if !output.status.success() {
        bail!("the OPA driver failed ({})", output.status);
    }
    serde_json::from_slice(&output.stdout).context("the OPA driver's answers are not JSON")
}
