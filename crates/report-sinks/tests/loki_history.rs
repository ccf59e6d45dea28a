//! Reading the previous run back from the loopback fake Loki (`LokiClient::previous_run`): which
//! run is the baseline, paging through its violation lines, and every fault — error statuses that
//! echo the credentials, a hang, bodies that are no Loki answer, answers over the cap, runs that
//! are not whole. Errors never carry a secret. What a real Loki finds is in `real_loki.rs`.

use std::time::Duration;

use report_sinks::loki::QueryError;
use report_sinks::{
    HistoryError, HistoryLimits, HistoryQuery, HttpOptions, LokiAuth, LokiClient, LokiEndpoint,
    PreviousViolation, RunStatus, SendError,
};
use secrecy::SecretString;
use serde_json::{Value, json};
use test_support::loki::LokiServer;
use test_support::slack::{EchoStyle, SinkReply, echo_shows};

const PASSWORD: &str = "pa/ss:W0rd+secret";
const TOKEN: &str = "glc_eyJvIjoiMTIzNDU2NyIsIm4iOiJyZWFkZXIifQ==";
const JOB: &str = "gatekeeper-workload-report";
/// 2026-11-30T07:30:00Z in Unix nanoseconds: the previous run's `finishedAt`.
const EARLIER: i128 = 1_796_023_800_000_000_000;

fn client(loki: &LokiServer, auth: Option<LokiAuth>) -> LokiClient {
    LokiClient::new(
        &LokiEndpoint {
            url: loki.url(),
            tenant: Some("demo".into()),
            auth,
        },
        &HttpOptions {
            timeout: Duration::from_secs(5),
            connect_timeout: Duration::from_secs(2),
            trust: report_sinks::TrustRoots::system(),
        },
    )
    .unwrap()
}

fn query(limits: HistoryLimits) -> HistoryQuery {
    HistoryQuery {
        job: JOB.into(),
        cluster: "dev".into(),
        run_id: "this-run".into(),
        before: "2026-12-01T07:30:00Z".parse().unwrap(),
        lookback: Duration::from_secs(14 * 24 * 3600),
        timeout: Duration::from_secs(2),
        limits,
    }
}

/// A Loki answer holding `lines` (`[ts, line]`) in one stream of `line_type`.
fn answer(line_type: &str, lines: &[(i128, Value)]) -> SinkReply {
    let values: Vec<Value> = lines
        .iter()
        .map(|(ts, line)| json!([ts.to_string(), line.to_string()]))
        .collect();
    SinkReply::Json {
        status: 200,
        body: json!({
            "status": "success",
            "data": {
                "resultType": "streams",
                "result": [{"stream": {"job": JOB, "cluster": "dev", "type": line_type}, "values": values}],
            },
        })
        .to_string(),
    }
}

fn run_line(run_id: &str, status: &str, dry_run: bool, total: u64) -> Value {
    json!({"type": "run", "runId": run_id, "cluster": "dev", "status": status, "dryRun": dry_run,
           "posted": ["web"], "failed": ["raster"], "total": total, "errors": 0})
}

fn violation(run_id: &str, name: &str) -> Value {
    json!({"type": "violation", "runId": run_id, "team": "web", "namespace": "web-shop",
           "rule": "K8sRequiredLabels", "kind": "Deployment", "name": name,
           "category": "missing", "message": "missing owner", "new": null})
}

fn param(request: &test_support::RecordedRequest, name: &str) -> String {
    url::form_urlencoded::parse(request.query.as_bytes())
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.into_owned())
        .unwrap_or_default()
}

