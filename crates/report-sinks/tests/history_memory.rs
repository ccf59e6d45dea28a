//! The history read's memory and time against answers inside every cap (`LokiClient::previous_run`
//! from the loopback fake Loki): a 27 MiB answer whose many streams carry many labels, pages of
//! long violation lines that add up over a large run, and a read slower than `timeouts.query`.
//!
//! Peak memory is measured in a child process (this test binary run again for one test), so the
//! other tests' allocations are not counted: the child resets its peak RSS (`VmHWM`, Linux's
//! `clear_refs`) once the fake Loki holds its answers, reads, and prints how far the peak rose.

use std::process::Command;
use std::time::{Duration, Instant};

use report_sinks::{
    HistoryError, HistoryLimits, HistoryQuery, HttpOptions, LokiClient, LokiEndpoint,
};
use test_support::loki::LokiServer;
use test_support::slack::SinkReply;

const JOB: &str = "gatekeeper-workload-report";
/// 2026-11-30T07:30:00Z in Unix nanoseconds: the previous run's `finishedAt`.
const EARLIER: i128 = 1_796_023_800_000_000_000;
/// The chart's memory limit for the report (`charts/…/values.yaml`: 512Mi).
const CHART_LIMIT: u64 = 512 << 20;
/// What the history read may add to the report's memory: half the chart's limit leaves the rest
/// for the counts and the digests.
const HISTORY_BUDGET: u64 = CHART_LIMIT / 2;
const CHILD: &str = "REPORT_SINKS_HISTORY_MEMORY_CHILD";

fn client(loki: &LokiServer, timeout: Duration) -> LokiClient {
    LokiClient::new(
        &LokiEndpoint {
            url: loki.url(),
            tenant: None,
            auth: None,
        },
        &HttpOptions {
            timeout,
            connect_timeout: Duration::from_secs(2),
            trust: report_sinks::TrustRoots::system(),
        },
    )
    .unwrap()
}

fn query(timeout: Duration) -> HistoryQuery {
    HistoryQuery {
        job: JOB.into(),
        cluster: "dev".into(),
        run_id: "this-run".into(),
        before: "2026-12-01T07:30:00Z".parse().unwrap(),
        lookback: Duration::from_secs(14 * 24 * 3600),
        timeout,
        limits: HistoryLimits::default(),
    }
}

fn run_line(total: u64) -> String {
    serde_json::json!({"type": "run", "runId": "earlier", "cluster": "dev", "status": "ok",
        "dryRun": false, "posted": [], "failed": [], "total": total, "errors": 0})
    .to_string()
}

