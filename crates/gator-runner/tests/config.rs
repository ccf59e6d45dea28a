//! Building engines from configuration: `engine: embedded|gator|both`, the pin or a local
//! `gator.path`, and the real embedded engine compared with a stand-in gator.

mod common;

use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use common::{Member, sha, tarball};
use gator_runner::config::{
    BuildError, ConfigError, EngineConfig, EngineKind, GatorConfig, build_engine,
};
use gator_runner::download::DownloadOptions;
use gator_runner::engine::{Embedded, PolicyEngine, ReviewInput, read_dir_input};
use gator_runner::{ExtraCa, FetchOptions, PinError, TrustRoots};
use http::StatusCode;
use test_support::{TestCa, TestServer, respond};

/// The objects of `tests/data/projection` (a template, a constraint, two Deployments).
fn projection() -> ReviewInput<'static> {
    read_dir_input(&common::data("projection")).unwrap()
}

/// A stand-in gator that records its arguments and prints `file` (the spec's JSON format).
fn stand_in(dir: &Path, file: &str) -> std::path::PathBuf {
    common::script(
        dir,
        "gator-local",
        &format!(
            "printf '%s\\n' \"$@\" > '{}'\ncat '{}'",
            dir.join("args.txt").display(),
            common::data(file).display()
        ),
    )
}

fn local(path: &Path) -> GatorConfig {
    GatorConfig {
        path: Some(path.to_path_buf()),
        ..GatorConfig::default()
    }
}

#[tokio::test]
async fn embedded_needs_no_gator() {
    let work = tempfile::tempdir().unwrap();
    let config = EngineConfig::new(EngineKind::Embedded, GatorConfig::default(), work.path());
    let engine = build_engine(&config).await.unwrap();
    assert_eq!(engine.name(), "embedded");
    let results = engine.review_to_vec(projection()).unwrap();
    let names: Vec<_> = results.iter().map(|r| r.object.name.as_str()).collect();
    assert_eq!(names, ["api"]);
    assert_eq!(results[0].msg, "Deployment api has no owner label");
}

#[tokio::test]
async fn gator_engines_need_a_pin_or_a_path() {
    let work = tempfile::tempdir().unwrap();
    for engine in [EngineKind::Gator, EngineKind::Both] {
        let mut gator = GatorConfig {
            version: Some("v3.22.0".into()),
            url: Some("https://mirror.example/s3cr3t/gator-v3.22.0.tar.gz".into()),
            ..GatorConfig::default()
        };
        let config = EngineConfig::new(engine, gator.clone(), work.path());
        assert!(!format!("{config:?}").contains("s3cr3t"), "{config:?}");
        assert!(matches!(
            config.validate(),
            Err(ConfigError::PartialPin { missing: "sha256" })
        ));
        let error = build_engine(&config).await.err().unwrap();
        assert!(matches!(
            error,
            BuildError::Config(ConfigError::PartialPin { missing: "sha256" })
        ));
        let none = EngineConfig::new(engine, GatorConfig::default(), work.path());
        assert_eq!(
            none.validate().unwrap_err().to_string(),
            "gator.version: is required when the engine runs gator and gator.path is not set"
        );

        gator.sha256 = Some("ABC".into());
        let config = EngineConfig::new(engine, gator, work.path());
        assert!(matches!(
            config.validate(),
            Err(ConfigError::Pin(PinError::BadSha256 { len: 3 }))
        ));

        let config = EngineConfig::new(engine, local(&work.path().join("absent")), work.path());
        assert!(matches!(
            config.validate(),
            Err(ConfigError::PathNotFile(_))
        ));
    }
    assert!("embeded".parse::<EngineKind>().is_err());
    assert_eq!("both".parse::<EngineKind>().unwrap(), EngineKind::Both);
}

