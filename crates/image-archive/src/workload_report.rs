//! The image of the `workload-report` CronJob: the release binary on a distroless-like
//! filesystem — the binary, the shared libraries it links (glibc, libgcc, as the `cc` base image
//! provides them), the CA bundle, `/etc/passwd` and `/etc/group` with the `nonroot` user, `/tmp`
//! and the workdir — run as uid 65532. The repository's `Dockerfile` builds the same image with a
//! registry; `tests/dockerfile_agreement.rs` keeps the two in step.

use std::path::Path;

use crate::{Built, Entry, ImageConfig};

/// Why the image could not be made from this machine's files.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// `ldd` named no library.
    #[error("ldd {binary}: {why}")]
    Ldd {
        /// The binary.
        binary: String,
        /// What went wrong.
        why: String,
    },
    /// The archive could not be built.
    #[error(transparent)]
    Image(#[from] crate::ImageError),
}

/// The image of the binary at `binary`, named `reference`, from this machine's files: the
/// libraries `ldd_output` (what `ldd <binary>` printed) names, at the paths it names them (glibc,
/// libgcc, the loader), and the CA bundle. The crate's one I/O edge: it reads files; the caller
/// runs `ldd`.
pub fn from_host(binary: &Path, ldd_output: &str, reference: &str) -> Result<Built, HostError> {
    let read = |path: &Path| {
        std::fs::read(path).map_err(|source| HostError::Read {
            path: path.display().to_string(),
            source,
        })
    };
    let paths = ldd_paths(ldd_output);
    if paths.is_empty() {
        return Err(HostError::Ldd {
            binary: binary.display().to_string(),
            why: "names no library".into(),
        });
    }
    let libraries = paths
        .into_iter()
        .map(|path| Ok((path.clone(), read(Path::new(&path))?)))
        .collect::<Result<Vec<_>, HostError>>()?;
    let files = entries(read(binary)?, libraries, read(Path::new(CA_BUNDLE_PATH))?);
    Ok(crate::build(&config(reference), &files)?)
}

/// The absolute paths in `ldd` output: `libc.so.6 => /lib/…/libc.so.6 (0x…)` gives the target,
/// `/lib64/ld-linux-x86-64.so.2 (0x…)` the loader; the vDSO has no file.
pub fn ldd_paths(text: &str) -> Vec<String> {
    let mut paths: Vec<String> = text
        .lines()
        .filter_map(|line| {
            let line = line.trim();
            let path = line
                .split_once("=>")
                .map_or(line, |(_, target)| target.trim());
            let path = path.split_whitespace().next()?;
            path.starts_with('/').then(|| path.to_string())
        })
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

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

#[cfg(test)]
mod tests {
    #[test]
    fn ldd_output_gives_the_loader_and_the_resolved_libraries() {
        let text = "\tlinux-vdso.so.1 (0x00007ffd)\n\
                    \tlibgcc_s.so.1 => /lib/x86_64-linux-gnu/libgcc_s.so.1 (0x00007f1)\n\
                    \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f2)\n\
                    \t/lib64/ld-linux-x86-64.so.2 (0x00007f3)\n";
        assert_eq!(
            super::ldd_paths(text),
            [
                "/lib/x86_64-linux-gnu/libc.so.6",
                "/lib/x86_64-linux-gnu/libgcc_s.so.1",
                "/lib64/ld-linux-x86-64.so.2"
            ]
        );
    }
}
