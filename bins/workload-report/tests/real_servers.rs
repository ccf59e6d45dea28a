//! `workload-report run` against a real kube-apiserver and a real Loki (`test-support::real`):
//! the demo cluster loaded into the server gives the same report as the demo snapshot; every line
//! the run says it pushed (`--out DIR/loki.json`) reads back from Loki with `query_range`; the
//! live run's `--save-snapshot` replays to the identical report, and `explain` reads the cluster
//! as the snapshot; and a constraint kind without a
//! CRD skips the run, naming it, with the skipped run line in Loki.

mod real_common;

use std::path::{Path, PathBuf};

use real_common::{
    JOB, TENANT, demo_cluster, dry_run, normalized_out, read_json, run, write_config,
};
use serde_json::Value;
use test_support::real::{RealKube, RealLoki, Streams, Tool, read_objects, require, streams_of};

/// The demo cluster in a real API server, a real Loki and a scratch directory.
struct Live {
    kube: RealKube,
    loki: RealLoki,
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
}

impl Live {
    fn start(test: &str) -> Option<Live> {
        let kube_tools = require(Tool::Kube, test)?;
        let loki_tools = require(Tool::Loki, test)?;
        let kube = RealKube::start(&kube_tools);
        kube.load(&read_objects(&demo_cluster()));
        let loki = RealLoki::start(&loki_tools);
        let dir = tempfile::tempdir().unwrap();
        let kubeconfig = kube.write_kubeconfig(dir.path(), kube.admin_token());
        Some(Live {
            kube,
            loki,
            dir,
            kubeconfig,
        })
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn source_args(&self) -> [&str; 4] {
        [
            "--kubeconfig",
            self.kubeconfig.to_str().unwrap(),
            "--context",
            "real",
        ]
    }

    /// Every stream Loki holds for the demo job within a minute of `ts`.
    fn loki_streams(&self, ts: i128) -> Streams {
        self.loki
            .streams_around(TENANT, &format!("{{job=\"{JOB}\"}}"), ts)
    }
}

/// `loki.json` of an `--out` directory as streams, and its (one) timestamp.
fn sent_streams(out: &Path) -> (Streams, i128) {
    let sent = streams_of(&read_json(&out.join("loki.json")));
    let ts = sent
        .values()
        .flatten()
        .map(|[ts, _]| ts.parse().unwrap())
        .next()
        .expect("a line was sent");
    (sent, ts)
}

/// `files` with the change since the previous run said one way: the run with a Loki reads it
/// (nothing there yet: a first run) and the offline runs cannot (history unavailable); that is
/// the one difference the source of the cluster does not explain.
fn without_history(
    files: std::collections::BTreeMap<String, Value>,
) -> std::collections::BTreeMap<String, Value> {
    files
        .into_iter()
        .map(|(name, value)| {
            let text = value.to_string().replace(
                "hange unknown (first run)",
                "hange unknown (history unavailable)",
            );
            (name, serde_json::from_str(&text).unwrap())
        })
        .collect()
}

#[test]
fn real_cluster_run_matches_the_snapshot_reaches_loki_and_replays_identically() {
    let Some(live) =
        Live::start("real_cluster_run_matches_the_snapshot_reaches_loki_and_replays_identically")
    else {
        return;
    };
    let offline = write_config(live.dir.path(), "offline.yaml", None, "");
    let online = write_config(live.dir.path(), "online.yaml", Some(&live.loki.url()), "");

    let snapshot_out = live.path("snapshot-out");
    let demo = demo_cluster();
    dry_run(
        &offline,
        &["--snapshot", demo.to_str().unwrap()],
        &snapshot_out,
        &[],
    )
    .expect_code(0);

    let live_out = live.path("live-out");
    let saved = live.path("saved.tar.gz");
    let outcome = dry_run(
        &online,
        &live.source_args(),
        &live_out,
        &["--save-snapshot", saved.to_str().unwrap()],
    );
    outcome.expect_code(0);
    assert_eq!(outcome.run_line()["status"], "ok");

    // The same report from the real API server as from the snapshot it was loaded from: every
    // digest, every Loki line and the run line (the audit check included: the loaded audit
    // timestamps keep their distance from the server's creation timestamps).
    let from_live = without_history(normalized_out(&live_out));
    assert_eq!(from_live, without_history(normalized_out(&snapshot_out)));
    assert!(
        from_live["run.json"]["auditCheck"]["K8sContainerLimits"]["engine"]
            .as_u64()
            .is_some_and(|n| n > 0),
        "{}",
        from_live["run.json"]
    );

    // Loki holds exactly the lines `--out` says were sent.
    let (sent, ts) = sent_streams(&live_out);
    let types: std::collections::BTreeSet<&str> =
        sent.keys().map(|labels| labels["type"].as_str()).collect();
    assert_eq!(
        types.into_iter().collect::<Vec<_>>(),
        ["run", "summary", "team_total", "violation"]
    );
    assert_eq!(live.loki_streams(ts), sent);

    // The saved snapshot of the live read replays to the identical report.
    let replay_out = live.path("replay-out");
    dry_run(
        &offline,
        &["--snapshot", saved.to_str().unwrap()],
        &replay_out,
        &[],
    )
    .expect_code(0);
    assert_eq!(without_history(normalized_out(&replay_out)), from_live);

    // `explain` reads the real cluster as `run` does: the same coverage as from the snapshot,
    // the Pod-only rule seen through the ExpansionTemplate listed from the server.
    let mut explain = vec!["explain", "--config", offline.to_str().unwrap()];
    explain.extend(live.source_args());
    let from_cluster = run(&explain, &[]);
    from_cluster.expect_code(0);
    let from_snapshot = run(
        &[
            "explain",
            "--config",
            offline.to_str().unwrap(),
            "--snapshot",
            demo.to_str().unwrap(),
        ],
        &[],
    );
    assert_eq!(from_cluster.stdout, from_snapshot.stdout);
    assert!(
        from_cluster
            .stdout
            .contains("Deployment: through ExpansionTemplate expand-deployments-statefulsets"),
        "{}",
        from_cluster.stdout
    );
}

#[test]
fn real_cluster_constraint_kind_without_crd_skips_the_run_naming_it() {
    let Some(live) =
        Live::start("real_cluster_constraint_kind_without_crd_skips_the_run_naming_it")
    else {
        return;
    };
    let config = write_config(live.dir.path(), "online.yaml", Some(&live.loki.url()), "");
    let text = std::fs::read_to_string(&config).unwrap().replace(
        "  - K8sReplicaLimits\n",
        "  - K8sReplicaLimits\n  - K8sAllowedRepos\n",
    );
    std::fs::write(&config, text).unwrap();
    let out = live.path("out");
    let outcome = dry_run(&config, &live.source_args(), &out, &[]);
    outcome.expect_code(1);
    let line = outcome.run_line();
    assert_eq!(line["status"], "skipped");
    let reason = line["reason"].as_str().unwrap();
    assert!(
        reason.contains("constraint kind K8sAllowedRepos is not served by the API")
            && reason.contains("k8sallowedrepos: HTTP 404"),
        "{reason}"
    );
    // The kinds that exist are served: the API answered 404 for this one only.
    live.kube
        .get("/apis/constraints.gatekeeper.sh/v1beta1/k8sreplicalimits");

    // Only the run line reaches Loki, saying why.
    let (sent, ts) = sent_streams(&out);
    assert_eq!(sent.len(), 1, "{sent:?}");
    let stored = live.loki_streams(ts);
    assert_eq!(stored, sent);
    let [_, line] = &stored.values().next().unwrap()[0];
    let line: Value = serde_json::from_str(line).unwrap();
    assert_eq!(line["status"], "skipped");
    assert_eq!(line["reason"].as_str(), Some(reason));
}
