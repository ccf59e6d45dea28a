//! The Loki push against a real Loki (`test-support::real`): every line type read back with
//! `query_range` exactly as pushed, tenants kept apart by `X-Scope-OrgID`, and auth headers (which
//! Loki accepts and ignores; the fake shows they are sent).

mod common;

use std::time::Duration;

use report_sinks::{HttpOptions, LokiAuth, LokiClient, LokiEndpoint, LokiPush, LokiSink};
use secrecy::SecretString;
use serde_json::Value;
use test_support::loki::LokiServer;
use test_support::real::{RealLoki, Streams, Tool, require, streams_of};

const JOB: &str = "gatekeeper-workload-report";

fn client(url: String, tenant: Option<&str>, auth: Option<LokiAuth>) -> LokiClient {
    LokiClient::new(
        &LokiEndpoint {
            url,
            tenant: tenant.map(str::to_string),
            auth,
        },
        &HttpOptions {
            timeout: Duration::from_secs(10),
            connect_timeout: Duration::from_secs(2),
            trust: report_sinks::TrustRoots::system(),
        },
    )
    .unwrap()
}

fn start(test: &str) -> Option<RealLoki> {
    let tools = require(Tool::Loki, test)?;
    Some(RealLoki::start(&tools))
}

/// A real Loki holding the sample report, pushed as `tenant`.
async fn pushed_to_real_loki(test: &str, tenant: &str) -> Option<(RealLoki, LokiPush)> {
    let loki = start(test)?;
    let push = LokiSink::new(JOB).render(&common::report());
    client(loki.url(), Some(tenant), None)
        .push(&push)
        .await
        .expect("push to the real Loki");
    Some((loki, push))
}

fn pushed(push: &LokiPush) -> Streams {
    streams_of(&serde_json::from_str(&push.to_json()).unwrap())
}

/// Everything Loki holds for `tenant` under `{job=JOB}` around the report's timestamp.
fn read_back(loki: &RealLoki, tenant: &str, push: &LokiPush) -> Streams {
    let ts: i128 = push.streams[0].values[0][0].parse().unwrap();
    loki.streams_around(tenant, &format!("{{job=\"{JOB}\"}}"), ts)
}

#[tokio::test]
async fn real_loki_reads_back_every_line_type_exactly_as_pushed() {
    let Some((loki, push)) = pushed_to_real_loki(
        "real_loki_reads_back_every_line_type_exactly_as_pushed",
        "infra",
    )
    .await
    else {
        return;
    };
    let expected = pushed(&push);
    let types: std::collections::BTreeSet<&str> = expected
        .keys()
        .map(|labels| labels["type"].as_str())
        .collect();
    assert_eq!(
        types.into_iter().collect::<Vec<_>>(),
        ["run", "summary", "team_total", "violation"]
    );
    let stored = read_back(&loki, "infra", &push);
    assert_eq!(stored, expected);
    // Each line is the JSON the contract describes, its `type` equal to the label.
    for (labels, values) in &stored {
        for [_, line] in values {
            let line: Value = serde_json::from_str(line).unwrap();
            assert_eq!(line["type"].as_str(), Some(labels["type"].as_str()));
        }
    }
}

#[tokio::test]
async fn real_loki_keeps_tenants_apart_by_the_tenant_header() {
    let Some((loki, push)) = pushed_to_real_loki(
        "real_loki_keeps_tenants_apart_by_the_tenant_header",
        "team-a",
    )
    .await
    else {
        return;
    };
    assert_eq!(read_back(&loki, "team-a", &push), pushed(&push));
    assert!(read_back(&loki, "team-b", &push).is_empty());

    // Multi-tenant Loki refuses a push without the header: the header is what selects the tenant.
    let err = client(loki.url(), None, None)
        .push(&push)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("HTTP 401"), "{err}");
}

#[tokio::test]
async fn real_loki_accepts_basic_and_bearer_auth_and_the_fake_sees_the_headers() {
    let Some(loki) = start("real_loki_accepts_basic_and_bearer_auth_and_the_fake_sees_the_headers")
    else {
        return;
    };
    let fake = LokiServer::start();
    let push = LokiSink::new(JOB).render(&common::report());
    let basic = || LokiAuth::Basic {
        username: "writer".into(),
        password: SecretString::from("pa55word"),
    };
    let bearer = || LokiAuth::Bearer(SecretString::from("t0k3n"));
    for (auth, header) in [
        (basic(), "Basic d3JpdGVyOnBhNTV3b3Jk"),
        (bearer(), "Bearer t0k3n"),
    ] {
        client(loki.url(), Some("auth"), Some(auth.clone()))
            .push(&push)
            .await
            .expect("the real Loki accepts the push");
        client(fake.url(), Some("auth"), Some(auth))
            .push(&push)
            .await
            .expect("the fake accepts the push");
        let request = fake.requests().pop().unwrap();
        assert_eq!(request.header("authorization"), Some(header));
        assert_eq!(request.header("x-scope-orgid"), Some("auth"));
    }
    // Both pushes carried the same lines: Loki stored them once.
    assert_eq!(read_back(&loki, "auth", &push), pushed(&push));
}

