//! Loki lines (snapshotted), their labels, and the push client against the loopback Loki fake.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use report_sinks::{HttpOptions, LokiAuth, LokiClient, LokiEndpoint, LokiSink, SendError};
use secrecy::SecretString;
use serde_json::Value;
use test_support::loki::{LokiServer, PUSH_PATH};
use test_support::slack::SinkReply;

fn options(timeout: Duration) -> HttpOptions {
    HttpOptions {
        timeout,
        connect_timeout: Duration::from_secs(2),
        trust: report_sinks::TrustRoots::system(),
    }
}

fn client(loki: &LokiServer, auth: Option<LokiAuth>) -> LokiClient {
    LokiClient::new(
        &LokiEndpoint {
            url: loki.url(),
            tenant: Some("infra".into()),
            auth,
        },
        &options(Duration::from_secs(2)),
    )
    .unwrap()
}

#[test]
fn loki_payload_snapshot() {
    let push = LokiSink::new("gatekeeper-workload-report").render(&common::report());
    insta::assert_snapshot!("loki_push", push.to_json());
}

#[test]
fn labels_are_exactly_job_cluster_team_type() {
    let push = LokiSink::new("gatekeeper-workload-report").render(&common::report());
    let mut teams = BTreeSet::new();
    let mut stamps = Vec::new();
    for stream in &push.streams {
        let keys: Vec<&str> = stream.stream.keys().map(String::as_str).collect();
        assert_eq!(keys, ["cluster", "job", "team", "type"]);
        assert_eq!(stream.stream["job"], "gatekeeper-workload-report");
        assert_eq!(stream.stream["cluster"], "azure-dev");
        teams.insert(stream.stream["team"].clone());
        for [ts, line] in &stream.values {
            let ts: i128 = ts.parse().unwrap();
            stamps.push((ts, stream.stream["type"].clone()));
            let line: Value = serde_json::from_str(line).unwrap();
            assert_eq!(line["type"], stream.stream["type"].as_str());
            assert_eq!(line["runId"], "20261130T073000Z-a1b2");
        }
    }
    assert_eq!(
        teams.into_iter().collect::<Vec<_>>(),
        ["3d", "_run", "infra", "raster", "silenced"]
    );
    // the run line is at finishedAt, every other line after it, each on its own nanosecond
    stamps.sort();
    let first = 1_796_023_842_000_000_000_i128;
    assert_eq!(stamps[0], (first, "run".to_string()));
    let expected: Vec<i128> = (first..first + stamps.len() as i128).collect();
    let got: Vec<i128> = stamps.iter().map(|(ts, _)| *ts).collect();
    assert_eq!(got, expected);
    // nothing high-cardinality in the labels
    let labels: String = push
        .streams
        .iter()
        .flat_map(|s| s.stream.values().cloned())
        .collect();
    for value in [
        "20261130T073000Z-a1b2",
        "dem-dev",
        "K8sRequiredLabels",
        "worker",
        "missing",
    ] {
        assert!(!labels.contains(value), "{value} is a label value");
    }
}

