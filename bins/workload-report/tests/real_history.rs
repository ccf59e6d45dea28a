//! Two `workload-report run`s in a row against a real Loki (`test-support::real`) and the fake
//! Slack: the first finds no earlier run and says the change is unknown; the second reads the
//! first back from Loki and shows what changed — in its Slack digests (`N new, M fixed since
//! <date>`, new names marked, fixed ones named, an unchanged team spared under
//! `postOnlyOnChange`) and in the lines it pushes to Loki (`new`, `fixed`, `previousRunId`).
//!
//! Between the runs the demo cluster's `payments-prod/checkout` is renamed `checkout-v2`: in both
//! of the rules that flag it, the old name is fixed and the new one is new.

mod real_common;

use std::path::{Path, PathBuf};

use real_common::{JOB, TEAMS, TENANT, demo_cluster, run, write_config};
use serde_json::Value;
use test_support::real::{RealLoki, Tool, require, streams_of};
use test_support::slack::SlackServer;

/// A copy of the demo cluster with `checkout` in `payments-prod` renamed `checkout-v2`.
fn renamed_cluster(dir: &Path) -> PathBuf {
    let target = dir.join("cluster-2");
    copy_dir(&demo_cluster(), &target);
    let workloads = target.join("workloads.yaml");
    let text = std::fs::read_to_string(&workloads).unwrap();
    let renamed = text.replace(
        "  name: checkout\n  namespace: payments-prod\n",
        "  name: checkout-v2\n  namespace: payments-prod\n",
    );
    assert_ne!(renamed, text, "the demo cluster has payments-prod/checkout");
    std::fs::write(&workloads, renamed).unwrap();
    target
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_dir(&path, &target);
        } else {
            std::fs::copy(&path, &target).unwrap();
        }
    }
}

/// One real (not dry) run of `cluster` posting to `slack`; returns the run line.
fn report(config: &Path, cluster: &Path, slack: &SlackServer) -> Value {
    let hooks: Vec<(String, String)> = TEAMS
        .iter()
        .map(|team| {
            (
                format!("{}_WEBHOOK", team.to_ascii_uppercase()),
                slack.webhook_url(team),
            )
        })
        .collect();
    let env: Vec<(&str, &str)> = hooks
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let outcome = run(
        &[
            "run",
            "--config",
            config.to_str().unwrap(),
            "--snapshot",
            cluster.to_str().unwrap(),
        ],
        &env,
    );
    outcome.expect_code(0);
    outcome.run_line()
}

/// The header text of `team`'s only digest, and the whole digest.
fn digest(slack: &SlackServer, team: &str) -> (String, String) {
    let posts = slack.posts(team);
    assert_eq!(posts.len(), 1, "{team}: {posts:?}");
    let message: Value = serde_json::from_str(&posts[0]).unwrap();
    let header = message["blocks"][0]["text"]["text"]
        .as_str()
        .unwrap()
        .to_string();
    (header, posts[0].clone())
}

/// Every line of `line_type` Loki holds for run `run_id`.
fn loki_lines(loki: &RealLoki, line_type: &str, run_id: &str) -> Vec<Value> {
    let now = jiff::Timestamp::now().as_nanosecond();
    let hour = 3_600_000_000_000;
    let selector = format!(r#"{{job="{JOB}", type="{line_type}"}}"#);
    streams_of(&loki.query_range(TENANT, &selector, now - hour, now + hour))
        .into_values()
        .flatten()
        .map(|[_, line]| serde_json::from_str::<Value>(&line).unwrap())
        .filter(|line| line["runId"] == run_id)
        .collect()
}

#[test]
fn two_runs_against_a_real_loki_show_what_is_new_and_fixed_in_slack_and_loki() {
    let Some(tools) = require(
        Tool::Loki,
        "two_runs_against_a_real_loki_show_what_is_new_and_fixed_in_slack_and_loki",
    ) else {
        return;
    };
    let loki = RealLoki::start(&tools);
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        "config.yaml",
        Some(&loki.url()),
        "postOnlyOnChange: true\n",
    );

    // The first run: Loki holds nothing, so the change is unknown and every team is told.
    let first_slack = SlackServer::start();
    let first = report(&config, &demo_cluster(), &first_slack);
    assert_eq!(first["status"], "ok");
    assert_eq!(first["previousRunId"], Value::Null);
    assert_eq!(first_slack.teams_posted(), TEAMS);
    for team in TEAMS {
        let (header, _) = digest(&first_slack, team);
        assert_eq!(
            header,
            format!("Workload policy report: {team} — change unknown (first run)")
        );
    }
    let first_id = first["runId"].as_str().unwrap();
    let first_run = &loki_lines(&loki, "run", first_id)[0];
    assert!(first_run["new"].is_null(), "{first_run}");

    // The second run compares with the first, read back from the real Loki. A run id names the
    // second the run started in (CronJob runs are hours apart), and a run never takes the run of
    // its own id as its baseline: start the second run in a later second than the first.
    let first_started: jiff::Timestamp = first["startedAt"].as_str().unwrap().parse().unwrap();
    while jiff::Timestamp::now().as_second() <= first_started.as_second() {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let second_slack = SlackServer::start();
    let second = report(&config, &renamed_cluster(dir.path()), &second_slack);
    assert_eq!(second["status"], "ok", "{second}");
    assert_eq!(second["previousRunId"], first_id);
    // only payments changed: the unchanged teams are spared (postOnlyOnChange)
    assert_eq!(second_slack.teams_posted(), ["payments"]);
    let (header, body) = digest(&second_slack, "payments");
    let finished: jiff::Timestamp = first["finishedAt"].as_str().unwrap().parse().unwrap();
    assert_eq!(
        header,
        format!(
            "Workload policy report: payments — 3 new, 3 fixed since {}",
            finished.strftime("%Y-%m-%d %H:%M UTC")
        )
    );
    assert!(body.contains(":new: `checkout-v2`"), "{body}");
    assert!(
        body.contains("*3 fixed* since") && body.contains("`payments-prod/checkout`"),
        "{body}"
    );

    // Loki holds the change too: per team, per summary and per violation line.
    let second_id = second["runId"].as_str().unwrap();
    let run_line = &loki_lines(&loki, "run", second_id)[0];
    assert_eq!(
        (run_line["new"].as_u64(), run_line["fixed"].as_u64()),
        (Some(3), Some(3))
    );
    assert_eq!(run_line["previousRunId"], first_id);
    for total in loki_lines(&loki, "team_total", second_id) {
        let expected = if total["team"] == "payments" { 3 } else { 0 };
        assert_eq!(total["new"], expected, "{total}");
        assert_eq!(total["fixed"], expected, "{total}");
    }
    let mut new: Vec<(String, String)> = loki_lines(&loki, "violation", second_id)
        .into_iter()
        .filter(|line| line["new"] == true)
        .map(|line| {
            (
                line["name"].as_str().unwrap().to_string(),
                line["rule"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    new.sort();
    assert_eq!(
        new,
        [
            ("checkout-v2".to_string(), "K8sContainerLimits".to_string()),
            // a Pod-only rule that sees the Deployment through the demo's ExpansionTemplate
            ("checkout-v2".to_string(), "K8sPodRunAsNonRoot".to_string()),
            ("checkout-v2".to_string(), "K8sRequiredLabels".to_string()),
        ]
    );
    assert!(
        loki_lines(&loki, "violation", second_id)
            .iter()
            .all(|line| line["new"].is_boolean()),
        "a compared run says new: true or false on every violation line"
    );
}
