//! `workload-report run` and `routes` against hostile and broken input, through the binary: a
//! Kubernetes API or Loki echoing the credential, output paths that are files or symlinks, bombs,
//! devices and deep YAML as config or snapshot, absurd durations, secrets with a trailing newline.
//! Whatever the input: no secret in any output, no panic, and the run line last on stdout once
//! the config is read.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use test_support::kube_api::{FAKE_TOKEN, FakeApiServer, Fault, Scenario};
use test_support::loki::LokiServer;
use test_support::slack::{EchoStyle, SinkReply, SlackServer, echo_shows as leaks};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

struct Outcome {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Outcome {
    /// The last stdout line, parsed as the run line.
    fn run_line(&self) -> Value {
        let last = self.stdout.lines().last().unwrap_or_default();
        serde_json::from_str(last)
            .unwrap_or_else(|e| panic!("last stdout line is no run line ({e}): {}", self.stdout))
    }

    fn assert_no_panic(&self) {
        assert!(
            !self.stderr.contains("panicked at") && ![101, 134, 137].contains(&self.code),
            "exit {}: {}",
            self.code,
            self.stderr
        );
    }
}

fn run(args: &[&str], env: &[(String, String)]) -> Outcome {
    let output = Command::new(env!("CARGO_BIN_EXE_workload-report"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .current_dir(root())
        .output()
        .unwrap();
    let outcome = Outcome {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    };
    outcome.assert_no_panic();
    outcome
}

const DEMO_CONFIG: &str = "fixtures/demo/config.yaml";
const DEMO_SNAPSHOT: &str = "fixtures/demo/cluster";

/// A config for the `fixtures/cluster/basic` scenario, pushing to `loki`.
fn basic_config(dir: &Path, loki: &str, extra: &str) -> PathBuf {
    let text = format!(
        "cluster: basic\ndefaultTeam: infra\nteams: [{{name: web, namespaces: ['web-*']}}]\n\
         constraintKinds: [K8sRequiredLabels, K8sContainerLimits]\n\
         loki: {{url: '{loki}'}}\ntimeouts: {{api: 5s, post: 5s}}\n{extra}"
    );
    let path = dir.join("config.yaml");
    std::fs::write(&path, text).unwrap();
    path
}

/// `run --config CONFIG --snapshot fixtures/cluster-src/basic EXTRA...`.
fn run_basic(config: &Path, extra: &[&str], env: &[(String, String)]) -> Outcome {
    let mut args = vec![
        "run",
        "--config",
        config.to_str().unwrap(),
        "--snapshot",
        "fixtures/cluster-src/basic",
    ];
    args.extend_from_slice(extra);
    run(&args, env)
}

fn basic_fake() -> FakeApiServer {
    FakeApiServer::start(Scenario::from_dir(root().join("fixtures/cluster/basic")))
}

fn hooks(slack: &SlackServer) -> Vec<(String, String)> {
    ["infra", "web"]
        .iter()
        .map(|t| {
            (
                format!("{}_WEBHOOK", t.to_ascii_uppercase()),
                slack.webhook_url(t),
            )
        })
        .collect()
}

/// Every byte the run let out: stdout, stderr, `--out` files, Slack and Loki bodies.
fn everything(outcome: &Outcome, out: &Path, slack: &SlackServer, loki: &LokiServer) -> String {
    let mut text = format!("{}\n{}\n", outcome.stdout, outcome.stderr);
    let mut dirs = vec![out.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            if entry.path().is_dir() {
                dirs.push(entry.path());
            } else {
                text.push_str(&std::fs::read_to_string(entry.path()).unwrap());
            }
        }
    }
    for request in slack.requests() {
        text.push_str(&String::from_utf8_lossy(&request.body));
    }
    for push in loki.pushes() {
        text.push_str(&push);
    }
    text
}

#[test]
fn a_kubernetes_api_echoing_the_token_leaks_it_nowhere() {
    for style in EchoStyle::ALL {
        let fake = basic_fake();
        fake.inject(
            "/apis/apps/v1/deployments",
            Fault::EchoAuthorization { status: 401, style },
        );
        let (slack, loki) = (SlackServer::start(), LokiServer::start());
        let dir = tempfile::tempdir().unwrap();
        let config = basic_config(dir.path(), &loki.url(), "");
        let kubeconfig = fake.write_kubeconfig(dir.path());
        let out = dir.path().join("out");
        let outcome = run(
            &[
                "run",
                "--config",
                config.to_str().unwrap(),
                "--kubeconfig",
                kubeconfig.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ],
            &hooks(&slack),
        );
        let line = outcome.run_line();
        assert_eq!(line["status"], "skipped", "{style:?}: {}", outcome.stderr);
        assert!(
            line["reason"].as_str().unwrap().contains("HTTP 401"),
            "{line}"
        );
        assert_eq!(slack.teams_posted(), ["infra"], "the problems message only");
        assert_eq!(loki.pushes().len(), 1);
        let all = everything(&outcome, &out, &slack, &loki);
        assert!(!leaks(&all, FAKE_TOKEN), "{style:?}: {all}");
    }
}

#[test]
fn a_loki_echoing_its_basic_credential_leaks_it_nowhere() {
    let password = "l0ki-Pa/ss:word";
    let pair = format!("tenant-7:{password}");
    for style in EchoStyle::ALL {
        let (slack, loki) = (SlackServer::start(), LokiServer::start());
        loki.reply(vec![SinkReply::EchoAuthorization { status: 401, style }]);
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let config = basic_config(dir.path(), &loki.url(), "");
        let mut env = hooks(&slack);
        env.push(("LOKI_USERNAME".into(), "tenant-7".into()));
        env.push(("LOKI_PASSWORD".into(), password.into()));
        let outcome = run_basic(&config, &["--out", out.to_str().unwrap()], &env);
        let line = outcome.run_line();
        assert!(
            line["reason"]
                .as_str()
                .unwrap()
                .contains("loki push failed"),
            "{style:?}: {line}"
        );
        let all = everything(&outcome, &out, &slack, &loki);
        for secret in [password, pair.as_str()] {
            assert!(!leaks(&all, secret), "{style:?}: {secret} in {all}");
        }
    }
}

#[test]
fn an_out_path_that_is_a_file_is_refused_before_anything_is_sent() {
    let (slack, loki) = (SlackServer::start(), LokiServer::start());
    let dir = tempfile::tempdir().unwrap();
    let config = basic_config(dir.path(), &loki.url(), "");
    let file = dir.path().join("taken");
    std::fs::write(&file, "keep").unwrap();
    let outcome = run_basic(&config, &["--out", file.to_str().unwrap()], &hooks(&slack));
    assert_eq!(outcome.code, 2, "{}", outcome.stderr);
    assert!(
        outcome.stderr.contains(&format!(
            "--out {}: is a file, not a directory",
            file.display()
        )),
        "{}",
        outcome.stderr
    );
    assert!(slack.requests().is_empty(), "nothing posted");
    assert!(loki.requests().is_empty(), "nothing pushed");
}

#[test]
fn symlinks_at_output_paths_are_refused_before_anything_is_sent() {
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim");
    std::fs::write(&victim, "keep me").unwrap();
    let (slack, loki) = (SlackServer::start(), LokiServer::start());
    let dir = tempfile::tempdir().unwrap();
    let config = basic_config(dir.path(), &loki.url(), "");
    let link = |name: &str, target: &Path| {
        let path = dir.path().join(name);
        std::os::unix::fs::symlink(target, &path).unwrap();
        path
    };
    let out_link = link("out", outside.path());
    let snapshot_link = link("saved.tar.gz", &victim);
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    std::os::unix::fs::symlink(outside.path(), work.join("in")).unwrap();
    let cases: [(&str, &Path, String); 3] = [
        ("--out", &out_link, format!("--out {}", out_link.display())),
        (
            "--save-snapshot",
            &snapshot_link,
            format!("--save-snapshot {}", snapshot_link.display()),
        ),
        (
            "--work",
            &work,
            format!("--work {}", work.join("in").display()),
        ),
    ];
    for (flag, path, named) in cases {
        let outcome = run_basic(&config, &[flag, path.to_str().unwrap()], &hooks(&slack));
        assert_eq!(outcome.code, 2, "{flag}: {}", outcome.stderr);
        assert!(
            outcome
                .stderr
                .contains(&format!("{named}: is a symlink; refusing to follow it")),
            "{flag}: {}",
            outcome.stderr
        );
    }
    assert!(slack.requests().is_empty() && loki.requests().is_empty());
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me");
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 1);
}

#[test]
fn with_json_output_the_run_line_is_the_last_stdout_line() {
    let slack = SlackServer::start();
    let mut env = hooks(&slack);
    env.extend(
        ["PAYMENTS", "RASTER"]
            .iter()
            .map(|t| (format!("{t}_WEBHOOK"), slack.webhook_url(t))),
    );
    let outcome = run(
        &[
            "run",
            "--config",
            DEMO_CONFIG,
            "--snapshot",
            DEMO_SNAPSHOT,
            "--dry-run",
            "-o",
            "json",
        ],
        &env,
    );
    // `-o json`: stdout is one JSON document, the run line inside it
    let document: Value = serde_json::from_str(&outcome.stdout).expect("one JSON document");
    assert_eq!(document["run"]["status"], "ok", "{}", outcome.stderr);
    assert!(document["digests"]["payments"].is_object());
}

#[test]
fn a_loki_token_with_a_trailing_newline_is_used_without_it() {
    let (slack, loki) = (SlackServer::start(), LokiServer::start());
    let dir = tempfile::tempdir().unwrap();
    let config = basic_config(dir.path(), &loki.url(), "");
    let mut env = hooks(&slack);
    env.push(("LOKI_TOKEN".into(), "glc_from_a_secret_file\n".into()));
    let outcome = run_basic(&config, &[], &env);
    let line = outcome.run_line();
    assert!(
        !line["reason"]
            .as_str()
            .unwrap()
            .contains("loki push failed"),
        "{line}"
    );
    let requests = loki.requests();
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer glc_from_a_secret_file")
    );
}

