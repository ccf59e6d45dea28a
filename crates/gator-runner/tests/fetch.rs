//! Fetching the pinned gator from a loopback HTTPS server serving tarballs built in the test:
//! good, wrong hash, truncated, oversized, slow, extra members, traversal and link members, no
//! `gator` member, redirects, the cache, and URL-path redaction in every error.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use bytes::Bytes;
use common::{Member, chain, sha, tarball};
use gator_runner::archive::ArchiveError;
use gator_runner::download::{DownloadError, DownloadOptions};
use gator_runner::fetch::{binary_path, cache_path};
use gator_runner::{
    ExtraCa, FetchError, FetchOptions, GatorPin, TrustError, TrustRoots, fetch_gator,
};
use http::StatusCode;
use test_support::{TestCa, TestServer, respond};

const BINARY: &[u8] = b"#!/bin/sh\nprintf null\n";
/// Stands for a token a mirror might carry in its path: it must never reach an error.
const SECRET: &str = "s3cr3t-token";

fn path() -> String {
    format!("/{SECRET}/v3.22.0/gator-v3.22.0-linux-amd64.tar.gz")
}

/// Serves `body` at every path.
fn serve(ca: &TestCa, body: Vec<u8>) -> TestServer {
    let body = Bytes::from(body);
    TestServer::start_tls(ca, move |_| {
        let body = body.clone();
        async move { respond(StatusCode::OK, "application/gzip", body) }
    })
}

fn options(ca: &TestCa) -> FetchOptions {
    FetchOptions {
        download: DownloadOptions {
            trust: TrustRoots::only([ExtraCa::pem("test CA", ca.ca_pem())]),
            connect_timeout: Duration::from_secs(5),
            timeout: Duration::from_secs(20),
            ..DownloadOptions::default()
        },
        ..FetchOptions::default()
    }
}

fn pin(server: &TestServer, sha256: &str) -> GatorPin {
    GatorPin::new("v3.22.0", format!("{}{}", server.url(), path()), sha256).unwrap()
}

fn assert_redacted(error: &dyn std::error::Error) -> String {
    let text = chain(error);
    assert!(!text.contains(SECRET), "URL path leaked: {text}");
    assert!(
        !text.contains("gator-v3.22.0-linux"),
        "URL path leaked: {text}"
    );
    text
}

async fn fetch_err(
    server: &TestServer,
    sha256: &str,
    options: &FetchOptions,
    work: &Path,
) -> FetchError {
    let error = fetch_gator(&pin(server, sha256), work, options)
        .await
        .unwrap_err();
    assert_redacted(&error);
    assert!(
        !binary_path(work).exists(),
        "no binary may be written on failure"
    );
    error
}

#[tokio::test]
async fn good_tarball_is_verified_extracted_cached_and_reused() {
    let ca = TestCa::new();
    let archive = tarball(&[Member::File("gator", BINARY)]);
    let server = serve(&ca, archive.clone());
    let work = tempfile::tempdir().unwrap();
    let pin = pin(&server, &sha(&archive));

    let binary = fetch_gator(&pin, work.path(), &options(&ca)).await.unwrap();
    assert_eq!(binary, work.path().join("bin/gator"));
    assert_eq!(std::fs::read(&binary).unwrap(), BINARY);
    let mode = std::fs::metadata(&binary).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o755);
    assert_eq!(
        std::fs::read(cache_path(work.path(), &pin)).unwrap(),
        archive
    );
    assert_eq!(server.requests().len(), 1);
    assert_eq!(server.requests()[0].path, path());

    // A matching cache is reused without a request, and the binary is re-extracted from it.
    std::fs::write(&binary, b"tampered").unwrap();
    fetch_gator(&pin, work.path(), &options(&ca)).await.unwrap();
    assert_eq!(server.requests().len(), 1);
    assert_eq!(std::fs::read(&binary).unwrap(), BINARY);

    // A cached file with the wrong hash is replaced.
    std::fs::write(cache_path(work.path(), &pin), b"corrupt").unwrap();
    fetch_gator(&pin, work.path(), &options(&ca)).await.unwrap();
    assert_eq!(server.requests().len(), 2);
    assert_eq!(
        std::fs::read(cache_path(work.path(), &pin)).unwrap(),
        archive
    );
}

#[tokio::test]
async fn wrong_hash_names_both_digests_and_caches_nothing() {
    let ca = TestCa::new();
    let archive = tarball(&[Member::File("gator", BINARY)]);
    let server = serve(&ca, archive.clone());
    let work = tempfile::tempdir().unwrap();
    let pinned = sha(b"something else");
    let error = fetch_err(&server, &pinned, &options(&ca), work.path()).await;
    assert_eq!(
        error.to_string(),
        format!(
            "gator sha256 mismatch: expected {pinned}, got {}",
            sha(&archive)
        )
    );
    assert!(!cache_path(work.path(), &pin(&server, &pinned)).exists());
}

