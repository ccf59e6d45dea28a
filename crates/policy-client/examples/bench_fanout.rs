//! Benchmark `fanout`: 50 loopback HTTPS regions, each answering after 100 ms with a realistic
//! policy document; the library path of `jobcheck check -o json` (client set-up with system
//! roots + caFile, concurrent fan-out, conversion, verdicts, enforcement warnings, drift, ECR
//! augmentation, JSON rendering) must finish in under 400 ms wall and 50 MiB peak RSS.
//!
//! The fake server runs in the same process, so the RSS figure includes it. Run with
//! `cargo xtask bench fanout`; exits non-zero when a target is missed.

use std::io::Write;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use admission_core::enforcement::enforcement_warnings;
use admission_core::{all_policy_drift, ecr_augmentation, prefill_namespaces, region_verdicts};
use policy_client::{Auth, FetchOptions, PolicyClient, Region, trust_with_ca_file};
use serde_json::{Value, json};
use test_support::TestCa;
use test_support::policy_server::{Behaviour, PolicyServer, sample_policy_response};

const REGIONS: usize = 50;
const ANSWER_DELAY: Duration = Duration::from_millis(100);
const WALL_TARGET: Duration = Duration::from_millis(400);
const RSS_TARGET_MIB: f64 = 50.0;

fn main() -> ExitCode {
    let process_start = Instant::now();
    let ca = TestCa::new();
    let server = PolicyServer::start(&ca);
    let mut ca_file = tempfile::NamedTempFile::new().expect("temp caFile");
    ca_file
        .write_all(ca.ca_pem().as_bytes())
        .expect("write caFile");
    let names: Vec<String> = (0..REGIONS).map(|i| format!("region-{i:02}")).collect();
    for (i, name) in names.iter().enumerate() {
        let mut document = sample_policy_response(name);
        if i % 10 == 7 {
            // A little drift, so the drift path does real work.
            document["policy"]["manifest_caps"]["max_gpu_count"] = json!(8);
        }
        server.route(name, Behaviour::Slow(ANSWER_DELAY, document));
    }
    let regions: Vec<Region> = names
        .iter()
        .map(|name| Region::new(name, &server.endpoint(name)).expect("endpoint"))
        .collect();
    let setup = process_start.elapsed();

    // --- what `jobcheck check -o json` does after parsing its arguments ---
    let started = Instant::now();
    let client = PolicyClient::with_trust(
        Auth::None,
        FetchOptions::default(),
        &trust_with_ca_file(Some(ca_file.path())),
    )
    .expect("client");
    let policies = client
        .fetch_region_policies_blocking(&regions, &mut |_| {})
        .expect("runtime");
    let fetched = started.elapsed();

    let mut manifests = vec![sample_job()];
    prefill_namespaces(&mut manifests, "gco-jobs").expect("prefill");
    let verdicts = region_verdicts(&manifests, &policies).expect("verdicts");
    let verdicts: Vec<Value> = verdicts
        .iter()
        .zip(&policies)
        .map(|(verdict, policy)| {
            let mut value = serde_json::to_value(verdict).expect("verdict json");
            value["warnings"] = serde_json::to_value(enforcement_warnings(
                &manifests,
                &policy.cluster_enforcement,
            ))
            .expect("warnings json");
            value
        })
        .collect();
    let unreadable: serde_json::Map<String, Value> = policies
        .iter()
        .filter(|p| !p.is_ok())
        .map(|p| (p.region.clone(), json!(p.reason)))
        .collect();
    let payload = json!({
        "regions": names,
        "unreadable": unreadable,
        "verdicts": verdicts,
        "policy_drift": all_policy_drift(&policies).expect("drift"),
        "ecr_augmentation": ecr_augmentation(&policies).expect("ecr"),
    });
    let rendered = serde_json::to_string_pretty(&payload).expect("render");
    let wall = started.elapsed();

    let ok = policies.iter().filter(|p| p.is_ok()).count();
    let drift = payload["policy_drift"].as_array().map_or(0, Vec::len);
    let rss_mib = peak_rss_mib();
    println!(
        "fanout: {REGIONS} regions ({ok} ok), answers after {} ms: fetch {:.1} ms, \
         fetch+judge+render {:.1} ms (target < {} ms), {} bytes of JSON, {drift} drift field(s); \
         set-up {:.1} ms; peak RSS {rss_mib:.1} MiB (target < {RSS_TARGET_MIB} MiB)",
        ANSWER_DELAY.as_millis(),
        fetched.as_secs_f64() * 1e3,
        wall.as_secs_f64() * 1e3,
        WALL_TARGET.as_millis(),
        rendered.len(),
        setup.as_secs_f64() * 1e3,
    );
    let mut failed = false;
    if let Some(cli_wall) = time_the_cli(&server, &names, ca_file.path()) {
        println!(
            "fanout: `jobcheck check -o json` over the same {REGIONS} regions: {:.1} ms wall (target < {} ms)",
            cli_wall.as_secs_f64() * 1e3,
            WALL_TARGET.as_millis()
        );
        if cli_wall >= WALL_TARGET {
            eprintln!("fanout: the CLI missed the wall-time target");
            failed = true;
        }
    }
    if ok != REGIONS {
        eprintln!("fanout: only {ok} of {REGIONS} regions were read");
        failed = true;
    }
    if wall >= WALL_TARGET {
        eprintln!("fanout: missed the wall-time target");
        failed = true;
    }
    if rss_mib >= RSS_TARGET_MIB {
        eprintln!("fanout: missed the peak-RSS target");
        failed = true;
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// A GPU training job as users submit it.
fn sample_job() -> Value {
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "trainer"},
        "spec": {"parallelism": 2, "template": {"spec": {
            "restartPolicy": "Never",
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
            "securityContext": {"runAsNonRoot": true, "runAsUser": 1000},
            "containers": [{
                "name": "train",
                "image": "nvcr.io/nvidia/pytorch:24.01-py3",
                "resources": {
                    "requests": {"cpu": "32", "memory": "256Gi"},
                    "limits": {"cpu": "32", "memory": "256Gi", "nvidia.com/gpu": "8"}
                }
            }]
        }}}
    })
}

