//! The image of the `workload-report` CronJob: the release binary on a distroless-like
//! filesystem — the binary, the shared libraries it links (glibc, libgcc, as the `cc` base image
//! provides them), the CA bundle, `/etc/passwd` and `/etc/group` with the `nonroot` user, `/tmp`
//! and the workdir — run as uid 65532. The repository's `Dockerfile` builds the same image with a
//! registry; `tests/dockerfile_agreement.rs` keeps the two in step.

use crate::{Entry, ImageConfig};

/// Where the binary lives in the image (the Dockerfile's `COPY` destination).
pub const BINARY_PATH: &str = "/usr/local/bin/workload-report";
/// The user the image runs as (the chart's Pod `runAsUser`).
pub const USER: &str = "65532:65532";
/// The working directory (the chart mounts an emptyDir there).
pub const WORKDIR: &str = "/work";
/// Where the CA bundle lives (Debian's path, which distroless keeps).
pub const CA_BUNDLE_PATH: &str = "/etc/ssl/certs/ca-certificates.crt";
/// The image's name when none is given.
pub const DEFAULT_REPOSITORY: &str = "localhost/workload-report";

/// `ENTRYPOINT`.
pub fn entrypoint() -> Vec<String> {
    vec![BINARY_PATH.to_string()]
}

/// `CMD`.
pub fn cmd() -> Vec<String> {
    vec!["--help".to_string()]
}

/// The image config, named `reference`.
pub fn config(reference: &str) -> ImageConfig {
    ImageConfig {
        reference: reference.to_string(),
        entrypoint: entrypoint(),
        cmd: cmd(),
        user: USER.to_string(),
        workdir: WORKDIR.to_string(),
        env: vec![
            "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".to_string(),
            format!("SSL_CERT_FILE={CA_BUNDLE_PATH}"),
        ],
        created_by: "cargo xtask image".to_string(),
    }
}

/// The files of the image: the binary, `libraries` as (path in the image, contents) — the
/// dynamic loader and the libraries the binary links, at the paths the binary names them —
/// and the CA bundle.
pub fn entries(
    binary: Vec<u8>,
    libraries: Vec<(String, Vec<u8>)>,
    ca_bundle: Vec<u8>,
) -> Vec<Entry> {
    let mut entries = vec![
        Entry::file(BINARY_PATH, 0o755, binary),
        Entry::file(CA_BUNDLE_PATH, 0o644, ca_bundle),
        Entry::file(
            "/etc/passwd",
            0o644,
            b"root:x:0:0:root:/root:/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n".to_vec(),
        ),
        Entry::file(
            "/etc/group",
            0o644,
            b"root:x:0:\nnobody:x:65534:\nnonroot:x:65532:\n".to_vec(),
        ),
        Entry::dir("/home/nonroot", 0o700).owned_by(65532, 65532),
        Entry::dir("/tmp", 0o1777),
        Entry::dir(WORKDIR, 0o755),
    ];
    entries.extend(
        libraries
            .into_iter()
            .map(|(path, contents)| Entry::file(&path, 0o755, contents)),
    );
    entries
}