#[test]
fn every_team_gets_a_total_and_the_silenced_team_is_counted() {
    let push = LokiSink::new("job").render(&common::report());
    let totals: Vec<(String, u64)> = push
        .streams
        .iter()
        .filter(|s| s.stream["type"] == "team_total")
        .flat_map(|s| s.values.iter())
        .map(|[_, line]| {
            let v: Value = serde_json::from_str(line).unwrap();
            (
                v["team"].as_str().unwrap().to_string(),
                v["total"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        totals,
        [
            ("3d".to_string(), 0),
            ("infra".to_string(), 1),
            ("raster".to_string(), 6),
            ("silenced".to_string(), 1)
        ]
    );
    // violation lines: one per (workload, rule), every one of them (not capped)
    let violations = push
        .streams
        .iter()
        .filter(|s| s.stream["type"] == "violation")
        .map(|s| s.values.len())
        .sum::<usize>();
    assert_eq!(violations, 8);
}

#[tokio::test]
async fn push_sends_the_rendered_body_with_tenant_and_auth() {
    let loki = LokiServer::start();
    let push = LokiSink::new("job").render(&common::report());
    client(
        &loki,
        Some(LokiAuth::Basic {
            username: "writer".into(),
            password: SecretString::from("pa55word"),
        }),
    )
    .push(&push)
    .await
    .unwrap();
    let requests = loki.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].path, PUSH_PATH);
    assert_eq!(requests[0].header("x-scope-orgid"), Some("infra"));
    assert_eq!(
        requests[0].header("authorization"),
        Some("Basic d3JpdGVyOnBhNTV3b3Jk")
    );
    // byte for byte what a dry run writes to --out DIR/loki.json
    assert_eq!(loki.pushes()[0], push.to_json());
}

#[tokio::test]
async fn url_credentials_become_basic_auth_and_a_prefix_is_kept() {
    let loki = LokiServer::start();
    let url = loki.url().replace("http://", "http://u:p%40ss@");
    let client = LokiClient::new(
        &LokiEndpoint {
            url: format!("{url}/"),
            tenant: None,
            auth: None,
        },
        &options(Duration::from_secs(2)),
    )
    .unwrap();
    assert!(!format!("{client:?}").contains("p%40ss"));
    client
        .push(&LokiSink::new("job").render(&common::report()))
        .await
        .unwrap();
    let request = &loki.requests()[0];
    assert_eq!(request.path, PUSH_PATH);
    // base64("u:p@ss")
    assert_eq!(request.header("authorization"), Some("Basic dTpwQHNz"));
    assert_eq!(request.header("x-scope-orgid"), None);
}

async fn push_error(reply: SinkReply) -> SendError {
    let loki = LokiServer::start();
    loki.reply(vec![reply]);
    let err = client(
        &loki,
        Some(LokiAuth::Bearer(SecretString::from("t0k3n-secret"))),
    )
    .push(&LokiSink::new("job").render(&common::report()))
    .await
    .unwrap_err();
    assert_eq!(loki.pushes().len(), 1, "no retry, no redirect follow-up");
    for text in [err.to_string(), format!("{err:?}")] {
        assert!(!text.contains("t0k3n-secret"), "{text}");
    }
    err
}

#[tokio::test]
async fn push_failures_are_typed_errors() {
    assert_eq!(
        format!(
            "loki push failed: {}",
            push_error(SinkReply::Status(400)).await
        ),
        "loki push failed: server answered HTTP 400: fake error 400"
    );
    assert_eq!(
        push_error(SinkReply::RateLimited {
            retry_after_secs: 5
        })
        .await
        .to_string(),
        "server answered HTTP 429 (rate limited, Retry-After 5s)"
    );
    assert_eq!(
        push_error(SinkReply::Redirect).await,
        SendError::Redirect { status: 302 }
    );
    assert_eq!(
        push_error(SinkReply::Status(500)).await.to_string(),
        "server answered HTTP 500: fake error 500"
    );
}

#[tokio::test]
async fn a_hanging_loki_times_out() {
    let loki = LokiServer::start();
    loki.reply(vec![SinkReply::Hang]);
    let client = LokiClient::new(
        &LokiEndpoint {
            url: loki.url(),
            tenant: None,
            auth: None,
        },
        &options(Duration::from_secs(1)),
    )
    .unwrap();
    let err = client
        .push(&LokiSink::new("job").render(&common::report()))
        .await
        .unwrap_err();
    assert_eq!(err, SendError::Timeout { seconds: 1 });
}

#[test]
fn a_malformed_loki_url_is_invalid_url() {
    for url in ["loki:3100", "ftp://loki", "http://lo ki:3100"] {
        let err = LokiClient::new(
            &LokiEndpoint {
                url: url.into(),
                tenant: None,
                auth: None,
            },
            &HttpOptions::default(),
        )
        .unwrap_err();
        assert_eq!(err, SendError::InvalidUrl, "{url}");
    }
}

#[test]
fn a_skipped_run_pushes_the_run_line_only() {
    let mut report = common::report();
    report.teams.clear();
    report.run.status = report_sinks::RunStatus::Skipped;
    report.run.reason = "api error: 403".into();
    let push = LokiSink::new("job").render(&report);
    assert_eq!(push.line_count(), 1);
    let line: Value = serde_json::from_str(&push.streams[0].values[0][1]).unwrap();
    assert_eq!(line["status"], "skipped");
    assert_eq!(line["total"], 0);
}

#[test]
fn policy_errors_are_counted_apart_and_never_violation_lines() {
    let push = LokiSink::new("job").render(&common::report_with_errors());
    insta::assert_snapshot!("loki_push_with_errors", push.to_json());
    let lines = |team: &str, kind: &str| -> Vec<Value> {
        push.streams
            .iter()
            .filter(|s| s.stream["team"] == team && s.stream["type"] == kind)
            .flat_map(|s| s.values.iter())
            .map(|[_, line]| serde_json::from_str(line).unwrap())
            .collect()
    };
    let run = &lines("_run", "run")[0];
    assert_eq!(
        (run["total"].as_u64(), run["errors"].as_u64()),
        (Some(8), Some(4))
    );
    let errors = lines("_run", "policy_error");
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0]["constraint"], "probes");
    assert_eq!(errors[0]["objects"], 4);
    let total = &lines("raster", "team_total")[0];
    assert_eq!(total["total"], 6);
    assert_eq!(total["errors"], 3);
    assert_eq!(total["namespaces"], 2, "namespaces with violations only");
    let stage: Vec<Value> = lines("raster", "summary")
        .into_iter()
        .filter(|l| l["namespace"] == "raster-stage")
        .collect();
    assert_eq!(
        stage,
        [serde_json::json!({
            "type": "summary", "runId": "20261130T073000Z-a1b2", "team": "raster",
            "namespace": "raster-stage", "rule": "K8sRequiredProbes",
            "count": 0, "errors": 2, "categories": {}, "new": null, "fixed": null
        })]
    );
    assert!(
        lines("raster", "violation")
            .iter()
            .all(|l| l["namespace"] != "raster-stage"),
        "an erring workload is never a violation line"
    );
    assert!(lines("3d", "violation").is_empty());
}