#[tokio::test]
async fn real_loki_gives_back_the_previous_run_with_every_violation_paged() {
    let Some((loki, push)) = pushed_to_real_loki(
        "real_loki_gives_back_the_previous_run_with_every_violation_paged",
        "infra",
    )
    .await
    else {
        return;
    };
    let report = common::report();
    let query = report_sinks::HistoryQuery {
        job: JOB.into(),
        cluster: report.run.cluster.clone(),
        run_id: "the-next-run".into(),
        before: report
            .run
            .finished_at
            .checked_add(jiff::SignedDuration::from_secs(60))
            .unwrap(),
        lookback: Duration::from_secs(3600),
        timeout: Duration::from_secs(20),
        // two lines a page: the run's violations take several pages
        limits: report_sinks::HistoryLimits {
            page_lines: 2,
            ..report_sinks::HistoryLimits::default()
        },
    };
    let previous = client(loki.url(), Some("infra"), None)
        .previous_run(&query)
        .await
        .expect("the real Loki answers")
        .expect("the pushed run is found");
    assert_eq!(previous.run_id, report.run.run_id);
    assert_eq!(previous.finished_at, report.run.finished_at);
    // exactly the violation lines pushed
    let mut pushed_violations: Vec<(String, String, String, String, String)> = push
        .streams
        .iter()
        .filter(|s| s.stream["type"] == "violation")
        .flat_map(|s| s.values.iter())
        .map(|[_, line]| {
            let line: Value = serde_json::from_str(line).unwrap();
            let field = |k: &str| line[k].as_str().unwrap().to_string();
            (
                field("team"),
                field("namespace"),
                field("rule"),
                field("kind"),
                field("name"),
            )
        })
        .collect();
    pushed_violations.sort();
    let read: Vec<(String, String, String, String, String)> = previous
        .violations
        .into_iter()
        .map(|v| (v.team, v.namespace, v.rule, v.kind, v.name))
        .collect();
    assert_eq!(read, pushed_violations);
    assert!(read.len() > 4, "more lines than two pages hold");

    // another tenant holds no run: a first run there
    let elsewhere = client(loki.url(), Some("other"), None)
        .previous_run(&query)
        .await
        .unwrap();
    assert_eq!(elsewhere, None);
}

/// The sample report with `count` more violations of one rule for raster, each message
/// `message_len` long: about `count × (message_len + 250)` bytes of lines.
fn bulk_report(count: usize, message_len: usize) -> report_sinks::Report {
    let mut report = common::report();
    let message = "m".repeat(message_len);
    let workloads = (0..count)
        .map(|i| common::workload("Deployment", &format!("app-{i:06}"), "missing", &message))
        .collect();
    report.teams.get_mut("raster").unwrap().namespaces.insert(
        "raster-bulk".to_string(),
        common::namespace(vec![("K8sRequiredLabels", workloads)], count),
    );
    report
}

#[tokio::test]
async fn real_loki_takes_a_large_run_in_paced_batches_that_it_refuses_as_one_push() {
    let Some(loki) =
        start("real_loki_takes_a_large_run_in_paced_batches_that_it_refuses_as_one_push")
    else {
        return;
    };
    let report = bulk_report(30_000, 300);
    let sink = LokiSink::new(JOB);
    let client = client(loki.url(), Some("bulk"), None);

    // Loki's default limits (4 MiB/s, bursts of 6 MiB per tenant) refuse the run as one push.
    let whole = sink.render(&report);
    let refused = client.push(&whole).await.unwrap_err();
    assert!(refused.to_string().contains("HTTP 429"), "{refused}");

    // In batches of 1 MiB, each tried again while Loki's rate limit refuses it, it all gets in.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    let mut pushes = 0;
    for batch in sink.batches(&report, 1 << 20) {
        client.push_until(&batch, deadline).await.expect("a batch");
        pushes += 1;
    }
    client
        .push_until(&sink.run_push(&report), deadline)
        .await
        .expect("the run line");
    assert!(pushes > 6, "{pushes} batches");
    let finished = report.run.finished_at.as_nanosecond();
    let counted = loki.query(
        "bulk",
        &format!("sum(count_over_time({{job=\"{JOB}\", type=\"violation\"}}[5m]))"),
        finished + 60_000_000_000,
    );
    let stored: usize = counted[0]["value"][1].as_str().unwrap().parse().unwrap();
    let violations: usize = whole
        .streams
        .iter()
        .filter(|s| s.stream["type"] == "violation")
        .map(|s| s.values.len())
        .sum();
    assert!(violations > 30_000);
    assert_eq!(stored, violations, "every violation line got in");
}
