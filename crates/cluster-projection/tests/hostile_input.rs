//! Input an attacker, a broken cluster or a careless operator could hand the reader: API errors
//! echoing the credential, endless bodies, decompression bombs, devices, FIFOs and symlinks in
//! snapshot and work dirs, deep YAML, garbage archives. Each ends in a clear error naming the
//! input (and the cap), never in a leak, a hang, unbounded memory or a write outside the dir.

use std::path::{Path, PathBuf};
use std::time::Duration;

use cluster_projection::{
    ClusterSource, ClusterState, InClusterConfig, ReadSpec, SnapshotLimits, read_cluster,
    read_snapshot, read_snapshot_with, save_snapshot, write_projection,
};
use test_support::bomb::tar_gz_bomb;
use test_support::kube_api::{FAKE_TOKEN, FakeApiServer, Fault, Scenario};
use test_support::slack::{EchoStyle, echo_shows as leaks};

fn fake() -> FakeApiServer {
    let basic = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/cluster/basic");
    FakeApiServer::start(Scenario::from_dir(basic))
}

fn spec() -> ReadSpec {
    ReadSpec {
        request_timeout: Duration::from_secs(10),
        ..ReadSpec::for_constraint_kinds(["K8sRequiredLabels"])
    }
}

/// An error with its causes, as the report prints it.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[tokio::test]
async fn an_api_error_echoing_the_token_never_shows_it() {
    for (status, style) in EchoStyle::ALL.iter().flat_map(|s| [(401, *s), (500, *s)]) {
        let fake = fake();
        fake.inject(
            "/apis/apps/v1/deployments",
            Fault::EchoAuthorization { status, style },
        );
        let dir = tempfile::tempdir().unwrap();
        let source = ClusterSource::Kubeconfig {
            path: Some(fake.write_kubeconfig(dir.path())),
            context: None,
        };
        let error = read_cluster(&source, &spec()).await.unwrap_err();
        let text = chain(&error);
        assert!(text.contains(&format!("HTTP {status}")), "{text}");
        assert!(!leaks(&text, FAKE_TOKEN), "{style:?}: {text}");
        assert!(!leaks(&format!("{error:?}"), FAKE_TOKEN), "{style:?}");
    }
}

#[tokio::test]
async fn an_in_cluster_token_echo_never_shows_either() {
    let fake = fake();
    fake.inject(
        "/api/v1/namespaces",
        Fault::EchoAuthorization {
            status: 401,
            style: EchoStyle::Wrapped,
        },
    );
    let dir = tempfile::tempdir().unwrap();
    let (token, ca) = fake.write_service_account(dir.path());
    let source = ClusterSource::InCluster(InClusterConfig::with_paths(fake.url(), token, ca));
    let error = read_cluster(&source, &spec()).await.unwrap_err();
    let text = chain(&error);
    assert!(text.contains("HTTP 401"), "{text}");
    assert!(!leaks(&text, FAKE_TOKEN), "{text}");
}

#[tokio::test]
async fn an_endless_list_body_is_cut_at_the_cap() {
    let fake = fake();
    fake.inject(
        "/api/v1/namespaces",
        Fault::Body {
            status: 200,
            bytes: (64 << 20) + 1,
        },
    );
    let dir = tempfile::tempdir().unwrap();
    let source = ClusterSource::Kubeconfig {
        path: Some(fake.write_kubeconfig(dir.path())),
        context: None,
    };
    let error = read_cluster(&source, &spec()).await.unwrap_err();
    assert_eq!(
        chain(&error),
        "v1 namespaces: HTTP 200 response body is larger than the 64 MiB cap"
    );
}

#[tokio::test]
async fn a_kubeconfig_that_is_a_device_or_a_fifo_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("kubeconfig");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let link = dir.path().join("zero");
    std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
    for (path, what) in [(fifo, "a FIFO"), (link, "a character device")] {
        let source = ClusterSource::Kubeconfig {
            path: Some(path.clone()),
            context: None,
        };
        let error = read_cluster(&source, &spec()).await.unwrap_err();
        let text = chain(&error);
        assert!(
            text.contains(&format!("is not a regular file ({what})")),
            "{text}"
        );
    }
}

