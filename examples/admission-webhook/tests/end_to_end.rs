//! The `admission-webhook` binary end to end: started with a saved region policy and a
//! certificate from a throw-away CA, it is sent real `AdmissionReview` bodies over loopback TLS
//! and must answer allowed or denied with the reference's message, refuse what is not a review,
//! bound what it reads, and refuse to start on an unusable policy.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use admission_core::{JobValidationPolicy, validate_manifest};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};
use test_support::TestCa;

/// The region policy the webhook judges with: a real saved response body.
const POLICY: &str = "fixtures/jobcheck/policies/us-east-2.json";

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A running webhook, killed when dropped.
struct Webhook {
    child: Child,
    url: String,
    ca: TestCa,
    _files: tempfile::TempDir,
    /// Its stderr lines so far (the decision log).
    log: Arc<Mutex<Vec<String>>>,
}

impl Drop for Webhook {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The certificate and key of `ca`'s leaf, written to a temporary directory.
fn tls_files(ca: &TestCa) -> tempfile::TempDir {
    let files = tempfile::tempdir().expect("temp dir");
    std::fs::write(files.path().join("tls.crt"), ca.leaf_pem()).expect("write cert");
    std::fs::write(files.path().join("tls.key"), ca.leaf_key_pem()).expect("write key");
    files
}

/// `admission-webhook` with `policy` and the TLS files in `files`, on a free loopback port.
fn webhook_command(policy: &Path, files: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_admission-webhook"));
    command
        .arg("--policy-file")
        .arg(policy)
        .arg("--tls-cert")
        .arg(files.join("tls.crt"))
        .arg("--tls-key")
        .arg(files.join("tls.key"))
        .args(["--listen", "127.0.0.1:0"]);
    command
}

fn start() -> Webhook {
    let ca = TestCa::new();
    let files = tls_files(&ca);
    let mut child = webhook_command(&root().join(POLICY), files.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the webhook starts");
    let log = Arc::new(Mutex::new(Vec::new()));
    let stderr = child.stderr.take().expect("stderr is piped");
    let lines = Arc::clone(&log);
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).split(b'\n') {
            let Ok(line) = line else { return };
            let line = String::from_utf8_lossy(&line).into_owned();
            lines.lock().unwrap().push(line);
        }
    });
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout is piped"))
        .read_line(&mut line)
        .expect("read the first line");
    let address = line
        .trim()
        .strip_prefix("listening on https://")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_owned();
    Webhook {
        child,
        // The certificate is for 127.0.0.1 and localhost.
        url: format!("https://{}", address.replace("127.0.0.1", "localhost")),
        ca,
        _files: files,
        log,
    }
}

type HttpsClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// A client that trusts only the test CA.
fn client(ca: &TestCa) -> HttpsClient {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut ca.ca_pem().as_bytes()) {
        roots.add(cert.expect("CA PEM")).expect("CA certificate");
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("protocol versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(config)
        .https_only()
        .enable_http1()
        .build();
    Client::builder(TokioExecutor::new()).build(https)
}

/// Sends `method path` with `body`; the status and the body text.
async fn send(webhook: &Webhook, method: &str, path: &str, body: Vec<u8>) -> (u16, String) {
    let request = http::Request::builder()
        .method(method)
        .uri(format!("{}{path}", webhook.url))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))
        .expect("request");
    let response = client(&webhook.ca)
        .request(request)
        .await
        .expect("the webhook answers");
    let status = response.status().as_u16();
    let body = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}

/// An `AdmissionReview` as the API server sends it for `operation` on `object` in `namespace`.
fn review(uid: &str, operation: &str, namespace: &str, object: Value, old: Value) -> Vec<u8> {
    let kind = object["kind"]
        .as_str()
        .or(old["kind"].as_str())
        .unwrap_or("Job")
        .to_owned();
    let name = object["metadata"]["name"]
        .as_str()
        .or(old["metadata"]["name"].as_str())
        .unwrap_or_default()
        .to_owned();
    serde_json::to_vec(&json!({
        "kind": "AdmissionReview",
        "apiVersion": "admission.k8s.io/v1",
        "request": {
            "uid": uid,
            "kind": {"group": "batch", "version": "v1", "kind": kind},
            "resource": {"group": "batch", "version": "v1", "resource": "jobs"},
            "requestKind": {"group": "batch", "version": "v1", "kind": kind},
            "requestResource": {"group": "batch", "version": "v1", "resource": "jobs"},
            "name": name,
            "namespace": namespace,
            "operation": operation,
            "userInfo": {"username": "alice@example.com", "uid": "1000", "groups": ["system:authenticated"]},
            "object": object,
            "oldObject": old,
            "dryRun": false,
            "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"},
        }
    }))
    .expect("review JSON")
}

