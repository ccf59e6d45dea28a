//! The official LogQL and PromQL grammars (npm `@grafana/lezer-logql`, Grafana's own, and
//! `@prometheus-io/lezer-promql`, Prometheus'), run with the machine's `node`: every query the
//! chart renders must parse with them, after Grafana's variables are filled in as Grafana would.
//!
//! The packages are installed once, pinned, into `.npm-grammars/` at the workspace root
//! (git-ignored) and reused after; concurrent test processes install them once under a lock.
//! The registry must be reachable that once.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use serde_json::json;

use crate::{process, workspace};

/// The install folder at the workspace root.
const FOLDER: &str = ".npm-grammars";
/// The pinned packages.
const PACKAGES: [(&str, &str); 2] = [
    ("@grafana/lezer-logql", "0.3.0"),
    ("@prometheus-io/lezer-promql", "0.315.0"),
];

/// Which grammar an expression is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    /// Loki's query language.
    LogQl,
    /// Prometheus' query language.
    PromQl,
}

impl Language {
    fn name(self) -> &'static str {
        match self {
            Language::LogQl => "logql",
            Language::PromQl => "promql",
        }
    }
}

/// How one expression parsed.
#[derive(Debug, Clone, Deserialize)]
pub struct Parsed {
    /// The tree's top node (`LogQL` or `PromQL` when the grammar took it).
    pub top: String,
    /// Byte offsets of the grammar's error nodes; empty when the expression parses.
    pub errors: Vec<usize>,
}

impl Parsed {
    /// Whether the grammar took the whole expression.
    pub fn is_valid(&self, language: Language) -> bool {
        let top = match language {
            Language::LogQl => "LogQL",
            Language::PromQl => "PromQL",
        };
        self.errors.is_empty() && self.top == top
    }
}

/// Parses each `(language, expression)` with the official grammar, in order.
pub fn parse(queries: &[(Language, String)]) -> Result<Vec<Parsed>> {
    let folder = installed()?;
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("node/parse_queries.cjs");
    let request = json!({
        "queries": queries
            .iter()
            .map(|(language, expr)| json!({"lang": language.name(), "expr": expr}))
            .collect::<Vec<_>>()
    });
    let mut child = Command::new("node")
        .arg(&script)
        .arg(&folder)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot start `node` (the grammar checks need Node.js on PATH)")?;
    child
        .stdin
        .take()
        .context("no stdin for node")?
        .write_all(request.to_string().as_bytes())?;
    let output = child.wait_with_output()?;
    if !output.status.success() {
        bail!(
            "{} failed ({}): {}",
            script.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let parsed: Vec<Parsed> =
        serde_json::from_slice(&output.stdout).context("the grammar driver printed no JSON")?;
    if parsed.len() != queries.len() {
        bail!("{} answers for {} queries", parsed.len(), queries.len());
    }
    Ok(parsed)
}

/// An expression with Grafana's variables filled in as Grafana sends them to Loki or
/// Prometheus: a regex for multi-value and All variables, a duration for `$__range` and
/// `$__interval`.
pub fn fill_grafana_variables(expr: &str) -> String {
    // Longest names first, so `$__range` is not read as `$__r…` of another variable.
    [
        ("${__range}", "86400s"),
        ("$__range", "86400s"),
        ("$__interval", "1h"),
        ("$cluster", "dev"),
        ("$team", "(infra|web)"),
        ("$namespace", ".+"),
        ("$run", "20261201T073000Z"),
    ]
    .iter()
    .fold(expr.to_string(), |text, (name, value)| {
        text.replace(name, value)
    })
}

/// The install folder with the pinned packages, installing them first when needed.
fn installed() -> Result<PathBuf> {
    let folder = workspace::root().join(FOLDER);
    if ready(&folder) {
        return Ok(folder);
    }
    let _lock = workspace::lock(FOLDER.trim_start_matches('.'))?;
    if ready(&folder) {
        return Ok(folder);
    }
    std::fs::create_dir_all(&folder)
        .with_context(|| format!("cannot create {}", folder.display()))?;
    eprintln!("installing the LogQL and PromQL grammars into {FOLDER}/");
    let specs: Vec<String> = PACKAGES
        .iter()
        .map(|(name, version)| format!("{name}@{version}"))
        .collect();
    let output = process::output_within(
        Command::new("npm")
            .args([
                "install",
                "--no-audit",
                "--no-fund",
                "--no-save",
                "--prefix",
            ])
            .arg(&folder)
            .args(&specs),
        process::INSTALL_LIMIT,
    );
    match output {
        Ok(output) if output.status.success() && ready(&folder) => Ok(folder),
        Ok(output) => bail!(
            "`npm install --prefix {FOLDER} {}` failed ({}): {} (the npm registry must be \
             reachable once; later runs reuse {FOLDER}/)",
            specs.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ),
        Err(error) if error.kind() == std::io::ErrorKind::TimedOut => bail!(
            "`npm install --prefix {FOLDER} {}` {error} (is the npm registry reachable?)",
            specs.join(" ")
        ),
        Err(error) => bail!(
            "cannot run npm ({error}): the grammar checks need Node.js and npm on PATH \
             (Debian: `apt-get install nodejs npm`)"
        ),
    }
}

/// Whether every pinned package is installed at its version.
fn ready(folder: &Path) -> bool {
    PACKAGES.iter().all(|(name, version)| {
        let manifest = folder.join("node_modules").join(name).join("package.json");
        std::fs::read_to_string(manifest)
            .ok()
            .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
            .is_some_and(|m| m["version"] == *version)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_are_filled_as_grafana_sends_them() {
        assert_eq!(
            fill_grafana_variables(
                r#"sum(last_over_time({cluster=~"$cluster", team=~"$team"} | json | runId=~"$run" | unwrap total [$__range]))"#
            ),
            r#"sum(last_over_time({cluster=~"dev", team=~"(infra|web)"} | json | runId=~"20261201T073000Z" | unwrap total [86400s]))"#
        );
    }
}