#[test]
fn a_gzip_bomb_stops_at_the_per_member_cap() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bomb.tar.gz");
    std::fs::write(&path, tar_gz_bomb("snapshot/workloads.json", 4 << 30)).unwrap();
    let error = read_snapshot(&path).unwrap_err();
    assert_eq!(
        chain(&error),
        format!(
            "{}:snapshot/workloads.json: is larger than the 256 MiB cap",
            path.display()
        )
    );
}

#[test]
fn a_gzip_bomb_in_members_that_are_skipped_still_counts_against_the_total() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bomb.tgz");
    std::fs::write(&path, tar_gz_bomb("padding.bin", 64 << 20)).unwrap();
    let limits = SnapshotLimits {
        per_file: 1 << 20,
        total: 8 << 20,
        ..SnapshotLimits::default()
    };
    let error = read_snapshot_with(&path, &limits).unwrap_err();
    assert_eq!(
        chain(&error),
        format!(
            "{}: decompressed content is larger than the 8 MiB total cap",
            path.display()
        )
    );
}

#[test]
fn files_in_a_snapshot_dir_share_a_total_cap() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["a.yaml", "b.yaml", "c.yaml"] {
        let text = format!("# {}\n", "x".repeat(600));
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let limits = SnapshotLimits {
        per_file: 1024,
        total: 1500,
        ..SnapshotLimits::default()
    };
    let error = read_snapshot_with(dir.path(), &limits).unwrap_err();
    assert_eq!(
        chain(&error),
        format!(
            "{}: inputs together are larger than the 1.5 KiB total cap",
            dir.path().join("c.yaml").display()
        )
    );
}

#[test]
fn json_files_parsed_as_they_are_read_keep_the_per_file_and_total_caps() {
    let limits = SnapshotLimits {
        per_file: 1024,
        total: 1500,
        ..SnapshotLimits::default()
    };
    let dir = tempfile::tempdir().unwrap();
    for name in ["a.json", "b.json", "c.json"] {
        std::fs::write(
            dir.path().join(name),
            format!("{}{{\"kind\": \"List\", \"items\": []}}", " ".repeat(600)),
        )
        .unwrap();
    }
    let error = read_snapshot_with(dir.path(), &limits).unwrap_err();
    assert_eq!(
        chain(&error),
        format!(
            "{}: inputs together are larger than the 1.5 KiB total cap",
            dir.path().join("c.json").display()
        )
    );

    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.json");
    std::fs::write(
        &big,
        format!("{}{{\"kind\": \"List\", \"items\": []}}", " ".repeat(2000)),
    )
    .unwrap();
    let error = read_snapshot_with(dir.path(), &limits).unwrap_err();
    assert_eq!(
        chain(&error),
        format!("{}: is larger than the 1 KiB cap", big.display())
    );
}