#[tokio::test]
async fn the_latest_counted_run_is_the_baseline_and_its_violations_are_read() {
    let loki = LokiServer::start();
    loki.reply_queries(vec![
        // latest first: a dry run, a skipped run and this run itself never count
        answer(
            "run",
            &[
                (EARLIER + 300, run_line("this-run", "ok", false, 9)),
                (EARLIER + 200, run_line("dry", "ok", true, 9)),
                (EARLIER + 100, run_line("skipped", "skipped", false, 0)),
                (EARLIER, run_line("earlier", "partial", false, 2)),
            ],
        ),
        answer(
            "violation",
            &[
                (EARLIER + 2, violation("earlier", "api")),
                (EARLIER + 3, violation("dry", "other-run")),
                (EARLIER + 4, violation("earlier", "cart")),
            ],
        ),
    ]);
    let token = LokiAuth::Bearer(SecretString::from(TOKEN));
    let previous = client(&loki, Some(token))
        .previous_run(&query(HistoryLimits::default()))
        .await
        .unwrap()
        .expect("a baseline");
    assert_eq!(previous.run_id, "earlier");
    assert_eq!(previous.status, RunStatus::Partial);
    assert_eq!(previous.finished_at.as_nanosecond(), EARLIER);
    assert_eq!(previous.failed.into_iter().collect::<Vec<_>>(), ["raster"]);
    let names: Vec<&str> = previous
        .violations
        .iter()
        .map(|v: &PreviousViolation| v.name.as_str())
        .collect();
    assert_eq!(names, ["api", "cart"]);

    // both reads went with the push's tenant and credentials, to the cluster's and job's streams
    let queries = loki.queries();
    assert_eq!(queries.len(), 2);
    for request in &queries {
        assert_eq!(request.header("x-scope-orgid"), Some("demo"));
        assert_eq!(
            request.header("authorization"),
            Some(format!("Bearer {TOKEN}").as_str())
        );
    }
    assert_eq!(
        param(&queries[0], "query"),
        format!(r#"{{job="{JOB}", cluster="dev", team="_run", type="run"}}"#)
    );
    assert_eq!(param(&queries[0], "direction"), "backward");
    assert_eq!(param(&queries[0], "end"), "1796110200000000000");
    assert_eq!(
        param(&queries[0], "start"),
        (1_796_110_200_000_000_000_i128 - 14 * 24 * 3600 * 1_000_000_000).to_string()
    );
    assert_eq!(
        param(&queries[1], "query"),
        format!(r#"{{job="{JOB}", cluster="dev", type="violation"}}"#)
    );
    assert_eq!(param(&queries[1], "direction"), "forward");
    assert_eq!(param(&queries[1], "start"), EARLIER.to_string());
}

#[tokio::test]
async fn violation_lines_are_paged_past_the_last_line_read() {
    let loki = LokiServer::start();
    loki.reply_queries(vec![
        answer("run", &[(EARLIER, run_line("earlier", "ok", false, 3))]),
        answer(
            "violation",
            &[
                (EARLIER + 1, violation("earlier", "a")),
                (EARLIER + 2, violation("earlier", "b")),
            ],
        ),
        answer("violation", &[(EARLIER + 3, violation("earlier", "c"))]),
    ]);
    let limits = HistoryLimits {
        page_lines: 2,
        ..HistoryLimits::default()
    };
    let previous = client(&loki, None)
        .previous_run(&query(limits))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(previous.violations.len(), 3);
    let queries = loki.queries();
    assert_eq!(queries.len(), 3);
    assert_eq!(param(&queries[1], "limit"), "2");
    assert_eq!(param(&queries[2], "start"), (EARLIER + 3).to_string());
}

#[tokio::test]
async fn no_run_in_loki_is_a_first_run() {
    let loki = LokiServer::start();
    let found = client(&loki, None)
        .previous_run(&query(HistoryLimits::default()))
        .await
        .unwrap();
    assert_eq!(found, None);
}

#[tokio::test]
async fn a_run_not_whole_in_loki_or_too_large_is_refused() {
    let loki = LokiServer::start();
    loki.reply_queries(vec![
        answer("run", &[(EARLIER, run_line("earlier", "ok", false, 3))]),
        answer("violation", &[(EARLIER + 1, violation("earlier", "a"))]),
    ]);
    let error = client(&loki, None)
        .previous_run(&query(HistoryLimits::default()))
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "the previous run earlier is not whole in Loki: 1 violation lines read, its run line counts 3"
    );

    let loki = LokiServer::start();
    loki.reply_queries(vec![answer(
        "run",
        &[(EARLIER, run_line("earlier", "ok", false, 11))],
    )]);
    let limits = HistoryLimits {
        max_violations: 10,
        ..HistoryLimits::default()
    };
    let error = client(&loki, None)
        .previous_run(&query(limits))
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "the previous run earlier has 11 violations, more than the 10 compared"
    );
    assert_eq!(loki.queries().len(), 1, "no violation line is read");
}

#[tokio::test]
async fn error_answers_never_carry_the_credentials_in_any_encoding() {
    let basic = || LokiAuth::Basic {
        username: "reader".into(),
        password: SecretString::from(PASSWORD),
    };
    for style in EchoStyle::ALL {
        for (auth, secret) in [
            (basic(), PASSWORD),
            (LokiAuth::Bearer(SecretString::from(TOKEN)), TOKEN),
        ] {
            let loki = LokiServer::start();
            loki.reply_queries(vec![SinkReply::EchoAuthorization { status: 500, style }]);
            let error = client(&loki, Some(auth))
                .previous_run(&query(HistoryLimits::default()))
                .await
                .unwrap_err();
            let text = error.to_string();
            assert!(text.starts_with("server answered HTTP 500"), "{text}");
            assert!(!echo_shows(&text, secret), "{style:?} leaked: {text}");
        }
    }
}