#[tokio::test]
async fn truncated_tarball_fails_the_hash_or_the_archive() {
    let ca = TestCa::new();
    let archive = tarball(&[Member::File("gator", &[7u8; 100_000])]);
    let truncated = archive[..archive.len() / 2].to_vec();
    let server = serve(&ca, truncated.clone());
    let work = tempfile::tempdir().unwrap();
    // Pinned to the full tarball: the hash catches it before the archive is opened.
    let error = fetch_err(&server, &sha(&archive), &options(&ca), work.path()).await;
    assert!(
        matches!(error, FetchError::Sha256Mismatch { .. }),
        "{error:?}"
    );
    // Pinned to the truncated bytes: the archive itself is refused.
    let error = fetch_err(&server, &sha(&truncated), &options(&ca), work.path()).await;
    assert!(
        matches!(error, FetchError::Archive(ArchiveError::Read(_))),
        "{error:?}"
    );
}

#[tokio::test]
async fn oversized_download_and_oversized_binary_are_refused() {
    let ca = TestCa::new();
    let archive = tarball(&[Member::File("gator", &[1u8; 4096])]);
    let server = serve(&ca, archive.clone());
    let work = tempfile::tempdir().unwrap();
    let mut small = options(&ca);
    small.download.max_bytes = 100;
    let error = fetch_err(&server, &sha(&archive), &small, work.path()).await;
    assert!(
        matches!(error, FetchError::Download(DownloadError::TooLarge { .. })),
        "{error:?}"
    );
    assert_eq!(
        chain(&error),
        format!(
            "gator download failed: download from localhost:{} is larger than 100 bytes",
            server.addr().port()
        )
    );
    let mut small = options(&ca);
    small.max_binary_bytes = 1000;
    let error = fetch_err(&server, &sha(&archive), &small, work.path()).await;
    assert!(
        matches!(
            error,
            FetchError::Archive(ArchiveError::TooLarge { max_bytes: 1000 })
        ),
        "{error:?}"
    );
}

#[tokio::test]
async fn slow_server_hits_the_overall_timeout() {
    let ca = TestCa::new();
    let server = TestServer::start_tls(&ca, |_| async {
        tokio::time::sleep(Duration::from_secs(30)).await;
        respond(StatusCode::OK, "application/gzip", "late")
    });
    let work = tempfile::tempdir().unwrap();
    let mut quick = options(&ca);
    quick.download.timeout = Duration::from_millis(500);
    let error = fetch_err(&server, &sha(b"x"), &quick, work.path()).await;
    assert!(
        matches!(error, FetchError::Download(DownloadError::Timeout { .. })),
        "{error:?}"
    );
    assert!(
        chain(&error).ends_with("timed out after 0.5s"),
        "{}",
        chain(&error)
    );
}

#[tokio::test]
async fn extra_members_are_ignored() {
    let ca = TestCa::new();
    let archive = tarball(&[
        Member::Dir("docs/"),
        Member::File("docs/README.md", b"readme"),
        Member::File("LICENSE", b"license"),
        Member::File("bin/gator", b"not this one"),
        Member::File("./gator", BINARY),
    ]);
    let server = serve(&ca, archive.clone());
    let work = tempfile::tempdir().unwrap();
    let binary = fetch_gator(&pin(&server, &sha(&archive)), work.path(), &options(&ca))
        .await
        .unwrap();
    assert_eq!(std::fs::read(&binary).unwrap(), BINARY);
    let mut written: Vec<_> = std::fs::read_dir(work.path().join("bin"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    written.sort();
    assert_eq!(written, ["gator"]);
    assert!(!work.path().join("LICENSE").exists());
    assert!(!work.path().join("docs").exists());
}

#[tokio::test]
async fn traversal_absolute_and_link_members_refuse_the_archive() {
    let ca = TestCa::new();
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            tarball(&[
                Member::File("gator", BINARY),
                Member::RawFile("../evil", b"x"),
            ]),
            "gator archive member \"../evil\" has an unsafe path",
        ),
        (
            tarball(&[Member::RawFile("docs/../../gator", BINARY)]),
            "gator archive member \"docs/../../gator\" has an unsafe path",
        ),
        (
            tarball(&[Member::RawFile("/usr/local/bin/gator", BINARY)]),
            "gator archive member \"/usr/local/bin/gator\" has an unsafe path",
        ),
        (
            tarball(&[Member::Symlink("gator", "/bin/sh")]),
            "gator archive member \"gator\" is a link",
        ),
        (
            tarball(&[
                Member::File("gator", BINARY),
                Member::Symlink("lib", "/etc"),
            ]),
            "gator archive member \"lib\" is a link",
        ),
        (
            tarball(&[
                Member::File("real", BINARY),
                Member::Hardlink("gator", "real"),
            ]),
            "gator archive member \"gator\" is a link",
        ),
    ];
    for (archive, want) in cases {
        let server = serve(&ca, archive.clone());
        let work = tempfile::tempdir().unwrap();
        let error = fetch_err(&server, &sha(&archive), &options(&ca), work.path()).await;
        assert_eq!(chain(&error), format!("gator archive refused: {want}"));
        assert!(!work.path().join("evil").exists());
        assert!(!work.path().parent().unwrap().join("evil").exists());
    }
}