#[test]
fn devices_and_fifos_in_a_snapshot_dir_are_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink("/dev/zero", dir.path().join("zero.yaml")).unwrap();
    let error = read_snapshot(dir.path()).unwrap_err();
    assert!(
        chain(&error).ends_with("zero.yaml: is not a regular file (a character device)"),
        "{}",
        chain(&error)
    );

    let dir = tempfile::tempdir().unwrap();
    nix::unistd::mkfifo(&dir.path().join("pipe.json"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    let error = read_snapshot(dir.path()).unwrap_err();
    assert!(
        chain(&error).ends_with("pipe.json: is not a regular file (a FIFO)"),
        "{}",
        chain(&error)
    );

    for direct in ["/dev/zero", "/dev/null"] {
        let error = read_snapshot(Path::new(direct)).unwrap_err();
        assert!(
            chain(&error).contains("not a snapshot"),
            "{}",
            chain(&error)
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("snapshot.tar.gz");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let error = read_snapshot(&fifo).unwrap_err();
    assert!(chain(&error).ends_with("(a FIFO)"), "{}", chain(&error));
}

#[test]
fn deep_yaml_is_refused_before_the_parser_sees_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("deep.yaml");
    let depth = 20_000;
    std::fs::write(
        &path,
        format!("a: 1\nb: {}{}\n", "[".repeat(depth), "]".repeat(depth)),
    )
    .unwrap();
    let error = read_snapshot(&path).unwrap_err();
    assert_eq!(
        chain(&error),
        format!(
            "{}: invalid YAML: recursion limit exceeded: YAML nested deeper than 128 levels at line 2",
            path.display()
        )
    );
}

#[test]
fn a_gzip_that_is_no_tarball_says_so_without_quoting_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("garbage.tar.gz");
    let mut garbage: Vec<u8> = (0..2048u32).map(|i| (i * 7919 % 251) as u8).collect();
    garbage[..5].copy_from_slice(b"\x1b[31m");
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut encoder, &garbage).unwrap();
    std::fs::write(&path, encoder.finish().unwrap()).unwrap();
    let text = chain(&read_snapshot(&path).unwrap_err());
    assert!(text.contains("is not a tar archive"), "{text}");
    assert!(
        text.chars().all(|c| !c.is_control() && c != '\u{fffd}'),
        "{text:?}"
    );

    let path = dir.path().join("plain.tar.gz");
    std::fs::write(&path, b"not gzip at all").unwrap();
    let text = chain(&read_snapshot(&path).unwrap_err());
    assert!(
        text.contains("is not a valid gzip file (no gzip header)"),
        "{text}"
    );

    let path = dir.path().join("truncated.tar.gz");
    let whole = tar_gz_bomb("snapshot/workloads.json", 4 << 20);
    std::fs::write(&path, &whole[..whole.len() / 2]).unwrap();
    let text = chain(&read_snapshot(&path).unwrap_err());
    assert_eq!(
        text,
        format!(
            "{}: is not a valid gzip file (the compressed stream ends early)",
            path.display()
        )
    );
}

#[test]
fn member_names_with_control_characters_are_shown_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("names.tar.gz");
    let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::fast(),
    ));
    let body = b"kind: Pod\nmetadata: {name: x}\n";
    let mut header = tar::Header::new_gnu();
    header.set_size(body.len() as u64);
    header.set_mode(0o644);
    header.set_entry_type(tar::EntryType::Regular);
    // `append_data` refuses such names; write the raw header bytes instead
    header.as_old_mut().name[..12].copy_from_slice(b"a\x1b[2Jb.yaml\0");
    header.set_cksum();
    builder.append(&header, &body[..]).unwrap();
    let bytes = builder.into_inner().unwrap().finish().unwrap();
    std::fs::write(&path, bytes).unwrap();
    let text = chain(&read_snapshot(&path).unwrap_err());
    assert!(text.contains("a\\u{1b}[2Jb.yaml"), "{text:?}");
    assert!(!text.contains('\x1b'), "{text:?}");
}

fn demo_state() -> ClusterState {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/demo/cluster");
    read_snapshot(&dir).unwrap()
}

#[test]
fn a_symlinked_in_dir_or_manifest_is_refused_and_nothing_is_written_outside() {
    let state = demo_state();
    let outside = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), work.path().join("in")).unwrap();
    let error = write_projection(&state, work.path()).unwrap_err();
    assert!(chain(&error).contains("is a symlink"), "{}", chain(&error));
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);

    let work = tempfile::tempdir().unwrap();
    std::fs::create_dir(work.path().join("in")).unwrap();
    let target = outside.path().join("victim");
    std::fs::write(&target, "keep me").unwrap();
    std::os::unix::fs::symlink(&target, work.path().join("in/.projection-manifest")).unwrap();
    let error = write_projection(&state, work.path()).unwrap_err();
    assert!(chain(&error).contains("is a symlink"), "{}", chain(&error));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
}

#[test]
fn save_snapshot_never_follows_a_symlink() {
    let state = demo_state();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("victim");
    std::fs::write(&target, "keep me").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let link = dir.path().join("saved.tar.gz");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let error = save_snapshot(&state, &link).unwrap_err();
    assert!(chain(&error).contains("is a symlink"), "{}", chain(&error));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
}