#[test]
fn config_files_that_are_devices_fifos_or_deep_yaml_fail_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("config.yaml");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let deep = dir.path().join("deep.yaml");
    let depth = 20_000;
    std::fs::write(
        &deep,
        format!("cluster: [{}{}]\n", "[".repeat(depth), "]".repeat(depth)),
    )
    .unwrap();
    let cases = [
        (
            PathBuf::from("/dev/zero"),
            "is not a regular file (a character device)",
        ),
        (fifo, "is not a regular file (a FIFO)"),
        (
            deep,
            "recursion limit exceeded: YAML nested deeper than 128 levels at line 1",
        ),
    ];
    for (path, expected) in cases {
        for command in ["run", "routes"] {
            let path_text = path.to_str().unwrap();
            let mut args = vec![command, "--config", path_text];
            if command == "run" {
                args.extend(["--snapshot", DEMO_SNAPSHOT]);
            }
            let outcome = run(&args, &[]);
            assert_eq!(outcome.code, 2, "{command} {path_text}: {}", outcome.stderr);
            assert_eq!(
                outcome.stderr,
                format!("workload-report: invalid config {path_text}: config: {expected}\n"),
            );
        }
    }
}

#[test]
fn absurd_durations_are_configuration_errors_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    for (value, expected) in [
        (
            "18446744073709551615s",
            "\"18446744073709551615s\" is longer than the maximum 24h",
        ),
        ("10ｍ", "\"10ｍ\" is not a duration like 30s, 10m or 1h"),
    ] {
        let config = basic_config(dir.path(), "http://127.0.0.1:9", "")
            .to_str()
            .unwrap()
            .to_string();
        let text = std::fs::read_to_string(&config).unwrap().replace(
            "timeouts: {api: 5s, post: 5s}",
            &format!("timeouts: {{engine: {value}}}"),
        );
        std::fs::write(&config, text).unwrap();
        let outcome = run(
            &["run", "--config", &config, "--snapshot", DEMO_SNAPSHOT],
            &[],
        );
        assert_eq!(outcome.code, 2, "{}", outcome.stderr);
        assert!(
            outcome
                .stderr
                .ends_with(&format!("config: timeouts.engine: {expected}\n")),
            "{}",
            outcome.stderr
        );
    }
}