#[tokio::test]
async fn archive_without_gator_is_an_error() {
    let ca = TestCa::new();
    let archive = tarball(&[
        Member::Dir("bin/"),
        Member::File("bin/gator", BINARY),
        Member::File("README.md", b"readme"),
    ]);
    let server = serve(&ca, archive.clone());
    let work = tempfile::tempdir().unwrap();
    let error = fetch_err(&server, &sha(&archive), &options(&ca), work.path()).await;
    assert_eq!(
        chain(&error),
        "gator archive refused: gator archive has no top-level regular file `gator`"
    );
}

#[tokio::test]
async fn one_redirect_is_followed_and_loops_are_bounded() {
    let ca = TestCa::new();
    let archive = tarball(&[Member::File("gator", BINARY)]);
    let body = Bytes::from(archive.clone());
    let server = TestServer::start_tls(&ca, move |request| {
        let body = body.clone();
        async move {
            if request.path == "/storage/object" {
                return respond(StatusCode::OK, "application/gzip", body);
            }
            let target = if request.path.contains("loop") {
                request.path.clone()
            } else {
                "/storage/object".to_string()
            };
            let mut reply = respond(StatusCode::FOUND, "text/plain", "");
            reply
                .headers_mut()
                .insert(http::header::LOCATION, target.parse().unwrap());
            reply
        }
    });
    let work = tempfile::tempdir().unwrap();
    fetch_gator(&pin(&server, &sha(&archive)), work.path(), &options(&ca))
        .await
        .unwrap();
    assert_eq!(server.requests().len(), 2);

    let looping = GatorPin::new(
        "v3.22.0",
        format!("{}/{SECRET}/loop/v3.22.0.tar.gz", server.url()),
        sha(&archive),
    )
    .unwrap();
    let work = tempfile::tempdir().unwrap();
    let error = fetch_gator(&looping, work.path(), &options(&ca))
        .await
        .unwrap_err();
    let text = assert_redacted(&error);
    assert_eq!(
        text,
        format!(
            "gator download failed: download from localhost:{} redirected more than 5 times",
            server.addr().port()
        )
    );
    assert_eq!(server.requests().len(), 2 + 6);
}

#[tokio::test]
async fn http_errors_name_the_host_only() {
    let ca = TestCa::new();
    let server = TestServer::start_tls(&ca, |request| async move {
        // An error body echoing the path must not reach the error either.
        respond(StatusCode::NOT_FOUND, "text/plain", request.path)
    });
    let work = tempfile::tempdir().unwrap();
    let error = fetch_err(&server, &sha(b"x"), &options(&ca), work.path()).await;
    assert_eq!(
        chain(&error),
        format!(
            "gator download failed: download from localhost:{} failed with HTTP 404",
            server.addr().port()
        )
    );
}

#[tokio::test]
async fn untrusted_certificate_and_refused_connection_are_errors() {
    let ca = TestCa::new();
    let archive = tarball(&[Member::File("gator", BINARY)]);
    let server = serve(&ca, archive.clone());
    let work = tempfile::tempdir().unwrap();
    // Trusting another CA only: the handshake fails.
    let other = TestCa::new();
    let error = fetch_err(&server, &sha(&archive), &options(&other), work.path()).await;
    assert!(
        matches!(error, FetchError::Download(DownloadError::Request { .. })),
        "{error:?}"
    );
    assert!(server.requests().is_empty());
    // Nothing listening.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let closed = GatorPin::new(
        "v3.22.0",
        format!("https://localhost:{port}/{SECRET}/v3.22.0.tgz"),
        sha(&archive),
    )
    .unwrap();
    let error = fetch_gator(&closed, work.path(), &options(&ca))
        .await
        .unwrap_err();
    let text = assert_redacted(&error);
    assert!(
        text.starts_with(&format!(
            "gator download failed: request to localhost:{port} failed"
        )),
        "{text}"
    );
    // No trust roots at all.
    let mut none = options(&ca);
    none.download.trust = TrustRoots::only([]);
    let error = fetch_err(&server, &sha(&archive), &none, work.path()).await;
    assert!(
        matches!(
            error,
            FetchError::Download(DownloadError::Trust(TrustError::NoRoots))
        ),
        "{error:?}"
    );
}
