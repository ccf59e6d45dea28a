//! A pinned PyPI package in a project-local virtual environment, installed on first use and
//! reused after: how the tests get the Helm v4 engine (`helm-python-sdk`) and OPA
//! (`opa-golib-python-bindings`) without a system-wide install.
//!
//! The venv lives at the workspace root (git-ignored). It is ready when its Python imports the
//! package's module and reports the pinned version; otherwise it is created and the package
//! installed with pip (PyPI must be reachable that once). Concurrent test processes install it
//! once: the first holds a lock while the others wait, then find it ready.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};
use serde::de::DeserializeOwned;

use crate::{process, workspace};

/// One pinned package and the venv it goes into.
#[derive(Debug, Clone, Copy)]
pub struct PinnedPackage {
    /// The venv's folder at the workspace root, e.g. `.venv-helm`.
    pub venv: &'static str,
    /// The distribution's name on PyPI.
    pub distribution: &'static str,
    /// The pinned version.
    pub version: &'static str,
    /// The Python module the package provides (imported to prove it loads).
    pub module: &'static str,
    /// Extra `pip install` arguments.
    pub pip_args: &'static [&'static str],
}

impl PinnedPackage {
    /// `name==version`, as pip takes it.
    pub fn requirement(&self) -> String {
        format!("{}=={}", self.distribution, self.version)
    }

    /// The venv's Python with the package importable at its pinned version, installing it first
    /// when needed.
    pub fn python(&self) -> Result<PathBuf> {
        let venv = workspace::root().join(self.venv);
        let python = venv.join("bin/python");
        if self.ready(&python) {
            return Ok(python);
        }
        let _lock = workspace::lock(self.venv.trim_start_matches('.'))?;
        if self.ready(&python) {
            return Ok(python);
        }
        eprintln!("installing {} into {}/", self.requirement(), self.venv);
        if !python.exists() {
            let created = Command::new("python3")
                .args(["-m", "venv"])
                .arg(&venv)
                .output();
            if !created.as_ref().is_ok_and(|o| o.status.success()) {
                bail!(
                    "`python3 -m venv {}` failed ({}): {} needs python3 with its venv module \
                     (Debian: `apt-get install python3-venv`)",
                    self.venv,
                    describe(&created),
                    self.requirement()
                );
            }
        }
        let installed = process::output_within(
            Command::new(&python)
                .args([
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--disable-pip-version-check",
                ])
                .args(self.pip_args)
                .arg(self.requirement()),
            process::INSTALL_LIMIT,
        );
        if !installed.as_ref().is_ok_and(|o| o.status.success()) {
            bail!(
                "failed to install {} into {}/ ({}; PyPI must be reachable once, later runs \
                 reuse the venv)",
                self.requirement(),
                self.venv,
                describe(&installed)
            );
        }
        if !self.ready(&python) {
            bail!(
                "{}/ does not import {} {} after installing it; remove {}/ and retry",
                self.venv,
                self.module,
                self.version,
                self.venv
            );
        }
        Ok(python)
    }

    /// Whether `python` imports the module and has the pinned version installed.
    fn ready(&self, python: &Path) -> bool {
        Command::new(python)
            .args(["-c", &self.probe()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    /// Python that exits 0 only when the module loads and the distribution is the pinned version.
    fn probe(&self) -> String {
        format!(
            "import importlib.metadata, sys, {}; sys.exit(importlib.metadata.version({:?}) != {:?})",
            self.module, self.distribution, self.version
        )
    }
}

/// Runs the driver `python/<script>` of this crate with `python`, the JSON `request` on its
/// stdin, and reads its answer, JSON on stdout.
pub fn call_script<T: DeserializeOwned>(
    python: &Path,
    script: &str,
    request: &serde_json::Value,
) -> Result<T> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("python")
        .join(script);
    let mut child = Command::new(python)
        .arg(&path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("failed to start {}", path.display()))?;
    child
        .stdin
        .take()
        .context("no stdin for the driver")?
        .write_all(request.to_string().as_bytes())
        .with_context(|| format!("failed to write to {}", path.display()))?;
    let output = child.wait_with_output()?;
    if !output.status.success() {
        bail!(
            "{} failed ({}):\n{}",
            path.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    serde_json::from_slice(&output.stdout)
        .with_context(|| format!("{} printed no JSON answer", path.display()))
}

/// A failed command's exit status and the end of its stderr.
fn describe(output: &std::io::Result<std::process::Output>) -> String {
    match output {
        Err(error) if error.kind() == std::io::ErrorKind::TimedOut => error.to_string(),
        Err(error) => format!("cannot start it: {error}"),
        Ok(output) => {
            let stderr = String::from_utf8_lossy(&output.stderr);
            let tail: Vec<&str> = stderr.lines().rev().take(5).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            format!("{}: {}", output.status, tail.join(" / "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PACKAGE: PinnedPackage = PinnedPackage {
        venv: ".venv-x",
        distribution: "some-dist",
        version: "1.2.3",
        module: "some_module",
        pip_args: &[],
    };

    #[test]
    fn the_probe_imports_the_module_and_compares_the_distributions_version() {
        assert_eq!(PACKAGE.requirement(), "some-dist==1.2.3");
        assert_eq!(
            PACKAGE.probe(),
            "import importlib.metadata, sys, some_module; \
             sys.exit(importlib.metadata.version(\"some-dist\") != \"1.2.3\")"
        );
    }

    #[test]
    fn a_python_that_does_not_exist_is_not_ready() {
        assert!(!PACKAGE.ready(Path::new("/nonexistent/bin/python")));
    }
}
