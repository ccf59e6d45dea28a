//! Real Helm: a `helm` binary on PATH (`helm template`) when there is one, otherwise the Helm v4
//! engine of the PyPI package `helm-python-sdk` (pinned, [`SDK`]), installed on first use into
//! the project-local venv `.venv-helm/` and driven by `python/render_chart.py`.
//! `CHART_HELM=sdk` or `CHART_HELM=binary` forces one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::release::{Release, parse_docs};
use crate::venv::{self, PinnedPackage};

/// The Helm SDK used without a `helm` binary.
pub const SDK: PinnedPackage = PinnedPackage {
    venv: ".venv-helm",
    distribution: "helm-python-sdk",
    version: "0.2.2",
    module: "helm_python",
    pip_args: &[],
};

/// The variable that forces a renderer: `binary` or `sdk`.
pub const FORCE_ENV: &str = "CHART_HELM";

/// One release to render: its case name, release name, namespace and values.
#[derive(Debug, Clone)]
pub struct RenderCase {
    /// The case's name (the key of its result).
    pub name: String,
    /// The Helm release name.
    pub release: String,
    /// The release namespace.
    pub namespace: String,
    /// The values.
    pub values: Value,
}

/// A render's outcome: the release, or Helm's error message.
pub type Rendered = Result<Release, String>;

/// How the chart is rendered.
#[derive(Debug, Clone)]
pub enum Helm {
    /// `helm template` of the binary on PATH.
    Binary,
    /// The SDK's Python in its venv.
    Sdk {
        /// The venv's Python.
        python: PathBuf,
    },
}

impl Helm {
    /// `helm` on PATH, else the pinned SDK (installed when missing), or what [`FORCE_ENV`] says.
    pub fn find() -> Result<Helm> {
        let forced = std::env::var(FORCE_ENV).unwrap_or_default();
        match forced.as_str() {
            "binary" if has_binary() => Ok(Helm::Binary),
            "binary" => bail!("{FORCE_ENV}=binary, but no working `helm` on PATH"),
            "" if has_binary() => Ok(Helm::Binary),
            "" | "sdk" => {
                let python = SDK.python().context(
                    "no `helm` on PATH, and the Helm SDK cannot be installed: put helm on \
                     PATH, or make python3 with venv available",
                )?;
                Ok(Helm::Sdk { python })
            }
            other => bail!("{FORCE_ENV} must be `binary` or `sdk`, not {other:?}"),
        }
    }

    /// What renders, for messages.
    pub fn describe(&self) -> String {
        match self {
            Helm::Binary => "the helm binary on PATH".into(),
            Helm::Sdk { .. } => format!("{} (Helm v4 engine) in {}/", SDK.requirement(), SDK.venv),
        }
    }

    /// `helm template` does not render NOTES.txt; the SDK does.
    pub fn renders_notes(&self) -> bool {
        matches!(self, Helm::Sdk { .. })
    }

    /// Renders `chart` for every case; a failed render is `Err(helm's message)`.
    pub fn render(&self, chart: &Path, cases: &[RenderCase]) -> Result<BTreeMap<String, Rendered>> {
        match self {
            Helm::Binary => render_with_binary(chart, cases),
            Helm::Sdk { python } => render_with_sdk(python, chart, cases),
        }
    }
}

fn has_binary() -> bool {
    Command::new("helm")
        .args(["version", "--short"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn render_with_binary(chart: &Path, cases: &[RenderCase]) -> Result<BTreeMap<String, Rendered>> {
    let dir = tempfile::tempdir()?;
    let mut out = BTreeMap::new();
    for (index, case) in cases.iter().enumerate() {
        let file = dir.path().join(format!("{index}.json"));
        std::fs::write(&file, serde_json::to_vec(&case.values)?)?;
        let output = Command::new("helm")
            .args(["template", &case.release])
            .arg(chart)
            .args(["--namespace", &case.namespace, "--values"])
            .arg(&file)
            .stdin(Stdio::null())
            .output()
            .context("failed to run helm template")?;
        let result = if output.status.success() {
            Ok(Release {
                objects: parse_docs(&String::from_utf8_lossy(&output.stdout))
                    .with_context(|| format!("case {}", case.name))?,
                notes: None,
            })
        } else {
            Err(String::from_utf8_lossy(&output.stderr).into_owned())
        };
        out.insert(case.name.clone(), result);
    }
    Ok(out)
}

#[derive(Deserialize)]
struct SdkResponse {
    cases: Vec<SdkCase>,
}

#[derive(Deserialize)]
struct SdkCase {
    name: String,
    ok: bool,
    #[serde(default)]
    manifests: BTreeMap<String, String>,
    #[serde(default)]
    error: String,
}

fn render_with_sdk(
    python: &Path,
    chart: &Path,
    cases: &[RenderCase],
) -> Result<BTreeMap<String, Rendered>> {
    let request = json!({
        "chart": chart,
        "cases": cases.iter().map(|case| json!({
            "name": case.name, "release": case.release, "namespace": case.namespace,
            "values": case.values
        })).collect::<Vec<_>>()
    });
    let response: SdkResponse = venv::call_script(python, "render_chart.py", &request)?;
    let mut out = BTreeMap::new();
    for case in response.cases {
        let result = if case.ok {
            Ok(sdk_release(&case)?)
        } else {
            Err(case.error)
        };
        out.insert(case.name, result);
    }
    Ok(out)
}

/// The objects of every rendered template, NOTES.txt apart.
fn sdk_release(case: &SdkCase) -> Result<Release> {
    let mut objects = Vec::new();
    let mut notes = None;
    for (path, text) in &case.manifests {
        if path.ends_with("NOTES.txt") {
            notes = Some(text.clone());
        } else {
            objects.extend(parse_docs(text).with_context(|| format!("{}: {path}", case.name))?);
        }
    }
    Ok(Release { objects, notes })
}

/// What [`release_action`] does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReleaseAction {
    /// `helm install --create-namespace`.
    Install,
    /// `helm upgrade` (the values given replace the release's).
    Upgrade,
    /// `helm uninstall --wait`.
    Uninstall,
}

#[derive(Deserialize)]
struct ReleaseResponse {
    ok: bool,
    #[serde(default)]
    error: String,
}

/// Installs, upgrades or uninstalls `release` of `chart` in the cluster of `kubeconfig` with the
/// pinned SDK (`python/helm_release.py`); Helm's error as the error.
pub fn release_action(
    action: ReleaseAction,
    kubeconfig: &Path,
    chart: &Path,
    release: &str,
    namespace: &str,
    values: &Value,
) -> Result<()> {
    let python = SDK.python()?;
    let action_name = match action {
        ReleaseAction::Install => "install",
        ReleaseAction::Upgrade => "upgrade",
        ReleaseAction::Uninstall => "uninstall",
    };
    let request = json!({
        "action": action_name, "kubeconfig": kubeconfig, "chart": chart,
        "release": release, "namespace": namespace, "values": values
    });
    let response: ReleaseResponse = venv::call_script(&python, "helm_release.py", &request)?;
    if !response.ok {
        bail!("helm {action_name} {release}: {}", response.error);
    }
    Ok(())
}