#[test]
fn gator_section_deserializes_strictly() {
    let parsed: GatorConfig = serde_json::from_str(
        r#"{"version":"v3.22.0","url":"https://h/v3.22.0","sha256":"00","path":"/opt/gator","k8sNativeValidation":false}"#,
    )
    .unwrap();
    assert_eq!(parsed.path.as_deref(), Some(Path::new("/opt/gator")));
    assert_eq!(parsed.k8s_native_validation, Some(false));
    assert!(serde_json::from_str::<GatorConfig>(r#"{"sha":"00"}"#).is_err());
    let engine: EngineKind = serde_json::from_str(r#""gator""#).unwrap();
    assert_eq!(engine, EngineKind::Gator);
}

#[tokio::test]
async fn local_gator_path_is_used_as_is() {
    let dir = tempfile::tempdir().unwrap();
    let gator = stand_in(dir.path(), "gator-projection.json");
    let mut config = EngineConfig::new(EngineKind::Gator, local(&gator), dir.path());
    config.timeout = Duration::from_secs(20);
    let engine = build_engine(&config).await.unwrap();
    assert_eq!(engine.name(), "gator");
    let results = engine.review_to_vec(projection()).unwrap();
    assert_eq!(results.len(), 1);
    let args = std::fs::read_to_string(dir.path().join("args.txt")).unwrap();
    assert_eq!(
        args,
        format!("test\n-f\n{}\n-o\njson\n", dir.path().join("in").display()),
        "gator reads the objects it wrote to <work>/in, and keeps its default for native validation"
    );
    // Every object was written there, a file per kind (and the manifest of what was written).
    let mut written: Vec<String> = std::fs::read_dir(dir.path().join("in"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    written.sort();
    let objects: usize = written
        .iter()
        .filter(|name| name.ends_with(".json"))
        .map(|name| {
            let text = std::fs::read_to_string(dir.path().join("in").join(name)).unwrap();
            text.lines().count()
        })
        .sum();
    assert_eq!(objects, 4, "{written:?}");
    assert!(
        written.contains(&".projection-manifest".to_string()),
        "{written:?}"
    );
}

#[tokio::test]
async fn both_agrees_when_gator_gives_the_embedded_results() {
    let dir = tempfile::tempdir().unwrap();
    let gator = stand_in(dir.path(), "gator-projection.json");
    let config = EngineConfig::new(EngineKind::Both, local(&gator), dir.path());
    let engine = build_engine(&config).await.unwrap();
    assert_eq!(engine.name(), "both");
    let mut results = Vec::new();
    let summary = engine
        .review(projection(), &mut |r| results.push(r))
        .unwrap();
    let comparison = summary.comparison.unwrap();
    assert!(comparison.agrees(), "{comparison}");
    assert_eq!(
        results,
        Embedded::default().review_to_vec(projection()).unwrap()
    );
    // Both engines evaluate CEL where a template has it (gator's default, no flag) ...
    let args = std::fs::read_to_string(dir.path().join("args.txt")).unwrap();
    assert!(!args.contains("--enable-k8s-native-validation"), "{args}");
    // ... or neither does.
    let mut config = config;
    config.engine_options.k8s_native_validation = false;
    let engine = build_engine(&config).await.unwrap();
    engine.review(projection(), &mut |_| {}).unwrap();
    let args = std::fs::read_to_string(dir.path().join("args.txt")).unwrap();
    assert!(
        args.ends_with("--enable-k8s-native-validation=false\n"),
        "{args}"
    );
}

#[tokio::test]
async fn both_reports_what_gator_did_not_find() {
    let dir = tempfile::tempdir().unwrap();
    let gator = common::script(dir.path(), "gator-null", "printf null");
    let config = EngineConfig::new(EngineKind::Both, local(&gator), dir.path());
    let engine = build_engine(&config).await.unwrap();
    let comparison = engine
        .review(projection(), &mut |_| {})
        .unwrap()
        .comparison
        .unwrap();
    assert_eq!(
        comparison.to_string(),
        "embedded 1 result(s), gator 0 result(s), 1 disagreement(s)\n  only in embedded (embedded 1, gator 0): \
         K8sRequiredOwner/owner-required on apps/v1/Deployment team-a/api: \"Deployment api has no owner label\""
    );
}

#[tokio::test]
async fn pinned_gator_is_downloaded_verified_and_run() {
    let ca = TestCa::new();
    let script = format!(
        "#!/bin/sh\ncat '{}'\n",
        common::data("gator-projection.json").display()
    );
    let archive = tarball(&[Member::File("gator", script.as_bytes())]);
    let body = Bytes::from(archive.clone());
    let server = TestServer::start_tls(&ca, move |_| {
        let body = body.clone();
        async move { respond(StatusCode::OK, "application/gzip", body) }
    });
    let work = tempfile::tempdir().unwrap();
    let gator = GatorConfig {
        version: Some("v3.22.0".into()),
        url: Some(format!(
            "{}/mirror/gator-v3.22.0-linux-amd64.tar.gz",
            server.url()
        )),
        sha256: Some(sha(&archive)),
        ..GatorConfig::default()
    };
    let mut config = EngineConfig::new(EngineKind::Gator, gator, work.path());
    config.fetch = FetchOptions {
        download: DownloadOptions {
            trust: TrustRoots::only([ExtraCa::pem("test CA", ca.ca_pem())]),
            ..DownloadOptions::default()
        },
        ..FetchOptions::default()
    };
    let engine = build_engine(&config).await.unwrap();
    let results = engine.review_to_vec(projection()).unwrap();
    assert_eq!(
        results,
        Embedded::default().review_to_vec(projection()).unwrap()
    );
    assert_eq!(server.requests().len(), 1);

    // A wrong pin is a fetch error, reported before any evaluation.
    config.gator.sha256 = Some(sha(b"other"));
    let work = tempfile::tempdir().unwrap();
    config.work_dir = work.path().to_path_buf();
    let error = build_engine(&config).await.err().unwrap();
    assert!(matches!(error, BuildError::Fetch(_)), "{error:?}");
}

/// A template that loops for ever on its object: only the time budget stops it.
fn endless_objects() -> Vec<serde_json::Value> {
    let rego = "package endless\nviolation[{\"msg\": \"never\"}] {\n  some i\n  numbers.range(1, input.review.object.spec.size)[i]\n  some j\n  numbers.range(1, input.review.object.spec.size)[j]\n  i + j < 0\n}\n";
    vec![
        serde_json::json!({
            "apiVersion": "templates.gatekeeper.sh/v1", "kind": "ConstraintTemplate",
            "metadata": {"name": "endless"},
            "spec": {"crd": {"spec": {"names": {"kind": "Endless"}}},
                     "targets": [{"target": "admission.k8s.gatekeeper.sh", "rego": rego}]}
        }),
        serde_json::json!({"apiVersion": "constraints.gatekeeper.sh/v1beta1", "kind": "Endless", "metadata": {"name": "e"}}),
        serde_json::json!({"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"}, "spec": {"size": 999999}}),
    ]
}

#[test]
fn the_embedded_engine_gets_the_configured_timeout_as_its_time_budget() {
    let mut config = EngineConfig::new(EngineKind::Embedded, GatorConfig::default(), "/tmp");
    config.timeout = Duration::from_millis(300);
    assert_eq!(
        config.embedded_options().time_budget,
        Some(Duration::from_millis(300))
    );
    let error = Embedded::new(config.embedded_options())
        .review_to_vec(ReviewInput::sorted_out(endless_objects()))
        .unwrap_err();
    assert_eq!(error.to_string(), "embedded engine failed");
    assert_eq!(
        std::error::Error::source(&error).map(ToString::to_string),
        Some("the embedded engine did not finish within its time budget of 300ms".to_string())
    );
}