/// A `query_range` answer of `streams` streams, each with `labels` labels and `values` (the
/// JSON of its `values`), as Loki sends it.
fn answer(streams: usize, labels: usize, values: &str) -> SinkReply {
    let mut body = String::from(r#"{"status":"success","data":{"resultType":"streams","result":["#);
    for stream in 0..streams {
        if stream > 0 {
            body.push(',');
        }
        body.push_str(r#"{"stream":{"#);
        for label in 0..labels {
            if label > 0 {
                body.push(',');
            }
            body.push_str(&format!(
                r#""label_{label:04}":"value-{stream:06}-{label:04}""#
            ));
        }
        body.push_str(r#"},"values":"#);
        body.push_str(values);
        body.push('}');
    }
    body.push_str("]}}");
    SinkReply::Json { status: 200, body }
}

/// `count` `[ts, line]` values, all of `line` at `ts`.
fn values(count: usize, ts: i128, line: &str) -> String {
    let quoted = serde_json::to_string(line).unwrap();
    let one = format!(r#"["{ts}",{quoted}]"#);
    let mut values = String::with_capacity(count * (one.len() + 1) + 2);
    values.push('[');
    for i in 0..count {
        if i > 0 {
            values.push(',');
        }
        values.push_str(&one);
    }
    values.push(']');
    values
}

fn rss_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// In the child: reads the previous run from `loki` and prints the read's error and how far the
/// peak RSS rose above the RSS before the read.
fn measure(loki: &LokiServer) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = client(loki, Duration::from_secs(60));
    let before = rss_kib("VmRSS:");
    std::fs::write("/proc/self/clear_refs", "5").expect("peak RSS can be reset");
    let read = runtime.block_on(client.previous_run(&query(Duration::from_secs(60))));
    let peak = rss_kib("VmHWM:");
    let error = match read {
        Ok(_) => "none".to_string(),
        Err(error) => error.to_string(),
    };
    println!("history-read-error={error}");
    println!(
        "history-read-peak-increase-kib={}",
        peak.saturating_sub(before)
    );
}

/// Runs `test` again in a child process and returns the read's error and peak RSS increase.
fn in_child(test: &str) -> (String, u64) {
    let output = Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "child failed: {stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let field = |name: &str| {
        stdout
            .lines()
            .find_map(|l| l.split_once(name).map(|(_, value)| value))
            .unwrap_or_else(|| panic!("{name} missing in {stdout}"))
            .to_string()
    };
    let increase = field("history-read-peak-increase-kib=")
        .parse::<u64>()
        .unwrap()
        << 10;
    eprintln!(
        "{test}: peak RSS rose {} MiB during the read",
        increase >> 20
    );
    (field("history-read-error="), increase)
}

#[test]
fn a_27_mib_answer_of_many_labelled_streams_is_refused_within_the_memory_limit() {
    if std::env::var_os(CHILD).is_some() {
        // 1,000 streams of 100 labels, 2,500 lines each: 2.5M lines and 27 MiB, under the 32 MiB
        // cap; the run lines' query asked for 100
        let loki = LokiServer::start();
        let reply = answer(1000, 100, &values(2500, 1, "{}"));
        let SinkReply::Json { body, .. } = &reply else {
            unreachable!()
        };
        assert!((26 << 20..32 << 20).contains(&body.len()), "{}", body.len());
        loki.reply_queries(vec![reply]);
        measure(&loki);
        return;
    }
    let (error, increase) =
        in_child("a_27_mib_answer_of_many_labelled_streams_is_refused_within_the_memory_limit");
    assert_eq!(error, "the answer holds more than the 100 lines asked for");
    assert!(increase < HISTORY_BUDGET, "{} MiB", increase >> 20);
}

#[test]
fn pages_of_long_violation_lines_stop_at_the_kept_text_cap_within_the_memory_limit() {
    if std::env::var_os(CHILD).is_some() {
        // 5,000 lines of 5 KiB names a page (27 MiB answers, many labels): the run's 100,000
        // violations would keep 500 MiB of names
        let name = "n".repeat(5 << 10);
        let line = serde_json::json!({"type": "violation", "runId": "earlier", "team": "web",
            "namespace": "web-shop", "rule": "K8sRequiredLabels", "kind": "Deployment",
            "name": name, "category": "missing", "message": "m", "new": null})
        .to_string();
        let loki = LokiServer::start();
        loki.reply_queries(vec![
            answer(
                1,
                100,
                &format!(
                    r#"[["{EARLIER}",{}]]"#,
                    serde_json::to_string(&run_line(100_000)).unwrap()
                ),
            ),
            answer(1, 2000, &values(5000, EARLIER + 1, &line)),
        ]);
        measure(&loki);
        return;
    }
    let (error, increase) =
        in_child("pages_of_long_violation_lines_stop_at_the_kept_text_cap_within_the_memory_limit");
    assert_eq!(
        error,
        "the previous run earlier's violation lines hold more than 67108864 bytes of names, more than are compared"
    );
    assert!(increase < HISTORY_BUDGET, "{} MiB", increase >> 20);
}

#[tokio::test]
async fn a_read_slower_than_its_timeout_ends_at_the_timeout() {
    // The first page of violations comes at once, the next never: the read must end at its
    // timeout however fast this machine parses (a fast machine read all twenty pages of an
    // earlier version of this test inside the timeout and hit the violation cap instead).
    let line = serde_json::json!({"type": "violation", "runId": "earlier", "team": "web",
        "namespace": "web-shop", "rule": "K8sRequiredLabels", "kind": "Deployment",
        "name": "api", "category": "missing", "message": "m", "new": null})
    .to_string();
    let loki = LokiServer::start();
    loki.reply_queries(vec![
        answer(
            1,
            1,
            &format!(
                r#"[["{EARLIER}",{}]]"#,
                serde_json::to_string(&run_line(100_000)).unwrap()
            ),
        ),
        answer(1, 1, &values(5000, EARLIER + 1, &line)),
        SinkReply::Hang,
    ]);
    let timeout = Duration::from_millis(300);
    let started = Instant::now();
    let error = client(&loki, Duration::from_secs(10))
        .previous_run(&query(timeout))
        .await
        .unwrap_err();
    let took = started.elapsed();
    assert_eq!(error, HistoryError::Timeout { seconds: 1 });
    assert!(took < timeout + Duration::from_secs(1), "{took:?}");
}
