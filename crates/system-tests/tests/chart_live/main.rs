//! The chart against real servers: the chart rendered for the demo report (the `live` case:
//! every workload kind, so the ClusterRole lists every resource it can) is installed into a real
//! kube-apiserver holding the demo cluster, and the report runs as the chart's ServiceAccount,
//! pushing to a real Loki.
//!
//! - With exactly the ClusterRole's rights the run is `ok` and reports what the snapshot
//!   reports; the dashboard's and the alert rules' queries read that run's numbers back from
//!   Loki (`queries`).
//! - Without any one resource (or template name) of the ClusterRole the run is `skipped`,
//!   naming the 403 of that resource (`rbac`), and the failed-run alert counts those runs.
//!
//! The servers come from `test_support::real` (`$REAL_SERVERS_DIR` or `../shared/tools`); when
//! they are missing the tests say so loudly and pass, or fail under `CI=true`.

mod installed;
mod queries;
mod rbac;

use installed::{DEMO_CLUSTER, Installed};
use queries::RunFacts;
use system_tests::chart::rendered;
use system_tests::release::Release;
use system_tests::workspace;

/// The `live` render installed, or `None` when the servers are missing (said loudly).
fn live(test: &str) -> Option<(&'static Release, Installed)> {
    let release = rendered("live");
    Installed::start(release, test)
        .unwrap()
        .map(|installed| (release, installed))
}

#[test]
fn the_report_runs_ok_as_the_charts_service_account_and_grafana_reads_the_run_from_loki() {
    let Some((release, installed)) = live(
        "the_report_runs_ok_as_the_charts_service_account_and_grafana_reads_the_run_from_loki",
    ) else {
        return;
    };
    let ok = installed.run("ok").unwrap();
    ok.expect(0, "ok").unwrap();
    let facts = RunFacts::from_out(&ok.out).unwrap();
    let offline = installed
        .run_snapshot(&workspace::root().join(DEMO_CLUSTER))
        .unwrap();
    offline.expect(0, "of the demo snapshot").unwrap();
    let expected = RunFacts::from_out(&offline.out).unwrap();
    assert!(
        facts.same_counts(&expected) && facts.total() > 0.0,
        "the run as the chart's ServiceAccount does not report what the demo snapshot reports: \
         {} against {} violations",
        facts.total(),
        expected.total()
    );
    queries::push_gatekeeper_denies(&installed.loki).unwrap();
    queries::check_dashboard(&installed.loki, release, &facts).unwrap();
    queries::check_alerts(&installed.loki, release, &facts, 1, 0).unwrap();
}

#[test]
fn each_grant_of_the_cluster_role_is_needed_and_the_failed_run_alert_counts_the_skipped_runs() {
    let Some((release, installed)) = live(
        "each_grant_of_the_cluster_role_is_needed_and_the_failed_run_alert_counts_the_skipped_runs",
    ) else {
        return;
    };
    let skipped = rbac::check_minimal(&installed).unwrap();
    let last = skipped.last().expect("one run per grant");
    let facts = RunFacts::from_out(&last.out).unwrap();
    queries::check_alerts(
        &installed.loki,
        release,
        &facts,
        skipped.len(),
        skipped.len(),
    )
    .unwrap();
}