/// A GPU job as `kubectl apply` would send it, with `image` for its trainer.
fn job(namespace: &str, image: &str) -> Value {
    json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "trainer", "namespace": namespace, "uid": "4a8e2d0e-0000-4000-8000-000000000001",
                     "creationTimestamp": null, "labels": {"team": "ml"}},
        "spec": {"backoffLimit": 2, "template": {"metadata": {"creationTimestamp": null}, "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "trainer", "image": image,
                "resources": {"limits": {"cpu": "8", "memory": "64Gi", "nvidia.com/gpu": "4"}}}],
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}}},
        "status": {}
    })
}

/// Posts a CREATE review of `object` in `namespace`; the HTTP status and the review's response.
async fn create(webhook: &Webhook, uid: &str, namespace: &str, object: Value) -> (u16, Value) {
    let body = review(uid, "CREATE", namespace, object, Value::Null);
    let (status, body) = send(webhook, "POST", "/validate", body).await;
    (status, response_of(&body))
}

fn policy() -> JobValidationPolicy {
    let body: Value =
        serde_json::from_str(&std::fs::read_to_string(root().join(POLICY)).expect("policy"))
            .expect("JSON");
    JobValidationPolicy::from_policy_document(&body["policy"]).expect("policy document")
}

fn response_of(body: &str) -> Value {
    let review: Value = serde_json::from_str(body).expect("a JSON AdmissionReview");
    assert_eq!(review["apiVersion"], "admission.k8s.io/v1", "{body}");
    assert_eq!(review["kind"], "AdmissionReview", "{body}");
    review["response"].clone()
}

