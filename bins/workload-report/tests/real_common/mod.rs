//! Helpers of the real-server tests of `workload-report run`: the demo configuration pointed at
//! a real Loki, runs of the binary with an explicit environment, and `--out` directories with the
//! run id and clock values normalized so two runs compare.

#![allow(dead_code, unreachable_pub)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The teams of the demo configuration that receive a message.
pub const TEAMS: [&str; 3] = ["infra", "payments", "raster"];
/// The tenant every run pushes to.
pub const TENANT: &str = "demo";
/// The Loki `job` label of the demo configuration.
pub const JOB: &str = "gatekeeper-workload-report";

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn demo_cluster() -> PathBuf {
    root().join("fixtures/demo/cluster")
}

/// The demo config, pushing to `loki` (tenant [`TENANT`]) when given, with `extra` appended.
pub fn write_config(dir: &Path, name: &str, loki: Option<&str>, extra: &str) -> PathBuf {
    let mut text = std::fs::read_to_string(root().join("fixtures/demo/config.yaml")).unwrap();
    text = text.replace("loki:\n  job: gatekeeper-workload-report\n", "");
    if let Some(url) = loki {
        text.push_str(&format!(
            "loki:\n  url: {url}\n  job: {JOB}\n  tenant: {TENANT}\n"
        ));
    }
    text.push_str("timeouts:\n  api: 10s\n  post: 5s\n  engine: 120s\n");
    text.push_str(extra);
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// What a run printed.
pub struct Outcome {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Outcome {
    /// The run line (the last JSON line on stdout).
    pub fn run_line(&self) -> Value {
        let line = self
            .stdout
            .lines()
            .rev()
            .find(|l| l.starts_with('{'))
            .unwrap_or_else(|| panic!("no run line:\n{}\n{}", self.stdout, self.stderr));
        serde_json::from_str(line).unwrap()
    }

    /// Panics with the output unless the run exited `code`.
    pub fn expect_code(&self, code: i32) -> &Outcome {
        assert_eq!(self.code, code, "{}\n{}", self.stdout, self.stderr);
        self
    }
}

/// Runs the binary with only `PATH`, dummy webhooks for every team and `env`.
pub fn run(args: &[&str], env: &[(&str, &str)]) -> Outcome {
    let mut command = Command::new(env!("CARGO_BIN_EXE_workload-report"));
    command
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .current_dir(root());
    for team in TEAMS {
        command.env(
            format!("{}_WEBHOOK", team.to_ascii_uppercase()),
            "https://hooks.slack.com/services/T0/B0/not-used-in-a-dry-run",
        );
    }
    let output = command.envs(env.iter().copied()).output().unwrap();
    Outcome {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// A dry run of `source_args` (`--snapshot X` or `--kubeconfig K --context C`) writing `--out`.
pub fn dry_run(config: &Path, source_args: &[&str], out: &Path, more: &[&str]) -> Outcome {
    let mut args = vec!["run", "--config", config.to_str().unwrap()];
    args.extend_from_slice(source_args);
    args.extend_from_slice(&["--dry-run", "--out", out.to_str().unwrap()]);
    args.extend_from_slice(more);
    run(&args, &[])
}

/// Every file of an `--out` directory as JSON, with the run id replaced by `<RUN_ID>`, Loki
/// timestamps by `<TS>`, `startedAt`/`finishedAt` removed, and Loki lines parsed.
pub fn normalized_out(dir: &Path) -> BTreeMap<String, Value> {
    let run: Value = read_json(&dir.join("run.json"));
    let run_id = run["runId"].as_str().unwrap().to_string();
    let mut files = BTreeMap::new();
    for entry in walkdir(dir) {
        let name = entry
            .strip_prefix(dir)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let text = std::fs::read_to_string(&entry)
            .unwrap()
            .replace(&run_id, "<RUN_ID>");
        let mut value: Value = serde_json::from_str(&text).unwrap();
        if name == "loki.json" {
            for stream in value["streams"].as_array_mut().unwrap() {
                for pair in stream["values"].as_array_mut().unwrap() {
                    let line: Value = serde_json::from_str(pair[1].as_str().unwrap()).unwrap();
                    *pair = Value::Array(vec!["<TS>".into(), line]);
                }
            }
        }
        strip_times(&mut value);
        files.insert(name, value);
    }
    files
}

fn strip_times(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("startedAt");
            map.remove("finishedAt");
            map.values_mut().for_each(strip_times);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_times),
        _ => {}
    }
}

pub fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn walkdir(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Every `suite.yaml` under `fixtures/gatekeeper/`, sorted.
pub fn fixture_suites() -> Vec<PathBuf> {
    let mut suites = Vec::new();
    let mut pending = vec![root().join("fixtures/gatekeeper")];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.file_name().is_some_and(|n| n == "suite.yaml") {
                suites.push(path);
            }
        }
    }
    suites.sort();
    suites
}
