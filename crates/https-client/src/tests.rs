//! The trust rule (a bad extra CA is an error naming it) and real requests over loopback.

use std::path::Path;

use bytes::Bytes;
use http_body_util::Empty;
use test_support::{TestCa, TestServer};

use super::*;

fn error_of(trust: TrustRoots) -> String {
    match build::<Empty<Bytes>>(&ClientOptions {
        trust,
        ..ClientOptions::default()
    }) {
        Ok(_) => panic!("the client should be refused"),
        Err(error) => error.to_string(),
    }
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn every_bad_extra_ca_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new();
    let good = ca.ca_pem();
    let cases = [
        (
            "empty.pem",
            "not a certificate".to_string(),
            "holds no usable PEM certificate",
        ),
        (
            "damaged.pem",
            format!("{good}-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n"),
            "is not valid PEM",
        ),
        (
            "refused.pem",
            "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".to_string(),
            "holds a certificate that cannot be trusted",
        ),
    ];
    for (name, text, what) in cases {
        let path = write(dir.path(), name, &text);
        let error = error_of(TrustRoots::system_and([ExtraCa::file("caFile", &path)]));
        assert!(
            error.starts_with(&format!("caFile {} {what}", path.display())),
            "{name}: {error}"
        );
        assert!(
            !error.contains("AAAA") && !error.contains("!!!!"),
            "{error}"
        );
    }
    let missing = dir.path().join("missing.pem");
    let error = error_of(TrustRoots::only([ExtraCa::file("caFile", &missing)]));
    assert!(
        error.starts_with(&format!("cannot read caFile: {}: ", missing.display())),
        "{error}"
    );
    let error = error_of(TrustRoots::only([ExtraCa::pem("extra CA", "nothing")]));
    assert_eq!(error, "extra CA holds no usable PEM certificate");
}

#[test]
fn a_ca_file_that_is_no_regular_file_is_refused_at_once() {
    let error = error_of(TrustRoots::only([ExtraCa::file("caFile", "/dev/zero")]));
    assert_eq!(
        error,
        "cannot read caFile: /dev/zero: is not a regular file (a character device)"
    );
}

#[test]
fn trusting_nothing_is_refused() {
    assert_eq!(
        error_of(TrustRoots::only([])),
        "no trusted CA certificates (neither system roots nor an extra CA)"
    );
}

async fn get(client: &HttpsClient<Empty<Bytes>>, url: &str) -> Result<u16, String> {
    let request = http::Request::get(url).body(Empty::new()).unwrap();
    match client.request(request).await {
        Ok(response) => Ok(response.status().as_u16()),
        Err(error) => Err(format!("{error:?}")),
    }
}

#[tokio::test]
async fn the_extra_ca_is_trusted_and_plain_http_only_when_allowed() {
    let ca = TestCa::new();
    let tls = TestServer::start_tls(&ca, |_| async {
        test_support::respond(http::StatusCode::OK, "text/plain", "ok")
    });
    let plain = TestServer::start(|_| async {
        test_support::respond(http::StatusCode::OK, "text/plain", "ok")
    });
    let trusted = ClientOptions {
        trust: TrustRoots::only([ExtraCa::pem("test CA", ca.ca_pem())]),
        connect_timeout: Some(Duration::from_secs(5)),
        allow_http: false,
    };
    let client = build(&trusted).unwrap();
    assert_eq!(get(&client, &tls.url()).await, Ok(200));
    assert!(get(&client, &plain.url()).await.is_err(), "https only");

    let with_http = build(&ClientOptions {
        allow_http: true,
        ..trusted
    })
    .unwrap();
    assert_eq!(get(&with_http, &plain.url()).await, Ok(200));

    let other = TestCa::new();
    let untrusting = build(&ClientOptions {
        trust: TrustRoots::only([ExtraCa::pem("other CA", other.ca_pem())]),
        ..ClientOptions::default()
    })
    .unwrap();
    let error = get(&untrusting, &tls.url()).await.unwrap_err();
    assert!(error.contains("InvalidCertificate"), "{error}");
}