#[test]
fn a_serde_error_is_printed_once() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        "cluster: c\ndefaultTeam: infra\nteams: [{name: a}]\nconstraintKinds: [A]\n",
    )
    .unwrap();
    let outcome = run(&["routes", "--config", config.to_str().unwrap()], &[]);
    assert_eq!(outcome.code, 2);
    assert_eq!(
        outcome.stderr.matches("missing field `namespaces`").count(),
        1,
        "{}",
        outcome.stderr
    );
}

/// A dry run of the demo config over `snapshot`.
fn dry_run_demo(snapshot: &Path) -> Outcome {
    run(
        &[
            "run",
            "--config",
            DEMO_CONFIG,
            "--snapshot",
            snapshot.to_str().unwrap(),
            "--dry-run",
        ],
        &[],
    )
}

fn assert_skipped_because(outcome: &Outcome, reason: &str) {
    let line = outcome.run_line();
    assert_eq!(line["status"], "skipped", "{}", outcome.stderr);
    assert!(line["reason"].as_str().unwrap().contains(reason), "{line}");
}

#[test]
fn a_snapshot_bomb_skips_the_run_with_the_cap_in_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let bomb = dir.path().join("bomb.tar.gz");
    std::fs::write(
        &bomb,
        test_support::bomb::tar_gz_bomb("snapshot/workloads.json", 4 << 30),
    )
    .unwrap();
    let outcome = dry_run_demo(&bomb);
    assert_eq!(outcome.code, 1, "{}", outcome.stderr);
    assert_skipped_because(
        &outcome,
        "snapshot/workloads.json: is larger than the 256 MiB cap",
    );
}

#[test]
fn a_snapshot_symlink_to_a_device_skips_the_run_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let snapshot = dir.path().join("cluster");
    std::fs::create_dir(&snapshot).unwrap();
    std::os::unix::fs::symlink("/dev/zero", snapshot.join("zero.yaml")).unwrap();
    let outcome = dry_run_demo(&snapshot);
    assert_skipped_because(
        &outcome,
        "zero.yaml: is not a regular file (a character device)",
    );
}