/// `push_until` with a deadline `secs` from now.
async fn push_until(loki: &LokiServer, secs: u64) -> Result<(), SendError> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    client(loki, None)
        .push_until(&LokiSink::new("job").render(&common::report()), deadline)
        .await
}

#[tokio::test]
async fn push_until_waits_out_rate_limits_and_unavailability_then_delivers() {
    let loki = LokiServer::start();
    loki.reply(vec![
        SinkReply::Status(429),
        SinkReply::Status(503),
        SinkReply::Ok,
    ]);
    push_until(&loki, 30).await.unwrap();
    let pushes = loki.pushes();
    assert_eq!(pushes.len(), 3, "two refusals, then the push");
    assert!(
        pushes.iter().all(|body| *body == pushes[0]),
        "the same body each time"
    );
}

#[tokio::test]
async fn push_until_gives_up_when_the_wait_would_pass_the_deadline() {
    let loki = LokiServer::start();
    loki.reply(vec![SinkReply::RateLimited {
        retry_after_secs: 5,
    }]);
    let error = push_until(&loki, 2).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "server answered HTTP 429 (rate limited, Retry-After 5s)"
    );
    assert_eq!(
        loki.pushes().len(),
        1,
        "no try that would end past the deadline"
    );
}

#[tokio::test]
async fn push_until_does_not_try_again_after_other_failures() {
    for status in [400, 500] {
        let loki = LokiServer::start();
        loki.reply(vec![SinkReply::Status(status)]);
        let error = push_until(&loki, 30).await.unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("server answered HTTP {status}: fake error {status}")
        );
        assert_eq!(loki.pushes().len(), 1);
    }
}
