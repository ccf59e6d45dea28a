//! The chart's output through the binary it ships: the rendered report config passes
//! `workload-report routes --config` (the loading and validation of `run --config`), and the
//! CronJob, a Job and a Pod made from it pass the project's example workload constraints
//! (`fixtures/gatekeeper/`) under `workload-report eval`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use system_tests::binary;
use system_tests::chart::rendered;
use system_tests::workspace::{self, sorted_dirs};

/// Example workload constraints (templates and constraints) the job's own Pod must pass.
const GATEKEEPER_FIXTURES: &str = "fixtures/gatekeeper";

fn path_arg(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 temporary path")
}

/// The rendered configs are accepted (exit 0), and a copy broken by `maxNamesPerRule: 0` is
/// refused (exit 2), so the check can fail.
#[test]
fn the_rendered_config_passes_the_binarys_validation_and_a_broken_copy_does_not() {
    let dir = tempfile::tempdir().unwrap();
    for (case, name) in [
        ("full", "nightly-report-config"),
        ("minimal", "wr-workload-report-config"),
    ] {
        let text = rendered(case).find("ConfigMap", name)["data"]["config.yaml"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(!text.is_empty(), "case {case}: no config.yaml in {name}");
        let file = dir.path().join(format!("{case}-config.yaml"));
        std::fs::write(&file, &text).unwrap();
        let run = binary::run(&["routes", "--config", path_arg(&file)], &BTreeMap::new()).unwrap();
        assert_eq!(
            run.code,
            Some(0),
            "the rendered {case} config is refused by `workload-report routes --config`:\n{}",
            run.text
        );
        let mut broken: Value = serde_yaml::from_str(&text).unwrap();
        broken["maxNamesPerRule"] = json!(0);
        let file = dir.path().join(format!("{case}-config-broken.yaml"));
        std::fs::write(&file, serde_yaml::to_string(&broken).unwrap()).unwrap();
        let run = binary::run(&["routes", "--config", path_arg(&file)], &BTreeMap::new()).unwrap();
        assert_eq!(
            run.code,
            Some(2),
            "`workload-report routes --config` accepted maxNamesPerRule: 0:\n{}",
            run.text
        );
    }
}

/// The CronJob, a Job and a Pod made from its template, in a namespace labelled as its owners
/// would, pass the example constraints under the embedded engine: not even a warn or dryrun
/// result.
#[test]
fn the_jobs_own_objects_pass_the_example_workload_constraints() {
    let cron = rendered("full").find("CronJob", "nightly-report").clone();
    let ns = cron["metadata"]["namespace"].clone();
    let template = &cron["spec"]["jobTemplate"]["spec"]["template"];
    let mut pod_meta = template["metadata"].clone();
    pod_meta["name"] = json!("nightly-report-manual-1-abcde");
    pod_meta["namespace"] = ns.clone();
    let pod =
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": template["spec"]});
    let mut job_spec = cron["spec"]["jobTemplate"]["spec"].clone();
    job_spec["template"]["metadata"]["labels"]["job-name"] = json!("nightly-report-manual-1");
    let job = json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "nightly-report-manual-1", "namespace": ns.clone(),
                     "labels": cron["spec"]["jobTemplate"]["metadata"]["labels"]},
        "spec": job_spec
    });
    // The release namespace as its owners would label it, so namespace selectors can match.
    let namespace = json!({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": ns, "labels": {"owner": "platform.team", "app": "workload-report"}}
    });
    let mut docs = String::new();
    for object in [&namespace, &cron, &job, &pod] {
        docs.push_str("---\n");
        docs.push_str(&serde_yaml::to_string(object).unwrap());
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("job-pod.yaml");
    std::fs::write(&file, docs).unwrap();
    let mut args = vec!["eval".to_string(), "-f".into(), path_arg(&file).into()];
    for policy in policy_files(&workspace::root().join(GATEKEEPER_FIXTURES)) {
        args.push("-f".into());
        args.push(path_arg(&policy).into());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = binary::run(&args, &BTreeMap::new()).unwrap();
    assert!(
        run.code == Some(0) && run.text.trim().is_empty(),
        "the CronJob's Pod does not pass the example constraints (`workload-report {}` exit \
         {:?}):\n{}",
        args.join(" "),
        run.code,
        run.text
    );
}

/// The example policies under `fixtures/gatekeeper/`: every `<policy>/template.yaml` and every
/// `<policy>/samples/<sample>/constraint.yaml` except the `bad-params` samples (invalid on
/// purpose).
fn policy_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for policy in sorted_dirs(dir).unwrap() {
        let template = policy.join("template.yaml");
        if !template.is_file() {
            continue;
        }
        files.push(template);
        for sample in sorted_dirs(&policy.join("samples")).unwrap() {
            let constraint = sample.join("constraint.yaml");
            if constraint.is_file() && !sample.ends_with("bad-params") {
                files.push(constraint);
            }
        }
    }
    assert!(
        files.iter().any(|f| f.ends_with("constraint.yaml")),
        "no template with a sample constraint under {}",
        dir.display()
    );
    files
}