/// This process's peak resident set size (`VmHWM`), in MiB.
fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .map_or(0.0, |kib| kib / 1024.0)
}

/// When `JOBCHECK_BIN` names a built `jobcheck` (xtask builds it in release mode), runs the whole
/// `jobcheck check <job> -o json` against the same regions and returns its wall time. The peak RSS
/// xtask reports covers this child too (rusage of children).
fn time_the_cli(
    server: &PolicyServer,
    names: &[String],
    ca_file: &std::path::Path,
) -> Option<Duration> {
    let binary = std::env::var_os("JOBCHECK_BIN")?;
    let dir = tempfile::tempdir().expect("temp dir");
    let regions: String = names
        .iter()
        .map(|name| {
            format!(
                "  - name: {name}\n    endpoint: {}\n",
                server.endpoint(name)
            )
        })
        .collect();
    let file = dir.path().join("jobcheck.yaml");
    std::fs::write(
        &file,
        format!(
            "regions:\n{regions}auth: {{type: none}}\ncaFile: {}\n",
            ca_file.display()
        ),
    )
    .expect("write regions file");
    let started = Instant::now();
    let output = std::process::Command::new(binary)
        .args([
            "check",
            "fixtures/jobcheck/gpu-job.yaml",
            "-o",
            "json",
            "--regions-file",
        ])
        .arg(&file)
        .output()
        .expect("run jobcheck");
    let wall = started.elapsed();
    assert!(
        output.status.success(),
        "jobcheck failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let payload: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON payload");
    assert_eq!(
        payload["verdicts"].as_array().map(Vec::len),
        Some(names.len())
    );
    Some(wall)
}