#[tokio::test]
async fn objects_are_allowed_or_denied_with_the_reference_message() {
    let webhook = start();

    let fine = job("gco-jobs", "nvcr.io/nvidia/pytorch:24.01-py3");
    let (status, response) = create(&webhook, "uid-1", "gco-jobs", fine).await;
    assert_eq!(status, 200);
    assert_eq!(response["uid"], "uid-1");
    assert_eq!(response["allowed"], true, "{response}");

    for (uid, namespace, image) in [
        (
            "uid-2",
            "gco-jobs",
            "quay.io/prometheus/node-exporter:v1.7.0",
        ),
        ("uid-3", "kube-system", "nvcr.io/nvidia/pytorch:24.01-py3"),
    ] {
        let object = job(namespace, image);
        let expected = validate_manifest(&object, &policy(), Some(namespace))
            .expect_err("the policy refuses it")
            .message;
        let (status, response) = create(&webhook, uid, namespace, object).await;
        assert_eq!(status, 200);
        assert_eq!(response["uid"], uid);
        assert_eq!(response["allowed"], false, "{response}");
        assert_eq!(response["status"]["code"], 403);
        assert_eq!(response["status"]["message"], expected.as_str());
    }

    // A DELETE carries only the old object: nothing to judge.
    let old = job("gco-jobs", "quay.io/x/y:1");
    let (status, body) = send(
        &webhook,
        "POST",
        "/validate",
        review("uid-4", "DELETE", "gco-jobs", Value::Null, old),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(response_of(&body)["allowed"], true);
}

#[tokio::test]
async fn the_denial_messages_are_the_server_gates() {
    let webhook = start();
    let mut pod = job("gco-jobs", "nvcr.io/nvidia/pytorch:24.01-py3");
    pod["spec"]["template"]["spec"]["hostNetwork"] = json!(true);
    let (_, response) = create(&webhook, "uid-5", "gco-jobs", pod).await;
    assert_eq!(
        response["status"]["message"],
        "Security context validation failed: hostNetwork is not permitted"
    );
    let mut unnamed = job("gco-jobs", "nvcr.io/nvidia/pytorch:24.01-py3");
    unnamed["metadata"] = json!({"generateName": "trainer-"});
    let (_, response) = create(&webhook, "uid-6", "gco-jobs", unnamed).await;
    assert_eq!(response["status"]["message"], "Missing metadata.name field");
}

#[tokio::test]
async fn what_is_not_a_review_is_refused_and_bodies_are_bounded() {
    let webhook = start();
    let (status, body) = send(&webhook, "POST", "/validate", b"{not json".to_vec()).await;
    assert_eq!((status, body.as_str()), (400, "the body is not JSON"));
    let (status, _) = send(
        &webhook,
        "POST",
        "/validate",
        br#"{"kind": "AdmissionReview"}"#.to_vec(),
    )
    .await;
    assert_eq!(status, 400);
    let nested = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let (status, _) = send(&webhook, "POST", "/validate", nested.into_bytes()).await;
    assert_eq!(status, 400);
    let (status, body) = send(&webhook, "POST", "/validate", vec![b' '; 4 * 1024 * 1024]).await;
    assert_eq!(
        (status, body.as_str()),
        (413, "request body over 3145728 bytes")
    );
    // Still serving after all that.
    assert_eq!(
        send(&webhook, "GET", "/healthz", Vec::new()).await,
        (200, "ok".to_owned())
    );
    assert_eq!(send(&webhook, "GET", "/validate", Vec::new()).await.0, 405);
    assert_eq!(send(&webhook, "POST", "/mutate", Vec::new()).await.0, 404);
}

#[test]
fn an_unusable_policy_file_stops_the_start() {
    let files = tls_files(&TestCa::new());
    let policy = files.path().join("policy.json");
    std::fs::write(&policy, r#"{"region": "x"}"#).expect("write policy");
    let output = webhook_command(&policy, files.path())
        .output()
        .expect("runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("is not usable: the response carried no policy object"),
        "{stderr}"
    );
}

/// The webhook's peak and current RSS in bytes.
fn memory(webhook: &Webhook) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{}/status", webhook.child.id()))
        .expect("the webhook's status");
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .expect("a memory field")
            << 10
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// The README Deployment's memory limit for the webhook.
const DEPLOYMENT_LIMIT: u64 = 128 << 20;

#[tokio::test]
async fn big_reviews_at_once_stay_within_the_deployment_memory_limit() {
    let webhook = start();
    // warm up: the first review allocates the runtime's pools
    let (status, _) = create(
        &webhook,
        "warm",
        "gco-jobs",
        job("gco-jobs", "nvcr.io/x/y:1"),
    )
    .await;
    assert_eq!(status, 200);
    // 1.5M small numbers (3 MiB) would cost 120 MiB as a value: refused before it is built
    let mut many = job("gco-jobs", "nvcr.io/x/y:1");
    many["spec"]["numbers"] = json!(vec![0u8; 1_500_000]);
    let body = review("many", "CREATE", "gco-jobs", many, Value::Null);
    let (status, answer) = send(&webhook, "POST", "/validate", body).await;
    assert_eq!(
        (status, answer.as_str()),
        (400, "the review holds more than 250000 JSON values")
    );
    // the worst body under both caps: 245,000 small numbers and a 2.5 MB annotation
    let mut big = job("gco-jobs", "nvcr.io/x/y:1");
    big["spec"]["numbers"] = json!(vec![0u8; 245_000]);
    big["metadata"]["annotations"] = json!({"note": "n".repeat(2_500_000)});
    let body = review("big", "CREATE", "gco-jobs", big, Value::Null);
    assert!(
        body.len() > 2_900_000 && body.len() <= 3 << 20,
        "{}",
        body.len()
    );
    let (_, before) = memory(&webhook);
    let (status, answer) = send(&webhook, "POST", "/validate", body.clone()).await;
    assert_eq!(status, 200, "{answer}");
    let (peak, _) = memory(&webhook);
    let one = peak.saturating_sub(before);
    // more than the reviews judged at once, sent together: they take turns
    // twice: the memory freed by one round must be what the next one uses
    let send_big = || send(&webhook, "POST", "/validate", body.clone());
    for _ in 0..2 {
        let answers = tokio::join!(
            send_big(),
            send_big(),
            send_big(),
            send_big(),
            send_big(),
            send_big()
        );
        for (status, answer) in [
            answers.0, answers.1, answers.2, answers.3, answers.4, answers.5,
        ] {
            assert_eq!(status, 200, "{answer}");
        }
    }
    let (peak, _) = memory(&webhook);
    eprintln!(
        "one 3 MiB review raised the peak RSS by {} MiB; two rounds of six at once peaked at {} MiB (from {} MiB)",
        one >> 20,
        peak >> 20,
        before >> 20
    );
    assert!(peak < DEPLOYMENT_LIMIT, "peak {} MiB", peak >> 20);
}

#[tokio::test]
async fn never_reading_clients_do_not_lock_out_a_normal_client() {
    let webhook = start();
    let address = webhook
        .url
        .trim_start_matches("https://")
        .replace("localhost", "127.0.0.1");
    // 256 clients that connect and then neither send nor read: as many as the old connection
    // limit, held until their handshake times out
    let mut idle = Vec::new();
    for _ in 0..256 {
        idle.push(
            tokio::net::TcpStream::connect(&address)
                .await
                .expect("connects"),
        );
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    let answered = tokio::time::timeout(
        Duration::from_secs(5),
        create(
            &webhook,
            "uid-n",
            "gco-jobs",
            job("gco-jobs", "nvcr.io/x/y:1"),
        ),
    )
    .await;
    let (status, response) = answered.expect("the normal client is answered while they wait");
    assert_eq!((status, response["allowed"].clone()), (200, json!(true)));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    drop(idle);
}

#[tokio::test]
async fn a_client_that_never_reads_its_answers_is_closed_at_the_connection_lifetime() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let ca = TestCa::new();
    let files = tls_files(&ca);
    let tls = admission_webhook::config::load_tls(
        &files.path().join("tls.crt"),
        &files.path().join("tls.key"),
    )
    .expect("TLS files");
    let policy = admission_webhook::config::load_policy(&root().join(POLICY)).expect("policy");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binds");
    let address = listener.local_addr().expect("address");
    let limits = admission_webhook::server::Limits {
        connection_lifetime: Duration::from_secs(1),
        ..admission_webhook::server::Limits::default()
    };
    tokio::spawn(admission_webhook::server::serve(
        listener,
        tls,
        Arc::new(policy),
        limits,
    ));

    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut ca.ca_pem().as_bytes()) {
        roots.add(cert.expect("CA PEM")).expect("CA certificate");
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("protocol versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(address)
        .await
        .expect("connects");
    let name = rustls::pki_types::ServerName::try_from("localhost").expect("name");
    let stream = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .expect("handshake");
    let (mut reader, mut writer) = tokio::io::split(stream);
    // 200,000 pipelined probes whose answers (about 20 MB) are not read: the server's writes
    // block once the socket buffers are full
    const REQUESTS: usize = 200_000;
    tokio::spawn(async move {
        let one = b"GET /healthz HTTP/1.1\r\nhost: localhost\r\n\r\n";
        let batch: Vec<u8> = one.repeat(1000);
        for _ in 0..REQUESTS / 1000 {
            if writer.write_all(&batch).await.is_err() {
                return;
            }
        }
    });
    tokio::time::sleep(Duration::from_secs(2)).await;
    // the connection was closed at its lifetime: what is left is read to its end at once
    let mut answers = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), reader.read_to_end(&mut answers)).await;
    assert!(read.is_ok(), "the connection is still open");
    let answered = answers
        .windows(15)
        .filter(|w| w == b"HTTP/1.1 200 OK")
        .count();
    assert!(
        answered < REQUESTS,
        "all {answered} answered: the connection was not cut"
    );
}

#[tokio::test]
async fn a_uid_with_newlines_and_escapes_logs_one_escaped_line() {
    let webhook = start();
    let uid = "u1\nadmission-webhook: decision uid=\"forged\" object=\"Job gco-jobs/x\" allowed=true\u{1b}[2J\r";
    let (status, response) =
        create(&webhook, uid, "gco-jobs", job("gco-jobs", "quay.io/x/y:1")).await;
    assert_eq!((status, response["uid"].as_str()), (200, Some(uid)));
    let deadline = Instant::now() + Duration::from_secs(5);
    let log = loop {
        let log = webhook.log.lock().unwrap().clone();
        if log.iter().any(|l| l.contains("decision")) || Instant::now() > deadline {
            break log;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let decisions: Vec<&String> = log.iter().filter(|l| l.contains("decision")).collect();
    assert_eq!(decisions.len(), 1, "{log:?}");
    assert!(
        decisions[0].starts_with(
            r#"admission-webhook: decision uid="u1\u{000a}admission-webhook: decision uid=\"forged\" object=\"Job gco-jobs/x\" allowed=true\u{001b}[2J\u{000d}" object="Job gco-jobs/trainer" allowed=false message=""#
        ),
        "{}",
        decisions[0]
    );
    assert!(
        log.iter().all(|l| !l.chars().any(char::is_control)),
        "{log:?}"
    );
}
