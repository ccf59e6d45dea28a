//! Helpers shared by the gator-runner integration tests: tarballs built in the test and
//! stand-in `gator` executables (shell scripts) that print recorded outputs.

#![allow(dead_code, unreachable_pub)]

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use flate2::Compression;
use flate2::write::GzEncoder;

/// One tar member.
pub enum Member<'a> {
    /// A regular file (mode 0755 for `gator`, 0644 otherwise).
    File(&'a str, &'a [u8]),
    /// A directory.
    Dir(&'a str),
    /// A symlink `name -> target`.
    Symlink(&'a str, &'a str),
    /// A hardlink `name -> target`.
    Hardlink(&'a str, &'a str),
    /// A regular file whose stored name is written raw (absolute paths, `..`), bypassing the
    /// tar crate's own checks.
    RawFile(&'a str, &'a [u8]),
}

/// A `.tar.gz` with `members`, in order.
pub fn tarball(members: &[Member<'_>]) -> Vec<u8> {
    let mut builder = tar::Builder::new(GzEncoder::new(Vec::new(), Compression::fast()));
    for member in members {
        let mut header = tar::Header::new_gnu();
        header.set_mtime(0);
        header.set_uid(0);
        header.set_gid(0);
        match member {
            Member::File(name, data) => {
                header.set_entry_type(tar::EntryType::Regular);
                header.set_mode(if *name == "gator" { 0o755 } else { 0o644 });
                header.set_size(data.len() as u64);
                builder.append_data(&mut header, name, *data).unwrap();
            }
            Member::Dir(name) => {
                header.set_entry_type(tar::EntryType::Directory);
                header.set_mode(0o755);
                header.set_size(0);
                builder.append_data(&mut header, name, &[][..]).unwrap();
            }
            Member::Symlink(name, target) | Member::Hardlink(name, target) => {
                let kind = if matches!(member, Member::Symlink(..)) {
                    tar::EntryType::Symlink
                } else {
                    tar::EntryType::Link
                };
                header.set_entry_type(kind);
                header.set_mode(0o777);
                header.set_size(0);
                builder.append_link(&mut header, name, target).unwrap();
            }
            Member::RawFile(name, data) => {
                header.set_entry_type(tar::EntryType::Regular);
                header.set_mode(0o755);
                header.set_size(data.len() as u64);
                let raw = &mut header.as_old_mut().name;
                raw[..name.len()].copy_from_slice(name.as_bytes());
                header.set_cksum();
                builder.append(&header, *data).unwrap();
            }
        }
    }
    builder.into_inner().unwrap().finish().unwrap()
}

/// Writes an executable `/bin/sh` script to `dir/name` and returns its path.
pub fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    let mut file = std::fs::File::create(&path).unwrap();
    writeln!(file, "#!/bin/sh\n{body}").unwrap();
    file.sync_all().unwrap();
    drop(file);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// The data directory of these tests.
pub fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// The sha256 of `bytes`, lowercase hex.
pub fn sha(bytes: &[u8]) -> String {
    gator_runner::fetch::sha256_hex(bytes)
}

/// An error and its whole source chain as one string.
pub fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Fetch options that trust only `ca` (the loopback HTTPS server's), with default limits.
pub fn trusting(ca: &test_support::TestCa) -> gator_runner::FetchOptions {
    gator_runner::FetchOptions {
        download: gator_runner::download::DownloadOptions {
            trust: gator_runner::TrustRoots::only([gator_runner::ExtraCa::pem(
                "test CA",
                ca.ca_pem(),
            )]),
            ..Default::default()
        },
        ..Default::default()
    }
}
