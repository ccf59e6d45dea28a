//! `cargo xtask image [--tag REF] [--out PATH]`: the CronJob's image, built here without a
//! registry or a container engine. The release `workload-report` is packed by
//! `image_archive::workload_report::from_host` with the shared libraries it links and this
//! machine's CA bundle, into a docker-archive that `docker load` and
//! `ctr images import` read. Prints the reference, the image ID (the config's sha256), the
//! archive's path and size.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, Result, bail};
use image_archive::workload_report;

use crate::{bench, util};

/// Builds the image; `args` are the command's options.
pub(crate) fn run(args: &[&str]) -> Result<()> {
    let mut reference = format!(
        "{}:{}",
        workload_report::DEFAULT_REPOSITORY,
        env!("CARGO_PKG_VERSION")
    );
    let mut out = bench::release_dir().join("image/workload-report.tar");
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match (*arg, rest.next()) {
            ("--tag", Some(value)) => reference = value.to_string(),
            ("--out", Some(value)) => out = PathBuf::from(value),
            _ => bail!("usage: cargo xtask image [--tag REF] [--out PATH]"),
        }
    }
    util::cargo(&["build", "--release", "--locked", "-p", "workload-report"])?;
    let binary_path = bench::release_dir().join("workload-report");
    let ldd = Command::new("ldd")
        .arg(&binary_path)
        .output()
        .context("cannot run glibc's ldd")?;
    if !ldd.status.success() {
        bail!(
            "ldd {}: {}",
            binary_path.display(),
            String::from_utf8_lossy(&ldd.stderr).trim()
        );
    }
    let built = workload_report::from_host(
        &binary_path,
        &String::from_utf8_lossy(&ldd.stdout),
        &reference,
    )?;
    if let Some(parent) = out.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::write(&out, &built.archive)
        .with_context(|| format!("cannot write {}", out.display()))?;
    println!("image {reference}");
    println!("id {}", built.image_id);
    println!(
        "archive {} ({:.1} MiB; layer {:.1} MiB uncompressed)",
        out.display(),
        built.archive.len() as f64 / 1048576.0,
        built.layer_size as f64 / 1048576.0
    );
    Ok(())
}