#[tokio::test]
async fn a_hanging_loki_is_a_timeout_of_the_whole_read() {
    let loki = LokiServer::start();
    loki.reply_queries(vec![SinkReply::Hang]);
    let error = client(&loki, None)
        .previous_run(&query(HistoryLimits::default()))
        .await
        .unwrap_err();
    assert_eq!(error, HistoryError::Timeout { seconds: 2 });
    assert_eq!(error.to_string(), "no complete answer within 2s");
}

#[tokio::test]
async fn bodies_that_are_no_loki_answer_are_named_without_quoting_them() {
    let secret_line = violation("earlier", "secret-token").to_string();
    let cases: Vec<(SinkReply, &str)> = vec![
        (
            SinkReply::Json {
                status: 200,
                body: "<html>secret-token</html>".into(),
            },
            "the answer is not a Loki query result (syntax error at line 1 column 1)",
        ),
        (
            SinkReply::Json {
                status: 200,
                body: json!({"status": "success", "data": {"resultType": "matrix", "result": []}})
                    .to_string(),
            },
            "the answer holds no log lines (result type is not streams)",
        ),
        (
            answer("run", &[(EARLIER, json!(secret_line))]),
            "a run line in Loki is not the Loki contract's JSON",
        ),
        (
            SinkReply::Body {
                status: 200,
                bytes: 2 << 20,
            },
            "answer larger than the cap of 1048576 bytes",
        ),
        (SinkReply::Redirect, "server answered HTTP 302"),
        (
            SinkReply::RateLimited {
                retry_after_secs: 5,
            },
            "server answered HTTP 429",
        ),
    ];
    let limits = HistoryLimits {
        max_answer_bytes: 1 << 20,
        ..HistoryLimits::default()
    };
    for (reply, expected) in cases {
        let loki = LokiServer::start();
        loki.reply_queries(vec![reply.clone()]);
        let error = client(&loki, None)
            .previous_run(&query(limits))
            .await
            .unwrap_err();
        let text = error.to_string();
        assert!(text.starts_with(expected), "{reply:?}: {text}");
        assert!(!text.contains("secret"), "{text}");
        if matches!(reply, SinkReply::Body { .. }) {
            assert!(matches!(
                error,
                HistoryError::Query(QueryError::Send(SendError::TooLarge { .. }))
            ));
        }
    }
}

/// A generated `run` or `violation` line: usually the contract's JSON, sometimes a field of the
/// wrong type or missing, sometimes no JSON at all.
fn generated_line() -> impl proptest::strategy::Strategy<Value = Value> {
    use proptest::prelude::*;
    let run = (
        prop_oneof![Just("earlier".to_string()), "\\PC{0,12}"],
        prop_oneof![Just("ok"), Just("partial"), Just("skipped"), Just("odd")],
        any::<bool>(),
        0u64..8,
    )
        .prop_map(|(id, status, dry, total)| run_line(&id, status, dry, total));
    let violation = (
        prop_oneof![Just("earlier".to_string()), "\\PC{0,12}"],
        "\\PC{0,30}",
    )
        .prop_map(|(id, name)| violation(&id, &name));
    prop_oneof![
        4 => run,
        4 => violation,
        1 => "\\PC{0,40}".prop_map(Value::String),
        1 => Just(json!({"type": "run", "runId": 7})),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 48, ..Default::default() })]

    #[test]
    fn generated_history_answers_never_panic_or_outlive_the_timeout(
        pages in proptest::collection::vec(
            proptest::collection::vec((0i128..2000, generated_line()), 0..12),
            1..5,
        ),
        page_lines in 1usize..6,
    ) {
        let loki = LokiServer::start();
        loki.reply_queries(
            pages
                .iter()
                .map(|lines| {
                    let lines: Vec<(i128, Value)> =
                        lines.iter().map(|(ts, line)| (EARLIER + ts, line.clone())).collect();
                    answer("run", &lines)
                })
                .collect(),
        );
        let limits = HistoryLimits { page_lines, run_page_lines: page_lines, ..HistoryLimits::default() };
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let started = std::time::Instant::now();
        let read = runtime.block_on(client(&loki, None).previous_run(&query(limits)));
        proptest::prop_assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
        if let Ok(Some(previous)) = read {
            proptest::prop_assert_ne!(previous.run_id.as_str(), "this-run");
            proptest::prop_assert!(previous.violations.len() <= limits.max_violations);
        }
    }
}
