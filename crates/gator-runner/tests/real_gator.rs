//! The real gator (`test-support::real`, the release-shaped tarball): served from the loopback
//! HTTPS server and pinned by its sha256, it goes through download → verify → extract → `gator
//! test` → parse exactly as a report run fetches it; and `engine: both` agrees with the embedded
//! engine on every fixture cluster.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;
use gator_runner::GatorRunner;
use gator_runner::config::{EngineConfig, EngineKind, GatorConfig, build_engine};
use gator_runner::engine::{Both, Embedded, Gator, PolicyEngine, ReviewInput};
use http::StatusCode;
use serde_json::Value;
use test_support::real::{Extracted, Tool, require};
use test_support::{TestCa, TestServer, respond};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

/// The fixture clusters a report can read: raw API lists, the source objects and the demo.
fn fixture_clusters() -> Vec<PathBuf> {
    ["cluster/basic", "cluster-src/basic", "demo/cluster"]
        .iter()
        .map(|dir| fixtures().join(dir))
        .collect()
}

/// `cluster`'s projected objects, as a report run hands them to an engine.
fn review_input(cluster: &Path) -> ReviewInput<'static> {
    let state = cluster_projection::read_snapshot(cluster)
        .unwrap_or_else(|e| panic!("{}: {e}", cluster.display()));
    let (policy, workloads) = cluster_projection::project_split(&state).expect("project");
    let workloads: Vec<Value> = workloads.collect();
    ReviewInput::new(policy, workloads.into_iter())
}

/// Serves the real tarball at `/<version>/<file name>`, as a release mirror would.
fn serve(ca: &TestCa, gator: &Extracted) -> TestServer {
    let body = Bytes::from(std::fs::read(&gator.located.tarball).expect("read the tarball"));
    TestServer::start_tls(ca, move |_| {
        let body = body.clone();
        async move { respond(StatusCode::OK, "application/gzip", body) }
    })
}

fn pinned(server: &TestServer, gator: &Extracted, sha256: &str) -> GatorConfig {
    GatorConfig {
        version: Some(gator.version()),
        url: Some(format!(
            "{}/{}/{}",
            server.url(),
            gator.version(),
            gator.tarball_name()
        )),
        sha256: Some(sha256.to_string()),
        ..GatorConfig::default()
    }
}

#[tokio::test]
async fn real_gator_is_downloaded_verified_extracted_and_run_through_the_report_path() {
    let Some(gator) = require(
        Tool::Gator,
        "real_gator_is_downloaded_verified_extracted_and_run_through_the_report_path",
    ) else {
        return;
    };
    let ca = TestCa::new();
    let server = serve(&ca, &gator);
    let work = tempfile::tempdir().unwrap();
    let input = review_input(&fixtures().join("demo/cluster"));

    let mut config = EngineConfig::new(
        EngineKind::Both,
        pinned(&server, &gator, &gator.sha256),
        work.path(),
    );
    config.timeout = Duration::from_secs(120);
    config.fetch = common::trusting(&ca);
    let engine = build_engine(&config).await.expect("fetch the real gator");
    assert_eq!(server.requests().len(), 1, "downloaded once");
    let extracted = gator_runner::fetch::binary_path(work.path());
    assert_eq!(
        std::fs::read(&extracted).unwrap(),
        std::fs::read(gator.bin("gator")).unwrap(),
        "the binary extracted by gator-runner is the tarball's"
    );

    let summary = tokio::task::spawn_blocking(move || engine.review(input, &mut |_| {}))
        .await
        .unwrap()
        .expect("both engines run");
    assert!(
        gator_runner::fetch::binary_path(work.path()).exists() && work.path().join("in").is_dir(),
        "gator read the objects it wrote to <work>/in"
    );
    let comparison = summary.comparison.expect("both compares");
    assert!(comparison.agrees(), "{comparison}");
    assert!(
        comparison.right_total > 0,
        "the demo cluster has violations"
    );
    assert_eq!(comparison.left_total, comparison.right_total);

    // A pin that does not match the real tarball is refused before anything is opened.
    let wrong = "0".repeat(64);
    let mut config = config.clone();
    config.gator = pinned(&server, &gator, &wrong);
    let other_work = tempfile::tempdir().unwrap();
    config.work_dir = other_work.path().to_path_buf();
    let error = build_engine(&config)
        .await
        .err()
        .expect("a wrong pin fails");
    let chain = format!("{:?}", anyhow_like(&error));
    assert!(chain.contains("sha256 mismatch"), "{chain}");
    assert!(!gator_runner::fetch::binary_path(other_work.path()).exists());
}

/// The error and its sources, one per line.
fn anyhow_like(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(&format!("\n{cause}"));
        source = cause.source();
    }
    text
}

#[test]
fn real_gator_and_the_embedded_engine_agree_on_every_fixture_cluster() {
    let Some(gator) = require(
        Tool::Gator,
        "real_gator_and_the_embedded_engine_agree_on_every_fixture_cluster",
    ) else {
        return;
    };
    let runner = GatorRunner::new(gator.bin("gator"))
        .with_timeout(Duration::from_secs(120))
        .with_k8s_native_validation(Some(false));
    let mut violations = 0;
    for cluster in fixture_clusters() {
        let work = tempfile::tempdir().unwrap();
        let both = Both::new(Embedded::default(), Gator::new(runner.clone(), work.path()));
        let summary = both
            .review(review_input(&cluster), &mut |_| {})
            .unwrap_or_else(|e| panic!("{}: {}", cluster.display(), anyhow_like(&e)));
        let comparison = summary.comparison.expect("both compares");
        assert!(comparison.agrees(), "{}: {comparison}", cluster.display());
        violations += comparison.right_total;
    }
    assert!(violations > 0, "the fixture clusters have violations");
}
